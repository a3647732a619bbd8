/*
 * am_fixture.h - the Alertmanager webhook fixtures (tests/fixtures/alertmanager) for the unit
 * tests that parse them.  Failures end the test (cmocka).
 */
#ifndef AB_TEST_AM_FIXTURE_H
#define AB_TEST_AM_FIXTURE_H

#include <stddef.h>

#include "core/am.h"

/*
 * The fixture name read from $ALERTBRIDGE_FIXTURES, else
 * $ALERTBRIDGE_SRC/tests/fixtures/alertmanager, else tests/fixtures/alertmanager (run from
 * the repo root): its bytes, NUL-terminated (free() them), *len their count.
 */
char *afx_read_fixture(const char *name, size_t *len);
/* The webhook body as am_parse() reads it (am_payload_free() it); fails unless it parses. */
struct am_payload *afx_parse(const char *body);
/* The fixture name as am_parse() reads it (am_payload_free() it); fails unless it parses. */
struct am_payload *afx_parse_fixture(const char *name);

#endif
