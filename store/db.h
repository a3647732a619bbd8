/*
 * db.h - one SQL interface over the store's two engines: sqlite (an embedded
 * file, the default) and PostgreSQL (libpq, for more than one replica).
 *
 * The store (store*.c) writes its SQL once, in the dialect both engines
 * accept, and runs it through this interface; what differs between the
 * engines lives in db_sqlite.c and db_pg.c:
 *
 *   placeholders   SQL uses ?1, ?2, ... (numbered, never a bare ?); the
 *                  PostgreSQL engine rewrites them to $1, $2, ... outside
 *                  string literals.
 *   write locks    db_begin() is BEGIN IMMEDIATE on sqlite; on PostgreSQL it
 *                  is BEGIN and a transaction-level advisory lock
 *                  (pg_advisory_xact_lock(DB_WRITE_LOCK)), so writers of
 *                  several replicas serialise as sqlite's writers do.
 *   booleans       a column computed by a comparison is 0 or 1 from
 *                  db_col_int() on both (PostgreSQL answers 't' / 'f').
 *   new ids        INSERT ... RETURNING id on both (sqlite >= 3.35).
 *   NULL params    a NULL bound where the SQL gives the parameter no type
 *                  (?3 IS NULL) must be written CAST(?3 AS TEXT) IS NULL.
 *   schema         each engine has its own migration list (store.c).
 *   types          db_bind_int() sends a bigint, db_bind_text() text; PostgreSQL
 *                  compares text with a number only through a CAST, and its
 *                  INTEGER is 32-bit (use BIGINT).
 *   failures       a statement that fails inside a transaction aborts it on
 *                  PostgreSQL: later statements fail and db_commit() returns
 *                  ERR_DB, keeping nothing; sqlite keeps the other statements.
 *
 * Threads: a struct db and its statements are used by one thread at a time
 * (the store's db_mu).  Nothing here is a cancellation point for callers.
 *
 * Errors: functions returning enum err give ERR_OK, ERR_DB (the engine's
 * message in errmsg, prefixed by db_name()), ERR_UNAVAILABLE (PostgreSQL: the
 * connection is down or the server refused it; a later call reconnects), or
 * ERR_INVALID (a target db_open() cannot use).  errmsg may be NULL.
 */
#ifndef AB_DB_H
#define AB_DB_H

#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

enum db_engine {
	DB_SQLITE,
	DB_POSTGRES,
};

/* db_step() results. */
enum db_step {
	DB_ROW,    /* a row is current: read it with db_col_*() */
	DB_DONE,   /* no (more) rows; the statement ran */
	DB_ERROR,  /* see db_errmsg(); the statement is spent until db_reset() */
};

/* The advisory lock key db_begin() takes on PostgreSQL ("ab" "wr" in ASCII). */
#define DB_WRITE_LOCK 0x61627772

struct db;
struct db_stmt;

/*
 * 1 when target names a PostgreSQL database: a libpq URI (postgres:// or
 * postgresql://); else it is an sqlite file path.
 */
int db_target_is_postgres(const char *target);

/*
 * Open target (a file path, created if missing, or a PostgreSQL URI such as
 * postgres://user@host:5432/alertbridge?sslmode=verify-full).  password_file
 * (may be NULL; PostgreSQL only) holds the password on its first line; without
 * it libpq's own PGPASSWORD / PGPASSFILE apply.  *out is the caller's: free
 * it with db_close().  ERR_INVALID for a malformed URI; ERR_UNAVAILABLE when
 * the server cannot be reached or refuses the login (errmsg says why, never
 * the password); ERR_IO when password_file cannot be read, ERR_INVALID when
 * it is empty (errmsg names the file).  PostgreSQL: application_name is
 * "alertbridge", connect_timeout 10 s and TCP keepalives 10 s idle, 3 probes
 * 5 s apart (libpq's keepalives_* and the server's tcp_keepalives_*, unless
 * the URI or the server's configuration sets them) so that a dead peer ends
 * the session in 25 s.
 */
enum err db_open(const char *target, const char *password_file, struct db **out,
		 struct buf *errmsg);

/*
 * As db_open(), for commands that only read: an sqlite file is opened
 * read-only (never created: ERR_DB when missing; nothing written, no VACUUM,
 * its journal mode left as it is); a PostgreSQL session has
 * default_transaction_read_only on, so a write fails.  The caller runs no
 * migration (store.h store_open_read_only()).
 */
enum err db_open_read_only(const char *target, const char *password_file, struct db **out,
			   struct buf *errmsg);

/*
 * The bound db_open() gives every statement until db_set_timeout() says
 * otherwise, in ms (config: database_statement_timeout).
 */
#define DB_STATEMENT_TIMEOUT_MS 5000

/*
 * Bound every later statement of db to timeout_ms (> 0), so that a lock held
 * elsewhere or a stalled server fails the statement instead of holding its
 * caller for as long as it lasts (issue 19):
 *   sqlite      the busy timeout (https://sqlite.org/c3ref/busy_timeout.html):
 *               a write lock another connection holds longer than this gives
 *               SQLITE_BUSY, ERR_DB;
 *   PostgreSQL  the session's statement_timeout and lock_timeout
 *               (https://www.postgresql.org/docs/current/runtime-config-client.html),
 *               set again on every reconnection: SQLSTATE 57014 or 55P03,
 *               ERR_DB.  A server that stops answering altogether is ended
 *               by the client's TCP keepalives and tcp_user_timeout
 *               (db_open()).
 * Errors: ERR_INVALID (timeout_ms <= 0), ERR_DB / ERR_UNAVAILABLE (the SET
 * failed; the bound stays what it was).
 */
enum err db_set_timeout(struct db *db, int64_t timeout_ms, struct buf *errmsg) WARN_UNUSED;

/*
 * How long the engine call running on db now has been waiting, in ms (0 when
 * none is running).  Counted: db_step(), db_exec(), db_begin(), db_commit(),
 * db_rollback(), db_reclaim() and the lock calls.  From any thread, without
 * the caller's serialisation (an atomic read, no lock): the store's readiness
 * and its intake ask it while another thread waits in a statement.
 */
int64_t db_busy_ms(struct db *db);

/*
 * 1 when the database file db opened is no longer at its path: unlinked, or
 * the path now names another file (its device and inode differ from those
 * read at open); why (may be NULL) says which.  What is written afterwards
 * goes to a file nobody will open again (issue 19).  One stat(2) of the path,
 * from any thread without the caller's serialisation.  Always 0 on
 * PostgreSQL and for an sqlite ":memory:" database.
 */
int db_file_lost(struct db *db, struct buf *why);

/* Close db (NULL is fine); its statements must be finalized first. */
void db_close(struct db *db);

enum db_engine db_engine(const struct db *db);

/*
 * db's target for messages and logs: the file path, or the URI with any
 * password replaced by "xxxxx".  Owned by db.
 */
const char *db_name(const struct db *db);

/*
 * Prepare sql (one statement, ?N placeholders) for repeated use.  *out is
 * the caller's: db_finalize() it.  On PostgreSQL nothing is sent until the
 * first db_step(), so a syntax error may show only there.
 */
enum err db_prepare(struct db *db, const char *sql, struct db_stmt **out, struct buf *errmsg);

/* Free s (NULL is fine). */
void db_finalize(struct db_stmt *s);

/*
 * Bind parameter idx (1-based, the N of ?N).  Text is not copied: v must
 * stay valid until db_reset(s); NULL binds SQL NULL.  The first failure (an
 * index out of range) is kept and reported by the next db_step() as DB_ERROR.
 */
void db_bind_text(struct db_stmt *s, int idx, const char *v);
void db_bind_int(struct db_stmt *s, int idx, int64_t v);
void db_bind_null(struct db_stmt *s, int idx);

/*
 * Run s if it has not run since its last reset, and make its next row
 * current.  On PostgreSQL the whole result is fetched at the first step, and
 * a lost connection is DB_ERROR here (db_exec() and db_begin() say
 * ERR_UNAVAILABLE); the next call outside a transaction reconnects.
 */
enum db_step db_step(struct db_stmt *s);

/* Column i (0-based) of the current row.  NULL reads as 0 / NULL. */
int64_t db_col_int(struct db_stmt *s, int i);
/* Owned by s, valid until its next db_step() or db_reset(). */
const char *db_col_text(struct db_stmt *s, int i);
int db_col_is_null(struct db_stmt *s, int i);

/* Make s ready to run again and clear its bindings. */
void db_reset(struct db_stmt *s);

/* Rows the last INSERT, UPDATE or DELETE run on db changed. */
int64_t db_changes(struct db *db);

/* The message of db's last failure (owned by db; "" when none). */
const char *db_errmsg(struct db *db);

/* Run sql: one or more statements separated by ';', no rows wanted. */
enum err db_exec(struct db *db, const char *sql, struct buf *errmsg);

/* BEGIN a transaction that holds the write lock (see above); COMMIT; ROLLBACK. */
enum err db_begin(struct db *db, struct buf *errmsg);
enum err db_commit(struct db *db, struct buf *errmsg);
/* Roll back the open transaction, if any; never fails visibly. */
void db_rollback(struct db *db);
/* 1 inside a transaction. */
int db_in_transaction(struct db *db);

/*
 * The schema version: sqlite's PRAGMA user_version; on PostgreSQL the one row
 * of table schema_version (created at 0 when missing).  Read it and set it
 * inside db_begin() .. db_commit(), so that two processes migrating at once
 * run each step once.  The engines have separate migration lists (store.c).
 */
enum err db_schema_version(struct db *db, int *version, struct buf *errmsg);
enum err db_set_schema_version(struct db *db, int version, struct buf *errmsg);

/*
 * A number that changes whenever what the database holds may have changed:
 * on sqlite, a transaction of this connection that wrote committed (counted
 * by sqlite3_commit_hook(), https://sqlite.org/c3ref/commit_hook.html; a
 * rolled-back one leaves it).  Commits of other connections are not seen:
 * the file has one writer, the process holding its lock
 * (store/serve_lock.h: `serve`, or a command that took the lock itself), and
 * the version is only asked there.  The same number twice: no row changed
 * in between, so a read gives the same answer.  On PostgreSQL other
 * replicas write unseen: *version is 0, "unknown", equal to nothing.  Never
 * 0 on sqlite.  Caller serialises it with the connection's other uses.
 * Errors: none today (ERR_OK; the signature leaves room for an engine that
 * must ask).
 */
enum err db_data_version(struct db *db, uint64_t *version, struct buf *errmsg);

/*
 * db_data_version() from any thread, without the caller's serialisation:
 * 1 with *version set (the same number db_data_version() gives at that
 * moment) when the engine can tell without its connection (sqlite: an
 * atomic read of the commit count, no statement, no lock; PostgreSQL: 0);
 * else 0, and the caller asks db_data_version() under its lock.  No errors.
 */
int db_data_version_unlocked(struct db *db, uint64_t *version);

/*
 * After deleting many rows: give the space back (sqlite: incremental_vacuum
 * and a WAL checkpoint; PostgreSQL: nothing, autovacuum does it).
 */
enum err db_reclaim(struct db *db, struct buf *errmsg);

/*
 * Session-level exclusive lock key (PostgreSQL: pg_try_advisory_lock; held
 * until db_unlock() or the connection ends).  *held is 1 when this
 * connection holds it now; asked again while it holds it, it is still held
 * once (one db_unlock() frees it).  On sqlite, whose file has one writer process,
 * always held.  A lost connection loses the lock: callers check again with
 * db_lock_held() before each call to GitHub, Slack or Kubernetes.
 */
enum err db_try_lock(struct db *db, int64_t key, int *held, struct buf *errmsg);
/* 1 when the lock is still held: the connection is alive (PostgreSQL: checked with a query). */
int db_lock_held(struct db *db, int64_t key);
void db_unlock(struct db *db, int64_t key);

#endif
