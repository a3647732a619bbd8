/*
 * clock.h - the process's clocks, and the default clock and sleep hooks the
 * API clients (GitHub, Kubernetes, Slack) and workers take, so tests can run
 * them in virtual time.  Times are milliseconds (wall: since the Unix epoch,
 * UTC) or microseconds (monotonic: for durations only).
 */
#ifndef AB_CLOCK_H
#define AB_CLOCK_H

#include <stdint.h>

/* CLOCK_REALTIME in milliseconds since the epoch, UTC. */
int64_t clock_wall_ms(void);
/* CLOCK_MONOTONIC in microseconds: for measuring durations, never for timestamps. */
int64_t clock_mono_us(void);

/* clock_wall_ms() in the shape of a now_ms(void *ctx) hook; ctx is ignored. */
int64_t clock_hook_now_ms(void *ctx);
/* Sleep ms milliseconds (nothing for ms <= 0), resuming after signals; ctx is ignored. */
void clock_hook_sleep_ms(void *ctx, int64_t ms);

#endif
