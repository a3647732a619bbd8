/*
 * log.c - logfmt/JSON line logger.  Values are escaped per format: logfmt
 * quotes a value with spaces, quotes, '=' or control bytes; JSON escapes
 * per RFC 8259.  In both, the characters a reader may take as a line break
 * or that reorder what it shows (see invisible_len()) are written as \uXXXX.
 * A line is assembled in a struct buf and written at once.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "codec.h"
#include "xalloc.h"
#include "banned.h"

struct log_line {
	struct buf b;
};

static enum log_level threshold = LOG_INFO;
static enum log_format format = LOG_LOGFMT;
static int out_fd = 2;

void log_setup(enum log_level level, enum log_format fmt)
{
	threshold = level;
	format = fmt;
}

void log_set_fd(int fd)
{
	out_fd = fd;
}

int log_enabled(enum log_level level)
{
	return level >= threshold;
}

static const char *level_names[] = { "debug", "info", "warn", "error" };

enum err log_level_parse(const char *s, enum log_level *out)
{
	for (int i = 0; i < 4; i++) {
		if (s && !strcmp(s, level_names[i])) {
			*out = (enum log_level)i;
			return ERR_OK;
		}
	}
	return ERR_INVALID;
}

enum err log_format_parse(const char *s, enum log_format *out)
{
	if (s && !strcmp(s, "logfmt"))
		*out = LOG_LOGFMT;
	else if (s && !strcmp(s, "json"))
		*out = LOG_JSON;
	else
		return ERR_INVALID;
	return ERR_OK;
}

/*
 * The length of the UTF-8 sequence at p (n bytes left) when it encodes a character that
 * JSON (RFC 8259) lets through raw but a log reader must not see raw, else 0: DEL, the C1
 * controls U+0080-009F (NEL U+0085 breaks lines, CSI U+009B starts terminal sequences),
 * the line and paragraph separators U+2028/2029 (line breaks to JavaScript and many
 * viewers), and the bidi controls of Unicode's UAX #9 (ALM U+061C, LRM/RLM U+200E/F,
 * U+202A-202E, U+2066-2069), which reorder a line so that it reads as another.  Its code
 * point goes to *cp.
 */
static size_t invisible_len(const unsigned char *p, size_t n, unsigned *cp)
{
	if (p[0] == 0x7f) {
		*cp = 0x7f;
		return 1;
	}
	if (n >= 2 && p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
		*cp = p[1];
		return 2;
	}
	if (n >= 2 && p[0] == 0xd8 && p[1] == 0x9c) {
		*cp = 0x61c;
		return 2;
	}
	if (n >= 3 && p[0] == 0xe2 && p[1] == 0x80 &&
	    (p[2] == 0x8e || p[2] == 0x8f || (p[2] >= 0xa8 && p[2] <= 0xae))) {
		*cp = 0x2000u + (p[2] - 0x80u);
		return 3;
	}
	if (n >= 3 && p[0] == 0xe2 && p[1] == 0x81 && p[2] >= 0xa6 && p[2] <= 0xa9) {
		*cp = 0x2040u + (p[2] - 0x80u);
		return 3;
	}
	return 0;
}

static int logfmt_needs_quotes(const char *s, size_t n)
{
	unsigned cp;

	if (n == 0)
		return 1;
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c <= ' ' || c == '"' || c == '=' || c == '\\' ||
		    invisible_len((const unsigned char *)s + i, n - i, &cp))
			return 1;
	}
	return 0;
}

/*
 * Quote s as a JSON string (codec_json_string(): RFC 8259, invalid UTF-8 replaced), then
 * write what invisible_len() finds in it as \uXXXX.  The quoted text is valid UTF-8, so a
 * lead byte found there starts a character.
 */
static void add_value(struct buf *b, const char *s, size_t n)
{
	struct buf q = BUF_INIT;
	const unsigned char *p;
	unsigned cp;
	size_t run = 0, k;

	if (format != LOG_JSON && !logfmt_needs_quotes(s, n)) {
		buf_add(b, s, n);
		return;
	}
	codec_json_string(&q, s, n);
	p = (const unsigned char *)q.data;
	for (size_t i = 0; i < q.len; i++) {
		k = invisible_len(p + i, q.len - i, &cp);
		if (!k)
			continue;
		buf_add(b, p + run, i - run);
		buf_printf(b, "\\u%04x", cp);
		run = i + k;
		i += k - 1;
	}
	buf_add(b, p + run, q.len - run);
	buf_release(&q);
}

static void add_key(struct buf *b, const char *key)
{
	if (format == LOG_JSON) {
		buf_addch(b, ',');
		codec_json_string(b, key, strlen(key));
		buf_addch(b, ':');
	} else {
		buf_addch(b, ' ');
		buf_adds(b, key);
		buf_addch(b, '=');
	}
}

struct log_line *log_begin(enum log_level level, const char *msg)
{
	struct log_line *l;
	struct timespec ts;
	struct tm tm;
	char when[96];

	if (!log_enabled(level))
		return NULL;
	l = xmalloc(sizeof(*l));
	buf_init(&l->b, 0);
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(when, sizeof(when), "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
		 tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000000);
	if (format == LOG_JSON) {
		buf_printf(&l->b, "{\"ts\":\"%s\",\"level\":\"%s\"", when,
			   level_names[level]);
	} else {
		buf_printf(&l->b, "ts=%s level=%s", when, level_names[level]);
	}
	log_str(l, "msg", msg);
	return l;
}

void log_strn(struct log_line *l, const char *key, const char *value, size_t n)
{
	if (!l)
		return;
	add_key(&l->b, key);
	add_value(&l->b, value ? value : "", value ? n : 0);
}

void log_str(struct log_line *l, const char *key, const char *value)
{
	log_strn(l, key, value, value ? strlen(value) : 0);
}

void log_int(struct log_line *l, const char *key, int64_t value)
{
	if (!l)
		return;
	add_key(&l->b, key);
	buf_printf(&l->b, "%lld", (long long)value);
}

void log_fmt(struct log_line *l, const char *key, const char *fmt, ...)
{
	struct buf v = BUF_INIT;
	va_list ap;

	if (!l)
		return;
	va_start(ap, fmt);
	buf_vprintf(&v, fmt, ap);
	va_end(ap);
	log_strn(l, key, buf_str(&v), v.len);
	buf_release(&v);
}

void log_err(struct log_line *l, enum err code)
{
	log_str(l, "err", err_str(code));
}

void log_end(struct log_line *l)
{
	const char *p;
	size_t left;

	if (!l)
		return;
	if (format == LOG_JSON)
		buf_addch(&l->b, '}');
	buf_addch(&l->b, '\n');
	p = l->b.data;
	left = l->b.len;
	while (left > 0) {
		ssize_t n = write(out_fd, p, left);
		if (n <= 0)
			break;
		p += n;
		left -= (size_t)n;
	}
	buf_release(&l->b);
	free(l);
}

void log_msg(enum log_level level, const char *msg, const char *key, const char *value)
{
	struct log_line *l = log_begin(level, msg);
	if (key)
		log_str(l, key, value);
	log_end(l);
}
