/*
 * test_matchers.c - Alertmanager-style matchers: the syntax (quoted and
 * unquoted values, spaces, escapes, quoted names), the four operators, the
 * missing label as "", fully anchored regexes, and the errors.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/matchers.h"

/* Parse text (must succeed), match value, release. */
static int m(const char *text, const char *value)
{
	struct cfg_matcher x;
	struct buf err = BUF_INIT;
	int r;

	assert_int_equal(matcher_parse(text, &x, &err), ERR_OK);
	r = matcher_matches(&x, value);
	matcher_release(&x);
	buf_release(&err);
	return r;
}

static void parse_err(const char *text, const char *want)
{
	struct cfg_matcher x;
	struct buf err = BUF_INIT;

	assert_int_equal(matcher_parse(text, &x, &err), ERR_INVALID);
	if (!strstr(buf_str(&err), want))
		fail_msg("%s: got \"%s\", want \"%s\"", text, buf_str(&err), want);
	assert_null(x.name);
	buf_release(&err);
}

static void syntax_forms(void **state)
{
	struct cfg_matcher x;
	struct buf err = BUF_INIT, out = BUF_INIT;

	(void)state;
	assert_int_equal(matcher_parse("  severity =~ \"critical|page\" ", &x, &err), ERR_OK);
	assert_string_equal(x.name, "severity");
	assert_int_equal(x.op, CFG_MATCH_RE);
	assert_string_equal(x.value, "critical|page");
	matcher_format(&x, &out);
	assert_string_equal(buf_str(&out), "severity=~\"critical|page\"");
	matcher_release(&x);
	assert_int_equal(matcher_parse("alertname=Disk Full ", &x, &err), ERR_OK);
	assert_int_equal(x.op, CFG_MATCH_EQ);
	assert_string_equal(x.value, "Disk Full");  /* unquoted: the rest, trimmed */
	matcher_release(&x);
	assert_int_equal(matcher_parse("\"team.name\"!=\"a\\\"b\\\\c\\n\"", &x, &err), ERR_OK);
	assert_string_equal(x.name, "team.name");
	assert_int_equal(x.op, CFG_MATCH_NE);
	assert_string_equal(x.value, "a\"b\\c\n");
	buf_reset(&out);
	matcher_format(&x, &out);
	assert_string_equal(buf_str(&out), "team.name!=\"a\\\"b\\\\c\\n\"");
	matcher_release(&x);
	assert_int_equal(matcher_parse("team!~", &x, &err), ERR_OK);
	assert_int_equal(x.op, CFG_MATCH_NRE);
	assert_string_equal(x.value, "");
	matcher_release(&x);
	matcher_release(NULL);
	buf_release(&err);
	buf_release(&out);
}

static void operators_and_missing_labels(void **state)
{
	(void)state;
	assert_true(m("team=\"ml\"", "ml"));
	assert_false(m("team=\"ml\"", "mlops"));
	assert_true(m("team!=\"ml\"", "infra"));
	assert_true(m("team!=\"ml\"", NULL));   /* a missing label is "" */
	assert_false(m("team!=\"ml\"", "ml"));
	assert_true(m("team=\"\"", NULL));
	assert_false(m("team=\"\"", "x"));
	assert_true(m("severity=~\"critical|page\"", "page"));
	assert_false(m("severity=~\"critical|page\"", "warning"));
	assert_true(m("severity!~\"critical|page\"", "warning"));
	assert_true(m("severity!~\"critical|page\"", NULL));
	assert_true(m("team=~\"\"", NULL));
	assert_true(m("team=~\".*\"", NULL));
	assert_false(m("team=~\".+\"", NULL));
}

/* Fully anchored as Alertmanager does: ^(?:value)$, also across an alternation. */
static void regexes_are_fully_anchored(void **state)
{
	(void)state;
	assert_false(m("severity=~\"crit\"", "critical"));
	assert_false(m("severity=~\"critical|page\"", "xpage"));
	assert_false(m("severity=~\"critical|page\"", "criticalx"));
	assert_true(m("instance=~\"node-[0-9]+\"", "node-12"));
	assert_false(m("instance=~\"node-[0-9]+\"", "node-12a"));
	assert_true(m("instance!~\"node-[0-9]+\"", "node-12a"));
}

static void errors_say_why(void **state)
{
	(void)state;
	parse_err("", "expected a label name");
	parse_err("=x", "expected a label name at \"=x\"");
	parse_err("9team=x", "expected a label name");
	parse_err("team", "expected one of = != =~ !~ after \"team\"");
	parse_err("team=\"x", "unterminated quoted string");
	parse_err("team=\"x\" y", "unexpected \"y\" after the quoted value");
	parse_err("team=\"\\q\"", "invalid escape");
	parse_err("team=a\"b", "unquoted value cannot contain");
	parse_err("team=~\"(\"", "invalid regex \"(\"");
	parse_err("team!~\"[a\"", "invalid regex");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(syntax_forms),
		cmocka_unit_test(operators_and_missing_labels),
		cmocka_unit_test(regexes_are_fully_anchored),
		cmocka_unit_test(errors_say_why),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
