/*
 * config_dump.c - cfg_dump(): the effective configuration as YAML, written by
 * libyaml's emitter (events in, text out) for `alertbridge check-config`.
 * Strings are double-quoted scalars, lists flow sequences; libyaml writes a
 * block sequence inside a mapping without indenting it ("receivers:\n- name:").
 * The emitter writes no comments, so a hidden secret is emitted as a key with
 * COMMENT_PREFIX and turned into "# key: <secret>" afterwards.
 */
#include "config_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "duration.h"
#include "matchers.h"
#include "banned.h"

/* A key no configuration has (not [a-z_]): only ours start a line with it. */
#define COMMENT_PREFIX "alertbridge-comment-"

struct emitter {
	yaml_emitter_t e;
	int failed;
};

static int write_out(void *data, unsigned char *p, size_t n)
{
	return buf_add(data, p, n) == ERR_OK;
}

static void emit(struct emitter *y, yaml_event_t *ev, int initialised)
{
	/* Event set-up fails only without memory; emitting only on a bad event order. */
	if (!initialised || y->failed || !yaml_emitter_emit(&y->e, ev))
		y->failed = 1;
}

static void scalar(struct emitter *y, const char *s, yaml_scalar_style_t style)
{
	yaml_event_t ev;

	if (!s) {
		s = "null";
		style = YAML_PLAIN_SCALAR_STYLE;
	}
	emit(y, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
						  (int)strlen(s), 1, 1, style));
}

static void plain(struct emitter *y, const char *s)
{
	scalar(y, s, YAML_PLAIN_SCALAR_STYLE);
}

static void quoted(struct emitter *y, const char *s)
{
	scalar(y, s, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

static void map_start(struct emitter *y, int flow)
{
	yaml_event_t ev;

	emit(y, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
		flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
}

static void map_end(struct emitter *y)
{
	yaml_event_t ev;

	emit(y, &ev, yaml_mapping_end_event_initialize(&ev));
}

static void seq_start(struct emitter *y, int flow)
{
	yaml_event_t ev;

	emit(y, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
		flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
}

static void seq_end(struct emitter *y)
{
	yaml_event_t ev;

	emit(y, &ev, yaml_sequence_end_event_initialize(&ev));
}

static void kv_str(struct emitter *y, const char *key, const char *value)
{
	plain(y, key);
	quoted(y, value);
}

/* key: file, then the comment "# secret_name: <secret>" when the secret was read. */
static void kv_secret(struct emitter *y, const char *key, const char *file,
		      const char *secret_name, const char *secret)
{
	char k[128];

	if (!file)
		return;
	kv_str(y, key, file);
	if (secret) {
		snprintf(k, sizeof(k), COMMENT_PREFIX "%s", secret_name);
		plain(y, k);
		plain(y, "<secret>");
	}
}

static void kv_dur(struct emitter *y, const char *key, int64_t ms)
{
	struct buf d = BUF_INIT;

	duration_format(ms, &d);
	plain(y, key);
	plain(y, buf_str(&d));
	buf_release(&d);
}

static void kv_num(struct emitter *y, const char *key, uint64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	plain(y, key);
	plain(y, s);
}

static void kv_bool(struct emitter *y, const char *key, int v)
{
	plain(y, key);
	plain(y, v ? "true" : "false");
}

/* key: a mapping of the n pairs (flow "{}" when empty), values quoted. */
static void kv_pairs(struct emitter *y, const char *key, const struct cfg_pair *p, size_t n)
{
	plain(y, key);
	map_start(y, n == 0);
	for (size_t i = 0; i < n; i++) {
		quoted(y, p[i].key);
		quoted(y, p[i].value);
	}
	map_end(y);
}

static void kv_list(struct emitter *y, const char *key, const struct cfg_list *l)
{
	plain(y, key);
	seq_start(y, 1);
	for (size_t i = 0; i < l->count; i++)
		quoted(y, l->items[i]);
	seq_end(y);
}

static void dump_alertmanager(struct emitter *y, const struct cfg_alertmanager *a);

static void dump_receiver(struct emitter *y, const struct cfg_receiver *r)
{
	const struct cfg_templates *t = &r->templates;

	map_start(y, 0);
	kv_str(y, "name", r->name);
	kv_str(y, "repo", r->repo);
	kv_str(y, "issue_per", r->issue_per == CFG_ISSUE_PER_GROUP ? "group" : "alert");
	kv_list(y, "labels", &r->labels);
	kv_list(y, "assignees", &r->assignees);
	kv_bool(y, "auto_close", r->auto_close);
	kv_dur(y, "reopen_window", r->reopen_window_ms);
	plain(y, "templates");
	map_start(y, 0);
	kv_str(y, "title", t->title);
	kv_str(y, "body", t->body);
	kv_str(y, "refire", t->refire);
	kv_str(y, "resolve", t->resolve);
	kv_str(y, "reopen", t->reopen);
	map_end(y);
	plain(y, "storm");
	map_start(y, 0);
	kv_bool(y, "enabled", r->storm.enabled);
	kv_dur(y, "storm_after", r->storm.storm_after_ms);
	map_end(y);
	if (r->routes_count) {
		struct buf m = BUF_INIT;

		plain(y, "routes");
		seq_start(y, 0);
		for (size_t i = 0; i < r->routes_count; i++) {
			const struct cfg_route *rt = &r->routes[i];

			map_start(y, 0);
			plain(y, "matchers");
			seq_start(y, 1);
			for (size_t k = 0; k < rt->matchers_count; k++) {
				buf_reset(&m);
				matcher_format(&rt->matchers[k], &m);
				quoted(y, buf_str(&m));
			}
			seq_end(y);
			kv_str(y, "repo", rt->repo);
			kv_list(y, "labels", &rt->labels);
			kv_list(y, "assignees", &rt->assignees);
			plain(y, "templates");
			map_start(y, 0);
			kv_str(y, "title", rt->templates.title);
			kv_str(y, "body", rt->templates.body);
			kv_str(y, "refire", rt->templates.refire);
			kv_str(y, "resolve", rt->templates.resolve);
			kv_str(y, "reopen", rt->templates.reopen);
			map_end(y);
			map_end(y);
		}
		seq_end(y);
		buf_release(&m);
	}
	/* Its effective block: its own, or what it inherited from the top level. */
	dump_alertmanager(y, &r->alertmanager);
	map_end(y);
}

static void dump_janitor(struct emitter *y, const struct cfg_janitor *j)
{
	const struct cfg_slack *s = &j->slack;
	const struct cfg_leader_election *le = &j->leader_election;

	plain(y, "janitor");
	map_start(y, 0);
	kv_bool(y, "enabled", j->enabled);
	kv_bool(y, "dry_run", j->dry_run);
	plain(y, "kubernetes");
	map_start(y, 0);
	kv_str(y, "kubeconfig", j->kubernetes.kubeconfig);
	kv_str(y, "context", j->kubernetes.context);
	map_end(y);
	kv_list(y, "exclude_namespaces", &j->exclude_namespaces);
	kv_dur(y, "sweep_interval", j->sweep_interval_ms);
	kv_num(y, "max_deletions_per_sweep", j->max_deletions_per_sweep);
	kv_dur(y, "notice_batch_window", j->notice_batch_window_ms);
	plain(y, "policies");
	seq_start(y, j->policies_count == 0);
	for (size_t i = 0; i < j->policies_count; i++) {
		const struct cfg_policy *p = &j->policies[i];

		map_start(y, 0);
		kv_str(y, "alertname", p->alertname);
		kv_dur(y, "grace", p->grace_ms);
		kv_dur(y, "notice_lead", p->notice_lead_ms);
		kv_dur(y, "reminder_before", p->reminder_before_ms);
		kv_str(y, "owned", cfg_owned_names[p->owned]);
		kv_str(y, "message", p->message);
		kv_dur(y, "postpone_by", p->postpone_by_ms);
		kv_num(y, "max_postpones", p->max_postpones);
		kv_dur(y, "max_lifetime", p->max_lifetime_ms);
		map_end(y);
	}
	seq_end(y);
	plain(y, "slack");
	map_start(y, 0);
	kv_str(y, "api_url", s->api_url);
	kv_secret(y, "bot_token_file", s->bot_token_file, "bot_token", s->bot_token);
	kv_secret(y, "webhook_url_file", s->webhook_url_file, "webhook_url", s->webhook_url);
	kv_secret(y, "signing_secret_file", s->signing_secret_file, "signing_secret",
		  s->signing_secret);
	kv_str(y, "default_channel", s->default_channel);
	kv_str(y, "owner_label", s->owner_label);
	kv_pairs(y, "namespace_channels", s->namespace_channels, s->namespace_channels_count);
	map_end(y);
	plain(y, "leader_election");
	map_start(y, 0);
	kv_bool(y, "enabled", le->enabled);
	kv_str(y, "namespace", le->namespace);
	kv_str(y, "lease_name", le->lease_name);
	kv_dur(y, "lease_duration", le->lease_duration_ms);
	kv_str(y, "identity", le->identity);
	map_end(y);
	map_end(y);
}

/* A TLS block (webhook.tls, web.public_tls), when it has a certificate. */
static void dump_tls(struct emitter *y, const char *name, const struct cfg_tls *t)
{
	if (!t->cert_file)
		return;
	plain(y, name);
	map_start(y, 0);
	kv_str(y, "cert_file", t->cert_file);
	kv_str(y, "key_file", t->key_file);
	kv_str(y, "client_ca_file", t->client_ca_file);
	map_end(y);
}

/*
 * web: the users and their bcrypt hashes (a hash is not a secret to hide),
 * the public listener.
 */
static void dump_web(struct emitter *y, const struct cfg_web *w)
{
	plain(y, "web");
	map_start(y, 0);
	plain(y, "auth");
	map_start(y, 0);
	kv_pairs(y, "basic_auth_users", w->auth.basic_auth_users, w->auth.basic_auth_users_count);
	map_end(y);
	if (w->public_listen_address)
		kv_str(y, "public_listen_address", w->public_listen_address);
	dump_tls(y, "public_tls", &w->public_tls);
	map_end(y);
}

static void dump_webhook(struct emitter *y, const struct cfg_webhook *w)
{
	plain(y, "webhook");
	map_start(y, 0);
	kv_secret(y, "bearer_token_file", w->bearer_token_file, "bearer_token", w->bearer_token);
	if (w->basic_auth.username) {
		plain(y, "basic_auth");
		map_start(y, 0);
		kv_str(y, "username", w->basic_auth.username);
		kv_secret(y, "password_file", w->basic_auth.password_file, "password",
			  w->basic_auth.password);
		map_end(y);
	}
	dump_tls(y, "tls", &w->tls);
	kv_num(y, "max_body_bytes", w->max_body_bytes);
	kv_num(y, "max_alerts", w->max_alerts);
	kv_num(y, "max_connections", w->max_connections);
	kv_dur(y, "read_timeout", w->read_timeout_ms);
	kv_dur(y, "read_header_timeout", w->read_header_timeout_ms);
	kv_num(y, "max_connections_per_ip", w->max_connections_per_ip);
	kv_num(y, "threads", w->threads);
	map_end(y);
}

/* A github.app mapping; nothing when app_id is 0 (installation_id only when set). */
static void dump_app(struct emitter *y, const struct cfg_github_app *a)
{
	if (!a->app_id)
		return;
	plain(y, "app");
	map_start(y, 0);
	kv_num(y, "app_id", (uint64_t)a->app_id);
	if (a->installation_id)
		kv_num(y, "installation_id", (uint64_t)a->installation_id);
	kv_str(y, "private_key_file", a->private_key_file);
	map_end(y);
}

static void dump_github(struct emitter *y, const struct cfg_github *g)
{
	plain(y, "github");
	map_start(y, 0);
	kv_str(y, "api_url", g->api_url);
	kv_secret(y, "token_file", g->token_file, "token", g->token);
	if (g->token_from_env) {
		plain(y, COMMENT_PREFIX "token");
		plain(y, "<secret> (from GITHUB_TOKEN)");
	}
	dump_app(y, &g->app);
	if (g->credentials_count) {
		plain(y, "credentials");
		seq_start(y, 0);
		for (size_t i = 0; i < g->credentials_count; i++) {
			const struct cfg_github_cred *gc = &g->credentials[i];

			map_start(y, 0);
			kv_str(y, "owner", gc->owner);
			kv_secret(y, "token_file", gc->token_file, "token", gc->token);
			dump_app(y, &gc->app);
			map_end(y);
		}
		seq_end(y);
	}
	kv_num(y, "content_per_minute", g->content_per_minute);
	kv_num(y, "content_per_hour", g->content_per_hour);
	kv_dur(y, "timeout", g->timeout_ms);
	kv_dur(y, "body_update_interval", g->body_update_interval_ms);
	kv_bool(y, "dry_run", g->dry_run);
	if (g->webhook_secret_file)
		kv_secret(y, "webhook_secret_file", g->webhook_secret_file, "webhook_secret",
			  g->webhook_secret);
	map_end(y);
}

/* The top-level alertmanager, when it names a url (receivers take it as their own). */
static void dump_alertmanager(struct emitter *y, const struct cfg_alertmanager *a)
{
	if (!a->url)
		return;
	plain(y, "alertmanager");
	map_start(y, 0);
	kv_str(y, "url", a->url);
	kv_secret(y, "bearer_token_file", a->bearer_token_file, "bearer_token", a->bearer_token);
	if (a->basic_auth.username) {
		plain(y, "basic_auth");
		map_start(y, 0);
		kv_str(y, "username", a->basic_auth.username);
		kv_secret(y, "password_file", a->basic_auth.password_file, "password",
			  a->basic_auth.password);
		map_end(y);
	}
	kv_dur(y, "timeout", a->timeout_ms);
	kv_dur(y, "max_silence", a->max_silence_ms);
	map_end(y);
}

static void dump_document(struct emitter *y, const struct config *cfg)
{
	static const char *const levels[] = { "debug", "info", "warn", "error" };
	yaml_event_t ev;

	emit(y, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	emit(y, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	map_start(y, 0);
	kv_str(y, "listen_address", cfg->listen_address);
	kv_str(y, "database", cfg->database);
	if (cfg->database_password_file)
		kv_str(y, "database_password_file", cfg->database_password_file);
	kv_dur(y, "database_retention", cfg->database_retention_ms);
	plain(y, "log");
	map_start(y, 0);
	plain(y, "level");
	plain(y, levels[cfg->log.level]);
	plain(y, "format");
	plain(y, cfg->log.format == LOG_JSON ? "json" : "logfmt");
	map_end(y);
	dump_webhook(y, &cfg->webhook);
	dump_web(y, &cfg->web);
	dump_github(y, &cfg->github);
	dump_alertmanager(y, &cfg->alertmanager);
	plain(y, "receivers");
	seq_start(y, cfg->receivers_count == 0);
	for (size_t i = 0; i < cfg->receivers_count; i++)
		dump_receiver(y, &cfg->receivers[i]);
	seq_end(y);
	dump_janitor(y, &cfg->janitor);
	map_end(y);
	emit(y, &ev, yaml_document_end_event_initialize(&ev, 1));
	emit(y, &ev, yaml_stream_end_event_initialize(&ev));
}

/* Each line "<indent>COMMENT_PREFIXkey: value" of text becomes "<indent># key: value". */
static void comments_out(const char *text, struct buf *out)
{
	const char *line = text;

	while (*line) {
		const char *end = strchr(line, '\n');
		size_t indent = strspn(line, " ");
		size_t n = end ? (size_t)(end - line + 1) : strlen(line);

		if (!strncmp(line + indent, COMMENT_PREFIX, strlen(COMMENT_PREFIX))) {
			(void)buf_add(out, line, indent);
			(void)buf_adds(out, "# ");
			line += indent + strlen(COMMENT_PREFIX);
			n -= indent + strlen(COMMENT_PREFIX);
		}
		(void)buf_add(out, line, n);
		line += n;
	}
}

void cfg_dump(const struct config *cfg, struct buf *out)
{
	struct emitter y;
	struct buf text = BUF_INIT;

	memset(&y, 0, sizeof(y));
	if (!yaml_emitter_initialize(&y.e))
		abort();  /* only without memory, as xmalloc */
	yaml_emitter_set_output(&y.e, write_out, &text);
	yaml_emitter_set_unicode(&y.e, 1);
	yaml_emitter_set_width(&y.e, -1);  /* no folding of long strings */
	yaml_emitter_set_indent(&y.e, 2);
	dump_document(&y, cfg);
	if (!y.failed && !yaml_emitter_flush(&y.e))
		y.failed = 1;
	(void)buf_printf(out, "# effective configuration of %s\n", cfg->path);
	if (y.failed)
		(void)buf_printf(out, "# (not written: %s)\n",
				 y.e.problem ? y.e.problem : "the YAML emitter failed");
	else
		comments_out(buf_str(&text), out);
	yaml_emitter_delete(&y.e);
	buf_release(&text);
}
