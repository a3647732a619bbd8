/*
 * test_gh_webhook.c - what POST /v1/github/webhook decides before it acts
 * (bridge/gh_webhook.h, bridge/silence.h, core/store_silences.h): the
 * signature check on GitHub's documented test vector, the command parser,
 * the delivery dedupe, the map row of an issue and the silences kept.
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

#include "bridge/gh_webhook.h"
#include "bridge/silence.h"
#include "store/store.h"
#include "store/store_map.h"
#include "store/store_silences.h"
#include "tests/unit/helpers/store_fixture.h"

/* GitHub Docs, "Validating webhook deliveries": "Testing the webhook payload validation". */
#define DOC_SECRET "It's a Secret to Everybody"
#define DOC_PAYLOAD "Hello, World!"
#define DOC_SIGNATURE "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"

static void signature_of_the_docs_test_vector_is_valid(void **state)
{
	(void)state;
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, strlen(DOC_PAYLOAD),
						 DOC_SIGNATURE), 1);
}

static void signature_refused_when_anything_differs(void **state)
{
	char upper[] = DOC_SIGNATURE;

	(void)state;
	/* Another secret, another body, a body cut short, a flipped digit. */
	assert_int_equal(gh_webhook_signature_ok("It's a secret to everybody", DOC_PAYLOAD,
						 strlen(DOC_PAYLOAD), DOC_SIGNATURE), 0);
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, "Hello, World?", 13, DOC_SIGNATURE),
			 0);
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, 12, DOC_SIGNATURE), 0);
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, strlen(DOC_PAYLOAD),
						 "sha256=657107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"),
			 0);
	/* The SHA-1 header's form, no prefix, a truncated digest, nothing. */
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, strlen(DOC_PAYLOAD),
						 DOC_SIGNATURE + 7), 0);
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, strlen(DOC_PAYLOAD),
						 "sha1=757107ea0eb2509fc211221cce984b8a37570b6d"), 0);
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, strlen(DOC_PAYLOAD),
						 "sha256=757107ea"), 0);
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, strlen(DOC_PAYLOAD), ""), 0);
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, strlen(DOC_PAYLOAD), NULL),
			 0);
	/* No secret configured: nothing is valid. */
	assert_int_equal(gh_webhook_signature_ok("", DOC_PAYLOAD, strlen(DOC_PAYLOAD), DOC_SIGNATURE),
			 0);
	assert_int_equal(gh_webhook_signature_ok(NULL, DOC_PAYLOAD, strlen(DOC_PAYLOAD),
						 DOC_SIGNATURE), 0);
	/* GitHub sends lower-case hex: upper case is another string. */
	for (char *p = upper + 7; *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	assert_int_equal(gh_webhook_signature_ok(DOC_SECRET, DOC_PAYLOAD, strlen(DOC_PAYLOAD), upper),
			 0);
}

static void command_silence_with_duration_and_reason(void **state)
{
	struct silence_command c;

	(void)state;
	silence_command_parse("/silence 4h rollout in progress\r\nmore text", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_SILENCE);
	assert_int_equal(c.duration_ms, 4 * 3600 * 1000LL);
	assert_string_equal(c.reason, "rollout in progress");
	silence_command_parse("  /silence 1h30m", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_SILENCE);
	assert_int_equal(c.duration_ms, 90 * 60 * 1000LL);
	assert_string_equal(c.reason, "");
	silence_command_parse("/Silence 2d   known issue   ", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_SILENCE);
	assert_int_equal(c.duration_ms, 2 * 86400 * 1000LL);
	assert_string_equal(c.reason, "known issue");
}

static void command_silence_bad_durations_are_invalid(void **state)
{
	struct silence_command c;

	(void)state;
	silence_command_parse("/silence", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_INVALID);
	assert_non_null(strstr(c.error, "needs a duration"));
	silence_command_parse("/silence soon please", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_INVALID);
	assert_non_null(strstr(c.error, "\"soon\" is not a duration"));
	silence_command_parse("/silence 1.5h", &c);  /* Prometheus has no fractions */
	assert_int_equal(c.cmd, SILENCE_CMD_INVALID);
	silence_command_parse("/silence 0", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_INVALID);
	silence_command_parse("/silence -1h", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_INVALID);
}

static void command_unsilence_unknown_and_none(void **state)
{
	struct silence_command c;

	(void)state;
	silence_command_parse("/unsilence\nthanks", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_UNSILENCE);
	silence_command_parse("/ack", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_UNKNOWN);
	assert_string_equal(c.word, "ack");
	/* Not commands: text, a path, a lone slash, a command not on the first line. */
	silence_command_parse("looks like /silence 4h", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_NONE);
	silence_command_parse("/usr/bin is full", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_NONE);
	silence_command_parse("/ nothing", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_NONE);
	silence_command_parse("hello\n/silence 4h", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_NONE);
	silence_command_parse("", &c);
	assert_int_equal(c.cmd, SILENCE_CMD_NONE);
	silence_command_parse(NULL, &c);
	assert_int_equal(c.cmd, SILENCE_CMD_NONE);
}

static struct store *open_store(void **state)
{
	struct fixture *f = *state;
	struct store *st = NULL;

	assert_int_equal(store_open_target(f->path, NULL, &st, NULL), ERR_OK);
	return st;
}

static void delivery_is_taken_once_and_pruned_after_retention(void **state)
{
	struct store *st = open_store(state);
	int fresh = -1;

	assert_int_equal(store_delivery_take(st, "72d3162e-cc78-11e3-81ab-4c9367dc0958", 1000,
					     10000, &fresh), ERR_OK);
	assert_int_equal(fresh, 1);
	/* A redelivery (GitHub's "Redeliver" sends the same GUID): not fresh. */
	assert_int_equal(store_delivery_take(st, "72d3162e-cc78-11e3-81ab-4c9367dc0958", 2000,
					     10000, &fresh), ERR_OK);
	assert_int_equal(fresh, 0);
	assert_int_equal(store_delivery_take(st, "another", 2000, 10000, &fresh), ERR_OK);
	assert_int_equal(fresh, 1);
	/* Past the retention the first is pruned (a GUID is never reused by GitHub). */
	assert_int_equal(store_delivery_take(st, "third", 11500, 10000, &fresh), ERR_OK);
	assert_int_equal(sfx_sql_int(((struct fixture *)*state)->path,
				     "SELECT count(*) FROM gh_deliveries"), 2);
	/* Dropped (its work could not be queued): taken again as fresh. */
	assert_int_equal(store_delivery_drop(st, "another"), ERR_OK);
	assert_int_equal(store_delivery_take(st, "another", 11600, 10000, &fresh), ERR_OK);
	assert_int_equal(fresh, 1);
	assert_int_equal(store_delivery_take(st, "", 1, 1, &fresh), ERR_INVALID);
	assert_int_equal(fresh, 0);
	store_close(st);
}

static void issue_by_number_finds_the_map_row(void **state)
{
	struct store *st = open_store(state);
	struct store_issue row = { 0 };
	char *receiver = NULL, *key = NULL;

	row.receiver = "bridge";
	row.key = "0123456789abcdef";
	row.repo = "Acme/Alerts";
	row.number = 7;
	row.state = STORE_ISSUE_OPEN;
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	row.key = "dryrun0000000000";
	row.number = 0;
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	/* GitHub names repositories without regard to case. */
	assert_int_equal(store_issue_by_number(st, "acme/alerts", 7, &receiver, &key), ERR_OK);
	assert_string_equal(receiver, "bridge");
	assert_string_equal(key, "0123456789abcdef");
	free(receiver);
	free(key);
	assert_int_equal(store_issue_by_number(st, "acme/alerts", 8, &receiver, &key),
			 ERR_NOTFOUND);
	assert_int_equal(store_issue_by_number(st, "acme/other", 7, &receiver, &key),
			 ERR_NOTFOUND);
	assert_int_equal(store_issue_by_number(st, "acme/alerts", 0, &receiver, &key),
			 ERR_INVALID);
	assert_null(receiver);
	store_close(st);
}

static void silences_active_until_they_end_or_are_expired(void **state)
{
	struct store *st = open_store(state);
	struct store_silence s = { "bridge", "k1", "sil-1", "octocat", 5000, 1000, 0 };
	struct store_silence *v = NULL;
	size_t n = 9;

	assert_int_equal(store_silence_put(st, &s), ERR_OK);
	s.silence_id = "sil-2";
	s.created_at_ms = 2000;
	s.ends_at_ms = 3000;
	assert_int_equal(store_silence_put(st, &s), ERR_OK);
	assert_int_equal(store_silence_active(st, "bridge", "k1", 2500, &v, &n), ERR_OK);
	assert_int_equal(n, 2);
	assert_string_equal(v[0].silence_id, "sil-2");  /* newest first */
	assert_string_equal(v[0].created_by, "octocat");
	assert_int_equal(v[1].ends_at_ms, 5000);
	store_silences_free(v, n);
	/* sil-2 ended at 3000; sil-1 expired by /unsilence. */
	assert_int_equal(store_silence_active(st, "bridge", "k1", 3000, &v, &n), ERR_OK);
	assert_int_equal(n, 1);
	store_silences_free(v, n);
	assert_int_equal(store_silence_expired(st, "bridge", "k1", "sil-1", 3100), ERR_OK);
	assert_int_equal(store_silence_active(st, "bridge", "k1", 3200, &v, &n), ERR_OK);
	assert_int_equal(n, 0);
	assert_null(v);
	assert_int_equal(store_silence_active(st, "bridge", "k2", 0, &v, &n), ERR_OK);
	assert_int_equal(n, 0);
	store_close(st);
}

UNIT_MAIN(
	cmocka_unit_test(signature_of_the_docs_test_vector_is_valid),
	cmocka_unit_test(signature_refused_when_anything_differs),
	cmocka_unit_test(command_silence_with_duration_and_reason),
	cmocka_unit_test(command_silence_bad_durations_are_invalid),
	cmocka_unit_test(command_unsilence_unknown_and_none),
	SFX_TEST(delivery_is_taken_once_and_pruned_after_retention),
	SFX_TEST(issue_by_number_finds_the_map_row),
	SFX_TEST(silences_active_until_they_end_or_are_expired))
