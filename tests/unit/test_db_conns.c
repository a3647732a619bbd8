/*
 * test_db_conns.c - the db.h contract with two connections (core/db.c, db_sqlite.c,
 * db_pg.c): a BEGIN waits for the other's commit, writers serialise, advisory locks, and
 * db_data_version(); on sqlite and, when AB_TEST_PG_URI names a server, on PostgreSQL
 * (db_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pthread.h>
#include <unistd.h>

#include "core/buf.h"
#include "store/db.h"
#include "tests/unit/helpers/clock.h"
#include "tests/unit/helpers/db_fixture.h"

/* ---- two connections ---- */

struct waiter {
	struct db *db;
	enum err rc;
	int64_t waited_ms;
	int64_t seen;
};

static void *begin_then_count(void *arg)
{
	struct waiter *w = arg;
	int64_t t0 = tclock_mono_ms();

	w->rc = db_begin(w->db, NULL);
	w->waited_ms = tclock_mono_ms() - t0;
	if (w->rc == ERR_OK) {
		w->seen = dbfx_one_int(w->db, "SELECT COUNT(*) FROM w");
		w->rc = db_commit(w->db, NULL);
	}
	return NULL;
}

static void begin_waits_for_the_other_commit(void **state)
{
	struct dbfx_env *e = *state;
	struct db *a = dbfx_open_ok(e->target), *b = dbfx_open_ok(e->target);
	struct waiter w = { b, ERR_DB, 0, -1 };
	struct timespec deadline;
	pthread_t t;

	dbfx_exec_ok(a, "CREATE TABLE w (v BIGINT)");
	assert_int_equal(db_begin(a, NULL), ERR_OK);
	dbfx_exec_ok(a, "INSERT INTO w VALUES (1)");
	assert_int_equal(pthread_create(&t, NULL, begin_then_count, &w), 0);
	usleep(400 * 1000);
	dbfx_exec_ok(a, "INSERT INTO w VALUES (2)");
	assert_int_equal(db_commit(a, NULL), ERR_OK);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 10;
	assert_int_equal(pthread_timedjoin_np(t, NULL, &deadline), 0);
	assert_int_equal(w.rc, ERR_OK);
	assert_true(w.waited_ms >= 300);
	assert_int_equal(w.seen, 2); /* it began after the commit, and saw it */
	db_close(b);
	db_close(a);
}

/* A read-modify-write in db_begin() .. db_commit(), iterations times, on a connection of its own. */
struct incrementer {
	const char *target;
	int iterations;
	int failures;
};

static void *increment(void *arg)
{
	struct incrementer *w = arg;
	struct db *db = NULL;
	struct db_stmt *get = NULL, *set = NULL;

	if (db_open(w->target, NULL, &db, NULL) != ERR_OK ||
	    db_prepare(db, "SELECT v FROM c", &get, NULL) != ERR_OK ||
	    db_prepare(db, "UPDATE c SET v = ?1", &set, NULL) != ERR_OK) {
		w->failures = w->iterations;
		goto out;
	}
	for (int i = 0; i < w->iterations; i++) {
		int64_t v;

		if (db_begin(db, NULL) != ERR_OK || db_step(get) != DB_ROW) {
			w->failures++;
			db_rollback(db);
			db_reset(get);
			continue;
		}
		v = db_col_int(get, 0);
		db_reset(get);
		db_bind_int(set, 1, v + 1);
		if (db_step(set) != DB_DONE || db_commit(db, NULL) != ERR_OK) {
			w->failures++;
			db_rollback(db);
		}
		db_reset(set);
	}
out:
	db_finalize(get);
	db_finalize(set);
	db_close(db);
	return NULL;
}

/* Writers serialise on db_begin(): no update is lost between two connections. */
static void writers_serialise(void **state)
{
	struct dbfx_env *e = *state;
	struct db *db = dbfx_db(state);
	struct incrementer w[2] = { { e->target, 40, 0 }, { e->target, 40, 0 } };
	struct timespec deadline;
	pthread_t t[2];

	dbfx_exec_ok(db, "CREATE TABLE c (v BIGINT NOT NULL); INSERT INTO c VALUES (0)");
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, increment, &w[i]), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 30;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_timedjoin_np(t[i], NULL, &deadline), 0);
		assert_int_equal(w[i].failures, 0);
	}
	assert_int_equal(dbfx_one_int(db, "SELECT v FROM c"), 80);
}

static void advisory_locks(void **state)
{
	struct dbfx_env *e = *state;
	struct db *a = dbfx_open_ok(e->target), *b = dbfx_open_ok(e->target);
	/* High half all ones: pg_locks shows it as classid 4294967295. */
	const int64_t key = -((int64_t)getpid() << 8) - 2;
	const int64_t same_low = (int64_t)((uint64_t)key & UINT32_MAX);
	struct buf msg = BUF_INIT;
	int held = -1;

	assert_int_equal(db_try_lock(a, key, &held, &msg), ERR_OK);
	assert_int_equal(held, 1);
	assert_true(db_lock_held(a, key));
	assert_int_equal(db_try_lock(b, key, &held, &msg), ERR_OK);
	if (e->engine == DB_SQLITE) { /* one writer process per file: always held */
		assert_int_equal(held, 1);
		assert_true(db_lock_held(b, key));
		goto out;
	}
	assert_int_equal(held, 0);
	assert_false(db_lock_held(b, key));
	assert_false(db_lock_held(a, same_low)); /* the halves are told apart */
	/* Taken again: still held once, so one unlock frees it. */
	assert_int_equal(db_try_lock(a, key, &held, &msg), ERR_OK);
	assert_int_equal(held, 1);
	db_unlock(a, key);
	assert_false(db_lock_held(a, key));
	assert_int_equal(db_try_lock(b, key, &held, &msg), ERR_OK);
	assert_int_equal(held, 1);
	assert_int_equal(db_try_lock(a, key, &held, &msg), ERR_OK);
	assert_int_equal(held, 0);
	/* b's connection ends: the lock is free for a. */
	db_close(b);
	b = NULL;
	for (int i = 0; i < 50 && !held; i++) {
		assert_int_equal(db_try_lock(a, key, &held, &msg), ERR_OK);
		if (!held)
			usleep(20 * 1000);
	}
	assert_int_equal(held, 1);
	/* a's connection is killed by the server: lock_held answers 0, and stays 0. */
	b = dbfx_open_ok(e->target);
	{
		char sql[96];

		snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%lld)",
			 (long long)dbfx_one_int(a, "SELECT pg_backend_pid()"));
		assert_int_equal(dbfx_one_int(b, sql), 1);
	}
	assert_false(db_lock_held(a, key));
	assert_false(db_lock_held(a, key));
	assert_int_equal(db_try_lock(b, key, &held, &msg), ERR_OK);
	assert_int_equal(held, 1);
out:
	buf_release(&msg);
	db_close(b);
	db_close(a);
}


/* ---- db_data_version() ---- */

static uint64_t version_ok(struct db *db)
{
	struct buf msg = BUF_INIT;
	uint64_t v = 7;

	if (db_data_version(db, &v, &msg) != ERR_OK)
		fail_msg("db_data_version: %s", buf_str(&msg));
	buf_release(&msg);
	return v;
}

/* db_data_version_unlocked()'s answer, which must be db_data_version()'s. */
static uint64_t unlocked_ok(struct db *db)
{
	uint64_t v = 7;

	assert_int_equal(db_data_version_unlocked(db, &v), 1);
	assert_true(v == version_ok(db));
	return v;
}

/*
 * The version with and without the lock: the same number while nothing is
 * written or a transaction rolls back, a new one once a transaction of ours
 * that wrote commits (an autocommit statement, db_commit()), also after the
 * connection left WAL mode (the wal-index reading this replaced died of
 * SIGSEGV there) and in memory.  Another connection's commit is not
 * counted: serve holds the file's lock (core/serve_lock.h), so there is none.
 * PostgreSQL: always 0.
 */
static void data_version(void **state)
{
	struct dbfx_env *e = *state;
	struct db *db = dbfx_open_ok(e->target);
	uint64_t v, v2;

	dbfx_exec_ok(db, "CREATE TABLE t (x INTEGER)");
	if (e->engine != DB_SQLITE) {
		v = 7;
		assert_int_equal(db_data_version_unlocked(db, &v), 1);
		assert_true(v == 0 && version_ok(db) == 0);
		goto out;
	}
	v = unlocked_ok(db);
	assert_true(v != 0);
	assert_true(unlocked_ok(db) == v);  /* reads change nothing */
	assert_int_equal(dbfx_one_int(db, "SELECT count(*) FROM t"), 0);
	assert_true(unlocked_ok(db) == v);

	dbfx_exec_ok(db, "INSERT INTO t VALUES (1)");
	v2 = unlocked_ok(db);
	assert_true(v2 != v && v2 != 0);
	v = v2;
	assert_int_equal(db_begin(db, NULL), ERR_OK);
	dbfx_exec_ok(db, "INSERT INTO t VALUES (4)");
	assert_true(unlocked_ok(db) == v);  /* not committed: nothing anyone can read changed */
	assert_int_equal(db_commit(db, NULL), ERR_OK);
	v2 = unlocked_ok(db);
	assert_true(v2 != v);
	v = v2;
	assert_int_equal(db_begin(db, NULL), ERR_OK);
	dbfx_exec_ok(db, "INSERT INTO t VALUES (5)");
	db_rollback(db);
	assert_true(unlocked_ok(db) == v);
	dbfx_exec_ok(db, "BEGIN; COMMIT");  /* wrote nothing */
	assert_true(unlocked_ok(db) == v);

	dbfx_exec_ok(db, "PRAGMA journal_mode = DELETE");
	v = unlocked_ok(db);
	dbfx_exec_ok(db, "INSERT INTO t VALUES (6)");
	assert_true(unlocked_ok(db) != v);
	assert_int_equal(dbfx_one_int(db, "SELECT count(*) FROM t"), 3);
	db_close(db);

	db = dbfx_open_ok(":memory:");
	dbfx_exec_ok(db, "CREATE TABLE t (x INTEGER)");
	v = unlocked_ok(db);
	assert_true(v != 0 && version_ok(db) == v);
	dbfx_exec_ok(db, "INSERT INTO t VALUES (1)");
	assert_true(unlocked_ok(db) != v);
out:
	db_close(db);
}

#define CONTRACT(X) \
	X(begin_waits_for_the_other_commit) \
	X(writers_serialise) \
	X(advisory_locks) \
	X(data_version)

#define ONE(f) +1

int main(void)
{
	/* the sqlite half, then the one that needs AB_TEST_PG_URI */
	static const struct CMUnitTest tests[] = {
		CONTRACT(DBFX_SQLITE_TEST)
		CONTRACT(DBFX_PG_TEST)
	};

	return dbfx_run("test_db_conns", tests, sizeof(tests) / sizeof(tests[0]),
			0 CONTRACT(ONE));
}
