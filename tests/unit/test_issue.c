/* test_issue.c - the issue state machine: every row of the table, a full sequence.
 * The marker is test_issue_marker.c's, the issue text rules test_issue_text.c's. */
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

/* ---- issue_plan: the table ---- */

/* A map row as a case gives it; state NULL: no row; ZEROED: a zeroed state (counts as open). */
struct row_spec {
	const char *state, *reason;
	int64_t episode, resolved, closed_at;
};
#define NO_ROW { NULL, NULL, 0, 0, 0 }
#define ZEROED ""

/* One issue_plan() case: the row, the event, the policy and the time; what it must plan. */
struct plan_case {
	const char *name;
	struct row_spec row;
	struct issue_event ev;
	const struct issue_policy *pol;
	int64_t now;
	enum issue_action want;
	const char *why;
};

#define FIRING(starts) { 1, starts, 0 }
#define RESOLVED(starts, ends) { 0, starts, ends }
#define CLOSED_AT (T0 + HOUR_MS) /* when the closed rows of the window cases were closed */

static const struct issue_policy never_reopen = { 1, 0 };

static const struct plan_case plan_cases[] = {
	/* ---- firing ---- */
	{ "firing without row creates", NO_ROW, FIRING(T0), &close_7d, T0, ISSUE_CREATE,
	  "no issue for the alert yet" },
	{ "firing same episode does nothing", { "open", NULL, T0, 0, 0 }, FIRING(T0), &close_7d,
	  T0 + HOUR_MS, ISSUE_NOTHING, "same episode" },
	/* A person closed it during the episode: respected. */
	{ "firing same episode, closed by a person", { "closed", "completed", T0, 0, T0 + MIN_MS },
	  FIRING(T0), &close_7d, T0 + HOUR_MS, ISSUE_NOTHING, "same episode" },
	{ "firing older episode is stale (open)", { "open", NULL, T0, 0, 0 }, FIRING(T0 - 1),
	  &close_7d, T0 + DAY_MS, ISSUE_NOTHING, "stale event" },
	{ "firing older episode is stale (closed)",
	  { "closed", "completed", T0, T0 + HOUR_MS, T0 + HOUR_MS }, FIRING(T0 - HOUR_MS),
	  &close_7d, T0 + DAY_MS, ISSUE_NOTHING, "stale event" },
	/* Episode T0 resolved at T0+1h: a firing that starts inside it is not new. */
	{ "firing inside resolved episode is stale",
	  { "closed", "completed", T0, T0 + HOUR_MS, T0 + HOUR_MS }, FIRING(T0 + MIN_MS), &close_7d,
	  T0 + 2 * HOUR_MS, ISSUE_NOTHING, "started before the applied resolve ended" },
	/* Starting exactly when the last one ended is a new episode. */
	{ "firing when the resolved episode ended is new",
	  { "closed", "completed", T0, T0 + HOUR_MS, T0 + HOUR_MS }, FIRING(T0 + HOUR_MS),
	  &close_7d, T0 + 2 * HOUR_MS, ISSUE_REOPEN, "closed within reopen_window" },
	{ "firing new episode open comments", { "open", NULL, T0, 0, 0 }, FIRING(T0 + HOUR_MS),
	  &close_7d, T0 + HOUR_MS, ISSUE_COMMENT_REFIRE, "new episode, issue open" },
	/* auto_close off: resolved earlier, still open, fires again. */
	{ "firing new episode open comments, auto_close off", { "open", NULL, T0, T0 + MIN_MS, 0 },
	  FIRING(T0 + HOUR_MS), &keep_open_7d, T0 + HOUR_MS, ISSUE_COMMENT_REFIRE,
	  "new episode, issue open" },
	/* A zeroed state counts as open. */
	{ "firing new episode, zeroed state comments", { ZEROED, NULL, T0, 0, 0 },
	  FIRING(T0 + HOUR_MS), &close_7d, T0 + HOUR_MS, ISSUE_COMMENT_REFIRE,
	  "new episode, issue open" },
	{ "firing new episode closed within window reopens",
	  { "closed", "completed", T0, CLOSED_AT, CLOSED_AT }, FIRING(T0 + DAY_MS), &close_7d,
	  T0 + DAY_MS, ISSUE_REOPEN, "closed within reopen_window" },
	/* The window's last millisecond is still inside it. */
	{ "firing new episode at the window's last ms reopens",
	  { "closed", "completed", T0, CLOSED_AT, CLOSED_AT }, FIRING(T0 + DAY_MS), &close_7d,
	  CLOSED_AT + 7 * DAY_MS, ISSUE_REOPEN, "closed within reopen_window" },
	/* Closed without a reason (older GitHub): reopened too. */
	{ "firing new episode closed without reason reopens", { "closed", NULL, T0, 0, CLOSED_AT },
	  FIRING(T0 + DAY_MS), &close_7d, T0 + DAY_MS, ISSUE_REOPEN,
	  "closed within reopen_window" },
	{ "firing new episode closed long ago creates linked",
	  { "closed", "completed", T0, CLOSED_AT, CLOSED_AT }, FIRING(T0 + 8 * DAY_MS), &close_7d,
	  CLOSED_AT + 7 * DAY_MS + 1, ISSUE_CREATE_LINKED, "closed longer ago than reopen_window" },
	/* A zero window never reopens after the close's own millisecond. */
	{ "firing new episode, zero window, creates linked",
	  { "closed", "completed", T0, CLOSED_AT, CLOSED_AT }, FIRING(T0 + DAY_MS), &never_reopen,
	  CLOSED_AT + 1, ISSUE_CREATE_LINKED, "closed longer ago than reopen_window" },
	/* Closed at an unknown time: a new linked issue. */
	{ "firing new episode closed at an unknown time creates linked",
	  { "closed", "completed", T0, 0, 0 }, FIRING(T0 + DAY_MS), &close_7d, T0 + DAY_MS,
	  ISSUE_CREATE_LINKED, "closed longer ago than reopen_window" },
	{ "firing not planned left alone within window",
	  { "closed", "not_planned", T0, 0, CLOSED_AT }, FIRING(T0 + DAY_MS), &close_7d,
	  T0 + DAY_MS, ISSUE_NOTHING, "closed as not planned" },
	{ "firing not planned left alone at the window's last ms",
	  { "closed", "not_planned", T0, 0, CLOSED_AT }, FIRING(T0 + DAY_MS), &close_7d,
	  CLOSED_AT + 7 * DAY_MS, ISSUE_NOTHING, "closed as not planned" },
	/* After the window: a new issue that links the won't-fix one. */
	{ "firing not planned after the window creates linked",
	  { "closed", "not_planned", T0, 0, CLOSED_AT }, FIRING(T0 + 9 * DAY_MS), &close_7d,
	  T0 + 9 * DAY_MS, ISSUE_CREATE_LINKED, "closed longer ago than reopen_window" },
	{ "firing duplicate left alone within window", { "closed", "duplicate", T0, 0, CLOSED_AT },
	  FIRING(T0 + DAY_MS), &close_7d, T0 + DAY_MS, ISSUE_NOTHING, "closed as duplicate" },

	/* ---- resolved ---- */
	{ "resolved without row does nothing", NO_ROW, RESOLVED(T0, T0 + HOUR_MS), &close_7d,
	  T0 + HOUR_MS, ISSUE_NOTHING, "no issue for the alert" },
	{ "resolved open closes", { "open", NULL, T0, 0, 0 }, RESOLVED(T0, T0 + HOUR_MS), &close_7d,
	  T0 + HOUR_MS, ISSUE_CLOSE, "resolved, auto_close on" },
	{ "resolved open comments, auto_close off", { "open", NULL, T0, 0, 0 },
	  RESOLVED(T0, T0 + HOUR_MS), &keep_open_7d, T0 + HOUR_MS, ISSUE_COMMENT_RESOLVED,
	  "resolved, auto_close off" },
	/* The resolve of an episode newer than the row's (its firing was lost). */
	{ "resolved newer episode closes", { "open", NULL, T0, 0, 0 },
	  RESOLVED(T0 + DAY_MS, T0 + 2 * DAY_MS), &close_7d, T0 + 2 * DAY_MS, ISSUE_CLOSE,
	  "resolved, auto_close on" },
	/* Reopened by us earlier: still open, closes again. */
	{ "resolved reopened closes again", { "open", "reopened", T0, T0 - DAY_MS, 0 },
	  RESOLVED(T0, T0 + HOUR_MS), &close_7d, T0 + HOUR_MS, ISSUE_CLOSE,
	  "resolved, auto_close on" },
	{ "resolved closed does nothing", { "closed", "not_planned", T0, 0, T0 + MIN_MS },
	  RESOLVED(T0, T0 + HOUR_MS), &close_7d, T0 + HOUR_MS, ISSUE_NOTHING,
	  "issue already closed" },
	/* Firing again since T0+1d; the late resolve of episode T0 must not close it. */
	{ "resolved older episode is stale", { "open", "reopened", T0 + DAY_MS, T0 + HOUR_MS, 0 },
	  RESOLVED(T0, T0 + HOUR_MS), &close_7d, T0 + DAY_MS, ISSUE_NOTHING, "stale event" },
	{ "resolved older episode ending later is stale",
	  { "open", "reopened", T0 + DAY_MS, T0 + HOUR_MS, 0 }, RESOLVED(T0, T0 + 2 * DAY_MS),
	  &close_7d, T0 + DAY_MS, ISSUE_NOTHING, "stale event" },
	/* Same episode, but ending before the resolve already applied. */
	{ "resolved ending before the applied resolve is stale",
	  { "open", "reopened", T0, T0 + HOUR_MS, 0 }, RESOLVED(T0, T0 + MIN_MS), &keep_open_7d,
	  T0 + DAY_MS, ISSUE_NOTHING, "stale event" },
	/* auto_close off: the resolve comment was made once for this episode. */
	{ "resolved repeat does nothing, auto_close off", { "open", NULL, T0, T0 + HOUR_MS, 0 },
	  RESOLVED(T0, T0 + HOUR_MS), &keep_open_7d, T0 + 2 * HOUR_MS, ISSUE_NOTHING,
	  "resolve already applied" },
	{ "resolved repeat does nothing", { "open", NULL, T0, T0 + HOUR_MS, 0 },
	  RESOLVED(T0, T0 + HOUR_MS), &close_7d, T0 + 2 * HOUR_MS, ISSUE_NOTHING,
	  "resolve already applied" },
};

/* Every case of plan_cases: the action and the reason; a failure names the case. */
static void plan_table(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(plan_cases) / sizeof(plan_cases[0]); i++) {
		const struct plan_case *c = &plan_cases[i];
		const struct row_spec *r = &c->row;
		struct store_issue row;
		const char *why = NULL;
		enum issue_action got;

		if (r->state) {
			row_init(&row, *r->state ? r->state : "closed", r->reason, r->episode,
				 r->resolved, r->closed_at);
			if (!*r->state)
				memset(&row.state, 0, sizeof(row.state));
		}
		got = issue_plan(r->state ? &row : NULL, &c->ev, c->pol, c->now, &why);
		if (got != c->want || !why || strcmp(why, c->why))
			fail_msg("case \"%s\": %s (%s), want %s (%s)", c->name,
				 issue_action_str(got), why ? why : "no reason",
				 issue_action_str(c->want), c->why);
		if (r->state)
			row_free(&row);
	}
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
	static const struct {
		enum issue_action action;
		const char *name;
	} names[] = {
		{ ISSUE_NOTHING, "nothing" },
		{ ISSUE_CREATE, "create" },
		{ ISSUE_COMMENT_REFIRE, "comment_refire" },
		{ ISSUE_REOPEN, "reopen" },
		{ ISSUE_CREATE_LINKED, "create_linked" },
		{ ISSUE_CLOSE, "close" },
		{ ISSUE_COMMENT_RESOLVED, "comment_resolved" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		assert_string_equal(issue_action_str(names[i].action), names[i].name);
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

/*
 * Plan and apply the n steps in turn under pol, into *row (no row until the first action);
 * a create takes the next number from 100, as the caller does with GitHub's answer.  Each
 * step prints its index, so a failure names it.
 */
static void walk(const struct step *steps, size_t n, const struct issue_policy *pol,
		 struct store_issue *row)
{
	int have_row = 0;
	int64_t next_number = 100;

	memset(row, 0, sizeof(*row));
	for (size_t i = 0; i < n; i++) {
		const struct step *s = &steps[i];
		struct issue_event ev = { s->firing, s->starts, s->ends };
		const char *why = NULL;
		enum issue_action a = issue_plan(have_row ? row : NULL, &ev, pol, s->now, &why);

		print_message("step %zu: %s (%s)\n", i, issue_action_str(a), why);
		assert_string_equal(issue_action_str(a), issue_action_str(s->want));
		assert_string_equal(why, s->why);
		if (!have_row && a == ISSUE_NOTHING)
			continue;
		issue_apply(row, a, &ev, s->now);
		if (a == ISSUE_CREATE || a == ISSUE_CREATE_LINKED)
			row->number = next_number++;
		have_row = 1;
	}
}

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
	(void)state;

	walk(steps, sizeof(steps) / sizeof(steps[0]), &close_7d, &row);
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

	walk(steps, sizeof(steps) / sizeof(steps[0]), &keep_open_7d, &row);
	assert_int_equal(row.state, STORE_ISSUE_OPEN);
	assert_int_equal(row.resolved_ends_ms, T0 + DAY_MS + HOUR_MS);
	row_free(&row);
}

UNIT_MAIN(
	cmocka_unit_test(plan_table),
	cmocka_unit_test(plan_rests_on_closed_only_for_new_transitions),
	cmocka_unit_test(firing_current_from_the_episode_not_before_its_resolve),
	cmocka_unit_test(resolved_without_ends_at_uses_starts_at),
	cmocka_unit_test(plan_accepts_null_why),
	cmocka_unit_test(action_names),
	cmocka_unit_test(apply_create_fills_a_fresh_row),
	cmocka_unit_test(apply_create_linked_remembers_previous),
	cmocka_unit_test(apply_refire_reopen_close_comment),
	cmocka_unit_test(apply_close_of_newer_episode_raises_episode),
	cmocka_unit_test(apply_nothing_records_what_was_seen),
	cmocka_unit_test(sequence_fire_resolve_reopen_link),
	cmocka_unit_test(sequence_auto_close_off_comments_once_per_episode))
