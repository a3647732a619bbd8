/*
 * test_repos.c - the cache of repositories GitHub says are missing, against
 * fake_http: only a 404 on GET /repos/{o}/{r} counts, it is kept ttl_ms and
 * then asked again, a 200 drops it, a 5xx is no answer, and forget empties it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "bridge/gh.h"
#include "bridge/repos.h"
#include "core/log.h"
#include "tests/unit/helpers/fake_http.h"

#define T0 1700000000000LL

struct fixture {
	struct fake_http *fake;
	struct gh_client *gh;
	int64_t now;
};

static int64_t v_now(void *ctx)
{
	return ((struct fixture *)ctx)->now;
}

static void v_sleep(void *ctx, int64_t ms)
{
	((struct fixture *)ctx)->now += ms;
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct gh_options o = { 0 };

	fx->fake = fake_http_start();
	fx->now = T0;
	o.api_url = fake_http_url(fx->fake);
	o.token = "tok";
	o.max_attempts = 2;
	o.now_ms = v_now;
	o.sleep_ms = v_sleep;
	o.clock_ctx = fx;
	fx->gh = gh_client_new(&o);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	gh_client_free(fx->gh);
	fake_http_stop(fx->fake);
	free(fx);
	return 0;
}

static void missing_is_kept_for_the_ttl(void **state)
{
	struct fixture *fx = *state;
	struct repos *r = repos_new(fx->gh, 60000);
	struct buf reason = BUF_INIT, err = BUF_INIT;

	fake_http_push(fx->fake, 404, NULL, "{\"message\":\"Not Found\"}");
	assert_false(repos_known_missing(r, "o/gone", fx->now));
	assert_int_equal(repos_check(r, "o/gone", fx->now, &reason, &err), ERR_NOTFOUND);
	assert_string_equal(buf_str(&reason), "repository o/gone not found or no access");
	assert_string_equal(fake_http_request(fx->fake, 0)->uri, "/repos/o/gone");
	assert_true(repos_known_missing(r, "o/gone", fx->now + 59999));
	assert_true(repos_known_missing(r, "O/Gone", fx->now));  /* GitHub ignores case */
	assert_false(repos_known_missing(r, "o/other", fx->now));
	assert_false(repos_known_missing(r, "o/gone", fx->now + 60000));  /* ask again */

	/* It appeared: a 200 drops the answer. */
	fake_http_push(fx->fake, 200, NULL, "{\"full_name\":\"o/gone\"}");
	assert_int_equal(repos_check(r, "o/gone", fx->now, &reason, &err), ERR_OK);
	assert_false(repos_known_missing(r, "o/gone", fx->now));

	/* A 5xx is no answer: nothing kept, the caller retries. */
	fake_http_push(fx->fake, 503, NULL, "{}");
	fake_http_push(fx->fake, 503, NULL, "{}");
	assert_int_equal(repos_check(r, "o/flaky", fx->now, &reason, &err), ERR_RETRY);
	assert_false(repos_known_missing(r, "o/flaky", fx->now));
	assert_int_equal(fake_http_count(fx->fake), 4);

	fake_http_push(fx->fake, 404, NULL, "{}");
	assert_int_equal(repos_check(r, "o/gone", fx->now, NULL, &err), ERR_NOTFOUND);
	repos_forget(r);
	assert_false(repos_known_missing(r, "o/gone", fx->now));
	buf_release(&reason);
	buf_release(&err);
	repos_free(r);
	repos_free(NULL);
}

/* More missing repositories than slots: the oldest answer goes first. */
static void the_oldest_answer_is_replaced(void **state)
{
	struct fixture *fx = *state;
	struct repos *r = repos_new(fx->gh, 0);  /* 10 minutes */
	struct buf err = BUF_INIT;
	char name[32];

	for (int i = 0; i < 65; i++) {
		fake_http_push(fx->fake, 404, NULL, "{}");
		snprintf(name, sizeof(name), "o/r%d", i);
		assert_int_equal(repos_check(r, name, fx->now + i, NULL, &err), ERR_NOTFOUND);
	}
	assert_false(repos_known_missing(r, "o/r0", fx->now + 100));
	assert_true(repos_known_missing(r, "o/r1", fx->now + 100));
	assert_true(repos_known_missing(r, "o/r64", fx->now + 599999));
	assert_false(repos_known_missing(r, "o/r64", fx->now + 64 + 600000));
	buf_release(&err);
	repos_free(r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(missing_is_kept_for_the_ttl, setup, teardown),
		cmocka_unit_test_setup_teardown(the_oldest_answer_is_replaced, setup, teardown),
	};

	log_setup(LOG_ERROR, LOG_LOGFMT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
