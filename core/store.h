/*
 * store.h - alertbridge's sqlite store: the durable event inbox, the map from
 * (receiver, key) to GitHub issue, and schema migrations.
 *
 * The only module that speaks SQL or sees a sqlite3 handle.  The database is
 * opened in WAL mode with synchronous=FULL and a busy_timeout; the schema is
 * versioned by PRAGMA user_version and migrated forward on open.
 *
 * Intake uses group commit: concurrent store_enqueue() callers share one
 * transaction (the first caller to arrive commits for everyone queued behind
 * it), and each returns only after the COMMIT that holds its events.  All
 * functions are thread-safe.  Times are milliseconds since the Unix epoch, UTC.
 */
#ifndef AB_STORE_H
#define AB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

struct store;

/* One alert transition as queued by intake and drained by a worker. */
struct store_event {
	int64_t id;            /* assigned by store_enqueue(); ignored on input */
	char *kind;            /* queue name: "bridge" or "janitor" */
	char *receiver;        /* receiver name (unescaped) */
	char *key;             /* map key: fingerprint (16 hex) or group key hash */
	char *status;          /* "firing" or "resolved" */
	int64_t starts_at_ms;  /* the alert's startsAt: identifies the episode */
	int64_t ends_at_ms;    /* endsAt; 0 when Alertmanager sent 0001-01-01 */
	char *payload;         /* JSON document with what rendering needs (opaque here) */
	int64_t received_at_ms;
	int attempts;          /* failed attempts so far */
	char *last_error;      /* last failure detail, or NULL */
};

/* The map row: what alertbridge knows of the issue for (receiver, key). */
struct store_issue {
	char *receiver;
	char *key;
	char *repo;                 /* "owner/name" where the issue lives now */
	int64_t number;             /* GitHub issue number; 0 in dry-run */
	char *state;                /* "open" or "closed" */
	char *state_reason;         /* GitHub's: "completed", "not_planned", "reopened" or NULL */
	int64_t episode_starts_ms;  /* startsAt of the newest episode applied */
	int64_t resolved_ends_ms;   /* endsAt of the newest resolve applied; 0 if none */
	int64_t closed_at_ms;       /* when it was closed (by anyone); 0 while open */
	int64_t previous_number;    /* the issue this one superseded, 0 if none */
	int64_t created_at_ms;
	int64_t updated_at_ms;
	char *dead_reason;          /* set when an event for it was dead-lettered */
};

/*
 * Open (creating if needed) and migrate the database at path.  ":memory:"
 * is accepted for tests.  On error *out is NULL and errmsg says why.
 * Errors: ERR_DB (cannot open, not a database, newer schema than this binary).
 */
enum err store_open(const char *path, struct store **out, struct buf *errmsg) WARN_UNUSED;
/* Close; st may be NULL.  Wakes any store_wait() caller. */
void store_close(struct store *st);
/* The schema version this build migrates to (PRAGMA user_version). */
int store_schema_version(void);

/*
 * Durably queue n events (group commit).  Returns ERR_OK only after the
 * transaction holding all n is committed; on ERR_DB none of them is stored.
 * Sets evs[i].id.  The caller keeps ownership of evs.
 */
enum err store_enqueue(struct store *st, struct store_event *evs, size_t n,
		       struct buf *errmsg) WARN_UNUSED;

/*
 * The oldest event of queue kind that is neither done nor dead-lettered and
 * whose retry time has come (<= now_ms), in id order.  Fills *out (release
 * with store_event_release()).  ERR_NOTFOUND when there is none.
 */
enum err store_next_event(struct store *st, const char *kind, int64_t now_ms,
			  struct store_event *out) WARN_UNUSED;
/* Free the strings of ev (not ev itself); ev may be NULL. */
void store_event_release(struct store_event *ev);
/* Number of pending (not done, not dead) events of kind. */
int64_t store_pending_count(struct store *st, const char *kind);
/*
 * Block until an event is enqueued, store_close() is called or timeout_ms
 * passes, whichever is first.  Used by workers instead of polling.
 */
void store_wait(struct store *st, int64_t timeout_ms);
/* Wake store_wait() callers (e.g. on shutdown). */
void store_wake(struct store *st);

/*
 * Mark event id done and, when row is not NULL, insert or replace the map
 * row (row->receiver, row->key) in the same transaction.
 */
enum err store_event_done(struct store *st, int64_t id, const struct store_issue *row,
			  struct buf *errmsg) WARN_UNUSED;
/* Record a failed attempt: attempts+1, last_error, retry not before next_at_ms. */
enum err store_event_retry(struct store *st, int64_t id, int64_t next_at_ms,
			   const char *error) WARN_UNUSED;
/*
 * Dead-letter event id with reason (never retried); also sets dead_reason on
 * the map row of its (receiver, key) if one exists.
 */
enum err store_event_dead(struct store *st, int64_t id, const char *reason) WARN_UNUSED;
/* Number of dead-lettered events. */
int64_t store_dead_count(struct store *st);

/* Fetch the map row; ERR_NOTFOUND when there is none.  Release with store_issue_release(). */
enum err store_issue_get(struct store *st, const char *receiver, const char *key,
			 struct store_issue *out) WARN_UNUSED;
/* Insert or replace a map row outside of an event (e.g. rebuilt from GitHub). */
enum err store_issue_put(struct store *st, const struct store_issue *row) WARN_UNUSED;
/* Delete the map row; ERR_NOTFOUND when there was none. */
enum err store_issue_forget(struct store *st, const char *receiver, const char *key) WARN_UNUSED;
/*
 * Call fn for each map row ordered by receiver, key; stop early when fn
 * returns non-zero.  receiver NULL lists all receivers.  The row passed to fn
 * is valid only during the call.
 */
enum err store_issue_each(struct store *st, const char *receiver,
			  int (*fn)(void *ctx, const struct store_issue *row), void *ctx) WARN_UNUSED;
/* Free the strings of row (not row itself); row may be NULL. */
void store_issue_release(struct store_issue *row);

#endif
