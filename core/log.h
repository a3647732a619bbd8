/*
 * log.h - one line per event, logfmt or JSON, to stderr (OpenSMTPD log.h,
 * redis serverLog).
 *
 * A line is built field by field so that values are escaped correctly for
 * either format and nothing is formatted when the level is off:
 *
 *	struct log_line *l = log_begin(LOG_INFO, "issue created");
 *	log_str(l, "receiver", rcv);
 *	log_int(l, "issue", number);
 *	log_end(l);
 *
 * log_begin() returns NULL when the level is disabled; every other function
 * accepts NULL and does nothing.  Messages are lower-case, the error first.
 * Never pass tokens, webhook URLs or Authorization headers as values.
 * Thread-safe: each line is written with a single write(2).
 */
#ifndef AB_LOG_H
#define AB_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "err.h"

enum log_level { LOG_DEBUG = 0, LOG_INFO, LOG_WARN, LOG_ERROR };
enum log_format { LOG_LOGFMT = 0, LOG_JSON };

/*
 * Set the process-wide threshold and format (before threads start).  The
 * logger's settings are the one piece of process state outside struct config,
 * as in every C logger; defaults are LOG_INFO and LOG_LOGFMT.
 */
void log_setup(enum log_level level, enum log_format format);
/* Parse "debug", "info", "warn", "error"; ERR_INVALID otherwise. */
enum err log_level_parse(const char *s, enum log_level *out) WARN_UNUSED;
/* Parse "logfmt", "json"; ERR_INVALID otherwise. */
enum err log_format_parse(const char *s, enum log_format *out) WARN_UNUSED;
/* Non-zero when lines of level would be written. */
int log_enabled(enum log_level level);
/*
 * Redirect output to fd (default 2); for tests.  The fd is not closed.
 */
void log_set_fd(int fd);

struct log_line;

/* Start a line with ts, level and msg; NULL when level is below threshold. */
struct log_line *log_begin(enum log_level level, const char *msg);
/* Add key=value; value NULL is written as an empty string. */
void log_str(struct log_line *l, const char *key, const char *value);
/* Add a string value of at most n bytes (not NUL-terminated input). */
void log_strn(struct log_line *l, const char *key, const char *value, size_t n);
void log_int(struct log_line *l, const char *key, int64_t value);
/* Add key=printf(fmt, ...) as a string value. */
void log_fmt(struct log_line *l, const char *key, const char *fmt, ...) PRINTF_LIKE(3, 4);
/* Add err=<err_str(code)>. */
void log_err(struct log_line *l, enum err code);
/* Write the line and free it. */
void log_end(struct log_line *l);

/* One-liners for a message with an optional single detail field. */
void log_msg(enum log_level level, const char *msg, const char *key, const char *value);

#endif
