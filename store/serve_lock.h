/*
 * serve_lock.h - one serving process per sqlite file.  `serve` holds
 * "<database>.lock" beside the file for its lifetime, as Prometheus holds
 * "lock" in its data directory (tsdb/fileutil's Flock); a second `serve`, or
 * a command that would write the file, is refused and told the holder's PID,
 * and the commands that change the map find the running service's admin
 * endpoint in the same file (core/map_admin.h).  A PostgreSQL target has no
 * lock: many replicas share it by design (core/active.h).
 *
 * The file also tells a clean stop from an unclean one: it names the
 * holder's PID while held, and a clean release empties it.  A file that
 * still names a PID when the lock is taken was left by a holder that did not
 * release it (SIGKILL, a crash, the machine stopped): whatever it had in
 * flight (a GitHub write whose answer it never got) may still land, which
 * `serve` waits out before it writes to GitHub (issue 19).  The holder
 * notes in the file which of its writes may still land (serve_lock_note():
 * the GitHub client's pending writes, bridge/gh.h), so the next one holds
 * back only the writes to those issues, and only until they settle: nothing
 * after a holder killed while nothing was in flight.  Without a note (a
 * holder that died before its first, or of a version that made none) the
 * next one holds back every write (bridge_options.settle_at_start).
 *
 * The file's text: "PID\nURL\n" (URL "" until the holder listens), then,
 * once a note was made, "writes:\n" and the note's text, padded with
 * spaces to NOTE_FILE_BYTES so that it is rewritten in place, never
 * emptied or cut while held.
 */
#ifndef AB_SERVE_LOCK_H
#define AB_SERVE_LOCK_H

#include "core/buf.h"
#include "core/err.h"

struct serve_lock;

#define NOTE_FILE_BYTES 8192  /* the lock file's size once a note was made */

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

/*
 * The PID the file named when l was taken: that holder ended without a
 * clean release (serve_lock_free()), so a write it sent may still be in
 * flight.  0 when it released the lock cleanly, the file was new, or l is
 * NULL (PostgreSQL, ":memory:").  A file of a version that did not empty it
 * on release counts as unclean once.
 */
long serve_lock_unclean(const struct serve_lock *l);

/*
 * The note the unclean holder (serve_lock_unclean()) left: its text, ""
 * when it noted nothing pending; NULL when l was taken clean, or unclean
 * without a note (then any write of it may land: hold them all).  Owned by
 * l.  Also kept in the file (passed on) until this holder notes its own.
 */
const char *serve_lock_unclean_note(const struct serve_lock *l);

/*
 * Note text (lines, no NUL; "" : nothing pending) in the file for the next
 * holder, should this one die (serve_lock_unclean_note()).  One pwrite of
 * NOTE_FILE_BYTES, no fsync (a crash of the machine leaves the page cache's
 * note: a reboot outlasts it).  A text too long for the file is left out:
 * the file then has no note, which the next holder takes as "any may land".
 * Thread-safe with serve_lock_set_address(); l NULL: nothing; a failed
 * write is ignored (the next note rewrites it).
 */
void serve_lock_note(struct serve_lock *l, const char *text);

/*
 * Say that what the unclean holder (serve_lock_unclean()) may have left in
 * flight can no longer land: the release then marks the stop clean.
 * Without it, a lock taken unclean is released still naming a PID (ours),
 * so the next holder waits as this one had to: a command that held the file
 * for a moment (map, store copy) or a `serve` stopped before its wait ended
 * passes the doubt on instead of hiding it.  l may be NULL.
 */
void serve_lock_settled(struct serve_lock *l);

/*
 * Release the lock and free l; NULL does nothing.  The release is clean
 * (the file emptied of its PID) unless the last note names pending writes
 * (they may still land after a clean stop too: the next holder restores
 * them), or l was taken unclean without a note and not serve_lock_settled().
 * Call it once everything this holder sent has been answered or given up
 * (a `serve` after its workers stopped).
 */
void serve_lock_free(struct serve_lock *l);

/*
 * Whether another open file description holds target's lock now, without
 * taking it (fcntl(2) F_OFD_GETLK): 1 with *holder filled from the file, 0
 * when none does (no lock file, a stale one, PostgreSQL, ":memory:"), -1
 * with errmsg when the file exists but cannot be read or asked.
 */
int serve_lock_held(const char *target, struct serve_lock_holder *holder, struct buf *errmsg);

#endif
