/*
 * matchers.c - Alertmanager's label matchers (core/matchers.h): the classic
 * grammar (pkg/labels/parse.go), the choice between it and the UTF-8 one
 * (matchers_utf8.c) that Alertmanager makes by default (matcher/compat),
 * matching, and the text form.  Regexes: matchers_re2.c.
 */
#include "core/matchers.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "core/matchers_int.h"
#include "core/utf8.h"
#include "core/xalloc.h"
#include "core/banned.h"

static const char *const op_names[] = { "=", "!=", "=~", "!~" };

void mvec_push(struct mvec *mv, enum cfg_match_op op, char *name, char *value)
{
	mv->v = xreallocarray(mv->v, mv->n + 1, sizeof(*mv->v));
	mv->v[mv->n] = (struct cfg_matcher){ .name = name, .op = op, .value = value };
	mv->n++;
}

void mvec_release(struct mvec *mv)
{
	if (!mv)
		return;
	for (size_t i = 0; i < mv->n; i++)
		matcher_release(&mv->v[i]);
	free(mv->v);
	mv->v = NULL;
	mv->n = 0;
}

enum err matchers_fail(struct buf *errmsg, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	buf_vsetf(errmsg, fmt, ap);
	va_end(ap);
	return ERR_INVALID;
}

/* ---- the classic grammar (pkg/labels/parse.go) ---- */

/* Go's \s in the classic grammar's regex: [\t\n\f\r ]. */
static int go_space(char c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\f' || c == '\r';
}

static int name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/*
 * The value as written, raw[0..n) (the classic regex's third group), into
 * out: an optional opening quote that must then close it, \" \\ \n
 * unescaped, any other backslash literal, no other double quote.
 */
static enum err classic_value(const char *raw, size_t n, struct buf *out, struct buf *errmsg)
{
	const char *s = raw;
	size_t len = n;
	int want_close = 0, escaped = 0;

	if (len && s[0] == '"') {
		s++;
		len--;
		want_close = 1;
	}
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (escaped) {
			escaped = 0;
			if (c == 'n') {
				(void)buf_addch(out, '\n');
				continue;
			}
			if (c != '"' && c != '\\')
				(void)buf_addch(out, '\\');
			(void)buf_addch(out, c);
			continue;
		}
		if (c == '\\' && i + 1 < len) {
			escaped = 1;
		} else if (c == '"') {
			if (!want_close || i + 1 < len)
				goto unescaped_quote;
			want_close = 0;
		} else {
			(void)buf_addch(out, c);
		}
	}
	if (!want_close)
		return ERR_OK;
unescaped_quote:
	buf_setf(errmsg, "matcher value contains unescaped double quote: %.*s", (int)n, raw);
	return ERR_INVALID;
}

/*
 * ParseMatcher(): one matcher, s[0..n), by the regex
 * ^\s*([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(=~|=|!=|!~)\s*((?s).*?)\s*$, appended to mv.
 */
static enum err classic_one(const char *s, size_t n, struct mvec *mv, struct buf *errmsg)
{
	struct buf value = BUF_INIT;
	size_t i = 0, name_at, name_len, end = n;
	enum cfg_match_op op;
	void *re = NULL;
	enum err rc;

	while (i < n && go_space(s[i]))
		i++;
	name_at = i;
	if (i < n && name_start(s[i]))
		while (i < n && name_char(s[i]))
			i++;
	name_len = i - name_at;
	while (i < n && go_space(s[i]))
		i++;
	if (!name_len || i == n || (s[i] != '=' && (s[i] != '!' || i + 1 == n ||
						    (s[i + 1] != '=' && s[i + 1] != '~')))) {
		buf_setf(errmsg, "bad matcher format: %.*s", (int)n, s);
		return ERR_INVALID;
	}
	if (s[i] == '=')
		op = i + 1 < n && s[i + 1] == '~' ? CFG_MATCH_RE : CFG_MATCH_EQ;
	else
		op = s[i + 1] == '=' ? CFG_MATCH_NE : CFG_MATCH_NRE;
	i += op == CFG_MATCH_EQ ? 1 : 2;
	while (i < n && go_space(s[i]))
		i++;
	while (end > i && go_space(s[end - 1]))
		end--;
	rc = classic_value(s + i, end - i, &value, errmsg);
	if (rc == ERR_OK && (op == CFG_MATCH_RE || op == CFG_MATCH_NRE))
		rc = mre_compile(buf_str(&value), &re, errmsg);
	if (rc == ERR_OK) {
		mvec_push(mv, op, xstrndup(s + name_at, name_len), xstrdup(buf_str(&value)));
		mv->v[mv->n - 1].re = re;
	}
	buf_release(&value);
	return rc;
}

/* Go's strings.TrimSpace: the length of s[0..n) without its Unicode spaces, *from its start. */
static size_t trim_space(const char *s, size_t n, size_t *from)
{
	uint32_t cp;
	size_t len;

	*from = 0;
	while (*from < n && (len = mutf8_decode(s + *from, n - *from, &cp)) && mutf8_is_space(cp))
		*from += len;
	while (n > *from) {
		size_t k = n - 1;

		while (k > *from && (s[k] & 0xc0) == 0x80)
			k--;
		(void)mutf8_decode(s + k, n - k, &cp);
		if (!mutf8_is_space(cp))
			break;
		n = k;
	}
	return n - *from;
}

/*
 * ParseMatchers(): one { and one } trimmed, split at commas outside double
 * quotes (a backslash escapes a quote), each part a matcher; the last part
 * is dropped when it is only spaces (a trailing comma), an empty one before
 * it is an error.
 */
static enum err matchers_parse_classic(const char *text, size_t n, struct mvec *mv,
				       struct buf *errmsg)
{
	const char *s = text;
	size_t tok = 0, from, len;
	int quoted = 0, escaped = 0;
	enum err rc = ERR_OK;

	if (n && s[0] == '{') {
		s++;
		n--;
	}
	if (n && s[n - 1] == '}')
		n--;
	for (size_t i = 0; i < n && rc == ERR_OK; i++) {
		if (s[i] == ',' && !quoted) {
			rc = classic_one(s + tok, i - tok, mv, errmsg);
			tok = i + 1;
		} else if (s[i] == '"') {
			if (!escaped)
				quoted = !quoted;
			else
				escaped = 0;
		} else if (s[i] == '\\') {
			escaped = !escaped;
		} else if (s[i] != ',') {
			escaped = 0;
		}
	}
	len = trim_space(s + tok, n - tok, &from);
	if (rc == ERR_OK && len)
		rc = classic_one(s + tok + from, len, mv, errmsg);
	if (rc)
		mvec_release(mv);
	return rc;
}

/* ---- Alertmanager's choice (matcher/compat/parse.go) ---- */

static int same(const struct mvec *a, const struct mvec *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (a->v[i].op != b->v[i].op || strcmp(a->v[i].name, b->v[i].name) ||
		    strcmp(a->v[i].value, b->v[i].value))
			return 0;
	return 1;
}

static void suggestion(const struct mvec *mv, struct buf *out)
{
	for (size_t i = 0; i < mv->n; i++) {
		if (i)
			(void)buf_addch(out, ',');
		matcher_format(&mv->v[i], out);
	}
}

/*
 * FallbackMatchersParser(): the classic result when the classic grammar
 * accepts the text (with a warning when the UTF-8 grammar refuses it or
 * reads it otherwise), else the UTF-8 result, else both errors.
 */
static enum err parse_fallback(const char *text, size_t n, struct mvec *out, struct buf *warning,
			       struct buf *errmsg)
{
	struct mvec classic = MVEC_INIT, utf8 = MVEC_INIT;
	struct buf cerr = BUF_INIT, uerr = BUF_INIT;
	enum err crc = matchers_parse_classic(text, n, &classic, &cerr);
	enum err urc = matchers_parse_utf8(text, n, &utf8, &uerr);

	if (crc == ERR_OK) {
		if (urc && warning) {
			buf_setf(warning, "the UTF-8 matchers grammar refuses this text (%s); it is read "
				 "with the classic grammar, as Alertmanager does; written for both: ",
				 buf_str(&uerr));
			suggestion(&classic, warning);
		} else if (!urc && !same(&classic, &utf8) && warning) {
			buf_setf(warning, "the UTF-8 and classic matchers grammars read this text "
				 "differently; the classic reading is kept, as Alertmanager keeps it: ");
			suggestion(&classic, warning);
		}
		*out = classic;
		classic = (struct mvec)MVEC_INIT;
	} else if (urc == ERR_OK) {
		*out = utf8;
		utf8 = (struct mvec)MVEC_INIT;
	} else if (strstr(buf_str(&uerr), buf_str(&cerr))) {  /* the same regex refused twice */
		buf_setf(errmsg, "%s", buf_str(&cerr));
	} else {
		buf_setf(errmsg, "%s; UTF-8 grammar: %s", buf_str(&cerr), buf_str(&uerr));
	}
	mvec_release(&classic);
	mvec_release(&utf8);
	buf_release(&cerr);
	buf_release(&uerr);
	return crc && urc ? ERR_INVALID : ERR_OK;
}

enum err matcher_parse_list(const char *text, enum matcher_grammar grammar,
			    struct cfg_matcher **ms, size_t *count, struct buf *warning,
			    struct buf *errmsg)
{
	struct mvec got = MVEC_INIT;
	size_t n = text ? strlen(text) : 0;
	enum err rc;

	buf_reset(warning);
	if (!utf8_valid(text ? text : "", n)) {
		buf_setf(errmsg, "text is not valid UTF-8");
		return ERR_INVALID;
	}
	switch (grammar) {
	case MATCHER_CLASSIC:
		rc = matchers_parse_classic(text ? text : "", n, &got, errmsg);
		break;
	case MATCHER_UTF8:
		rc = matchers_parse_utf8(text ? text : "", n, &got, errmsg);
		break;
	case MATCHER_FALLBACK:
	default:
		rc = parse_fallback(text ? text : "", n, &got, warning, errmsg);
		break;
	}
	if (rc)
		return rc;
	*ms = xreallocarray(*ms, *count + got.n + 1, sizeof(**ms));
	if (got.n)
		memcpy(*ms + *count, got.v, got.n * sizeof(*got.v));
	*count += got.n;
	free(got.v);
	return ERR_OK;
}

void matcher_release(struct cfg_matcher *m)
{
	if (!m)
		return;
	mre_free(m->re);
	free(m->name);
	free(m->value);
	memset(m, 0, sizeof(*m));
}

int matcher_matches(const struct cfg_matcher *m, const char *value)
{
	const char *v = value ? value : "";

	switch (m->op) {
	case CFG_MATCH_EQ: return strcmp(v, m->value) == 0;
	case CFG_MATCH_NE: return strcmp(v, m->value) != 0;
	case CFG_MATCH_RE: return mre_match(m->re, v, strlen(v));
	case CFG_MATCH_NRE: return !mre_match(m->re, v, strlen(v));
	}
	return 0;
}

/* ---- the text form (pkg/labels/matcher.go String()) ---- */

/* Go's unicode.IsPrint, for the characters a label is likely to hold: controls, spaces, format characters are not. */
static int go_printable(uint32_t cp)
{
	if (cp < 0x20 || (cp >= 0x7f && cp <= 0xa0) || cp == 0xad)
		return 0;
	if (cp != ' ' && mutf8_is_space(cp))
		return 0;
	return !((cp >= 0x200b && cp <= 0x200f) || (cp >= 0x202a && cp <= 0x202e) ||
		 (cp >= 0x2060 && cp <= 0x206f) || cp == 0xfeff || (cp >= 0xfff9 && cp <= 0xfffb) ||
		 cp == 0xfffe || cp == 0xffff);
}

/* Go's strconv.Quote(s). */
static void go_quote(const char *s, struct buf *out)
{
	static const char named[] = "\a\b\f\n\r\t\v";
	static const char letters[] = "abfnrtv";
	size_t n = strlen(s);

	(void)buf_addch(out, '"');
	for (size_t i = 0; i < n;) {
		uint32_t cp;
		size_t len = mutf8_decode(s + i, n - i, &cp);
		const char *e = cp && cp < 0x80 ? strchr(named, (int)cp) : NULL;

		if (cp == '"' || cp == '\\')
			(void)buf_printf(out, "\\%c", (char)cp);
		else if (go_printable(cp))
			(void)buf_add(out, s + i, len);
		else if (e)
			(void)buf_printf(out, "\\%c", letters[e - named]);
		else if (cp < 0x80)
			(void)buf_printf(out, "\\x%02x", (unsigned)cp);
		else if (cp < 0x10000)
			(void)buf_printf(out, "\\u%04x", (unsigned)cp);
		else
			(void)buf_printf(out, "\\U%08x", (unsigned)cp);
		i += len;
	}
	(void)buf_addch(out, '"');
}

/* Alertmanager quotes a name with a reserved character; an empty one too here, so that it reads back. */
static int name_needs_quotes(const char *name)
{
	size_t n = strlen(name);

	if (!n)
		return 1;

	for (size_t i = 0; i < n;) {
		uint32_t cp;

		i += mutf8_decode(name + i, n - i, &cp);
		if (mutf8_is_space(cp) || (cp < 0x80 && strchr("{}!=~,\\\"'`", (int)cp)))
			return 1;
	}
	return 0;
}

void matcher_format(const struct cfg_matcher *m, struct buf *out)
{
	if (name_needs_quotes(m->name)) {
		go_quote(m->name, out);
		(void)buf_adds(out, op_names[m->op]);
		go_quote(m->value, out);
		return;
	}
	(void)buf_printf(out, "%s%s", m->name, op_names[m->op]);
	matcher_quote_value(m->value, out);
}

void matcher_quote_value(const char *s, struct buf *out)
{
	(void)buf_addch(out, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			(void)buf_addch(out, '\\');
		if (*s == '\n')
			(void)buf_adds(out, "\\n");
		else
			(void)buf_addch(out, *s);
	}
	(void)buf_addch(out, '"');
}

int cfg_route_select(const struct cfg_receiver *r,
		     const char *(*label)(void *ctx, const char *name), void *ctx)
{
	for (size_t i = 0; i < r->routes_count; i++) {
		const struct cfg_route *rt = &r->routes[i];
		size_t k = 0;

		while (k < rt->matchers_count &&
		       matcher_matches(&rt->matchers[k], label(ctx, rt->matchers[k].name)))
			k++;
		if (k == rt->matchers_count)
			return (int)i;
	}
	return -1;
}
