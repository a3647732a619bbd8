/*
 * map_admin.h - the commands that change the map (`map forget`, `map retry`,
 * `map rescan`), run by whoever may write the database: the running service,
 * asked over its admin endpoint POST /-/map/{forget,retry,rescan} (registered
 * behind web/guard.h's guard_admin_handle(), the rule of /-/reload), or the
 * command itself when no service holds the sqlite file (store/serve_lock.h).
 * So a sqlite file has one writer, and its version (db_data_version()) stays
 * exact.
 */
#ifndef AB_MAP_ADMIN_H
#define AB_MAP_ADMIN_H

#include "buf.h"
#include "config.h"
#include "err.h"
#include "http_server.h"
#include "store/store.h"

enum map_admin_op {
	MAP_ADMIN_FORGET,  /* store_issue_forget(receiver, key): the next firing makes a new issue */
	MAP_ADMIN_RETRY,   /* store_dead_requeue("bridge", receiver, key): dead letters again */
	MAP_ADMIN_RESCAN,  /* store_scan_forget(receiver or all): repositories read again */
};

/* "forget", "retry", "rescan" into *op: 1; anything else 0. */
int map_admin_op_parse(const char *name, enum map_admin_op *op);

/*
 * Run op on st for receiver and key (key unused by rescan; receiver NULL:
 * every receiver, rescan only).  Returns an HTTP status and sets out to one
 * line for a person, without a newline: 200 done ("forgot R/K: the next
 * firing creates a new issue", "re-queued N dead-lettered event(s) of R/K",
 * "forgot N repository scan(s): ..."), 400 receiver or key missing ("map
 * forget needs --receiver=NAME"), 404 nothing to do ("no map row for
 * receiver ...", "no dead-lettered event for ..."), 500 the store failed
 * (logged by the store).
 */
int map_admin_run(struct store *st, enum map_admin_op op, const char *receiver, const char *key,
		  struct buf *out);

/*
 * srv_handler of POST /-/map/forget, /-/map/retry and /-/map/rescan (ctx:
 * the service's struct store): the op from the path, ?receiver= and ?key=
 * from the query, map_admin_run()'s status and line (text/plain).  It
 * checks no credentials: register it only behind guard_admin_handle().
 */
void map_admin_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

/*
 * Register map_admin_handle()'s three routes on srv, each as handler with
 * handler_ctx (guard_admin_handle() and its struct guard_admin, whose inner
 * handler is map_admin_handle).  Errors: srv_route()'s.
 */
enum err map_admin_routes(struct srv *srv, srv_handler handler, void *handler_ctx) WARN_UNUSED;

/*
 * The `map forget|retry|rescan` command on target (a sqlite path or a
 * PostgreSQL URI; cfg, may be NULL, gives the password file and the
 * credentials): when a service holds target's lock, POST its admin
 * endpoint (at the URL in the lock file, within 10 s; Authorization from
 * cfg's webhook.bearer_token or webhook.basic_auth, which the guard takes);
 * else take the lock, open the store and run op here.  PostgreSQL: always
 * here (many replicas write by design).  Prints the line on stdout (done)
 * or stderr.  Returns the exit status: 0 done, 1 nothing to do, refused or
 * failed, 2 usage (receiver or key missing).
 */
int map_admin_command(enum map_admin_op op, const char *target, const struct config *cfg,
		      const char *receiver, const char *key);

#endif
