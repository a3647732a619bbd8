/*
 * test_api.c - the API clients' one retry loop (core/api.h) against fake_http, in virtual
 * time, with a scripted judge: attempts up to max_attempts, the waits between them,
 * Retry-After, rate-limit blocks, the verdicts that end a call, the giving-up message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <stdlib.h>
#include <string.h>

#include "core/api.h"
#include "core/http_client.h"
#include "core/log.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/vclock.h"

#define T0 1700000000000LL
#define MAX_SCRIPT 8

struct fixture {
	struct fake_http *fake;
	struct http_client *http;
	struct http_request req;
	struct http_response res;
	struct api_policy policy;
	struct api_call call;
	struct api_tally tally;
	struct buf err;
	struct buf url;
	unsigned int seed;
	struct vclock clock;
	int64_t blocked_until;
	/* the judge's script, one entry per attempt judged */
	enum api_verdict verdict[MAX_SCRIPT];
	int64_t wait[MAX_SCRIPT];
	enum err rc[MAX_SCRIPT];
	int uncounted[MAX_SCRIPT];
	/* what the judge saw */
	int judged;
	int seen_n[MAX_SCRIPT];
	int seen_status[MAX_SCRIPT];
	int64_t seen_retry_after_s[MAX_SCRIPT];
	/* prepare's script */
	int prepared;
	enum err prepare_rc;
	struct http_client *swap_to;  /* prepare replaces the client with this one */
};

static int64_t blocked_until(void *ctx)
{
	return ((struct fixture *)ctx)->blocked_until;
}

static enum err prepare(void *ctx, int attempt, struct buf *errmsg)
{
	struct fixture *fx = ctx;

	(void)attempt;
	fx->prepared++;
	if (fx->swap_to) {
		http_client_free(fx->http);
		fx->http = fx->swap_to;
		fx->swap_to = NULL;
	}
	if (fx->prepare_rc != ERR_OK)
		buf_setf(errmsg, "not prepared");
	return fx->prepare_rc;
}

static enum api_verdict judge(void *ctx, struct api_attempt *a, struct buf *errmsg)
{
	struct fixture *fx = ctx;
	int i = fx->judged++;

	assert_true(i < MAX_SCRIPT);
	fx->seen_n[i] = a->n;
	fx->seen_status[i] = a->res->status;
	fx->seen_retry_after_s[i] = a->retry_after_s;
	buf_setf(errmsg, "GET /x: %d", a->res->status);
	a->rc = fx->rc[i];
	a->wait_ms = fx->wait[i];
	a->uncounted = fx->uncounted[i];
	return fx->verdict[i];
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct http_request req = HTTP_REQUEST_INIT;

	fx->fake = fake_http_start();
	fx->http = http_client_new(NULL);
	fx->clock.now = T0;
	fx->seed = 1;
	buf_init(&fx->err, 0);
	buf_init(&fx->url, 0);
	assert_int_equal(buf_printf(&fx->url, "%s/x", fake_http_url(fx->fake)), ERR_OK);
	fx->req = req;
	fx->req.method = "GET";
	fx->req.url = buf_str(&fx->url);
	fx->req.timeout_ms = 2000;
	http_response_init(&fx->res);
	fx->policy.name = "fakeapi";
	fx->policy.max_attempts = 3;
	fx->policy.base_ms = 1000;
	fx->policy.cap_ms = 30000;
	fx->policy.block_log = "waiting for fakeapi rate limit";
	fx->call.policy = &fx->policy;
	fx->call.http = &fx->http;
	fx->call.req = &fx->req;
	fx->call.method = "things.get";
	fx->call.ctx = fx;
	fx->call.now_ms = vclock_now;
	fx->call.sleep_ms = vclock_sleep;
	fx->call.clock_ctx = &fx->clock;
	fx->call.seed = &fx->seed;
	fx->call.blocked_until_ms = blocked_until;
	fx->call.prepare = prepare;
	fx->call.judge = judge;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;

	http_response_release(&fx->res);
	http_client_free(fx->http);
	http_client_free(fx->swap_to);
	fake_http_stop(fx->fake);
	buf_release(&fx->err);
	buf_release(&fx->url);
	free(fx);
	return 0;
}

/* Script attempt i of the judge. */
static void script(struct fixture *fx, int i, enum api_verdict v, int64_t wait_ms, enum err rc)
{
	fx->verdict[i] = v;
	fx->wait[i] = wait_ms;
	fx->rc[i] = rc;
}

static enum err run(struct fixture *fx)
{
	return api_call(&fx->call, &fx->res, &fx->tally, &fx->err);
}

static void transient_is_retried_up_to_max_attempts_then_given_up(void **state)
{
	struct fixture *fx = *state;

	for (int i = 0; i < 3; i++) {
		fake_http_push(fx->fake, 503, NULL, "busy");
		script(fx, i, API_TRANSIENT, API_BACKOFF, ERR_OK);
	}
	assert_int_equal(run(fx), ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_int_equal(fx->judged, 3);
	assert_int_equal(fx->seen_n[0], 1);
	assert_int_equal(fx->seen_n[2], 3);
	assert_int_equal(fx->seen_status[2], 503);
	/* without jitter: base, then doubled; none after the last attempt */
	assert_int_equal(fx->clock.nsleeps, 2);
	assert_int_equal(fx->clock.sleeps[0], 1000);
	assert_int_equal(fx->clock.sleeps[1], 2000);
	assert_string_equal(buf_str(&fx->err), "giving up after 3 attempts: GET /x: 503");
	assert_int_equal(fx->tally.retries, 2);
	assert_int_equal(fx->tally.retry_wait_ms, fx->clock.slept);
	assert_int_equal(fx->tally.block_wait_ms, 0);
}

static void transient_then_done_ends_ok(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 500, NULL, NULL);
	fake_http_push(fx->fake, 200, NULL, "fine");
	script(fx, 0, API_TRANSIENT, API_BACKOFF, ERR_OK);
	script(fx, 1, API_DONE, 0, ERR_OK);
	assert_int_equal(run(fx), ERR_OK);
	assert_int_equal(fx->res.status, 200);
	assert_string_equal(buf_str(&fx->res.body), "fine");
	assert_int_equal(fx->tally.retries, 1);
}

static void retry_after_reaches_the_judge_and_its_wait_is_honoured(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 429, "Retry-After: 7", NULL);
	fake_http_push(fx->fake, 200, NULL, NULL);
	script(fx, 0, API_TRANSIENT, 7000, ERR_OK);
	script(fx, 1, API_DONE, 0, ERR_OK);
	assert_int_equal(run(fx), ERR_OK);
	assert_int_equal(fx->seen_retry_after_s[0], 7);
	assert_int_equal(fx->seen_retry_after_s[1], -1);  /* absent */
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fx->clock.sleeps[0], 7000);
	assert_int_equal(fx->tally.retry_wait_ms, 7000);
}

static void retry_after_past_the_policy_limit_counts_as_absent(void **state)
{
	struct fixture *fx = *state;

	fx->policy.retry_after_max_ms = 60000;
	fake_http_push(fx->fake, 429, "Retry-After: 61", NULL);
	fake_http_push(fx->fake, 429, "Retry-After: 60", NULL);
	script(fx, 0, API_TRANSIENT, 0, ERR_OK);
	script(fx, 1, API_FAILED, 0, ERR_RETRY);
	assert_int_equal(run(fx), ERR_RETRY);
	assert_int_equal(fx->seen_retry_after_s[0], -1);
	assert_int_equal(fx->seen_retry_after_s[1], 60);
}

static void permanent_failure_stops_at_once(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 404, NULL, NULL);
	script(fx, 0, API_FAILED, 0, ERR_NOTFOUND);
	assert_int_equal(run(fx), ERR_NOTFOUND);
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_int_equal(fx->clock.nsleeps, 0);
	assert_string_equal(buf_str(&fx->err), "GET /x: 404");  /* no "giving up" */
	assert_int_equal(fx->tally.retries, 0);
}

static void ambiguous_ends_in_retry_without_sending_again(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 502, NULL, NULL);
	script(fx, 0, API_AMBIGUOUS, API_BACKOFF, ERR_OK);
	assert_int_equal(run(fx), ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_int_equal(fx->clock.nsleeps, 0);
	assert_string_equal(buf_str(&fx->err), "GET /x: 502");
}

static void uncounted_retry_is_sent_at_once_and_not_counted(void **state)
{
	struct fixture *fx = *state;

	fx->policy.max_attempts = 2;
	fake_http_push(fx->fake, 401, NULL, NULL);
	fake_http_push(fx->fake, 503, NULL, NULL);
	fake_http_push(fx->fake, 503, NULL, NULL);
	script(fx, 0, API_TRANSIENT, 0, ERR_OK);
	fx->uncounted[0] = 1;
	script(fx, 1, API_TRANSIENT, API_BACKOFF, ERR_OK);
	script(fx, 2, API_TRANSIENT, API_BACKOFF, ERR_OK);
	assert_int_equal(run(fx), ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_int_equal(fx->seen_n[0], 1);
	assert_int_equal(fx->seen_n[1], 1);  /* the renewed attempt keeps its number */
	assert_int_equal(fx->seen_n[2], 2);
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fx->clock.sleeps[0], 1000);
	assert_string_equal(buf_str(&fx->err), "giving up after 2 attempts: GET /x: 503");
	assert_int_equal(fx->tally.retries, 1);
}

static void a_rate_limit_is_waited_out_before_sending(void **state)
{
	struct fixture *fx = *state;

	fx->blocked_until = T0 + 5000;
	fake_http_push(fx->fake, 200, NULL, NULL);
	script(fx, 0, API_DONE, 0, ERR_OK);
	assert_int_equal(run(fx), ERR_OK);
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fx->clock.sleeps[0], 5000);
	assert_int_equal(fx->tally.block_wait_ms, 5000);
	assert_int_equal(fx->tally.retry_wait_ms, 0);
}

static void a_rate_limit_past_the_longest_wait_fails_unsent(void **state)
{
	struct fixture *fx = *state;

	fx->policy.block_max_wait_ms = 60000;
	fx->blocked_until = T0 + 119001;
	assert_int_equal(run(fx), ERR_RETRY);
	assert_string_equal(buf_str(&fx->err),
			    "things.get: rate limited by fakeapi, retry after 120 s");
	assert_int_equal(fake_http_count(fx->fake), 0);
	assert_int_equal(fx->prepared, 0);
	assert_int_equal(fx->clock.nsleeps, 0);
}

static void prepare_failing_ends_the_call_unsent(void **state)
{
	struct fixture *fx = *state;

	fx->prepare_rc = ERR_AUTH;
	assert_int_equal(run(fx), ERR_AUTH);
	assert_string_equal(buf_str(&fx->err), "not prepared");
	assert_int_equal(fake_http_count(fx->fake), 0);
	assert_int_equal(fx->judged, 0);
}

static void a_client_replaced_by_prepare_is_the_one_used(void **state)
{
	struct fixture *fx = *state;

	fx->swap_to = http_client_new(NULL);  /* freed the old: the loop must not use it */
	fake_http_push(fx->fake, 200, NULL, NULL);
	script(fx, 0, API_DONE, 0, ERR_OK);
	assert_int_equal(run(fx), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 1);
}

static void transport_failure_reaches_the_judge_apart_from_errmsg(void **state)
{
	struct fixture *fx = *state;

	fx->req.url = "http://127.0.0.1:1/secret-path";  /* refused */
	script(fx, 0, API_FAILED, 0, ERR_IO);
	buf_setf(&fx->err, "before");
	assert_int_equal(run(fx), ERR_IO);
	assert_int_equal(fx->seen_status[0], 0);
	/* the judge wrote errmsg; the loop never copied http_do()'s text (the URL) into it */
	assert_null(strstr(buf_str(&fx->err), "secret-path"));
}

static void backoff_doubles_to_the_cap_with_or_without_jitter(void **state)
{
	struct api_policy p = { .base_ms = 1000, .cap_ms = 5000 };
	unsigned int seed = 3;
	(void)state;

	assert_int_equal(api_backoff_ms(&p, 1, &seed), 1000);
	assert_int_equal(api_backoff_ms(&p, 2, &seed), 2000);
	assert_int_equal(api_backoff_ms(&p, 3, &seed), 4000);
	assert_int_equal(api_backoff_ms(&p, 4, &seed), 5000);
	assert_int_equal(api_backoff_ms(&p, 30, &seed), 5000);
	p.jitter = 1;
	for (int round = 0; round < 100; round++) {
		assert_in_range(api_backoff_ms(&p, 1, &seed), 500, 1000);
		assert_in_range(api_backoff_ms(&p, 3, &seed), 2000, 4000);
		assert_in_range(api_backoff_ms(&p, 9, &seed), 2500, 5000);
	}
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

UNIT_MAIN_WITH(if (http_global_init() != ERR_OK) return 1; log_setup(LOG_ERROR, LOG_LOGFMT),
	       http_global_cleanup(),
	       T(transient_is_retried_up_to_max_attempts_then_given_up),
	       T(transient_then_done_ends_ok),
	       T(retry_after_reaches_the_judge_and_its_wait_is_honoured),
	       T(retry_after_past_the_policy_limit_counts_as_absent),
	       T(permanent_failure_stops_at_once),
	       T(ambiguous_ends_in_retry_without_sending_again),
	       T(uncounted_retry_is_sent_at_once_and_not_counted),
	       T(a_rate_limit_is_waited_out_before_sending),
	       T(a_rate_limit_past_the_longest_wait_fails_unsent),
	       T(prepare_failing_ends_the_call_unsent),
	       T(a_client_replaced_by_prepare_is_the_one_used),
	       T(transport_failure_reaches_the_judge_apart_from_errmsg),
	       cmocka_unit_test(backoff_doubles_to_the_cap_with_or_without_jitter))
