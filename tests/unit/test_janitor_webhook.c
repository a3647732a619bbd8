/*
 * test_janitor_webhook.c - POST /v1/janitor/webhook over real HTTP on
 * 127.0.0.1 with a file-backed store: the answers (200, 401, 415, 400 with
 * the field, 413, 503), one "janitor" event per alert keyed namespace/pod,
 * and nothing stored for a rejected request.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <sqlite3.h>
#include <unistd.h>

#include "core/am.h"
#include "core/auth.h"
#include "core/config.h"
#include "core/http_server.h"
#include "core/log.h"
#include "core/metrics.h"
#include "store/store.h"
#include "store/store_events.h"
#include "janitor/janitor.h"
#include "tests/unit/helpers/http_server_fixture.h"

#define TOKEN "janitor-s3cret"
#define AUTH_HEADER "Authorization: Bearer " TOKEN
#define JSON_TYPE "Content-Type: application/json; charset=utf-8"
#define NOW_MS INT64_C(1794960000000)

#define ALERT(status, labels)                                                         \
	"{\"status\":\"" status "\",\"labels\":{" labels "},\"annotations\":{},"       \
	"\"startsAt\":\"2026-11-17T18:00:00Z\",\"endsAt\":\"0001-01-01T00:00:00Z\"}"
#define PAYLOAD(alerts)                                                               \
	"{\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"gpu\\\\.janitor\","   \
	"\"groupKey\":\"{}:{}\",\"alerts\":[" alerts "]}"
#define POD1 "\"alertname\":\"JanitorIdleGPUPod\",\"namespace\":\"ml-team\",\"pod\":\"train-1\""
#define POD2 "\"alertname\":\"JanitorIdleGPUPod\",\"namespace\":\"ml-team\",\"pod\":\"train-2\""

struct fixture {
	char dir[64];
	char path[96];
	struct store *st;
	struct auth *auth;
	struct metrics *metrics;
	struct janitor_webhook *w;
	struct srv *srv;
	int64_t now;
	int log_fd;
};

static int64_t fixed_now(void *ctx)
{
	return *(int64_t *)ctx;
}

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));
	struct cfg_webhook wc = { 0 };
	struct srv_options so = { 0 };
	struct janitor_webhook_options wo = { 0 };
	struct buf msg = BUF_INIT;
	char log_path[128];

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_janitor_webhook.XXXXXX");
	assert_non_null(mkdtemp(f->dir));
	snprintf(f->path, sizeof(f->path), "%s/ab.db", f->dir);
	snprintf(log_path, sizeof(log_path), "%s/log", f->dir);
	f->log_fd = open(log_path, O_CREAT | O_RDWR | O_TRUNC | O_APPEND, 0600);
	assert_true(f->log_fd >= 0);
	log_set_fd(f->log_fd);
	if (store_open(f->path, &f->st, &msg))
		fail_msg("store_open: %s", buf_str(&msg));
	wc.bearer_token = (char *)TOKEN;
	assert_int_equal(auth_new(&wc, &f->auth, NULL), ERR_OK);
	f->metrics = metrics_new();
	f->now = NOW_MS;
	wo.store = f->st;
	wo.metrics = f->metrics;
	wo.auth = f->auth;
	wo.now_ms = fixed_now;
	wo.now_ctx = &f->now;
	wo.max_events_bytes = 4096;
	f->w = janitor_webhook_new(&wo);
	so.listen_address = "127.0.0.1:0";
	so.threads = 2;
	assert_int_equal(srv_new(&so, &f->srv, &msg), ERR_OK);
	assert_int_equal(srv_route(f->srv, "POST", "/v1/janitor/webhook", janitor_webhook_handle,
				   f->w),
			 ERR_OK);
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
	janitor_webhook_free(f->w);
	metrics_free(f->metrics);
	auth_free(f->auth);
	store_close(f->st);
	log_set_fd(2);
	close(f->log_fd);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	assert_int_equal(system(cmd), 0);
	free(f);
	return 0;
}

/*
 * POST body with the header lines given (NULL-ended, at most 6) and an empty Content-Type
 * and Expect unless they set them; hfx_fetch()'s time limit.
 */
static void post(const struct fixture *f, const char *body, const char *const *headers,
		 struct reply *r)
{
	const char *all[9] = { "Content-Type:", "Expect:" };
	char url[128];
	size_t n = 2;
	CURLcode cc;

	for (size_t i = 0; headers && headers[i]; i++) {
		assert_true(n < 8);
		all[n++] = headers[i];
	}
	hfx_url_for(url, sizeof(url), f->srv, "/v1/janitor/webhook");
	cc = hfx_fetch("POST", url, body, all, r);
	if (cc != CURLE_OK)
		fail_msg("curl: %s", curl_easy_strerror(cc));
}

static const char *const GOOD[] = { AUTH_HEADER, JSON_TYPE, NULL };

static void assert_contains(const char *hay, const char *needle)
{
	if (!strstr(hay, needle))
		fail_msg("\"%s\" does not contain \"%s\"", hay, needle);
}

static void expect(const struct fixture *f, const char *body, const char *const *headers,
		   long status, const char *want_body, const char *want_header)
{
	int64_t before = store_pending_count(f->st, "janitor");
	struct reply r;

	post(f, body, headers, &r);
	assert_int_equal(r.status, status);
	assert_string_equal(buf_str(&r.body), want_body);
	assert_contains(buf_str(&r.headers), "Content-Type: application/json\r\n");
	if (want_header)
		assert_contains(buf_str(&r.headers), want_header);
	if (status != 200)
		assert_int_equal(store_pending_count(f->st, "janitor"), before);
	hfx_reply_release(&r);
}

static void accepted_one_event_per_alert(void **state)
{
	struct fixture *f = *state;
	struct store_event ev = { 0 };
	struct am_payload *p = NULL;
	struct buf want = BUF_INIT;
	const char *body = PAYLOAD(ALERT("firing", POD1) "," ALERT("resolved", POD2));

	expect(f, body, GOOD, 200, "{\"status\":\"ok\",\"receiver\":\"gpu.janitor\",\"alerts\":2}",
	       NULL);
	assert_int_equal(store_pending_count(f->st, "janitor"), 2);
	assert_int_equal(store_pending_count(f->st, "bridge"), 0);
	assert_int_equal(am_parse(body, strlen(body), NULL, &p, NULL), ERR_OK);
	for (size_t i = 0; i < 2; i++) {
		assert_int_equal(store_next_event(f->st, "janitor", NOW_MS, &ev), ERR_OK);
		assert_string_equal(ev.kind, "janitor");
		assert_string_equal(ev.receiver, "gpu.janitor");
		assert_string_equal(ev.key, i ? "ml-team/train-2" : "ml-team/train-1");
		assert_string_equal(ev.status, i ? "resolved" : "firing");
		assert_true(ev.received_at_ms == NOW_MS);
		buf_reset(&want);
		assert_int_equal(am_event_json(p, i, &want), ERR_OK);
		assert_string_equal(ev.payload, buf_str(&want));
		assert_int_equal(store_event_done(f->st, ev.id, NULL, NULL), ERR_OK);
		store_event_release(&ev);
	}
	am_payload_free(p);
	buf_release(&want);
}

static int collect_dead(void *ctx, const struct store_event *ev)
{
	struct buf *out = ctx;

	(void)buf_printf(out, "%s %s %s: %s\n", ev->receiver, ev->key, ev->status,
			 ev->last_error ? ev->last_error : "");
	return 0;
}

/*
 * An alert without a usable pod or namespace label, or with a problem inside
 * it, is dead-lettered with its reason; the others are queued, answer 200.
 */
static void invalid_alerts_are_dead_lettered(void **state)
{
	/* What the dead letters say, and the reasons they are counted under. */
	static const char *const letters[] = {
		"firing: invalid alert: alerts[1].labels.pod: the janitor needs the label pod\n",
		"firing: invalid alert: alerts[2].labels.namespace: the janitor needs the label "
		"namespace\n",
		"gpu.janitor ",
		" resolved: invalid alert: alerts[3].labels.x: must be a string\n",
	};
	static const char *const reasons[] = { "pod", "namespace", "labels" };
	struct fixture *f = *state;
	struct buf dead = BUF_INIT, m = BUF_INIT;
	struct store_event ev = { 0 };

	expect(f,
	       PAYLOAD(ALERT("firing", POD1) "," ALERT("firing", "\"alertname\":\"X\","
							       "\"namespace\":\"ml-team\"") ","
		       ALERT("firing", "\"pod\":\"p\",\"namespace\":\"\"") ","
		       ALERT("resolved", POD2 ",\"x\":7")),
	       GOOD, 200,
	       "{\"status\":\"ok\",\"receiver\":\"gpu.janitor\",\"alerts\":4,\"invalid\":3}",
	       NULL);
	assert_int_equal(store_pending_count(f->st, "janitor"), 1);
	assert_int_equal(store_next_event(f->st, "janitor", NOW_MS, &ev), ERR_OK);
	assert_string_equal(ev.key, "ml-team/train-1");
	store_event_release(&ev);
	assert_int_equal(store_dead_count(f->st), 3);
	assert_int_equal(store_dead_unmapped(f->st, "janitor", 10, collect_dead, &dead), ERR_OK);
	for (size_t i = 0; i < sizeof(letters) / sizeof(letters[0]); i++)
		assert_contains(buf_str(&dead), letters[i]);
	metrics_render(f->metrics, &m);
	for (size_t i = 0; i < sizeof(reasons) / sizeof(reasons[0]); i++) {
		char line[128];

		snprintf(line, sizeof(line),
			 "alertbridge_janitor_webhook_alerts_invalid_total{reason=\"%s\"} 1\n",
			 reasons[i]);
		assert_contains(buf_str(&m), line);
	}
	buf_release(&m);
	buf_release(&dead);
}

static void auth_type_and_payload_errors(void **state)
{
	struct fixture *f = *state;
	const char *body = PAYLOAD(ALERT("firing", POD1));
	const char *const no_auth[] = { JSON_TYPE, NULL };
	const char *const bad_auth[] = { "Authorization: Bearer nope", JSON_TYPE, NULL };
	const char *const form[] = { AUTH_HEADER, "Content-Type: text/plain", NULL };

	expect(f, body, no_auth, 401, "{\"error\":\"unauthorized\"}",
	       "WWW-Authenticate: Bearer realm=\"alertbridge\"\r\n");
	expect(f, body, bad_auth, 401, "{\"error\":\"unauthorized\"}", NULL);
	expect(f, body, form, 415,
	       "{\"error\":\"unsupported Content-Type: want application/json\"}", NULL);
	expect(f, "{\"version\":\"3\"}", GOOD, 400,
	       "{\"error\":\"unsupported version, want \\\"4\\\"\",\"field\":\"version\"}",
	       NULL);
}

static void events_over_limit_is_413(void **state)
{
	struct fixture *f = *state;
	struct buf body = BUF_INIT;

	/* 20 alerts of ~250 bytes of document each pass the 4096-byte limit. */
	(void)buf_adds(&body, "{\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"j\","
			      "\"groupKey\":\"g\",\"alerts\":[");
	for (int i = 0; i < 20; i++)
		(void)buf_printf(&body, "%s" ALERT("firing", POD1 ",\"i\":\"%d\""), i ? "," : "", i);
	(void)buf_adds(&body, "]}");
	expect(f, buf_str(&body), GOOD, 413,
	       "{\"error\":\"events of this payload exceed 4096 bytes\"}", NULL);
	buf_release(&body);
}

static void store_failure_is_503(void **state)
{
	struct fixture *f = *state;
	sqlite3 *db = NULL;

	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	assert_int_equal(sqlite3_exec(db, "CREATE TRIGGER inject BEFORE INSERT ON events "
					  "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
				      NULL, NULL, NULL),
			 SQLITE_OK);
	{
		struct reply r;

		post(f, PAYLOAD(ALERT("firing", POD1)), GOOD, &r);
		assert_int_equal(r.status, 503);
		assert_contains(buf_str(&r.headers), "Retry-After: 5\r\n");
		/* The detail (a PostgreSQL URI, host, port, user) is the log's, not the answer's. */
		assert_string_equal(buf_str(&r.body), "{\"error\":\"store unavailable\"}");
		hfx_reply_release(&r);
	}
	assert_int_equal(store_pending_count(f->st, "janitor"), 0);
	sqlite3_exec(db, "DROP TRIGGER inject", NULL, NULL, NULL);
	sqlite3_close(db);
}

static void metrics_count_answers(void **state)
{
	struct fixture *f = *state;
	const char *const no_auth[] = { JSON_TYPE, NULL };
	struct buf m = BUF_INIT;

	expect(f, PAYLOAD(ALERT("firing", POD1)), GOOD, 200,
	       "{\"status\":\"ok\",\"receiver\":\"gpu.janitor\",\"alerts\":1}", NULL);
	expect(f, "{}", no_auth, 401, "{\"error\":\"unauthorized\"}", NULL);
	metrics_render(f->metrics, &m);
	assert_contains(buf_str(&m), "alertbridge_janitor_webhook_requests_total{code=\"200\"} 1");
	assert_contains(buf_str(&m), "alertbridge_janitor_webhook_requests_total{code=\"401\"} 1");
	buf_release(&m);
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN_WITH(curl_global_init(CURL_GLOBAL_DEFAULT), curl_global_cleanup(),
	T(accepted_one_event_per_alert),
	T(invalid_alerts_are_dead_lettered),
	T(auth_type_and_payload_errors),
	T(events_over_limit_is_413),
	T(store_failure_is_503),
	T(metrics_count_answers))
