/*
 * webhook_fixture.c - the fixture of test_webhook*.c (webhook_fixture.h).
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
#include "store/store.h"
#include "store/store_events.h"
#include "core/xalloc.h"

#include "tests/unit/helpers/webhook_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

static const char CONFIG_YAML[] =
	"receivers:\n"
	"  - name: alert-service\n"
	"    repo: my-org/cluster-alerts\n"
	"  - name: team.a+b\n"
	"    repo: team/ab\n"
	"  - name: grouped\n"
	"    repo: my-org/grouped\n"
	"    issue_per: group\n";


static int64_t fixed_now(void *ctx)
{
	return *(const int64_t *)ctx;
}

char *wfx_read_fixture(const char *name)
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
char *wfx_replace(const char *s, const char *from, const char *to)
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
char *wfx_fixture_for(const char *name, const char *receiver_json)
{
	char *raw = wfx_read_fixture(name);
	char to[256];
	char *out;

	snprintf(to, sizeof(to), "\"receiver\": \"%s\"", receiver_json);
	out = wfx_replace(raw, "\"receiver\": \"alert-service\"", to);
	free(raw);
	return out;
}

int wfx_setup(void **state)
{
	struct fixture *f = xcalloc(1, sizeof(*f));
	struct buf msg = BUF_INIT;
	struct cfg_webhook wc = { 0 };
	struct srv_options so = { 0 };
	struct webhook_options wo = { 0 };

	tfx_mkdtemp(f->dir, sizeof(f->dir), "test_webhook");
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

int wfx_teardown(void **state)
{
	struct fixture *f = *state;

	srv_free(f->srv);
	webhook_free(f->wh);
	metrics_free(f->metrics);
	auth_free(f->auth);
	store_close(f->st);
	cfg_free(f->cfg);
	log_set_fd(2);
	close(f->log_fd);
	tfx_remove_tree(f->dir);
	for (size_t i = 0; i < f->n_owned; i++)
		free(f->owned[i]);
	free(f);
	return 0;
}

/* Keep p (malloc'd) for wfx_teardown() to free; returns it. */
static const char *own(struct fixture *f, char *p)
{
	assert_true(f->n_owned < sizeof(f->owned) / sizeof(f->owned[0]));
	f->owned[f->n_owned++] = p;
	return p;
}

const char *wfx_body(struct fixture *f, const char *name)
{
	return own(f, wfx_read_fixture(name));
}

const char *wfx_body_for(struct fixture *f, const char *name, const char *receiver_json)
{
	return own(f, wfx_fixture_for(name, receiver_json));
}

const char *wfx_edit(struct fixture *f, const char *s, const char *from, const char *to)
{
	return own(f, wfx_replace(s, from, to));
}

static size_t collect(char *p, size_t size, size_t n, void *arg)
{
	return buf_add(arg, p, size * n) == ERR_OK ? size * n : 0;
}

/*
 * POST body to /v1/webhook + query with the given header lines (NULL-ended).
 * Bounded: 10 s per request.
 */
void wfx_post(const struct fixture *f, const char *query, const char *body,
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

void wfx_reply_release(struct reply *r)
{
	buf_release(&r->body);
	buf_release(&r->headers);
}

const char *const wfx_good_headers[] = { AUTH_HEADER, JSON_TYPE, NULL };

void wfx_assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("\"%s\" does not contain \"%s\"", hay, needle);
}

void wfx_assert_lacks(const char *hay, const char *needle)
{
	if (strstr(hay, needle))
		fail_msg("\"%s\" contains \"%s\"", hay, needle);
}

void wfx_assert_metric(const struct fixture *f, const char *fmt, ...)
{
	struct buf out = BUF_INIT, line = BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	assert_int_equal(buf_vprintf(&line, fmt, ap), ERR_OK);
	va_end(ap);
	metrics_render(f->metrics, &out);
	wfx_assert_contains(buf_str(&out), buf_str(&line));
	buf_release(&line);
	buf_release(&out);
}

/*
 * POST and check the answer is want_status with exactly want_body as JSON
 * body, and that the queue did not change.
 */
void wfx_expect_rejected(const struct fixture *f, const char *query, const char *body,
			    const char *const *headers, long want_status, const char *want_body)
{
	int64_t before = store_pending_count(f->st, "bridge");
	struct reply r;

	wfx_post(f, query, body, headers, &r);
	assert_int_equal(r.status, want_status);
	assert_string_equal(buf_str(&r.body), want_body);
	wfx_assert_contains(buf_str(&r.headers), "Content-Type: application/json\r\n");
	assert_int_equal(store_pending_count(f->st, "bridge"), before);
	wfx_reply_release(&r);
}

void wfx_expect_ok(const struct fixture *f, const char *query, const char *body,
		      const char *want_body)
{
	struct reply r;

	wfx_post(f, query, body, wfx_good_headers, &r);
	if (r.status != 200)
		fail_msg("status %ld: %s", r.status, buf_str(&r.body));
	assert_string_equal(buf_str(&r.body), want_body);
	wfx_reply_release(&r);
}

/* Take the oldest pending event and mark it done; fail when there is none. */
void wfx_take_event(const struct fixture *f, struct store_event *ev)
{
	memset(ev, 0, sizeof(*ev));
	assert_int_equal(store_next_event(f->st, "bridge", INT64_MAX / 2, ev), ERR_OK);
	assert_int_equal(store_event_done(f->st, ev->id, NULL, NULL), ERR_OK);
}

void wfx_assert_no_more_events(const struct fixture *f)
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
void wfx_assert_payload(const char *payload, const char *body, size_t i, const char *repo)
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
 * A group event's document: alert 0's (as wfx_assert_payload()) with every
 * alert's fingerprint, status, startsAt, endsAt and labels in "members".
 */
void wfx_assert_group_payload(const char *payload, const char *body, const char *repo)
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
	wfx_assert_payload(rest, body, 0, repo);
	free(rest);
	json_decref(doc);
	am_payload_free(p);
}

char *wfx_read_log(const struct fixture *f)
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

		wfx_post(p->f, NULL, p->body, wfx_good_headers, &r);
		p->status[i] = r.status;
		wfx_reply_release(&r);
	}
	return NULL;
}

/* N_THREADS threads wfx_post bodies[t] POSTS_PER_THREAD times each at once: all answered 200. */
void wfx_post_from_threads(const struct fixture *f, const char *const *bodies)
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
