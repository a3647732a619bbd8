/* clock.c - wall and monotonic clocks, and the default clock/sleep hooks. */
#include "clock.h"

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

void clock_cond_init_mono(pthread_cond_t *c)
{
	pthread_condattr_t attr;

	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(c, &attr);
	pthread_condattr_destroy(&attr);
}

struct timespec clock_mono_deadline(int64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
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

void clock_stop_init(struct clock_stop *s)
{
	pthread_mutex_init(&s->mu, NULL);
	clock_cond_init_mono(&s->cond);
	s->requested = 0;
}

void clock_stop_release(struct clock_stop *s)
{
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->mu);
}

void clock_stop_request(struct clock_stop *s)
{
	pthread_mutex_lock(&s->mu);
	s->requested = 1;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->mu);
}

void clock_stop_join(struct clock_stop *s, pthread_t thread)
{
	clock_stop_request(s);
	pthread_join(thread, NULL);
}

int clock_stop_requested(struct clock_stop *s)
{
	int r;

	pthread_mutex_lock(&s->mu);
	r = s->requested;
	pthread_mutex_unlock(&s->mu);
	return r;
}

void clock_stop_sleep_ms(struct clock_stop *s, int64_t ms)
{
	struct timespec until;

	if (ms <= 0)
		return;
	until = clock_mono_deadline(ms);
	pthread_mutex_lock(&s->mu);
	while (!s->requested) {
		if (pthread_cond_timedwait(&s->cond, &s->mu, &until))
			break;
	}
	pthread_mutex_unlock(&s->mu);
}
