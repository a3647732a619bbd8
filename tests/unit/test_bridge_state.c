/*
 * test_bridge_state.c - the reconciler decides on the issue as GitHub has it
 * now, not as the map last saw it: a "nothing" that rests on a closed state
 * the map cached is checked against GitHub first (a person may have reopened
 * or deleted the issue since), a transition resumed from its progress note
 * reads the issue again, and a row written in dry-run gets its issue only
 * from a firing the row has not overtaken.  Against a scripted GitHub
 * (fake_http) and a real sqlite store, in virtual time (bridge_fixture.h).
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
#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "tests/unit/helpers/bridge_fixture.h"

#define S1 "2026-11-21T00:49:48.539Z"
#define E1 "2026-11-21T01:00:00Z"
#define S2 "2026-11-21T02:00:00Z"
#define E2 "2026-11-21T02:30:00Z"
#define NO_END "0001-01-01T00:00:00Z"
/* Issue 5 as a person closed it: won't fix. */
#define NOT_PLANNED_5 ISSUE_JSON(5, "closed", "\"not_planned\"", "\"2026-11-21T00:55:00Z\"")
#define FIRING_S2_MARKER "<!-- alertbridge:episode=2026-11-21T02:00:00.000Z event=firing -->"

/* Queue an event and handle it; fail unless GitHub then saw calls requests in all. */
static void step(struct env *e, const char *status, const char *starts, const char *ends,
		 size_t calls)
{
	bfx_enqueue(e, status, starts, ends);
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), calls);
	assert_int_equal(store_pending_count(e->st, "bridge"), 0);
	assert_int_equal(store_dead_count(e->st), 0);
}

/* FP's map row is state/state_reason (reason NULL: none). */
static void assert_row(struct env *e, int64_t number, const char *state, const char *reason)
{
	struct store_issue row = { 0 };

	bfx_get_row(e, &row);
	assert_int_equal(row.number, number);
	assert_string_equal(store_issue_state_str(row.state), state);
	if (reason)
		assert_string_equal(row.state_reason, reason);
	else
		assert_null(row.state_reason);
	store_issue_release(&row);
}

/* FP's episode starts resolves at ends: the step closes open issue n, as the row says. */
static void resolve_closes(struct env *e, const char *starts, const char *ends, int n)
{
	bfx_enqueue(e, "resolved", starts, ends);
	bfx_step_closes(e, n, 0);
	assert_row(e, n, "closed", "completed");
}

/*
 * On the fresh env e: a firing made issue 5; a person closed it as won't fix
 * (seen by the resolve's refresh).  The map now says closed/not_planned.
 */
static void start_not_planned(struct env *e)
{
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(5, "open", "null", "null"));
	step(e, "firing", S1, NO_END, 1);
	fake_http_push(e->gh, 200, NULL, NOT_PLANNED_5);
	step(e, "resolved", S1, E1, 2);
	assert_row(e, 5, "closed", "not_planned");
}

/* start_not_planned(), then a new episode fires: GitHub still has issue 5 won't fix. */
static void not_planned_fires_again(struct env *e)
{
	start_not_planned(e);
	fake_http_push(e->gh, 200, NULL, NOT_PLANNED_5);
	step(e, "firing", S2, NO_END, 3);
}

/*
 * A new episode of an issue the map says closed as not planned: GitHub is
 * asked first.  Still won't fix: nothing more.  A person reopened it since:
 * "firing again", and the next resolve (the map no longer caching the closed
 * state) closes it.  Repeats of the applied episode ask nothing.
 */
static void not_planned_reopened_by_a_person_is_seen(void **state)
{
	struct env *e = *state;

	not_planned_fires_again(e);
	bfx_assert_request(e, 2, "GET", "/repos/my-org/alerts/issues/5", NULL);
	assert_row(e, 5, "closed", "not_planned");
	step(e, "firing", S2, NO_END, 3); /* the same episode again: no call */
	bfx_env_stop(e);

	bfx_env_start(e, NULL, NULL);
	start_not_planned(e);
	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(5, "open", "\"reopened\"", "null"));
	fake_http_push(e->gh, 201, NULL, "{\"id\":1}");
	step(e, "firing", S2, NO_END, 4);
	bfx_assert_request(e, 2, "GET", "/repos/my-org/alerts/issues/5", NULL);
	bfx_assert_request(e, 3, "POST", "/repos/my-org/alerts/issues/5/comments",
			   FIRING_S2_MARKER);
	assert_row(e, 5, "open", "reopened");
	resolve_closes(e, S2, E2, 5);
}

/*
 * A resolve of a new episode whose issue the map says closed: the person who
 * closed it as won't fix reopened it since, so it is commented and closed.
 * When GitHub still has it closed, nothing is done; a repeat asks nothing.
 */
static void resolve_of_an_issue_the_map_says_closed_asks_github(void **state)
{
	struct env *e = *state;

	not_planned_fires_again(e);
	/* a person reopens issue 5 on GitHub; the alert resolves */
	resolve_closes(e, S2, E2, 5);
	step(e, "resolved", S2, E2, 6); /* applied already: no call */
	bfx_env_stop(e);

	bfx_env_start(e, NULL, NULL);
	not_planned_fires_again(e);
	fake_http_push(e->gh, 200, NULL, NOT_PLANNED_5);
	step(e, "resolved", S2, E2, 4);
	bfx_assert_request(e, 3, "GET", "/repos/my-org/alerts/issues/5", NULL);
	assert_row(e, 5, "closed", "not_planned");
}

/*
 * A person deleted the issue the map says closed as not planned: the new
 * episode finds it gone and makes a new issue.
 */
static void deleted_not_planned_issue_is_recreated(void **state)
{
	struct env *e = *state;

	start_not_planned(e);
	fake_http_push(e->gh, 404, NULL, "{\"message\":\"Not Found\"}");
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(6, "open", "null", "null"));
	step(e, "firing", S2, NO_END, 4);
	bfx_assert_request(e, 2, "GET", "/repos/my-org/alerts/issues/5", NULL);
	bfx_assert_request(e, 3, "POST", "/repos/my-org/alerts/issues", NULL);
	assert_row(e, 6, "open", NULL);
}

/*
 * The map says closed (a resolve closed issue 3); a person reopened it; the
 * next episode's "firing again" comment was in flight when the process died
 * (its progress note says the comment may be posted).  The resumed attempt
 * reads the issue again, so the map ends open as on GitHub, and the next
 * resolve closes it.
 */
static void resumed_comment_reads_the_issue_again(void **state)
{
	struct env *e = *state;

	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	step(e, "firing", S1, NO_END, 1);
	resolve_closes(e, S1, E1, 3);

	/* As a process killed during the comment leaves it (GitHub has the comment). */
	bfx_enqueue(e, "firing", S2, NO_END);
	bfx_note_progress(e, "comment_refire:0~");
	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(3, "open", "\"reopened\"", "null"));
	fake_http_push(e->gh, 200, NULL,
		       "[{\"id\":1,\"body\":\"again\\n\\n" FIRING_S2_MARKER "\","
		       "\"created_at\":\"2026-11-21T02:00:01Z\"}]");
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 6);
	bfx_assert_request(e, 4, "GET", "/repos/my-org/alerts/issues/3", NULL);
	assert_non_null(strstr(fake_http_request(e->gh, 5)->uri,
			       "/repos/my-org/alerts/issues/3/comments"));
	assert_int_equal(store_pending_count(e->st, "bridge"), 0);
	assert_row(e, 3, "open", "reopened");

	resolve_closes(e, S2, E2, 3);
}

/*
 * A close resumed after its comment (note "close:1") whose issue a person
 * deleted meanwhile: the resolve has no issue left to close; the event is
 * done, not retried for ever against the deleted issue.
 */
static void resumed_close_of_a_deleted_issue_ends(void **state)
{
	struct env *e = *state;

	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	step(e, "firing", S1, NO_END, 1);
	bfx_enqueue(e, "resolved", S1, E1);
	bfx_note_progress(e, "close:1");
	fake_http_push(e->gh, 404, NULL, "{\"message\":\"Not Found\"}");
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), 2);
	bfx_assert_request(e, 1, "GET", "/repos/my-org/alerts/issues/3", NULL);
	assert_int_equal(store_pending_count(e->st, "bridge"), 0);
	assert_int_equal(store_dead_count(e->st), 0);
}

/*
 * Dry-run made FP's row and closed it (issue 0, no issue on GitHub).  Live
 * again: a late copy of that episode's firing (stale, or the same episode)
 * creates nothing and asks nothing; a new episode looks for the issue by
 * marker, then creates it.
 */
static void dry_run_row_resolved_gets_an_issue_only_from_a_new_episode(void **state)
{
	struct env *e = *state;

	step(e, "firing", S1, NO_END, 0);
	step(e, "resolved", S1, E1, 0);
	assert_row(e, 0, "closed", "completed");
	bfx_bridge_restart(e, 0);
	step(e, "firing", S1, NO_END, 0);
	step(e, "resolved", S1, E1, 0);
	assert_row(e, 0, "closed", "completed");

	fake_http_push(e->gh, 200, NULL, "[]");
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(9, "open", "null", "null"));
	step(e, "firing", S2, NO_END, 2);
	assert_non_null(strstr(fake_http_request(e->gh, 0)->uri,
			       "/repos/my-org/alerts/issues?state=all&sort=created"));
	bfx_assert_request(e, 1, "POST", "/repos/my-org/alerts/issues", NULL);
	assert_row(e, 9, "open", NULL);
}

/*
 * Dry-run made FP's row and closed it; live, the new episode's create was
 * made but its answer lost (the retry finds the issue by marker): the issue
 * was made for this episode (its body's episode marker), so no "firing
 * again" comment follows on it.
 */
static void dry_run_row_takes_the_episode_of_the_issue_found(void **state)
{
	struct env *e = *state;
	struct store_issue row = { 0 };

	step(e, "firing", S1, NO_END, 0);
	step(e, "resolved", S1, E1, 0);
	bfx_bridge_restart(e, 0);
	fake_http_push(e->gh, 200, NULL,
		       "[{\"number\":9,\"state\":\"open\",\"state_reason\":null,"
		       "\"closed_at\":null,\"created_at\":\"2026-11-21T02:00:01Z\",\"body\":\"x"
		       "\\n\\n<!-- alertbridge:episode=2026-11-21T02:00:00.000Z -->\\n<!-- "
		       "alertbridge:receiver=default --> <!-- alertbridge:key=" FP " -->\","
		       "\"repository_url\":\"https://api.github.com/repos/my-org/alerts\"}]");
	step(e, "firing", S2, NO_END, 1);
	assert_row(e, 9, "open", NULL);
	bfx_get_row(e, &row);
	assert_int_equal(row.episode_starts_ms, INT64_C(1795226400000));
	store_issue_release(&row);
}

/*
 * Dry-run made FP's row, still firing: the same episode's next firing, live,
 * makes its issue (the alert fires by the row), once.
 */
static void dry_run_row_still_firing_gets_its_issue(void **state)
{
	struct env *e = *state;

	step(e, "firing", S1, NO_END, 0);
	bfx_bridge_restart(e, 0);
	fake_http_push(e->gh, 200, NULL, "[]");
	fake_http_push(e->gh, 201, NULL, ISSUE_JSON(9, "open", "null", "null"));
	step(e, "firing", S1, NO_END, 2);
	bfx_assert_request(e, 1, "POST", "/repos/my-org/alerts/issues", NULL);
	assert_row(e, 9, "open", NULL);
	step(e, "firing", S1, NO_END, 2);
}

static void deleted_issue_is_recreated(void **state)
{
	struct env *e = *state;

	BFX_RUN(e, CREATES(4), FIRE("2026-11-21T02:00:00Z"),
		GH(410, "{\"message\":\"This issue was deleted\"}"), GH_OPEN(201, 9), STEP(1),
		CALLS(3), SAW(2, "POST", "/repos/my-org/alerts/issues", "alertbridge:key=" FP));
	bfx_assert_row(e, 9, NULL);
}

/*
 * A resolve that finds its issue deleted (410) makes nothing, but the row records it: a late
 * copy of the resolved episode stays stale, and the next episode finds the issue gone and
 * makes a new one (a group rebuilt without its members went on in the row's episode and
 * fired with no issue: the lifecycle model's seed 90).
 */
static void resolve_of_a_deleted_issue_is_recorded(void **state)
{
	struct env *e = *state;

	BFX_RUN(e, CREATES(4), LATER(60000), RESOLVE(EP1, "2026-11-21T01:00:00Z"),
		GH(410, "{\"message\":\"This issue was deleted\"}"), STEP(1), CALLS(2));
	bfx_assert_row(e, 4, "closed");
	BFX_RUN(e, FIRE(EP1), STEP(1), CALLS(2));  /* a late copy: stale, no call */
	BFX_RUN(e, FIRE("2026-11-21T02:00:00Z"),
		GH(410, "{\"message\":\"This issue was deleted\"}"), GH_OPEN(201, 9), STEP(1), CALLS(4),
		SAW(3, "POST", "/repos/my-org/alerts/issues", "alertbridge:key=" FP));
	bfx_assert_row(e, 9, "open");
}

/* The setup of the tests that start in dry-run (bfx_setup()). */
static const struct bfx_setup dry_run = { .extra_github = "  dry_run: true\n" };

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	BFX_TEST(not_planned_reopened_by_a_person_is_seen),
	BFX_TEST(resolve_of_an_issue_the_map_says_closed_asks_github),
	BFX_TEST(deleted_not_planned_issue_is_recreated),
	BFX_TEST(deleted_issue_is_recreated),
	BFX_TEST(resolve_of_a_deleted_issue_is_recorded),
	BFX_TEST(resumed_comment_reads_the_issue_again),
	BFX_TEST(resumed_close_of_a_deleted_issue_ends),
	BFX_TEST_WITH(dry_run_row_resolved_gets_an_issue_only_from_a_new_episode, &dry_run),
	BFX_TEST_WITH(dry_run_row_takes_the_episode_of_the_issue_found, &dry_run),
	BFX_TEST_WITH(dry_run_row_still_firing_gets_its_issue, &dry_run))
