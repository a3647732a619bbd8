/*
 * active.h - may this replica act now?  When several replicas share one
 * database, exactly one of them drains the queues and calls GitHub, Slack and
 * Kubernetes (issue 10); every replica takes webhooks.  The one is chosen by:
 *
 *   the Lease       when leader election is configured (ha/leader.h):
 *                   options.lease decides alone;
 *   the worker lock else, on PostgreSQL: the store's session advisory lock
 *                   STORE_WORKER_LOCK (store/store_lock.h store_worker_lock()), one
 *                   key for both queues, tried every ACTIVE_RETRY_MS while not
 *                   held, and checked with one query each time
 *                   active_may_act() is asked;
 *   nothing         on sqlite: always (one process owns the file).
 *
 * main.c wires active_may_act() into bridge_options.may_act (asked before
 * each event and each GitHub request) and janitor_options.is_leader (before
 * each Kubernetes write and Slack post), and active_ready() into /-/ready.
 */
#ifndef AB_ACTIVE_H
#define AB_ACTIVE_H

#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "metrics.h"
#include "store/store.h"

/* How often a replica without the worker lock tries to take it (and checks the database). */
#define ACTIVE_RETRY_MS INT64_C(1000)

struct active;

struct active_options {
	struct store *store;          /* borrowed; must outlive the struct active */
	/*
	 * The Lease, when leader election is configured: non-zero while this
	 * replica holds it (thread-safe, cheap).  NULL: the worker lock or,
	 * on sqlite, always.
	 */
	int (*lease)(void *lease_ctx);
	void *lease_ctx;
	/*
	 * Worker lock only: after taking it, how long to wait before the first
	 * call, in ms: the longest one request of a worker may last (main.c:
	 * github.timeout; 30 s, the Kubernetes client's, with the janitor).
	 * A replica that lost the lock because the server restarted may still
	 * have one request in flight; this lets it end before anyone else
	 * calls (see store_worker_lock() for the keepalive side).  <= 0: none.
	 */
	int64_t grace_ms;
	/*
	 * Borrowed, may be NULL.  Without a Lease, the gauge
	 * alertbridge_store_worker_lock_held is registered in it: 1 while
	 * this replica holds the worker lock (always 1 on sqlite), else 0.
	 */
	struct metrics *metrics;
};

/* A new gate; o is read during the call.  Never NULL.  Nothing is tried before active_start(). */
struct active *active_new(const struct active_options *o);

/*
 * On PostgreSQL, start the thread that takes the worker lock (without a
 * Lease) or pings the database (with one) every ACTIVE_RETRY_MS; the first
 * try is made before it returns.  Nothing on sqlite.  ERR_IO when the thread
 * cannot be created (errmsg says so).
 */
enum err active_start(struct active *a, struct buf *errmsg) WARN_UNUSED;

/*
 * Stop the thread and release the worker lock, so another replica takes it
 * within ACTIVE_RETRY_MS.  Call it after the workers stopped (their last
 * request ended).  a may be NULL; safe to call twice.
 */
void active_stop(struct active *a);

/* active_stop() and free; a may be NULL. */
void active_free(struct active *a);

/*
 * Non-zero when this replica may act now: the Lease says so; or it holds
 * the worker lock, its grace has passed and the database confirms it still
 * holds it (one query; a lost lock is logged once, "lost the worker lock",
 * and tried for again by the thread); or sqlite.  ctx is the struct active
 * (the shape of bridge_options.may_act).  Thread-safe.
 */
int active_may_act(void *ctx);

/*
 * Non-zero when /-/ready should answer ready as far as this gate knows: on
 * PostgreSQL when its last round trip (every ACTIVE_RETRY_MS) reached the
 * database, whichever replica acts (every replica takes webhooks); on
 * sqlite with a Lease, only its holder (the others' webhooks would wait on
 * their own file).  Else why (may be NULL) gets the reason ("the database
 * cannot be reached", "not the leader").
 */
int active_ready(struct active *a, struct buf *why);

#endif
