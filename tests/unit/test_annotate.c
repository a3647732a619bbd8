/*
 * test_annotate.c - janitor annotations: kube-janitor's time and ttl forms, the pod state,
 * the mark/notified/unmark patches and the sweeper's notice-before-act rule.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "janitor/annotate.h"

#define S 1000LL
#define MIN (60 * S)
#define HOUR (60 * MIN)
#define DAY (24 * HOUR)

#define T_2008_09_26_015142 1222393902000LL
#define T_2024_02_28_2300 1709161200000LL
#define T_2024_02_29 1709164800000LL
#define T_2023_03_01 1677628800000LL
#define T_2025_01_01 1735689600000LL

#define NKV(a) (sizeof(a) / sizeof((a)[0]))

/* ---- times ---- */

/* janitor_parse_time() or janitor_parse_ttl(): a string to ms, the reason in errmsg. */
typedef enum err (*parse_fn)(const char *s, int64_t *ms, struct buf *errmsg);

/* What parse makes of s; fails unless it is ERR_OK. */
static int64_t parsed_ok(parse_fn parse, const char *s)
{
	int64_t ms = 42;

	assert_int_equal(parse(s, &ms, NULL), ERR_OK);
	return ms;
}

/* parse refuses s with exactly want_msg and leaves the output alone. */
static void assert_parse_invalid(parse_fn parse, const char *s, const char *want_msg)
{
	struct buf msg = BUF_INIT;
	int64_t ms = 42;

	assert_int_equal(parse(s, &ms, &msg), ERR_INVALID);
	assert_int_equal(ms, 42);
	assert_string_equal(buf_str(&msg), want_msg);
	buf_release(&msg);
}

/* A string and the ms a parser makes of it. */
struct parse_case {
	const char *in;
	int64_t want_ms;
};

/* Each of the n cases parses to its ms; a failing case names its input. */
static void parse_cases(parse_fn parse, const struct parse_case *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int64_t ms = 42;
		enum err rc = parse(cases[i].in, &ms, NULL);

		if (rc != ERR_OK || ms != cases[i].want_ms)
			fail_msg("\"%s\": %s, %lld ms, want ERR_OK, %lld ms", cases[i].in,
				 err_str(rc), (long long)ms, (long long)cases[i].want_ms);
	}
}

static void assert_time_invalid(const char *s, const char *want_msg)
{
	assert_parse_invalid(janitor_parse_time, s, want_msg);
}

static void parses_all_kube_janitor_forms(void **state)
{
	static const struct parse_case cases[] = {
		/* kube-janitor tests/test_parse_expiry.py */
		{ "2008-09-26T01:51:42Z", T_2008_09_26_015142 },
		{ "2008-09-26T01:51", T_2008_09_26_015142 - 42 * S },
		{ "2008-09-26", T_2008_09_26_015142 - (1 * HOUR + 51 * MIN + 42 * S) },
		{ "1970-01-01T00:00:00Z", 0 },
		{ "1969-12-31T23:59:59Z", -1000 },
		{ "0001-01-01", -62135596800000LL },
		{ "9999-12-31T23:59:59Z", 253402300799000LL },
		/* strptime leniencies kube-janitor inherits: 1-digit fields, lower-case t and z */
		{ "2019-2-5", 1549324800000LL },
		{ "2008-09-26t1:51:42z", T_2008_09_26_015142 },
	};

	(void)state;
	parse_cases(janitor_parse_time, cases, NKV(cases));
}

static void parses_leap_years_and_month_ends(void **state)
{
	static const struct parse_case cases[] = {
		{ "2024-02-29", T_2024_02_29 },
		{ "2024-02-28T23:00", T_2024_02_28_2300 },
		{ "2000-02-29T12:00:00Z", 951825600000LL },
		{ "2023-03-01", T_2023_03_01 },
		{ "2024-12-31T23:59:59Z", T_2025_01_01 - S },
		{ "1900-03-01", -2203891200000LL },
	};

	(void)state;
	parse_cases(janitor_parse_time, cases, NKV(cases));
	assert_time_invalid("2023-02-29", "\"2023-02-29\": day out of range for the month");
	assert_time_invalid("1900-02-29", "\"1900-02-29\": day out of range for the month");
	assert_time_invalid("2024-04-31", "\"2024-04-31\": day out of range for the month");
	assert_time_invalid("2024-02-30T00:00",
			    "\"2024-02-30T00:00\": day out of range for the month");
}

static void rejects_bad_times_naming_them(void **state)
{
	static const char form[] =
		"want YYYY-MM-DD, YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SSZ (UTC)";
	static const struct {
		const char *in, *why;
	} cases[] = {
		{ "", form },
		{ "tomorrow", form },
		{ "99-06-02T12:12:59", form },          /* kube-janitor's own negative cases */
		{ "2010-12-12 09:26:11", form },
		{ "2008-09-26T01:51:42", form },        /* seconds need Z */
		{ "2008-09-26T01:51Z", form },          /* no HH:MMZ form */
		{ "2008-09-26T01:51:42+00:00", form },  /* no offsets */
		{ "2008-09-26T01:51:42.5Z", form },     /* no fractions */
		{ "2008-09-26T", form },
		{ " 2008-09-26", form },
		{ "2008-09-26 ", form },
		{ "2008-009-26", form },
		{ "20080-09-26", form },
		{ "2008- 9-26", form },                 /* glibc's strptime takes these two */
		{ "208-09-26", form },
		{ "0000-01-01", "year out of range 0001-9999" },
		{ "2008-13-01", "month out of range 1-12" },
		{ "2008-00-01", "month out of range 1-12" },
		{ "2008-01-00", "day out of range for the month" },
		{ "2008-01-01T24:00", "hour out of range 0-23" },
		{ "2008-01-01T23:60", "minute out of range 0-59" },
		{ "2008-01-01T23:59:60Z", "second out of range 0-59" },
	};
	struct buf want = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < NKV(cases); i++) {
		buf_setf(&want, "\"%s\": %s", cases[i].in, cases[i].why);
		assert_time_invalid(cases[i].in, buf_str(&want));
	}
	buf_release(&want);
}

static void formats_utc_and_round_trips(void **state)
{
	char out[JANITOR_TIME_LEN];

	(void)state;
	assert_int_equal(janitor_format_time(T_2008_09_26_015142 + 999, out), ERR_OK);
	assert_string_equal(out, "2008-09-26T01:51:42Z");
	assert_int_equal(janitor_format_time(T_2024_02_28_2300 + HOUR, out), ERR_OK);
	assert_string_equal(out, "2024-02-29T00:00:00Z");
	assert_int_equal(janitor_format_time(T_2024_02_29 + DAY, out), ERR_OK);
	assert_string_equal(out, "2024-03-01T00:00:00Z");
	assert_int_equal(janitor_format_time(T_2023_03_01 - 1, out), ERR_OK);
	assert_string_equal(out, "2023-02-28T23:59:59Z");
	assert_int_equal(janitor_format_time(-1, out), ERR_OK); /* rounds down, not to zero */
	assert_string_equal(out, "1969-12-31T23:59:59Z");
	assert_int_equal(janitor_format_time(-62135596800000LL, out), ERR_OK);
	assert_string_equal(out, "0001-01-01T00:00:00Z");
	assert_int_equal(janitor_format_time(253402300799999LL, out), ERR_OK);
	assert_string_equal(out, "9999-12-31T23:59:59Z");
	assert_int_equal(janitor_format_time(253402300800000LL, out), ERR_INVALID);
	assert_string_equal(out, "");
	assert_int_equal(janitor_format_time(-62135596800001LL, out), ERR_INVALID);
	assert_int_equal(janitor_format_time(INT64_MAX, out), ERR_INVALID);
	assert_int_equal(janitor_format_time(INT64_MIN, out), ERR_INVALID);

	/* every day over four years, leap day and month ends included, both ways */
	for (int64_t t = T_2023_03_01 - 400 * DAY; t < T_2023_03_01 + 1100 * DAY;
	     t += DAY + 7 * S) {
		int64_t back = 0;

		assert_int_equal(janitor_format_time(t, out), ERR_OK);
		assert_int_equal(janitor_parse_time(out, &back, NULL), ERR_OK);
		assert_int_equal(back, t);
	}
}

/* ---- ttl ---- */

static int64_t ttl_ok(const char *s)
{
	return parsed_ok(janitor_parse_ttl, s);
}

static void assert_ttl_invalid(const char *s, const char *want_msg)
{
	assert_parse_invalid(janitor_parse_ttl, s, want_msg);
}

static void parses_ttl_units(void **state)
{
	static const struct parse_case cases[] = {
		/* kube-janitor tests/test_parse_ttl.py, in ms */
		{ "1s", S },
		{ "08s", 8 * S },
		{ "5m", 5 * MIN },
		{ "2h", 2 * HOUR },
		{ "7d", 7 * DAY },
		{ "1w", 7 * DAY },
		{ "0s", 0 },
		{ "forever", JANITOR_TTL_FOREVER },
		{ "Forever", JANITOR_TTL_FOREVER },
		{ "FOREVER", JANITOR_TTL_FOREVER },
	};

	(void)state;
	parse_cases(janitor_parse_ttl, cases, NKV(cases));
}

static void rejects_bad_ttls_naming_them(void **state)
{
	static const char *const bad[] = {
		"", "foo", "1y", "5", "m", "5 m", " 5m", "5m ", "5M", "-5m", "+5m", "1h30m",
		"1.5h", "5mm", "forever!", "never",
	};
	struct buf want = BUF_INIT;
	size_t i;

	(void)state;
	for (i = 0; i < NKV(bad); i++) {
		buf_setf(&want, "\"%s\": want a number and a unit s, m, h, d or w "
				"(e.g. 60s, 5m, 8h, 7d, 2w), or forever", bad[i]);
		assert_ttl_invalid(bad[i], buf_str(&want));
	}
	buf_release(&want);
}

static void ttl_overflow_is_invalid(void **state)
{
	(void)state;
	assert_int_equal(ttl_ok("15250284452w"), 15250284452LL * 7 * DAY);
	assert_ttl_invalid("15250284453w", "\"15250284453w\": too long to count in milliseconds");
	assert_int_equal(ttl_ok("9223372036854775s"), 9223372036854775LL * S);
	assert_ttl_invalid("9223372036854776s",
			   "\"9223372036854776s\": too long to count in milliseconds");
	assert_ttl_invalid("99999999999999999999999999s",
			   "\"99999999999999999999999999s\": too long to count in milliseconds");
}

/* ---- annotation sets and pod state ---- */

static void kv_sort_and_get(void **state)
{
	struct janitor_kv kv[] = {
		{ "zeta", "z" }, { JANITOR_ANN_TTL, "1d" }, { "app", "a" },
		{ JANITOR_ANN_EXPIRES, "2024-02-29" },
	};

	(void)state;
	janitor_kv_sort(kv, NKV(kv));
	assert_string_equal(kv[0].name, "app");
	assert_string_equal(kv[3].name, "zeta");
	assert_string_equal(janitor_kv_get(kv, NKV(kv), JANITOR_ANN_TTL), "1d");
	assert_string_equal(janitor_kv_get(kv, NKV(kv), "zeta"), "z");
	assert_null(janitor_kv_get(kv, NKV(kv), JANITOR_ANN_REASON));
	assert_null(janitor_kv_get(NULL, 0, JANITOR_ANN_TTL));
	janitor_kv_sort(NULL, 0);
}

/* State of an unsorted annotation list (sorted here), expecting ERR_OK. */
static struct janitor_pod_state state_of(struct janitor_kv *kv, size_t n, int64_t creation_ms)
{
	struct janitor_pod_state st;
	struct buf msg = BUF_INIT;

	janitor_kv_sort(kv, n);
	assert_int_equal(janitor_pod_state(kv, n, creation_ms, &st, &msg), ERR_OK);
	assert_false(st.invalid);
	assert_string_equal(buf_str(&msg), "");
	buf_release(&msg);
	return st;
}

static void state_of_plain_pod(void **state)
{
	struct janitor_kv kv[] = { { "app", "train" } };
	struct janitor_pod_state st = state_of(kv, NKV(kv), 0);

	(void)state;
	assert_false(st.exempt);
	assert_false(st.forever);
	assert_false(st.marked);
	assert_int_equal(st.expires_ms, JANITOR_NO_TIME);
	assert_int_equal(st.ttl_expiry_ms, JANITOR_NO_TIME);
	assert_int_equal(st.expiry_ms, JANITOR_NO_TIME);
	assert_int_equal(st.marked_at_ms, JANITOR_NO_TIME);
	assert_int_equal(st.notified_at_ms, JANITOR_NO_TIME);
	assert_null(st.reason);
	assert_null(st.notify);
	st = state_of(NULL, 0, 0);
	assert_int_equal(st.expiry_ms, JANITOR_NO_TIME);
}

static void state_reads_every_annotation(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_NOTIFY, "U024BE7LH" },
		{ JANITOR_ANN_REASON, "GPU idle for 2h" },
		{ JANITOR_ANN_MARKED_AT, "2024-02-28T23:00:00Z" },
		{ JANITOR_ANN_NOTIFIED_AT, "2024-02-28T23:00:05Z" },
		{ JANITOR_ANN_EXPIRES, "2024-02-29T23:00:00Z" },
		{ JANITOR_ANN_EXEMPT, "false" },
	};
	struct janitor_pod_state st = state_of(kv, NKV(kv), 0);

	(void)state;
	assert_true(st.marked);
	assert_false(st.exempt);
	assert_int_equal(st.marked_at_ms, T_2024_02_28_2300);
	assert_int_equal(st.notified_at_ms, T_2024_02_28_2300 + 5 * S);
	assert_int_equal(st.expires_ms, T_2024_02_29 + 23 * HOUR);
	assert_int_equal(st.expiry_ms, T_2024_02_29 + 23 * HOUR);
	assert_string_equal(st.reason, "GPU idle for 2h");
	assert_string_equal(st.notify, "U024BE7LH");
}

static void expiry_is_min_of_expires_and_ttl(void **state)
{
	int64_t created = T_2024_02_28_2300;
	struct janitor_kv ttl_first[] = {
		{ JANITOR_ANN_TTL, "1h" }, { JANITOR_ANN_EXPIRES, "2024-03-01" },
	};
	struct janitor_kv expires_first[] = {
		{ JANITOR_ANN_TTL, "2d" }, { JANITOR_ANN_EXPIRES, "2024-02-29T12:00" },
	};
	struct janitor_kv ttl_only[] = { { JANITOR_ANN_TTL, "1d" } };
	struct janitor_kv huge_ttl[] = { { JANITOR_ANN_TTL, "15250284452w" } };
	struct janitor_pod_state st;

	(void)state;
	st = state_of(ttl_first, NKV(ttl_first), created);
	assert_int_equal(st.ttl_expiry_ms, T_2024_02_29);
	assert_int_equal(st.expires_ms, T_2024_02_29 + DAY);
	assert_int_equal(st.expiry_ms, T_2024_02_29);

	st = state_of(expires_first, NKV(expires_first), created);
	assert_int_equal(st.ttl_expiry_ms, T_2024_02_28_2300 + 2 * DAY);
	assert_int_equal(st.expiry_ms, T_2024_02_29 + 12 * HOUR);

	/* counted from creation across the leap day: 2024-02-28T23:00 + 1d = 2024-02-29T23:00 */
	st = state_of(ttl_only, NKV(ttl_only), created);
	assert_int_equal(st.expiry_ms, T_2024_02_29 + 23 * HOUR);

	/* creation + ttl saturates instead of wrapping into the past */
	st = state_of(huge_ttl, NKV(huge_ttl), created);
	assert_int_equal(st.expiry_ms, INT64_MAX);
}

static void exempt_and_forever(void **state)
{
	struct janitor_kv exempt[] = { { JANITOR_ANN_EXEMPT, "true" } };
	struct janitor_kv exempt_caps[] = { { JANITOR_ANN_EXEMPT, "True" } };
	struct janitor_kv forever[] = {
		{ JANITOR_ANN_TTL, "forever" }, { JANITOR_ANN_EXPIRES, "2024-02-29" },
	};
	struct janitor_pod_state st;

	(void)state;
	st = state_of(exempt, 1, 0);
	assert_true(st.exempt);
	st = state_of(exempt_caps, 1, 0);
	assert_true(st.exempt);
	st = state_of(forever, NKV(forever), 0);
	assert_true(st.forever);
	assert_int_equal(st.ttl_expiry_ms, JANITOR_NO_TIME);
	assert_int_equal(st.expiry_ms, T_2024_02_29);
}

static void assert_state_invalid(const char *name, const char *value, const char *want_msg)
{
	struct janitor_kv kv[] = { { name, value }, { "app", "x" } };
	struct janitor_pod_state st;
	struct buf msg = BUF_INIT;

	janitor_kv_sort(kv, NKV(kv));
	assert_int_equal(janitor_pod_state(kv, NKV(kv), 0, &st, &msg), ERR_INVALID);
	assert_true(st.invalid);
	assert_string_equal(buf_str(&msg), want_msg);
	assert_int_equal(janitor_pod_state(kv, NKV(kv), 0, &st, NULL), ERR_INVALID);
	buf_release(&msg);
}

static void invalid_annotations_are_named(void **state)
{
	(void)state;
	assert_state_invalid(JANITOR_ANN_EXPIRES, "next week",
			     "annotation janitor/expires \"next week\": want YYYY-MM-DD, "
			     "YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SSZ (UTC)");
	assert_state_invalid(JANITOR_ANN_EXPIRES, "2023-02-29",
			     "annotation janitor/expires \"2023-02-29\": day out of range for "
			     "the month");
	assert_state_invalid(JANITOR_ANN_TTL, "5y",
			     "annotation janitor/ttl \"5y\": want a number and a unit s, m, h, d "
			     "or w (e.g. 60s, 5m, 8h, 7d, 2w), or forever");
	assert_state_invalid(JANITOR_ANN_TTL, "15250284453w",
			     "annotation janitor/ttl \"15250284453w\": too long to count in "
			     "milliseconds");
	assert_state_invalid(JANITOR_ANN_MARKED_AT, "yesterday",
			     "annotation janitor/marked-at \"yesterday\": want YYYY-MM-DD, "
			     "YYYY-MM-DDTHH:MM or YYYY-MM-DDTHH:MM:SSZ (UTC)");
	assert_state_invalid(JANITOR_ANN_NOTIFIED_AT, "2024-02-29T25:00",
			     "annotation janitor/notified-at \"2024-02-29T25:00\": hour out of "
			     "range 0-23");
	assert_state_invalid(JANITOR_ANN_EXEMPT, "yes",
			     "annotation janitor/exempt \"yes\": want \"true\" or \"false\"");
	/* values are escaped and cut */
	assert_state_invalid(JANITOR_ANN_EXEMPT, "a\"b\n\x01",
			     "annotation janitor/exempt \"a\\x22b\\x0a\\x01\": want \"true\" or "
			     "\"false\"");
	assert_state_invalid(JANITOR_ANN_EXEMPT,
			     "01234567890123456789012345678901234567890123456789"
			     "01234567890123456789",
			     "annotation janitor/exempt "
			     "\"01234567890123456789012345678901234567890123456789"
			     "01234567890123\"...: "
			     "want \"true\" or \"false\"");
}

static void first_invalid_annotation_is_reported(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_TTL, "1y" },
		{ JANITOR_ANN_EXPIRES, "bad" },
		{ JANITOR_ANN_NOTIFY, "#team" },
	};
	struct janitor_pod_state st;
	struct buf msg = BUF_INIT;

	(void)state;
	janitor_kv_sort(kv, NKV(kv));
	assert_int_equal(janitor_pod_state(kv, NKV(kv), 0, &st, &msg), ERR_INVALID);
	assert_true(st.invalid);
	assert_string_equal(buf_str(&msg),
			    "annotation janitor/ttl \"1y\": want a number and a unit "
			    "s, m, h, d or w (e.g. 60s, 5m, 8h, 7d, 2w), or forever");
	assert_string_equal(st.notify, "#team");
	buf_release(&msg);
}

/* ---- patches ---- */

static void assert_op(const struct janitor_patch *p, const char *name, const char *value)
{
	const struct janitor_patch_op *op = janitor_patch_find(p, name);

	assert_non_null(op);
	if (value == NULL)
		assert_null(op->value);
	else
		assert_string_equal(op->value, value);
}

static void mark_fresh_pod(void **state)
{
	struct janitor_kv kv[] = { { "app", "x" } };
	struct janitor_pod_state st = state_of(kv, NKV(kv), 0);
	struct janitor_patch p = JANITOR_PATCH_INIT;
	int64_t now = T_2024_02_28_2300 + 500; /* + 24h grace lands on the leap day */

	(void)state;
	assert_int_equal(janitor_mark_patch(&st, now, DAY, "GPU idle", &p, NULL), ERR_OK);
	assert_int_equal(p.n, 4);
	/* sorted by name */
	assert_string_equal(p.ops[0].name, JANITOR_ANN_EXPIRES);
	assert_string_equal(p.ops[1].name, JANITOR_ANN_MARKED_AT);
	assert_string_equal(p.ops[2].name, JANITOR_ANN_MARKED_EXPIRES);
	assert_string_equal(p.ops[3].name, JANITOR_ANN_REASON);
	assert_op(&p, JANITOR_ANN_EXPIRES, "2024-02-29T23:00:00Z");
	assert_op(&p, JANITOR_ANN_MARKED_EXPIRES, "2024-02-29T23:00:00Z");
	assert_op(&p, JANITOR_ANN_MARKED_AT, "2024-02-28T23:00:00Z");
	assert_op(&p, JANITOR_ANN_REASON, "GPU idle");
	assert_null(janitor_patch_find(&p, JANITOR_ANN_NOTIFIED_AT));
	janitor_patch_release(&p);
	assert_int_equal(p.n, 0);
	janitor_patch_release(NULL);
}

static void mark_crosses_month_and_year_ends(void **state)
{
	struct janitor_pod_state st = state_of(NULL, 0, 0);
	struct janitor_patch p = JANITOR_PATCH_INIT;

	(void)state;
	assert_int_equal(janitor_mark_patch(&st, T_2023_03_01 - 6 * HOUR, 7 * HOUR, "r", &p, NULL),
			 ERR_OK);
	assert_op(&p, JANITOR_ANN_EXPIRES, "2023-03-01T01:00:00Z");
	assert_op(&p, JANITOR_ANN_MARKED_AT, "2023-02-28T18:00:00Z");
	janitor_patch_release(&p);
	assert_int_equal(janitor_mark_patch(&st, T_2025_01_01 - 1, S, "r", &p, NULL), ERR_OK);
	assert_op(&p, JANITOR_ANN_EXPIRES, "2025-01-01T00:00:00Z");
	assert_op(&p, JANITOR_ANN_MARKED_AT, "2024-12-31T23:59:59Z");
	janitor_patch_release(&p);
}

static void mark_never_extends_an_existing_expiry(void **state)
{
	struct janitor_kv earlier[] = { { JANITOR_ANN_EXPIRES, "2024-02-29T01:00:00Z" } };
	struct janitor_kv later[] = { { JANITOR_ANN_EXPIRES, "2024-03-31" } };
	struct janitor_pod_state st;
	struct janitor_patch p = JANITOR_PATCH_INIT;
	int64_t now = T_2024_02_28_2300;

	(void)state;
	/* a person's earlier expiry stays; the janitor writes no marked-expires for it */
	st = state_of(earlier, 1, 0);
	assert_int_equal(janitor_mark_patch(&st, now, DAY, "idle", &p, NULL), ERR_OK);
	assert_int_equal(p.n, 2);
	assert_null(janitor_patch_find(&p, JANITOR_ANN_EXPIRES));
	assert_null(janitor_patch_find(&p, JANITOR_ANN_MARKED_EXPIRES));
	assert_op(&p, JANITOR_ANN_MARKED_AT, "2024-02-28T23:00:00Z");
	assert_op(&p, JANITOR_ANN_REASON, "idle");
	janitor_patch_release(&p);

	/* equal is kept too */
	assert_int_equal(janitor_mark_patch(&st, now - 22 * HOUR, DAY, "idle", &p, NULL), ERR_OK);
	assert_null(janitor_patch_find(&p, JANITOR_ANN_EXPIRES));
	janitor_patch_release(&p);

	/* a later one is brought forward to now + grace */
	st = state_of(later, 1, 0);
	assert_int_equal(janitor_mark_patch(&st, now, DAY, "idle", &p, NULL), ERR_OK);
	assert_op(&p, JANITOR_ANN_EXPIRES, "2024-02-29T23:00:00Z");
	assert_op(&p, JANITOR_ANN_MARKED_EXPIRES, "2024-02-29T23:00:00Z");
	janitor_patch_release(&p);
}

static void mark_again_changes_nothing_but_reason(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_EXPIRES, "2024-03-05T00:00:00Z" }, /* the owner snoozed */
		{ JANITOR_ANN_MARKED_EXPIRES, "2024-02-29T23:00:00Z" },
		{ JANITOR_ANN_MARKED_AT, "2024-02-28T23:00:00Z" },
		{ JANITOR_ANN_REASON, "GPU idle" },
	};
	struct janitor_kv removed[] = {
		{ JANITOR_ANN_MARKED_AT, "2024-02-28T23:00:00Z" },
		{ JANITOR_ANN_REASON, "GPU idle" },
	};
	struct janitor_pod_state st = state_of(kv, NKV(kv), 0);
	struct janitor_patch p = JANITOR_PATCH_INIT;

	(void)state;
	assert_int_equal(janitor_mark_patch(&st, T_2024_02_29, DAY, "GPU idle", &p, NULL), ERR_OK);
	assert_int_equal(p.n, 0);
	assert_int_equal(janitor_mark_patch(&st, T_2024_02_29, DAY, "CPU idle", &p, NULL), ERR_OK);
	assert_int_equal(p.n, 1);
	assert_op(&p, JANITOR_ANN_REASON, "CPU idle");
	janitor_patch_release(&p);

	/* marked, but someone removed expires while it still fires: written again */
	st = state_of(removed, NKV(removed), 0);
	assert_int_equal(janitor_mark_patch(&st, T_2024_02_29, DAY, "GPU idle", &p, NULL), ERR_OK);
	assert_int_equal(p.n, 2);
	assert_op(&p, JANITOR_ANN_EXPIRES, "2024-03-01T00:00:00Z");
	assert_op(&p, JANITOR_ANN_MARKED_EXPIRES, "2024-03-01T00:00:00Z");
	janitor_patch_release(&p);
}

static void mark_refuses_exempt_forever_invalid(void **state)
{
	struct janitor_kv exempt[] = { { JANITOR_ANN_EXEMPT, "true" } };
	struct janitor_kv forever[] = { { JANITOR_ANN_TTL, "forever" } };
	struct janitor_kv bad[] = { { JANITOR_ANN_TTL, "soon" } };
	struct janitor_pod_state st;
	struct janitor_patch p = JANITOR_PATCH_INIT;
	struct buf msg = BUF_INIT;

	(void)state;
	st = state_of(exempt, 1, 0);
	assert_int_equal(janitor_mark_patch(&st, 0, DAY, "idle", &p, &msg), ERR_INVALID);
	assert_int_equal(p.n, 0);
	assert_string_equal(buf_str(&msg),
			    "pod not marked: it is exempt (janitor/exempt: \"true\")");
	st = state_of(forever, 1, 0);
	assert_int_equal(janitor_mark_patch(&st, 0, DAY, "idle", &p, &msg), ERR_INVALID);
	assert_string_equal(buf_str(&msg), "pod not marked: its janitor/ttl is forever");
	assert_int_equal(janitor_pod_state(bad, 1, 0, &st, NULL), ERR_INVALID);
	assert_int_equal(janitor_mark_patch(&st, 0, DAY, "idle", &p, &msg), ERR_INVALID);
	assert_string_equal(buf_str(&msg), "pod not marked: it has an invalid janitor annotation");
	assert_int_equal(p.n, 0);
	buf_release(&msg);
}

static void mark_out_of_range_expiry(void **state)
{
	struct janitor_pod_state st = state_of(NULL, 0, 0);
	struct janitor_patch p = JANITOR_PATCH_INIT;
	struct buf msg = BUF_INIT;

	(void)state;
	assert_int_equal(janitor_mark_patch(&st, 253402300799000LL, S, "r", &p, &msg), ERR_INVALID);
	assert_int_equal(p.n, 0);
	assert_string_equal(buf_str(&msg), "expiry out of range: now 253402300799000 ms + grace "
					   "1000 ms");
	buf_release(&msg);
}

static void notified_at_rounds_up(void **state)
{
	struct janitor_patch p = JANITOR_PATCH_INIT;

	(void)state;
	janitor_notified_patch(T_2024_02_29 - 999, &p);
	assert_int_equal(p.n, 1);
	assert_op(&p, JANITOR_ANN_NOTIFIED_AT, "2024-02-29T00:00:00Z");
	janitor_patch_release(&p);
	janitor_notified_patch(T_2024_02_29, &p);
	assert_op(&p, JANITOR_ANN_NOTIFIED_AT, "2024-02-29T00:00:00Z");
	janitor_patch_release(&p);
	janitor_notified_patch(T_2024_02_29 + 1, &p);
	assert_op(&p, JANITOR_ANN_NOTIFIED_AT, "2024-02-29T00:00:01Z");
	janitor_patch_release(&p);
}

/* The unmark patch of the annotations kv (n, sorted here) into p. */
static void unmark(struct janitor_kv *kv, size_t n, struct janitor_patch *p)
{
	janitor_kv_sort(kv, n);
	janitor_unmark_patch(kv, n, p);
}

static void unmark_removes_only_ours(void **state)
{
	struct janitor_kv ours[] = {
		{ JANITOR_ANN_EXPIRES, "2024-02-29T23:00:00Z" },
		{ JANITOR_ANN_MARKED_EXPIRES, "2024-02-29T23:00:00Z" },
		{ JANITOR_ANN_MARKED_AT, "2024-02-28T23:00:00Z" },
		{ JANITOR_ANN_NOTIFIED_AT, "2024-02-28T23:00:01Z" },
		{ JANITOR_ANN_REASON, "GPU idle" },
		{ JANITOR_ANN_NOTIFY, "#team" },
		{ JANITOR_ANN_TTL, "30d" },
	};
	struct janitor_patch p = JANITOR_PATCH_INIT;

	(void)state;
	unmark(ours, NKV(ours), &p);
	assert_int_equal(p.n, 5);
	assert_string_equal(p.ops[0].name, JANITOR_ANN_EXPIRES);
	assert_string_equal(p.ops[4].name, JANITOR_ANN_REASON);
	assert_op(&p, JANITOR_ANN_EXPIRES, NULL);
	assert_op(&p, JANITOR_ANN_MARKED_EXPIRES, NULL);
	assert_op(&p, JANITOR_ANN_MARKED_AT, NULL);
	assert_op(&p, JANITOR_ANN_NOTIFIED_AT, NULL);
	assert_op(&p, JANITOR_ANN_REASON, NULL);
	assert_null(janitor_patch_find(&p, JANITOR_ANN_NOTIFY)); /* a person's */
	assert_null(janitor_patch_find(&p, JANITOR_ANN_TTL));
	janitor_patch_release(&p);
}

static void unmark_keeps_a_persons_expires(void **state)
{
	struct janitor_kv person_only[] = {
		{ JANITOR_ANN_EXPIRES, "2024-02-29" }, { JANITOR_ANN_NOTIFIED_AT, "2024-02-28" },
	};
	struct janitor_kv kept_at_mark[] = {
		{ JANITOR_ANN_EXPIRES, "2024-02-29" }, { JANITOR_ANN_MARKED_AT, "2024-02-28" },
		{ JANITOR_ANN_REASON, "idle" },
	};
	struct janitor_kv snoozed[] = {
		{ JANITOR_ANN_EXPIRES, "2024-03-31" },
		{ JANITOR_ANN_MARKED_EXPIRES, "2024-02-29T23:00:00Z" },
		{ JANITOR_ANN_MARKED_AT, "2024-02-28T23:00:00Z" },
	};
	struct janitor_patch p = JANITOR_PATCH_INIT;

	(void)state;
	/* never marked by the janitor: nothing to undo */
	unmark(person_only, NKV(person_only), &p);
	assert_int_equal(p.n, 0);
	janitor_unmark_patch(NULL, 0, &p);
	assert_int_equal(p.n, 0);

	/* marked, but the expiry was a person's from before */
	unmark(kept_at_mark, NKV(kept_at_mark), &p);
	assert_int_equal(p.n, 2);
	assert_op(&p, JANITOR_ANN_MARKED_AT, NULL);
	assert_op(&p, JANITOR_ANN_REASON, NULL);
	assert_null(janitor_patch_find(&p, JANITOR_ANN_EXPIRES));
	janitor_patch_release(&p);

	/* the owner changed our expiry since: theirs now */
	unmark(snoozed, NKV(snoozed), &p);
	assert_int_equal(p.n, 2);
	assert_op(&p, JANITOR_ANN_MARKED_AT, NULL);
	assert_op(&p, JANITOR_ANN_MARKED_EXPIRES, NULL);
	assert_null(janitor_patch_find(&p, JANITOR_ANN_EXPIRES));
	janitor_patch_release(&p);
}

static void mark_then_unmark_round_trip(void **state)
{
	struct janitor_kv kv[8] = { { "app", "x" }, { JANITOR_ANN_NOTIFY, "#team" } };
	size_t n = 2, i;
	struct janitor_pod_state st = state_of(kv, n, 0);
	struct janitor_patch p = JANITOR_PATCH_INIT;

	(void)state;
	assert_int_equal(janitor_mark_patch(&st, T_2024_02_29, HOUR, "idle", &p, NULL), ERR_OK);
	for (i = 0; i < p.n; i++) {
		kv[n].name = p.ops[i].name;
		kv[n].value = p.ops[i].value;
		n++;
	}
	janitor_kv_sort(kv, n);
	{
		struct janitor_patch undo = JANITOR_PATCH_INIT;

		janitor_unmark_patch(kv, n, &undo);
		assert_int_equal(undo.n, p.n);
		for (i = 0; i < p.n; i++) {
			assert_string_equal(undo.ops[i].name, p.ops[i].name);
			assert_null(undo.ops[i].value);
		}
		janitor_patch_release(&undo);
	}
	janitor_patch_release(&p);
}

/* ---- the sweeper's rule ---- */

static struct janitor_pod_state expiring(int64_t expiry_ms, int64_t notified_at_ms)
{
	struct janitor_pod_state st;

	memset(&st, 0, sizeof(st));
	st.expires_ms = expiry_ms;
	st.ttl_expiry_ms = JANITOR_NO_TIME;
	st.expiry_ms = expiry_ms;
	st.marked_at_ms = JANITOR_NO_TIME;
	st.notified_at_ms = notified_at_ms;
	return st;
}

static void assert_decision(struct janitor_decision d, enum janitor_action action,
			    enum janitor_skip why, int64_t at_ms)
{
	assert_string_equal(janitor_action_str(d.action), janitor_action_str(action));
	assert_string_equal(janitor_skip_str(d.why), janitor_skip_str(why));
	assert_int_equal(d.at_ms, at_ms);
}

static void acts_only_after_notice_lead(void **state)
{
	int64_t expiry = T_2024_02_29, lead = 2 * HOUR, notified = expiry - 30 * MIN;
	struct janitor_pod_state st = expiring(expiry, notified);

	(void)state;
	/* expiry passed but the notice is too recent: wait for notified + lead */
	assert_decision(janitor_sweep_decision(&st, expiry, lead, false, false), JANITOR_WAIT,
			JANITOR_SKIP_NONE, notified + lead);
	assert_decision(janitor_sweep_decision(&st, notified + lead - 1, lead, false, false),
			JANITOR_WAIT, JANITOR_SKIP_NONE, notified + lead);
	assert_decision(janitor_sweep_decision(&st, notified + lead, lead, false, false),
			JANITOR_ACT, JANITOR_SKIP_NONE, JANITOR_NO_TIME);
	assert_decision(janitor_sweep_decision(&st, notified + 10 * DAY, lead, false, false),
			JANITOR_ACT, JANITOR_SKIP_NONE, JANITOR_NO_TIME);

	/* an old notice: act exactly at expiry, not 1 ms before */
	st = expiring(expiry, expiry - DAY);
	assert_decision(janitor_sweep_decision(&st, expiry - 1, lead, false, false), JANITOR_WAIT,
			JANITOR_SKIP_NONE, expiry);
	assert_decision(janitor_sweep_decision(&st, expiry, lead, false, false), JANITOR_ACT,
			JANITOR_SKIP_NONE, JANITOR_NO_TIME);

	/* zero lead: a notice at expiry suffices */
	st = expiring(expiry, expiry);
	assert_decision(janitor_sweep_decision(&st, expiry, 0, false, false), JANITOR_ACT,
			JANITOR_SKIP_NONE, JANITOR_NO_TIME);
}

static void never_acts_without_a_notice(void **state)
{
	int64_t expiry = T_2024_02_29, lead = HOUR;
	struct janitor_pod_state st = expiring(expiry, JANITOR_NO_TIME);

	(void)state;
	/* long expired, never notified (a person set it, or we were down): notify, act later */
	assert_decision(janitor_sweep_decision(&st, expiry + 30 * DAY, lead, false, false),
			JANITOR_NOTIFY, JANITOR_SKIP_NONE, expiry + 30 * DAY + lead);
	assert_decision(janitor_sweep_decision(&st, expiry, lead, false, false), JANITOR_NOTIFY,
			JANITOR_SKIP_NONE, expiry + lead);
	/* notice due lead before expiry, so it can act right at expiry */
	assert_decision(janitor_sweep_decision(&st, expiry - lead, lead, false, false),
			JANITOR_NOTIFY, JANITOR_SKIP_NONE, expiry);
	assert_decision(janitor_sweep_decision(&st, expiry - lead - 1, lead, false, false),
			JANITOR_WAIT, JANITOR_SKIP_NONE, expiry - lead);
	/* with a zero lead still a notice first */
	assert_decision(janitor_sweep_decision(&st, expiry, 0, false, false), JANITOR_NOTIFY,
			JANITOR_SKIP_NONE, expiry);
}

static void ttl_expiry_uses_the_same_rule(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_TTL, "1d" }, { JANITOR_ANN_NOTIFIED_AT, "2024-02-29T22:00:00Z" },
	};
	struct janitor_pod_state st = state_of(kv, NKV(kv), T_2024_02_28_2300);

	(void)state;
	assert_decision(janitor_sweep_decision(&st, T_2024_02_29 + 23 * HOUR, HOUR, false, false),
			JANITOR_ACT, JANITOR_SKIP_NONE, JANITOR_NO_TIME);
	assert_decision(janitor_sweep_decision(&st, T_2024_02_29 + 23 * HOUR - 1, HOUR, false,
					       false),
			JANITOR_WAIT, JANITOR_SKIP_NONE, T_2024_02_29 + 23 * HOUR);
}

static void skips_in_order(void **state)
{
	struct janitor_pod_state st = expiring(0, -DAY);
	int64_t now = DAY;

	(void)state;
	assert_decision(janitor_sweep_decision(&st, now, 0, false, false), JANITOR_ACT,
			JANITOR_SKIP_NONE, JANITOR_NO_TIME);
	st.exempt = true;
	st.forever = true;
	st.invalid = true;
	/* an excluded namespace wins over everything */
	assert_decision(janitor_sweep_decision(&st, now, 0, true, true), JANITOR_SKIP,
			JANITOR_SKIP_EXCLUDED, JANITOR_NO_TIME);
	assert_decision(janitor_sweep_decision(&st, now, 0, false, true), JANITOR_SKIP,
			JANITOR_SKIP_BEING_DELETED, JANITOR_NO_TIME);
	assert_decision(janitor_sweep_decision(&st, now, 0, false, false), JANITOR_SKIP,
			JANITOR_SKIP_INVALID, JANITOR_NO_TIME);
	st.invalid = false;
	assert_decision(janitor_sweep_decision(&st, now, 0, false, false), JANITOR_SKIP,
			JANITOR_SKIP_EXEMPT, JANITOR_NO_TIME);
	st.exempt = false;
	assert_decision(janitor_sweep_decision(&st, now, 0, false, false), JANITOR_SKIP,
			JANITOR_SKIP_FOREVER, JANITOR_NO_TIME);
	st = expiring(JANITOR_NO_TIME, -DAY);
	assert_decision(janitor_sweep_decision(&st, now, 0, false, false), JANITOR_SKIP,
			JANITOR_SKIP_NO_EXPIRY, JANITOR_NO_TIME);
}

/*
 * kube-janitor acts on a TTL only when it is above zero (janitor.py: "if ttl_seconds > 0"):
 * janitor/ttl: 0s (0m, 0h, ...) sets no expiry, long after creation too; a janitor/expires
 * beside it still counts.
 */
static void zero_ttl_never_acts(void **state)
{
	static const char *const zeros[] = { "0s", "0m", "00h", "0d", "0w" };
	struct janitor_kv with_expires[] = {
		{ JANITOR_ANN_TTL, "0s" }, { JANITOR_ANN_EXPIRES, "2024-02-29" },
		{ JANITOR_ANN_NOTIFIED_AT, "2024-02-27" },
	};
	struct janitor_pod_state st;

	(void)state;
	for (size_t i = 0; i < NKV(zeros); i++) {
		struct janitor_kv kv[] = {
			{ JANITOR_ANN_TTL, zeros[i] },
			{ JANITOR_ANN_NOTIFIED_AT, "2024-02-27" },
		};

		st = state_of(kv, NKV(kv), T_2024_02_28_2300);
		assert_false(st.forever);
		assert_int_equal(st.ttl_expiry_ms, JANITOR_NO_TIME);
		assert_int_equal(st.expiry_ms, JANITOR_NO_TIME);
		assert_decision(janitor_sweep_decision(&st, T_2024_02_28_2300, 0, false, false),
				JANITOR_SKIP, JANITOR_SKIP_NO_EXPIRY, JANITOR_NO_TIME);
		assert_decision(janitor_sweep_decision(&st, T_2024_02_28_2300 + 30 * DAY, HOUR,
						       false, false),
				JANITOR_SKIP, JANITOR_SKIP_NO_EXPIRY, JANITOR_NO_TIME);
	}
	st = state_of(with_expires, NKV(with_expires), T_2024_02_28_2300);
	assert_int_equal(st.expiry_ms, T_2024_02_29);
	assert_decision(janitor_sweep_decision(&st, T_2024_02_29, 0, false, false), JANITOR_ACT,
			JANITOR_SKIP_NONE, JANITOR_NO_TIME);
}

static void forever_ttl_skips_even_with_expires(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_TTL, "forever" }, { JANITOR_ANN_EXPIRES, "2024-02-29" },
		{ JANITOR_ANN_NOTIFIED_AT, "2024-02-27" },
	};
	struct janitor_pod_state st = state_of(kv, NKV(kv), 0);

	(void)state;
	assert_decision(janitor_sweep_decision(&st, T_2024_02_29 + DAY, 0, false, false),
			JANITOR_SKIP, JANITOR_SKIP_FOREVER, JANITOR_NO_TIME);
}

static void names(void **state)
{
	/* Each case: what it names, the name given, the name wanted. */
	const struct {
		const char *what, *got, *want;
	} cases[] = {
		{ "JANITOR_SKIP", janitor_action_str(JANITOR_SKIP), "skip" },
		{ "JANITOR_WAIT", janitor_action_str(JANITOR_WAIT), "wait" },
		{ "JANITOR_NOTIFY", janitor_action_str(JANITOR_NOTIFY), "notify" },
		{ "JANITOR_ACT", janitor_action_str(JANITOR_ACT), "act" },
		{ "JANITOR_SKIP_NONE", janitor_skip_str(JANITOR_SKIP_NONE), "none" },
		{ "JANITOR_SKIP_EXCLUDED", janitor_skip_str(JANITOR_SKIP_EXCLUDED),
		  "excluded-namespace" },
		{ "JANITOR_SKIP_BEING_DELETED", janitor_skip_str(JANITOR_SKIP_BEING_DELETED),
		  "being-deleted" },
		{ "JANITOR_SKIP_INVALID", janitor_skip_str(JANITOR_SKIP_INVALID),
		  "invalid-annotation" },
		{ "JANITOR_SKIP_EXEMPT", janitor_skip_str(JANITOR_SKIP_EXEMPT), "exempt" },
		{ "JANITOR_SKIP_FOREVER", janitor_skip_str(JANITOR_SKIP_FOREVER), "ttl-forever" },
		{ "JANITOR_SKIP_NO_EXPIRY", janitor_skip_str(JANITOR_SKIP_NO_EXPIRY), "no-expiry" },
	};

	(void)state;
	for (size_t i = 0; i < NKV(cases); i++)
		if (strcmp(cases[i].got, cases[i].want))
			fail_msg("%s is \"%s\", want \"%s\"", cases[i].what, cases[i].got,
				 cases[i].want);
}

UNIT_MAIN(
	cmocka_unit_test(parses_all_kube_janitor_forms),
	cmocka_unit_test(parses_leap_years_and_month_ends),
	cmocka_unit_test(rejects_bad_times_naming_them),
	cmocka_unit_test(formats_utc_and_round_trips),
	cmocka_unit_test(parses_ttl_units),
	cmocka_unit_test(rejects_bad_ttls_naming_them),
	cmocka_unit_test(ttl_overflow_is_invalid),
	cmocka_unit_test(kv_sort_and_get),
	cmocka_unit_test(state_of_plain_pod),
	cmocka_unit_test(state_reads_every_annotation),
	cmocka_unit_test(expiry_is_min_of_expires_and_ttl),
	cmocka_unit_test(exempt_and_forever),
	cmocka_unit_test(invalid_annotations_are_named),
	cmocka_unit_test(first_invalid_annotation_is_reported),
	cmocka_unit_test(mark_fresh_pod),
	cmocka_unit_test(mark_crosses_month_and_year_ends),
	cmocka_unit_test(mark_never_extends_an_existing_expiry),
	cmocka_unit_test(mark_again_changes_nothing_but_reason),
	cmocka_unit_test(mark_refuses_exempt_forever_invalid),
	cmocka_unit_test(mark_out_of_range_expiry),
	cmocka_unit_test(notified_at_rounds_up),
	cmocka_unit_test(unmark_removes_only_ours),
	cmocka_unit_test(unmark_keeps_a_persons_expires),
	cmocka_unit_test(mark_then_unmark_round_trip),
	cmocka_unit_test(acts_only_after_notice_lead),
	cmocka_unit_test(never_acts_without_a_notice),
	cmocka_unit_test(ttl_expiry_uses_the_same_rule),
	cmocka_unit_test(skips_in_order),
	cmocka_unit_test(forever_ttl_skips_even_with_expires),
	cmocka_unit_test(zero_ttl_never_acts),
	cmocka_unit_test(names))
