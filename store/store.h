/*
 * store.h - alertbridge's store: opening it, the map row every part shares,
 * and readiness.  The store is the durable state of the service: the event
 * queue at its centre (store_events.h) and its dead letters, the map from
 * (receiver, key) to GitHub issue (store_map.h), the janitor's Slack outbox
 * (store_outbox.h, store_digest.h), storm summaries and group states
 * (store_groups.h), silences (store_silences.h), `store copy`
 * (store_copy.h) and the worker lock (store_lock.h); each caller includes
 * the parts it uses.
 *
 * The only module that speaks SQL or sees an engine's handle (db.h, over
 * sqlite and PostgreSQL).  The sqlite database is opened in WAL mode with
 * synchronous=FULL and a busy_timeout; the schema is versioned and migrated
 * forward on open (store_schema.c), and sqlite is kept in
 * auto_vacuum=INCREMENTAL mode (an older file is switched by one VACUUM).
 * All functions are thread-safe.  Times are milliseconds since the Unix
 * epoch, UTC.
 *
 * Concurrency: one connection, used under a mutex by every call; the
 * enqueue leader holds it only for its BEGIN IMMEDIATE..COMMIT.  Functions
 * without an errmsg parameter log the engine's detail of an ERR_DB
 * themselves (level error), since they have no other way to return it.
 */
#ifndef AB_STORE_H
#define AB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct store;

/*
 * A map row's issue as GitHub last showed it (state "open" or "closed",
 * https://docs.github.com/en/rest/issues/issues#get-an-issue): the words
 * the database keeps (store_issue_state_str()).  A zeroed row is open.
 */
enum store_issue_state {
	STORE_ISSUE_OPEN,
	STORE_ISSUE_CLOSED,
};

/* "open" or "closed" (static); "" for a value not of the enum. */
const char *store_issue_state_str(enum store_issue_state state);
/*
 * GitHub's word for an issue's state into *out: ERR_OK for "open" or
 * "closed", ERR_INVALID (*out untouched) for NULL or any other word.
 */
enum err store_issue_state_parse(const char *word, enum store_issue_state *out) WARN_UNUSED;

/*
 * The map row: what alertbridge knows of the issue for (receiver, key).  A
 * row the store fills owns every string (store_issue_release()).  Given to
 * the store, the row is the caller's and copied; receiver and key, which
 * name the row and which callers take from the event they apply, are const
 * (borrowed or owned: the store never writes through them).
 */
struct store_issue {
	const char *receiver;
	const char *key;
	char *repo;                /* "owner/name" where the issue lives now */
	int64_t number;            /* GitHub issue number; 0 in dry-run */
	enum store_issue_state state;
	char *state_reason;        /* GitHub's: "completed", "not_planned", "reopened" or NULL */
	int64_t episode_starts_ms; /* startsAt of the newest episode applied */
	int64_t resolved_ends_ms;  /* endsAt of the newest resolve applied; 0 if none */
	int64_t closed_at_ms;      /* when it was closed (by anyone); 0 while open */
	int64_t previous_number;   /* the issue this one superseded, 0 if none */
	int64_t created_at_ms;
	int64_t updated_at_ms;
	char *dead_reason;         /* set when an event for it was dead-lettered */
	/*
	 * What the on-call page shows (schema version 8): the alert's alertname
	 * label and the issue's title as the bridge created it.  NULL when not
	 * known (rows from before, rows rebuilt from GitHub, storm members);
	 * store_issue_put() and store_event_done() keep the stored value when
	 * given NULL.
	 */
	char *alertname;
	char *title;
	char *etag;                /* ETag of GitHub's last answer with the issue, or NULL */
	char *labels;              /* its labels then: a JSON array of names, or NULL */
	/*
	 * The link of previous_number as GitHub gave it (its html_url; schema
	 * version 12): it may live in another repository (a reroute).  NULL:
	 * not known (rows from before, rebuilt rows): built from repo.
	 */
	char *previous_url;
};

/*
 * Open and migrate the store at target: an sqlite file path (created if
 * needed; ":memory:" is accepted for tests) or a PostgreSQL URI
 * (postgres://user@host:5432/alertbridge?sslmode=verify-full, db.h).
 * password_file (NULL, or a file whose first line is the password) is for
 * PostgreSQL only; without it libpq's PGPASSWORD / PGPASSFILE apply.  Each
 * migration step runs in its own write transaction and sets the schema
 * version (sqlite: PRAGMA user_version, https://sqlite.org/pragma.html;
 * PostgreSQL: table schema_version), so replicas starting together migrate
 * once.  On error *out is NULL and errmsg says why (with the path or the URI
 * without its password, and the engine's message).
 * Errors: ERR_INVALID (target NULL or empty, a malformed URI, a build
 * without libpq given a URI), ERR_DB (cannot open or reach, not a database,
 * schema newer than this build's store_schema_version()).
 */
enum err store_open_target(const char *target, const char *password_file, struct store **out,
			   struct buf *errmsg) WARN_UNUSED;
/*
 * Open the store at target for reading only (`map list`, `map show`):
 * db_open_read_only(), no migration.  A schema other than this build's
 * store_schema_version() is refused, ERR_DB: newer ("run a newer
 * alertbridge"), or older (a running older service's file, which this build
 * must not migrate behind its back: "run serve of this version to migrate
 * it").  Errors as store_open_target(); a missing sqlite file is ERR_DB.
 */
enum err store_open_read_only(const char *target, const char *password_file, struct store **out,
			      struct buf *errmsg) WARN_UNUSED;
/* store_open_target(path, NULL, out, errmsg): for sqlite callers. */
enum err store_open(const char *path, struct store **out, struct buf *errmsg) WARN_UNUSED;
/*
 * Close; st may be NULL.  Wakes any store_wait() caller and waits for them to
 * return.  No other call on st may be in progress or start after it.
 */
void store_close(struct store *st);
/* The schema version this build migrates to (the same on both engines). */
int store_schema_version(void);

/*
 * Stalls and lost files (issue 19).  A statement that has been running this
 * long, in ms, marks the store stalled: store_ready() says so, and
 * store_enqueue() and store_repeats() answer ERR_DB at once instead of
 * queueing behind it (the intake's 503 with Retry-After), so that the
 * server's threads stay free for /-/healthy and for answers.
 */
#define STORE_STALL_MS 1000
/* How long store_ready() reports a failed intake after it (ms), unless one succeeds. */
#define STORE_FAILED_MS 5000
/* The intakes ask the file system whether the sqlite file is lost at most this often (ms). */
#define STORE_LOST_CHECK_MS 1000

/*
 * Bound each statement to timeout_ms (db_set_timeout(): sqlite's busy
 * timeout, PostgreSQL's statement_timeout and lock_timeout; config
 * database_statement_timeout; DB_STATEMENT_TIMEOUT_MS until called), and
 * the intake's waits for the connection and the group commit to the same.
 * An intake thus answers within about twice timeout_ms (a wait, then its own
 * transaction), or at once while the store is stalled.
 * Errors: ERR_INVALID (st NULL, timeout_ms <= 0), ERR_DB (the engine
 * refused; errmsg says why).
 */
enum err store_set_timeout(struct store *st, int64_t timeout_ms, struct buf *errmsg) WARN_UNUSED;

/*
 * Non-zero when the store can take webhooks as far as it knows, for
 * /-/ready; else 0 and why (may be NULL) gets the reason, with no path or
 * URI (the answer is public): "the database file was deleted or replaced"
 * (sticky: db_file_lost(), asked here each call), "the database is stalled"
 * (a statement has been running for STORE_STALL_MS), "the database failed
 * an intake" (within STORE_FAILED_MS, none succeeded since).  Never waits:
 * no lock, no statement; one stat(2) on sqlite.  st NULL: ready.
 */
int store_ready(struct store *st, struct buf *why);

/* Free the strings of row (not row itself); row may be NULL. */
void store_issue_release(struct store_issue *row);

#endif
