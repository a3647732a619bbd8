/*
 * store_fixture.h - fixtures of the store's unit tests (test_store*.c): a
 * fresh store per test on the engine AB_TEST_STORE names, sql through a
 * connection of the test's own, and builders of events and map rows.
 * Failures end the test (cmocka).
 *
 * Engines: without AB_TEST_STORE (or with AB_TEST_STORE=sqlite) each test's
 * store is the file ab.db in a fresh directory under /tmp (or ":memory:"); with
 * AB_TEST_STORE=postgres it is a fresh database on the server AB_TEST_PG_URI
 * names (pg_fixture.h), dropped at teardown.  tests/run.sh runs the store's
 * unit binaries once per engine.
 */
#ifndef AB_TEST_STORE_FIXTURE_H
#define AB_TEST_STORE_FIXTURE_H

#include <stdint.h>

#include "store/store.h"
#include "store/store_events.h"

struct fixture {
	char dir[64];     /* a fresh directory, on both engines */
	char path[256];   /* the store's target: dir/ab.db, or a PostgreSQL URI */
	char other[128];  /* a second file name for garbage */
	int postgres;     /* 1 when path is a PostgreSQL database */
	struct store *st; /* sfx_store()'s, closed at teardown; NULL until then */
};

/* 1 when AB_TEST_STORE=postgres: the tests' stores are PostgreSQL databases. */
int sfx_postgres(void);
/*
 * On PostgreSQL, print "skipped on PostgreSQL: why" and skip the test (cmocka's
 * skip(): the test ends here); on sqlite, nothing.  For what only an sqlite
 * file has (its bytes, WAL, PRAGMAs, paths).
 */
void sfx_sqlite_only(const char *why);

/*
 * cmocka setup: a struct fixture in *state with a fresh directory and a
 * fresh store target on the engine of AB_TEST_STORE (see above); -1 when
 * AB_TEST_STORE=postgres and AB_TEST_PG_URI is unset.  sfx_setup_memory():
 * the same, but on sqlite the target is ":memory:" (for tests that need no
 * file: no fsync per commit).
 */
int sfx_setup(void **state);
int sfx_setup_memory(void **state);
/* A cmocka test of fn with sfx_setup() (a file on sqlite) or sfx_setup_memory(). */
#define SFX_TEST(fn) cmocka_unit_test_setup_teardown(fn, sfx_setup, sfx_teardown)
#define SFX_MEMORY_TEST(fn) cmocka_unit_test_setup_teardown(fn, sfx_setup_memory, sfx_teardown)
/*
 * cmocka teardown: close sfx_store()'s store, remove the files (and the PostgreSQL database)
 * of setup()'s fixture.
 */
int sfx_teardown(void **state);
/*
 * The test's store: the fixture's target opened (sfx_open_ok()) on the first call, the same
 * store after; sfx_teardown() closes it.  *state is setup()'s struct fixture.
 */
struct store *sfx_store(void **state);
/* Run sql (one or more statements) on target through a connection of the test's own. */
void sfx_sql_exec(const char *target, const char *sql);
/* The integer the one-row query sql returns on target. */
int64_t sfx_sql_int(const char *target, const char *sql);
/*
 * Make every INSERT into table for whose row when (an SQL condition on NEW,
 * e.g. "NEW.key = 'boom'", the same in both dialects; NULL for every row)
 * holds fail with message: a trigger named inject (and on PostgreSQL its
 * function inject_fail()).  sfx_uninject() removes them.
 */
void sfx_inject(const char *target, const char *table, const char *when, const char *message);
void sfx_uninject(const char *target, const char *table);
/* The schema version of target (sqlite's user_version, PostgreSQL's schema_version row). */
int sfx_schema_version(const char *target);
void sfx_set_schema_version(const char *target, int version);
/* store_open_target(target, NULL) or fail the test. */
struct store *sfx_open_ok(const char *target);
/* An event of kind/receiver/key/status with fixed times and a small payload (strings borrowed). */
struct store_event sfx_mkev(const char *kind, const char *receiver, const char *key,
			    const char *status);
/* Enqueue one firing event of kind and key for receiver "default"; its id. */
int64_t sfx_enq1(struct store *st, const char *kind, const char *key);
/* The id of the next due event of kind at now (ms), 0 when none. */
int64_t sfx_next_id(struct store *st, const char *kind, int64_t now);
/* An open map row of receiver/key as issue number in my-org/cluster-alerts (strings borrowed). */
struct store_issue sfx_mkrow(const char *receiver, const char *key, int64_t number);
/* Fail unless haystack contains needle. */
void sfx_assert_contains(const char *haystack, const char *needle);

#endif
