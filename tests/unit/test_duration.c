/* test_duration.c - Prometheus durations: parse, String() form, human wording. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/duration.h"

#define S 1000LL
#define M (60 * S)
#define H (60 * M)
#define D (24 * H)

static int64_t parse_ok(const char *s)
{
	struct buf msg = BUF_INIT;
	int64_t ms = -1;

	assert_int_equal(duration_parse(s, &ms, &msg), ERR_OK);
	assert_string_equal(buf_str(&msg), "");
	buf_release(&msg);
	return ms;
}

static void parse_err(const char *s, const char *want)
{
	struct buf msg = BUF_INIT;
	int64_t ms = 42;

	assert_int_equal(duration_parse(s, &ms, &msg), ERR_INVALID);
	assert_string_equal(buf_str(&msg), want);
	assert_int_equal(ms, 42);
	buf_release(&msg);
}

static void parses_every_unit(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("0"), 0);
	assert_int_equal(parse_ok("0s"), 0);
	assert_int_equal(parse_ok("500ms"), 500);
	assert_int_equal(parse_ok("30s"), 30 * S);
	assert_int_equal(parse_ok("5m"), 5 * M);
	assert_int_equal(parse_ok("1h30m"), H + 30 * M);
	assert_int_equal(parse_ok("7d"), 7 * D);
	assert_int_equal(parse_ok("1w"), 7 * D);
	assert_int_equal(parse_ok("1y"), 365 * D);
	assert_int_equal(parse_ok("1y2w3d4h5m6s7ms"),
			 365 * D + 14 * D + 3 * D + 4 * H + 5 * M + 6 * S + 7);
	assert_int_equal(parse_ok("90m"), 90 * M);
	assert_int_equal(parse_ok("007s"), 7 * S);
}

static void rejects_bad_syntax_with_quoted_input(void **state)
{
	(void)state;
	parse_err("", "empty duration string");
	parse_err(NULL, "empty duration string");
	parse_err("30", "not a valid duration string: \"30\"");
	parse_err("m", "not a valid duration string: \"m\"");
	parse_err("1.5h", "unknown unit \".\" in duration \"1.5h\"");
	parse_err("-1s", "not a valid duration string: \"-1s\"");
	parse_err("1h 30m", "unknown unit \"h \" in duration \"1h 30m\"");
	parse_err(" 1h", "not a valid duration string: \" 1h\"");
	parse_err("10x", "unknown unit \"x\" in duration \"10x\"");
	parse_err("10S", "unknown unit \"S\" in duration \"10S\"");
}

static void rejects_units_out_of_order_or_repeated(void **state)
{
	(void)state;
	parse_err("30m1h", "not a valid duration string: \"30m1h\"");
	parse_err("1h1h", "not a valid duration string: \"1h1h\"");
	parse_err("1s1m", "not a valid duration string: \"1s1m\"");
	parse_err("5ms1s", "not a valid duration string: \"5ms1s\"");
}

static void rejects_overflow(void **state)
{
	(void)state;
	/* Go's time.Duration tops out at 2^63-1 ns, about 292 years. */
	assert_int_equal(parse_ok("292y"), 292 * 365 * D);
	parse_err("293y", "duration out of range: \"293y\"");
	parse_err("99999999999999999999999s",
		  "duration out of range: \"99999999999999999999999s\"");
	parse_err("292y52w", "duration out of range: \"292y52w\"");
	assert_int_equal(parse_ok("9223372036854ms"), 9223372036854LL);
	parse_err("9223372036855ms", "duration out of range: \"9223372036855ms\"");
}

/* A duration in ms and its text. */
struct ms_text {
	int64_t ms;
	const char *text;
};

/* write(ms) (duration_format or duration_human) of each of cases[0..n) is its text. */
static void writes_as(void (*write)(int64_t ms, struct buf *out), const struct ms_text *cases,
		      size_t n)
{
	struct buf b = BUF_INIT;

	for (size_t i = 0; i < n; i++) {
		buf_reset(&b);
		write(cases[i].ms, &b);
		if (strcmp(buf_str(&b), cases[i].text))
			fail_msg("%lld ms: \"%s\", want \"%s\"", (long long)cases[i].ms,
				 buf_str(&b), cases[i].text);
	}
	buf_release(&b);
}

/* duration_format()'s texts, Prometheus' own. */
static const struct ms_text prometheus[] = {
	{ 0, "0s" },
	{ 500, "500ms" },
	{ 30 * S, "30s" },
	{ H + 30 * M, "1h30m" },
	{ 7 * D, "1w" },
	{ 8 * D, "8d" },
	{ 90 * D, "90d" },
	{ 14 * D, "2w" },
	{ 365 * D, "1y" },
	{ 372 * D, "372d" },
	{ D + 2 * H + 3 * M + 4 * S + 5, "1d2h3m4s5ms" },
	{ -90 * S, "-1m30s" },
	{ INT64_MIN, "-106751991167d7h12m55s808ms" },
};

static void formats_like_prometheus(void **state)
{
	(void)state;
	writes_as(duration_format, prometheus, sizeof(prometheus) / sizeof(prometheus[0]));
}

static void format_roundtrips_through_parse(void **state)
{
	const char *in[] = { "1h30m", "8d", "1w", "5m", "1d2h3m4s5ms", "2y" };
	(void)state;
	for (size_t i = 0; i < sizeof(in) / sizeof(in[0]); i++) {
		struct ms_text c = { parse_ok(in[i]), in[i] };

		writes_as(duration_format, &c, 1);
	}
}

/* duration_human()'s texts: the two largest units. */
static const struct ms_text human[] = {
	{ 0, "0 seconds" },
	{ 1, "1 millisecond" },
	{ 500, "500 milliseconds" },
	{ S, "1 second" },
	{ 45 * S, "45 seconds" },
	{ M + S, "1 minute 1 second" },
	{ 2 * H + 5 * M, "2 hours 5 minutes" },
	{ 2 * H + 5 * M + 59 * S, "2 hours 5 minutes" },
	{ 2 * H + 5 * S, "2 hours" },
	{ 3 * D + 4 * H + 30 * M, "3 days 4 hours" },
	{ D, "1 day" },
	{ -(45 * S), "-45 seconds" },
};

static void human_two_largest_units(void **state)
{
	(void)state;
	writes_as(duration_human, human, sizeof(human) / sizeof(human[0]));
}

UNIT_MAIN(
	cmocka_unit_test(parses_every_unit),
	cmocka_unit_test(rejects_bad_syntax_with_quoted_input),
	cmocka_unit_test(rejects_units_out_of_order_or_repeated),
	cmocka_unit_test(rejects_overflow),
	cmocka_unit_test(formats_like_prometheus),
	cmocka_unit_test(format_roundtrips_through_parse),
	cmocka_unit_test(human_two_largest_units))
