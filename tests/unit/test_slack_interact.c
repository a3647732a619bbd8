/*
 * test_slack_interact.c - what POST /v1/slack/interactions decides before it
 * acts (janitor/slack_interact.h): the signature on Slack's documented test
 * vector, the replay window, the form and block_actions payload, the click
 * as queued.
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

#include "core/buf.h"
#include "janitor/slack.h"
#include "janitor/slack_interact.h"

/* docs.slack.dev/authentication/verifying-requests-from-slack, the worked example. */
#define DOC_SECRET "8f742231b10e8888abcd99yyyzzz85a5"
#define DOC_TS "1531420618"
#define DOC_BODY                                                                             \
	"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=" \
	"G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2F"     \
	"webhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2F"       \
	"T1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015."          \
	"47445629121.803a0bc887a14d10d2c447fce8b6703c"
#define DOC_SIG "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"

static void signature_of_slacks_example_is_valid(void **state)
{
	(void)state;
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, strlen(DOC_BODY),
					    DOC_SIG), 1);
}

static void signature_refused_when_anything_differs(void **state)
{
	size_t n = strlen(DOC_BODY);
	char upper[] = DOC_SIG;

	(void)state;
	/* Another secret, timestamp, body; a flipped digit; a cut digest; no prefix. */
	assert_int_equal(slack_signature_ok("8f742231b10e8888abcd99yyyzzz85a6", DOC_TS, DOC_BODY, n,
					    DOC_SIG), 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, "1531420619", DOC_BODY, n, DOC_SIG), 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, n - 1, DOC_SIG), 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, n,
					    "v0=b2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"),
			 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, n, "v0=a2114d57"), 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, n, DOC_SIG + 3), 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, n,
					    "v1=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503"),
			 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, n, ""), 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, n, NULL), 0);
	assert_int_equal(slack_signature_ok(DOC_SECRET, NULL, DOC_BODY, n, DOC_SIG), 0);
	assert_int_equal(slack_signature_ok("", DOC_TS, DOC_BODY, n, DOC_SIG), 0);
	assert_int_equal(slack_signature_ok(NULL, DOC_TS, DOC_BODY, n, DOC_SIG), 0);
	for (char *p = upper + 3; *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	assert_int_equal(slack_signature_ok(DOC_SECRET, DOC_TS, DOC_BODY, n, upper), 0);
}

static void timestamp_window_is_five_minutes_either_way(void **state)
{
	int64_t ts;

	(void)state;
	assert_int_equal(slack_timestamp_fresh(DOC_TS, 1531420618, &ts), 1);
	assert_int_equal(ts, 1531420618);
	assert_int_equal(slack_timestamp_fresh(DOC_TS, 1531420618 + 300, &ts), 1);
	assert_int_equal(slack_timestamp_fresh(DOC_TS, 1531420618 - 300, &ts), 1);
	/* A replay of the recorded request a second past the window. */
	assert_int_equal(slack_timestamp_fresh(DOC_TS, 1531420618 + 301, &ts), 0);
	assert_int_equal(slack_timestamp_fresh(DOC_TS, 1531420618 - 301, &ts), 0);
	assert_int_equal(slack_timestamp_fresh("", 1531420618, &ts), -1);
	assert_int_equal(slack_timestamp_fresh(NULL, 1531420618, &ts), -1);
	assert_int_equal(slack_timestamp_fresh("-1531420618", 1531420618, &ts), -1);
	assert_int_equal(slack_timestamp_fresh("1531420618.5", 1531420618, &ts), -1);
	assert_int_equal(slack_timestamp_fresh("9999999999999", 1531420618, &ts), -1);
}

/* A block_actions payload as Slack sends it, form-encoded: spaces as '+', the rest %XX. */
static char *form(const char *json)
{
	struct buf b = BUF_INIT;

	(void)buf_adds(&b, "payload=");
	for (const char *p = json; *p; p++) {
		if (*p == ' ')
			(void)buf_addch(&b, '+');
		else if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
			 (*p >= '0' && *p <= '9') || strchr("-_.", *p))
			(void)buf_addch(&b, *p);
		else
			(void)buf_printf(&b, "%%%02X", (unsigned char)*p);
	}
	return buf_detach(&b);
}

#define CLICK_JSON(action_id, value)                                                       \
	"{\"type\":\"block_actions\",\"user\":{\"id\":\"U0OWNER\",\"username\":\"ada\","  \
	"\"name\":\"ada\",\"team_id\":\"T1\"},\"api_app_id\":\"A1\",\"container\":{"      \
	"\"type\":\"message\",\"message_ts\":\"1794960000.000100\",\"channel_id\":"        \
	"\"C0GPU\",\"is_ephemeral\":false},\"trigger_id\":\"1.2.3\",\"channel\":{\"id\":" \
	"\"C0GPU\"},\"message\":{\"type\":\"message\",\"text\":\"Pod train-1 goes soon\","  \
	"\"ts\":\"1794960000.000100\",\"blocks\":[{\"type\":\"actions\"}]},"               \
	"\"response_url\":\"https://hooks.slack.com/actions/T1/1/abc\",\"actions\":[{"     \
	"\"action_id\":\"" action_id "\",\"block_id\":\"b\",\"type\":\"button\","        \
	"\"value\":" value ",\"action_ts\":\"1794960001.000200\"}]}"

static void payload_of_a_click_is_read(void **state)
{
	char *value = slack_button_value("ml-team", "train-1", "uid-1", 42);
	struct buf v = BUF_INIT, json = BUF_INIT, err = BUF_INIT;
	struct slack_click c, back;
	char *body, *queued;

	(void)state;
	assert_string_equal(value, "{\"ns\":\"ml-team\",\"pod\":\"train-1\",\"uid\":\"uid-1\","
				   "\"notice\":42}");
	/* The value is a JSON string inside the payload. */
	(void)buf_addch(&v, '"');
	for (const char *p = value; *p; p++) {
		if (*p == '"')
			(void)buf_addch(&v, '\\');
		(void)buf_addch(&v, *p);
	}
	(void)buf_addch(&v, '"');
	(void)buf_printf(&json, CLICK_JSON("postpone", "%s"), buf_str(&v));
	body = form(buf_str(&json));
	assert_int_equal(slack_click_parse(body, strlen(body), &c, &err), ERR_OK);
	assert_string_equal(c.user, "U0OWNER");
	assert_string_equal(c.user_name, "ada");
	assert_string_equal(c.action_ts, "1794960001.000200");
	assert_string_equal(c.response_url, "https://hooks.slack.com/actions/T1/1/abc");
	assert_string_equal(c.channel, "C0GPU");
	assert_string_equal(c.message_ts, "1794960000.000100");
	assert_string_equal(c.message_text, "Pod train-1 goes soon");  /* '+' read as ' ' */
	assert_string_equal(c.message_blocks, "[{\"type\":\"actions\"}]");
	assert_string_equal(c.ns, "ml-team");
	assert_string_equal(c.pod, "train-1");
	assert_string_equal(c.uid, "uid-1");
	assert_int_equal(c.notice, 42);
	/* As queued and read back by the worker. */
	queued = slack_click_json(&c);
	assert_int_equal(slack_click_from_json(queued, &back), ERR_OK);
	assert_string_equal(back.response_url, c.response_url);
	assert_string_equal(back.message_blocks, c.message_blocks);
	assert_int_equal(back.notice, 42);
	slack_click_release(&back);
	slack_click_release(&c);
	free(queued);
	free(body);
	free(value);
	buf_release(&v);
	buf_release(&json);
	buf_release(&err);
}

static void payload_not_ours_or_broken(void **state)
{
	struct buf err = BUF_INIT;
	struct slack_click c;
	char *body;

	(void)state;
	/* Another action, another type: nothing to do. */
	body = form(CLICK_JSON("other", "\"x\""));
	assert_int_equal(slack_click_parse(body, strlen(body), &c, &err), ERR_NOTFOUND);
	free(body);
	body = form("{\"type\":\"view_submission\"}");
	assert_int_equal(slack_click_parse(body, strlen(body), &c, &err), ERR_NOTFOUND);
	free(body);
	/* Our action with a value that is not our button's. */
	body = form(CLICK_JSON("postpone", "\"{\\\"ns\\\":\\\"x\\\"}\""));
	assert_int_equal(slack_click_parse(body, strlen(body), &c, &err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&err), "actions[0].value"));
	free(body);
	/* Not a form with payload=, not JSON, a broken escape. */
	assert_int_equal(slack_click_parse(DOC_BODY, strlen(DOC_BODY), &c, &err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&err), "no payload="));
	assert_int_equal(slack_click_parse("payload=%7Bnope", 15, &c, &err), ERR_INVALID);
	assert_int_equal(slack_click_parse("payload=%ZZ", 11, &c, &err), ERR_INVALID);
	assert_int_equal(slack_click_parse("", 0, &c, &err), ERR_INVALID);
	assert_null(c.user);
	assert_int_equal(slack_click_from_json("{\"user\":\"U1\"}", &c), ERR_INVALID);
	assert_int_equal(slack_click_from_json("nope", &c), ERR_INVALID);
	buf_release(&err);
}

static void response_url_only_to_slack(void **state)
{
	struct slack_options o = { 0 };
	struct slack_client *c;

	(void)state;
	o.bot_token = "xoxb-test";
	c = slack_client_new(&o);
	assert_int_equal(slack_response_url_ok(c, "https://hooks.slack.com/actions/T1/1/abc"), 1);
	/* A signed payload still cannot make alertbridge post elsewhere. */
	assert_int_equal(slack_response_url_ok(c, "https://hooks.slack.com.evil.example/x"), 0);
	assert_int_equal(slack_response_url_ok(c, "http://hooks.slack.com/actions/T1/1/abc"), 0);
	assert_int_equal(slack_response_url_ok(c, "https://slack.com.evil.example/api"), 0);
	assert_int_equal(slack_response_url_ok(c, "https://hooks.slack.com/a b"), 0);
	assert_int_equal(slack_response_url_ok(c, ""), 0);
	assert_int_equal(slack_response_url_ok(c, NULL), 0);
	/* Under api_url's origin (https://slack.com): a test's fake Slack. */
	assert_int_equal(slack_response_url_ok(c, "https://slack.com/actions/1"), 1);
	assert_int_equal(slack_response_url_ok(c, "https://slack.com:444/actions/1"), 0);
	slack_client_free(c);
}

UNIT_MAIN(
	cmocka_unit_test(signature_of_slacks_example_is_valid),
	cmocka_unit_test(signature_refused_when_anything_differs),
	cmocka_unit_test(timestamp_window_is_five_minutes_either_way),
	cmocka_unit_test(payload_of_a_click_is_read),
	cmocka_unit_test(payload_not_ours_or_broken),
	cmocka_unit_test(response_url_only_to_slack))
