/*
 * test_config_secrets.c - the configuration's secret files (read, stripped, each error),
 * GITHUB_TOKEN, the GitHub App key and per-owner credentials, relative paths and
 * cfg_load().
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

static void secrets_read_and_stripped(void **state)
{
	struct config *cfg;
	(void)state;
	cfg = cfx_parse_in(RCV "webhook: {bearer_token_file: token}\ngithub: {token_file: token-crlf}\n"
			   "janitor: {slack: {bot_token_file: token-bare}}\n",
		       cfx_dir());
	assert_string_equal(cfg->webhook.bearer_token, "s3cret-token");
	assert_string_equal(cfg->github.token, "crlf-token");
	assert_string_equal(cfg->janitor.slack.bot_token, "bare-token");
	cfg_free(cfg);
}

static void secret_file_errors(void **state)
{
	char want[512];
	(void)state;
	cfx_fmt_into(want, sizeof(want),
		 "alertbridge.yml:3: github.token_file: cannot read \"%s/missing\": No such file "
		 "or directory",
		 cfx_dir());
	cfx_expect_err_in(RCV "github:\n  token_file: missing\n", cfx_dir(), ERR_IO, want);
	cfx_expect_err_in(RCV "webhook:\n  bearer_token_file: /nonexistent/alertbridge/token\n", NULL,
		      ERR_IO,
		      "alertbridge.yml:3: webhook.bearer_token_file: cannot read "
		      "\"/nonexistent/alertbridge/token\": No such file or directory");
	cfx_fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: webhook.bearer_token_file: \"%s/empty\" is empty", cfx_dir());
	cfx_expect_err_in(RCV "webhook: {bearer_token_file: empty}\n", cfx_dir(), ERR_INVALID, want);
	cfx_fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: janitor.slack.webhook_url_file: \"%s/multi\" must hold one "
		 "line (a newline or NUL byte inside)",
		 cfx_dir());
	cfx_expect_err_in(RCV "janitor: {slack: {webhook_url_file: multi}}\n", cfx_dir(), ERR_INVALID,
		      want);
	cfx_fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: github.token_file: \"%s/token-2nl\" must hold one line (a "
		 "newline or NUL byte inside)",
		 cfx_dir());
	cfx_expect_err_in(RCV "github: {token_file: token-2nl}\n", cfx_dir(), ERR_INVALID, want);
	cfx_fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: webhook.basic_auth.password_file: cannot read \"%s/.\": Is a "
		 "directory",
		 cfx_dir());
	cfx_expect_err_in(RCV "webhook: {basic_auth: {username: u, password_file: .}}\n", cfx_dir(),
		      ERR_IO, want);
}

static void github_token_env_fallback(void **state)
{
	struct config *cfg;
	(void)state;
	setenv("GITHUB_TOKEN", "env-token", 1);
	cfg = cfx_parse_ok(RCV);
	assert_string_equal(cfg->github.token, "env-token");
	assert_int_equal(cfg->github.token_from_env, 1);
	cfg_free(cfg);

	cfg = cfx_parse_in(RCV "github: {token_file: token}\n", cfx_dir());
	assert_string_equal(cfg->github.token, "s3cret-token");
	assert_int_equal(cfg->github.token_from_env, 0);
	cfg_free(cfg);

	cfg = cfx_parse_in(RCV "github: {app: {app_id: 1, installation_id: 2, private_key_file: k.pem}}\n",
		       cfx_dir());
	assert_null(cfg->github.token);
	assert_int_equal(cfg->github.token_from_env, 0);
	cfg_free(cfg);

	setenv("GITHUB_TOKEN", "", 1);
	cfg = cfx_parse_ok(RCV);
	assert_null(cfg->github.token);
	cfg_free(cfg);
	unsetenv("GITHUB_TOKEN");
	cfg = cfx_parse_ok(RCV);
	assert_null(cfg->github.token);
	cfg_free(cfg);
}

/* github.app: the key is read and must be an RSA private key; installation_id optional. */
static void github_app_key_checked(void **state)
{
	struct config *cfg;
	char want[512];
	(void)state;

	cfg = cfx_parse_in(RCV "github:\n  app: {app_id: 7, private_key_file: k.pem}\n", cfx_dir());
	assert_int_equal(cfg->github.app.app_id, 7);
	assert_int_equal(cfg->github.app.installation_id, 0);
	cfx_fmt_into(want, sizeof(want), "%s/k.pem", cfx_dir());
	assert_string_equal(cfg->github.app.private_key_file, want);
	assert_non_null(strstr(cfg->github.app.private_key, "-----BEGIN RSA PRIVATE KEY-----"));
	cfg_free(cfg);
	cfg = cfx_parse_in(RCV "github:\n  app: {app_id: 7, private_key_file: k8.pem}\n", cfx_dir());
	assert_non_null(strstr(cfg->github.app.private_key, "-----BEGIN PRIVATE KEY-----"));
	cfg_free(cfg);

	cfx_expect_err_has(RCV "github:\n  app:\n    app_id: 7\n    private_key_file: ec.pem\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:5: github.app.private_key_file: \"",
			       "/ec.pem\" is a EC", "key, not an RSA private key", NULL });
	cfx_expect_err_has(RCV "github:\n  app:\n    app_id: 7\n    private_key_file: token\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:5: github.app.private_key_file: \"",
			       "/token\" is not a PEM private key (PKCS#1 or PKCS#8", NULL });
	cfx_expect_err_has(RCV "github:\n  app:\n    app_id: 7\n    private_key_file: nope.pem\n",
		       ERR_IO, (const char *const[]){
			       "alertbridge.yml:5: github.app.private_key_file: cannot read \"",
			       "/nope.pem\": No such file or directory", NULL });
}

/* github.credentials: owners unique ignoring case, each with token_file or app. */
static void github_credentials(void **state)
{
	struct config *cfg;
	struct buf dump = BUF_INIT;
	(void)state;

	cfg = cfx_parse_in(RCV "github:\n  token_file: token\n  credentials:\n"
			   "    - {owner: Acme, token_file: token-bare}\n"
			   "    - owner: ml-team\n      app: {app_id: 9, installation_id: 3, "
			   "private_key_file: k.pem}\n",
		       cfx_dir());
	assert_int_equal(cfg->github.credentials_count, 2);
	assert_string_equal(cfg->github.credentials[0].owner, "Acme");
	assert_string_equal(cfg->github.credentials[0].token, "bare-token");
	assert_int_equal(cfg->github.credentials[0].app.app_id, 0);
	assert_string_equal(cfg->github.credentials[1].owner, "ml-team");
	assert_null(cfg->github.credentials[1].token);
	assert_int_equal(cfg->github.credentials[1].app.app_id, 9);
	assert_non_null(cfg->github.credentials[1].app.private_key);
	cfg_dump(cfg, &dump);
	cfx_text_has(buf_str(&dump), (const char *const[]){
			     "  credentials:\n  - owner: \"Acme\"\n", "    # token: <secret>\n",
			     "      app_id: 9\n      installation_id: 3\n", NULL },
		     (const char *const[]){ "bare-token", "PRIVATE KEY", NULL });
	cfg_free(cfg);
	buf_release(&dump);

	cfx_expect_err_has(RCV "github:\n  credentials:\n    - {owner: acme, token_file: token}\n"
			   "    - {owner: ACME, token_file: token}\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:5: github.credentials[1].owner: duplicate owner "
			       "\"ACME\" (also at line 4)", NULL });
	cfx_expect_err_has(RCV "github:\n  credentials:\n    - {owner: acme}\n", ERR_INVALID,
		       (const char *const[]){
			       "alertbridge.yml:4: github.credentials[0]: needs token_file or app",
			       NULL });
	cfx_expect_err_has(RCV "github:\n  credentials:\n    - owner: acme\n      token_file: token\n"
			   "      app: {app_id: 1, private_key_file: k.pem}\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:6: github.credentials[0].app: cannot be used "
			       "together with token_file", NULL });
	cfx_expect_err_has(RCV "github:\n  credentials:\n    - {token_file: token}\n", ERR_INVALID,
		       (const char *const[]){ "github.credentials[0]: missing required key "
					      "\"owner\"", NULL });
	cfx_expect_err_has(RCV "github:\n  credentials:\n    - owner: acme\n"
			   "      app: {app_id: 1, private_key_file: ec.pem}\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:5: github.credentials[0].app.private_key_file:",
			       "not an RSA private key", NULL });
}

static void relative_paths_resolved(void **state)
{
	struct config *cfg;
	const char *yaml = "database: data/ab.db\n"
			   "receivers:\n  - name: a\n    repo: o/r\n"
			   "    templates: {title: t/title.mustache, body: /abs/body.mustache}\n"
			   "janitor: {kubernetes: {kubeconfig: kube.yaml}}\n";
	(void)state;
	cfg = cfx_parse_in(yaml, "/etc/alertbridge");
	assert_string_equal(cfg->database, "data/ab.db"); /* working directory, not resolved */
	assert_string_equal(cfg->receivers[0].templates.title, "/etc/alertbridge/t/title.mustache");
	assert_string_equal(cfg->receivers[0].templates.body, "/abs/body.mustache");
	assert_string_equal(cfg->janitor.kubernetes.kubeconfig, "/etc/alertbridge/kube.yaml");
	assert_string_equal(cfg->base_dir, "/etc/alertbridge");
	cfg_free(cfg);

	cfg = cfx_parse_in(yaml, "/etc/alertbridge/");
	assert_string_equal(cfg->janitor.kubernetes.kubeconfig, "/etc/alertbridge/kube.yaml");
	cfg_free(cfg);

	cfg = cfx_parse_in(yaml, NULL);
	assert_string_equal(cfg->receivers[0].templates.title, "t/title.mustache");
	cfg_free(cfg);
	cfg = cfx_parse_in(yaml, ".");
	assert_string_equal(cfg->receivers[0].templates.title, "t/title.mustache");
	cfg_free(cfg);
}

static void load_resolves_against_file_dir(void **state)
{
	char path[256], want[512];
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	(void)state;

	cfx_write_file("alertbridge.yml", RCV "github: {token_file: token}\n"
					  "janitor: {kubernetes: {kubeconfig: kc}}\n");
	cfx_fmt_into(path, sizeof(path), "%s/alertbridge.yml", cfx_dir());
	if (cfg_load(path, &cfg, &msg) != ERR_OK)
		fail_msg("%s", buf_str(&msg));
	assert_string_equal(cfg->github.token, "s3cret-token");
	cfx_fmt_into(want, sizeof(want), "%s/kc", cfx_dir());
	assert_string_equal(cfg->janitor.kubernetes.kubeconfig, want);
	assert_string_equal(cfg->path, path);
	cfg_free(cfg);

	/* Errors name the path as given. */
	cfx_write_file("alertbridge.yml", RCV "bogus: 1\n");
	assert_int_equal(cfg_load(path, &cfg, &msg), ERR_INVALID);
	cfx_fmt_into(want, sizeof(want), "%s:2: bogus: unknown key", path);
	assert_string_equal(buf_str(&msg), want);
	buf_release(&msg);
}

static void load_missing_file(void **state)
{
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	(void)state;
	assert_int_equal(cfg_load("/nonexistent/alertbridge.yml", &cfg, &msg), ERR_IO);
	assert_string_equal(buf_str(&msg),
			    "/nonexistent/alertbridge.yml: cannot read: No such file or directory");
	assert_null(cfg);
	assert_int_equal(cfg_load("/nonexistent/x.yml", &cfg, NULL), ERR_IO);
	buf_release(&msg);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(secrets_read_and_stripped),
		cmocka_unit_test(secret_file_errors),
		cmocka_unit_test(github_token_env_fallback),
		cmocka_unit_test(relative_paths_resolved),
		cmocka_unit_test(load_resolves_against_file_dir),
		cmocka_unit_test(load_missing_file),
		cmocka_unit_test(github_app_key_checked),
		cmocka_unit_test(github_credentials),
	};
	return cmocka_run_group_tests(tests, cfx_setup, cfx_teardown);
}
