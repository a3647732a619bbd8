/*
 * clock.h - the clocks the unit tests read to bound how long a call took or to stamp what
 * they store: milliseconds of CLOCK_MONOTONIC and of CLOCK_REALTIME (clock_gettime(2)).
 */
#ifndef AB_TEST_CLOCK_H
#define AB_TEST_CLOCK_H

#include <stdint.h>

/* Milliseconds of CLOCK_MONOTONIC: for elapsed times only (its origin is unspecified). */
int64_t tclock_mono_ms(void);

/* Milliseconds since the Unix epoch, UTC (CLOCK_REALTIME). */
int64_t tclock_wall_ms(void);

/*
 * A virtual clock for a client's now_ms and sleep_ms hooks, its context an int64_t of
 * milliseconds since the epoch (the test's): now is its value, a sleep adds to it.
 */
int64_t tclock_virtual_now(void *now_ms);
void tclock_virtual_sleep(void *now_ms, int64_t ms);

#endif
