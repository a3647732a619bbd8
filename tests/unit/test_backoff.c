/* test_backoff.c - the workers' retry schedule and their gate after own failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/backoff.h"

static void doubles_with_equal_jitter_up_to_the_cap(void **state)
{
	unsigned int seed = 1;
	(void)state;

	for (int round = 0; round < 200; round++) {
		int64_t d = 5000;
		for (int a = 0; a < 12; a++) {
			int64_t w = backoff_ms(a, 5000, 600000, &seed);
			assert_true(w >= d / 2 && w <= d);
			d = d * 2 > 600000 ? 600000 : d * 2;
		}
	}
	assert_int_equal(backoff_ms(0, 0, 600000, &seed), 0);
	assert_int_equal(backoff_ms(3, 1, 1, &seed), 0);  /* half of 1 ms: 0, no jitter */
	assert_in_range(backoff_ms(-1, 5000, 600000, &seed), 2500, 5000);
}

static void jitter_spreads(void **state)
{
	unsigned int seed = 7;
	int64_t lo = INT64_MAX, hi = 0;
	(void)state;

	for (int i = 0; i < 1000; i++) {
		int64_t w = backoff_ms(0, 10000, 600000, &seed);
		lo = w < lo ? w : lo;
		hi = w > hi ? w : hi;
	}
	assert_true(lo < 5500 && hi > 9500);
}

static void gate_closes_after_failures_and_opens_on_success(void **state)
{
	struct backoff_gate g = BACKOFF_GATE_INIT;
	unsigned int seed = 3;
	int64_t w1, w2;
	(void)state;

	assert_false(backoff_gate_closed(&g, 0));
	w1 = backoff_gate_fail(&g, 1000, 5000, 600000, &seed);
	assert_in_range(w1, 2500, 5000);
	assert_true(backoff_gate_closed(&g, 1000));
	assert_true(backoff_gate_closed(&g, 1000 + w1 - 1));
	assert_false(backoff_gate_closed(&g, 1000 + w1));
	w2 = backoff_gate_fail(&g, 1000 + w1, 5000, 600000, &seed);
	assert_in_range(w2, 5000, 10000);  /* the second failure in a row waits longer */
	assert_int_equal(g.failures, 2);
	backoff_gate_ok(&g);
	assert_false(backoff_gate_closed(&g, 1000 + w1));
	assert_in_range(backoff_gate_fail(&g, 0, 5000, 600000, &seed), 2500, 5000);
}

UNIT_MAIN(
	cmocka_unit_test(doubles_with_equal_jitter_up_to_the_cap),
	cmocka_unit_test(jitter_spreads),
	cmocka_unit_test(gate_closes_after_failures_and_opens_on_success))
