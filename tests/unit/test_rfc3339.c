/* test_rfc3339.c - RFC 3339 parsing (strict, TZ-independent), UTC formatting and civil dates. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/rfc3339.h"
#include "core/xalloc.h"

static int64_t parse_ok(const char *s)
{
	int64_t ms = -1;

	assert_int_equal(rfc3339_parse(s, &ms), ERR_OK);
	return ms;
}

static void parses_utc_and_offsets(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(parse_ok("2026-11-21T00:49:48Z"), 1795222188000LL);
	assert_int_equal(parse_ok("2026-11-21T01:49:48+01:00"), 1795222188000LL);
	assert_int_equal(parse_ok("2026-11-20T19:19:48-05:30"), 1795222188000LL);
	assert_int_equal(parse_ok("2026-11-21t00:49:48z"), 1795222188000LL);
	assert_int_equal(parse_ok("1969-12-31T23:59:59Z"), -1000);
	assert_int_equal(parse_ok("2000-02-29T12:00:00Z"), 951825600000LL);
	assert_int_equal(parse_ok("9999-12-31T23:59:59Z"), 253402300799000LL);
}

static void parses_fraction_truncated_to_ms(void **state)
{
	(void)state;
	/* Alertmanager sends nanoseconds. */
	assert_int_equal(parse_ok("2026-11-21T00:49:48.123456789Z"), 1795222188123LL);
	assert_int_equal(parse_ok("2026-11-21T00:49:48.9999Z"), 1795222188999LL);
	assert_int_equal(parse_ok("2026-11-21T00:49:48.5Z"), 1795222188500LL);
	assert_int_equal(parse_ok("2026-11-21T00:49:48.05+00:00"), 1795222188050LL);
	assert_int_equal(parse_ok("1969-12-31T23:59:59.250Z"), -750);
}

static void go_zero_time_is_zero(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("0001-01-01T00:00:00Z"), 0);
	assert_int_equal(parse_ok("0001-01-01T01:00:00+01:00"), 0);
	assert_int_equal(parse_ok("0001-01-01T00:00:01Z"), RFC3339_GO_ZERO_MS + 1000);
}

static void leap_second_rolls_over(void **state)
{
	(void)state;
	assert_int_equal(parse_ok("2016-12-31T23:59:60Z"), parse_ok("2017-01-01T00:00:00Z"));
}

static void rejects_everything_else(void **state)
{
	static const char *const bad[] = {
		"",
		"2026-11-21",
		"2026-11-21T00:49:48",          /* no zone */
		"2026-11-21 00:49:48Z",         /* space */
		"2026-11-21T00:49Z",
		"2026-11-21T00:49:48.Z",        /* empty fraction */
		"2026-11-21T00:49:48+0100",
		"2026-11-21T00:49:48+01",
		"2026-11-21T00:49:48+24:00",
		"2026-11-21T00:49:48+01:60",
		"2026-11-21T00:49:48ZZ",
		"2026-11-21T00:49:48Z ",
		" 2026-11-21T00:49:48Z",
		"2026-13-01T00:00:00Z",
		"2026-00-01T00:00:00Z",
		"2026-02-29T00:00:00Z",         /* not a leap year */
		"1900-02-29T00:00:00Z",
		"2026-04-31T00:00:00Z",
		"2026-04-00T00:00:00Z",
		"2026-04-01T24:00:00Z",
		"2026-04-01T23:60:00Z",
		"2026-04-01T23:59:61Z",
		"26-04-01T00:00:00Z",
		"2026-4-01T00:00:00Z",
		"+2026-04-01T00:00:00Z",
		"2026-04-01T00:00:00.123456789",
	};
	int64_t ms = 7;
	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rfc3339_parse(bad[i], &ms) != ERR_INVALID)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_int_equal(ms, 7);
	}
	assert_int_equal(rfc3339_parse(NULL, &ms), ERR_INVALID);
}

/* Alertmanager's startsAt and endsAt, as am_parse() reads them. */
static void go_parser_cases(void **state)
{
	int64_t ms = -1;
	static const char *const bad[] = {
		"", "2026-11-21", "2026-11-21T00:49:48", "2026-11-21 00:49:48Z",
		"2026-13-01T00:00:00Z", "2026-02-29T00:00:00Z", "2026-11-21T24:00:00Z",
		"2026-11-21T00:60:00Z", "2026-11-21T00:00:60Z", "2026-11-21T00:00:00.Z",
		"2026-11-21T00:00:00.1234567890Z", "2026-11-21T00:00:00+0200",
		"2026-11-21T00:00:00Zjunk", "0000-01-01T00:00:00Z", "26-11-21T00:00:00Z",
	};
	(void)state;

	assert_int_equal(rfc3339_parse_go("1970-01-01T00:00:00Z", &ms), ERR_OK);
	assert_int_equal(ms, 0);
	assert_int_equal(rfc3339_parse_go("0001-01-01T00:00:00Z", &ms), ERR_OK);
	assert_int_equal(ms, 0);
	assert_int_equal(rfc3339_parse_go("2018-08-03T09:52:26.739266876+02:00", &ms), ERR_OK);
	assert_int_equal(ms, 1533282746739LL);
	assert_int_equal(rfc3339_parse_go("2018-08-03t07:52:26.739z", &ms), ERR_OK);
	assert_int_equal(ms, 1533282746739LL);
	assert_int_equal(rfc3339_parse_go("2018-08-03T02:22:26.7-05:30", &ms), ERR_OK);
	assert_int_equal(ms, 1533282746700LL);
	assert_int_equal(rfc3339_parse_go("2024-02-29T00:00:00Z", &ms), ERR_OK);
	assert_int_equal(ms, 1709164800000LL);
	assert_int_equal(rfc3339_parse_go("1969-12-31T23:59:59Z", &ms), ERR_OK);
	assert_int_equal(ms, -1000);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms = 42;
		assert_int_equal(rfc3339_parse_go(bad[i], &ms), ERR_INVALID);
		assert_int_equal(ms, 42);
	}
	assert_int_equal(rfc3339_parse_go(NULL, &ms), ERR_INVALID);
}

/* What rfc3339_parse_go() refuses and rfc3339_parse() takes. */
static void go_parser_is_stricter(void **state)
{
	static const char *const only_plain[] = {
		"2016-12-31T23:59:60Z", "2026-11-21T00:00:00.1234567890Z", "0000-01-01T00:00:00Z",
	};
	int64_t ms;
	(void)state;
	for (size_t i = 0; i < sizeof(only_plain) / sizeof(only_plain[0]); i++) {
		assert_int_equal(rfc3339_parse(only_plain[i], &ms), ERR_OK);
		assert_int_equal(rfc3339_parse_go(only_plain[i], &ms), ERR_INVALID);
	}
	assert_int_equal(rfc3339_parse_go("2026-11-21T00:00:00.123456789Z", &ms), ERR_OK);
	assert_int_equal(ms, 1795219200123LL);
}

/* Kubernetes Time and MicroTime, as janitor/kube.c and kubeconfig.c read and write them. */
static void kubernetes_times(void **state)
{
	const int64_t t0 = 1714564800000LL; /* 2024-05-01T12:00:00Z */
	static const char *const bad[] = {
		"2024-05-01 12:00:00Z", "2024-13-01T12:00:00Z", "2024-05-01T12:00:00",
		"2024-05-01T12:00:00.Z", "2024-05-01T12:00:00Zjunk",
	};
	char out[40];
	int64_t ms = 7;
	(void)state;
	assert_int_equal(parse_ok("2024-05-01T12:00:00Z"), t0);
	assert_int_equal(parse_ok("2024-05-01T12:00:00.123456Z"), t0 + 123);
	assert_int_equal(parse_ok("2024-05-01T14:30:00+02:30"), t0);
	assert_int_equal(parse_ok("2024-05-01T09:00:00-03:00"), t0);
	assert_int_equal(parse_ok("1970-01-01T00:00:00Z"), 0);
	assert_int_equal(parse_ok("2024-02-29T00:00:00Z"), 1709164800000LL);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (rfc3339_parse(bad[i], &ms) != ERR_INVALID)
			fail_msg("accepted \"%s\"", bad[i]);
		assert_int_equal(ms, 7);
	}
	assert_int_equal(rfc3339_parse(NULL, &ms), ERR_INVALID);
	rfc3339_format(t0, out);
	assert_string_equal(out, "2024-05-01T12:00:00Z");
	rfc3339_format_us(t0 + 10250, out);
	assert_string_equal(out, "2024-05-01T12:00:10.250000Z");
}

static void formats_microtime(void **state)
{
	char out[40];
	(void)state;
	rfc3339_format_us(0, out);
	assert_string_equal(out, "1970-01-01T00:00:00.000000Z");
	rfc3339_format_us(-1, out);
	assert_string_equal(out, "1969-12-31T23:59:59.999000Z");
	rfc3339_format_us(INT64_MAX, out);
	assert_string_equal(out, "292278994-08-17T07:12:55.807000Z");
	rfc3339_format_us(INT64_MIN, out);
	assert_string_equal(out, "-292275055-05-16T16:47:04.192000Z");
}

static void civil_helpers(void **state)
{
	(void)state;
	assert_int_equal(rfc3339_days_in_month(2026, 1), 31);
	assert_int_equal(rfc3339_days_in_month(2026, 2), 28);
	assert_int_equal(rfc3339_days_in_month(2024, 2), 29);
	assert_int_equal(rfc3339_days_in_month(2000, 2), 29);
	assert_int_equal(rfc3339_days_in_month(1900, 2), 28);
	assert_int_equal(rfc3339_days_in_month(2026, 4), 30);
	assert_int_equal(rfc3339_days_in_month(2026, 12), 31);
	assert_int_equal(rfc3339_from_civil(1970, 1, 1, 0, 0, 0), 0);
	assert_int_equal(rfc3339_from_civil(2026, 11, 21, 0, 49, 48), 1795222188000LL);
	assert_int_equal(rfc3339_from_civil(1969, 12, 31, 23, 59, 59), -1000);
	assert_int_equal(rfc3339_from_civil(1, 1, 1, 0, 0, 0), RFC3339_GO_ZERO_MS);
	assert_int_equal(rfc3339_from_civil(10000, 1, 1, 0, 0, 0), 253402300800000LL);
	/* Carry-over past a field's range. */
	assert_int_equal(rfc3339_from_civil(2026, 1, 32, 0, 0, 0),
			 rfc3339_from_civil(2026, 2, 1, 0, 0, 0));
	assert_int_equal(rfc3339_from_civil(2026, 11, 20, 24, 49, 48), 1795222188000LL);
}

/* A writer of a time (ms since the epoch) as text, its size of out, a time and its text. */
struct written {
	void (*write)(int64_t ms, char *out);
	size_t size;  /* out's: 32 (rfc3339_format, _ms) or 48 (rfc3339_human) */
	int64_t ms;
	const char *text;
};

/* Each case's write(ms) is its text; a failure names the case. */
static void each_writes_as(const struct written *cases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		char *out = xmalloc(cases[i].size);  /* exactly: a write past it is seen */

		cases[i].write(cases[i].ms, out);
		if (strcmp(out, cases[i].text))
			fail_msg("case %zu (%lld ms): %s, want %s", i, (long long)cases[i].ms, out,
				 cases[i].text);
		free(out);
	}
}

static const struct written utc[] = {
	{ rfc3339_format, 32, 1795222188123LL, "2026-11-21T00:49:48Z" },
	{ rfc3339_format_ms, 32, 1795222188123LL, "2026-11-21T00:49:48.123Z" },
	{ rfc3339_format, 32, 0, "1970-01-01T00:00:00Z" },
	{ rfc3339_format, 32, -1, "1969-12-31T23:59:59Z" },
	{ rfc3339_format_ms, 32, -1, "1969-12-31T23:59:59.999Z" },
	{ rfc3339_format, 32, 951825600000LL, "2000-02-29T12:00:00Z" },
	{ rfc3339_format, 32, RFC3339_GO_ZERO_MS, "0001-01-01T00:00:00Z" },
	{ rfc3339_format_ms, 32, INT64_MAX, "292278994-08-17T07:12:55.807Z" },
	{ rfc3339_format_ms, 32, INT64_MIN, "-292275055-05-16T16:47:04.192Z" },
};

static void formats_utc(void **state)
{
	(void)state;
	each_writes_as(utc, sizeof(utc) / sizeof(utc[0]));
}

static void format_parse_roundtrip(void **state)
{
	/* Every day boundary over 1600..2400 in 97-day steps: bounded, ~3000 iterations. */
	int64_t start = -11676096000000LL, end = 13569465600000LL, step = 97LL * 86400000 + 1234;
	char out[32];
	int n = 0;
	(void)state;
	for (int64_t ms = start; ms < end && n < 5000; ms += step, n++) {
		int64_t back;

		rfc3339_format_ms(ms, out);
		assert_int_equal(rfc3339_parse(out, &back), ERR_OK);
		assert_int_equal(back, ms);
	}
	assert_true(n > 2000);
}

static const struct written human[] = {
	{ rfc3339_human, 48, 1795222188999LL, "Sat, 21 Nov 2026 00:49:48 UTC" },
	{ rfc3339_human, 48, 0, "Thu, 01 Jan 1970 00:00:00 UTC" },
	{ rfc3339_human, 48, -1, "Wed, 31 Dec 1969 23:59:59 UTC" },
	{ rfc3339_human, 48, 951825600000LL, "Tue, 29 Feb 2000 12:00:00 UTC" },
};

static void human_form(void **state)
{
	(void)state;
	each_writes_as(human, sizeof(human) / sizeof(human[0]));
}

static void independent_of_tz(void **state)
{
	char out[32];
	(void)state;
	setenv("TZ", "Pacific/Chatham", 1);
	assert_int_equal(parse_ok("2026-11-21T00:49:48Z"), 1795222188000LL);
	rfc3339_format(1795222188000LL, out);
	assert_string_equal(out, "2026-11-21T00:49:48Z");
	unsetenv("TZ");
}

UNIT_MAIN(
	cmocka_unit_test(parses_utc_and_offsets),
	cmocka_unit_test(parses_fraction_truncated_to_ms),
	cmocka_unit_test(go_zero_time_is_zero),
	cmocka_unit_test(leap_second_rolls_over),
	cmocka_unit_test(rejects_everything_else),
	cmocka_unit_test(go_parser_cases),
	cmocka_unit_test(go_parser_is_stricter),
	cmocka_unit_test(kubernetes_times),
	cmocka_unit_test(formats_microtime),
	cmocka_unit_test(civil_helpers),
	cmocka_unit_test(formats_utc),
	cmocka_unit_test(format_parse_roundtrip),
	cmocka_unit_test(human_form),
	cmocka_unit_test(independent_of_tz))
