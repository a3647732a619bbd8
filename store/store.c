/*
 * store.c - the store: durable event inbox, (receiver, key) -> issue map,
 * schema migrations by version, and group commit for intake, on either
 * engine of db.h (an sqlite file or PostgreSQL).  This part opens, migrates
 * and closes the database and holds the statements and helpers the other
 * parts share (store_int.h): store_events.c, store_map.c, store_outbox.c,
 * store_digest.c, store_groups.c; the migration lists are in store_schema.c.
 * Its SQL is written once, in what sqlite and PostgreSQL both accept (db.h).
 *
 * One connection serves every call under db_mu.  Intake callers queue their
 * batch under q_mu; one of them, the leader, commits every queued batch in one
 * transaction while the others wait on commit_cond (see store_enqueue()).
 */
#include "store/store.h"
#include "store/store_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <sqlite3.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define N_MIGRATIONS ((int)(sizeof(migrations) / sizeof(migrations[0])))

#define EVENT_COLS                                                                  \
	"e.id, e.kind, e.receiver, e.key, e.status, e.starts_at_ms, e.ends_at_ms, " \
	"e.payload, e.received_at_ms, e.attempts, e.last_error, e.progress"
#define ISSUE_COLS                                                                   \
	"receiver, key, repo, number, state, state_reason, episode_starts_ms, "      \
	"resolved_ends_ms, closed_at_ms, previous_number, created_at_ms, updated_at_ms, " \
	"dead_reason, alertname, title, etag, labels, previous_url"
/* A pending event that is the oldest pending one of its (kind, receiver, key). */
#define HEAD_OF_KEY                                                                 \
	"NOT EXISTS (SELECT 1 FROM events AS o WHERE o.state = 'pending' AND "      \
	"o.kind = e.kind AND o.receiver = e.receiver AND o.key = e.key AND o.id < e.id)"

static const char *const stmt_sql[S_COUNT] = {
	[S_EV_INSERT] = "INSERT INTO events (kind, receiver, key, status, starts_at_ms, "
			"ends_at_ms, payload, received_at_ms, repeat_state) "
			"VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) RETURNING id",
	[S_EV_REPEAT] = STORE_REPEAT_SQL("?1", "?2", "?3", "?4", "?5", "?6", "?7"),
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
	/*
	 * The alert's columns as constants (uncorrelated scalar subqueries), so the
	 * search is events_dead_key's range of that alert: correlated with the row,
	 * as it was, every dead letter scanned all the others (issue 19: 4,000
	 * invalid alerts in one webhook took 3.4 s, 1,000 took 0.29 s).
	 */
	[S_EV_DEAD_SUPERSEDE] = "DELETE FROM events WHERE state = 'dead' AND id != ?1 AND "
				"kind = (SELECT kind FROM events WHERE id = ?1) AND "
				"receiver = (SELECT receiver FROM events WHERE id = ?1) AND "
				"key = (SELECT key FROM events WHERE id = ?1) AND "
				"EXISTS (SELECT 1 FROM events AS n WHERE n.id = ?1 AND "
				"n.status = events.status AND "
				"n.starts_at_ms = events.starts_at_ms AND "
				"n.ends_at_ms = events.ends_at_ms AND "
				"n.last_error IS NOT DISTINCT FROM events.last_error)",
	/* The newest event of a key that repeat detection compares (store_event_latest()). */
	[S_EV_LATEST] = "SELECT " EVENT_COLS ", e.state FROM events AS e WHERE e.kind = ?1 AND "
			"e.receiver = ?2 AND e.key = ?3 AND e.repeat_state IS NOT NULL "
			"ORDER BY e.id DESC LIMIT 1",
	[S_EV_PROGRESS] = "UPDATE events SET progress = ?2 WHERE id = ?1 AND state = 'pending'",
	[S_EV_PRUNE] = "DELETE FROM events WHERE state = 'done' AND done_at_ms < ?1",
	[S_IS_GET] = "SELECT " ISSUE_COLS " FROM issues WHERE receiver = ?1 AND key = ?2",
	[S_IS_PUT] = "INSERT INTO issues (" ISSUE_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
		     "?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18) "
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
		     "etag = excluded.etag, labels = excluded.labels, "
		     "previous_url = excluded.previous_url",
	[S_IS_FORGET] = "DELETE FROM issues WHERE receiver = ?1 AND key = ?2",
	/* After a forget the next notification of the key is no repeat (S_EV_REPEAT). */
	[S_EV_FORGET_STATE] = "UPDATE events SET repeat_state = NULL WHERE kind = 'bridge' AND "
			      "receiver = ?1 AND key = ?2 AND repeat_state IS NOT NULL",
	/* Only the issue's own transitions (kind bridge) mark its row: store_events.c. */
	[S_IS_SET_DEAD] = "UPDATE issues SET dead_reason = ?3 WHERE receiver = ?1 AND key = ?2 "
			  "AND EXISTS (SELECT 1 FROM events WHERE id = ?4 AND kind = 'bridge')",
	[S_IS_PAGE_ALL] = "SELECT " ISSUE_COLS " FROM issues WHERE (receiver, key) > (?1, ?2) "
			  "ORDER BY receiver, key LIMIT ?3",
	[S_IS_PAGE_RCV] = "SELECT " ISSUE_COLS " FROM issues WHERE receiver = ?1 AND key > ?2 "
			  "ORDER BY key LIMIT ?3",
	/* Issues, not rows: the alerts a storm summary folds share one. */
	[S_IS_COUNT_STATE] = "SELECT count(*) FROM (SELECT DISTINCT repo, number FROM issues "
			     "WHERE state = ?1 AND number > 0) AS d",
	[S_NO_INSERT] = "INSERT INTO notices (namespace, pod, uid, kind, expires_ms, notify, owner, "
			"channel, thread_ts, text, created_at_ms, next_attempt_at_ms, line) VALUES (?1, "
			"?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) RETURNING id",
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
	[S_SCAN_FORGET] = "DELETE FROM repo_scans WHERE CAST(?1 AS TEXT) IS NULL OR "
			 "receiver = ?1",
};


int store_empty(const char *s)
{
	return !s || !*s;
}

const char *store_first_empty(const struct store_field *fields, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (store_empty(fields[i].value))
			return fields[i].name;
	}
	return NULL;
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

enum err store_done(enum err rc, const char *op, struct buf *msg)
{
	if (rc == ERR_DB)
		store_log_db(op, msg);
	buf_release(msg);
	return rc;
}

enum err store_db_fail(struct store *st, const char *what, struct buf *errmsg)
{
	buf_setf(errmsg, "store %s: %s: %s", db_name(st->db), what, db_errmsg(st->db));
	return ERR_DB;
}

enum err store_begin(struct store *st, struct buf *errmsg)
{
	if (db_begin(st->db, NULL) != ERR_OK)
		return store_db_fail(st, "begin", errmsg);
	return ERR_OK;
}

enum err store_commit(struct store *st, struct buf *errmsg)
{
	if (db_commit(st->db, NULL) != ERR_OK)
		return store_db_fail(st, "commit", errmsg);
	return ERR_OK;
}

/* Roll back the open transaction, if any.  Caller holds db_mu. */
void store_rollback(struct store *st)
{
	db_rollback(st->db);
}

enum err store_txn_begin(struct store *st, struct buf *errmsg)
{
	pthread_mutex_lock(&st->db_mu);
	return store_begin(st, errmsg);
}

enum err store_txn_end(struct store *st, enum err rc, struct buf *errmsg)
{
	if (rc == ERR_OK)
		rc = store_commit(st, errmsg);
	if (rc)
		store_rollback(st);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

void store_free_str(const char *s)
{
	free((void *)(uintptr_t)s);
}

void store_free_strs(const char *const *strs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		store_free_str(strs[i]);
}

/* A copy of a text column; NULL for SQL NULL. */
char *store_col_str(struct db_stmt *s, int i)
{
	return xstrdup(db_col_text(s, i));
}

int store_state_index(const char *const *names, size_t n, const char *word, int fallback)
{
	for (size_t i = 0; word && i < n; i++) {
		if (!strcmp(names[i], word))
			return (int)i;
	}
	return fallback;
}

const char *store_state_word(const char *const *names, size_t n, int state)
{
	return state >= 0 && (size_t)state < n ? names[state] : "";
}

int store_col_state(struct db_stmt *s, int i, const char *const *names, size_t n, int fallback)
{
	return store_state_index(names, n, db_col_text(s, i), fallback);
}

/* Bind the arguments ap holds as types describes (store_int.h) at ?1, ?2, ... */
static void bind_args(struct db_stmt *s, const char *types, va_list ap)
{
	for (int i = 0; types[i]; i++) {
		if (types[i] == 't')
			db_bind_text(s, i + 1, va_arg(ap, const char *));
		else
			db_bind_int(s, i + 1, va_arg(ap, int64_t));
	}
}

enum err store_step_row(struct store *st, struct db_stmt *s, const char *what,
			struct buf *errmsg)
{
	switch (db_step(s)) {
	case DB_ROW:
		return ERR_OK;
	case DB_DONE:
		return ERR_NOTFOUND;
	default:
		return store_db_fail(st, what, errmsg);
	}
}

/* What run() wants of a statement (store_int.h). */
enum want {
	W_DONE,     /* no rows */
	W_ONE,      /* no rows, one row changed */
	W_ROW,      /* its first row, left current */
	W_ID,       /* its first row's column 0 (RETURNING id) */
};

/* Bind and run s as want says; resets s unless a row is left current. */
static enum err run(struct store *st, struct db_stmt *s, enum want want, int64_t *id,
		    const char *what, struct buf *errmsg, const char *types, va_list ap)
{
	enum err rc;

	bind_args(s, types, ap);
	rc = store_step_row(st, s, what, errmsg);
	if (want == W_ROW && rc == ERR_OK)
		return ERR_OK;
	if (want == W_ID) {
		if (rc == ERR_OK)
			*id = db_col_int(s, 0);
		else if (rc == ERR_NOTFOUND)
			rc = store_db_fail(st, what, errmsg);  /* an INSERT that returned nothing */
	} else if (want != W_ROW) {
		if (rc == ERR_OK) /* rows from a statement run for none: a mistake of ours */
			rc = store_db_fail(st, what, errmsg);
		else if (rc == ERR_NOTFOUND)
			rc = want == W_ONE && db_changes(st->db) != 1 ? ERR_NOTFOUND : ERR_OK;
	}
	db_reset(s);
	return rc;
}

#define RUN_CACHED(want, id_out)                                                    \
	do {                                                                        \
		va_list ap;                                                         \
		enum err rc_;                                                       \
		va_start(ap, types);                                                \
		rc_ = run(st, st->stmt[id], (want), (id_out), what, errmsg, types, ap); \
		va_end(ap);                                                         \
		return rc_;                                                         \
	} while (0)

enum err store_run(struct store *st, enum stmt_id id, const char *what, struct buf *errmsg,
		   const char *types, ...)
{
	RUN_CACHED(W_DONE, NULL);
}

enum err store_run1(struct store *st, enum stmt_id id, const char *what, struct buf *errmsg,
		    const char *types, ...)
{
	RUN_CACHED(W_ONE, NULL);
}

enum err store_row(struct store *st, enum stmt_id id, const char *what, struct buf *errmsg,
		   const char *types, ...)
{
	RUN_CACHED(W_ROW, NULL);
}

enum err store_insert(struct store *st, enum stmt_id id, int64_t *row_id, const char *what,
		      struct buf *errmsg, const char *types, ...)
{
	RUN_CACHED(W_ID, row_id);
}

/* Prepare sql; with rows bind it and hand it out, else run it as want says and free it. */
static enum err sq(struct store *st, const char *sql, enum want want, int64_t *id,
		   const char *what, struct buf *errmsg, struct db_stmt **rows,
		   const char *types, va_list ap)
{
	struct db_stmt *s = NULL;
	enum err rc;

	if (db_prepare(st->db, sql, &s, NULL) != ERR_OK)
		return store_db_fail(st, what, errmsg);
	if (rows) {
		bind_args(s, types, ap);
		*rows = s;
		return ERR_OK;
	}
	rc = run(st, s, want, id, what, errmsg, types, ap);
	db_finalize(s);
	return rc;
}

enum err store_sq(struct store *st, const char *sql, const char *what, struct buf *errmsg,
		  struct db_stmt **rows, const char *types, ...)
{
	va_list ap;
	enum err rc;

	va_start(ap, types);
	rc = sq(st, sql, W_DONE, NULL, what, errmsg, rows, types, ap);
	va_end(ap);
	return rc;
}

enum err store_sq_insert(struct store *st, const char *sql, int64_t *row_id, const char *what,
			 struct buf *errmsg, const char *types, ...)
{
	va_list ap;
	enum err rc;

	va_start(ap, types);
	rc = sq(st, sql, W_ID, row_id, what, errmsg, NULL, types, ap);
	va_end(ap);
	return rc;
}

/*
 * Take db_mu, run one statement (cached id, or sql when not NULL), count
 * the rows it changed into *changes (when not NULL and it ran), let go, log
 * ERR_DB.
 */
static enum err alone(struct store *st, enum stmt_id id, const char *sql, enum want want,
		      const char *what, int64_t *changes, const char *types, va_list ap)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	pthread_mutex_lock(&st->db_mu);
	if (sql)
		rc = sq(st, sql, want, NULL, what, &msg, NULL, types, ap);
	else
		rc = run(st, st->stmt[id], want, NULL, what, &msg, types, ap);
	if (rc == ERR_OK && changes)
		*changes = db_changes(st->db);
	pthread_mutex_unlock(&st->db_mu);
	return store_done(rc, what, &msg);
}

#define ALONE(id, sql, want, changes)                                               \
	do {                                                                        \
		va_list ap;                                                         \
		enum err rc_;                                                       \
		va_start(ap, types);                                                \
		rc_ = alone(st, (id), (sql), (want), what, (changes), types, ap);   \
		va_end(ap);                                                         \
		return rc_;                                                         \
	} while (0)

enum err store_run_alone(struct store *st, enum stmt_id id, const char *what, int64_t *changes,
			 const char *types, ...)
{
	ALONE(id, NULL, W_DONE, changes);
}

enum err store_run1_alone(struct store *st, enum stmt_id id, const char *what,
			  const char *types, ...)
{
	ALONE(id, NULL, W_ONE, NULL);
}

enum err store_sq_alone(struct store *st, const char *sql, const char *what, int64_t *changes,
			const char *types, ...)
{
	ALONE(S_COUNT, sql, W_DONE, changes);
}

/*
 * Take db_mu, read the first row of a statement (cached id, or sql) into
 * out, let go, log ERR_DB.
 */
static enum err row_alone(struct store *st, enum stmt_id id, const char *sql, const char *what,
			  void (*read)(struct db_stmt *s, void *out), void *out,
			  const char *types, va_list ap)
{
	struct buf msg = BUF_INIT;
	struct db_stmt *s = NULL;
	enum err rc;

	pthread_mutex_lock(&st->db_mu);
	if (sql) {
		rc = sq(st, sql, W_ROW, NULL, what, &msg, &s, types, ap);
		if (rc == ERR_OK)
			rc = store_step_row(st, s, what, &msg);
	} else {
		s = st->stmt[id];
		rc = run(st, s, W_ROW, NULL, what, &msg, types, ap);  /* reset unless a row */
	}
	if (rc == ERR_OK)
		read(s, out);
	if (sql)
		db_finalize(s);
	else if (rc == ERR_OK)
		db_reset(s);
	pthread_mutex_unlock(&st->db_mu);
	return store_done(rc, what, &msg);
}

#define ROW_ALONE(id, sql)                                                          \
	do {                                                                        \
		va_list ap;                                                         \
		enum err rc_;                                                       \
		va_start(ap, types);                                                \
		rc_ = row_alone(st, (id), (sql), what, read, out, types, ap);       \
		va_end(ap);                                                         \
		return rc_;                                                         \
	} while (0)

enum err store_row_alone(struct store *st, enum stmt_id id, const char *what,
			 void (*read)(struct db_stmt *s, void *out), void *out,
			 const char *types, ...)
{
	ROW_ALONE(id, NULL);
}

enum err store_sq_row_alone(struct store *st, const char *sql, const char *what,
			    void (*read)(struct db_stmt *s, void *out), void *out,
			    const char *types, ...)
{
	ROW_ALONE(S_COUNT, sql);
}

int64_t store_sq_count(struct store *st, const char *sql, const char *what, const char *types,
		       ...)
{
	struct buf msg = BUF_INIT;
	struct db_stmt *s = NULL;
	int64_t n = -1;
	va_list ap;

	va_start(ap, types);
	pthread_mutex_lock(&st->db_mu);
	if (sq(st, sql, W_ROW, NULL, what, &msg, &s, types, ap) == ERR_OK) {
		if (store_step_row(st, s, what, &msg) == ERR_OK)
			n = db_col_int(s, 0);
		db_finalize(s);
	}
	pthread_mutex_unlock(&st->db_mu);
	va_end(ap);
	if (n < 0)
		store_log_db(what, &msg);
	buf_release(&msg);
	return n;
}

enum err store_read_rows(struct store *st, struct db_stmt *s, const char *what,
			 struct store_rows *list, struct buf *errmsg)
{
	enum err rc = ERR_OK;

	while ((!list->max || list->n < list->max) &&
	       (rc = store_step_row(st, s, what, errmsg)) == ERR_OK) {
		void *row;

		if (list->n == list->cap) {
			list->cap = list->cap ? 2 * list->cap : 16;
			list->v = xreallocarray(list->v, list->cap, list->size);
		}
		row = (char *)list->v + list->n++ * list->size;
		memset(row, 0, list->size);
		list->read(s, row);
	}
	return rc == ERR_NOTFOUND ? ERR_OK : rc;
}

enum err store_sq_rows(struct store *st, const char *sql, const char *what,
		       struct store_rows *list, struct buf *errmsg, const char *types, ...)
{
	struct db_stmt *s = NULL;
	va_list ap;
	enum err rc;

	va_start(ap, types);
	pthread_mutex_lock(&st->db_mu);
	rc = sq(st, sql, W_ROW, NULL, what, errmsg, &s, types, ap);
	if (rc == ERR_OK)
		rc = store_read_rows(st, s, what, list, errmsg);
	db_finalize(s);
	pthread_mutex_unlock(&st->db_mu);
	va_end(ap);
	return rc;
}

/* ---- open, migrate, close ---- */

/*
 * Bring the schema to store_schema_version(), one transaction per step of
 * the engine's list (store_schema.c).  db_begin() before reading the version,
 * so that two processes opening the same new database cannot both apply a
 * step.
 */
static enum err migrate(struct store *st, struct buf *errmsg)
{
	int n_steps;
	const char *const *steps = store_migrations(db_engine(st->db), &n_steps);
	enum err rc = ERR_OK;
	int version = 0;

	for (;;) {
		rc = db_begin(st->db, errmsg);
		if (rc == ERR_OK)
			rc = db_schema_version(st->db, &version, errmsg);
		if (rc)
			break;
		if (version > n_steps) {
			buf_setf(errmsg,
				 "store %s: schema version %d is newer than this build's %d: "
				 "run a newer alertbridge or restore an older database",
				 db_name(st->db), version, n_steps);
			rc = ERR_DB;
			break;
		}
		if (version == n_steps) {
			rc = db_commit(st->db, errmsg);
			break;
		}
		if (*steps[version])
			rc = db_exec(st->db, steps[version], errmsg);
		if (rc == ERR_OK)
			rc = db_set_schema_version(st->db, version + 1, errmsg);
		if (rc == ERR_OK)
			rc = db_commit(st->db, errmsg);
		if (rc)
			break;
		struct log_line *l = log_begin(LOG_INFO, "store migrated");
		log_str(l, "path", db_name(st->db));
		log_int(l, "schema_version", version + 1);
		log_end(l);
	}
	if (rc)
		db_rollback(st->db);
	return rc;
}

static enum err prepare_all(struct store *st, struct buf *errmsg)
{
	for (int i = 0; i < S_COUNT; i++) {
		if (db_prepare(st->db, stmt_sql[i], &st->stmt[i], NULL) != ERR_OK) {
			buf_setf(errmsg, "store %s: prepare statement %d: %s", db_name(st->db), i,
				 db_errmsg(st->db));
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
	pthread_cond_init(&st->idle_cond, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&st->commit_cond, &attr);  /* the intake's bounded waits */
	pthread_cond_init(&st->event_cond, &attr);
	pthread_condattr_destroy(&attr);
}

/* Free st's statements, connection and memory; no thread may be using it. */
static void destroy(struct store *st)
{
	for (int i = 0; i < S_COUNT; i++)
		db_finalize(st->stmt[i]);
	db_close(st->db);
	pthread_cond_destroy(&st->event_cond);
	pthread_cond_destroy(&st->idle_cond);
	pthread_cond_destroy(&st->commit_cond);
	pthread_mutex_destroy(&st->q_mu);
	pthread_mutex_destroy(&st->db_mu);
	free(st);
}

int store_schema_version(void)
{
	int n;

	(void)store_migrations(DB_SQLITE, &n);
	return n;
}

const char *store_stmt_sql(enum stmt_id id)
{
	return id >= 0 && id < S_COUNT ? stmt_sql[id] : NULL;
}

/*
 * The read-only open's check: the schema must be this build's, as nothing
 * may migrate it (a newer or older service may be using the file).
 */
static enum err check_version(struct store *st, struct buf *errmsg)
{
	int version = 0, want = store_schema_version();
	struct db_stmt *s = NULL;
	enum err rc;

	if (db_engine(st->db) == DB_SQLITE) {
		rc = db_schema_version(st->db, &version, errmsg);
		if (rc != ERR_OK)
			return rc;
	} else {
		/* db_schema_version() would create the table: a write, which this session refuses. */
		rc = store_sq(st, "SELECT version FROM schema_version", "read the schema version",
			      errmsg, &s, "");
		if (rc == ERR_OK)
			rc = store_step_row(st, s, "read the schema version", errmsg);
		if (rc == ERR_OK)
			version = (int)db_col_int(s, 0);
		db_finalize(s);
		if (rc == ERR_NOTFOUND)
			version = 0;
		else if (rc != ERR_OK)
			return rc;
	}
	if (version > want)
		buf_setf(errmsg, "store %s: schema version %d is newer than this build's %d: "
			 "run a newer alertbridge", db_name(st->db), version, want);
	else if (version < want)
		buf_setf(errmsg, "store %s: schema version %d is older than this build's %d: "
			 "read it with the alertbridge that serves it, or run serve of this "
			 "version to migrate it", db_name(st->db), version, want);
	return version == want ? ERR_OK : ERR_DB;
}

static enum err open_store(const char *target, const char *password_file, int read_only,
			   struct store **out, struct buf *errmsg)
{
	struct store *st = NULL;
	struct buf msg = BUF_INIT;
	enum err rc;

	*out = NULL;
	if (store_empty(target)) {
		buf_setf(errmsg, "store: database path is empty");
		return ERR_INVALID;
	}
	st = xcalloc(1, sizeof(*st));
	st->tail = &st->head;
	st->timeout_ms = DB_STATEMENT_TIMEOUT_MS;
	init_sync(st);
	rc = read_only ? db_open_read_only(target, password_file, &st->db, &msg)
		       : db_open(target, password_file, &st->db, &msg);
	if (rc) {
		buf_setf(errmsg, "store %s", buf_str(&msg));
		buf_release(&msg);
		destroy(st);
		return rc == ERR_INVALID ? ERR_INVALID : ERR_DB;
	}
	rc = read_only ? check_version(st, &msg) : migrate(st, &msg);
	if (rc == ERR_OK)
		rc = prepare_all(st, errmsg);
	else
		buf_setf(errmsg, "%s%s", strncmp(buf_str(&msg), "store ", 6) ? "store " : "",
			 buf_str(&msg));
	buf_release(&msg);
	if (rc) {
		destroy(st);
		return ERR_DB;
	}
	*out = st;
	return ERR_OK;
}

enum err store_open_target(const char *target, const char *password_file, struct store **out,
			   struct buf *errmsg)
{
	return open_store(target, password_file, 0, out, errmsg);
}

enum err store_open_read_only(const char *target, const char *password_file, struct store **out,
			      struct buf *errmsg)
{
	return open_store(target, password_file, 1, out, errmsg);
}

enum err store_open(const char *path, struct store **out, struct buf *errmsg)
{
	return store_open_target(path, NULL, out, errmsg);
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

/* ---- stalls, lost files, readiness (issue 19) ---- */

enum err store_set_timeout(struct store *st, int64_t timeout_ms, struct buf *errmsg)
{
	enum err rc;

	if (!st || timeout_ms <= 0) {
		buf_setf(errmsg, "store: statement timeout %lld ms: must be positive",
			 (long long)timeout_ms);
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	rc = db_set_timeout(st->db, timeout_ms, errmsg);
	pthread_mutex_unlock(&st->db_mu);
	if (rc == ERR_OK)
		__atomic_store_n(&st->timeout_ms, timeout_ms, __ATOMIC_RELEASE);
	return rc;
}

/* STORE_STALL_MS, or the statement timeout when that is shorter. */
static int64_t stall_ms(struct store *st)
{
	int64_t t = __atomic_load_n(&st->timeout_ms, __ATOMIC_ACQUIRE);

	return t < STORE_STALL_MS ? t : STORE_STALL_MS;
}

enum err store_check_stall(struct store *st, struct buf *errmsg)
{
	int64_t busy = db_busy_ms(st->db);

	if (busy < stall_ms(st))
		return ERR_OK;
	buf_setf(errmsg, "store %s: the database is stalled: a statement has been running for "
		 "%lld ms", db_name(st->db), (long long)busy);
	return ERR_DB;
}

int64_t store_intake_deadline(struct store *st)
{
	return clock_mono_us() + __atomic_load_n(&st->timeout_ms, __ATOMIC_ACQUIRE) * 1000;
}

enum err store_lock_intake(struct store *st, int64_t deadline_us, struct buf *errmsg)
{
	int64_t start = clock_mono_us();

	for (;;) {
		int64_t now = clock_mono_us(), until = now + STORE_SLICE_US;
		struct timespec ts;
		enum err rc;

		if (until > deadline_us)
			until = deadline_us;
		ts.tv_sec = (time_t)(until / 1000000);
		ts.tv_nsec = (long)(until % 1000000) * 1000;
		if (pthread_mutex_clocklock(&st->db_mu, CLOCK_MONOTONIC, &ts) == 0)
			return ERR_OK;
		rc = store_check_stall(st, errmsg);
		if (rc != ERR_OK)
			return rc;
		if (clock_mono_us() >= deadline_us) {
			buf_setf(errmsg, "store %s: waited %lld ms for the database", db_name(st->db),
				 (long long)((clock_mono_us() - start) / 1000));
			return ERR_DB;
		}
	}
}

enum err store_check_lost(struct store *st, int force, struct buf *errmsg)
{
	int64_t now = clock_mono_us();
	struct buf why = BUF_INIT;
	struct log_line *l;

	if (!__atomic_load_n(&st->lost, __ATOMIC_ACQUIRE)) {
		if (!force && now - __atomic_load_n(&st->lost_checked_us, __ATOMIC_ACQUIRE) <
				      STORE_LOST_CHECK_MS * 1000)
			return ERR_OK;
		__atomic_store_n(&st->lost_checked_us, now, __ATOMIC_RELEASE);
		if (!db_file_lost(st->db, &why))
			return ERR_OK;
		/* The first thread to see it says it, once. */
		if (!__atomic_exchange_n(&st->lost, 1, __ATOMIC_ACQ_REL)) {
			l = log_begin(LOG_ERROR, "the database file was deleted or replaced: "
				      "webhooks are refused until alertbridge is restarted");
			log_err(l, ERR_DB);
			log_str(l, "path", db_name(st->db));
			log_str(l, "detail", buf_str(&why));
			log_end(l);
		}
		buf_release(&why);
	}
	buf_setf(errmsg, "store %s: the database file was deleted or replaced "
		 "(what is written now would be lost)", db_name(st->db));
	return ERR_DB;
}

void store_note_intake(struct store *st, enum err rc)
{
	__atomic_store_n(&st->intake_failed_us, rc == ERR_DB ? clock_mono_us() : 0,
			 __ATOMIC_RELEASE);
}

int store_ready(struct store *st, struct buf *why)
{
	struct buf msg = BUF_INIT;
	int64_t failed;
	int ready = 0;

	if (!st)
		return 1;
	failed = __atomic_load_n(&st->intake_failed_us, __ATOMIC_ACQUIRE);
	if (store_check_lost(st, 1, &msg) != ERR_OK)
		buf_setf(why, "the database file was deleted or replaced");
	else if (store_check_stall(st, &msg) != ERR_OK)
		buf_setf(why, "the database is stalled");
	else if (failed && clock_mono_us() - failed < STORE_FAILED_MS * 1000)
		buf_setf(why, "the database failed an intake");
	else
		ready = 1;
	buf_release(&msg);
	return ready;
}
