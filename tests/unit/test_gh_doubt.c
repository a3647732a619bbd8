/*
 * test_gh_doubt.c - the GitHub client's writes in doubt (issue 19: a slow
 * GitHub made second issues and comments): a create or marked comment that
 * was sent and whose answer was lost (a timeout, reset or 5xx) is never sent
 * again at once, since GitHub documents no idempotency for POST and may still
 * make it; a marked comment sent again by the same client waits until the
 * first can no longer land (gh_write_settled_at()) and is looked for first.
 * Against fake_http, in virtual time.
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
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/gh_fixture.h"

#define T0 1700000000000LL /* 2023-11-14T22:13:20Z */
#define MARKER "<!-- alertbridge:key=0123456789abcdef -->"

/*
 * GitHub documents no idempotency for POST and may finish a write after the
 * client gave up: a sent create whose answer is lost is never repeated, nor
 * looked for at once (it may not have landed yet): ERR_RETRY, in doubt.
 */
static void ambiguous_create_is_in_doubt_not_repeated(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	fake_http_push(fx->fake, 502, NULL, "{\"message\":\"Server Error\"}");
	gfx_create_fails(fx, "text " MARKER, MARKER, ERR_RETRY,
			 "POST /repos/o/r/issues: 502 server error: Server Error; create in doubt: "
			 "sent, it may still land (not repeated)");
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_int_equal(fx->nsleeps, 0);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.writes_in_doubt, 1);
	assert_int_equal(st.retries, 0);
}

/* Issue 19: GitHub made the issue 8 s after a 5 s timeout; the client had posted it again. */
static void create_answered_after_the_timeout_is_not_repeated(void **state)
{
	struct gh_fixture *fx = *state;

	fx->opts.timeout_ms = 150;
	gfx_reopen(fx);
	fake_http_push_delayed(fx->fake, 400, 201, NULL, "{}");
	fake_http_push(fx->fake, 200, NULL, "[]");  /* not landed yet when looked for */
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(gh_issue_create(fx->gh, "o/r", "t", MARKER, MARKER, NULL, NULL, &fx->is,
					 &fx->err), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err), "; create in doubt: sent, it may still land "
						  "(not repeated)"));
	assert_int_equal(fake_http_count(fx->fake), 1);
	/* it can no longer land after the timeout and GitHub's 10 s processing limit */
	assert_int_equal(gh_write_settled_at(fx->gh, T0), T0 + 150 + 10000);
}

#define CMARK "<!-- alertbridge:episode=2023-11-14T22:00:00.000Z event=firing -->"

static void marked_comment_ambiguous_is_in_doubt_not_repeated(void **state)
{
	struct gh_fixture *fx = *state;
	struct gh_stats st;

	fake_http_push(fx->fake, 502, NULL, "{\"message\":\"Server Error\"}");
	fake_http_push(fx->fake, 201, NULL, "{\"id\":1}");
	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, "firing again\n\n" CMARK,
						  CMARK, &fx->err), ERR_RETRY);
	assert_string_equal(buf_str(&fx->err), "POST /repos/o/r/issues/5/comments: 502 server "
					       "error: Server Error; comment in doubt: sent, it may "
					       "still land (not repeated)");
	assert_int_equal(fake_http_count(fx->fake), 1);
	gh_stats(fx->gh, &st);
	assert_int_equal(st.writes_in_doubt, 1);

	/* another write to the issue waits until that one can no longer land */
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 5, "again", &fx->err), ERR_RETRY);
	assert_string_equal(buf_str(&fx->err), "POST /repos/o/r/issues/5/comments: an earlier "
					       "write to o/r#5 may still land for 11000 ms: not sent");
	assert_int_equal(fake_http_count(fx->fake), 1);
	/* on another issue it goes */
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 6, "again", &fx->err), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 2);
	fake_http_push(fx->fake, 201, NULL, "{\"id\":2}");
	fake_http_push(fx->fake, 201, NULL, "{\"id\":3}");
	fx->now += 11000;
	assert_int_equal(gh_comment_create(fx->gh, "o/r", 5, "again", &fx->err), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_string_equal(fake_http_request(fx->fake, 2)->uri, "/repos/o/r/issues/5/comments");

	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, "no marker", CMARK,
						  &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "comment on o/r#5: the marker must be in the body");
	assert_int_equal(fake_http_count(fx->fake), 3);
}

/*
 * A state change answered after the timeout (the campaign's "slow"): a
 * reopen sent before it lands would be overtaken by the late close.  No
 * write to the issue goes before it can no longer land.
 */
static void late_state_change_holds_the_next_write(void **state)
{
	struct gh_fixture *fx = *state;

	fx->opts.timeout_ms = 150;
	gfx_reopen(fx);
	fake_http_push_delayed(fx->fake, 400, 200, NULL, "{}");
	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 9, "closed", "completed", NULL,
					    &fx->err), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err), "; write in doubt: sent, it may still land"));
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_int_equal(gh_settled_at(fx->gh, "o/r", 9), T0 + 150 + 10000);
	assert_int_equal(gh_settled_at(fx->gh, "O/R", 9), T0 + 150 + 10000);  /* names: any case */
	assert_int_equal(gh_settled_at(fx->gh, "o/r", 8), 0);

	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 9, "open", "reopened", NULL, &fx->err),
			 ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 1);

	fx->now = T0 + 150 + 10000;
	assert_int_equal(gh_settled_at(fx->gh, "o/r", 9), 0);
	fake_http_push(fx->fake, 200, NULL,
		       "{\"number\":9,\"state\":\"open\",\"repository_url\":"
		       "\"https://api.github.com/repos/o/r\"}");
	assert_int_equal(gh_issue_set_state(fx->gh, "o/r", 9, "open", "reopened", NULL, &fx->err),
			 ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 2);
}

/*
 * The same marked comment again from the same client (a caller that keeps no
 * note of its own): not before the first can no longer land, then looked for.
 */
static void comment_in_doubt_is_looked_for_once_settled(void **state)
{
	struct gh_fixture *fx = *state;
	const char *body = "silenced\n\n" CMARK;
	struct gh_stats st;

	fake_http_push(fx->fake, 502, NULL, "{\"message\":\"Server Error\"}");
	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, body, CMARK, &fx->err),
			 ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 1);

	/* at once, and a moment before it settles: nothing sent */
	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, body, CMARK, &fx->err),
			 ERR_RETRY);
	assert_string_equal(buf_str(&fx->err), "comment on o/r#5 in doubt: it may still land for "
					       "11000 ms, not posted again");
	fx->now += 10999;
	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, body, CMARK, &fx->err),
			 ERR_RETRY);
	assert_int_equal(fake_http_count(fx->fake), 1);

	/* settled: it landed after all (GitHub was slow), so no second comment */
	fx->now += 1;
	fake_http_push(fx->fake, 200, NULL, "[{\"body\":\"silenced\\n\\n" CMARK "\"}]");
	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, body, CMARK, &fx->err),
			 ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_string_equal(fake_http_request(fx->fake, 1)->method, "GET");
	assert_string_equal(fake_http_request(fx->fake, 1)->uri,
			    "/repos/o/r/issues/5/comments?since=2023-11-14T22:12:20Z&per_page=100");
	gh_stats(fx->gh, &st);
	assert_int_equal(st.ambiguous_resolved, 1);

	/* in doubt again, settled, absent: posted once more, then forgotten */
	fake_http_push(fx->fake, 504, NULL, "");
	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, body, CMARK, &fx->err),
			 ERR_RETRY);
	fx->now += 11000;
	fake_http_push(fx->fake, 200, NULL, "[]");
	fake_http_push(fx->fake, 201, NULL, "{\"id\":3}");
	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, body, CMARK, &fx->err),
			 ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 5);
	assert_string_equal(fake_http_request(fx->fake, 4)->method, "POST");
	fake_http_push(fx->fake, 201, NULL, "{\"id\":4}");
	assert_int_equal(gh_comment_create_marked(fx->gh, "o/r", 5, body, CMARK, &fx->err),
			 ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 6);  /* no look: nothing in doubt */
}

#define T(f) cmocka_unit_test_setup_teardown(f, gfx_setup, gfx_teardown)

UNIT_MAIN(
	T(ambiguous_create_is_in_doubt_not_repeated),
	T(create_answered_after_the_timeout_is_not_repeated),
	T(marked_comment_ambiguous_is_in_doubt_not_repeated),
	T(comment_in_doubt_is_looked_for_once_settled),
	T(late_state_change_holds_the_next_write))
