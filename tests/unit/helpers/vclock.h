/*
 * vclock.h - a virtual clock for unit tests of code that takes now_ms/sleep_ms
 * hooks (the API clients, the workers): a sleep records its length and moves the
 * clock, so retries and waits run at once and can be asserted exactly.
 */
#ifndef AB_TEST_VCLOCK_H
#define AB_TEST_VCLOCK_H

#include <stdint.h>

#define VCLOCK_SLEEPS 32

struct vclock {
	int64_t now;                    /* ms since the epoch */
	int64_t sleeps[VCLOCK_SLEEPS];  /* each sleep's ms, in order */
	int nsleeps;
};

/* The now_ms hook: ctx is a struct vclock. */
int64_t vclock_now(void *ctx);
/* The sleep_ms hook: records ms (> 0, else the test fails) and advances now. */
void vclock_sleep(void *ctx, int64_t ms);
/* The sum of the sleeps so far. */
int64_t vclock_slept(const struct vclock *v);

#endif
