/*
 * test_mustache.c - the Mustache renderer: every test of the official spec
 * suite, read at run time from tests/mustache-spec (vendored; one cmocka
 * test per spec test), then our own tests for escape modes, numbers,
 * error messages, the partial depth and output limits, and malformed input.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/mustache.h"
#include "core/xalloc.h"

#include "core/banned.h"

/* The spec files we run; ~inheritance is not implemented, lambdas are not in the suite. */
static const char *const spec_files[] = {
	"comments.json",   "delimiters.json", "interpolation.json", "inverted.json",
	"partials.json",   "sections.json",   "~dynamic-names.json",
};

struct spec_case {
	const json_t *test; /* one element of the file's "tests" array */
};

/* Partial loader over a JSON object of name -> source. */
static const char *json_partial(void *ctx, const char *name)
{
	return json_string_value(json_object_get(ctx, name));
}

/* opt loading partials from a new object {name: text}; the caller json_decref()s it. */
static json_t *one_partial(struct mustache_options *opt, const char *name, const char *text)
{
	json_t *partials = json_pack("{s:s}", name, text);

	opt->partial = json_partial;
	opt->partial_ctx = partials;
	return partials;
}

static void run_spec_case(void **state)
{
	const struct spec_case *c = *state;
	const char *tmpl = json_string_value(json_object_get(c->test, "template"));
	const char *want = json_string_value(json_object_get(c->test, "expected"));
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	struct buf out = BUF_INIT, err = BUF_INIT;
	enum err rc;

	assert_non_null(tmpl);
	assert_non_null(want);
	opt.partial = json_partial;
	opt.partial_ctx = json_object_get(c->test, "partials");
	rc = mustache_render(tmpl, strlen(tmpl), json_object_get(c->test, "data"), &opt, &out,
			     &err);
	if (rc != ERR_OK || strcmp(buf_str(&out), want) != 0) {
		print_error("template: %s\nerror:    %s\n", tmpl, buf_str(&err));
		assert_string_equal(buf_str(&err), "");
		assert_string_equal(buf_str(&out), want);
	}
	buf_release(&out);
	buf_release(&err);
}

/* Registered instead of the spec tests when the spec cannot be read: fails with why. */
static void spec_unreadable(void **state)
{
	fail_msg("%s", (const char *)*state);
}

/* ---- helpers for our own tests ---- */

/* Render tmpl with view (JSON text, may be NULL) and opt; returns the code, fills out/err. */
static enum err render(const char *tmpl, const char *view_json,
		       const struct mustache_options *opt, struct buf *out, struct buf *err)
{
	json_t *view = NULL;
	enum err rc;

	if (view_json) {
		view = json_loads(view_json, JSON_DECODE_ANY, NULL);
		assert_non_null(view);
	}
	rc = mustache_render(tmpl, strlen(tmpl), view, opt, out, err);
	json_decref(view);
	return rc;
}

/* Assert that tmpl renders to want. */
static void expect(const char *tmpl, const char *view_json, const struct mustache_options *opt,
		   const char *want)
{
	struct buf out = BUF_INIT, err = BUF_INIT;

	assert_int_equal(render(tmpl, view_json, opt, &out, &err), ERR_OK);
	assert_string_equal(buf_str(&out), want);
	buf_release(&out);
	buf_release(&err);
}

/*
 * Assert that tmpl fails with rc and exactly the message want, leaving out untouched; a
 * failure names the template.
 */
static void expect_error(const char *tmpl, const char *view_json,
			 const struct mustache_options *opt, enum err want_rc, const char *want)
{
	struct buf out = BUF_INIT, err = BUF_INIT;
	enum err rc;

	assert_int_equal(buf_adds(&out, "kept"), ERR_OK);
	rc = render(tmpl, view_json, opt, &out, &err);
	if (rc != want_rc || strcmp(buf_str(&err), want) || strcmp(buf_str(&out), "kept"))
		fail_msg("template \"%s\": rc %d, \"%s\", output \"%s\"; want rc %d, \"%s\", "
			 "output kept", tmpl, rc, buf_str(&err), buf_str(&out), want_rc, want);
	buf_release(&out);
	buf_release(&err);
}

/* ---- escape modes ---- */

static void escape_html_is_the_specs_four(void **state)
{
	(void)state;
	expect("{{s}}|{{{s}}}|{{&s}}", "{\"s\": \"<a href='x'>&\\\"</a>\"}", NULL,
	       "&lt;a href='x'&gt;&amp;&quot;&lt;/a&gt;|<a href='x'>&\"</a>|<a href='x'>&\"</a>");
}

static void escape_none_and_slack(void **state)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	(void)state;
	opt.escape = MUSTACHE_ESCAPE_NONE;
	expect("{{s}}", "{\"s\": \"<b>&\\\"'\"}", &opt, "<b>&\"'");
	opt.escape = MUSTACHE_ESCAPE_SLACK;
	expect("{{s}} {{{s}}}", "{\"s\": \"<@U1> & \\\"q\\\"\"}", &opt,
	       "&lt;@U1&gt; &amp; \"q\" <@U1> & \"q\"");
	/* Escaping applies to JSON-rendered containers too. */
	expect("{{o}}", "{\"o\": {\"k\": \"<\"}}", &opt, "{\"k\":\"&lt;\"}");
}

/* ---- values ---- */

static void values_render_like_the_spec(void **state)
{
	(void)state;
	expect("{{i}} {{n}} {{r}} {{t}} {{e}} {{w}} {{f}} {{z}} {{big}}",
	       "{\"i\": 85, \"n\": -3, \"r\": 1.21, \"t\": 0.1, \"e\": 3.0, \"w\": true, "
	       "\"f\": false, \"z\": null, \"big\": 9007199254740993}",
	       NULL, "85 -3 1.21 0.1 3 true false  9007199254740993");
	expect("{{a}}|{{o}}", "{\"a\": [1, \"x\"], \"o\": {}}", NULL,
	       "[1,&quot;x&quot;]|{}");
}

static void empty_string_falsey_zero_truthy(void **state)
{
	(void)state;
	expect("{{#s}}s{{/s}}{{#z}}z{{/z}}{{^s}}!s{{/s}}{{#e}}e{{/e}}{{^e}}!e{{/e}}",
	       "{\"s\": \"\", \"z\": 0, \"e\": []}", NULL, "z!s!e");
}

static void null_view_and_null_options(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;
	assert_int_equal(mustache_render("a{{x}}{{.}}{{#x}}b{{/x}}{{^x}}c{{/x}}", 37, NULL, NULL,
					 &out, NULL),
			 ERR_OK);
	assert_string_equal(buf_str(&out), "ac");
	buf_release(&out);
}

static void length_not_nul_terminated_and_nul_bytes(void **state)
{
	static const char tmpl[] = { 'a', '\0', 'b', '{', '{', 'x', '}', '}', 'Z', 'Z' };
	struct buf out = BUF_INIT;
	json_t *view = json_pack("{s:s}", "x", "1");
	(void)state;
	assert_int_equal(mustache_render(tmpl, 8, view, NULL, &out, NULL), ERR_OK);
	assert_int_equal(out.len, 4);
	assert_memory_equal(out.data, "a\0b1", 4);
	json_decref(view);
	buf_release(&out);
}

static void appends_to_existing_output(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;
	assert_int_equal(buf_adds(&out, "pre:"), ERR_OK);
	assert_int_equal(render("{{x}}", "{\"x\": \"y\"}", NULL, &out, NULL), ERR_OK);
	assert_string_equal(buf_str(&out), "pre:y");
	buf_release(&out);
}

/* ---- error messages ---- */

/* Templates with a syntax error (no view, no options) and the exact message of each. */
static const struct {
	const char *tmpl, *want;
} syntax_errors[] = {
	{ "ab\n  {{name", "line 2 col 3: tag \"{{name\": not closed (no \"}}\" follows)" },
	{ "{{{raw}}", "line 1 col 1: tag \"{{{raw}}\": not closed (no \"}}}\" follows)" },
	{ "{{=<% %>=}}\n<%x", "line 2 col 1: tag \"<%x\": not closed (no \"%>\" follows)" },
	{ "x\n{{#a}}\n{{#b}}\n{{/b}}\n",
	  "line 2 col 1: tag \"{{#a}}\": section never closed (no \"/a\" tag follows)" },
	{ "{{#a}}\n  {{^b}}{{/a}}",
	  "line 2 col 9: tag \"{{/a}}\": the section open here is \"b\", opened on line 2" },
	{ "x{{/a}}", "line 1 col 2: tag \"{{/a}}\": no section is open" },
	{ "{{=<% =}}", "line 1 col 1: tag \"{{=<% =}}\": bad delimiters (want two "
		       "blank-separated delimiters without '=')" },
	{ "{{=a= b=}}", "line 1 col 1: tag \"{{=a= b=}}\": bad delimiters (want two "
			"blank-separated delimiters without '=')" },
	{ "{{= a b c =}}", "line 1 col 1: tag \"{{= a b c =}}\": bad delimiters (want two "
			   "blank-separated delimiters without '=')" },
	{ "{{#}}", "line 1 col 1: tag \"{{#}}\": empty name" },
	{ "{{ }}", "line 1 col 1: tag \"{{ }}\": empty name" },
	{ "{{a b}}", "line 1 col 1: tag \"{{a b}}\": whitespace inside the name" },
	{ "{{a..b}}", "line 1 col 1: tag \"{{a..b}}\": empty part in dotted name" },
	{ "{{#a.}}{{/a.}}", "line 1 col 1: tag \"{{#a.}}\": empty part in dotted name" },
	{ "{{<p}}{{/p}}", "line 1 col 1: tag \"{{<p}}\": template inheritance is not supported" },
	{ "{{$b}}{{/b}}", "line 1 col 1: tag \"{{$b}}\": template inheritance is not supported" },
};

static void syntax_errors_name_line_col_and_tag(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(syntax_errors) / sizeof(syntax_errors[0]); i++)
		expect_error(syntax_errors[i].tmpl, NULL, NULL, ERR_INVALID, syntax_errors[i].want);
}

static void error_snippets_are_cut_and_sanitised(void **state)
{
	(void)state;
	expect_error("{{a\tb\x01"
		     "cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc}}",
		     NULL, NULL, ERR_INVALID,
		     "line 1 col 1: tag \"{{a?b?cccccccccccccccccccccccccccccccccccccccccccccc"
		     "cccccccc...\": whitespace inside the name");
}

static void sections_nested_too_deep(void **state)
{
	struct buf tmpl = BUF_INIT, out = BUF_INIT, err = BUF_INIT;
	int i;
	(void)state;
	for (i = 0; i < MUSTACHE_MAX_NESTING; i++)
		assert_int_equal(buf_adds(&tmpl, "{{#a}}"), ERR_OK);
	for (i = 0; i < MUSTACHE_MAX_NESTING; i++)
		assert_int_equal(buf_adds(&tmpl, "{{/a}}"), ERR_OK);
	assert_int_equal(render(buf_str(&tmpl), "{\"a\": true}", NULL, &out, &err), ERR_OK);
	buf_reset(&tmpl);
	for (i = 0; i <= MUSTACHE_MAX_NESTING; i++)
		assert_int_equal(buf_adds(&tmpl, "{{#a}}"), ERR_OK);
	assert_int_equal(render(buf_str(&tmpl), NULL, NULL, &out, &err), ERR_INVALID);
	assert_string_equal(buf_str(&err), "line 1 col 601: tag \"{{#a}}\": sections nested "
					   "deeper than 100");
	buf_release(&tmpl);
	buf_release(&out);
	buf_release(&err);
}

/* ---- partials: depth limit, errors inside partials ---- */

/*
 * Errors inside partials: the one partial name -> text loaded, max_partial_depth (0: the
 * default), the template and view rendered, and the exact message.
 */
static const struct {
	const char *name, *text;
	unsigned depth;
	const char *tmpl, *view, *want;
} partial_errors[] = {
	{ "self", "x{{>self}}", 0, "{{>self}}", NULL,
	  "partial \"self\": line 1 col 2: tag \"{{>self}}\": partials nested deeper than 32 "
	  "(a partial including itself?)" },
	{ "self", "x{{>self}}", 2, "{{>self}}", NULL,
	  "partial \"self\": line 1 col 2: tag \"{{>self}}\": partials nested deeper than 2 "
	  "(a partial including itself?)" },
	/* Huge limits are clamped, so the loop still ends. */
	{ "self", "x{{>self}}", 1000000, "{{>self}}", NULL,
	  "partial \"self\": line 1 col 2: tag \"{{>self}}\": partials nested deeper than 256 "
	  "(a partial including itself?)" },
	/* recursion_within_the_limit_renders(), one level deeper */
	{ "n", "({{#c}}{{>n}}{{/c}})", 3, "{{>n}}", "{\"c\": {\"c\": {\"c\": {\"c\": 1}}}}",
	  "partial \"n\": line 1 col 8: tag \"{{>n}}\": partials nested deeper than 3 "
	  "(a partial including itself?)" },
	/* A syntax error in a partial names it. */
	{ "bad", "ok\n{{#open}}", 0, "a {{>bad}}", NULL,
	  "partial \"bad\": line 2 col 1: tag \"{{#open}}\": section never closed "
	  "(no \"/open\" tag follows)" },
};

static void errors_in_partials_name_the_partial(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(partial_errors) / sizeof(partial_errors[0]); i++) {
		struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
		json_t *partials;

		partials = one_partial(&opt, partial_errors[i].name, partial_errors[i].text);
		if (partial_errors[i].depth)
			opt.max_partial_depth = partial_errors[i].depth;
		expect_error(partial_errors[i].tmpl, partial_errors[i].view, &opt, ERR_INVALID,
			     partial_errors[i].want);
		json_decref(partials);
	}
}

static void recursion_within_the_limit_renders(void **state)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	json_t *partials = one_partial(&opt, "n", "({{#c}}{{>n}}{{/c}})");
	(void)state;
	opt.max_partial_depth = 3;
	expect("{{>n}}", "{\"c\": {\"c\": {\"c\": false}}}", &opt, "((()))");
	json_decref(partials);
}

static void missing_loader_and_dynamic_non_string(void **state)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	json_t *partials = json_pack("{s:s}", "p", "P");
	(void)state;
	expect("[{{>p}}]", NULL, NULL, "[]");
	opt.partial = json_partial;
	opt.partial_ctx = partials;
	expect("[{{>*n}}{{>*o}}{{>*s}}]", "{\"n\": 1, \"o\": {}, \"s\": \"p\"}", &opt, "[P]");
	json_decref(partials);
}

/* ---- output limit ---- */

static void output_limit_is_enforced_and_output_restored(void **state)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	struct buf out = BUF_INIT, err = BUF_INIT;
	(void)state;
	opt.max_out_bytes = 5;
	expect("{{#l}}{{.}}{{/l}}", "{\"l\": [1,2,3,4,5]}", &opt, "12345");
	expect_error("{{#l}}{{.}}{{/l}}", "{\"l\": [1,2,3,4,5,6]}", &opt, ERR_TOOBIG,
		     "output over the limit of 5 bytes");
	expect_error("{{s}}", "{\"s\": \"ab&\"}", &opt, ERR_TOOBIG,
		     "output over the limit of 5 bytes");
	/* The limit counts what this call appends, not what out held before. */
	buf_init(&out, 8);
	assert_int_equal(buf_adds(&out, "12345"), ERR_OK);
	assert_int_equal(render("abc", NULL, &opt, &out, &err), ERR_OK);
	assert_string_equal(buf_str(&out), "12345abc");
	/* out's own maximum is honoured too. */
	assert_int_equal(render("d", NULL, &opt, &out, &err), ERR_TOOBIG);
	assert_string_equal(buf_str(&err), "output over the buffer's maximum of 8 bytes");
	assert_string_equal(buf_str(&out), "12345abc");
	buf_release(&out);
	buf_release(&err);
}

/* ---- compile once, render many ---- */

static void compiled_template_renders_many_views(void **state)
{
	struct mustache *m = NULL;
	struct buf out = BUF_INIT, err = BUF_INIT;
	json_t *v1 = json_pack("{s:s}", "x", "one"), *v2 = json_pack("{s:i}", "x", 2);
	char tmpl[] = "<{{x}}>";
	(void)state;
	assert_int_equal(mustache_compile(tmpl, strlen(tmpl), &m, &err), ERR_OK);
	memset(tmpl, '#', strlen(tmpl)); /* the compiled template keeps its own copy */
	assert_int_equal(mustache_render_compiled(m, v1, NULL, &out, &err), ERR_OK);
	assert_int_equal(mustache_render_compiled(m, v2, NULL, &out, &err), ERR_OK);
	assert_string_equal(buf_str(&out), "<one><2>");
	mustache_free(m);
	mustache_free(NULL);
	m = (struct mustache *)&out; /* must be reset to NULL on error */
	assert_int_equal(mustache_compile("{{/x}}", 6, &m, &err), ERR_INVALID);
	assert_null(m);
	assert_string_equal(buf_str(&err), "line 1 col 1: tag \"{{/x}}\": no section is open");
	json_decref(v1);
	json_decref(v2);
	buf_release(&out);
	buf_release(&err);
}

/* ---- malformed input never crashes ---- */

static void malformed_templates_fail_cleanly(void **state)
{
	static const char *const bad[] = {
		"{{",  "{{{", "{{{}}",   "{{&}}",  "{{!",  "{{=}}",   "{{= =}}", "{{=<< >>}}",
		"{{>", "{{>}}", "{{>*}}", "{{/}}", "{{#a}}{{/b}}", "{{^a}}", "}}{{", "{{=| |=}}|",
		"{{=| |=}}|#a|", "{{{a}}", "{{a}}}}{{", "{{#.}}{{/..}}", "{{..}}", "{{.a}}",
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct buf out = BUF_INIT, err = BUF_INIT;
		enum err rc = render(bad[i], "{\"a\": [1]}", NULL, &out, &err);
		if (rc != ERR_INVALID)
			fail_msg("template %zu \"%s\": rc %d, want ERR_INVALID", i, bad[i], rc);
		if (strncmp(buf_str(&err), "line 1 col ", 11) != 0)
			fail_msg("template \"%s\": message \"%s\"", bad[i], buf_str(&err));
		buf_release(&out);
		buf_release(&err);
	}
}

/* Random templates over a small tag-heavy alphabet: only ERR_OK or ERR_INVALID, never a crash. */
static void random_templates_never_crash(void **state)
{
	static const char *const atoms[] = {
		"{{", "}}", "{", "}", "#", "^", "/", ">", "&", "!", "=", "*", ".", "a", "b",
		" ", "\n", "\r\n", "{{#a}}", "{{/a}}", "{{>p}}", "{{=< >=}}", "<", ">", "x",
	};
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	json_t *view = json_loads("{\"a\": [1, {\"a\": false}], \"b\": \"p\"}", 0, NULL);
	json_t *partials = json_pack("{s:s}", "p", " {{#a}}\n{{.}}\n{{/a}}\n{{>p}}");
	unsigned seed = 12345;
	int iter, k;
	(void)state;
	opt.partial = json_partial;
	opt.partial_ctx = partials;
	opt.max_out_bytes = 1 << 16;
	for (iter = 0; iter < 3000; iter++) {
		struct buf tmpl = BUF_INIT, out = BUF_INIT, err = BUF_INIT;
		int n = (int)(seed % 24);
		enum err rc;
		for (k = 0; k < n; k++) {
			seed = seed * 1103515245u + 12345u;
			const char *atom = atoms[(seed >> 16) % (sizeof(atoms) / sizeof(atoms[0]))];
			assert_int_equal(buf_adds(&tmpl, atom), ERR_OK);
		}
		seed = seed * 1103515245u + 12345u;
		rc = mustache_render(buf_str(&tmpl), tmpl.len, view, &opt, &out, &err);
		if (rc != ERR_OK && rc != ERR_INVALID && rc != ERR_TOOBIG)
			fail_msg("template \"%s\": rc %d", buf_str(&tmpl), rc);
		if (rc != ERR_OK && err.len == 0)
			fail_msg("template \"%s\": no message", buf_str(&tmpl));
		buf_release(&tmpl);
		buf_release(&out);
		buf_release(&err);
	}
	json_decref(view);
	json_decref(partials);
}

/*
 * Found by make fuzz (fuzz_mustache): sections over a 2-element array nested 40
 * deep are 2^40 passes with no output, so a render never ended.  Now the step
 * budget ends it with ERR_TOOBIG, out untouched, within a bounded time.  The
 * test nests 24 deep (2^25 node visits, ~2 s unbounded) so that it fails
 * rather than hangs without the budget.
 */
static void nested_sections_over_arrays_hit_the_step_budget(void **state)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	json_t *view = json_loads("{\"a\": [1, 2]}", 0, NULL);
	struct buf tmpl = BUF_INIT, out = BUF_INIT, err = BUF_INIT;
	struct mustache *m = NULL;
	time_t start = time(NULL);
	int k;
	(void)state;
	for (k = 0; k < 24; k++)
		assert_int_equal(buf_adds(&tmpl, "{{#a}}"), ERR_OK);
	for (k = 0; k < 24; k++)
		assert_int_equal(buf_adds(&tmpl, "{{/a}}"), ERR_OK);
	assert_int_equal(buf_adds(&out, "kept"), ERR_OK);
	assert_int_equal(mustache_render(buf_str(&tmpl), tmpl.len, view, NULL, &out, &err),
			 ERR_TOOBIG);
	assert_string_equal(buf_str(&err), "render takes over 10000000 steps "
			    "(sections over arrays nested too deep?)");
	assert_string_equal(buf_str(&out), "kept");
	assert_true(time(NULL) - start < 20);
	/* A smaller budget of the caller's, through a compiled template too. */
	opt.max_steps = 1000;
	buf_reset(&err);
	assert_int_equal(mustache_compile(buf_str(&tmpl), tmpl.len, &m, &err), ERR_OK);
	assert_int_equal(mustache_render_compiled(m, view, &opt, &out, &err), ERR_TOOBIG);
	assert_string_equal(buf_str(&err), "render takes over 1000 steps "
			    "(sections over arrays nested too deep?)");
	assert_string_equal(buf_str(&out), "kept");
	/* Ten levels (1023 section passes, 2046 nodes) fit the default budget. */
	buf_reset(&tmpl);
	buf_reset(&out);
	for (k = 0; k < 10; k++)
		assert_int_equal(buf_adds(&tmpl, "{{#a}}"), ERR_OK);
	assert_int_equal(buf_adds(&tmpl, "x"), ERR_OK);
	for (k = 0; k < 10; k++)
		assert_int_equal(buf_adds(&tmpl, "{{/a}}"), ERR_OK);
	assert_int_equal(mustache_render(buf_str(&tmpl), tmpl.len, view, NULL, &out, &err),
			 ERR_OK);
	assert_int_equal(out.len, 1024);
	opt.max_steps = 2000; /* the same under 2000 steps is too much */
	buf_reset(&out);
	assert_int_equal(mustache_render(buf_str(&tmpl), tmpl.len, view, &opt, &out, &err),
			 ERR_TOOBIG);
	assert_int_equal(out.len, 0);
	mustache_free(m);
	json_decref(view);
	buf_release(&tmpl);
	buf_release(&out);
	buf_release(&err);
}

static const struct CMUnitTest own_tests[] = {
	cmocka_unit_test(escape_html_is_the_specs_four),
	cmocka_unit_test(escape_none_and_slack),
	cmocka_unit_test(values_render_like_the_spec),
	cmocka_unit_test(empty_string_falsey_zero_truthy),
	cmocka_unit_test(null_view_and_null_options),
	cmocka_unit_test(length_not_nul_terminated_and_nul_bytes),
	cmocka_unit_test(appends_to_existing_output),
	cmocka_unit_test(syntax_errors_name_line_col_and_tag),
	cmocka_unit_test(error_snippets_are_cut_and_sanitised),
	cmocka_unit_test(sections_nested_too_deep),
	cmocka_unit_test(errors_in_partials_name_the_partial),
	cmocka_unit_test(recursion_within_the_limit_renders),
	cmocka_unit_test(missing_loader_and_dynamic_non_string),
	cmocka_unit_test(output_limit_is_enforced_and_output_restored),
	cmocka_unit_test(compiled_template_renders_many_views),
	cmocka_unit_test(malformed_templates_fail_cleanly),
	cmocka_unit_test(random_templates_never_crash),
	cmocka_unit_test(nested_sections_over_arrays_hit_the_step_budget),
};

/*
 * Find the spec directory: $MUSTACHE_SPEC_DIR if set, else
 * $ALERTBRIDGE_SRC/tests/mustache-spec (the copy vendored in this
 * repository), else tests/mustache-spec from the cwd.  Returns 0 and lists
 * what was tried in dir when none holds comments.json.
 */
static int spec_dir(struct buf *dir)
{
	const char *env = getenv("MUSTACHE_SPEC_DIR");
	const char *src = getenv("ALERTBRIDGE_SRC");
	struct buf tried = BUF_INIT, probe = BUF_INIT;
	const char *base[3], *rel[3];
	size_t n = 0, i;
	int found = 0;

	if (env && *env) {
		base[n] = env;
		rel[n++] = "";
	}
	if (src && *src) {
		base[n] = src;
		rel[n++] = "/tests/mustache-spec";
	}
	base[n] = ".";
	rel[n++] = "/tests/mustache-spec";
	for (i = 0; i < n && !found; i++) {
		FILE *f;
		buf_reset(dir);
		buf_printf(dir, "%s%s", base[i], rel[i]);
		buf_reset(&probe);
		buf_printf(&probe, "%s/comments.json", buf_str(dir));
		f = fopen(buf_str(&probe), "r");
		found = f != NULL;
		if (f)
			fclose(f);
		buf_printf(&tried, "%s%s", tried.len ? ", " : "", buf_str(dir));
	}
	if (!found) {
		buf_reset(dir);
		buf_printf(dir, "mustache spec not found (tried %s): set ALERTBRIDGE_SRC to the "
			   "repo root or MUSTACHE_SPEC_DIR", buf_str(&tried));
	}
	buf_release(&tried);
	buf_release(&probe);
	return found;
}

struct suite {
	struct CMUnitTest *tests;
	size_t n;
	size_t cap;
	struct spec_case *cases; /* one per spec test, kept alive for the run */
	size_t ncases;
	json_t *files[sizeof(spec_files) / sizeof(spec_files[0])];
	char **names;            /* "file: test name" strings, one per case */
	char *errors[16];
	size_t nerrors;
};

static void add_test(struct suite *s, const char *name, CMUnitTestFunction fn, void *st)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? s->cap * 2 : 64;
		s->tests = xreallocarray(s->tests, s->cap, sizeof(*s->tests));
	}
	s->tests[s->n].name = name;
	s->tests[s->n].test_func = fn;
	s->tests[s->n].setup_func = NULL;
	s->tests[s->n].teardown_func = NULL;
	s->tests[s->n].initial_state = st;
	s->n++;
}

/* Load every spec file and register one test per spec test (or a failing test saying why not). */
static void add_spec_tests(struct suite *s)
{
	struct buf dir = BUF_INIT, path = BUF_INIT, name = BUF_INIT;
	size_t f, t, total = 0;
	json_error_t jerr;

	if (!spec_dir(&dir)) {
		s->errors[s->nerrors] = buf_detach(&dir);
		add_test(s, "mustache spec", spec_unreadable, s->errors[s->nerrors++]);
		return;
	}
	for (f = 0; f < sizeof(spec_files) / sizeof(spec_files[0]); f++) {
		buf_reset(&path);
		buf_printf(&path, "%s/%s", buf_str(&dir), spec_files[f]);
		s->files[f] = json_load_file(buf_str(&path), 0, &jerr);
		total += json_array_size(json_object_get(s->files[f], "tests"));
	}
	s->cases = xcalloc(total ? total : 1, sizeof(*s->cases));
	s->names = xcalloc(total ? total : 1, sizeof(*s->names));
	for (f = 0; f < sizeof(spec_files) / sizeof(spec_files[0]); f++) {
		const json_t *tests = json_object_get(s->files[f], "tests");
		if (!json_is_array(tests) && s->nerrors < 16) {
			buf_reset(&path);
			buf_printf(&path, "cannot read %s/%s: the mustache spec is required",
				   buf_str(&dir), spec_files[f]);
			s->errors[s->nerrors] = buf_detach(&path);
			add_test(s, spec_files[f], spec_unreadable, s->errors[s->nerrors++]);
			continue;
		}
		for (t = 0; t < json_array_size(tests); t++) {
			const json_t *tc = json_array_get(tests, t);
			buf_reset(&name);
			buf_printf(&name, "%s: %s", spec_files[f],
				   json_string_value(json_object_get(tc, "name")));
			s->names[s->ncases] = buf_detach(&name);
			s->cases[s->ncases].test = tc;
			add_test(s, s->names[s->ncases], run_spec_case, &s->cases[s->ncases]);
			s->ncases++;
		}
	}
	buf_release(&dir);
	buf_release(&path);
	buf_release(&name);
}

int main(void)
{
	struct suite s;
	size_t i;
	int rc;

	memset(&s, 0, sizeof(s));
	add_spec_tests(&s);
	for (i = 0; i < sizeof(own_tests) / sizeof(own_tests[0]); i++)
		add_test(&s, own_tests[i].name, own_tests[i].test_func, NULL);
	rc = _cmocka_run_group_tests("mustache", s.tests, s.n, NULL, NULL);
	for (i = 0; i < s.ncases; i++)
		free(s.names[i]);
	free(s.names);
	for (i = 0; i < s.nerrors; i++)
		free(s.errors[i]);
	for (i = 0; i < sizeof(s.files) / sizeof(s.files[0]); i++)
		json_decref(s.files[i]);
	free(s.cases);
	free(s.tests);
	return rc;
}
