/* test_issue.c - the issue state machine (every row of the table, a full
 * sequence) and the issue text rules: marker, title, body, hash, repo. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "bridge/issue.h"
#include "core/utf8.h"
#include "core/xalloc.h"

#define MIN_MS (60 * 1000LL)
#define HOUR_MS (60 * MIN_MS)
#define DAY_MS (24 * HOUR_MS)
#define T0 1700000000000LL /* 2023-11-14T22:13:20Z */

/* ---- helpers ---- */

static void row_init(struct store_issue *row, const char *state, const char *reason,
		     int64_t episode, int64_t resolved, int64_t closed_at)
{
	memset(row, 0, sizeof(*row));
	row->receiver = xstrdup("default");
	row->key = xstrdup("0123456789abcdef");
	row->repo = xstrdup("my-org/cluster-alerts");
	row->number = 42;
	assert_int_equal(store_issue_state_parse(state, &row->state), ERR_OK);
	row->state_reason = xstrdup(reason);
	row->episode_starts_ms = episode;
	row->resolved_ends_ms = resolved;
	row->closed_at_ms = closed_at;
	row->created_at_ms = T0 - DAY_MS;
	row->updated_at_ms = T0 - DAY_MS;
}

static void row_free(struct store_issue *row)
{
	store_issue_release(row);
	memset(row, 0, sizeof(*row));
}

static const struct issue_policy close_7d = { 1, 7 * DAY_MS };
static const struct issue_policy keep_open_7d = { 0, 7 * DAY_MS };

static struct issue_event firing(int64_t starts)
{
	struct issue_event ev = { 1, starts, 0 };
	return ev;
}

static struct issue_event resolved(int64_t starts, int64_t ends)
{
	struct issue_event ev = { 0, starts, ends };
	return ev;
}

static void expect_plan(const struct store_issue *row, struct issue_event ev,
			const struct issue_policy *pol, int64_t now, enum issue_action want,
			const char *want_why)
{
	const char *why = NULL;
	enum issue_action got = issue_plan(row, &ev, pol, now, &why);

	assert_string_equal(issue_action_str(got), issue_action_str(want));
	assert_non_null(why);
	assert_string_equal(why, want_why);
}

/* ---- issue_plan: firing ---- */

static void firing_without_row_creates(void **state)
{
	(void)state;
	expect_plan(NULL, firing(T0), &close_7d, T0, ISSUE_CREATE, "no issue for the alert yet");
}

static void firing_same_episode_does_nothing(void **state)
{
	struct store_issue open, closed;
	(void)state;
	row_init(&open, "open", NULL, T0, 0, 0);
	row_init(&closed, "closed", "completed", T0, 0, T0 + MIN_MS);
	expect_plan(&open, firing(T0), &close_7d, T0 + HOUR_MS, ISSUE_NOTHING, "same episode");
	/* A person closed it during the episode: respected. */
	expect_plan(&closed, firing(T0), &close_7d, T0 + HOUR_MS, ISSUE_NOTHING,
		    "same episode");
	row_free(&open);
	row_free(&closed);
}

static void firing_older_episode_is_stale(void **state)
{
	struct store_issue open, closed;
	(void)state;
	row_init(&open, "open", NULL, T0, 0, 0);
	row_init(&closed, "closed", "completed", T0, T0 + HOUR_MS, T0 + HOUR_MS);
	expect_plan(&open, firing(T0 - 1), &close_7d, T0 + DAY_MS, ISSUE_NOTHING, "stale event");
	expect_plan(&closed, firing(T0 - HOUR_MS), &close_7d, T0 + DAY_MS, ISSUE_NOTHING,
		    "stale event");
	row_free(&open);
	row_free(&closed);
}

static void firing_inside_resolved_episode_is_stale(void **state)
{
	struct store_issue row;
	(void)state;
	/* Episode T0 resolved at T0+1h: a firing that starts inside it is not new. */
	row_init(&row, "closed", "completed", T0, T0 + HOUR_MS, T0 + HOUR_MS);
	expect_plan(&row, firing(T0 + MIN_MS), &close_7d, T0 + 2 * HOUR_MS, ISSUE_NOTHING,
		    "started before the applied resolve ended");
	/* Starting exactly when the last one ended is a new episode. */
	expect_plan(&row, firing(T0 + HOUR_MS), &close_7d, T0 + 2 * HOUR_MS, ISSUE_REOPEN,
		    "closed within reopen_window");
	row_free(&row);
}

static void firing_new_episode_open_comments(void **state)
{
	struct store_issue row, no_state;
	(void)state;
	row_init(&row, "open", NULL, T0, 0, 0);
	expect_plan(&row, firing(T0 + HOUR_MS), &close_7d, T0 + HOUR_MS, ISSUE_COMMENT_REFIRE,
		    "new episode, issue open");
	/* auto_close off: resolved earlier, still open, fires again. */
	row.resolved_ends_ms = T0 + MIN_MS;
	expect_plan(&row, firing(T0 + HOUR_MS), &keep_open_7d, T0 + HOUR_MS,
		    ISSUE_COMMENT_REFIRE, "new episode, issue open");
	/* A zeroed state counts as open. */
	row_init(&no_state, "closed", NULL, T0, 0, 0);
	memset(&no_state.state, 0, sizeof(no_state.state));
	expect_plan(&no_state, firing(T0 + HOUR_MS), &close_7d, T0 + HOUR_MS,
		    ISSUE_COMMENT_REFIRE, "new episode, issue open");
	row_free(&row);
	row_free(&no_state);
}

static void firing_new_episode_closed_within_window_reopens(void **state)
{
	struct store_issue row, no_reason;
	int64_t closed_at = T0 + HOUR_MS;
	(void)state;
	row_init(&row, "closed", "completed", T0, closed_at, closed_at);
	expect_plan(&row, firing(T0 + DAY_MS), &close_7d, T0 + DAY_MS, ISSUE_REOPEN,
		    "closed within reopen_window");
	/* The window's last millisecond is still inside it. */
	expect_plan(&row, firing(T0 + DAY_MS), &close_7d, closed_at + 7 * DAY_MS, ISSUE_REOPEN,
		    "closed within reopen_window");
	/* Closed without a reason (older GitHub): reopened too. */
	row_init(&no_reason, "closed", NULL, T0, 0, closed_at);
	expect_plan(&no_reason, firing(T0 + DAY_MS), &close_7d, T0 + DAY_MS, ISSUE_REOPEN,
		    "closed within reopen_window");
	row_free(&row);
	row_free(&no_reason);
}

static void firing_new_episode_closed_long_ago_creates_linked(void **state)
{
	struct store_issue row, unknown;
	int64_t closed_at = T0 + HOUR_MS;
	(void)state;
	row_init(&row, "closed", "completed", T0, closed_at, closed_at);
	expect_plan(&row, firing(T0 + 8 * DAY_MS), &close_7d, closed_at + 7 * DAY_MS + 1,
		    ISSUE_CREATE_LINKED, "closed longer ago than reopen_window");
	/* A zero window never reopens after the close's own millisecond. */
	{
		const struct issue_policy never = { 1, 0 };
		expect_plan(&row, firing(T0 + DAY_MS), &never, closed_at + 1, ISSUE_CREATE_LINKED,
			    "closed longer ago than reopen_window");
	}
	/* Closed at an unknown time: a new linked issue. */
	row_init(&unknown, "closed", "completed", T0, 0, 0);
	expect_plan(&unknown, firing(T0 + DAY_MS), &close_7d, T0 + DAY_MS, ISSUE_CREATE_LINKED,
		    "closed longer ago than reopen_window");
	row_free(&row);
	row_free(&unknown);
}

static void firing_not_planned_left_alone_within_window(void **state)
{
	struct store_issue row, dup;
	int64_t closed_at = T0 + HOUR_MS;
	(void)state;
	row_init(&row, "closed", "not_planned", T0, 0, closed_at);
	expect_plan(&row, firing(T0 + DAY_MS), &close_7d, T0 + DAY_MS, ISSUE_NOTHING,
		    "closed as not planned");
	expect_plan(&row, firing(T0 + DAY_MS), &close_7d, closed_at + 7 * DAY_MS, ISSUE_NOTHING,
		    "closed as not planned");
	/* After the window: a new issue that links the won't-fix one. */
	expect_plan(&row, firing(T0 + 9 * DAY_MS), &close_7d, T0 + 9 * DAY_MS,
		    ISSUE_CREATE_LINKED, "closed longer ago than reopen_window");
	row_init(&dup, "closed", "duplicate", T0, 0, closed_at);
	expect_plan(&dup, firing(T0 + DAY_MS), &close_7d, T0 + DAY_MS, ISSUE_NOTHING,
		    "closed as duplicate");
	row_free(&row);
	row_free(&dup);
}

/* ---- issue_plan: resolved ---- */

static void resolved_without_row_does_nothing(void **state)
{
	(void)state;
	expect_plan(NULL, resolved(T0, T0 + HOUR_MS), &close_7d, T0 + HOUR_MS, ISSUE_NOTHING,
		    "no issue for the alert");
}

static void resolved_open_closes_or_comments(void **state)
{
	struct store_issue row;
	(void)state;
	row_init(&row, "open", NULL, T0, 0, 0);
	expect_plan(&row, resolved(T0, T0 + HOUR_MS), &close_7d, T0 + HOUR_MS, ISSUE_CLOSE,
		    "resolved, auto_close on");
	expect_plan(&row, resolved(T0, T0 + HOUR_MS), &keep_open_7d, T0 + HOUR_MS,
		    ISSUE_COMMENT_RESOLVED, "resolved, auto_close off");
	/* The resolve of an episode newer than the row's (its firing was lost). */
	expect_plan(&row, resolved(T0 + DAY_MS, T0 + 2 * DAY_MS), &close_7d, T0 + 2 * DAY_MS,
		    ISSUE_CLOSE, "resolved, auto_close on");
	/* Reopened by us earlier: still open, closes again. */
	free(row.state_reason);
	row.state_reason = xstrdup("reopened");
	row.resolved_ends_ms = T0 - DAY_MS;
	expect_plan(&row, resolved(T0, T0 + HOUR_MS), &close_7d, T0 + HOUR_MS, ISSUE_CLOSE,
		    "resolved, auto_close on");
	row_free(&row);
}

static void resolved_closed_does_nothing(void **state)
{
	struct store_issue row;
	(void)state;
	row_init(&row, "closed", "not_planned", T0, 0, T0 + MIN_MS);
	expect_plan(&row, resolved(T0, T0 + HOUR_MS), &close_7d, T0 + HOUR_MS, ISSUE_NOTHING,
		    "issue already closed");
	row_free(&row);
}

/* A "nothing" that only the closed state gives is told apart from repeats and stale events. */
static void plan_rests_on_closed_only_for_new_transitions(void **state)
{
	struct store_issue row;
	(void)state;
	row_init(&row, "closed", "not_planned", T0, T0 + HOUR_MS, T0 + 2 * HOUR_MS);
	/* a new episode within the window, a new resolve: an open issue would get a call */
	assert_true(issue_plan_rests_on_closed(&row, &(struct issue_event){ 1, T0 + DAY_MS, 0 },
					       &close_7d, T0 + DAY_MS));
	assert_true(issue_plan_rests_on_closed(
		&row, &(struct issue_event){ 0, T0 + DAY_MS, T0 + 2 * DAY_MS }, &close_7d,
		T0 + 2 * DAY_MS));
	/* the same episode, the applied resolve, stale events: nothing either way */
	assert_false(issue_plan_rests_on_closed(&row, &(struct issue_event){ 1, T0, 0 },
						&close_7d, T0 + DAY_MS));
	assert_false(issue_plan_rests_on_closed(
		&row, &(struct issue_event){ 0, T0, T0 + HOUR_MS }, &close_7d, T0 + DAY_MS));
	assert_false(issue_plan_rests_on_closed(&row, &(struct issue_event){ 1, T0 - 1, 0 },
						&close_7d, T0 + DAY_MS));
	/* an action already (reopen of a completed issue), an open row, no row */
	free(row.state_reason);
	row.state_reason = xstrdup("completed");
	assert_false(issue_plan_rests_on_closed(&row, &(struct issue_event){ 1, T0 + DAY_MS, 0 },
						&close_7d, T0 + DAY_MS));
	row.state = STORE_ISSUE_OPEN;
	assert_false(issue_plan_rests_on_closed(
		&row, &(struct issue_event){ 0, T0 + DAY_MS, T0 + 2 * DAY_MS }, &close_7d,
		T0 + 2 * DAY_MS));
	assert_false(issue_plan_rests_on_closed(NULL, &(struct issue_event){ 1, T0, 0 },
						&close_7d, T0));
	row_free(&row);
}

/* A firing counts against a row from the row's episode on, not before its applied resolve. */
static void firing_current_from_the_episode_not_before_its_resolve(void **state)
{
	struct store_issue row;
	(void)state;
	row_init(&row, "open", NULL, T0, 0, 0);
	assert_true(issue_firing_current(&row, &(struct issue_event){ 1, T0, 0 }));
	assert_true(issue_firing_current(&row, &(struct issue_event){ 1, T0 + DAY_MS, 0 }));
	assert_false(issue_firing_current(&row, &(struct issue_event){ 1, T0 - 1, 0 }));
	assert_false(issue_firing_current(&row, &(struct issue_event){ 0, T0, T0 + HOUR_MS }));
	row.resolved_ends_ms = T0 + HOUR_MS; /* resolved: its episode's copies are late */
	assert_false(issue_firing_current(&row, &(struct issue_event){ 1, T0, 0 }));
	assert_false(issue_firing_current(&row, &(struct issue_event){ 1, T0 + MIN_MS, 0 }));
	assert_true(issue_firing_current(&row, &(struct issue_event){ 1, T0 + HOUR_MS, 0 }));
	row_free(&row);
}

static void resolved_older_episode_is_stale(void **state)
{
	struct store_issue row;
	(void)state;
	/* Firing again since T0+1d; the late resolve of episode T0 must not close it. */
	row_init(&row, "open", "reopened", T0 + DAY_MS, T0 + HOUR_MS, 0);
	expect_plan(&row, resolved(T0, T0 + HOUR_MS), &close_7d, T0 + DAY_MS, ISSUE_NOTHING,
		    "stale event");
	expect_plan(&row, resolved(T0, T0 + 2 * DAY_MS), &close_7d, T0 + DAY_MS, ISSUE_NOTHING,
		    "stale event");
	/* Same episode, but ending before the resolve already applied. */
	row.episode_starts_ms = T0;
	expect_plan(&row, resolved(T0, T0 + MIN_MS), &keep_open_7d, T0 + DAY_MS, ISSUE_NOTHING,
		    "stale event");
	row_free(&row);
}

static void resolved_repeat_does_nothing(void **state)
{
	struct store_issue row;
	(void)state;
	/* auto_close off: the resolve comment was made once for this episode. */
	row_init(&row, "open", NULL, T0, T0 + HOUR_MS, 0);
	expect_plan(&row, resolved(T0, T0 + HOUR_MS), &keep_open_7d, T0 + 2 * HOUR_MS,
		    ISSUE_NOTHING, "resolve already applied");
	expect_plan(&row, resolved(T0, T0 + HOUR_MS), &close_7d, T0 + 2 * HOUR_MS,
		    ISSUE_NOTHING, "resolve already applied");
	row_free(&row);
}

static void resolved_without_ends_at_uses_starts_at(void **state)
{
	struct store_issue row;
	struct issue_event ev = resolved(T0, 0);
	(void)state;
	row_init(&row, "open", NULL, T0, 0, 0);
	expect_plan(&row, ev, &keep_open_7d, T0 + HOUR_MS, ISSUE_COMMENT_RESOLVED,
		    "resolved, auto_close off");
	issue_apply(&row, ISSUE_COMMENT_RESOLVED, &ev, T0 + HOUR_MS);
	assert_int_equal(row.resolved_ends_ms, T0);
	expect_plan(&row, ev, &keep_open_7d, T0 + HOUR_MS, ISSUE_NOTHING,
		    "resolve already applied");
	row_free(&row);
}

static void plan_accepts_null_why(void **state)
{
	struct issue_event ev = firing(T0);
	(void)state;
	assert_int_equal(issue_plan(NULL, &ev, &close_7d, T0, NULL), ISSUE_CREATE);
}

static void action_names(void **state)
{
	(void)state;
	assert_string_equal(issue_action_str(ISSUE_NOTHING), "nothing");
	assert_string_equal(issue_action_str(ISSUE_CREATE), "create");
	assert_string_equal(issue_action_str(ISSUE_COMMENT_REFIRE), "comment_refire");
	assert_string_equal(issue_action_str(ISSUE_REOPEN), "reopen");
	assert_string_equal(issue_action_str(ISSUE_CREATE_LINKED), "create_linked");
	assert_string_equal(issue_action_str(ISSUE_CLOSE), "close");
	assert_string_equal(issue_action_str(ISSUE_COMMENT_RESOLVED), "comment_resolved");
}

/* ---- issue_apply ---- */

static void apply_create_fills_a_fresh_row(void **state)
{
	struct store_issue row;
	struct issue_event ev = firing(T0);
	(void)state;
	memset(&row, 0, sizeof(row));
	issue_apply(&row, ISSUE_CREATE, &ev, T0 + 5);
	assert_int_equal(row.state, STORE_ISSUE_OPEN);
	assert_null(row.state_reason);
	assert_int_equal(row.episode_starts_ms, T0);
	assert_int_equal(row.resolved_ends_ms, 0);
	assert_int_equal(row.closed_at_ms, 0);
	assert_int_equal(row.previous_number, 0);
	assert_int_equal(row.created_at_ms, T0 + 5);
	assert_int_equal(row.updated_at_ms, T0 + 5);
	row_free(&row);
}

static void apply_create_linked_remembers_previous(void **state)
{
	struct store_issue row;
	struct issue_event ev = firing(T0 + 30 * DAY_MS);
	(void)state;
	row_init(&row, "closed", "not_planned", T0, T0 + HOUR_MS, T0 + HOUR_MS);
	issue_apply(&row, ISSUE_CREATE_LINKED, &ev, T0 + 30 * DAY_MS);
	assert_int_equal(row.previous_number, 42);
	assert_int_equal(row.number, 0);
	assert_int_equal(row.state, STORE_ISSUE_OPEN);
	assert_null(row.state_reason);
	assert_int_equal(row.episode_starts_ms, T0 + 30 * DAY_MS);
	assert_int_equal(row.resolved_ends_ms, 0);
	assert_int_equal(row.closed_at_ms, 0);
	assert_int_equal(row.created_at_ms, T0 + 30 * DAY_MS);
	assert_string_equal(row.repo, "my-org/cluster-alerts");
	row_free(&row);
}

static void apply_refire_reopen_close_comment(void **state)
{
	struct store_issue row;
	struct issue_event fire2 = firing(T0 + DAY_MS);
	struct issue_event res2 = resolved(T0 + DAY_MS, T0 + 2 * DAY_MS);
	(void)state;
	row_init(&row, "open", NULL, T0, 0, 0);
	issue_apply(&row, ISSUE_COMMENT_REFIRE, &fire2, T0 + DAY_MS);
	assert_int_equal(row.episode_starts_ms, T0 + DAY_MS);
	assert_int_equal(row.state, STORE_ISSUE_OPEN);
	assert_int_equal(row.updated_at_ms, T0 + DAY_MS);

	issue_apply(&row, ISSUE_COMMENT_RESOLVED, &res2, T0 + 2 * DAY_MS);
	assert_int_equal(row.resolved_ends_ms, T0 + 2 * DAY_MS);
	assert_int_equal(row.state, STORE_ISSUE_OPEN);
	assert_int_equal(row.closed_at_ms, 0);

	issue_apply(&row, ISSUE_CLOSE, &res2, T0 + 3 * DAY_MS);
	assert_int_equal(row.state, STORE_ISSUE_CLOSED);
	assert_string_equal(row.state_reason, "completed");
	assert_int_equal(row.closed_at_ms, T0 + 3 * DAY_MS);
	assert_int_equal(row.updated_at_ms, T0 + 3 * DAY_MS);

	{
		struct issue_event fire3 = firing(T0 + 4 * DAY_MS);
		issue_apply(&row, ISSUE_REOPEN, &fire3, T0 + 4 * DAY_MS);
		assert_int_equal(row.state, STORE_ISSUE_OPEN);
		assert_string_equal(row.state_reason, "reopened");
		assert_int_equal(row.closed_at_ms, 0);
		assert_int_equal(row.episode_starts_ms, T0 + 4 * DAY_MS);
		assert_int_equal(row.resolved_ends_ms, T0 + 2 * DAY_MS);
		assert_int_equal(row.number, 42);
	}
	row_free(&row);
}

static void apply_close_of_newer_episode_raises_episode(void **state)
{
	struct store_issue row;
	struct issue_event ev = resolved(T0 + DAY_MS, T0 + 2 * DAY_MS);
	(void)state;
	row_init(&row, "open", NULL, T0, 0, 0);
	issue_apply(&row, ISSUE_CLOSE, &ev, T0 + 2 * DAY_MS);
	assert_int_equal(row.episode_starts_ms, T0 + DAY_MS);
	assert_int_equal(row.resolved_ends_ms, T0 + 2 * DAY_MS);
	/* The late firing of that episode is now "same episode". */
	expect_plan(&row, firing(T0 + DAY_MS), &close_7d, T0 + 2 * DAY_MS, ISSUE_NOTHING,
		    "same episode");
	row_free(&row);
}

static void apply_nothing_records_what_was_seen(void **state)
{
	struct store_issue row;
	struct issue_event same = firing(T0), stale = firing(T0 - DAY_MS);
	struct issue_event newer = firing(T0 + DAY_MS);
	struct issue_event res = resolved(T0 + DAY_MS, T0 + 2 * DAY_MS);
	struct issue_event old_res = resolved(T0, T0 + HOUR_MS);
	(void)state;
	row_init(&row, "closed", "not_planned", T0, 0, T0 + HOUR_MS);

	/* Repeats and stale events change nothing, not even updated_at. */
	issue_apply(&row, ISSUE_NOTHING, &same, T0 + DAY_MS);
	issue_apply(&row, ISSUE_NOTHING, &stale, T0 + DAY_MS);
	assert_int_equal(row.episode_starts_ms, T0);
	assert_int_equal(row.updated_at_ms, T0 - DAY_MS);

	/* A new episode left alone (not planned) becomes the current one. */
	issue_apply(&row, ISSUE_NOTHING, &newer, T0 + DAY_MS);
	assert_int_equal(row.episode_starts_ms, T0 + DAY_MS);
	assert_int_equal(row.updated_at_ms, T0 + DAY_MS);
	assert_int_equal(row.state, STORE_ISSUE_CLOSED);
	assert_string_equal(row.state_reason, "not_planned");
	assert_int_equal(row.closed_at_ms, T0 + HOUR_MS);

	/* A resolve of the closed issue is remembered; an older one is not. */
	issue_apply(&row, ISSUE_NOTHING, &res, T0 + 2 * DAY_MS);
	assert_int_equal(row.resolved_ends_ms, T0 + 2 * DAY_MS);
	issue_apply(&row, ISSUE_NOTHING, &old_res, T0 + 3 * DAY_MS);
	assert_int_equal(row.resolved_ends_ms, T0 + 2 * DAY_MS);
	assert_int_equal(row.episode_starts_ms, T0 + DAY_MS);
	assert_int_equal(row.updated_at_ms, T0 + 2 * DAY_MS);

	issue_apply(NULL, ISSUE_NOTHING, &res, T0); /* no row: no-op */
	row_free(&row);
}

/*
 * Drive plan + apply through a whole life: fire, repeat, resolve, repeat
 * resolve, fire again within the window (reopen), resolve, fire again after
 * the window (create linked), with stale events interleaved.
 */
struct step {
	int firing;
	int64_t starts, ends, now;
	enum issue_action want;
	const char *why;
};

static void sequence_fire_resolve_reopen_link(void **state)
{
	const int64_t e1 = T0, r1 = T0 + HOUR_MS;
	const int64_t e2 = T0 + 2 * DAY_MS, r2 = e2 + 3 * HOUR_MS;
	const int64_t e3 = r2 + 10 * DAY_MS, r3 = e3 + HOUR_MS;
	const struct step steps[] = {
		{ 1, e1, 0, e1 + 10, ISSUE_CREATE, "no issue for the alert yet" },
		{ 1, e1, 0, e1 + 4 * MIN_MS, ISSUE_NOTHING, "same episode" },   /* repeat */
		{ 1, e1, 0, e1 + 5 * MIN_MS, ISSUE_NOTHING, "same episode" },   /* HA peer */
		{ 0, e1, r1, r1 + 10, ISSUE_CLOSE, "resolved, auto_close on" },
		{ 0, e1, r1, r1 + MIN_MS, ISSUE_NOTHING, "resolve already applied" },
		{ 1, e1, 0, r1 + 2 * MIN_MS, ISSUE_NOTHING, "same episode" },  /* late firing */
		{ 1, e2, 0, e2 + 10, ISSUE_REOPEN, "closed within reopen_window" },
		{ 0, e1, r1, e2 + MIN_MS, ISSUE_NOTHING, "stale event" },       /* late resolve */
		{ 1, e1, 0, e2 + MIN_MS, ISSUE_NOTHING, "stale event" },        /* late firing */
		{ 1, e2, 0, e2 + HOUR_MS, ISSUE_NOTHING, "same episode" },
		{ 0, e2, r2, r2 + 10, ISSUE_CLOSE, "resolved, auto_close on" },
		{ 0, e2, r2, r2 + MIN_MS, ISSUE_NOTHING, "resolve already applied" },
		{ 0, e1, r1, r2 + MIN_MS, ISSUE_NOTHING, "stale event" },
		{ 1, e3, 0, e3 + 10, ISSUE_CREATE_LINKED, "closed longer ago than reopen_window" },
		{ 1, e2, 0, e3 + MIN_MS, ISSUE_NOTHING, "stale event" },
		{ 0, e2, r2, e3 + MIN_MS, ISSUE_NOTHING, "stale event" },
		{ 0, e3, r3, r3 + 10, ISSUE_CLOSE, "resolved, auto_close on" },
		{ 0, e3, r3, r3 + 20, ISSUE_NOTHING, "resolve already applied" },
	};
	struct store_issue row;
	int have_row = 0;
	int64_t next_number = 100;
	(void)state;

	memset(&row, 0, sizeof(row));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step *s = &steps[i];
		struct issue_event ev = { s->firing, s->starts, s->ends };
		const char *why = NULL;
		const struct store_issue *cur = have_row ? &row : NULL;
		enum issue_action a = issue_plan(cur, &ev, &close_7d, s->now, &why);

		print_message("step %zu: %s (%s)\n", i, issue_action_str(a), why);
		assert_string_equal(issue_action_str(a), issue_action_str(s->want));
		assert_string_equal(why, s->why);
		if (!have_row && a == ISSUE_NOTHING)
			continue;
		issue_apply(&row, a, &ev, s->now);
		if (a == ISSUE_CREATE || a == ISSUE_CREATE_LINKED)
			row.number = next_number++; /* what the caller does with GitHub's answer */
		have_row = 1;
	}
	assert_int_equal(row.number, 101);
	assert_int_equal(row.previous_number, 100);
	assert_int_equal(row.state, STORE_ISSUE_CLOSED);
	assert_string_equal(row.state_reason, "completed");
	assert_int_equal(row.episode_starts_ms, e3);
	assert_int_equal(row.resolved_ends_ms, r3);
	assert_int_equal(row.closed_at_ms, r3 + 10);
	row_free(&row);
}

static void sequence_auto_close_off_comments_once_per_episode(void **state)
{
	const struct step steps[] = {
		{ 1, T0, 0, T0, ISSUE_CREATE, "no issue for the alert yet" },
		{ 0, T0, T0 + HOUR_MS, T0 + HOUR_MS, ISSUE_COMMENT_RESOLVED,
		  "resolved, auto_close off" },
		{ 0, T0, T0 + HOUR_MS, T0 + 2 * HOUR_MS, ISSUE_NOTHING, "resolve already applied" },
		{ 1, T0 + DAY_MS, 0, T0 + DAY_MS, ISSUE_COMMENT_REFIRE, "new episode, issue open" },
		{ 0, T0, T0 + HOUR_MS, T0 + DAY_MS, ISSUE_NOTHING, "stale event" },
		{ 0, T0 + DAY_MS, T0 + DAY_MS + HOUR_MS, T0 + DAY_MS + HOUR_MS,
		  ISSUE_COMMENT_RESOLVED, "resolved, auto_close off" },
	};
	struct store_issue row;
	(void)state;

	memset(&row, 0, sizeof(row));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const struct step *s = &steps[i];
		struct issue_event ev = { s->firing, s->starts, s->ends };
		const char *why = NULL;
		enum issue_action a = issue_plan(i ? &row : NULL, &ev, &keep_open_7d, s->now, &why);

		print_message("step %zu: %s (%s)\n", i, issue_action_str(a), why);
		assert_string_equal(issue_action_str(a), issue_action_str(s->want));
		assert_string_equal(why, s->why);
		issue_apply(&row, a, &ev, s->now);
	}
	assert_int_equal(row.state, STORE_ISSUE_OPEN);
	assert_int_equal(row.resolved_ends_ms, T0 + DAY_MS + HOUR_MS);
	row_free(&row);
}

/* ---- marker ---- */

static void marker_format_and_round_trip(void **state)
{
	struct buf m = BUF_INIT, key = BUF_INIT;
	(void)state;
	issue_marker("0123456789abcdef", &m);
	assert_string_equal(buf_str(&m), "<!-- alertbridge:key=0123456789abcdef -->");
	assert_int_equal(issue_marker_parse(buf_str(&m), &key), 1);
	assert_string_equal(buf_str(&key), "0123456789abcdef");
	buf_release(&m);
	buf_release(&key);
}

static void marker_parse_takes_the_last_and_tolerates_edits(void **state)
{
	struct buf key = BUF_INIT;
	(void)state;
	assert_int_equal(issue_marker_parse("quoting <!-- alertbridge:key=aaaa --> here\r\n\r\n"
					    "<!--alertbridge:key=bbbb\r\n-->\r\n",
					    &key),
			 1);
	assert_string_equal(buf_str(&key), "bbbb");
	/* A broken one after a good one does not hide the good one. */
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key=cccc -->\n<!-- alertbridge:key=",
					    &key),
			 1);
	assert_string_equal(buf_str(&key), "cccc");
	buf_release(&key);
}

static void marker_parse_rejects_malformed(void **state)
{
	struct buf key = BUF_INIT;
	char long_key[200];
	(void)state;
	buf_adds(&key, "untouched");
	assert_int_equal(issue_marker_parse(NULL, &key), 0);
	assert_int_equal(issue_marker_parse("", &key), 0);
	assert_int_equal(issue_marker_parse("no marker at all", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key= -->", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key=ab", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key=a b -->", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key=a\"><script> -->", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- other:key=abcd -->", &key), 0);
	memset(long_key, 'a', sizeof(long_key));
	memcpy(long_key, "<!-- alertbridge:key=", 21);
	snprintf(long_key + 21 + 129, sizeof(long_key) - 21 - 129, " -->"); /* 129-char key */
	assert_int_equal(issue_marker_parse(long_key, &key), 0);
	assert_string_equal(buf_str(&key), "untouched");
	snprintf(long_key + 21 + 128, sizeof(long_key) - 21 - 128, " -->"); /* 128: allowed */
	assert_int_equal(issue_marker_parse(long_key, &key), 1);
	assert_int_equal(key.len, 128);
	buf_release(&key);
}

/* The receiver's marker: encoded, parsed back, and the old form read as "no receiver". */
/* The markers a rebuild folds: the newest episode, and its resolve when applied. */
static void episode_fold_reads_the_newest_transition(void **state)
{
	struct issue_episode_seen seen = { 0 };
	(void)state;

	issue_episode_fold(NULL, &seen);
	issue_episode_fold("no marker", &seen);
	assert_int_equal(seen.starts_ms, 0);
	/* the body (no transition), then its comments in any order */
	issue_episode_fold("b\n\n<!-- alertbridge:episode=2026-11-21T00:00:00.000Z -->", &seen);
	assert_int_equal(seen.starts_ms, INT64_C(1795219200000));
	assert_int_equal(seen.resolved_ends_ms, 0);
	issue_episode_fold("resolved <!-- alertbridge:episode=2026-11-21T00:00:00.000Z "
			   "event=resolved-1795220000000 -->", &seen);
	assert_int_equal(seen.resolved_ends_ms, INT64_C(1795220000000));
	/* an older episode's transitions change nothing */
	issue_episode_fold("<!-- alertbridge:episode=2026-11-20T00:00:00.000Z "
			   "event=resolved-1795300000000 -->", &seen);
	assert_int_equal(seen.starts_ms, INT64_C(1795219200000));
	assert_int_equal(seen.resolved_ends_ms, INT64_C(1795220000000));
	/* the firing of the same episode keeps its resolve: the resolve comes last */
	issue_episode_fold("<!-- alertbridge:episode=2026-11-21T00:00:00.000Z event=firing -->",
			   &seen);
	assert_int_equal(seen.resolved_ends_ms, INT64_C(1795220000000));
	/* a newer episode: its resolve is not known yet */
	issue_episode_fold("firing again <!-- alertbridge:episode=2026-11-21T01:00:00.000Z "
			   "event=firing -->", &seen);
	assert_int_equal(seen.starts_ms, INT64_C(1795222800000));
	assert_int_equal(seen.resolved_ends_ms, 0);
	/* an endsAt of 0 or before startsAt ends at startsAt; a malformed one is no resolve */
	issue_episode_fold("<!-- alertbridge:episode=2026-11-21T01:00:00.000Z event=resolved-x -->"
			   "<!-- alertbridge:episode=2026-11-21T01:00:00.000Z event=resolved-12-->",
			   &seen);
	assert_int_equal(seen.resolved_ends_ms, 0);
	issue_episode_fold("<!-- alertbridge:episode=2026-11-21T01:00:00.000Z event=resolved-0 -->",
			   &seen);
	assert_int_equal(seen.resolved_ends_ms, INT64_C(1795222800000));
}

static void marker_names_the_receiver(void **state)
{
	struct buf m = BUF_INIT, key = BUF_INIT, rcv = BUF_INIT;
	(void)state;
	issue_marker_receiver("team a/b%", "0123456789abcdef", &m);
	assert_string_equal(buf_str(&m), "<!-- alertbridge:receiver=team%20a%2Fb%25 --> "
			    "<!-- alertbridge:key=0123456789abcdef -->");
	assert_int_equal(issue_marker_parse_receiver(buf_str(&m), &rcv, &key), 1);
	assert_string_equal(buf_str(&rcv), "team a/b%");
	assert_string_equal(buf_str(&key), "0123456789abcdef");
	/* old readers still find the key */
	buf_reset(&key);
	assert_int_equal(issue_marker_parse(buf_str(&m), &key), 1);
	assert_string_equal(buf_str(&key), "0123456789abcdef");
	/* edited on GitHub: line breaks between and inside the two */
	assert_int_equal(issue_marker_parse_receiver("x\r\n<!--alertbridge:receiver=ops\r\n-->"
						     "\r\n<!-- alertbridge:key=k1 -->\r\n",
						     &rcv, &key), 1);
	assert_string_equal(buf_str(&rcv), "ops");
	assert_string_equal(buf_str(&key), "k1");
	/* the old form, and a receiver marker not next to the key marker: no receiver */
	assert_int_equal(issue_marker_parse_receiver("b\n\n<!-- alertbridge:key=k2 -->", &rcv,
						     &key), 1);
	assert_string_equal(buf_str(&rcv), "");
	assert_string_equal(buf_str(&key), "k2");
	buf_adds(&rcv, "x");
	assert_int_equal(issue_marker_parse_receiver("<!-- alertbridge:receiver=ops --> text "
						     "<!-- alertbridge:key=k3 -->", &rcv, &key), 1);
	assert_string_equal(buf_str(&rcv), "");
	/* a malformed escape, or an empty receiver: no receiver */
	assert_int_equal(issue_marker_parse_receiver("<!-- alertbridge:receiver=a%2 --> "
						     "<!-- alertbridge:key=k4 -->", &rcv, &key), 1);
	assert_string_equal(buf_str(&rcv), "");
	assert_int_equal(issue_marker_parse_receiver("<!-- alertbridge:receiver=a%00 --> "
						     "<!-- alertbridge:key=k4 -->", &rcv, &key), 1);
	assert_string_equal(buf_str(&rcv), "");
	assert_int_equal(issue_marker_parse_receiver("<!-- alertbridge:receiver= --> "
						     "<!-- alertbridge:key=k5 -->", &rcv, &key), 1);
	assert_string_equal(buf_str(&rcv), "");
	/* no key marker: nothing changes */
	buf_adds(&rcv, "kept");
	assert_int_equal(issue_marker_parse_receiver("<!-- alertbridge:receiver=ops -->", &rcv,
						     &key), 0);
	assert_string_equal(buf_str(&rcv), "kept");
	assert_string_equal(buf_str(&key), "k5");
	/* '~' is unreserved (RFC 3986, curl_easy_escape): kept; the older %7E still read */
	buf_reset(&m);
	issue_marker_receiver("a~b", "k7", &m);
	assert_string_equal(buf_str(&m), "<!-- alertbridge:receiver=a~b --> "
			    "<!-- alertbridge:key=k7 -->");
	assert_int_equal(issue_marker_parse_receiver(buf_str(&m), &rcv, &key), 1);
	assert_string_equal(buf_str(&rcv), "a~b");
	assert_int_equal(issue_marker_parse_receiver("<!-- alertbridge:receiver=a%7Eb --> "
						     "<!-- alertbridge:key=k7 -->", &rcv, &key), 1);
	assert_string_equal(buf_str(&rcv), "a~b");
	/* no receiver: the old form */
	buf_reset(&m);
	issue_marker_receiver(NULL, "k6", &m);
	assert_string_equal(buf_str(&m), "<!-- alertbridge:key=k6 -->");
	buf_release(&m);
	buf_release(&key);
	buf_release(&rcv);
}

/* ---- title ---- */

static void expect_title(const char *raw, const char *want)
{
	struct buf out = BUF_INIT;
	issue_title_clean(raw, &out);
	assert_string_equal(buf_str(&out), want);
	buf_release(&out);
}

static void title_first_non_empty_line_trimmed(void **state)
{
	(void)state;
	expect_title("GPU idle on node-7", "GPU idle on node-7");
	expect_title("\n   \n\t[FIRING:1] HighLoad  \nsecond line", "[FIRING:1] HighLoad");
	expect_title("  \r\nfirst\rsecond", "first");
	expect_title("first\xe2\x80\xa8second", "first");       /* U+2028 */
	expect_title("\xe2\x80\xa9 first", "first");             /* U+2029 */
	expect_title("a\tb", "a b");
}

static void title_controls_removed(void **state)
{
	(void)state;
	expect_title("a\x01" "b\x1b[31mc\x7f" "d", "ab[31mcd");
	expect_title("x\xc2\x85y\xc2\x9f" "z\xc2\xa0!", "xyz\xc2\xa0!"); /* C1 out, NBSP kept */
	expect_title("\x01\x02 \x03", "alert");
	expect_title("caf\xc3\xa9 \xf0\x9f\x94\xa5", "caf\xc3\xa9 \xf0\x9f\x94\xa5");
}

static void title_invalid_utf8_replaced(void **state)
{
	(void)state;
	expect_title("bad\xff" "byte", "bad\xef\xbf\xbd" "byte");
	expect_title("cut\xe2\x82", "cut\xef\xbf\xbd\xef\xbf\xbd");
	expect_title("\xc0\xaf", "\xef\xbf\xbd\xef\xbf\xbd"); /* overlong '/' */
}

static void title_empty_falls_back(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;
	expect_title("", "alert");
	expect_title(NULL, "alert");
	expect_title(" \n\t\r\n  ", "alert");
	/* Appends to what out holds. */
	buf_adds(&out, "T: ");
	issue_title_clean("x", &out);
	assert_string_equal(buf_str(&out), "T: x");
	buf_release(&out);
}

/* Number of code points in the valid UTF-8 string s. */
static size_t cps(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

static void title_cut_at_256_code_points(void **state)
{
	struct buf raw = BUF_INIT, out = BUF_INIT;
	(void)state;

	/* Exactly 256 ASCII: kept whole. */
	for (int i = 0; i < 256; i++)
		buf_addch(&raw, (char)('a' + i % 26));
	issue_title_clean(buf_str(&raw), &out);
	assert_int_equal(out.len, 256);
	assert_string_equal(buf_str(&out), buf_str(&raw));

	/* 257: 255 kept and "…". */
	buf_addch(&raw, 'z');
	buf_reset(&out);
	issue_title_clean(buf_str(&raw), &out);
	assert_int_equal(cps(buf_str(&out)), 256);
	assert_memory_equal(out.data, raw.data, 255);
	assert_string_equal(out.data + 255, "\xe2\x80\xa6");

	/* 300 two-byte characters: cut between characters, valid UTF-8. */
	buf_reset(&raw);
	for (int i = 0; i < 300; i++)
		buf_adds(&raw, "\xc3\xa9");
	buf_reset(&out);
	issue_title_clean(buf_str(&raw), &out);
	assert_int_equal(cps(buf_str(&out)), 256);
	assert_int_equal(out.len, 255 * 2 + 3);
	assert_true(utf8_valid(out.data, out.len));

	/* Four-byte characters and a space right before the cut. */
	buf_reset(&raw);
	for (int i = 0; i < 254; i++)
		buf_adds(&raw, "\xf0\x9f\x94\xa5");
	buf_adds(&raw, " tail of the title");
	buf_reset(&out);
	issue_title_clean(buf_str(&raw), &out);
	assert_int_equal(out.len, 254 * 4 + 3);
	assert_int_equal(cps(buf_str(&out)), 255);
	assert_true(utf8_valid(out.data, out.len));

	/* 256 characters followed by trailing spaces: trimmed, not cut. */
	buf_reset(&raw);
	for (int i = 0; i < 256; i++)
		buf_addch(&raw, 'x');
	buf_adds(&raw, "     \n");
	buf_reset(&out);
	issue_title_clean(buf_str(&raw), &out);
	assert_int_equal(out.len, 256);
	assert_null(strstr(buf_str(&out), "\xe2\x80\xa6"));
	buf_release(&raw);
	buf_release(&out);
}

/* ---- body ---- */

static void body_fits_unchanged(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;
	issue_body_fit("Alert **fired**.", "<!-- alertbridge:key=ab -->", &out);
	assert_string_equal(buf_str(&out), "Alert **fired**.\n\n<!-- alertbridge:key=ab -->");
	buf_reset(&out);
	issue_body_fit("a comment", NULL, &out);
	assert_string_equal(buf_str(&out), "a comment");
	buf_reset(&out);
	issue_body_fit(NULL, "<!-- alertbridge:key=ab -->", &out);
	assert_string_equal(buf_str(&out), "\n\n<!-- alertbridge:key=ab -->");
	buf_release(&out);
}

/* The N of "... N bytes omitted)_" in s, or -1. */
static long omitted(const char *s)
{
	const char *p = strstr(s, "\n\n_(truncated by alertbridge: ");
	char *end = NULL;
	long n;

	if (!p)
		return -1;
	n = strtol(p + strlen("\n\n_(truncated by alertbridge: "), &end, 10);
	return strncmp(end, " bytes omitted)_", 16) == 0 ? n : -1;
}

static void body_at_the_limit_is_kept_one_more_is_cut(void **state)
{
	const char *marker = "<!-- alertbridge:key=0123456789abcdef -->";
	size_t fit = ISSUE_BODY_MAX_BYTES - 2 - strlen(marker);
	char *body = xmalloc(fit + 2);
	struct buf out = BUF_INIT;
	(void)state;

	memset(body, 'b', fit + 1);
	body[fit] = '\0';
	issue_body_fit(body, marker, &out);
	assert_int_equal(out.len, ISSUE_BODY_MAX_BYTES);
	assert_int_equal(omitted(buf_str(&out)), -1);

	body[fit] = 'b';
	body[fit + 1] = '\0';
	buf_reset(&out);
	issue_body_fit(body, marker, &out);
	assert_true(out.len <= ISSUE_BODY_MAX_BYTES);
	assert_true(omitted(buf_str(&out)) > 0);
	free(body);
	buf_release(&out);
}

static void body_of_70000_bytes_is_cut_with_note(void **state)
{
	const char *marker = "<!-- alertbridge:key=0123456789abcdef -->";
	const size_t n = 70000;
	char *body = xmalloc(n + 1);
	struct buf out = BUF_INIT, want_tail = BUF_INIT;
	size_t kept;
	long gone;
	(void)state;

	memset(body, 'x', n);
	body[n] = '\0';
	issue_body_fit(body, marker, &out);
	assert_true(out.len <= ISSUE_BODY_MAX_BYTES);
	assert_true(out.len >= ISSUE_BODY_MAX_BYTES - 1); /* the budget is used, not wasted */
	gone = omitted(buf_str(&out));
	kept = (size_t)(strstr(buf_str(&out), "\n\n_(truncated") - out.data);
	assert_int_equal((size_t)gone + kept, n);
	buf_printf(&want_tail, "\n\n_(truncated by alertbridge: %ld bytes omitted)_\n\n%s", gone,
		   marker);
	assert_string_equal(out.data + kept, buf_str(&want_tail));
	free(body);
	buf_release(&out);
	buf_release(&want_tail);
}

static void body_cut_on_utf8_boundary(void **state)
{
	const char *marker = "<!-- alertbridge:key=0123456789abcdef -->";
	struct buf body = BUF_INIT, out = BUF_INIT;
	size_t kept;
	(void)state;

	/* "€" is 3 bytes; try each of the 3 alignments against the cut point. */
	for (int shift = 0; shift < 3; shift++) {
		buf_reset(&body);
		for (int i = 0; i < shift; i++)
			buf_addch(&body, 'a');
		for (int i = 0; i < 23400; i++)
			buf_adds(&body, "\xe2\x82\xac");
		buf_reset(&out);
		issue_body_fit(buf_str(&body), marker, &out);
		assert_true(out.len <= ISSUE_BODY_MAX_BYTES);
		assert_true(utf8_valid(out.data, out.len));
		kept = (size_t)(strstr(buf_str(&out), "\n\n_(truncated") - out.data);
		assert_int_equal((kept - (size_t)shift) % 3, 0);
		assert_int_equal(kept + (size_t)omitted(buf_str(&out)), body.len);
		assert_int_equal(strcmp(out.data + out.len - strlen(marker), marker), 0);
	}
	buf_release(&body);
	buf_release(&out);
}

static void comment_without_marker_is_cut_with_note(void **state)
{
	char *body = xmalloc(70001);
	struct buf out = BUF_INIT;
	const char *end;
	(void)state;

	memset(body, 'c', 70000);
	body[70000] = '\0';
	issue_body_fit(body, NULL, &out);
	assert_true(out.len <= ISSUE_BODY_MAX_BYTES);
	end = out.data + out.len - strlen(" bytes omitted)_");
	assert_string_equal(end, " bytes omitted)_");
	assert_null(strstr(buf_str(&out), "<!--"));
	free(body);
	buf_release(&out);
}

/* ---- group key hash ---- */

static void group_key_hash_is_sha256_hex(void **state)
{
	char out[65];
	(void)state;
	issue_group_key_hash("abc", out);
	assert_string_equal(out,
			    "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	issue_group_key_hash("", out);
	assert_string_equal(out,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	issue_group_key_hash(NULL, out);
	assert_string_equal(out,
			    "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
}

/* ---- repo names ---- */

static void repo_valid_accepts_github_names(void **state)
{
	struct buf err = BUF_INIT;
	char owner39[64], name100[128];
	(void)state;
	assert_int_equal(issue_repo_valid("my-org/cluster-alerts", &err), ERR_OK);
	assert_int_equal(issue_repo_valid("a/b", &err), ERR_OK);
	assert_int_equal(issue_repo_valid("octocat_acme/x.y_z-1", &err), ERR_OK);
	assert_int_equal(issue_repo_valid("o/.github", NULL), ERR_OK);
	memset(owner39, 'o', 39);
	snprintf(owner39 + 39, sizeof(owner39) - 39, "/r");
	assert_int_equal(issue_repo_valid(owner39, &err), ERR_OK);
	memcpy(name100, "o/", 2);
	memset(name100 + 2, 'n', 100);
	name100[102] = '\0';
	assert_int_equal(issue_repo_valid(name100, &err), ERR_OK);
	assert_string_equal(buf_str(&err), "");
	buf_release(&err);
}

static void expect_bad_repo(const char *repo, const char *want)
{
	struct buf err = BUF_INIT;
	assert_int_equal(issue_repo_valid(repo, &err), ERR_INVALID);
	assert_string_equal(buf_str(&err), want);
	assert_int_equal(issue_repo_valid(repo, NULL), ERR_INVALID);
	buf_release(&err);
}

static void repo_valid_rejects_with_reason(void **state)
{
	char owner40[64], name101[128];
	(void)state;
	expect_bad_repo(NULL, "repo is empty: want owner/name");
	expect_bad_repo("", "repo is empty: want owner/name");
	expect_bad_repo("noslash", "repo \"noslash\": want owner/name");
	expect_bad_repo("a/b/c", "repo \"a/b/c\": want owner/name");
	expect_bad_repo("/b", "repo \"/b\": owner must be 1-39 characters");
	expect_bad_repo("a/", "repo \"a/\": name must be 1-100 characters");
	memset(owner40, 'o', 40);
	snprintf(owner40 + 40, sizeof(owner40) - 40, "/r");
	{
		struct buf err = BUF_INIT;
		assert_int_equal(issue_repo_valid(owner40, &err), ERR_INVALID);
		assert_non_null(strstr(buf_str(&err), "o/r\": owner must be 1-39 characters"));
		buf_release(&err);
	}
	memcpy(name101, "o/", 2);
	memset(name101 + 2, 'n', 101);
	name101[103] = '\0';
	{
		struct buf err = BUF_INIT;
		assert_int_equal(issue_repo_valid(name101, &err), ERR_INVALID);
		assert_non_null(strstr(buf_str(&err), "\": name must be 1-100 characters"));
		buf_release(&err);
	}
	expect_bad_repo("-a/b", "repo \"-a/b\": owner may hold only letters, digits, '-' and "
				"'_', and not start with '-'");
	expect_bad_repo("a b/c", "repo \"a b/c\": owner may hold only letters, digits, '-' and "
				 "'_', and not start with '-'");
	expect_bad_repo("a/b?x=1", "repo \"a/b?x=1\": name may hold only letters, digits, '.', "
				   "'-' and '_', and not be \".\" or \"..\"");
	expect_bad_repo("a/..", "repo \"a/..\": name may hold only letters, digits, '.', '-' and "
				"'_', and not be \".\" or \"..\"");
	expect_bad_repo("a/.", "repo \"a/.\": name may hold only letters, digits, '.', '-' and "
			       "'_', and not be \".\" or \"..\"");
	expect_bad_repo("a/b%2e", "repo \"a/b%2e\": name may hold only letters, digits, '.', '-' "
				  "and '_', and not be \".\" or \"..\"");
}

UNIT_MAIN(
	cmocka_unit_test(firing_without_row_creates),
	cmocka_unit_test(firing_same_episode_does_nothing),
	cmocka_unit_test(firing_older_episode_is_stale),
	cmocka_unit_test(firing_inside_resolved_episode_is_stale),
	cmocka_unit_test(firing_new_episode_open_comments),
	cmocka_unit_test(firing_new_episode_closed_within_window_reopens),
	cmocka_unit_test(firing_new_episode_closed_long_ago_creates_linked),
	cmocka_unit_test(firing_not_planned_left_alone_within_window),
	cmocka_unit_test(resolved_without_row_does_nothing),
	cmocka_unit_test(resolved_open_closes_or_comments),
	cmocka_unit_test(resolved_closed_does_nothing),
	cmocka_unit_test(plan_rests_on_closed_only_for_new_transitions),
	cmocka_unit_test(firing_current_from_the_episode_not_before_its_resolve),
	cmocka_unit_test(resolved_older_episode_is_stale),
	cmocka_unit_test(resolved_repeat_does_nothing),
	cmocka_unit_test(resolved_without_ends_at_uses_starts_at),
	cmocka_unit_test(plan_accepts_null_why),
	cmocka_unit_test(action_names),
	cmocka_unit_test(apply_create_fills_a_fresh_row),
	cmocka_unit_test(apply_create_linked_remembers_previous),
	cmocka_unit_test(apply_refire_reopen_close_comment),
	cmocka_unit_test(apply_close_of_newer_episode_raises_episode),
	cmocka_unit_test(apply_nothing_records_what_was_seen),
	cmocka_unit_test(sequence_fire_resolve_reopen_link),
	cmocka_unit_test(sequence_auto_close_off_comments_once_per_episode),
	cmocka_unit_test(marker_format_and_round_trip),
	cmocka_unit_test(marker_parse_takes_the_last_and_tolerates_edits),
	cmocka_unit_test(marker_parse_rejects_malformed),
	cmocka_unit_test(marker_names_the_receiver),
	cmocka_unit_test(episode_fold_reads_the_newest_transition),
	cmocka_unit_test(title_first_non_empty_line_trimmed),
	cmocka_unit_test(title_controls_removed),
	cmocka_unit_test(title_invalid_utf8_replaced),
	cmocka_unit_test(title_empty_falls_back),
	cmocka_unit_test(title_cut_at_256_code_points),
	cmocka_unit_test(body_fits_unchanged),
	cmocka_unit_test(body_at_the_limit_is_kept_one_more_is_cut),
	cmocka_unit_test(body_of_70000_bytes_is_cut_with_note),
	cmocka_unit_test(body_cut_on_utf8_boundary),
	cmocka_unit_test(comment_without_marker_is_cut_with_note),
	cmocka_unit_test(group_key_hash_is_sha256_hex),
	cmocka_unit_test(repo_valid_accepts_github_names),
	cmocka_unit_test(repo_valid_rejects_with_reason))
