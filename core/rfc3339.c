/*
 * rfc3339.c - strict RFC 3339 parsing and UTC formatting by calendar
 * arithmetic (days_from_civil / civil_from_days after Howard Hinnant's
 * "chrono-Compatible Low-Level Date Algorithms"), so TZ never matters.
 */
#include "rfc3339.h"

#include <assert.h>
#include <inttypes.h>
#include <stdio.h>

#include "banned.h"

#define MS_DAY INT64_C(86400000)

struct civil {
	int64_t year;
	unsigned month; /* 1..12 */
	unsigned day;   /* 1..31 */
};

/* Days since 1970-01-01 of the proleptic Gregorian date y-m-d. */
static int64_t days_from_civil(int64_t y, unsigned m, unsigned d)
{
	int64_t era, yoe, doy, doe;

	y -= m <= 2;
	era = (y >= 0 ? y : y - 399) / 400;
	yoe = y - era * 400;
	doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
	doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
	return era * 146097 + doe - 719468;
}

static struct civil civil_from_days(int64_t z)
{
	struct civil c;
	int64_t era, doe, yoe, doy, mp;

	z += 719468;
	era = (z >= 0 ? z : z - 146096) / 146097;
	doe = z - era * 146097;
	yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
	doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
	mp = (5 * doy + 2) / 153;
	c.day = (unsigned)(doy - (153 * mp + 2) / 5 + 1);
	c.month = (unsigned)(mp < 10 ? mp + 3 : mp - 9);
	c.year = yoe + era * 400 + (c.month <= 2);
	return c;
}

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
	assert(month >= 1 && month <= 12);
	return days_from_civil(year, month, day) * MS_DAY +
	       ((int64_t)hour * 3600 + (int64_t)min * 60 + sec) * 1000;
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

struct split {
	struct civil date;
	unsigned hour, min, sec, ms;
	int64_t days;
};

/* Floor-divide ms into a UTC date and time of day. */
static struct split split_ms(int64_t ms)
{
	struct split t;
	int64_t days = ms / MS_DAY, rem = ms % MS_DAY;

	if (rem < 0) {
		rem += MS_DAY;
		days--;
	}
	t.days = days;
	t.date = civil_from_days(days);
	t.hour = (unsigned)(rem / 3600000);
	t.min = (unsigned)(rem / 60000 % 60);
	t.sec = (unsigned)(rem / 1000 % 60);
	t.ms = (unsigned)(rem % 1000);
	return t;
}

void rfc3339_format(int64_t ms, char out[static 32])
{
	struct split t = split_ms(ms);

	snprintf(out, 32, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02uZ", t.date.year, t.date.month,
		 t.date.day, t.hour, t.min, t.sec);
}

void rfc3339_format_ms(int64_t ms, char out[static 32])
{
	struct split t = split_ms(ms);

	snprintf(out, 32, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u.%03uZ", t.date.year,
		 t.date.month, t.date.day, t.hour, t.min, t.sec, t.ms);
}

void rfc3339_format_us(int64_t ms, char out[static 40])
{
	struct split t = split_ms(ms);

	snprintf(out, 40, "%04" PRId64 "-%02u-%02uT%02u:%02u:%02u.%03u000Z", t.date.year,
		 t.date.month, t.date.day, t.hour, t.min, t.sec, t.ms);
}

void rfc3339_human(int64_t ms, char out[static 48])
{
	static const char *const wday[7] = { "Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed" };
	static const char *const mon[12] = { "Jan", "Feb", "Mar", "Apr", "May", "Jun",
					     "Jul", "Aug", "Sep", "Oct", "Nov", "Dec" };
	struct split t = split_ms(ms);
	int64_t w = t.days % 7; /* 1970-01-01 was a Thursday */

	if (w < 0)
		w += 7;
	snprintf(out, 48, "%s, %02u %s %04" PRId64 " %02u:%02u:%02u UTC", wday[w],
		 t.date.day, mon[t.date.month - 1], t.date.year, t.hour, t.min, t.sec);
}
