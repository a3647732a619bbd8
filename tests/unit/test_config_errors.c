/*
 * test_config_errors.c - every error class of the YAML configuration with its exact
 * message (file, line, key): syntax, unknown keys, types, ranges, enums, required keys,
 * duplicates, durations, value formats, keys that exclude each other.
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

static void yaml_syntax_errors(void **state)
{
	(void)state;
	cfx_expect_err("a: b: c\n", "alertbridge.yml:1: yaml: mapping values are not allowed in this "
				"context");
	cfx_expect_err("receivers:\n  - name: x\n repo: y\n",
		   "alertbridge.yml:3: yaml: did not find expected key while parsing a block "
		   "mapping (line 1)");
	cfx_expect_err("listen_address: \"unterminated\n",
		   "alertbridge.yml:2: yaml: found unexpected end of stream while scanning a "
		   "quoted scalar (line 1)");
	cfx_expect_err("- a\n- b\n",
		   "alertbridge.yml:1: expected a mapping at the top level, got a list");
}

static void unknown_keys(void **state)
{
	(void)state;
	cfx_expect_err(RCV "listen: x\n", "alertbridge.yml:2: listen: unknown key");
	cfx_expect_err(RCV "webhook:\n  max_body_byte: 1\n",
		   "alertbridge.yml:3: webhook.max_body_byte: unknown key");
	cfx_expect_err("receivers:\n  - name: a\n    repo: o/r\n    title: x\n",
		   "alertbridge.yml:4: receivers[0].title: unknown key");
	cfx_expect_err(RCV "janitor:\n  slack: {token_file: x}\n",
		   "alertbridge.yml:3: janitor.slack.token_file: unknown key");
	cfx_expect_err(RCV "github:\n  timeout: 1s\n  timeout: 2s\n",
		   "alertbridge.yml:4: github.timeout: duplicate key");
}

static void wrong_types(void **state)
{
	(void)state;
	cfx_expect_err(RCV "webhook:\n  max_body_bytes: lots\n",
		   "alertbridge.yml:3: webhook.max_body_bytes: expected an integer from 1 to "
		   "1073741824, got \"lots\"");
	cfx_expect_err(RCV "webhook:\n  threads: -1\n",
		   "alertbridge.yml:3: webhook.threads: expected an integer from 1 to 1024, got "
		   "\"-1\"");
	cfx_expect_err(RCV "webhook: [a]\n",
		   "alertbridge.yml:2: webhook: expected a mapping, got a list");
	cfx_expect_err(RCV "database: {a: b}\n",
		   "alertbridge.yml:2: database: expected a string, got a mapping");
	cfx_expect_err(RCV "github: {dry_run: maybe}\n",
		   "alertbridge.yml:2: github.dry_run: expected a boolean (true or false), got "
		   "\"maybe\"");
	cfx_expect_err("receivers:\n  - {name: a, repo: o/r, labels: alert}\n",
		   "alertbridge.yml:2: receivers[0].labels: expected a list of strings, got "
		   "\"alert\"");
	cfx_expect_err("receivers:\n  - {name: a, repo: o/r, labels: [a, [b]]}\n",
		   "alertbridge.yml:2: receivers[0].labels[1]: expected a string, got a list");
	cfx_expect_err("receivers:\n  - {name: a, repo: o/r, assignees: [a, ~]}\n",
		   "alertbridge.yml:2: receivers[0].assignees[1]: expected a string, got null");
	cfx_expect_err("receivers: {name: a}\n",
		   "alertbridge.yml:1: receivers: expected a list of receivers, got a mapping");
	cfx_expect_err(RCV "janitor: {policies: JanitorIdleGPUPod}\n",
		   "alertbridge.yml:2: janitor.policies: expected a list of policies, got "
		   "\"JanitorIdleGPUPod\"");
	cfx_expect_err(RCV "github: {app: {app_id: 0, installation_id: 1, private_key_file: k}}\n",
		   "alertbridge.yml:2: github.app.app_id: expected a positive integer, got \"0\"");
	cfx_expect_err(RCV "listen_address: \"a\\0b\"\n",
		   "alertbridge.yml:2: listen_address: contains a NUL byte");
}

static int64_t per_minute(const struct config *c)
{
	return c->github.content_per_minute;
}

static int64_t per_hour(const struct config *c)
{
	return c->github.content_per_hour;
}

static int64_t retention(const struct config *c)
{
	return c->database_retention_ms;
}

/* A number's range: yaml fails with err, or (err NULL) parses and get() of it is want. */
static const struct range_case {
	const char *yaml;
	const char *err;
	int64_t (*get)(const struct config *c);
	int64_t want;
} range_cases[] = {
	{ RCV "github: {content_per_minute: 81}\n",
	  "alertbridge.yml:2: github.content_per_minute: "
	  "expected an integer from 1 to 80, got \"81\"", NULL, 0 },
	{ RCV "github: {content_per_minute: 0}\n",
	  "alertbridge.yml:2: github.content_per_minute: "
	  "expected an integer from 1 to 80, got \"0\"", NULL, 0 },
	{ RCV "webhook: {max_connections: 99999999999999999999999}\n",
	  "alertbridge.yml:2: webhook.max_connections: expected an integer from 1 to "
	  "65536, got \"99999999999999999999999\"", NULL, 0 },
	{ RCV "github: {content_per_minute: 1}\n", NULL, per_minute, 1 },
	{ RCV "github: {content_per_minute: \"80\"}\n", NULL, per_minute, 80 },
	{ RCV "database_retention: 0s\n",
	  "alertbridge.yml:2: database_retention: must be greater than 0s", NULL, 0 },
	{ RCV "database_retention: 7days\n", "alertbridge.yml:2: database_retention: "
	  "unknown unit \"days\" in duration \"7days\"", NULL, 0 },
	{ RCV "database_retention: 2s\n", NULL, retention, 2 * S },
	{ RCV "github: {content_per_hour: 501}\n",
	  "alertbridge.yml:2: github.content_per_hour: "
	  "expected an integer from 1 to 500, got \"501\"", NULL, 0 },
	{ RCV "github:\n  content_per_hour: 0\n",
	  "alertbridge.yml:3: github.content_per_hour: "
	  "expected an integer from 1 to 500, got \"0\"", NULL, 0 },
	{ RCV "github: {content_per_hour: 60}\n", NULL, per_hour, 60 },
};

static void range_limits(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(range_cases) / sizeof(range_cases[0]); i++) {
		const struct range_case *c = &range_cases[i];
		struct config *cfg;

		if (c->err) {
			cfx_expect_err(c->yaml, c->err);
			continue;
		}
		cfg = cfx_parse_ok(c->yaml);
		if (c->get(cfg) != c->want)
			fail_msg("range case %zu (%s): %lld, want %lld", i, c->yaml,
				 (long long)c->get(cfg), (long long)c->want);
		cfg_free(cfg);
	}
}

static void enum_values(void **state)
{
	(void)state;
	cfx_expect_err("receivers:\n  - name: a\n    repo: o/r\n    issue_per: foo\n",
		   "alertbridge.yml:4: receivers[0].issue_per: "
		   "expected \"alert\" or \"group\", got \"foo\"");
	cfx_expect_err("janitor:\n  enabled: true\n  policies:\n"
		   "    - alertname: A\n      owned: kill\n",
		   "alertbridge.yml:5: janitor.policies[0].owned: expected \"scale-to-zero\", "
		   "\"delete-owner\" or \"notify-only\", got \"kill\"");
	cfx_expect_err(RCV "log: {level: verbose}\n",
		   "alertbridge.yml:2: log.level: expected debug, info, warn or error, got "
		   "\"verbose\"");
	cfx_expect_err(RCV "log: {format: text}\n",
		   "alertbridge.yml:2: log.format: expected logfmt or json, got \"text\"");
}

static void missing_required_keys(void **state)
{
	(void)state;
	cfx_expect_err("receivers:\n  - repo: o/r\n",
		   "alertbridge.yml:2: receivers[0]: missing required key \"name\"");
	cfx_expect_err("receivers:\n  - name: a\n    repo: o/r\n  - name: b\n",
		   "alertbridge.yml:4: receivers[1]: missing required key \"repo\"");
	cfx_expect_err("receivers:\n  - name: \"\"\n    repo: o/r\n",
		   "alertbridge.yml:2: receivers[0].name: must not be empty");
	cfx_expect_err("receivers:\n  -\n", "alertbridge.yml:2: receivers[0]: missing required key "
					"\"name\"");
	cfx_expect_err("janitor:\n  enabled: true\n  policies:\n    - grace: 1h\n",
		   "alertbridge.yml:4: janitor.policies[0]: missing required key \"alertname\"");
	cfx_expect_err(RCV "github:\n  app:\n    app_id: 1\n    installation_id: 2\n",
		   "alertbridge.yml:4: github.app: missing required key \"private_key_file\"");
	cfx_expect_err(RCV "webhook:\n  basic_auth: {username: am}\n",
		   "alertbridge.yml:3: webhook.basic_auth: missing required key \"password_file\"");
	cfx_expect_err(RCV "webhook:\n  tls: {cert_file: c.pem}\n",
		   "alertbridge.yml:3: webhook.tls: missing required key \"key_file\"");
	cfx_expect_err(RCV "janitor:\n  leader_election: {namespace: \"\"}\n",
		   "alertbridge.yml:3: janitor.leader_election.namespace: must not be empty");
	cfx_expect_err(RCV "leader_election: {lease_name: \"\"}\n",
		   "alertbridge.yml:2: leader_election.lease_name: must not be empty");
}

static void receivers_required_unless_janitor(void **state)
{
	struct config *cfg;
	(void)state;
	cfx_expect_err("", "alertbridge.yml:1: receivers: at least one receiver is required unless "
		       "the janitor is enabled");
	cfx_expect_err("log: {level: info}\nreceivers: []\n",
		   "alertbridge.yml:2: receivers: at least one receiver is required unless the "
		   "janitor is enabled");
	cfg = cfx_parse_ok("janitor: {enabled: true}\n");
	assert_int_equal(cfg->receivers_count, 0);
	assert_null(cfg_receiver_find(cfg, "default"));
	cfg_free(cfg);
}

static void duplicates(void **state)
{
	(void)state;
	cfx_expect_err("receivers:\n  - name: a\n    repo: o/r\n  - name: b\n    repo: o/r\n"
		   "  - name: a\n    repo: o/s\n",
		   "alertbridge.yml:6: receivers[2].name: duplicate receiver name \"a\" (also at "
		   "line 2)");
	cfx_expect_err("janitor:\n  enabled: true\n  policies:\n"
		   "    - alertname: A\n    - alertname: A\n",
		   "alertbridge.yml:5: janitor.policies[1].alertname: duplicate policy alertname "
		   "\"A\" (also at line 4)");
	cfx_expect_err(RCV "janitor:\n  slack:\n    namespace_channels: {a: \"#a\", a: \"#b\"}\n",
		   "alertbridge.yml:4: janitor.slack.namespace_channels.a: duplicate key");
}

/* web.auth.basic_auth_users: bcrypt hashes, as htpasswd -nbBC writes them; errors with the line. */
static void web_auth_users(void **state)
{
	static const char hash[] = "$2y$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6yG";
	struct config *cfg;
	char yaml[512];

	(void)state;
	cfg = cfx_parse_ok(RCV);
	assert_int_equal(cfg->web.auth.basic_auth_users_count, 0);
	cfg_free(cfg);
	cfx_fmt_into(yaml, sizeof(yaml), RCV "web:\n  auth:\n    basic_auth_users:\n"
		 "      oncall: \"%s\"\n      ops: '$2b$04$KsfkKg3KYv7M711Zh34x3OXldfa/"
		 "YEZZ2dCpwrEHKvXEeEUVGq6yG'\n", hash);
	cfg = cfx_parse_ok(yaml);
	assert_int_equal(cfg->web.auth.basic_auth_users_count, 2);
	assert_string_equal(cfg->web.auth.basic_auth_users[0].key, "oncall");
	assert_string_equal(cfg->web.auth.basic_auth_users[0].value, hash);
	assert_string_equal(cfg->web.auth.basic_auth_users[1].key, "ops");
	cfg_free(cfg);
	cfx_expect_err(RCV "web:\n  auth:\n    basic_auth_users:\n      oncall: s3cret\n",
		   "alertbridge.yml:5: web.auth.basic_auth_users.oncall: expected a bcrypt hash "
		   "($2y$, $2b$ or $2a$, cost 04-31, 60 characters: htpasswd -nbBC 10 USER "
		   "PASSWORD prints one)");
	cfx_expect_err(RCV "web:\n  auth:\n    basic_auth_users:\n"
		   "      oncall: $1$abcdefgh$0123456789012345678901234567890123456789012345678\n",
		   "alertbridge.yml:5: web.auth.basic_auth_users.oncall: expected a bcrypt hash "
		   "($2y$, $2b$ or $2a$, cost 04-31, 60 characters: htpasswd -nbBC 10 USER "
		   "PASSWORD prints one)");
	cfx_fmt_into(yaml, sizeof(yaml), RCV "web:\n  auth:\n    basic_auth_users:\n"
		 "      \"on:call\": \"%s\"\n", hash);
	cfx_expect_err(yaml, "alertbridge.yml:5: web.auth.basic_auth_users.on:call: the user name "
			 "must not contain ':' (RFC 7617)");
	cfx_expect_err(RCV "web:\n  auth:\n    basic_auth_users: [a]\n",
		   "alertbridge.yml:4: web.auth.basic_auth_users: expected a mapping of a user "
		   "name to a bcrypt hash, got a list");
	cfx_expect_err(RCV "web:\n  auth:\n    users: {}\n",
		   "alertbridge.yml:4: web.auth.users: unknown key");
}

static void invalid_durations(void **state)
{
	(void)state;
	cfx_expect_err(RCV "github:\n  timeout: 10x\n",
		   "alertbridge.yml:3: github.timeout: unknown unit \"x\" in duration \"10x\"");
	cfx_expect_err(RCV "janitor:\n  notice_batch_window: 5m1s\n",
		   "alertbridge.yml:3: janitor.notice_batch_window: 5m1s is longer than the "
		   "maximum (5m)");
	cfx_expect_err(RCV "janitor:\n  notice_batch_window: -1s\n",
		   "alertbridge.yml:3: janitor.notice_batch_window: not a valid duration string: "
		   "\"-1s\"");
	cfx_expect_err(RCV "janitor:\n  sweep_interval: 1m1h\n",
		   "alertbridge.yml:3: janitor.sweep_interval: not a valid duration string: "
		   "\"1m1h\"");
	cfx_expect_err(RCV "webhook: {read_timeout: 0}\n",
		   "alertbridge.yml:2: webhook.read_timeout: must be greater than 0s");
	cfx_expect_err(RCV "webhook: {read_timeout: 30}\n",
		   "alertbridge.yml:2: webhook.read_timeout: not a valid duration string: \"30\"");
	cfx_expect_err(RCV "webhook:\n  basic_auth: {username: \"a:b\", password_file: /etc/hostname}\n",
		   "alertbridge.yml:3: webhook.basic_auth.username: must not contain ':' (RFC 7617)");
	cfx_expect_err(RCV "webhook: {read_timeout: 500ms}\n",
		   "alertbridge.yml:2: webhook.read_timeout: must be from 1s to 24h");
	cfx_expect_err(RCV "webhook: {read_timeout: 25h}\n",
		   "alertbridge.yml:2: webhook.read_timeout: must be from 1s to 24h");
	cfx_expect_err(RCV "webhook: {read_timeout: 5s, read_header_timeout: 6s}\n",
		   "alertbridge.yml:2: webhook.read_header_timeout: must not be longer than "
		   "read_timeout");
	cfx_expect_err(RCV "github: {body_update_interval: 500ms}\n",
		   "alertbridge.yml:2: github.body_update_interval: must be between 1s and 1h");
	cfx_expect_err(RCV "github: {body_update_interval: 2h}\n",
		   "alertbridge.yml:2: github.body_update_interval: must be between 1s and 1h");
	{
		struct config *cfg = cfx_parse_ok(RCV "github: {body_update_interval: 2s}\n");
		assert_int_equal(cfg->github.body_update_interval_ms, 2 * S);
		cfg_free(cfg);
	}
	cfx_expect_err(RCV "webhook: {read_header_timeout: 0s}\n",
		   "alertbridge.yml:2: webhook.read_header_timeout: must be greater than 0s");
	cfx_expect_err(RCV "webhook: {max_connections_per_ip: -1}\n",
		   "alertbridge.yml:2: webhook.max_connections_per_ip: expected an integer from 0 "
		   "to 65536, got \"-1\"");
	cfx_expect_err("janitor:\n  enabled: true\n  policies:\n    - alertname: A\n      grace: 1h\n"
		   "      notice_lead: 90m\n",
		   "alertbridge.yml:6: janitor.policies[0].notice_lead: 1h30m is longer than grace "
		   "(1h)");
}

static void value_formats(void **state)
{
	(void)state;
	cfx_expect_err("receivers: [{name: a, repo: cluster-alerts}]\n",
		   "alertbridge.yml:1: receivers[0].repo: expected \"owner/name\" or a "
		   "template, got \"cluster-alerts\"");
	cfx_expect_err("receivers: [{name: a, repo: a/b/c}]\n",
		   "alertbridge.yml:1: receivers[0].repo: expected \"owner/name\" or a template, "
		   "got \"a/b/c\"");
	cfx_expect_err(RCV "listen_address: 9095\n",
		   "alertbridge.yml:2: listen_address: expected host:port or :port, got \"9095\"");
	cfx_expect_err(RCV "listen_address: \"::1:9095\"\n",
		   "alertbridge.yml:2: listen_address: expected host:port or :port, got "
		   "\"::1:9095\"");
	cfx_expect_err(RCV "listen_address: \"localhost:http\"\n",
		   "alertbridge.yml:2: listen_address: expected host:port or :port, got "
		   "\"localhost:http\"");
	cfx_expect_err(RCV "listen_address: \"\"\n", "alertbridge.yml:2: listen_address: must not be "
						 "empty");
	cfx_expect_err(RCV "github: {api_url: api.github.com}\n",
		   "alertbridge.yml:2: github.api_url: expected an http:// or https:// URL, got "
		   "\"api.github.com\"");
	cfx_expect_err(RCV "janitor: {slack: {api_url: \"\"}}\n",
		   "alertbridge.yml:2: janitor.slack.api_url: expected an http:// or https:// URL, "
		   "got \"\"");
}

static void mutually_exclusive(void **state)
{
	(void)state;
	cfx_expect_err_in(RCV "webhook:\n  bearer_token_file: token\n  basic_auth:\n    username: u\n"
			  "    password_file: token\n",
		      cfx_dir(), ERR_INVALID,
		      "alertbridge.yml:4: webhook.basic_auth: cannot be used together with "
		      "bearer_token_file");
	cfx_expect_err_in(RCV "github:\n  token_file: token\n  app: {app_id: 1, installation_id: 2, "
			  "private_key_file: k.pem}\n",
		      cfx_dir(), ERR_INVALID,
		      "alertbridge.yml:4: github.app: cannot be used together with token_file");
	cfx_expect_err_in(RCV "janitor:\n  slack:\n    bot_token_file: token\n"
			  "    webhook_url_file: token\n",
		      cfx_dir(), ERR_INVALID,
		      "alertbridge.yml:5: janitor.slack.webhook_url_file: cannot be used together "
		      "with bot_token_file");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(yaml_syntax_errors),
		cmocka_unit_test(unknown_keys),
		cmocka_unit_test(wrong_types),
		cmocka_unit_test(range_limits),
		cmocka_unit_test(enum_values),
		cmocka_unit_test(missing_required_keys),
		cmocka_unit_test(receivers_required_unless_janitor),
		cmocka_unit_test(web_auth_users),
		cmocka_unit_test(duplicates),
		cmocka_unit_test(invalid_durations),
		cmocka_unit_test(value_formats),
		cmocka_unit_test(mutually_exclusive),
	};
	return cmocka_run_group_tests(tests, cfx_setup, cfx_teardown);
}
