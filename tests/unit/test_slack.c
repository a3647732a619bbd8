/*
 * test_slack.c - the Slack client against fake_http, in virtual time: exact
 * requests per Slack's Web API docs, "ok": false codes, 429 / Retry-After,
 * 5xx retries, per-channel pacing, owner resolution, webhook mode, escaping,
 * no secret in any message or log line; and the slack_*.mustache templates.
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

#include "core/embed.h"
#include "core/http_client.h"
#include "core/log.h"
#include "core/mustache.h"
#include "janitor/slack.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/vclock.h"

#define T0 1700000000000LL
#define TOKEN "xoxb-SECRET-token-123"
#define HOOK_PATH "/services/T000/B000/HOOKSECRET42"
#define OK_POST "{\"ok\":true,\"channel\":\"C0GPU\",\"ts\":\"1700000000.000100\"}"

struct fixture {
	struct fake_http *fake;
	struct slack_client *c;
	struct slack_options opts;
	struct buf hook_url;
	struct vclock clock;  /* the client's now_ms and sleep_ms */
	struct buf err;
	struct buf chan;
	struct slack_posted posted;
	FILE *log;
};

static void reopen(struct fixture *fx)
{
	slack_client_free(fx->c);
	fx->c = slack_client_new(&fx->opts);
}

static void use_webhook(struct fixture *fx)
{
	fx->opts.bot_token = NULL;
	fx->opts.webhook_url = buf_str(&fx->hook_url);
	reopen(fx);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	fx->fake = fake_http_start();
	fx->clock.now = T0;
	fx->opts.api_url = fake_http_url(fx->fake);
	fx->opts.bot_token = TOKEN;
	fx->opts.timeout_ms = 2000;
	fx->opts.max_attempts = 3;
	fx->opts.now_ms = vclock_now;
	fx->opts.sleep_ms = vclock_sleep;
	fx->opts.clock_ctx = &fx->clock;
	buf_init(&fx->err, 0);
	buf_init(&fx->chan, 0);
	buf_init(&fx->hook_url, 0);
	assert_int_equal(buf_printf(&fx->hook_url, "%s" HOOK_PATH, fake_http_url(fx->fake)),
			 ERR_OK);
	fx->log = tmpfile();
	assert_non_null(fx->log);
	log_set_fd(fileno(fx->log));
	reopen(fx);
	*state = fx;
	return 0;
}

/* Nothing the client logged may carry a secret. */
static void assert_log_clean(struct fixture *fx)
{
	char text[8192];
	size_t n;

	fflush(fx->log);
	rewind(fx->log);
	n = fread(text, 1, sizeof(text) - 1, fx->log);
	text[n] = '\0';
	assert_null(strstr(text, "SECRET"));
	assert_null(strstr(text, "HOOKSECRET"));
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	log_set_fd(2);
	assert_log_clean(fx);
	fclose(fx->log);
	slack_client_free(fx->c);
	fake_http_stop(fx->fake);
	buf_release(&fx->err);
	buf_release(&fx->chan);
	buf_release(&fx->hook_url);
	free(fx);
	return 0;
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

static void assert_web_api(const struct fake_request *r, const char *method, const char *uri,
			   int has_body)
{
	assert_string_equal(r->method, method);
	assert_string_equal(r->uri, uri);
	assert_string_equal(fake_request_header(r, "authorization"), "Bearer " TOKEN);
	if (has_body)
		assert_string_equal(fake_request_header(r, "content-type"),
				    "application/json; charset=utf-8");
	else
		assert_null(fake_request_header(r, "content-type"));
}

/* Check the error message exactly, and that it carries no secret. */
static void assert_err(struct fixture *fx, const char *want)
{
	assert_string_equal(buf_str(&fx->err), want);
	assert_null(strstr(buf_str(&fx->err), "SECRET"));
}

static enum err post(struct fixture *fx, const char *channel, const char *text,
		     const char *thread_ts)
{
	buf_reset(&fx->err);
	return slack_post(fx->c, channel, text, thread_ts, &fx->posted, &fx->err);
}

/* ---- chat.postMessage ---- */

static void post_sends_documented_request(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, "Content-Type: application/json", OK_POST);
	assert_int_equal(post(fx, "#gpu", "pod ns/p will be deleted", NULL), ERR_OK);
	assert_string_equal(fx->posted.channel, "C0GPU");
	assert_string_equal(fx->posted.ts, "1700000000.000100");
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_web_api(fake_http_request(fx->fake, 0), "POST", "/chat.postMessage", 1);
	assert_json_body(fake_http_request(fx->fake, 0),
			 "{\"channel\":\"#gpu\",\"text\":\"pod ns/p will be deleted\","
			 "\"unfurl_links\":false}");
	assert_int_equal(fx->clock.nsleeps, 0);
	assert_false(slack_webhook_mode(fx->c));
}

static void thread_reply_carries_thread_ts(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL,
		       "{\"ok\":true,\"channel\":\"C0GPU\",\"ts\":\"1700000001.000200\"}");
	fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "C0GPU", "never mind", "1700000000.000100"), ERR_OK);
	assert_string_equal(fx->posted.ts, "1700000001.000200");
	assert_json_body(fake_http_request(fx->fake, 0),
			 "{\"channel\":\"C0GPU\",\"text\":\"never mind\","
			 "\"thread_ts\":\"1700000000.000100\",\"unfurl_links\":false}");
	/* "" is no thread; out may be NULL */
	fx->clock.now += 1000;
	assert_int_equal(slack_post(fx->c, "C0GPU", "x", "", NULL, &fx->err), ERR_OK);
	assert_json_body(fake_http_request(fx->fake, 1),
			 "{\"channel\":\"C0GPU\",\"text\":\"x\",\"unfurl_links\":false}");
}

static void ok_false_maps_to_error_codes(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		const char *code;
		enum err want;
	} cases[] = {
		{ "channel_not_found", ERR_NOTFOUND }, { "invalid_auth", ERR_AUTH },
		{ "not_authed", ERR_AUTH },            { "token_revoked", ERR_AUTH },
		{ "missing_scope", ERR_AUTH },         { "not_in_channel", ERR_INVALID },
		{ "is_archived", ERR_INVALID },        { "msg_too_long", ERR_INVALID },
	};
	char body[128], want[128];

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(body, sizeof(body), "{\"ok\":false,\"error\":\"%s\"}", cases[i].code);
		snprintf(want, sizeof(want), "chat.postMessage: %s (HTTP 200)", cases[i].code);
		fake_http_push(fx->fake, 200, NULL, body);
		fx->clock.now += 1000;
		assert_int_equal(post(fx, "#gpu", "hi", NULL), cases[i].want);
		assert_err(fx, want);
		assert_string_equal(fx->posted.channel, "");
		assert_string_equal(fx->posted.ts, "");
		assert_int_equal(fake_http_count(fx->fake), i + 1); /* never retried */
	}
	assert_int_equal(fx->clock.nsleeps, 0);
}

static void http_errors_without_json(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 403, NULL, "<html>forbidden</html>");
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_AUTH);
	assert_err(fx, "chat.postMessage: HTTP 403");
	fx->clock.now += 1000;
	fake_http_push(fx->fake, 404, NULL, "");
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_INVALID);
	assert_err(fx, "chat.postMessage: HTTP 404");
	fx->clock.now += 1000;
	/* a 4xx that carries Slack's JSON is judged by its code */
	fake_http_push(fx->fake, 400, NULL, "{\"ok\":false,\"error\":\"invalid_arguments\"}");
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_INVALID);
	assert_err(fx, "chat.postMessage: invalid_arguments (HTTP 400)");
	assert_int_equal(fake_http_count(fx->fake), 3);
}

static void malformed_answers_are_invalid(void **state)
{
	struct fixture *fx = *state;
	static const char *const bodies[] = {
		"not json", "{\"ok\":\"yes\"}", "[true]", "{\"channel\":\"C1\",\"ts\":\"1.2\"}",
	};

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		fake_http_push(fx->fake, 200, NULL, bodies[i]);
		fx->clock.now += 1000;
		assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_INVALID);
		assert_err(fx, "chat.postMessage: malformed answer (HTTP 200): "
			       "not JSON with a boolean \"ok\"");
	}
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":false}");
	fx->clock.now += 1000;
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_INVALID);
	assert_err(fx, "chat.postMessage: \"ok\": false without \"error\" (HTTP 200)");
	/* ok without ts: posted, but nothing to thread under */
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":true,\"channel\":\"C1\"}");
	fx->clock.now += 1000;
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_INVALID);
	assert_err(fx, "chat.postMessage: malformed answer: no channel or ts "
		       "(the message was posted)");
	assert_string_equal(fx->posted.channel, "");
	assert_int_equal(fake_http_count(fx->fake), 6);
}

static void bad_input_makes_no_request(void **state)
{
	struct fixture *fx = *state;
	char *big = malloc(40002);

	assert_int_equal(post(fx, "#gpu", "", NULL), ERR_INVALID);
	assert_err(fx, "chat.postMessage: text must be 1 to 40000 bytes of UTF-8");
	assert_int_equal(post(fx, "#gpu", NULL, NULL), ERR_INVALID);
	assert_int_equal(post(fx, "#gpu", "caf\xc3", NULL), ERR_INVALID);
	assert_err(fx, "chat.postMessage: text must be 1 to 40000 bytes of UTF-8");
	memset(big, 'a', 40001);
	big[40001] = '\0';
	assert_int_equal(post(fx, "#gpu", big, NULL), ERR_INVALID);
	free(big);
	assert_int_equal(post(fx, "", "hi", NULL), ERR_INVALID);
	assert_err(fx, "chat.postMessage: no channel");
	assert_int_equal(post(fx, NULL, "hi", NULL), ERR_INVALID);
	assert_int_equal(post(fx, "#gpu", "hi", "\xff"), ERR_INVALID);
	assert_err(fx, "chat.postMessage: channel or thread_ts is not UTF-8");
	assert_int_equal(fake_http_count(fx->fake), 0);
}

/* ---- rate limits, retries, pacing ---- */

static void retry_after_is_waited(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 429, "Retry-After: 3", "{\"ok\":false,\"error\":\"ratelimited\"}");
	fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fx->clock.sleeps[0], 3000);
	assert_string_equal(fx->posted.ts, "1700000000.000100");
	/* the second attempt is the same request */
	assert_json_body(fake_http_request(fx->fake, 1),
			 "{\"channel\":\"#gpu\",\"text\":\"hi\",\"unfurl_links\":false}");
}

/* RFC 9110 10.2.3: Retry-After may be an HTTP-date; T0 + 3 s here. */
static void retry_after_as_an_http_date_is_waited(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 429, "Retry-After: Tue, 14 Nov 2023 22:13:23 GMT",
		       "{\"ok\":false,\"error\":\"ratelimited\"}");
	fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fx->clock.sleeps[0], 3000);
}

/*
 * Three answers of status (with the header lines headers, may be NULL) and an empty body:
 * a post to #gpu gives up after its 3 attempts, and says so.
 */
static void gives_up_after_3(struct fixture *fx, int status, const char *headers)
{
	char want[96];

	for (int i = 0; i < 3; i++)
		fake_http_push(fx->fake, status, headers, "");
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_RETRY);
	snprintf(want, sizeof(want), "giving up after 3 attempts: chat.postMessage: HTTP %d",
		 status);
	assert_err(fx, want);
}

static void rate_limit_gives_up_after_max_attempts(void **state)
{
	struct fixture *fx = *state;

	gives_up_after_3(fx, 429, "Retry-After: 2");
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_int_equal(fx->clock.slept, 4000); /* two 2 s waits, none after the last */
}

static void long_retry_after_fails_fast(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 429, "Retry-After: 120",
		       "{\"ok\":false,\"error\":\"ratelimited\"}");
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_RETRY);
	assert_err(fx, "chat.postMessage: rate limited by slack, retry after 120 s");
	assert_int_equal(fx->clock.nsleeps, 0);
	assert_int_equal(fake_http_count(fx->fake), 1);
	/* until then, no request is made */
	fx->clock.now += 50000;
	assert_int_equal(post(fx, "#other", "hi", NULL), ERR_RETRY);
	assert_err(fx, "chat.postMessage: rate limited by slack, retry after 70 s");
	assert_int_equal(fake_http_count(fx->fake), 1);
	/* other methods are limited on their own */
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":true,\"channel\":{\"id\":\"D0ALICE\"}}");
	assert_int_equal(slack_resolve_owner(fx->c, "U0ALICE", NULL, NULL, NULL, &fx->chan,
					     &fx->err), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "D0ALICE");
	/* within max_wait (60 s): waited, then sent */
	fx->clock.now += 15000;
	fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_OK);
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fx->clock.sleeps[0], 55000);
	assert_int_equal(fake_http_count(fx->fake), 3);
}

static void server_errors_are_retried_with_backoff(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 500, NULL, "oops");
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":false,\"error\":\"service_unavailable\"}");
	fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_int_equal(fx->clock.nsleeps, 2);
	assert_int_equal(fx->clock.sleeps[0], 1000);
	assert_int_equal(fx->clock.sleeps[1], 2000);

	fx->clock.nsleeps = 0;
	fx->clock.slept = 0;
	fx->clock.now += 1000; /* past the per-channel pacing */
	gives_up_after_3(fx, 503, NULL);
	assert_int_equal(fake_http_count(fx->fake), 6);
	assert_int_equal(fx->clock.slept, 3000);
}

static void dropped_connection_is_retried(void **state)
{
	struct fixture *fx = *state;

	fake_http_push_drop(fx->fake);
	fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_int_equal(fx->clock.sleeps[0], 1000);

	for (int i = 0; i < 3; i++)
		fake_http_push_drop(fx->fake);
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err),
			       "giving up after 3 attempts: chat.postMessage: "));
	assert_null(strstr(buf_str(&fx->err), "http://"));
}

static void posts_to_one_channel_are_a_second_apart(void **state)
{
	struct fixture *fx = *state;

	for (int i = 0; i < 5; i++)
		fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "#a", "1", NULL), ERR_OK);
	assert_int_equal(post(fx, "#b", "2", NULL), ERR_OK); /* another channel: no wait */
	assert_int_equal(fx->clock.nsleeps, 0);
	fx->clock.now += 300;
	assert_int_equal(post(fx, "#a", "3", NULL), ERR_OK);
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fx->clock.sleeps[0], 700);
	assert_int_equal(post(fx, "#b", "4", NULL), ERR_OK); /* already 1 s since "2" */
	assert_int_equal(fx->clock.nsleeps, 1);
	fx->clock.now += 1500;
	assert_int_equal(post(fx, "#a", "5", NULL), ERR_OK);
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fake_http_count(fx->fake), 5);
}

/* ---- owner resolution ---- */

static enum err resolve(struct fixture *fx, const char *notify, const char *label,
			const char *ns, const char *def)
{
	buf_reset(&fx->err);
	return slack_resolve_owner(fx->c, notify, label, ns, def, &fx->chan, &fx->err);
}

static void owner_user_id_opens_dm(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL,
		       "{\"ok\":true,\"channel\":{\"id\":\"D0ALICE\",\"is_im\":true}}");
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":true,\"channel\":{\"id\":\"D0BOB\"}}");
	assert_int_equal(resolve(fx, " U0ALICE ", "W0BOB", "#ns", "#default"), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "D0ALICE");
	assert_web_api(fake_http_request(fx->fake, 0), "POST", "/conversations.open", 1);
	assert_json_body(fake_http_request(fx->fake, 0), "{\"users\":\"U0ALICE\"}");
	/* no annotation: the owner label, an enterprise user ID */
	assert_int_equal(resolve(fx, "", "W0BOB", "#ns", "#default"), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "D0BOB");
	assert_json_body(fake_http_request(fx->fake, 1), "{\"users\":\"W0BOB\"}");
	assert_int_equal(fake_http_count(fx->fake), 2);
}

static void owner_channel_is_used_as_given(void **state)
{
	struct fixture *fx = *state;

	assert_int_equal(resolve(fx, "#ml-team", "U0X", "#ns", "#default"), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "#ml-team");
	assert_int_equal(resolve(fx, "C0123ABC", NULL, NULL, NULL), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "C0123ABC");
	assert_int_equal(resolve(fx, NULL, "G0PRIV", NULL, NULL), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "G0PRIV");
	assert_int_equal(resolve(fx, NULL, NULL, "#ns-chan", "#default"), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "#ns-chan");
	assert_int_equal(resolve(fx, NULL, "", "", "#default"), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "#default");
	assert_int_equal(fake_http_count(fx->fake), 0);
}

static void owner_email_is_looked_up(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL,
		       "{\"ok\":true,\"user\":{\"id\":\"W012A3CDE\",\"name\":\"alice\"}}");
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":true,\"channel\":{\"id\":\"D0A3CDE\"}}");
	assert_int_equal(resolve(fx, "alice+gpu@example.com", NULL, NULL, "#default"), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "D0A3CDE");
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_web_api(fake_http_request(fx->fake, 0), "GET",
		       "/users.lookupByEmail?email=alice%2Bgpu%40example.com", 0);
	assert_web_api(fake_http_request(fx->fake, 1), "POST", "/conversations.open", 1);
	assert_json_body(fake_http_request(fx->fake, 1), "{\"users\":\"W012A3CDE\"}");
}

static void unknown_owner_falls_through(void **state)
{
	struct fixture *fx = *state;

	/* e-mail unknown to Slack, then a user Slack does not know, then a junk label */
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":false,\"error\":\"users_not_found\"}");
	assert_int_equal(resolve(fx, "ghost@example.com", "not an owner", "#ns", "#def"), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "#ns");
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":false,\"error\":\"user_not_found\"}");
	assert_int_equal(resolve(fx, "U0GONE", NULL, "alice", "#def"), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "#def"); /* a namespace value must be a channel */
	assert_int_equal(fake_http_count(fx->fake), 2);

	assert_int_equal(resolve(fx, "u0lower", "a@", "ns", NULL), ERR_NOTFOUND);
	assert_err(fx, "no slack channel for the owner: tried janitor/notify annotation "
		       "\"u0lower\" (not a slack user ID, channel or e-mail address), "
		       "owner label \"a@\" (not a slack user ID, channel or e-mail address), "
		       "namespace channel \"ns\" (not a slack channel name or ID)");
	assert_string_equal(buf_str(&fx->chan), "");
	assert_int_equal(resolve(fx, NULL, NULL, NULL, NULL), ERR_NOTFOUND);
	assert_err(fx, "no slack channel for the owner: no owner, namespace or default "
		       "channel given");
	assert_int_equal(fake_http_count(fx->fake), 2);
}

static void lookup_errors_do_not_fall_through(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, "{\"ok\":false,\"error\":\"invalid_auth\"}");
	assert_int_equal(resolve(fx, "alice@example.com", NULL, "#ns", "#def"), ERR_AUTH);
	assert_err(fx, "janitor/notify annotation \"alice@example.com\": users.lookupByEmail: "
		       "invalid_auth (HTTP 200)");
	assert_string_equal(buf_str(&fx->chan), "");

	for (int i = 0; i < 3; i++)
		fake_http_push(fx->fake, 502, NULL, "bad gateway");
	assert_int_equal(resolve(fx, NULL, "U0ALICE", "#ns", "#def"), ERR_RETRY);
	assert_err(fx, "owner label \"U0ALICE\": giving up after 3 attempts: conversations.open: "
		       "HTTP 502");

	/* answers without the documented IDs */
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":true,\"user\":{}}");
	assert_int_equal(resolve(fx, "alice@example.com", NULL, NULL, "#def"), ERR_INVALID);
	assert_err(fx, "janitor/notify annotation \"alice@example.com\": users.lookupByEmail: "
		       "malformed answer: no user.id");
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":true,\"channel\":\"D0\"}");
	assert_int_equal(resolve(fx, "U0ALICE", NULL, NULL, "#def"), ERR_INVALID);
	assert_err(fx, "janitor/notify annotation \"U0ALICE\": conversations.open: "
		       "malformed answer: no channel.id");
	assert_int_equal(fake_http_count(fx->fake), 6);
}

/* ---- rotated secrets (a reload: core/reload.h) ---- */

static void rotated_secret_is_sent_in_the_same_mode(void **state)
{
	struct fixture *fx = *state;
	struct buf url = BUF_INIT;

	slack_set_secret(fx->c, "xoxb-SECRET-rotated", "http://127.0.0.1:1/ignored");
	fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_OK);
	assert_string_equal(fake_request_header(fake_http_request(fx->fake, 0), "authorization"),
			    "Bearer xoxb-SECRET-rotated");
	assert_false(slack_webhook_mode(fx->c));
	slack_set_secret(fx->c, NULL, NULL);  /* nothing given: the current one stays */
	fx->clock.now += 5000;
	fake_http_push(fx->fake, 200, NULL, OK_POST);
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_OK);
	assert_string_equal(fake_request_header(fake_http_request(fx->fake, 1), "authorization"),
			    "Bearer xoxb-SECRET-rotated");

	use_webhook(fx);
	assert_int_equal(buf_printf(&url, "%s/services/T000/B000/ROTATED", fake_http_url(fx->fake)),
			 ERR_OK);
	slack_set_secret(fx->c, "xoxb-ignored", buf_str(&url));
	fake_http_push(fx->fake, 200, NULL, "ok");
	assert_int_equal(post(fx, "#ignored", "hello", NULL), ERR_OK);
	assert_string_equal(fake_http_request(fx->fake, 2)->uri, "/services/T000/B000/ROTATED");
	assert_null(fake_request_header(fake_http_request(fx->fake, 2), "authorization"));
	assert_true(slack_webhook_mode(fx->c));
	buf_release(&url);
}

/* ---- incoming webhooks ---- */

static void webhook_posts_text_only(void **state)
{
	struct fixture *fx = *state;
	const struct fake_request *r;

	use_webhook(fx);
	assert_true(slack_webhook_mode(fx->c));
	fake_http_push(fx->fake, 200, "Content-Type: text/html", "ok");
	assert_int_equal(post(fx, "#ignored", "hello <world>", "1700000000.000100"), ERR_OK);
	assert_string_equal(fx->posted.channel, "");
	assert_string_equal(fx->posted.ts, "");
	r = fake_http_request(fx->fake, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->uri, HOOK_PATH);
	assert_null(fake_request_header(r, "authorization"));
	assert_string_equal(fake_request_header(r, "content-type"),
			    "application/json; charset=utf-8");
	assert_json_body(r, "{\"text\":\"hello <world>\"}");

	/* all webhook posts share one channel: paced together */
	fake_http_push(fx->fake, 200, NULL, "ok\n");
	assert_int_equal(post(fx, NULL, "again", NULL), ERR_OK);
	assert_int_equal(fx->clock.nsleeps, 1);
	assert_int_equal(fx->clock.sleeps[0], 1000);

	/* no lookups: everything resolves to the webhook's own channel */
	assert_int_equal(resolve(fx, "alice@example.com", NULL, NULL, NULL), ERR_OK);
	assert_string_equal(buf_str(&fx->chan), "");
	assert_int_equal(fake_http_count(fx->fake), 2);
}

static void webhook_error_texts(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		int status;
		const char *body;
		enum err want;
		const char *msg;
	} cases[] = {
		{ 400, "invalid_payload", ERR_INVALID,
		  "incoming webhook: invalid_payload (HTTP 400)" },
		{ 410, "channel_is_archived", ERR_INVALID,
		  "incoming webhook: channel_is_archived (HTTP 410)" },
		{ 403, "invalid_token", ERR_AUTH, "incoming webhook: invalid_token (HTTP 403)" },
		{ 404, "no_service", ERR_AUTH, "incoming webhook: no_service (HTTP 404)" },
		{ 404, "channel_not_found", ERR_NOTFOUND,
		  "incoming webhook: channel_not_found (HTTP 404)" },
		{ 403, "<html>nope</html>", ERR_AUTH, "incoming webhook: HTTP 403" },
		{ 200, "accepted", ERR_INVALID,
		  "incoming webhook: accepted (HTTP 200)" },
		{ 200, "<b>hi</b>", ERR_INVALID,
		  "incoming webhook: malformed answer (HTTP 200): not \"ok\"" },
	};

	use_webhook(fx);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		fake_http_push(fx->fake, cases[i].status, NULL, cases[i].body);
		fx->clock.now += 1000;
		assert_int_equal(post(fx, NULL, "hi", NULL), cases[i].want);
		assert_err(fx, cases[i].msg);
	}
	assert_int_equal(fake_http_count(fx->fake), sizeof(cases) / sizeof(cases[0]));
}

static void webhook_url_never_in_messages(void **state)
{
	struct fixture *fx = *state;

	/* connection refused: http_client's message names the URL */
	fx->opts.bot_token = NULL;
	fx->opts.webhook_url = "http://127.0.0.1:1" HOOK_PATH;
	fx->opts.max_attempts = 2;
	reopen(fx);
	assert_int_equal(post(fx, NULL, "hi", NULL), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err),
			       "giving up after 2 attempts: incoming webhook: "));
	assert_null(strstr(buf_str(&fx->err), "HOOKSECRET"));
	assert_null(strstr(buf_str(&fx->err), "/services/"));

	/* a malformed URL is rejected by curl; still no URL in the message */
	fx->opts.webhook_url = "http://[::1" HOOK_PATH;
	reopen(fx);
	assert_int_equal(post(fx, NULL, "hi", NULL), ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err), "incoming webhook: "));
	assert_null(strstr(buf_str(&fx->err), "HOOKSECRET"));
	assert_int_equal(fake_http_count(fx->fake), 0);
}

static void token_never_in_messages(void **state)
{
	struct fixture *fx = *state;

	/* an answer that echoes the token back must not leak it either */
	fake_http_push(fx->fake, 200, NULL, "{\"ok\":false,\"error\":\"bad " TOKEN "\"}");
	assert_int_equal(post(fx, "#gpu", "hi", NULL), ERR_INVALID);
	assert_err(fx, "chat.postMessage: bad [redacted] (HTTP 200)");
}

/* ---- escaping ---- */

#define ESCAPED "a &amp; b &lt;c&gt; \"q\" 'x' *y* `z` &lt;@U1&gt; &amp;amp;"

static void escape_only_amp_lt_gt(void **state)
{
	struct buf b;
	(void)state;

	buf_init(&b, 0);
	assert_int_equal(slack_escape("a & b <c> \"q\" 'x' *y* `z` <@U1> &amp;", &b), ERR_OK);
	assert_string_equal(buf_str(&b), ESCAPED);
	assert_int_equal(slack_escape(NULL, &b), ERR_OK); /* appends nothing */
	assert_string_equal(buf_str(&b), ESCAPED);
	buf_release(&b);

	buf_init(&b, 8);
	assert_int_equal(slack_escape("ab", &b), ERR_OK);
	/* 2 + 8 bytes pass the maximum of 8 */
	assert_int_equal(slack_escape("<<", &b), ERR_TOOBIG);
	assert_string_equal(buf_str(&b), "ab");
	buf_release(&b);
}

/* ---- templates ---- */

#define VIEW_COMMON                                                                           \
	"\"pod\":{\"namespace\":\"ml-team\",\"name\":\"train-7f9c\","                         \
	"\"uid\":\"3f1c2a9e-5b7d-4c11-9e8a-0d2b6c4f7a10\"},"                                 \
	"\"reason\":\"JanitorIdleGPUPod\",\"why\":\"GPU idle for 6h & <1% utilisation\","  \
	"\"expires\":\"2026-11-21T02:54:48Z\",\"expiresHuman\":\"Sat, 21 Nov 2026 02:54:48 UTC\"," \
	"\"expiresIn\":\"in 2 hours 5 minutes\",\"snoozeUntil\":\"2026-11-22T02:54:48Z\","

#define BARE_POD                                                                              \
	"{" VIEW_COMMON "\"owner\":{\"kind\":\"\",\"name\":\"\",\"resource\":\"\","               \
	"\"replicas\":\"\"},"                                                                   \
	"\"action\":\"deleted\",\"deletePod\":true,\"deleteJob\":false,\"scaleToZero\":false,"   \
	"\"notifyOnly\":false}"

#define JOB_POD                                                                               \
	"{" VIEW_COMMON "\"owner\":{\"kind\":\"Job\",\"name\":\"train\",\"resource\":\"job\","  \
	"\"replicas\":\"\"},\"action\":\"job deleted\",\"deletePod\":false,\"deleteJob\":true,"  \
	"\"scaleToZero\":false,\"notifyOnly\":false}"

#define DEPLOY_POD                                                                            \
	"{" VIEW_COMMON "\"owner\":{\"kind\":\"Deployment\",\"name\":\"notebook\","             \
	"\"resource\":\"deployment\",\"replicas\":\"4\"},\"action\":\"scaled to 0\","            \
	"\"deletePod\":false,\"deleteJob\":false,\"scaleToZero\":true,\"notifyOnly\":false}"

#define NOTIFY_POD                                                                            \
	"{" VIEW_COMMON "\"owner\":{\"kind\":\"StatefulSet\",\"name\":\"db\","                  \
	"\"resource\":\"statefulset\",\"replicas\":\"\"},\"action\":\"notify only\","            \
	"\"deletePod\":false,\"deleteJob\":false,\"scaleToZero\":false,\"notifyOnly\":true}"

#define KEEP                                                                                  \
	"*To keep it:* `kubectl annotate pod -n ml-team train-7f9c janitor/exempt=true`\n"      \
	"*To snooze it:* `kubectl annotate pod -n ml-team train-7f9c --overwrite "              \
	"janitor/expires=2026-11-22T02:54:48Z` (any later UTC time)\n"
#define WHY "*Why:* GPU idle for 6h &amp; &lt;1% utilisation\n"
#define AT "in 2 hours 5 minutes, at Sat, 21 Nov 2026 02:54:48 UTC"

static void assert_renders(const char *name, const char *view_json, const char *want)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	struct buf out = BUF_INIT, err = BUF_INIT;
	json_error_t jerr;
	json_t *view = json_loads(view_json, 0, &jerr);
	size_t len = 0;
	const char *tmpl = embed_get(name, &len);

	if (!view)
		fail_msg("view: %s", jerr.text);
	assert_non_null(tmpl);
	opt.escape = MUSTACHE_ESCAPE_SLACK;
	assert_int_equal(mustache_render(tmpl, len, view, &opt, &out, &err), ERR_OK);
	if (strcmp(buf_str(&out), want))
		fail_msg("%s rendered:\n%s\nwant:\n%s", name, buf_str(&out), want);
	json_decref(view);
	buf_release(&out);
	buf_release(&err);
}

static void notice_template(void **state)
{
	(void)state;
	assert_renders("slack_notice.mustache", BARE_POD,
		       ":hourglass_flowing_sand: *Pod `ml-team/train-7f9c` is marked for clean-up* "
		       "(JanitorIdleGPUPod)\n"
		       "*What:* the pod will be deleted " AT ".\n" WHY KEEP);
	assert_renders("slack_notice.mustache", JOB_POD,
		       ":hourglass_flowing_sand: *Pod `ml-team/train-7f9c` is marked for clean-up* "
		       "(JanitorIdleGPUPod)\n"
		       "*What:* its Job `train` will be deleted, and the pod with it, " AT ".\n"
		       WHY KEEP);
	assert_renders("slack_notice.mustache", DEPLOY_POD,
		       ":hourglass_flowing_sand: *Pod `ml-team/train-7f9c` is marked for clean-up* "
		       "(JanitorIdleGPUPod)\n"
		       "*What:* its Deployment `notebook` will be scaled to 0 replicas " AT ".\n"
		       WHY KEEP);
	assert_renders("slack_notice.mustache", NOTIFY_POD,
		       ":hourglass_flowing_sand: *Pod `ml-team/train-7f9c` is marked for clean-up* "
		       "(JanitorIdleGPUPod)\n"
		       "*What:* nothing automatic (its StatefulSet `db` would recreate the pod): "
		       "please scale it down or delete it yourself; its time runs out " AT ".\n"
		       WHY KEEP);
}

static void notice_for_pending_pod_quotes_scheduler(void **state)
{
	(void)state;
	assert_renders("slack_notice.mustache",
		       "{\"pod\":{\"namespace\":\"ml\",\"name\":\"p\",\"uid\":\"u\"},"
		       "\"owner\":{\"kind\":\"\",\"name\":\"\"},"
		       "\"reason\":\"JanitorPodPendingTooLong\","
		       "\"why\":\"0/8 nodes are available: 8 Insufficient nvidia.com/gpu.\","
		       "\"action\":\"deleted\",\"deletePod\":true,"
		       "\"expires\":\"2026-11-21T06:00:00Z\","
		       "\"expiresHuman\":\"Sat, 21 Nov 2026 06:00:00 UTC\","
		       "\"expiresIn\":\"in 6 hours\",\"snoozeUntil\":\"2026-11-21T12:00:00Z\"}",
		       ":hourglass_flowing_sand: *Pod `ml/p` is marked for clean-up* "
		       "(JanitorPodPendingTooLong)\n"
		       "*What:* the pod will be deleted in 6 hours, "
		       "at Sat, 21 Nov 2026 06:00:00 UTC.\n"
		       "*Why:* 0/8 nodes are available: 8 Insufficient nvidia.com/gpu.\n"
		       "*To keep it:* `kubectl annotate pod -n ml p janitor/exempt=true`\n"
		       "*To snooze it:* `kubectl annotate pod -n ml p --overwrite "
		       "janitor/expires=2026-11-21T12:00:00Z` (any later UTC time)\n");
}

static void reminder_template(void **state)
{
	(void)state;
	assert_renders("slack_reminder.mustache", BARE_POD,
		       ":alarm_clock: *Reminder:* pod `ml-team/train-7f9c` will be deleted " AT
		       " (JanitorIdleGPUPod).\n" WHY KEEP);
	assert_renders("slack_reminder.mustache", JOB_POD,
		       ":alarm_clock: *Reminder:* Job `train` and its pod `ml-team/train-7f9c` "
		       "will be deleted " AT " (JanitorIdleGPUPod).\n" WHY KEEP);
	assert_renders("slack_reminder.mustache", DEPLOY_POD,
		       ":alarm_clock: *Reminder:* Deployment `notebook` of pod "
		       "`ml-team/train-7f9c` will be scaled to 0 replicas " AT
		       " (JanitorIdleGPUPod).\n" WHY KEEP);
	assert_renders("slack_reminder.mustache", NOTIFY_POD,
		       ":alarm_clock: *Reminder:* pod `ml-team/train-7f9c` is still flagged "
		       "(StatefulSet `db`): its time runs out " AT " (JanitorIdleGPUPod).\n"
		       WHY KEEP);
}

static void cancelled_template(void **state)
{
	(void)state;
	assert_renders("slack_cancelled.mustache", BARE_POD,
		       ":white_check_mark: *Never mind:* pod `ml-team/train-7f9c` will not be "
		       "deleted: the JanitorIdleGPUPod alert resolved (GPU idle for 6h &amp; "
		       "&lt;1% utilisation).\n"
		       "The janitor removed the annotations it had set on the pod; nothing else to "
		       "do.\n");
	assert_renders("slack_cancelled.mustache",
		       "{\"pod\":{\"namespace\":\"ml\",\"name\":\"p\"},"
		       "\"owner\":{\"kind\":\"Deployment\","
		       "\"name\":\"nb\"},\"reason\":\"JanitorIdleGPUPod\",\"why\":\"\","
		       "\"scaleToZero\":true}",
		       ":white_check_mark: *Never mind:* pod `ml/p` stays: its Deployment `nb` "
		       "will not be scaled to 0: the JanitorIdleGPUPod alert resolved.\n"
		       "The janitor removed the annotations it had set on the pod; nothing else to "
		       "do.\n");
	assert_renders("slack_cancelled.mustache", JOB_POD,
		       ":white_check_mark: *Never mind:* pod `ml-team/train-7f9c` and its Job "
		       "`train` will not be deleted: the JanitorIdleGPUPod alert resolved "
		       "(GPU idle for 6h &amp; &lt;1% utilisation).\n"
		       "The janitor removed the annotations it had set on the pod; nothing else to "
		       "do.\n");
}

static void deleted_template(void **state)
{
	(void)state;
	assert_renders("slack_deleted.mustache", BARE_POD,
		       ":wastebasket: Pod `ml-team/train-7f9c` was deleted as announced: its time "
		       "ran out at Sat, 21 Nov 2026 02:54:48 UTC (JanitorIdleGPUPod).\n"
		       WHY "_Pod uid `3f1c2a9e-5b7d-4c11-9e8a-0d2b6c4f7a10`._\n");
	assert_renders("slack_deleted.mustache", JOB_POD,
		       ":wastebasket: Job `ml-team/train` was deleted with its pod `train-7f9c` as "
		       "announced: the pod's time ran out at Sat, 21 Nov 2026 02:54:48 UTC "
		       "(JanitorIdleGPUPod).\n"
		       WHY "_Pod uid `3f1c2a9e-5b7d-4c11-9e8a-0d2b6c4f7a10`._\n");
	assert_renders("slack_deleted.mustache", DEPLOY_POD,
		       ":zzz: Deployment `ml-team/notebook` was scaled to 0 replicas as announced: "
		       "its pod `train-7f9c` ran out of time at Sat, 21 Nov 2026 02:54:48 UTC "
		       "(JanitorIdleGPUPod).\n"
		       "To bring it back: `kubectl scale -n ml-team deployment/notebook "
		       "--replicas=4`\n"
		       WHY "_Pod uid `3f1c2a9e-5b7d-4c11-9e8a-0d2b6c4f7a10`._\n");
	assert_renders("slack_deleted.mustache", NOTIFY_POD,
		       ":information_source: Pod `ml-team/train-7f9c` ran out of time at Sat, "
		       "21 Nov 2026 02:54:48 UTC (JanitorIdleGPUPod); its StatefulSet `db` would "
		       "recreate it, so the janitor left it alone.\n"
		       WHY "_Pod uid `3f1c2a9e-5b7d-4c11-9e8a-0d2b6c4f7a10`._\n");
}

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

UNIT_MAIN(
	T(post_sends_documented_request),
	T(thread_reply_carries_thread_ts),
	T(ok_false_maps_to_error_codes),
	T(http_errors_without_json),
	T(malformed_answers_are_invalid),
	T(bad_input_makes_no_request),
	T(retry_after_is_waited),
	T(retry_after_as_an_http_date_is_waited),
	T(rate_limit_gives_up_after_max_attempts),
	T(long_retry_after_fails_fast),
	T(server_errors_are_retried_with_backoff),
	T(dropped_connection_is_retried),
	T(posts_to_one_channel_are_a_second_apart),
	T(owner_user_id_opens_dm),
	T(owner_channel_is_used_as_given),
	T(owner_email_is_looked_up),
	T(unknown_owner_falls_through),
	T(lookup_errors_do_not_fall_through),
	T(webhook_posts_text_only),
	T(rotated_secret_is_sent_in_the_same_mode),
	T(webhook_error_texts),
	T(webhook_url_never_in_messages),
	T(token_never_in_messages),
	cmocka_unit_test(escape_only_amp_lt_gt),
	cmocka_unit_test(notice_template),
	cmocka_unit_test(notice_for_pending_pod_quotes_scheduler),
	cmocka_unit_test(reminder_template),
	cmocka_unit_test(cancelled_template),
	cmocka_unit_test(deleted_template))
