/*
 * pgdb.h - a PostgreSQL database of its own for one unit test, on the server
 * AB_TEST_PG_URI names (tests/run.sh starts one): advisory locks are per
 * database, so tests of the worker lock cannot share one.  Failures end the
 * test (cmocka).
 */
#ifndef AB_TEST_PGDB_H
#define AB_TEST_PGDB_H

#include <stddef.h>

/*
 * Create database ab_<tag>_<pid>_<n> and write its URI (AB_TEST_PG_URI with
 * that database) into out (n bytes).  0 when AB_TEST_PG_URI is unset (out is
 * then ""), 1 when made.
 */
int pgdb_create(char *out, size_t n, const char *tag);

/* Drop the database of uri (made by pgdb_create()), ending its sessions. */
void pgdb_drop(const char *uri);

#endif
