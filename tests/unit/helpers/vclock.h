/*
 * vclock.h - the unit tests' virtual clock, for code that takes core/clock.h's now_ms and
 * sleep_ms hooks (the API clients, the workers): a sleep records its length and moves the
 * clock, so retries and waits run at once and can be asserted exactly.
 */
#ifndef AB_TEST_VCLOCK_H
#define AB_TEST_VCLOCK_H

#include <stdint.h>

#define VCLOCK_SLEEPS 32

/* Zeroed, then now (or at) set, and most (<= VCLOCK_SLEEPS) if wanted; the test owns it. */
struct vclock {
	int64_t now;                    /* ms since the epoch, UTC (when at is NULL) */
	int64_t *at;                    /* NULL, or the test's own variable that is the time */
	int64_t sleeps[VCLOCK_SLEEPS];  /* each sleep's ms, in order */
	int nsleeps;
	int64_t slept;                  /* the sum of the sleeps (a test may reset it) */
	int most;                       /* the sleeps allowed; 0: VCLOCK_SLEEPS */
};

/* The now_ms hook: ctx is a struct vclock; its time in ms since the epoch. */
int64_t vclock_now(void *ctx);
/*
 * The sleep_ms hook: ctx is a struct vclock.  Records ms (> 0, and at most `most` sleeps,
 * else the test fails) and advances the time by it.
 */
void vclock_sleep(void *ctx, int64_t ms);

#endif
