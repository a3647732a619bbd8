/* clock.c - wall and monotonic clocks, and the default clock/sleep hooks. */
#include "clock.h"

#include <time.h>

#include "banned.h"

int64_t clock_wall_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t clock_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t clock_hook_now_ms(void *ctx)
{
	(void)ctx;
	return clock_wall_ms();
}

void clock_hook_sleep_ms(void *ctx, int64_t ms)
{
	struct timespec ts;

	(void)ctx;
	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)(ms % 1000) * 1000000L;
	while (nanosleep(&ts, &ts) != 0)
		;
}
