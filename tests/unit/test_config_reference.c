/*
 * test_config_reference.c - the walks of the loader's tables that are not a
 * parse: cfg_each_key() (every key of struct config with its reload class,
 * what reload.c keeps at its running value) and cfg_reference() (the
 * Markdown reference: defaults read from the defaults, bounds, classes),
 * and cfg_dump() as a walk of the same tables.
 * That the reference equals docs/configuration.md, and that every key the
 * loader accepts has its row, is tests/integration/test_config_reference.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/config.h"

struct seen {
	const char *path;
	struct cfg_key key;
	int found;
	size_t keys, restart;
};

static void find_key(const struct cfg_key *k, void *arg)
{
	struct seen *s = arg;

	s->keys++;
	s->restart += k->reload != CFG_LIVE;
	assert_non_null(strchr("abcdefghijklmnopqrstuvwxyz", k->path[0]));
	assert_null(strchr(k->path, '['));  /* records are left out */
	if (strcmp(k->path, s->path))
		return;
	s->key = *k;
	s->key.path = NULL;  /* lives for the call only */
	s->found++;
}

static struct seen key_of(const char *path)
{
	struct seen s;

	memset(&s, 0, sizeof(s));
	s.path = path;
	cfg_each_key(find_key, &s);
	return s;
}

/* path is a key of reload class r, kind kind, stored at off. */
static void expect_key(const char *path, enum cfg_reload r, enum cfg_kind kind, size_t off)
{
	struct seen s = key_of(path);

	assert_int_equal(s.found, 1);
	assert_int_equal(s.key.reload, r);
	assert_int_equal(s.key.kind, kind);
	assert_int_equal(s.key.off, off);
}

static void keys_and_reload_classes(void **state)
{
	struct seen all = key_of("");

	(void)state;
	expect_key("listen_address", CFG_RESTART, CFG_KIND_STR,
		   offsetof(struct config, listen_address));
	expect_key("database_statement_timeout", CFG_RESTART, CFG_KIND_I64,
		   offsetof(struct config, database_statement_timeout_ms));
	expect_key("log.level", CFG_RESTART, CFG_KIND_INT, offsetof(struct config, log.level));
	expect_key("webhook.max_body_bytes", CFG_RESTART, CFG_KIND_SIZE,
		   offsetof(struct config, webhook.max_body_bytes));
	expect_key("webhook.threads", CFG_RESTART, CFG_KIND_UNSIGNED,
		   offsetof(struct config, webhook.threads));
	/* A restart mapping holds for every key inside, though its rows say live. */
	expect_key("webhook.tls.cert_file", CFG_RESTART, CFG_KIND_STR,
		   offsetof(struct config, webhook.tls.cert_file));
	expect_key("github.app.app_id", CFG_RESTART, CFG_KIND_I64,
		   offsetof(struct config, github.app.app_id));
	expect_key("leader_election.identity", CFG_RESTART, CFG_KIND_STR,
		   offsetof(struct config, leader_election.identity));
	/* An alias (janitor.leader_election) is a name, not a key of its own. */
	assert_int_equal(key_of("janitor.leader_election.identity").found, 0);
	/* Presence: compared by the secret's contents, which reload. */
	expect_key("github.token_file", CFG_RESTART_PRESENCE, CFG_KIND_STR,
		   offsetof(struct config, github.token));
	expect_key("janitor.slack.bot_token_file", CFG_RESTART_PRESENCE, CFG_KIND_STR,
		   offsetof(struct config, janitor.slack.bot_token));
	/* Live keys; the same tables under a live mapping (credentials' app) stay live. */
	expect_key("webhook.bearer_token_file", CFG_LIVE, CFG_KIND_STR,
		   offsetof(struct config, webhook.bearer_token_file));
	expect_key("alertmanager.basic_auth.username", CFG_LIVE, CFG_KIND_STR,
		   offsetof(struct config, alertmanager.basic_auth.username));
	expect_key("janitor.exclude_namespaces", CFG_LIVE, CFG_KIND_OTHER,
		   offsetof(struct config, janitor.exclude_namespaces));
	expect_key("web.auth.basic_auth_users", CFG_RESTART, CFG_KIND_OTHER,
		   offsetof(struct config, web.auth));  /* its parser's: the mapping's */
	assert_int_equal(key_of("receivers").found, 0);
	assert_int_equal(key_of("github.credentials").found, 0);
	assert_int_equal(key_of("webhook.tls").found, 0);  /* mappings themselves left out */
	/* The 43 keys reload.c kept by hand before issue 20, and web.auth's users. */
	assert_int_equal(all.restart, 44);
	assert_true(all.keys > all.restart);
}

static void reference_rows(void **state)
{
	struct buf out = BUF_INIT;
	const char *s;

	(void)state;
	cfg_reference(&out);
	s = buf_str(&out);
	assert_non_null(strstr(s, "# Configuration reference\n"));
	/* Defaults read from a default configuration, written as cfg_dump() writes them. */
	assert_non_null(strstr(s, "| `listen_address` | string | `\":9095\"` |  | restart | "));
	assert_non_null(strstr(s, "| `webhook.max_alerts` | integer | `10000` | 1 to 1000000 | "
			       "restart | "));
	assert_non_null(strstr(s, "| `janitor.exclude_namespaces` | list of strings | "
			       "`[\"kube-system\"]` |  | live | "));
	assert_non_null(strstr(s, "| `log.level` | one of `debug`, `info`, `warn`, `error` | "
			       "`info` |"));
	/* Records: their own defaults (receiver_defaults(), policy_defaults()). */
	assert_non_null(strstr(s, "| `receivers[].auto_close` | boolean | `true` |"));
	assert_non_null(strstr(s, "| `janitor.policies[].max_postpones` | integer | `3` | "
			       "0 to 100 |"));
	assert_non_null(strstr(s, "| `janitor.policies[].reminder_before` | duration | "
			       "notice_lead / 2 |"));
	/* Defaults in words; nothing read from this host. */
	assert_non_null(strstr(s, "| `leader_election.identity` | string | "
			       "the host name |"));
	/* An alias: its row names the key it stands for, and it has no section. */
	assert_non_null(strstr(s, "| `janitor.leader_election` | mapping |  |  | restart | "
			       "Deprecated alias of `leader_election`"));
	assert_null(strstr(s, "`janitor.leader_election.identity`"));
	assert_non_null(strstr(s, "| `receivers[].alertmanager.timeout` | duration | "
			       "the top level's |"));
	assert_non_null(strstr(s, "| `github.token_file` | path (secret file) | `null` |  | "
			       "restart to add or remove | "));
	assert_non_null(strstr(s, "\n## `receivers[].routes[].templates`\n"));
	assert_non_null(strstr(s, "\n## `github.credentials[].app`\n"));
	assert_non_null(strstr(s, "| `github.credentials[].app.app_id` | integer | required | "
			       ">= 1 | live | "));
	buf_release(&out);
}

/* The dump walks the tables: every top-level key in their order, the unset ones left out. */
static void dump_walks_the_tables(void **state)
{
	static const char yaml[] = "database_statement_timeout: 4s\n"
				   "receivers: [{name: r, repo: o/r, issue_per: group}]\n";
	struct config *cfg = NULL, *again = NULL;
	struct buf out = BUF_INIT, msg = BUF_INIT;
	const char *s;

	(void)state;
	assert_int_equal(cfg_parse(yaml, sizeof(yaml) - 1, "t.yml", NULL, &cfg, &msg), ERR_OK);
	cfg_dump(cfg, &out);
	s = buf_str(&out);
	assert_non_null(strstr(s, "\nlisten_address: \":9095\"\ndatabase: \"alertbridge.db\"\n"
			       "database_retention: 1w\ndatabase_statement_timeout: 4s\nlog:\n"
			       "  level: info\n  format: logfmt\nwebhook:\n"));
	assert_non_null(strstr(s, "\nweb:\n  auth:\n    basic_auth_users: {}\ngithub:\n"));
	assert_non_null(strstr(s, "  issue_per: \"group\"\n"));  /* D_QUOTE */
	assert_null(strstr(s, "database_password_file"));      /* D_OMIT */
	assert_null(strstr(s, "basic_auth:"));
	assert_null(strstr(s, "installation_id"));
	assert_null(strstr(s, "routes:"));
	assert_null(strstr(s, "\nalertmanager:"));
	assert_non_null(strstr(s, "  policies: []\n"));
	/* It reads back to the same meaning, the statement timeout included. */
	assert_int_equal(cfg_parse(s, out.len, "dump", NULL, &again, &msg), ERR_OK);
	assert_int_equal(again->database_statement_timeout_ms, 4000);
	cfg_free(again);
	cfg_free(cfg);
	buf_release(&out);
	buf_release(&msg);
}

UNIT_MAIN(
	cmocka_unit_test(keys_and_reload_classes),
	cmocka_unit_test(reference_rows),
	cmocka_unit_test(dump_walks_the_tables))
