/*
 * test_janitor_sweep.c - the janitor's sweeper (janitor/janitor_sweep.c): the
 * exact requests of reminding and acting, and every safety rule (notice
 * before deletion, uid preconditions, exclusions, dry-run, deletion budget).
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
#include "store/store_outbox.h"
#include "janitor/janitor.h"
#include "tests/unit/helpers/janitor_fixture.h"

/* ---- the sweeper ---- */

static void not_deleted_before_notice_lead_then_deleted(void **state)
{
	struct env *e = *state;

	jfx_delivered_notice(e, "train-1", "uid-1", T0 - MIN, T0 - 30 * MIN);
	jfx_push_one(e->kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	jfx_sweep(e, ERR_OK);
	/* 30 min (reminder_before: notice_lead / 2) before acting: the reminder */
	assert_string_equal(buf_str(&e->rows), "ml-team/train-1=remind;");
	assert_int_equal(fake_http_count(e->kube), 1);
	assert_string_equal(fake_request_header(fake_http_request(e->kube, 0), "accept"),
			    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");

	e->now = T0 + 30 * MIN - 1;  /* 1 ms before notified + 1h */
	jfx_push_one(e->kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	jfx_sweep_rows(e, "ml-team/train-1=wait;");

	e->now = T0 + 30 * MIN;
	jfx_push_one(e->kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	jfx_push_pod(e->kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	fake_http_push(e->kube, 200, NULL, "{\"kind\":\"Pod\"}");
	fake_http_push(e->kube, 201, NULL, "{}");
	jfx_sweep_rows(e, "ml-team/train-1=delete-pod;");
	jfx_req(e->kube, 3, "GET", POD_PATH);
	jfx_body_is(jfx_req(e->kube, 4, "DELETE", POD_PATH),
		    "{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		    "\"Background\",\"preconditions\":{\"uid\":\"uid-1\"}}");
	jfx_event_posted(e->kube, 5, "JanitorDeleted");
	jfx_reply_is(e, "deleted", NULL,
		     ":wastebasket: Pod `ml-team/train-1` was deleted as announced");
	jfx_assert_contains(jfx_metrics_text(e),
			    "{action=\"deleted\",reason=\"JanitorPodPendingTooLong\"} 1");
}

/*
 * Reminders: one reply in the notice's thread reminder_before (default notice_lead / 2;
 * JanitorPodPendingTooLong: 1h / 2) ahead of the action, once per notice, recorded in the
 * outbox so a restart does not send it again; none without a delivered notice, none once
 * the mark is gone.
 */
#define REMIND_ANN                                                                    \
	"\"janitor/expires\":\"2026-11-18T02:00:00Z\",\"janitor/marked-at\":"          \
	"\"2026-11-17T20:00:00Z\",\"janitor/reason\":\"JanitorPodPendingTooLong\","   \
	"\"janitor/notified-at\":\"2026-11-17T23:00:00Z\""
#define REMIND_AT (T0 + 90 * MIN) /* act at T0 + 2h (janitor/expires), less 30 min */

static void reminder_once_in_the_notice_thread(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };
	struct janitor_options jo = { 0 };
	json_t *post;

	jfx_delivered_notice(e, "train-1", "uid-1", T0 + 2 * HOUR, T0 - HOUR);
	e->now = REMIND_AT - 1;
	jfx_push_one(e->kube, "train-1", "uid-1", REMIND_ANN);
	jfx_sweep_rows(e, "ml-team/train-1=wait;");
	assert_int_equal(store_notice_latest(e->st, "uid-1", "reminder", &n), ERR_NOTFOUND);

	e->now = REMIND_AT;
	jfx_push_one(e->kube, "train-1", "uid-1", REMIND_ANN);
	jfx_sweep_rows(e, "ml-team/train-1=remind;");
	jfx_no_mutation(e->kube, 0);
	assert_int_equal(store_notice_latest(e->st, "uid-1", "reminder", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_PENDING);
	assert_string_equal(n.channel, "C0GPU");
	assert_string_equal(n.thread_ts, "1794950000.000100");
	assert_string_equal(n.text,
			    ":alarm_clock: *Reminder:* pod `ml-team/train-1` will be deleted in 30 "
			    "minutes, at Wed, 18 Nov 2026 02:00:00 UTC (JanitorPodPendingTooLong).\n"
			    "*To keep it:* `kubectl annotate pod -n ml-team train-1 "
			    "janitor/exempt=true`\n"
			    "*To snooze it:* `kubectl annotate pod -n ml-team train-1 --overwrite "
			    "janitor/expires=2026-11-18T08:00:00Z` (any later UTC time)\n");
	store_notice_release(&n);

	/* the next sweeps queue no second one */
	e->now = REMIND_AT + MIN;
	jfx_push_one(e->kube, "train-1", "uid-1", REMIND_ANN);
	jfx_sweep_rows(e, "ml-team/train-1=wait;");
	assert_int_equal(store_notice_pending_count(e->st), 1);

	/* delivered as a reply in the notice's thread; the pod is not stamped again */
	fake_http_push(e->slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e->j), 1);
	post = jfx_body_json(jfx_req(e->slack, 0, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(post, "channel")), "C0GPU");
	assert_string_equal(json_string_value(json_object_get(post, "thread_ts")),
			    "1794950000.000100");
	jfx_assert_contains(json_string_value(json_object_get(post, "text")), ":alarm_clock:");
	json_decref(post);
	assert_int_equal(fake_http_count(e->kube), 3);  /* the three listings */

	/* a restart: the outbox remembers the reminder */
	janitor_free(e->j);
	jfx_janitor_options(e, &jo);
	e->j = janitor_new(&jo);
	e->now = REMIND_AT + 2 * MIN;
	jfx_push_one(e->kube, "train-1", "uid-1", REMIND_ANN);
	jfx_sweep_rows(e, "ml-team/train-1=wait;");
	assert_int_equal(store_notice_pending_count(e->st), 0);
	assert_int_equal(janitor_notice_step(e->j), 0);
	assert_int_equal(fake_http_count(e->slack), 1);
}

static void no_reminder_without_a_delivered_notice_or_a_mark(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 }, r = { 0 };

	/* janitor/notified-at by hand, the outbox's notice still pending: no reminder */
	jfx_notice_of(&n, "train-1", "uid-1", "notice");
	n.expires_ms = T0 + 2 * HOUR;
	n.text = (char *)"notice";
	assert_int_equal(store_notice_add(e->st, &n, NULL), ERR_OK);
	e->now = REMIND_AT;
	jfx_push_one(e->kube, "train-1", "uid-1", REMIND_ANN);
	jfx_sweep_rows(e, "ml-team/train-1=wait;");
	assert_int_equal(store_notice_latest(e->st, "uid-1", "reminder", &r), ERR_NOTFOUND);

	/* delivered: the reminder is queued, then the alert resolves before it went out */
	assert_int_equal(store_notice_sent(e->st, n.id, T0 - HOUR, "#gpu-cluster", "C0GPU",
					   "1794950000.000100"),
			 ERR_OK);
	jfx_push_one(e->kube, "train-1", "uid-1", REMIND_ANN);
	jfx_sweep_rows(e, "ml-team/train-1=remind;");
	jfx_enqueue(e, "resolved", "JanitorPodPendingTooLong", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1", REMIND_ANN);
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(store_notice_latest(e->st, "uid-1", "reminder", &r), ERR_OK);
	assert_int_equal(r.state, STORE_NOTICE_DEAD);  /* cancelled: it never goes out */
	store_notice_release(&r);

	/* the mark is gone: later sweeps have nothing to remind of */
	e->now = REMIND_AT + 10 * MIN;
	jfx_push_one(e->kube, "train-1", "uid-1", "");
	jfx_sweep_rows(e, "");
	fake_http_push(e->slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e->j), 1);  /* the "cancelled" reply only */
	assert_int_equal(janitor_notice_step(e->j), 0);
	assert_int_equal(fake_http_count(e->slack), 1);
	jfx_assert_contains(fake_http_request(e->slack, 0)->body, "Never mind");
}

static void uid_changed_before_acting_untouched(void **state)
{
	struct env *e = *state;

	jfx_delivered_notice(e, "train-1", "uid-1", T0 - MIN, T0 - 3 * HOUR);
	jfx_push_one(e->kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	jfx_push_pod(e->kube, "train-1", "uid-2", DUE_ANN("2026-11-17T21:00:00Z"));
	jfx_sweep_rows(e, "ml-team/train-1=skip:uid-changed;");
	assert_int_equal(fake_http_count(e->kube), 2);
	jfx_no_mutation(e->kube, 0);
}

static void annotation_without_delivered_notice_notifies_first(void **state)
{
	struct env *e = *state;

	/* notified-at set by hand, nothing in the outbox: tell the owner first. */
	jfx_push_one(e->kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	jfx_push_pod(e->kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	jfx_sweep_rows(e, "ml-team/train-1=notify;");
	jfx_no_mutation(e->kube, 0);
	assert_int_equal(store_notice_pending_count(e->st), 1);
}

static void user_ttl_notice_first_delete_after_lead(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };

	/* Created 2026-11-16, ttl 1h: long expired, but no notice yet. */
	jfx_push_one(e->kube, "train-1", "uid-1", "\"janitor/ttl\":\"1h\"");
	jfx_sweep_rows(e, "ml-team/train-1=notify;");
	assert_int_equal(fake_http_count(e->kube), 1);
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	jfx_assert_contains(n.text, "(janitor/ttl)");
	/* Long expired: the notice announces now + notice_lead (2h), not the past. */
	jfx_assert_contains(n.text, "will be deleted in 2 hours, at Wed, 18 Nov 2026 02:00:00 UTC");
	store_notice_release(&n);

	/* The next sweep does not queue it twice. */
	jfx_push_one(e->kube, "train-1", "uid-1", "\"janitor/ttl\":\"1h\"");
	jfx_sweep_rows(e, "ml-team/train-1=notice-pending;");

	fake_http_push(e->slack, 200, NULL, OK_POST);
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"janitor/ttl\":\"1h\"");
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	assert_int_equal(janitor_notice_step(e->j), 1);
	jfx_body_is(jfx_req(e->kube, 3, "PATCH", POD_PATH),
		    "{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/notified-at\":"
		    "\"2026-11-18T00:00:00Z\"}}}");

	/* First policy's notice_lead (2h): wait (reminding 1h before), then act. */
	e->now = T0 + 2 * HOUR - 1000;
	jfx_push_one(e->kube, "train-1", "uid-1",
		     "\"janitor/ttl\":\"1h\",\"janitor/notified-at\":\"2026-11-18T00:00:00Z\"");
	jfx_sweep_rows(e, "ml-team/train-1=remind;");
	e->now = T0 + 2 * HOUR;
	jfx_push_one(e->kube, "train-1", "uid-1",
		     "\"janitor/ttl\":\"1h\",\"janitor/notified-at\":\"2026-11-18T00:00:00Z\"");
	jfx_push_pod(e->kube, "train-1", "uid-1",
		     "\"janitor/ttl\":\"1h\",\"janitor/notified-at\":\"2026-11-18T00:00:00Z\"");
	fake_http_push(e->kube, 200, NULL, "{}");
	fake_http_push(e->kube, 201, NULL, "{}");
	jfx_sweep_rows(e, "ml-team/train-1=delete-pod;");
	jfx_req(e->kube, 7, "DELETE", POD_PATH);
}

static void dry_run_makes_no_mutating_request(void **state)
{
	struct env e;
	(void)state;

	jfx_env_start(&e, 1);
	assert_true(janitor_dry_run(e.j));
	jfx_enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e.kube, "train-1", "uid-1", "");
	assert_int_equal(janitor_step(e.j), 1);
	jfx_enqueue(&e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	assert_int_equal(janitor_step(e.j), 1);
	jfx_push_one(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	jfx_push_pod(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	jfx_sweep_rows(&e, "ml-team/train-1=delete-pod;");
	jfx_push_one(e.kube, "train-1", "uid-1", "\"janitor/ttl\":\"1h\"");
	jfx_sweep_rows(&e, "ml-team/train-1=notify;");
	assert_int_equal(fake_http_count(e.kube), 5);
	jfx_no_mutation(e.kube, 0);
	assert_int_equal(fake_http_count(e.slack), 0);
	assert_int_equal(store_notice_pending_count(e.st), 0);
	assert_int_equal(janitor_notice_step(e.j), 0);
	jfx_assert_contains(jfx_read_log(&e), "dry-run: would patch pod annotations");
	jfx_assert_contains(jfx_read_log(&e), "dry-run: would send slack notice");
	jfx_assert_contains(jfx_read_log(&e), "dry-run: would act on pod");
	jfx_env_stop(&e);
}

static void deployment_owned_is_scaled_not_deleted(void **state)
{
	struct env *e = *state;
	char *p;

	jfx_delivered_notice(e, "train-1", "uid-1", T0 - MIN, T0 - 3 * HOUR);
#define GPU_DUE                                                                       \
	"\"janitor/expires\":\"2026-11-17T23:59:00Z\",\"janitor/marked-at\":"          \
	"\"2026-11-16T23:59:00Z\",\"janitor/reason\":\"JanitorIdleGPUPod\","          \
	"\"janitor/notified-at\":\"2026-11-17T21:00:00Z\""
	p = jfx_pod_json("train-1", "uid-1", GPU_DUE, "ReplicaSet", "train-7d9f");
	jfx_push_list(e->kube, &p, 1);
	p = jfx_pod_json("train-1", "uid-1", GPU_DUE, "ReplicaSet", "train-7d9f");
	fake_http_push(e->kube, 200, NULL, p);
	free(p);
	fake_http_push(e->kube, 200, NULL,
		       "{\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"train-7d9f\",\"uid\":"
		       "\"owner-uid\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
		       "\"Deployment\",\"name\":\"train\",\"uid\":\"dep-uid\",\"controller\":true}]}}");
	fake_http_push(e->kube, 200, NULL, "{\"kind\":\"Scale\"}");
	fake_http_push(e->kube, 201, NULL, "{}");
	jfx_sweep_rows(e, "ml-team/train-1=scale-to-zero;");
	jfx_req(e->kube, 2, "GET", "/apis/apps/v1/namespaces/ml-team/replicasets/train-7d9f");
	jfx_body_is(jfx_req(e->kube, 3, "PATCH",
			    "/apis/apps/v1/namespaces/ml-team/deployments/train/scale"),
		    "{\"spec\":{\"replicas\":0}}");
	jfx_event_posted(e->kube, 4, "JanitorScaled");
	for (size_t i = 0; i < fake_http_count(e->kube); i++)
		assert_string_not_equal(fake_http_request(e->kube, i)->method, "DELETE");
	jfx_assert_contains(jfx_metrics_text(e),
			    "{action=\"scaled\",reason=\"JanitorIdleGPUPod\"} 1");
}

static void max_deletions_per_sweep_bounds_harm(void **state)
{
	struct env *e = *state;
	char *pods[3];
	const char *names[] = { "a", "b", "c" }, *uids[] = { "u-a", "u-b", "u-c" };
	size_t deletes = 0;

	for (int i = 0; i < 3; i++) {
		jfx_delivered_notice(e, names[i], uids[i], T0 - MIN, T0 - 3 * HOUR);
		pods[i] = jfx_pod_json(names[i], uids[i], DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	}
	jfx_push_list(e->kube, pods, 3);
	for (int i = 0; i < 2; i++) {
		jfx_push_pod(e->kube, names[i], uids[i], DUE_ANN("2026-11-17T21:00:00Z"));
		fake_http_push(e->kube, 200, NULL, "{}");
		fake_http_push(e->kube, 201, NULL, "{}");
	}
	jfx_push_pod(e->kube, "c", "u-c", DUE_ANN("2026-11-17T21:00:00Z"));
	jfx_sweep_rows(e, "ml-team/a=delete-pod;ml-team/b=delete-pod;ml-team/c=deferred;");
	for (size_t i = 0; i < fake_http_count(e->kube); i++)
		deletes += !strcmp(fake_http_request(e->kube, i)->method, "DELETE");
	assert_int_equal(deletes, 2);
	jfx_assert_contains(jfx_read_log(e), "max_deletions_per_sweep reached");
}

/* The sweeps counter says ok sweeps and failed ones. */
static void sweeps_counted(struct env *e, int ok, int failed)
{
	char line[96];

	snprintf(line, sizeof(line), "alertbridge_janitor_sweeps_total{result=\"ok\"} %d\n", ok);
	jfx_assert_contains(jfx_metrics_text(e), line);
	snprintf(line, sizeof(line), "alertbridge_janitor_sweeps_total{result=\"failed\"} %d\n",
		 failed);
	jfx_assert_contains(jfx_metrics_text(e), line);
}

static void one_pods_error_does_not_stop_the_sweep(void **state)
{
	struct env *e = *state;
	char *pods[2];
	struct janitor_sweep_stats stats;
	struct buf err = BUF_INIT;

	jfx_delivered_notice(e, "a", "u-a", T0 - MIN, T0 - 3 * HOUR);
	jfx_delivered_notice(e, "b", "u-b", T0 - MIN, T0 - 3 * HOUR);
	pods[0] = jfx_pod_json("a", "u-a", DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	pods[1] = jfx_pod_json("b", "u-b", DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	jfx_push_list(e->kube, pods, 2);
	fake_http_push(e->kube, 500, NULL, "{\"kind\":\"Status\",\"message\":\"boom\"}");
	jfx_push_pod(e->kube, "b", "u-b", DUE_ANN("2026-11-17T21:00:00Z"));
	fake_http_push(e->kube, 200, NULL, "{}");
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_sweep(e->j, jfx_collect_row, e, &stats, &err), ERR_OK);
	assert_string_equal(buf_str(&e->rows), "ml-team/a=error;ml-team/b=delete-pod;");
	assert_int_equal(stats.errors, 1);
	assert_int_equal(stats.acted, 1);
	assert_int_equal(stats.pods, 2);
	jfx_req(e->kube, 3, "DELETE", "/api/v1/namespaces/ml-team/pods/b");
	jfx_assert_contains(jfx_read_log(e), "cannot act on pod, the sweep goes on");
	/* One pod's error is no failed sweep. */
	sweeps_counted(e, 1, 0);
	buf_release(&err);
}

static void conflict_and_gone_are_skipped(void **state)
{
	struct env *e = *state;
	char *pods[2];

	jfx_delivered_notice(e, "a", "u-a", T0 - MIN, T0 - 3 * HOUR);
	jfx_delivered_notice(e, "b", "u-b", T0 - MIN, T0 - 3 * HOUR);
	pods[0] = jfx_pod_json("a", "u-a", DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	pods[1] = jfx_pod_json("b", "u-b", DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	jfx_push_list(e->kube, pods, 2);
	jfx_push_pod(e->kube, "a", "u-a", DUE_ANN("2026-11-17T21:00:00Z"));
	fake_http_push(e->kube, 409, NULL, "{\"kind\":\"Status\",\"reason\":\"Conflict\"}");
	fake_http_push(e->kube, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
	jfx_sweep_rows(e, "ml-team/a=changed;ml-team/b=skip:gone;");
	assert_int_equal(fake_http_count(e->kube), 4);
}

static void listing_failure_is_returned(void **state)
{
	struct env *e = *state;
	struct buf err = BUF_INIT;

	fake_http_push(e->kube, 403, NULL,
		       "{\"kind\":\"Status\",\"message\":\"pods is forbidden\"}");
	assert_int_equal(janitor_sweep(e->j, NULL, NULL, NULL, &err), ERR_AUTH);
	jfx_assert_contains(buf_str(&err), "pods is forbidden");
	jfx_assert_contains(jfx_read_log(e), "sweep stopped");
	/* alertbridge-rules.yml's AlertbridgeJanitorSweepFailing counts these. */
	sweeps_counted(e, 0, 1);
	buf_release(&err);
}

static void channel_not_found_falls_back_once_then_dead(void **state)
{
	struct env *e = *state;
	json_t *post;

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"janitor/notify\":\"#gone\"");
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);

	fake_http_push(e->slack, 200, NULL, "{\"ok\":false,\"error\":\"channel_not_found\"}");
	assert_int_equal(janitor_notice_step(e->j), 1);
	post = jfx_body_json(jfx_req(e->slack, 0, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(post, "channel")), "#gone");
	json_decref(post);
	jfx_assert_contains(jfx_read_log(e), "falling back to the default channel");

	fake_http_push(e->slack, 200, NULL, "{\"ok\":false,\"error\":\"channel_not_found\"}");
	assert_int_equal(janitor_notice_step(e->j), 1);
	post = jfx_body_json(jfx_req(e->slack, 1, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(post, "channel")), "#gpu-cluster");
	json_decref(post);
	jfx_notice_state_is(e, "uid-1", "notice", STORE_NOTICE_DEAD);
	assert_int_equal(janitor_notice_step(e->j), 0);
	assert_int_equal(fake_http_count(e->kube), 3);  /* never stamped */
}

static void gauge_removed_when_unmarked(void **state)
{
	struct env *e = *state;

	jfx_push_one(e->kube, "train-1", "uid-1", MARKED_BY_US);
	jfx_sweep_rows(e, "ml-team/train-1=wait;");
	jfx_assert_contains(jfx_metrics_text(e), "pod=\"train-1\"} 1795046400");
	jfx_enqueue(e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1", MARKED_BY_US);
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
	assert_null(strstr(jfx_metrics_text(e), "pod=\"train-1\"} 1795046400"));
}

static void collect_full(void *ctx, const struct janitor_plan_row *row)
{
	(void)buf_printf(ctx, "%s/%s uid=%s owner=%s reason=%s expires=%lld action=%s;",
			 row->namespace, row->pod, row->uid, row->owner, row->reason,
			 (long long)row->expires_ms, row->action);
}

/* janitor_pods_each(): the pods of the last complete sweep, for the on-call page. */
static void pods_of_the_last_complete_sweep(void **state)
{
	struct env *e = *state;
	struct buf seen = BUF_INIT;
	int64_t total = -1;

	assert_int_equal(janitor_pods_each(e->j, jfx_collect_row, e, &total), 0);
	assert_string_equal(buf_str(&e->rows), "");
	jfx_delivered_notice(e, "train-1", "uid-1", T0 - MIN, T0 - 30 * MIN);
	jfx_push_one(e->kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	jfx_sweep_rows(e, "ml-team/train-1=remind;");
	buf_adds(&seen, buf_str(&e->rows));
	buf_reset(&e->rows);
	assert_int_equal(janitor_pods_each(e->j, jfx_collect_row, e, &total), T0);
	assert_int_equal(total, 1);
	assert_string_equal(buf_str(&e->rows), buf_str(&seen));
	buf_reset(&seen);
	assert_int_equal(janitor_pods_each(e->j, collect_full, &seen, NULL), T0);
	assert_string_equal(buf_str(&seen), "ml-team/train-1 uid=uid-1 owner=- "
			    "reason=JanitorPodPendingTooLong expires=1794959940000 action=remind;");  /* 2026-11-17T23:59:00Z */
	/* A sweep that fails leaves the last complete one's pods. */
	fake_http_push(e->kube, 403, NULL, "{\"kind\":\"Status\",\"code\":403}");
	e->now = T0 + MIN;
	buf_reset(&e->rows);
	assert_int_not_equal(janitor_sweep(e->j, NULL, NULL, NULL, &seen), ERR_OK);
	assert_int_equal(janitor_pods_each(e->j, jfx_collect_row, e, &total), T0);
	assert_string_equal(buf_str(&e->rows), "ml-team/train-1=remind;");
	buf_release(&seen);
}

UNIT_MAIN(
	JFX_TEST(not_deleted_before_notice_lead_then_deleted),
	JFX_TEST(pods_of_the_last_complete_sweep),
	JFX_TEST(reminder_once_in_the_notice_thread),
	JFX_TEST(no_reminder_without_a_delivered_notice_or_a_mark),
	JFX_TEST(uid_changed_before_acting_untouched),
	JFX_TEST(annotation_without_delivered_notice_notifies_first),
	JFX_TEST(user_ttl_notice_first_delete_after_lead),
	cmocka_unit_test(dry_run_makes_no_mutating_request),
	JFX_TEST(deployment_owned_is_scaled_not_deleted),
	JFX_TEST(max_deletions_per_sweep_bounds_harm),
	JFX_TEST(one_pods_error_does_not_stop_the_sweep),
	JFX_TEST(conflict_and_gone_are_skipped),
	JFX_TEST(listing_failure_is_returned),
	JFX_TEST(channel_not_found_falls_back_once_then_dead),
	JFX_TEST(gauge_removed_when_unmarked))
