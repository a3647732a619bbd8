/*
 * clock.h - the process's clocks, and the default clock and sleep hooks the
 * API clients (GitHub, Kubernetes, Slack) and workers take, so tests can run
 * them in virtual time.  Times are milliseconds (wall: since the Unix epoch,
 * UTC) or microseconds (monotonic: for durations only).
 */
#ifndef AB_CLOCK_H
#define AB_CLOCK_H

#include <pthread.h>
#include <stdint.h>
#include <time.h>

/* CLOCK_REALTIME in milliseconds since the epoch, UTC. */
int64_t clock_wall_ms(void);
/* CLOCK_MONOTONIC in microseconds: for measuring durations, never for timestamps. */
int64_t clock_mono_us(void);

/*
 * pthread_cond_init(c) with CLOCK_MONOTONIC as the clock of its timed waits
 * (pthread_condattr_setclock(3)), so that a change of the wall clock moves
 * no deadline; pthread_cond_destroy(c) releases it.
 */
void clock_cond_init_mono(pthread_cond_t *c);
/*
 * The CLOCK_MONOTONIC time ms milliseconds (>= 0) from now, as the absolute
 * deadline pthread_cond_timedwait(3) takes on a clock_cond_init_mono() one.
 */
struct timespec clock_mono_deadline(int64_t ms);

/* clock_wall_ms() in the shape of a now_ms(void *ctx) hook; ctx is ignored. */
int64_t clock_hook_now_ms(void *ctx);
/* Sleep ms milliseconds (nothing for ms <= 0), resuming after signals; ctx is ignored. */
void clock_hook_sleep_ms(void *ctx, int64_t ms);

/*
 * A worker's stop request that also cuts its sleeps short (the bridge's and
 * the janitor's threads).  Embedded in the worker; clock_stop_init() and
 * clock_stop_release() bracket its life.  Thread-safe.
 */
struct clock_stop {
	pthread_mutex_t mu;
	pthread_cond_t cond;  /* timed waits on CLOCK_MONOTONIC */
	int requested;
};

void clock_stop_init(struct clock_stop *s);
void clock_stop_release(struct clock_stop *s);
/* Ask to stop: every clock_stop_sleep_ms() in progress returns now, later ones at once. */
void clock_stop_request(struct clock_stop *s);
/*
 * clock_stop_request(s), then pthread_join(3) thread, the worker that
 * watches s: returns once it has ended.  Its result is dropped.
 */
void clock_stop_join(struct clock_stop *s, pthread_t thread);
/* Non-zero once clock_stop_request() was called. */
int clock_stop_requested(struct clock_stop *s);
/* Sleep ms milliseconds, or less when a stop is (or was) requested. */
void clock_stop_sleep_ms(struct clock_stop *s, int64_t ms);

#endif
