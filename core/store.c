/*
 * store.c - the sqlite store: durable event inbox, (receiver, key) -> issue
 * map, schema migrations by PRAGMA user_version, and group commit for intake.
 * This part opens, migrates and closes the file and holds the helpers the
 * other parts share (store_int.h): store_events.c, store_map.c,
 * store_outbox.c, store_groups.c.
 *
 * One connection serves every call under db_mu.  Intake callers queue their
 * batch under q_mu; one of them, the leader, commits every queued batch in one
 * transaction while the others wait on commit_cond (see store_enqueue()).
 */
#include "store_int.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sqlite3.h>

#include "log.h"
#include "xalloc.h"
#include "banned.h"

#define BUSY_TIMEOUT_MS 5000

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
	/*
	 * 5: what the bridge remembers of an issue_per: group issue (bridge/group.h):
	 * its members' states and the pending body update.
	 */
	"CREATE TABLE group_states ("
	"  receiver TEXT NOT NULL,"
	"  key TEXT NOT NULL,"
	"  members TEXT NOT NULL,"
	"  payload TEXT NOT NULL,"
	"  dirty INTEGER NOT NULL DEFAULT 0,"
	"  synced_at_ms INTEGER NOT NULL DEFAULT 0,"
	"  next_sync_ms INTEGER NOT NULL DEFAULT 0,"
	"  PRIMARY KEY (receiver, key)"
	") WITHOUT ROWID;"
	"CREATE INDEX group_states_dirty ON group_states (next_sync_ms) WHERE dirty = 1;",
	/*
	 * 6: dead letters by alert, so a new dead letter finds the identical
	 * older ones it replaces (S_EV_DEAD_SUPERSEDE).
	 */
	"CREATE INDEX events_dead_key ON events (kind, receiver, key) WHERE state = 'dead';",
	/*
	 * 7: repeats (store_enqueue()): what else than status, startsAt and
	 * endsAt an event's state is (NULL: not compared; cleared by map forget),
	 * and the newest such event of a key found by index.
	 */
	"ALTER TABLE events ADD COLUMN repeat_state TEXT;"
	"CREATE INDEX events_repeat ON events (kind, receiver, key, id)"
	"  WHERE repeat_state IS NOT NULL;",
	/*
	 * 8: digests (store_digest_add()): one Slack message for several
	 * notices of one owner, or several replies in one thread.  A member
	 * notice names its digest (digest_id) and carries its line of the
	 * digest's table (line, JSON); the digest row is the message.
	 */
	"CREATE TABLE digests ("
	"  id INTEGER PRIMARY KEY,"
	"  kind TEXT NOT NULL,"
	"  channel TEXT NOT NULL,"
	"  thread_ts TEXT,"
	"  part INTEGER NOT NULL,"
	"  parts INTEGER NOT NULL,"
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
	"CREATE INDEX digests_pending ON digests (next_attempt_at_ms, id) WHERE state = 'pending';"
	"ALTER TABLE notices ADD COLUMN digest_id INTEGER;"
	"ALTER TABLE notices ADD COLUMN line TEXT;"
	"CREATE INDEX notices_digest ON notices (digest_id) WHERE digest_id IS NOT NULL;",
	/*
	 * 9: what the on-call page shows of an issue without asking GitHub: the
	 * alert's name and the issue's title as created (NULL for rows made
	 * before, or rebuilt from GitHub).
	 */
	"ALTER TABLE issues ADD COLUMN alertname TEXT;"
	"ALTER TABLE issues ADD COLUMN title TEXT;",
	/*
	 * 10: conditional reads (bridge.c refresh): the ETag GitHub gave the
	 * issue's last answer, and its labels then (a JSON array of names), so
	 * a 304 is answered from the row.  NULL: read unconditionally.
	 */
	"ALTER TABLE issues ADD COLUMN etag TEXT;"
	"ALTER TABLE issues ADD COLUMN labels TEXT;",
};

#define N_MIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

#define EVENT_COLS                                                                  \
	"e.id, e.kind, e.receiver, e.key, e.status, e.starts_at_ms, e.ends_at_ms, " \
	"e.payload, e.received_at_ms, e.attempts, e.last_error, e.progress"
#define ISSUE_COLS                                                                   \
	"receiver, key, repo, number, state, state_reason, episode_starts_ms, "      \
	"resolved_ends_ms, closed_at_ms, previous_number, created_at_ms, updated_at_ms, " \
	"dead_reason, alertname, title, etag, labels"
/* A pending event that is the oldest pending one of its (kind, receiver, key). */
#define HEAD_OF_KEY                                                                 \
	"NOT EXISTS (SELECT 1 FROM events AS o WHERE o.state = 'pending' AND "      \
	"o.kind = e.kind AND o.receiver = e.receiver AND o.key = e.key AND o.id < e.id)"

static const char *const stmt_sql[S_COUNT] = {
	[S_BEGIN] = "BEGIN IMMEDIATE",
	[S_COMMIT] = "COMMIT",
	[S_ROLLBACK] = "ROLLBACK",
	[S_EV_INSERT] = "INSERT INTO events (kind, receiver, key, status, starts_at_ms, "
			"ends_at_ms, payload, received_at_ms, repeat_state) "
			"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
	/*
	 * 1 when the newest comparable event of (kind, receiver, key) has the
	 * state ?4..?7 and is not a dead letter, and the key has no dry-run map
	 * row (number 0: once live, its next notification makes the issue): the
	 * event would be a repeat.
	 */
	[S_EV_REPEAT] = "SELECT status = ?4 AND starts_at_ms = ?5 AND ends_at_ms = ?6 AND "
			"repeat_state = ?7 AND state <> 'dead' AND NOT (kind = 'bridge' AND "
			"EXISTS (SELECT 1 FROM issues AS i WHERE i.receiver = ?2 AND i.key = ?3 "
			"AND i.number = 0)) FROM events WHERE kind = ?1 AND "
			"receiver = ?2 AND key = ?3 AND repeat_state IS NOT NULL "
			"ORDER BY id DESC LIMIT 1",
	[S_EV_NEXT] = "SELECT " EVENT_COLS " FROM events AS e WHERE e.kind = ?1 AND "
		      "e.state = 'pending' AND e.next_attempt_at_ms <= ?2 AND " HEAD_OF_KEY
		      " ORDER BY e.id LIMIT 1",
	[S_EV_DUE_KIND] = "SELECT min(e.next_attempt_at_ms) FROM events AS e WHERE e.kind = ?1 "
			  "AND e.state = 'pending' AND " HEAD_OF_KEY,
	[S_EV_DUE_ANY] = "SELECT min(e.next_attempt_at_ms) FROM events AS e WHERE "
			 "e.state = 'pending' AND " HEAD_OF_KEY,
	[S_EV_PENDING] = "SELECT count(*) FROM events WHERE kind = ?1 AND state = 'pending'",
	[S_EV_DEAD_COUNT] = "SELECT count(*) FROM events WHERE state = 'dead'",
	[S_EV_OLDEST_PENDING] = "SELECT min(received_at_ms) FROM events "
				"WHERE kind = ?1 AND state = 'pending'",
	[S_EV_STATE] = "SELECT state, receiver, key FROM events WHERE id = ?1",
	[S_EV_DONE] = "UPDATE events SET state = 'done', done_at_ms = ?2 "
		      "WHERE id = ?1 AND state = 'pending'",
	[S_EV_RETRY] = "UPDATE events SET attempts = attempts + 1, next_attempt_at_ms = ?2, "
		       "last_error = ?3 WHERE id = ?1 AND state = 'pending'",
	[S_EV_DEAD] = "UPDATE events SET state = 'dead', done_at_ms = ?2, last_error = ?3 "
		      "WHERE id = ?1 AND state = 'pending'",
	/*
	 * The dead letters event ?1 (just dead-lettered) repeats: same queue,
	 * alert, state (status, startsAt, endsAt) and reason.  Alertmanager
	 * re-sends a notification every repeat_interval; the newest copy stays.
	 */
	[S_EV_DEAD_SUPERSEDE] = "DELETE FROM events WHERE state = 'dead' AND id != ?1 AND "
				"EXISTS (SELECT 1 FROM events AS n WHERE n.id = ?1 AND "
				"n.kind = events.kind AND n.receiver = events.receiver AND "
				"n.key = events.key AND n.status = events.status AND "
				"n.starts_at_ms = events.starts_at_ms AND "
				"n.ends_at_ms = events.ends_at_ms AND "
				"n.last_error IS events.last_error)",
	/* The newest event of a key that repeat detection compares (store_event_latest()). */
	[S_EV_LATEST] = "SELECT " EVENT_COLS ", e.state FROM events AS e WHERE e.kind = ?1 AND "
			"e.receiver = ?2 AND e.key = ?3 AND e.repeat_state IS NOT NULL "
			"ORDER BY e.id DESC LIMIT 1",
	[S_EV_PROGRESS] = "UPDATE events SET progress = ?2 WHERE id = ?1 AND state = 'pending'",
	[S_EV_PRUNE] = "DELETE FROM events WHERE state = 'done' AND done_at_ms < ?1",
	[S_IS_GET] = "SELECT " ISSUE_COLS " FROM issues WHERE receiver = ?1 AND key = ?2",
	[S_IS_PUT] = "INSERT INTO issues (" ISSUE_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
		     "?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17) "
		     "ON CONFLICT (receiver, key) DO UPDATE SET "
		     "repo = excluded.repo, number = excluded.number, state = excluded.state, "
		     "state_reason = excluded.state_reason, "
		     "episode_starts_ms = excluded.episode_starts_ms, "
		     "resolved_ends_ms = excluded.resolved_ends_ms, "
		     "closed_at_ms = excluded.closed_at_ms, "
		     "previous_number = excluded.previous_number, "
		     "created_at_ms = excluded.created_at_ms, "
		     "updated_at_ms = excluded.updated_at_ms, dead_reason = excluded.dead_reason, "
		     /* A row written without them (a rebuild, a fold) keeps what is known. */
		     "alertname = coalesce(excluded.alertname, issues.alertname), "
		     "title = coalesce(excluded.title, issues.title), "
		     "etag = excluded.etag, labels = excluded.labels",
	[S_IS_FORGET] = "DELETE FROM issues WHERE receiver = ?1 AND key = ?2",
	/* After a forget the next notification of the key is no repeat (S_EV_REPEAT). */
	[S_EV_FORGET_STATE] = "UPDATE events SET repeat_state = NULL WHERE kind = 'bridge' AND "
			      "receiver = ?1 AND key = ?2 AND repeat_state IS NOT NULL",
	[S_IS_SET_DEAD] = "UPDATE issues SET dead_reason = ?3 WHERE receiver = ?1 AND key = ?2",
	[S_IS_PAGE_ALL] = "SELECT " ISSUE_COLS " FROM issues WHERE (receiver, key) > (?1, ?2) "
			  "ORDER BY receiver, key LIMIT ?3",
	[S_IS_PAGE_RCV] = "SELECT " ISSUE_COLS " FROM issues WHERE receiver = ?1 AND key > ?2 "
			  "ORDER BY key LIMIT ?3",
	/* Issues, not rows: the alerts a storm summary folds share one. */
	[S_IS_COUNT_STATE] = "SELECT count(*) FROM (SELECT DISTINCT repo, number FROM issues "
			     "WHERE state = ?1 AND number > 0)",
	[S_NO_INSERT] = "INSERT INTO notices (namespace, pod, uid, kind, expires_ms, notify, owner, "
			"channel, thread_ts, text, created_at_ms, next_attempt_at_ms, line) VALUES (?1, "
			"?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
	/* A digest's members go out with it (store_digest_next()). */
	[S_NO_NEXT] = "SELECT " NOTICE_COLS " FROM notices WHERE state = 'pending' AND "
		      "next_attempt_at_ms <= ?1 AND digest_id IS NULL ORDER BY id LIMIT 1",
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
	[S_SCAN_FORGET] = "DELETE FROM repo_scans WHERE ?1 IS NULL OR receiver = ?1",
};

int store_empty(const char *s)
{
	return !s || !*s;
}

/* Log an ERR_DB detail for the functions that have no errmsg to return it in. */
void store_log_db(const char *op, const struct buf *msg)
{
	struct log_line *l = log_begin(LOG_ERROR, "store failed");

	log_err(l, ERR_DB);
	log_str(l, "op", op);
	log_str(l, "error", buf_str(msg));
	log_end(l);
}

void store_bind_text(sqlite3_stmt *s, int idx, const char *v, int *brc)
{
	int rc = v ? sqlite3_bind_text(s, idx, v, -1, SQLITE_STATIC) : sqlite3_bind_null(s, idx);

	if (rc != SQLITE_OK && *brc == SQLITE_OK)
		*brc = rc;
}

void store_bind_int(sqlite3_stmt *s, int idx, int64_t v, int *brc)
{
	int rc = sqlite3_bind_int64(s, idx, v);

	if (rc != SQLITE_OK && *brc == SQLITE_OK)
		*brc = rc;
}

/* Reset s for its next use and drop bindings that point into callers' memory. */
void store_done_with(sqlite3_stmt *s)
{
	sqlite3_reset(s);
	sqlite3_clear_bindings(s);
}

enum err store_db_fail(struct store *st, const char *what, struct buf *errmsg)
{
	buf_setf(errmsg, "store %s: %s: %s", st->path, what, sqlite3_errmsg(st->db));
	return ERR_DB;
}

/*
 * Step a statement that returns no rows and reset it.  brc is the result of
 * its bindings.  Caller holds db_mu.
 */
enum err store_run(struct store *st, enum stmt_id id, int brc, const char *what,
		   struct buf *errmsg)
{
	sqlite3_stmt *s = st->stmt[id];
	enum err rc = ERR_OK;

	if (brc != SQLITE_OK) {
		buf_setf(errmsg, "store %s: %s: bind: %s", st->path, what, sqlite3_errstr(brc));
		rc = ERR_DB;
	} else if (sqlite3_step(s) != SQLITE_DONE) {
		rc = store_db_fail(st, what, errmsg);
	}
	store_done_with(s);
	return rc;
}

/* Roll back the open transaction, if any.  Caller holds db_mu. */
void store_rollback(struct store *st)
{
	if (!sqlite3_get_autocommit(st->db)) {
		sqlite3_step(st->stmt[S_ROLLBACK]);
		sqlite3_reset(st->stmt[S_ROLLBACK]);
	}
}

/* A copy of a text column; NULL for SQL NULL. */
char *store_col_str(sqlite3_stmt *s, int i)
{
	return xstrdup((const char *)sqlite3_column_text(s, i));
}

/* ---- open, migrate, close ---- */

/* Run sql (one or more statements, no rows wanted) outside the statement cache. */
enum err store_exec(sqlite3 *db, const char *path, const char *sql, struct buf *errmsg)
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
		rc = store_exec(st->db, st->path, "BEGIN IMMEDIATE", errmsg);
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
			rc = store_exec(st->db, st->path, "COMMIT", errmsg);
			break;
		}
		snprintf(set, sizeof(set), "PRAGMA user_version = %d", version + 1);
		rc = store_exec(st->db, st->path, migrations[version], errmsg);
		if (rc == ERR_OK)
			rc = store_exec(st->db, st->path, set, errmsg);
		if (rc == ERR_OK)
			rc = store_exec(st->db, st->path, "COMMIT", errmsg);
		if (rc)
			break;
		struct log_line *l = log_begin(LOG_INFO, "store migrated");
		log_str(l, "path", st->path);
		log_int(l, "schema_version", version + 1);
		log_end(l);
	}
	if (rc && !sqlite3_get_autocommit(st->db))
		(void)store_exec(st->db, st->path, "ROLLBACK", NULL);
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
	rc = store_exec(st->db, st->path, "PRAGMA auto_vacuum = INCREMENTAL", errmsg);
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
	rc = store_exec(st->db, st->path, "PRAGMA synchronous = FULL; PRAGMA foreign_keys = ON",
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
	rc = store_exec(st->db, st->path, "PRAGMA auto_vacuum = INCREMENTAL; VACUUM", errmsg);
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
	if (store_empty(path)) {
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

/*
 * Prepare sql and bind the arguments types describes ('t' const char *, 'i'
 * int64_t).  With rows NULL, step it to the end and finalize it; else hand
 * the statement to the caller, who steps and finalizes it.  Caller holds db_mu.
 */
enum err store_sq(struct store *st, const char *sql, const char *what, struct buf *errmsg,
		  sqlite3_stmt **rows, const char *types, ...)
{
	sqlite3_stmt *s = NULL;
	enum err rc = ERR_OK;
	int brc = SQLITE_OK;
	va_list ap;

	if (sqlite3_prepare_v2(st->db, sql, -1, &s, NULL) != SQLITE_OK)
		return store_db_fail(st, what, errmsg);
	va_start(ap, types);
	for (int i = 0; types[i]; i++) {
		if (types[i] == 't')
			store_bind_text(s, i + 1, va_arg(ap, const char *), &brc);
		else
			store_bind_int(s, i + 1, va_arg(ap, int64_t), &brc);
	}
	va_end(ap);
	if (brc != SQLITE_OK) {
		buf_setf(errmsg, "store %s: %s: bind: %s", st->path, what, sqlite3_errstr(brc));
		rc = ERR_DB;
	} else if (rows) {
		*rows = s;
		return ERR_OK;
	} else if (sqlite3_step(s) != SQLITE_DONE) {
		rc = store_db_fail(st, what, errmsg);
	}
	sqlite3_finalize(s);
	return rc;
}
