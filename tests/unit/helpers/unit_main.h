/*
 * unit_main.h - main() of a unit test file, written once: UNIT_MAIN(entries...) runs the
 * cmocka entries as one group; UNIT_MAIN_WITH(init, cleanup, entries...) runs the statement
 * init first (a log_setup(), a library's global init) and cleanup after.
 * UNIT_CASE(fn, c) is an entry for one case of a table: fn runs with *state = &c, and the
 * test is named c.name (c a struct with a const char *name); UNIT_CASE_WITH(fn, c, setup,
 * teardown) the same with a cmocka setup, which finds &c in *state and may replace it.
 */
#ifndef AB_TEST_UNIT_MAIN_H
#define AB_TEST_UNIT_MAIN_H

#define UNIT_MAIN_WITH(init, cleanup, ...)                        \
	int main(void)                                            \
	{                                                         \
		const struct CMUnitTest tests[] = { __VA_ARGS__ }; \
		int rc;                                           \
		init;                                             \
		rc = cmocka_run_group_tests(tests, NULL, NULL);   \
		cleanup;                                          \
		return rc;                                        \
	}
#define UNIT_CASE_WITH(fn, c, setup, teardown) { (c).name, fn, setup, teardown, (void *)&(c) }
#define UNIT_CASE(fn, c) UNIT_CASE_WITH(fn, c, NULL, NULL)
#define UNIT_MAIN(...) UNIT_MAIN_WITH((void)0, (void)0, __VA_ARGS__)

#endif
