/*
 * test_janitor_digest.c - one Slack message per owner (janitor/janitor_digest.c)
 * against fakes of the Kubernetes API and Slack and a real sqlite store, in
 * virtual time: one pod's notice as before, a burst within the batch window
 * as one digest, parts of at most 50 pods and 40,000 bytes, a failed digest
 * retried with no pod of it acted on, replies of one thread as one reply.
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

#include "core/config.h"
#include "core/log.h"
#include "store/store_digest.h"
#include "store/store_outbox.h"
#include "janitor/janitor.h"
#include "tests/unit/helpers/janitor_fixture.h"

#define SEC 1000LL
#define DUE_EXPIRY (T0 - MIN) /* DUE_ANN's janitor/expires */

/*
 * Queue n notices of pods ml-team/train-<first+i> straight into the outbox, as
 * janitor_queue_notice() would, each with policy as its line's policy.
 */
static void queue_direct(struct env *e, int first, int n, const char *policy, int64_t expires_ms)
{
	for (int i = first; i < first + n; i++) {
		struct store_notice s = { 0 };
		char pod[32], uid[32], *line;
		json_t *l;

		snprintf(pod, sizeof(pod), "train-%d", i);
		snprintf(uid, sizeof(uid), "uid-%d", i);
		l = json_pack("{s:s,s:s,s:s,s:s,s:s,s:I}", "namespace", "ml-team", "pod", pod, "uid",
			      uid, "policy", policy, "action", "deleted", "expiresMs",
			      (json_int_t)(T0 + 2 * HOUR));
		line = json_dumps(l, JSON_COMPACT);
		jfx_notice_of(&s, pod, uid, "notice");
		s.expires_ms = expires_ms;
		s.notify = (char *)"#ml-team";
		s.text = (char *)"the pod's own notice";
		s.line = line;
		s.created_at_ms = e->now;
		assert_int_equal(store_notice_add(e->st, &s, NULL), ERR_OK);
		free(line);
		json_decref(l);
	}
}

/* The text of the i-th Slack request (a chat.postMessage), into out (malloc'd). */
static char *posted_text(struct env *e, size_t i, char **thread_ts)
{
	json_t *b = jfx_body_json(jfx_req(e->slack, i, "POST", "/chat.postMessage"));
	char *text = strdup(json_string_value(json_object_get(b, "text")));

	if (thread_ts)
		*thread_ts = json_object_get(b, "thread_ts")
				     ? strdup(json_string_value(json_object_get(b, "thread_ts")))
				     : NULL;
	json_decref(b);
	return text;
}

/* How many times "`ml-team/train-<i>`" is in text, for each i < n, summed into seen[]. */
static size_t count_pods(const char *text, int n, int *seen)
{
	size_t total = 0;

	for (int i = 0; i < n; i++) {
		char needle[48];

		snprintf(needle, sizeof(needle), "`ml-team/train-%d`", i);
		for (const char *p = strstr(text, needle); p; p = strstr(p + 1, needle)) {
			seen[i]++;
			total++;
		}
	}
	return total;
}

static const struct env_opts batch_window_5s = { .batch_window_ms = 5 * SEC };

static void one_pod_is_todays_notice(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };
	char *text;

	jfx_mark(e, "train-1", "uid-1");
	e->now = T0 + 4 * SEC;  /* in the window: it waits for others */
	assert_int_equal(janitor_notice_step(e->j), 0);
	e->now = T0 + 5 * SEC;
	fake_http_push(e->slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e->j), 1);
	assert_int_equal(fake_http_count(e->slack), 1);
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &n), ERR_OK);
	text = posted_text(e, 0, NULL);
	assert_string_equal(text, n.text);  /* slack_notice.mustache, as before digests */
	jfx_assert_contains(text, "*Pod `ml-team/train-1` is marked for clean-up*");
	assert_int_equal(n.state, STORE_NOTICE_SENT);
	assert_int_equal(n.digest_id, 0);
	assert_int_equal(store_digest_pending_count(e->st), 0);
	free(text);
	store_notice_release(&n);
}

static void burst_within_the_window_is_one_digest(void **state)
{
	struct env *e = *state;
	struct store_notice a = { 0 }, b = { 0 };
	int seen[4] = { 0 };
	char *text;

	jfx_mark(e, "train-1", "uid-1");
	e->now = T0 + 3 * SEC;
	jfx_mark(e, "train-2", "uid-2");
	e->now = T0 + 30 * SEC;  /* after the window: its own notice */
	jfx_mark(e, "train-3", "uid-3");
	e->now = T0 + 5 * SEC;
	assert_int_equal(janitor_notice_step(e->j), 1);  /* the digest is written, not posted */
	assert_int_equal(fake_http_count(e->slack), 0);
	assert_int_equal(store_digest_pending_count(e->st), 1);
	fake_http_push(e->slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e->j), 1);
	assert_int_equal(fake_http_count(e->slack), 1);
	text = posted_text(e, 0, NULL);
	assert_int_equal(count_pods(text, 4, seen), 2);
	assert_int_equal(seen[1], 1);
	assert_int_equal(seen[2], 1);
	jfx_assert_contains(text, "*2 pods are marked for clean-up*\n"
				  "• `ml-team/train-1` (JanitorIdleGPUPod): deleted in 23 hours 59 minutes, at "
				  "Thu, 19 Nov 2026 00:00:00 UTC\n");
	assert_null(strstr(text, "part 1"));
	assert_int_equal(store_notice_latest(e->st, "uid-1", "notice", &a), ERR_OK);
	assert_int_equal(store_notice_latest(e->st, "uid-2", "notice", &b), ERR_OK);
	assert_int_equal(a.state, STORE_NOTICE_SENT);
	assert_int_equal(b.state, STORE_NOTICE_SENT);
	assert_string_equal(a.slack_ts, "1794960000.000100");
	assert_string_equal(b.slack_ts, a.slack_ts);
	assert_true(a.sent_at_ms == b.sent_at_ms && a.sent_at_ms >= T0 + 5 * SEC);
	store_notice_release(&a);
	store_notice_release(&b);
	jfx_notice_state_is(e, "uid-3", "notice", STORE_NOTICE_PENDING);
	free(text);
}

/* Deliver every part of the digest queued in e, each answered OK; returns the parts. */
static size_t deliver_parts(struct env *e, int n, int *seen, size_t max_parts)
{
	size_t before = fake_http_count(e->slack), parts = 0;

	assert_int_equal(janitor_notice_step(e->j), 1);  /* the digest */
	for (size_t i = 0; i < max_parts + 1; i++)
		fake_http_push(e->slack, 200, NULL, OK_POST);
	while (janitor_notice_step(e->j) == 1 && parts <= max_parts) {
		char *text = posted_text(e, before + parts, NULL);

		assert_true(strlen(text) <= 40000);
		assert_true(count_pods(text, n, seen) <= JANITOR_DIGEST_MAX_PODS);
		free(text);
		parts++;
	}
	for (int i = 0; i < n; i++)
		assert_int_equal(seen[i], 1);  /* every pod listed once across the parts */
	return parts;
}

static void split_at_50_pods(void **state)
{
	struct env *e = *state;
	int seen[120] = { 0 };
	char *text;

	queue_direct(e, 0, 120, "JanitorIdleGPUPod", T0 + 2 * HOUR);
	assert_int_equal(deliver_parts(e, 120, seen, 10), 3);
	text = posted_text(e, 0, NULL);
	jfx_assert_contains(text, "*50 pods are marked for clean-up* (part 1 of 3, 120 pods in "
				  "all)\n• `ml-team/train-0` (JanitorIdleGPUPod): deleted in 2 hours, "
				  "at Wed, 18 Nov 2026 02:00:00 UTC\n");
	free(text);
	text = posted_text(e, 2, NULL);
	jfx_assert_contains(text, "*20 pods are marked for clean-up* (part 3 of 3, 120 pods");
	free(text);
	assert_int_equal(store_notice_pending_count(e->st), 0);
}

static void split_at_slack_text_limit(void **state)
{
	struct env *e = *state;
	int seen[50] = { 0 };
	char policy[1001];
	size_t parts;

	memset(policy, 'P', sizeof(policy) - 1);  /* ~1,100 bytes a line: 50 lines pass 40,000 */
	policy[sizeof(policy) - 1] = '\0';
	queue_direct(e, 0, 50, policy, T0 + 2 * HOUR);
	parts = deliver_parts(e, 50, seen, 10);
	assert_int_equal(parts, 2);
}

static void failed_digest_is_retried_and_no_pod_of_it_acted_on(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };

	queue_direct(e, 0, 3, "JanitorPodPendingTooLong", DUE_EXPIRY);
	assert_int_equal(janitor_notice_step(e->j), 1);  /* the digest */
	fake_http_push(e->slack, 503, NULL, "{\"ok\":false,\"error\":\"service_unavailable\"}");
	assert_int_equal(janitor_notice_step(e->j), 1);
	fake_http_push(e->slack, 429, "Retry-After: 120",
		       "{\"ok\":false,\"error\":\"ratelimited\"}");
	e->now += 11 * MIN;
	assert_int_equal(janitor_notice_step(e->j), 1);
	assert_int_equal(fake_http_count(e->slack), 2);
	assert_int_equal(store_digest_pending_count(e->st), 1);
	assert_int_equal(store_notice_latest(e->st, "uid-0", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_PENDING);
	jfx_assert_contains(n.last_error, "ratelimited");
	store_notice_release(&n);

	/* A member pod long past its time, stamped by someone: the sweep only waits. */
	e->now += 10 * SEC;
	jfx_push_one(e->kube, "train-0", "uid-0", DUE_ANN("2026-11-17T00:00:00Z"));
	jfx_push_pod(e->kube, "train-0", "uid-0", DUE_ANN("2026-11-17T00:00:00Z"));
	jfx_sweep_rows(e, "ml-team/train-0=notice-pending;");
	assert_int_equal(jfx_count_method(e->kube, "DELETE"), 0);

	e->now += 11 * MIN;
	fake_http_push(e->slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e->j), 1);
	assert_int_equal(fake_http_count(e->slack), 3);
	assert_int_equal(store_digest_pending_count(e->st), 0);
	for (int i = 0; i < 3; i++) {
		char uid[32];

		snprintf(uid, sizeof(uid), "uid-%d", i);
		assert_int_equal(store_notice_latest(e->st, uid, "notice", &n), ERR_OK);
		assert_int_equal(n.state, STORE_NOTICE_SENT);
		assert_true(n.sent_at_ms >= e->now - SEC);  /* the lead counts from the delivery */
		store_notice_release(&n);
	}
}

static void replies_in_one_thread_are_one_reply(void **state)
{
	struct env *e = *state;
	char *text, *thread = NULL;

	for (int i = 0; i < 3; i++) {
		struct store_notice r = { 0 };
		char pod[32], uid[32], body[96];

		snprintf(pod, sizeof(pod), "train-%d", i);
		snprintf(uid, sizeof(uid), "uid-%d", i);
		snprintf(body, sizeof(body), ":wastebasket: Pod `ml-team/%s` was deleted", pod);
		jfx_notice_of(&r, pod, uid, "deleted");
		r.channel = (char *)"C0GPU";
		r.thread_ts = (char *)(i < 2 ? "1794960000.000100" : "1794960000.000200");
		r.text = body;
		assert_int_equal(store_notice_add(e->st, &r, NULL), ERR_OK);
	}
	assert_int_equal(janitor_notice_step(e->j), 1);  /* the two of one thread: a digest */
	fake_http_push(e->slack, 200, NULL, OK_POST);
	fake_http_push(e->slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e->j), 1);
	text = posted_text(e, 0, &thread);
	assert_string_equal(thread, "1794960000.000100");
	assert_string_equal(text, ":wastebasket: Pod `ml-team/train-0` was deleted\n"
				  ":wastebasket: Pod `ml-team/train-1` was deleted");
	free(text);
	free(thread);
	assert_int_equal(janitor_notice_step(e->j), 1);  /* the other thread's, alone */
	text = posted_text(e, 1, &thread);
	assert_string_equal(thread, "1794960000.000200");
	assert_string_equal(text, ":wastebasket: Pod `ml-team/train-2` was deleted");
	free(text);
	free(thread);
	assert_int_equal(janitor_notice_step(e->j), 0);
}

UNIT_MAIN(
	JFX_TEST_WITH(one_pod_is_todays_notice, &batch_window_5s),
	JFX_TEST_WITH(burst_within_the_window_is_one_digest, &batch_window_5s),
	JFX_TEST(split_at_50_pods),
	JFX_TEST(split_at_slack_text_limit),
	JFX_TEST(failed_digest_is_retried_and_no_pod_of_it_acted_on),
	JFX_TEST(replies_in_one_thread_are_one_reply))
