/*
 * err.h - the one error code type of alertbridge.
 *
 * Codes exist only where a caller acts differently on them; detail travels
 * in an optional struct buf *errmsg filled by the callee (see buf.h).
 */
#ifndef AB_ERR_H
#define AB_ERR_H

#if defined(__GNUC__)
#define WARN_UNUSED __attribute__((warn_unused_result))
#define PRINTF_LIKE(f, a) __attribute__((format(printf, f, a)))
#else
#define WARN_UNUSED
#define PRINTF_LIKE(f, a)
#endif

enum err {
	ERR_OK = 0,
	ERR_INVALID,   /* input is malformed: do not retry the same input */
	ERR_AUTH,      /* credentials missing or rejected */
	ERR_FORBIDDEN, /* the service refuses this request for good, with valid credentials
			* (GitHub's 403 that is no rate limit: no permission, an archived
			* repository, a locked issue): do not retry until a person fixes it */
	ERR_NOTFOUND,  /* the thing asked for does not exist */
	ERR_GONE,      /* it existed and was deleted (HTTP 410) */
	ERR_CONFLICT,  /* precondition failed, changed underneath (HTTP 409) */
	ERR_TOOBIG,    /* input over a configured size limit */
	ERR_RETRY,     /* transient: try again later (5xx, timeout, rate limit) */
	ERR_IO,        /* file or network I/O failed */
	ERR_DB,        /* the store could not read or commit */
	ERR_UNAVAILABLE, /* the database server cannot be reached now (PostgreSQL); a later call reconnects */
};

/* Returns a static lower-case name for code, e.g. "invalid"; never NULL. */
const char *err_str(enum err code);

#endif
