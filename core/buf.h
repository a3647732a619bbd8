/*
 * buf.h - the one growable byte buffer of alertbridge (git strbuf, curl dynbuf).
 *
 * A struct buf always holds a NUL-terminated string once anything was added;
 * buf_str() gives "" for an empty buffer.  Each instance may carry a maximum
 * size: an append that would pass it fails with ERR_TOOBIG and leaves the
 * buffer unchanged, so input-driven growth is bounded.
 */
#ifndef AB_BUF_H
#define AB_BUF_H

#include <stdarg.h>
#include <stddef.h>

#include "err.h"

struct buf {
	char *data;  /* NULL until the first append; owned by the buf */
	size_t len;  /* bytes used, not counting the terminating NUL */
	size_t cap;  /* bytes allocated */
	size_t max;  /* largest len allowed; 0 means no limit */
};

#define BUF_INIT { NULL, 0, 0, 0 }

/* Initialise b empty, with max_len bytes at most (0: no limit). */
void buf_init(struct buf *b, size_t max_len);
/* Free b's memory and leave it empty (max kept); b may be NULL. */
void buf_release(struct buf *b);
/* Set len to 0, keeping the allocation. b may be NULL. */
void buf_reset(struct buf *b);
/* The contents as a C string; "" when empty.  Valid until the next change. */
const char *buf_str(const struct buf *b);
/*
 * Hand the contents over: returns a malloc'd NUL-terminated string the caller
 * frees (never NULL: "" allocated when empty) and leaves b empty.
 */
char *buf_detach(struct buf *b);

/* Append n bytes.  ERR_TOOBIG when len + n would pass max (b unchanged). */
enum err buf_add(struct buf *b, const void *p, size_t n);
/* Append the C string s (NULL appends nothing). */
enum err buf_adds(struct buf *b, const char *s);
/* Append one byte. */
enum err buf_addch(struct buf *b, char c);
/* Append printf-formatted text.  On ERR_TOOBIG nothing is appended. */
enum err buf_printf(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
enum err buf_vprintf(struct buf *b, const char *fmt, va_list ap) PRINTF_LIKE(2, 0);
/* buf_reset() then buf_printf(): handy for errmsg.  b may be NULL (no-op). */
void buf_setf(struct buf *b, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* buf_setf() with the arguments in ap, for a function of its own that takes "...". */
void buf_vsetf(struct buf *b, const char *fmt, va_list ap) PRINTF_LIKE(2, 0);
/* Shorten to len bytes (no-op when already shorter). */
void buf_truncate(struct buf *b, size_t len);

/*
 * Append the whole file at path to b: open(2) with O_CLOEXEC, read(2) to the
 * end (retried on EINTR).  At most max_bytes bytes of it (0: no bound but
 * b's max); a longer file, or one that would pass b's max, is ERR_TOOBIG
 * with b holding the part that fit.  ERR_IO when it cannot be opened or
 * read: errno says why (kept for the caller's message, which names the
 * file), b holds what was read before.  On ERR_OK b's data is allocated
 * even for an empty file.  The stack copy is wiped: secret files (tokens,
 * keys, passwords) pass through it.  Not for files that grow while read
 * (/proc files are fine: they are read whole).
 */
enum err buf_read_file(struct buf *b, const char *path, size_t max_bytes);

#endif
