/*
 * test_config.c - YAML configuration: every default, the DESIGN.md example, the shipped
 * deploy/examples/alertbridge.yml and every key, leader_election, YAML forms and the dump.
 * Errors are test_config_errors.c's, routes test_config_routes.c's, secret files and paths
 * test_config_secrets.c's.
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

#define LE_FIELDS "{enabled: true, namespace: infra, lease_name: ab, lease_duration: 20s, " \
		  "identity: pod-1}"

/*
 * leader_election is a top-level key (it gates the bridge as much as the
 * janitor); janitor.leader_election, where it was, still loads into the same
 * place with a warning naming both; both at once is an error naming both;
 * enabled without the janitor (whose Kubernetes client takes the Lease) too.
 */
static void leader_election_top_level_and_alias(void **state)
{
	static const char *const yaml[] = {
		RCV "janitor: {enabled: true}\nleader_election: " LE_FIELDS "\n",
		RCV "janitor:\n  enabled: true\n  leader_election: " LE_FIELDS "\n",
	};
	struct buf msg = BUF_INIT;
	char log[4096];

	(void)state;
	for (size_t i = 0; i < 2; i++) {
		struct config *cfg = NULL;
		const char *warn;

		assert_int_equal(cfx_parse_logging(yaml[i], &cfg, &msg, log, sizeof(log)), ERR_OK);
		assert_int_equal(cfg->leader_election.enabled, 1);
		assert_string_equal(cfg->leader_election.namespace, "infra");
		assert_string_equal(cfg->leader_election.lease_name, "ab");
		assert_int_equal(cfg->leader_election.lease_duration_ms, 20 * S);
		assert_string_equal(cfg->leader_election.identity, "pod-1");
		warn = strstr(log, "msg=\"janitor.leader_election is deprecated: "
				   "use leader_election\"");
		if (i == 0) {
			assert_null(warn);
		} else {
			assert_non_null(warn);
			assert_non_null(strstr(log, "level=warn"));
			assert_non_null(strstr(warn, " file=alertbridge.yml line=4"));
		}
		cfg_free(cfg);
	}
	cfx_expect_err(RCV "leader_election: {enabled: true}\njanitor:\n  leader_election: {}\n",
		   "alertbridge.yml:4: janitor.leader_election: cannot be used together with "
		   "leader_election (line 2)");
	cfx_expect_err(RCV "janitor:\n  leader_election: ~\nleader_election: {enabled: true}\n",
		   "alertbridge.yml:3: janitor.leader_election: cannot be used together with "
		   "leader_election (line 4)");
	/* serve would never take the Lease: its client is the janitor's. */
	cfx_expect_err(RCV "leader_election: {enabled: true}\n",
		   "alertbridge.yml:2: leader_election.enabled: needs janitor.enabled: the Lease is "
		   "taken with janitor.kubernetes");
	buf_release(&msg);
}

/* webhook.max_alerts: default, a value, and each bad form with its line and key. */
static void webhook_max_alerts(void **state)
{
	struct config *cfg;

	(void)state;
	cfg = cfx_parse_ok("receivers: [{name: a, repo: o/r}]\n");
	assert_int_equal(cfg->webhook.max_alerts, 10000);
	cfg_free(cfg);
	cfg = cfx_parse_ok("receivers: [{name: a, repo: o/r}]\nwebhook: {max_alerts: 20000}\n");
	assert_int_equal(cfg->webhook.max_alerts, 20000);
	cfg_free(cfg);
	cfx_expect_err("receivers: [{name: a, repo: o/r}]\nwebhook:\n  max_alerts: 0\n",
		   "alertbridge.yml:3: webhook.max_alerts: expected an integer from 1 to 1000000, "
		   "got \"0\"");
	cfx_expect_err("receivers: [{name: a, repo: o/r}]\nwebhook:\n  max_alerts: 1000001\n",
		   "alertbridge.yml:3: webhook.max_alerts: expected an integer from 1 to 1000000, "
		   "got \"1000001\"");
	cfx_expect_err("receivers: [{name: a, repo: o/r}]\nwebhook:\n  max_alerts: [1]\n",
		   "alertbridge.yml:3: webhook.max_alerts: expected an integer from 1 to 1000000, "
		   "got a list");
}

static void every_default(void **state)
{
	struct config *cfg = cfx_parse_ok(RCV);
	const struct cfg_receiver *r = &cfg->receivers[0];
	const struct cfg_janitor *j = &cfg->janitor;
	char host[256] = "";
	(void)state;

	assert_string_equal(cfg->listen_address, ":9095");
	assert_string_equal(cfg->database, "alertbridge.db");
	assert_int_equal(cfg->log.level, LOG_INFO);
	assert_int_equal(cfg->log.format, LOG_LOGFMT);
	assert_null(cfg->webhook.bearer_token);
	assert_null(cfg->webhook.bearer_token_file);
	assert_null(cfg->webhook.basic_auth.username);
	assert_null(cfg->webhook.tls.cert_file);
	assert_int_equal(cfg->webhook.max_body_bytes, 16777216);
	assert_int_equal(cfg->webhook.max_connections, 256);
	assert_int_equal(cfg->webhook.read_timeout_ms, 30 * S);
	assert_int_equal(cfg->webhook.read_header_timeout_ms, 10 * S);
	assert_int_equal(cfg->webhook.max_connections_per_ip, 64);
	assert_int_equal(cfg->webhook.threads, 4);
	assert_string_equal(cfg->github.api_url, "https://api.github.com");
	assert_int_equal(cfg->github.body_update_interval_ms, 60 * S);
	assert_null(cfg->github.token);
	assert_null(cfg->github.token_file);
	assert_int_equal(cfg->github.token_from_env, 0);
	assert_int_equal(cfg->github.app.app_id, 0);
	assert_int_equal(cfg->github.content_per_minute, 20);
	assert_int_equal(cfg->github.content_per_hour, 500);
	assert_int_equal(cfg->database_retention_ms, 7 * 86400 * S);
	assert_int_equal(cfg->github.timeout_ms, 10 * S);
	assert_int_equal(cfg->github.dry_run, 0);

	assert_int_equal(cfg->receivers_count, 1);
	assert_string_equal(r->name, "default");
	assert_string_equal(r->repo, "o/r");
	assert_int_equal(r->issue_per, CFG_ISSUE_PER_ALERT);
	assert_int_equal(r->labels.count, 0);
	assert_null(r->labels.items[0]);
	assert_int_equal(r->assignees.count, 0);
	assert_int_equal(r->auto_close, 1);
	assert_int_equal(r->reopen_window_ms, 7 * D);
	assert_null(r->templates.title);
	assert_null(r->templates.body);
	assert_null(r->templates.refire);
	assert_null(r->templates.resolve);
	assert_null(r->templates.reopen);
	assert_int_equal(r->storm.enabled, 0);
	assert_int_equal(r->storm.storm_after_ms, 10 * M);

	assert_int_equal(j->enabled, 0);
	assert_int_equal(j->dry_run, 1);
	assert_null(j->kubernetes.kubeconfig);
	assert_null(j->kubernetes.context);
	assert_int_equal(j->exclude_namespaces.count, 1);
	assert_string_equal(j->exclude_namespaces.items[0], "kube-system");
	assert_int_equal(j->sweep_interval_ms, M);
	assert_int_equal(j->max_deletions_per_sweep, 10);
	assert_int_equal(j->notice_batch_window_ms, 5 * S);
	assert_int_equal(j->policies_count, 0);
	assert_string_equal(j->slack.api_url, "https://slack.com/api");
	assert_null(j->slack.bot_token);
	assert_null(j->slack.webhook_url);
	assert_null(j->slack.default_channel);
	assert_null(j->slack.owner_label);
	assert_int_equal(j->slack.namespace_channels_count, 0);
	assert_int_equal(cfg->leader_election.enabled, 0);
	assert_string_equal(cfg->leader_election.namespace, "alertbridge");
	assert_string_equal(cfg->leader_election.lease_name, "alertbridge");
	assert_int_equal(cfg->leader_election.lease_duration_ms, 15 * S);
	assert_int_equal(gethostname(host, sizeof(host) - 1), 0);
	assert_string_equal(cfg->leader_election.identity, host);
	cfg_free(cfg);
}

static void policy_defaults(void **state)
{
	struct config *cfg = cfx_parse_ok("janitor:\n  enabled: true\n  policies:\n"
				      "    - alertname: A\n");
	const struct cfg_policy *p = &cfg->janitor.policies[0];
	(void)state;
	assert_int_equal(cfg->receivers_count, 0);
	assert_int_equal(cfg->janitor.policies_count, 1);
	assert_string_equal(p->alertname, "A");
	assert_int_equal(p->grace_ms, 24 * H);
	assert_int_equal(p->notice_lead_ms, 2 * H);
	assert_int_equal(p->reminder_before_ms, H);  /* half the notice lead */
	assert_int_equal(p->owned, CFG_OWNED_NOTIFY_ONLY);
	assert_null(p->message);
	cfg_free(cfg);
}

static void policy_reminder_before(void **state)
{
	struct config *cfg = cfx_parse_ok("janitor:\n  enabled: true\n  policies:\n"
				      "    - {alertname: A, notice_lead: 3h, reminder_before: 20m}\n"
				      "    - {alertname: B, notice_lead: 90m}\n"
				      "    - {alertname: C, notice_lead: 2h, reminder_before: 0s}\n"
				      "    - {alertname: D, notice_lead: 0s}\n");
	struct buf out = BUF_INIT;
	(void)state;
	assert_int_equal(cfg_policy_find(cfg, "A")->reminder_before_ms, 20 * 60 * S);
	assert_int_equal(cfg_policy_find(cfg, "B")->reminder_before_ms, 45 * 60 * S);
	assert_int_equal(cfg_policy_find(cfg, "C")->reminder_before_ms, 0);  /* no reminder */
	assert_int_equal(cfg_policy_find(cfg, "D")->reminder_before_ms, 0);
	cfg_dump(cfg, &out);
	cfx_text_has(buf_str(&out), (const char *const[]){
			     "    notice_lead: 3h\n    reminder_before: 20m\n",
			     "    notice_lead: 1h30m\n    reminder_before: 45m\n", NULL }, NULL);
	buf_release(&out);
	cfg_free(cfg);
	cfx_expect_err("janitor:\n  policies:\n    - alertname: A\n      notice_lead: 1h\n"
		   "      reminder_before: 1h\n",
		   "alertbridge.yml:5: janitor.policies[0].reminder_before: 1h is not less than "
		   "notice_lead (1h)");
	cfx_expect_err("janitor:\n  policies:\n    - {alertname: A, notice_lead: 0s, "
		   "reminder_before: 1m}\n",
		   "alertbridge.yml:3: janitor.policies[0].reminder_before: 1m is not less than "
		   "notice_lead (0s)");
	cfx_expect_err("janitor:\n  policies:\n    - {alertname: A, reminder_before: soon}\n",
		   "alertbridge.yml:3: janitor.policies[0].reminder_before: not a valid duration "
		   "string: \"soon\"");
}

/* "Keep until" from Slack: the policy's postpone keys and the signing secret (issue 21). */
static void postpone_keys_and_signing_secret(void **state)
{
	struct config *cfg;
	struct buf out = BUF_INIT;

	(void)state;
	cfg = cfx_parse_in("janitor:\n  enabled: true\n  policies:\n"
		       "    - {alertname: A}\n"
		       "    - {alertname: B, postpone_by: 4h, max_postpones: 0, max_lifetime: 7d}\n"
		       "  slack: {bot_token_file: token, signing_secret_file: token-bare}\n",
		       cfx_dir());
	assert_int_equal(cfg_policy_find(cfg, "A")->postpone_by_ms, 24 * H);
	assert_int_equal(cfg_policy_find(cfg, "A")->max_postpones, 3);
	assert_int_equal(cfg_policy_find(cfg, "A")->max_lifetime_ms, 0);
	assert_int_equal(cfg_policy_find(cfg, "B")->postpone_by_ms, 4 * H);
	assert_int_equal(cfg_policy_find(cfg, "B")->max_postpones, 0);
	assert_int_equal(cfg_policy_find(cfg, "B")->max_lifetime_ms, 7 * 24 * H);
	assert_string_equal(cfg->janitor.slack.signing_secret, "bare-token");
	cfg_dump(cfg, &out);
	assert_non_null(strstr(buf_str(&out), "    postpone_by: 4h\n    max_postpones: 0\n"
					      "    max_lifetime: 1w\n"));
	assert_null(strstr(buf_str(&out), "bare-token"));  /* the secret is masked */
	buf_release(&out);
	cfg_free(cfg);
	/* What cannot work: the answers need the Web API; a click must move the expiry. */
	cfx_expect_err_in(RCV "janitor:\n  slack: {webhook_url_file: token, "
			  "signing_secret_file: token}\n", cfx_dir(), ERR_INVALID,
		      "alertbridge.yml:3: janitor.slack.signing_secret_file: needs bot_token_file "
		      "(the answers use chat.update)");
	cfx_expect_err("janitor:\n  policies:\n    - {alertname: A, postpone_by: 0s}\n",
		   "alertbridge.yml:3: janitor.policies[0].postpone_by: must be greater than 0s");
	cfx_expect_err("janitor:\n  policies:\n    - {alertname: A, max_postpones: -1}\n",
		   "alertbridge.yml:3: janitor.policies[0].max_postpones: expected an integer from 0 "
		   "to 100, got \"-1\"");
}

static void nulls_keep_defaults(void **state)
{
	struct config *cfg = cfx_parse_ok(RCV "listen_address: ~\nwebhook:\ngithub:\n  timeout: null\n"
				      "janitor:\n  exclude_namespaces:\n  slack: {}\n");
	(void)state;
	assert_string_equal(cfg->listen_address, ":9095");
	assert_int_equal(cfg->github.timeout_ms, 10 * S);
	assert_int_equal(cfg->janitor.exclude_namespaces.count, 1);
	assert_int_equal(cfg->webhook.max_body_bytes, 16777216);
	cfg_free(cfg);
}

static void design_example_loads(void **state)
{
	char path[512], dir[512];
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	const struct cfg_receiver *r;
	const struct cfg_janitor *j;
	(void)state;

	setenv("GITHUB_TOKEN", "from-env-ignored", 1);
	cfx_fixture_path(path, sizeof(path), "design.yml");
	cfx_fixture_path(dir, sizeof(dir), "");
	dir[strlen(dir) - 1] = '\0';
	if (cfg_load(path, &cfg, &msg) != ERR_OK)
		fail_msg("%s", buf_str(&msg));
	unsetenv("GITHUB_TOKEN");
	assert_string_equal(cfg->listen_address, "127.0.0.1:9095");
	assert_string_equal(cfg->database, "alertbridge.db");
	assert_string_equal(cfg->webhook.bearer_token, "webhook-secret-token");
	assert_string_equal(cfg->github.token, "ghp_fixturetoken123");
	assert_int_equal(cfg->github.token_from_env, 0);
	assert_string_equal(cfg->github.api_url, "https://api.github.com");
	assert_int_equal(cfg->github.dry_run, 0);
	assert_int_equal(cfg->receivers_count, 1);
	r = cfg_receiver_find(cfg, "default");
	assert_non_null(r);
	assert_string_equal(r->repo, "my-org/cluster-alerts");
	assert_int_equal(r->labels.count, 2);
	assert_string_equal(r->labels.items[1], "severity:{{labels.severity}}");
	cfx_fmt_into(path, sizeof(path), "%s/templates/issue_title.mustache", dir);
	assert_string_equal(r->templates.title, path);
	j = &cfg->janitor;
	assert_int_equal(j->enabled, 1);
	assert_int_equal(j->dry_run, 1);
	assert_null(j->kubernetes.kubeconfig);
	assert_null(j->kubernetes.context);
	assert_int_equal(j->policies_count, 2);
	assert_int_equal(cfg_policy_find(cfg, "JanitorIdleGPUPod")->owned, CFG_OWNED_SCALE_TO_ZERO);
	assert_int_equal(cfg_policy_find(cfg, "JanitorPodPendingTooLong")->grace_ms, 6 * H);
	assert_int_equal(cfg_policy_find(cfg, "JanitorPodPendingTooLong")->notice_lead_ms, H);
	assert_int_equal(cfg_policy_find(cfg, "JanitorIdleGPUPod")->reminder_before_ms, H / 2);
	assert_int_equal(cfg_policy_find(cfg, "JanitorPodPendingTooLong")->reminder_before_ms,
			 H / 2);
	assert_int_equal(cfg_policy_find(cfg, "JanitorPodPendingTooLong")->owned,
			 CFG_OWNED_NOTIFY_ONLY);
	assert_string_equal(j->slack.bot_token, "xoxb-fixture-slack");
	assert_string_equal(j->slack.default_channel, "#gpu-cluster");
	assert_string_equal(j->slack.owner_label, "owner");
	/* leader_election at the top level, as DESIGN.md shows it (the alias: its own test). */
	assert_string_equal(cfg->leader_election.namespace, "alertbridge");
	buf_release(&msg);
	cfg_free(cfg);
}

static void deploy_example_loads(void **state)
{
	char path[512];
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	(void)state;

	cfx_fmt_into(path, sizeof(path), "%s/deploy/examples/alertbridge.yml", cfx_src_dir());
	if (cfg_load(path, &cfg, &msg) != ERR_OK)
		fail_msg("%s", buf_str(&msg));
	assert_string_equal(cfg->listen_address, "127.0.0.1:9095");
	assert_string_equal(cfg->database, "alertbridge.db");
	assert_int_equal(cfg->github.dry_run, 1);
	assert_null(cfg->github.token_file);
	assert_null(cfg->github.token);
	assert_int_equal(cfg->receivers_count, 1);
	assert_string_equal(cfg->receivers[0].name, "default");
	assert_string_equal(cfg->receivers[0].repo, "my-org/cluster-alerts");
	assert_int_equal(cfg->janitor.enabled, 0);
	buf_release(&msg);
	cfg_free(cfg);
}

static void every_key_is_read(void **state)
{
	char path[512], dir[512], want[640];
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	const struct cfg_receiver *r;
	const struct cfg_janitor *j;
	(void)state;

	cfx_fixture_path(path, sizeof(path), "full.yml");
	cfx_fixture_path(dir, sizeof(dir), "");
	dir[strlen(dir) - 1] = '\0';
	if (cfg_load(path, &cfg, &msg) != ERR_OK)
		fail_msg("%s", buf_str(&msg));
	assert_string_equal(cfg->listen_address, "[::1]:9096");
	assert_string_equal(cfg->database, "/var/lib/alertbridge/state.db");
	assert_int_equal(cfg->log.level, LOG_DEBUG);
	assert_int_equal(cfg->log.format, LOG_JSON);
	assert_string_equal(cfg->webhook.basic_auth.username, "alertmanager");
	assert_string_equal(cfg->webhook.basic_auth.password, "pa55word");
	cfx_fmt_into(want, sizeof(want), "%s/secrets/webhook-password", dir);
	assert_string_equal(cfg->webhook.basic_auth.password_file, want);
	cfx_fmt_into(want, sizeof(want), "%s/tls/server.crt", dir);
	assert_string_equal(cfg->webhook.tls.cert_file, want);
	assert_string_equal(cfg->webhook.tls.key_file, "/etc/tls/server.key");
	cfx_fmt_into(want, sizeof(want), "%s/tls/ca.crt", dir);
	assert_string_equal(cfg->webhook.tls.client_ca_file, want);
	assert_int_equal(cfg->webhook.max_body_bytes, 2097152);
	assert_int_equal(cfg->webhook.max_connections, 64);
	assert_int_equal(cfg->webhook.read_timeout_ms, M);
	assert_int_equal(cfg->webhook.read_header_timeout_ms, 15 * S);
	assert_int_equal(cfg->webhook.max_connections_per_ip, 8);
	assert_int_equal(cfg->webhook.threads, 8);
	assert_string_equal(cfg->github.api_url, "https://github.example.com/api/v3");
	assert_int_equal(cfg->github.app.app_id, 12345);
	assert_int_equal(cfg->github.app.installation_id, 67890);
	cfx_fmt_into(want, sizeof(want), "%s/secrets/app.pem", dir);
	assert_string_equal(cfg->github.app.private_key_file, want);
	assert_null(cfg->github.token);
	assert_int_equal(cfg->github.content_per_minute, 80);
	assert_int_equal(cfg->github.timeout_ms, 90 * S);
	assert_int_equal(cfg->github.body_update_interval_ms, 30 * S);
	assert_int_equal(cfg->github.dry_run, 1);

	assert_int_equal(cfg->receivers_count, 2);
	r = cfg_receiver_find(cfg, "gpu");
	assert_ptr_equal(r, &cfg->receivers[0]);
	assert_ptr_equal(cfg_receiver_find(cfg, "default"), &cfg->receivers[1]);
	assert_null(cfg_receiver_find(cfg, "nope"));
	assert_null(cfg_receiver_find(cfg, "GPU"));
	assert_null(cfg_receiver_find(NULL, "gpu"));
	assert_int_equal(r->issue_per, CFG_ISSUE_PER_GROUP);
	assert_int_equal(r->labels.count, 2);
	assert_string_equal(r->labels.items[0], "alert");
	assert_string_equal(r->labels.items[1], "team:{{labels.team}}");
	assert_null(r->labels.items[2]);
	assert_int_equal(r->assignees.count, 2);
	assert_string_equal(r->assignees.items[1], "bob");
	assert_int_equal(r->auto_close, 0);
	assert_int_equal(r->reopen_window_ms, 0);
	cfx_fmt_into(want, sizeof(want), "%s/templates/t.mustache", dir);
	assert_string_equal(r->templates.title, want);
	assert_string_equal(r->templates.refire, "/abs/refire.mustache");
	cfx_fmt_into(want, sizeof(want), "%s/templates/reopen.mustache", dir);
	assert_string_equal(r->templates.reopen, want);
	assert_int_equal(r->storm.enabled, 1);
	assert_int_equal(r->storm.storm_after_ms, 5 * M);

	j = &cfg->janitor;
	assert_int_equal(j->enabled, 1);
	assert_int_equal(j->dry_run, 0);
	cfx_fmt_into(want, sizeof(want), "%s/kube/config", dir);
	assert_string_equal(j->kubernetes.kubeconfig, want);
	assert_string_equal(j->kubernetes.context, "prod");
	assert_int_equal(j->exclude_namespaces.count, 2);
	assert_string_equal(j->exclude_namespaces.items[1], "monitoring");
	assert_int_equal(j->sweep_interval_ms, 30 * S);
	assert_int_equal(j->max_deletions_per_sweep, 0);
	assert_int_equal(j->notice_batch_window_ms, 2 * S);
	assert_int_equal(j->policies_count, 2);
	assert_int_equal(cfg_policy_find(cfg, "JanitorIdleGPUPod")->owned, CFG_OWNED_DELETE_OWNER);
	assert_int_equal(cfg_policy_find(cfg, "JanitorIdleGPUPod")->grace_ms, 12 * H);
	assert_string_equal(cfg_policy_find(cfg, "JanitorIdleGPUPod")->message,
			    "Idle GPUs cost money.");
	assert_int_equal(cfg_policy_find(cfg, "JanitorIdleCPUPod")->grace_ms, 24 * H);
	assert_null(cfg_policy_find(cfg, "Other"));
	assert_null(cfg_policy_find(cfg, NULL));
	assert_string_equal(j->slack.api_url, "http://127.0.0.1:8080/api");
	assert_null(j->slack.bot_token);
	assert_string_equal(j->slack.webhook_url,
			    "https://hooks.slack.com/services/T000/B000/XXXX");
	assert_int_equal(j->slack.namespace_channels_count, 2);
	assert_string_equal(j->slack.namespace_channels[0].key, "team-a");
	assert_string_equal(j->slack.namespace_channels[0].value, "#team-a");
	assert_string_equal(j->slack.namespace_channels[1].value, "C0123456");
	assert_int_equal(cfg->leader_election.enabled, 1);
	assert_string_equal(cfg->leader_election.namespace, "infra");
	assert_string_equal(cfg->leader_election.lease_name, "ab-lease");
	assert_int_equal(cfg->leader_election.lease_duration_ms, 20 * S);
	assert_string_equal(cfg->leader_election.identity, "pod-1");
	assert_int_equal(cfg->web.auth.basic_auth_users_count, 1);
	assert_string_equal(cfg->web.auth.basic_auth_users[0].key, "oncall");
	assert_string_equal(cfg->web.auth.basic_auth_users[0].value,
			    "$2y$10$TnD4qJFgqkaiWogpqY.qW.F3RqJSEuLmh0VW.H7ERxFCttn6Bne1O");
	buf_release(&msg);
	cfg_free(cfg);
}

/* web.public_listen_address and web.public_tls: parsed, checked, dumped. */
static void web_public_listener(void **state)
{
	struct config *cfg, *again;
	struct buf out = BUF_INIT;

	(void)state;
	cfg = cfx_parse_ok(RCV);
	assert_null(cfg->web.public_listen_address);
	assert_null(cfg->web.public_tls.cert_file);
	cfg_dump(cfg, &out);
	assert_null(strstr(buf_str(&out), "public_"));
	cfg_free(cfg);
	buf_reset(&out);
	cfg = cfx_parse_in(RCV "web:\n  public_listen_address: \":9096\"\n"
		       "  public_tls: {cert_file: pub.crt, key_file: pub.key}\n", "/etc/ab");
	assert_string_equal(cfg->web.public_listen_address, ":9096");
	assert_string_equal(cfg->web.public_tls.cert_file, "/etc/ab/pub.crt");
	assert_string_equal(cfg->web.public_tls.key_file, "/etc/ab/pub.key");
	assert_null(cfg->web.public_tls.client_ca_file);
	cfg_dump(cfg, &out);
	assert_non_null(strstr(buf_str(&out), "  public_listen_address: \":9096\"\n  public_tls:\n"
					      "    cert_file: \"/etc/ab/pub.crt\"\n"));
	again = cfx_parse_ok(buf_str(&out));
	assert_string_equal(again->web.public_listen_address, ":9096");
	assert_string_equal(again->web.public_tls.key_file, "/etc/ab/pub.key");
	cfg_free(again);
	cfg_free(cfg);
	buf_release(&out);
	cfx_expect_err(RCV "web: {public_listen_address: \"9096\"}\n",
		   "alertbridge.yml:2: web.public_listen_address: expected host:port or :port, "
		   "got \"9096\"");
	cfx_expect_err(RCV "web: {public_listen_address: \":9095\"}\n",
		   "alertbridge.yml:2: web.public_listen_address: must differ from listen_address "
		   "\":9095\"");
	cfx_expect_err(RCV "web: {public_tls: {cert_file: a, key_file: b}}\n",
		   "alertbridge.yml:2: web.public_tls: needs public_listen_address");
	cfx_expect_err(RCV "web: {public_listen_address: \":9096\", public_tls: {cert_file: a}}\n",
		   "alertbridge.yml:2: web.public_tls: missing required key \"key_file\"");
}

static void booleans_yaml11(void **state)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "on", "ON" };
	static const char *const no[] = { "false", "False", "no", "NO", "off", "Off" };
	char yaml[128];
	struct config *cfg;
	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		cfx_fmt_into(yaml, sizeof(yaml), RCV "github: {dry_run: %s}\n", yes[i]);
		cfg = cfx_parse_ok(yaml);
		assert_int_equal(cfg->github.dry_run, 1);
		cfg_free(cfg);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		cfx_fmt_into(yaml, sizeof(yaml), RCV "janitor: {dry_run: %s}\n", no[i]);
		cfg = cfx_parse_ok(yaml);
		assert_int_equal(cfg->janitor.dry_run, 0);
		cfg_free(cfg);
	}
	cfx_expect_err(RCV "github: {dry_run: 1}\n",
		   "alertbridge.yml:2: github.dry_run: "
		   "expected a boolean (true or false), got \"1\"");
	cfx_expect_err(RCV "github: {dry_run: y}\n",
		   "alertbridge.yml:2: github.dry_run: "
		   "expected a boolean (true or false), got \"y\"");
}

static void lists_flow_and_block(void **state)
{
	struct config *cfg;
	(void)state;
	cfg = cfx_parse_ok(RCV "janitor:\n  exclude_namespaces:\n    - kube-system\n    - \"gpu ops\"\n"
			   "    - 'x'\n");
	assert_int_equal(cfg->janitor.exclude_namespaces.count, 3);
	assert_string_equal(cfg->janitor.exclude_namespaces.items[1], "gpu ops");
	assert_string_equal(cfg->janitor.exclude_namespaces.items[2], "x");
	assert_null(cfg->janitor.exclude_namespaces.items[3]);
	cfg_free(cfg);
	cfg = cfx_parse_ok(RCV "janitor: {exclude_namespaces: []}\n");
	assert_int_equal(cfg->janitor.exclude_namespaces.count, 0);
	assert_null(cfg->janitor.exclude_namespaces.items[0]);
	cfg_free(cfg);
}

static void anchors_and_aliases(void **state)
{
	struct config *cfg = cfx_parse_ok("receivers:\n"
				      "  - &r {name: a, repo: o/r, labels: &l [x, y]}\n"
				      "  - {name: b, repo: o/s, labels: *l}\n");
	(void)state;
	assert_int_equal(cfg->receivers[1].labels.count, 2);
	assert_string_equal(cfg->receivers[1].labels.items[1], "y");
	cfg_free(cfg);
}

static void dump_masks_secrets_and_reloads(void **state)
{
	struct config *cfg, *again;
	struct buf out = BUF_INIT, out2 = BUF_INIT, msg = BUF_INIT;
	(void)state;
	setenv("GITHUB_TOKEN", "env-secret-value", 1);
	cfg = cfx_parse_in("receivers:\n  - name: \"we\\\"ird\"\n    repo: o/r\n"
		       "    labels: [\"a\\tb\", \"severity:{{labels.severity}}\"]\n"
		       "webhook: {bearer_token_file: token}\n"
		       "janitor:\n  policies: [{alertname: A, message: \"line1\\nline2\"}]\n"
		       "  slack: {bot_token_file: token-bare, namespace_channels: {ns: \"#c\"}}\n"
		       "web: {auth: {basic_auth_users: {oncall: \"$2y$04$KsfkKg3KYv7M711Zh34x3OXl"
		       "dfa/YEZZ2dCpwrEHKvXEeEUVGq6yG\"}}}\n",
		       cfx_dir());
	cfg_dump(cfg, &out);
	cfx_text_has(buf_str(&out), (const char *const[]){
			     "  # bearer_token: <secret>\n",
			     "  # token: <secret> (from GITHUB_TOKEN)\n",
			     "    # bot_token: <secret>\n", "listen_address: \":9095\"\n",
			     "  reopen_window: 1w\n", "- name: \"we\\\"ird\"\n", NULL },
		     (const char *const[]){ "s3cret-token", "bare-token", "env-secret-value",
					    NULL });

	/* The dump is itself a valid config with the same meaning. */
	if (cfg_parse(buf_str(&out), out.len, "dump", NULL, &again, &msg) != ERR_OK)
		fail_msg("%s\n%s", buf_str(&msg), buf_str(&out));
	assert_string_equal(again->receivers[0].name, "we\"ird");
	assert_string_equal(again->receivers[0].labels.items[0], "a\tb");
	assert_string_equal(again->janitor.policies[0].message, "line1\nline2");
	assert_string_equal(again->webhook.bearer_token, "s3cret-token");
	assert_string_equal(again->web.auth.basic_auth_users[0].value,
			    "$2y$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6yG");
	cfg_dump(again, &out2);
	assert_string_equal(strchr(buf_str(&out2), '\n'), strchr(buf_str(&out), '\n'));
	unsetenv("GITHUB_TOKEN");
	cfg_free(again);
	cfg_free(cfg);
	buf_release(&out);
	buf_release(&out2);
	buf_release(&msg);
}

static void free_accepts_null(void **state)
{
	(void)state;
	cfg_free(NULL);
	assert_null(cfg_policy_find(NULL, "A"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_default),
		cmocka_unit_test(policy_defaults),
		cmocka_unit_test(policy_reminder_before),
		cmocka_unit_test(postpone_keys_and_signing_secret),
		cmocka_unit_test(nulls_keep_defaults),
		cmocka_unit_test(design_example_loads),
		cmocka_unit_test(deploy_example_loads),
		cmocka_unit_test(every_key_is_read),
		cmocka_unit_test(web_public_listener),
		cmocka_unit_test(booleans_yaml11),
		cmocka_unit_test(lists_flow_and_block),
		cmocka_unit_test(anchors_and_aliases),
		cmocka_unit_test(dump_masks_secrets_and_reloads),
		cmocka_unit_test(free_accepts_null),
		cmocka_unit_test(webhook_max_alerts),
		cmocka_unit_test(leader_election_top_level_and_alias),
	};
	return cmocka_run_group_tests(tests, cfx_setup, cfx_teardown);
}
