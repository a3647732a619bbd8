/*
 * clock.c - the unit tests' monotonic milliseconds and virtual clock (clock.h).
 */
#include "tests/unit/helpers/clock.h"

#include "core/clock.h"

int64_t tclock_mono_ms(void)
{
	return clock_mono_us() / 1000;
}

int64_t tclock_virtual_now(void *now_ms)
{
	return *(int64_t *)now_ms;
}

void tclock_virtual_sleep(void *now_ms, int64_t ms)
{
	*(int64_t *)now_ms += ms;
}
