/*
 * test_bridge_store_faults.c - the reconciler when the store cannot record what it did
 * (issue 19: a full disk): it backs off as for any fault, spends no GitHub call while it
 * waits, and once the store writes again the event ends with one issue, not two.
 *
 * The store is a real sqlite file; a trigger that another connection adds makes every
 * outcome write fail (an event's done or retry), as SQLITE_FULL does, while the progress
 * notes before a call still succeed: the worst case, where GitHub acted and the store
 * cannot say so.
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
#include "tests/unit/helpers/store_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

#define FULL_ON                                                                             \
	"CREATE TRIGGER full BEFORE UPDATE ON events"                                       \
	" WHEN NEW.state <> OLD.state OR NEW.attempts <> OLD.attempts"                      \
	" BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END"
#define FULL_OFF "DROP TRIGGER full"

/* A list page holding issue 7 with FP's marker: the create that was made. */
#define LISTED_7                                                                            \
	"[{\"number\":7,\"state\":\"open\",\"state_reason\":null,\"closed_at\":null,"       \
	"\"created_at\":\"2026-11-18T11:06:41Z\",\"comments\":0,\"body\":\"x <!-- "         \
	"alertbridge:receiver=default --> <!-- alertbridge:key=" FP " -->\",\"html_url\":\"https://github.com/my-org/alerts/"      \
	"issues/7\",\"repository_url\":\"https://api.github.com/repos/my-org/alerts\"}]"

static void full_disk_backs_off_without_github_calls(void **state)
{
	char dir[256], db[300];
	struct env e;
	size_t calls, attempts_seen = 0;
	int64_t start;
	(void)state;

	tfx_mkdtemp(dir, sizeof(dir), "ab-bridge-full");
	snprintf(db, sizeof(db), "%s/alertbridge.db", dir);
	bfx_env_start_store(&e, db);
	bfx_enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	sfx_sql_exec(db, FULL_ON);

	/* GitHub makes the issue; its outcome cannot be written: the step says so. */
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), -1);
	assert_int_equal(fake_http_count(e.gh), 1);

	/*
	 * A minute of steps, one a second as the worker makes them: each attempt after the
	 * backoff costs one marker lookup, and the backoff doubles (retry_base_ms 5 s): a
	 * handful of calls, not one a step (the spin spent 4,996 calls in 31 s).  The first
	 * lookup waits until the create can no longer land (its note's time, the timeout and
	 * GitHub's 10 s: 20 s).
	 */
	start = e.now;
	for (int i = 0; i < 60; i++) {
		fake_http_push(e.gh, 200, NULL, LISTED_7);
		e.now += 1000;
		calls = fake_http_count(e.gh);
		assert_int_equal(bridge_step(e.b), -1);
		attempts_seen += fake_http_count(e.gh) > calls;
		assert_true(fake_http_count(e.gh) - calls <= 1);
	}
	assert_true(e.now - start == 60000);
	assert_true(attempts_seen >= 1);  /* it does try again */
	assert_true(attempts_seen <= 5);  /* 2.5-5 s, 5-10, 10-20, 20-40: at most 4 in 60 s */
	assert_int_equal(store_pending_count(e.st, "bridge"), 1);

	/* The space is back: the next attempt finds issue 7 by its marker; no second create. */
	sfx_sql_exec(db, FULL_OFF);
	for (int i = 0; i < 700 && store_pending_count(e.st, "bridge"); i++) {
		e.now += 1000;
		if (bridge_step(e.b) == 1)
			break;
	}
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);
	for (size_t i = 1; i < fake_http_count(e.gh); i++)
		assert_string_equal(fake_http_request(e.gh, i)->method, "GET");
	bfx_assert_row(&e, 7, NULL);

	/* The backoff ended with the recorded outcome: the next event is taken at once. */
	bfx_enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	assert_int_equal(bridge_step(e.b), 1);
	bfx_env_stop(&e);
	tfx_remove_tree(dir);
}

UNIT_MAIN(
	cmocka_unit_test(full_disk_backs_off_without_github_calls))
