/*
 * test_matchers.c - route matchers as Alertmanager reads and matches them:
 * its own test vectors (tests/unit/data/matchers/alertmanager.json, from its
 * parser and matcher tests) for both grammars and the default fallback
 * between them, RE2's semantics and refusals (a table checked against Go's
 * regexp itself by amtool_agrees when amtool is installed), the defects of
 * issue 18 item 6, and `matchers:` in a config file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"
#include <jansson.h>

#include "core/config.h"
#include "core/matchers.h"
#include "helpers/tmpdir.h"

/* ---- helpers ---- */

struct parsed {
	struct cfg_matcher *ms;
	size_t n;
	struct buf warning, err;
};

static enum err parse(const char *text, enum matcher_grammar g, struct parsed *p)
{
	memset(p, 0, sizeof(*p));
	return matcher_parse_list(text, g, &p->ms, &p->n, &p->warning, &p->err);
}

static void parsed_release(struct parsed *p)
{
	for (size_t i = 0; i < p->n; i++)
		matcher_release(&p->ms[i]);
	free(p->ms);
	buf_release(&p->warning);
	buf_release(&p->err);
	memset(p, 0, sizeof(*p));
}

static const char *op_name(enum cfg_match_op op)
{
	static const char *const names[] = { "=", "!=", "=~", "!~" };
	return names[op];
}

static enum cfg_match_op op_of(const char *s)
{
	return !strcmp(s, "=") ? CFG_MATCH_EQ : !strcmp(s, "!=") ? CFG_MATCH_NE
		: !strcmp(s, "=~") ? CFG_MATCH_RE : CFG_MATCH_NRE;
}

/* Parse text (must succeed) into one matcher, match value; the matcher's text for messages. */
static int m(const char *text, const char *value)
{
	struct parsed p;
	int r;

	if (parse(text, MATCHER_FALLBACK, &p))
		fail_msg("%s: %s", text, buf_str(&p.err));
	assert_int_equal(p.n, 1);
	r = matcher_matches(&p.ms[0], value);
	parsed_release(&p);
	return r;
}

/* A =~ matcher on value as Alertmanager's NewMatcher makes it (through its text form). */
static enum err regex_matcher(const char *value, struct parsed *p)
{
	struct cfg_matcher x = { .name = (char *)"x", .op = CFG_MATCH_RE, .value = (char *)value };
	struct buf text = BUF_INIT;
	enum err rc;

	matcher_format(&x, &text);
	rc = parse(buf_str(&text), MATCHER_UTF8, p);
	buf_release(&text);
	return rc;
}

static json_t *vectors(const char *section)
{
	static json_t *doc;
	char path[512];
	const char *src = getenv("ALERTBRIDGE_SRC");
	json_error_t e;

	if (!doc) {
		snprintf(path, sizeof(path), "%s/tests/unit/data/matchers/alertmanager.json",
			 src && *src ? src : ".");
		doc = json_load_file(path, 0, &e);
		if (!doc)
			fail_msg("%s: %s", path, e.text);
	}
	return json_object_get(json_object_get(doc, section), "cases");
}

/* Every case of a section: parsed with g, the matchers or the error Alertmanager's test expects. */
static void check_section(const char *section, enum matcher_grammar g, int exact_errors)
{
	json_t *cases = vectors(section), *c;
	size_t i, k;

	assert_true(json_array_size(cases) > 0);
	json_array_foreach(cases, i, c) {
		const char *in = json_string_value(json_object_get(c, "input"));
		json_t *want = json_object_get(c, "matchers"), *err = json_object_get(c, "error");
		struct parsed p;
		enum err rc = parse(in, g, &p);

		if (err) {
			const char *e = json_string_value(err);

			if (rc == ERR_OK)
				fail_msg("%s: \"%s\" parsed, Alertmanager refuses it", section, in);
			/* Go's regexp words its errors its own way: ours say "invalid regex" */
			if (e && !strncmp(e, "error parsing regexp", 20))
				assert_non_null(strstr(buf_str(&p.err), "invalid regex"));
			else if (e && exact_errors && strncmp(buf_str(&p.err), e, strlen(e)))
				fail_msg("%s: \"%s\": error \"%s\", Alertmanager's \"%s\"", section, in,
					 buf_str(&p.err), e);
			parsed_release(&p);
			continue;
		}
		if (rc)
			fail_msg("%s: \"%s\" refused (%s), Alertmanager reads it", section, in,
				 buf_str(&p.err));
		if (p.n != json_array_size(want))
			fail_msg("%s: \"%s\": %zu matchers, want %zu", section, in, p.n,
				 json_array_size(want));
		for (k = 0; k < p.n; k++) {
			json_t *w = json_array_get(want, k);
			const char *name = json_string_value(json_array_get(w, 0));
			const char *op = json_string_value(json_array_get(w, 1));
			const char *value = json_string_value(json_array_get(w, 2));

			if (strcmp(p.ms[k].name, name) || strcmp(op_name(p.ms[k].op), op) ||
			    strcmp(p.ms[k].value, value))
				fail_msg("%s: \"%s\"[%zu]: got %s %s \"%s\", want %s %s \"%s\"", section,
					 in, k, p.ms[k].name, op_name(p.ms[k].op), p.ms[k].value, name,
					 op, value);
		}
		parsed_release(&p);
	}
}

/* ---- Alertmanager's own vectors ---- */

static void am_classic_grammar(void **state)
{
	(void)state;
	check_section("classic", MATCHER_CLASSIC, 1);
}

static void am_utf8_grammar(void **state)
{
	(void)state;
	check_section("utf8", MATCHER_UTF8, 1);
	check_section("utf8_compliance", MATCHER_UTF8, 0);
}

static void am_fallback(void **state)
{
	(void)state;
	check_section("fallback", MATCHER_FALLBACK, 1);
}

/* x (its name set) given the op and value of vector c at index at and at + 1, formatted into
 * text (matcher_format()). */
static void format_from(json_t *c, size_t at, struct cfg_matcher *x, struct buf *text)
{
	x->op = op_of(json_string_value(json_array_get(c, at)));
	x->value = (char *)json_string_value(json_array_get(c, at + 1));
	matcher_format(x, text);
}

static void am_matching(void **state)
{
	json_t *c;
	size_t i;

	(void)state;
	json_array_foreach(vectors("match"), i, c) {
		struct cfg_matcher x = { .name = (char *)"x" };
		const char *subject = json_string_value(json_array_get(c, 2));
		struct buf text = BUF_INIT;
		struct parsed p;

		format_from(c, 0, &x, &text);
		if (parse(buf_str(&text), MATCHER_UTF8, &p))
			fail_msg("%s: %s", buf_str(&text), buf_str(&p.err));
		if (matcher_matches(&p.ms[0], subject) != json_is_true(json_array_get(c, 3)))
			fail_msg("%s on \"%s\": want %d", buf_str(&text), subject,
				 json_is_true(json_array_get(c, 3)));
		parsed_release(&p);
		buf_release(&text);
	}
}

/* String(): the vectors, and each text reads back to its matcher (fallback, as a config would). */
static void am_format(void **state)
{
	json_t *c;
	size_t i;

	(void)state;
	json_array_foreach(vectors("format"), i, c) {
		struct cfg_matcher x = { .name = (char *)json_string_value(json_array_get(c, 0)) };
		struct buf text = BUF_INIT;
		struct parsed p;

		format_from(c, 1, &x, &text);
		assert_string_equal(buf_str(&text), json_string_value(json_array_get(c, 3)));
		assert_int_equal(parse(buf_str(&text), MATCHER_FALLBACK, &p), ERR_OK);
		assert_int_equal(p.n, 1);
		assert_string_equal(p.ms[0].name, x.name);
		assert_int_equal(p.ms[0].op, x.op);
		assert_string_equal(p.ms[0].value, x.value);
		parsed_release(&p);
		buf_release(&text);
	}
}

/* An empty name (UTF-8 grammar: ""="x") is written quoted: Alertmanager's ="x" reads back in neither grammar. */
static void format_empty_name_reads_back(void **state)
{
	struct buf text = BUF_INIT;
	struct parsed p, back;

	(void)state;
	assert_int_equal(parse("\"\"=\"x\"", MATCHER_FALLBACK, &p), ERR_OK);
	assert_string_equal(p.ms[0].name, "");
	matcher_format(&p.ms[0], &text);
	assert_string_equal(buf_str(&text), "\"\"=\"x\"");
	assert_int_equal(parse(buf_str(&text), MATCHER_FALLBACK, &back), ERR_OK);
	assert_string_equal(back.ms[0].name, "");
	assert_string_equal(back.ms[0].value, "x");
	parsed_release(&p);
	parsed_release(&back);
	buf_release(&text);
}

/* ---- RE2 ---- */

/* (value of x=~, label value, matches): each row's answer is Go's regexp's (amtool_agrees). */
static const struct re_case {
	const char *re, *subject;
	int match;
} re2_cases[] = {
	{ "\\d+", "123", 1 },
	{ "\\d+", "12a", 0 },
	{ "\\d+", "\xd9\xa1" "\xd9\xa2", 0 },
	{ "caf.", "café", 1 },
	{ "caf.", "cafe" "\xcc\x81", 0 },
	{ ".{4}", "café", 1 },
	{ ".{5}", "café", 0 },
	{ "foo.bar", "foo\nbar", 0 },
	{ "(?s)foo.bar", "foo\nbar", 1 },
	{ "(?s:.)", "\n", 1 },
	{ "a", "a\n", 0 },
	{ "a$", "a\n", 0 },
	{ "a\\n?", "a\n", 1 },
	{ "(?m)a$", "a\n", 0 },
	{ "(?m)a$\\n", "a\n", 1 },
	{ "(?m)a\\n^", "a\n", 1 },
	{ "\\s", "\v", 0 },
	{ "\\s", "\t", 1 },
	{ "[\\s]", "\v", 0 },
	{ "\\S", "\v", 1 },
	{ "[^\\S]", "\v", 0 },
	{ "[\\S]", "\v", 1 },
	{ "[[:space:]]", "\v", 1 },
	{ "\\v", "\v", 1 },
	{ "\\v", "\n", 0 },
	{ "\\123", "S", 1 },
	{ "\\101", "A", 1 },
	{ "\\12", "\n", 1 },
	{ "\\0101", "A", 0 },
	{ "\\01011", "\b11", 1 },
	{ "\\x41", "A", 1 },
	{ "\\x{e9}", "é", 1 },
	{ "\\x{1F642}", "🙂", 1 },
	{ "a{01}", "a{01}", 1 },
	{ "a{01}", "a", 0 },
	{ "a{,2}", "a{,2}", 1 },
	{ "a{2}", "aa", 1 },
	{ "x{2,}", "xxx", 1 },
	{ "x{2,3}?", "xx", 1 },
	{ "[[.a.]]", "a]", 1 },
	{ "[[.a.]]", "a", 0 },
	{ "[[=a=]]", "=]", 1 },
	{ "(?i)CAFÉ", "café", 1 },
	{ "(?i)k", "\xe2\x84\xaa", 1 },
	{ "(?i)ſ", "S", 1 },
	{ "\\pL+", "café", 1 },
	{ "\\p{Greek}+", "αβγ", 1 },
	{ "\\PL", "1", 1 },
	{ "\\p{^Greek}", "a", 1 },
	{ "[\\p{Lu}\\d]+", "A1", 1 },
	{ "(?i)\\p{Lu}", "a", 1 },
	{ "[\\d-z]+", "1-z", 1 },
	{ "[a-]+", "a-", 1 },
	{ "[-a]", "-", 1 },
	{ "(?P<n>a)b", "ab", 1 },
	{ "\\Q.*\\E", ".*", 1 },
	{ "\\Q.*\\E", "ab", 0 },
	{ "a.c", "a\rc", 1 },
	{ "\\bfoo\\b", "foo", 1 },
	{ "(?U)a+", "aaa", 1 },
	{ "[^a]", "\n", 1 },
	{ "\\.", ".", 1 },
	{ "a)|(b", "axx", 1 },
	{ "a)|(b", "xxb", 1 },
	{ "a)|(b", "xx", 0 },
	{ "[]a]", "]", 1 },
	{ "[^]a]", "b", 1 },
	{ "x*", "", 1 },
	{ "", "", 1 },
	{ "", "a", 0 },
	{ "\\w+", "é", 0 },
	{ "[[:alpha:]]+", "é", 0 },
	{ ".", "🙂", 1 },
	{ "[^x]", "🙂", 1 },
	{ "\\x{1F642}|b", "b", 1 },
	{ "\\ ", " ", 1 },
	{ "\\-", "-", 1 },
	{ "#", "#", 1 },
	{ "a b", "a b", 1 },
	{ "\\A\\z", "", 1 },
	{ "(?i)[k]", "\xe2\x84\xaa", 1 },
	{ "[a-c]+", "abc", 1 },
	{ "(?)a", "a", 1 },
	{ "(?i-s:A.)", "a\n", 0 },
	{ "(?i-s:A.)", "ab", 1 },
	{ "}", "}", 1 },
	{ "]", "]", 1 },
	{ "a{", "a{", 1 },
	{ "a{1", "a{1", 1 },
	{ "a{1,2", "a{1,2", 1 },
	{ "(?i)\\p{Ll}", "A", 1 },
	{ "(?i)\\P{Lu}", "a", 0 },
	{ "(?i)[\\p{Lu}]", "a", 1 },
	{ "(?i:\\p{Lu})b", "ab", 1 },
	{ "(?i:\\p{Lu})b", "aB", 0 },
	{ "\\p{Lu}", "a", 0 },
	{ "(?i)\\p{^Lu}", "a", 0 },
	{ "\\pN", "\xd9\xa3", 1 },
	{ "(?m:^a$)", "a", 1 },
	{ "((?m)a$)\\n", "a\n", 1 },
	{ "((?m)a)$", "a\n", 0 },
	{ "(?m)(?-m:a$)\\n", "a\n", 0 },
	{ "(a{2}|b{200}){5}", "aaaaaaaaaa", 1 },
	{ "(a{2}b{2}){100}", "aabb", 0 },
	{ "(a{2}){0}", "", 1 },
	{ "(a*){1000}", "aaa", 1 },
	{ "(a{0,}){1000}", "aaa", 1 },
	{ "(?:a{500}){2}", "a", 0 },
	{ "(a{2}){500}x{1000}", "a", 0 },
};

/* What RE2 refuses (Go's regexp.Compile fails; amtool_agrees checks each). */
static const char *const re2_refused[] = {
	"\\Qa.b",
	"(a)\\1",
	"(?=a)",
	"(?!a)",
	"(?<=a)b",
	"(?<!a)b",
	"(?>a)",
	"a*+",
	"a++",
	"a?+",
	"a{2}+",
	"a**",
	"a{2}{3}",
	"a*??",
	"(?R)",
	"(a)(?1)",
	"(?&n)",
	"(?(1)a|b)",
	"(?#c)",
	"(?|a)",
	"\\C",
	"\\Z",
	"\\G",
	"\\K",
	"\\R",
	"\\X",
	"\\h",
	"\\H",
	"\\e",
	"\\cA",
	"\\g1",
	"\\k<n>",
	"\\N",
	"\\o{101}",
	"\\u0041",
	"\\E",
	"(*UTF)a",
	"(?x)a",
	"(?J)a",
	"(?'n'a)",
	"(?C)a",
	"a{1001}",
	"a{2,1}",
	"\\8",
	"(?P=n)",
	"(?P>n)",
	"(?-)",
	"(?i-)",
	"\\p{greek}",
	"\\p{L&}",
	"\\p{Xan}",
	"[[:foo:]]",
	"[[:<:]]",
	"\\x{110000}",
	"\\xZ",
	"(",
	"[a",
	"x\\",
	"[\\b]",
	"[\\Q]",
	"\\é",
	"[z-a]",
	"*",
	"a|*",
	"(?^)a",
	"(?n)a",
	"\\pX",
	"\\p{Alphabetic}",
	"\\p{Foo}",
	"\\p{}",
	"\\p",
	"(a{1000}){2}",
	"((a{10}){10}){11}",
	"((a{0}){1000}){1000}",
	"(a{2})*{3}",
	"(a{1001}){0}",
};

static void re2_semantics(void **state)
{
	char many[1002];
	struct parsed p;

	(void)state;
	for (size_t i = 0; i < sizeof(re2_cases) / sizeof(re2_cases[0]); i++) {
		const struct re_case *c = &re2_cases[i];

		if (regex_matcher(c->re, &p))
			fail_msg("\"%s\" refused: %s", c->re, buf_str(&p.err));
		if (matcher_matches(&p.ms[0], c->subject) != c->match)
			fail_msg("\"%s\" on \"%s\": want %d", c->re, c->subject, c->match);
		assert_int_equal(p.ms[0].op, CFG_MATCH_RE);
		parsed_release(&p);
	}
	/* a{1000} is RE2's largest count */
	memset(many, 'a', 1000);
	many[1000] = 0;
	assert_int_equal(regex_matcher("a{1000}", &p), ERR_OK);
	assert_true(matcher_matches(&p.ms[0], many));
	many[999] = 0;
	assert_false(matcher_matches(&p.ms[0], many));
	parsed_release(&p);
	/* no backtracking: (a|aa)*b over 1000 a's answers at once, as RE2 does */
	assert_int_equal(regex_matcher("(a|aa)*b", &p), ERR_OK);
	memset(many, 'a', 1000);
	many[1000] = 0;
	assert_false(matcher_matches(&p.ms[0], many));
	parsed_release(&p);
	/* a byte that is no UTF-8 is U+FFFD to Go */
	assert_int_equal(regex_matcher("a.b", &p), ERR_OK);
	assert_true(matcher_matches(&p.ms[0], "a\xff" "b"));
	assert_false(matcher_matches(&p.ms[0], "a\xff\xff" "b"));
	parsed_release(&p);
	assert_int_equal(regex_matcher("a\\x{fffd}b", &p), ERR_OK);
	assert_true(matcher_matches(&p.ms[0], "a\xff" "b"));
	parsed_release(&p);
}

static void re2_refusals(void **state)
{
	static const struct {
		const char *re, *why;
	} named[] = {
		{ "(a)\\1", "back-references such as \\1 are not supported by RE2" },
		{ "(?=a)", "lookahead (?= is not supported by RE2" },
		{ "(?<!a)b", "negative lookbehind (?<! is not supported by RE2" },
		{ "(?>a)", "atomic group (?> is not supported by RE2" },
		{ "a*+", "invalid nested repetition operator" },
		{ "(?R)", "recursion or subroutine call" },
		{ "(?(1)a|b)", "conditional (?( is not supported by RE2" },
		{ "\\C", "\\C (any byte) is not supported by RE2" },
		{ "\\Z", "invalid escape sequence \\Z (not RE2 syntax)" },
		{ "(?x)a", "invalid or unsupported Perl syntax: \"(?x\"" },
		{ "a{1001}", "invalid repeat count" },
		{ "(", "invalid regex \"(\": " },
	};
	struct parsed p;

	(void)state;
	for (size_t i = 0; i < sizeof(re2_refused) / sizeof(re2_refused[0]); i++) {
		if (regex_matcher(re2_refused[i], &p) == ERR_OK)
			fail_msg("\"%s\" accepted: RE2 refuses it", re2_refused[i]);
		if (!strstr(buf_str(&p.err), "invalid regex \""))
			fail_msg("\"%s\": %s", re2_refused[i], buf_str(&p.err));
		parsed_release(&p);
	}
	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++) {
		assert_int_equal(regex_matcher(named[i].re, &p), ERR_INVALID);
		if (!strstr(buf_str(&p.err), named[i].why))
			fail_msg("\"%s\": got \"%s\", want \"%s\"", named[i].re, buf_str(&p.err),
				 named[i].why);
		parsed_release(&p);
	}
}

/* ---- issue 18 item 6: what the POSIX regcomp version got wrong ---- */

static void issue18_regexes(void **state)
{
	(void)state;
	/* \d is a digit (read by the classic grammar, as Alertmanager falls back to it), not a literal d */
	assert_true(m("x=~\"\\d+\"", "123"));
	assert_false(m("x=~\"\\d+\"", "ddd"));
	assert_true(m("x=~\"\\\\d+\"", "123"));  /* x=~"\\d+": the form both grammars read */
	assert_false(m("x=~\"\\\\d+\"", "ddd"));
	/* characters, not bytes */
	assert_true(m("x=~\"caf.\"", "café"));
	/* . is not a newline */
	assert_false(m("x=~\"a.b\"", "a\nb"));
	assert_true(m("x=~\"(?s)a.b\"", "a\nb"));
	/* fully anchored, also across an alternation */
	assert_false(m("severity=~\"crit\"", "critical"));
	assert_false(m("severity=~\"critical|page\"", "xpage"));
	assert_true(m("severity!~\"critical|page\"", "warning"));
	/* a missing label is "" */
	assert_true(m("team!=\"ml\"", NULL));
	assert_true(m("team=~\".*\"", NULL));
	assert_false(m("team=~\".+\"", NULL));
}

static void issue18_lists(void **state)
{
	struct parsed p;

	(void)state;
	/* one entry, two matchers: split at the comma, not one matcher with the value "ml,severity=page" */
	assert_int_equal(parse("team=ml,severity=page", MATCHER_FALLBACK, &p), ERR_OK);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.ms[0].value, "ml");
	assert_string_equal(p.ms[1].name, "severity");
	assert_string_equal(p.ms[1].value, "page");
	parsed_release(&p);
	assert_int_equal(parse("{team=\"ml\"}", MATCHER_FALLBACK, &p), ERR_OK);
	assert_int_equal(p.n, 1);
	assert_string_equal(p.ms[0].name, "team");
	assert_string_equal(p.ms[0].value, "ml");
	parsed_release(&p);
	assert_int_equal(parse("team=\"ml\", severity=\"page\"", MATCHER_FALLBACK, &p), ERR_OK);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.ms[1].value, "page");
	assert_int_equal(p.warning.len, 0);
	parsed_release(&p);
	/* a regex RE2 refuses is refused at load */
	assert_int_equal(parse("x=~\"(a)\\\\1\"", MATCHER_FALLBACK, &p), ERR_INVALID);
	assert_non_null(strstr(buf_str(&p.err), "back-references"));
	parsed_release(&p);
}

/* Alertmanager's default: classic first; a warning when the UTF-8 grammar refuses or disagrees. */
static void fallback_warns_as_alertmanager(void **state)
{
	struct parsed p;

	(void)state;
	/* the UTF-8 grammar refuses "\d" in a quoted string: classic, with a warning and its UTF-8 form */
	assert_int_equal(parse("x=~\"\\d+\"", MATCHER_FALLBACK, &p), ERR_OK);
	assert_string_equal(p.ms[0].value, "\\d+");
	assert_non_null(strstr(buf_str(&p.warning), "UTF-8 matchers grammar refuses this text"));
	assert_non_null(strstr(buf_str(&p.warning), "written for both: x=~\"\\\\d+\""));
	parsed_release(&p);
	/* both read it, differently: "\t" is a tab in Go's quotes, a backslash and t in the classic grammar */
	assert_int_equal(parse("x=\"a\\tb\"", MATCHER_FALLBACK, &p), ERR_OK);
	assert_string_equal(p.ms[0].value, "a\\tb");
	assert_non_null(strstr(buf_str(&p.warning), "read this text differently"));
	parsed_release(&p);
	/* only the UTF-8 grammar reads it: no warning */
	assert_int_equal(parse("\"team.name\"=\"x\"", MATCHER_FALLBACK, &p), ERR_OK);
	assert_string_equal(p.ms[0].name, "team.name");
	assert_int_equal(p.warning.len, 0);
	parsed_release(&p);
	/* neither: the classic error first, as Alertmanager returns it, then the UTF-8 one */
	assert_int_equal(parse("team", MATCHER_FALLBACK, &p), ERR_INVALID);
	assert_string_equal(buf_str(&p.err), "bad matcher format: team; UTF-8 grammar: end of input: "
			    "expected an operator such as '=', '!=', '=~' or '!~'");
	parsed_release(&p);
	/* strict modes do not fall back */
	assert_int_equal(parse("x=~\"\\d+\"", MATCHER_UTF8, &p), ERR_INVALID);
	assert_string_equal(buf_str(&p.err), "3:8: \"\\d+\": invalid input");
	parsed_release(&p);
	assert_int_equal(parse("\"team.name\"=\"x\"", MATCHER_CLASSIC, &p), ERR_INVALID);
	parsed_release(&p);
	/* not UTF-8 */
	assert_int_equal(parse("x=\xff", MATCHER_FALLBACK, &p), ERR_INVALID);
	assert_string_equal(buf_str(&p.err), "text is not valid UTF-8");
	parsed_release(&p);
}

/* ---- in a config file ---- */

static struct config *load(const char *dir, const char *yaml, struct buf *err)
{
	char path[512];
	struct config *cfg = NULL;

	snprintf(path, sizeof(path), "%s/alertbridge.yml", dir);
	tfx_write_file(NULL, path, yaml);
	if (cfg_load(path, &cfg, err))
		return NULL;
	return cfg;
}

static void config_matchers(void **state)
{
	char dir[256];
	struct buf err = BUF_INIT;
	struct config *cfg;
	const struct cfg_route *rt;

	(void)state;
	tfx_mkdtemp(dir, sizeof(dir), "test_matchers");
	cfg = load(dir, "receivers:\n"
		   "  - name: a\n"
		   "    repo: o/r\n"
		   "    routes:\n"
		   "      - matchers: ['team=ml,severity=page', '{instance=~\"node-\\d+\"}', '']\n"
		   "        repo: o/ml\n", &err);
	if (!cfg)
		fail_msg("%s", buf_str(&err));
	rt = &cfg->receivers[0].routes[0];
	assert_int_equal(rt->matchers_count, 3);
	assert_string_equal(rt->matchers[1].value, "page");
	assert_int_equal(rt->matchers[2].op, CFG_MATCH_RE);
	assert_true(matcher_matches(&rt->matchers[2], "node-12"));
	assert_false(matcher_matches(&rt->matchers[2], "node-d"));
	cfg_free(cfg);
	cfg = load(dir, "receivers:\n"
		   "  - name: a\n"
		   "    repo: o/r\n"
		   "    routes:\n"
		   "      - matchers:\n"
		   "          - team=x\n"
		   "          - 'x=~\"(?<=a)b\"'\n", &err);
	assert_null(cfg);
	assert_non_null(strstr(buf_str(&err), "alertbridge.yml:7: receivers[0].routes[0].matchers[1]: "
				"invalid regex \"(?<=a)b\": lookbehind (?<= is not supported by RE2"));
	tfx_remove_tree(dir);
	buf_release(&err);
}

/* ---- against the real thing ---- */

/* Run argv, its stdout into out; the exit status. */
static int run(char *const argv[], struct buf *out)
{
	int fd[2], status = -1;
	char chunk[4096];
	ssize_t got;
	pid_t pid;

	assert_int_equal(pipe(fd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fd[1], 1);
		close(fd[0]);
		close(fd[1]);
		if (!freopen("/dev/null", "w", stderr))
			_exit(127);
		execv(argv[0], argv);
		_exit(127);
	}
	close(fd[1]);
	while ((got = read(fd[0], chunk, sizeof(chunk))) > 0)
		(void)buf_add(out, chunk, (size_t)got);
	close(fd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* value as a quoted classic-grammar value: \ " and newline escaped. */
static void om_quote(struct buf *out, const char *value)
{
	struct cfg_matcher x = { .name = (char *)"x", .op = CFG_MATCH_EQ, .value = (char *)value };
	struct buf t = BUF_INIT;

	matcher_format(&x, &t);
	(void)buf_adds(out, buf_str(&t) + 2);  /* after x= */
	buf_release(&t);
}

/* amtool check-config's exit status for a config whose one route has x=~"re", written to cfg. */
static int amtool_check(const char *amtool, const char *cfg, const char *re)
{
	char *check[] = { (char *)amtool, (char *)"check-config", (char *)cfg, NULL };
	struct buf yml = BUF_INIT, out = BUF_INIT;
	int rc;

	(void)buf_adds(&yml, "route:\n  receiver: d\n  routes:\n    - receiver: d\n"
		       "      matchers: ['x=~");
	om_quote(&yml, re);
	(void)buf_adds(&yml, "']\nreceivers:\n  - name: d\n");
	tfx_write_file(NULL, cfg, buf_str(&yml));
	rc = run(check, &out);
	buf_release(&yml);
	buf_release(&out);
	return rc;
}

/*
 * The tables above are Go's answers: amtool (Alertmanager's own routing, Go's
 * regexp) routes one alert through one route per row, and check-config
 * refuses each of re2_refused.  The Debian amtool is 0.25 (classic grammar),
 * which is all a =~ "..." route needs.
 */
static void amtool_agrees(void **state)
{
	static const char amtool[] = "/usr/bin/amtool";
	size_t n = sizeof(re2_cases) / sizeof(re2_cases[0]);
	char dir[256], cfg[512], flag[600];
	char **argv = calloc(n + 6, sizeof(*argv));
	struct buf yml = BUF_INIT, out = BUF_INIT;

	(void)state;
	if (access(amtool, X_OK)) {
		free(argv);
		skip();
	}
	tfx_mkdtemp(dir, sizeof(dir), "test_matchers_am");
	snprintf(cfg, sizeof(cfg), "%s/am.yml", dir);
	snprintf(flag, sizeof(flag), "--config.file=%s", cfg);
	(void)buf_adds(&yml, "route:\n  receiver: none\n  routes:\n");
	for (size_t i = 0; i < n; i++) {
		struct buf label = BUF_INIT;

		(void)buf_printf(&yml, "    - receiver: r%zu\n      continue: true\n      matchers: ['l%zu=~",
				 i, i);
		om_quote(&yml, re2_cases[i].re);
		(void)buf_adds(&yml, "']\n");
		(void)buf_printf(&label, "l%zu=", i);
		om_quote(&label, re2_cases[i].subject);
		argv[5 + i] = buf_detach(&label);
	}
	(void)buf_adds(&yml, "receivers:\n  - name: none\n");
	for (size_t i = 0; i < n; i++)
		(void)buf_printf(&yml, "  - name: r%zu\n", i);
	tfx_write_file(NULL, cfg, buf_str(&yml));
	argv[0] = (char *)amtool;
	argv[1] = (char *)"config";
	argv[2] = (char *)"routes";
	argv[3] = (char *)"test";
	argv[4] = flag;
	if (run(argv, &out) != 0 || !out.len)
		fail_msg("amtool config routes test failed: \"%s\"", buf_str(&out));
	while (out.len && (out.data[out.len - 1] == '\n' || out.data[out.len - 1] == ' '))
		buf_truncate(&out, out.len - 1);
	buf_setf(&yml, ",%s,", buf_str(&out));  /* the receivers it went to: ",r0,r3," */
	for (size_t i = 0; i < n; i++) {
		char name[32];
		int hit;

		snprintf(name, sizeof(name), ",r%zu,", i);
		hit = strstr(buf_str(&yml), name) != NULL;
		if (hit != re2_cases[i].match)
			fail_msg("Go's regexp: \"%s\" on \"%s\" is %d (amtool said \"%s\")",
				 re2_cases[i].re, re2_cases[i].subject, hit, buf_str(&out));
		free(argv[5 + i]);
	}
	/* a regex Go takes passes, so that each refusal below is the regex's */
	if (amtool_check(amtool, cfg, "a(?i)b\\d") != 0)
		fail_msg("amtool check-config refuses a valid config");
	for (size_t i = 0; i < sizeof(re2_refused) / sizeof(re2_refused[0]); i++)
		if (amtool_check(amtool, cfg, re2_refused[i]) == 0)
			fail_msg("Go's regexp accepts \"%s\"", re2_refused[i]);
	free(argv);
	buf_release(&yml);
	buf_release(&out);
	tfx_remove_tree(dir);
}

UNIT_MAIN(
	cmocka_unit_test(am_classic_grammar),
	cmocka_unit_test(am_utf8_grammar),
	cmocka_unit_test(am_fallback),
	cmocka_unit_test(am_matching),
	cmocka_unit_test(am_format),
	cmocka_unit_test(format_empty_name_reads_back),
	cmocka_unit_test(re2_semantics),
	cmocka_unit_test(re2_refusals),
	cmocka_unit_test(issue18_regexes),
	cmocka_unit_test(issue18_lists),
	cmocka_unit_test(fallback_warns_as_alertmanager),
	cmocka_unit_test(config_matchers),
	cmocka_unit_test(amtool_agrees))
