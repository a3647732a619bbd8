/*
 * test_webhook.c - POST /v1/webhook end to end on loopback: a real server
 * (core/http_server) on 127.0.0.1:0 with the handler, a real store on a file
 * in a fresh temporary directory, libcurl as Alertmanager.  Every answer is
 * checked byte for byte, and every rejection leaves the queue unchanged.
 * Store failures are injected with an sqlite trigger added through a second
 * connection to the same file (as test_store_events.c does).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <unistd.h>

#include "core/am.h"
#include "bridge/issue.h"
#include "bridge/webhook.h"
#include "core/auth.h"
#include "core/config.h"
#include "core/http_server.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/store.h"
#include "core/xalloc.h"

#define TOKEN "t0ps3cret-webhook-token"
#define AUTH_HEADER "Authorization: Bearer " TOKEN
#define JSON_TYPE "Content-Type: application/json"
#define NOW_MS INT64_C(1800000000000)
#define MAX_EVENTS_BYTES (128u << 10)
#define OK_ALERT_SERVICE_3 "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3}"
#define OK_ALERT_SERVICE_1 "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":1}"
#define OK_TEAM_AB_1 "{\"status\":\"ok\",\"receiver\":\"team.a+b\",\"alerts\":1}"

static const char CONFIG_YAML[] =
	"receivers:\n"
	"  - name: alert-service\n"
	"    repo: my-org/cluster-alerts\n"
	"  - name: team.a+b\n"
	"    repo: team/ab\n"
	"  - name: grouped\n"
	"    repo: my-org/grouped\n"
	"    issue_per: group\n";

struct fixture {
	char dir[64];
	char path[96];
	char log_path[96];
	int log_fd;
	struct config *cfg;
	struct store *st;
	struct auth *auth;
	struct metrics *metrics;
	struct webhook *wh;
	struct srv *srv;
	int64_t now;
};

struct reply {
	long status;
	struct buf body;
	struct buf headers;
};

/* ---- helpers ---- */

static int64_t fixed_now(void *ctx)
{
	return *(const int64_t *)ctx;
}

static char *read_fixture(const char *name)
{
	const char *env = getenv("ALERTBRIDGE_SRC");
	char path[512];
	struct buf b = BUF_INIT;
	char chunk[4096];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/fixtures/alertmanager/%s", env ? env : ".", name);
	f = fopen(path, "rb");
	if (!f)
		fail_msg("cannot open fixture %s", path);
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		assert_int_equal(buf_add(&b, chunk, n), ERR_OK);
	fclose(f);
	return buf_detach(&b);
}

/* A copy of s with the first occurrence of from replaced by to (which must occur). */
static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);
	struct buf b = BUF_INIT;

	if (!at)
		fail_msg("\"%s\" not found", from);
	assert_int_equal(buf_add(&b, s, (size_t)(at - s)), ERR_OK);
	assert_int_equal(buf_adds(&b, to), ERR_OK);
	assert_int_equal(buf_adds(&b, at + strlen(from)), ERR_OK);
	return buf_detach(&b);
}

/* The fixture with its receiver renamed (JSON-escaped form given). */
static char *fixture_for(const char *name, const char *receiver_json)
{
	char *raw = read_fixture(name);
	char to[256];
	char *out;

	snprintf(to, sizeof(to), "\"receiver\": \"%s\"", receiver_json);
	out = replace(raw, "\"receiver\": \"alert-service\"", to);
	free(raw);
	return out;
}

static int setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	struct buf msg = BUF_INIT;
	struct cfg_webhook wc = { 0 };
	struct srv_options so = { 0 };
	struct webhook_options wo = { 0 };

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_webhook.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/ab.db", f->dir);
	snprintf(f->log_path, sizeof(f->log_path), "%s/log", f->dir);
	f->log_fd = open(f->log_path, O_CREAT | O_RDWR | O_TRUNC | O_APPEND, 0600);
	assert_true(f->log_fd >= 0);
	log_set_fd(f->log_fd);
	if (cfg_parse(CONFIG_YAML, strlen(CONFIG_YAML), "test.yml", NULL, &f->cfg, &msg))
		fail_msg("cfg_parse: %s", buf_str(&msg));
	if (store_open(f->path, &f->st, &msg))
		fail_msg("store_open: %s", buf_str(&msg));
	wc.bearer_token = (char *)TOKEN;
	assert_int_equal(auth_new(&wc, &f->auth, NULL), ERR_OK);
	f->metrics = metrics_new();
	f->now = NOW_MS;
	wo.cfg = f->cfg;
	wo.store = f->st;
	wo.metrics = f->metrics;
	wo.auth = f->auth;
	wo.now_ms = fixed_now;
	wo.now_ctx = &f->now;
	wo.max_events_bytes = MAX_EVENTS_BYTES;
	f->wh = webhook_new(&wo);
	so.listen_address = "127.0.0.1:0";
	so.threads = 4;
	so.max_body_bytes = 1 << 20;
	assert_int_equal(srv_new(&so, &f->srv, &msg), ERR_OK);
	assert_int_equal(srv_route(f->srv, "POST", "/v1/webhook", webhook_handle, f->wh), ERR_OK);
	if (srv_start(f->srv, &msg))
		fail_msg("srv_start: %s", buf_str(&msg));
	buf_release(&msg);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;
	char cmd[160];

	srv_free(f->srv);
	webhook_free(f->wh);
	metrics_free(f->metrics);
	auth_free(f->auth);
	store_close(f->st);
	cfg_free(f->cfg);
	log_set_fd(2);
	close(f->log_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
	return buf_add(arg, p, size * n) == ERR_OK ? size * n : 0;
}

/*
 * POST body to /v1/webhook + query with the given header lines (NULL-ended).
 * Bounded: 10 s per request.
 */
static void post(const struct fixture *f, const char *query, const char *body,
		 const char *const *headers, struct reply *r)
{
	CURL *c = curl_easy_init();
	struct curl_slist *hl = NULL;
	char url[256];
	CURLcode cc;

	memset(r, 0, sizeof(*r));
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/v1/webhook%s", srv_port(f->srv),
		 query ? query : "");
	/* Without an explicit empty Content-Type, curl would send a form type. */
	hl = curl_slist_append(hl, "Content-Type:");
	hl = curl_slist_append(hl, "Expect:");
	for (size_t i = 0; headers && headers[i]; i++)
		hl = curl_slist_append(hl, headers[i]);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, collect);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->headers);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 10000L);
	cc = curl_easy_perform(c);
	if (cc != CURLE_OK)
		fail_msg("curl: %s", curl_easy_strerror(cc));
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_slist_free_all(hl);
	curl_easy_cleanup(c);
}

static void reply_release(struct reply *r)
{
	buf_release(&r->body);
	buf_release(&r->headers);
}

static const char *const GOOD_HEADERS[] = { AUTH_HEADER, JSON_TYPE, NULL };

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("\"%s\" does not contain \"%s\"", hay, needle);
}

static void assert_lacks(const char *hay, const char *needle)
{
	if (strstr(hay, needle))
		fail_msg("\"%s\" contains \"%s\"", hay, needle);
}

/*
 * POST and check the answer is want_status with exactly want_body as JSON
 * body, and that the queue did not change.
 */
static void expect_rejected(const struct fixture *f, const char *query, const char *body,
			    const char *const *headers, long want_status, const char *want_body)
{
	int64_t before = store_pending_count(f->st, "bridge");
	struct reply r;

	post(f, query, body, headers, &r);
	assert_int_equal(r.status, want_status);
	assert_string_equal(buf_str(&r.body), want_body);
	assert_contains(buf_str(&r.headers), "Content-Type: application/json\r\n");
	assert_int_equal(store_pending_count(f->st, "bridge"), before);
	reply_release(&r);
}

static void expect_ok(const struct fixture *f, const char *query, const char *body,
		      const char *want_body)
{
	struct reply r;

	post(f, query, body, GOOD_HEADERS, &r);
	if (r.status != 200)
		fail_msg("status %ld: %s", r.status, buf_str(&r.body));
	assert_string_equal(buf_str(&r.body), want_body);
	reply_release(&r);
}

/* Take the oldest pending event and mark it done; fail when there is none. */
static void take_event(const struct fixture *f, struct store_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	assert_int_equal(store_next_event(f->st, "bridge", INT64_MAX / 2, ev), ERR_OK);
	assert_int_equal(store_event_done(f->st, ev->id, NULL, NULL), ERR_OK);
}

static void assert_no_more_events(const struct fixture *f)
{
	struct store_event ev;

	assert_int_equal(store_next_event(f->st, "bridge", INT64_MAX / 2, &ev), ERR_NOTFOUND);
}

/*
 * The payload must be am_event_json() of valid alert i of body (the valid
 * ones counted, as am_parse() with keep_invalid_alerts orders them) with
 * "repo": repo added (NULL: no "repo", the receiver's): parse it and compare
 * as JSON documents.
 */
static void assert_payload(const char *payload, const char *body, size_t i, const char *repo)
{
	struct am_payload *p = NULL;
	struct am_options keep = { .keep_invalid_alerts = 1 };
	struct am_error e;
	struct buf want = BUF_INIT;
	json_t *got_doc, *want_doc;
	json_error_t je;

	assert_int_equal(am_parse(body, strlen(body), &keep, &p, &e), ERR_OK);
	assert_int_equal(am_event_json(p, i, &want), ERR_OK);
	got_doc = json_loads(payload, JSON_REJECT_DUPLICATES, &je);
	if (!got_doc)
		fail_msg("payload is not JSON: %s: %s", je.text, payload);
	if (repo)
		assert_string_equal(json_string_value(json_object_get(got_doc, "repo")), repo);
	else  /* the receiver's: the bridge routes and renders it */
		assert_null(json_object_get(got_doc, "repo"));
	json_object_del(got_doc, "repo");
	want_doc = json_loads(buf_str(&want), 0, NULL);
	assert_non_null(want_doc);
	assert_true(json_equal(got_doc, want_doc));
	/* The member is appended last, the rest of the document untouched. */
	assert_memory_equal(payload, buf_str(&want), repo ? want.len - 1 : want.len);
	json_decref(got_doc);
	json_decref(want_doc);
	buf_release(&want);
	am_payload_free(p);
}

/*
 * A group event's document: alert 0's (as assert_payload()) with every
 * alert's fingerprint, status, startsAt, endsAt and labels in "members".
 */
static void assert_group_payload(const char *payload, const char *body, const char *repo)
{
	struct am_payload *p = NULL;
	struct am_error e;
	json_t *doc, *members;
	json_error_t je;
	char *rest;

	assert_int_equal(am_parse(body, strlen(body), NULL, &p, &e), ERR_OK);
	doc = json_loads(payload, JSON_REJECT_DUPLICATES, &je);
	if (!doc)
		fail_msg("payload is not JSON: %s: %s", je.text, payload);
	members = json_object_get(doc, "members");
	assert_true(json_is_array(members));
	assert_int_equal(json_array_size(members), p->n_alerts);
	for (size_t i = 0; i < p->n_alerts; i++) {
		const json_t *m = json_array_get(members, i);
		const struct am_alert *a = &p->alerts[i];

		assert_string_equal(json_string_value(json_object_get(m, "fingerprint")),
				    a->fingerprint);
		assert_string_equal(json_string_value(json_object_get(m, "status")), a->status);
		assert_string_equal(json_string_value(json_object_get(m, "startsAt")), a->starts_at);
		assert_string_equal(json_string_value(json_object_get(m, "endsAt")), a->ends_at);
		assert_string_equal(json_string_value(json_object_get(
					    json_object_get(m, "labels"), "container")),
				    am_labels_get(&a->labels, "container"));
	}
	json_object_del(doc, "members");
	rest = json_dumps(doc, JSON_COMPACT);
	assert_payload(rest, body, 0, repo);
	free(rest);
	json_decref(doc);
	am_payload_free(p);
}

static char *read_log(const struct fixture *f)
{
	struct buf b = BUF_INIT;
	char chunk[4096];
	ssize_t n;
	int fd = open(f->log_path, O_RDONLY);

	assert_true(fd >= 0);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		assert_int_equal(buf_add(&b, chunk, (size_t)n), ERR_OK);
	close(fd);
	return buf_detach(&b);
}

/* ---- tests ---- */

static void unauthorized_is_401(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("01_single_firing.json");
	const char *const none[] = { JSON_TYPE, NULL };
	const char *const wrong[] = { JSON_TYPE, "Authorization: Bearer wrong-secret", NULL };
	const char *const scheme[] = { JSON_TYPE, "Authorization: Basic dXNlcjpwYXNz", NULL };
	const char *const *cases[] = { none, wrong, scheme };
	struct reply r;
	char *log;

	for (size_t i = 0; i < 3; i++)
		expect_rejected(f, NULL, body, cases[i], 401, "{\"error\":\"unauthorized\"}");
	post(f, NULL, body, wrong, &r);
	assert_int_equal(r.status, 401);
	assert_contains(buf_str(&r.headers), "WWW-Authenticate: Bearer realm=\"alertbridge\"\r\n");
	reply_release(&r);
	/* Auth comes first: a bad body without credentials is still 401. */
	expect_rejected(f, NULL, "{", none, 401, "{\"error\":\"unauthorized\"}");
	log = read_log(f);
	assert_contains(log, "webhook rejected");
	assert_contains(log, "code=401");
	assert_contains(log, "invalid bearer token");
	assert_contains(log, "missing Authorization header");
	assert_lacks(log, "wrong-secret");
	assert_lacks(log, TOKEN);
	assert_lacks(log, "dXNlcjpwYXNz");
	assert_lacks(log, "DiskFull");  /* nothing of the body */
	free(log);
	free(body);
}

static void wrong_content_type_is_415(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("01_single_firing.json");
	const char *types[] = { NULL, "Content-Type: text/plain", "Content-Type: application/jsonx",
				"Content-Type: application/x-www-form-urlencoded",
				"Content-Type: text/json" };
	const char *ok_types[] = { "Content-Type: application/json; charset=utf-8",
				   "Content-Type: Application/JSON",
				   "Content-Type: application/json ;charset=UTF-8" };
	const char *want = "{\"error\":\"unsupported Content-Type: want application/json\"}";

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		const char *const h[] = { AUTH_HEADER, types[i], NULL };

		expect_rejected(f, NULL, body, h, 415, want);
	}
	for (size_t i = 0; i < sizeof(ok_types) / sizeof(ok_types[0]); i++) {
		const char *const h[] = { AUTH_HEADER, ok_types[i], NULL };
		struct reply r;

		post(f, NULL, body, h, &r);
		assert_int_equal(r.status, 200);
		reply_release(&r);
	}
	/* The first is stored, the others repeat it. */
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	free(body);
}

static void invalid_payload_is_400(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("01_single_firing.json");
	char *v3 = replace(body, "\"version\": \"4\"", "\"version\": \"3\"");
	char *no_alerts = replace(body, "\"alerts\": [", "\"alerts\": 7, \"x\": [");
	char *alert_string = replace(body, "\"alerts\": [", "\"alerts\": [\"x\", ");

	expect_rejected(f, NULL, v3, GOOD_HEADERS, 400,
			"{\"error\":\"unsupported version, want \\\"4\\\"\","
			"\"field\":\"version\"}");
	/* The envelope's types; a problem inside an alert is that alert's (see below). */
	expect_rejected(f, NULL, no_alerts, GOOD_HEADERS, 400,
			"{\"error\":\"must be an array\",\"field\":\"alerts\"}");
	expect_rejected(f, NULL, alert_string, GOOD_HEADERS, 400,
			"{\"error\":\"must be an object\",\"field\":\"alerts[0]\"}");
	/* Not JSON at all: no "field". */
	expect_rejected(f, NULL, "[]", GOOD_HEADERS, 400,
			"{\"error\":\"payload must be a JSON object\"}");
	expect_rejected(f, NULL, "{\"version\":\"4\"", GOOD_HEADERS, 400,
			"{\"error\":\"invalid JSON at line 1 column 14: '}' expected near end of "
			"file\"}");
	free(alert_string);
	free(no_alerts);
	free(v3);
	free(body);
}

static void unknown_receiver_is_404(void **state)
{
	struct fixture *f = *state;
	char *body = fixture_for("01_single_firing.json", "nobody");
	char *quoted = fixture_for("01_single_firing.json", "we\\\\.\\\"q\\\"");
	char *log;

	expect_rejected(f, NULL, body, GOOD_HEADERS, 404,
			"{\"error\":\"unknown receiver \\\"nobody\\\"\",\"receiver\":\"nobody\"}");
	/* The query wins over the payload, even to reject. */
	expect_rejected(f, "?receiver=other%0A", body, GOOD_HEADERS, 404,
			"{\"error\":\"unknown receiver \\\"other\\n\\\"\","
			"\"receiver\":\"other\\n\"}");
	expect_rejected(f, "?receiver=a%01%09", body, GOOD_HEADERS, 404,
			"{\"error\":\"unknown receiver \\\"a\\u0001\\t\\\"\","
			"\"receiver\":\"a\\u0001\\t\"}");
	/* Not UTF-8 in the query: escaped as U+FFFD. */
	expect_rejected(f, "?receiver=%FF", body, GOOD_HEADERS, 404,
			"{\"error\":\"unknown receiver \\\"\\uFFFD\\\"\","
			"\"receiver\":\"\\uFFFD\"}");
	/* The payload's name, unescaped (we\."q" -> we."q"), is what is looked up. */
	expect_rejected(f, NULL, quoted, GOOD_HEADERS, 404,
			"{\"error\":\"unknown receiver \\\"we.\\\"q\\\"\\\"\","
			"\"receiver\":\"we.\\\"q\\\"\"}");
	log = read_log(f);
	assert_contains(log, "reason=\"unknown receiver\"");
	assert_contains(log, "receiver=nobody");
	free(log);
	free(quoted);
	free(body);
}

static void single_fixture_queues_one_event(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("01_single_firing.json");
	struct store_event ev;
	char *log;

	log_setup(LOG_DEBUG, LOG_LOGFMT);
	expect_ok(f, NULL, body, "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":1}");
	log_setup(LOG_INFO, LOG_LOGFMT);
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	take_event(f, &ev);
	assert_string_equal(ev.kind, "bridge");
	assert_string_equal(ev.receiver, "alert-service");
	assert_string_equal(ev.key, "43257ea8bc3d7780");
	assert_string_equal(ev.status, "firing");
	assert_int_equal(ev.starts_at_ms, INT64_C(1795222188539));  /* 2026-11-21T00:49:48.539Z */
	assert_int_equal(ev.ends_at_ms, 0);
	assert_int_equal(ev.received_at_ms, NOW_MS);
	assert_payload(ev.payload, body, 0, NULL);
	store_event_release(&ev);
	assert_no_more_events(f);
	log = read_log(f);
	assert_contains(log, "msg=\"webhook request\" code=200 receiver=alert-service alerts=1");
	free(log);
	free(body);
}

static void group_fixtures_queue_one_event_per_alert(void **state)
{
	struct fixture *f = *state;
	char *fired = read_fixture("03_group_of_3_firing.json");
	char *partly = read_fixture("04_group_partially_resolved.json");
	struct am_payload *p = NULL;
	struct am_error e;
	struct store_event ev;

	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_3);
	expect_ok(f, NULL, partly, OK_ALERT_SERVICE_3);
	/* 04 repeats the two alerts of 03 still firing: only its resolved one is new. */
	assert_int_equal(store_pending_count(f->st, "bridge"), 4);
	for (int k = 0; k < 2; k++) {
		const char *body = k ? partly : fired;

		assert_int_equal(am_parse(body, strlen(body), NULL, &p, &e), ERR_OK);
		for (size_t i = 0; i < (k ? 1u : 3u); i++) {
			const struct am_alert *a = &p->alerts[i];

			take_event(f, &ev);
			assert_string_equal(ev.receiver, "alert-service");
			assert_string_equal(ev.key, a->fingerprint);
			assert_string_equal(ev.status, a->status);
			assert_int_equal(ev.starts_at_ms, a->starts_at_ms);
			assert_int_equal(ev.ends_at_ms, a->ends_at_ms);
			assert_payload(ev.payload, body, i, NULL);
			store_event_release(&ev);
		}
		/* 04 has a resolved alert with an endsAt: it travels. */
		if (k)
			assert_true(p->alerts[0].ends_at_ms > 0 && !p->alerts[0].firing);
		am_payload_free(p);
	}
	assert_no_more_events(f);
	free(partly);
	free(fired);
}

static void quote_meta_receiver_and_query_override(void **state)
{
	struct fixture *f = *state;
	/* Alertmanager sends regexp.QuoteMeta("team.a+b") = team\.a\+b (JSON: team\\.a\\+b). */
	char *escaped = fixture_for("01_single_firing.json", "team\\\\.a\\\\+b");
	/* Resolved: another state of the alert, not a repeat. */
	char *nobody = fixture_for("02_single_resolved.json", "nobody");
	struct store_event ev;

	expect_ok(f, NULL, escaped, "{\"status\":\"ok\",\"receiver\":\"team.a+b\",\"alerts\":1}");
	take_event(f, &ev);
	assert_string_equal(ev.receiver, "team.a+b");
	assert_payload(ev.payload, escaped, 0, NULL);
	store_event_release(&ev);
	/* ?receiver= overrides the payload's (URL-decoded, not unescaped). */
	expect_ok(f, "?receiver=team.a%2Bb", nobody,
		  "{\"status\":\"ok\",\"receiver\":\"team.a+b\",\"alerts\":1}");
	take_event(f, &ev);
	assert_string_equal(ev.receiver, "team.a+b");
	assert_payload(ev.payload, nobody, 0, NULL);
	store_event_release(&ev);
	/* An empty ?receiver= counts as absent. */
	expect_ok(f, "?receiver=", escaped, OK_TEAM_AB_1);
	take_event(f, &ev);
	assert_string_equal(ev.receiver, "team.a+b");
	store_event_release(&ev);
	assert_no_more_events(f);
	free(nobody);
	free(escaped);
}

static void repo_query_and_label_override(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");
	char *labelled = replace(body, "\"container\": \"proxy\",",
				 "\"container\": \"proxy\", "
				 "\"alertbridge_repo\": \"lab/own-repo\",");
	char *empty = replace(body, "\"container\": \"proxy\",",
			      "\"container\": \"proxy\", \"alertbridge_repo\": \"\",");
	const char *want_ok = OK_ALERT_SERVICE_3;
	const char *repos[] = { "other/repo", "lab/own-repo" };
	struct store_event ev;

	expect_ok(f, "?repo=other/repo", body, want_ok);
	for (size_t i = 0; i < 3; i++) {
		take_event(f, &ev);
		assert_payload(ev.payload, body, i, "other/repo");
		store_event_release(&ev);
	}
	/*
	 * The label wins over the query, for its alert only: the only new
	 * state (the other two repeat the first post).
	 */
	expect_ok(f, "?repo=other%2Frepo", labelled, want_ok);
	take_event(f, &ev);
	assert_payload(ev.payload, labelled, 1, repos[1]);
	store_event_release(&ev);
	assert_no_more_events(f);
	/* An empty label counts as absent. */
	expect_ok(f, NULL, empty, want_ok);
	for (size_t i = 0; i < 3; i++) {
		take_event(f, &ev);
		assert_payload(ev.payload, empty, i, NULL);
		store_event_release(&ev);
	}
	assert_no_more_events(f);
	free(empty);
	free(labelled);
	free(body);
}

/* One dead letter seen by store_dead_unmapped(): its key and reason. */
struct dead {
	char key[80];
	char reason[512];
	char status[16];
	char payload[256];
};

struct deads {
	struct dead v[8];
	size_t n;
};

static int collect_dead(void *ctx, const struct store_event *ev)
{
	struct deads *d = ctx;

	if (d->n < 8) {
		snprintf(d->v[d->n].key, sizeof(d->v[d->n].key), "%s", ev->key);
		snprintf(d->v[d->n].reason, sizeof(d->v[d->n].reason), "%s",
			 ev->last_error ? ev->last_error : "");
		snprintf(d->v[d->n].status, sizeof(d->v[d->n].status), "%s", ev->status);
		snprintf(d->v[d->n].payload, sizeof(d->v[d->n].payload), "%s", ev->payload);
	}
	d->n++;
	return 0;
}

static void read_deads(const struct fixture *f, struct deads *d)
{
	memset(d, 0, sizeof(*d));
	assert_int_equal(store_dead_unmapped(f->st, "bridge", 100, collect_dead, d), ERR_OK);
}

static void invalid_repo_query_is_400(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");

	/* ?repo= is the request's, not one alert's: the whole request is wrong. */
	expect_rejected(f, "?repo=a/b/c", body, GOOD_HEADERS, 400,
			"{\"error\":\"query parameter repo: "
			"repo \\\"a/b/c\\\": want owner/name\"}");
	assert_int_equal(store_dead_count(f->st), 0);
	free(body);
}

/*
 * An alert whose alertbridge_repo label is not owner/name is dead-lettered
 * with its reason; the alerts beside it are queued and the answer is 200
 * (a 400 would make Alertmanager re-send the group forever).
 */
static void invalid_repo_label_dead_letters_its_alert(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");
	char *bad_label = replace(body, "\"container\": \"sidecar\",",
				  "\"container\": \"sidecar\", \"alertbridge_repo\": \"a/b/c\",");
	struct store_event ev;
	struct deads d;
	struct buf out = BUF_INIT;

	/* A valid query does not excuse an invalid label. */
	expect_ok(f, "?repo=ok/repo", bad_label,
		  "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3,\"invalid\":1}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 2);
	for (size_t i = 0; i < 2; i++) {
		take_event(f, &ev);
		assert_payload(ev.payload, bad_label, i, "ok/repo");
		store_event_release(&ev);
	}
	assert_no_more_events(f);
	assert_int_equal(store_dead_count(f->st), 1);
	read_deads(f, &d);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.v[0].key, "04b8c13f54b78add");
	assert_string_equal(d.v[0].status, "firing");
	assert_string_equal(d.v[0].reason, "invalid alert: alerts[2].labels.alertbridge_repo: "
					   "repo \"a/b/c\": want owner/name");
	metrics_render(f->metrics, &out);
	assert_contains(buf_str(&out), "alertbridge_webhook_alerts_invalid_total"
				       "{receiver=\"alert-service\",reason=\"alertbridge_repo\"} 1\n");
	assert_contains(buf_str(&out), "alertbridge_webhook_alerts_total"
				       "{receiver=\"alert-service\",status=\"firing\"} 2\n");
	buf_release(&out);
	free(bad_label);
	free(body);
}

/*
 * Problems inside alerts (an annotation over 64 KiB, a missing startsAt) are
 * the alert's: each is dead-lettered under its fingerprint with the field and
 * the message, the valid alert is queued.
 */
static void invalid_alerts_are_dead_lettered(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");
	struct buf big = BUF_INIT, out = BUF_INIT;
	char *step, *bad;
	struct store_event ev;
	struct deads d;

	assert_int_equal(buf_adds(&big, "\"description\": \""), ERR_OK);
	for (size_t i = 0; i < 70 * 1024; i++)
		assert_int_equal(buf_addch(&big, 'y'), ERR_OK);
	assert_int_equal(buf_adds(&big, "\", \"x\": \"container=proxy"), ERR_OK);
	step = replace(body, "\"description\": \"Harness alert with labels alertname=HighLatency, "
			     "container=proxy", buf_str(&big));
	bad = replace(step, "\"startsAt\": \"2026-11-21T00:49:51.678Z\",", "");  /* alert 0 */
	expect_ok(f, NULL, bad,
		  "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3,\"invalid\":2}");
	take_event(f, &ev);
	assert_string_equal(ev.key, "04b8c13f54b78add");
	assert_payload(ev.payload, bad, 0, NULL);  /* the only valid one */
	store_event_release(&ev);
	assert_no_more_events(f);
	read_deads(f, &d);
	assert_int_equal(d.n, 2);
	assert_string_equal(d.v[0].key, "98e2b6219b0e1a8d");
	assert_string_equal(d.v[0].reason, "invalid alert: alerts[0].startsAt: missing");
	assert_string_equal(d.v[1].key, "9329cd68b64d6724");
	assert_string_equal(d.v[1].reason, "invalid alert: alerts[1].annotations.description: "
					   "longer than 65536 bytes");
	/* The dead letter keeps why and the alert as it came, for inspection. */
	assert_contains(d.v[1].payload, "{\"v\":1,\"receiver\":\"alert-service\",\"invalid\":"
					"{\"field\":\"alerts[1].annotations.description\","
					"\"error\":\"longer than 65536 bytes\"},\"alert\":"
					"{\"annotations\":{\"description\":\"yyyy");
	metrics_render(f->metrics, &out);
	assert_contains(buf_str(&out), "alertbridge_webhook_alerts_invalid_total"
				       "{receiver=\"alert-service\",reason=\"startsAt\"} 1\n");
	assert_contains(buf_str(&out), "alertbridge_webhook_alerts_invalid_total"
				       "{receiver=\"alert-service\",reason=\"annotations\"} 1\n");
	buf_release(&out);
	buf_release(&big);
	free(bad);
	free(step);
	free(body);
}

/* Every alert invalid: still 200 (nothing to retry), each one dead-lettered, nothing queued. */
static void all_alerts_invalid_is_200(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");
	char *a = replace(body, "\"container\": \"app\",", "\"container\": 7,");
	char *b = replace(a, "\"status\": \"firing\",\n      \"labels\": {\n        \"alertname\": "
			     "\"HighLatency\",\n        \"container\": \"proxy\"",
			  "\"status\": \"pending\",\n      \"labels\": {\n        \"alertname\": "
			  "\"HighLatency\",\n        \"container\": \"proxy\"");
	char *c = replace(b, "\"fingerprint\": \"04b8c13f54b78add\"", "\"fingerprint\": \"XYZ\"");
	struct deads d;

	expect_ok(f, "?receiver=grouped", c,
		  "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":3,\"invalid\":3}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 0);
	read_deads(f, &d);
	assert_int_equal(d.n, 3);
	/* Without a usable fingerprint the key is computed from the labels, as Alertmanager does. */
	assert_string_equal(d.v[0].key, "98e2b6219b0e1a8d");
	assert_string_equal(d.v[0].reason,
			    "invalid alert: alerts[0].labels.container: must be a string");
	assert_string_equal(d.v[1].key, "9329cd68b64d6724");
	assert_string_equal(d.v[1].status, "firing");  /* the group's, for an invalid one */
	assert_string_equal(d.v[1].reason, "invalid alert: alerts[1].status: must be \"firing\" "
					   "or \"resolved\"");
	assert_string_equal(d.v[2].key, "04b8c13f54b78add");
	assert_string_equal(d.v[2].reason,
			    "invalid alert: alerts[2].fingerprint: must be 16 lowercase hex digits");
	free(c);
	free(b);
	free(a);
	free(body);
}

/* issue_per: group - the group event is made of the valid alerts; the invalid one is dead. */
static void issue_per_group_dead_letters_invalid_alerts(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");
	char *bad = replace(body, "\"container\": \"app\",",
			    "\"container\": \"app\", \"alertbridge_repo\": \"nope\",");
	struct store_event ev;
	struct deads d;

	expect_ok(f, "?receiver=grouped", bad,
		  "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":3,\"invalid\":1}");
	take_event(f, &ev);
	assert_int_equal(strlen(ev.key), 64);
	{
		/* The group's document is the first valid alert's; members: the valid ones. */
		json_t *doc = json_loads(ev.payload, 0, NULL);
		json_t *members = json_object_get(doc, "members");

		assert_non_null(doc);
		assert_null(json_object_get(doc, "repo"));  /* the receiver's: the bridge routes */
		assert_int_equal(json_array_size(members), 2);
		for (size_t i = 0; i < json_array_size(members); i++)
			assert_string_not_equal(json_string_value(json_object_get(
				json_array_get(members, i), "fingerprint")), "98e2b6219b0e1a8d");
		json_decref(doc);
	}
	store_event_release(&ev);
	assert_no_more_events(f);
	read_deads(f, &d);
	assert_int_equal(d.n, 1);
	assert_string_equal(d.v[0].key, "98e2b6219b0e1a8d");
	assert_contains(d.v[0].reason, "alerts[0].labels.alertbridge_repo");
	free(bad);
	free(body);
}

static void issue_per_group_queues_one_event(void **state)
{
	struct fixture *f = *state;
	char *fired = read_fixture("03_group_of_3_firing.json");
	char *resolved = read_fixture("04b_group_all_resolved.json");
	struct am_payload *p = NULL;
	struct am_error e;
	struct store_event ev;
	char key[65];
	int64_t latest = 0;

	/* Make the first alert start later than the second: starts_at is the earliest. */
	char *staggered = replace(fired, "2026-11-21T00:49:51.678Z", "2026-11-21T00:50:00.000Z");

	expect_ok(f, "?receiver=grouped", staggered,
		  "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":3}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	assert_int_equal(am_parse(staggered, strlen(staggered), NULL, &p, &e), ERR_OK);
	issue_group_key_hash(p->group_key, key);
	take_event(f, &ev);
	assert_string_equal(ev.receiver, "grouped");
	assert_string_equal(ev.key, key);
	assert_int_equal(strlen(ev.key), 64);
	assert_string_equal(ev.status, "firing");
	assert_true(p->alerts[0].starts_at_ms > p->alerts[1].starts_at_ms);
	assert_int_equal(ev.starts_at_ms, p->alerts[1].starts_at_ms);
	assert_int_equal(ev.ends_at_ms, 0);
	assert_int_equal(ev.received_at_ms, NOW_MS);
	assert_group_payload(ev.payload, staggered, NULL);
	store_event_release(&ev);
	am_payload_free(p);

	expect_ok(f, "?receiver=grouped&repo=g/r", resolved,
		  "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":2}");
	assert_int_equal(am_parse(resolved, strlen(resolved), NULL, &p, &e), ERR_OK);
	for (size_t i = 0; i < p->n_alerts; i++)
		if (p->alerts[i].ends_at_ms > latest)
			latest = p->alerts[i].ends_at_ms;
	take_event(f, &ev);
	assert_string_equal(ev.key, key);  /* the same group, the same key */
	assert_string_equal(ev.status, "resolved");
	assert_int_equal(ev.ends_at_ms, latest);
	assert_true(latest > 0);
	assert_group_payload(ev.payload, resolved, "g/r");
	store_event_release(&ev);
	am_payload_free(p);
	assert_no_more_events(f);
	free(staggered);
	free(resolved);
	free(fired);
}

static void store_failure_is_503(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");
	sqlite3 *db = NULL;
	char *err = NULL;
	struct reply r;

	/* A trigger that fails every insert into the inbox: the commit fails. */
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, "CREATE TRIGGER inject BEFORE INSERT ON events "
			 "BEGIN SELECT RAISE(ABORT, 'injected failure'); END", NULL, NULL, &err))
		fail_msg("trigger: %s", err);
	post(f, NULL, body, GOOD_HEADERS, &r);
	assert_int_equal(r.status, 503);
	assert_contains(buf_str(&r.headers), "Retry-After: 5\r\n");
	assert_memory_equal(buf_str(&r.body), "{\"error\":\"store unavailable: ", 29);
	assert_contains(buf_str(&r.body), "injected failure");
	assert_int_equal(store_pending_count(f->st, "bridge"), 0);
	reply_release(&r);
	/* Once the store recovers, the retry Alertmanager makes succeeds. */
	assert_int_equal(sqlite3_exec(db, "DROP TRIGGER inject", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	expect_ok(f, NULL, body, OK_ALERT_SERVICE_3);
	assert_int_equal(store_pending_count(f->st, "bridge"), 3);
	free(body);
}

static void expanded_events_over_limit_is_413(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");
	struct buf big = BUF_INIT, ann = BUF_INIT;
	char *over;

	/*
	 * Three alerts each repeat a 60 KB common annotation (within am's 64 KiB
	 * per annotation): the body is fine, its events pass MAX_EVENTS_BYTES.
	 */
	assert_int_equal(buf_adds(&ann, "\"commonAnnotations\": {\"big\": \""), ERR_OK);
	for (int i = 0; i < 60 * 1024; i++)
		assert_int_equal(buf_addch(&ann, 'x'), ERR_OK);
	assert_int_equal(buf_adds(&ann, "\", "), ERR_OK);
	over = replace(body, "\"commonAnnotations\": {", buf_str(&ann));
	assert_int_equal(buf_printf(&big, "{\"error\":\"events of this payload exceed %u bytes\"}",
				    MAX_EVENTS_BYTES), ERR_OK);
	expect_rejected(f, NULL, over, GOOD_HEADERS, 413, buf_str(&big));
	buf_release(&big);
	buf_release(&ann);
	free(over);
	free(body);
}

static void metrics_count_requests_and_alerts(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("04_group_partially_resolved.json");
	char *nobody = fixture_for("01_single_firing.json", "nobody");
	const char *const none[] = { JSON_TYPE, NULL };
	struct buf out = BUF_INIT;
	struct reply r;

	expect_ok(f, NULL, body, OK_ALERT_SERVICE_3);
	post(f, NULL, nobody, GOOD_HEADERS, &r);
	reply_release(&r);
	post(f, NULL, body, none, &r);
	reply_release(&r);
	metrics_render(f->metrics, &out);
	assert_contains(buf_str(&out), "alertbridge_webhook_requests_total"
				       "{receiver=\"alert-service\",code=\"200\"} 1\n");
	/* Rejected before a receiver was found: the label is empty, not the client's text. */
	assert_contains(buf_str(&out), "alertbridge_webhook_requests_total"
				       "{receiver=\"\",code=\"404\"} 1\n");
	assert_contains(buf_str(&out), "alertbridge_webhook_requests_total"
				       "{receiver=\"\",code=\"401\"} 1\n");
	assert_lacks(buf_str(&out), "nobody");
	assert_contains(buf_str(&out), "alertbridge_webhook_alerts_total"
				       "{receiver=\"alert-service\",status=\"firing\"} 2\n");
	assert_contains(buf_str(&out), "alertbridge_webhook_alerts_total"
				       "{receiver=\"alert-service\",status=\"resolved\"} 1\n");
	assert_contains(buf_str(&out), "alertbridge_webhook_duration_seconds_count 3\n");
	buf_release(&out);
	free(nobody);
	free(body);
}

#define N_THREADS 8
#define POSTS_PER_THREAD 5

struct poster {
	const struct fixture *f;
	const char *body;
	long status[POSTS_PER_THREAD];
};

static void *poster_run(void *arg)
{
	struct poster *p = arg;

	for (int i = 0; i < POSTS_PER_THREAD; i++) {
		struct reply r;

		post(p->f, NULL, p->body, GOOD_HEADERS, &r);
		p->status[i] = r.status;
		reply_release(&r);
	}
	return NULL;
}

/* N_THREADS threads post bodies[t] POSTS_PER_THREAD times each at once: all answered 200. */
static void post_from_threads(const struct fixture *f, const char *const *bodies)
{
	struct poster ps[N_THREADS];
	pthread_t th[N_THREADS];

	for (int t = 0; t < N_THREADS; t++) {
		ps[t].f = f;
		ps[t].body = bodies[t];
		assert_int_equal(pthread_create(&th[t], NULL, poster_run, &ps[t]), 0);
	}
	for (int t = 0; t < N_THREADS; t++)
		assert_int_equal(pthread_join(th[t], NULL), 0);
	for (int t = 0; t < N_THREADS; t++)
		for (int i = 0; i < POSTS_PER_THREAD; i++)
			assert_int_equal(ps[t].status[i], 200);
}

/* Each thread posts its own alerts (fingerprints of its own), 5 times. */
static void concurrent_posts_all_stored(void **state)
{
	struct fixture *f = *state;
	char *body = read_fixture("03_group_of_3_firing.json");
	static const char *const fps[] = { "98e2b6219b0e1a8d", "9329cd68b64d6724",
					   "04b8c13f54b78add" };
	char *bodies[N_THREADS];
	struct store_stats stats;

	for (int t = 0; t < N_THREADS; t++) {
		bodies[t] = xstrdup(body);
		for (size_t i = 0; i < 3; i++) {
			char mine[17];
			char *next;

			snprintf(mine, sizeof(mine), "%x%s", t, fps[i] + 1);
			next = replace(bodies[t], fps[i], mine);
			free(bodies[t]);
			bodies[t] = next;
		}
	}
	post_from_threads(f, (const char *const *)bodies);
	/* Each thread's first post is stored, its next ones are repeats. */
	assert_int_equal(store_pending_count(f->st, "bridge"), N_THREADS * 3);
	store_stats(f->st, &stats);
	assert_int_equal(stats.events, N_THREADS * 3);
	print_message("%d posts in %llu commits\n", N_THREADS * POSTS_PER_THREAD,
		      (unsigned long long)stats.commits);
	for (int t = 0; t < N_THREADS; t++)
		free(bodies[t]);
	free(body);
}

/* The count in alertbridge_webhook_alerts_repeated_total{receiver}. */
static void assert_repeated(const struct fixture *f, const char *receiver, int n)
{
	struct buf out = BUF_INIT, line = BUF_INIT;

	metrics_render(f->metrics, &out);
	assert_int_equal(buf_printf(&line, "alertbridge_webhook_alerts_repeated_total"
					   "{receiver=\"%s\"} %d\n", receiver, n), ERR_OK);
	assert_contains(buf_str(&out), buf_str(&line));
	buf_release(&line);
	buf_release(&out);
}

/*
 * An alert state equal to the last one stored for its key adds no event,
 * without a transaction; a changed endsAt or status does.
 */
static void repeat_adds_no_event(void **state)
{
	struct fixture *f = *state;
	char *fired = read_fixture("01_single_firing.json");
	char *resolved = read_fixture("02_single_resolved.json");
	char *later = replace(fired, "0001-01-01T00:00:00Z", "2026-11-21T01:49:48.539Z");
	struct store_stats before, after;
	struct store_event ev;

	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	take_event(f, &ev);  /* done: a repeat of a done event is still one */
	store_event_release(&ev);
	store_stats(f->st, &before);
	for (int i = 0; i < 5; i++)
		expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	store_stats(f->st, &after);
	assert_no_more_events(f);
	assert_int_equal(after.commits, before.commits);
	assert_repeated(f, "alert-service", 5);

	expect_ok(f, NULL, later, OK_ALERT_SERVICE_1);  /* endsAt moved: a new state */
	expect_ok(f, NULL, later, OK_ALERT_SERVICE_1);
	take_event(f, &ev);
	assert_int_equal(ev.ends_at_ms, INT64_C(1795225788539));
	store_event_release(&ev);
	assert_no_more_events(f);
	expect_ok(f, NULL, resolved, OK_ALERT_SERVICE_1);
	expect_ok(f, NULL, resolved, OK_ALERT_SERVICE_1);
	take_event(f, &ev);
	assert_string_equal(ev.status, "resolved");
	store_event_release(&ev);
	assert_no_more_events(f);
	/* The same receiver's other repository is another state. */
	expect_ok(f, "?repo=other/repo", resolved, OK_ALERT_SERVICE_1);
	take_event(f, &ev);
	store_event_release(&ev);
	assert_no_more_events(f);
	assert_repeated(f, "alert-service", 7);
	free(later);
	free(resolved);
	free(fired);
}

/* A group event repeats only when its members (fingerprint, status, times) are equal too. */
static void group_member_change_is_no_repeat(void **state)
{
	struct fixture *f = *state;
	char *fired = read_fixture("03_group_of_3_firing.json");
	char *partial = read_fixture("04_group_partially_resolved.json");
	char *two = replace(fired, "\"fingerprint\": \"04b8c13f54b78add\"",
			    "\"fingerprint\": \"04b8c13f54b78ade\"");
	const char *ok3 = "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":3}";

	expect_ok(f, "?receiver=grouped", fired, ok3);
	expect_ok(f, "?receiver=grouped", fired, ok3);
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	assert_repeated(f, "grouped", 3);
	expect_ok(f, "?receiver=grouped", two, ok3);  /* a member replaced */
	assert_int_equal(store_pending_count(f->st, "bridge"), 2);
	expect_ok(f, "?receiver=grouped", partial, ok3);  /* a member resolved */
	expect_ok(f, "?receiver=grouped", partial, ok3);
	assert_int_equal(store_pending_count(f->st, "bridge"), 3);
	assert_repeated(f, "grouped", 6);
	free(two);
	free(partial);
	free(fired);
}

/* 8 threads post the same group at once: one event, every answer 200. */
static void concurrent_repeats_stored_once(void **state)
{
	struct fixture *f = *state;
	char *body = fixture_for("03_group_of_3_firing.json", "grouped");
	const char *bodies[N_THREADS];

	for (int t = 0; t < N_THREADS; t++)
		bodies[t] = body;
	post_from_threads(f, bodies);
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	assert_repeated(f, "grouped", (N_THREADS * POSTS_PER_THREAD - 1) * 3);
	free(body);
}

/*
 * Post 01_single_firing.json, take its event and give its key a map row
 * with issue number: the state a repeat is compared with.
 */
static void fire_and_map(const struct fixture *f, const char *fired, int64_t number)
{
	struct store_issue row = { .receiver = (char *)"alert-service",
				   .key = (char *)"43257ea8bc3d7780",
				   .repo = (char *)"my-org/cluster-alerts", .number = number,
				   .state = (char *)"open" };
	struct store_event ev;

	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	take_event(f, &ev);
	store_event_release(&ev);
	assert_int_equal(store_issue_put(f->st, &row), ERR_OK);
}

/* A dry-run map row (issue 0): the re-send is stored, so that once live it makes the issue. */
static void dry_run_row_is_no_repeat(void **state)
{
	struct fixture *f = *state;
	char *fired = read_fixture("01_single_firing.json");
	struct store_event ev;

	fire_and_map(f, fired, 0);
	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	take_event(f, &ev);
	assert_string_equal(ev.key, "43257ea8bc3d7780");
	store_event_release(&ev);
	fire_and_map(f, fired, 12);  /* live now: the post is a repeat, the row gets a number */
	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	assert_no_more_events(f);
	free(fired);
}

/* After map forget (another process in production), the same firing is new. */
static void forgotten_key_is_no_repeat(void **state)
{
	struct fixture *f = *state;
	char *fired = read_fixture("01_single_firing.json");
	struct store_event ev;

	fire_and_map(f, fired, 7);
	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	assert_no_more_events(f);
	assert_int_equal(store_issue_forget(f->st, "alert-service", "43257ea8bc3d7780"), ERR_OK);
	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	take_event(f, &ev);
	assert_string_equal(ev.key, "43257ea8bc3d7780");
	store_event_release(&ev);
	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);  /* and then repeats again */
	assert_no_more_events(f);
	free(fired);
}

static void assert_cache_hits(const struct fixture *f, const char *receiver, int n)
{
	struct buf out = BUF_INIT, line = BUF_INIT;

	metrics_render(f->metrics, &out);
	if (n == 0) {
		assert_lacks(buf_str(&out), "alertbridge_webhook_cache_hits_total{");
	} else {
		assert_int_equal(buf_printf(&line, "alertbridge_webhook_cache_hits_total"
						   "{receiver=\"%s\"} %d\n", receiver, n), ERR_OK);
		assert_contains(buf_str(&out), buf_str(&line));
	}
	buf_release(&line);
	buf_release(&out);
}

/*
 * A body seen before is answered from the cache when the store says its
 * alerts are all repeats, with the answer and metrics a parse would give;
 * when they are not (a resolve came between), it goes the whole way and its
 * new state is queued.  Query parameters are part of what is seen; a body
 * with a dead letter is never answered from the cache.
 */
static void seen_body_is_answered_from_the_cache(void **state)
{
	struct fixture *f = *state;
	char *fired = read_fixture("01_single_firing.json");
	char *resolved = read_fixture("02_single_resolved.json");
	char *group = read_fixture("03_group_of_3_firing.json");
	char *bad = replace(group, "\"container\": \"sidecar\",",
			    "\"container\": \"sidecar\", \"alertbridge_repo\": \"a/b/c\",");
	const char *ok3 = "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3}";
	struct store_event ev;

	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	assert_cache_hits(f, "alert-service", 0);
	for (int i = 0; i < 3; i++)
		expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	assert_cache_hits(f, "alert-service", 3);
	assert_repeated(f, "alert-service", 3);
	take_event(f, &ev);
	store_event_release(&ev);
	assert_no_more_events(f);

	/* Resolved, then the same firing body: not a repeat any more, so queued. */
	expect_ok(f, NULL, resolved, OK_ALERT_SERVICE_1);
	take_event(f, &ev);
	assert_string_equal(ev.status, "resolved");
	store_event_release(&ev);
	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	assert_cache_hits(f, "alert-service", 3);
	take_event(f, &ev);
	assert_string_equal(ev.status, "firing");
	store_event_release(&ev);
	expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);  /* a repeat again, from the cache */
	assert_cache_hits(f, "alert-service", 4);

	/* Another repository asked for: another request, so the whole way. */
	expect_ok(f, "?repo=other/repo", fired, OK_ALERT_SERVICE_1);
	take_event(f, &ev);
	store_event_release(&ev);
	assert_cache_hits(f, "alert-service", 4);
	expect_ok(f, "?repo=other/repo", fired, OK_ALERT_SERVICE_1);
	assert_cache_hits(f, "alert-service", 5);
	assert_no_more_events(f);

	/* A group of three: counted as three alerts, answered the same. */
	expect_ok(f, NULL, group, ok3);
	expect_ok(f, NULL, group, ok3);
	assert_cache_hits(f, "alert-service", 6);
	assert_repeated(f, "alert-service", 3 + 1 + 1 + 3);

	/* With a dead letter: never from the cache (its answer says "invalid"). */
	for (int i = 0; i < 2; i++)
		expect_ok(f, "?repo=ok/repo", bad,
			  "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3,"
			  "\"invalid\":1}");
	assert_cache_hits(f, "alert-service", 6);
	free(bad);
	free(group);
	free(resolved);
	free(fired);
}

/* Serve a second webhook built from wo on its own server and POST body to it. */
static void post_to(struct fixture *f, const struct webhook_options *wo, const char *body,
		    const char *const *headers, struct reply *r)
{
	struct srv_options so = { 0 };
	struct webhook *w = webhook_new(wo);
	struct srv *s = NULL, *saved = f->srv;

	so.listen_address = "127.0.0.1:0";
	so.threads = 1;
	assert_int_equal(srv_new(&so, &s, NULL), ERR_OK);
	assert_int_equal(srv_route(s, "POST", "/v1/webhook", webhook_handle, w), ERR_OK);
	assert_int_equal(srv_start(s, NULL), ERR_OK);
	f->srv = s;
	post(f, NULL, body, headers, r);
	f->srv = saved;
	srv_free(s);
	webhook_free(w);
}

/* Without configured credentials the endpoint is open; a NULL metrics is fine. */
static void open_endpoint_without_auth(void **state)
{
	struct fixture *f = *state;
	struct webhook_options wo = { 0 };
	char *body = read_fixture("01_single_firing.json");
	const char *const h[] = { JSON_TYPE, NULL };
	struct reply r;

	wo.cfg = f->cfg;
	wo.store = f->st;
	post_to(f, &wo, body, h, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_str(&r.body),
			    "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":1}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	reply_release(&r);
	webhook_free(NULL);
	free(body);
}

/* The am_options limits reach am_parse(). */
static void payload_limits_apply(void **state)
{
	struct fixture *f = *state;
	struct webhook_options wo = { 0 };
	char *body = read_fixture("03_group_of_3_firing.json");
	struct reply r;

	wo.cfg = f->cfg;
	wo.store = f->st;
	wo.auth = f->auth;
	wo.limits.max_alerts = 2;
	post_to(f, &wo, body, GOOD_HEADERS, &r);
	assert_int_equal(r.status, 400);
	assert_string_equal(buf_str(&r.body),
			    "{\"error\":\"more than 2 alerts\",\"field\":\"alerts\"}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 0);
	reply_release(&r);
	free(body);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(unauthorized_is_401, setup, teardown),
		cmocka_unit_test_setup_teardown(wrong_content_type_is_415, setup, teardown),
		cmocka_unit_test_setup_teardown(invalid_payload_is_400, setup, teardown),
		cmocka_unit_test_setup_teardown(unknown_receiver_is_404, setup, teardown),
		cmocka_unit_test_setup_teardown(single_fixture_queues_one_event, setup, teardown),
		cmocka_unit_test_setup_teardown(group_fixtures_queue_one_event_per_alert, setup,
						teardown),
		cmocka_unit_test_setup_teardown(quote_meta_receiver_and_query_override, setup,
						teardown),
		cmocka_unit_test_setup_teardown(repo_query_and_label_override, setup, teardown),
		cmocka_unit_test_setup_teardown(invalid_repo_query_is_400, setup, teardown),
		cmocka_unit_test_setup_teardown(invalid_repo_label_dead_letters_its_alert, setup,
						teardown),
		cmocka_unit_test_setup_teardown(invalid_alerts_are_dead_lettered, setup, teardown),
		cmocka_unit_test_setup_teardown(all_alerts_invalid_is_200, setup, teardown),
		cmocka_unit_test_setup_teardown(issue_per_group_dead_letters_invalid_alerts, setup,
						teardown),
		cmocka_unit_test_setup_teardown(issue_per_group_queues_one_event, setup, teardown),
		cmocka_unit_test_setup_teardown(store_failure_is_503, setup, teardown),
		cmocka_unit_test_setup_teardown(expanded_events_over_limit_is_413, setup, teardown),
		cmocka_unit_test_setup_teardown(metrics_count_requests_and_alerts, setup, teardown),
		cmocka_unit_test_setup_teardown(concurrent_posts_all_stored, setup, teardown),
		cmocka_unit_test_setup_teardown(repeat_adds_no_event, setup, teardown),
		cmocka_unit_test_setup_teardown(group_member_change_is_no_repeat, setup, teardown),
		cmocka_unit_test_setup_teardown(concurrent_repeats_stored_once, setup, teardown),
		cmocka_unit_test_setup_teardown(forgotten_key_is_no_repeat, setup, teardown),
		cmocka_unit_test_setup_teardown(dry_run_row_is_no_repeat, setup, teardown),
		cmocka_unit_test_setup_teardown(seen_body_is_answered_from_the_cache, setup, teardown),
		cmocka_unit_test_setup_teardown(open_endpoint_without_auth, setup, teardown),
		cmocka_unit_test_setup_teardown(payload_limits_apply, setup, teardown),
	};
	int rc;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	curl_global_cleanup();
	return rc;
}
