/*
 * mustache.h - a logic-less Mustache renderer over a jansson view.
 *
 * Follows the Mustache spec v1.4 (github.com/mustache/spec): comments, set
 * delimiters, interpolation, sections, inverted sections, partials, and the
 * optional ~dynamic-names ({{>*name}}).  Lambdas and ~inheritance ({{<p}},
 * {{$b}}) are not supported; their tags are rejected with ERR_INVALID.
 * The issue title/body and Slack notice templates are rendered with it.
 */
#ifndef AB_MUSTACHE_H
#define AB_MUSTACHE_H

#include <stddef.h>

#include <jansson.h>

#include "buf.h"
#include "err.h"

/*
 * How {{name}} escapes the value it interpolates.  {{{name}}} and {{&name}}
 * never escape, whatever the mode: the documented way to put a value in
 * unchanged (e.g. Markdown a template author trusts).
 */
enum mustache_escape {
	/* The spec's HTML escaping: & < > " become &amp; &lt; &gt; &quot;. */
	MUSTACHE_ESCAPE_HTML,
	/* Nothing is escaped. */
	MUSTACHE_ESCAPE_NONE,
	/*
	 * Slack's rule (api.slack.com/reference/surfaces/formatting#escaping):
	 * only & < > become &amp; &lt; &gt;.
	 */
	MUSTACHE_ESCAPE_SLACK,
	/*
	 * GitHub Flavored Markdown (github.github.com/gfm, 0.29) as GitHub
	 * renders issue bodies and comments: the value reads on the page as the
	 * text it is, wherever the template puts it (a paragraph, a heading, a
	 * table cell, link text or a link's destination), and never becomes
	 * Markdown, HTML, a link, a mention or an issue reference.  & < > "
	 * become entities; the ASCII punctuation that would open Markdown gets a
	 * backslash (\* \_ \` \[ \] \| \~ \$ \\ everywhere; # - + = and "1." where
	 * they would start a block; the ":" of "://" and the "." of "www.");
	 * U+2060 WORD JOINER follows the @ of "@name", the # of "#12" and the
	 * "-" of "GH-12" (GitHub links those on the rendered page, where a
	 * backslash is gone); a line break (\n, \r\n, \r, U+2028, U+2029) is
	 * "<br>"; other controls, blanks at the start and the bidi controls
	 * U+202A-U+202E and U+2066-U+2069 are dropped; bytes that are not UTF-8
	 * become U+FFFD.  Inside a `code span` backslashes and entities show as
	 * they are: put only values of known characters there (a fingerprint).
	 * Left as they are: :emoji: shortcodes and bare commit SHAs.
	 */
	MUSTACHE_ESCAPE_MARKDOWN,
	/*
	 * One line of plain text (GitHub issue titles, label names): every run
	 * of line breaks and controls (tab included) becomes one space, the bidi
	 * controls U+202A-U+202E and U+2066-U+2069 are dropped, bytes that are
	 * not UTF-8 become U+FFFD; nothing else changes.
	 */
	MUSTACHE_ESCAPE_LINE,
};

/* Partial nesting allowed when mustache_options.max_partial_depth is 0. */
#define MUSTACHE_DEFAULT_DEPTH 32
/* Largest partial nesting honoured: bigger max_partial_depth values act as this. */
#define MUSTACHE_MAX_DEPTH 256
/* Sections may nest this deep inside one template (or partial); deeper is ERR_INVALID. */
#define MUSTACHE_MAX_NESTING 100
/*
 * Work one render may do when mustache_options.max_steps is 0.  A step is a
 * node visited (a text run, tag or section pass) or 64 bytes of partial
 * source parsed; real templates take thousands.  Sections over arrays nested
 * n deep multiply the work by the arrays' sizes ({{#a}} 40 times over a
 * 2-element a is 2^40 passes, even with no output), so it is bounded.
 */
#define MUSTACHE_DEFAULT_STEPS 10000000u
/* Largest template or partial source, after partial indentation; larger is ERR_TOOBIG. */
#define MUSTACHE_MAX_TEMPLATE_BYTES (16u * 1024 * 1024)

/*
 * Rendering options.  Start from MUSTACHE_OPTIONS_INIT and set what you need;
 * a NULL options pointer means exactly MUSTACHE_OPTIONS_INIT.
 */
struct mustache_options {
	enum mustache_escape escape;
	/*
	 * Loads the partial called name ({{>name}}, or the string a dynamic
	 * {{>*key}} resolves to) and returns its NUL-terminated source, or NULL
	 * when there is no such partial (it then renders as "", as the spec
	 * asks).  The returned string stays owned by the loader and must stay
	 * valid until the render call returns.  partial == NULL: every partial
	 * is missing.  name is only valid during the call.
	 */
	const char *(*partial)(void *ctx, const char *name);
	void *partial_ctx;          /* handed to partial() untouched */
	size_t max_out_bytes;       /* bytes this call may append to out; 0: no limit */
	unsigned max_partial_depth; /* partials within partials; 0: MUSTACHE_DEFAULT_DEPTH */
	size_t max_steps;           /* work this call may do; 0: MUSTACHE_DEFAULT_STEPS */
};

#define MUSTACHE_OPTIONS_INIT { MUSTACHE_ESCAPE_HTML, NULL, NULL, 0, 0, 0 }

/*
 * Render the template tmpl[0..len) (need not be NUL-terminated; NUL bytes are
 * copied as text) against view and append the result to out.
 *
 * The view is the bottom of the context stack.  Names resolve as the spec
 * says: "." is the top of the stack; "a.b.c" finds "a" in the nearest object
 * on the stack that has the key, then "b" and "c" inside that value only
 * (a failed step means "missing").  Interpolation: strings as they are,
 * integers in decimal, reals in the shortest form that reads back the same
 * ("1.21"), true/false as "true"/"false", null and missing as "", objects
 * and arrays as compact JSON.  Sections: false, null, missing, [] and ""
 * are falsey (the spec leaves strings open; "" follows mustache.js so that
 * optional fields can be guarded); everything else is truthy, including 0;
 * an array renders its body once per element, any other
 * truthy value once with itself pushed on the stack.  Standalone lines and
 * the indentation of standalone partials follow the spec.
 *
 * view may be NULL (an empty context); it is only read.  opt may be NULL.
 *
 * Returns ERR_OK, or:
 *   ERR_INVALID  a syntax error in the template or a partial: unclosed tag,
 *                unclosed section, mismatched or unexpected {{/x}}, empty
 *                name, whitespace inside a name, bad {{=a b=}} delimiters,
 *                an unsupported tag ({{<p}}, {{$b}}), sections nested deeper
 *                than MUSTACHE_MAX_NESTING; or partials nested deeper than
 *                max_partial_depth (e.g. a {{>self}} loop).  errmsg names
 *                the line and column (1-based, bytes) and the tag, and the
 *                partial it is in, if any.
 *   ERR_TOOBIG   the output would pass max_out_bytes, out's own maximum, or
 *                a template is over MUSTACHE_MAX_TEMPLATE_BYTES, or the
 *                render would take more than max_steps steps ("render
 *                takes over N steps").
 * On error out is left as it was before the call and errmsg (may be NULL)
 * says why; on success errmsg is untouched.
 */
enum err mustache_render(const char *tmpl, size_t len, const json_t *view,
			 const struct mustache_options *opt, struct buf *out,
			 struct buf *errmsg) WARN_UNUSED;

/* A parsed template, to render many times without parsing again. */
struct mustache;

/*
 * Parse tmpl[0..len) into *out (a copy is kept: tmpl may go away).  The
 * caller frees *out with mustache_free().  Returns ERR_OK, or ERR_INVALID /
 * ERR_TOOBIG as mustache_render() does for syntax errors, with *out NULL.
 * Partials are loaded and parsed when rendering, not here.
 */
enum err mustache_compile(const char *tmpl, size_t len, struct mustache **out,
			  struct buf *errmsg) WARN_UNUSED;

/* mustache_render() for a compiled template; the same contract. m may be shared read-only. */
enum err mustache_render_compiled(const struct mustache *m, const json_t *view,
				  const struct mustache_options *opt, struct buf *out,
				  struct buf *errmsg) WARN_UNUSED;

/* Free a compiled template; NULL is a no-op. */
void mustache_free(struct mustache *m);

/*
 * Append s[0..n) to out escaped as {{name}} is in mode (see enum
 * mustache_escape).  s NULL appends nothing.  Returns ERR_OK, or ERR_TOOBIG
 * when out's maximum is reached (out then holds a prefix).
 */
enum err mustache_escape_append(struct buf *out, enum mustache_escape mode, const char *s,
				size_t n) WARN_UNUSED;

/*
 * Append s to out as text of an HTML page (the status page): & < > and "
 * become entities as {{name}} does in MUSTACHE_ESCAPE_HTML mode, so the text
 * is safe in an element and in a double-quoted attribute value (HTML Living
 * Standard, "Serializing HTML fragments" escapes the same set); and, unlike
 * that mode, the bidi controls U+202A-U+202E and U+2066-U+2069 are dropped
 * (an override in one value would reorder the text after it on the page)
 * and bytes that are not UTF-8 become U+FFFD.  s NULL appends nothing.
 */
void mustache_html_escape(struct buf *out, const char *s);

#endif
