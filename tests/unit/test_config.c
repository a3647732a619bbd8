/*
 * test_config.c - YAML configuration: every default, every error class with
 * its exact message, secret files, GITHUB_TOKEN, relative paths, the
 * DESIGN.md example and the shipped deploy/examples/alertbridge.yml.
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

#define S 1000LL
#define M (60 * S)
#define H (60 * M)
#define D (24 * H)

#define RCV "receivers: [{name: default, repo: o/r}]\n"

static char tmpdir[64];

/* snprintf that fails the test instead of truncating. */
static void fmt_into(char *out, size_t n, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static void fmt_into(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(out, n, fmt, ap);
	va_end(ap);
	assert_true(len >= 0 && (size_t)len < n);
}

static const char *src_dir(void)
{
	const char *s = getenv("ALERTBRIDGE_SRC");

	return s && *s ? s : ".";
}

static void fixture_path(char *out, size_t n, const char *name)
{
	fmt_into(out, n, "%s/tests/unit/data/config/%s", src_dir(), name);
}

static void write_file(const char *name, const char *content)
{
	char path[256];
	FILE *f;

	fmt_into(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(content, f);
	fclose(f);
}

static void link_key(const char *name, const char *fixture)
{
	char from[512], to[256];

	fixture_path(from, sizeof(from), "secrets/");
	fmt_into(from + strlen(from), sizeof(from) - strlen(from), "%s", fixture);
	if (from[0] != '/') {
		char cwd[256];
		assert_non_null(getcwd(cwd, sizeof(cwd)));
		memmove(from + strlen(cwd) + 1, from, strlen(from) + 1);
		memcpy(from, cwd, strlen(cwd));
		from[strlen(cwd)] = '/';
	}
	fmt_into(to, sizeof(to), "%s/%s", tmpdir, name);
	assert_int_equal(symlink(from, to), 0);
}

static int setup(void **state)
{
	(void)state;
	fmt_into(tmpdir, sizeof(tmpdir), "/tmp/abcfgXXXXXX");
	if (!mkdtemp(tmpdir))
		return -1;
	write_file("token", "s3cret-token\n");
	write_file("token-crlf", "crlf-token\r\n");
	write_file("token-bare", "bare-token");
	write_file("token-2nl", "two\n\n");
	write_file("empty", "");
	write_file("multi", "line1\nline2\n");
	/* the test-only RSA, PKCS#8 and EC keys of tests/unit/data/config/secrets */
	link_key("k.pem", "app.pem");
	link_key("k8.pem", "app-pkcs8.pem");
	link_key("ec.pem", "app-ec.pem");
	unsetenv("GITHUB_TOKEN");
	return 0;
}

static int teardown(void **state)
{
	static const char *const names[] = { "token", "token-crlf", "token-bare", "token-2nl",
					     "empty", "multi", "alertbridge.yml", "k.pem", "k8.pem",
					     "ec.pem" };
	char path[256];
	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		fmt_into(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
	return 0;
}

static struct config *parse_in(const char *yaml, const char *base_dir)
{
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	enum err rc = cfg_parse(yaml, strlen(yaml), "alertbridge.yml", base_dir, &cfg, &msg);

	if (rc != ERR_OK)
		fail_msg("cfg_parse: %s: %s", err_str(rc), buf_str(&msg));
	buf_release(&msg);
	assert_non_null(cfg);
	return cfg;
}

static struct config *parse_ok(const char *yaml)
{
	return parse_in(yaml, NULL);
}

static void expect_err_in(const char *yaml, const char *base_dir, enum err want_rc,
			  const char *want)
{
	struct buf msg = BUF_INIT;
	struct config *cfg = (struct config *)0x1;

	assert_int_equal(cfg_parse(yaml, strlen(yaml), "alertbridge.yml", base_dir, &cfg, &msg),
			 want_rc);
	assert_string_equal(buf_str(&msg), want);
	assert_ptr_equal(cfg, (struct config *)0x1); /* untouched on error */
	buf_release(&msg);
}

static void expect_err(const char *yaml, const char *want)
{
	expect_err_in(yaml, NULL, ERR_INVALID, want);
}

/* cfg_parse() of yaml with the log at info into out (n bytes): what it logged. */
static enum err parse_logging(const char *yaml, struct config **cfg, struct buf *msg, char *out,
			      size_t n)
{
	FILE *log = tmpfile();
	enum err rc;
	size_t got;

	assert_non_null(log);
	log_setup(LOG_INFO, LOG_LOGFMT);
	log_set_fd(fileno(log));
	rc = cfg_parse(yaml, strlen(yaml), "alertbridge.yml", NULL, cfg, msg);
	log_set_fd(2);
	log_setup(LOG_ERROR, LOG_LOGFMT);
	rewind(log);
	got = fread(out, 1, n - 1, log);
	out[got] = '\0';
	fclose(log);
	return rc;
}

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

		assert_int_equal(parse_logging(yaml[i], &cfg, &msg, log, sizeof(log)), ERR_OK);
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
	expect_err(RCV "leader_election: {enabled: true}\njanitor:\n  leader_election: {}\n",
		   "alertbridge.yml:4: janitor.leader_election: cannot be used together with "
		   "leader_election (line 2)");
	expect_err(RCV "janitor:\n  leader_election: ~\nleader_election: {enabled: true}\n",
		   "alertbridge.yml:3: janitor.leader_election: cannot be used together with "
		   "leader_election (line 4)");
	/* serve would never take the Lease: its client is the janitor's. */
	expect_err(RCV "leader_election: {enabled: true}\n",
		   "alertbridge.yml:2: leader_election.enabled: needs janitor.enabled: the Lease is "
		   "taken with janitor.kubernetes");
	buf_release(&msg);
}

/* webhook.max_alerts: default, a value, and each bad form with its line and key. */
static void webhook_max_alerts(void **state)
{
	struct config *cfg;

	(void)state;
	cfg = parse_ok("receivers: [{name: a, repo: o/r}]\n");
	assert_int_equal(cfg->webhook.max_alerts, 10000);
	cfg_free(cfg);
	cfg = parse_ok("receivers: [{name: a, repo: o/r}]\nwebhook: {max_alerts: 20000}\n");
	assert_int_equal(cfg->webhook.max_alerts, 20000);
	cfg_free(cfg);
	expect_err("receivers: [{name: a, repo: o/r}]\nwebhook:\n  max_alerts: 0\n",
		   "alertbridge.yml:3: webhook.max_alerts: expected an integer from 1 to 1000000, "
		   "got \"0\"");
	expect_err("receivers: [{name: a, repo: o/r}]\nwebhook:\n  max_alerts: 1000001\n",
		   "alertbridge.yml:3: webhook.max_alerts: expected an integer from 1 to 1000000, "
		   "got \"1000001\"");
	expect_err("receivers: [{name: a, repo: o/r}]\nwebhook:\n  max_alerts: [1]\n",
		   "alertbridge.yml:3: webhook.max_alerts: expected an integer from 1 to 1000000, "
		   "got a list");
}

/* ---- defaults ---- */

static void every_default(void **state)
{
	struct config *cfg = parse_ok(RCV);
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
	struct config *cfg = parse_ok("janitor:\n  enabled: true\n  policies:\n"
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
	struct config *cfg = parse_ok("janitor:\n  enabled: true\n  policies:\n"
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
	assert_non_null(strstr(buf_str(&out), "    notice_lead: 3h\n    reminder_before: 20m\n"));
	assert_non_null(strstr(buf_str(&out), "    notice_lead: 1h30m\n    reminder_before: 45m\n"));
	buf_release(&out);
	cfg_free(cfg);
	expect_err("janitor:\n  policies:\n    - alertname: A\n      notice_lead: 1h\n"
		   "      reminder_before: 1h\n",
		   "alertbridge.yml:5: janitor.policies[0].reminder_before: 1h is not less than "
		   "notice_lead (1h)");
	expect_err("janitor:\n  policies:\n    - {alertname: A, notice_lead: 0s, "
		   "reminder_before: 1m}\n",
		   "alertbridge.yml:3: janitor.policies[0].reminder_before: 1m is not less than "
		   "notice_lead (0s)");
	expect_err("janitor:\n  policies:\n    - {alertname: A, reminder_before: soon}\n",
		   "alertbridge.yml:3: janitor.policies[0].reminder_before: not a valid duration "
		   "string: \"soon\"");
}

/* "Keep until" from Slack: the policy's postpone keys and the signing secret (issue 21). */
static void postpone_keys_and_signing_secret(void **state)
{
	struct config *cfg;
	struct buf out = BUF_INIT;

	(void)state;
	cfg = parse_in("janitor:\n  enabled: true\n  policies:\n"
		       "    - {alertname: A}\n"
		       "    - {alertname: B, postpone_by: 4h, max_postpones: 0, max_lifetime: 7d}\n"
		       "  slack: {bot_token_file: token, signing_secret_file: token-bare}\n",
		       tmpdir);
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
	expect_err_in(RCV "janitor:\n  slack: {webhook_url_file: token, "
			  "signing_secret_file: token}\n", tmpdir, ERR_INVALID,
		      "alertbridge.yml:3: janitor.slack.signing_secret_file: needs bot_token_file "
		      "(the answers use chat.update)");
	expect_err("janitor:\n  policies:\n    - {alertname: A, postpone_by: 0s}\n",
		   "alertbridge.yml:3: janitor.policies[0].postpone_by: must be greater than 0s");
	expect_err("janitor:\n  policies:\n    - {alertname: A, max_postpones: -1}\n",
		   "alertbridge.yml:3: janitor.policies[0].max_postpones: expected an integer from 0 "
		   "to 100, got \"-1\"");
}

static void nulls_keep_defaults(void **state)
{
	struct config *cfg = parse_ok(RCV "listen_address: ~\nwebhook:\ngithub:\n  timeout: null\n"
				      "janitor:\n  exclude_namespaces:\n  slack: {}\n");
	(void)state;
	assert_string_equal(cfg->listen_address, ":9095");
	assert_int_equal(cfg->github.timeout_ms, 10 * S);
	assert_int_equal(cfg->janitor.exclude_namespaces.count, 1);
	assert_int_equal(cfg->webhook.max_body_bytes, 16777216);
	cfg_free(cfg);
}

/* ---- the contract files ---- */

static void design_example_loads(void **state)
{
	char path[512], dir[512];
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	const struct cfg_receiver *r;
	const struct cfg_janitor *j;
	(void)state;

	setenv("GITHUB_TOKEN", "from-env-ignored", 1);
	fixture_path(path, sizeof(path), "design.yml");
	fixture_path(dir, sizeof(dir), "");
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
	fmt_into(path, sizeof(path), "%s/templates/issue_title.mustache", dir);
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
	/* design.yml keeps the deprecated janitor.leader_election: the alias still loads. */
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

	fmt_into(path, sizeof(path), "%s/deploy/examples/alertbridge.yml", src_dir());
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

	fixture_path(path, sizeof(path), "full.yml");
	fixture_path(dir, sizeof(dir), "");
	dir[strlen(dir) - 1] = '\0';
	if (cfg_load(path, &cfg, &msg) != ERR_OK)
		fail_msg("%s", buf_str(&msg));
	assert_string_equal(cfg->listen_address, "[::1]:9096");
	assert_string_equal(cfg->database, "/var/lib/alertbridge/state.db");
	assert_int_equal(cfg->log.level, LOG_DEBUG);
	assert_int_equal(cfg->log.format, LOG_JSON);
	assert_string_equal(cfg->webhook.basic_auth.username, "alertmanager");
	assert_string_equal(cfg->webhook.basic_auth.password, "pa55word");
	fmt_into(want, sizeof(want), "%s/secrets/webhook-password", dir);
	assert_string_equal(cfg->webhook.basic_auth.password_file, want);
	fmt_into(want, sizeof(want), "%s/tls/server.crt", dir);
	assert_string_equal(cfg->webhook.tls.cert_file, want);
	assert_string_equal(cfg->webhook.tls.key_file, "/etc/tls/server.key");
	fmt_into(want, sizeof(want), "%s/tls/ca.crt", dir);
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
	fmt_into(want, sizeof(want), "%s/secrets/app.pem", dir);
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
	fmt_into(want, sizeof(want), "%s/templates/t.mustache", dir);
	assert_string_equal(r->templates.title, want);
	assert_string_equal(r->templates.refire, "/abs/refire.mustache");
	fmt_into(want, sizeof(want), "%s/templates/reopen.mustache", dir);
	assert_string_equal(r->templates.reopen, want);
	assert_int_equal(r->storm.enabled, 1);
	assert_int_equal(r->storm.storm_after_ms, 5 * M);

	j = &cfg->janitor;
	assert_int_equal(j->enabled, 1);
	assert_int_equal(j->dry_run, 0);
	fmt_into(want, sizeof(want), "%s/kube/config", dir);
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

/* ---- error classes ---- */

static void yaml_syntax_errors(void **state)
{
	(void)state;
	expect_err("a: b: c\n", "alertbridge.yml:1: yaml: mapping values are not allowed in this "
				"context");
	expect_err("receivers:\n  - name: x\n repo: y\n",
		   "alertbridge.yml:3: yaml: did not find expected key while parsing a block "
		   "mapping (line 1)");
	expect_err("listen_address: \"unterminated\n",
		   "alertbridge.yml:2: yaml: found unexpected end of stream while scanning a "
		   "quoted scalar (line 1)");
	expect_err("- a\n- b\n",
		   "alertbridge.yml:1: expected a mapping at the top level, got a list");
}

static void unknown_keys(void **state)
{
	(void)state;
	expect_err(RCV "listen: x\n", "alertbridge.yml:2: listen: unknown key");
	expect_err(RCV "webhook:\n  max_body_byte: 1\n",
		   "alertbridge.yml:3: webhook.max_body_byte: unknown key");
	expect_err("receivers:\n  - name: a\n    repo: o/r\n    title: x\n",
		   "alertbridge.yml:4: receivers[0].title: unknown key");
	expect_err(RCV "janitor:\n  slack: {token_file: x}\n",
		   "alertbridge.yml:3: janitor.slack.token_file: unknown key");
	expect_err(RCV "github:\n  timeout: 1s\n  timeout: 2s\n",
		   "alertbridge.yml:4: github.timeout: duplicate key");
}

static void wrong_types(void **state)
{
	(void)state;
	expect_err(RCV "webhook:\n  max_body_bytes: lots\n",
		   "alertbridge.yml:3: webhook.max_body_bytes: expected an integer from 1 to "
		   "1073741824, got \"lots\"");
	expect_err(RCV "webhook:\n  threads: -1\n",
		   "alertbridge.yml:3: webhook.threads: expected an integer from 1 to 1024, got "
		   "\"-1\"");
	expect_err(RCV "webhook: [a]\n",
		   "alertbridge.yml:2: webhook: expected a mapping, got a list");
	expect_err(RCV "database: {a: b}\n",
		   "alertbridge.yml:2: database: expected a string, got a mapping");
	expect_err(RCV "github: {dry_run: maybe}\n",
		   "alertbridge.yml:2: github.dry_run: expected a boolean (true or false), got "
		   "\"maybe\"");
	expect_err("receivers:\n  - {name: a, repo: o/r, labels: alert}\n",
		   "alertbridge.yml:2: receivers[0].labels: expected a list of strings, got "
		   "\"alert\"");
	expect_err("receivers:\n  - {name: a, repo: o/r, labels: [a, [b]]}\n",
		   "alertbridge.yml:2: receivers[0].labels[1]: expected a string, got a list");
	expect_err("receivers:\n  - {name: a, repo: o/r, assignees: [a, ~]}\n",
		   "alertbridge.yml:2: receivers[0].assignees[1]: expected a string, got null");
	expect_err("receivers: {name: a}\n",
		   "alertbridge.yml:1: receivers: expected a list of receivers, got a mapping");
	expect_err(RCV "janitor: {policies: JanitorIdleGPUPod}\n",
		   "alertbridge.yml:2: janitor.policies: expected a list of policies, got "
		   "\"JanitorIdleGPUPod\"");
	expect_err(RCV "github: {app: {app_id: 0, installation_id: 1, private_key_file: k}}\n",
		   "alertbridge.yml:2: github.app.app_id: expected a positive integer, got \"0\"");
	expect_err(RCV "listen_address: \"a\\0b\"\n",
		   "alertbridge.yml:2: listen_address: contains a NUL byte");
}

static void range_limits(void **state)
{
	struct config *cfg;
	(void)state;
	expect_err(RCV "github: {content_per_minute: 81}\n",
		   "alertbridge.yml:2: github.content_per_minute: "
		   "expected an integer from 1 to 80, got \"81\"");
	expect_err(RCV "github: {content_per_minute: 0}\n",
		   "alertbridge.yml:2: github.content_per_minute: "
		   "expected an integer from 1 to 80, got \"0\"");
	expect_err(RCV "webhook: {max_connections: 99999999999999999999999}\n",
		   "alertbridge.yml:2: webhook.max_connections: expected an integer from 1 to "
		   "65536, got \"99999999999999999999999\"");
	cfg = parse_ok(RCV "github: {content_per_minute: 1}\n");
	assert_int_equal(cfg->github.content_per_minute, 1);
	cfg_free(cfg);
	cfg = parse_ok(RCV "github: {content_per_minute: \"80\"}\n");
	assert_int_equal(cfg->github.content_per_minute, 80);
	cfg_free(cfg);
	expect_err(RCV "database_retention: 0s\n",
		   "alertbridge.yml:2: database_retention: must be greater than 0s");
	expect_err(RCV "database_retention: 7days\n", "alertbridge.yml:2: database_retention: "
		   "unknown unit \"days\" in duration \"7days\"");
	cfg = parse_ok(RCV "database_retention: 2s\n");
	assert_int_equal(cfg->database_retention_ms, 2 * S);
	cfg_free(cfg);
	expect_err(RCV "github: {content_per_hour: 501}\n",
		   "alertbridge.yml:2: github.content_per_hour: "
		   "expected an integer from 1 to 500, got \"501\"");
	expect_err(RCV "github:\n  content_per_hour: 0\n",
		   "alertbridge.yml:3: github.content_per_hour: "
		   "expected an integer from 1 to 500, got \"0\"");
	cfg = parse_ok(RCV "github: {content_per_hour: 60}\n");
	assert_int_equal(cfg->github.content_per_hour, 60);
	cfg_free(cfg);
}

static void enum_values(void **state)
{
	(void)state;
	expect_err("receivers:\n  - name: a\n    repo: o/r\n    issue_per: foo\n",
		   "alertbridge.yml:4: receivers[0].issue_per: "
		   "expected \"alert\" or \"group\", got \"foo\"");
	expect_err("janitor:\n  enabled: true\n  policies:\n"
		   "    - alertname: A\n      owned: kill\n",
		   "alertbridge.yml:5: janitor.policies[0].owned: expected \"scale-to-zero\", "
		   "\"delete-owner\" or \"notify-only\", got \"kill\"");
	expect_err(RCV "log: {level: verbose}\n",
		   "alertbridge.yml:2: log.level: expected debug, info, warn or error, got "
		   "\"verbose\"");
	expect_err(RCV "log: {format: text}\n",
		   "alertbridge.yml:2: log.format: expected logfmt or json, got \"text\"");
}

static void missing_required_keys(void **state)
{
	(void)state;
	expect_err("receivers:\n  - repo: o/r\n",
		   "alertbridge.yml:2: receivers[0]: missing required key \"name\"");
	expect_err("receivers:\n  - name: a\n    repo: o/r\n  - name: b\n",
		   "alertbridge.yml:4: receivers[1]: missing required key \"repo\"");
	expect_err("receivers:\n  - name: \"\"\n    repo: o/r\n",
		   "alertbridge.yml:2: receivers[0].name: must not be empty");
	expect_err("receivers:\n  -\n", "alertbridge.yml:2: receivers[0]: missing required key "
					"\"name\"");
	expect_err("janitor:\n  enabled: true\n  policies:\n    - grace: 1h\n",
		   "alertbridge.yml:4: janitor.policies[0]: missing required key \"alertname\"");
	expect_err(RCV "github:\n  app:\n    app_id: 1\n    installation_id: 2\n",
		   "alertbridge.yml:4: github.app: missing required key \"private_key_file\"");
	expect_err(RCV "webhook:\n  basic_auth: {username: am}\n",
		   "alertbridge.yml:3: webhook.basic_auth: missing required key \"password_file\"");
	expect_err(RCV "webhook:\n  tls: {cert_file: c.pem}\n",
		   "alertbridge.yml:3: webhook.tls: missing required key \"key_file\"");
	expect_err(RCV "janitor:\n  leader_election: {namespace: \"\"}\n",
		   "alertbridge.yml:3: janitor.leader_election.namespace: must not be empty");
	expect_err(RCV "leader_election: {lease_name: \"\"}\n",
		   "alertbridge.yml:2: leader_election.lease_name: must not be empty");
}

static void receivers_required_unless_janitor(void **state)
{
	struct config *cfg;
	(void)state;
	expect_err("", "alertbridge.yml:1: receivers: at least one receiver is required unless "
		       "the janitor is enabled");
	expect_err("log: {level: info}\nreceivers: []\n",
		   "alertbridge.yml:2: receivers: at least one receiver is required unless the "
		   "janitor is enabled");
	cfg = parse_ok("janitor: {enabled: true}\n");
	assert_int_equal(cfg->receivers_count, 0);
	assert_null(cfg_receiver_find(cfg, "default"));
	cfg_free(cfg);
}

static void duplicates(void **state)
{
	(void)state;
	expect_err("receivers:\n  - name: a\n    repo: o/r\n  - name: b\n    repo: o/r\n"
		   "  - name: a\n    repo: o/s\n",
		   "alertbridge.yml:6: receivers[2].name: duplicate receiver name \"a\" (also at "
		   "line 2)");
	expect_err("janitor:\n  enabled: true\n  policies:\n"
		   "    - alertname: A\n    - alertname: A\n",
		   "alertbridge.yml:5: janitor.policies[1].alertname: duplicate policy alertname "
		   "\"A\" (also at line 4)");
	expect_err(RCV "janitor:\n  slack:\n    namespace_channels: {a: \"#a\", a: \"#b\"}\n",
		   "alertbridge.yml:4: janitor.slack.namespace_channels.a: duplicate key");
}

/* web.auth.basic_auth_users: bcrypt hashes, as htpasswd -nbBC writes them; errors with the line. */
static void web_auth_users(void **state)
{
	static const char hash[] = "$2y$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6yG";
	struct config *cfg;
	char yaml[512];

	(void)state;
	cfg = parse_ok(RCV);
	assert_int_equal(cfg->web.auth.basic_auth_users_count, 0);
	cfg_free(cfg);
	fmt_into(yaml, sizeof(yaml), RCV "web:\n  auth:\n    basic_auth_users:\n"
		 "      oncall: \"%s\"\n      ops: '$2b$04$KsfkKg3KYv7M711Zh34x3OXldfa/"
		 "YEZZ2dCpwrEHKvXEeEUVGq6yG'\n", hash);
	cfg = parse_ok(yaml);
	assert_int_equal(cfg->web.auth.basic_auth_users_count, 2);
	assert_string_equal(cfg->web.auth.basic_auth_users[0].key, "oncall");
	assert_string_equal(cfg->web.auth.basic_auth_users[0].value, hash);
	assert_string_equal(cfg->web.auth.basic_auth_users[1].key, "ops");
	cfg_free(cfg);
	expect_err(RCV "web:\n  auth:\n    basic_auth_users:\n      oncall: s3cret\n",
		   "alertbridge.yml:5: web.auth.basic_auth_users.oncall: expected a bcrypt hash "
		   "($2y$, $2b$ or $2a$, cost 04-31, 60 characters: htpasswd -nbBC 10 USER "
		   "PASSWORD prints one)");
	expect_err(RCV "web:\n  auth:\n    basic_auth_users:\n"
		   "      oncall: $1$abcdefgh$0123456789012345678901234567890123456789012345678\n",
		   "alertbridge.yml:5: web.auth.basic_auth_users.oncall: expected a bcrypt hash "
		   "($2y$, $2b$ or $2a$, cost 04-31, 60 characters: htpasswd -nbBC 10 USER "
		   "PASSWORD prints one)");
	fmt_into(yaml, sizeof(yaml), RCV "web:\n  auth:\n    basic_auth_users:\n"
		 "      \"on:call\": \"%s\"\n", hash);
	expect_err(yaml, "alertbridge.yml:5: web.auth.basic_auth_users.on:call: the user name "
			 "must not contain ':' (RFC 7617)");
	expect_err(RCV "web:\n  auth:\n    basic_auth_users: [a]\n",
		   "alertbridge.yml:4: web.auth.basic_auth_users: expected a mapping of a user "
		   "name to a bcrypt hash, got a list");
	expect_err(RCV "web:\n  auth:\n    users: {}\n",
		   "alertbridge.yml:4: web.auth.users: unknown key");
}

static void invalid_durations(void **state)
{
	(void)state;
	expect_err(RCV "github:\n  timeout: 10x\n",
		   "alertbridge.yml:3: github.timeout: unknown unit \"x\" in duration \"10x\"");
	expect_err(RCV "janitor:\n  notice_batch_window: 5m1s\n",
		   "alertbridge.yml:3: janitor.notice_batch_window: 5m1s is longer than the "
		   "maximum (5m)");
	expect_err(RCV "janitor:\n  notice_batch_window: -1s\n",
		   "alertbridge.yml:3: janitor.notice_batch_window: not a valid duration string: "
		   "\"-1s\"");
	expect_err(RCV "janitor:\n  sweep_interval: 1m1h\n",
		   "alertbridge.yml:3: janitor.sweep_interval: not a valid duration string: "
		   "\"1m1h\"");
	expect_err(RCV "webhook: {read_timeout: 0}\n",
		   "alertbridge.yml:2: webhook.read_timeout: must be greater than 0s");
	expect_err(RCV "webhook: {read_timeout: 30}\n",
		   "alertbridge.yml:2: webhook.read_timeout: not a valid duration string: \"30\"");
	expect_err(RCV "webhook:\n  basic_auth: {username: \"a:b\", password_file: /etc/hostname}\n",
		   "alertbridge.yml:3: webhook.basic_auth.username: must not contain ':' (RFC 7617)");
	expect_err(RCV "webhook: {read_timeout: 500ms}\n",
		   "alertbridge.yml:2: webhook.read_timeout: must be from 1s to 24h");
	expect_err(RCV "webhook: {read_timeout: 25h}\n",
		   "alertbridge.yml:2: webhook.read_timeout: must be from 1s to 24h");
	expect_err(RCV "webhook: {read_timeout: 5s, read_header_timeout: 6s}\n",
		   "alertbridge.yml:2: webhook.read_header_timeout: must not be longer than "
		   "read_timeout");
	expect_err(RCV "github: {body_update_interval: 500ms}\n",
		   "alertbridge.yml:2: github.body_update_interval: must be between 1s and 1h");
	expect_err(RCV "github: {body_update_interval: 2h}\n",
		   "alertbridge.yml:2: github.body_update_interval: must be between 1s and 1h");
	{
		struct config *cfg = parse_ok(RCV "github: {body_update_interval: 2s}\n");
		assert_int_equal(cfg->github.body_update_interval_ms, 2 * S);
		cfg_free(cfg);
	}
	expect_err(RCV "webhook: {read_header_timeout: 0s}\n",
		   "alertbridge.yml:2: webhook.read_header_timeout: must be greater than 0s");
	expect_err(RCV "webhook: {max_connections_per_ip: -1}\n",
		   "alertbridge.yml:2: webhook.max_connections_per_ip: expected an integer from 0 "
		   "to 65536, got \"-1\"");
	expect_err("janitor:\n  enabled: true\n  policies:\n    - alertname: A\n      grace: 1h\n"
		   "      notice_lead: 90m\n",
		   "alertbridge.yml:6: janitor.policies[0].notice_lead: 1h30m is longer than grace "
		   "(1h)");
}

/* Routes: matchers parsed, what a route leaves out taken from its receiver, errors with lines. */
static void receiver_routes(void **state)
{
	struct config *cfg;
	const struct cfg_receiver *r;
	struct buf dump = BUF_INIT;

	(void)state;
	cfg = parse_ok("receivers:\n"
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
	cfg = parse_ok(buf_str(&dump));
	assert_int_equal(cfg->receivers[0].routes[0].matchers_count, 2);
	cfg_free(cfg);
	buf_release(&dump);

	expect_err("receivers:\n"
		   "  - name: a\n"
		   "    repo: o/r\n"
		   "    routes:\n"
		   "      - matchers:\n"
		   "          - team=x\n"
		   "          - 'severity=~\"(crit\"'\n",
		   "alertbridge.yml:7: receivers[0].routes[0].matchers[1]: invalid regex \"(crit\": "
		   "missing closing parenthesis");
	expect_err("receivers:\n"
		   "  - name: a\n"
		   "    repo: o/r\n"
		   "    routes: [{matchers: [=x]}]\n",
		   "alertbridge.yml:4: receivers[0].routes[0].matchers[0]: bad matcher format: =x; "
		   "UTF-8 grammar: 0:1: unexpected =: expected label name");
	expect_err("receivers:\n"
		   "  - name: a\n"
		   "    repo: o/r\n"
		   "    routes: [{matchers: [a=b], repo: \"{{#labels}}/x\"}]\n",
		   "alertbridge.yml:4: receivers[0].routes[0].repo: invalid template "
		   "\"{{#labels}}/x\": line 1 col 1: tag \"{{#labels}}\": section never closed (no "
		   "\"/labels\" tag follows)");
	expect_err("receivers: [{name: a, repo: o/r, routes: [{matchers: [a=b], repo: x}]}]\n",
		   "alertbridge.yml:1: receivers[0].routes[0].repo: expected \"owner/name\" or a "
		   "template, got \"x\"");
	expect_err("receivers: [{name: a, repo: o/r, routes: [{matcher: [a=b]}]}]\n",
		   "alertbridge.yml:1: receivers[0].routes[0].matcher: unknown key");
}

static void value_formats(void **state)
{
	(void)state;
	expect_err("receivers: [{name: a, repo: cluster-alerts}]\n",
		   "alertbridge.yml:1: receivers[0].repo: expected \"owner/name\" or a "
		   "template, got \"cluster-alerts\"");
	expect_err("receivers: [{name: a, repo: a/b/c}]\n",
		   "alertbridge.yml:1: receivers[0].repo: expected \"owner/name\" or a template, "
		   "got \"a/b/c\"");
	expect_err(RCV "listen_address: 9095\n",
		   "alertbridge.yml:2: listen_address: expected host:port or :port, got \"9095\"");
	expect_err(RCV "listen_address: \"::1:9095\"\n",
		   "alertbridge.yml:2: listen_address: expected host:port or :port, got "
		   "\"::1:9095\"");
	expect_err(RCV "listen_address: \"localhost:http\"\n",
		   "alertbridge.yml:2: listen_address: expected host:port or :port, got "
		   "\"localhost:http\"");
	expect_err(RCV "listen_address: \"\"\n", "alertbridge.yml:2: listen_address: must not be "
						 "empty");
	expect_err(RCV "github: {api_url: api.github.com}\n",
		   "alertbridge.yml:2: github.api_url: expected an http:// or https:// URL, got "
		   "\"api.github.com\"");
	expect_err(RCV "janitor: {slack: {api_url: \"\"}}\n",
		   "alertbridge.yml:2: janitor.slack.api_url: expected an http:// or https:// URL, "
		   "got \"\"");
}

static void mutually_exclusive(void **state)
{
	(void)state;
	expect_err_in(RCV "webhook:\n  bearer_token_file: token\n  basic_auth:\n    username: u\n"
			  "    password_file: token\n",
		      tmpdir, ERR_INVALID,
		      "alertbridge.yml:4: webhook.basic_auth: cannot be used together with "
		      "bearer_token_file");
	expect_err_in(RCV "github:\n  token_file: token\n  app: {app_id: 1, installation_id: 2, "
			  "private_key_file: k.pem}\n",
		      tmpdir, ERR_INVALID,
		      "alertbridge.yml:4: github.app: cannot be used together with token_file");
	expect_err_in(RCV "janitor:\n  slack:\n    bot_token_file: token\n"
			  "    webhook_url_file: token\n",
		      tmpdir, ERR_INVALID,
		      "alertbridge.yml:5: janitor.slack.webhook_url_file: cannot be used together "
		      "with bot_token_file");
}

/* ---- secrets and paths ---- */

static void secrets_read_and_stripped(void **state)
{
	struct config *cfg;
	(void)state;
	cfg = parse_in(RCV "webhook: {bearer_token_file: token}\ngithub: {token_file: token-crlf}\n"
			   "janitor: {slack: {bot_token_file: token-bare}}\n",
		       tmpdir);
	assert_string_equal(cfg->webhook.bearer_token, "s3cret-token");
	assert_string_equal(cfg->github.token, "crlf-token");
	assert_string_equal(cfg->janitor.slack.bot_token, "bare-token");
	cfg_free(cfg);
}

/* alertmanager (silences from GitHub issues): top level, inherited, overridden, checked. */
static void alertmanager_section(void **state)
{
	struct config *cfg;
	char want[512];

	(void)state;
	cfg = parse_in("alertmanager: {url: \"http://am:9093/\", bearer_token_file: token}\n"
		       "github: {webhook_secret_file: token-bare}\n"
		       "receivers:\n"
		       "  - {name: a, repo: o/r}\n"
		       "  - {name: b, repo: o/r, alertmanager: {url: \"https://am2\", max_silence: 1d}}\n",
		       tmpdir);
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
	cfg = parse_ok(RCV);
	assert_null(cfg->alertmanager.url);
	assert_null(cfg->receivers[0].alertmanager.url);
	assert_null(cfg->github.webhook_secret);
	cfg_free(cfg);
	expect_err(RCV "alertmanager: {url: \"am:9093\"}\n",
		   "alertbridge.yml:2: alertmanager.url: expected an http:// or https:// URL, got "
		   "\"am:9093\"");
	expect_err_in(RCV "alertmanager: {url: \"http://am\", bearer_token_file: token, "
			  "basic_auth: {username: u, password_file: token}}\n", tmpdir, ERR_INVALID,
		      "alertbridge.yml:2: alertmanager.basic_auth: cannot be used together with "
		      "bearer_token_file");
	expect_err("receivers: [{name: a, repo: o/r, alertmanager: {timeout: 0s}}]\n",
		   "alertbridge.yml:1: receivers[0].alertmanager.timeout: must be greater than 0s");
	fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: github.webhook_secret_file: cannot read \"%s/missing\": No "
		 "such file or directory",
		 tmpdir);
	expect_err_in(RCV "github: {webhook_secret_file: missing}\n", tmpdir, ERR_IO, want);
}

/* Each receiver's effective alertmanager block is in the dump, which reads back the same. */
static void alertmanager_dump(void **state)
{
	struct config *cfg, *again;
	struct buf out = BUF_INIT;

	(void)state;
	cfg = parse_in("alertmanager: {url: \"http://am:9093\", bearer_token_file: token}\n"
		       "receivers:\n"
		       "  - {name: a, repo: o/r}\n"
		       "  - {name: b, repo: o/r, alertmanager: {url: \"https://am2\", max_silence: 1d}}\n",
		       tmpdir);
	cfg_dump(cfg, &out);
	assert_non_null(strstr(buf_str(&out), "- name: \"b\"\n"));
	assert_non_null(strstr(buf_str(&out), "  alertmanager:\n    url: \"https://am2\"\n"
					      "    timeout: 10s\n    max_silence: 1d\n"));
	assert_non_null(strstr(strstr(buf_str(&out), "- name: \"a\"\n"),
			       "  alertmanager:\n    url: \"http://am:9093\"\n"
			       "    bearer_token_file: "));
	assert_null(strstr(buf_str(&out), "s3cret-token"));
	again = parse_ok(buf_str(&out));
	assert_string_equal(again->receivers[1].alertmanager.url, "https://am2");
	assert_int_equal(again->receivers[1].alertmanager.max_silence_ms, 86400000LL);
	assert_null(again->receivers[1].alertmanager.bearer_token);
	assert_string_equal(again->receivers[0].alertmanager.bearer_token, "s3cret-token");
	cfg_free(again);
	cfg_free(cfg);
	buf_release(&out);
}

/* web.public_listen_address and web.public_tls: parsed, checked, dumped. */
static void web_public_listener(void **state)
{
	struct config *cfg, *again;
	struct buf out = BUF_INIT;

	(void)state;
	cfg = parse_ok(RCV);
	assert_null(cfg->web.public_listen_address);
	assert_null(cfg->web.public_tls.cert_file);
	cfg_dump(cfg, &out);
	assert_null(strstr(buf_str(&out), "public_"));
	cfg_free(cfg);
	buf_reset(&out);
	cfg = parse_in(RCV "web:\n  public_listen_address: \":9096\"\n"
		       "  public_tls: {cert_file: pub.crt, key_file: pub.key}\n", "/etc/ab");
	assert_string_equal(cfg->web.public_listen_address, ":9096");
	assert_string_equal(cfg->web.public_tls.cert_file, "/etc/ab/pub.crt");
	assert_string_equal(cfg->web.public_tls.key_file, "/etc/ab/pub.key");
	assert_null(cfg->web.public_tls.client_ca_file);
	cfg_dump(cfg, &out);
	assert_non_null(strstr(buf_str(&out), "  public_listen_address: \":9096\"\n  public_tls:\n"
					      "    cert_file: \"/etc/ab/pub.crt\"\n"));
	again = parse_ok(buf_str(&out));
	assert_string_equal(again->web.public_listen_address, ":9096");
	assert_string_equal(again->web.public_tls.key_file, "/etc/ab/pub.key");
	cfg_free(again);
	cfg_free(cfg);
	buf_release(&out);
	expect_err(RCV "web: {public_listen_address: \"9096\"}\n",
		   "alertbridge.yml:2: web.public_listen_address: expected host:port or :port, "
		   "got \"9096\"");
	expect_err(RCV "web: {public_listen_address: \":9095\"}\n",
		   "alertbridge.yml:2: web.public_listen_address: must differ from listen_address "
		   "\":9095\"");
	expect_err(RCV "web: {public_tls: {cert_file: a, key_file: b}}\n",
		   "alertbridge.yml:2: web.public_tls: needs public_listen_address");
	expect_err(RCV "web: {public_listen_address: \":9096\", public_tls: {cert_file: a}}\n",
		   "alertbridge.yml:2: web.public_tls: missing required key \"key_file\"");
}

static void secret_file_errors(void **state)
{
	char want[512];
	(void)state;
	fmt_into(want, sizeof(want),
		 "alertbridge.yml:3: github.token_file: cannot read \"%s/missing\": No such file "
		 "or directory",
		 tmpdir);
	expect_err_in(RCV "github:\n  token_file: missing\n", tmpdir, ERR_IO, want);
	expect_err_in(RCV "webhook:\n  bearer_token_file: /nonexistent/alertbridge/token\n", NULL,
		      ERR_IO,
		      "alertbridge.yml:3: webhook.bearer_token_file: cannot read "
		      "\"/nonexistent/alertbridge/token\": No such file or directory");
	fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: webhook.bearer_token_file: \"%s/empty\" is empty", tmpdir);
	expect_err_in(RCV "webhook: {bearer_token_file: empty}\n", tmpdir, ERR_INVALID, want);
	fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: janitor.slack.webhook_url_file: \"%s/multi\" must hold one "
		 "line (a newline or NUL byte inside)",
		 tmpdir);
	expect_err_in(RCV "janitor: {slack: {webhook_url_file: multi}}\n", tmpdir, ERR_INVALID,
		      want);
	fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: github.token_file: \"%s/token-2nl\" must hold one line (a "
		 "newline or NUL byte inside)",
		 tmpdir);
	expect_err_in(RCV "github: {token_file: token-2nl}\n", tmpdir, ERR_INVALID, want);
	fmt_into(want, sizeof(want),
		 "alertbridge.yml:2: webhook.basic_auth.password_file: cannot read \"%s/.\": Is a "
		 "directory",
		 tmpdir);
	expect_err_in(RCV "webhook: {basic_auth: {username: u, password_file: .}}\n", tmpdir,
		      ERR_IO, want);
}

static void github_token_env_fallback(void **state)
{
	struct config *cfg;
	(void)state;
	setenv("GITHUB_TOKEN", "env-token", 1);
	cfg = parse_ok(RCV);
	assert_string_equal(cfg->github.token, "env-token");
	assert_int_equal(cfg->github.token_from_env, 1);
	cfg_free(cfg);

	cfg = parse_in(RCV "github: {token_file: token}\n", tmpdir);
	assert_string_equal(cfg->github.token, "s3cret-token");
	assert_int_equal(cfg->github.token_from_env, 0);
	cfg_free(cfg);

	cfg = parse_in(RCV "github: {app: {app_id: 1, installation_id: 2, private_key_file: k.pem}}\n",
		       tmpdir);
	assert_null(cfg->github.token);
	assert_int_equal(cfg->github.token_from_env, 0);
	cfg_free(cfg);

	setenv("GITHUB_TOKEN", "", 1);
	cfg = parse_ok(RCV);
	assert_null(cfg->github.token);
	cfg_free(cfg);
	unsetenv("GITHUB_TOKEN");
	cfg = parse_ok(RCV);
	assert_null(cfg->github.token);
	cfg_free(cfg);
}

/* Parse yaml in tmpdir expecting rc and an error message containing each of want[]. */
static void expect_err_has(const char *yaml, enum err want_rc, const char *const *want)
{
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;

	assert_int_equal(cfg_parse(yaml, strlen(yaml), "alertbridge.yml", tmpdir, &cfg, &msg),
			 want_rc);
	for (; *want; want++)
		if (!strstr(buf_str(&msg), *want))
			fail_msg("\"%s\" lacks \"%s\"", buf_str(&msg), *want);
	assert_null(cfg);
	buf_release(&msg);
}

/* github.app: the key is read and must be an RSA private key; installation_id optional. */
static void github_app_key_checked(void **state)
{
	struct config *cfg;
	char want[512];
	(void)state;

	cfg = parse_in(RCV "github:\n  app: {app_id: 7, private_key_file: k.pem}\n", tmpdir);
	assert_int_equal(cfg->github.app.app_id, 7);
	assert_int_equal(cfg->github.app.installation_id, 0);
	fmt_into(want, sizeof(want), "%s/k.pem", tmpdir);
	assert_string_equal(cfg->github.app.private_key_file, want);
	assert_non_null(strstr(cfg->github.app.private_key, "-----BEGIN RSA PRIVATE KEY-----"));
	cfg_free(cfg);
	cfg = parse_in(RCV "github:\n  app: {app_id: 7, private_key_file: k8.pem}\n", tmpdir);
	assert_non_null(strstr(cfg->github.app.private_key, "-----BEGIN PRIVATE KEY-----"));
	cfg_free(cfg);

	expect_err_has(RCV "github:\n  app:\n    app_id: 7\n    private_key_file: ec.pem\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:5: github.app.private_key_file: \"",
			       "/ec.pem\" is a EC", "key, not an RSA private key", NULL });
	expect_err_has(RCV "github:\n  app:\n    app_id: 7\n    private_key_file: token\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:5: github.app.private_key_file: \"",
			       "/token\" is not a PEM private key (PKCS#1 or PKCS#8", NULL });
	expect_err_has(RCV "github:\n  app:\n    app_id: 7\n    private_key_file: nope.pem\n",
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

	cfg = parse_in(RCV "github:\n  token_file: token\n  credentials:\n"
			   "    - {owner: Acme, token_file: token-bare}\n"
			   "    - owner: ml-team\n      app: {app_id: 9, installation_id: 3, "
			   "private_key_file: k.pem}\n",
		       tmpdir);
	assert_int_equal(cfg->github.credentials_count, 2);
	assert_string_equal(cfg->github.credentials[0].owner, "Acme");
	assert_string_equal(cfg->github.credentials[0].token, "bare-token");
	assert_int_equal(cfg->github.credentials[0].app.app_id, 0);
	assert_string_equal(cfg->github.credentials[1].owner, "ml-team");
	assert_null(cfg->github.credentials[1].token);
	assert_int_equal(cfg->github.credentials[1].app.app_id, 9);
	assert_non_null(cfg->github.credentials[1].app.private_key);
	cfg_dump(cfg, &dump);
	assert_non_null(strstr(buf_str(&dump), "  credentials:\n  - owner: \"Acme\"\n"));
	assert_non_null(strstr(buf_str(&dump), "    # token: <secret>\n"));
	assert_non_null(strstr(buf_str(&dump), "      app_id: 9\n      installation_id: 3\n"));
	assert_null(strstr(buf_str(&dump), "bare-token"));
	assert_null(strstr(buf_str(&dump), "PRIVATE KEY"));
	cfg_free(cfg);
	buf_release(&dump);

	expect_err_has(RCV "github:\n  credentials:\n    - {owner: acme, token_file: token}\n"
			   "    - {owner: ACME, token_file: token}\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:5: github.credentials[1].owner: duplicate owner "
			       "\"ACME\" (also at line 4)", NULL });
	expect_err_has(RCV "github:\n  credentials:\n    - {owner: acme}\n", ERR_INVALID,
		       (const char *const[]){
			       "alertbridge.yml:4: github.credentials[0]: needs token_file or app",
			       NULL });
	expect_err_has(RCV "github:\n  credentials:\n    - owner: acme\n      token_file: token\n"
			   "      app: {app_id: 1, private_key_file: k.pem}\n",
		       ERR_INVALID, (const char *const[]){
			       "alertbridge.yml:6: github.credentials[0].app: cannot be used "
			       "together with token_file", NULL });
	expect_err_has(RCV "github:\n  credentials:\n    - {token_file: token}\n", ERR_INVALID,
		       (const char *const[]){ "github.credentials[0]: missing required key "
					      "\"owner\"", NULL });
	expect_err_has(RCV "github:\n  credentials:\n    - owner: acme\n"
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
	cfg = parse_in(yaml, "/etc/alertbridge");
	assert_string_equal(cfg->database, "data/ab.db"); /* working directory, not resolved */
	assert_string_equal(cfg->receivers[0].templates.title, "/etc/alertbridge/t/title.mustache");
	assert_string_equal(cfg->receivers[0].templates.body, "/abs/body.mustache");
	assert_string_equal(cfg->janitor.kubernetes.kubeconfig, "/etc/alertbridge/kube.yaml");
	assert_string_equal(cfg->base_dir, "/etc/alertbridge");
	cfg_free(cfg);

	cfg = parse_in(yaml, "/etc/alertbridge/");
	assert_string_equal(cfg->janitor.kubernetes.kubeconfig, "/etc/alertbridge/kube.yaml");
	cfg_free(cfg);

	cfg = parse_in(yaml, NULL);
	assert_string_equal(cfg->receivers[0].templates.title, "t/title.mustache");
	cfg_free(cfg);
	cfg = parse_in(yaml, ".");
	assert_string_equal(cfg->receivers[0].templates.title, "t/title.mustache");
	cfg_free(cfg);
}

static void load_resolves_against_file_dir(void **state)
{
	char path[256], want[512];
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	(void)state;

	write_file("alertbridge.yml", RCV "github: {token_file: token}\n"
					  "janitor: {kubernetes: {kubeconfig: kc}}\n");
	fmt_into(path, sizeof(path), "%s/alertbridge.yml", tmpdir);
	if (cfg_load(path, &cfg, &msg) != ERR_OK)
		fail_msg("%s", buf_str(&msg));
	assert_string_equal(cfg->github.token, "s3cret-token");
	fmt_into(want, sizeof(want), "%s/kc", tmpdir);
	assert_string_equal(cfg->janitor.kubernetes.kubeconfig, want);
	assert_string_equal(cfg->path, path);
	cfg_free(cfg);

	/* Errors name the path as given. */
	write_file("alertbridge.yml", RCV "bogus: 1\n");
	assert_int_equal(cfg_load(path, &cfg, &msg), ERR_INVALID);
	fmt_into(want, sizeof(want), "%s:2: bogus: unknown key", path);
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

/* ---- YAML forms ---- */

static void booleans_yaml11(void **state)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "on", "ON" };
	static const char *const no[] = { "false", "False", "no", "NO", "off", "Off" };
	char yaml[128];
	struct config *cfg;
	(void)state;
	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		fmt_into(yaml, sizeof(yaml), RCV "github: {dry_run: %s}\n", yes[i]);
		cfg = parse_ok(yaml);
		assert_int_equal(cfg->github.dry_run, 1);
		cfg_free(cfg);
	}
	for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++) {
		fmt_into(yaml, sizeof(yaml), RCV "janitor: {dry_run: %s}\n", no[i]);
		cfg = parse_ok(yaml);
		assert_int_equal(cfg->janitor.dry_run, 0);
		cfg_free(cfg);
	}
	expect_err(RCV "github: {dry_run: 1}\n",
		   "alertbridge.yml:2: github.dry_run: "
		   "expected a boolean (true or false), got \"1\"");
	expect_err(RCV "github: {dry_run: y}\n",
		   "alertbridge.yml:2: github.dry_run: "
		   "expected a boolean (true or false), got \"y\"");
}

static void lists_flow_and_block(void **state)
{
	struct config *cfg;
	(void)state;
	cfg = parse_ok(RCV "janitor:\n  exclude_namespaces:\n    - kube-system\n    - \"gpu ops\"\n"
			   "    - 'x'\n");
	assert_int_equal(cfg->janitor.exclude_namespaces.count, 3);
	assert_string_equal(cfg->janitor.exclude_namespaces.items[1], "gpu ops");
	assert_string_equal(cfg->janitor.exclude_namespaces.items[2], "x");
	assert_null(cfg->janitor.exclude_namespaces.items[3]);
	cfg_free(cfg);
	cfg = parse_ok(RCV "janitor: {exclude_namespaces: []}\n");
	assert_int_equal(cfg->janitor.exclude_namespaces.count, 0);
	assert_null(cfg->janitor.exclude_namespaces.items[0]);
	cfg_free(cfg);
}

static void anchors_and_aliases(void **state)
{
	struct config *cfg = parse_ok("receivers:\n"
				      "  - &r {name: a, repo: o/r, labels: &l [x, y]}\n"
				      "  - {name: b, repo: o/s, labels: *l}\n");
	(void)state;
	assert_int_equal(cfg->receivers[1].labels.count, 2);
	assert_string_equal(cfg->receivers[1].labels.items[1], "y");
	cfg_free(cfg);
}

/* ---- dump ---- */

static void dump_masks_secrets_and_reloads(void **state)
{
	struct config *cfg, *again;
	struct buf out = BUF_INIT, out2 = BUF_INIT, msg = BUF_INIT;
	(void)state;
	setenv("GITHUB_TOKEN", "env-secret-value", 1);
	cfg = parse_in("receivers:\n  - name: \"we\\\"ird\"\n    repo: o/r\n"
		       "    labels: [\"a\\tb\", \"severity:{{labels.severity}}\"]\n"
		       "webhook: {bearer_token_file: token}\n"
		       "janitor:\n  policies: [{alertname: A, message: \"line1\\nline2\"}]\n"
		       "  slack: {bot_token_file: token-bare, namespace_channels: {ns: \"#c\"}}\n"
		       "web: {auth: {basic_auth_users: {oncall: \"$2y$04$KsfkKg3KYv7M711Zh34x3OXl"
		       "dfa/YEZZ2dCpwrEHKvXEeEUVGq6yG\"}}}\n",
		       tmpdir);
	cfg_dump(cfg, &out);
	assert_null(strstr(buf_str(&out), "s3cret-token"));
	assert_null(strstr(buf_str(&out), "bare-token"));
	assert_null(strstr(buf_str(&out), "env-secret-value"));
	assert_non_null(strstr(buf_str(&out), "  # bearer_token: <secret>\n"));
	assert_non_null(strstr(buf_str(&out), "  # token: <secret> (from GITHUB_TOKEN)\n"));
	assert_non_null(strstr(buf_str(&out), "    # bot_token: <secret>\n"));
	assert_non_null(strstr(buf_str(&out), "listen_address: \":9095\"\n"));
	assert_non_null(strstr(buf_str(&out), "  reopen_window: 1w\n"));
	assert_non_null(strstr(buf_str(&out), "- name: \"we\\\"ird\"\n"));

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
		cmocka_unit_test(receiver_routes),
		cmocka_unit_test(policy_defaults),
		cmocka_unit_test(policy_reminder_before),
		cmocka_unit_test(postpone_keys_and_signing_secret),
		cmocka_unit_test(nulls_keep_defaults),
		cmocka_unit_test(design_example_loads),
		cmocka_unit_test(deploy_example_loads),
		cmocka_unit_test(every_key_is_read),
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
		cmocka_unit_test(secrets_read_and_stripped),
		cmocka_unit_test(secret_file_errors),
		cmocka_unit_test(alertmanager_section),
		cmocka_unit_test(alertmanager_dump),
		cmocka_unit_test(web_public_listener),
		cmocka_unit_test(github_token_env_fallback),
		cmocka_unit_test(relative_paths_resolved),
		cmocka_unit_test(load_resolves_against_file_dir),
		cmocka_unit_test(load_missing_file),
		cmocka_unit_test(booleans_yaml11),
		cmocka_unit_test(lists_flow_and_block),
		cmocka_unit_test(anchors_and_aliases),
		cmocka_unit_test(dump_masks_secrets_and_reloads),
		cmocka_unit_test(free_accepts_null),
		cmocka_unit_test(webhook_max_alerts),
		cmocka_unit_test(leader_election_top_level_and_alias),
		cmocka_unit_test(github_app_key_checked),
		cmocka_unit_test(github_credentials),
	};
	return cmocka_run_group_tests(tests, setup, teardown);
}
