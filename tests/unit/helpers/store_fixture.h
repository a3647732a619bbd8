/*
 * store_fixture.h - fixtures of the store's unit tests (test_store*.c): a
 * fresh directory under /tmp per test, sql through a connection of the test's
 * own, and builders of events and map rows.  Failures end the test (cmocka).
 */
#ifndef AB_TEST_STORE_FIXTURE_H
#define AB_TEST_STORE_FIXTURE_H

#include <stdint.h>

#include "core/store.h"

struct fixture {
	char dir[64];
	char path[128];
	char other[128];  /* a second file name for garbage */
};

/* cmocka setup: a struct fixture with a fresh directory under /tmp in *state. */
int sfx_setup(void **state);
/* cmocka teardown: remove the files of setup()'s fixture and free it. */
int sfx_teardown(void **state);
/* Run sql on path through a connection of the test's own. */
void sfx_sql_exec(const char *path, const char *sql);
/* The integer the one-row query sql returns on path. */
int64_t sfx_sql_int(const char *path, const char *sql);
/* store_open(path) or fail the test. */
struct store *sfx_open_ok(const char *path);
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
