/*
 * db_sqlite.c - the sqlite engine of db.h: one file, opened in WAL mode with
 * synchronous=FULL, foreign keys on and incremental auto-vacuum; the schema
 * version is PRAGMA user_version and db_begin() is BEGIN IMMEDIATE.  The
 * file has one writer at a time (the busy timeout waits for it), so the
 * advisory locks of db.h are always held.  db_data_version() counts this
 * connection's commits (sqlite3_commit_hook): the only writer, see db.h.
 *
 * INSERT ... RETURNING id: sqlite runs RETURNING through an ephemeral table
 * per execution, some 25,000 instructions per insert (make bench: 8% of a
 * webhook of three alerts).  A statement whose SQL ends in RETURNING_ID is
 * prepared without it and answers its one row from sqlite3_last_insert_rowid()
 * when the INSERT changed one row (none: no row, as RETURNING would).  Our
 * INSERTs insert one row each; id is the rowid.
 */
#include "store/db_int.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <sqlite3.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define RETURNING_ID " RETURNING id"

struct sq_db {
	struct db base;
	sqlite3 *h;
	/* Prepared once: the intake's group commit runs them per batch. */
	sqlite3_stmt *begin, *commit, *rollback;
	/*
	 * db_data_version(): the write transactions this connection committed,
	 * counted by sqlite's commit hook (count_commit()); atomic, as
	 * db_data_version_unlocked() reads it without the caller's lock.
	 */
	uint64_t commits;
	const char *bind_err;  /* db_errmsg() after a step refused for a failed bind */
	/*
	 * db_file_lost(): the file's absolute path (sqlite3_db_filename(), ""
	 * for ":memory:") and its device and inode as they were at open.
	 */
	char *file;
	dev_t dev;
	ino_t ino;
};

struct sq_stmt {
	struct db_stmt base;
	sqlite3_stmt *s;
	int brc;  /* the first failed bind's code since the last reset */
	int returning_id;  /* RETURNING_ID stripped: step answers id (above) */
	int id_state;      /* 0 not run, 1 the id row is current, 2 done */
	int64_t id;
	char id_text[24];
};

static struct sq_db *sq(struct db *db)
{
	return (struct sq_db *)db;
}

static struct sq_stmt *sqs(struct db_stmt *s)
{
	return (struct sq_stmt *)s;
}

/*
 * sqlite3_commit_hook() callback (https://sqlite.org/c3ref/commit_hook.html):
 * called as a transaction that wrote is about to commit, on the thread
 * running it, so the count moves before the change is visible to anyone.
 * Returning 0 lets the commit go on; it touches nothing of the connection,
 * as the hook must not.
 */
static int count_commit(void *ctx)
{
	struct sq_db *d = ctx;

	__atomic_add_fetch(&d->commits, 1, __ATOMIC_SEQ_CST);
	return 0;
}

static enum err fail(struct sq_db *d, const char *what, struct buf *errmsg)
{
	buf_setf(errmsg, "%s: %s: %s", d->base.name, what, sqlite3_errmsg(d->h));
	return ERR_DB;
}

static void sq_close(struct db *db)
{
	struct sq_db *d = sq(db);

	sqlite3_finalize(d->begin);
	sqlite3_finalize(d->commit);
	sqlite3_finalize(d->rollback);
	free(d->file);
	if (d->h && sqlite3_close(d->h) != SQLITE_OK) {
		struct log_line *l = log_begin(LOG_ERROR, "database close failed");
		log_str(l, "path", db->name);
		log_str(l, "error", sqlite3_errmsg(d->h));
		log_end(l);
	}
	free(d);
}

static enum err sq_prepare(struct db *db, const char *sql, struct db_stmt **out,
			   struct buf *errmsg)
{
	struct sq_db *d = sq(db);
	sqlite3_stmt *h = NULL;
	struct sq_stmt *s;
	size_t len = strlen(sql), rlen = strlen(RETURNING_ID);
	int returning_id = len > rlen && !strcmp(sql + len - rlen, RETURNING_ID) &&
			   !strncmp(sql, "INSERT ", 7);

	*out = NULL;
	d->bind_err = NULL;
	if (returning_id)
		len -= rlen;
	if (sqlite3_prepare_v3(d->h, sql, (int)len, SQLITE_PREPARE_PERSISTENT, &h, NULL) !=
	    SQLITE_OK)
		return fail(d, "prepare", errmsg);
	s = xcalloc(1, sizeof(*s));
	s->base.db = db;
	s->s = h;
	s->returning_id = returning_id;
	*out = &s->base;
	return ERR_OK;
}

static void sq_finalize(struct db_stmt *s)
{
	sqlite3_finalize(sqs(s)->s);
	free(s);
}

static void keep_brc(struct sq_stmt *s, int rc)
{
	if (rc != SQLITE_OK && s->brc == SQLITE_OK)
		s->brc = rc;
}

static void sq_bind_text(struct db_stmt *s, int idx, const char *v)
{
	struct sq_stmt *q = sqs(s);

	keep_brc(q, v ? sqlite3_bind_text(q->s, idx, v, -1, SQLITE_STATIC)
		      : sqlite3_bind_null(q->s, idx));
}

static void sq_bind_int(struct db_stmt *s, int idx, int64_t v)
{
	struct sq_stmt *q = sqs(s);

	keep_brc(q, sqlite3_bind_int64(q->s, idx, v));
}

static void sq_bind_null(struct db_stmt *s, int idx)
{
	struct sq_stmt *q = sqs(s);

	keep_brc(q, sqlite3_bind_null(q->s, idx));
}

static enum db_step sq_step(struct db_stmt *s)
{
	struct sq_stmt *q = sqs(s);
	struct sq_db *d = sq(s->db);

	d->bind_err = NULL;
	if (q->brc != SQLITE_OK) {
		d->bind_err = sqlite3_errstr(q->brc);
		return DB_ERROR;
	}
	if (q->returning_id) {
		if (q->id_state) {
			q->id_state = 2;
			return DB_DONE;
		}
		if (sqlite3_step(q->s) != SQLITE_DONE)
			return DB_ERROR;
		q->id_state = 2;
		if (sqlite3_changes64(d->h) != 1)
			return DB_DONE;
		q->id = sqlite3_last_insert_rowid(d->h);
		q->id_state = 1;
		return DB_ROW;
	}
	switch (sqlite3_step(q->s)) {
	case SQLITE_ROW:
		return DB_ROW;
	case SQLITE_DONE:
		return DB_DONE;
	default:
		return DB_ERROR;
	}
}

/* 1 when column i is the id of a stripped RETURNING_ID; 0 for its other columns */
static int is_id(struct sq_stmt *q, int i)
{
	return q->returning_id && q->id_state == 1 && i == 0;
}

static int64_t sq_col_int(struct db_stmt *s, int i)
{
	struct sq_stmt *q = sqs(s);

	if (q->returning_id)
		return is_id(q, i) ? q->id : 0;
	return sqlite3_column_int64(q->s, i);
}

static const char *sq_col_text(struct db_stmt *s, int i)
{
	struct sq_stmt *q = sqs(s);

	if (q->returning_id) {
		if (!is_id(q, i))
			return NULL;
		snprintf(q->id_text, sizeof(q->id_text), "%lld", (long long)q->id);
		return q->id_text;
	}
	return (const char *)sqlite3_column_text(q->s, i);
}

static int sq_col_is_null(struct db_stmt *s, int i)
{
	struct sq_stmt *q = sqs(s);

	if (q->returning_id)
		return !is_id(q, i);
	return sqlite3_column_type(q->s, i) == SQLITE_NULL;
}

static void sq_reset(struct db_stmt *s)
{
	struct sq_stmt *q = sqs(s);

	sqlite3_reset(q->s);
	sqlite3_clear_bindings(q->s);
	q->brc = SQLITE_OK;
	q->id_state = 0;
}

static int64_t sq_changes(struct db *db)
{
	return sqlite3_changes64(sq(db)->h);
}

static const char *sq_errmsg(struct db *db)
{
	struct sq_db *d = sq(db);

	return d->bind_err ? d->bind_err : sqlite3_errmsg(d->h);
}

static enum err sq_exec(struct db *db, const char *sql, struct buf *errmsg)
{
	struct sq_db *d = sq(db);
	char *msg = NULL;

	d->bind_err = NULL;
	if (sqlite3_exec(d->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		buf_setf(errmsg, "%s: %s", db->name, msg ? msg : sqlite3_errmsg(d->h));
		sqlite3_free(msg);
		return ERR_DB;
	}
	return ERR_OK;
}

/* Step a cached statement of no rows (begin, commit, rollback) and reset it. */
static enum err run_cached(struct sq_db *d, sqlite3_stmt *s, const char *what,
			   struct buf *errmsg)
{
	enum err rc = ERR_OK;

	d->bind_err = NULL;
	if (sqlite3_step(s) != SQLITE_DONE)
		rc = fail(d, what, errmsg);
	sqlite3_reset(s);
	return rc;
}

static enum err sq_begin(struct db *db, struct buf *errmsg)
{
	return run_cached(sq(db), sq(db)->begin, "begin", errmsg);
}

static enum err sq_commit(struct db *db, struct buf *errmsg)
{
	return run_cached(sq(db), sq(db)->commit, "commit", errmsg);
}

static int sq_in_transaction(struct db *db)
{
	return !sqlite3_get_autocommit(sq(db)->h);
}

static void sq_rollback(struct db *db)
{
	if (sq_in_transaction(db))
		(void)run_cached(sq(db), sq(db)->rollback, "rollback", NULL);
}

/*
 * Our own commits are the only writes to the file: serve holds the lock
 * beside it (store/serve_lock.h) and the commands that change the map ask the
 * running service, so a count of them is the version.  +1: never 0.
 */
static int sq_data_version_unlocked(struct db *db, uint64_t *version)
{
	*version = __atomic_load_n(&sq(db)->commits, __ATOMIC_SEQ_CST) + 1;
	return 1;
}

static enum err sq_data_version(struct db *db, uint64_t *version, struct buf *errmsg)
{
	(void)errmsg;
	(void)sq_data_version_unlocked(db, version);
	return ERR_OK;
}

/* The single value of sql as text into out ("" for NULL). */
static enum err query_text(struct sq_db *d, const char *sql, struct buf *out, struct buf *errmsg)
{
	sqlite3_stmt *s = NULL;
	enum err rc = ERR_OK;

	if (sqlite3_prepare_v2(d->h, sql, -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_ROW) {
		rc = fail(d, sql, errmsg);
		goto out;
	}
	buf_reset(out);
	if (buf_adds(out, (const char *)sqlite3_column_text(s, 0)) != ERR_OK) {
		buf_setf(errmsg, "%s: %s: answer too long", d->base.name, sql);
		rc = ERR_DB;
	}
out:
	sqlite3_finalize(s);
	return rc;
}

static enum err sq_schema_version(struct db *db, int *version, struct buf *errmsg)
{
	struct buf v = BUF_INIT;
	enum err rc = query_text(sq(db), "PRAGMA user_version", &v, errmsg);

	*version = rc == ERR_OK ? (int)strtol(buf_str(&v), NULL, 10) : 0;
	buf_release(&v);
	return rc;
}

static enum err sq_set_schema_version(struct db *db, int version, struct buf *errmsg)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", version);
	return sq_exec(db, sql, errmsg);
}

/* Hand the freed pages back, then move them out of the WAL into the file. */
static enum err sq_reclaim(struct db *db, struct buf *errmsg)
{
	return sq_exec(db, "PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE)", errmsg);
}

static enum err sq_try_lock(struct db *db, int64_t key, int *held, struct buf *errmsg)
{
	(void)db;
	(void)key;
	(void)errmsg;
	*held = 1;
	return ERR_OK;
}

static int sq_lock_held(struct db *db, int64_t key)
{
	(void)db;
	(void)key;
	return 1;
}

static void sq_unlock(struct db *db, int64_t key)
{
	(void)db;
	(void)key;
}

static enum err sq_set_timeout(struct db *db, int64_t timeout_ms, struct buf *errmsg)
{
	struct sq_db *d = sq(db);

	if (sqlite3_busy_timeout(d->h, timeout_ms > INT32_MAX ? INT32_MAX : (int)timeout_ms))
		return fail(d, "busy timeout", errmsg);
	return ERR_OK;
}

/*
 * Our own stat(2) of the path against the device and inode read at open,
 * rather than sqlite's SQLITE_FCNTL_HAS_MOVED, which would need the
 * connection (and so the caller's lock) and asks the same of the file system.
 */
static int sq_file_lost(struct db *db, struct buf *why)
{
	struct sq_db *d = sq(db);
	struct stat st;

	if (!d->file || !*d->file)
		return 0;
	if (stat(d->file, &st) != 0) {
		buf_setf(why, "%s: the database file is gone: %s", d->file, strerror(errno));
		return 1;
	}
	if (st.st_dev != d->dev || st.st_ino != d->ino) {
		buf_setf(why, "%s: the path names another file than the one opened (replaced)",
			 d->file);
		return 1;
	}
	return 0;
}

/* The file's path, device and inode for sq_file_lost(). */
static enum err note_file(struct sq_db *d, struct buf *errmsg)
{
	const char *file = sqlite3_db_filename(d->h, "main");
	struct stat st;

	d->file = xstrdup(file ? file : "");
	if (!*d->file)
		return ERR_OK;
	if (stat(d->file, &st) != 0) {
		buf_setf(errmsg, "%s: stat: %s", d->file, strerror(errno));
		return ERR_DB;
	}
	d->dev = st.st_dev;
	d->ino = st.st_ino;
	return ERR_OK;
}

static const struct db_ops sq_ops = {
	.engine = DB_SQLITE,
	.close = sq_close,
	.data_version = sq_data_version,
	.data_version_unlocked = sq_data_version_unlocked,
	.prepare = sq_prepare,
	.finalize = sq_finalize,
	.bind_text = sq_bind_text,
	.bind_int = sq_bind_int,
	.bind_null = sq_bind_null,
	.step = sq_step,
	.col_int = sq_col_int,
	.col_text = sq_col_text,
	.col_is_null = sq_col_is_null,
	.reset = sq_reset,
	.changes = sq_changes,
	.errmsg = sq_errmsg,
	.exec = sq_exec,
	.begin = sq_begin,
	.commit = sq_commit,
	.rollback = sq_rollback,
	.in_transaction = sq_in_transaction,
	.schema_version = sq_schema_version,
	.set_schema_version = sq_set_schema_version,
	.reclaim = sq_reclaim,
	.try_lock = sq_try_lock,
	.lock_held = sq_lock_held,
	.unlock = sq_unlock,
	.set_timeout = sq_set_timeout,
	.file_lost = sq_file_lost,
};

/* WAL, synchronous=FULL, foreign keys (store.h says why). */
static enum err configure(struct sq_db *d, struct buf *errmsg)
{
	struct buf mode = BUF_INIT;
	enum err rc;

	sqlite3_extended_result_codes(d->h, 1);
	sqlite3_busy_timeout(d->h, DB_STATEMENT_TIMEOUT_MS);
	/*
	 * The first statement reads the file header: "file is not a database"
	 * shows here.  auto_vacuum takes effect on a new file only, before WAL
	 * mode writes its header; see incremental_vacuum() for older files.
	 */
	rc = sq_exec(&d->base, "PRAGMA auto_vacuum = INCREMENTAL", errmsg);
	if (rc)
		goto out;
	rc = query_text(d, "PRAGMA journal_mode = WAL", &mode, errmsg);
	if (rc)
		goto out;
	if (strcmp(buf_str(&mode), "wal") && strcmp(buf_str(&mode), "memory")) {
		buf_setf(errmsg, "%s: cannot use WAL mode (journal_mode is %s)", d->base.name,
			 buf_str(&mode));
		rc = ERR_DB;
		goto out;
	}
	rc = sq_exec(&d->base, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON", errmsg);
out:
	buf_release(&mode);
	return rc;
}

/*
 * Deleted rows give their pages back to the file system (db_reclaim() runs
 * PRAGMA incremental_vacuum), which needs auto_vacuum=INCREMENTAL.  A new
 * file has it from configure(); a file made before that is switched once,
 * by one VACUUM (https://sqlite.org/pragma.html#pragma_auto_vacuum), which
 * rewrites the file and may take a while on a big one.
 */
static enum err incremental_vacuum(struct sq_db *d, struct buf *errmsg)
{
	struct buf mode = BUF_INIT;
	enum err rc = query_text(d, "PRAGMA auto_vacuum", &mode, errmsg);

	if (rc || !strcmp(buf_str(&mode), "2"))
		goto out;
	rc = sq_exec(&d->base, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM", errmsg);
	if (rc == ERR_OK) {
		struct log_line *l = log_begin(LOG_INFO, "store switched to incremental vacuum");
		log_str(l, "path", d->base.name);
		log_end(l);
	}
out:
	buf_release(&mode);
	return rc;
}

static enum err prepare_cached(struct sq_db *d, struct buf *errmsg)
{
	if (sqlite3_prepare_v3(d->h, "BEGIN IMMEDIATE", -1, SQLITE_PREPARE_PERSISTENT, &d->begin,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(d->h, "COMMIT", -1, SQLITE_PREPARE_PERSISTENT, &d->commit,
			       NULL) != SQLITE_OK ||
	    sqlite3_prepare_v3(d->h, "ROLLBACK", -1, SQLITE_PREPARE_PERSISTENT, &d->rollback,
			       NULL) != SQLITE_OK)
		return fail(d, "prepare", errmsg);
	return ERR_OK;
}

enum err db_sqlite_open(const char *path, int read_only, struct db **out, struct buf *errmsg)
{
	int flags = read_only ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE;
	struct sq_db *d;
	enum err rc = ERR_OK;
	int src;

	*out = NULL;
	if (!sqlite3_threadsafe()) {
		buf_setf(errmsg, "%s: sqlite is built without thread support", path);
		return ERR_DB;
	}
	d = xcalloc(1, sizeof(*d));
	d->base.ops = &sq_ops;
	d->base.name = xstrdup(path);
	/* NOMUTEX: the caller serialises every use of the connection (db.h). */
	src = sqlite3_open_v2(path, &d->h, flags | SQLITE_OPEN_NOMUTEX, NULL);
	if (src != SQLITE_OK) {
		buf_setf(errmsg, "%s: open: %s", path,
			 d->h ? sqlite3_errmsg(d->h) : sqlite3_errstr(src));
		rc = ERR_DB;
		goto out;
	}
	sqlite3_commit_hook(d->h, count_commit, d);
	if (read_only) {
		/* Nothing written: the first read says "file is not a database". */
		sqlite3_extended_result_codes(d->h, 1);
		sqlite3_busy_timeout(d->h, DB_STATEMENT_TIMEOUT_MS);
		rc = sq_exec(&d->base, "SELECT count(*) FROM sqlite_schema", errmsg);
	} else {
		rc = configure(d, errmsg);
		if (rc == ERR_OK)
			rc = incremental_vacuum(d, errmsg);
	}
	if (rc == ERR_OK)
		rc = prepare_cached(d, errmsg);
	if (rc == ERR_OK)
		rc = note_file(d, errmsg);
out:
	if (rc) {
		char *name = d->base.name;

		sq_close(&d->base);
		free(name);
		return rc;
	}
	*out = &d->base;
	return ERR_OK;
}
