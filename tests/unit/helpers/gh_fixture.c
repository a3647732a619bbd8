#include "gh_fixture.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tests/unit/helpers/vclock.h"

static int64_t v_now(void *ctx)
{
	return ((struct gh_fixture *)ctx)->now;
}

static void v_sleep(void *ctx, int64_t ms)
{
	struct gh_fixture *fx = ctx;

	assert_true(ms > 0);
	assert_true(fx->nsleeps < 32);
	fx->sleeps[fx->nsleeps++] = ms;
	fx->now += ms;
}

struct gh_client *gfx_client_at(struct gh_options *o, struct vclock *clock, int64_t *now_ms)
{
	*clock = (struct vclock){ .at = now_ms };
	o->now_ms = vclock_now;
	o->sleep_ms = vclock_sleep;
	o->clock_ctx = clock;
	return gh_client_new(o);
}

int64_t gfx_slept(const struct gh_fixture *fx)
{
	int64_t t = 0;

	for (int i = 0; i < fx->nsleeps; i++)
		t += fx->sleeps[i];
	return t;
}

void gfx_reopen(struct gh_fixture *fx)
{
	gh_client_free(fx->gh);
	fx->gh = gh_client_new(&fx->opts);
}

int gfx_setup(void **state)
{
	struct gh_fixture *fx = calloc(1, sizeof(*fx));

	fx->fake = fake_http_start();
	fx->now = GFX_T0;
	fx->opts.api_url = fake_http_url(fx->fake);
	fx->opts.token = "tok-SECRET-123";
	fx->opts.user_agent = "alertbridge-test/1";
	fx->opts.timeout_ms = 1000;
	fx->opts.max_attempts = 3;
	fx->opts.now_ms = v_now;
	fx->opts.sleep_ms = v_sleep;
	fx->opts.clock_ctx = fx;
	buf_init(&fx->err, 0);
	gfx_reopen(fx);
	*state = fx;
	return 0;
}

int gfx_teardown(void **state)
{
	struct gh_fixture *fx = *state;

	gh_issue_release(&fx->is);
	gh_client_free(fx->gh);
	fake_http_stop(fx->fake);
	buf_release(&fx->err);
	free(fx);
	return 0;
}

void gfx_create_fails(struct gh_fixture *fx, const char *body, const char *marker, enum err rc,
		      const char *msg)
{
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", body, marker, NULL, NULL, &fx->is,
					 &fx->err), rc);
	assert_string_equal(buf_str(&fx->err), msg);
	assert_int_equal(fx->is.number, 0);
}
