/*
 * reload.c - the running configuration as reference-counted generations, and
 * its reload (SIGHUP, POST /-/reload, the auto-reload poll).  A reload builds
 * a whole new generation beside the running one and swaps a pointer under a
 * mutex; workers pick the new one up between two events (reload.h).
 */
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "reload.h"
#include "xalloc.h"
#include "banned.h"

/* Largest content of one watched file compared by the auto-reload poll. */
#define WATCH_MAX_FILE_BYTES (CFG_MAX_FILE_BYTES + 1)

struct gen {
	struct reload_gen pub;  /* first: a struct reload_gen * is a struct gen * */
	struct config *cfg;
	struct auth *auth;
	int refs;               /* under reload.mu; the current generation holds one */
};

struct reload {
	struct reload_options opts;
	pthread_mutex_t mu;       /* cur and every refs */
	pthread_mutex_t run_mu;   /* one reload at a time */
	struct gen *cur;
	struct gen *first;        /* generation 1: one extra reference until reload_free() */
	struct metric *m_ok;
	struct metric *m_ts;
	/* auto reload */
	pthread_t watcher;
	int watching;
	int64_t interval_ms;
	struct clock_stop stop;
	struct buf seen;          /* the watched files' contents at the last look */
};

static void gen_free(struct reload *r, struct gen *g)
{
	if (!g)
		return;
	if (r->opts.ext_free)
		r->opts.ext_free(g->pub.ext);
	auth_free(g->auth);
	cfg_free(g->cfg);
	free(g);
}

/*
 * A generation of cfg and ext, with its webhook auth; takes ownership of cfg
 * and ext on success.  NULL on error (cfg and ext still the caller's).
 */
static struct gen *gen_new(struct config *cfg, void *ext, struct buf *errmsg)
{
	struct gen *g = xcalloc(1, sizeof(*g));

	if (auth_new(&cfg->webhook, &g->auth, errmsg) != ERR_OK) {
		free(g);
		return NULL;
	}
	g->cfg = cfg;
	g->pub.cfg = cfg;
	g->pub.ext = ext;
	g->pub.auth = g->auth;
	g->refs = 1;
	return g;
}

static void set_gauges(struct reload *r, int ok)
{
	metric_set(r->m_ok, NULL, ok);
	if (ok)
		metric_set(r->m_ts, NULL, (double)(clock_wall_ms() / 1000));
}

enum err reload_new(const struct reload_options *opts, struct config *cfg, void *ext,
		    struct reload **out, struct buf *errmsg)
{
	struct reload *r = xcalloc(1, sizeof(*r));

	*out = NULL;
	r->opts = *opts;
	pthread_mutex_init(&r->mu, NULL);
	pthread_mutex_init(&r->run_mu, NULL);
	clock_stop_init(&r->stop);
	buf_init(&r->seen, 0);
	r->cur = gen_new(cfg, ext, errmsg);
	if (!r->cur) {
		reload_free(r);
		return ERR_INVALID;
	}
	r->cur->pub.serial = 1;
	r->cur->refs++;  /* generation 1 lives until reload_free() */
	r->first = r->cur;
	if (opts->metrics) {
		r->m_ok = metrics_gauge(opts->metrics, "alertbridge_config_last_reload_successful",
					"Whether the last configuration reload attempt was successful "
					"(1) or not (0).", NULL);
		r->m_ts = metrics_gauge(opts->metrics,
					"alertbridge_config_last_reload_success_timestamp_seconds",
					"When the configuration was last loaded successfully "
					"(Unix seconds).", NULL);
	}
	set_gauges(r, 1);
	*out = r;
	return ERR_OK;
}

const struct reload_gen *reload_acquire(struct reload *r)
{
	struct gen *g;

	if (!r)
		return NULL;
	pthread_mutex_lock(&r->mu);
	g = r->cur;
	g->refs++;
	pthread_mutex_unlock(&r->mu);
	return &g->pub;
}

/* Drop one reference of g; frees it (outside the lock) when it was the last. */
static void unref(struct reload *r, struct gen *g)
{
	int last;

	pthread_mutex_lock(&r->mu);
	last = --g->refs == 0;
	pthread_mutex_unlock(&r->mu);
	if (last)
		gen_free(r, g);
}

void reload_release(struct reload *r, const struct reload_gen *g)
{
	if (!r || !g)
		return;
	unref(r, (struct gen *)(void *)g);
}

void reload_watch_stop(struct reload *r)
{
	if (!r || !r->watching)
		return;
	clock_stop_join(&r->stop, r->watcher);
	r->watching = 0;
}

void reload_free(struct reload *r)
{
	if (!r)
		return;
	reload_watch_stop(r);
	if (r->first)
		unref(r, r->first);
	if (r->cur)
		unref(r, r->cur);
	clock_stop_release(&r->stop);
	pthread_mutex_destroy(&r->mu);
	pthread_mutex_destroy(&r->run_mu);
	if (r->seen.data)
		memset(r->seen.data, 0, r->seen.len);  /* secret files were read into it */
	buf_release(&r->seen);
	free(r);
}

/* ---- the keys that need a restart ---- */

/*
 * What is built once at start (the listener and its TLS, the database and
 * its retention thread, the logger, the GitHub client, the janitor's clients
 * and election) is marked in the loader's tables: each row's reload class
 * (cfg_each_key(), config_int.h).  CFG_RESTART_PRESENCE: a secret whose
 * presence (not its value) picks a mode; its value reloads.
 */
static int str_differs(const char *a, const char *b)
{
	if (!a || !b)
		return a != b;
	return strcmp(a, b) != 0;
}

/* The size of a number of kind (CFG_KIND_INT to CFG_KIND_SIZE) in struct config. */
static const size_t num_size[] = {
	[CFG_KIND_INT] = sizeof(int),
	[CFG_KIND_UNSIGNED] = sizeof(unsigned),
	[CFG_KIND_I64] = sizeof(int64_t),
	[CFG_KIND_SIZE] = sizeof(size_t),
};

/*
 * The number of kind at p, widened for the log: the loader's tables bound
 * every unsigned and size_t key far below INT64_MAX.
 */
static long long num_at(enum cfg_kind kind, const void *p)
{
	switch (kind) {
	case CFG_KIND_INT:
		return *(const int *)p;
	case CFG_KIND_UNSIGNED:
		return *(const unsigned *)p;
	case CFG_KIND_I64:
		return *(const int64_t *)p;
	default:
		return (long long)*(const size_t *)p;
	}
}

/* Compare one key; on a difference log it and copy old's value into cur. */
static int keep_key(const struct cfg_key *k, const struct config *old, struct config *cur)
{
	const char *o = (const char *)old + k->off;
	char *c = (char *)cur + k->off;
	struct log_line *l;
	char ov[32] = "", cv[32] = "";
	const char *running = ov, *now = cv;
	const char *os = NULL;
	char *cs = NULL;
	int present = k->reload == CFG_RESTART_PRESENCE;

	switch (k->kind) {
	case CFG_KIND_STR:
		os = *(char *const *)(const void *)o;
		cs = *(char **)(void *)c;
		if (!present ? !str_differs(os, cs) : !os == !cs)
			return 0;
		running = present ? (os ? "set" : "unset") : os;
		now = present ? (cs ? "set" : "unset") : cs;
		break;
	case CFG_KIND_INT:
	case CFG_KIND_UNSIGNED:
	case CFG_KIND_I64:
	case CFG_KIND_SIZE:
		if (!memcmp(o, c, num_size[k->kind]))
			return 0;
		snprintf(ov, sizeof(ov), "%lld", num_at(k->kind, o));
		snprintf(cv, sizeof(cv), "%lld", num_at(k->kind, c));
		break;
	case CFG_KIND_OTHER:
		return 0;  /* web.auth.basic_auth_users: web_auth_differs() */
	}
	l = log_begin(LOG_WARN, "config change needs a restart, the running value stays");
	log_str(l, "key", k->path);
	log_str(l, "running", running);
	log_str(l, "new", now);
	log_end(l);
	if (k->kind != CFG_KIND_STR) {
		memcpy(c, o, num_size[k->kind]);
		return 1;
	}
	/* Presence: keep the running mode (no secret, or the running one). */
	if (cs)
		memset(cs, 0, strlen(cs));
	free(cs);
	*(char **)(void *)c = xstrdup(os);
	return 1;
}

/* web.auth: the page's and /metrics' guard is built once at start (main.c). */
static int web_auth_differs(const struct cfg_web_auth *o, const struct cfg_web_auth *c)
{
	if (o->basic_auth_users_count != c->basic_auth_users_count)
		return 1;
	for (size_t i = 0; i < o->basic_auth_users_count; i++)
		if (str_differs(o->basic_auth_users[i].key, c->basic_auth_users[i].key) ||
		    str_differs(o->basic_auth_users[i].value, c->basic_auth_users[i].value))
			return 1;
	return 0;
}

struct keep {
	const struct config *old;
	struct config *cur;
	int n;
};

static void keep_restart_key(const struct cfg_key *k, void *arg)
{
	struct keep *kp = arg;

	if (k->reload != CFG_LIVE)
		kp->n += keep_key(k, kp->old, kp->cur);
}

int reload_keep_restart_keys(const struct config *old, struct config *cur)
{
	struct keep kp = { old, cur, 0 };
	int n;

	cfg_each_key(keep_restart_key, &kp);
	n = kp.n;
	if (web_auth_differs(&old->web.auth, &cur->web.auth)) {
		struct log_line *l = log_begin(LOG_WARN,
					       "config change needs a restart, the running value stays");
		log_str(l, "key", "web.auth.basic_auth_users");
		log_int(l, "running_users", (int64_t)old->web.auth.basic_auth_users_count);
		log_int(l, "new_users", (int64_t)cur->web.auth.basic_auth_users_count);
		log_end(l);
		n++;
	}
	return n;
}

/* ---- reload ---- */

static void log_failure(const char *trigger, const char *file, const char *error)
{
	struct log_line *l = log_begin(LOG_ERROR, "config reload failed, the running config stays");

	log_str(l, "trigger", trigger);
	log_str(l, "config", file);
	log_str(l, "error", error);
	log_end(l);
}

/* Build the new generation and make it current; under run_mu. */
static enum err swap_in(struct reload *r, const char *trigger, struct buf *errmsg)
{
	struct config *cfg = NULL;
	struct gen *g = NULL, *old;
	void *ext = NULL;
	struct log_line *l;
	enum err rc;
	int kept;

	rc = cfg_load(r->opts.config_file, &cfg, errmsg);
	if (rc)
		return rc;
	/* r->cur changes only here, under run_mu: reading it needs no other lock. */
	kept = reload_keep_restart_keys(r->cur->cfg, cfg);
	if (r->opts.prepare) {
		rc = r->opts.prepare(r->opts.ctx, cfg, &ext, errmsg);
		if (rc) {
			cfg_free(cfg);
			return rc;
		}
	}
	g = gen_new(cfg, ext, errmsg);
	if (!g) {
		if (r->opts.ext_free)
			r->opts.ext_free(ext);
		cfg_free(cfg);
		return ERR_INVALID;
	}
	pthread_mutex_lock(&r->mu);
	old = r->cur;
	g->pub.serial = old->pub.serial + 1;
	r->cur = g;
	pthread_mutex_unlock(&r->mu);
	unref(r, old);
	l = log_begin(LOG_INFO, "config reloaded");
	log_str(l, "trigger", trigger);
	log_str(l, "config", r->opts.config_file);
	log_int(l, "generation", (int64_t)g->pub.serial);
	log_int(l, "needs_restart", kept);
	log_end(l);
	return ERR_OK;
}

enum err reload_run(struct reload *r, const char *trigger, struct buf *errmsg)
{
	struct buf err = BUF_INIT;
	enum err rc;

	pthread_mutex_lock(&r->run_mu);
	rc = swap_in(r, trigger, &err);
	set_gauges(r, rc == ERR_OK);
	if (rc)
		log_failure(trigger, r->opts.config_file, buf_str(&err));
	pthread_mutex_unlock(&r->run_mu);
	if (rc)
		buf_setf(errmsg, "%s", buf_str(&err));
	buf_release(&err);
	if (r->opts.after)
		r->opts.after(r->opts.ctx, rc == ERR_OK);
	return rc;
}

/* ---- auto reload ---- */

/* Append "<path>\n<length or -1>\n<contents>" of one watched file to out. */
static void add_file(struct buf *out, const char *path)
{
	size_t before;

	if (!path)
		return;
	(void)buf_printf(out, "%s\n", path);
	before = out->len;
	/* Past the bound, or after a read error, what was read stands for the file. */
	if (buf_read_file(out, path, WATCH_MAX_FILE_BYTES) == ERR_IO && out->len == before) {
		(void)buf_adds(out, "-1\n");
		return;
	}
	(void)buf_printf(out, "\n%zu\n", out->len - before);
}

/* The contents of the config file and the template and secret files cfg names. */
static void watched_contents(struct reload *r, const struct config *cfg, struct buf *out)
{
	add_file(out, r->opts.config_file);
	add_file(out, cfg->webhook.bearer_token_file);
	add_file(out, cfg->webhook.basic_auth.password_file);
	add_file(out, cfg->github.token_file);
	add_file(out, cfg->janitor.slack.bot_token_file);
	add_file(out, cfg->janitor.slack.webhook_url_file);
	for (size_t i = 0; i < cfg->receivers_count; i++) {
		const struct cfg_templates *t = &cfg->receivers[i].templates;
		add_file(out, t->title);
		add_file(out, t->body);
		add_file(out, t->refire);
		add_file(out, t->resolve);
		add_file(out, t->reopen);
	}
}

/* One look: reload when the contents changed since the last one. */
static void watch_once(struct reload *r)
{
	const struct reload_gen *g = reload_acquire(r);
	struct buf now = BUF_INIT, err = BUF_INIT;
	int changed;

	watched_contents(r, g->cfg, &now);
	reload_release(r, g);
	changed = now.len != r->seen.len || memcmp(buf_str(&now), buf_str(&r->seen), now.len);
	if (r->seen.data)
		memset(r->seen.data, 0, r->seen.len);
	buf_release(&r->seen);
	r->seen = now;
	if (changed)
		(void)!reload_run(r, "auto", &err);  /* logged */
	buf_release(&err);
}

static void *watcher(void *arg)
{
	struct reload *r = arg;

	while (!clock_stop_requested(&r->stop)) {
		clock_stop_sleep_ms(&r->stop, r->interval_ms);
		if (!clock_stop_requested(&r->stop))
			watch_once(r);
	}
	return NULL;
}

enum err reload_watch_start(struct reload *r, int64_t interval_ms, struct buf *errmsg)
{
	const struct reload_gen *g;

	if (interval_ms <= 0 || r->watching)
		return ERR_OK;
	r->interval_ms = interval_ms;
	g = reload_acquire(r);
	watched_contents(r, g->cfg, &r->seen);  /* what runs now is the baseline */
	reload_release(r, g);
	if (pthread_create(&r->watcher, NULL, watcher, r)) {
		buf_setf(errmsg, "cannot start the config auto-reload thread");
		return ERR_IO;
	}
	r->watching = 1;
	return ERR_OK;
}

/* ---- POST /-/reload ---- */

void reload_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct reload *r = ctx;

	(void)req;
	res->content_type = "text/plain; charset=utf-8";
	if (!r->opts.enable_lifecycle) {
		res->status = 403;
		(void)buf_adds(&res->body, "Lifecycle API is not enabled.\n");
		return;
	}
	/*
	 * The error (file, line, key) is in the log line reload_run() wrote; the
	 * answer goes to whoever could reach the port, so it says less.
	 */
	if (reload_run(r, "http", NULL)) {
		res->status = 500;
		(void)buf_adds(&res->body, "reload failed, see the log\n");
	} else {
		res->status = 200;
		(void)buf_adds(&res->body, "Reloaded.\n");
	}
}
