/*
 * test_store_events_repeats.c - the inbox's repeats (core/store_events.c): a repeat of
 * what a key's newest event already says is not stored; dry-run rows repeat until the
 * bridge goes live.  Each test gets a fresh store on the engine of AB_TEST_STORE
 * (store_fixture.h).
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

#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "tests/unit/helpers/store_fixture.h"

/* ---- repeats ---- */

/*
 * store_enqueue()'s repeats: an event with repeat_state equal to the newest
 * comparable one of its key is not stored (also within one call); a dead
 * newest one, another repeat_state, or an event without one is stored.
 * store_repeats() says so without writing.
 */
static void repeats_are_not_stored(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event evs[2] = { sfx_mkev("bridge", "default", "k1", "firing"),
				      sfx_mkev("bridge", "default", "k1", "firing") };
	struct buf msg = BUF_INIT;
	struct store_stats stats;

	evs[0].repeat_state = evs[1].repeat_state = (char *)"o/r";
	assert_int_equal(store_enqueue(st, evs, 2, &msg), ERR_OK);
	assert_true(evs[0].id > 0 && !evs[0].repeated);
	assert_true(evs[1].id == 0 && evs[1].repeated);  /* repeats the one before it */
	assert_int_equal(store_enqueue(st, evs, 1, &msg), ERR_OK);
	assert_true(evs[0].id == 0 && evs[0].repeated);
	/* store_repeats(): the same answer, nothing written */
	int all = -1;
	assert_int_equal(store_repeats(st, evs, 2, NULL, &all), ERR_OK);
	assert_true(all == 1 && evs[0].repeated && evs[1].repeated);
	evs[1].repeat_state = (char *)"o/new";
	assert_int_equal(store_repeats(st, evs, 2, NULL, &all), ERR_OK);
	assert_true(all == 0 && evs[0].repeated && !evs[1].repeated);
	evs[1].repeat_state = (char *)"o/r";
	assert_int_equal(store_repeats(st, evs, 0, NULL, &all), ERR_OK);
	assert_int_equal(all, 0);
	store_stats(st, &stats);
	assert_int_equal(stats.commits, 1);  /* the repeat opened no transaction */
	assert_int_equal(stats.events, 1);
	evs[0].repeat_state = (char *)"o/other";  /* another repository: another state */
	assert_int_equal(store_enqueue(st, evs, 1, &msg), ERR_OK);
	assert_true(evs[0].id > 0 && !evs[0].repeated);
	assert_int_equal(store_event_dead(st, evs[0].id, "repository o/other not found"), ERR_OK);
	assert_int_equal(store_enqueue(st, evs, 1, &msg), ERR_OK);  /* a dead letter: try again */
	assert_true(evs[0].id > 0 && !evs[0].repeated);
	evs[0].repeat_state = NULL;  /* not compared */
	assert_int_equal(store_enqueue(st, evs, 1, &msg), ERR_OK);
	assert_true(evs[0].id > 0 && !evs[0].repeated);
	assert_int_equal(store_pending_count(st, "bridge"), 3);
	buf_release(&msg);
}

/*
 * Dry-run stores what live stores (issue 18 item 9: each copy of a firing
 * over a dry-run map row, issue 0, was stored, 3.4 KB a repeat): N copies of
 * one notification are one event.  Going live (store_dry_rows_go_live())
 * forgets those keys' states only: the next copy is stored, so that it finds
 * or creates the issue, and the one after repeats; a mapped key still repeats.
 */
static void dry_run_rows_repeat_until_going_live(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_store(state);
	struct store_event ev = sfx_mkev("bridge", "default", "k1", "firing");
	struct store_event mapped = sfx_mkev("bridge", "default", "k2", "firing");
	struct store_issue dry = sfx_mkrow("default", "k1", 0), live = sfx_mkrow("default", "k2", 9);
	struct buf msg = BUF_INIT;
	int64_t n = -1;

	ev.repeat_state = mapped.repeat_state = (char *)"o/r";
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_int_equal(store_enqueue(st, &mapped, 1, &msg), ERR_OK);
	assert_int_equal(store_issue_put(st, &dry), ERR_OK);  /* the dry-run worker's row */
	assert_int_equal(store_issue_put(st, &live), ERR_OK);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
		assert_true(ev.id == 0 && ev.repeated);
	}
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events WHERE key = 'k1'"), 1);

	assert_int_equal(store_dry_rows_go_live(st, &n), ERR_OK);
	assert_int_equal(n, 1);
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_true(ev.id > 0 && !ev.repeated);
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_true(ev.id == 0 && ev.repeated);
	assert_int_equal(store_enqueue(st, &mapped, 1, &msg), ERR_OK);
	assert_true(mapped.id == 0 && mapped.repeated);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events"), 3);
	assert_int_equal(store_dry_rows_go_live(NULL, &n), ERR_INVALID);
	buf_release(&msg);
}

/*
 * store_repeats() over more events than one statement holds (PostgreSQL asks
 * for REPEAT_BATCH = 16 at a time; sqlite one at a time): the answer is the
 * per-event rule's for each, whichever event changed, in either statement:
 * a new state, a dead newest event, a dry-run map row gone live.
 */
static void repeats_of_many_events(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_store(state);
	enum { N = 20 };
	struct store_event evs[N];
	struct store_issue row = sfx_mkrow("default", "k17", 0);
	struct buf msg = BUF_INIT;
	char keys[N][16];
	uint64_t v;
	int all = -1;

	for (int i = 0; i < N; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		evs[i] = sfx_mkev("bridge", "default", keys[i], "firing");
		evs[i].starts_at_ms = 1000 + i;
		evs[i].repeat_state = (char *)"o/r";
	}
	assert_int_equal(store_enqueue(st, evs, N, &msg), ERR_OK);
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_int_equal(all, 1);
	for (int i = 0; i < N; i++)
		assert_true(evs[i].repeated);

	evs[18].status = (char *)"resolved";  /* the second statement's third event */
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_true(all == 0 && !evs[18].repeated);
	evs[18].status = (char *)"firing";
	evs[3].ends_at_ms = 99;  /* the first statement's */
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_true(all == 0 && !evs[3].repeated);
	evs[3].ends_at_ms = 0;
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_int_equal(all, 1);

	assert_int_equal(store_event_dead(st, evs[16].id, "repository o/r not found"), ERR_OK);
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_true(all == 0 && !evs[16].repeated);
	assert_int_equal(store_enqueue(st, &evs[16], 1, &msg), ERR_OK);  /* stored again */
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_int_equal(all, 1);

	assert_int_equal(store_issue_put(st, &row), ERR_OK);  /* k17 mapped in dry-run */
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_int_equal(all, 1);  /* a dry-run row repeats like any other */
	assert_int_equal(store_dry_rows_go_live(st, NULL), ERR_OK);
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_true(all == 0 && !evs[17].repeated);
	assert_true(evs[16].repeated);  /* sqlite stops asking at the first that is none */

	/* the question fails (its table gone): an error and no answer, nothing written */
	sfx_sql_exec(f->path, "ALTER TABLE events RENAME TO events_gone");
	v = 7;
	assert_int_equal(store_repeats(st, evs, N, &v, &all), ERR_DB);
	assert_true(all == 0 && v == 0);
	sfx_sql_exec(f->path, "ALTER TABLE events_gone RENAME TO events");
	assert_int_equal(store_repeats(st, evs, N, NULL, &all), ERR_OK);
	assert_true(all == 0 && evs[16].repeated && !evs[17].repeated);  /* as before */
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events"), N + 1);
	buf_release(&msg);
}

/*
 * store_repeats()'s version: the answer "all repeats" is given from it only
 * while no row changed.  A commit of ours ends it: the CLI's `map forget`
 * is run by the service, on its connection (the only writer: serve holds
 * the file's lock), and so is every other write; on PostgreSQL there is
 * never a version (other replicas write unseen).
 */
static void repeats_from_the_version_only_while_nothing_changed(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event ev = sfx_mkev("bridge", "default", "k1", "firing");
	struct store_issue row = { .receiver = (char *)"default", .key = (char *)"k1",
				   .repo = (char *)"o/r", .number = 7, .state = STORE_ISSUE_OPEN };
	struct buf msg = BUF_INIT;
	uint64_t v = 0, v2;
	int all = -1;

	ev.repeat_state = (char *)"o/r";
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_true(ev.id > 0);
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_repeats(st, &ev, 1, &v, &all), ERR_OK);
	assert_int_equal(all, 1);
	if (sfx_postgres()) {
		assert_true(v == 0);
		goto out;
	}
	assert_true(v != 0);
	v2 = v;  /* nothing changed: the same answer at the same version */
	assert_int_equal(store_repeats(st, &ev, 1, &v2, &all), ERR_OK);
	assert_true(all == 1 && v2 == v);

	/* the key is forgotten (its repeat state with it) */
	assert_int_equal(store_issue_forget(st, "default", "k1"), ERR_OK);
	v2 = v;
	assert_int_equal(store_repeats(st, &ev, 1, &v2, &all), ERR_OK);
	assert_true(all == 0 && !ev.repeated && v2 == 0);

	/* stored again; then a write of ours ends the version too */
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_true(ev.id > 0);
	assert_int_equal(store_repeats(st, &ev, 1, &v, &all), ERR_OK);
	assert_true(all == 1 && v != 0);
	assert_int_equal(store_event_dead(st, ev.id, "repository o/r not found"), ERR_OK);
	v2 = v;
	assert_int_equal(store_repeats(st, &ev, 1, &v2, &all), ERR_OK);
	assert_true(all == 0 && v2 == 0);  /* a dead newest event is no state to repeat */
out:
	buf_release(&msg);
}

/* quiet "store migrated" on every fresh database */
UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	SFX_MEMORY_TEST(repeats_are_not_stored),
	SFX_TEST(repeats_of_many_events),
	SFX_TEST(dry_run_rows_repeat_until_going_live),
	SFX_TEST(repeats_from_the_version_only_while_nothing_changed))
