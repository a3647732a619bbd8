/* vclock.c - the unit tests' virtual clock (vclock.h). */
#include "vclock.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

static int64_t *vclock_time(struct vclock *v)
{
	return v->at ? v->at : &v->now;
}

int64_t vclock_now(void *ctx)
{
	return *vclock_time(ctx);
}

void vclock_sleep(void *ctx, int64_t ms)
{
	struct vclock *v = ctx;

	assert_true(ms > 0);
	assert_true(v->nsleeps < (v->most ? v->most : VCLOCK_SLEEPS));
	v->sleeps[v->nsleeps++] = ms;
	v->slept += ms;
	*vclock_time(v) += ms;
}
