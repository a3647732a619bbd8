/*
 * test_config_routes.c - the receivers' routes (matchers, what a route takes from its
 * receiver) and the alertmanager section (top level, inherited, overridden, dumped).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/config.h"
#include "core/log.h"
#include "tests/unit/helpers/config_fixture.h"

/* Routes: matchers parsed, what a route leaves out taken from its receiver, errors with lines. */
static void receiver_routes(void **state)
{
	struct config *cfg;
	const struct cfg_receiver *r;
	struct buf dump = BUF_INIT;

	(void)state;
	cfg = cfx_parse_ok("receivers:\n"
		       "  - name: a\n"
		       "    repo: \"{{labels.team}}/alerts\"\n"
		       "    labels: [alert]\n"
		       "    assignees: [oncall]\n"
		       "    templates: {title: t.mustache}\n"
		       "    routes:\n"
		       "      - matchers: ['severity=~\"critical|page\"', team!=ml]\n"
		       "        repo: acme/pager\n"
		       "        labels: [page]\n"
		       "      - matchers: []\n"
		       "        templates: {body: b.mustache}\n");
	r = &cfg->receivers[0];
	assert_string_equal(r->repo, "{{labels.team}}/alerts");
	assert_int_equal(r->routes_count, 2);
	assert_int_equal(r->routes[0].matchers_count, 2);
	assert_string_equal(r->routes[0].matchers[0].name, "severity");
	assert_int_equal(r->routes[0].matchers[0].op, CFG_MATCH_RE);
	assert_int_equal(r->routes[0].matchers[1].op, CFG_MATCH_NE);
	assert_string_equal(r->routes[0].matchers[1].value, "ml");
	assert_int_equal(r->routes[0].line, 8);
	assert_string_equal(r->routes[0].repo, "acme/pager");
	assert_string_equal(r->routes[0].labels.items[0], "page");
	assert_int_equal(r->routes[0].labels.count, 1);
	assert_string_equal(r->routes[0].assignees.items[0], "oncall");  /* from the receiver */
	assert_string_equal(r->routes[0].templates.title, "t.mustache");
	assert_null(r->routes[0].templates.body);
	assert_string_equal(r->routes[1].repo, "{{labels.team}}/alerts");
	assert_string_equal(r->routes[1].labels.items[0], "alert");
	assert_string_equal(r->routes[1].templates.body, "b.mustache");
	cfg_dump(cfg, &dump);
	assert_non_null(strstr(buf_str(&dump), "- matchers: [\"severity=~\\\"critical|page\\\"\", "
					       "\"team!=\\\"ml\\\"\"]"));
	cfg_free(cfg);
	/* The dump reads back. */
	cfg = cfx_parse_ok(buf_str(&dump));
	assert_int_equal(cfg->receivers[0].routes[0].matchers_count, 2);
	cfg_free(cfg);
	buf_release(&dump);

	cfx_expect_err("receivers:\n"
		   "  - name: a\n"
		   "    repo: o/r\n"
		   "    routes:\n"
		   "      - matchers:\n"
		   "          - team=x\n"
		   "          - 'severity=~\"(crit\"'\n",
		   "alertbridge.yml:7: receivers[0].routes[0].matchers[1]: invalid regex \"(crit\": "
		   "missing closing parenthesis");
	cfx_expect_err("receivers:\n"
		   "  - name: a\n"
		   "    repo: o/r\n"
		   "    routes: [{matchers: [=x]}]\n",
		   "alertbridge.yml:4: receivers[0].routes[0].matchers[0]: bad matcher format: =x; "
		   "UTF-8 grammar: 0:1: unexpected =: expected label name");
	cfx_expect_err("receivers:\n"
		   "  - name: a\n"
		   "    repo: o/r\n"
		   "    routes: [{matchers: [a=b], repo: \"{{#labels}}/x\"}]\n",
		   "alertbridge.yml:4: receivers[0].routes[0].repo: invalid template "
		   "\"{{#labels}}/x\": line 1 col 1: tag \"{{#labels}}\": section never closed (no "
		   "\"/labels\" tag follows)");
	cfx_expect_err("receivers: [{name: a, repo: o/r, routes: [{matchers: [a=b], repo: x}]}]\n",
		   "alertbridge.yml:1: receivers[0].routes[0].repo: expected \"owner/name\" or a "
		   "template, got \"x\"");
	cfx_expect_err("receivers: [{name: a, repo: o/r, routes: [{matcher: [a=b]}]}]\n",
		   "alertbridge.yml:1: receivers[0].routes[0].matcher: unknown key");
}

/* alertmanager (silences from GitHub issues): top level, inherited, overridden, checked. */
static void alertmanager_section(void **state)
{
	struct config *cfg;
	char want[512];

	(void)state;
	cfg = cfx_parse_in("alertmanager: {url: \"http://am:9093/\", bearer_token_file: token}\n"
		       "github: {webhook_secret_file: token-bare}\n"
		       "receivers:\n"
		       "  - {name: a, repo: o/r}\n"
		       "  - {name: b, repo: o/r, alertmanager: {url: \"https://am2\", max_silence: 1d}}\n",
		       cfx_dir());
	assert_string_equal(cfg->alertmanager.url, "http://am:9093");  /* trailing '/' dropped */
	assert_string_equal(cfg->alertmanager.bearer_token, "s3cret-token");
	assert_int_equal(cfg->alertmanager.timeout_ms, 10000);
	assert_int_equal(cfg->alertmanager.max_silence_ms, 7 * 86400000LL);
	assert_string_equal(cfg->github.webhook_secret, "bare-token");
	assert_string_equal(cfg->receivers[0].alertmanager.url, "http://am:9093");
	assert_string_equal(cfg->receivers[0].alertmanager.bearer_token, "s3cret-token");
	assert_string_equal(cfg->receivers[1].alertmanager.url, "https://am2");
	assert_null(cfg->receivers[1].alertmanager.bearer_token);
	assert_int_equal(cfg->receivers[1].alertmanager.max_silence_ms, 86400000LL);
	assert_int_equal(cfg->receivers[1].alertmanager.timeout_ms, 10000);
	cfg_free(cfg);
	cfg = cfx_parse_ok(RCV);
	assert_null(cfg->alertmanager.url);
	assert_null(cfg->receivers[0].alertmanager.url);
	assert_null(cfg->github.webhook_secret);
	cfg_free(cfg);
	cfx_expect_err(RCV "alertmanager: {url: \"am:9093\"}\n",
		   "alertbridge.yml:2: alertmanager.url: expected an http:// or https:// URL, got "
		   "\"am:9093\"");
	cfx_expect_err_in(RCV "alertmanager: {url: \"http://am\", bearer_token_file: token, "
			  "basic_auth: {username: u, password_file: token}}\n", cfx_dir(), ERR_INVALID,
		      "alertbridge.yml:2: alertmanager.basic_auth: cannot be used together with "
		      "bearer_token_file");
	cfx_expect_err("receivers: [{name: a, repo: o/r, alertmanager: {timeout: 0s}}]\n",
		   "alertbridge.yml:1: receivers[0].alertmanager.timeout: must be greater than 0s");
	cfx_fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: github.webhook_secret_file: cannot read \"%s/missing\": No "
		 "such file or directory",
		 cfx_dir());
	cfx_expect_err_in(RCV "github: {webhook_secret_file: missing}\n", cfx_dir(), ERR_IO, want);
}

/* Each receiver's effective alertmanager block is in the dump, which reads back the same. */
static void alertmanager_dump(void **state)
{
	struct config *cfg, *again;
	struct buf out = BUF_INIT;

	(void)state;
	cfg = cfx_parse_in("alertmanager: {url: \"http://am:9093\", bearer_token_file: token}\n"
		       "receivers:\n"
		       "  - {name: a, repo: o/r}\n"
		       "  - {name: b, repo: o/r, alertmanager: {url: \"https://am2\", max_silence: 1d}}\n",
		       cfx_dir());
	cfg_dump(cfg, &out);
	cfx_text_has(buf_str(&out), (const char *const[]){
			     "- name: \"b\"\n", "  alertmanager:\n    url: \"https://am2\"\n"
			     "    timeout: 10s\n    max_silence: 1d\n", NULL },
		     (const char *const[]){ "s3cret-token", NULL });
	assert_non_null(strstr(strstr(buf_str(&out), "- name: \"a\"\n"),
			       "  alertmanager:\n    url: \"http://am:9093\"\n"
			       "    bearer_token_file: "));
	again = cfx_parse_ok(buf_str(&out));
	assert_string_equal(again->receivers[1].alertmanager.url, "https://am2");
	assert_int_equal(again->receivers[1].alertmanager.max_silence_ms, 86400000LL);
	assert_null(again->receivers[1].alertmanager.bearer_token);
	assert_string_equal(again->receivers[0].alertmanager.bearer_token, "s3cret-token");
	cfg_free(again);
	cfg_free(cfg);
	buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(receiver_routes),
		cmocka_unit_test(alertmanager_section),
		cmocka_unit_test(alertmanager_dump),
	};
	return cmocka_run_group_tests(tests, cfx_setup, cfx_teardown);
}
