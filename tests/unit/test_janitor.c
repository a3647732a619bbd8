/*
 * test_janitor.c - the janitor's worker and Slack outbox (janitor/janitor.c)
 * against fakes of the Kubernetes API and Slack and a real sqlite store, in
 * virtual time: the exact requests of marking, unmarking and notifying.
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
#include "janitor/janitor_int.h"
#include "tests/unit/helpers/janitor_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

/* ---- the worker ---- */

static void firing_marks_pod_posts_event_and_queues_notice(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };
	json_t *ev;

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"a/b\":\"1\"");
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"a/b\":\"1\"," MARKED_BY_US);
	fake_http_push(e->kube, 201, NULL, "{\"kind\":\"Event\"}");
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 3);
	jfx_req(e->kube, 0, "GET", POD_PATH);
	/* uid and resourceVersion of the GET: preconditions, so a stale attempt cannot land */
	jfx_body_is(jfx_req(e->kube, 1, "PATCH", POD_PATH),
		    "{\"metadata\":{\"uid\":\"uid-1\",\"resourceVersion\":\"7\",\"annotations\":{"
		    MARKED_BY_US "}}}");
	assert_string_equal(fake_request_header(fake_http_request(e->kube, 1), "content-type"),
			    "application/merge-patch+json");
	ev = jfx_body_json(jfx_req(e->kube, 2, "POST", EVENTS_PATH));
	assert_string_equal(json_string_value(json_object_get(ev, "reason")), "JanitorMarked");
	assert_string_equal(json_string_value(json_object_get(ev, "type")), "Normal");
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(ev, "involvedObject"), "uid")),
			    "uid-1");
	jfx_assert_contains(json_string_value(json_object_get(ev, "message")),
			    "delete-pod at 2026-11-19T00:00:00Z");
	json_decref(ev);
	assert_int_equal(fake_http_count(e->slack), 0);  /* the outbox sends, not the worker */

	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_PENDING);
	assert_true(n.expires_ms == T0 + 24 * HOUR);
	assert_null(n.channel);
	assert_string_equal(n.text,
			    ":hourglass_flowing_sand: *Pod `ml-team/train-1` is marked for clean-up* "
			    "(JanitorIdleGPUPod)\n"
			    "*What:* the pod will be deleted in 1 day, at Thu, 19 Nov 2026 00:00:00 "
			    "UTC.\n"
			    "*Why:* GPU idle for 6h &amp; &lt;1% used\n"
			    "*To keep it:* `kubectl annotate pod -n ml-team train-1 "
			    "janitor/exempt=true`\n"
			    "*To snooze it:* `kubectl annotate pod -n ml-team train-1 --overwrite "
			    "janitor/expires=2026-11-20T00:00:00Z` (any later UTC time)\n");
	store_notice_release(&n);
	assert_int_equal(store_pending_count(e->st, "janitor"), 0);
	jfx_assert_contains(jfx_metrics_text(e),
			    "alertbridge_janitor_pods_total{action=\"marked\",reason=\"JanitorIdleGPUPod\"} 1");
	jfx_assert_contains(jfx_metrics_text(e), "alertbridge_janitor_pod_expiry_timestamp_seconds"
					      "{namespace=\"ml-team\",pod=\"train-1\"} 1795046400");

	/* The same firing again (repeat_interval): nothing changes, no second notice. */
	e->now += HOUR;
	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"a/b\":\"1\"," MARKED_BY_US);
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 4);
	assert_int_equal(store_notice_pending_count(e->st), 1);
}

static void notice_delivered_then_pod_stamped(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };
	json_t *post;

	jfx_mark(e, "train-1", "uid-1");

	e->now = T0 + 1500;
	jfx_deliver(e);
	post = jfx_body_json(jfx_req(e->slack, 0, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(post, "channel")), "#gpu-cluster");
	assert_null(json_object_get(post, "thread_ts"));
	jfx_assert_contains(json_string_value(json_object_get(post,
			    "text")), "marked for clean-up");
	json_decref(post);
	jfx_req(e->kube, 3, "GET", POD_PATH);
	jfx_body_is(jfx_req(e->kube, 4, "PATCH", POD_PATH),
		    "{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/notified-at\":"
		    "\"2026-11-18T00:00:02Z\"}}}");
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_SENT);
	assert_string_equal(n.slack_channel_id, "C0GPU");
	assert_string_equal(n.slack_ts, "1794960000.000100");
	store_notice_release(&n);
	assert_int_equal(janitor_notice_step(e->j), 0);
	jfx_assert_contains(jfx_metrics_text(e),
			    "alertbridge_janitor_notices_total{result=\"sent\"} 1");
}

static void slack_failure_no_stamp_no_deletion(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };

	jfx_mark(e, "train-1", "uid-1");

	fake_http_push(e->slack, 200, NULL, "{\"ok\":false,\"error\":\"internal_error\"}");
	assert_int_equal(janitor_notice_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 3);  /* no notified-at */
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_PENDING);
	assert_int_equal(n.attempts, 1);
	assert_string_equal(n.channel, "#gpu-cluster");
	jfx_assert_contains(n.last_error, "internal_error");
	assert_true(n.next_attempt_at_ms > e->now);
	store_notice_release(&n);
	jfx_assert_contains(jfx_metrics_text(e),
			    "alertbridge_janitor_notices_total{result=\"failed\"} 1");

	/* Long past the expiry, the sweeper still only waits for the notice. */
	e->now = T0 + 48 * HOUR;
	jfx_push_one(e->kube, "train-1", "uid-1", MARKED_BY_US);
	jfx_sweep_rows(e, "ml-team/train-1=notice-pending;");
	assert_int_equal(fake_http_count(e->kube), 4);
	jfx_no_mutation(e->kube, 3);
}

static void uid_label_differs_pod_untouched(void **state)
{
	struct env *e = *state;

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-OLD");
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 1);
	assert_int_equal(store_notice_pending_count(e->st), 0);
	jfx_assert_contains(jfx_metrics_text(e), "{action=\"skipped\",reason=\"uid-changed\"} 1");
	jfx_assert_contains(jfx_read_log(e), "why=uid-changed");
}

static void excluded_and_exempt_untouched(void **state)
{
	struct env *e = *state;

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "kube-system", "coredns-1", NULL);
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 0);  /* exclusion wins: not even a GET */

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"janitor/exempt\":\"true\"");
	assert_int_equal(janitor_step(e->j), 1);
	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"janitor/ttl\":\"forever\"");
	assert_int_equal(janitor_step(e->j), 1);
	jfx_enqueue(e, "firing", "NoSuchPolicy", "ml-team", "train-1", NULL);
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 2);
	jfx_no_mutation(e->kube, 0);
	assert_int_equal(store_notice_pending_count(e->st), 0);
	jfx_assert_contains(jfx_metrics_text(e), "{action=\"skipped\",reason=\"excluded\"} 1");
	jfx_assert_contains(jfx_metrics_text(e), "{action=\"skipped\",reason=\"exempt\"} 1");
	jfx_assert_contains(jfx_metrics_text(e), "{action=\"skipped\",reason=\"forever\"} 1");
	jfx_assert_contains(jfx_read_log(e), "no janitor policy for this alert, pods left alone");
}

/* A policy added by a reload applies from the next event on (core/reload.h). */
static void reloaded_policy_applies_to_the_next_event(void **state)
{
	char dir[48], path[64];
	struct reload_options ro = { 0 };
	struct env_opts o = { 0 };
	struct reload *r = NULL;
	struct config *cfg = NULL;
	struct buf err = BUF_INIT;
	struct env e;
	(void)state;

	tfx_mkdtemp(dir, sizeof(dir), "ab-janitor-reload");
	snprintf(path, sizeof(path), "%s/alertbridge.yml", dir);
	tfx_write_file(dir, "alertbridge.yml",
		       "janitor:\n  enabled: true\n  dry_run: false\n  policies:\n"
		       "    - {alertname: JanitorPodPendingTooLong}\n");
	assert_int_equal(cfg_load(path, &cfg, &err), ERR_OK);
	ro.config_file = path;
	assert_int_equal(reload_new(&ro, cfg, NULL, &r, &err), ERR_OK);
	o.reload = r;
	jfx_env_start_with(&e, 0, &o);
	jfx_enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 0);  /* no policy in the running config */
	jfx_assert_contains(jfx_read_log(&e), "no janitor policy for this alert, pods left alone");

	tfx_write_file(dir, "alertbridge.yml",
		       "janitor:\n  enabled: true\n  dry_run: false\n  policies:\n"
		       "    - {alertname: JanitorIdleGPUPod, grace: 24h, notice_lead: 2h}\n");
	assert_int_equal(reload_run(r, "test", &err), ERR_OK);
	jfx_enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	jfx_push_pod(e.kube, "train-1", "uid-1", "\"a/b\":\"1\"");
	jfx_push_pod(e.kube, "train-1", "uid-1", "\"a/b\":\"1\"," MARKED_BY_US);
	fake_http_push(e.kube, 201, NULL, "{\"kind\":\"Event\"}");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(jfx_count_method(e.kube, "PATCH"), 1);  /* marked under the new policy */
	jfx_env_stop(&e);
	reload_free(r);
	buf_release(&err);
	tfx_remove_tree(dir);
}

static void invalid_annotation_warning_event(void **state)
{
	struct env *e = *state;
	json_t *ev;

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"janitor/ttl\":\"5y\"");
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 2);
	ev = jfx_body_json(jfx_req(e->kube, 1, "POST", EVENTS_PATH));
	assert_string_equal(json_string_value(json_object_get(ev, "type")), "Warning");
	assert_string_equal(json_string_value(json_object_get(ev, "reason")),
			    "JanitorInvalidAnnotation");
	jfx_assert_contains(json_string_value(json_object_get(ev,
			    "message")), "janitor/ttl \"5y\"");
	json_decref(ev);
	jfx_assert_contains(jfx_read_log(e), "invalid janitor annotation, pod left alone");
}

static void resolved_unmarks_only_ours_and_replies(void **state)
{
	struct env *e = *state;

	jfx_delivered_notice(e, "train-1", "uid-1", T0 + 24 * HOUR, T0 - HOUR);
	jfx_enqueue(e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1",
		     MARKED_BY_US ",\"janitor/notified-at\":\"2026-11-17T23:00:00Z\","
		     "\"janitor/notify\":\"U0ALICE\",\"a/b\":\"1\"");
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 3);
	jfx_body_is(jfx_req(e->kube, 1, "PATCH", POD_PATH),
		    "{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/expires\":null,"
		    "\"janitor/marked-at\":null,\"janitor/marked-expires\":null,"
		    "\"janitor/notified-at\":null,\"janitor/reason\":null}}}");
	jfx_event_posted(e->kube, 2, "JanitorUnmarked");
	jfx_reply_is(e, "cancelled", "C0GPU",
		     ":white_check_mark: *Never mind:* pod `ml-team/train-1` will not be deleted");

	/* A person moved janitor/expires: theirs now, it stays. */
	jfx_enqueue(e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1",
		     "\"janitor/expires\":\"2026-12-01T00:00:00Z\","
		     "\"janitor/marked-expires\":\"2026-11-19T00:00:00Z\","
		     "\"janitor/marked-at\":\"2026-11-18T00:00:00Z\","
		     "\"janitor/reason\":\"JanitorIdleGPUPod\"");
	jfx_push_pod(e->kube, "train-1", "uid-1", "");
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
	jfx_body_is(jfx_req(e->kube, 4, "PATCH", POD_PATH),
		    "{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/marked-at\":null,"
		    "\"janitor/marked-expires\":null,\"janitor/reason\":null}}}");

	/* Not marked by the janitor: nothing to undo. */
	jfx_enqueue(e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	jfx_push_pod(e->kube, "train-1", "uid-1", "\"janitor/expires\":\"2026-12-01T00:00:00Z\"");
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(fake_http_count(e->kube), 7);
}

static void kube_failure_retries_event(void **state)
{
	struct env *e = *state;
	struct store_event ev = { 0 };

	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	fake_http_push(e->kube, 500, NULL, "{\"kind\":\"Status\",\"message\":\"etcd down\"}");
	assert_int_equal(janitor_step(e->j), 1);
	assert_int_equal(store_pending_count(e->st, "janitor"), 1);
	assert_int_equal(janitor_step(e->j), 0);  /* not due yet */
	assert_int_equal(store_next_event(e->st, "janitor", INT64_MAX / 2, &ev), ERR_OK);
	assert_int_equal(ev.attempts, 1);
	jfx_assert_contains(ev.last_error, "etcd down");
	store_event_release(&ev);
	jfx_assert_contains(jfx_read_log(e), "janitor event failed, will retry");
}

/*
 * janitor_queue_notice() for ml-team/train-1 (uid-1, no owner) of a JanitorIdleGPUPod mark
 * expiring at expiry_ms; fail unless it queued a notice exactly when want_queued.
 */
static void queue_train_notice(struct env *e, int64_t expiry_ms, int want_queued)
{
	struct kube_pod pod = { 0 };
	struct kube_owner none = { 0 };
	struct buf err = BUF_INIT;
	int queued = 0;

	pod.namespace = (char *)"ml-team";
	pod.name = (char *)"train-1";
	pod.uid = (char *)"uid-1";
	assert_int_equal(janitor_queue_notice(e->j, &pod, &none, JA_DELETE_POD, "JanitorIdleGPUPod",
					      "idle", expiry_ms, 6 * 3600 * 1000, 3600 * 1000, 0,
					      &queued, &err), ERR_OK);
	assert_int_equal(queued, want_queued);
	buf_release(&err);
}

/*
 * Fire, resolve, fire within one second: the second mark has the first one's
 * expiry.  Its notice goes out all the same; the first one was called off
 * (given up on before delivery, or a "never mind" after it), and without a
 * notice the pod would be marked for ever and never acted on.  Found by
 * tests/model/janitor_model.py (issue 21).
 */
static void a_mark_after_a_resolve_is_announced_again(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 }, reply = { 0 };
	struct buf err = BUF_INIT;
	int64_t expiry = T0 + 6 * 3600 * 1000;

	queue_train_notice(e, expiry, 1);
	/* The same expiry again (a sweep): announced already. */
	queue_train_notice(e, expiry, 0);
	/* The alert resolves before delivery; it fires again with the same expiry. */
	assert_int_equal(store_notice_cancel(e->st, "uid-1", JANITOR_RESOLVED_BEFORE_DELIVERY,
					     NULL), ERR_OK);
	queue_train_notice(e, expiry, 1);
	/* Delivered this time, then "never mind" in its thread, then a mark again. */
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	assert_int_equal(store_notice_sent(e->st, n.id, T0, "D1", "D1", "1.000001"), ERR_OK);
	jfx_notice_of(&reply, "train-1", "uid-1", "cancelled");
	reply.thread_ts = (char *)"1.000001";
	reply.text = (char *)"never mind";
	assert_int_equal(store_notice_add(e->st, &reply, &err), ERR_OK);
	queue_train_notice(e, expiry, 1);
	queue_train_notice(e, expiry, 0);
	store_notice_release(&n);
	buf_release(&err);
}

UNIT_MAIN(
	JFX_TEST(firing_marks_pod_posts_event_and_queues_notice),
	JFX_TEST(notice_delivered_then_pod_stamped),
	JFX_TEST(slack_failure_no_stamp_no_deletion),
	JFX_TEST(uid_label_differs_pod_untouched),
	JFX_TEST(excluded_and_exempt_untouched),
	cmocka_unit_test(reloaded_policy_applies_to_the_next_event),
	JFX_TEST(invalid_annotation_warning_event),
	JFX_TEST(resolved_unmarks_only_ours_and_replies),
	JFX_TEST(kube_failure_retries_event),
	JFX_TEST(a_mark_after_a_resolve_is_announced_again))
