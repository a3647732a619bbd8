/*
 * test_gh.c - the GitHub client against fake_http, in virtual time: exact
 * requests per GitHub's REST docs, pacing, rate limits, retries, error codes,
 * pagination and dry-run (writes in doubt: test_gh_doubt.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <jansson.h>

#include "bridge/gh.h"
#include "core/http_client.h"
#include "core/log.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/gh_fixture.h"

#define T0 1700000000000LL /* 2023-11-14T22:13:20Z */
#define MARKER "<!-- alertbridge:key=0123456789abcdef -->"

/* An issue object as GitHub returns it; the result is static per call site. */
static const char *issue_json(char *out, size_t n, const char *repo, int number, const char *state,
			      const char *closed_at, const char *body)
{
	snprintf(out, n,
		 "{\"number\":%d,\"state\":\"%s\",\"state_reason\":%s,"
		 "\"html_url\":\"https://github.com/%s/issues/%d\","
		 "\"repository_url\":\"https://api.github.com/repos/%s\","
		 "\"created_at\":\"2023-11-14T22:13:20Z\",\"closed_at\":%s%s%s,"
		 "\"body\":\"%s\"}",
		 number, state, closed_at ? "\"completed\"" : "null", repo, number, repo,
		 closed_at ? "\"" : "", closed_at ? closed_at : "null", closed_at ? "\"" : "",
		 body ? body : "");
	return out;
}

/* GitHub answers status with issue_json() of the rest. */
static void push_issue(struct gh_fixture *fx, int status, const char *repo, int number,
		       const char *state, const char *closed_at, const char *body)
{
	char ij[1024];

	fake_http_push(fx->fake, status, NULL,
		       issue_json(ij, sizeof(ij), repo, number, state, closed_at, body));
}

static void assert_github_headers(const struct fake_request *r, int has_body)
{
	assert_string_equal(fake_request_header(r, "authorization"), "Bearer tok-SECRET-123");
	assert_string_equal(fake_request_header(r, "accept"), "application/vnd.github+json");
	assert_string_equal(fake_request_header(r, "x-github-api-version"), "2022-11-28");
	assert_string_equal(fake_request_header(r, "user-agent"), "alertbridge-test/1");
	if (has_body)
		assert_string_equal(fake_request_header(r, "content-type"), "application/json");
	else
		assert_null(fake_request_header(r, "content-type"));
}

/* The request body must equal want (both JSON, compared structurally). */
static void assert_json_body(const struct fake_request *r, const char *want)
{
	json_t *got = json_loads(r->body, 0, NULL);
	json_t *exp = json_loads(want, 0, NULL);
	assert_non_null(got);
	assert_non_null(exp);
	if (!json_equal(got, exp))
		fail_msg("body %s, want %s", r->body, want);
	json_decref(got);
	json_decref(exp);
}

/* Request i was method uri (the test checks headers and body as it needs); returns it. */
static const struct fake_request *saw(struct gh_fixture *fx, size_t i, const char *method,
				      const char *uri)
{
	const struct fake_request *r = fake_http_request(fx->fake, i);

	assert_non_null(r);
	assert_string_equal(r->method, method);
	assert_string_equal(r->uri, uri);
	return r;
}

/* fx slept exactly n times, the i-th want[i] ms; a failure names the sleep. */
static void assert_slept(const struct gh_fixture *fx, int n, const int64_t *want)
{
	assert_int_equal(fx->nsleeps, n);
	for (int i = 0; i < n; i++)
		if (fx->sleeps[i] != want[i])
			fail_msg("sleep %d: %lld ms, want %lld", i, (long long)fx->sleeps[i],
				 (long long)want[i]);
}

/* GitHub answers n comments 201: each is posted (ERR_OK), in turn. */
static void comments_ok(struct gh_fixture *fx, int n)
{
	for (int i = 0; i < n; i++)
		fake_http_push(fx->fake, 201, NULL, "{}");
	for (int i = 0; i < n; i++)
		assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
}

/* After the answers queued, a 201: the comment is posted, GitHub having seen calls requests. */
static void comment_posted_after(struct gh_fixture *fx, size_t calls)
{
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), calls);
}

/* gh_issue_get() of o/r#number returns rc, with exactly the message msg. */
static void get_fails(struct gh_fixture *fx, int number, enum err rc, const char *msg)
{
	assert_int_equal(gh_issue_get(fx->gh, "o/r", number, &fx->is, &fx->err), rc);
	assert_string_equal(buf_str(&fx->err), msg);
}

static void create_sends_documented_request(void **state)
{
	struct gh_fixture *fx = *state;
	const char *labels[] = { "alert", "severity:critical", NULL };
	const char *assignees[] = { "alice", NULL };
	char ij[1024];
	const struct fake_request *r;

	fake_http_push(fx->fake, 201, "X-RateLimit-Remaining: 4999\nX-RateLimit-Reset: 1795003600",
		       issue_json(ij, sizeof(ij), "o/r", 7, "open", NULL, ""));
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "Disk full", "body\n" MARKER, MARKER,
					 labels, assignees, &fx->is, &fx->err), ERR_OK);
	assert_string_equal(fx->is.repo, "o/r");
	assert_int_equal(fx->is.number, 7);
	assert_string_equal(fx->is.state, "open");
	assert_null(fx->is.state_reason);
	assert_string_equal(fx->is.html_url, "https://github.com/o/r/issues/7");
	assert_int_equal(fx->is.closed_at_ms, 0);

	assert_int_equal(fake_http_count(fx->fake), 1);
	r = saw(fx, 0, "POST", "/repos/o/r/issues");
	assert_github_headers(r, 1);
	assert_json_body(r, "{\"title\":\"Disk full\",\"body\":\"body\\n" MARKER "\","
			    "\"labels\":[\"alert\",\"severity:critical\"],\"assignees\":[\"alice\"]}");
	{
		struct gh_stats st;
		gh_stats(fx->gh, &st);
		assert_int_equal(st.requests_ok, 1);
		assert_int_equal(st.ratelimit_remaining, 4999);
		assert_int_equal(st.ratelimit_reset_ms, INT64_C(1795003600000));
	}
}

static void create_without_labels_omits_them(void **state)
{
	struct gh_fixture *fx = *state;
	const char *none[] = { NULL };

	push_issue(fx, 201, "o/r", 8, "open", NULL, "");
	push_issue(fx, 201, "o/r", 9, "open", NULL, "");
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", MARKER, MARKER, NULL, NULL, &fx->is,
					 &fx->err), ERR_OK);
	assert_json_body(fake_http_request(fx->fake, 0), "{\"title\":\"t\",\"body\":\"" MARKER "\"}");
	gh_issue_release(&fx->is);
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", MARKER, MARKER, none, NULL, &fx->is,
					 &fx->err), ERR_OK);
	assert_json_body(fake_http_request(fx->fake, 1),
			 "{\"title\":\"t\",\"body\":\"" MARKER "\",\"labels\":[]}");
}

static void set_state_patches_state_and_reason(void **state)
{
	struct gh_fixture *fx = *state;
	const struct fake_request *r;

	push_issue(fx, 200, "o/r", 7, "closed", "2023-11-14T22:13:20Z", "");
	push_issue(fx, 200, "o/r", 7, "open", NULL, "");
	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 7, "closed", "completed", &fx->is,
					    &fx->err), ERR_OK);
	assert_string_equal(fx->is.state, "closed");
	assert_string_equal(fx->is.state_reason, "completed");
	assert_int_equal(fx->is.closed_at_ms, T0);
	r = saw(fx, 0, "PATCH", "/repos/o/r/issues/7");
	assert_github_headers(r, 1);
	assert_json_body(r, "{\"state\":\"closed\",\"state_reason\":\"completed\"}");

	/* out may be NULL; a NULL reason is left out */
	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 7, "open", NULL, NULL, &fx->err),
			 ERR_OK);
	assert_json_body(fake_http_request(fx->fake, 1), "{\"state\":\"open\"}");

	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 7, "shut", NULL, NULL, &fx->err),
			 ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "issue state \"shut\": want open or closed");
	assert_int_equal(fake_http_count(fx->fake), 2);
}

static void comment_and_labels_post_documented_bodies(void **state)
{
	struct gh_fixture *fx = *state;
	const char *labels[] = { "a", "b", NULL };
	const char *none[] = { NULL };
	const struct fake_request *r;

	fake_http_push(fx->fake, 201, NULL, "{\"id\":1}");
	fake_http_push(fx->fake, 200, NULL, "[]");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "firing again", &fx->err), ERR_OK);
	assert_int_equal(gh_labels_add(fx->gh, "o/r", 7, labels, &fx->err), ERR_OK);
	assert_int_equal(gh_labels_add(fx->gh, "o/r", 7, none, &fx->err), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 2);
	r = saw(fx, 0, "POST", "/repos/o/r/issues/7/comments");
	assert_github_headers(r, 1);
	assert_json_body(r, "{\"body\":\"firing again\"}");
	r = saw(fx, 1, "POST", "/repos/o/r/issues/7/labels");
	assert_json_body(r, "{\"labels\":[\"a\",\"b\"]}");

	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "", &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "comment on o/r#7: empty body");
}

static void get_parses_issue(void **state)
{
	struct gh_fixture *fx = *state;
	const struct fake_request *r;

	push_issue(fx, 200, "o/r", 3, "closed", "2023-11-14T22:13:21Z", "");
	assert_int_equal(gh_issue_get(fx->gh, "o/r", 3, &fx->is, &fx->err), ERR_OK);
	assert_string_equal(fx->is.repo, "o/r");
	assert_int_equal(fx->is.number, 3);
	assert_string_equal(fx->is.state, "closed");
	assert_string_equal(fx->is.state_reason, "completed");
	assert_int_equal(fx->is.closed_at_ms, T0 + 1000);
	r = saw(fx, 0, "GET", "/repos/o/r/issues/3");
	assert_github_headers(r, 0);
	assert_int_equal(r->body_len, 0);
	assert_int_equal(fx->nsleeps, 0);
}

static void get_follows_301_to_transferred_issue(void **state)
{
	struct gh_fixture *fx = *state;
	char loc[256];

	snprintf(loc, sizeof(loc), "Location: %s/repositories/42/issues/3", fake_http_url(fx->fake));
	fake_http_push(fx->fake, 301, loc,
		       "{\"message\":\"Moved Permanently\",\"url\":\"...\"}");
	push_issue(fx, 200, "new-org/new.repo", 11, "open", NULL, "");
	assert_int_equal(gh_issue_get(fx->gh, "o/r", 3, &fx->is, &fx->err), ERR_OK);
	assert_string_equal(fx->is.repo, "new-org/new.repo");
	assert_int_equal(fx->is.number, 11);
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_string_equal(fake_http_request(fx->fake, 1)->uri, "/repositories/42/issues/3");
	assert_github_headers(fake_http_request(fx->fake, 1), 0);
}

static void mutating_calls_are_one_second_apart_gets_are_not(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	fake_http_push(fx->fake, 201, NULL, "{}");
	push_issue(fx, 200, "o/r", 7, "open", NULL, "");
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "one", &fx->err), ERR_OK);
	assert_int_equal(fx->nsleeps, 0);
	assert_int_equal(gh_issue_get(fx->gh, "o/r", 7, &fx->is, &fx->err), ERR_OK);
	assert_int_equal(fx->nsleeps, 0);
	fx->now += 300; /* some time passes */
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "two", &fx->err), ERR_OK);
	assert_slept(fx, 1, (const int64_t[]){ 700 });
	assert_int_equal(fx->now, T0 + 1000);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.pacing_wait_ms, 700);
	assert_int_equal(st.requests_ok, 3);
}

static void content_budget_per_minute_is_kept(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	fx->opts.content_per_minute = 3;
	gfx_reopen(fx);
	comments_ok(fx, 4);
	/* t0, t0+1s, t0+2s, then the 4th waits for t0's slot to leave the window */
	assert_slept(fx, 3, (const int64_t[]){ 1000, 1000, 58000 });
	assert_int_equal(fx->now, T0 + 60000);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.pacing_wait_ms, 60000);
	assert_int_equal(gfx_slept(fx), 60000);
}

/*
 * GitHub allows 500 content-creating requests an hour: mutations spread out
 * enough for the per-minute budget (one a second) still stop at the 501st
 * until the oldest of the hour leaves the window.
 */
static void content_budget_per_hour_is_kept(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	for (int i = 0; i < 501; i++)
		fake_http_push(fx->fake, 201, NULL, "{}");
	for (int i = 0; i < 500; i++) {
		assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
		fx->now += 1000;  /* one a second: 60 a minute, within any per-minute budget */
	}
	assert_int_equal(fx->nsleeps, 0);
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	/* the first went out at T0: the 501st waits for T0 + 1 h */
	assert_int_equal(fx->nsleeps, 1);
	assert_int_equal(fx->now, T0 + 3600000);
	assert_int_equal(fake_http_count(fx->fake), 501);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.pacing_wait_ms, 3600000 - 500000);
}

/* A lower content_per_hour is kept too, and gh_stats() tells what is left. */
static void content_per_hour_option_is_kept(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	fx->opts.content_per_hour = 2;
	gfx_reopen(fx);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.content_left_hour, 2);
	assert_int_equal(st.content_left_minute, 80);
	assert_int_equal(st.content_limit_hour, 2);
	assert_int_equal(st.content_limit_minute, 80);
	assert_int_equal(st.content_full_hour_ms, 0);  /* whole: nothing spent */
	assert_int_equal(st.content_full_minute_ms, 0);
	for (int i = 0; i < 3; i++)
		fake_http_push(fx->fake, 201, NULL, "{}");
	for (int i = 0; i < 2; i++)
		assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.content_left_hour, 0);
	assert_int_equal(st.content_left_minute, 78);
	/* whole again when the newer of the two (T0 + 1 s) leaves each window */
	assert_int_equal(st.content_full_hour_ms, fx->now + 3600000);
	assert_int_equal(st.content_full_minute_ms, fx->now + 60000);
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	/* T0, T0 + 1 s (min interval), then T0 + 1 h */
	assert_int_equal(fx->nsleeps, 2);
	assert_int_equal(fx->now, T0 + 3600000);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.content_left_hour, 0);  /* T0 + 1 s and T0 + 1 h are within it */
}

/* The test hook behind serve --test.second-ms: spacing and the budget's window scaled. */
static void scaled_pacing_keeps_the_budget_in_a_shorter_window(void **state)
{
	struct gh_fixture *fx = *state;

	fx->opts.content_per_minute = 2;
	fx->opts.min_interval_ms = 5;
	fx->opts.window_ms = 300;
	gfx_reopen(fx);
	comments_ok(fx, 3);
	/* t0, t0+5 ms, then the 3rd waits for t0's slot to leave the 300 ms window */
	assert_slept(fx, 2, (const int64_t[]){ 5, 295 });
	assert_int_equal(fx->now, T0 + 300);
}

static void server_error_then_success_is_retried(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;


	fake_http_push(fx->fake, 500, NULL, "{\"message\":\"Server Error\"}");
	push_issue(fx, 200, "o/r", 7, "open", NULL, "");
	assert_int_equal(gh_issue_get(fx->gh, "o/r", 7, &fx->is, &fx->err), ERR_OK);
	assert_int_equal(fx->is.number, 7);
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_int_equal(fx->nsleeps, 1);
	/* first backoff: base 1000 jittered into [500, 1000] */
	assert_true(fx->sleeps[0] >= 500 && fx->sleeps[0] <= 1000);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.retries, 1);
	assert_int_equal(st.requests_server_error, 1);
	assert_int_equal(st.backoff_wait_ms, fx->sleeps[0]);

	/*
	 * a write answered 500 may have been made: not repeated, and no write to
	 * that issue before it can no longer land (test_gh_doubt.c)
	 */
	fake_http_push(fx->fake, 500, NULL, "{\"message\":\"Server Error\"}");
	fake_http_push(fx->fake, 201, NULL, "{}");
	fx->now = T0 + 100000;
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 3);
	fx->now = gh_settled_at(fx->gh, "o/r", 7);
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 4);
	assert_json_body(fake_http_request(fx->fake, 3), "{\"body\":\"x\"}");
}

static void retry_after_is_honoured(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	fake_http_push(fx->fake, 403, "Retry-After: 30",
		       "{\"message\":\"You have exceeded a secondary rate limit.\"}");
	comment_posted_after(fx, 2);
	assert_slept(fx, 1, (const int64_t[]){ 30000 });
	gh_stats(fx->gh, &st);
	assert_int_equal(st.ratelimit_wait_ms, 30000);
	assert_int_equal(st.requests_rate_limited, 1);
}

/* RFC 9110 10.2.3: Retry-After may be an HTTP-date; T0 + 30 s here. */
static void retry_after_as_an_http_date_is_honoured(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 403, "Retry-After: Tue, 14 Nov 2023 22:13:50 GMT",
		       "{\"message\":\"You have exceeded a secondary rate limit.\"}");
	comment_posted_after(fx, 2);
	assert_slept(fx, 1, (const int64_t[]){ 30000 });
}

/* The owner's stopping hook, set once the first wait began (as SIGTERM during it). */
static int stop_after_a_wait(void *ctx)
{
	return ((struct gh_fixture *)ctx)->nsleeps > 0;
}

static void stopping_sends_nothing_after_a_cut_short_wait(void **state)
{
	struct gh_fixture *fx = *state;

	fx->opts.stopping = stop_after_a_wait;
	gfx_reopen(fx);
	fake_http_push(fx->fake, 403, "Retry-After: 60",
		       "{\"message\":\"You have exceeded a secondary rate limit.\"}");
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_non_null(strstr(buf_str(&fx->err), "403"));
	assert_non_null(strstr(buf_str(&fx->err),
			       "POST /repos/o/r/issues/7/comments: not sent: stopping"));
	/* Stopped before anything: no request at all. */
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_string_equal(buf_str(&fx->err),
			    "POST /repos/o/r/issues/7/comments: not sent: stopping");
}

static void exhausted_primary_limit_waits_until_reset(void **state)
{
	struct gh_fixture *fx = *state;
	char ij[1024];
	struct gh_stats st;

	fake_http_push(fx->fake, 403,
		       "X-RateLimit-Remaining: 0\nX-RateLimit-Reset: 1700000042",
		       "{\"message\":\"API rate limit exceeded for user ID 1.\"}");
	fake_http_push(fx->fake, 200, "X-RateLimit-Remaining: 0\nX-RateLimit-Reset: 1700000100",
		       issue_json(ij, sizeof(ij), "o/r", 7, "open", NULL, ""));
	fake_http_push(fx->fake, 200, "X-RateLimit-Remaining: 4999",
		       issue_json(ij, sizeof(ij), "o/r", 7, "open", NULL, ""));
	assert_int_equal(gh_issue_get(fx->gh, "o/r", 7, &fx->is, &fx->err), ERR_OK);
	assert_slept(fx, 1, (const int64_t[]){ 42000 });
	/* a success that used the last request blocks the next call until its reset */
	gh_issue_release(&fx->is);
	assert_int_equal(gh_issue_get(fx->gh, "o/r", 7, &fx->is, &fx->err), ERR_OK);
	assert_int_equal(fx->nsleeps, 2);
	assert_int_equal(fx->now, 1700000100000LL);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.ratelimit_remaining, 4999);
	assert_int_equal(st.ratelimit_wait_ms, 100000);
}

static void status_429_waits_a_minute(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 429, NULL, "{\"message\":\"Too Many Requests\"}");
	comment_posted_after(fx, 2);
	assert_slept(fx, 1, (const int64_t[]){ 60000 });
}

static void secondary_limit_403_by_message_is_retried(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 403, NULL,
		       "{\"message\":\"You have exceeded a secondary rate limit. Please wait a "
		       "few minutes before you try again.\"}");
	fake_http_push(fx->fake, 403, NULL,
		       "{\"message\":\"You have exceeded a secondary rate limit.\"}");
	comment_posted_after(fx, 3);
	assert_slept(fx, 2, (const int64_t[]){ 60000, 120000 });
}

static void unauthorized_is_auth_without_retry(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 401, NULL, "{\"message\":\"Bad credentials\"}");
	get_fails(fx, 1, ERR_AUTH, "GET /repos/o/r/issues/1: 401 unauthorized: Bad credentials");
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_int_equal(fx->nsleeps, 0);
}

/*
 * A 403 that is no rate limit (no x-ratelimit-remaining: 0, retry-after or
 * secondary-limit message) is permanent: ERR_FORBIDDEN at once, with
 * GitHub's message, counted by reason; never "credentials rejected".
 */
static void permanent_403s_are_forbidden_by_reason(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	fake_http_push(fx->fake, 403, "X-RateLimit-Remaining: 4000",
		       "{\"message\":\"Repository was archived so is read-only.\"}");
	fake_http_push(fx->fake, 403, "X-RateLimit-Remaining: 3999",
		       "{\"message\":\"Unable to create comment because issue is locked.\"}");
	fake_http_push(fx->fake, 403, "X-RateLimit-Remaining: 3998",
		       "{\"message\":\"Resource not accessible by personal access token\"}");
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", "b " MARKER, MARKER, NULL, NULL,
					 &fx->is, &fx->err), ERR_FORBIDDEN);
	assert_string_equal(buf_str(&fx->err), "POST /repos/o/r/issues: 403 forbidden: "
					       "Repository was archived so is read-only.");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 1, "x", &fx->err), ERR_FORBIDDEN);
	assert_string_equal(buf_str(&fx->err), "POST /repos/o/r/issues/1/comments: 403 forbidden: "
					       "Unable to create comment because issue is locked.");
	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 1, "closed", "completed", NULL,
					    &fx->err), ERR_FORBIDDEN);
	assert_string_equal(buf_str(&fx->err), "PATCH /repos/o/r/issues/1: 403 forbidden: "
					       "Resource not accessible by personal access token");
	assert_int_equal(fake_http_count(fx->fake), 3);  /* none retried */
	assert_int_equal(fx->nsleeps, 2);  /* only the pacing of the two later mutations */
	gh_stats(fx->gh, &st);
	assert_int_equal(st.requests_forbidden[GH_FORBIDDEN_ARCHIVED], 1);
	assert_int_equal(st.requests_forbidden[GH_FORBIDDEN_LOCKED], 1);
	assert_int_equal(st.requests_forbidden[GH_FORBIDDEN_PERMISSION], 1);
	assert_int_equal(st.requests_unauthorized, 0);
	assert_int_equal(st.requests_rate_limited, 0);
	assert_int_equal(st.retries, 0);
	assert_string_equal(gh_forbidden_str(GH_FORBIDDEN_ARCHIVED), "archived");
	assert_string_equal(gh_forbidden_str(GH_FORBIDDEN_LOCKED), "locked");
	assert_string_equal(gh_forbidden_str(GH_FORBIDDEN_PERMISSION), "permission");
}

static void unprocessable_is_invalid_with_github_message(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 422, NULL,
		       "{\"message\":\"Validation Failed\",\"errors\":[{\"resource\":\"Issue\","
		       "\"code\":\"invalid\",\"field\":\"assignees\"}],"
		       "\"documentation_url\":\"https://docs.github.com/rest\"}");
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", MARKER, MARKER, NULL, NULL, &fx->is,
					 &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err),
			    "POST /repos/o/r/issues: 422 unprocessable: Validation Failed (errors: "
			    "[{\"resource\":\"Issue\",\"code\":\"invalid\",\"field\":\"assignees\"}])");
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_int_equal(fx->is.number, 0);
}

static void not_found_and_gone(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 404, NULL, "{\"message\":\"Not Found\"}");
	fake_http_push(fx->fake, 410, NULL, "{\"message\":\"This issue was deleted\"}");
	get_fails(fx, 5, ERR_NOTFOUND, "GET /repos/o/r/issues/5: 404 not found: Not Found");
	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 5, "closed", "completed", NULL,
					    &fx->err), ERR_GONE);
	assert_string_equal(buf_str(&fx->err),
			    "PATCH /repos/o/r/issues/5: 410 gone: This issue was deleted");
	assert_int_equal(fake_http_count(fx->fake), 2);
}

/* GitHub REST "Get a repository": 200 exists, 404 missing or no access, 5xx no answer. */
static void repo_get_tells_missing_from_unknown(void **state)
{
	struct gh_fixture *fx = *state;
	const struct fake_request *r;

	fake_http_push(fx->fake, 200, NULL, "{\"full_name\":\"o/r\"}");
	fake_http_push(fx->fake, 404, NULL, "{\"message\":\"Not Found\"}");
	for (int i = 0; i < 3; i++)
		fake_http_push(fx->fake, 503, NULL, "{\"message\":\"Unavailable\"}");
	assert_int_equal(gh_repo_get(fx->gh, "o/r", &fx->err), ERR_OK);
	r = saw(fx, 0, "GET", "/repos/o/r");
	assert_github_headers(r, 0);
	assert_int_equal(gh_repo_get(fx->gh, "o/gone", &fx->err), ERR_NOTFOUND);
	assert_string_equal(buf_str(&fx->err), "GET /repos/o/gone: 404 not found: Not Found");
	assert_int_equal(gh_repo_get(fx->gh, "o/r", &fx->err), ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 5);
	assert_int_equal(gh_repo_get(fx->gh, "o/r/x", &fx->err), ERR_INVALID);
	assert_int_equal(fake_http_count(fx->fake), 5);
}

static void persistent_failure_gives_up_with_retry(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	for (int i = 0; i < 3; i++)
		fake_http_push(fx->fake, 502, NULL, "{\"message\":\"Bad Gateway\"}");
	get_fails(fx, 7, ERR_RETRY, "giving up after 3 attempts: GET "
		  "/repos/o/r/issues/7: 502 server error: Bad Gateway");
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_int_equal(fx->nsleeps, 2);
	assert_true(fx->sleeps[1] >= 1000 && fx->sleeps[1] <= 2000); /* doubled */
	gh_stats(fx->gh, &st);
	assert_int_equal(st.retries, 2);
	assert_int_equal(st.requests_server_error, 3);
}

static void create_not_sent_is_retried_without_lookup(void **state)
{
	struct gh_fixture *fx = *state;
	struct fake_http *gone = fake_http_start();
	char url[128];

	/* nothing listens: a clean connect failure never created anything */
	snprintf(url, sizeof(url), "%s", fake_http_url(gone));
	fake_http_stop(gone);
	fx->opts.api_url = url;
	gfx_reopen(fx);
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", MARKER, MARKER, NULL, NULL, &fx->is,
					 &fx->err), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err), "giving up after 3 attempts: POST "));
	assert_int_equal(fx->nsleeps, 2);
}

static void find_marker_follows_link_pagination(void **state)
{
	struct gh_fixture *fx = *state;
	char link[512], page[2048], ij[1024];
	const struct fake_request *r;

	snprintf(link, sizeof(link),
		 "Link: <%s/repositories/1/issues?page=2>; rel=\"next\", "
		 "<%s/repositories/1/issues?page=5>; rel=\"last\"",
		 fake_http_url(fx->fake), fake_http_url(fx->fake));
	snprintf(page, sizeof(page), "[%s]",
		 issue_json(ij, sizeof(ij), "o/r", 40, "open", NULL, "no marker here"));
	fake_http_push(fx->fake, 200, link, page);
	snprintf(page, sizeof(page), "[%s]",
		 issue_json(ij, sizeof(ij), "o/r", 39, "closed", "2023-11-14T22:13:20Z", MARKER));
	fake_http_push(fx->fake, 200, NULL, page);

	assert_int_equal(gh_issue_find_marker(fx->gh, "o/r", MARKER, T0 - 3600000, &fx->is,
					      &fx->err), ERR_OK);
	assert_int_equal(fx->is.number, 39);
	assert_string_equal(fx->is.state, "closed");
	assert_int_equal(fake_http_count(fx->fake), 2);
	r = fake_http_request(fx->fake, 0);
	assert_string_equal(r->uri, "/repos/o/r/issues?state=all&sort=created&direction=desc"
				    "&since=2023-11-14T21:13:20Z&per_page=100");
	r = fake_http_request(fx->fake, 1);
	assert_string_equal(r->uri, "/repositories/1/issues?page=2");
	assert_github_headers(r, 0);
}

static void find_marker_not_found_and_foreign_link(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, "[]");
	assert_int_equal(gh_issue_find_marker(fx->gh, "o/r", MARKER, T0, &fx->is, &fx->err),
			 ERR_NOTFOUND);
	assert_string_equal(buf_str(&fx->err), "no issue in o/r created since 2023-11-14T22:13:20Z "
					       "carries the marker " MARKER);

	fake_http_push(fx->fake, 200, "Link: <https://evil.example/steal?page=2>; rel=\"next\"",
		       "[]");
	assert_int_equal(gh_issue_find_marker(fx->gh, "o/r", MARKER, T0, &fx->is, &fx->err),
			 ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "issue list of o/r: Link next points off the API: "
					       "https://evil.example/steal?page=2");
	assert_int_equal(fake_http_count(fx->fake), 2);
}

static void create_201_unreadable_is_resolved_by_marker(void **state)
{
	struct gh_fixture *fx = *state;
	char page[2048], ij[1024];
	struct gh_stats st;

	/* GitHub made the issue but its answer cannot be read: find it, never fail for good. */
	fake_http_push(fx->fake, 201, NULL, "<html>proxy error</html>");
	snprintf(page, sizeof(page), "[%s]",
		 issue_json(ij, sizeof(ij), "o/r", 8, "open", NULL, "x " MARKER));
	fake_http_push(fx->fake, 200, NULL, page);
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", "x " MARKER, MARKER, NULL, NULL,
					 &fx->is, &fx->err), ERR_OK);
	assert_int_equal(fx->is.number, 8);
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_string_equal(fake_http_request(fx->fake, 1)->method, "GET");
	gh_stats(fx->gh, &st);
	assert_int_equal(st.ambiguous_resolved, 1);

	/* not found (or the lookup fails): ERR_RETRY, not ERR_INVALID (no dead letter) */
	gh_issue_release(&fx->is);
	fake_http_push(fx->fake, 201, NULL, "{\"number\":\"nine\"}");
	fake_http_push(fx->fake, 200, NULL, "[]");
	gfx_create_fails(fx, "x " MARKER, MARKER, ERR_RETRY,
			 "POST issue: answer is not an issue (number, state, repository_url); the "
			 "create may have succeeded: marker lookup: not found");
	assert_int_equal(fake_http_count(fx->fake), 4);
}

static void find_marker_skips_older_issue_of_the_same_key(void **state)
{
	struct gh_fixture *fx = *state;
	char page[2048], ij[1024];

	/* the closed issue a linked create supersedes carries the same marker */
	snprintf(page, sizeof(page), "[%s]",
		 issue_json(ij, sizeof(ij), "o/r", 3, "closed", "2023-11-14T22:13:20Z", MARKER));
	fake_http_push(fx->fake, 200, NULL, page);
	assert_int_equal(gh_issue_find_marker(fx->gh, "o/r", MARKER, T0 + 1000, &fx->is,
					      &fx->err), ERR_NOTFOUND);
	assert_int_equal(fake_http_count(fx->fake), 1);
}

struct seen {
	int n;
	int64_t numbers[8];
	int with_body;
	int64_t comments;
};

static int see_issue(void *ctx, const struct gh_issue *is)
{
	struct seen *s = ctx;
	assert_true(s->n < 8);
	s->numbers[s->n++] = is->number;
	s->with_body += is->body != NULL;
	s->comments += is->comments;
	return 0;
}

static void issue_list_reads_every_page_oldest_first(void **state)
{
	struct gh_fixture *fx = *state;
	char link[512], page[4096], ij1[1024], ij2[1024];
	struct seen s = { 0 };

	snprintf(link, sizeof(link), "Link: <%s/repositories/1/issues?page=2>; rel=\"next\"",
		 fake_http_url(fx->fake));
	snprintf(page, sizeof(page), "[%s,{\"number\":2,\"pull_request\":{}}]",
		 issue_json(ij1, sizeof(ij1), "o/r", 1, "open", NULL, "a"));
	fake_http_push(fx->fake, 200, link, page);
	issue_json(ij2, sizeof(ij2), "o/r", 3, "closed", "2023-11-14T22:13:20Z", MARKER);
	ij2[strlen(ij2) - 1] = '\0';
	snprintf(page, sizeof(page), "[%s,\"comments\":4}]", ij2);
	fake_http_push(fx->fake, 200, NULL, page);
	assert_int_equal(gh_issue_list(fx->gh, "o/r", see_issue, &s, &fx->err), ERR_OK);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.numbers[0], 1);
	assert_int_equal(s.numbers[1], 3);
	assert_int_equal(s.with_body, 2);
	assert_int_equal(s.comments, 4);
	assert_string_equal(fake_http_request(fx->fake, 0)->uri,
			    "/repos/o/r/issues?state=all&sort=created&direction=asc&per_page=100");
	assert_string_equal(fake_http_request(fx->fake, 1)->uri, "/repositories/1/issues?page=2");

	fake_http_push(fx->fake, 200, NULL, "{\"message\":\"not a list\"}");
	assert_int_equal(gh_issue_list(fx->gh, "o/r", see_issue, &s, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "issue list of o/r: answer is not a JSON array");
}

static void unauthorized_is_counted(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	fake_http_push(fx->fake, 401, NULL, "{\"message\":\"Bad credentials\"}");
	get_fails(fx, 1, ERR_AUTH, "GET /repos/o/r/issues/1: 401 unauthorized: Bad credentials");
	gh_stats(fx->gh, &st);
	assert_int_equal(st.requests_unauthorized, 1);
	assert_int_equal(st.retries, 0);
}

static void bad_input_is_rejected_before_any_request(void **state)
{
	struct gh_fixture *fx = *state;

	assert_int_equal(gh_issue_get(fx->gh, "o/r/../x", 1, &fx->is, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "invalid repository \"o/r/../x\": want owner/name");
	assert_int_equal(gh_comment_create(fx->gh, "noslash", 1, "x", &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "invalid repository \"noslash\": want owner/name");
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", "no marker", MARKER, NULL, NULL,
					 &fx->is, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "issue create in o/r: title, body and a marker "
					       "inside the body are required");
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "bad \xff utf8", MARKER, MARKER, NULL,
					 NULL, &fx->is, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "issue create in o/r: title, body, labels and "
					       "assignees must be valid UTF-8");
	assert_int_equal(gh_issue_find_marker(fx->gh, "o/r", "", 0, &fx->is, &fx->err),
			 ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "find marker in o/r: empty marker");
	assert_int_equal(fake_http_count(fx->fake), 0);
}

static void non_issue_answer_is_invalid(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, "<html>");
	fake_http_push(fx->fake, 200, NULL, "{\"number\":1}");
	assert_int_equal(gh_issue_get(fx->gh, "o/r", 1, &fx->is, &fx->err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err), "/repos/o/r/issues/1: answer is not JSON: "));
	get_fails(fx, 1, ERR_INVALID, "/repos/o/r/issues/1: answer is not an issue "
		  "(number, state, repository_url)");
}

static void dry_run_logs_and_makes_no_request(void **state)
{
	struct gh_fixture *fx = *state;
	int fds[2];
	char logbuf[4096];
	ssize_t n;

	fx->opts.token = NULL;
	gfx_reopen(fx);
	assert_true(gh_dry_run(fx->gh));
	assert_int_equal(pipe(fds), 0);
	log_set_fd(fds[1]);
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "Disk full", MARKER, MARKER, NULL, NULL,
					 &fx->is, &fx->err), ERR_OK);
	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 3, "closed", "completed", NULL,
					    &fx->err), ERR_OK);
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 3, "c", &fx->err), ERR_OK);
	log_set_fd(2);
	close(fds[1]);
	n = read(fds[0], logbuf, sizeof(logbuf) - 1);
	close(fds[0]);
	assert_true(n > 0);
	logbuf[n] = '\0';
	assert_non_null(strstr(logbuf, "msg=\"dry-run github call\" method=POST "
				       "path=/repos/o/r/issues title=\"Disk full\""));
	assert_non_null(strstr(logbuf, "method=PATCH path=/repos/o/r/issues/3"));
	assert_non_null(strstr(logbuf, "method=POST path=/repos/o/r/issues/3/comments"));
	assert_null(strstr(logbuf, "tok"));
	assert_int_equal(fx->is.number, 0);
	assert_string_equal(fx->is.state, "open");
	assert_int_equal(fake_http_count(fx->fake), 0);
	/* paced like real calls: three mutating calls, 1 s apart */
	{
		struct gh_stats st;
		gh_stats(fx->gh, &st);
		assert_int_equal(st.pacing_wait_ms, 2000);
		assert_int_equal(fx->now, T0 + 2000);
	}

	fx->opts.token = "tok";
	fx->opts.dry_run = 1;
	gfx_reopen(fx);
	assert_true(gh_dry_run(fx->gh));
	gh_client_free(NULL);
	gh_issue_release(NULL);
}

/* If-None-Match with the stored ETag; 304 is "unchanged", 200 brings the new ETag. */
static void conditional_get_sends_the_etag_and_takes_304_as_unchanged(void **state)
{
	struct gh_fixture *fx = *state;
	char ij[1024];
	int not_modified = -1;

	fake_http_push(fx->fake, 304, "ETag: W/\"abc\"", "");
	assert_int_equal(gh_issue_get_if_changed(fx->gh, "o/r", 3, "W/\"abc\"", &not_modified,
						 &fx->is, &fx->err), ERR_OK);
	assert_int_equal(not_modified, 1);
	assert_int_equal(fx->is.number, 0);
	assert_string_equal(fake_request_header(fake_http_request(fx->fake, 0), "if-none-match"),
			    "W/\"abc\"");
	assert_github_headers(fake_http_request(fx->fake, 0), 0);

	fake_http_push(fx->fake, 200, "ETag: W/\"def\"",
		       issue_json(ij, sizeof(ij), "o/r", 3, "open", NULL, ""));
	assert_int_equal(gh_issue_get_if_changed(fx->gh, "o/r", 3, "W/\"abc\"", &not_modified,
						 &fx->is, &fx->err), ERR_OK);
	assert_int_equal(not_modified, 0);
	assert_int_equal(fx->is.number, 3);
	assert_string_equal(fx->is.etag, "W/\"def\"");
	gh_issue_release(&fx->is);

	/* Without an ETag the GET is unconditional, and a 304 would not be a success. */
	push_issue(fx, 200, "o/r", 3, "open", NULL, "");
	assert_int_equal(gh_issue_get_if_changed(fx->gh, "o/r", 3, NULL, &not_modified, &fx->is,
						 &fx->err), ERR_OK);
	assert_null(fake_request_header(fake_http_request(fx->fake, 2), "if-none-match"));
	assert_null(fx->is.etag);
}

/* The rebuild's list: creator= and labels= percent-encoded; pages counted. */
static void issue_list_filters_by_creator_and_labels_and_counts_pages(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_list_filter f = { "my-app[bot]", "alert,sev one" };
	char link[512];
	struct seen s = { 0 };
	int pages = -1;

	snprintf(link, sizeof(link), "Link: <%s/repositories/1/issues?page=2>; rel=\"next\"",
		 fake_http_url(fx->fake));
	fake_http_push(fx->fake, 200, link, "[]");
	fake_http_push(fx->fake, 200, NULL, "[]");
	assert_int_equal(gh_issue_list_filtered(fx->gh, "o/r", &f, see_issue, &s, &pages, &fx->err),
			 ERR_OK);
	assert_int_equal(pages, 2);
	assert_string_equal(fake_http_request(fx->fake, 0)->uri,
			    "/repos/o/r/issues?state=all&sort=created&direction=asc&per_page=100"
			    "&creator=my-app%5Bbot%5D&labels=alert%2Csev%20one");
}

#define T(f) cmocka_unit_test_setup_teardown(f, gfx_setup, gfx_teardown)

UNIT_MAIN_WITH(if (http_global_init() != ERR_OK) return 1, http_global_cleanup(),
	T(create_sends_documented_request),
	T(create_without_labels_omits_them),
	T(set_state_patches_state_and_reason),
	T(comment_and_labels_post_documented_bodies),
	T(get_parses_issue),
	T(conditional_get_sends_the_etag_and_takes_304_as_unchanged),
	T(issue_list_filters_by_creator_and_labels_and_counts_pages),
	T(get_follows_301_to_transferred_issue),
	T(mutating_calls_are_one_second_apart_gets_are_not),
	T(content_budget_per_minute_is_kept),
	T(content_budget_per_hour_is_kept),
	T(content_per_hour_option_is_kept),
	T(scaled_pacing_keeps_the_budget_in_a_shorter_window),
	T(server_error_then_success_is_retried),
	T(retry_after_is_honoured),
	T(retry_after_as_an_http_date_is_honoured),
	T(stopping_sends_nothing_after_a_cut_short_wait),
	T(exhausted_primary_limit_waits_until_reset),
	T(status_429_waits_a_minute),
	T(secondary_limit_403_by_message_is_retried),
	T(unauthorized_is_auth_without_retry),
	T(permanent_403s_are_forbidden_by_reason),
	T(unprocessable_is_invalid_with_github_message),
	T(not_found_and_gone),
	T(repo_get_tells_missing_from_unknown),
	T(persistent_failure_gives_up_with_retry),
	T(create_not_sent_is_retried_without_lookup),
	T(find_marker_follows_link_pagination),
	T(find_marker_not_found_and_foreign_link),
	T(create_201_unreadable_is_resolved_by_marker),
	T(find_marker_skips_older_issue_of_the_same_key),
	T(issue_list_reads_every_page_oldest_first),
	T(unauthorized_is_counted),
	T(bad_input_is_rejected_before_any_request),
	T(non_issue_answer_is_invalid),
	T(dry_run_logs_and_makes_no_request))
