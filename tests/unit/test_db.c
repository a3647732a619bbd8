/*
 * test_db.c - the db.h contract's statements (core/db.c, db_sqlite.c, db_pg.c): values,
 * placeholders, transactions, errors, resets; run against sqlite (a file in a fresh
 * directory per test) and, when AB_TEST_PG_URI names a server (tests/run.sh starts one
 * with tests/pg/pg.sh), against PostgreSQL in a fresh schema per test (db_fixture.h).
 * Two connections are test_db_conns.c's, PostgreSQL's own behaviour test_db_pg.c's.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/buf.h"
#include "store/db.h"
#include "tests/unit/helpers/db_fixture.h"

/* ---- statements ---- */

static void ints_round_trip(void **state)
{
	struct db *db = dbfx_db(state);
	const int64_t values[] = { INT64_C(5000000000), -3, INT64_MAX, INT64_MIN, 0 };
	struct db_stmt *s;

	dbfx_exec_ok(db, "CREATE TABLE n (i BIGINT NOT NULL, v BIGINT)");
	s = dbfx_prepare_ok(db, "INSERT INTO n (i, v) VALUES (?1, ?2)");
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

	s = dbfx_prepare_ok(db, "SELECT i, v FROM n ORDER BY i");
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
	assert_true(dbfx_one_int(db, "SELECT MAX(v) - 1 FROM n") == INT64_MAX - 1);
}

static void text_utf8_empty_and_null(void **state)
{
	struct db *db = dbfx_db(state);
	const char *utf8 = "Gr\xc3\xbc\xc3\x9f" "e, \xe4\xb8\x96\xe7\x95\x8c \xe2\x9c\x93 it's \"q\"";
	struct db_stmt *s;

	dbfx_exec_ok(db, "CREATE TABLE t (i BIGINT NOT NULL, s TEXT)");
	s = dbfx_prepare_ok(db, "INSERT INTO t (i, s) VALUES (?1, ?2)");
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

	s = dbfx_prepare_ok(db, "SELECT s, length(s) FROM t ORDER BY i");
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
	s = dbfx_prepare_ok(db, "SELECT COUNT(*) FROM t WHERE CAST(?1 AS TEXT) IS NULL OR s = ?1");
	db_bind_null(s, 1);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 3);
	db_reset(s);
	db_bind_text(s, 1, utf8);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 1);
	db_finalize(s);
}

static void comparisons_read_as_0_and_1(void **state)
{
	struct db *db = dbfx_db(state);
	struct db_stmt *s;

	dbfx_exec_ok(db, "CREATE TABLE b (i BIGINT NOT NULL, s TEXT);"
		    "INSERT INTO b VALUES (1, 'x'); INSERT INTO b VALUES (7, NULL)");
	s = dbfx_prepare_ok(db, "SELECT i > ?1, i = ?2, s IS NULL, EXISTS (SELECT 1 FROM b WHERE i = ?2)"
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
}

static void placeholders_reused_and_literals_untouched(void **state)
{
	struct db *db = dbfx_db(state);
	struct db_stmt *s;

	/* ?1 twice; ?N inside a literal, an identifier and a comment stay as written. */
	dbfx_exec_ok(db, "CREATE TABLE p (\"q?1\" TEXT, n BIGINT)");
	s = dbfx_prepare_ok(db, "INSERT INTO p (\"q?1\", n) VALUES (?2 || '?1 ''?2''', ?1 + ?1)");
	db_bind_int(s, 1, INT64_C(3000000000));
	db_bind_text(s, 2, "a");
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
	s = dbfx_prepare_ok(db, "SELECT \"q?1\", n, '?' /* ?3 */ FROM p -- ?4\n WHERE n = ?1 * 2");
	db_bind_int(s, 1, INT64_C(3000000000));
	assert_int_equal(db_step(s), DB_ROW);
	assert_string_equal(db_col_text(s, 0), "a?1 '?2'");
	assert_true(db_col_int(s, 1) == INT64_C(6000000000));
	assert_string_equal(db_col_text(s, 2), "?");
	assert_int_equal(db_step(s), DB_DONE);
	db_finalize(s);
}

static void returning_id_and_changes(void **state)
{
	struct dbfx_env *e = *state;
	struct db *db = dbfx_db(state);
	struct db_stmt *s;

	dbfx_exec_ok(db, dbfx_by_engine(e, "CREATE TABLE r (id INTEGER PRIMARY KEY, name TEXT NOT NULL)",
			      "CREATE TABLE r (id BIGINT GENERATED BY DEFAULT AS IDENTITY "
			      "PRIMARY KEY, name TEXT NOT NULL)"));
	s = dbfx_prepare_ok(db, "INSERT INTO r (name) VALUES (?1) RETURNING id");
	for (int i = 1; i <= 4; i++) {
		db_bind_text(s, 1, i % 2 ? "odd" : "even");
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_col_int(s, 0), i);
		assert_int_equal(db_step(s), DB_DONE);
		assert_int_equal(db_changes(db), 1);
		db_reset(s);
	}
	db_finalize(s);
	s = dbfx_prepare_ok(db, "UPDATE r SET name = ?1 WHERE name = ?2");
	db_bind_text(s, 1, "x");
	db_bind_text(s, 2, "odd");
	assert_int_equal(db_step(s), DB_DONE);
	assert_int_equal(db_changes(db), 2);
	db_finalize(s);
	dbfx_exec_ok(db, "DELETE FROM r");
	assert_int_equal(db_changes(db), 4);
	/* A query leaves the count of the last write alone. */
	assert_int_equal(dbfx_one_int(db, "SELECT COUNT(*) FROM r"), 0);
	assert_int_equal(db_changes(db), 4);
	dbfx_exec_ok(db, "DELETE FROM r WHERE id = 1");
	assert_int_equal(db_changes(db), 0);
}

static void exec_runs_several_statements(void **state)
{
	struct db *db = dbfx_db(state);
	struct buf msg = BUF_INIT;

	dbfx_exec_ok(db, "CREATE TABLE a (x BIGINT PRIMARY KEY); INSERT INTO a VALUES (1);"
		    "INSERT INTO a VALUES (2);");
	assert_int_equal(dbfx_one_int(db, "SELECT SUM(x) FROM a"), 3);
	assert_int_equal(db_exec(db, "INSERT INTO a VALUES (3); INSERT INTO nosuch VALUES (4)", &msg),
			 ERR_DB);
	dbfx_assert_contains(buf_str(&msg), db_name(db));
	dbfx_assert_contains(buf_str(&msg), "nosuch");
	buf_release(&msg);
}

static void transactions(void **state)
{
	struct db *db = dbfx_db(state);
	struct buf msg = BUF_INIT;

	dbfx_exec_ok(db, "CREATE TABLE x (v BIGINT)");
	assert_false(db_in_transaction(db));
	assert_int_equal(db_begin(db, &msg), ERR_OK);
	assert_true(db_in_transaction(db));
	assert_int_equal(db_begin(db, &msg), ERR_DB); /* no nesting */
	assert_true(db_in_transaction(db));
	dbfx_exec_ok(db, "INSERT INTO x VALUES (1)");
	db_rollback(db);
	assert_false(db_in_transaction(db));
	assert_int_equal(dbfx_one_int(db, "SELECT COUNT(*) FROM x"), 0);
	db_rollback(db); /* none open: nothing happens */

	assert_int_equal(db_begin(db, &msg), ERR_OK);
	dbfx_exec_ok(db, "INSERT INTO x VALUES (2)");
	assert_int_equal(db_commit(db, &msg), ERR_OK);
	assert_false(db_in_transaction(db));
	assert_int_equal(dbfx_one_int(db, "SELECT SUM(v) FROM x"), 2);
	buf_reset(&msg);
	assert_int_equal(db_commit(db, &msg), ERR_DB);
	dbfx_assert_contains(buf_str(&msg), db_name(db));
	buf_release(&msg);
}

static void schema_version_starts_at_0(void **state)
{
	struct dbfx_env *e = *state;
	struct db *db = dbfx_open_ok(e->target);
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

	db = dbfx_open_ok(e->target);
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
	struct dbfx_env *e = *state;
	struct db *db = dbfx_db(state);
	struct buf msg = BUF_INIT;
	struct db_stmt *s = NULL;
	enum err rc = db_prepare(db, "SELEC 1", &s, &msg);

	if (rc == ERR_OK) {
		assert_int_equal(e->engine, DB_POSTGRES);
		assert_int_equal(db_step(s), DB_ERROR);
		assert_int_equal(db_step(s), DB_ERROR); /* spent until reset */
		dbfx_assert_contains(db_errmsg(db), "syntax error");
		db_finalize(s);
	} else {
		assert_int_equal(rc, ERR_DB);
		assert_null(s);
		dbfx_assert_contains(buf_str(&msg), db_name(db));
		dbfx_assert_contains(buf_str(&msg), "syntax error");
	}

	/* A placeholder out of range: refused at prepare, the reason in db_errmsg(). */
	s = (struct db_stmt *)&msg;
	assert_int_equal(db_prepare(db, "SELECT ?0", &s, NULL), ERR_DB);
	assert_null(s);
	assert_true(strlen(db_errmsg(db)) > 0);

	dbfx_exec_ok(db, "CREATE TABLE u (k TEXT PRIMARY KEY)");
	s = dbfx_prepare_ok(db, "INSERT INTO u (k) VALUES (?1)");
	db_bind_text(s, 1, "dup");
	assert_int_equal(db_step(s), DB_DONE);
	db_reset(s);
	db_bind_text(s, 1, "dup");
	assert_int_equal(db_step(s), DB_ERROR);
	dbfx_assert_contains(db_errmsg(db), dbfx_by_engine(e, "UNIQUE constraint failed",
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
	assert_int_equal(dbfx_one_int(db, "SELECT COUNT(*) FROM u"), 3);
	buf_release(&msg);
}

/*
 * A failed statement inside a transaction: PostgreSQL aborts the whole
 * transaction (its commit fails and keeps nothing); sqlite keeps the rest.
 */
static void failed_statement_in_a_transaction(void **state)
{
	struct dbfx_env *e = *state;
	struct db *db = dbfx_db(state);
	struct buf msg = BUF_INIT;
	struct db_stmt *s;

	dbfx_exec_ok(db, "CREATE TABLE f (k BIGINT PRIMARY KEY)");
	assert_int_equal(db_begin(db, &msg), ERR_OK);
	dbfx_exec_ok(db, "INSERT INTO f VALUES (1)");
	s = dbfx_prepare_ok(db, "INSERT INTO f VALUES (?1)");
	db_bind_int(s, 1, 1);
	assert_int_equal(db_step(s), DB_ERROR);
	db_finalize(s);
	assert_true(db_in_transaction(db));
	if (e->engine == DB_POSTGRES) {
		assert_int_equal(db_exec(db, "INSERT INTO f VALUES (2)", &msg), ERR_DB);
		dbfx_assert_contains(buf_str(&msg), "current transaction is aborted");
		buf_reset(&msg);
		assert_int_equal(db_commit(db, &msg), ERR_DB);
		dbfx_assert_contains(buf_str(&msg), "rolled back");
		assert_false(db_in_transaction(db));
		assert_int_equal(dbfx_one_int(db, "SELECT COUNT(*) FROM f"), 0);
	} else {
		dbfx_exec_ok(db, "INSERT INTO f VALUES (2)");
		assert_int_equal(db_commit(db, &msg), ERR_OK);
		assert_int_equal(dbfx_one_int(db, "SELECT COUNT(*) FROM f"), 2);
	}
	buf_release(&msg);
}

/* More distinct statements than PostgreSQL's per-connection cache holds. */
static void many_distinct_statements(void **state)
{
	struct dbfx_env *e = *state;
	struct db *db = dbfx_db(state);

	for (int i = 0; i < 300; i++) {
		char sql[64];
		struct db_stmt *s;

		snprintf(sql, sizeof(sql), "SELECT ?1 + %d", i);
		s = dbfx_prepare_ok(db, sql);
		db_bind_int(s, 1, 1000);
		assert_int_equal(db_step(s), DB_ROW);
		assert_int_equal(db_col_int(s, 0), 1000 + i);
		db_finalize(s);
	}
	if (e->engine == DB_POSTGRES)
		assert_true(dbfx_one_int(db, "SELECT COUNT(*) FROM pg_prepared_statements") <= 256);
}

static void reset_and_rerun(void **state)
{
	struct db *db = dbfx_db(state);
	struct db_stmt *s;

	dbfx_exec_ok(db, "CREATE TABLE q (v BIGINT); INSERT INTO q VALUES (1); INSERT INTO q VALUES (2);"
		    "INSERT INTO q VALUES (3)");
	s = dbfx_prepare_ok(db, "SELECT v FROM q WHERE v >= ?1 ORDER BY v");
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
	s = dbfx_prepare_ok(db, "SELECT v FROM q WHERE v >= ?1 ORDER BY v");
	db_bind_int(s, 1, 1);
	assert_int_equal(db_step(s), DB_ROW);
	assert_int_equal(db_col_int(s, 0), 1);
	db_finalize(s);
}

#define CONTRACT(X) \
	X(ints_round_trip) \
	X(text_utf8_empty_and_null) \
	X(comparisons_read_as_0_and_1) \
	X(placeholders_reused_and_literals_untouched) \
	X(returning_id_and_changes) \
	X(exec_runs_several_statements) \
	X(transactions) \
	X(schema_version_starts_at_0) \
	X(bad_sql_and_constraints) \
	X(failed_statement_in_a_transaction) \
	X(many_distinct_statements) \
	X(reset_and_rerun)

#define ONE(f) +1

int main(void)
{
	/* the sqlite half, then the one that needs AB_TEST_PG_URI */
	static const struct CMUnitTest tests[] = {
		CONTRACT(DBFX_SQLITE_TEST)
		CONTRACT(DBFX_PG_TEST)
	};

	return dbfx_run("test_db", tests, sizeof(tests) / sizeof(tests[0]), 0 CONTRACT(ONE));
}
