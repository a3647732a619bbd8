/* buf.c - growable NUL-terminated buffer with a per-instance maximum. */
#include "buf.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "xalloc.h"

void buf_init(struct buf *b, size_t max_len)
{
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	b->max = max_len;
}

void buf_release(struct buf *b)
{
	if (!b)
		return;
	free(b->data);
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
}

void buf_reset(struct buf *b)
{
	if (!b)
		return;
	b->len = 0;
	if (b->data)
		b->data[0] = '\0';
}

const char *buf_str(const struct buf *b)
{
	return b && b->data ? b->data : "";
}

char *buf_detach(struct buf *b)
{
	char *s = b->data ? b->data : xstrdup("");
	b->data = NULL;
	b->len = 0;
	b->cap = 0;
	return s;
}

/* Make room for n more bytes plus the NUL; checks max and overflow. */
static enum err grow(struct buf *b, size_t n)
{
	size_t need, cap;

	if (n > SIZE_MAX - b->len - 1)
		return ERR_TOOBIG;
	need = b->len + n;
	if (b->max && need > b->max)
		return ERR_TOOBIG;
	if (need + 1 <= b->cap)
		return ERR_OK;
	cap = b->cap ? b->cap : 64;
	while (cap < need + 1)
		cap = cap > SIZE_MAX / 2 ? need + 1 : cap * 2;
	b->data = xrealloc(b->data, cap);
	b->cap = cap;
	return ERR_OK;
}

enum err buf_add(struct buf *b, const void *p, size_t n)
{
	enum err rc = grow(b, n);
	if (rc)
		return rc;
	if (n)
		memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
	return ERR_OK;
}

enum err buf_adds(struct buf *b, const char *s)
{
	return s ? buf_add(b, s, strlen(s)) : ERR_OK;
}

enum err buf_addch(struct buf *b, char c)
{
	return buf_add(b, &c, 1);
}

enum err buf_vprintf(struct buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;
	enum err rc;

	va_copy(cp, ap);
	n = vsnprintf(NULL, 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return ERR_INVALID;
	rc = grow(b, (size_t)n);
	if (rc)
		return rc;
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	b->len += (size_t)n;
	return ERR_OK;
}

enum err buf_printf(struct buf *b, const char *fmt, ...)
{
	va_list ap;
	enum err rc;

	va_start(ap, fmt);
	rc = buf_vprintf(b, fmt, ap);
	va_end(ap);
	return rc;
}

void buf_vsetf(struct buf *b, const char *fmt, va_list ap)
{
	if (!b)
		return;
	buf_reset(b);
	(void)buf_vprintf(b, fmt, ap);
}

void buf_setf(struct buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vsetf(b, fmt, ap);
	va_end(ap);
}

void buf_truncate(struct buf *b, size_t len)
{
	if (b->len > len) {
		b->len = len;
		b->data[len] = '\0';
	}
}

/* How many of n more bytes b takes: done of max_bytes (0: any) read, and its own max. */
static size_t room_for(const struct buf *b, size_t done, size_t max_bytes, size_t n)
{
	size_t room = max_bytes ? max_bytes - done : SIZE_MAX;

	if (b->max && b->max - b->len < room)
		room = b->max - b->len;
	return n < room ? n : room;
}

enum err buf_read_file(struct buf *b, const char *path, size_t max_bytes)
{
	char chunk[8192];
	size_t total = 0;
	enum err rc = ERR_OK;
	int err = 0, fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return ERR_IO;
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));
		size_t take;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			err = errno;
			rc = ERR_IO;
			break;
		}
		if (n == 0)
			break;
		take = room_for(b, total, max_bytes, (size_t)n);
		/* Within the max, buf_add() cannot fail (running out of memory aborts). */
		if (take)
			(void)buf_add(b, chunk, take);
		total += take;
		if (take < (size_t)n) {
			rc = ERR_TOOBIG;
			break;
		}
	}
	explicit_bzero(chunk, sizeof(chunk));
	close(fd);
	if (rc == ERR_OK && !b->data)
		(void)buf_add(b, "", 0);
	if (err)
		errno = err;
	return rc;
}
