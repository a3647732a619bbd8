/*
 * test_bridge_budget.c - the GitHub content budget across processes and replicas
 * (bridge/bridge_budget.c, issue 19): GitHub counts content_per_minute per token, so a
 * restarted bridge, or a replica that takes the lead, goes on with what was spent before
 * it (recorded in the store before each call) instead of a full minute; a call whose time
 * cannot be recorded is not sent.  A real store, in virtual time.
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
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_budget.h"
#include "tests/unit/helpers/bridge_fixture.h"
#include "tests/unit/helpers/store_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

#define FP_A "0000000000000a01"
#define FP_B "0000000000000b02"
#define FP_C "0000000000000c03"
#define POSTS "/repos/my-org/alerts/issues"

/* e's bridge anew (as a process start) with content_per_minute cpm. */
static void restart_with_budget(struct env *e, unsigned cpm)
{
	e->cfg->github.content_per_minute = cpm;
	bfx_bridge_restart(e, 0);
}

/* fp fires and its issue n is created: one POST, at the time the bridge's pacing allows. */
static void creates(struct env *e, const char *fp, int n)
{
	size_t before = fake_http_count(e->gh);
	char issue[256];

	snprintf(issue, sizeof(issue), ISSUE_JSON(%d, "open", "null", "null"), n, n);
	bfx_enqueue_fp(e, fp, "firing", EP1, NO_END, "critical");
	fake_http_push(e->gh, 201, NULL, issue);
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), before + 1);
	bfx_assert_request(e, before, "POST", POSTS, fp);
}

/*
 * The regression: content_per_minute 2, two creates at T0 and T0 + 1 s, then a restart.
 * The new process's create waits until T0's leaves the minute (it used to go out at once:
 * around a restart up to twice the budget went out).
 */
static void restart_goes_on_with_the_budget_spent(void **state)
{
	struct env e;
	struct gh_stats g;
	(void)state;

	bfx_env_start(&e, NULL, NULL);
	restart_with_budget(&e, 2);
	creates(&e, FP_A, 1);
	creates(&e, FP_B, 2);
	assert_int_equal(e.now, T0 + 1000);
	bfx_bridge_restart(&e, 0);
	creates(&e, FP_C, 3);
	assert_int_equal(e.now, T0 + 60000);
	bridge_budget(e.b, &g);
	assert_int_equal(g.pacing_wait_ms, 59000);
	assert_int_equal(g.content_left_minute, 0);
	bfx_env_stop(&e);
}

/*
 * A standby replica that takes the lead loads what the one before it recorded (the
 * store is shared): 2 calls in the last minute at content_per_minute 2 hold its first.
 */
static void gain_of_the_lead_loads_what_the_other_spent(void **state)
{
	struct env e;
	(void)state;

	bfx_env_start(&e, NULL, NULL);
	restart_with_budget(&e, 2);
	creates(&e, FP_A, 1);  /* this replica's own, at T0 */
	e.leading = 0;
	assert_int_equal(bridge_step(e.b), 0);
	e.now += 120000;  /* the other replica leads, and spends */
	assert_int_equal(store_budget_note(e.st, NULL, e.now - 30000, 0, NULL), ERR_OK);
	assert_int_equal(store_budget_note(e.st, "", e.now - 20000, 0, NULL), ERR_OK);
	e.leading = 1;
	creates(&e, FP_B, 2);
	assert_int_equal(e.now, T0 + 120000 + 30000);  /* the older of the two left the minute */
	bfx_env_stop(&e);
}

/*
 * The time is recorded before the call is sent, so a record that fails sends nothing:
 * the event is retried, and goes out once the store records again.
 */
static void unrecorded_call_is_not_sent(void **state)
{
	char dir[256], db[300];
	struct env e;
	struct store_event ev = { 0 };
	(void)state;

	tfx_mkdtemp(dir, sizeof(dir), "ab-bridge-budget");
	snprintf(db, sizeof(db), "%s/alertbridge.db", dir);
	bfx_env_start_store(&e, db);
	sfx_inject(db, "gh_budget", NULL, "database or disk is full");
	bfx_enqueue(&e, "firing", EP1, NO_END);
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 0);
	assert_int_equal(store_next_event(e.st, "bridge", INT64_MAX, &ev), ERR_OK);
	sfx_assert_contains(ev.last_error, "POST " POSTS ": not sent: its time could not be "
					   "recorded: ");
	sfx_assert_contains(ev.last_error, "database or disk is full");
	store_event_release(&ev);
	assert_int_equal(sfx_sql_int(db, "SELECT count(*) FROM gh_budget"), 0);

	sfx_uninject(db, "gh_budget");
	for (int i = 0; i < 100 && fake_http_count(e.gh) == 0; i++) {
		e.now += 5000;
		fake_http_push(e.gh, 200, NULL, "[]");  /* the create's marker looked for first */
		fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
		(void)bridge_step(e.b);
	}
	bfx_assert_row(&e, 7, "open");
	assert_int_equal(sfx_sql_int(db, "SELECT count(*) FROM gh_budget"), 1);
	bfx_env_stop(&e);
	tfx_remove_tree(dir);
}

UNIT_MAIN(
	cmocka_unit_test(restart_goes_on_with_the_budget_spent),
	cmocka_unit_test(gain_of_the_lead_loads_what_the_other_spent),
	cmocka_unit_test(unrecorded_call_is_not_sent))
