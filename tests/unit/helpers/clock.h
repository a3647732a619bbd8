/*
 * clock.h - the unit tests' clocks beside core/clock.h's: core's monotonic clock in
 * milliseconds (to bound how long a call took), and a virtual clock for the clients' hooks.
 */
#ifndef AB_TEST_CLOCK_H
#define AB_TEST_CLOCK_H

#include <stdint.h>

/* clock_mono_us() in milliseconds: for elapsed times only (its origin is unspecified). */
int64_t tclock_mono_ms(void);

/*
 * A virtual clock for a client's now_ms and sleep_ms hooks, its context an int64_t of
 * milliseconds since the epoch (the test's): now is its value, a sleep adds to it.
 */
int64_t tclock_virtual_now(void *now_ms);
void tclock_virtual_sleep(void *now_ms, int64_t ms);

#endif
