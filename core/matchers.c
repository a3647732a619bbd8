/*
 * matchers.c - Alertmanager-style label matchers (core/matchers.h).
 */
#include "core/matchers.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>

#include "core/xalloc.h"
#include "core/banned.h"

static const char *const op_names[] = { "=", "!=", "=~", "!~" };

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t')
		p++;
	return p;
}

static int name_start(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}

static int name_char(char c)
{
	return name_start(c) || (c >= '0' && c <= '9');
}

/* A double-quoted string at *p (on its opening quote) into out; *p after the closing one. */
static enum err quoted(const char **p, struct buf *out, struct buf *errmsg)
{
	const char *s = *p + 1;

	for (; *s && *s != '"'; s++) {
		if (*s != '\\') {
			(void)buf_addch(out, *s);
			continue;
		}
		s++;
		switch (*s) {
		case '"': case '\\': (void)buf_addch(out, *s); break;
		case 'n': (void)buf_addch(out, '\n'); break;
		case 't': (void)buf_addch(out, '\t'); break;
		default:
			buf_setf(errmsg, "invalid escape \"\\%c\" in a quoted string",
				 *s ? *s : ' ');
			return ERR_INVALID;
		}
	}
	if (*s != '"') {
		buf_setf(errmsg, "unterminated quoted string");
		return ERR_INVALID;
	}
	*p = s + 1;
	return ERR_OK;
}

static enum err compile_re(struct cfg_matcher *m, struct buf *errmsg)
{
	struct buf anchored = BUF_INIT;
	regex_t *re = xcalloc(1, sizeof(*re));
	int rc;

	if (m->value[0])
		(void)buf_printf(&anchored, "^(%s)$", m->value);
	else
		(void)buf_adds(&anchored, "^$");
	rc = regcomp(re, buf_str(&anchored), REG_EXTENDED | REG_NOSUB);
	buf_release(&anchored);
	if (rc) {
		char why[256];
		regerror(rc, re, why, sizeof(why));
		buf_setf(errmsg, "invalid regex \"%s\": %s", m->value, why);
		free(re);
		return ERR_INVALID;
	}
	m->re = re;
	return ERR_OK;
}

enum err matcher_parse(const char *text, struct cfg_matcher *out, struct buf *errmsg)
{
	struct buf name = BUF_INIT, value = BUF_INIT;
	const char *p = skip_space(text ? text : "");
	enum err rc = ERR_INVALID;
	size_t n;

	memset(out, 0, sizeof(*out));
	if (*p == '"') {
		if (quoted(&p, &name, errmsg))
			goto out;
	} else if (name_start(*p)) {
		while (name_char(*p))
			(void)buf_addch(&name, *p++);
	} else {
		buf_setf(errmsg, "expected a label name at \"%s\"", p);
		goto out;
	}
	p = skip_space(p);
	if (!strncmp(p, "=~", 2) || !strncmp(p, "!~", 2) || !strncmp(p, "!=", 2)) {
		out->op = p[1] == '=' ? CFG_MATCH_NE : p[0] == '=' ? CFG_MATCH_RE : CFG_MATCH_NRE;
		p += 2;
	} else if (*p == '=') {
		out->op = CFG_MATCH_EQ;
		p++;
	} else {
		buf_setf(errmsg, "expected one of = != =~ !~ after \"%s\"", buf_str(&name));
		goto out;
	}
	p = skip_space(p);
	if (*p == '"') {
		if (quoted(&p, &value, errmsg))
			goto out;
		p = skip_space(p);
		if (*p) {
			buf_setf(errmsg, "unexpected \"%s\" after the quoted value", p);
			goto out;
		}
	} else {
		n = strlen(p);
		while (n && (p[n - 1] == ' ' || p[n - 1] == '\t'))
			n--;
		if (memchr(p, '"', n)) {
			buf_setf(errmsg, "an unquoted value cannot contain '\"': quote it");
			goto out;
		}
		(void)buf_add(&value, p, n);
	}
	out->name = buf_detach(&name);
	out->value = buf_detach(&value);
	rc = (out->op == CFG_MATCH_RE || out->op == CFG_MATCH_NRE) ? compile_re(out, errmsg)
								   : ERR_OK;
out:
	buf_release(&name);
	buf_release(&value);
	if (rc)
		matcher_release(out);
	return rc;
}

void matcher_release(struct cfg_matcher *m)
{
	if (!m)
		return;
	if (m->re) {
		regfree(m->re);
		free(m->re);
	}
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
	case CFG_MATCH_RE: return regexec(m->re, v, 0, NULL, 0) == 0;
	case CFG_MATCH_NRE: return regexec(m->re, v, 0, NULL, 0) != 0;
	}
	return 0;
}

void matcher_format(const struct cfg_matcher *m, struct buf *out)
{
	(void)buf_printf(out, "%s%s\"", m->name, op_names[m->op]);
	for (const char *s = m->value; *s; s++) {
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
