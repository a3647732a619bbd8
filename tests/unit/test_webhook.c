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
#include "tests/unit/helpers/unit_main.h"

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
#include "store/store_events.h"
#include "core/xalloc.h"

#include "tests/unit/helpers/am_fixture.h"
#include "tests/unit/helpers/webhook_fixture.h"

/* ---- tests ---- */

static void unauthorized_is_401(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "01_single_firing.json");
	const char *const none[] = { JSON_TYPE, NULL };
	const char *const wrong[] = { JSON_TYPE, "Authorization: Bearer wrong-secret", NULL };
	const char *const scheme[] = { JSON_TYPE, "Authorization: Basic dXNlcjpwYXNz", NULL };
	const char *const *cases[] = { none, wrong, scheme };
	struct reply r;
	char *log;

	for (size_t i = 0; i < 3; i++)
		wfx_expect_rejected(f, NULL, body, cases[i], 401, "{\"error\":\"unauthorized\"}");
	wfx_post(f, NULL, body, wrong, &r);
	assert_int_equal(r.status, 401);
	wfx_assert_contains(buf_str(&r.headers), "WWW-Authenticate: Bearer realm=\"alertbridge\"\r\n");
	wfx_reply_release(&r);
	/* Auth comes first: a bad body without credentials is still 401. */
	wfx_expect_rejected(f, NULL, "{", none, 401, "{\"error\":\"unauthorized\"}");
	log = wfx_read_log(f);
	wfx_assert_contains(log, "webhook rejected");
	wfx_assert_contains(log, "code=401");
	wfx_assert_contains(log, "invalid bearer token");
	wfx_assert_contains(log, "missing Authorization header");
	wfx_assert_lacks(log, "wrong-secret");
	wfx_assert_lacks(log, TOKEN);
	wfx_assert_lacks(log, "dXNlcjpwYXNz");
	wfx_assert_lacks(log, "DiskFull");  /* nothing of the body */
	free(log);
}

static void wrong_content_type_is_415(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "01_single_firing.json");
	const char *types[] = { NULL, "Content-Type: text/plain", "Content-Type: application/jsonx",
				"Content-Type: application/x-www-form-urlencoded",
				"Content-Type: text/json" };
	const char *ok_types[] = { "Content-Type: application/json; charset=utf-8",
				   "Content-Type: Application/JSON",
				   "Content-Type: application/json ;charset=UTF-8" };
	const char *want = "{\"error\":\"unsupported Content-Type: want application/json\"}";

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		const char *const h[] = { AUTH_HEADER, types[i], NULL };

		wfx_expect_rejected(f, NULL, body, h, 415, want);
	}
	for (size_t i = 0; i < sizeof(ok_types) / sizeof(ok_types[0]); i++) {
		const char *const h[] = { AUTH_HEADER, ok_types[i], NULL };
		struct reply r;

		wfx_post(f, NULL, body, h, &r);
		assert_int_equal(r.status, 200);
		wfx_reply_release(&r);
	}
	/* The first is stored, the others repeat it. */
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
}

static void invalid_payload_is_400(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "01_single_firing.json");
	const char *v3 = wfx_edit(f, body, "\"version\": \"4\"", "\"version\": \"3\"");
	const char *no_alerts = wfx_edit(f, body, "\"alerts\": [", "\"alerts\": 7, \"x\": [");
	const char *alert_string = wfx_edit(f, body, "\"alerts\": [", "\"alerts\": [\"x\", ");

	wfx_expect_rejected(f, NULL, v3, wfx_good_headers, 400,
			"{\"error\":\"unsupported version, want \\\"4\\\"\","
			"\"field\":\"version\"}");
	/* The envelope's types; a problem inside an alert is that alert's (see below). */
	wfx_expect_rejected(f, NULL, no_alerts, wfx_good_headers, 400,
			"{\"error\":\"must be an array\",\"field\":\"alerts\"}");
	wfx_expect_rejected(f, NULL, alert_string, wfx_good_headers, 400,
			"{\"error\":\"must be an object\",\"field\":\"alerts[0]\"}");
	/* Not JSON at all: no "field". */
	wfx_expect_rejected(f, NULL, "[]", wfx_good_headers, 400,
			"{\"error\":\"payload must be a JSON object\"}");
	wfx_expect_rejected(f, NULL, "{\"version\":\"4\"", wfx_good_headers, 400,
			"{\"error\":\"invalid JSON at line 1 column 14: '}' expected near end of "
			"file\"}");
}

static void unknown_receiver_is_404(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body_for(f, "01_single_firing.json", "nobody");
	const char *quoted = wfx_body_for(f, "01_single_firing.json", "we\\\\.\\\"q\\\"");
	char *log;

	wfx_expect_rejected(f, NULL, body, wfx_good_headers, 404,
			"{\"error\":\"unknown receiver \\\"nobody\\\"\",\"receiver\":\"nobody\"}");
	/* The query wins over the payload, even to reject. */
	wfx_expect_rejected(f, "?receiver=other%0A", body, wfx_good_headers, 404,
			"{\"error\":\"unknown receiver \\\"other\\n\\\"\","
			"\"receiver\":\"other\\n\"}");
	wfx_expect_rejected(f, "?receiver=a%01%09", body, wfx_good_headers, 404,
			"{\"error\":\"unknown receiver \\\"a\\u0001\\t\\\"\","
			"\"receiver\":\"a\\u0001\\t\"}");
	/* Not UTF-8 in the query: escaped as U+FFFD. */
	wfx_expect_rejected(f, "?receiver=%FF", body, wfx_good_headers, 404,
			"{\"error\":\"unknown receiver \\\"\\uFFFD\\\"\","
			"\"receiver\":\"\\uFFFD\"}");
	/* The payload's name, unescaped (we\."q" -> we."q"), is what is looked up. */
	wfx_expect_rejected(f, NULL, quoted, wfx_good_headers, 404,
			"{\"error\":\"unknown receiver \\\"we.\\\"q\\\"\\\"\","
			"\"receiver\":\"we.\\\"q\\\"\"}");
	log = wfx_read_log(f);
	wfx_assert_contains(log, "reason=\"unknown receiver\"");
	wfx_assert_contains(log, "receiver=nobody");
	free(log);
}

static void single_fixture_queues_one_event(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "01_single_firing.json");
	struct store_event ev;
	char *log;

	log_setup(LOG_DEBUG, LOG_LOGFMT);
	wfx_expect_ok(f, NULL, body, "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":1}");
	log_setup(LOG_INFO, LOG_LOGFMT);
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	wfx_take_event(f, &ev);
	assert_string_equal(ev.kind, "bridge");
	assert_string_equal(ev.receiver, "alert-service");
	assert_string_equal(ev.key, "43257ea8bc3d7780");
	assert_string_equal(ev.status, "firing");
	assert_int_equal(ev.starts_at_ms, INT64_C(1795222188539));  /* 2026-11-21T00:49:48.539Z */
	assert_int_equal(ev.ends_at_ms, 0);
	assert_int_equal(ev.received_at_ms, NOW_MS);
	wfx_assert_payload(ev.payload, body, 0, NULL);
	store_event_release(&ev);
	wfx_assert_no_more_events(f);
	log = wfx_read_log(f);
	wfx_assert_contains(log, "msg=\"webhook request\" code=200 receiver=alert-service alerts=1");
	free(log);
}

static void group_fixtures_queue_one_event_per_alert(void **state)
{
	struct fixture *f = *state;
	const char *fired = wfx_body(f, "03_group_of_3_firing.json");
	const char *partly = wfx_body(f, "04_group_partially_resolved.json");
	struct store_event ev;

	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_3);
	wfx_expect_ok(f, NULL, partly, OK_ALERT_SERVICE_3);
	/* 04 repeats the two alerts of 03 still firing: only its resolved one is new. */
	assert_int_equal(store_pending_count(f->st, "bridge"), 4);
	for (int k = 0; k < 2; k++) {
		const char *body = k ? partly : fired;
		struct am_payload *p = afx_parse(body);

		for (size_t i = 0; i < (k ? 1u : 3u); i++) {
			const struct am_alert *a = &p->alerts[i];

			wfx_take_event(f, &ev);
			assert_string_equal(ev.receiver, "alert-service");
			assert_string_equal(ev.key, a->fingerprint);
			assert_string_equal(ev.status, a->status);
			assert_int_equal(ev.starts_at_ms, a->starts_at_ms);
			assert_int_equal(ev.ends_at_ms, a->ends_at_ms);
			wfx_assert_payload(ev.payload, body, i, NULL);
			store_event_release(&ev);
		}
		/* 04 has a resolved alert with an endsAt: it travels. */
		if (k)
			assert_true(p->alerts[0].ends_at_ms > 0 && !p->alerts[0].firing);
		am_payload_free(p);
	}
	wfx_assert_no_more_events(f);
}

static void quote_meta_receiver_and_query_override(void **state)
{
	struct fixture *f = *state;
	/* Alertmanager sends regexp.QuoteMeta("team.a+b") = team\.a\+b (JSON: team\\.a\\+b). */
	const char *escaped = wfx_body_for(f, "01_single_firing.json", "team\\\\.a\\\\+b");
	/* Resolved: another state of the alert, not a repeat. */
	const char *nobody = wfx_body_for(f, "02_single_resolved.json", "nobody");
	struct store_event ev;

	wfx_expect_ok(f, NULL, escaped, "{\"status\":\"ok\",\"receiver\":\"team.a+b\",\"alerts\":1}");
	wfx_take_event(f, &ev);
	assert_string_equal(ev.receiver, "team.a+b");
	wfx_assert_payload(ev.payload, escaped, 0, NULL);
	store_event_release(&ev);
	/* ?receiver= overrides the payload's (URL-decoded, not unescaped). */
	wfx_expect_ok(f, "?receiver=team.a%2Bb", nobody,
		  "{\"status\":\"ok\",\"receiver\":\"team.a+b\",\"alerts\":1}");
	wfx_take_event(f, &ev);
	assert_string_equal(ev.receiver, "team.a+b");
	wfx_assert_payload(ev.payload, nobody, 0, NULL);
	store_event_release(&ev);
	/* An empty ?receiver= counts as absent. */
	wfx_expect_ok(f, "?receiver=", escaped, OK_TEAM_AB_1);
	wfx_take_event(f, &ev);
	assert_string_equal(ev.receiver, "team.a+b");
	store_event_release(&ev);
	wfx_assert_no_more_events(f);
}

/* The group of 3 (fixture 03) with the label alertbridge_repo=repo on container's alert. */
static const char *with_repo_label(struct fixture *f, const char *container, const char *repo)
{
	const char *body = wfx_body(f, "03_group_of_3_firing.json");
	char from[64], to[192];

	snprintf(from, sizeof(from), "\"container\": \"%s\",", container);
	snprintf(to, sizeof(to), "\"container\": \"%s\", \"alertbridge_repo\": \"%s\",", container,
		 repo);
	return wfx_edit(f, body, from, to);
}

/*
 * POST the with_repo_label() group to /v1/webhook + query: answered 200 for receiver, its
 * 3 alerts, 1 of them invalid.  Returns the body posted.
 */
static const char *posted_with_repo_label(struct fixture *f, const char *query,
					  const char *container, const char *repo,
					  const char *receiver)
{
	const char *body = with_repo_label(f, container, repo);
	char want[160];

	snprintf(want, sizeof(want),
		 "{\"status\":\"ok\",\"receiver\":\"%s\",\"alerts\":3,\"invalid\":1}", receiver);
	wfx_expect_ok(f, query, body, want);
	return body;
}

static void repo_query_and_label_override(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "03_group_of_3_firing.json");
	const char *labelled = with_repo_label(f, "proxy", "lab/own-repo");
	const char *empty = with_repo_label(f, "proxy", "");
	const char *want_ok = OK_ALERT_SERVICE_3;
	const char *repos[] = { "other/repo", "lab/own-repo" };
	struct store_event ev;

	wfx_expect_ok(f, "?repo=other/repo", body, want_ok);
	for (size_t i = 0; i < 3; i++) {
		wfx_take_event(f, &ev);
		wfx_assert_payload(ev.payload, body, i, "other/repo");
		store_event_release(&ev);
	}
	/*
	 * The label wins over the query, for its alert only: the only new
	 * state (the other two repeat the first wfx_post).
	 */
	wfx_expect_ok(f, "?repo=other%2Frepo", labelled, want_ok);
	wfx_take_event(f, &ev);
	wfx_assert_payload(ev.payload, labelled, 1, repos[1]);
	store_event_release(&ev);
	wfx_assert_no_more_events(f);
	/* An empty label counts as absent. */
	wfx_expect_ok(f, NULL, empty, want_ok);
	for (size_t i = 0; i < 3; i++) {
		wfx_take_event(f, &ev);
		wfx_assert_payload(ev.payload, empty, i, NULL);
		store_event_release(&ev);
	}
	wfx_assert_no_more_events(f);
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

/* The dead letters of the bridge into *d; fails unless there are n. */
static void read_deads(const struct fixture *f, struct deads *d, int n)
{
	memset(d, 0, sizeof(*d));
	assert_int_equal(store_dead_unmapped(f->st, "bridge", 100, collect_dead, d), ERR_OK);
	assert_int_equal(d->n, n);
}

static void invalid_repo_query_is_400(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "03_group_of_3_firing.json");

	/* ?repo= is the request's, not one alert's: the whole request is wrong. */
	wfx_expect_rejected(f, "?repo=a/b/c", body, wfx_good_headers, 400,
			"{\"error\":\"query parameter repo: "
			"repo \\\"a/b/c\\\": want owner/name\"}");
	assert_int_equal(store_dead_count(f->st), 0);
}

/*
 * An alert whose alertbridge_repo label is not owner/name is dead-lettered
 * with its reason; the alerts beside it are queued and the answer is 200
 * (a 400 would make Alertmanager re-send the group forever).
 */
static void invalid_repo_label_dead_letters_its_alert(void **state)
{
	struct fixture *f = *state;
	struct store_event ev;
	struct deads d;
	/* A valid query does not excuse an invalid label. */
	const char *bad_label = posted_with_repo_label(f, "?repo=ok/repo", "sidecar", "a/b/c",
							"alert-service");

	assert_int_equal(store_pending_count(f->st, "bridge"), 2);
	for (size_t i = 0; i < 2; i++) {
		wfx_take_event(f, &ev);
		wfx_assert_payload(ev.payload, bad_label, i, "ok/repo");
		store_event_release(&ev);
	}
	wfx_assert_no_more_events(f);
	assert_int_equal(store_dead_count(f->st), 1);
	read_deads(f, &d, 1);
	assert_string_equal(d.v[0].key, "04b8c13f54b78add");
	assert_string_equal(d.v[0].status, "firing");
	assert_string_equal(d.v[0].reason, "invalid alert: alerts[2].labels.alertbridge_repo: "
					   "repo \"a/b/c\": want owner/name");
	wfx_assert_metric(f, "alertbridge_webhook_alerts_invalid_total"
			  "{receiver=\"alert-service\",reason=\"alertbridge_repo\"} 1\n");
	wfx_assert_metric(f, "alertbridge_webhook_alerts_total"
			  "{receiver=\"alert-service\",status=\"firing\"} 2\n");
}

/*
 * Problems inside alerts (an annotation over 64 KiB, a missing startsAt) are
 * the alert's: each is dead-lettered under its fingerprint with the field and
 * the message, the valid alert is queued.
 */
static void invalid_alerts_are_dead_lettered(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "03_group_of_3_firing.json");
	struct buf big = BUF_INIT;
	const char *step, *bad;
	struct store_event ev;
	struct deads d;

	assert_int_equal(buf_adds(&big, "\"description\": \""), ERR_OK);
	for (size_t i = 0; i < 70 * 1024; i++)
		assert_int_equal(buf_addch(&big, 'y'), ERR_OK);
	assert_int_equal(buf_adds(&big, "\", \"x\": \"container=proxy"), ERR_OK);
	step = wfx_edit(f, body, "\"description\": \"Harness alert with labels "
			"alertname=HighLatency, container=proxy", buf_str(&big));
	bad = wfx_edit(f, step, "\"startsAt\": \"2026-11-21T00:49:51.678Z\",", "");  /* alert 0 */
	wfx_expect_ok(f, NULL, bad,
		  "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3,\"invalid\":2}");
	wfx_take_event(f, &ev);
	assert_string_equal(ev.key, "04b8c13f54b78add");
	wfx_assert_payload(ev.payload, bad, 0, NULL);  /* the only valid one */
	store_event_release(&ev);
	wfx_assert_no_more_events(f);
	read_deads(f, &d, 2);
	assert_string_equal(d.v[0].key, "98e2b6219b0e1a8d");
	assert_string_equal(d.v[0].reason, "invalid alert: alerts[0].startsAt: missing");
	assert_string_equal(d.v[1].key, "9329cd68b64d6724");
	assert_string_equal(d.v[1].reason, "invalid alert: alerts[1].annotations.description: "
					   "longer than 65536 bytes");
	/* The dead letter keeps why and the alert as it came, for inspection. */
	wfx_assert_contains(d.v[1].payload, "{\"v\":1,\"receiver\":\"alert-service\",\"invalid\":"
					"{\"field\":\"alerts[1].annotations.description\","
					"\"error\":\"longer than 65536 bytes\"},\"alert\":"
					"{\"annotations\":{\"description\":\"yyyy");
	wfx_assert_metric(f, "alertbridge_webhook_alerts_invalid_total"
			  "{receiver=\"alert-service\",reason=\"startsAt\"} 1\n");
	wfx_assert_metric(f, "alertbridge_webhook_alerts_invalid_total"
			  "{receiver=\"alert-service\",reason=\"annotations\"} 1\n");
	buf_release(&big);
}

/* Every alert invalid: still 200 (nothing to retry), each one dead-lettered, nothing queued. */
static void all_alerts_invalid_is_200(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "03_group_of_3_firing.json");
	const char *a = wfx_edit(f, body, "\"container\": \"app\",", "\"container\": 7,");
	const char *b = wfx_edit(f, a,
				 "\"status\": \"firing\",\n      \"labels\": {\n        "
				 "\"alertname\": \"HighLatency\",\n        \"container\": \"proxy\"",
				 "\"status\": \"pending\",\n      \"labels\": {\n        "
				 "\"alertname\": \"HighLatency\",\n        \"container\": \"proxy\"");
	const char *c = wfx_edit(f, b, "\"fingerprint\": \"04b8c13f54b78add\"",
				 "\"fingerprint\": \"XYZ\"");
	struct deads d;

	wfx_expect_ok(f, "?receiver=grouped", c,
		  "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":3,\"invalid\":3}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 0);
	read_deads(f, &d, 3);
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
}

/* issue_per: group - the group event is made of the valid alerts; the invalid one is dead. */
static void issue_per_group_dead_letters_invalid_alerts(void **state)
{
	struct fixture *f = *state;
	struct store_event ev;
	struct deads d;

	posted_with_repo_label(f, "?receiver=grouped", "app", "nope", "grouped");
	wfx_take_event(f, &ev);
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
	wfx_assert_no_more_events(f);
	read_deads(f, &d, 1);
	assert_string_equal(d.v[0].key, "98e2b6219b0e1a8d");
	wfx_assert_contains(d.v[0].reason, "alerts[0].labels.alertbridge_repo");
}

static void issue_per_group_queues_one_event(void **state)
{
	struct fixture *f = *state;
	const char *fired = wfx_body(f, "03_group_of_3_firing.json");
	const char *resolved = wfx_body(f, "04b_group_all_resolved.json");
	struct am_payload *p = NULL;
	struct store_event ev;
	char key[65];
	int64_t latest = 0;

	/* Make the first alert start later than the second: starts_at is the earliest. */
	const char *staggered = wfx_edit(f, fired, "2026-11-21T00:49:51.678Z",
					 "2026-11-21T00:50:00.000Z");

	wfx_expect_ok(f, "?receiver=grouped", staggered,
		  "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":3}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	p = afx_parse(staggered);
	issue_group_key_hash(p->group_key, key);
	wfx_take_event(f, &ev);
	assert_string_equal(ev.receiver, "grouped");
	assert_string_equal(ev.key, key);
	assert_int_equal(strlen(ev.key), 64);
	assert_string_equal(ev.status, "firing");
	assert_true(p->alerts[0].starts_at_ms > p->alerts[1].starts_at_ms);
	assert_int_equal(ev.starts_at_ms, p->alerts[1].starts_at_ms);
	assert_int_equal(ev.ends_at_ms, 0);
	assert_int_equal(ev.received_at_ms, NOW_MS);
	wfx_assert_group_payload(ev.payload, staggered, NULL);
	store_event_release(&ev);
	am_payload_free(p);

	wfx_expect_ok(f, "?receiver=grouped&repo=g/r", resolved,
		  "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":2}");
	p = afx_parse(resolved);
	for (size_t i = 0; i < p->n_alerts; i++)
		if (p->alerts[i].ends_at_ms > latest)
			latest = p->alerts[i].ends_at_ms;
	wfx_take_event(f, &ev);
	assert_string_equal(ev.key, key);  /* the same group, the same key */
	assert_string_equal(ev.status, "resolved");
	assert_int_equal(ev.ends_at_ms, latest);
	assert_true(latest > 0);
	wfx_assert_group_payload(ev.payload, resolved, "g/r");
	store_event_release(&ev);
	am_payload_free(p);
	wfx_assert_no_more_events(f);
}

static void store_failure_is_503(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "03_group_of_3_firing.json");
	sqlite3 *db = NULL;
	char *err = NULL;
	struct reply r;

	/* A trigger that fails every insert into the inbox: the commit fails. */
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, "CREATE TRIGGER inject BEFORE INSERT ON events "
			 "BEGIN SELECT RAISE(ABORT, 'injected failure'); END", NULL, NULL, &err))
		fail_msg("trigger: %s", err);
	wfx_post(f, NULL, body, wfx_good_headers, &r);
	assert_int_equal(r.status, 503);
	wfx_assert_contains(buf_str(&r.headers), "Retry-After: 5\r\n");
	/* The detail (a PostgreSQL URI, host, port, user) is the log's, not the answer's. */
	assert_string_equal(buf_str(&r.body), "{\"error\":\"store unavailable\"}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 0);
	wfx_reply_release(&r);
	/* Once the store recovers, the retry Alertmanager makes succeeds. */
	assert_int_equal(sqlite3_exec(db, "DROP TRIGGER inject", NULL, NULL, NULL), SQLITE_OK);
	sqlite3_close(db);
	wfx_expect_ok(f, NULL, body, OK_ALERT_SERVICE_3);
	assert_int_equal(store_pending_count(f->st, "bridge"), 3);
}

static void expanded_events_over_limit_is_413(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "03_group_of_3_firing.json");
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
	over = wfx_replace(body, "\"commonAnnotations\": {", buf_str(&ann));
	assert_int_equal(buf_printf(&big, "{\"error\":\"events of this payload exceed %u bytes\"}",
				    MAX_EVENTS_BYTES), ERR_OK);
	wfx_expect_rejected(f, NULL, over, wfx_good_headers, 413, buf_str(&big));
	buf_release(&big);
	buf_release(&ann);
	free(over);
}

static void metrics_count_requests_and_alerts(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "04_group_partially_resolved.json");
	const char *nobody = wfx_body_for(f, "01_single_firing.json", "nobody");
	const char *const none[] = { JSON_TYPE, NULL };
	struct buf out = BUF_INIT;
	struct reply r;

	wfx_expect_ok(f, NULL, body, OK_ALERT_SERVICE_3);
	wfx_post(f, NULL, nobody, wfx_good_headers, &r);
	wfx_reply_release(&r);
	wfx_post(f, NULL, body, none, &r);
	wfx_reply_release(&r);
	wfx_assert_metric(f, "alertbridge_webhook_requests_total"
			  "{receiver=\"alert-service\",code=\"200\"} 1\n");
	/* Rejected before a receiver was found: the label is empty, not the client's text. */
	wfx_assert_metric(f, "alertbridge_webhook_requests_total{receiver=\"\",code=\"404\"} 1\n");
	wfx_assert_metric(f, "alertbridge_webhook_requests_total{receiver=\"\",code=\"401\"} 1\n");
	metrics_render(f->metrics, &out);
	wfx_assert_lacks(buf_str(&out), "nobody");
	buf_release(&out);
	wfx_assert_metric(f, "alertbridge_webhook_alerts_total"
			  "{receiver=\"alert-service\",status=\"firing\"} 2\n");
	wfx_assert_metric(f, "alertbridge_webhook_alerts_total"
			  "{receiver=\"alert-service\",status=\"resolved\"} 1\n");
	wfx_assert_metric(f, "alertbridge_webhook_duration_seconds_count 3\n");
}

/* Each thread posts its own alerts (fingerprints of its own), 5 times. */
static void concurrent_posts_all_stored(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body(f, "03_group_of_3_firing.json");
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
			next = wfx_replace(bodies[t], fps[i], mine);
			free(bodies[t]);
			bodies[t] = next;
		}
	}
	wfx_post_from_threads(f, (const char *const *)bodies);
	/* Each thread's first wfx_post is stored, its next ones are repeats. */
	assert_int_equal(store_pending_count(f->st, "bridge"), N_THREADS * 3);
	store_stats(f->st, &stats);
	assert_int_equal(stats.events, N_THREADS * 3);
	print_message("%d posts in %llu commits\n", N_THREADS * POSTS_PER_THREAD,
		      (unsigned long long)stats.commits);
	for (int t = 0; t < N_THREADS; t++)
		free(bodies[t]);
}

/* Serve a second webhook built from wo on its own server and POST body to it. */
/*
 * POST body with headers to a webhook made of wo (served only for it): answered status with
 * exactly want_body, pending events then in the queue.
 */
static void post_to(struct fixture *f, const struct webhook_options *wo, const char *body,
		    const char *const *headers, long status, const char *want_body,
		    int64_t pending)
{
	struct srv_options so = { 0 };
	struct webhook *w = webhook_new(wo);
	struct srv *s = NULL, *saved = f->srv;
	struct reply r;

	so.listen_address = "127.0.0.1:0";
	so.threads = 1;
	assert_int_equal(srv_new(&so, &s, NULL), ERR_OK);
	assert_int_equal(srv_route(s, "POST", "/v1/webhook", webhook_handle, w), ERR_OK);
	assert_int_equal(srv_start(s, NULL), ERR_OK);
	f->srv = s;
	wfx_post(f, NULL, body, headers, &r);
	f->srv = saved;
	srv_free(s);
	webhook_free(w);
	assert_int_equal(r.status, status);
	assert_string_equal(buf_str(&r.body), want_body);
	assert_int_equal(store_pending_count(f->st, "bridge"), pending);
	wfx_reply_release(&r);
}

/* Without configured credentials the endpoint is open; a NULL metrics is fine. */
static void open_endpoint_without_auth(void **state)
{
	struct fixture *f = *state;
	struct webhook_options wo = { 0 };
	const char *body = wfx_body(f, "01_single_firing.json");
	const char *const h[] = { JSON_TYPE, NULL };

	wo.cfg = f->cfg;
	wo.store = f->st;
	post_to(f, &wo, body, h, 200, OK_ALERT_SERVICE_1, 1);
	webhook_free(NULL);
}

/* The am_options limits reach am_parse(). */
static void payload_limits_apply(void **state)
{
	struct fixture *f = *state;
	struct webhook_options wo = { 0 };
	const char *body = wfx_body(f, "03_group_of_3_firing.json");

	wo.cfg = f->cfg;
	wo.store = f->st;
	wo.auth = f->auth;
	wo.limits.max_alerts = 2;
	post_to(f, &wo, body, wfx_good_headers, 400,
		"{\"error\":\"more than 2 alerts\",\"field\":\"alerts\"}", 0);
}

/* A test of this file, between wfx_setup() and wfx_teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, wfx_setup, wfx_teardown)

UNIT_MAIN_WITH(curl_global_init(CURL_GLOBAL_DEFAULT), curl_global_cleanup(),
	T(unauthorized_is_401),
	T(wrong_content_type_is_415),
	T(invalid_payload_is_400),
	T(unknown_receiver_is_404),
	T(single_fixture_queues_one_event),
	T(group_fixtures_queue_one_event_per_alert),
	T(quote_meta_receiver_and_query_override),
	T(repo_query_and_label_override),
	T(invalid_repo_query_is_400),
	T(invalid_repo_label_dead_letters_its_alert),
	T(invalid_alerts_are_dead_lettered),
	T(all_alerts_invalid_is_200),
	T(issue_per_group_dead_letters_invalid_alerts),
	T(issue_per_group_queues_one_event),
	T(store_failure_is_503),
	T(expanded_events_over_limit_is_413),
	T(metrics_count_requests_and_alerts),
	T(concurrent_posts_all_stored),
	T(open_endpoint_without_auth),
	T(payload_limits_apply))
