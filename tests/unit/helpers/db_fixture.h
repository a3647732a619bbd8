/*
 * db_fixture.h - what the db.h contract's tests (test_db*.c) share: one test's database
 * on sqlite (a file in a fresh directory) or on the PostgreSQL server AB_TEST_PG_URI names
 * (tests/run.sh starts one with tests/pg/pg.sh; a fresh schema per test), wrappers that
 * end the test (cmocka) on an error, and a main() that leaves out the PostgreSQL half when
 * there is no server.
 */
#ifndef AB_TEST_DB_FIXTURE_H
#define AB_TEST_DB_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "store/db.h"

struct CMUnitTest;

/* One test's database: a file, or a schema of its own on the server. */
struct dbfx_env {
	enum db_engine engine;
	char dir[256];
	char target[1024];   /* what db_open() gets */
	char schema[64];     /* PostgreSQL */
	struct db *admin;    /* PostgreSQL: the connection that made the schema */
	struct db *db;       /* dbfx_db()'s connection, closed at teardown; NULL until then */
};

/* The engines a test's state names (cmocka's initial_state). */
extern const enum db_engine dbfx_sqlite_engine, dbfx_pg_engine;

/*
 * Per-test setup and teardown: *state names the engine on entry and is a struct dbfx_env
 * (heap, freed by dbfx_teardown) after; the sqlite file is <dir>/test.db, the schema
 * test_db_<pid>_<n>, dropped at teardown (after a server restart, on the second try).
 */
int dbfx_setup(void **state);
int dbfx_teardown(void **state);

/*
 * The test's connection: dbfx_open_ok() of its target on the first call, the same one
 * after; dbfx_teardown() closes it (before the schema is dropped).  *state is the
 * struct dbfx_env of dbfx_setup().
 */
struct db *dbfx_db(void **state);

/* Test f on one engine, named sqlite_f or pg_f. */
#define DBFX_SQLITE_TEST(f) { "sqlite_" #f, f, dbfx_setup, dbfx_teardown, (void *)&dbfx_sqlite_engine },
#define DBFX_PG_TEST(f) { "pg_" #f, f, dbfx_setup, dbfx_teardown, (void *)&dbfx_pg_engine },

/* $AB_TEST_PG_URI, or NULL when unset or empty. */
const char *dbfx_pg_uri(void);

/* db_open(target) without a password file; fails the test on an error. */
struct db *dbfx_open_ok(const char *target);

/* db_exec(); fails the test, naming sql, on an error. */
void dbfx_exec_ok(struct db *db, const char *sql);

/* db_prepare(); fails the test, naming sql, on an error.  The caller finalizes. */
struct db_stmt *dbfx_prepare_ok(struct db *db, const char *sql);

/* The integer of the one-row query sql; fails the test when there is no row. */
int64_t dbfx_one_int(struct db *db, const char *sql);

/* Fails the test unless hay (which may be NULL) contains needle. */
void dbfx_assert_contains(const char *hay, const char *needle);

/* sqlite or pg, by e's engine. */
const char *dbfx_by_engine(const struct dbfx_env *e, const char *sqlite, const char *pg);

/*
 * main() of a test_db*.c file named name: run the n tests, the last n_pg of which need the
 * server; without AB_TEST_PG_URI (or libpq) those are left out with a message saying why.
 * Returns cmocka's result.
 */
int dbfx_run(const char *name, const struct CMUnitTest *tests, size_t n, size_t n_pg);

#endif
