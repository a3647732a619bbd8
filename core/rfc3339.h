/*
 * rfc3339.h - RFC 3339 timestamps <-> int64_t milliseconds since the Unix
 * epoch (UTC).  Parses Alertmanager's startsAt/endsAt and Kubernetes times;
 * formats kube-janitor's janitor/expires and the times people read.  Pure
 * arithmetic (Howard Hinnant's days-from-civil): no TZ, mktime or timegm.
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
 * Write ms as UTC with seconds precision, fraction dropped (floored):
 * "2026-11-21T00:49:48Z", the form of kube-janitor's janitor/expires.
 * Always NUL-terminated; years beyond 9999 are written with more digits.
 */
void rfc3339_format(int64_t ms, char out[static 32]);

/* As rfc3339_format() with milliseconds: "2026-11-21T00:49:48.123Z". */
void rfc3339_format_ms(int64_t ms, char out[static 32]);

/*
 * Write ms for people, in UTC, RFC 7231 (IMF-fixdate) order with the zone
 * named: "Sat, 21 Nov 2026 00:49:48 UTC".
 */
void rfc3339_human(int64_t ms, char out[static 48]);

#endif
