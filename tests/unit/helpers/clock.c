/*
 * clock.c - the unit tests' monotonic milliseconds (clock.h).
 */
#include "tests/unit/helpers/clock.h"

#include "core/clock.h"

int64_t tclock_mono_ms(void)
{
	return clock_mono_us() / 1000;
}
