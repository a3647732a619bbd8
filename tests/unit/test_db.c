/*
 * test_db.c - the db.h contract (core/db.c, db_sqlite.c, db_pg.c), run
 * against sqlite (a file in a fresh directory per test) and, when
 * AB_TEST_PG_URI names a server (tests/run.sh starts one with
 * tests/pg/pg.sh), against PostgreSQL in a fresh schema per test.  The
 * PostgreSQL tests that restart the server or log in with a password need
 * the cluster's directory too (AB_TEST_PG_DIR).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/buf.h"
#include "store/db.h"
#include "tests/unit/helpers/tmpdir.h"

/* One test's database: a file, or a schema of its own on the server. */
struct env {
	enum db_engine engine;
	char dir[256];
	char target[1024];   /* what db_open() gets */
	char schema[64];     /* PostgreSQL */
	struct db *admin;    /* PostgreSQL: the connection that made the schema */
};

static const char *pg_uri(void)
{
	const char *u = getenv("AB_TEST_PG_URI");

	return u && *u ? u : NULL;
}

static int64_t now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

static struct db *open_ok(const char *target)
{
	struct buf msg = BUF_INIT;
	struct db *db = NULL;
	enum err rc = db_open(target, NULL, &db, &msg);

	if (rc != ERR_OK)
		fail_msg("db_open: %s: %s", err_str(rc), buf_str(&msg));
	buf_release(&msg);
	return db;
}

static void exec_ok(struct db *db, const char *sql)
{
	struct buf msg = BUF_INIT;

	if (db_exec(db, sql, &msg) != ERR_OK)
		fail_msg("%s: %s", sql, buf_str(&msg));
	buf_release(&msg);
}

static struct db_stmt *prepare_ok(struct db *db, const char *sql)
{
	struct buf msg = BUF_INIT;
	struct db_stmt *s = NULL;

	if (db_prepare(db, sql, &s, &msg) != ERR_OK)
		fail_msg("%s: %s", sql, buf_str(&msg));
	buf_release(&msg);
	return s;
}

/* The integer of the one-row query sql. */
static int64_t one_int(struct db *db, const char *sql)
{
	struct db_stmt *s = prepare_ok(db, sql);
	int64_t v;

	if (db_step(s) != DB_ROW)
		fail_msg("%s: no row: %s", sql, db_errmsg(db));
	v = db_col_int(s, 0);
	db_finalize(s);
	return v;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("\"%s\" does not contain \"%s\"", hay ? hay : "(null)", needle);
}

static const char *by_engine(const struct env *e, const char *sqlite, const char *pg)
{
	return e->engine == DB_SQLITE ? sqlite : pg;
}

static int setup(void **state)
{
	static int seq;
	enum db_engine engine = *(const enum db_engine *)*state;
	struct env *e = calloc(1, sizeof(*e));
	const char *base = pg_uri();

	assert_non_null(e);
	e->engine = engine;
	if (engine == DB_SQLITE) {
		tfx_mkdtemp(e->dir, sizeof(e->dir), "test_db");
		snprintf(e->target, sizeof(e->target), "%s/test.db", e->dir);
	} else {
		char sql[128];

		assert_non_null(base);
		snprintf(e->schema, sizeof(e->schema), "test_db_%ld_%d", (long)getpid(), ++seq);
		e->admin = open_ok(base);
		snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", e->schema);
		exec_ok(e->admin, sql);
		/* libpq decodes the URI's %3D: options=-csearch_path=SCHEMA */
		snprintf(e->target, sizeof(e->target), "%s%soptions=-csearch_path%%3D%s", base,
			 strchr(base, '?') ? "&" : "?", e->schema);
	}
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	if (e->engine == DB_SQLITE) {
		tfx_remove_tree(e->dir);
	} else {
		char sql[128];

		snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", e->schema);
		/* After a server restart the first call is unavailable, the next reconnects. */
		if (db_exec(e->admin, sql, NULL) != ERR_OK)
			exec_ok(e->admin, sql);
		db_close(e->admin);
	}
	free(e);
	return 0;
}

/* ---- statements ---- */

static void ints_round_trip(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	const int64_t values[] = { INT64_C(5000000000), -3, INT64_MAX, INT64_MIN, 0 };
	struct db_stmt *s;

	exec_ok(db, "CREATE TABLE n (i BIGINT NOT NULL, v BIGINT)");
	s = prepare_ok(db, "INSERT INTO n (i, v) VALUES (?1, ?2)");
	for (int i = 0; i < 5; i++) {
		db_bind_int(s, 1, i);
		db_bind_int(s, 2, values[i]);
		assert_int_equal(db_step(s), DB_DONE);
		db_reset(s);
	}
	db_bind_int(s, 1, 5);
	db_bind_null(s, 2);
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);

	s = prepare_ok(db, "SELECT i, v FROM n ORDER BY i");
	for (int i = 0; i < 5; i++) {
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_col_int(s, 0), i);
		assert_true(db_col_int(s, 1) == values[i]);
		assert_false(db_col_is_null(s, 1));
	}
	assert_int_equal(db_step(s), DB_ROW);
	assert_true(db_col_is_null(s, 1));
	assert_int_equal(db_col_int(s, 1), 0);
	assert_null(db_col_text(s, 1));
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	/* Arithmetic past 2^31 on the server, not only storage. */
	assert_true(one_int(db, "SELECT MAX(v) - 1 FROM n") == INT64_MAX - 1);
	db_close(db);
}

static void text_utf8_empty_and_null(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	const char *utf8 = "Gr\xc3\xbc\xc3\x9f" "e, \xe4\xb8\x96\xe7\x95\x8c \xe2\x9c\x93 it's \"q\"";
	struct db_stmt *s;

	exec_ok(db, "CREATE TABLE t (i BIGINT NOT NULL, s TEXT)");
	s = prepare_ok(db, "INSERT INTO t (i, s) VALUES (?1, ?2)");
	db_bind_int(s, 1, 1);
	db_bind_text(s, 2, utf8);
	assert_int_equal(db_step(s), DB_DONE);
	db_reset(s);
	db_bind_int(s, 1, 2);
	db_bind_text(s, 2, "");
	assert_int_equal(db_step(s), DB_DONE);
	db_reset(s);
	db_bind_int(s, 1, 3);
	db_bind_text(s, 2, NULL);
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);

	s = prepare_ok(db, "SELECT s, length(s) FROM t ORDER BY i");
	assert_int_equal(db_step(s), DB_ROW);
	assert_string_equal(db_col_text(s, 0), utf8);
	assert_int_equal(db_col_int(s, 1), 20); /* characters, not bytes, on both */
	assert_int_equal(db_step(s), DB_ROW);
	assert_non_null(db_col_text(s, 0));
	assert_string_equal(db_col_text(s, 0), "");
	assert_false(db_col_is_null(s, 0));
	assert_int_equal(db_step(s), DB_ROW);
	assert_null(db_col_text(s, 0));
	assert_true(db_col_is_null(s, 0));
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	/* NULL where SQL gives the parameter no type: CAST (db.h). */
	s = prepare_ok(db, "SELECT COUNT(*) FROM t WHERE CAST(?1 AS TEXT) IS NULL OR s = ?1");
	db_bind_null(s, 1);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 3);
	db_reset(s);
	db_bind_text(s, 1, utf8);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 1);
	db_finalize(s);
	db_close(db);
}

static void comparisons_read_as_0_and_1(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct db_stmt *s;

	exec_ok(db, "CREATE TABLE b (i BIGINT NOT NULL, s TEXT);"
		    "INSERT INTO b VALUES (1, 'x'); INSERT INTO b VALUES (7, NULL)");
	s = prepare_ok(db, "SELECT i > ?1, i = ?2, s IS NULL, EXISTS (SELECT 1 FROM b WHERE i = ?2)"
			   " FROM b ORDER BY i");
	db_bind_int(s, 1, 3);
	db_bind_int(s, 2, 7);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 0);
	assert_int_equal(db_col_int(s, 1), 0);
	assert_int_equal(db_col_int(s, 2), 0);
	assert_int_equal(db_col_int(s, 3), 1);
	assert_string_equal(db_col_text(s, 0), "0");
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 1);
	assert_int_equal(db_col_int(s, 1), 1);
	assert_int_equal(db_col_int(s, 2), 1);
	assert_string_equal(db_col_text(s, 2), "1");
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	db_close(db);
}

static void placeholders_reused_and_literals_untouched(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct db_stmt *s;

	/* ?1 twice; ?N inside a literal, an identifier and a comment stay as written. */
	exec_ok(db, "CREATE TABLE p (\"q?1\" TEXT, n BIGINT)");
	s = prepare_ok(db, "INSERT INTO p (\"q?1\", n) VALUES (?2 || '?1 ''?2''', ?1 + ?1)");
	db_bind_int(s, 1, INT64_C(3000000000));
	db_bind_text(s, 2, "a");
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	s = prepare_ok(db, "SELECT \"q?1\", n, '?' /* ?3 */ FROM p -- ?4\n WHERE n = ?1 * 2");
	db_bind_int(s, 1, INT64_C(3000000000));
	assert_int_equal(db_step(s), DB_ROW);
	assert_string_equal(db_col_text(s, 0), "a?1 '?2'");
	assert_true(db_col_int(s, 1) == INT64_C(6000000000));
	assert_string_equal(db_col_text(s, 2), "?");
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	db_close(db);
}

static void returning_id_and_changes(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct db_stmt *s;

	exec_ok(db, by_engine(e, "CREATE TABLE r (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
			      "CREATE TABLE r (id BIGINT GENERATED BY DEFAULT AS IDENTITY "
			      "PRIMARY KEY, name TEXT NOT NULL)"));
	s = prepare_ok(db, "INSERT INTO r (name) VALUES (?1) RETURNING id");
	for (int i = 1; i <= 4; i++) {
		db_bind_text(s, 1, i % 2 ? "odd" : "even");
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_col_int(s, 0), i);
		assert_int_equal(db_step(s), DB_DONE);
		assert_int_equal(db_changes(db), 1);
		db_reset(s);
	}
	db_finalize(s);
	s = prepare_ok(db, "UPDATE r SET name = ?1 WHERE name = ?2");
	db_bind_text(s, 1, "x");
	db_bind_text(s, 2, "odd");
	assert_int_equal(db_step(s), DB_DONE);
	assert_int_equal(db_changes(db), 2);
	db_finalize(s);
	exec_ok(db, "DELETE FROM r");
	assert_int_equal(db_changes(db), 4);
	/* A query leaves the count of the last write alone. */
	assert_int_equal(one_int(db, "SELECT COUNT(*) FROM r"), 0);
	assert_int_equal(db_changes(db), 4);
	exec_ok(db, "DELETE FROM r WHERE id = 1");
	assert_int_equal(db_changes(db), 0);
	db_close(db);
}

static void exec_runs_several_statements(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct buf msg = BUF_INIT;

	exec_ok(db, "CREATE TABLE a (x BIGINT PRIMARY KEY); INSERT INTO a VALUES (1);"
		    "INSERT INTO a VALUES (2);");
	assert_int_equal(one_int(db, "SELECT SUM(x) FROM a"), 3);
	assert_int_equal(db_exec(db, "INSERT INTO a VALUES (3); INSERT INTO nosuch VALUES (4)", &msg),
			 ERR_DB);
	assert_contains(buf_str(&msg), db_name(db));
	assert_contains(buf_str(&msg), "nosuch");
	buf_release(&msg);
	db_close(db);
}

static void transactions(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct buf msg = BUF_INIT;

	exec_ok(db, "CREATE TABLE x (v BIGINT)");
	assert_false(db_in_transaction(db));
	assert_int_equal(db_begin(db, &msg), ERR_OK);
	assert_true(db_in_transaction(db));
	assert_int_equal(db_begin(db, &msg), ERR_DB); /* no nesting */
	assert_true(db_in_transaction(db));
	exec_ok(db, "INSERT INTO x VALUES (1)");
	db_rollback(db);
	assert_false(db_in_transaction(db));
	assert_int_equal(one_int(db, "SELECT COUNT(*) FROM x"), 0);
	db_rollback(db); /* none open: nothing happens */

	assert_int_equal(db_begin(db, &msg), ERR_OK);
	exec_ok(db, "INSERT INTO x VALUES (2)");
	assert_int_equal(db_commit(db, &msg), ERR_OK);
	assert_false(db_in_transaction(db));
	assert_int_equal(one_int(db, "SELECT SUM(v) FROM x"), 2);
	buf_reset(&msg);
	assert_int_equal(db_commit(db, &msg), ERR_DB);
	assert_contains(buf_str(&msg), db_name(db));
	buf_release(&msg);
	db_close(db);
}

static void schema_version_starts_at_0(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct buf msg = BUF_INIT;
	int v = -1;

	assert_int_equal(db_begin(db, &msg), ERR_OK);
	assert_int_equal(db_schema_version(db, &v, &msg), ERR_OK);
	assert_int_equal(v, 0);
	assert_int_equal(db_set_schema_version(db, 7, &msg), ERR_OK);
	assert_int_equal(db_schema_version(db, &v, &msg), ERR_OK);
	assert_int_equal(v, 7);
	assert_int_equal(db_commit(db, &msg), ERR_OK);
	db_close(db);

	db = open_ok(e->target);
	assert_int_equal(db_schema_version(db, &v, &msg), ERR_OK);
	assert_int_equal(v, 7);
	/* A rolled back migration step leaves the version where it was. */
	assert_int_equal(db_begin(db, &msg), ERR_OK);
	assert_int_equal(db_set_schema_version(db, 8, &msg), ERR_OK);
	db_rollback(db);
	assert_int_equal(db_schema_version(db, &v, &msg), ERR_OK);
	assert_int_equal(v, 7);
	assert_int_equal(db_reclaim(db, &msg), ERR_OK);
	buf_release(&msg);
	db_close(db);
}

/* Bad SQL fails at prepare (sqlite) or at the first step (PostgreSQL). */
static void bad_sql_and_constraints(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct buf msg = BUF_INIT;
	struct db_stmt *s = NULL;
	enum err rc = db_prepare(db, "SELEC 1", &s, &msg);

	if (rc == ERR_OK) {
		assert_int_equal(e->engine, DB_POSTGRES);
		assert_int_equal(db_step(s), DB_ERROR);
		assert_int_equal(db_step(s), DB_ERROR); /* spent until reset */
		assert_contains(db_errmsg(db), "syntax error");
		db_finalize(s);
	} else {
		assert_int_equal(rc, ERR_DB);
		assert_null(s);
		assert_contains(buf_str(&msg), db_name(db));
		assert_contains(buf_str(&msg), "syntax error");
	}

	/* A placeholder out of range: refused at prepare, the reason in db_errmsg(). */
	s = (struct db_stmt *)&msg;
	assert_int_equal(db_prepare(db, "SELECT ?0", &s, NULL), ERR_DB);
	assert_null(s);
	assert_true(strlen(db_errmsg(db)) > 0);

	exec_ok(db, "CREATE TABLE u (k TEXT PRIMARY KEY)");
	s = prepare_ok(db, "INSERT INTO u (k) VALUES (?1)");
	db_bind_text(s, 1, "dup");
	assert_int_equal(db_step(s), DB_DONE);
	db_reset(s);
	db_bind_text(s, 1, "dup");
	assert_int_equal(db_step(s), DB_ERROR);
	assert_contains(db_errmsg(db), by_engine(e, "UNIQUE constraint failed",
						   "duplicate key value violates unique constraint"));
	/* The connection goes on: another key after a reset. */
	db_reset(s);
	db_bind_text(s, 1, "other");
	assert_int_equal(db_step(s), DB_DONE);
	/* A bind out of range is reported by the step, then cleared by the reset. */
	db_reset(s);
	db_bind_text(s, 2, "x");
	assert_int_equal(db_step(s), DB_ERROR);
	assert_true(strlen(db_errmsg(db)) > 0);
	db_reset(s);
	db_bind_text(s, 1, "third");
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	assert_int_equal(one_int(db, "SELECT COUNT(*) FROM u"), 3);
	buf_release(&msg);
	db_close(db);
}

/*
 * A failed statement inside a transaction: PostgreSQL aborts the whole
 * transaction (its commit fails and keeps nothing); sqlite keeps the rest.
 */
static void failed_statement_in_a_transaction(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct buf msg = BUF_INIT;
	struct db_stmt *s;

	exec_ok(db, "CREATE TABLE f (k BIGINT PRIMARY KEY)");
	assert_int_equal(db_begin(db, &msg), ERR_OK);
	exec_ok(db, "INSERT INTO f VALUES (1)");
	s = prepare_ok(db, "INSERT INTO f VALUES (?1)");
	db_bind_int(s, 1, 1);
	assert_int_equal(db_step(s), DB_ERROR);
	db_finalize(s);
	assert_true(db_in_transaction(db));
	if (e->engine == DB_POSTGRES) {
		assert_int_equal(db_exec(db, "INSERT INTO f VALUES (2)", &msg), ERR_DB);
		assert_contains(buf_str(&msg), "current transaction is aborted");
		buf_reset(&msg);
		assert_int_equal(db_commit(db, &msg), ERR_DB);
		assert_contains(buf_str(&msg), "rolled back");
		assert_false(db_in_transaction(db));
		assert_int_equal(one_int(db, "SELECT COUNT(*) FROM f"), 0);
	} else {
		exec_ok(db, "INSERT INTO f VALUES (2)");
		assert_int_equal(db_commit(db, &msg), ERR_OK);
		assert_int_equal(one_int(db, "SELECT COUNT(*) FROM f"), 2);
	}
	buf_release(&msg);
	db_close(db);
}

/* More distinct statements than PostgreSQL's per-connection cache holds. */
static void many_distinct_statements(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);

	for (int i = 0; i < 300; i++) {
		char sql[64];
		struct db_stmt *s;

		snprintf(sql, sizeof(sql), "SELECT ?1 + %d", i);
		s = prepare_ok(db, sql);
		db_bind_int(s, 1, 1000);
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_col_int(s, 0), 1000 + i);
		db_finalize(s);
	}
	if (e->engine == DB_POSTGRES)
		assert_true(one_int(db, "SELECT COUNT(*) FROM pg_prepared_statements") <= 256);
	db_close(db);
}

static void reset_and_rerun(void **state)
{
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct db_stmt *s;

	exec_ok(db, "CREATE TABLE q (v BIGINT); INSERT INTO q VALUES (1); INSERT INTO q VALUES (2);"
		    "INSERT INTO q VALUES (3)");
	s = prepare_ok(db, "SELECT v FROM q WHERE v >= ?1 ORDER BY v");
	for (int round = 0; round < 3; round++) {
		db_bind_int(s, 1, 2);
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_col_int(s, 0), 2);
		if (round == 1) { /* reset in the middle of the rows */
			db_reset(s);
			continue;
		}
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_col_int(s, 0), 3);
		assert_int_equal(db_step(s), DB_DONE);
		db_reset(s);
	}
	/* Bindings are cleared by the reset: an unbound parameter is NULL. */
	assert_int_equal(db_step(s), DB_DONE);
	db_reset(s);
	db_bind_int(s, 1, 3);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 3);
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	/* The same SQL prepared again (PostgreSQL: the server's statement is reused). */
	s = prepare_ok(db, "SELECT v FROM q WHERE v >= ?1 ORDER BY v");
	db_bind_int(s, 1, 1);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 1);
	db_finalize(s);
	db_close(db);
}

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
	int64_t t0 = now_ms();

	w->rc = db_begin(w->db, NULL);
	w->waited_ms = now_ms() - t0;
	if (w->rc == ERR_OK) {
		w->seen = one_int(w->db, "SELECT COUNT(*) FROM w");
		w->rc = db_commit(w->db, NULL);
	}
	return NULL;
}

static void begin_waits_for_the_other_commit(void **state)
{
	struct env *e = *state;
	struct db *a = open_ok(e->target), *b = open_ok(e->target);
	struct waiter w = { b, ERR_DB, 0, -1 };
	struct timespec deadline;
	pthread_t t;

	exec_ok(a, "CREATE TABLE w (v BIGINT)");
	assert_int_equal(db_begin(a, NULL), ERR_OK);
	exec_ok(a, "INSERT INTO w VALUES (1)");
	assert_int_equal(pthread_create(&t, NULL, begin_then_count, &w), 0);
	usleep(400 * 1000);
	exec_ok(a, "INSERT INTO w VALUES (2)");
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
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	struct incrementer w[2] = { { e->target, 40, 0 }, { e->target, 40, 0 } };
	struct timespec deadline;
	pthread_t t[2];

	exec_ok(db, "CREATE TABLE c (v BIGINT NOT NULL); INSERT INTO c VALUES (0)");
	for (int i = 0; i < 2; i++)
		assert_int_equal(pthread_create(&t[i], NULL, increment, &w[i]), 0);
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_sec += 30;
	for (int i = 0; i < 2; i++) {
		assert_int_equal(pthread_timedjoin_np(t[i], NULL, &deadline), 0);
		assert_int_equal(w[i].failures, 0);
	}
	assert_int_equal(one_int(db, "SELECT v FROM c"), 80);
	db_close(db);
}

static void advisory_locks(void **state)
{
	struct env *e = *state;
	struct db *a = open_ok(e->target), *b = open_ok(e->target);
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
	b = open_ok(e->target);
	{
		char sql[96];

		snprintf(sql, sizeof(sql), "SELECT pg_terminate_backend(%lld)",
			 (long long)one_int(a, "SELECT pg_backend_pid()"));
		assert_int_equal(one_int(b, sql), 1);
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

/* ---- PostgreSQL: targets, errors, a server restart ---- */

/* The server's URI with user (and :password) in place of its user, into out. */
static void uri_as(char *out, size_t n, const char *user, const char *password)
{
	const char *base = pg_uri();
	const char *host = strstr(base, "://");
	const char *at = host ? strchr(host + 3, '@') : NULL;

	assert_non_null(at);
	snprintf(out, n, "postgres://%s%s%s%s", user, password ? ":" : "", password ? password : "",
		 at);
}

static void name_hides_the_password(void **state)
{
	char uri[1024], want[1024], user[64];
	const char *base = pg_uri();
	const char *u = strstr(base, "://") + 3;
	struct db *db;

	(void)state;
	snprintf(user, sizeof(user), "%.*s", (int)strcspn(u, ":@"), u);
	uri_as(uri, sizeof(uri), user, "hunter2"); /* trust: the password is not checked */
	db = open_ok(uri);
	uri_as(want, sizeof(want), user, "xxxxx");
	assert_string_equal(db_name(db), want);
	assert_int_equal(db_engine(db), DB_POSTGRES);
	db_close(db);
}

#define SESSION_SQL                                                                    \
	"SELECT current_setting('application_name'), current_setting('tcp_keepalives_idle'),"  \
	" current_setting('tcp_keepalives_count')"

/* The session's defaults (db.h): a name, and keepalives; what the URI sets wins. */
static void session_defaults(void **state)
{
	char uri[1024];
	const char *base = pg_uri();
	struct db *db = open_ok(base);
	struct db_stmt *s = prepare_ok(db, SESSION_SQL);

	(void)state;
	assert_int_equal(db_step(s), DB_ROW);
	assert_string_equal(db_col_text(s, 0), "alertbridge");
	assert_string_equal(db_col_text(s, 1), "10");
	assert_string_equal(db_col_text(s, 2), "3");
	db_finalize(s);
	db_close(db);

	snprintf(uri, sizeof(uri), "%s%sapplication_name=mine&options=-ctcp_keepalives_idle%%3D20",
		 base, strchr(base, '?') ? "&" : "?");
	db = open_ok(uri);
	s = prepare_ok(db, SESSION_SQL);
	assert_int_equal(db_step(s), DB_ROW);
	assert_string_equal(db_col_text(s, 0), "mine");
	assert_string_equal(db_col_text(s, 1), "20");
	assert_string_equal(db_col_text(s, 2), "3");
	db_finalize(s);
	db_close(db);
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* pg.sh's cluster checks the password of role pwuser. */
static void password_file(void **state)
{
	struct env *e = *state;
	char dir[256], file[300], uri[1024], secret[64];
	struct buf msg = BUF_INIT;
	struct db *db = NULL;

	if (!getenv("AB_TEST_PG_DIR")) {
		print_message("password_file: skipped (AB_TEST_PG_DIR is unset: not pg.sh's cluster)\n");
		return;
	}
	snprintf(secret, sizeof(secret), "pw-%ld-%lld", (long)getpid(), (long long)now_ms());
	{
		char sql[192];

		snprintf(sql, sizeof(sql), "DROP ROLE IF EXISTS pwuser; CREATE ROLE pwuser LOGIN "
			 "PASSWORD '%s'", secret);
		exec_ok(e->admin, sql);
	}
	tfx_mkdtemp(dir, sizeof(dir), "test_db_pw");
	snprintf(file, sizeof(file), "%s/password", dir);
	uri_as(uri, sizeof(uri), "pwuser", NULL);

	write_file(file, "wrong\n");
	assert_int_equal(db_open(uri, file, &db, &msg), ERR_UNAVAILABLE);
	assert_null(db);
	assert_contains(buf_str(&msg), "password authentication failed");
	assert_contains(buf_str(&msg), uri);
	assert_null(strstr(buf_str(&msg), "wrong"));

	write_file(file, secret);
	buf_reset(&msg);
	assert_int_equal(db_open(uri, file, &db, &msg), ERR_OK);
	assert_int_equal(one_int(db, "SELECT 41 + 1"), 42);
	db_close(db);
	db = NULL;
	{
		char line[128];

		snprintf(line, sizeof(line), "%s\r\nsecond line\n", secret); /* first line only */
		write_file(file, line);
	}
	assert_int_equal(db_open(uri, file, &db, &msg), ERR_OK);
	db_close(db);
	exec_ok(e->admin, "DROP ROLE pwuser");
	buf_release(&msg);
	tfx_remove_tree(dir);
}

/* Run tests/pg/pg.sh restart on the shared cluster. */
static int restart_server(void)
{
	char cmd[1024];
	const char *src = getenv("ALERTBRIDGE_SRC");

	snprintf(cmd, sizeof(cmd), "sh '%s/tests/pg/pg.sh' restart '%s'", src ? src : ".",
		 getenv("AB_TEST_PG_DIR"));
	return system(cmd);
}

static void reconnects_after_a_restart(void **state)
{
	struct env *e = *state;
	struct db *idle = open_ok(e->target), *busy = open_ok(e->target);
	struct buf msg = BUF_INIT;
	int held = 0;
	const int64_t key = ((int64_t)getpid() << 8) + 3;

	if (!getenv("AB_TEST_PG_DIR")) {
		print_message("reconnects_after_a_restart: skipped (AB_TEST_PG_DIR is unset)\n");
		goto out;
	}
	exec_ok(idle, "CREATE TABLE z (v BIGINT)");
	assert_int_equal(one_int(idle, "SELECT COUNT(*) FROM z"), 0);
	assert_int_equal(db_try_lock(idle, key, &held, &msg), ERR_OK);
	assert_int_equal(held, 1);
	assert_int_equal(db_begin(busy, &msg), ERR_OK);
	exec_ok(busy, "INSERT INTO z VALUES (1)");
	/* e->admin is reset too: its next use (teardown) reconnects. */
	assert_int_equal(restart_server(), 0);

	/* Idle: unavailable once, then reconnected; the lock went with the session. */
	buf_reset(&msg);
	assert_int_equal(db_exec(idle, "INSERT INTO z VALUES (2)", &msg), ERR_UNAVAILABLE);
	assert_contains(buf_str(&msg), db_name(idle));
	assert_int_equal(db_exec(idle, "INSERT INTO z VALUES (3)", &msg), ERR_OK);
	assert_false(db_lock_held(idle, key));

	/* In a transaction: no reset until it is rolled back (its rest must not autocommit). */
	assert_int_equal(db_exec(busy, "INSERT INTO z VALUES (4)", &msg), ERR_UNAVAILABLE);
	assert_true(db_in_transaction(busy));
	buf_reset(&msg);
	assert_int_equal(db_exec(busy, "INSERT INTO z VALUES (5)", &msg), ERR_UNAVAILABLE);
	assert_contains(buf_str(&msg), "roll it back");
	db_rollback(busy);
	assert_false(db_in_transaction(busy));
	assert_int_equal(one_int(busy, "SELECT SUM(v) FROM z"), 3); /* only the idle one's */
	/* Prepared statements are made again on the new session, set up as the first. */
	assert_int_equal(one_int(idle, "SELECT COUNT(*) FROM z"), 1);
	assert_int_equal(one_int(idle, "SELECT current_setting('tcp_keepalives_count')::int"), 3);
	assert_int_equal(db_exec(e->admin, "SELECT 1", &msg), ERR_UNAVAILABLE);
out:
	buf_release(&msg);
	db_close(busy);
	db_close(idle);
}

#ifdef AB_HAVE_LIBPQ
/* A port nothing listens on: bound, then closed. */
static int closed_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void bad_targets(void **state)
{
	char uri[256];
	struct buf msg = BUF_INIT;
	struct db *db = (struct db *)&msg; /* must come back NULL */

	(void)state;
	assert_int_equal(db_open("postgres://u:s3cret@h/db?nosuch=1", NULL, &db, &msg),
			 ERR_INVALID);
	assert_null(db);
	assert_contains(buf_str(&msg), "nosuch");
	assert_null(strstr(buf_str(&msg), "s3cret"));
	buf_reset(&msg);
	assert_int_equal(db_open("postgresql://[::1/db", NULL, &db, &msg), ERR_INVALID);
	assert_contains(buf_str(&msg), "IPv6");

	/* Nothing listens: unavailable, said clearly, the password never shown. */
	snprintf(uri, sizeof(uri), "postgres://u:s3cret@127.0.0.1:%d/db?password=s3cret",
		 closed_port());
	buf_reset(&msg);
	assert_int_equal(db_open(uri, NULL, &db, &msg), ERR_UNAVAILABLE);
	assert_string_equal(err_str(ERR_UNAVAILABLE), "unavailable");
	assert_null(db);
	assert_contains(buf_str(&msg), "Connection refused");
	assert_contains(buf_str(&msg), "postgres://u:xxxxx@127.0.0.1:");
	assert_contains(buf_str(&msg), "/db?password=xxxxx");
	assert_null(strstr(buf_str(&msg), "s3cret"));

	/* A password file that is not there, or empty, is named. */
	buf_reset(&msg);
	assert_int_equal(db_open(uri, "/nonexistent/pg-password", &db, &msg), ERR_IO);
	assert_contains(buf_str(&msg), "\"/nonexistent/pg-password\"");
	assert_contains(buf_str(&msg), "No such file");
	buf_reset(&msg);
	assert_int_equal(db_open(uri, "/dev/null", &db, &msg), ERR_INVALID);
	assert_contains(buf_str(&msg), "\"/dev/null\" is empty");
	buf_release(&msg);
}
#endif

static void target_kinds(void **state)
{
	(void)state;
	assert_true(db_target_is_postgres("postgres://u@h/db"));
	assert_true(db_target_is_postgres("postgresql://h"));
	assert_false(db_target_is_postgres("alertbridge.db"));
	assert_false(db_target_is_postgres("/var/lib/postgres://x.db"));
}

static const enum db_engine sqlite_engine = DB_SQLITE, pg_engine = DB_POSTGRES;

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
	struct env *e = *state;
	struct db *db = open_ok(e->target);
	uint64_t v, v2;

	exec_ok(db, "CREATE TABLE t (x INTEGER)");
	if (e->engine != DB_SQLITE) {
		v = 7;
		assert_int_equal(db_data_version_unlocked(db, &v), 1);
		assert_true(v == 0 && version_ok(db) == 0);
		goto out;
	}
	v = unlocked_ok(db);
	assert_true(v != 0);
	assert_true(unlocked_ok(db) == v);  /* reads change nothing */
	assert_int_equal(one_int(db, "SELECT count(*) FROM t"), 0);
	assert_true(unlocked_ok(db) == v);

	exec_ok(db, "INSERT INTO t VALUES (1)");
	v2 = unlocked_ok(db);
	assert_true(v2 != v && v2 != 0);
	v = v2;
	assert_int_equal(db_begin(db, NULL), ERR_OK);
	exec_ok(db, "INSERT INTO t VALUES (4)");
	assert_true(unlocked_ok(db) == v);  /* not committed: nothing anyone can read changed */
	assert_int_equal(db_commit(db, NULL), ERR_OK);
	v2 = unlocked_ok(db);
	assert_true(v2 != v);
	v = v2;
	assert_int_equal(db_begin(db, NULL), ERR_OK);
	exec_ok(db, "INSERT INTO t VALUES (5)");
	db_rollback(db);
	assert_true(unlocked_ok(db) == v);
	exec_ok(db, "BEGIN; COMMIT");  /* wrote nothing */
	assert_true(unlocked_ok(db) == v);

	exec_ok(db, "PRAGMA journal_mode = DELETE");
	v = unlocked_ok(db);
	exec_ok(db, "INSERT INTO t VALUES (6)");
	assert_true(unlocked_ok(db) != v);
	assert_int_equal(one_int(db, "SELECT count(*) FROM t"), 3);
	db_close(db);

	db = open_ok(":memory:");
	exec_ok(db, "CREATE TABLE t (x INTEGER)");
	v = unlocked_ok(db);
	assert_true(v != 0 && version_ok(db) == v);
	exec_ok(db, "INSERT INTO t VALUES (1)");
	assert_true(unlocked_ok(db) != v);
out:
	db_close(db);
}

#define CONTRACT(X)                                                                       \
	X(ints_round_trip)                                                                \
	X(text_utf8_empty_and_null)                                                       \
	X(comparisons_read_as_0_and_1)                                                    \
	X(placeholders_reused_and_literals_untouched)                                     \
	X(returning_id_and_changes)                                                       \
	X(exec_runs_several_statements)                                                   \
	X(transactions)                                                                   \
	X(schema_version_starts_at_0)                                                     \
	X(bad_sql_and_constraints)                                                        \
	X(reset_and_rerun)                                                                \
	X(failed_statement_in_a_transaction)                                              \
	X(many_distinct_statements)                                                       \
	X(begin_waits_for_the_other_commit)                                               \
	X(writers_serialise)                                                              \
	X(advisory_locks)                                                                 \
	X(data_version)

/* Only on PostgreSQL. */
#define PG_ONLY(X)                                                                        \
	X(name_hides_the_password)                                                        \
	X(session_defaults)                                                               \
	X(password_file)                                                                  \
	X(reconnects_after_a_restart)

#define ONE(f) +1
#define SQLITE_TEST(f) { "sqlite_" #f, f, setup, teardown, (void *)&sqlite_engine },
#define PG_TEST(f) { "pg_" #f, f, setup, teardown, (void *)&pg_engine },

int main(void)
{
	/* The tests without a server, the sqlite half, then those that need AB_TEST_PG_URI. */
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(target_kinds),
#ifdef AB_HAVE_LIBPQ
		cmocka_unit_test(bad_targets),
#endif
		CONTRACT(SQLITE_TEST)
		CONTRACT(PG_TEST)
		PG_ONLY(PG_TEST)
	};
	size_t n = sizeof(tests) / sizeof(tests[0]);
	const char *why = NULL;

#ifdef AB_HAVE_LIBPQ
	if (!pg_uri())
		why = "AB_TEST_PG_URI is unset; make test sets it";
#else
	why = "built without libpq";
#endif
	if (why) { /* the PostgreSQL tests are the last ones */
		print_message("test_db: the PostgreSQL half skipped (%s)\n", why);
		n -= (0 CONTRACT(ONE)) + (0 PG_ONLY(ONE));
	}
	return _cmocka_run_group_tests("test_db", tests, n, NULL, NULL);
}
