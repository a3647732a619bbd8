/* test_issue_marker.c - the hidden marker of an issue (bridge/issue.c): its format, what
 * parsing it takes and rejects, the episode fold over comments, the receiver it names. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "bridge/issue.h"

/* ---- marker ---- */

static void marker_format_and_round_trip(void **state)
{
	struct buf m = BUF_INIT, key = BUF_INIT;
	(void)state;
	issue_marker("0123456789abcdef", &m);
	assert_string_equal(buf_str(&m), "<!-- alertbridge:key=0123456789abcdef -->");
	assert_int_equal(issue_marker_parse(buf_str(&m), &key), 1);
	assert_string_equal(buf_str(&key), "0123456789abcdef");
	buf_release(&m);
	buf_release(&key);
}

static void marker_parse_takes_the_last_and_tolerates_edits(void **state)
{
	struct buf key = BUF_INIT;
	(void)state;
	assert_int_equal(issue_marker_parse("quoting <!-- alertbridge:key=aaaa --> here\r\n\r\n"
					    "<!--alertbridge:key=bbbb\r\n-->\r\n",
					    &key),
			 1);
	assert_string_equal(buf_str(&key), "bbbb");
	/* A broken one after a good one does not hide the good one. */
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key=cccc -->\n<!-- alertbridge:key=",
					    &key),
			 1);
	assert_string_equal(buf_str(&key), "cccc");
	buf_release(&key);
}

static void marker_parse_rejects_malformed(void **state)
{
	struct buf key = BUF_INIT;
	char long_key[200];
	(void)state;
	buf_adds(&key, "untouched");
	assert_int_equal(issue_marker_parse(NULL, &key), 0);
	assert_int_equal(issue_marker_parse("", &key), 0);
	assert_int_equal(issue_marker_parse("no marker at all", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key= -->", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key=ab", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key=a b -->", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- alertbridge:key=a\"><script> -->", &key), 0);
	assert_int_equal(issue_marker_parse("<!-- other:key=abcd -->", &key), 0);
	memset(long_key, 'a', sizeof(long_key));
	memcpy(long_key, "<!-- alertbridge:key=", 21);
	snprintf(long_key + 21 + 129, sizeof(long_key) - 21 - 129, " -->"); /* 129-char key */
	assert_int_equal(issue_marker_parse(long_key, &key), 0);
	assert_string_equal(buf_str(&key), "untouched");
	snprintf(long_key + 21 + 128, sizeof(long_key) - 21 - 128, " -->"); /* 128: allowed */
	assert_int_equal(issue_marker_parse(long_key, &key), 1);
	assert_int_equal(key.len, 128);
	buf_release(&key);
}

/* The receiver's marker: encoded, parsed back, and the old form read as "no receiver". */
/* The markers a rebuild folds: the newest episode, and its resolve when applied. */
static void episode_fold_reads_the_newest_transition(void **state)
{
	struct issue_episode_seen seen = { 0 };
	(void)state;

	issue_episode_fold(NULL, &seen);
	issue_episode_fold("no marker", &seen);
	assert_int_equal(seen.starts_ms, 0);
	/* the body (no transition), then its comments in any order */
	issue_episode_fold("b\n\n<!-- alertbridge:episode=2026-11-21T00:00:00.000Z -->", &seen);
	assert_int_equal(seen.starts_ms, INT64_C(1795219200000));
	assert_int_equal(seen.resolved_ends_ms, 0);
	issue_episode_fold("resolved <!-- alertbridge:episode=2026-11-21T00:00:00.000Z "
			   "event=resolved-1795220000000 -->", &seen);
	assert_int_equal(seen.resolved_ends_ms, INT64_C(1795220000000));
	/* an older episode's transitions change nothing */
	issue_episode_fold("<!-- alertbridge:episode=2026-11-20T00:00:00.000Z "
			   "event=resolved-1795300000000 -->", &seen);
	assert_int_equal(seen.starts_ms, INT64_C(1795219200000));
	assert_int_equal(seen.resolved_ends_ms, INT64_C(1795220000000));
	/* the firing of the same episode keeps its resolve: the resolve comes last */
	issue_episode_fold("<!-- alertbridge:episode=2026-11-21T00:00:00.000Z event=firing -->",
			   &seen);
	assert_int_equal(seen.resolved_ends_ms, INT64_C(1795220000000));
	/* a newer episode: its resolve is not known yet */
	issue_episode_fold("firing again <!-- alertbridge:episode=2026-11-21T01:00:00.000Z "
			   "event=firing -->", &seen);
	assert_int_equal(seen.starts_ms, INT64_C(1795222800000));
	assert_int_equal(seen.resolved_ends_ms, 0);
	/* an endsAt of 0 or before startsAt ends at startsAt; a malformed one is no resolve */
	issue_episode_fold("<!-- alertbridge:episode=2026-11-21T01:00:00.000Z event=resolved-x -->"
			   "<!-- alertbridge:episode=2026-11-21T01:00:00.000Z event=resolved-12-->",
			   &seen);
	assert_int_equal(seen.resolved_ends_ms, 0);
	issue_episode_fold("<!-- alertbridge:episode=2026-11-21T01:00:00.000Z event=resolved-0 -->",
			   &seen);
	assert_int_equal(seen.resolved_ends_ms, INT64_C(1795222800000));
}

/*
 * issue_marker_parse_receiver() finds a key marker in body, and the receiver want_rcv ("":
 * none) into rcv; a failure names body.
 */
static void parses_receiver(const char *body, struct buf *rcv, struct buf *key,
			    const char *want_rcv)
{
	int found = issue_marker_parse_receiver(body, rcv, key);

	if (found != 1 || strcmp(buf_str(rcv), want_rcv))
		fail_msg("\"%s\": %d, receiver \"%s\"; want 1, \"%s\"", body, found, buf_str(rcv),
			 want_rcv);
}

static void marker_names_the_receiver(void **state)
{
	/* a receiver marker not next to the key marker, a malformed escape, an empty one */
	static const char *const no_receiver[] = {
		"<!-- alertbridge:receiver=ops --> text <!-- alertbridge:key=k3 -->",
		"<!-- alertbridge:receiver=a%2 --> <!-- alertbridge:key=k4 -->",
		"<!-- alertbridge:receiver=a%00 --> <!-- alertbridge:key=k4 -->",
		"<!-- alertbridge:receiver= --> <!-- alertbridge:key=k5 -->",
	};
	struct buf m = BUF_INIT, key = BUF_INIT, rcv = BUF_INIT;
	(void)state;
	issue_marker_receiver("team a/b%", "0123456789abcdef", &m);
	assert_string_equal(buf_str(&m), "<!-- alertbridge:receiver=team%20a%2Fb%25 --> "
			    "<!-- alertbridge:key=0123456789abcdef -->");
	parses_receiver(buf_str(&m), &rcv, &key, "team a/b%");
	assert_string_equal(buf_str(&key), "0123456789abcdef");
	/* old readers still find the key */
	buf_reset(&key);
	assert_int_equal(issue_marker_parse(buf_str(&m), &key), 1);
	assert_string_equal(buf_str(&key), "0123456789abcdef");
	/* edited on GitHub: line breaks between and inside the two */
	parses_receiver("x\r\n<!--alertbridge:receiver=ops\r\n-->"
			"\r\n<!-- alertbridge:key=k1 -->\r\n",
			&rcv, &key, "ops");
	assert_string_equal(buf_str(&key), "k1");
	/* the old form, and the no_receiver markers: no receiver */
	parses_receiver("b\n\n<!-- alertbridge:key=k2 -->", &rcv, &key, "");
	assert_string_equal(buf_str(&key), "k2");
	buf_adds(&rcv, "x");
	for (size_t i = 0; i < sizeof(no_receiver) / sizeof(no_receiver[0]); i++)
		parses_receiver(no_receiver[i], &rcv, &key, "");
	/* no key marker: nothing changes */
	buf_adds(&rcv, "kept");
	assert_int_equal(issue_marker_parse_receiver("<!-- alertbridge:receiver=ops -->", &rcv,
						     &key), 0);
	assert_string_equal(buf_str(&rcv), "kept");
	assert_string_equal(buf_str(&key), "k5");
	/* '~' is unreserved (RFC 3986, curl_easy_escape): kept; the older %7E still read */
	buf_reset(&m);
	issue_marker_receiver("a~b", "k7", &m);
	assert_string_equal(buf_str(&m), "<!-- alertbridge:receiver=a~b --> "
			    "<!-- alertbridge:key=k7 -->");
	parses_receiver(buf_str(&m), &rcv, &key, "a~b");
	parses_receiver("<!-- alertbridge:receiver=a%7Eb --> "
			"<!-- alertbridge:key=k7 -->",
			&rcv, &key, "a~b");
	/* no receiver: the old form */
	buf_reset(&m);
	issue_marker_receiver(NULL, "k6", &m);
	assert_string_equal(buf_str(&m), "<!-- alertbridge:key=k6 -->");
	buf_release(&m);
	buf_release(&key);
	buf_release(&rcv);
}

UNIT_MAIN(
	cmocka_unit_test(marker_format_and_round_trip),
	cmocka_unit_test(marker_parse_takes_the_last_and_tolerates_edits),
	cmocka_unit_test(marker_parse_rejects_malformed),
	cmocka_unit_test(marker_names_the_receiver),
	cmocka_unit_test(episode_fold_reads_the_newest_transition))
