/*
 * config_fields.c - the configuration's schema: the field table of every
 * section but the janitor's (config_janitor.c), the custom field parsers, the
 * per-section checks, the defaults and the lists of records (receivers).
 * config.c walks the YAML with these tables; all share config_int.h.
 */
#include "config_int.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "duration.h"
#include "log.h"
#include "matchers.h"
#include "mustache.h"
#include "xalloc.h"
#include "banned.h"

/* ---- validation helpers ---- */

static int valid_url(const char *s)
{
	if (!strncmp(s, "https://", 8))
		return s[8] != '\0';
	if (!strncmp(s, "http://", 7))
		return s[7] != '\0';
	return 0;
}

/* An http(s) URL at key in map, trailing slashes removed. */
enum err cfg_check_url(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		       char *url)
{
	char sub[PATH_MAX_LEN];
	size_t n;

	cfg_join_key(sub, path, key);
	if (!url || !valid_url(url))
		return cfg_fail(c, cfg_key_or_map(c, map, key), sub, ERR_INVALID,
				"expected an http:// or https:// URL, got \"%s\"", url ? url : "");
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		url[--n] = '\0';
	return ERR_OK;
}

enum err cfg_need(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		  const void *value)
{
	if (value)
		return ERR_OK;
	if (cfg_find_value(c, map, key, NULL)) {
		return cfg_fail_key(c, map, path, key, "must not be empty");
	}
	return cfg_fail(c, map, path, ERR_INVALID, "missing required key \"%s\"", key);
}

enum err cfg_exclusive(struct ctx *c, yaml_node_t *map, const char *path, const char *a,
		       const void *va, const char *b, const void *vb)
{
	if (!va || !vb)
		return ERR_OK;
	return cfg_fail_key(c, map, path, b, "cannot be used together with %s", a);
}

/* host:port, [v6]:port or :port with a port from 0 to 65535. */
static int valid_listen(const char *s)
{
	const char *colon = strrchr(s, ':');
	uint64_t port;

	if (!colon || !cfg_parse_u64(colon + 1, 0, 65535, &port) || strlen(colon + 1) > 5)
		return 0;
	if (s[0] == '[')
		return colon > s + 1 && colon[-1] == ']' &&
		       !memchr(s + 1, ']', (size_t)(colon - s - 2));
	return !memchr(s, ':', (size_t)(colon - s)) && !memchr(s, ']', (size_t)(colon - s));
}

static int valid_repo(const char *s)
{
	const char *slash = strchr(s, '/');

	if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
		return 0;
	for (; *s; s++)
		if (*s == ' ' || *s == '\t' || *s == '\\' || *s == '?' || *s == '#' || *s == '%')
			return 0;
	return 1;
}

/* ---- custom fields ---- */

/*
 * A mapping of non-empty unique string keys to string values into a new
 * array *pairs of *count (freed by cfg_free()); wk and wv name them in errors.
 * check (may be NULL) judges each pair: non-zero with why set fails it at the value.
 */
enum err cfg_parse_pairs(struct ctx *c, yaml_node_t *node, const char *path,
			 struct cfg_pair **pairs, size_t *count, const char *wk, const char *wv,
			 int (*check)(const char *k, const char *v, const char **why))
{
	yaml_node_pair_t *p;
	size_t n;
	char want[96];

	snprintf(want, sizeof(want), "a mapping of %s to %s", wk, wv);
	if (node->type != YAML_MAPPING_NODE)
		return cfg_type_error(c, node, path, want);
	n = (size_t)(node->data.mapping.pairs.top - node->data.mapping.pairs.start);
	free(*pairs);
	*pairs = xcalloc(n ? n : 1, sizeof(struct cfg_pair));
	for (p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
		yaml_node_t *k = cfg_node_at(c, p->key), *v = cfg_node_at(c, p->value);
		struct cfg_pair *pair;
		char sub[PATH_MAX_LEN];
		const char *ks = "", *vs = "", *why = NULL;

		if (cfg_get_scalar(c, k, path, wk, &ks) != ERR_OK)
			return ERR_INVALID;
		cfg_join_key(sub, path, ks);
		if (!*ks)
			return cfg_fail(c, k, path, ERR_INVALID, "empty %s", wk);
		for (size_t i = 0; i < *count; i++)
			if (!strcmp((*pairs)[i].key, ks))
				return cfg_fail(c, k, sub, ERR_INVALID, "duplicate key");
		if (cfg_is_null(v))
			return cfg_fail(c, v, sub, ERR_INVALID, "expected %s, got null", wv);
		if (cfg_get_scalar(c, v, sub, wv, &vs) != ERR_OK)
			return ERR_INVALID;
		if (check && check(ks, vs, &why))
			return cfg_fail(c, v, sub, ERR_INVALID, "%s", why);
		pair = &(*pairs)[(*count)++];
		pair->key = xstrdup(ks);
		pair->value = xstrdup(vs);
	}
	return ERR_OK;
}

/*
 * A web.auth user: a name without ':' (RFC 7617) and a bcrypt hash as
 * crypt(3) reads it: "$2a$", "$2b$" or "$2y$", a cost 04..31, "$", then 22
 * characters of salt and 31 of hash in bcrypt's base64 alphabet.
 */
static int check_web_user(const char *user, const char *hash, const char **why)
{
	static const char b64[] = "./ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
	int cost;

	if (strchr(user, ':')) {
		*why = "the user name must not contain ':' (RFC 7617)";
		return 1;
	}
	cost = strlen(hash) == 60 ? (hash[4] - '0') * 10 + (hash[5] - '0') : 0;
	if (strlen(hash) != 60 || hash[0] != '$' || hash[1] != '2' || !strchr("aby", hash[2]) ||
	    hash[3] != '$' || hash[4] < '0' || hash[4] > '3' || hash[5] < '0' || hash[5] > '9' ||
	    cost < 4 || cost > 31 || hash[6] != '$' || strspn(hash + 7, b64) != 53) {
		*why = "expected a bcrypt hash ($2y$, $2b$ or $2a$, cost 04-31, 60 characters: "
		       "htpasswd -nbBC 10 USER PASSWORD prints one)";
		return 1;
	}
	return 0;
}

static enum err parse_web_users(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	struct cfg_web_auth *a = field;

	return cfg_parse_pairs(c, node, path, &a->basic_auth_users, &a->basic_auth_users_count,
			   "a user name", "a bcrypt hash", check_web_user);
}

/* ---- field tables ---- */

static const char *const log_level_names[] = { "debug", "info", "warn", "error", NULL };
static const char *const log_format_names[] = { "logfmt", "json", NULL };
static const char *const issue_per_names[] = { "alert", "group", NULL };

static const struct field log_fields[] = {
	ENUM(struct cfg_log, "level", level, "debug, info, warn or error", log_level_names, RESTART,
	     "The least severe level logged (--log.level overrides it).", .def = LOG_INFO),
	ENUM(struct cfg_log, "format", format, "logfmt or json", log_format_names, RESTART,
	     "logfmt lines, or one JSON object per line (--log.format overrides it)."),
};
FIELDSET(log_set, log_fields, NULL);

static enum err check_basic_auth(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_basic_auth *a = obj;
	enum err rc = cfg_need(c, map, path, "username", a->username);

	if (rc == ERR_OK && strchr(a->username, ':')) {
		/* RFC 7617 2: the user-id cannot contain a colon (check-config says so too). */
		return cfg_fail_key(c, map, path, "username", "must not contain ':' (RFC 7617)");
	}
	return rc != ERR_OK ? rc : cfg_need(c, map, path, "password_file", a->password_file);
}

static const struct field basic_auth_fields[] = {
	FLD(struct cfg_basic_auth, "username", F_STR, username, LIVE,
	    "The user name (no ':', RFC 7617).", .dflt = "required"),
	SECRET(struct cfg_basic_auth, "password_file", password_file, password, LIVE,
	       "File holding the password on one line.", .dflt = "required"),
};
FIELDSET(basic_auth_set, basic_auth_fields, check_basic_auth);

static enum err check_tls(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_tls *t = obj;
	enum err rc = ERR_OK;

	if (t->cert_file || t->key_file || t->client_ca_file) {
		rc = cfg_need(c, map, path, "cert_file", t->cert_file);
		if (rc == ERR_OK)
			rc = cfg_need(c, map, path, "key_file", t->key_file);
	}
	return rc;
}

static const struct field tls_fields[] = {
	FLD(struct cfg_tls, "cert_file", F_PATH, cert_file, LIVE,
	    "PEM certificate (chain) served; without it the listener speaks plain HTTP."),
	FLD(struct cfg_tls, "key_file", F_PATH, key_file, LIVE,
	    "PEM private key of cert_file (required with it)."),
	FLD(struct cfg_tls, "client_ca_file", F_PATH, client_ca_file, LIVE,
	    "PEM CA bundle: clients must present a certificate it signed."),
};
FIELDSET(tls_set, tls_fields, check_tls);

static enum err check_webhook(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_webhook *w = obj;

	/* The server counts its idle timeout in whole seconds (libmicrohttpd). */
	if (w->read_timeout_ms < MS_S || w->read_timeout_ms > 24 * 3600 * MS_S) {
		return cfg_fail_key(c, map, path, "read_timeout", "must be from 1s to 24h");
	}
	if (w->read_header_timeout_ms > w->read_timeout_ms) {
		return cfg_fail_key(c, map, path, "read_header_timeout",
				    "must not be longer than read_timeout");
	}
	return cfg_exclusive(c, map, path, "bearer_token_file", w->bearer_token_file, "basic_auth",
			 w->basic_auth.username);
}

static const struct field webhook_fields[] = {
	SECRET(struct cfg_webhook, "bearer_token_file", bearer_token_file, bearer_token, LIVE,
	       "Alertmanager must send this token (Authorization: Bearer); not with basic_auth."),
	MAP(struct cfg_webhook, "basic_auth", basic_auth, basic_auth_set, LIVE,
	    "Alertmanager must send this user and password; not with bearer_token_file.",
	    .dump_flags = D_OMIT),
	MAP(struct cfg_webhook, "tls", tls, tls_set, RESTART, "TLS of the main listener.",
	    .dump_flags = D_OMIT),
	/* 10,000 alerts of up to 1.6 KB (docs/config-guide.md) */
	NUM(struct cfg_webhook, "max_body_bytes", F_SIZE, max_body_bytes, 1, 1u << 30, RESTART,
	    "Largest request body accepted; larger ones get 413.", .def = 16777216),
	NUM(struct cfg_webhook, "max_alerts", F_SIZE, max_alerts, 1, 1000000, RESTART,
	    "Most alerts in one webhook body; more get 400.", .def = 10000),
	NUM(struct cfg_webhook, "max_connections", F_UINT, max_connections, 1, 65536, RESTART,
	    "Most connections open at once on the listener.", .def = 256),
	DUR(struct cfg_webhook, "read_timeout", read_timeout_ms, 1, RESTART,
	    "Idle limit of a connection; a whole request must arrive within it (1s to 24h).",
	    .def = 30 * MS_S),
	DUR(struct cfg_webhook, "read_header_timeout", read_header_timeout_ms, 1, RESTART,
	    "A request's headers must arrive within it (at most read_timeout).", .def = 10 * MS_S),
	NUM(struct cfg_webhook, "max_connections_per_ip", F_UINT, max_connections_per_ip, 0, 65536,
	    RESTART, "Most connections from one client (an IPv6 client: its /64); 0: no cap.", .def = 64),
	NUM(struct cfg_webhook, "threads", F_UINT, threads, 1, 1024, RESTART,
	    "Threads serving HTTP requests.", .def = 4),
};
FIELDSET(webhook_set, webhook_fields, check_webhook);

static enum err check_app(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_github_app *a = obj;
	enum err rc = cfg_need(c, map, path, "app_id", a->app_id ? a : NULL);
	char sub[PATH_MAX_LEN];

	if (rc == ERR_OK)
		rc = cfg_need(c, map, path, "private_key_file", a->private_key_file);
	if (rc != ERR_OK)
		return rc;
	cfg_join_key(sub, path, "private_key_file");
	return cfg_read_rsa_key(c, cfg_find_value(c, map, "private_key_file", NULL), sub,
				a->private_key_file, &a->private_key);
}

static const struct field app_fields[] = {
	NUM(struct cfg_github_app, "app_id", F_INT64, app_id, 1, INT64_MAX, LIVE,
	    "The GitHub App's id.", .dflt = "required"),
	NUM(struct cfg_github_app, "installation_id", F_INT64, installation_id, 1, INT64_MAX, LIVE,
	    "Its installation; absent: looked up per repository owner.", .dump_flags = D_OMIT),
	FLD(struct cfg_github_app, "private_key_file", F_PATH, private_key_file, LIVE,
	    "The App's RSA private key, PEM, unencrypted; read again on reload.",
	    .dflt = "required"),
};
/* The private key check_app() read: not a row of its own. */
static void release_app(void *obj)
{
	cfg_wipe_free(((struct cfg_github_app *)obj)->private_key);
}
FIELDSET_RELEASE(app_set, app_fields, check_app, release_app);

/* A github.credentials entry: an owner and exactly one of token_file and app. */
static enum err check_cred(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_github_cred *gc = obj;
	enum err rc = cfg_need(c, map, path, "owner", gc->owner);

	if (rc == ERR_OK)
		rc = cfg_exclusive(c, map, path, "token_file", gc->token_file, "app",
			       gc->app.app_id ? gc : NULL);
	if (rc == ERR_OK && !gc->token_file && !gc->app.app_id)
		rc = cfg_fail(c, map, path, ERR_INVALID, "needs token_file or app");
	if (rc == ERR_OK && (strchr(gc->owner, '/') || strchr(gc->owner, ' '))) {
		rc = cfg_fail_key(c, map, path, "owner",
				  "expected an organisation or user name, got \"%s\"", gc->owner);
	}
	return rc;
}

static const struct field cred_fields[] = {
	FLD(struct cfg_github_cred, "owner", F_STR, owner, LIVE,
	    "Organisation or user whose repositories use this credential (unique).",
	    .dflt = "required"),
	SECRET(struct cfg_github_cred, "token_file", token_file, token, LIVE,
	       "File holding a token for that owner; exactly one of token_file and app."),
	MAP(struct cfg_github_cred, "app", app, app_set, LIVE,
	    "A GitHub App for that owner; exactly one of token_file and app.",
	    .dump_flags = D_OMIT),
};
FIELDSET(cred_set, cred_fields, check_cred);

/* github.credentials: owners unique as GitHub compares them (case-insensitively). */
static const struct cfg_records cred_records = {
	NULL, "owner", "owner", offsetof(struct cfg_github_cred, owner), strcasecmp
};

static enum err check_github(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_github *g = obj;
	enum err rc = cfg_exclusive(c, map, path, "token_file", g->token_file, "app",
				g->app.app_id ? g : NULL);

	if (rc == ERR_OK && (g->body_update_interval_ms < MS_S ||
			     g->body_update_interval_ms > 3600 * MS_S)) {
		return cfg_fail_key(c, map, path, "body_update_interval",
				    "must be between 1s and 1h");
	}
	return rc != ERR_OK ? rc : cfg_check_url(c, map, path, "api_url", g->api_url);
}

static const struct field github_fields[] = {
	FLD(struct cfg_github, "api_url", F_STR, api_url, RESTART,
	    "GitHub's REST API (GitHub Enterprise: https://HOST/api/v3); http(s) only.",
	    .def_str = CFG_DEFAULT_GITHUB_API_URL),
	SECRET(struct cfg_github, "token_file", token_file, token, PRESENCE,
	       "File holding the token; absent: $GITHUB_TOKEN; not with app.",
	       .dump = cfg_dump_github_token),
	MAP(struct cfg_github, "app", app, app_set, RESTART,
	    "Authenticate as a GitHub App instead of a token; not with token_file.",
	    .dump_flags = D_OMIT),
	REC(struct cfg_github, "credentials", credentials, &cred_records, cred_set,
	    "a list of credentials", LIVE,
	    "Per-owner credentials; the token or app above serves every other owner.",
	    .dump_flags = D_OMIT),
	NUM(struct cfg_github, "content_per_minute", F_UINT, content_per_minute, 1, 80, RESTART,
	    "Most mutating calls per minute (GitHub's ceiling: 80), counted across restarts and "
	    "the replicas sharing a database (the store records each call).", .def = 20),
	NUM(struct cfg_github, "content_per_hour", F_UINT, content_per_hour, 1, 500, RESTART,
	    "Most mutating calls per hour (GitHub's ceiling: 500), counted as content_per_minute.",
	    .def = 500),
	DUR(struct cfg_github, "timeout", timeout_ms, 1, RESTART, "Bound of one API call.",
	    .def = 10 * MS_S),
	DUR(struct cfg_github, "body_update_interval", body_update_interval_ms, 1, RESTART,
	    "Least time between two rewrites of one issue body (1s to 1h).", .def = MS_M),
	FLD(struct cfg_github, "dry_run", F_BOOL, dry_run, RESTART,
	    "Log the calls instead of making them (so too without any credential)."),
	SECRET(struct cfg_github, "webhook_secret_file", webhook_secret_file, webhook_secret, LIVE,
	       "Secret of the repository webhook (POST /v1/github/webhook); absent: 404."),
};
FIELDSET(github_set, github_fields, check_github);

static enum err check_alertmanager(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_alertmanager *a = obj;
	enum err rc = cfg_exclusive(c, map, path, "bearer_token_file", a->bearer_token_file,
				"basic_auth", a->basic_auth.username);

	if (rc == ERR_OK && (a->url || a->bearer_token_file || a->basic_auth.username))
		rc = cfg_check_url(c, map, path, "url", a->url);
	return rc;
}

static const struct field alertmanager_fields[] = {
	FLD(struct cfg_alertmanager, "url", F_STR, url, LIVE,
	    "Alertmanager whose API v2 the /silence issue command uses; null: no silences."),
	SECRET(struct cfg_alertmanager, "bearer_token_file", bearer_token_file, bearer_token, LIVE,
	       "Token sent to Alertmanager; not with basic_auth."),
	MAP(struct cfg_alertmanager, "basic_auth", basic_auth, basic_auth_set, LIVE,
	    "User and password sent to Alertmanager; not with bearer_token_file.",
	    .dump_flags = D_OMIT),
	DUR(struct cfg_alertmanager, "timeout", timeout_ms, 1, LIVE,
	    "Bound of one Alertmanager API call.", .def = 10 * MS_S),
	DUR(struct cfg_alertmanager, "max_silence", max_silence_ms, 1, LIVE,
	    "The longest silence /silence makes.", .def = 7 * MS_D),
};
FIELDSET(alertmanager_set, alertmanager_fields, check_alertmanager);

static const struct field templates_fields[] = {
	FLD(struct cfg_templates, "title", F_PATH, title, LIVE,
	    "Mustache template of the issue title; null: the built-in one."),
	FLD(struct cfg_templates, "body", F_PATH, body, LIVE,
	    "Template of the issue body; null: the built-in one."),
	FLD(struct cfg_templates, "refire", F_PATH, refire, LIVE,
	    "Template of the comment when the alert fires again; null: the built-in one."),
	FLD(struct cfg_templates, "resolve", F_PATH, resolve, LIVE,
	    "Template of the comment when it resolves; null: the built-in one."),
	FLD(struct cfg_templates, "reopen", F_PATH, reopen, LIVE,
	    "Template of the comment when a closed issue reopens; null: the built-in one."),
};
FIELDSET(templates_set, templates_fields, NULL);

static const struct field storm_fields[] = {
	FLD(struct cfg_storm, "enabled", F_BOOL, enabled, LIVE,
	    "Fold a storm into one summary issue per repo and alertname (docs/bridge.md)."),
	DUR(struct cfg_storm, "storm_after", storm_after_ms, 1, LIVE,
	    "A new alert is folded when the queued creates would take longer to drain.",
	    .def = 10 * MS_M),
};
FIELDSET(storm_set, storm_fields, NULL);

/*
 * A repo at key of map: "owner/name", or a Mustache template (it has "{{")
 * that compiles; what it renders to is checked per alert at run time.
 */
static enum err check_repo(struct ctx *c, yaml_node_t *map, const char *path, const char *repo)
{
	char sub[PATH_MAX_LEN];
	struct mustache *m = NULL;
	struct buf why = BUF_INIT;
	enum err rc = ERR_OK;

	cfg_join_key(sub, path, "repo");
	if (strstr(repo, "{{")) {
		if (mustache_compile(repo, strlen(repo), &m, &why) != ERR_OK)
			rc = cfg_fail(c, cfg_find_value(c, map, "repo", NULL), sub, ERR_INVALID,
				      "invalid template \"%s\": %s", repo, buf_str(&why));
		mustache_free(m);
		buf_release(&why);
		return rc;
	}
	if (!valid_repo(repo))
		rc = cfg_fail(c, cfg_find_value(c, map, "repo", NULL), sub, ERR_INVALID,
			      "expected \"owner/name\" or a template, got \"%s\"", repo);
	return rc;
}

static void copy_list(struct cfg_list *to, const struct cfg_list *from)
{
	to->items = xcalloc(from->count + 1, sizeof(char *));
	to->count = from->count;
	for (size_t i = 0; i < from->count; i++)
		to->items[i] = xstrdup(from->items[i]);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* What route rt does not set, it takes from its receiver r. */
static void route_inherit(struct cfg_route *rt, const struct cfg_receiver *r)
{
	struct cfg_templates *t = &rt->templates;

	if (!rt->repo)
		rt->repo = xstrdup(r->repo);
	if (!rt->labels.items)
		copy_list(&rt->labels, &r->labels);
	if (!rt->assignees.items)
		copy_list(&rt->assignees, &r->assignees);
	if (!t->title)
		t->title = dup_or_null(r->templates.title);
	if (!t->body)
		t->body = dup_or_null(r->templates.body);
	if (!t->refire)
		t->refire = dup_or_null(r->templates.refire);
	if (!t->resolve)
		t->resolve = dup_or_null(r->templates.resolve);
	if (!t->reopen)
		t->reopen = dup_or_null(r->templates.reopen);
}

static enum err check_receiver(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_receiver *r = obj;
	enum err rc = cfg_need(c, map, path, "name", r->name);

	if (rc == ERR_OK)
		rc = cfg_need(c, map, path, "repo", r->repo);
	if (rc == ERR_OK)
		rc = check_repo(c, map, path, r->repo);
	for (size_t i = 0; rc == ERR_OK && i < r->routes_count; i++)
		route_inherit(&r->routes[i], r);
	return rc;
}

/*
 * A route: each `matchers:` entry is a list of matchers read as Alertmanager
 * reads it by default (core/matchers.h; errors name the entry's line, and
 * Alertmanager's warning for a text only its classic grammar reads is
 * logged), its repo is valid.
 */
static enum err check_route(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_route *rt = obj;
	yaml_node_t *seq = cfg_find_value(c, map, "matchers", NULL);
	struct buf why = BUF_INIT, warning = BUF_INIT;
	enum err rc = ERR_OK;

	rt->line = cfg_line_of(map);
	rt->matchers = xcalloc(1, sizeof(*rt->matchers));
	for (size_t i = 0; i < rt->matchers_text.count; i++) {
		yaml_node_t *node = cfg_node_at(c, seq->data.sequence.items.start[i]);
		char sub[PATH_MAX_LEN];

		cfg_path_printf(sub, "%s.matchers[%zu]", path, i);
		if (matcher_parse_list(rt->matchers_text.items[i], MATCHER_FALLBACK, &rt->matchers,
				       &rt->matchers_count, &warning, &why) != ERR_OK) {
			rc = cfg_fail(c, node, sub, ERR_INVALID, "%s", buf_str(&why));
			break;
		}
		if (warning.len) {
			struct log_line *l = log_begin(LOG_WARN, "matchers read by alertmanager's "
						       "classic grammar");

			log_str(l, "file", c->name);
			log_int(l, "line", (int64_t)cfg_line_of(node));
			log_str(l, "key", sub);
			log_str(l, "input", rt->matchers_text.items[i]);
			log_str(l, "detail", buf_str(&warning));
			log_end(l);
		}
	}
	buf_release(&why);
	buf_release(&warning);
	if (rc == ERR_OK && rt->repo)
		rc = check_repo(c, map, path, rt->repo);
	return rc;
}

static const struct field route_fields[] = {
	FLD(struct cfg_route, "matchers", F_LIST, matchers_text, LIVE,
	    "Alertmanager matchers (`team=\"db\"`, `env=~\"prod.*\"`), all must match.",
	    .dflt = "[] (every alert)", .dump = cfg_dump_matchers),
	FLD(struct cfg_route, "repo", F_STR, repo, LIVE,
	    "\"owner/name\" or a Mustache template rendering to one.", .dflt = "the receiver's"),
	FLD(struct cfg_route, "labels", F_LIST, labels, LIVE, "Issue labels (Mustache templates).",
	    .dflt = "the receiver's"),
	FLD(struct cfg_route, "assignees", F_LIST, assignees, LIVE,
	    "GitHub users to assign (Mustache templates).",
	    .dflt = "the receiver's"),
	MAP(struct cfg_route, "templates", templates, templates_set, LIVE,
	    "Template files of this route's issues.", .dflt = "the receiver's"),
};
/* The matchers check_route() parsed from matchers_text. */
static void release_route(void *obj)
{
	struct cfg_route *rt = obj;

	for (size_t k = 0; rt->matchers && k < rt->matchers_count; k++)
		matcher_release(&rt->matchers[k]);
	free(rt->matchers);
}
FIELDSET_RELEASE(route_set, route_fields, check_route, release_route);

static const struct field receiver_fields[] = {
	FLD(struct cfg_receiver, "name", F_STR, name, LIVE,
	    "The Alertmanager receiver name (unique).", .dflt = "required"),
	FLD(struct cfg_receiver, "repo", F_STR, repo, LIVE,
	    "\"owner/name\", or a Mustache template over the alert rendering to one.",
	    .dflt = "required"),
	ENUM(struct cfg_receiver, "issue_per", issue_per, "\"alert\" or \"group\"",
	     issue_per_names, LIVE,
	     "One issue per alert, or one per Alertmanager group.", .dump_flags = D_QUOTE),
	FLD(struct cfg_receiver, "labels", F_LIST, labels, LIVE,
	    "Issue labels (Mustache templates)."),
	FLD(struct cfg_receiver, "assignees", F_LIST, assignees, LIVE,
	    "GitHub users to assign (Mustache templates)."),
	FLD(struct cfg_receiver, "auto_close", F_BOOL, auto_close, LIVE,
	    "Close the issue when the alert resolves (false: only comment).", .def = 1),
	DUR(struct cfg_receiver, "reopen_window", reopen_window_ms, 0, LIVE,
	    "A re-fire within this of the close reopens the issue; later, a new one links it.",
	    .def = 7 * MS_D),
	MAP(struct cfg_receiver, "templates", templates, templates_set, LIVE,
	    "Template files of this receiver's issues."),
	MAP(struct cfg_receiver, "storm", storm, storm_set, LIVE, "Alert storm summaries."),
	REC(struct cfg_receiver, "routes", routes, NULL, route_set, "a list of routes",
	    LIVE, "Routes in file order: the first whose matchers all match files the issue.",
	    .dump_flags = D_OMIT),
	MAP(struct cfg_receiver, "alertmanager", alertmanager, alertmanager_set, LIVE,
	    "This receiver's Alertmanager; without a url it takes the top level's whole.",
	    .dflt = "the top level's", .dump_flags = D_OMIT),
};
FIELDSET(receiver_set, receiver_fields, check_receiver);

static const struct field web_auth_fields[] = {
	PAIRS(struct cfg_web_auth, "basic_auth_users", basic_auth_users, parse_web_users,
	     "a mapping of user names to bcrypt hashes", RESTART,
	     "Users of the on-call page and /metrics (htpasswd -nbBC 10); none: both open."),
};
FIELDSET(web_auth_set, web_auth_fields, NULL);

static enum err check_web(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_web *w = obj;
	char sub[PATH_MAX_LEN];

	cfg_join_key(sub, path, "public_listen_address");
	if (w->public_listen_address && !valid_listen(w->public_listen_address))
		return cfg_fail(c, cfg_key_or_map(c, map, "public_listen_address"), sub,
				ERR_INVALID, "expected host:port or :port, got \"%s\"",
				w->public_listen_address);
	cfg_join_key(sub, path, "public_tls");
	if (!w->public_listen_address && w->public_tls.cert_file)
		return cfg_fail(c, cfg_key_or_map(c, map, "public_tls"), sub, ERR_INVALID,
				"needs public_listen_address");
	return ERR_OK;
}

static const struct field web_fields[] = {
	MAP(struct cfg_web, "auth", auth, web_auth_set, LIVE,
	    "What guards the on-call page (GET /) and /metrics."),
	FLD(struct cfg_web, "public_listen_address", F_STR, public_listen_address, RESTART,
	    "A listener of its own for the GitHub and Slack webhooks; null: the main one.",
	    .dump_flags = D_OMIT),
	MAP(struct cfg_web, "public_tls", public_tls, tls_set, RESTART,
	    "TLS of that listener (needs public_listen_address).", .dump_flags = D_OMIT),
};
FIELDSET(web_set, web_fields, check_web);

static enum err check_leader(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_leader_election *l = obj;
	enum err rc = cfg_need(c, map, path, "namespace", l->namespace);

	return rc != ERR_OK ? rc : cfg_need(c, map, path, "lease_name", l->lease_name);
}

static const struct field leader_fields[] = {
	FLD(struct cfg_leader_election, "enabled", F_BOOL, enabled, LIVE,
	    "Only the holder of a Kubernetes Lease acts; with janitor.enabled (janitor.kubernetes)."),
	FLD(struct cfg_leader_election, "namespace", F_STR, namespace, LIVE,
	    "Namespace of the Lease.", .def_str = "alertbridge"),
	FLD(struct cfg_leader_election, "lease_name", F_STR, lease_name, LIVE,
	    "Name of the Lease.", .def_str = "alertbridge"),
	DUR(struct cfg_leader_election, "lease_duration", lease_duration_ms, 1, LIVE,
	    "How long a leader holds the Lease without renewing it.", .def = 15 * MS_S),
	FLD(struct cfg_leader_election, "identity", F_STR, identity, LIVE,
	    "This replica's name in the Lease.", .dflt = "the host name"),
};
const struct fieldset cfg_leader_set = { leader_fields,
					sizeof(leader_fields) / sizeof(leader_fields[0]),
					check_leader, NULL };

static void receiver_defaults(void *item);
/* Receivers: each with its defaults, names unique. */
static const struct cfg_records receiver_records = {
	receiver_defaults, "name", "receiver name", offsetof(struct cfg_receiver, name), strcmp
};
static enum err check_root(struct ctx *c, yaml_node_t *map, const char *path, void *obj);

static const struct field root_fields[] = {
	FLD(struct config, "listen_address", F_STR, listen_address, RESTART,
	    "host:port, [v6]:port or :port (all interfaces) of the main listener.",
	    .def_str = CFG_DEFAULT_LISTEN_ADDRESS),
	FLD(struct config, "database", F_STR, database, RESTART,
	    "An sqlite file (relative to the working directory) or a postgres:// URI.",
	    .def_str = CFG_DEFAULT_DATABASE),
	FLD(struct config, "database_password_file", F_PATH, database_password_file, RESTART,
	    "PostgreSQL only: file holding the password; null: libpq's PGPASSFILE.",
	    .dump_flags = D_OMIT),
	DUR(struct config, "database_retention", database_retention_ms, 1, RESTART,
	    "How long events that are done are kept.", .def = 7 * MS_D),
	DUR(struct config, "database_statement_timeout", database_statement_timeout_ms, 1, RESTART,
	    "Bound of one statement, and of an intake's wait for the store.", .def = 5 * MS_S),
	MAP(struct config, "log", log, log_set, RESTART, "The service's log."),
	MAP(struct config, "webhook", webhook, webhook_set, LIVE,
	    "The Alertmanager webhook endpoint and its listener."),
	MAP(struct config, "web", web, web_set, LIVE, "The on-call page and the public listener."),
	MAP(struct config, "github", github, github_set, LIVE, "The GitHub client."),
	MAP(struct config, "alertmanager", alertmanager, alertmanager_set, LIVE,
	    "The Alertmanager silences are made in; every receiver's unless it has its own.",
	    .dump_flags = D_OMIT),
	REC(struct config, "receivers", receivers, &receiver_records, receiver_set,
	    "a list of receivers", LIVE,
	    "One per Alertmanager receiver; at least one unless the janitor is enabled."),
	MAP(struct config, "janitor", janitor, cfg_janitor_set, LIVE, "The pod janitor."),
	MAP(struct config, "leader_election", leader_election, cfg_leader_set, RESTART,
	    "Several replicas: one acts at a time, the bridge's worker and the janitor's."),
};
const struct fieldset cfg_root_set = { root_fields, sizeof(root_fields) / sizeof(root_fields[0]),
				      check_root, NULL };

/* ---- defaults and lists of records ---- */

void cfg_alertmanager_inherit(struct cfg_alertmanager *r, const struct cfg_alertmanager *top)
{
	if (!r->url) {
		r->url = dup_or_null(top->url);
		r->bearer_token_file = dup_or_null(top->bearer_token_file);
		r->bearer_token = dup_or_null(top->bearer_token);
		r->basic_auth.username = dup_or_null(top->basic_auth.username);
		r->basic_auth.password_file = dup_or_null(top->basic_auth.password_file);
		r->basic_auth.password = dup_or_null(top->basic_auth.password);
	}
	if (!r->timeout_ms)
		r->timeout_ms = top->timeout_ms;
	if (!r->max_silence_ms)
		r->max_silence_ms = top->max_silence_ms;
}

/* A receiver's defaults: its rows', and empty lists (a route's NULL ones inherit them). */
static void receiver_defaults(void *item)
{
	struct cfg_receiver *r = item;

	memset(r, 0, sizeof(*r));
	cfg_set_defaults(&receiver_set, r);
	r->labels.items = xcalloc(1, sizeof(char *));
	r->assignees.items = xcalloc(1, sizeof(char *));
}

static char *hostname(void)
{
	char name[256];

	if (gethostname(name, sizeof(name)) != 0 || !name[0])
		return xstrdup("alertbridge");
	name[sizeof(name) - 1] = '\0';
	return xstrdup(name);
}

/* The rows' defaults (cfg_set_defaults()), then what no row says: records, the host name. */
void cfg_defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg_set_defaults(&cfg_root_set, cfg);
	cfg->receivers = xcalloc(1, sizeof(struct cfg_receiver));
	cfg->janitor.policies = xcalloc(1, sizeof(struct cfg_policy));
	cfg->janitor.slack.namespace_channels = xcalloc(1, sizeof(struct cfg_pair));
	cfg->leader_election.identity = hostname();
}

/* Number of items of a sequence node, or an error naming what was expected. */
enum err cfg_sequence_len(struct ctx *c, yaml_node_t *node, const char *path, const char *want,
			  size_t *n)
{
	if (node->type != YAML_SEQUENCE_NODE)
		return cfg_type_error(c, node, path, want);
	*n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	return ERR_OK;
}

/* Error when the string at key of item i equals (by cmp) that of an earlier item. */
static enum err unique_by(struct ctx *c, yaml_node_t *seq, size_t i, const char *path,
			  const char *key, const char *what, const char *value,
			  const char *earlier, size_t j, int (*cmp)(const char *, const char *))
{
	yaml_node_t *item = cfg_node_at(c, seq->data.sequence.items.start[i]);
	yaml_node_t *first = cfg_node_at(c, seq->data.sequence.items.start[j]);
	char sub[PATH_MAX_LEN];

	if (cmp(value, earlier))
		return ERR_OK;
	cfg_path_printf(sub, "%s[%zu].%s", path, i, key);
	return cfg_fail(c, cfg_find_value(c, item, key, NULL), sub, ERR_INVALID,
			"duplicate %s \"%s\" (also at line %lu)", what, value,
			cfg_line_of(cfg_find_value(c, first, key, NULL)));
}

enum err cfg_parse_enum(struct ctx *c, yaml_node_t *node, const char *path,
			const struct field *f, void *field)
{
	const char *s = "";

	if (cfg_get_scalar(c, node, path, f->what, &s) != ERR_OK)
		return ERR_INVALID;
	for (int i = 0; f->names[i]; i++) {
		if (!strcmp(s, f->names[i])) {
			cfg_num_set(f, field, i);
			return ERR_OK;
		}
	}
	return cfg_type_error(c, node, path, f->what);
}

/*
 * A record row (REC): node, a sequence of mappings, into a fresh array of
 * f->item_size bytes an item at f->items_off in obj, counted at f->count_off.
 */
enum err cfg_parse_records(struct ctx *c, yaml_node_t *node, const char *path,
			   const struct field *f, char *obj)
{
	const struct cfg_records *spec = f->records;
	size_t *count = (size_t *)(void *)(obj + f->count_off);
	char **items = (char **)(void *)(obj + f->items_off);
	size_t n = 0;
	enum err rc = cfg_sequence_len(c, node, path, f->what, &n);

	if (rc != ERR_OK)
		return rc;
	free(*items);
	*items = xcalloc(n ? n : 1, f->item_size);
	for (size_t i = 0; i < n && rc == ERR_OK; i++) {
		char *item = *items + i * f->item_size;
		char sub[PATH_MAX_LEN];

		if (spec && spec->init)
			spec->init(item);
		(*count)++;
		cfg_path_printf(sub, "%s[%zu]", path, i);
		rc = cfg_parse_map(c, cfg_node_at(c, node->data.sequence.items.start[i]), sub,
				   f->sub, item);
		for (size_t j = 0; spec && spec->key && j < i && rc == ERR_OK; j++) {
			char *earlier = *items + j * f->item_size;

			rc = unique_by(c, node, i, path, spec->key, spec->what,
				       *(char **)(void *)(item + spec->key_off),
				       *(char **)(void *)(earlier + spec->key_off), j, spec->cmp);
		}
	}
	return rc;
}

static enum err check_root(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct config *cfg = obj;
	struct cfg_leader_election *le = &cfg->leader_election;
	enum err rc = cfg_need(c, map, path, "listen_address", cfg->listen_address);
	const char *env;

	if (rc == ERR_OK && !valid_listen(cfg->listen_address))
		rc = cfg_fail(c, cfg_key_or_map(c, map, "listen_address"), "listen_address", ERR_INVALID,
			      "expected host:port or :port, got \"%s\"", cfg->listen_address);
	if (rc == ERR_OK && cfg->web.public_listen_address &&
	    !strcmp(cfg->web.public_listen_address, cfg->listen_address))
		rc = cfg_fail(c, cfg_key_or_map(c, map, "web"), "web.public_listen_address",
			      ERR_INVALID, "must differ from listen_address \"%s\"",
			      cfg->listen_address);
	if (rc == ERR_OK)
		rc = cfg_need(c, map, path, "database", cfg->database);
	if (rc == ERR_OK)
		rc = cfg_check_database(c, map, cfg);
	if (rc == ERR_OK && cfg->receivers_count == 0 && !cfg->janitor.enabled)
		rc = cfg_fail(c, cfg_key_or_map(c, map, "receivers"), "receivers", ERR_INVALID,
			      "at least one receiver is required unless the janitor is enabled");
	/* serve takes the Lease with the janitor's Kubernetes client (cmd/serve.c). */
	if (rc == ERR_OK && le->enabled && !cfg->janitor.enabled)
		rc = cfg_fail(c, cfg_key_or_map(c, map, "leader_election"), "leader_election.enabled",
			      ERR_INVALID,
			      "needs janitor.enabled: the Lease is taken with janitor.kubernetes");
	if (rc != ERR_OK)
		return rc;
	if (!le->identity)
		le->identity = hostname();
	for (size_t i = 0; i < cfg->receivers_count; i++)
		cfg_alertmanager_inherit(&cfg->receivers[i].alertmanager, &cfg->alertmanager);
	/* GITHUB_TOKEN only when no file and no app names credentials. */
	env = getenv("GITHUB_TOKEN");
	if (!cfg->github.token_file && !cfg->github.app.app_id && env && *env) {
		cfg->github.token = xstrdup(env);
		cfg->github.token_from_env = 1;
	}
	return ERR_OK;
}
