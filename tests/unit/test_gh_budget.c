/*
 * test_gh_budget.c - the GitHub client's content budget beyond one process
 * (bridge/gh_budget.c, issue 19): every mutating request is told to
 * gh_options.note_spend before it is sent, and none is sent when it cannot
 * be recorded; a client restored with what was spent before waits as if it
 * had sent it; a reload's credentials keep what their owner spent.  Against
 * fake_http, in virtual time.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "bridge/gh.h"
#include "core/buf.h"
#include "core/config.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/gh_fixture.h"

#define T0 GFX_T0

/* What note_spend was told (one test at a time). */
static struct {
	int n;
	int64_t sent_ms[8];
	char owner[8][16];
	size_t requests_then[8];  /* requests fake GitHub had seen when it was told */
	int fail;                 /* non-zero: refuse */
	struct fake_http *fake;
} told;

static enum err note_spend(void *ctx, const char *owner, int64_t sent_ms, struct buf *errmsg)
{
	(void)ctx;
	if (told.fail) {
		buf_setf(errmsg, "store x: record a github call: database or disk is full");
		return ERR_DB;
	}
	assert_true(told.n < 8);
	told.sent_ms[told.n] = sent_ms;
	snprintf(told.owner[told.n], sizeof(told.owner[0]), "%s", owner ? owner : "(default)");
	told.requests_then[told.n++] = fake_http_count(told.fake);
	return ERR_OK;
}

static int setup(void **state)
{
	struct gh_fixture *fx;

	gfx_setup(state);
	fx = *state;
	memset(&told, 0, sizeof(told));
	told.fake = fx->fake;
	fx->opts.note_spend = note_spend;
	gfx_reopen(fx);
	return 0;
}

/* Each mutating request is told before it is sent, at the time it is sent; reads are not. */
static void mutations_are_told_before_they_are_sent(void **state)
{
	struct gh_fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, "{\"number\":7,\"state\":\"open\",\"repository_url\":"
		       "\"https://api.github.com/repos/o/r\"}");
	fake_http_push(fx->fake, 201, NULL, "{}");
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_issue_get(fx->gh, "o/r", 7, &fx->is, &fx->err), ERR_OK);
	assert_int_equal(told.n, 0);
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "one", &fx->err), ERR_OK);
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "two", &fx->err), ERR_OK);
	assert_int_equal(told.n, 2);
	assert_int_equal(told.requests_then[0], 1);  /* the GET only: the POST not yet */
	assert_int_equal(told.requests_then[1], 2);
	assert_int_equal(told.sent_ms[0], T0);
	assert_int_equal(told.sent_ms[1], T0 + 1000);  /* after the spacing's wait */
	assert_string_equal(told.owner[0], "(default)");
}

/* A request whose time cannot be recorded is not sent: ERR_RETRY, and errmsg says why. */
static void unrecorded_mutation_is_not_sent(void **state)
{
	struct gh_fixture *fx = *state;

	told.fail = 1;
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "one", &fx->err), ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 0);
	assert_string_equal(buf_str(&fx->err),
			    "POST /repos/o/r/issues/7/comments: not sent: its time could not be "
			    "recorded: store x: record a github call: database or disk is full");
	told.fail = 0;
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "one", &fx->err), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 1);
}

/*
 * A new client restored with the 3 requests another process sent in the last minute
 * (content_per_minute 3) waits until the oldest leaves the minute, as that process would
 * have; spent ones of another owner, or older than the hour, do not count.
 */
static void restored_budget_makes_the_next_mutation_wait(void **state)
{
	struct gh_fixture *fx = *state;
	const struct gh_spent spent[] = {
		{ "", T0 - 20000 }, { NULL, T0 - 40000 }, { "", T0 - 30000 },
		{ "someone-else", T0 - 1000 }, { "", T0 - 3600000 - 1 },
	};
	struct gh_stats st;

	fx->opts.content_per_minute = 3;
	gfx_reopen(fx);
	gh_budget_restore(fx->gh, spent, sizeof(spent) / sizeof(spent[0]));
	gh_stats(fx->gh, &st);
	assert_int_equal(st.content_left_minute, 0);
	assert_int_equal(st.content_left_hour, 497);
	assert_int_equal(st.content_full_minute_ms, T0 + 40000);
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	assert_int_equal(fx->nsleeps, 1);
	assert_int_equal(fx->now, T0 + 20000);  /* T0 - 40 s left the minute */
	gh_stats(fx->gh, &st);
	assert_int_equal(st.pacing_wait_ms, 20000);

	/* Restoring again replaces (a gain of the lead: the store has ours too). */
	gh_budget_restore(fx->gh, NULL, 0);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.content_left_minute, 3);
}

/* The spacing (min_interval_ms) counts a restored request too; the span is the hour's. */
static void restored_request_is_spaced_from(void **state)
{
	struct gh_fixture *fx = *state;
	const struct gh_spent spent[] = { { "", T0 - 200 } };

	assert_int_equal(gh_budget_span_ms(fx->gh), 3600000);
	gh_budget_restore(fx->gh, spent, 1);
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	assert_int_equal(fx->nsleeps, 1);
	assert_int_equal(fx->sleeps[0], 800);
	fx->opts.window_ms = 300;  /* serve --test.second-ms=5: the hour is 60 of them */
	gfx_reopen(fx);
	assert_int_equal(gh_budget_span_ms(fx->gh), 18000);
}

/* A reload hands over new credentials: the owner's budget spent is kept, not made whole. */
static void reloaded_credentials_keep_the_budget(void **state)
{
	struct gh_fixture *fx = *state;
	struct cfg_github g = { 0 };
	struct gh_stats st;

	fx->opts.content_per_minute = 2;
	gfx_reopen(fx);
	for (int i = 0; i < 3; i++)
		fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	g.token = "tok-NEW-456";
	gh_client_set_creds(fx->gh, gh_creds_new(&g));
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 7, "x", &fx->err), ERR_OK);
	assert_int_equal(fx->now, T0 + 60000);  /* waited for T0's slot, as before the reload */
	gh_stats(fx->gh, &st);
	assert_int_equal(st.content_left_minute, 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, gfx_teardown)
UNIT_MAIN(
	T(mutations_are_told_before_they_are_sent),
	T(unrecorded_mutation_is_not_sent),
	T(restored_budget_makes_the_next_mutation_wait),
	T(restored_request_is_spaced_from),
	T(reloaded_credentials_keep_the_budget))
