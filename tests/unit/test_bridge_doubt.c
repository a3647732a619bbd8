/*
 * test_bridge_doubt.c - the reconciler when GitHub makes a write after the
 * client's timeout (issue 19: an 8 s answer against a 5 s timeout made a
 * second issue for 4 creates of 8, a second comment for 1 resolve of 3).
 * GitHub documents no idempotency for POST, so a create or comment whose
 * answer was lost is in doubt: it is looked for by its marker only once it
 * can no longer land (gh_write_settled_at(): the timeout and GitHub's 10 s),
 * and never posted again before that look.  The event waits in the queue,
 * not the worker: other alerts go on meanwhile.
 *
 * GitHub's answers come late in real time (fake_http_push_delayed, past a
 * 1 s timeout); the bridge's clock is virtual.
 *
 * A write in doubt that the bridge cannot remember (the process that sent it
 * was killed, or another replica sent it) is waited out whole: after an
 * unclean stop or on gaining the Lease, no call before a write sent then
 * could no longer land (bridge_options.settle_at_start, settle_on_gain).
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

#include "bridge/bridge.h"
#include "store/store_events.h"
#include "tests/unit/helpers/bridge_fixture.h"

#define TIMEOUT_MS 1000
#define SETTLE_MS (TIMEOUT_MS + 10000) /* the timeout and GitHub's 10 s processing limit */
#define LATE_MS 1500                    /* GitHub's answer: after the timeout */
#define FP2 "99a0be1c2d3e4f50"

/* A list page holding issue 3 with FP's marker: the create GitHub made late. */
#define LISTED_3                                                                            \
	"[{\"number\":3,\"state\":\"open\",\"state_reason\":null,\"closed_at\":null,"       \
	"\"created_at\":\"2026-11-18T11:06:41Z\",\"comments\":0,\"body\":\"x <!-- "         \
	"alertbridge:receiver=default --> <!-- alertbridge:key=" FP " -->\",\"html_url\":"  \
	"\"https://github.com/my-org/alerts/issues/3\",\"repository_url\":"                 \
	"\"https://api.github.com/repos/my-org/alerts\"}]"

/* Every test's setup (bfx_setup()): GitHub's answers may come after a 1 s timeout. */
static const struct bfx_setup timeout_1s = { .extra_github = "  timeout: 1s\n" };

/*
 * FP's event waits until the write it left in doubt at `at` (ms, virtual) has
 * settled: not due a moment before, due then; its note is prefix "<at>".
 */
static void waits_until_settled(struct env *e, int64_t at, const char *prefix)
{
	struct store_event ev;
	char want[64];

	assert_int_equal(store_next_event(e->st, "bridge", at + SETTLE_MS - 1, &ev),
			 ERR_NOTFOUND);
	assert_int_equal(store_next_event(e->st, "bridge", at + SETTLE_MS, &ev), ERR_OK);
	assert_string_equal(ev.key, FP);
	snprintf(want, sizeof(want), "%s%lld", prefix, (long long)at);
	assert_string_equal(ev.progress, want);
	store_event_release(&ev);
}

static void create_made_after_the_timeout_is_found_not_made_twice(void **state)
{
	struct env *e = *state;

	bfx_enqueue(e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	/* GitHub makes issue 3 and answers after the client gave up. */
	fake_http_push_delayed(e->gh, LATE_MS, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 1);  /* not looked for yet, not posted again */
	bfx_assert_request(e, 0, "POST", "/repos/my-org/alerts/issues", "alertbridge:key=" FP);

	/* The event waits in the queue until the create can no longer land. */
	waits_until_settled(e, e->now, "create@");
	assert_int_equal(bridge_step(e->b), 0);
	assert_int_equal(fake_http_count(e->gh), 1);

	/* Then its marker is looked for, found: the row takes issue 3, no second POST. */
	e->now += SETTLE_MS;
	fake_http_push(e->gh, 200, NULL, LISTED_3);
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 2);
	assert_string_equal(fake_http_request(e->gh, 1)->method, "GET");
	assert_non_null(strstr(fake_http_request(e->gh, 1)->uri,
			       "/repos/my-org/alerts/issues?state=all&sort=created"));
	bfx_assert_row(e, 3, NULL);
	assert_int_equal(store_pending_count(e->st, "bridge"), 0);
}

/* Looked for once settled and absent (GitHub never made it): posted then, once. */
static void create_in_doubt_but_absent_is_posted_after_the_look(void **state)
{
	struct env *e = *state;

	bfx_enqueue(e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e->gh, 502, NULL, "{\"message\":\"Server Error\"}");
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 1);
	waits_until_settled(e, e->now, "create@");
	e->now += SETTLE_MS;
	fake_http_push(e->gh, 200, NULL, "[]");
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(4, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 3);
	assert_string_equal(fake_http_request(e->gh, 1)->method, "GET");
	bfx_assert_request(e, 2, "POST", "/repos/my-org/alerts/issues", "alertbridge:key=" FP);
	bfx_assert_row(e, 4, NULL);
}

static void resolve_comment_made_after_the_timeout_is_not_posted_twice(void **state)
{
	struct env *e = *state;

	bfx_enqueue(e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);

	/* The resolve's comment: GitHub posts it and answers after the timeout. */
	bfx_enqueue(e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	fake_http_push_delayed(e->gh, LATE_MS, 201, NULL, "{\"id\":1}");
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 3);
	bfx_assert_request(e, 2, "POST", "/repos/my-org/alerts/issues/3/comments",
			   RESOLVED_MARKER);
	waits_until_settled(e, e->now, "close:0~@");
	assert_int_equal(bridge_step(e->b), 0);
	assert_int_equal(fake_http_count(e->gh), 3);

	/* Settled: the comment is on the issue, so only the close follows. */
	e->now += SETTLE_MS;
	bfx_step_finds_the_comment_and_closes(e);
}

/*
 * A comment GitHub refused (a locked issue's 403) was not posted: not in doubt.  After the
 * cause is lifted, `map retry` posts it at once, with no wait for it to settle and no look
 * (the model's seed 5 waited 11 s for a comment that never was).
 */
static void refused_comment_is_posted_again_without_a_wait(void **state)
{
	struct env *e = *state;
	int64_t n = 0;

	bfx_enqueue(e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);

	bfx_enqueue(e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	fake_http_push(e->gh, 403, NULL,
		       "{\"message\":\"Unable to create comment because issue is locked.\"}");
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 3);
	assert_int_equal(store_dead_count(e->st), 1);

	/* unlocked by a person; map retry: due at once, the comment posted, then the close */
	assert_int_equal(store_dead_requeue(e->st, "bridge", "default", FP, NULL, &n), ERR_OK);
	assert_int_equal(n, 1);
	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	fake_http_push(e->gh, 201, NULL, "{\"id\":2}");
	fake_http_push(e->gh, 200, NULL,
		       ISSUE_JSON(3, "closed", "\"completed\"", "\"2026-11-21T02:00:00Z\""));
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 6);
	bfx_assert_request(e, 4, "POST", "/repos/my-org/alerts/issues/3/comments",
			   RESOLVED_MARKER);
	bfx_assert_request(e, 5, "PATCH", "/repos/my-org/alerts/issues/3", "\"state\":\"closed\"");
	assert_int_equal(store_pending_count(e->st, "bridge"), 0);
}

/* While one alert's create is in doubt, the worker goes on with the others. */
static void doubt_waits_in_the_queue_not_the_worker(void **state)
{
	struct env *e = *state;

	bfx_enqueue(e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	bfx_enqueue_fp(e, FP2, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z",
		       "critical");
	fake_http_push(e->gh, 504, NULL, "");
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 1);
	/* the next step, at once: FP2's create */
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(5, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 2);
	bfx_assert_request(e, 1, "POST", "/repos/my-org/alerts/issues", "alertbridge:key=" FP2);
	assert_int_equal(store_pending_count(e->st, "bridge"), 1);
	assert_int_equal(bridge_step(e->b), 0);  /* FP waits for its create to settle */
}

/* The resolve of an open issue 3: its refresh, comment and close, after step 1 was count. */
static void resolve_applied(struct env *e, size_t count)
{
	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	fake_http_push(e->gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e->gh, 200, NULL,
		       ISSUE_JSON(3, "closed", "\"completed\"", "\"2026-11-21T02:00:00Z\""));
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), count + 3);
	bfx_assert_request(e, count, "GET", "/repos/my-org/alerts/issues/3", NULL);
	bfx_assert_request(e, count + 2, "PATCH", "/repos/my-org/alerts/issues/3",
			   "\"state\":\"closed\"");
	assert_int_equal(store_pending_count(e->st, "bridge"), 0);
}

/*
 * A restart after an unclean stop (the lock file named a serve that never
 * released it): a close the dead process sent may still land and would undo
 * a reopen made now, so nothing is sent (not even a read) before a write sent
 * at the restart could no longer land; then the events go on.
 */
static void unclean_start_holds_every_call_until_settled(void **state)
{
	struct env *e = *state;

	bfx_enqueue(e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);

	e->bo.settle_at_start = 1;
	bfx_bridge_restart(e, 0);
	assert_int_equal(bridge_settle_until(e->b), e->now + SETTLE_MS);
	bfx_enqueue(e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	assert_int_equal(bridge_step(e->b), 0);
	e->now += SETTLE_MS - 1;
	assert_int_equal(bridge_step(e->b), 0);
	assert_int_equal(fake_http_count(e->gh), 1);  /* nothing while held */
	assert_int_equal(store_pending_count(e->st, "bridge"), 1);

	e->now += 1;
	assert_int_equal(bridge_settle_until(e->b), 0);
	resolve_applied(e, 1);
}

/*
 * A shared queue (settle_on_gain) whose worker lock's grace was waited_ms:
 * the first step is the first gain, held SETTLE_MS - waited_ms with no call
 * (nothing before it); then the firing alert's issue is created.
 */
static void gain_then_create(struct env *e, int64_t waited_ms)
{
	e->bo.settle_on_gain = 1;
	e->bo.settle_gain_waited_ms = waited_ms;
	bfx_bridge_restart(e, 0);
	assert_int_equal(bridge_settle_until(e->b), 0);  /* nothing before the first gain */
	bfx_enqueue(e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	assert_int_equal(bridge_step(e->b), 0);
	assert_int_equal(bridge_settle_until(e->b), e->now + SETTLE_MS - waited_ms);
	assert_int_equal(fake_http_count(e->gh), 0);
	e->now += SETTLE_MS - waited_ms;
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 1);
}

/*
 * A shared queue (settle_on_gain): whoever acted before may have died
 * mid-write, so each gain of the right to act (the first too) holds likewise.
 * Without settle_on_gain (every other test here) nothing is held.
 */
static void gaining_the_lease_holds_until_settled(void **state)
{
	struct env *e = *state;

	gain_then_create(e, 0);

	/* Lost, then taken again: held again, from the gain. */
	bfx_enqueue(e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	e->leading = 0;
	assert_int_equal(bridge_step(e->b), 0);
	e->now += SETTLE_MS;
	e->leading = 1;
	assert_int_equal(bridge_step(e->b), 0);
	assert_int_equal(bridge_settle_until(e->b), e->now + SETTLE_MS);
	e->now += SETTLE_MS - 1;
	assert_int_equal(bridge_step(e->b), 0);
	assert_int_equal(fake_http_count(e->gh), 1);
	e->now += 1;
	resolve_applied(e, 1);
}

/*
 * The worker lock's grace (settle_gain_waited_ms) was waited before may_act
 * said yes: the hold after the gain is shorter by it, and none when the
 * grace covered the whole settle time.
 */
static void a_gain_after_a_grace_holds_only_the_rest(void **state)
{
	struct env *e = *state;

	gain_then_create(e, TIMEOUT_MS);

	e->bo.settle_gain_waited_ms = SETTLE_MS;  /* a grace as long as the settle time */
	bfx_bridge_restart(e, 0);
	bfx_enqueue(e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	resolve_applied(e, 1);
	assert_int_equal(bridge_settle_until(e->b), 0);
}

/* bridge_options.note_pending: the last text told, and the last one that named a write. */
static char told_last[512], told_write[512];

static void note_pending(void *ctx, const char *text)
{
	(void)ctx;
	snprintf(told_last, sizeof(told_last), "%s", text);
	if (*text)
		snprintf(told_write, sizeof(told_write), "%s", text);
}

/*
 * The previous process noted a write to issue 3 that may still land (its
 * lock file's note: bridge_options.pending_note).  The restart sends no
 * write to issue 3 before it settles; that event waits in the queue while
 * another alert's create goes on.  Its own writes are told for the next
 * note (note_pending): each before it is sent, nothing pending once
 * answered.
 */
static void restored_pending_write_holds_its_issue_only(void **state)
{
	struct env *e = *state;
	char note[128], want[128];

	bfx_enqueue(e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);

	snprintf(note, sizeof(note), "write %lld my-org/alerts#3\n  \n",
		 (long long)(e->now + SETTLE_MS));
	e->bo.pending_note = note;
	e->bo.note_pending = note_pending;
	bfx_bridge_restart(e, 0);
	assert_int_equal(bridge_settle_until(e->b), 0);  /* no hold of every write */
	bfx_enqueue(e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	bfx_enqueue_fp(e, FP2, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z",
		       "critical");
	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);  /* read, but its comment not sent */
	assert_int_equal(fake_http_count(e->gh), 2);
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(5, "open", "null", "null"));
	assert_int_equal(bridge_step(e->b), 1);
	bfx_assert_request(e, 2, "POST", "/repos/my-org/alerts/issues", "alertbridge:key=" FP2);
	assert_int_equal(bridge_step(e->b), 0);  /* FP waits for the write to settle */

	/* Settled: read again; its comment was noted as maybe sent, so looked for first. */
	e->now += SETTLE_MS;
	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	fake_http_push(e->gh, 200, NULL, "[]");
	fake_http_push(e->gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e->gh, 200, NULL,
		       ISSUE_JSON(3, "closed", "\"completed\"", "\"2026-11-21T02:00:00Z\""));
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 7);
	bfx_assert_request(e, 5, "POST", "/repos/my-org/alerts/issues/3/comments", NULL);
	bfx_assert_request(e, 6, "PATCH", "/repos/my-org/alerts/issues/3", "\"state\":\"closed\"");
	assert_int_equal(store_pending_count(e->st, "bridge"), 0);
	snprintf(want, sizeof(want), "write %lld my-org/alerts#3\n",
		 (long long)(e->now + SETTLE_MS));
	assert_string_equal(told_write, want);  /* the close, before it was sent */
	assert_string_equal(told_last, "");     /* answered: nothing pending */

	/* A note it cannot read: every write is held, as after an unclean stop. */
	e->bo.pending_note = "write soon my-org/alerts#3\n";
	bfx_bridge_restart(e, 0);
	assert_int_equal(bridge_settle_until(e->b), e->now + SETTLE_MS);
}

UNIT_MAIN(
	BFX_TEST_WITH(create_made_after_the_timeout_is_found_not_made_twice, &timeout_1s),
	BFX_TEST_WITH(create_in_doubt_but_absent_is_posted_after_the_look, &timeout_1s),
	BFX_TEST_WITH(resolve_comment_made_after_the_timeout_is_not_posted_twice, &timeout_1s),
	BFX_TEST_WITH(refused_comment_is_posted_again_without_a_wait, &timeout_1s),
	BFX_TEST_WITH(doubt_waits_in_the_queue_not_the_worker, &timeout_1s),
	BFX_TEST_WITH(unclean_start_holds_every_call_until_settled, &timeout_1s),
	BFX_TEST_WITH(gaining_the_lease_holds_until_settled, &timeout_1s),
	BFX_TEST_WITH(a_gain_after_a_grace_holds_only_the_rest, &timeout_1s),
	BFX_TEST_WITH(restored_pending_write_holds_its_issue_only, &timeout_1s))
