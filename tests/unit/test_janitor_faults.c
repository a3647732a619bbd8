/*
 * test_janitor_faults.c - the janitor's rules under faults (issue 4, item 8):
 * a lost lease, Slack outages and rejections, conflicts, expired continue
 * tokens, server errors and timeouts.
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

#include <jansson.h>

#include "core/am.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "store/store_events.h"
#include "store/store_outbox.h"
#include "janitor/janitor.h"
#include "tests/unit/helpers/janitor_fixture.h"
#include "tests/unit/helpers/store_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

/* ---- faults (issue 4, item 8): every rule holds under each of them ---- */

#define STATUS_409 "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"code\":409,\"message\":" \
		   "\"Precondition failed: UID in precondition\"}"
#define DUE DUE_ANN("2026-11-17T21:00:00Z")

/* n due pods p0, p1, ... (uids u-p0, ...) with notices delivered 3h ago, listed on one page. */
static void due_pods(struct env *e, int n)
{
	char *pods[4], name[16], uid[16];

	assert_true(n <= 4);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		snprintf(uid, sizeof(uid), "u-p%d", i);
		jfx_delivered_notice(e, name, uid, T0 - MIN, T0 - 3 * HOUR);
		pods[i] = jfx_pod_json(name, uid, DUE, NULL, NULL);
	}
	jfx_push_list(e->kube, pods, (size_t)n);
}

/*
 * Queue the answers of a due pod's deletion: its fresh GET (DUE), the DELETE's 200 and the
 * Event's 201.
 */
static void push_deleted(struct env *e, const char *name, const char *uid)
{
	jfx_push_pod(e->kube, name, uid, DUE);
	fake_http_push(e->kube, 200, NULL, "{}");
	fake_http_push(e->kube, 201, NULL, "{}");
}

/* A list page with a continue token (NULL: the last page). */
static void push_page(struct fake_http *f, const char *name, const char *uid, const char *cont)
{
	char *p = jfx_pod_json(name, uid, DUE, NULL, NULL);
	struct buf b = BUF_INIT;

	(void)buf_printf(&b, "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":"
			 "\"meta.k8s.io/v1\",\"metadata\":{\"continue\":\"%s\"},\"items\":[%s]}",
			 cont ? cont : "", p);
	fake_http_push(f, 200, NULL, buf_str(&b));
	buf_release(&b);
	free(p);
}

static const struct env_opts with_leader_hook = { .leader_hook = 1 };

static void lease_lost_mid_sweep_stops_before_the_next_write(void **state)
{
	struct env *e = *state;
	struct buf err = BUF_INIT;

	due_pods(e, 3);
	push_deleted(e, "p0", "u-p0");
	jfx_push_pod(e->kube, "p1", "u-p1", DUE);
	/* Lost while p1 is looked at: after its fresh GET, before its DELETE. */
	e->lose_after = 5;
	buf_reset(&e->rows);
	assert_int_equal(janitor_sweep(e->j, jfx_collect_row, e, NULL, &err), ERR_CONFLICT);
	jfx_assert_contains(buf_str(&err), "the Lease was lost mid-sweep");
	assert_string_equal(buf_str(&e->rows), "ml-team/p0=delete-pod;ml-team/p1=stopped;");
	jfx_assert_contains(jfx_metrics_text(e),
			    "alertbridge_janitor_sweeps_total{result=\"stopped\"} 1\n");
	assert_int_equal(fake_http_count(e->kube), 5);
	assert_int_equal(jfx_count_method(e->kube, "DELETE"), 1);
	jfx_req(e->kube, 2, "DELETE", "/api/v1/namespaces/ml-team/pods/p0");
	jfx_assert_contains(jfx_read_log(e), "sweep stopped");

	/* Lost between two pods: not even a GET of the next one. */
	buf_reset(&err);
	e->leading = 1;
	due_pods(e, 2);
	e->lose_after = fake_http_count(e->kube) + 1;
	buf_reset(&e->rows);
	assert_int_equal(janitor_sweep(e->j, jfx_collect_row, e, NULL, &err), ERR_CONFLICT);
	assert_string_equal(buf_str(&e->rows), "");
	assert_int_equal(fake_http_count(e->kube), 6);

	/* Leading again: the rest is done, nothing lost. */
	e->leading = 1;
	e->lose_after = 0;
	due_pods(e, 3);
	jfx_push_pod(e->kube, "p0", "u-p0", DUE);   /* the first DELETE is still pending */
	fake_http_push(e->kube, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
	push_deleted(e, "p1", "u-p1");
	push_deleted(e, "p2", "u-p2");
	jfx_sweep_rows(e, "ml-team/p0=skip:gone;ml-team/p1=delete-pod;ml-team/p2=delete-pod;");
	assert_int_equal(jfx_count_method(e->kube, "DELETE"), 4);
	buf_release(&err);
}

static void lease_lost_mid_step_sends_no_patch_then_marks(void **state)
{
	struct env *e = *state;

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	e->lose_after = 1;  /* lost once the pod was read */
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 1);
	jfx_no_mutation(e->kube, 0);
	assert_int_equal(store_pending_count(e->st, "janitor"), 1);
	jfx_assert_contains(jfx_read_log(e), "not the leader (the Lease is lost): mark patch");

	e->leading = 1;
	e->lose_after = 0;
	e->now += HOUR;
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	jfx_push_pod(e->kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
	jfx_req(e->kube, 2, "PATCH", POD_PATH);
	assert_int_equal(store_pending_count(e->st, "janitor"), 0);
	assert_int_equal(store_notice_pending_count(e->st), 1);
}

/*
 * Issue 19: a store that cannot record outcomes (a full disk; here a trigger that fails
 * them on a real sqlite file) makes the janitor back off: a minute of steps, one a second
 * as the worker makes them, costs a few attempts' Kubernetes calls, not one a step; once it
 * writes again the pod is marked once and its notice queued.
 */
static void full_disk_backs_off_without_kubernetes_calls(void **state)
{
	char dir[256], db[300];
	struct env e;
	struct env_opts o = { 0 };
	size_t after_first;
	(void)state;

	tfx_mkdtemp(dir, sizeof(dir), "ab-janitor-full");
	snprintf(db, sizeof(db), "%s/alertbridge.db", dir);
	o.store_target = db;
	jfx_env_start_with(&e, 0, &o);
	jfx_enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	sfx_sql_exec(db, "CREATE TRIGGER full BEFORE UPDATE ON events"
			 " WHEN NEW.state <> OLD.state OR NEW.attempts <> OLD.attempts"
			 " BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
	assert_int_equal(janitor_step(e.j), -1);
	after_first = fake_http_count(e.kube);
	assert_true(after_first >= 1);
	for (int i = 0; i < 60; i++) {
		e.now += 1000;
		assert_int_equal(janitor_step(e.j), -1);
	}
	/* 2.5-5 s, 5-10, 10-20, 20-40: at most 4 attempts in the minute (61 without) */
	assert_true(fake_http_count(e.kube) - after_first <= 4 * 3);
	assert_int_equal(store_pending_count(e.st, "janitor"), 1);

	sfx_sql_exec(db, "DROP TRIGGER full");
	for (int i = 0; i < 700 && store_pending_count(e.st, "janitor"); i++) {
		e.now += 1000;
		jfx_push_pod(e.kube, "train-1", "uid-1", "");
		jfx_push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
		fake_http_push(e.kube, 201, NULL, "{}");
		if (janitor_step(e.j) == 1)
			break;
	}
	assert_int_equal(store_pending_count(e.st, "janitor"), 0);
	assert_int_equal(store_notice_pending_count(e.st), 1);
	jfx_env_stop(&e);
	tfx_remove_tree(dir);
}

/* The worker lock or the Lease lost before the outbox's turn: no Slack call, nothing lost. */
static void lease_lost_sends_no_slack_message_then_sends_it(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };

	e->leading = 1;
	jfx_mark(e, "train-1", "uid-1");
	assert_int_equal(store_notice_pending_count(e->st), 1);

	e->leading = 0;
	e->now = T0 + 1500;
	assert_int_equal(janitor_notice_step(e->j), 0);
	assert_int_equal(fake_http_count(e->slack), 0);
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_PENDING);
	assert_int_equal(n.attempts, 0);
	store_notice_release(&n);

	e->leading = 1;
	jfx_deliver(e);
	assert_int_equal(fake_http_count(e->slack), 1);
	jfx_notice_state_is(e, "uid-1", "notice", STORE_NOTICE_SENT);
}

static void slack_outage_and_bad_token_never_lose_the_notice(void **state)
{
	static const char *const answers[] = {
		"{\"ok\":false,\"error\":\"invalid_auth\"}",
		"{\"ok\":false,\"error\":\"ratelimited\"}",
		"{\"ok\":false,\"error\":\"service_unavailable\"}",
		"{\"ok\":false,\"error\":\"token_revoked\"}",
	};
	struct env *e = *state;
	struct store_notice n = { 0 };

	jfx_mark(e, "train-1", "uid-1");
	/* More failures than JANITOR_NOTICE_MAX_ATTEMPTS, over hours: never dead. */
	for (int i = 0; i < JANITOR_NOTICE_MAX_ATTEMPTS + 2; i++) {
		if (i % 4 == 1)
			fake_http_push(e->slack, 429, "Retry-After: 120", answers[1]);
		else
			fake_http_push(e->slack, i % 4 == 2 ? 503 : 200, NULL, answers[i % 4]);
		assert_int_equal(janitor_notice_step(e->j), 1);
		assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
		assert_int_equal(n.state, STORE_NOTICE_PENDING);
		assert_int_equal(n.attempts, i + 1);
		store_notice_release(&n);
		e->now += 11 * MIN;  /* past the capped backoff (10 min) */
	}
	assert_int_equal(fake_http_count(e->slack), JANITOR_NOTICE_MAX_ATTEMPTS + 2);
	jfx_assert_contains(jfx_read_log(e),
			    "slack rejected the token, the message waits for a valid one");
	assert_null(strstr(jfx_metrics_text(e), "result=\"dead\""));
	jfx_assert_contains(jfx_metrics_text(e),
			    "alertbridge_janitor_notices_total{result=\"failed\"} 12");

	/* Meanwhile the pod's time ran out: the sweeper waits for the notice. */
	e->now = T0 + 48 * HOUR;
	jfx_push_one(e->kube, "train-1", "uid-1", MARKED_BY_US);
	jfx_sweep_rows(e, "ml-team/train-1=notice-pending;");
	jfx_no_mutation(e->kube, 3);

	/* The fault clears: delivered once, then stamped. */
	jfx_deliver(e);
	jfx_notice_state_is(e, "uid-1", "notice", STORE_NOTICE_SENT);
	jfx_req(e->kube, 5, "PATCH", POD_PATH);
	assert_int_equal(janitor_notice_step(e->j), 0);
}

static void slack_rejecting_the_message_still_gives_up(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };

	jfx_mark(e, "train-1", "uid-1");
	for (int i = 0; i < JANITOR_NOTICE_MAX_ATTEMPTS; i++) {
		fake_http_push(e->slack, 200, NULL, "{\"ok\":false,\"error\":\"not_in_channel\"}");
		assert_int_equal(janitor_notice_step(e->j), 1);
		e->now += 11 * MIN;
	}
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_DEAD);
	jfx_assert_contains(n.last_error, "not_in_channel");
	store_notice_release(&n);
	assert_int_equal(janitor_notice_step(e->j), 0);
	jfx_assert_contains(jfx_read_log(e), "slack message given up");
	assert_int_equal(fake_http_count(e->kube), 3);  /* never stamped */
}

static const struct env_opts slack_timeout_200ms = { .slack_timeout_ms = 200 };

static void slack_timeout_retried_then_delivered(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };

	jfx_mark(e, "train-1", "uid-1");
	fake_http_push_delayed(e->slack, 700, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e->j), 1);
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_PENDING);
	assert_int_equal(n.attempts, 1);
	store_notice_release(&n);
	assert_int_equal(fake_http_count(e->kube), 3);  /* no stamp without an answer */
	jfx_assert_contains(jfx_read_log(e), "slack message failed, will retry");

	e->now += 11 * MIN;
	jfx_deliver(e);
	jfx_notice_state_is(e, "uid-1", "notice", STORE_NOTICE_SENT);
	jfx_req(e->kube, 4, "PATCH", POD_PATH);
}

static void conflict_on_mark_patch_retries_and_never_marks_another_uid(void **state)
{
	struct env *e = *state;
	json_t *b;

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	fake_http_push(e->kube, 409, NULL, STATUS_409);  /* recreated between GET and PATCH */
	assert_int_equal(janitor_step(e->j), 1);
	b = jfx_body_json(jfx_req(e->kube, 1, "PATCH", POD_PATH));
	/* The patch names the pod it read: the API server applies it to that pod only. */
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "metadata"),
							      "uid")), "uid-1");
	json_decref(b);
	assert_int_equal(store_pending_count(e->st, "janitor"), 1);
	assert_int_equal(store_notice_pending_count(e->st), 0);
	jfx_assert_contains(jfx_read_log(e), "janitor event failed, will retry");

	e->now += HOUR;
	jfx_push_pod(e->kube, "train-1", "uid-2", "");
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 3);
	assert_int_equal(jfx_count_method(e->kube, "PATCH"), 1);
	assert_int_equal(store_pending_count(e->st, "janitor"), 0);
	jfx_assert_contains(jfx_metrics_text(e), "{action=\"skipped\",reason=\"uid-changed\"} 1");

	/* Without a uid label the alert is about the name: the retry marks the new pod. */
	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	fake_http_push(e->kube, 409, NULL, STATUS_409);
	assert_int_equal(janitor_step(e->j), 1);
	e->now += HOUR;
	jfx_push_pod(e->kube, "train-1", "uid-2", "");
	jfx_push_pod(e->kube, "train-1", "uid-2", MARKED_BY_US);
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
	b = jfx_body_json(jfx_req(e->kube, 6, "PATCH", POD_PATH));
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "metadata"),
							      "uid")), "uid-2");
	json_decref(b);
	assert_int_equal(store_notice_pending_count(e->st), 1);
}

static void conflict_on_stamp_is_retried_by_the_sweeper(void **state)
{
	struct env *e = *state;
	char *p;

	jfx_mark(e, "train-1", "uid-1");
	fake_http_push(e->slack, 200, NULL, OK_POST);
	jfx_push_pod(e->kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e->kube, 409, NULL, STATUS_409);
	assert_int_equal(janitor_notice_step(e->j), 1);
	jfx_assert_contains(jfx_read_log(e),
			    "cannot stamp janitor/notified-at, the sweeper will retry");

	/* Past the expiry the sweeper stamps it (the notice was delivered), then acts later. */
	e->now = T0 + 25 * HOUR;
	p = jfx_pod_json("train-1", "uid-1", MARKED_BY_US, NULL, NULL);
	jfx_push_list(e->kube, &p, 1);
	jfx_push_pod(e->kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e->kube, 200, NULL, "{}");
	jfx_sweep_rows(e, "ml-team/train-1=notified;");
	jfx_body_is(jfx_req(e->kube, 7, "PATCH", POD_PATH),
		    "{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/notified-at\":"
		    "\"2026-11-18T00:00:00Z\"}}}");
	assert_int_equal(jfx_count_method(e->kube, "DELETE"), 0);
}

static void expired_continue_token_restarts_without_acting_twice(void **state)
{
	struct env *e = *state;
	struct janitor_sweep_stats stats;
	struct buf err = BUF_INIT;

	jfx_delivered_notice(e, "a", "u-a", T0 - MIN, T0 - 3 * HOUR);
	jfx_delivered_notice(e, "b", "u-b", T0 - MIN, T0 - 3 * HOUR);
	push_page(e->kube, "a", "u-a", "tok1");
	jfx_push_pod(e->kube, "a", "u-a", DUE);
	fake_http_push(e->kube, 200, NULL, "{}");
	fake_http_push(e->kube, 201, NULL, "{}");
	fake_http_push(e->kube, 410, NULL,
		       "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410,"
		       "\"message\":\"The provided continue parameter is too old\"}");
	push_page(e->kube, "a", "u-a", "tok2");  /* the listing starts over: a again */
	fake_http_push(e->kube, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
	push_page(e->kube, "b", "u-b", NULL);
	jfx_push_pod(e->kube, "b", "u-b", DUE);
	fake_http_push(e->kube, 200, NULL, "{}");
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_sweep(e->j, jfx_collect_row, e, &stats, &err), ERR_OK);
	assert_string_equal(buf_str(&e->rows),
			    "ml-team/a=delete-pod;ml-team/a=skip:gone;ml-team/b=delete-pod;");
	jfx_req(e->kube, 4, "GET", "/api/v1/pods?limit=500&continue=tok1");
	jfx_req(e->kube, 5, "GET", LIST_PATH);
	assert_int_equal(jfx_count_method(e->kube, "DELETE"), 2);
	jfx_req(e->kube, 2, "DELETE", "/api/v1/namespaces/ml-team/pods/a");
	jfx_req(e->kube, 9, "DELETE", "/api/v1/namespaces/ml-team/pods/b");
	assert_int_equal(stats.acted, 2);
	assert_int_equal(stats.errors, 0);
	jfx_assert_contains(jfx_read_log(e), "pod listing expired, restarting");
	buf_release(&err);
}

static const struct env_opts kube_timeout_300ms = { .kube_timeout_ms = 300 };

static void server_error_and_timeout_do_not_stop_the_sweep(void **state)
{
	struct env *e = *state;
	struct janitor_sweep_stats stats;
	struct buf err = BUF_INIT;

	due_pods(e, 3);
	fake_http_push(e->kube, 500, NULL, "{\"kind\":\"Status\",\"message\":\"etcd timeout\"}");
	jfx_push_pod(e->kube, "p1", "u-p1", DUE);
	fake_http_push_delayed(e->kube, 900, 200, NULL, "{}");  /* past the client's 300 ms */
	jfx_push_pod(e->kube, "p2", "u-p2", DUE);
	fake_http_push(e->kube, 409, NULL, STATUS_409);
	assert_int_equal(janitor_sweep(e->j, jfx_collect_row, e, &stats, &err), ERR_OK);
	assert_string_equal(buf_str(&e->rows),
			    "ml-team/p0=error;ml-team/p1=error;ml-team/p2=changed;");
	assert_int_equal(stats.errors, 2);
	assert_int_equal(stats.pods, 3);
	jfx_assert_contains(jfx_read_log(e), "cannot act on pod, the sweep goes on");
	jfx_assert_contains(jfx_read_log(e), "etcd timeout");

	/* The API recovers: what was left is done, each pod once. */
	due_pods(e, 3);
	push_deleted(e, "p0", "u-p0");
	fake_http_push(e->kube, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
	push_deleted(e, "p2", "u-p2");
	jfx_sweep_rows(e, "ml-team/p0=delete-pod;ml-team/p1=skip:gone;ml-team/p2=delete-pod;");
	buf_release(&err);
}

UNIT_MAIN(
	JFX_TEST_WITH(lease_lost_mid_sweep_stops_before_the_next_write, &with_leader_hook),
	JFX_TEST_WITH(lease_lost_mid_step_sends_no_patch_then_marks, &with_leader_hook),
	cmocka_unit_test(full_disk_backs_off_without_kubernetes_calls),
	JFX_TEST_WITH(lease_lost_sends_no_slack_message_then_sends_it, &with_leader_hook),
	JFX_TEST(slack_outage_and_bad_token_never_lose_the_notice),
	JFX_TEST(slack_rejecting_the_message_still_gives_up),
	JFX_TEST_WITH(slack_timeout_retried_then_delivered, &slack_timeout_200ms),
	JFX_TEST(conflict_on_mark_patch_retries_and_never_marks_another_uid),
	JFX_TEST(conflict_on_stamp_is_retried_by_the_sweeper),
	JFX_TEST(expired_continue_token_restarts_without_acting_twice),
	JFX_TEST_WITH(server_error_and_timeout_do_not_stop_the_sweep, &kube_timeout_300ms))
