/*
 * fuzz_slack_click.c - libFuzzer harness for what POST /v1/slack/interactions
 * reads of a verified body (janitor/slack_interact.h): slack_click_parse() of
 * the fuzzed form body; an accepted click must survive the queue
 * (slack_click_json() then slack_click_from_json() give the same fields),
 * an error must leave nothing behind and say why; and the signature check
 * must never accept a digest that is not the body's.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "janitor/slack_interact.h"

#include "core/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same(const char *a, const char *b)
{
	if (!a || !b || strcmp(a, b))
		abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *body = (const char *)data;
	struct slack_click c, back;
	struct buf err = BUF_INIT;
	enum err rc = slack_click_parse(body, size, &c, &err);
	char *json;

	if (rc == ERR_INVALID && !err.len)
		abort();  /* every refusal says why */
	if (rc != ERR_OK) {
		if (c.user || c.ns || c.message_blocks)
			abort();  /* released on error */
	} else {
		json = slack_click_json(&c);
		if (slack_click_from_json(json, &back) != ERR_OK)
			abort();
		same(c.user, back.user);
		same(c.action_ts, back.action_ts);
		same(c.response_url, back.response_url);
		same(c.channel, back.channel);
		same(c.message_ts, back.message_ts);
		same(c.message_text, back.message_text);
		same(c.message_blocks, back.message_blocks);
		same(c.ns, back.ns);
		same(c.pod, back.pod);
		same(c.uid, back.uid);
		if (c.notice != back.notice)
			abort();
		slack_click_release(&back);
		free(json);
	}
	slack_click_release(&c);
	/* A body as its own signature header: never valid. */
	if (size && slack_signature_ok("secret", "1531420618", body, size, "v0=") != 0)
		abort();
	buf_release(&err);
	return 0;
}
