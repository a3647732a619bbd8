/*
 * clock.h - the unit tests' clock beside core/clock.h's: core's monotonic clock in
 * milliseconds (to bound how long a call took).  The virtual clock for the clients'
 * hooks is vclock.h's.
 */
#ifndef AB_TEST_CLOCK_H
#define AB_TEST_CLOCK_H

#include <stdint.h>

/* clock_mono_us() in milliseconds: for elapsed times only (its origin is unspecified). */
int64_t tclock_mono_ms(void);

#endif
