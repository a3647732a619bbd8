/*
 * matchers_utf8.c - Alertmanager's UTF-8 matchers grammar (0.27,
 * matcher/parse/lexer.go and parse.go): a lexer of braces, commas,
 * operators, double-quoted Go strings and unquoted runs, and a parser that
 * reads `{`? matcher (`,` matcher)* `,`? `}`?.  Its errors are worded and
 * positioned (in characters) as Alertmanager's are, so that a message here
 * is the one Alertmanager gives for the same text.
 */
#include "matchers_int.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"
#include "xalloc.h"
#include "banned.h"

#define NO_RUNE UINT32_MAX

enum tok { T_EOF = 0, T_OPEN, T_CLOSE, T_COMMA, T_EQ, T_NE, T_RE, T_NRE, T_QUOTED, T_UNQUOTED };

struct token {
	enum tok kind;
	size_t off, end;      /* the token's text: in[off..end) */
	size_t col, col_end;  /* the same in characters */
};

struct lexer {
	const char *in;
	size_t len;
	int failed;         /* an error is sticky: every later scan returns it */
	struct buf err;
	size_t start, pos, width, column, cols;
};

/* ---- UTF-8 helpers the parts share ---- */

size_t mutf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = p[0] < 0x80 ? 1 : p[0] < 0xe0 ? 2 : p[0] < 0xf0 ? 3 : 4;

	if (len > n)  /* not valid UTF-8, which callers rule out: one byte */
		len = 1;
	*cp = len == 1 ? p[0] : p[0] & (0x7f >> len);
	for (size_t i = 1; i < len; i++)
		*cp = (*cp << 6) | (p[i] & 0x3f);
	return len;
}

void mutf8_append(struct buf *out, uint32_t cp)
{
	char b[4];
	size_t n;

	if (cp < 0x80) {
		b[0] = (char)cp;
		n = 1;
	} else if (cp < 0x800) {
		b[0] = (char)(0xc0 | (cp >> 6));
		b[1] = (char)(0x80 | (cp & 0x3f));
		n = 2;
	} else if (cp < 0x10000) {
		b[0] = (char)(0xe0 | (cp >> 12));
		b[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[2] = (char)(0x80 | (cp & 0x3f));
		n = 3;
	} else {
		b[0] = (char)(0xf0 | (cp >> 18));
		b[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		b[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
		b[3] = (char)(0x80 | (cp & 0x3f));
		n = 4;
	}
	(void)buf_add(out, b, n);
}

int mutf8_is_space(uint32_t cp)
{
	/* Go's unicode.IsSpace: Latin-1's six and U+0085, U+00A0, then the White_Space property */
	if (cp <= 0xff)
		return cp == ' ' || (cp >= '\t' && cp <= '\r') || cp == 0x85 || cp == 0xa0;
	return cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 ||
	       cp == 0x202f || cp == 0x205f || cp == 0x3000;
}

/* ---- the lexer (lexer.go) ---- */

static int is_reserved(uint32_t r)
{
	return mutf8_is_space(r) || (r < 0x80 && r && strchr("{}!=~,\\\"'`", (int)r));
}

static void lex_fail(struct lexer *l, const char *fmt, ...) PRINTF_LIKE(2, 3);
static void lex_fail(struct lexer *l, const char *fmt, ...)
{
	va_list ap;

	buf_reset(&l->err);
	va_start(ap, fmt);
	(void)buf_vprintf(&l->err, fmt, ap);
	va_end(ap);
	l->failed = 1;
}

static uint32_t next(struct lexer *l)
{
	uint32_t r;

	if (l->pos >= l->len) {
		l->width = 0;
		return NO_RUNE;
	}
	l->width = mutf8_decode(l->in + l->pos, l->len - l->pos, &r);
	l->pos += l->width;
	l->cols++;
	return r;
}

static void back(struct lexer *l)
{
	l->pos -= l->width;
	if (l->width)
		l->cols--;
}

static int accept(struct lexer *l, uint32_t c)
{
	if (next(l) == c)
		return 1;
	back(l);
	return 0;
}

static void emit(struct lexer *l, enum tok kind, struct token *t)
{
	t->kind = kind;
	t->off = l->start;
	t->end = l->pos;
	t->col = l->column;
	t->col_end = l->cols;
	l->start = l->pos;
	l->column = l->cols;
}

/* expectedError: at the end "unexpected end of input", else the text scanned. */
static void expected(struct lexer *l, const char *want)
{
	if (l->pos >= l->len)
		lex_fail(l, "%zu:%zu: unexpected end of input, expected one of '%s'", l->column,
			 l->cols, want);
	else
		lex_fail(l, "%zu:%zu: %.*s: expected one of '%s'", l->column, l->cols,
			 (int)(l->pos - l->start), l->in + l->start, want);
}

static void scan_operator(struct lexer *l, struct token *t)
{
	if (accept(l, '!')) {
		if (accept(l, '='))
			emit(l, T_NE, t);
		else if (accept(l, '~'))
			emit(l, T_NRE, t);
		else
			expected(l, "=~");
		return;
	}
	if (accept(l, '='))
		emit(l, accept(l, '~') ? T_RE : T_EQ, t);
	else
		expected(l, "!=");
}

static void scan_quoted(struct lexer *l, struct token *t)
{
	int escaped = 0;
	uint32_t r;

	(void)next(l);  /* the opening quote */
	for (r = next(l); r != NO_RUNE; r = next(l)) {
		if (escaped) {
			escaped = 0;
		} else if (r == '\\') {
			escaped = 1;
		} else if (r == '"') {
			emit(l, T_QUOTED, t);
			return;
		}
	}
	lex_fail(l, "%zu:%zu: %.*s: missing end \"", l->column, l->cols,
		 (int)(l->pos - l->start), l->in + l->start);
}

static void scan_unquoted(struct lexer *l, struct token *t)
{
	uint32_t r;

	for (r = next(l); r != NO_RUNE; r = next(l))
		if (is_reserved(r)) {
			back(l);
			break;
		}
	emit(l, T_UNQUOTED, t);
}

/* The next token into *t (T_EOF at the end); -1 on error (l->err says why). */
static int scan(struct lexer *l, struct token *t)
{
	uint32_t r;

	memset(t, 0, sizeof(*t));
	if (l->failed)
		return -1;
	for (r = next(l); r != NO_RUNE; r = next(l)) {
		if (r == '{' || r == '}' || r == ',') {
			emit(l, r == '{' ? T_OPEN : r == '}' ? T_CLOSE : T_COMMA, t);
		} else if (r == '=' || r == '!') {
			back(l);
			scan_operator(l, t);
		} else if (r == '"') {
			back(l);
			scan_quoted(l, t);
		} else if (!is_reserved(r)) {
			back(l);
			scan_unquoted(l, t);
		} else if (mutf8_is_space(r)) {
			l->start = l->pos;
			l->column = l->cols;
			continue;
		} else {
			lex_fail(l, "%zu:%zu: %.*s: invalid input", l->column, l->cols,
				 (int)(l->pos - l->start), l->in + l->start);
		}
		break;
	}
	return l->failed ? -1 : 0;
}

static int peek(struct lexer *l, struct token *t)
{
	struct lexer saved = *l;
	int rc = scan(l, t);

	l->start = saved.start;
	l->pos = saved.pos;
	l->width = saved.width;
	l->column = saved.column;
	l->cols = saved.cols;
	return rc;
}

/* ---- Go's strconv.Unquote for a double-quoted token ---- */

static int hexv(int c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
		: c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* n hex digits at s into *v; 0 when one is not a hex digit. */
static int hex_digits(const char *s, size_t n, uint32_t *v)
{
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (hexv((unsigned char)s[i]) < 0)
			return 0;
		*v = *v * 16 + (uint32_t)hexv((unsigned char)s[i]);
	}
	return 1;
}

/*
 * s[0..n) is "..." as the lexer took it; its Go value into out.  Go's
 * escapes: \a \b \f \n \r \t \v \\ \" \xHH \ooo (bytes), \uHHHH \UHHHHHHHH
 * (characters); a raw newline is refused, and so is a result that is not
 * UTF-8.  Returns 0, or -1 when Go refuses it.
 */
/* The character of Go's one-letter escape \c, or -1 when c is none (\' is none in "..."). */
static int simple_escape(char c)
{
	switch (c) {
	case 'a': return '\a';
	case 'b': return '\b';
	case 'f': return '\f';
	case 'n': return '\n';
	case 'r': return '\r';
	case 't': return '\t';
	case 'v': return '\v';
	case '\\': return '\\';
	case '"': return '"';
	default: return -1;
	}
}

static int go_unquote(const char *s, size_t n, struct buf *out)
{
	uint32_t v;

	for (size_t i = 1; i + 1 < n;) {
		size_t k;

		if (s[i] == '\n')
			return -1;
		if (s[i] != '\\') {
			(void)buf_addch(out, s[i++]);
			continue;
		}
		if (i + 2 >= n)
			return -1;
		if (simple_escape(s[i + 1]) >= 0) {
			(void)buf_addch(out, (char)simple_escape(s[i + 1]));
			i += 2;
			continue;
		}
		switch (s[i + 1]) {
		case 'x': k = 2; break;
		case 'u': k = 4; break;
		case 'U': k = 8; break;
		case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
			v = 0;
			for (k = 1; k <= 3; k++) {
				if (i + k >= n - 1 || s[i + k] < '0' || s[i + k] > '7')
					return -1;
				v = v * 8 + (uint32_t)(s[i + k] - '0');
			}
			if (v > 255)
				return -1;
			(void)buf_addch(out, (char)v);
			i += 4;
			continue;
		default:
			return -1;
		}
		if (i + 2 + k > n - 1 || !hex_digits(s + i + 2, k, &v))
			return -1;
		if (k == 2)
			(void)buf_addch(out, (char)v);
		else if (v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
			return -1;
		else
			mutf8_append(out, v);
		i += 2 + k;
	}
	return utf8_valid(buf_str(out), out->len) ? 0 : -1;
}

/* ---- the parser (parse.go) ---- */

struct parser {
	struct lexer l;
	struct mvec *mv;
	struct buf *errmsg;
	int open_brace;
};

enum { P_OK = 0, P_EOF, P_ERR };

static int is_one_of(enum tok k, const enum tok *kinds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (kinds[i] == k)
			return 1;
	return 0;
}

/*
 * expectPeek(): the next token, not consumed, if it is one of kinds.  P_EOF
 * at the end; P_ERR with *why the lexer's error or "unexpected X".
 */
static int expect_peek(struct parser *p, struct token *t, const enum tok *kinds, size_t n,
		       struct buf *why)
{
	if (peek(&p->l, t)) {
		buf_setf(why, "%s", buf_str(&p->l.err));
		return P_ERR;
	}
	if (t->kind == T_EOF) {
		buf_setf(why, "end of input");
		return P_EOF;
	}
	if (!is_one_of(t->kind, kinds, n)) {
		buf_setf(why, "%zu:%zu: unexpected %.*s", t->col, t->col_end, (int)(t->end - t->off),
			 p->l.in + t->off);
		return P_ERR;
	}
	return P_OK;
}

/* expect(): expect_peek() and, when it is there, consume it. */
static int expect(struct parser *p, struct token *t, const enum tok *kinds, size_t n,
		  struct buf *why)
{
	int rc = expect_peek(p, t, kinds, n, why);
	struct token dummy;

	if (rc == P_OK)
		(void)scan(&p->l, &dummy);
	return rc;
}

#define KINDS(...) (const enum tok[]){ __VA_ARGS__ }, sizeof((const enum tok[]){ __VA_ARGS__ }) / sizeof(enum tok)

/* A name or value token's text: unquoted as is, quoted by Go's rules. */
static enum err token_text(struct parser *p, const struct token *t, char **out)
{
	struct buf b = BUF_INIT;

	if (t->kind == T_UNQUOTED) {
		*out = xstrndup(p->l.in + t->off, t->end - t->off);
		return ERR_OK;
	}
	if (go_unquote(p->l.in + t->off, t->end - t->off, &b)) {
		buf_release(&b);
		return matchers_fail(p->errmsg, "%zu:%zu: %.*s: invalid input", t->col, t->col_end,
				     (int)(t->end - t->off), p->l.in + t->off);
	}
	*out = buf_detach(&b);
	if (!*out)
		*out = xstrndup("", 0);
	return ERR_OK;
}

static enum err parse_matcher(struct parser *p, struct buf *why)
{
	struct token t;
	char *name = NULL, *value = NULL;
	enum cfg_match_op op;
	void *re = NULL;
	struct buf reason = BUF_INIT;
	enum err rc = ERR_INVALID;

	if (expect(p, &t, KINDS(T_QUOTED, T_UNQUOTED), why)) {
		matchers_fail(p->errmsg, "%s: expected label name", buf_str(why));
		goto out;
	}
	if (token_text(p, &t, &name))
		goto out;
	if (expect(p, &t, KINDS(T_EQ, T_NE, T_RE, T_NRE), why)) {
		matchers_fail(p->errmsg, "%s: expected an operator such as '=', '!=', '=~' or '!~'",
			      buf_str(why));
		goto out;
	}
	op = t.kind == T_EQ ? CFG_MATCH_EQ : t.kind == T_NE ? CFG_MATCH_NE
		: t.kind == T_RE ? CFG_MATCH_RE : CFG_MATCH_NRE;
	if (expect(p, &t, KINDS(T_UNQUOTED, T_QUOTED), why)) {
		matchers_fail(p->errmsg, "%s: expected label value", buf_str(why));
		goto out;
	}
	if (token_text(p, &t, &value))
		goto out;
	if ((op == CFG_MATCH_RE || op == CFG_MATCH_NRE) && mre_compile(value, &re, &reason)) {
		matchers_fail(p->errmsg, "failed to create matcher: %s", buf_str(&reason));
		goto out;
	}
	mvec_push(p->mv, op, name, value);
	p->mv->v[p->mv->n - 1].re = re;
	name = value = NULL;
	rc = ERR_OK;
out:
	free(name);
	free(value);
	buf_release(&reason);
	return rc;
}

enum state { S_OPEN, S_MATCHER, S_END_OF_MATCHER, S_COMMA, S_CLOSE, S_EOF, S_DONE };

static enum state parse_open(struct parser *p, struct buf *why, enum err *rc)
{
	struct token t;

	if (peek(&p->l, &t)) {
		*rc = matchers_fail(p->errmsg, "%s", buf_str(&p->l.err));
		return S_DONE;
	}
	if (t.kind == T_EOF)
		return S_EOF;
	p->open_brace = t.kind == T_OPEN;
	if (p->open_brace)
		(void)scan(&p->l, &t);
	switch (expect_peek(p, &t, KINDS(T_CLOSE), why)) {
	case P_OK:
	case P_EOF:
		return S_CLOSE;
	default:
		if (p->l.failed) {
			*rc = matchers_fail(p->errmsg, "%s", buf_str(why));
			return S_DONE;
		}
		return S_MATCHER;
	}
}

static enum state parse_close(struct parser *p, struct buf *why, enum err *rc)
{
	struct token t;
	int got = expect(p, &t, KINDS(T_CLOSE), why);

	if (p->open_brace && got != P_OK) {
		*rc = matchers_fail(p->errmsg, "0:%zu: %s: expected close brace", p->l.cols,
				    buf_str(why));
		return S_DONE;
	}
	if (!p->open_brace && got == P_OK) {
		*rc = matchers_fail(p->errmsg, "0:%zu: }: expected opening brace", p->l.cols);
		return S_DONE;
	}
	return S_EOF;
}

static enum state parse_after(struct parser *p, enum state st, struct buf *why, enum err *rc)
{
	struct token t;
	int got;

	if (st == S_END_OF_MATCHER)
		got = expect_peek(p, &t, KINDS(T_COMMA, T_CLOSE), why);
	else
		got = expect_peek(p, &t, KINDS(T_CLOSE, T_UNQUOTED, T_QUOTED), why);
	if (got == P_EOF)
		return S_CLOSE;
	if (got == P_ERR) {
		*rc = matchers_fail(p->errmsg, "%s: %s", buf_str(why), st == S_END_OF_MATCHER ?
				    "expected a comma or close brace" :
				    "expected a matcher or close brace after comma");
		return S_DONE;
	}
	if (t.kind == T_COMMA) {
		(void)scan(&p->l, &t);
		return S_COMMA;
	}
	return t.kind == T_CLOSE ? S_CLOSE : S_MATCHER;
}

static enum err parse_eof(struct parser *p)
{
	struct token t;

	if (scan(&p->l, &t))
		return matchers_fail(p->errmsg, "%s: expected end of input", buf_str(&p->l.err));
	if (t.kind != T_EOF)
		return matchers_fail(p->errmsg, "%zu:%zu: %.*s: expected end of input", t.col,
				     t.col_end, (int)(t.end - t.off), p->l.in + t.off);
	return ERR_OK;
}

enum err matchers_parse_utf8(const char *text, size_t n, struct mvec *mv, struct buf *errmsg)
{
	struct parser p = { .l = { .in = text, .len = n }, .mv = mv, .errmsg = errmsg };
	struct buf why = BUF_INIT;
	enum state st = S_OPEN;
	enum err rc = ERR_OK;

	while (st != S_DONE && rc == ERR_OK) {
		switch (st) {
		case S_OPEN:
			st = parse_open(&p, &why, &rc);
			break;
		case S_MATCHER:
			rc = parse_matcher(&p, &why);
			st = S_END_OF_MATCHER;
			break;
		case S_END_OF_MATCHER:
		case S_COMMA:
			st = parse_after(&p, st, &why, &rc);
			break;
		case S_CLOSE:
			st = parse_close(&p, &why, &rc);
			break;
		case S_EOF:
			rc = parse_eof(&p);
			st = S_DONE;
			break;
		case S_DONE:
			break;
		}
	}
	buf_release(&why);
	buf_release(&p.l.err);
	if (rc)
		mvec_release(mv);
	return rc;
}
