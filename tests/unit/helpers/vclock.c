/* vclock.c - the unit tests' virtual clock (vclock.h). */
#include "vclock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

int64_t vclock_now(void *ctx)
{
	return ((struct vclock *)ctx)->now;
}

void vclock_sleep(void *ctx, int64_t ms)
{
	struct vclock *v = ctx;

	assert_true(ms > 0);
	assert_true(v->nsleeps < VCLOCK_SLEEPS);
	v->sleeps[v->nsleeps++] = ms;
	v->now += ms;
}

int64_t vclock_slept(const struct vclock *v)
{
	int64_t t = 0;

	for (int i = 0; i < v->nsleeps; i++)
		t += v->sleeps[i];
	return t;
}
