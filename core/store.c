/*
 * store.c - the sqlite store: durable event inbox, (receiver, key) -> issue
 * map, schema migrations by PRAGMA user_version, and group commit for intake.
 *
 * One connection serves every call under db_mu.  Intake callers queue their
 * batch under q_mu; one of them, the leader, commits every queued batch in one
 * transaction while the others wait on commit_cond (see store_enqueue()).
 */
#include "store.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "log.h"
#include "xalloc.h"
#include "clock.h"
#include "banned.h"

#define BUSY_TIMEOUT_MS 5000
#define EACH_PAGE_ROWS 64

/*
 * Schema migrations: step i takes user_version i to i + 1 and runs in its own
 * transaction.  Append new steps (e.g. the janitor's tables); never edit one
 * that has shipped.  The file's vacuum mode is not a step: VACUUM cannot run
 * inside a transaction, so incremental_vacuum() follows the steps.
 */
static const char *const migrations[] = {
	/* 1: the event inbox and the issue map. */
	"CREATE TABLE events ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL,"
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  status TEXT NOT NULL,"
	"  starts_at_ms INTEGER NOT NULL,"
	"  ends_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  payload TEXT NOT NULL,"
	"  received_at_ms INTEGER NOT NULL,"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  next_attempt_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  last_error TEXT,"
	"  progress TEXT,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'done', 'dead')),"
	"  done_at_ms INTEGER"
	");"
	/* store_next_event(): pending events of a kind in id order, small. */
	"CREATE INDEX events_pending ON events (kind, id, next_attempt_at_ms)"
	"  WHERE state = 'pending';"
	/* The per-(receiver, key) hold-back of store_next_event(). */
	"CREATE INDEX events_pending_key ON events (kind, receiver, key, id)"
	"  WHERE state = 'pending';"
	/*
	 * store_dead_count() and store_prune_done().  Partial, so that an
	 * insert (always 'pending') on the intake's hot path touches neither.
	 */
	"CREATE INDEX events_dead ON events (id) WHERE state = 'dead';"
	"CREATE INDEX events_done ON events (done_at_ms) WHERE state = 'done';"
	"CREATE TABLE issues ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  number INTEGER NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL,"
	"  state_reason TEXT,"
	"  episode_starts_ms INTEGER NOT NULL DEFAULT 0,"
	"  resolved_ends_ms INTEGER NOT NULL DEFAULT 0,"
	"  closed_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  previous_number INTEGER NOT NULL DEFAULT 0,"
	"  created_at_ms INTEGER NOT NULL,"
	"  updated_at_ms INTEGER NOT NULL,"
	"  dead_reason TEXT,"
	"  PRIMARY KEY (receiver, key)"
	") WITHOUT ROWID;",
	/* 2: the janitor's Slack outbox. */
	"CREATE TABLE notices ("
	"  id INTEGER PRIMARY KEY,"
	"  namespace TEXT NOT NULL,"
	"  pod TEXT NOT NULL,"
	"  uid TEXT NOT NULL,"
	"  kind TEXT NOT NULL CHECK (kind IN ('notice', 'reminder', 'cancelled', 'deleted')),"
	"  expires_ms INTEGER NOT NULL DEFAULT 0,"
	"  notify TEXT,"
	"  owner TEXT,"
	"  channel TEXT,"
	"  thread_ts TEXT,"
	"  text TEXT NOT NULL,"
	"  state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'sent', 'dead')),"
	"  attempts INTEGER NOT NULL DEFAULT 0,"
	"  next_attempt_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  created_at_ms INTEGER NOT NULL,"
	"  sent_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  slack_channel_id TEXT,"
	"  slack_ts TEXT,"
	"  last_error TEXT"
	");"
	"CREATE INDEX notices_pending ON notices (next_attempt_at_ms, id) WHERE state = 'pending';"
	"CREATE INDEX notices_pod ON notices (uid, kind, id);",
	/* 3: storm summaries and the alerts folded into them (bridge/storm.h). */
	"CREATE TABLE storm_summaries ("
	"  id INTEGER PRIMARY KEY,"
	"  receiver TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  alertname TEXT NOT NULL,"
	"  marker_key TEXT NOT NULL,"
	"  number INTEGER NOT NULL DEFAULT 0,"
	"  state TEXT NOT NULL CHECK (state IN ('creating', 'open', 'closed')),"
	"  created_at_ms INTEGER NOT NULL,"
	"  synced_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  next_sync_ms INTEGER NOT NULL DEFAULT 0,"
	"  dirty INTEGER NOT NULL DEFAULT 0"
	");"
	"CREATE INDEX storm_summaries_live ON storm_summaries (receiver, repo, alertname)"
	"  WHERE state != 'closed';"
	"CREATE TABLE storm_members ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  summary_id INTEGER NOT NULL,"
	"  firing INTEGER NOT NULL,"
	"  starts_at_ms INTEGER NOT NULL,"
	"  ends_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  line TEXT NOT NULL DEFAULT '',"
	"  PRIMARY KEY (receiver, key)"
	") WITHOUT ROWID;"
	"CREATE INDEX storm_members_summary ON storm_members (summary_id, firing);",
	/*
	 * 4: repositories whose issues the bridge has scanned for markers to
	 * rebuild the map (a lost database), once per (receiver, repo).
	 */
	"CREATE TABLE repo_scans ("
	"  receiver TEXT NOT NULL,"
	"  repo TEXT NOT NULL,"
	"  done_at_ms INTEGER NOT NULL,"
	"  PRIMARY KEY (receiver, repo)"
	") WITHOUT ROWID;",
};

#define N_MIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

#define EVENT_COLS                                                                  \
	"e.id, e.kind, e.receiver, e.key, e.status, e.starts_at_ms, e.ends_at_ms, " \
	"e.payload, e.received_at_ms, e.attempts, e.last_error, e.progress"
#define ISSUE_COLS                                                                   \
	"receiver, key, repo, number, state, state_reason, episode_starts_ms, "      \
	"resolved_ends_ms, closed_at_ms, previous_number, created_at_ms, updated_at_ms, " \
	"dead_reason"
#define NOTICE_COLS                                                                 \
	"id, namespace, pod, uid, kind, expires_ms, notify, owner, channel, thread_ts, text, " \
	"state, attempts, next_attempt_at_ms, created_at_ms, sent_at_ms, slack_channel_id, " \
	"slack_ts, last_error"
/* A pending event that is the oldest pending one of its (kind, receiver, key). */
#define HEAD_OF_KEY                                                                 \
	"NOT EXISTS (SELECT 1 FROM events AS o WHERE o.state = 'pending' AND "      \
	"o.kind = e.kind AND o.receiver = e.receiver AND o.key = e.key AND o.id < e.id)"

enum stmt_id {
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
	S_EV_INSERT,
	S_EV_NEXT,
	S_EV_DUE_KIND,
	S_EV_DUE_ANY,
	S_EV_PENDING,
	S_EV_DEAD_COUNT,
	S_EV_STATE,
	S_EV_DONE,
	S_EV_RETRY,
	S_EV_DEAD,
	S_EV_PROGRESS,
	S_EV_PRUNE,
	S_IS_GET,
	S_IS_PUT,
	S_IS_FORGET,
	S_IS_SET_DEAD,
	S_IS_PAGE_ALL,
	S_IS_PAGE_RCV,
	S_NO_INSERT,
	S_NO_NEXT,
	S_NO_LATEST,
	S_NO_SENT,
	S_NO_RETRY,
	S_NO_DEAD,
	S_NO_CANCEL,
	S_NO_PENDING,
	S_SCAN_GET,
	S_SCAN_PUT,
	S_EV_DEAD_UNMAPPED,
	S_COUNT
};

static const char *const stmt_sql[S_COUNT] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_EV_INSERT] = "INSERT INTO events (kind, receiver, key, status, starts_at_ms, "
			"ends_at_ms, payload, received_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
	[S_EV_NEXT] = "SELECT " EVENT_COLS " FROM events AS e WHERE e.kind = ?1 AND "
		      "e.state = 'pending' AND e.next_attempt_at_ms <= ?2 AND " HEAD_OF_KEY
		      " ORDER BY e.id LIMIT 1",
	[S_EV_DUE_KIND] = "SELECT min(e.next_attempt_at_ms) FROM events AS e WHERE e.kind = ?1 "
			  "AND e.state = 'pending' AND " HEAD_OF_KEY,
	[S_EV_DUE_ANY] = "SELECT min(e.next_attempt_at_ms) FROM events AS e WHERE "
			 "e.state = 'pending' AND " HEAD_OF_KEY,
	[S_EV_PENDING] = "SELECT count(*) FROM events WHERE kind = ?1 AND state = 'pending'",
	[S_EV_DEAD_COUNT] = "SELECT count(*) FROM events WHERE state = 'dead'",
	[S_EV_STATE] = "SELECT state, receiver, key FROM events WHERE id = ?1",
	[S_EV_DONE] = "UPDATE events SET state = 'done', done_at_ms = ?2 "
		      "WHERE id = ?1 AND state = 'pending'",
	[S_EV_RETRY] = "UPDATE events SET attempts = attempts + 1, next_attempt_at_ms = ?2, "
		       "last_error = ?3 WHERE id = ?1 AND state = 'pending'",
	[S_EV_DEAD] = "UPDATE events SET state = 'dead', done_at_ms = ?2, last_error = ?3 "
		      "WHERE id = ?1 AND state = 'pending'",
	[S_EV_PROGRESS] = "UPDATE events SET progress = ?2 WHERE id = ?1 AND state = 'pending'",
	[S_EV_PRUNE] = "DELETE FROM events WHERE state = 'done' AND done_at_ms < ?1",
	[S_IS_GET] = "SELECT " ISSUE_COLS " FROM issues WHERE receiver = ?1 AND key = ?2",
	[S_IS_PUT] = "INSERT INTO issues (" ISSUE_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
		     "?8, ?9, ?10, ?11, ?12, ?13) ON CONFLICT (receiver, key) DO UPDATE SET "
		     "repo = excluded.repo, number = excluded.number, state = excluded.state, "
		     "state_reason = excluded.state_reason, "
		     "episode_starts_ms = excluded.episode_starts_ms, "
		     "resolved_ends_ms = excluded.resolved_ends_ms, "
		     "closed_at_ms = excluded.closed_at_ms, "
		     "previous_number = excluded.previous_number, "
		     "created_at_ms = excluded.created_at_ms, "
		     "updated_at_ms = excluded.updated_at_ms, dead_reason = excluded.dead_reason",
	[S_IS_FORGET] = "DELETE FROM issues WHERE receiver = ?1 AND key = ?2",
	[S_IS_SET_DEAD] = "UPDATE issues SET dead_reason = ?3 WHERE receiver = ?1 AND key = ?2",
	[S_IS_PAGE_ALL] = "SELECT " ISSUE_COLS " FROM issues WHERE (receiver, key) > (?1, ?2) "
			  "ORDER BY receiver, key LIMIT ?3",
	[S_IS_PAGE_RCV] = "SELECT " ISSUE_COLS " FROM issues WHERE receiver = ?1 AND key > ?2 "
			  "ORDER BY key LIMIT ?3",
	[S_NO_INSERT] = "INSERT INTO notices (namespace, pod, uid, kind, expires_ms, notify, owner, "
			"channel, thread_ts, text, created_at_ms) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
			"?8, ?9, ?10, ?11)",
	[S_NO_NEXT] = "SELECT " NOTICE_COLS " FROM notices WHERE state = 'pending' AND "
		      "next_attempt_at_ms <= ?1 ORDER BY id LIMIT 1",
	[S_NO_LATEST] = "SELECT " NOTICE_COLS " FROM notices WHERE uid = ?1 AND kind = ?2 "
			"ORDER BY id DESC LIMIT 1",
	[S_NO_SENT] = "UPDATE notices SET state = 'sent', sent_at_ms = ?2, channel = ?3, "
		      "slack_channel_id = ?4, slack_ts = ?5 WHERE id = ?1 AND state = 'pending'",
	[S_NO_RETRY] = "UPDATE notices SET attempts = attempts + 1, next_attempt_at_ms = ?2, "
		       "channel = ?3, last_error = ?4 WHERE id = ?1 AND state = 'pending'",
	[S_NO_DEAD] = "UPDATE notices SET state = 'dead', attempts = attempts + 1, last_error = ?2 "
		      "WHERE id = ?1 AND state = 'pending'",
	[S_NO_CANCEL] = "UPDATE notices SET state = 'dead', last_error = ?2 "
			"WHERE uid = ?1 AND state = 'pending'",
	[S_NO_PENDING] = "SELECT count(*) FROM notices WHERE state = 'pending'",
	[S_EV_DEAD_UNMAPPED] = "SELECT " EVENT_COLS " FROM events AS e WHERE e.state = 'dead' AND "
			       "e.kind = ?1 AND NOT EXISTS (SELECT 1 FROM issues AS i WHERE "
			       "i.receiver = e.receiver AND i.key = e.key) ORDER BY e.id LIMIT ?2",
	[S_SCAN_GET] = "SELECT done_at_ms FROM repo_scans WHERE receiver = ?1 AND repo = ?2",
	[S_SCAN_PUT] = "INSERT INTO repo_scans (receiver, repo, done_at_ms) VALUES (?1, ?2, ?3) "
		       "ON CONFLICT (receiver, repo) DO UPDATE SET done_at_ms = excluded.done_at_ms",
};

/* One store_enqueue() call waiting in the group-commit queue (on its stack). */
struct batch {
	struct store_event *evs;
	size_t n;
	struct buf *errmsg;
	enum err rc;
	int done;  /* set by the leader under q_mu; then rc and errmsg are final */
	struct batch *next;
};

struct store {
	char *path;
	sqlite3 *db;                   /* used only under db_mu */
	sqlite3_stmt *stmt[S_COUNT];   /* used only under db_mu */
	pthread_mutex_t db_mu;

	pthread_mutex_t q_mu;          /* guards everything below */
	pthread_cond_t commit_cond;    /* a leader finished: batches done, leadership free */
	pthread_cond_t event_cond;     /* enq_seq, wake_gen or closing changed (monotonic) */
	pthread_cond_t idle_cond;      /* waiters dropped to 0 while closing */
	struct batch *head;            /* batches waiting for the next leader */
	struct batch **tail;
	int committing;                /* a leader is running its transaction */
	uint64_t enq_seq;              /* successful enqueue commits */
	uint64_t wake_gen;             /* store_wake() calls */
	int closing;
	int waiters;                   /* threads inside store_wait_kind() */
	struct store_stats stats;
};

static int empty(const char *s)
{
	return !s || !*s;
}

/* Log an ERR_DB detail for the functions that have no errmsg to return it in. */
static void log_db(const char *op, const struct buf *msg)
{
	struct log_line *l = log_begin(LOG_ERROR, "store failed");

	log_err(l, ERR_DB);
	log_str(l, "op", op);
	log_str(l, "error", buf_str(msg));
	log_end(l);
}

static void bind_text(sqlite3_stmt *s, int idx, const char *v, int *brc)
{
	int rc = v ? sqlite3_bind_text(s, idx, v, -1, SQLITE_STATIC) : sqlite3_bind_null(s, idx);

	if (rc != SQLITE_OK && *brc == SQLITE_OK)
		*brc = rc;
}

static void bind_int(sqlite3_stmt *s, int idx, int64_t v, int *brc)
{
	int rc = sqlite3_bind_int64(s, idx, v);

	if (rc != SQLITE_OK && *brc == SQLITE_OK)
		*brc = rc;
}

/* Reset s for its next use and drop bindings that point into callers' memory. */
static void done_with(sqlite3_stmt *s)
{
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

static enum err db_fail(struct store *st, const char *what, struct buf *errmsg)
{
	buf_setf(errmsg, "store %s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
	return ERR_DB;
}

/*
 * Step a statement that returns no rows and reset it.  brc is the result of
 * its bindings.  Caller holds db_mu.
 */
static enum err run(struct store *st, enum stmt_id id, int brc, const char *what,
		    struct buf *errmsg)
{
	sqlite3_stmt *s = st->stmt[id];
	enum err rc = ERR_OK;

	if (brc != SQLITE_OK) {
		buf_setf(errmsg, "store %s: %s: bind: %s", st->path, what, sqlite3_errstr(brc));
		rc = ERR_DB;
	} else if (sqlite3_step(s) != SQLITE_DONE) {
		rc = db_fail(st, what, errmsg);
	}
	done_with(s);
	return rc;
}

/* Roll back the open transaction, if any.  Caller holds db_mu. */
static void rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db)) {
		sqlite3_step(st->stmt[S_ROLLBACK]);
		sqlite3_reset(st->stmt[S_ROLLBACK]);
	}
}

/* A copy of a text column; NULL for SQL NULL. */
static char *col_str(sqlite3_stmt *s, int i)
{
	return xstrdup((const char *)sqlite3_column_text(s, i));
}

/* ---- open, migrate, close ---- */

/* Run sql (one or more statements, no rows wanted) outside the statement cache. */
static enum err exec(sqlite3 *db, const char *path, const char *sql, struct buf *errmsg)
{
	char *msg = NULL;

	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
		buf_setf(errmsg, "store %s: %s", path, msg ? msg : sqlite3_errmsg(db));
		sqlite3_free(msg);
		return ERR_DB;
	}
	return ERR_OK;
}

/* The single text or integer value sql returns, as text into out. */
static enum err query_text(sqlite3 *db, const char *path, const char *sql, struct buf *out,
			   struct buf *errmsg)
{
	sqlite3_stmt *s = NULL;
	enum err rc = ERR_OK;

	if (sqlite3_prepare_v2(db, sql, -1, &s, NULL) != SQLITE_OK ||
	    sqlite3_step(s) != SQLITE_ROW) {
		buf_setf(errmsg, "store %s: %s", path, sqlite3_errmsg(db));
		rc = ERR_DB;
		goto out;
	}
	buf_reset(out);
	if (buf_adds(out, (const char *)sqlite3_column_text(s, 0)) != ERR_OK) {
		buf_setf(errmsg, "store %s: %s: answer too long", path, sql);
		rc = ERR_DB;
	}
out:
	sqlite3_finalize(s);
	return rc;
}

static enum err read_version(struct store *st, int *version, struct buf *errmsg)
{
	struct buf v = BUF_INIT;
	enum err rc = query_text(st->db, st->path, "PRAGMA user_version", &v, errmsg);

	if (rc == ERR_OK)
		*version = (int)strtol(buf_str(&v), NULL, 10);
	buf_release(&v);
	return rc;
}

/*
 * Bring the schema to N_MIGRATIONS, one transaction per step.  BEGIN
 * IMMEDIATE before reading user_version so that two processes opening the
 * same new file cannot both apply a step.
 */
static enum err migrate(struct store *st, struct buf *errmsg)
{
	enum err rc = ERR_OK;
	int version = 0;
	char set[64];

	for (;;) {
		rc = exec(st->db, st->path, "BEGIN IMMEDIATE", errmsg);
		if (rc)
			break;
		rc = read_version(st, &version, errmsg);
		if (rc)
			break;
		if (version > N_MIGRATIONS) {
			buf_setf(errmsg,
				 "store %s: schema version %d is newer than this build's %d: "
				 "run a newer alertbridge or restore an older database",
				 st->path, version, N_MIGRATIONS);
			rc = ERR_DB;
			break;
		}
		if (version == N_MIGRATIONS) {
			rc = exec(st->db, st->path, "COMMIT", errmsg);
			break;
		}
		snprintf(set, sizeof(set), "PRAGMA user_version = %d", version + 1);
		rc = exec(st->db, st->path, migrations[version], errmsg);
		if (rc == ERR_OK)
			rc = exec(st->db, st->path, set, errmsg);
		if (rc == ERR_OK)
			rc = exec(st->db, st->path, "COMMIT", errmsg);
		if (rc)
			break;
		struct log_line *l = log_begin(LOG_INFO, "store migrated");
		log_str(l, "path", st->path);
		log_int(l, "schema_version", version + 1);
		log_end(l);
	}
	if (rc && !sqlite3_get_autocommit(st->db))
		(void)exec(st->db, st->path, "ROLLBACK", NULL);
	return rc;
}

/* WAL, synchronous=FULL, foreign keys: see store.h. */
static enum err configure(struct store *st, struct buf *errmsg)
{
	struct buf mode = BUF_INIT;
	enum err rc;

	sqlite3_extended_result_codes(st->db, 1);
	sqlite3_busy_timeout(st->db, BUSY_TIMEOUT_MS);
	/*
	 * The first statement reads the file header: "file is not a database"
	 * shows here.  auto_vacuum takes effect on a new file only, before WAL
	 * mode writes its header; see incremental_vacuum() for older files.
	 */
	rc = exec(st->db, st->path, "PRAGMA auto_vacuum = INCREMENTAL", errmsg);
	if (rc)
		goto out;
	rc = query_text(st->db, st->path, "PRAGMA journal_mode = WAL", &mode, errmsg);
	if (rc)
		goto out;
	if (strcmp(buf_str(&mode), "wal") && strcmp(buf_str(&mode), "memory")) {
		buf_setf(errmsg, "store %s: cannot use WAL mode (journal_mode is %s)", st->path,
			 buf_str(&mode));
		rc = ERR_DB;
		goto out;
	}
	rc = exec(st->db, st->path, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON",
		  errmsg);
out:
	buf_release(&mode);
	return rc;
}

/*
 * Pruned rows give their pages back to the file system (store_prune_done()
 * runs PRAGMA incremental_vacuum), which needs auto_vacuum=INCREMENTAL.  A
 * new file has it from configure(); a file made before that is switched
 * once, by one VACUUM (https://sqlite.org/pragma.html#pragma_auto_vacuum),
 * which rewrites the file and may take a while on a big one.
 */
static enum err incremental_vacuum(struct store *st, struct buf *errmsg)
{
	struct buf mode = BUF_INIT;
	enum err rc = query_text(st->db, st->path, "PRAGMA auto_vacuum", &mode, errmsg);

	if (rc || !strcmp(buf_str(&mode), "2"))
		goto out;
	rc = exec(st->db, st->path, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM", errmsg);
	if (rc == ERR_OK) {
		struct log_line *l = log_begin(LOG_INFO, "store switched to incremental vacuum");
		log_str(l, "path", st->path);
		log_end(l);
	}
out:
	buf_release(&mode);
	return rc;
}

static enum err prepare_all(struct store *st, struct buf *errmsg)
{
	for (int i = 0; i < S_COUNT; i++) {
		if (sqlite3_prepare_v3(st->db, stmt_sql[i], -1, SQLITE_PREPARE_PERSISTENT,
				       &st->stmt[i], NULL) != SQLITE_OK) {
			buf_setf(errmsg, "store %s: prepare statement %d: %s", st->path, i,
				 sqlite3_errmsg(st->db));
			return ERR_DB;
		}
	}
	return ERR_OK;
}

static void init_sync(struct store *st)
{
	pthread_condattr_t attr;

	pthread_mutex_init(&st->db_mu, NULL);
	pthread_mutex_init(&st->q_mu, NULL);
	pthread_cond_init(&st->commit_cond, NULL);
	pthread_cond_init(&st->idle_cond, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&st->event_cond, &attr);
	pthread_condattr_destroy(&attr);
}

/* Free st's sqlite resources and memory; no thread may be using it. */
static void destroy(struct store *st)
{
	for (int i = 0; i < S_COUNT; i++)
		sqlite3_finalize(st->stmt[i]);
	if (st->db && sqlite3_close(st->db) != SQLITE_OK) {
		struct log_line *l = log_begin(LOG_ERROR, "store close failed");
		log_str(l, "path", st->path);
		log_str(l, "error", sqlite3_errmsg(st->db));
		log_end(l);
	}
	pthread_cond_destroy(&st->event_cond);
	pthread_cond_destroy(&st->idle_cond);
	pthread_cond_destroy(&st->commit_cond);
	pthread_mutex_destroy(&st->q_mu);
	pthread_mutex_destroy(&st->db_mu);
	free(st->path);
	free(st);
}

int store_schema_version(void)
{
	return N_MIGRATIONS;
}

enum err store_open(const char *path, struct store **out, struct buf *errmsg)
{
	struct store *st = NULL;
	enum err rc = ERR_OK;
	int src;

	*out = NULL;
	if (empty(path)) {
		buf_setf(errmsg, "store: database path is empty");
		return ERR_INVALID;
	}
	st = xcalloc(1, sizeof(*st));
	st->path = xstrdup(path);
	st->tail = &st->head;
	init_sync(st);
	if (!sqlite3_threadsafe()) {
		buf_setf(errmsg, "store %s: sqlite is built without thread support", path);
		rc = ERR_DB;
		goto out;
	}
	/* NOMUTEX: db_mu serialises every use of the connection. */
	src = sqlite3_open_v2(path, &st->db,
			      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, NULL);
	if (src != SQLITE_OK) {
		buf_setf(errmsg, "store %s: open: %s", path,
			 st->db ? sqlite3_errmsg(st->db) : sqlite3_errstr(src));
		rc = ERR_DB;
		goto out;
	}
	rc = configure(st, errmsg);
	if (rc == ERR_OK)
		rc = migrate(st, errmsg);
	if (rc == ERR_OK)
		rc = incremental_vacuum(st, errmsg);
	if (rc == ERR_OK)
		rc = prepare_all(st, errmsg);
out:
	if (rc) {
		destroy(st);
		return rc;
	}
	*out = st;
	return ERR_OK;
}

void store_close(struct store *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->q_mu);
	st->closing = 1;
	pthread_cond_broadcast(&st->event_cond);
	while (st->waiters > 0)
		pthread_cond_wait(&st->idle_cond, &st->q_mu);
	pthread_mutex_unlock(&st->q_mu);
	destroy(st);
}

/* ---- intake: group commit ---- */

static enum err check_event(const struct store_event *ev, size_t i, struct buf *errmsg)
{
	const char *missing = NULL;

	if (empty(ev->kind))
		missing = "kind";
	else if (empty(ev->receiver))
		missing = "receiver";
	else if (empty(ev->key))
		missing = "key";
	else if (empty(ev->status))
		missing = "status";
	else if (empty(ev->payload))
		missing = "payload";
	if (missing) {
		buf_setf(errmsg, "store: event %zu: %s is empty", i, missing);
		return ERR_INVALID;
	}
	if (strcmp(ev->status, "firing") && strcmp(ev->status, "resolved")) {
		buf_setf(errmsg, "store: event %zu: status \"%s\" is not firing or resolved", i,
			 ev->status);
		return ERR_INVALID;
	}
	return ERR_OK;
}

static enum err insert_event(struct store *st, struct store_event *ev, int64_t now,
			     struct buf *errmsg)
{
	sqlite3_stmt *s = st->stmt[S_EV_INSERT];
	int brc = SQLITE_OK;
	enum err rc;

	bind_text(s, 1, ev->kind, &brc);
	bind_text(s, 2, ev->receiver, &brc);
	bind_text(s, 3, ev->key, &brc);
	bind_text(s, 4, ev->status, &brc);
	bind_int(s, 5, ev->starts_at_ms, &brc);
	bind_int(s, 6, ev->ends_at_ms, &brc);
	bind_text(s, 7, ev->payload, &brc);
	bind_int(s, 8, ev->received_at_ms > 0 ? ev->received_at_ms : now, &brc);
	rc = run(st, S_EV_INSERT, brc, "insert event", errmsg);
	if (rc == ERR_OK)
		ev->id = sqlite3_last_insert_rowid(st->db);
	return rc;
}

/*
 * The leader's transaction: every event of every batch in list, one BEGIN
 * IMMEDIATE .. COMMIT.  Sets each batch's rc (and ids or errmsg) but not
 * done: the caller publishes that under q_mu.
 */
static void commit_group(struct store *st, struct batch *list)
{
	struct buf msg = BUF_INIT;
	int64_t now = clock_wall_ms();
	enum err rc;

	pthread_mutex_lock(&st->db_mu);
	rc = run(st, S_BEGIN, SQLITE_OK, "begin", &msg);
	for (struct batch *b = list; b && rc == ERR_OK; b = b->next) {
		for (size_t i = 0; i < b->n && rc == ERR_OK; i++)
			rc = insert_event(st, &b->evs[i], now, &msg);
	}
	if (rc == ERR_OK)
		rc = run(st, S_COMMIT, SQLITE_OK, "commit", &msg);
	if (rc)
		rollback(st);
	pthread_mutex_unlock(&st->db_mu);

	for (struct batch *b = list; b; b = b->next) {
		b->rc = rc;
		if (rc == ERR_OK)
			continue;
		for (size_t i = 0; i < b->n; i++)
			b->evs[i].id = 0;
		buf_setf(b->errmsg, "%s (nothing of this group commit was stored)", buf_str(&msg));
	}
	if (rc)
		log_db("enqueue", &msg);
	buf_release(&msg);
}

enum err store_enqueue(struct store *st, struct store_event *evs, size_t n, struct buf *errmsg)
{
	struct batch me = { evs, n, errmsg, ERR_OK, 0, NULL };
	struct batch *list;
	enum err rc;

	if (!st || (n > 0 && !evs)) {
		buf_setf(errmsg, "store: enqueue: no store or no events");
		return ERR_INVALID;
	}
	for (size_t i = 0; i < n; i++) {
		rc = check_event(&evs[i], i, errmsg);
		if (rc)
			return rc;
	}
	if (n == 0)
		return ERR_OK;

	pthread_mutex_lock(&st->q_mu);
	*st->tail = &me;
	st->tail = &me.next;
	/* Wait while another leader commits; it may take our batch with it. */
	while (!me.done && st->committing)
		pthread_cond_wait(&st->commit_cond, &st->q_mu);
	if (!me.done) {
		/* Lead: take everything queued so far (our batch included). */
		st->committing = 1;
		list = st->head;
		st->head = NULL;
		st->tail = &st->head;
		pthread_mutex_unlock(&st->q_mu);

		commit_group(st, list);

		pthread_mutex_lock(&st->q_mu);
		for (struct batch *b = list; b; b = b->next) {
			b->done = 1;
			st->stats.batches += b->rc == ERR_OK;
			st->stats.events += b->rc == ERR_OK ? b->n : 0;
		}
		if (list->rc == ERR_OK) {
			st->stats.commits++;
			st->enq_seq++;
			pthread_cond_broadcast(&st->event_cond);
		} else {
			st->stats.failed_commits++;
		}
		st->committing = 0;
		/* Wake our followers, and the first of the next group to lead it. */
		pthread_cond_broadcast(&st->commit_cond);
	}
	rc = me.rc;
	pthread_mutex_unlock(&st->q_mu);
	return rc;
}

/* ---- workers: next, wait, done, retry, dead ---- */

static void read_event(sqlite3_stmt *s, struct store_event *out)
{
	out->id = sqlite3_column_int64(s, 0);
	out->kind = col_str(s, 1);
	out->receiver = col_str(s, 2);
	out->key = col_str(s, 3);
	out->status = col_str(s, 4);
	out->starts_at_ms = sqlite3_column_int64(s, 5);
	out->ends_at_ms = sqlite3_column_int64(s, 6);
	out->payload = col_str(s, 7);
	out->received_at_ms = sqlite3_column_int64(s, 8);
	out->attempts = sqlite3_column_int(s, 9);
	out->last_error = col_str(s, 10);
	out->progress = col_str(s, 11);
}

enum err store_next_event(struct store *st, const char *kind, int64_t now_ms,
			  struct store_event *out)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s;
	enum err rc = ERR_OK;
	int brc = SQLITE_OK, src;

	memset(out, 0, sizeof(*out));
	if (!st || empty(kind))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_EV_NEXT];
	bind_text(s, 1, kind, &brc);
	bind_int(s, 2, now_ms, &brc);
	src = brc == SQLITE_OK ? sqlite3_step(s) : brc;
	if (src == SQLITE_ROW)
		read_event(s, out);
	else if (src == SQLITE_DONE)
		rc = ERR_NOTFOUND;
	else
		rc = db_fail(st, "next event", &msg);
	done_with(s);
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("next event", &msg);
	buf_release(&msg);
	return rc;
}

void store_event_release(struct store_event *ev)
{
	if (!ev)
		return;
	free(ev->kind);
	free(ev->receiver);
	free(ev->key);
	free(ev->status);
	free(ev->payload);
	free(ev->last_error);
	free(ev->progress);
	ev->kind = ev->receiver = ev->key = ev->status = ev->payload = ev->last_error = NULL;
	ev->progress = NULL;
}

/* The one integer a counting statement returns; -1 on error (logged). */
static int64_t count(struct store *st, enum stmt_id id, const char *kind, const char *what)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s;
	int64_t n = -1;
	int brc = SQLITE_OK;

	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[id];
	if (kind)
		bind_text(s, 1, kind, &brc);
	if (brc == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW)
		n = sqlite3_column_type(s, 0) == SQLITE_NULL ? INT64_MAX
							      : sqlite3_column_int64(s, 0);
	else
		(void)db_fail(st, what, &msg);
	done_with(s);
	pthread_mutex_unlock(&st->db_mu);
	if (n == -1)
		log_db(what, &msg);
	buf_release(&msg);
	return n;
}

int64_t store_pending_count(struct store *st, const char *kind)
{
	if (!st || empty(kind))
		return -1;
	return count(st, S_EV_PENDING, kind, "pending count");
}

int64_t store_dead_count(struct store *st)
{
	if (!st)
		return -1;
	return count(st, S_EV_DEAD_COUNT, NULL, "dead count");
}

static struct timespec mono_deadline(int64_t wait_ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	ts.tv_sec += (time_t)(wait_ms / 1000);
	ts.tv_nsec += (long)(wait_ms % 1000) * 1000000L;
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	return ts;
}

void store_wait_kind(struct store *st, const char *kind, int64_t timeout_ms)
{
	uint64_t seq, gen;
	int64_t due, now, wait_ms;
	struct timespec deadline;

	if (!st || timeout_ms <= 0)
		return;
	if (timeout_ms > INT64_C(86400000))
		timeout_ms = INT64_C(86400000);
	pthread_mutex_lock(&st->q_mu);
	if (st->closing) {
		pthread_mutex_unlock(&st->q_mu);
		return;
	}
	st->waiters++;
	/* Snapshot before looking at the table: a commit after this changes enq_seq. */
	seq = st->enq_seq;
	gen = st->wake_gen;
	pthread_mutex_unlock(&st->q_mu);

	if (kind)
		due = count(st, S_EV_DUE_KIND, kind, "due time");
	else
		due = count(st, S_EV_DUE_ANY, NULL, "due time");
	now = clock_wall_ms();
	wait_ms = timeout_ms;
	if (due >= 0 && due < INT64_MAX)
		wait_ms = due <= now ? 0 : (due - now < wait_ms ? due - now : wait_ms);
	deadline = mono_deadline(wait_ms);

	pthread_mutex_lock(&st->q_mu);
	while (wait_ms > 0 && !st->closing && st->enq_seq == seq && st->wake_gen == gen) {
		if (pthread_cond_timedwait(&st->event_cond, &st->q_mu, &deadline) == ETIMEDOUT)
			break;
	}
	st->waiters--;
	if (st->closing && st->waiters == 0)
		pthread_cond_broadcast(&st->idle_cond);
	pthread_mutex_unlock(&st->q_mu);
}

void store_wait(struct store *st, int64_t timeout_ms)
{
	store_wait_kind(st, NULL, timeout_ms);
}

void store_wake(struct store *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->q_mu);
	st->wake_gen++;
	pthread_cond_broadcast(&st->event_cond);
	pthread_mutex_unlock(&st->q_mu);
}

void store_stats(struct store *st, struct store_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!st)
		return;
	pthread_mutex_lock(&st->q_mu);
	*out = st->stats;
	pthread_mutex_unlock(&st->q_mu);
}

/*
 * Why an UPDATE ... AND state = 'pending' changed nothing: ERR_NOTFOUND or
 * ERR_CONFLICT, with errmsg.  When the event is pending, ERR_OK and its
 * receiver and key copied to *receiver, *key (may be NULL).  Caller holds db_mu.
 */
static enum err event_state(struct store *st, int64_t id, char **receiver, char **key,
			    struct buf *errmsg)
{
	sqlite3_stmt *s = st->stmt[S_EV_STATE];
	enum err rc = ERR_OK;
	int src = sqlite3_bind_int64(s, 1, id);

	if (src == SQLITE_OK)
		src = sqlite3_step(s);
	if (src == SQLITE_DONE) {
		buf_setf(errmsg, "store: event %lld does not exist", (long long)id);
		rc = ERR_NOTFOUND;
	} else if (src != SQLITE_ROW) {
		rc = db_fail(st, "event state", errmsg);
	} else if (strcmp((const char *)sqlite3_column_text(s, 0), "pending")) {
		buf_setf(errmsg, "store: event %lld is already %s", (long long)id,
			 (const char *)sqlite3_column_text(s, 0));
		rc = ERR_CONFLICT;
	} else {
		if (receiver)
			*receiver = col_str(s, 1);
		if (key)
			*key = col_str(s, 2);
	}
	done_with(s);
	return rc;
}

static enum err check_issue(const struct store_issue *row, struct buf *errmsg)
{
	const char *missing = NULL;

	if (!row)
		missing = "row";
	else if (empty(row->receiver))
		missing = "receiver";
	else if (empty(row->key))
		missing = "key";
	else if (empty(row->repo))
		missing = "repo";
	else if (empty(row->state))
		missing = "state";
	if (missing) {
		buf_setf(errmsg, "store: issue row: %s is empty", missing);
		return ERR_INVALID;
	}
	if (strcmp(row->state, "open") && strcmp(row->state, "closed")) {
		buf_setf(errmsg, "store: issue row: state \"%s\" is not open or closed",
			 row->state);
		return ERR_INVALID;
	}
	return ERR_OK;
}

/* Upsert row.  Caller holds db_mu. */
static enum err put_issue(struct store *st, const struct store_issue *row, struct buf *errmsg)
{
	sqlite3_stmt *s = st->stmt[S_IS_PUT];
	int brc = SQLITE_OK;

	bind_text(s, 1, row->receiver, &brc);
	bind_text(s, 2, row->key, &brc);
	bind_text(s, 3, row->repo, &brc);
	bind_int(s, 4, row->number, &brc);
	bind_text(s, 5, row->state, &brc);
	bind_text(s, 6, row->state_reason, &brc);
	bind_int(s, 7, row->episode_starts_ms, &brc);
	bind_int(s, 8, row->resolved_ends_ms, &brc);
	bind_int(s, 9, row->closed_at_ms, &brc);
	bind_int(s, 10, row->previous_number, &brc);
	bind_int(s, 11, row->created_at_ms, &brc);
	bind_int(s, 12, row->updated_at_ms, &brc);
	bind_text(s, 13, row->dead_reason, &brc);
	return run(st, S_IS_PUT, brc, "put issue", errmsg);
}

enum err store_event_done(struct store *st, int64_t id, const struct store_issue *row,
			  struct buf *errmsg)
{
	enum err rc = ERR_OK;
	int brc = SQLITE_OK;

	if (!st) {
		buf_setf(errmsg, "store: no store");
		return ERR_INVALID;
	}
	if (row) {
		rc = check_issue(row, errmsg);
		if (rc)
			return rc;
	}
	pthread_mutex_lock(&st->db_mu);
	rc = run(st, S_BEGIN, SQLITE_OK, "begin", errmsg);
	if (rc)
		goto out;
	bind_int(st->stmt[S_EV_DONE], 1, id, &brc);
	bind_int(st->stmt[S_EV_DONE], 2, clock_wall_ms(), &brc);
	rc = run(st, S_EV_DONE, brc, "mark event done", errmsg);
	if (rc == ERR_OK && sqlite3_changes(st->db) == 0) {
		rc = event_state(st, id, NULL, NULL, errmsg);
		if (rc == ERR_OK) /* pending yet not updated: cannot happen under BEGIN IMMEDIATE */
			rc = db_fail(st, "mark event done", errmsg);
	}
	if (rc == ERR_OK && row)
		rc = put_issue(st, row, errmsg);
	if (rc == ERR_OK)
		rc = run(st, S_COMMIT, SQLITE_OK, "commit", errmsg);
out:
	if (rc)
		rollback(st);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_event_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *error)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int brc = SQLITE_OK;
	sqlite3_stmt *s;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_EV_RETRY];
	bind_int(s, 1, id, &brc);
	bind_int(s, 2, next_at_ms, &brc);
	bind_text(s, 3, error, &brc);
	rc = run(st, S_EV_RETRY, brc, "retry event", &msg);
	if (rc == ERR_OK && sqlite3_changes(st->db) == 0) {
		rc = event_state(st, id, NULL, NULL, &msg);
		if (rc == ERR_OK) /* changed by another process in between */
			rc = ERR_CONFLICT;
	}
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("retry event", &msg);
	buf_release(&msg);
	return rc;
}

enum err store_event_progress(struct store *st, int64_t id, const char *progress)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int brc = SQLITE_OK;
	sqlite3_stmt *s;

	if (!st || empty(progress))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_EV_PROGRESS];
	bind_int(s, 1, id, &brc);
	bind_text(s, 2, progress, &brc);
	rc = run(st, S_EV_PROGRESS, brc, "record event progress", &msg);
	if (rc == ERR_OK && sqlite3_changes(st->db) == 0) {
		rc = event_state(st, id, NULL, NULL, &msg);
		if (rc == ERR_OK)
			rc = ERR_CONFLICT;
	}
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("record event progress", &msg);
	buf_release(&msg);
	return rc;
}

enum err store_event_dead(struct store *st, int64_t id, const char *reason)
{
	struct buf msg = BUF_INIT;
	char *receiver = NULL, *key = NULL;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st || empty(reason))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = run(st, S_BEGIN, SQLITE_OK, "begin", &msg);
	if (rc == ERR_OK)
		rc = event_state(st, id, &receiver, &key, &msg);
	if (rc == ERR_OK) {
		bind_int(st->stmt[S_EV_DEAD], 1, id, &brc);
		bind_int(st->stmt[S_EV_DEAD], 2, clock_wall_ms(), &brc);
		bind_text(st->stmt[S_EV_DEAD], 3, reason, &brc);
		rc = run(st, S_EV_DEAD, brc, "dead-letter event", &msg);
	}
	if (rc == ERR_OK) {
		bind_text(st->stmt[S_IS_SET_DEAD], 1, receiver, &brc);
		bind_text(st->stmt[S_IS_SET_DEAD], 2, key, &brc);
		bind_text(st->stmt[S_IS_SET_DEAD], 3, reason, &brc);
		rc = run(st, S_IS_SET_DEAD, brc, "set dead reason", &msg);
	}
	if (rc == ERR_OK)
		rc = run(st, S_COMMIT, SQLITE_OK, "commit", &msg);
	if (rc)
		rollback(st);
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("dead-letter event", &msg);
	free(receiver);
	free(key);
	buf_release(&msg);
	return rc;
}

enum err store_prune_done(struct store *st, int64_t before_ms, int64_t *deleted)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int brc = SQLITE_OK;
	int64_t n;

	if (deleted)
		*deleted = 0;
	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	bind_int(st->stmt[S_EV_PRUNE], 1, before_ms, &brc);
	rc = run(st, S_EV_PRUNE, brc, "prune events", &msg);
	n = rc == ERR_OK ? sqlite3_changes64(st->db) : 0;
	if (deleted)
		*deleted = n;
	/* Hand the freed pages back, then move them out of the WAL into the file. */
	if (n > 0)
		rc = exec(st->db, st->path,
			  "PRAGMA incremental_vacuum; PRAGMA wal_checkpoint(TRUNCATE)", &msg);
	pthread_mutex_unlock(&st->db_mu);
	if (rc)
		log_db("prune events", &msg);
	buf_release(&msg);
	return rc;
}

/* ---- the issue map ---- */

static void read_issue(sqlite3_stmt *s, struct store_issue *out)
{
	out->receiver = col_str(s, 0);
	out->key = col_str(s, 1);
	out->repo = col_str(s, 2);
	out->number = sqlite3_column_int64(s, 3);
	out->state = col_str(s, 4);
	out->state_reason = col_str(s, 5);
	out->episode_starts_ms = sqlite3_column_int64(s, 6);
	out->resolved_ends_ms = sqlite3_column_int64(s, 7);
	out->closed_at_ms = sqlite3_column_int64(s, 8);
	out->previous_number = sqlite3_column_int64(s, 9);
	out->created_at_ms = sqlite3_column_int64(s, 10);
	out->updated_at_ms = sqlite3_column_int64(s, 11);
	out->dead_reason = col_str(s, 12);
}

enum err store_issue_get(struct store *st, const char *receiver, const char *key,
			 struct store_issue *out)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s;
	enum err rc = ERR_OK;
	int brc = SQLITE_OK, src;

	memset(out, 0, sizeof(*out));
	if (!st || empty(receiver) || empty(key))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_IS_GET];
	bind_text(s, 1, receiver, &brc);
	bind_text(s, 2, key, &brc);
	src = brc == SQLITE_OK ? sqlite3_step(s) : brc;
	if (src == SQLITE_ROW)
		read_issue(s, out);
	else if (src == SQLITE_DONE)
		rc = ERR_NOTFOUND;
	else
		rc = db_fail(st, "get issue", &msg);
	done_with(s);
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("get issue", &msg);
	buf_release(&msg);
	return rc;
}

enum err store_issue_put(struct store *st, const struct store_issue *row)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st)
		return ERR_INVALID;
	rc = check_issue(row, &msg);
	if (rc == ERR_OK) {
		pthread_mutex_lock(&st->db_mu);
		rc = put_issue(st, row, &msg);
		pthread_mutex_unlock(&st->db_mu);
		if (rc)
			log_db("put issue", &msg);
	}
	buf_release(&msg);
	return rc;
}

enum err store_issue_forget(struct store *st, const char *receiver, const char *key)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st || empty(receiver) || empty(key))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	bind_text(st->stmt[S_IS_FORGET], 1, receiver, &brc);
	bind_text(st->stmt[S_IS_FORGET], 2, key, &brc);
	rc = run(st, S_IS_FORGET, brc, "forget issue", &msg);
	if (rc == ERR_OK && sqlite3_changes(st->db) == 0)
		rc = ERR_NOTFOUND;
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("forget issue", &msg);
	buf_release(&msg);
	return rc;
}

/*
 * Read up to EACH_PAGE_ROWS rows after (after_rcv, after_key) into page;
 * *n gets how many.  Keyset paging, so the lock is held per page only.
 */
static enum err read_page(struct store *st, const char *receiver, const char *after_rcv,
			  const char *after_key, struct store_issue *page, int *n,
			  struct buf *errmsg)
{
	enum stmt_id id = receiver ? S_IS_PAGE_RCV : S_IS_PAGE_ALL;
	sqlite3_stmt *s;
	enum err rc = ERR_OK;
	int brc = SQLITE_OK, src = SQLITE_OK;

	*n = 0;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[id];
	bind_text(s, 1, receiver ? receiver : after_rcv, &brc);
	bind_text(s, 2, after_key, &brc);
	bind_int(s, 3, EACH_PAGE_ROWS, &brc);
	if (brc != SQLITE_OK)
		src = brc;
	while (src == SQLITE_OK || src == SQLITE_ROW) {
		src = sqlite3_step(s);
		if (src != SQLITE_ROW)
			break;
		memset(&page[*n], 0, sizeof(page[*n]));
		read_issue(s, &page[*n]);
		(*n)++;
	}
	if (src != SQLITE_DONE)
		rc = db_fail(st, "list issues", errmsg);
	done_with(s);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_issue_each(struct store *st, const char *receiver,
			  int (*fn)(void *ctx, const struct store_issue *row), void *ctx)
{
	struct store_issue page[EACH_PAGE_ROWS];
	struct buf msg = BUF_INIT;
	char *after_rcv = xstrdup(""), *after_key = xstrdup("");
	enum err rc = ERR_OK;
	int n = 0, stop = 0;

	if (!st || !fn) {
		rc = ERR_INVALID;
		goto out;
	}
	do {
		rc = read_page(st, receiver, after_rcv, after_key, page, &n, &msg);
		for (int i = 0; i < n; i++) {
			if (!stop && rc == ERR_OK)
				stop = fn(ctx, &page[i]);
			if (i == n - 1) {
				free(after_rcv);
				free(after_key);
				after_rcv = page[i].receiver;
				after_key = page[i].key;
				page[i].receiver = page[i].key = NULL;
			}
			store_issue_release(&page[i]);
		}
	} while (rc == ERR_OK && !stop && n == EACH_PAGE_ROWS);
	if (rc == ERR_DB)
		log_db("list issues", &msg);
out:
	free(after_rcv);
	free(after_key);
	buf_release(&msg);
	return rc;
}

void store_issue_release(struct store_issue *row)
{
	if (!row)
		return;
	free(row->receiver);
	free(row->key);
	free(row->repo);
	free(row->state);
	free(row->state_reason);
	free(row->dead_reason);
	row->receiver = row->key = row->repo = row->state = NULL;
	row->state_reason = row->dead_reason = NULL;
}

/* ---- the janitor's Slack outbox ---- */

static int notice_kind_valid(const char *kind)
{
	static const char *const kinds[] = { "notice", "reminder", "cancelled", "deleted" };

	for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i]))
			return 1;
	return 0;
}

enum err store_notice_add(struct store *st, struct store_notice *n, struct buf *errmsg)
{
	sqlite3_stmt *s;
	const char *missing = NULL;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st || !n) {
		buf_setf(errmsg, "store: notice: no store or no notice");
		return ERR_INVALID;
	}
	n->id = 0;
	if (empty(n->namespace))
		missing = "namespace";
	else if (empty(n->pod))
		missing = "pod";
	else if (empty(n->uid))
		missing = "uid";
	else if (empty(n->text))
		missing = "text";
	if (missing) {
		buf_setf(errmsg, "store: notice: %s is empty", missing);
		return ERR_INVALID;
	}
	if (!notice_kind_valid(n->kind)) {
		buf_setf(errmsg, "store: notice: kind \"%s\" is not notice, reminder, cancelled "
			 "or deleted", n->kind ? n->kind : "");
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_NO_INSERT];
	bind_text(s, 1, n->namespace, &brc);
	bind_text(s, 2, n->pod, &brc);
	bind_text(s, 3, n->uid, &brc);
	bind_text(s, 4, n->kind, &brc);
	bind_int(s, 5, n->expires_ms, &brc);
	bind_text(s, 6, n->notify, &brc);
	bind_text(s, 7, n->owner, &brc);
	bind_text(s, 8, n->channel, &brc);
	bind_text(s, 9, n->thread_ts, &brc);
	bind_text(s, 10, n->text, &brc);
	bind_int(s, 11, n->created_at_ms > 0 ? n->created_at_ms : clock_wall_ms(), &brc);
	rc = run(st, S_NO_INSERT, brc, "add notice", errmsg);
	if (rc == ERR_OK)
		n->id = sqlite3_last_insert_rowid(st->db);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

static void read_notice(sqlite3_stmt *s, struct store_notice *out)
{
	out->id = sqlite3_column_int64(s, 0);
	out->namespace = col_str(s, 1);
	out->pod = col_str(s, 2);
	out->uid = col_str(s, 3);
	out->kind = col_str(s, 4);
	out->expires_ms = sqlite3_column_int64(s, 5);
	out->notify = col_str(s, 6);
	out->owner = col_str(s, 7);
	out->channel = col_str(s, 8);
	out->thread_ts = col_str(s, 9);
	out->text = col_str(s, 10);
	out->state = col_str(s, 11);
	out->attempts = sqlite3_column_int(s, 12);
	out->next_attempt_at_ms = sqlite3_column_int64(s, 13);
	out->created_at_ms = sqlite3_column_int64(s, 14);
	out->sent_at_ms = sqlite3_column_int64(s, 15);
	out->slack_channel_id = col_str(s, 16);
	out->slack_ts = col_str(s, 17);
	out->last_error = col_str(s, 18);
}

/* Step a one-row notice SELECT whose parameters are bound (brc their result). */
static enum err one_notice(struct store *st, enum stmt_id id, int brc, const char *what,
			   struct store_notice *out)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s = st->stmt[id];
	int src = brc == SQLITE_OK ? sqlite3_step(s) : brc;
	enum err rc = ERR_OK;

	if (src == SQLITE_ROW)
		read_notice(s, out);
	else if (src == SQLITE_DONE)
		rc = ERR_NOTFOUND;
	else
		rc = db_fail(st, what, &msg);
	done_with(s);
	if (rc == ERR_DB)
		log_db(what, &msg);
	buf_release(&msg);
	return rc;
}

enum err store_notice_next(struct store *st, int64_t now_ms, struct store_notice *out)
{
	enum err rc;
	int brc = SQLITE_OK;

	memset(out, 0, sizeof(*out));
	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	bind_int(st->stmt[S_NO_NEXT], 1, now_ms, &brc);
	rc = one_notice(st, S_NO_NEXT, brc, "next notice", out);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_notice_latest(struct store *st, const char *uid, const char *kind,
			     struct store_notice *out)
{
	enum err rc;
	int brc = SQLITE_OK;

	memset(out, 0, sizeof(*out));
	if (!st || empty(uid) || empty(kind))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	bind_text(st->stmt[S_NO_LATEST], 1, uid, &brc);
	bind_text(st->stmt[S_NO_LATEST], 2, kind, &brc);
	rc = one_notice(st, S_NO_LATEST, brc, "latest notice", out);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

/* Run an UPDATE of one pending notice; ERR_NOTFOUND when it changed nothing. */
static enum err update_notice(struct store *st, enum stmt_id id, int brc, const char *what)
{
	struct buf msg = BUF_INIT;
	enum err rc = run(st, id, brc, what, &msg);

	if (rc == ERR_OK && sqlite3_changes(st->db) == 0)
		rc = ERR_NOTFOUND;
	if (rc == ERR_DB)
		log_db(what, &msg);
	buf_release(&msg);
	return rc;
}

enum err store_notice_sent(struct store *st, int64_t id, int64_t sent_at_ms, const char *channel,
			   const char *slack_channel_id, const char *slack_ts)
{
	sqlite3_stmt *s;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_NO_SENT];
	bind_int(s, 1, id, &brc);
	bind_int(s, 2, sent_at_ms, &brc);
	bind_text(s, 3, channel, &brc);
	bind_text(s, 4, slack_channel_id, &brc);
	bind_text(s, 5, slack_ts, &brc);
	rc = update_notice(st, S_NO_SENT, brc, "notice sent");
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_notice_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *channel,
			    const char *error)
{
	sqlite3_stmt *s;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_NO_RETRY];
	bind_int(s, 1, id, &brc);
	bind_int(s, 2, next_at_ms, &brc);
	bind_text(s, 3, channel, &brc);
	bind_text(s, 4, error, &brc);
	rc = update_notice(st, S_NO_RETRY, brc, "retry notice");
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_notice_dead(struct store *st, int64_t id, const char *reason)
{
	enum err rc;
	int brc = SQLITE_OK;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	bind_int(st->stmt[S_NO_DEAD], 1, id, &brc);
	bind_text(st->stmt[S_NO_DEAD], 2, reason, &brc);
	rc = update_notice(st, S_NO_DEAD, brc, "notice dead");
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_notice_cancel(struct store *st, const char *uid, const char *reason, int64_t *n)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int brc = SQLITE_OK;

	if (n)
		*n = 0;
	if (!st || empty(uid))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	bind_text(st->stmt[S_NO_CANCEL], 1, uid, &brc);
	bind_text(st->stmt[S_NO_CANCEL], 2, reason, &brc);
	rc = run(st, S_NO_CANCEL, brc, "cancel notices", &msg);
	if (rc == ERR_OK && n)
		*n = sqlite3_changes64(st->db);
	pthread_mutex_unlock(&st->db_mu);
	if (rc)
		log_db("cancel notices", &msg);
	buf_release(&msg);
	return rc;
}

int64_t store_notice_pending_count(struct store *st)
{
	if (!st)
		return -1;
	return count(st, S_NO_PENDING, NULL, "pending notices");
}

void store_notice_release(struct store_notice *n)
{
	if (!n)
		return;
	free(n->namespace);
	free(n->pod);
	free(n->uid);
	free(n->kind);
	free(n->notify);
	free(n->owner);
	free(n->channel);
	free(n->thread_ts);
	free(n->text);
	free(n->state);
	free(n->slack_channel_id);
	free(n->slack_ts);
	free(n->last_error);
	memset(n, 0, sizeof(*n));
}

/*
 * ---- storm summaries (schema version 3; bridge/storm.h) ----
 * These statements are prepared per call rather than kept in stmt_sql: they
 * run at most once per event or per summary update, and keeping them here
 * keeps the storm's part of the store in one block.
 */

#define SUMMARY_COLS                                                                \
	"s.id, s.receiver, s.repo, s.alertname, s.marker_key, s.number, s.state, "  \
	"s.created_at_ms, s.synced_at_ms, s.next_sync_ms, s.dirty, "                \
	"(SELECT count(*) FROM storm_members AS m WHERE m.summary_id = s.id AND m.firing = 1), " \
	"(SELECT count(*) FROM storm_members AS m WHERE m.summary_id = s.id)"

/*
 * Prepare sql and bind the arguments types describes ('t' const char *, 'i'
 * int64_t).  With rows NULL, step it to the end and finalize it; else hand
 * the statement to the caller, who steps and finalizes it.  Caller holds db_mu.
 */
static enum err sq(struct store *st, const char *sql, const char *what, struct buf *errmsg,
		   sqlite3_stmt **rows, const char *types, ...)
{
	sqlite3_stmt *s = NULL;
	enum err rc = ERR_OK;
	int brc = SQLITE_OK;
	va_list ap;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return db_fail(st, what, errmsg);
	va_start(ap, types);
	for (int i = 0; types[i]; i++) {
		if (types[i] == 't')
			bind_text(s, i + 1, va_arg(ap, const char *), &brc);
		else
			bind_int(s, i + 1, va_arg(ap, int64_t), &brc);
	}
	va_end(ap);
	if (brc != SQLITE_OK) {
		buf_setf(errmsg, "store %s: %s: bind: %s", st->path, what, sqlite3_errstr(brc));
		rc = ERR_DB;
	} else if (rows) {
		*rows = s;
		return ERR_OK;
	} else if (sqlite3_step(s) != SQLITE_DONE) {
		rc = db_fail(st, what, errmsg);
	}
	sqlite3_finalize(s);
	return rc;
}

int64_t store_pending_creates(struct store *st, const char *receiver)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s = NULL;
	int64_t n = -1;

	if (!st || empty(receiver))
		return -1;
	pthread_mutex_lock(&st->db_mu);
	if (sq(st, "SELECT count(DISTINCT e.key) FROM events AS e WHERE e.kind = 'bridge' AND "
		   "e.state = 'pending' AND e.receiver = ?1 AND e.status = 'firing' AND NOT EXISTS "
		   "(SELECT 1 FROM issues AS i WHERE i.receiver = e.receiver AND i.key = e.key)",
	       "pending creates", &msg, &s, "t", receiver) == ERR_OK) {
		if (sqlite3_step(s) == SQLITE_ROW)
			n = sqlite3_column_int64(s, 0);
		else
			(void)db_fail(st, "pending creates", &msg);
		sqlite3_finalize(s);
	}
	pthread_mutex_unlock(&st->db_mu);
	if (n < 0)
		log_db("pending creates", &msg);
	buf_release(&msg);
	return n;
}

static void read_summary(sqlite3_stmt *s, struct store_summary *out)
{
	out->id = sqlite3_column_int64(s, 0);
	out->receiver = col_str(s, 1);
	out->repo = col_str(s, 2);
	out->alertname = col_str(s, 3);
	out->marker_key = col_str(s, 4);
	out->number = sqlite3_column_int64(s, 5);
	out->state = col_str(s, 6);
	out->created_at_ms = sqlite3_column_int64(s, 7);
	out->synced_at_ms = sqlite3_column_int64(s, 8);
	out->next_sync_ms = sqlite3_column_int64(s, 9);
	out->dirty = (int)sqlite3_column_int64(s, 10);
	out->firing = sqlite3_column_int64(s, 11);
	out->total = sqlite3_column_int64(s, 12);
}

/* Run a prepared summary query; the first row into *out.  Caller holds db_mu. */
static enum err one_summary(struct store *st, sqlite3_stmt *s, const char *what,
			    struct store_summary *out, struct buf *errmsg)
{
	int src = sqlite3_step(s);
	enum err rc = ERR_OK;

	if (src == SQLITE_ROW)
		read_summary(s, out);
	else if (src == SQLITE_DONE)
		rc = ERR_NOTFOUND;
	else
		rc = db_fail(st, what, errmsg);
	sqlite3_finalize(s);
	return rc;
}

/* Lock, run sql with types/args through sq(), read one summary, unlock, log ERR_DB. */
#define SUMMARY_QUERY(st, out, what, sql, ...)                                       \
	do {                                                                          \
		struct buf msg_ = BUF_INIT;                                           \
		sqlite3_stmt *s_ = NULL;                                              \
		memset((out), 0, sizeof(*(out)));                                     \
		pthread_mutex_lock(&(st)->db_mu);                                     \
		rc = sq((st), (sql), (what), &msg_, &s_, __VA_ARGS__);                \
		if (rc == ERR_OK)                                                     \
			rc = one_summary((st), s_, (what), (out), &msg_);             \
		pthread_mutex_unlock(&(st)->db_mu);                                   \
		if (rc == ERR_DB)                                                     \
			log_db((what), &msg_);                                        \
		buf_release(&msg_);                                                   \
	} while (0)

enum err store_summary_live(struct store *st, const char *receiver, const char *repo,
			    const char *alertname, struct store_summary *out)
{
	enum err rc;

	if (!st || empty(receiver) || empty(repo) || !alertname) {
		memset(out, 0, sizeof(*out));
		return ERR_INVALID;
	}
	SUMMARY_QUERY(st, out, "live summary",
		      "SELECT " SUMMARY_COLS " FROM storm_summaries AS s WHERE s.receiver = ?1 "
		      "AND s.repo = ?2 AND s.alertname = ?3 AND s.state != 'closed' "
		      "ORDER BY s.id DESC LIMIT 1",
		      "ttt", receiver, repo, alertname);
	return rc;
}

enum err store_summary_get(struct store *st, int64_t id, struct store_summary *out)
{
	enum err rc;

	if (!st) {
		memset(out, 0, sizeof(*out));
		return ERR_INVALID;
	}
	SUMMARY_QUERY(st, out, "get summary",
		      "SELECT " SUMMARY_COLS " FROM storm_summaries AS s WHERE s.id = ?1", "i", id);
	return rc;
}

enum err store_summary_due(struct store *st, int64_t now_ms, int64_t interval_ms,
			   struct store_summary *out)
{
	enum err rc;

	if (!st) {
		memset(out, 0, sizeof(*out));
		return ERR_INVALID;
	}
	SUMMARY_QUERY(st, out, "due summary",
		      "SELECT " SUMMARY_COLS " FROM storm_summaries AS s WHERE s.state != 'closed' "
		      "AND s.next_sync_ms <= ?1 AND (s.state = 'creating' OR "
		      "(s.dirty AND s.synced_at_ms + ?2 <= ?1) OR NOT EXISTS (SELECT 1 FROM "
		      "storm_members AS m WHERE m.summary_id = s.id AND m.firing = 1)) "
		      "ORDER BY s.next_sync_ms, s.id LIMIT 1",
		      "ii", now_ms, interval_ms);
	return rc;
}

enum err store_summary_add(struct store *st, struct store_summary *s, struct buf *errmsg)
{
	enum err rc;

	if (!st || !s || empty(s->receiver) || empty(s->repo) || !s->alertname ||
	    empty(s->marker_key)) {
		buf_setf(errmsg, "store: summary: receiver, repo, alertname and marker_key needed");
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	rc = sq(st, "INSERT INTO storm_summaries (receiver, repo, alertname, marker_key, state, "
		    "created_at_ms) VALUES (?1, ?2, ?3, ?4, 'creating', ?5)",
		"add summary", errmsg, NULL, "tttti", s->receiver, s->repo, s->alertname,
		s->marker_key, s->created_at_ms > 0 ? s->created_at_ms : clock_wall_ms());
	s->id = rc ? 0 : sqlite3_last_insert_rowid(st->db);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_summary_save(struct store *st, const struct store_summary *s, struct buf *errmsg)
{
	enum err rc;

	if (!st || !s || empty(s->repo) || empty(s->state) ||
	    (strcmp(s->state, "creating") && strcmp(s->state, "open") &&
	     strcmp(s->state, "closed"))) {
		buf_setf(errmsg, "store: summary: repo and state (creating, open or closed) needed");
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	rc = sq(st, "BEGIN IMMEDIATE", "begin", errmsg, NULL, "");
	if (rc)
		goto out;
	rc = sq(st, "UPDATE storm_summaries SET repo = ?2, number = ?3, state = ?4, "
		    "synced_at_ms = ?5, next_sync_ms = ?6, dirty = ?7 WHERE id = ?1",
		"save summary", errmsg, NULL, "ititiii", s->id, s->repo, s->number, s->state,
		s->synced_at_ms, s->next_sync_ms, (int64_t)s->dirty);
	if (rc == ERR_OK && sqlite3_changes(st->db) == 0) {
		buf_setf(errmsg, "store: summary %lld does not exist", (long long)s->id);
		rc = ERR_NOTFOUND;
	}
	/* The map rows of its alerts follow the summary issue (store.h). */
	if (rc == ERR_OK && strcmp(s->state, "creating"))
		rc = sq(st, "UPDATE issues SET repo = ?2, number = ?3, state = ?4, "
			    "state_reason = CASE WHEN ?4 = 'closed' THEN 'completed' END, "
			    "closed_at_ms = CASE WHEN ?4 = 'closed' THEN ?5 ELSE 0 END, "
			    "updated_at_ms = ?5 WHERE (receiver, key) IN (SELECT receiver, key FROM "
			    "storm_members WHERE summary_id = ?1) "
			    "AND (state != ?4 OR number != ?3 OR repo != ?2)",
			"update folded rows", errmsg, NULL, "ititi", s->id, s->repo, s->number,
			s->state, s->synced_at_ms > 0 ? s->synced_at_ms : clock_wall_ms());
	if (rc == ERR_OK)
		rc = sq(st, "COMMIT", "commit", errmsg, NULL, "");
out:
	if (rc)
		rollback(st);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_member_get(struct store *st, const char *receiver, const char *key,
			  struct store_member *out)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s = NULL;
	enum err rc;
	int src;

	memset(out, 0, sizeof(*out));
	if (!st || empty(receiver) || empty(key))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = sq(st, "SELECT key, summary_id, firing, starts_at_ms, ends_at_ms, line FROM "
		    "storm_members WHERE receiver = ?1 AND key = ?2",
		"get member", &msg, &s, "tt", receiver, key);
	if (rc == ERR_OK) {
		src = sqlite3_step(s);
		if (src == SQLITE_ROW) {
			out->key = col_str(s, 0);
			out->summary_id = sqlite3_column_int64(s, 1);
			out->firing = (int)sqlite3_column_int64(s, 2);
			out->starts_at_ms = sqlite3_column_int64(s, 3);
			out->ends_at_ms = sqlite3_column_int64(s, 4);
			out->line = col_str(s, 5);
		} else if (src == SQLITE_DONE) {
			rc = ERR_NOTFOUND;
		} else {
			rc = db_fail(st, "get member", &msg);
		}
		sqlite3_finalize(s);
	}
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("get member", &msg);
	buf_release(&msg);
	return rc;
}

enum err store_member_fold(struct store *st, int64_t event_id, const struct store_issue *row,
			   const struct store_member *m, int dirty, struct buf *errmsg)
{
	enum err rc;

	if (!st || !m || empty(m->key) || m->summary_id <= 0) {
		buf_setf(errmsg, "store: member: key and summary_id needed");
		return ERR_INVALID;
	}
	rc = check_issue(row, errmsg);
	if (rc)
		return rc;
	if (strcmp(row->key, m->key)) {
		buf_setf(errmsg, "store: member key \"%s\" is not the row's \"%s\"", m->key,
			 row->key);
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	rc = sq(st, "BEGIN IMMEDIATE", "begin", errmsg, NULL, "");
	if (rc)
		goto out;
	rc = sq(st, "UPDATE events SET state = 'done', done_at_ms = ?2 "
		    "WHERE id = ?1 AND state = 'pending'",
		"mark event done", errmsg, NULL, "ii", event_id, clock_wall_ms());
	if (rc == ERR_OK && sqlite3_changes(st->db) == 0) {
		rc = event_state(st, event_id, NULL, NULL, errmsg);
		if (rc == ERR_OK)
			rc = db_fail(st, "mark event done", errmsg);
	}
	if (rc == ERR_OK)
		rc = put_issue(st, row, errmsg);
	if (rc == ERR_OK)
		rc = sq(st, "INSERT INTO storm_members (receiver, key, summary_id, firing, "
			    "starts_at_ms, ends_at_ms, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
			    "ON CONFLICT (receiver, key) DO UPDATE SET summary_id = excluded.summary_id, "
			    "firing = excluded.firing, starts_at_ms = excluded.starts_at_ms, "
			    "ends_at_ms = excluded.ends_at_ms, line = excluded.line",
			"fold member", errmsg, NULL, "ttiiiit", row->receiver, m->key, m->summary_id,
			(int64_t)(m->firing != 0), m->starts_at_ms, m->ends_at_ms,
			m->line ? m->line : "");
	if (rc == ERR_OK && dirty)
		rc = sq(st, "UPDATE storm_summaries SET dirty = 1 WHERE id = ?1", "mark summary",
			errmsg, NULL, "i", m->summary_id);
	if (rc == ERR_OK)
		rc = sq(st, "COMMIT", "commit", errmsg, NULL, "");
out:
	if (rc)
		rollback(st);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_member_unfold(struct store *st, const char *receiver, const char *key,
			     struct buf *errmsg)
{
	enum err rc;

	if (!st || empty(receiver) || empty(key)) {
		buf_setf(errmsg, "store: unfold: receiver and key needed");
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	rc = sq(st, "BEGIN IMMEDIATE", "begin", errmsg, NULL, "");
	if (rc == ERR_OK)
		rc = sq(st, "DELETE FROM issues WHERE receiver = ?1 AND key = ?2", "unfold row",
			errmsg, NULL, "tt", receiver, key);
	if (rc == ERR_OK)
		rc = sq(st, "DELETE FROM storm_members WHERE receiver = ?1 AND key = ?2",
			"unfold member", errmsg, NULL, "tt", receiver, key);
	if (rc == ERR_OK)
		rc = sq(st, "COMMIT", "commit", errmsg, NULL, "");
	if (rc)
		rollback(st);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_member_list(struct store *st, int64_t summary_id, struct store_member **out,
			   size_t *n)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s = NULL;
	struct store_member *v = NULL;
	size_t len = 0, cap = 0;
	enum err rc;
	int src;

	*out = NULL;
	*n = 0;
	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = sq(st, "SELECT key, summary_id, firing, starts_at_ms, ends_at_ms, line FROM "
		    "storm_members WHERE summary_id = ?1 ORDER BY firing DESC, starts_at_ms, key",
		"list members", &msg, &s, "i", summary_id);
	while (rc == ERR_OK && (src = sqlite3_step(s)) == SQLITE_ROW) {
		if (len == cap) {
			cap = cap ? cap * 2 : 64;
			v = xreallocarray(v, cap, sizeof(*v));
		}
		v[len].key = col_str(s, 0);
		v[len].summary_id = sqlite3_column_int64(s, 1);
		v[len].firing = (int)sqlite3_column_int64(s, 2);
		v[len].starts_at_ms = sqlite3_column_int64(s, 3);
		v[len].ends_at_ms = sqlite3_column_int64(s, 4);
		v[len].line = col_str(s, 5);
		len++;
	}
	if (rc == ERR_OK && src != SQLITE_DONE)
		rc = db_fail(st, "list members", &msg);
	sqlite3_finalize(s);
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("list members", &msg);
	if (rc) {
		store_member_list_free(v, len);
		len = 0;
		v = NULL;
	}
	*out = v;
	*n = len;
	buf_release(&msg);
	return rc;
}

void store_member_release(struct store_member *m)
{
	if (!m)
		return;
	free(m->key);
	free(m->line);
	memset(m, 0, sizeof(*m));
}

void store_member_list_free(struct store_member *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		store_member_release(&v[i]);
	free(v);
}

void store_summary_release(struct store_summary *s)
{
	if (!s)
		return;
	free(s->receiver);
	free(s->repo);
	free(s->alertname);
	free(s->marker_key);
	free(s->state);
	memset(s, 0, sizeof(*s));
}

/* ---- repository scans (map rebuild) ---- */

enum err store_scan_get(struct store *st, const char *receiver, const char *repo,
			int64_t *done_at_ms)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s;
	enum err rc = ERR_NOTFOUND;
	int brc = SQLITE_OK, step;

	if (!st || empty(receiver) || empty(repo))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_SCAN_GET];
	bind_text(s, 1, receiver, &brc);
	bind_text(s, 2, repo, &brc);
	step = brc == SQLITE_OK ? sqlite3_step(s) : SQLITE_ERROR;
	if (step == SQLITE_ROW) {
		if (done_at_ms)
			*done_at_ms = sqlite3_column_int64(s, 0);
		rc = ERR_OK;
	} else if (step != SQLITE_DONE) {
		rc = db_fail(st, "read repo scan", &msg);
	}
	done_with(s);
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("read repo scan", &msg);
	buf_release(&msg);
	return rc;
}

enum err store_scan_done(struct store *st, const char *receiver, const char *repo,
			 int64_t done_at_ms)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st || empty(receiver) || empty(repo))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	bind_text(st->stmt[S_SCAN_PUT], 1, receiver, &brc);
	bind_text(st->stmt[S_SCAN_PUT], 2, repo, &brc);
	bind_int(st->stmt[S_SCAN_PUT], 3, done_at_ms, &brc);
	rc = run(st, S_SCAN_PUT, brc, "record repo scan", &msg);
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("record repo scan", &msg);
	buf_release(&msg);
	return rc;
}

/* ---- dead letters without a map row ---- */

enum err store_dead_unmapped(struct store *st, const char *kind, int max,
			     int (*fn)(void *ctx, const struct store_event *ev), void *ctx)
{
	struct buf msg = BUF_INIT;
	struct store_event *evs;
	sqlite3_stmt *s;
	enum err rc = ERR_OK;
	int brc = SQLITE_OK, n = 0, step = SQLITE_DONE, stopped = 0;

	if (!st || empty(kind) || !fn || max <= 0)
		return ERR_INVALID;
	if (max > 1000)
		max = 1000;
	evs = xcalloc((size_t)max, sizeof(*evs));
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_EV_DEAD_UNMAPPED];
	bind_text(s, 1, kind, &brc);
	bind_int(s, 2, max, &brc);
	while (brc == SQLITE_OK && n < max && (step = sqlite3_step(s)) == SQLITE_ROW)
		read_event(s, &evs[n++]);
	if (brc != SQLITE_OK || (n < max && step != SQLITE_DONE))
		rc = db_fail(st, "list dead letters", &msg);
	done_with(s);
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_DB)
		log_db("list dead letters", &msg);
	for (int i = 0; i < n; i++) {
		if (rc == ERR_OK && !stopped)
			stopped = fn(ctx, &evs[i]);
		store_event_release(&evs[i]);
	}
	free(evs);
	buf_release(&msg);
	return rc;
}

/* ---- re-queueing dead letters ---- */

/* The dead events store_dead_requeue() selects: ?1 kind, ?2 receiver, ?3 key, ?4 reason. */
#define DEAD_MATCH                                                                  \
	"state = 'dead' AND kind = ?1 AND (?2 IS NULL OR receiver = ?2) AND "       \
	"(?3 IS NULL OR key = ?3) AND (?4 IS NULL OR last_error LIKE ?4)"

enum err store_dead_requeue(struct store *st, const char *kind, const char *receiver,
			    const char *key, const char *reason_like, int64_t *n)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int64_t changed = 0;

	if (n)
		*n = 0;
	if (!st || empty(kind))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = run(st, S_BEGIN, SQLITE_OK, "begin", &msg);
	if (rc == ERR_OK)
		rc = sq(st, "UPDATE issues SET dead_reason = NULL WHERE EXISTS (SELECT 1 FROM "
			    "events WHERE " DEAD_MATCH " AND events.receiver = issues.receiver AND "
			    "events.key = issues.key)",
			"clear dead reasons", &msg, NULL, "tttt", kind, receiver, key, reason_like);
	if (rc == ERR_OK)
		rc = sq(st, "UPDATE events SET state = 'pending', done_at_ms = NULL, attempts = 0, "
			    "next_attempt_at_ms = 0, last_error = '" STORE_REQUEUED "' || "
			    "coalesce(last_error, '') WHERE " DEAD_MATCH,
			"requeue dead letters", &msg, NULL, "tttt", kind, receiver, key,
			reason_like);
	if (rc == ERR_OK)
		changed = sqlite3_changes64(st->db);
	if (rc == ERR_OK)
		rc = run(st, S_COMMIT, SQLITE_OK, "commit", &msg);
	if (rc)
		rollback(st);
	pthread_mutex_unlock(&st->db_mu);
	if (rc) {
		log_db("requeue dead letters", &msg);
	} else if (changed > 0) {
		if (n)
			*n = changed;
		store_wake(st);
	}
	buf_release(&msg);
	return rc;
}
