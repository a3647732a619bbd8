/*
 * store_lock.h - more than one replica on one database (store_lock.c,
 * issue 10): the worker lock that lets one replica at a time call GitHub,
 * Slack and Kubernetes, and the database ping for readiness.
 */
#ifndef AB_STORE_LOCK_H
#define AB_STORE_LOCK_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct store;

/*
 * The key of the worker lock: one per process for both queues ("bridge" and
 * the janitor's), as one Lease covers both ("ab" "wk" in ASCII; db.h's
 * DB_WRITE_LOCK is another key).
 */
#define STORE_WORKER_LOCK INT64_C(0x6162776b)

/* 1 when st's database may be shared with other replicas (PostgreSQL), else 0 (sqlite). */
int store_shared(const struct store *st);

/*
 * Take the worker lock key if nobody holds it: *held = 1 when this replica
 * holds it now (also when it held it already; taking it again does not
 * stack), else 0.  PostgreSQL: a session advisory lock
 * (pg_try_advisory_lock, https://www.postgresql.org/docs/15/explicit-locking.html#ADVISORY-LOCKS)
 * on the store's one connection, released by store_worker_unlock() or when
 * the session ends: the process exits or is killed (the kernel closes the
 * socket: at once), the server restarts, or the server drops a dead
 * connection (see below).  sqlite: always held (one process owns the file).
 * A connection the store lost and made again (any call may do that) has
 * lost the lock: store_worker_lock_held() says so.
 *
 * Dead connections.  The store's connection (store/db_pg.c) sets libpq's
 * keepalives (idle 5 s, interval 2 s, count 3) and tcp_user_timeout 10 s,
 * and the session's tcp_keepalives_idle 10 s, _interval 5 s, _count 3 and
 * tcp_user_timeout 25 s (where the server's configuration leaves them at
 * their defaults; a URI's own parameters win too: keep the client's bound
 * under the server's).  So when the network or the host of a holder
 * dies, the holder notices within 11 s (10 s when a query is in flight:
 * every store_worker_lock_held() check is one, and it answers 0 then),
 * while the server drops its session, releasing the lock, only 25 s after
 * it last heard from it: by then the holder has surely noticed and
 * stopped, and its last GitHub request, started after its last check
 * (github.timeout, 10 s by default), has ended.  A request still in flight
 * when the lock goes for another reason (the server restarted, a kill
 * right after a request was sent) is covered by the grace of
 * core/active.h: a new holder waits the longest request time before its
 * first call.
 *
 * Takeover bound (the holder gone -> another replica acts): the lock is
 * free at once after a kill or an exit, <= 25 s after a host or network is
 * lost, as soon as the server is back after a restart; the others try
 * every ACTIVE_RETRY_MS (1 s), wait the grace (github.timeout; 30 s with
 * the janitor) after taking it, and look at the queue every
 * STORE_SHARED_WAIT_MS: 1 s + grace + 0.25 s after a kill (measured by
 * tests/integration/test_pg_failover.py: 2.0-3.0 s with a 2 s grace), 25 s
 * more for a lost host.
 *
 * Errors: ERR_UNAVAILABLE (the server cannot be reached; *held = 0), ERR_DB.
 */
enum err store_worker_lock(struct store *st, int64_t key, int *held,
			   struct buf *errmsg) WARN_UNUSED;
/*
 * 1 while this replica still holds the worker lock key (PostgreSQL: one
 * query on the store's connection, so a lost connection or server reads 0
 * within the keepalive bounds above); sqlite: 1.  Asked before every call
 * to GitHub, Slack or Kubernetes (core/active.h).
 */
int store_worker_lock_held(struct store *st, int64_t key);
/* Release the worker lock key if held (PostgreSQL); nothing on sqlite. */
void store_worker_unlock(struct store *st, int64_t key);
/*
 * One round trip to the database: ERR_OK when it answers; ERR_UNAVAILABLE
 * (PostgreSQL: cannot be reached) or ERR_DB with errmsg.  For readiness.
 */
enum err store_ping(struct store *st, struct buf *errmsg) WARN_UNUSED;

#endif
