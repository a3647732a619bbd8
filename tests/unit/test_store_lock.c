/*
 * test_store_lock.c - the store's worker lock and ping (core/store_lock.c) on
 * sqlite (always held) and, with AB_TEST_PG_URI, on PostgreSQL in a database
 * of the test's own: one holder among two stores, release by unlock and by a
 * closed session, the 250 ms bound of store_wait_kind() on a shared store.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_lock.h"
#include "tests/unit/helpers/pg_fixture.h"
#include "tests/unit/helpers/store_fixture.h"

static int lock(struct store *st)
{
	int held = -1;

	assert_int_equal(store_worker_lock(st, STORE_WORKER_LOCK, &held, NULL), ERR_OK);
	return held;
}

static int64_t waited_ms(struct store *st, int64_t timeout_ms)
{
	int64_t t0 = clock_mono_us();

	store_wait_kind(st, "bridge", timeout_ms);
	return (clock_mono_us() - t0) / 1000;
}

static void sqlite_always_holds(void **state)
{
	struct store *st = sfx_store(state);

	assert_false(store_shared(st));
	assert_true(lock(st));
	assert_true(lock(st));
	assert_true(store_worker_lock_held(st, STORE_WORKER_LOCK));
	store_worker_unlock(st, STORE_WORKER_LOCK);
	assert_true(store_worker_lock_held(st, STORE_WORKER_LOCK));
	assert_int_equal(store_ping(st, NULL), ERR_OK);
	/* sqlite's wait is not bounded: the enqueue that ends it is in this process. */
	assert_true(waited_ms(st, 400) >= 350);
}

static void postgres_one_holder(void **state)
{
	char uri[1024];
	struct store *a, *b;

	(void)state;
	if (!pgfx_create_or_skip(uri, sizeof(uri), "ab_store_lock", "postgres_one_holder"))
		return;
	a = sfx_open_ok(uri);
	b = sfx_open_ok(uri);
	assert_true(store_shared(a));
	assert_int_equal(store_ping(a, NULL), ERR_OK);
	assert_false(store_worker_lock_held(a, STORE_WORKER_LOCK));
	assert_true(lock(a));
	assert_true(lock(a)); /* again: still held, not stacked (one unlock frees it) */
	assert_false(lock(b));
	assert_true(store_worker_lock_held(a, STORE_WORKER_LOCK));
	assert_false(store_worker_lock_held(b, STORE_WORKER_LOCK));
	store_worker_unlock(a, STORE_WORKER_LOCK);
	assert_false(store_worker_lock_held(a, STORE_WORKER_LOCK));
	assert_true(lock(b));
	assert_false(lock(a));
	/* The session ends (a process killed): free as soon as the server has ended it. */
	store_close(b);
	{
		int held = 0;

		for (int i = 0; i < 100 && !held; i++) {
			struct timespec ts = { 0, 20 * 1000000L };

			held = lock(a);
			if (!held)
				nanosleep(&ts, NULL);
		}
		assert_true(held);
	}
	/* A shared store's wait ends within STORE_SHARED_WAIT_MS: others' enqueues wake nobody. */
	{
		int64_t ms = waited_ms(a, 5000);

		assert_true(ms >= STORE_SHARED_WAIT_MS - 20);
		assert_true(ms < 1000);
	}
	store_close(a);
	pgfx_drop(uri);
}

UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	cmocka_unit_test_setup_teardown(sqlite_always_holds, sfx_setup, sfx_teardown),
	cmocka_unit_test(postgres_one_holder))
