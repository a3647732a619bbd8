/*
 * clock.c - the unit tests' monotonic and wall clocks in milliseconds (clock.h).
 */
#include "tests/unit/helpers/clock.h"

#include <time.h>

static int64_t ms_of(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t tclock_mono_ms(void)
{
	return ms_of(CLOCK_MONOTONIC);
}

int64_t tclock_wall_ms(void)
{
	return ms_of(CLOCK_REALTIME);
}

int64_t tclock_virtual_now(void *now_ms)
{
	return *(int64_t *)now_ms;
}

void tclock_virtual_sleep(void *now_ms, int64_t ms)
{
	*(int64_t *)now_ms += ms;
}
