/*
 * mustache.c - Mustache spec v1.4 renderer over a jansson view.
 *
 * A template is parsed into a flat array of nodes (a section node records the
 * index just past its children), then rendered against a context stack of
 * json_t pointers.  Partials are loaded, indented and parsed when reached.
 */
#include "mustache.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "xalloc.h"

#include "banned.h"

enum kind { K_TEXT, K_VAR, K_RAW, K_SECTION, K_INVERTED, K_PARTIAL };

struct node {
	enum kind kind;
	const char *s;      /* K_TEXT: the text; otherwise the (dotted) name */
	size_t len;
	const char *indent; /* K_PARTIAL: whitespace before a standalone tag */
	size_t indent_len;
	size_t end;         /* K_SECTION, K_INVERTED: index just past the children */
	size_t tag;         /* offset of the tag in the source, for messages */
	size_t tag_end;     /* offset just past the tag */
	int dynamic;        /* K_PARTIAL: {{>*name}}, the name is looked up */
};

struct mustache {
	char *owned;        /* the source when this struct owns it, else NULL */
	const char *src;    /* the source the nodes point into */
	size_t len;
	struct node *nodes;
	size_t n;
	size_t cap;
};

struct parser {
	struct mustache *m;
	const char *otag;   /* current delimiters, pointing into the source */
	size_t olen;
	const char *ctag;
	size_t clen;
	size_t open[MUSTACHE_MAX_NESTING]; /* node indexes of unclosed sections */
	size_t nopen;
	const char *partial; /* name of the partial being parsed, NULL at top */
	struct buf *errmsg;
};

struct render {
	const struct mustache_options *opt;
	struct buf *out;
	size_t out_start;   /* out->len when the call began */
	unsigned max_depth;
	size_t steps;       /* steps left of the budget (MUSTACHE_DEFAULT_STEPS) */
	const json_t **stack;
	size_t n;
	size_t cap;
	struct buf *errmsg;
	struct buf scratch; /* an escaped value on its way to out */
};

static const struct mustache_options default_options = MUSTACHE_OPTIONS_INIT;

/* ---- error messages ---- */

/* Append src[from..to) quoted, at most 60 bytes, control bytes as '?'. */
static void add_snippet(struct buf *b, const char *src, size_t from, size_t to)
{
	size_t i, max = from + 60;

	buf_addch(b, '"');
	for (i = from; i < to && i < max; i++) {
		unsigned char c = (unsigned char)src[i];
		buf_addch(b, c < 0x20 || c == 0x7f ? '?' : (char)c);
	}
	if (i < to)
		buf_adds(b, "...");
	buf_addch(b, '"');
}

/*
 * errmsg = [partial "P": ]line L col C: tag "SNIPPET": <fmt>, where L and C
 * are the 1-based line and byte column of src[tag].  Returns ERR_INVALID.
 */
static enum err PRINTF_LIKE(6, 0) vsay(struct buf *errmsg, const char *partial, const char *src,
				       size_t tag, size_t tag_end, const char *fmt, va_list ap)
{
	size_t line = 1, col = 1, i;

	if (!errmsg)
		return ERR_INVALID;
	for (i = 0; i < tag; i++) {
		if (src[i] == '\n') {
			line++;
			col = 1;
		} else {
			col++;
		}
	}
	buf_reset(errmsg);
	if (partial)
		buf_printf(errmsg, "partial \"%s\": ", partial);
	buf_printf(errmsg, "line %zu col %zu: tag ", line, col);
	add_snippet(errmsg, src, tag, tag_end);
	buf_adds(errmsg, ": ");
	buf_vprintf(errmsg, fmt, ap);
	return ERR_INVALID;
}

static enum err PRINTF_LIKE(6, 7) say(struct buf *errmsg, const char *partial, const char *src,
				      size_t tag, size_t tag_end, const char *fmt, ...)
{
	va_list ap;
	enum err rc;

	va_start(ap, fmt);
	rc = vsay(errmsg, partial, src, tag, tag_end, fmt, ap);
	va_end(ap);
	return rc;
}

/* ---- parsing ---- */

/* A syntax error at the parser's tag src[tag..tag_end): see vsay(). */
static enum err PRINTF_LIKE(4, 5) perr(const struct parser *p, size_t tag, size_t tag_end,
				       const char *fmt, ...)
{
	va_list ap;
	enum err rc;

	va_start(ap, fmt);
	rc = vsay(p->errmsg, p->partial, p->m->src, tag, tag_end, fmt, ap);
	va_end(ap);
	return rc;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

static int is_space(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

/* First index >= from where s[0..n) appears in src[0..len), or len. */
static size_t find(const char *src, size_t len, size_t from, const char *s, size_t n)
{
	size_t i;

	if (n > len)
		return len;
	for (i = from; i + n <= len; i++) {
		if (src[i] == s[0] && memcmp(src + i, s, n) == 0)
			return i;
	}
	return len;
}

static struct node *add_node(struct mustache *m, enum kind kind, size_t tag, size_t tag_end)
{
	struct node *nd;

	if (m->n == m->cap) {
		m->cap = m->cap ? m->cap * 2 : 16;
		m->nodes = xreallocarray(m->nodes, m->cap, sizeof(*m->nodes));
	}
	nd = &m->nodes[m->n++];
	memset(nd, 0, sizeof(*nd));
	nd->kind = kind;
	nd->tag = tag;
	nd->tag_end = tag_end;
	return nd;
}

static void add_text(struct mustache *m, size_t from, size_t to)
{
	struct node *nd;

	if (to <= from)
		return;
	nd = add_node(m, K_TEXT, from, to);
	nd->s = m->src + from;
	nd->len = to - from;
}

/* Trim blanks and newlines from both ends of *s[0..*n). */
static void trim(const char **s, size_t *n)
{
	while (*n && is_space(**s)) {
		(*s)++;
		(*n)--;
	}
	while (*n && is_space((*s)[*n - 1]))
		(*n)--;
}

/* Check a trimmed tag name: non-empty, no whitespace, "." or dot-separated non-empty parts. */
static enum err check_name(struct parser *p, const char *s, size_t n, size_t tag, size_t tag_end)
{
	size_t i;

	if (n == 0)
		return perr(p, tag, tag_end, "empty name");
	for (i = 0; i < n; i++) {
		if (is_space(s[i]))
			return perr(p, tag, tag_end, "whitespace inside the name");
	}
	if (n == 1 && s[0] == '.')
		return ERR_OK;
	for (i = 0; i < n; i++) {
		int edge = i == 0 || i == n - 1;
		if (s[i] == '.' && (edge || s[i + 1] == '.'))
			return perr(p, tag, tag_end, "empty part in dotted name");
	}
	return ERR_OK;
}

/* The offset past the run at s[i..n) of blanks (blank 1) or of non-blanks (blank 0). */
static size_t skip_run(const char *s, size_t i, size_t n, int blank)
{
	while (i < n && is_space(s[i]) == blank)
		i++;
	return i;
}

/* {{=a b=}}: s[0..n) is what lies between the two '='. */
static enum err set_delimiters(struct parser *p, const char *s, size_t n, size_t tag,
			       size_t tag_end)
{
	size_t a = skip_run(s, 0, n, 1);
	size_t alen = skip_run(s, a, n, 0) - a;
	size_t b = skip_run(s, a + alen, n, 1);
	size_t blen = skip_run(s, b, n, 0) - b;

	if (alen == 0 || blen == 0 || skip_run(s, b + blen, n, 1) != n ||
	    memchr(s + a, '=', alen) || memchr(s + b, '=', blen))
		return perr(p, tag, tag_end,
			    "bad delimiters (want two blank-separated delimiters without '=')");
	p->otag = s + a;
	p->olen = alen;
	p->ctag = s + b;
	p->clen = blen;
	return ERR_OK;
}

/*
 * Where the tag opened at src[tag] with sigil at src[body - 1] (if any) ends:
 * sets *close to the closing delimiter's offset and returns the offset past it,
 * or 0 when the tag is never closed.
 */
static size_t find_close(const struct parser *p, size_t body, char sigil, size_t *close)
{
	const char *src = p->m->src;
	size_t len = p->m->len, i = body;
	char closer = sigil == '{' ? '}' : '=';

	/* {{{x}}} and {{=a b=}} close with '}' or '=' right before the delimiter. */
	if (sigil != '{' && sigil != '=') {
		i = find(src, len, body, p->ctag, p->clen);
		*close = i;
		return i == len ? 0 : i + p->clen;
	}
	for (;;) {
		i = find(src, len, i, p->ctag, p->clen);
		if (i == len)
			return 0;
		if (i > body && src[i - 1] == closer) {
			*close = i - 1;
			return i + p->clen;
		}
		i++;
	}
}

/* End offset of the unclosed tag at tag: the end of its line, for the message. */
static size_t line_end(const char *src, size_t len, size_t tag)
{
	size_t i = tag;

	while (i < len && src[i] != '\n')
		i++;
	return i;
}

/* Handle {{/name}}: it must close the innermost open section. */
static enum err close_section(struct parser *p, const char *name, size_t n, size_t tag,
			      size_t tag_end)
{
	struct node *open;
	size_t line = 1, i;

	if (p->nopen == 0)
		return perr(p, tag, tag_end, "no section is open");
	open = &p->m->nodes[p->open[p->nopen - 1]];
	if (open->len != n || memcmp(open->s, name, n) != 0) {
		for (i = 0; i < open->tag; i++)
			line += p->m->src[i] == '\n';
		return perr(p, tag, tag_end,
			    "the section open here is \"%.*s\", opened on line %zu",
			    (int)open->len, open->s, line);
	}
	open->end = p->m->n;
	p->nopen--;
	return ERR_OK;
}

/* Make a node for the tag src[tag..tag_end) whose content is body[0..n) after the sigil. */
static enum err add_tag(struct parser *p, char sigil, const char *body, size_t n, size_t tag,
			size_t tag_end, size_t indent)
{
	enum err rc = ERR_OK;
	struct node *nd;
	enum kind kind;
	int dynamic = 0;

	switch (sigil) {
	case '!':
		return ERR_OK;
	case '=':
		return set_delimiters(p, body, n, tag, tag_end);
	case '$':
	case '<':
		return perr(p, tag, tag_end, "template inheritance is not supported");
	case '#':
		kind = K_SECTION;
		break;
	case '^':
		kind = K_INVERTED;
		break;
	case '>':
		kind = K_PARTIAL;
		break;
	case '{':
	case '&':
		kind = K_RAW;
		break;
	case '/':
		trim(&body, &n);
		rc = check_name(p, body, n, tag, tag_end);
		return rc ? rc : close_section(p, body, n, tag, tag_end);
	default:
		kind = K_VAR;
		break;
	}
	trim(&body, &n);
	if (kind == K_PARTIAL && n && body[0] == '*') {
		dynamic = 1;
		body++;
		n--;
		trim(&body, &n);
	}
	rc = check_name(p, body, n, tag, tag_end);
	if (rc)
		return rc;
	if ((kind == K_SECTION || kind == K_INVERTED) && p->nopen == MUSTACHE_MAX_NESTING)
		return perr(p, tag, tag_end, "sections nested deeper than %d",
			    MUSTACHE_MAX_NESTING);
	nd = add_node(p->m, kind, tag, tag_end);
	nd->s = body;
	nd->len = n;
	nd->dynamic = dynamic;
	if (kind == K_PARTIAL) {
		nd->indent = p->m->src + indent;
		nd->indent_len = tag - indent;
	}
	if (kind == K_SECTION || kind == K_INVERTED)
		p->open[p->nopen++] = p->m->n - 1;
	return ERR_OK;
}

/*
 * A tag that may stand alone (all but interpolation) is standalone when only
 * blanks share its line: then the blanks before it and the line ending after
 * it are dropped (spec "standalone" rules).  text_start is where the text
 * before the tag began, so a tag ending on this line disqualifies it.
 * Returns 1 and sets *indent (start of the blanks) and *next (past the line).
 */
static int standalone(const struct mustache *m, size_t text_start, size_t tag, size_t tag_end,
		      size_t *indent, size_t *next)
{
	const char *src = m->src;
	size_t ls = tag, e = tag_end;

	while (ls > text_start && is_blank(src[ls - 1]))
		ls--;
	if (ls > 0 && src[ls - 1] != '\n')
		return 0;
	while (e < m->len && is_blank(src[e]))
		e++;
	if (e == m->len) {
		*next = e;
	} else if (src[e] == '\n') {
		*next = e + 1;
	} else if (src[e] == '\r' && e + 1 < m->len && src[e + 1] == '\n') {
		*next = e + 2;
	} else {
		return 0;
	}
	*indent = ls;
	return 1;
}

/* Parse m->src[0..m->len) into m->nodes.  partial names it in messages (NULL: top level). */
static enum err parse(struct mustache *m, const char *partial, struct buf *errmsg)
{
	struct parser p = { m, "{{", 2, "}}", 2, { 0 }, 0, partial, errmsg };
	const char *src = m->src;
	size_t pos = 0, len = m->len;
	enum err rc = ERR_OK;

	while (pos < len) {
		size_t tag = find(src, len, pos, p.otag, p.olen);
		size_t body, close = 0, tag_end, indent, next;
		char sigil = 0;

		if (tag == len)
			break;
		body = tag + p.olen;
		if (body < len && src[body] != '\0' && strchr("!=$<#^>{&/", src[body]))
			sigil = src[body++];
		tag_end = find_close(&p, body, sigil, &close);
		if (tag_end == 0) {
			return say(errmsg, partial, src, tag, line_end(src, len, tag),
				   "not closed (no \"%s%.*s\" follows)",
				   sigil == '{' ? "}" : sigil == '=' ? "=" : "", (int)p.clen,
				   p.ctag);
		}
		if (sigil && !strchr("{&", sigil) &&
		    standalone(m, pos, tag, tag_end, &indent, &next)) {
			add_text(m, pos, indent);
		} else {
			add_text(m, pos, tag);
			indent = tag;
			next = tag_end;
		}
		rc = add_tag(&p, sigil, src + body, close - body, tag, tag_end, indent);
		if (rc)
			return rc;
		pos = next;
	}
	add_text(m, pos, len);
	if (p.nopen) {
		const struct node *nd = &m->nodes[p.open[p.nopen - 1]];
		return say(errmsg, partial, src, nd->tag, nd->tag_end,
			   "section never closed (no \"/%.*s\" tag follows)", (int)nd->len, nd->s);
	}
	return ERR_OK;
}

static void release(struct mustache *m)
{
	free(m->owned);
	free(m->nodes);
}

/* ---- rendering ---- */

/* Spend n steps of the budget; ERR_TOOBIG when it is used up. */
static enum err spend(struct render *r, size_t n)
{
	if (n <= r->steps) {
		r->steps -= n;
		return ERR_OK;
	}
	r->steps = 0;
	buf_setf(r->errmsg, "render takes over %zu steps (sections over arrays nested too deep?)",
		 r->opt->max_steps ? r->opt->max_steps : (size_t)MUSTACHE_DEFAULT_STEPS);
	return ERR_TOOBIG;
}

/* Append s[0..n) to the output, within max_out_bytes and out's own maximum. */
static enum err emit(struct render *r, const char *s, size_t n)
{
	size_t used = r->out->len - r->out_start;
	size_t max = r->opt->max_out_bytes;
	enum err rc;

	if (n == 0)
		return ERR_OK;
	if (max && (used > max || n > max - used)) {
		buf_setf(r->errmsg, "output over the limit of %zu bytes", max);
		return ERR_TOOBIG;
	}
	rc = buf_add(r->out, s, n);
	if (rc)
		buf_setf(r->errmsg, "output over the buffer's maximum of %zu bytes", r->out->max);
	return rc;
}

/* Append the value s[0..n), escaped unless raw, within the limits of emit(). */
static enum err emit_escaped(struct render *r, const char *s, size_t n, int raw)
{
	enum mustache_escape mode = raw ? MUSTACHE_ESCAPE_NONE : r->opt->escape;

	if (mode == MUSTACHE_ESCAPE_NONE)
		return emit(r, s, n);
	buf_reset(&r->scratch);
	if (mustache_escape_append(&r->scratch, mode, s, n)) {
		buf_setf(r->errmsg, "a value escapes to over %zu bytes", r->scratch.max);
		return ERR_TOOBIG;
	}
	return emit(r, r->scratch.data, r->scratch.len);
}

/* The shortest %g form of d that reads back as d ("1.21", not "1.2099999999999999"). */
static void format_real(double d, char *tmp, size_t n)
{
	int prec;

	for (prec = 1; prec <= 17; prec++) {
		snprintf(tmp, n, "%.*g", prec, d);
		if (strtod(tmp, NULL) == d)
			return;
	}
}

static enum err emit_value(struct render *r, const json_t *v, int raw)
{
	char tmp[64];
	char *json = NULL;
	enum err rc = ERR_OK;

	switch (json_typeof(v)) {
	case JSON_STRING:
		rc = emit_escaped(r, json_string_value(v), json_string_length(v), raw);
		break;
	case JSON_INTEGER:
		snprintf(tmp, sizeof(tmp), "%" JSON_INTEGER_FORMAT, json_integer_value(v));
		rc = emit(r, tmp, strlen(tmp));
		break;
	case JSON_REAL:
		format_real(json_real_value(v), tmp, sizeof(tmp));
		rc = emit(r, tmp, strlen(tmp));
		break;
	case JSON_TRUE:
		rc = emit(r, "true", 4);
		break;
	case JSON_FALSE:
		rc = emit(r, "false", 5);
		break;
	case JSON_NULL:
		break;
	case JSON_OBJECT:
	case JSON_ARRAY:
		json = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
		if (json)
			rc = emit_escaped(r, json, strlen(json), raw);
		break;
	}
	free(json);
	return rc;
}

/* Resolve a (dotted) name against the context stack; NULL when missing. */
static const json_t *lookup(const struct render *r, const char *s, size_t n)
{
	const json_t *v = NULL;
	size_t part, i;

	if (n == 1 && s[0] == '.')
		return r->n ? r->stack[r->n - 1] : NULL;
	part = 0;
	while (part < n && s[part] != '.')
		part++;
	for (i = r->n; i-- > 0;) {
		if (json_is_object(r->stack[i])) {
			v = json_object_getn(r->stack[i], s, part);
			if (v)
				break;
		}
	}
	while (v && part < n) {
		s += part + 1;
		n -= part + 1;
		part = 0;
		while (part < n && s[part] != '.')
			part++;
		v = json_is_object(v) ? json_object_getn(v, s, part) : NULL;
	}
	return v;
}

static int truthy(const json_t *v)
{
	/* "" is falsey as in mustache.js, so {{#annotations.runbook_url}} hides
	 * an empty link; the spec leaves strings open. */
	if (!v || json_is_false(v) || json_is_null(v))
		return 0;
	if (json_is_string(v) && json_string_length(v) == 0)
		return 0;
	return !json_is_array(v) || json_array_size(v) > 0;
}

static void push(struct render *r, const json_t *v)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 16;
		r->stack = xreallocarray(r->stack, r->cap, sizeof(*r->stack));
	}
	r->stack[r->n++] = v;
}

static enum err render_nodes(struct render *r, const struct mustache *m, size_t begin,
			     size_t end, unsigned depth, const char *partial);

static enum err render_section(struct render *r, const struct mustache *m, size_t i,
			       unsigned depth, const char *partial)
{
	const struct node *nd = &m->nodes[i];
	const json_t *v = lookup(r, nd->s, nd->len);
	enum err rc = ERR_OK;
	size_t k;

	if (nd->kind == K_INVERTED)
		return truthy(v) ? ERR_OK : render_nodes(r, m, i + 1, nd->end, depth, partial);
	if (!truthy(v))
		return ERR_OK;
	if (!json_is_array(v)) {
		push(r, v);
		rc = render_nodes(r, m, i + 1, nd->end, depth, partial);
		r->n--;
		return rc;
	}
	for (k = 0; k < json_array_size(v) && !rc; k++) {
		push(r, json_array_get(v, k));
		rc = render_nodes(r, m, i + 1, nd->end, depth, partial);
		r->n--;
	}
	return rc;
}

/*
 * The partial's source with indent put before each of its lines (spec:
 * "prepended to each line of the partial before rendering"); a final newline
 * starts no new line.
 */
static enum err indent_source(struct buf *dst, const char *src, const char *indent, size_t n)
{
	enum err rc = buf_add(dst, indent, n);
	const char *nl;

	while (!rc && *src) {
		nl = strchr(src, '\n');
		if (!nl)
			return buf_adds(dst, src);
		rc = buf_add(dst, src, (size_t)(nl - src) + 1);
		src = nl + 1;
		if (!rc && *src)
			rc = buf_add(dst, indent, n);
	}
	return rc;
}

static enum err render_partial(struct render *r, const struct mustache *m, size_t i,
			       unsigned depth, const char *partial)
{
	const struct node *nd = &m->nodes[i];
	struct mustache pm = { NULL, NULL, 0, NULL, 0, 0 };
	struct buf indented;
	const char *loaded;
	char *name = NULL;
	enum err rc = ERR_OK;

	buf_init(&indented, MUSTACHE_MAX_TEMPLATE_BYTES);
	if (nd->dynamic) {
		const json_t *v = lookup(r, nd->s, nd->len);
		if (!json_is_string(v))
			goto out;
		name = xstrdup(json_string_value(v));
	} else {
		name = xstrndup(nd->s, nd->len);
	}
	loaded = r->opt->partial ? r->opt->partial(r->opt->partial_ctx, name) : NULL;
	if (!loaded)
		goto out;
	if (depth >= r->max_depth) {
		rc = say(r->errmsg, partial, m->src, nd->tag, nd->tag_end,
			 "partials nested deeper than %u (a partial including itself?)",
			 r->max_depth);
		goto out;
	}
	pm.src = loaded;
	pm.len = strlen(loaded);
	if (nd->indent_len) {
		rc = indent_source(&indented, loaded, nd->indent, nd->indent_len);
		pm.src = buf_str(&indented);
		pm.len = indented.len;
	}
	if (rc || pm.len > MUSTACHE_MAX_TEMPLATE_BYTES) {
		rc = ERR_TOOBIG;
		buf_setf(r->errmsg, "partial \"%s\": over %u bytes", name,
			 MUSTACHE_MAX_TEMPLATE_BYTES);
		goto out;
	}
	rc = spend(r, pm.len / 64 + 1);
	if (!rc)
		rc = parse(&pm, name, r->errmsg);
	if (!rc)
		rc = render_nodes(r, &pm, 0, pm.n, depth + 1, name);
out:
	release(&pm);
	buf_release(&indented);
	free(name);
	return rc;
}

/* Render m->nodes[begin..end); depth counts the partials we are inside. */
static enum err render_nodes(struct render *r, const struct mustache *m, size_t begin,
			     size_t end, unsigned depth, const char *partial)
{
	enum err rc = ERR_OK;
	size_t i = begin;

	while (i < end && !rc && !(rc = spend(r, 1))) {
		const struct node *nd = &m->nodes[i];
		switch (nd->kind) {
		case K_TEXT:
			rc = emit(r, nd->s, nd->len);
			break;
		case K_VAR:
		case K_RAW: {
			const json_t *v = lookup(r, nd->s, nd->len);
			if (v)
				rc = emit_value(r, v, nd->kind == K_RAW);
			break;
		}
		case K_SECTION:
		case K_INVERTED:
			rc = render_section(r, m, i, depth, partial);
			i = nd->end;
			continue;
		case K_PARTIAL:
			rc = render_partial(r, m, i, depth, partial);
			break;
		}
		i++;
	}
	return rc;
}

static enum err run(const struct mustache *m, const json_t *view,
		    const struct mustache_options *opt, struct buf *out, struct buf *errmsg)
{
	struct render r = { opt ? opt : &default_options, out, out->len, 0, 0, NULL, 0, 0, errmsg,
			    BUF_INIT };
	enum err rc;

	r.steps = r.opt->max_steps ? r.opt->max_steps : MUSTACHE_DEFAULT_STEPS;
	r.max_depth = r.opt->max_partial_depth ? r.opt->max_partial_depth : MUSTACHE_DEFAULT_DEPTH;
	if (r.max_depth > MUSTACHE_MAX_DEPTH)
		r.max_depth = MUSTACHE_MAX_DEPTH;
	if (view)
		push(&r, view);
	rc = render_nodes(&r, m, 0, m->n, 0, NULL);
	if (rc)
		buf_truncate(out, r.out_start);
	free(r.stack);
	buf_release(&r.scratch);
	return rc;
}

static enum err check_size(size_t len, struct buf *errmsg)
{
	if (len <= MUSTACHE_MAX_TEMPLATE_BYTES)
		return ERR_OK;
	buf_setf(errmsg, "template of %zu bytes is over the limit of %u", len,
		 MUSTACHE_MAX_TEMPLATE_BYTES);
	return ERR_TOOBIG;
}

enum err mustache_render(const char *tmpl, size_t len, const json_t *view,
			 const struct mustache_options *opt, struct buf *out,
			 struct buf *errmsg)
{
	struct mustache m = { NULL, tmpl, len, NULL, 0, 0 };
	enum err rc;

	rc = check_size(len, errmsg);
	if (!rc)
		rc = parse(&m, NULL, errmsg);
	if (!rc)
		rc = run(&m, view, opt, out, errmsg);
	release(&m);
	return rc;
}

enum err mustache_compile(const char *tmpl, size_t len, struct mustache **out,
			  struct buf *errmsg)
{
	struct mustache *m = NULL;
	enum err rc;

	*out = NULL;
	rc = check_size(len, errmsg);
	if (rc)
		return rc;
	m = xcalloc(1, sizeof(*m));
	m->owned = xmalloc(len + 1);
	if (len)
		memcpy(m->owned, tmpl, len);
	m->owned[len] = '\0';
	m->src = m->owned;
	m->len = len;
	rc = parse(m, NULL, errmsg);
	if (rc) {
		mustache_free(m);
		return rc;
	}
	*out = m;
	return ERR_OK;
}

enum err mustache_render_compiled(const struct mustache *m, const json_t *view,
				  const struct mustache_options *opt, struct buf *out,
				  struct buf *errmsg)
{
	return run(m, view, opt, out, errmsg);
}

void mustache_free(struct mustache *m)
{
	if (!m)
		return;
	release(m);
	free(m);
}
