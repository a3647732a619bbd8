/*
 * pg_fixture.h - a fresh PostgreSQL database per unit test, on the server
 * AB_TEST_PG_URI names (tests/run.sh starts one with tests/pg/pg.sh and
 * exports it).  Failures end the test (cmocka).
 */
#ifndef AB_TEST_PG_FIXTURE_H
#define AB_TEST_PG_FIXTURE_H

#include <stddef.h>

/* AB_TEST_PG_URI, or NULL when unset or empty (the PostgreSQL half is skipped). */
const char *pgfx_server(void);

/*
 * CREATE DATABASE <prefix>_<pid>_<counter> on pgfx_server() and write its
 * URI (the server's URI with that database name) into out (n bytes, the
 * caller's).  Fails the test when there is no server or it refuses.
 */
void pgfx_create(char *out, size_t n, const char *prefix);

/*
 * For a test that needs the server: without one, print "<test>: skipped (AB_TEST_PG_URI is
 * unset)" and return 0 (the test returns, passed); with one, pgfx_create(out, n, prefix)
 * and return 1.
 */
int pgfx_create_or_skip(char *out, size_t n, const char *prefix, const char *test);

/* DROP DATABASE ... WITH (FORCE) of a URI pgfx_create() made (its sessions ended). */
void pgfx_drop(const char *uri);

#endif
