/*
 * duration.c - Prometheus duration parsing and formatting.  The parser mirrors
 * prometheus/common model.ParseDuration: digits then a unit, units strictly
 * descending, overflow checked against Go's int64 nanoseconds.
 */
#include "duration.h"

#include <inttypes.h>
#include <string.h>

#include "banned.h"

#define MS_S INT64_C(1000)
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)
#define MS_W (7 * MS_D)
#define MS_Y (365 * MS_D)

/* Go's time.Duration holds int64 nanoseconds: the largest total in ms. */
#define MAX_MS (INT64_MAX / 1000000)

struct unit {
	const char *name;
	int64_t ms;
};

/* Ordered from the largest: a unit's index is its position in the order. */
static const struct unit units[] = {
	{ "y", MS_Y }, { "w", MS_W }, { "d", MS_D }, { "h", MS_H },
	{ "m", MS_M }, { "s", MS_S }, { "ms", 1 },
};
#define NUNITS (sizeof(units) / sizeof(units[0]))

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static int find_unit(const char *u, size_t n)
{
	for (size_t i = 0; i < NUNITS; i++)
		if (strlen(units[i].name) == n && memcmp(units[i].name, u, n) == 0)
			return (int)i;
	return -1;
}

enum err duration_parse(const char *s, int64_t *out_ms, struct buf *errmsg)
{
	const char *p = s;
	int64_t total = 0;
	int last = -1;

	if (!s || !*s) {
		buf_setf(errmsg, "empty duration string");
		return ERR_INVALID;
	}
	if (strcmp(s, "0") == 0) {
		*out_ms = 0;
		return ERR_OK;
	}
	while (*p) {
		int64_t v = 0;
		const char *u;
		int idx;

		if (!is_digit(*p))
			goto invalid;
		for (; is_digit(*p); p++) {
			if (v > (MAX_MS - (*p - '0')) / 10)
				goto range;
			v = v * 10 + (*p - '0');
		}
		for (u = p; *p && !is_digit(*p); p++)
			;
		if (p == u)
			goto invalid;
		idx = find_unit(u, (size_t)(p - u));
		if (idx < 0) {
			buf_setf(errmsg, "unknown unit \"%.*s\" in duration \"%s\"",
				 (int)(p - u), u, s);
			return ERR_INVALID;
		}
		if (idx <= last)
			goto invalid;
		last = idx;
		if (v > MAX_MS / units[idx].ms || v * units[idx].ms > MAX_MS - total)
			goto range;
		total += v * units[idx].ms;
	}
	*out_ms = total;
	return ERR_OK;
invalid:
	buf_setf(errmsg, "not a valid duration string: \"%s\"", s);
	return ERR_INVALID;
range:
	buf_setf(errmsg, "duration out of range: \"%s\"", s);
	return ERR_INVALID;
}

void duration_format(int64_t ms, struct buf *out)
{
	uint64_t rest;

	if (ms == 0) {
		(void)buf_adds(out, "0s");
		return;
	}
	if (ms < 0) {
		(void)buf_addch(out, '-');
		rest = (uint64_t)(-(ms + 1)) + 1; /* no overflow for INT64_MIN */
	} else {
		rest = (uint64_t)ms;
	}
	for (size_t i = 0; i < NUNITS; i++) {
		uint64_t mult = (uint64_t)units[i].ms;
		/* Prometheus writes y and w only when exact: "90d", not "12w6d". */
		int exact_only = units[i].ms >= MS_W;

		if (exact_only && rest % mult != 0)
			continue;
		if (rest / mult > 0) {
			(void)buf_printf(out, "%" PRIu64 "%s", rest / mult, units[i].name);
			rest %= mult;
		}
	}
}

static void add_unit(struct buf *out, uint64_t v, const char *name)
{
	(void)buf_printf(out, "%" PRIu64 " %s%s", v, name, v == 1 ? "" : "s");
}

void duration_human(int64_t ms, struct buf *out)
{
	static const struct unit human[] = {
		{ "day", MS_D }, { "hour", MS_H }, { "minute", MS_M }, { "second", MS_S },
	};
	const size_t n = sizeof(human) / sizeof(human[0]);
	uint64_t rest;

	if (ms < 0) {
		(void)buf_addch(out, '-');
		rest = (uint64_t)(-(ms + 1)) + 1;
	} else {
		rest = (uint64_t)ms;
	}
	if (rest == 0) {
		(void)buf_adds(out, "0 seconds");
		return;
	}
	if (rest < (uint64_t)MS_S) {
		add_unit(out, rest, "millisecond");
		return;
	}
	for (size_t i = 0; i < n; i++) {
		uint64_t mult = (uint64_t)human[i].ms;

		if (rest < mult)
			continue;
		add_unit(out, rest / mult, human[i].name);
		rest %= mult;
		if (i + 1 < n && rest / (uint64_t)human[i + 1].ms > 0) {
			(void)buf_addch(out, ' ');
			add_unit(out, rest / (uint64_t)human[i + 1].ms, human[i + 1].name);
		}
		return;
	}
}
