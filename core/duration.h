/*
 * duration.h - Prometheus-style durations ("30s", "1h30m", "7d") as int64_t
 * milliseconds, following prometheus/common model.ParseDuration and
 * model.Duration.String(), plus a wording for people ("2 hours 5 minutes").
 * Used by config (every duration key) and by the issue and Slack texts.
 */
#ifndef AB_DURATION_H
#define AB_DURATION_H

#include <stdint.h>

#include "buf.h"
#include "err.h"

/*
 * Parse s in Prometheus' duration format into *out_ms.  The grammar is
 * [0-9]+ followed by a unit, repeated; units are y (365d), w (7d), d (24h),
 * h, m, s and ms, each at most once and from the largest to the smallest, so
 * "1h30m" and "1d12h" are valid and "30m1h", "1h1h", "1.5h", "-1s", "1h 30m"
 * and "" are not.  "0" alone is allowed without a unit.  As in Prometheus the
 * total must fit a Go time.Duration (int64 nanoseconds, about 292 years).
 *
 * Returns ERR_OK, or ERR_INVALID with errmsg (may be NULL) set to one of
 *   empty duration string
 *   not a valid duration string: "<s>"
 *   unknown unit "<u>" in duration "<s>"
 *   duration out of range: "<s>"
 * *out_ms is written only on success.
 */
enum err duration_parse(const char *s, int64_t *out_ms, struct buf *errmsg) WARN_UNUSED;

/*
 * Append ms in Prometheus' String() form: "0s" for zero, else the non-zero
 * units from the largest, e.g. "1h30m", "8d", "1w" (7 days), "1y".  As in
 * Prometheus, y and w are used only when they divide the value exactly
 * ("90d", not "12w6d"), so 7d is written "1w".  A negative ms is written as
 * "-" followed by the form of its magnitude.  Appends as much as fits when
 * out's maximum is reached.
 */
void duration_format(int64_t ms, struct buf *out);

/*
 * Append ms for people: the largest non-zero unit among days, hours,
 * minutes, seconds and, when there is a remainder, the next smaller unit,
 * each pluralised: "3 days 4 hours", "2 hours 5 minutes", "1 minute",
 * "45 seconds".  Below one second: "500 milliseconds"; zero: "0 seconds".
 * The value is truncated, never rounded up.  Negative: "-" then magnitude.
 */
void duration_human(int64_t ms, struct buf *out);

#endif
