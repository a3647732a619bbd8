/*
 * test_mustache_escape.c - the escaping modes of core/mustache_escape.c:
 * GitHub Markdown (issue bodies and comments) and one-line text (titles,
 * labels) over a table of hostile values, each with its exact output; and
 * that {{x}} escapes in the render's mode while {{{x}}} never does.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <jansson.h>

#include "core/buf.h"
#include "core/mustache.h"

#include "core/banned.h"

#define WJ "\xe2\x81\xa0"  /* U+2060 WORD JOINER */
#define RLO "\xe2\x80\xae" /* U+202E RIGHT-TO-LEFT OVERRIDE */
#define LRI "\xe2\x81\xa6" /* U+2066 LEFT-TO-RIGHT ISOLATE */
#define PDI "\xe2\x81\xa9" /* U+2069 POP DIRECTIONAL ISOLATE */
#define ZWSP "\xe2\x80\x8b" /* U+200B ZERO WIDTH SPACE */
#define FFFD "\xef\xbf\xbd"

struct row {
	const char *in;
	const char *want;
};

static void check_rows(enum mustache_escape mode, const struct row *rows, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct buf out = BUF_INIT;

		assert_int_equal(mustache_escape_append(&out, mode, rows[i].in, strlen(rows[i].in)),
				 ERR_OK);
		if (strcmp(buf_str(&out), rows[i].want))
			fail_msg("row %zu: \"%s\" escaped to \"%s\", want \"%s\"", i, rows[i].in,
				 buf_str(&out), rows[i].want);
		buf_release(&out);
	}
}

/* Values that would become Markdown, HTML, links, mentions or references on GitHub. */
static void markdown_values_read_as_text(void **state)
{
	static const struct row rows[] = {
		{ "plain value db-0", "plain value db-0" },
		/* a table cell ends at an unescaped | (GFM 4.10) */
		{ "a|b", "a\\|b" },
		/* a line break would end the cell, or start a heading or a list */
		{ "line1\n# line2", "line1<br># line2" },
		{ "a\r\nb\rc", "a<br>b<br>c" },
		{ "x\xe2\x80\xa8y\xe2\x80\xa9z", "x<br>y<br>z" },
		/* blocks a value may open at the start of a line */
		{ "# heading", "\\# heading" },
		{ "- item", "\\- item" },
		{ "+ item", "\\+ item" },
		{ "===", "\\===" },
		{ "---", "\\---" },
		{ "1. first", "1\\. first" },
		{ "2) second", "2\\) second" },
		{ "> quote", "&gt; quote" },
		{ "    indented code", "indented code" },
		{ "\t\t- tabbed", "\\- tabbed" },
		/* ... but not in the middle of a value */
		{ "x - y + z = 1. 2)", "x - y + z = 1. 2)" },
		{ "10.0.0.1:9100", "10.0.0.1:9100" },
		{ "2026-11-21T00:49:48.539Z", "2026-11-21T00:49:48.539Z" },
		{ "C# and x#y", "C# and x#y" },
		{ "closing #", "closing \\#" },
		/* inline syntax anywhere */
		{ "*bold* **b**", "\\*bold\\* \\*\\*b\\*\\*" },
		{ "_it_ a _b", "\\_it\\_ a \\_b" },
		{ "snake_case_name", "snake_case_name" },
		{ "`code`", "\\`code\\`" },
		{ "```\nfence never closed", "\\`\\`\\`<br>fence never closed" },
		{ "~~gone~~", "\\~\\~gone\\~\\~" },
		{ "$x^2$", "\\$x^2\\$" },
		{ "back\\slash", "back\\\\slash" },
		{ "[x](http://evil)", "\\[x\\](http\\://evil)" },
		{ "![img](http://evil/i.png)", "!\\[img\\](http\\://evil/i.png)" },
		{ "<img src=x onerror=alert(1)>", "&lt;img src=x onerror=alert(1)&gt;" },
		{ "<!-- alertbridge:key=0 -->", "&lt;!-- alertbridge:key=0 --&gt;" },
		{ "&#x202E; \"q\" 'a'", "&amp;#x202E; &quot;q&quot; 'a'" },
		/* bare URLs: GFM's extended autolinks start at "://" and "www." */
		{ "see http://evil.example and https://x", "see http\\://evil.example and https\\://x" },
		{ "www.evil.example WWW.x.y awww.z", "www\\.evil.example WWW\\.x.y awww.z" },
		/* GitHub's references, linked on the rendered text */
		{ "@octocat", "@" WJ "octocat" },
		{ "cc @acme/oncall, a@b.io", "cc @" WJ "acme/oncall, a@" WJ "b.io" },
		{ "@ alone, @-", "@ alone, @-" },
		{ "#123 o/r#4", "\\#" WJ "123 o/r#" WJ "4" },
		{ "GH-12 gh-3 ugh-4 GH-x", "GH-" WJ "12 gh-" WJ "3 ugh-4 GH-x" },
		/* text direction and invisible or broken characters */
		{ "a" RLO "b" LRI "c" PDI "d", "abcd" },
		{ "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad\xe2\x81\xa7\xe2\x81\xa8x", "x" },
		{ "zero" ZWSP "width", "zero" ZWSP "width" },
		{ "bad \xff byte \xc3", "bad " FFFD " byte " FFFD },
		{ "a\x01" "b\x7f" "c\xc2\x85" "d\te", "abcd e" },
		{ "caf\xc3\xa9 \xf0\x9f\x94\xa5", "caf\xc3\xa9 \xf0\x9f\x94\xa5" },
		{ "", "" },
	};
	(void)state;
	check_rows(MUSTACHE_ESCAPE_MARKDOWN, rows, sizeof(rows) / sizeof(rows[0]));
}

/* Titles: one line of plain text; Markdown is not escaped (titles show backslashes). */
static void line_values_are_one_line(void **state)
{
	static const struct row rows[] = {
		{ "critical\nfoo", "critical foo" },
		{ "a\r\n\r\n\tb", "a b" },
		{ "x\xe2\x80\xa8y", "x y" },
		{ "\nlead and trail\n", " lead and trail " },
		{ "a\x01\x02" "b\x7f" "c", "a b c" },
		{ "x" RLO "y" LRI "z" PDI, "xyz" },
		{ "bad \xff", "bad " FFFD },
		{ "*kept* `as` @user #1 <b>|", "*kept* `as` @user #1 <b>|" },
	};
	(void)state;
	check_rows(MUSTACHE_ESCAPE_LINE, rows, sizeof(rows) / sizeof(rows[0]));
}

/* {{x}} escapes in the render's mode, {{{x}}} and {{&x}} never: the documented opt-out. */
static void render_escapes_tags_and_not_triple_mustaches(void **state)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	json_t *view = json_pack("{s:s}", "v", "*@a*\n|");
	struct buf out = BUF_INIT;
	(void)state;

	opt.escape = MUSTACHE_ESCAPE_MARKDOWN;
	assert_int_equal(mustache_render("{{v}} {{{v}}} {{&v}}", 20, view, &opt, &out, NULL),
			 ERR_OK);
	assert_string_equal(buf_str(&out), "\\*@" WJ "a\\*<br>\\| *@a*\n| *@a*\n|");
	buf_reset(&out);
	opt.escape = MUSTACHE_ESCAPE_LINE;
	assert_int_equal(mustache_render("[{{v}}]", 7, view, &opt, &out, NULL), ERR_OK);
	assert_string_equal(buf_str(&out), "[*@a* |]");
	buf_release(&out);
	json_decref(view);
}

/* An escaped value that passes max_out_bytes fails the render as any output does. */
static void escaped_growth_counts_against_the_limit(void **state)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	json_t *view = json_pack("{s:s}", "v", "||||");
	struct buf out = BUF_INIT, err = BUF_INIT;
	(void)state;

	opt.escape = MUSTACHE_ESCAPE_MARKDOWN;
	opt.max_out_bytes = 7; /* the value is 4 bytes, 8 escaped */
	assert_int_equal(mustache_render("{{v}}", 5, view, &opt, &out, &err), ERR_TOOBIG);
	assert_string_equal(buf_str(&out), "");
	buf_release(&out);
	buf_release(&err);
	json_decref(view);
}

/* The status page's text: HTML entities, and no bidi control reorders the page. */
static void html_page_text_drops_bidi_controls(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;

	mustache_html_escape(&out, "<a href=\"x\">" RLO "evil&" LRI "b" PDI " \xff</a>");
	assert_string_equal(buf_str(&out),
			    "&lt;a href=&quot;x&quot;&gt;evil&amp;b " FFFD "&lt;/a&gt;");
	buf_reset(&out);
	mustache_html_escape(&out, "caf\xc3\xa9");
	mustache_html_escape(&out, NULL);
	assert_string_equal(buf_str(&out), "caf\xc3\xa9");
	buf_release(&out);
}

static void null_value_appends_nothing(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;

	assert_int_equal(mustache_escape_append(&out, MUSTACHE_ESCAPE_MARKDOWN, NULL, 3), ERR_OK);
	assert_int_equal(out.len, 0);
	buf_release(&out);
}

UNIT_MAIN(
	cmocka_unit_test(markdown_values_read_as_text),
	cmocka_unit_test(line_values_are_one_line),
	cmocka_unit_test(render_escapes_tags_and_not_triple_mustaches),
	cmocka_unit_test(escaped_growth_counts_against_the_limit),
	cmocka_unit_test(html_page_text_drops_bidi_controls),
	cmocka_unit_test(null_value_appends_nothing))
