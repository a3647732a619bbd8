/*
 * fuzz_mustache.c - libFuzzer harness for the Mustache renderer with a fuzzed
 * template over a fixed view (an alert's, with partials): mustache_render()
 * and mustache_compile() + mustache_render_compiled() must agree, in every
 * escape mode, and an error must leave the output untouched and say why.
 * The input is also escaped as a value: GitHub Markdown and one-line text
 * give valid UTF-8 with no line break and no bidi control, and Markdown no
 * backtick, '|' or '<' left unescaped.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/mustache.h"
#include "core/utf8.h"
#include "tests/fuzz/fuzz_mustache_opts.h"

#include "core/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char VIEW[] =
	"{\"alertname\": \"DiskFull\", \"status\": \"firing\", \"resolved\": false,"
	" \"count\": 3, \"ratio\": 1.21, \"zero\": 0, \"none\": null, \"empty\": \"\","
	" \"html\": \"<a href=\\\"x\\\">&amp;</a>\", \"dyn\": \"row\","
	" \"labels\": {\"alertname\": \"DiskFull\", \"severity\": \"critical\","
	" \"pod\": \"db-0\", \"namespace\": \"prod\"},"
	" \"annotations\": {\"summary\": \"disk 95% full\", \"runbook_url\": \"https://x/r\"},"
	" \"labelList\": [{\"name\": \"pod\", \"value\": \"db-0\"},"
	" {\"name\": \"severity\", \"value\": \"critical\"}],"
	" \"alerts\": [{\"fingerprint\": \"0123456789abcdef\", \"labels\": {\"pod\": \"a\"}},"
	" {\"fingerprint\": \"fedcba9876543210\", \"labels\": {\"pod\": \"b\"}}],"
	" \"nums\": [1, 2.5, true, null, \"s\"], \"nested\": {\"a\": {\"b\": {\"c\": \"deep\"}}},"
	" \"previous\": {\"number\": 42, \"url\": \"https://github.com/o/r/issues/42\"}}";

/* Fixed partials: none includes another, so partial work stays linear. */
static const struct fuzz_partial PARTIALS[] = {
	{ "row", "| {{name}} | {{value}} |\n" },
	{ "labels", "{{#labelList}}{{>row}}{{/labelList}}" },
	{ "title", "  {{alertname}}: {{labels.pod}}\n" },
	{ NULL, NULL },
};

static void one(const char *tmpl, size_t len, const json_t *view, const struct mustache *m,
		enum mustache_escape esc)
{
	struct mustache_options opt = fuzz_mustache_options(esc, PARTIALS);
	struct buf a = BUF_INIT, b = BUF_INIT, ea = BUF_INIT, eb = BUF_INIT;
	enum err ra, rb;

	(void)buf_adds(&a, "keep");
	ra = mustache_render(tmpl, len, view, &opt, &a, &ea);
	if (ra != ERR_OK && (a.len != 4 || memcmp(buf_str(&a), "keep", 4) || !ea.len))
		abort(); /* on error: out as before the call, errmsg says why */
	if (ra == ERR_OK && a.len > 4 + FUZZ_MUSTACHE_OUT_MAX)
		abort();
	if (!m && ra == ERR_OK)
		abort(); /* what does not compile does not render */
	if (m) {
		(void)buf_adds(&b, "keep");
		rb = mustache_render_compiled(m, view, &opt, &b, &eb);
		if (ra != rb || a.len != b.len || memcmp(buf_str(&a), buf_str(&b), a.len))
			abort(); /* compiled and direct rendering agree */
	}
	buf_release(&a);
	buf_release(&b);
	buf_release(&ea);
	buf_release(&eb);
}

/* The properties of an escaped value (core/mustache.h): see the file's comment. */
static void escape_value(const char *s, size_t n, enum mustache_escape esc)
{
	struct buf out = BUF_INIT;
	size_t i = 0;

	if (mustache_escape_append(&out, esc, s, n) != ERR_OK || !utf8_valid(buf_str(&out), out.len))
		abort();
	while (i < out.len) {
		uint32_t cp = 0;
		size_t len = utf8_decode(out.data + i, out.len - i, &cp);

		if (cp == '\n' || cp == '\r' || cp == 0x2028 || cp == 0x2029 ||
		    (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
			abort();
		if (esc == MUSTACHE_ESCAPE_MARKDOWN) {
			if (cp == '`' || cp == '|' ||
			    (cp == '<' && (out.len - i < 4 || memcmp(out.data + i, "<br>", 4))))
				abort(); /* each must have come with its backslash or as an entity */
			if (cp == '\\')
				len++; /* a backslash and the byte it escapes */
		}
		i += len;
	}
	buf_release(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *view = json_loads(VIEW, 0, NULL);
	struct mustache *m = NULL;
	struct buf err = BUF_INIT;
	const char *tmpl = (const char *)data;

	if (!view)
		abort();
	if (mustache_compile(tmpl, size, &m, &err) != ERR_OK) {
		if (m || !err.len)
			abort();
	}
	one(tmpl, size, view, m, MUSTACHE_ESCAPE_HTML);
	one(tmpl, size, view, m, MUSTACHE_ESCAPE_NONE);
	one(tmpl, size, view, m, MUSTACHE_ESCAPE_SLACK);
	one(tmpl, size, view, m, MUSTACHE_ESCAPE_MARKDOWN);
	one(tmpl, size, view, m, MUSTACHE_ESCAPE_LINE);
	one(tmpl, size, NULL, m, MUSTACHE_ESCAPE_HTML);
	escape_value(tmpl, size, MUSTACHE_ESCAPE_MARKDOWN);
	escape_value(tmpl, size, MUSTACHE_ESCAPE_LINE);
	mustache_free(m);
	buf_release(&err);
	json_decref(view);
	return 0;
}
