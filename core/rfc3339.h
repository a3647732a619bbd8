/*
 * rfc3339.h - RFC 3339 timestamps <-> int64_t milliseconds since the Unix
 * epoch (UTC).  Parses Alertmanager's, GitHub's and Kubernetes' times;
 * formats kube-janitor's janitor/expires, Kubernetes times and the times
 * people read; gives the civil-date arithmetic to modules with formats of
 * their own.  The calendar is libc's UTC one (timegm(3), gmtime_r(3)): TZ
 * never matters.
 */
#ifndef AB_RFC3339_H
#define AB_RFC3339_H

#include <stdint.h>

#include "err.h"

/* Alertmanager's (Go's) zero time, 0001-01-01T00:00:00Z, in ms since the epoch. */
#define RFC3339_GO_ZERO_MS INT64_C(-62135596800000)

/*
 * Parse s, an RFC 3339 date-time (section 5.6):
 *   YYYY-MM-DD "T" HH:MM:SS [ "." 1*DIGIT ] ( "Z" / ("+" / "-") HH:MM )
 * into *out_ms.  "T" and "Z" may be lower case (RFC 3339 5.6 NOTE).  Any
 * number of fraction digits is accepted and truncated to milliseconds.  The
 * date is checked against the calendar (leap years included); the second may
 * be 60 (a leap second), counted as the first second of the next minute.
 * Offsets go up to 23:59.  Nothing may follow.
 *
 * The instant 0001-01-01T00:00:00Z (Go's zero time.Time, which Alertmanager
 * sends as endsAt of a firing alert to mean "unset") parses to 0, so callers
 * can test "unset" with == 0; 1970-01-01T00:00:00Z also parses to 0.
 *
 * Returns ERR_OK, or ERR_INVALID (s NULL or anything else; *out_ms unchanged).
 */
enum err rfc3339_parse(const char *s, int64_t *out_ms) WARN_UNUSED;

/*
 * As rfc3339_parse(), but also ERR_INVALID for what a Go program such as
 * Alertmanager never writes (Go's time package has no leap seconds and keeps
 * nanoseconds, and its zero time is the year 1): a second of 60, more than
 * nine fraction digits, and the year 0000.  For Alertmanager's startsAt and
 * endsAt.
 */
enum err rfc3339_parse_go(const char *s, int64_t *out_ms) WARN_UNUSED;

/*
 * Days in month (1..12; anything else is a bug) of the proleptic Gregorian
 * year: 28 to 31, February 29 in leap years.
 */
unsigned rfc3339_days_in_month(int64_t year, unsigned month);

/*
 * Milliseconds since the epoch of the UTC date-time year-month-day
 * hour:min:sec in the proleptic Gregorian calendar.  Only month is checked
 * (1..12, else a bug); the other fields are the caller's to check (see
 * rfc3339_days_in_month()): a day or time past its range carries over
 * (day 32 of January is February 1st), as timegm(3) normalises.
 * RFC3339_GO_ZERO_MS is rfc3339_from_civil(1, 1, 1, 0, 0, 0).
 */
int64_t rfc3339_from_civil(int64_t year, unsigned month, unsigned day, unsigned hour,
			   unsigned min, unsigned sec);

/*
 * Write ms as UTC with seconds precision, fraction dropped (floored):
 * "2026-11-21T00:49:48Z", the form of kube-janitor's janitor/expires.
 * Always NUL-terminated; years beyond 9999 are written with more digits.
 */
void rfc3339_format(int64_t ms, char out[static 32]);

/* As rfc3339_format() with milliseconds: "2026-11-21T00:49:48.123Z". */
void rfc3339_format_ms(int64_t ms, char out[static 32]);

/*
 * As rfc3339_format() with six fraction digits, the last three 0:
 * "2026-11-21T00:49:48.123000Z", Kubernetes' MicroTime (metav1.MicroTime,
 * Go layout RFC3339Micro).  The larger out holds the widest years.
 */
void rfc3339_format_us(int64_t ms, char out[static 40]);

/*
 * Write ms for people, in UTC, RFC 7231 (IMF-fixdate) order with the zone
 * named: "Sat, 21 Nov 2026 00:49:48 UTC".
 */
void rfc3339_human(int64_t ms, char out[static 48]);

#endif
