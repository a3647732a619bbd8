/*
 * reload.h - the running configuration and its reload, with Prometheus'
 * semantics: SIGHUP, POST /-/reload and --config.auto-reload-interval read
 * and validate the config file, its templates and secret files, and swap the
 * result in as a whole.  A generation (config + webhook auth + the caller's
 * compiled extras, e.g. templates) is reference counted: a worker or a
 * request holds one for a whole event, so it never sees a half-new config.
 */
#ifndef AB_RELOAD_H
#define AB_RELOAD_H

#include <stdint.h>

#include "auth.h"
#include "buf.h"
#include "config.h"
#include "err.h"
#include "http_server.h"
#include "metrics.h"

struct reload;

/* One generation of the configuration; read-only while held. */
struct reload_gen {
	const struct config *cfg;
	const struct auth *auth;  /* built from cfg->webhook (core/auth.h) */
	void *ext;                /* what reload_options.prepare built (e.g. templates) */
	uint64_t serial;          /* 1 for the first generation, +1 per successful reload */
};

struct reload_options {
	const char *config_file;  /* the file reloads read again; outlives the reload */
	struct metrics *metrics;  /* may be NULL */
	/*
	 * Build the extras of a new config (compile the templates...), on the
	 * reloading thread.  NULL: none.  An error fails the reload with errmsg,
	 * which should name the file (and line) at fault.
	 */
	enum err (*prepare)(void *ctx, const struct config *cfg, void **ext, struct buf *errmsg);
	void (*ext_free)(void *ext);  /* frees what prepare built; NULL: nothing to free */
	/*
	 * Called after every reload attempt, successful or not (ok 0/1), on the
	 * reloading thread, outside the reload's lock: e.g. re-queue dead letters
	 * of missing repositories.  May be NULL.
	 */
	void (*after)(void *ctx, int ok);
	void *ctx;
	/* POST /-/reload answers only when non-zero (--web.enable-lifecycle); else 403. */
	int enable_lifecycle;
};

/*
 * The reload of cfg, which becomes generation 1, with ext (what prepare
 * built for it; may be NULL).  Takes ownership of cfg and ext on success.
 * Sets alertbridge_config_last_reload_successful to 1 and
 * alertbridge_config_last_reload_success_timestamp_seconds to now (Unix s).
 * Generation 1 lives until reload_free(), so the startup code may keep using
 * cfg.  On success *out is new; free with reload_free() after every holder
 * has released its generation.
 * Errors: ERR_INVALID from auth_new() (the webhook credentials), errmsg set.
 */
enum err reload_new(const struct reload_options *opts, struct config *cfg, void *ext,
		    struct reload **out, struct buf *errmsg) WARN_UNUSED;

/* Stop the auto-reload thread and free everything; r may be NULL. */
void reload_free(struct reload *r);

/*
 * The current generation, held until reload_release().  Thread-safe, never
 * blocks on a reload in progress.  r NULL returns NULL.
 */
const struct reload_gen *reload_acquire(struct reload *r);
/* Release what reload_acquire() returned; g may be NULL. */
void reload_release(struct reload *r, const struct reload_gen *g);

/*
 * Reload now: read and validate opts.config_file (cfg_load()), build the
 * webhook auth and the extras (prepare), keep the keys that need a restart
 * at their running values (each logged once per reload as "needs a
 * restart", with key and both values unless secret), then make the result
 * the current generation.  Holders of the old one keep it until they
 * release it.  Reloads are serialised.  trigger names the cause in the log
 * ("SIGHUP", "http", "auto").  On any error the current generation stays,
 * the error is logged and returned in errmsg (the config loader's
 * "<file>:<line>: <key>: <text>"), and the gauge is set to 0.
 * On success the gauge is 1 and the timestamp now.
 * Errors: those of cfg_load(), auth_new() and prepare.
 */
enum err reload_run(struct reload *r, const char *trigger, struct buf *errmsg) WARN_UNUSED;

/*
 * Poll every interval_ms the config file and the template and secret files
 * the running config names; when their contents differ from the last look,
 * reload_run("auto").  A failed content is not retried until it changes
 * again.  For Kubernetes ConfigMaps, whose update swaps a symlink.
 * interval_ms <= 0: nothing.  Errors: ERR_IO when the thread cannot start.
 */
enum err reload_watch_start(struct reload *r, int64_t interval_ms, struct buf *errmsg) WARN_UNUSED;

/*
 * Stop the auto-reload poll and wait for a reload it is making; before the
 * modules opts.after uses go away.  r may be NULL; idempotent.
 */
void reload_watch_stop(struct reload *r);

/*
 * srv_handler for POST and PUT /-/reload (ctx: the struct reload), as
 * Prometheus' web.go registers both: 403 "Lifecycle API is not enabled.\n"
 * unless enable_lifecycle; else reload_run("http") and 200 "Reloaded.\n",
 * or 500 "reload failed, see the log\n" (the log line has the file, line
 * and error; the answer does not).  It checks no credentials: register it
 * only behind guard_admin_handle() (web/guard.h), the rule every
 * state-changing endpoint shares.
 */
void reload_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

/*
 * The keys that need a restart: for each that differs between old and cur,
 * log it, and set cur's value to old's (so cur describes what runs).
 * Returns how many differed.  For reload_run(); public for tests.
 */
int reload_keep_restart_keys(const struct config *old, struct config *cur);

#endif
