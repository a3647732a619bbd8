/*
 * webhook_fixture.h - the fixture of test_webhook*.c: POST /v1/webhook end to
 * end on loopback (a real server on 127.0.0.1:0 with the handler, a real
 * store on a file in a fresh temporary directory, libcurl as Alertmanager),
 * the Alertmanager fixtures of tests/fixtures/alertmanager, and checks of
 * answers, queued events and logs.  Failures end the test (cmocka).
 */
#ifndef AB_TEST_WEBHOOK_FIXTURE_H
#define AB_TEST_WEBHOOK_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "bridge/webhook.h"
#include "core/auth.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/http_server.h"
#include "core/metrics.h"
#include "store/store.h"
#include "store/store_events.h"

#define TOKEN "t0ps3cret-webhook-token"
#define AUTH_HEADER "Authorization: Bearer " TOKEN
#define JSON_TYPE "Content-Type: application/json"
#define NOW_MS INT64_C(1800000000000)
#define MAX_EVENTS_BYTES (128u << 10)
#define OK_ALERT_SERVICE_3 "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3}"
#define OK_ALERT_SERVICE_1 "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":1}"
#define OK_TEAM_AB_1 "{\"status\":\"ok\",\"receiver\":\"team.a+b\",\"alerts\":1}"
#define N_THREADS 8
#define POSTS_PER_THREAD 5

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
	char *owned[32]; /* the texts wfx_body() and friends made, freed by teardown */
	size_t n_owned;
};

struct reply {
	long status;
	struct buf body;
	struct buf headers;
};

/* Headers of a good request: the bearer token and application/json. */
extern const char *const wfx_good_headers[];

/* cmocka setup: config, store, metrics, log file and a served webhook in *state. */
int wfx_setup(void **state);
/* cmocka teardown: stop and free all of setup()'s fixture, remove its files. */
int wfx_teardown(void **state);
/* The contents of tests/fixtures/alertmanager/NAME (malloc'd). */
char *wfx_read_fixture(const char *name);
/* s with every from replaced by to (malloc'd). */
char *wfx_replace(const char *s, const char *from, const char *to);
/* The fixture NAME with its receiver set to the JSON string receiver_json (malloc'd). */
char *wfx_fixture_for(const char *name, const char *receiver_json);
/* wfx_read_fixture(name), owned by f: freed by wfx_teardown(). */
const char *wfx_body(struct fixture *f, const char *name);
/* wfx_fixture_for(name, receiver_json), owned by f: freed by wfx_teardown(). */
const char *wfx_body_for(struct fixture *f, const char *name, const char *receiver_json);
/* wfx_replace(s, from, to), owned by f: freed by wfx_teardown(). */
const char *wfx_edit(struct fixture *f, const char *s, const char *from, const char *to);
/* POST body to /v1/webhook[query] with headers (NULL-terminated); the reply in *r. */
void wfx_post(const struct fixture *f, const char *query, const char *body,
	      const char *const *headers, struct reply *r);
void wfx_reply_release(struct reply *r);
void wfx_assert_contains(const char *hay, const char *needle);
void wfx_assert_lacks(const char *hay, const char *needle);
/* f's metrics, rendered now, hold the line that fmt formats (with its "\n"). */
void wfx_assert_metric(const struct fixture *f, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* A post answered status with exactly want_body, and nothing queued. */
void wfx_expect_rejected(const struct fixture *f, const char *query, const char *body,
			 const char *const *headers, long status, const char *want_body);
/* A good post answered 200 with exactly want_body. */
void wfx_expect_ok(const struct fixture *f, const char *query, const char *body,
		   const char *want_body);
/* The next due event (fails when none), marked done. */
void wfx_take_event(const struct fixture *f, struct store_event *ev);
void wfx_assert_no_more_events(const struct fixture *f);
/* An event's payload is alert i of body with "repo" appended. */
void wfx_assert_payload(const char *payload, const char *body, size_t i, const char *repo);
/* A group event's payload: the first alert's document with every alert in "members". */
void wfx_assert_group_payload(const char *payload, const char *body, const char *repo);
/* The log file's contents (malloc'd). */
char *wfx_read_log(const struct fixture *f);
/* N_THREADS threads post bodies[t] POSTS_PER_THREAD times each at once: all answered 200. */
void wfx_post_from_threads(const struct fixture *f, const char *const *bodies);

#endif
