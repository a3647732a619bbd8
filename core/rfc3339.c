/*
 * rfc3339.c - strict RFC 3339 parsing and UTC formatting; the calendar is
 * libc's: timegm(3) and gmtime_r(3), both UTC, so TZ never matters.
 */
#include "rfc3339.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "banned.h"

static int is_leap(int64_t y)
{
	return y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
}

unsigned rfc3339_days_in_month(int64_t year, unsigned month)
{
	static const unsigned dim[12] = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 };

	assert(month >= 1 && month <= 12);
	return month == 2 && is_leap(year) ? 29 : dim[month - 1];
}

int64_t rfc3339_from_civil(int64_t year, unsigned month, unsigned day, unsigned hour,
			   unsigned min, unsigned sec)
{
	struct tm tm = { 0 };

	assert(month >= 1 && month <= 12);
	tm.tm_year = (int)(year - 1900);
	tm.tm_mon = (int)month - 1;
	tm.tm_mday = (int)day;
	tm.tm_hour = (int)hour;
	tm.tm_min = (int)min;
	tm.tm_sec = (int)sec;  /* 60: the first second of the next minute, as timegm(3) normalises */
	return (int64_t)timegm(&tm) * 1000;
}

/* Read exactly n digits at *p into *out and advance; 0 when not digits. */
static int digits(const char **p, int n, unsigned *out)
{
	unsigned v = 0;

	for (int i = 0; i < n; i++) {
		char c = (*p)[i];

		if (c < '0' || c > '9')
			return 0;
		v = v * 10 + (unsigned)(c - '0');
	}
	*p += n;
	*out = v;
	return 1;
}

static int expect(const char **p, char c)
{
	if (**p != c)
		return 0;
	(*p)++;
	return 1;
}

static int expect_either(const char **p, char a, char b)
{
	return expect(p, a) || expect(p, b);
}

/*
 * The parser behind rfc3339_parse() and rfc3339_parse_go(); go adds the latter's three
 * restrictions (year from 0001, second 0-59, at most nine fraction digits).
 */
static enum err parse(const char *s, int go, int64_t *out_ms)
{
	const char *p = s;
	unsigned year, mon, day, hour, min, sec, frac_ms = 0;
	int64_t offset_min = 0, ms;

	if (!s)
		return ERR_INVALID;
	if (!digits(&p, 4, &year) || !expect(&p, '-') || !digits(&p, 2, &mon) ||
	    !expect(&p, '-') || !digits(&p, 2, &day) || !expect_either(&p, 'T', 't') ||
	    !digits(&p, 2, &hour) || !expect(&p, ':') || !digits(&p, 2, &min) ||
	    !expect(&p, ':') || !digits(&p, 2, &sec))
		return ERR_INVALID;
	if (mon < 1 || mon > 12 || day < 1 || day > rfc3339_days_in_month(year, mon) ||
	    hour > 23 || min > 59 || sec > 60)
		return ERR_INVALID;
	if (go && (year < 1 || sec > 59))
		return ERR_INVALID;
	if (*p == '.') {
		int n = 0;

		for (p++; *p >= '0' && *p <= '9'; p++, n++)
			if (n < 3)
				frac_ms = frac_ms * 10 + (unsigned)(*p - '0');
		if (n == 0 || (go && n > 9))
			return ERR_INVALID;
		for (; n < 3; n++)
			frac_ms *= 10;
	}
	if (*p == 'Z' || *p == 'z') {
		p++;
	} else if (*p == '+' || *p == '-') {
		int sign = *p == '-' ? -1 : 1;
		unsigned oh, om;

		p++;
		if (!digits(&p, 2, &oh) || !expect(&p, ':') || !digits(&p, 2, &om) || oh > 23 ||
		    om > 59)
			return ERR_INVALID;
		offset_min = sign * (int64_t)(oh * 60 + om);
	} else {
		return ERR_INVALID;
	}
	if (*p != '\0')
		return ERR_INVALID;
	ms = rfc3339_from_civil(year, mon, day, hour, min, sec) - offset_min * 60000 + frac_ms;
	*out_ms = ms == RFC3339_GO_ZERO_MS ? 0 : ms;
	return ERR_OK;
}

enum err rfc3339_parse(const char *s, int64_t *out_ms)
{
	return parse(s, 0, out_ms);
}

enum err rfc3339_parse_go(const char *s, int64_t *out_ms)
{
	return parse(s, 1, out_ms);
}

/*
 * A UTC date and time of day, each field in its range (split_ms()'s
 * remainders tell the compiler so): month 1-12, day 1-31, hour 0-23, min
 * 0-59, sec 0-60, ms 0-999, wday 0-6 (Sunday 0).
 */
struct split {
	int64_t year;
	unsigned month, day, hour, min, sec, ms, wday;
};

/* ms as a UTC date and time by gmtime_r(3), the milliseconds floored. */
static struct split split_ms(int64_t ms)
{
	int64_t secs = ms / 1000, rem = ms % 1000;
	struct split out;
	struct tm tm;
	time_t t;

	if (rem < 0) {
		rem += 1000;
		secs--;
	}
	t = (time_t)secs;
	if (!gmtime_r(&t, &tm))
		memset(&tm, 0, sizeof(tm));  /* beyond the year 2^31: not a time we format */
	out.year = (int64_t)tm.tm_year + 1900;
	out.month = (unsigned)tm.tm_mon % 12 + 1;
	out.day = (unsigned)tm.tm_mday % 32;
	out.hour = (unsigned)tm.tm_hour % 24;
	out.min = (unsigned)tm.tm_min % 60;
	out.sec = (unsigned)tm.tm_sec % 61;
	out.ms = (unsigned)rem % 1000;
	out.wday = (unsigned)tm.tm_wday % 7;
	return out;
}

void rfc3339_format(int64_t ms, char out[static 32])
{
	struct split t = split_ms(ms);

	snprintf(out, 32, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02uZ", t.year, t.month, t.day,
		 t.hour, t.min, t.sec);
}

void rfc3339_format_ms(int64_t ms, char out[static 32])
{
	struct split t = split_ms(ms);

	snprintf(out, 32, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u.%03uZ", t.year, t.month, t.day,
		 t.hour, t.min, t.sec, t.ms);
}

void rfc3339_format_us(int64_t ms, char out[static 40])
{
	struct split t = split_ms(ms);

	snprintf(out, 40, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u.%03u000Z", t.year, t.month,
		 t.day, t.hour, t.min, t.sec, t.ms);
}

void rfc3339_human(int64_t ms, char out[static 48])
{
	static const char *const wday[7] = { "Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat" };
	static const char *const mon[12] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct split t = split_ms(ms);

	snprintf(out, 48, "%s, %02u %s %04" PRId64 " %02u:%02u:%02u UTC", wday[t.wday], t.day,
		 mon[t.month - 1], t.year, t.hour, t.min, t.sec);
}
