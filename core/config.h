/*
 * config.h - the alertbridge YAML configuration (DESIGN.md "Configuration"),
 * parsed with libyaml into a transparent, read-only struct config that
 * main() builds once and passes to every module.  Secrets are read from their
 * *_file at load time and kept here; they must never be logged (cfg_dump()
 * masks them).
 */
#ifndef AB_CONFIG_H
#define AB_CONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "log.h"

/* Defaults, applied to every key the file leaves out. */
#define CFG_DEFAULT_LISTEN_ADDRESS ":9095"
#define CFG_DEFAULT_DATABASE "alertbridge.db"
#define CFG_DEFAULT_GITHUB_API_URL "https://api.github.com"
#define CFG_DEFAULT_SLACK_API_URL "https://slack.com/api"
/* Largest config file and secret file read, in bytes. */
#define CFG_MAX_FILE_BYTES (4u << 20)
#define CFG_MAX_SECRET_BYTES (64u << 10)
#define CFG_MAX_KEY_BYTES (64u << 10)     /* a GitHub App's PEM private key */

/* A list of strings; items[count] is NULL.  items is never NULL. */
struct cfg_list {
	char **items;
	size_t count;
};

/* One key → value pair of a string map (janitor.slack.namespace_channels). */
struct cfg_pair {
	char *key;
	char *value;
};

/*
 * Relative paths.  Every file the config names (templates.*, every *_file,
 * webhook.tls.*, github.app.private_key_file, janitor.kubernetes.kubeconfig)
 * is resolved against the directory of the config file, as Prometheus does
 * for rule_files; absolute paths are kept (database_password_file too).
 * `database` is NOT resolved: like Prometheus' --storage.tsdb.path it is
 * relative to the working directory.
 * Paths are NULL when the key is absent (or empty).
 */

struct cfg_log {
	enum log_level level;   /* log.level: debug|info|warn|error, default info */
	enum log_format format; /* log.format: logfmt|json, default logfmt */
};

struct cfg_basic_auth {
	char *username;      /* NULL when basic_auth is not configured */
	char *password_file; /* resolved path */
	char *password;      /* SECRET: the file's contents, one trailing newline stripped */
};

struct cfg_tls {
	char *cert_file;      /* NULL: plain HTTP */
	char *key_file;       /* required with cert_file */
	char *client_ca_file; /* NULL: no client certificates asked for */
};

struct cfg_webhook {
	char *bearer_token_file;        /* resolved path, or NULL */
	char *bearer_token;             /* SECRET, or NULL: no bearer auth */
	struct cfg_basic_auth basic_auth; /* exclusive with the bearer token */
	struct cfg_tls tls;
	size_t max_body_bytes;          /* default 16777216 (16 MiB: webhook.max_alerts of ~1 KB) */
	size_t max_alerts;              /* alerts per webhook body, 1..1000000, default 10000 (400) */
	unsigned max_connections;       /* default 256 */
	int64_t read_timeout_ms;        /* webhook.read_timeout, default 30s, at least 1s: idle
					 * limit, and the whole request must arrive within it */
	int64_t read_header_timeout_ms; /* webhook.read_header_timeout, default 10s, at most
					 * read_timeout: a request's headers must arrive within it */
	unsigned max_connections_per_ip; /* default 64; 0: no per-IP cap */
	unsigned threads;               /* default 4 */
};

struct cfg_github_app {
	int64_t app_id;          /* 0 when github.app is not configured */
	int64_t installation_id; /* 0: found per owner (GET /repos/{owner}/{repo}/installation) */
	char *private_key_file;  /* resolved path */
	char *private_key;       /* SECRET: the file's PEM text, read and checked to be an RSA
				  * private key (PKCS#1 or PKCS#8) by cfg_parse(); a reload
				  * parses again, so it re-reads the file */
};

/* One github.credentials entry: the credential for the repositories of owner. */
struct cfg_github_cred {
	char *owner;                /* organisation or user, matched case-insensitively */
	char *token_file;           /* resolved path, or NULL: app */
	char *token;                /* SECRET: token_file's contents */
	struct cfg_github_app app;  /* app_id 0: token_file; exactly one of the two is set */
};

struct cfg_github {
	char *api_url;              /* default https://api.github.com, no trailing '/' */
	char *token_file;           /* resolved path, or NULL */
	char *token;                /* SECRET: from token_file, else $GITHUB_TOKEN, else NULL */
	int token_from_env;         /* 1 when token came from GITHUB_TOKEN */
	struct cfg_github_app app;  /* exclusive with token_file */
	struct cfg_github_cred *credentials; /* github.credentials: per owner, owners unique
					      * (case-insensitive); the credential above is
					      * the default for every other owner */
	size_t credentials_count;
	unsigned content_per_minute; /* 1..80, default 20 */
	unsigned content_per_hour;   /* 1..500, default 500 (GitHub's ceilings: 80/min, 500/h) */
	int64_t timeout_ms;         /* github.timeout, default 10s */
	int64_t body_update_interval_ms; /* github.body_update_interval, 1s..1h, default 1m: the
	                                    least time between two rewrites of one issue body
	                                    (issue_per: group member lists, storm summaries) */
	int dry_run;                /* default 0; callers also dry-run without credentials */
	/*
	 * github.webhook_secret_file: the secret of the repository's webhook
	 * (POST /v1/github/webhook, bridge/gh_webhook.h); NULL: that endpoint
	 * answers 404.  Read again on reload.
	 */
	char *webhook_secret_file;  /* resolved path, or NULL */
	char *webhook_secret;       /* SECRET */
};

/*
 * alertmanager: the Alertmanager whose API v2 the silences from GitHub
 * issues are made in (core/am_api.h).  Top level, and per receiver: a
 * receiver without its own url takes the top level's whole; one with a url
 * takes the top level's timeout and max_silence unless it sets them.
 */
struct cfg_alertmanager {
	char *url;                  /* http(s)://..., no trailing '/'; NULL: no silences */
	char *bearer_token_file;    /* resolved path, or NULL */
	char *bearer_token;         /* SECRET, or NULL */
	struct cfg_basic_auth basic_auth; /* exclusive with the bearer token */
	int64_t timeout_ms;         /* default 10s */
	int64_t max_silence_ms;     /* the longest /silence, default 7d */
};

/* Template paths; NULL means the built-in default template. */
struct cfg_templates {
	char *title;
	char *body;
	char *refire;
	char *resolve;
	char *reopen;
};

struct cfg_storm {
	int enabled;            /* default 0 */
	int64_t storm_after_ms; /* default 10m */
};

enum cfg_issue_per { CFG_ISSUE_PER_ALERT = 0, CFG_ISSUE_PER_GROUP };

/* A matcher's operator, as Alertmanager writes it. */
enum cfg_match_op {
	CFG_MATCH_EQ = 0,  /* =  */
	CFG_MATCH_NE,      /* != */
	CFG_MATCH_RE,      /* =~ (the regex is fully anchored) */
	CFG_MATCH_NRE,     /* !~ */
};

/*
 * One Alertmanager matcher, `name op "value"`, parsed by
 * matcher_parse_list() (core/matchers.h).  re is the compiled, anchored
 * ^(?:value)$ regex for =~ and !~ (RE2 syntax, run on PCRE2).
 */
struct cfg_matcher {
	char *name;
	enum cfg_match_op op;
	char *value;
	void *re;  /* pcre2_code * for =~ and !~; NULL otherwise */
};

/*
 * One entry of a receiver's `routes:`.  Whatever the route does not set is
 * copied from its receiver when the file is loaded, so each field is always
 * the effective one.
 */
struct cfg_route {
	struct cfg_matcher *matchers; /* all must match; none: the route matches every alert */
	size_t matchers_count;        /* an entry of matchers_text may hold several, or none */
	struct cfg_list matchers_text; /* the `matchers:` entries as written, for messages */
	char *repo;                   /* Mustache template or "owner/name" */
	struct cfg_list labels;
	struct cfg_list assignees;
	struct cfg_templates templates;
	unsigned long line;           /* the line of the route in the file, for messages */
};

struct cfg_receiver {
	char *name;                   /* required, unique: the Alertmanager receiver name */
	char *repo;                   /* required: "owner/name", or a Mustache template over
					 the alert's view rendering to one ("{{labels.team}}/x") */
	enum cfg_issue_per issue_per; /* "alert" (default) or "group" */
	struct cfg_list labels;       /* Mustache templates; default empty */
	struct cfg_list assignees;    /* default empty */
	int auto_close;               /* default 1 */
	int64_t reopen_window_ms;     /* default 7d */
	struct cfg_templates templates;
	struct cfg_storm storm;
	struct cfg_route *routes;     /* in file order: the first whose matchers all match wins */
	size_t routes_count;
	struct cfg_alertmanager alertmanager; /* the effective one (see struct cfg_alertmanager) */
};

enum cfg_owned {
	CFG_OWNED_NOTIFY_ONLY = 0, /* "notify-only" (default) */
	CFG_OWNED_SCALE_TO_ZERO,   /* "scale-to-zero" */
	CFG_OWNED_DELETE_OWNER,    /* "delete-owner" */
};

struct cfg_policy {
	char *alertname;        /* required, unique */
	int64_t grace_ms;       /* default 24h */
	int64_t notice_lead_ms; /* default 2h; never more than grace */
	/*
	 * One reminder in the notice's Slack thread this long before the pod is
	 * acted on; default notice_lead / 2; 0: no reminder; otherwise less
	 * than notice_lead.
	 */
	int64_t reminder_before_ms;
	enum cfg_owned owned;
	char *message;          /* extra text for the notice, or NULL */
	/* "Keep until" from Slack (janitor/postpone.h): each click moves janitor/expires
	 * this much later (default 24h), at most max_postpones times (default 3, 0: no
	 * button), never past creation + max_lifetime (0, the default: no bound). */
	int64_t postpone_by_ms;
	unsigned max_postpones;
	int64_t max_lifetime_ms;
};

struct cfg_slack {
	char *api_url;           /* default https://slack.com/api, no trailing '/' */
	char *bot_token_file;    /* resolved path, or NULL */
	char *bot_token;         /* SECRET, or NULL */
	char *webhook_url_file;  /* resolved path, or NULL; exclusive with the bot token */
	char *webhook_url;       /* SECRET, or NULL */
	/* Slack app's signing secret (POST /v1/slack/interactions); NULL: no button, 404 */
	char *signing_secret_file; /* resolved path, or NULL; needs the bot token */
	char *signing_secret;      /* SECRET, or NULL */
	char *default_channel;   /* or NULL */
	char *owner_label;       /* pod label naming the owner, or NULL */
	struct cfg_pair *namespace_channels; /* namespace → channel, in file order */
	size_t namespace_channels_count;
};

/*
 * leader_election (top level; janitor.leader_election is its deprecated
 * alias): with enabled, only the holder of the Lease acts, the bridge's
 * worker and the janitor's alike (ha/leader.h, core/active.h).
 */
struct cfg_leader_election {
	int enabled;              /* default 0 */
	char *namespace;          /* default "alertbridge" */
	char *lease_name;         /* default "alertbridge" */
	int64_t lease_duration_ms; /* default 15s */
	char *identity;           /* default: the host name */
};

struct cfg_kubernetes {
	char *kubeconfig; /* resolved path; NULL (or "" in the file): in-cluster */
	char *context;    /* NULL: the kubeconfig's current-context */
};

/* The longest janitor.notice_batch_window: 5m. */
#define CFG_MAX_NOTICE_BATCH_WINDOW_MS (5 * 60 * 1000LL)

struct cfg_janitor {
	int enabled;  /* default 0 */
	int dry_run;  /* default 1: an admin must set false to act */
	struct cfg_kubernetes kubernetes;
	struct cfg_list exclude_namespaces;   /* default [kube-system]; given list replaces it */
	int64_t sweep_interval_ms;            /* default 1m */
	unsigned max_deletions_per_sweep;     /* default 10; 0 deletes nothing */
	/*
	 * Notices of one owner queued within this long of the first (a burst of
	 * alerts) go out as one digest; default 5s, 0: only what is due at once
	 * (a sweep's), at most CFG_MAX_NOTICE_BATCH_WINDOW_MS.
	 */
	int64_t notice_batch_window_ms;
	struct cfg_policy *policies;          /* in file order */
	size_t policies_count;
	struct cfg_slack slack;
};

/*
 * web: what guards the on-call page (GET /) and /metrics, as Prometheus'
 * web-config file does (exporter-toolkit): web.auth.basic_auth_users maps a
 * user name to the bcrypt hash of its password ("$2y$", "$2b$" or "$2a$",
 * what `htpasswd -nbBC 10 USER PASSWORD` prints after the colon).  With no
 * user both are open.  /-/healthy and /-/ready are always open; the webhooks
 * keep webhook.* auth.
 */
struct cfg_web_auth {
	struct cfg_pair *basic_auth_users;  /* user -> bcrypt hash, in file order; NULL: none */
	size_t basic_auth_users_count;
};

struct cfg_web {
	struct cfg_web_auth auth;
	/*
	 * web.public_listen_address: a listener of its own for the endpoints the
	 * internet must reach (POST /v1/github/webhook, POST /v1/slack/interactions),
	 * in listen_address's form and different from it; they are then served
	 * there alone (everything else answers 404 there) and no longer on the
	 * main listener.  NULL (default): they are served on the main listener.
	 */
	char *public_listen_address;
	struct cfg_tls public_tls; /* web.public_tls: that listener's TLS, as webhook.tls */
};

struct config {
	char *path;           /* the name given for errors (cfg_load: the path) */
	char *base_dir;       /* directory relative paths were resolved against, or NULL */
	char *listen_address; /* host:port, default ":9095" (all interfaces) */
	char *database;       /* default "alertbridge.db": an sqlite file, relative to the
			       * working directory; or a PostgreSQL URI (postgres:// or
			       * postgresql://, libpq's form) without a password */
	char *database_password_file; /* PostgreSQL only: resolved path of the file holding the
				       * password on one line (read by the store, not here: the
				       * loader only checks it can be read), or NULL: libpq's
				       * PGPASSFILE / ~/.pgpass */
	int64_t database_retention_ms; /* done events kept this long; > 0, default 7d */
	int64_t database_statement_timeout_ms; /* bound of one statement and of an intake's
						* wait for the store; > 0, default 5s
						* (store/store.h store_set_timeout()) */
	struct cfg_log log;
	struct cfg_webhook webhook;
	struct cfg_github github;
	struct cfg_alertmanager alertmanager;
	struct cfg_receiver *receivers; /* in file order; at least one unless the janitor is on */
	size_t receivers_count;
	struct cfg_janitor janitor;
	struct cfg_leader_election leader_election;
	struct cfg_web web;
};

/*
 * Read and parse the YAML file at path (at most CFG_MAX_FILE_BYTES) and
 * resolve relative paths against its directory; see cfg_parse().  On
 * success *out is a new config the caller frees with cfg_free().
 * Errors: ERR_IO when the file cannot be read ("<path>: cannot read: <strerror>"),
 * ERR_TOOBIG when it is too large, else as cfg_parse().
 */
enum err cfg_load(const char *path, struct config **out, struct buf *errmsg) WARN_UNUSED;

/*
 * Parse yaml[0..len) (the first YAML document; an empty one gives the
 * defaults).  name_for_errors prefixes every message; base_dir (NULL or "."
 * for none) is prepended to relative file paths.  Secret files are read and
 * GITHUB_TOKEN is consulted here.
 *
 * Every error is ERR_INVALID (or ERR_IO for an unreadable secret file) with
 * errmsg (may be NULL) set to "<name>:<line>: <key path>: <text>", e.g.
 *   alertbridge.yml:14: receivers[0].issue_per: expected "alert" or "group", got "foo"
 *   alertbridge.yml:3: webhook.max_body_byte: unknown key
 *   alertbridge.yml:9: receivers[0]: missing required key "repo"
 *   alertbridge.yml:7: github.timeout: not a valid duration string: "10x"
 *   alertbridge.yml:5: github.token_file: cannot read "/etc/x": No such file or directory
 *   alertbridge.yml:2: yaml: mapping values are not allowed in this context
 * Booleans are YAML 1.1 words: true/false, yes/no, on/off (lower, Title or
 * UPPER case).  Lists of strings may be flow ([a, b]) or block style.  A
 * plain null (~, null, or nothing) keeps the default.
 */
enum err cfg_parse(const char *yaml, size_t len, const char *name_for_errors,
		   const char *base_dir, struct config **out, struct buf *errmsg) WARN_UNUSED;

/* Free cfg and everything in it, wiping the secrets first.  cfg may be NULL. */
void cfg_free(struct config *cfg);

/*
 * The check `database` gets when it is a PostgreSQL URI (config_database.c),
 * for a URI that comes from elsewhere (--database.path): ERR_OK when libpq's
 * PQconninfoParse() takes it and it names no password (user:pw@ or
 * password=); else ERR_INVALID with why (never quoting the password).
 */
enum err cfg_database_uri_check(const char *uri, struct buf *why) WARN_UNUSED;

/* The receiver named name (exact match), or NULL.  Lives as long as cfg. */
const struct cfg_receiver *cfg_receiver_find(const struct config *cfg, const char *name);

/*
 * The janitor policy whose alertname is alertname, or NULL when no policy
 * names it (the janitor then leaves the pod alone).  Lives as long as cfg.
 */
const struct cfg_policy *cfg_policy_find(const struct config *cfg, const char *alertname);

/*
 * When a changed key takes effect on reload, as each row of the loader's
 * tables says (config_int.h).  CFG_RESTART: built once at start, so a reload
 * keeps the running value and logs "config change needs a restart";
 * CFG_RESTART_PRESENCE: a *_file whose presence picks a mode (restart to add
 * or remove it) while its contents reload.
 */
enum cfg_reload { CFG_LIVE = 0, CFG_RESTART, CFG_RESTART_PRESENCE };

/* How a key's value is stored in struct config, for comparing two configs. */
enum cfg_kind {
	CFG_KIND_STR,      /* char *, NULL when absent */
	CFG_KIND_INT,      /* int, or an enum of int's size */
	CFG_KIND_UNSIGNED, /* unsigned */
	CFG_KIND_I64,      /* int64_t (numbers and durations in ms) */
	CFG_KIND_SIZE,     /* size_t */
	CFG_KIND_OTHER,    /* a list or a mapping of pairs: compared by its own code */
};

/* One key of the configuration outside its records (receivers, policies, credentials). */
struct cfg_key {
	const char *path;      /* the key path, "webhook.tls.cert_file" */
	enum cfg_kind kind;
	size_t off;            /* of its value in struct config; for CFG_RESTART_PRESENCE
				* that of the secret's contents (char *); for a mapping of
				* pairs (CFG_KIND_OTHER) that of the mapping holding it */
	enum cfg_reload reload;
};

/*
 * Call fn(key, arg) for every key of the top-level mapping and its nested
 * mappings, in the order of the tables, mappings themselves left out; the
 * lists of records are left out too (they reload).  key and its path live
 * for the call only.  For reload.c's keys that need a restart.
 */
void cfg_each_key(void (*fn)(const struct cfg_key *key, void *arg), void *arg);

/*
 * Append the configuration reference in Markdown, generated from the tables
 * of the loader: one section per mapping and per record (receivers[],
 * receivers[].routes[], janitor.policies[], github.credentials[]), one row
 * per key with its type, default (as cfg_dump() writes it, read from a
 * configuration that sets no key), bounds, reload class and documentation.
 * For `alertbridge check-config --reference`, committed as
 * docs/configuration.md (`make docs`).
 */
void cfg_reference(struct buf *out);

/*
 * Append the effective configuration (defaults filled in, paths resolved) as
 * YAML that cfg_parse() accepts.  Secrets are never written: each appears as
 * a comment "# <key>: <secret>" next to the file it came from.  For
 * `alertbridge check-config`.
 */
void cfg_dump(const struct config *cfg, struct buf *out);

#endif
