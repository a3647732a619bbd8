/*
 * serve_lock.h - one serving process per sqlite file.  `serve` holds
 * "<database>.lock" beside the file for its lifetime, as Prometheus holds
 * "lock" in its data directory (tsdb/fileutil's Flock); a second `serve`, or
 * a command that would write the file, is refused and told the holder's PID,
 * and the commands that change the map find the running service's admin
 * endpoint in the same file (core/map_admin.h).  A PostgreSQL target has no
 * lock: many replicas share it by design (core/active.h).
 */
#ifndef AB_SERVE_LOCK_H
#define AB_SERVE_LOCK_H

#include "buf.h"
#include "err.h"

struct serve_lock;

/* What a lock file says about the process that holds it. */
struct serve_lock_holder {
	long pid;      /* 0 while the holder has not written it yet */
	char url[256]; /* its HTTP server, "http://127.0.0.1:9095"; "" until it listens */
};

/*
 * Take the lock of target's sqlite file: open "<target>.lock" (created mode
 * 0644 if missing; it stays after release, as Prometheus' does), take an
 * exclusive open-file-description lock on the whole file (fcntl(2)
 * F_OFD_SETLK: the kernel drops it when the holder exits, however it ends,
 * so a file left by a dead process blocks nobody; two opens in one process
 * conflict as two processes do), and write our PID in it.  *out: the lock,
 * to keep for as long as the file is written (serve_lock_free()); NULL for
 * a PostgreSQL target or ":memory:", which have nothing to lock.
 * Errors: ERR_CONFLICT (another holder: *holder filled when holder is not
 * NULL, errmsg "database X is in use by process N (lock file X.lock)"),
 * ERR_IO (the lock file cannot be opened, locked or written; errmsg).
 */
enum err serve_lock_take(const char *target, struct serve_lock **out,
			 struct serve_lock_holder *holder, struct buf *errmsg) WARN_UNUSED;

/*
 * Record where the holder's HTTP server answers, for serve_lock_holder():
 * listen_address as configured ("HOST:PORT", ":PORT", "[V6]:PORT"; a
 * wildcard host is reached on the loopback, healthcheck_url()), port the
 * port it listens on (srv_port(): ":0" asks for any), tls whether it is
 * https.  l NULL: ERR_OK, nothing to record.  Errors: ERR_INVALID (the
 * address), ERR_IO (the write), with errmsg.
 */
enum err serve_lock_set_address(struct serve_lock *l, const char *listen_address, int port,
				int tls, struct buf *errmsg) WARN_UNUSED;

/* Release the lock and free l; NULL does nothing. */
void serve_lock_free(struct serve_lock *l);

/*
 * Whether another open file description holds target's lock now, without
 * taking it (fcntl(2) F_OFD_GETLK): 1 with *holder filled from the file, 0
 * when none does (no lock file, a stale one, PostgreSQL, ":memory:"), -1
 * with errmsg when the file exists but cannot be read or asked.
 */
int serve_lock_held(const char *target, struct serve_lock_holder *holder, struct buf *errmsg);

#endif
