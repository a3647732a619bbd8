/*
 * store.h - alertbridge's sqlite store: the durable event inbox, the map from
 * (receiver, key) to GitHub issue, the janitor's Slack outbox (notices), and
 * schema migrations.
 *
 * The only module that speaks SQL or sees a sqlite3 handle.  The database is
 * opened in WAL mode with synchronous=FULL and a busy_timeout; the schema is
 * versioned by PRAGMA user_version and migrated forward on open, and kept in
 * auto_vacuum=INCREMENTAL mode (an older file is switched by one VACUUM).
 *
 * Intake uses group commit: concurrent store_enqueue() callers share one
 * transaction (the first caller to arrive commits for everyone queued behind
 * it), and each returns only after the COMMIT that holds its events.  All
 * functions are thread-safe.  Times are milliseconds since the Unix epoch, UTC.
 *
 * Concurrency: one sqlite connection, used under a mutex by every call; the
 * enqueue leader holds it only for its BEGIN IMMEDIATE..COMMIT.  Functions
 * without an errmsg parameter log the sqlite detail of an ERR_DB themselves
 * (level error), since they have no other way to return it.
 */
#ifndef AB_STORE_H
#define AB_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

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
	char *progress;        /* the worker's note of steps already done, or NULL */
	/*
	 * Input to store_enqueue() only: non-NULL and non-empty queues the event
	 * already dead-lettered with this reason (an alert invalid at intake).
	 * Never set by the functions that read events (see last_error).
	 */
	char *dead_reason;
	/*
	 * Input to store_enqueue() only: non-NULL makes the event subject to
	 * repeat detection, with what besides status, starts_at_ms and
	 * ends_at_ms its state is (e.g. the repository, or a digest of a
	 * group's members; "" for nothing).  Kept with the event.
	 */
	char *repeat_state;
	/*
	 * Output of store_enqueue(): 1 when the event was a repeat and was not
	 * stored (id 0), else 0.
	 */
	int repeated;
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
	/*
	 * What the on-call page shows (schema version 8): the alert's alertname
	 * label and the issue's title as the bridge created it.  NULL when not
	 * known (rows from before, rows rebuilt from GitHub, storm members);
	 * store_issue_put() and store_event_done() keep the stored value when
	 * given NULL.
	 */
	char *alertname;
	char *title;
	char *etag;                 /* ETag of GitHub's last answer with the issue, or NULL */
	char *labels;               /* its labels then: a JSON array of names, or NULL */
	/*
	 * The link of previous_number as GitHub gave it (its html_url; schema
	 * version 12): it may live in another repository (a reroute).  NULL:
	 * not known (rows from before, rebuilt rows): built from repo.
	 */
	char *previous_url;
};

/* Counters since store_open(), for metrics and the group-commit benchmark. */
struct store_stats {
	uint64_t commits;         /* store_enqueue() transactions committed */
	uint64_t batches;         /* store_enqueue() calls those commits held */
	uint64_t events;          /* events those commits held */
	uint64_t failed_commits;  /* store_enqueue() transactions rolled back */
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

/*
 * Durably queue n events (group commit).  Returns ERR_OK only after the
 * transaction holding all n is committed; on error none of them is stored.
 * Sets evs[i].id (0 on error).  The caller keeps ownership of evs: the store
 * copies what it needs.  Required: kind, receiver, key, payload non-empty,
 * status "firing" or "resolved".  received_at_ms <= 0 means now; attempts
 * and last_error are ignored (a new event has none).  n == 0 is ERR_OK.
 * An event with dead_reason is inserted and dead-lettered in the same
 * transaction, exactly as store_event_dead() would leave it (never pending,
 * so no worker sees it; last_error = dead_reason; the map row of its
 * (receiver, key), if any, gets the dead_reason too): it shows in
 * store_dead_unmapped() / the map row and counts in store_dead_count().
 * Repeats: an event with repeat_state whose state (status, starts_at_ms,
 * ends_at_ms, repeat_state) equals that of the newest event of its (kind,
 * receiver, key) that has a repeat_state, that newest one not being a dead
 * letter, is a repeat, in dry-run as live (a dry-run map row, number 0,
 * gets its issue from the first notification after going live:
 * store_dry_rows_go_live()): it is not stored, its id stays 0 and
 * repeated is 1 (what it says is already durable).  The comparison is made by the
 * group-commit leader inside the transaction, so it sees the events of the
 * same group committed before it: of identical events queued at once, one
 * is stored.  When every event of a group commit is a repeat no
 * transaction is opened.  A key whose events were pruned (store_prune_done())
 * or forgotten (store_issue_forget()) has no newest event to repeat.
 * Bounded (store_set_timeout()): a caller that cannot get the connection or
 * a place in a group commit within timeout_ms, or finds the store stalled
 * (STORE_STALL_MS), gets ERR_DB without waiting longer; its events are not
 * stored.  On sqlite the file is checked after the transaction
 * (db_file_lost()): when it was deleted or replaced, what was committed went
 * to a file nobody will open again, and every caller gets ERR_DB (logged
 * once, level error, with the path).
 * Errors: ERR_INVALID (a required field NULL or empty, evs NULL with n > 0;
 * errmsg names the event index and field), ERR_DB (the shared transaction
 * failed: every caller in it gets ERR_DB and the same message; or the
 * bounds and checks above).
 */
enum err store_enqueue(struct store *st, struct store_event *evs, size_t n,
		       struct buf *errmsg) WARN_UNUSED;

/*
 * The bridge goes live (github.dry_run off, which takes a restart): forget
 * the repeat_state of the "bridge" events of every key whose map row was
 * written in dry-run (number 0), as store_issue_forget() does for one key
 * but keeping the row, so that each key's next notification is stored and
 * finds its issue by marker or creates it (bridge.c's dry-run rows).  Call
 * it before the webhook is served.  *n (may be NULL): the events changed.
 * Errors: ERR_INVALID (st NULL), ERR_DB (logged; nothing changed).
 */
enum err store_dry_rows_go_live(struct store *st, int64_t *n) WARN_UNUSED;

/*
 * 1 when ev can be a repeat by store_enqueue()'s rule above: it has a
 * repeat_state and no dead_reason (a dead letter is always stored); else 0.
 */
int store_event_may_repeat(const struct store_event *ev);

/*
 * Whether store_enqueue() of evs[0..n) would store nothing: *all = 1 when
 * every event has a repeat_state and is a repeat by store_enqueue()'s rule
 * above, else 0 (n == 0 gives 0).  Reads under the store's lock, outside a
 * transaction, as store_enqueue() does before it opens one; writes nothing
 * (evs[i].repeated is set as store_enqueue() would).  The webhook's cache of
 * recent bodies asks this instead of parsing a body it has seen
 * (bridge/webhook.h).
 * version (may be NULL), in: the database's version (db_data_version()) at
 * which an earlier call said "all repeats" for the same evs, or 0.  When the
 * version is still that, no row changed since, and the answer is 1 without
 * reading an event (a repeat at Alertmanager's repeat_interval costs no
 * query; on sqlite not even the store's lock: db_data_version_unlocked()).
 * Out: the version this answer holds at when *all = 1, else 0; always 0 on
 * PostgreSQL (other replicas write).  A lost sqlite file (asked at most every
 * STORE_LOST_CHECK_MS) is ERR_DB, so is a stalled store when the answer
 * needs the connection; the wait for it is bounded as store_enqueue()'s.
 * Errors: ERR_INVALID (st NULL, evs NULL with n > 0, a required field of
 * an event empty), ERR_DB (the read failed; *all = 0, *version 0).
 */
enum err store_repeats(struct store *st, struct store_event *evs, size_t n, uint64_t *version,
		       int *all) WARN_UNUSED;

/*
 * The oldest event of queue kind that is neither done nor dead-lettered and
 * whose retry time has come (<= now_ms), in id order.  An event is held back
 * while an older pending event of the same (kind, receiver, key) waits for its
 * retry, so one alert's transitions are applied in arrival order.  Fills *out
 * (release with store_event_release()).  ERR_NOTFOUND when there is none,
 * ERR_INVALID when kind is NULL or empty, ERR_DB (logged) when sqlite fails,
 * and when the sqlite file was deleted or replaced (asked of the file system
 * at each call: a worker takes no work from a file nobody will read again;
 * issue 19, the campaign's unlink class).
 */
enum err store_next_event(struct store *st, const char *kind, int64_t now_ms,
			  struct store_event *out) WARN_UNUSED;
/*
 * The newest event of queue kind for (receiver, key) among those repeat
 * detection compares (stored with a repeat_state: every notification the
 * bridge's intake queues), into *out (release with store_event_release());
 * state (at least 8 bytes) gets "pending", "done" or "dead".  Events pruned
 * (store_prune_done()) are gone, so an old alert may have none.  Read by the
 * on-call page: "last event and its time" (received_at_ms).
 * ERR_NOTFOUND when there is none, ERR_INVALID (an argument NULL or empty),
 * ERR_DB (logged).
 */
enum err store_event_latest(struct store *st, const char *kind, const char *receiver,
			    const char *key, struct store_event *out, char state[8]) WARN_UNUSED;
/* Free the strings of ev (not ev itself); ev may be NULL. */
void store_event_release(struct store_event *ev);
/*
 * Number of pending (not done, not dead) events of kind; -1 when st or kind
 * is missing or on ERR_DB (logged).
 */
int64_t store_pending_count(struct store *st, const char *kind);
/*
 * When the oldest pending event of kind was received (received_at_ms: ms
 * since the epoch, UTC), however long it has waited for retries; INT64_MAX
 * when none is pending; -1 when st or kind is missing or on ERR_DB (logged).
 */
int64_t store_oldest_pending_ms(struct store *st, const char *kind);
/*
 * Block until an event is enqueued, store_wake() or store_close() is called,
 * the retry time of a pending event comes, or timeout_ms passes, whichever is
 * first.  Returns at once when a pending event of any kind is due now or
 * timeout_ms <= 0.  Used by workers instead of polling; a wake-up may be
 * spurious, so callers loop.  An enqueue that commits after the call starts
 * always ends the wait (no lost wake-ups).  timeout_ms is capped at one day,
 * and on PostgreSQL at STORE_SHARED_WAIT_MS: an event another replica stored
 * wakes nobody here, so this bounds how long it waits unseen.
 */
void store_wait(struct store *st, int64_t timeout_ms);
/* store_wait() that looks only at events of queue kind (kind NULL: any kind). */
void store_wait_kind(struct store *st, const char *kind, int64_t timeout_ms);

/* Where the queue is (enqueue commits, store_wake() calls), for store_wait_kind_since(). */
struct store_mark {
	uint64_t seq, gen;
};
/* The queue's mark now; zero for st NULL. */
struct store_mark store_mark(struct store *st);
/*
 * store_wait_kind() for a worker that took mark before it looked for work
 * (store_next_event()): an enqueue commit or store_wake() since the mark
 * ends the wait at once, so nothing stored after the look waits unseen.
 * That lets the wait keep the time the earliest head of the queue is due
 * between calls, while no event of the store left the queue, changed its
 * retry time or was re-queued through it (store_event_done(), _retry(),
 * _dead(), store_dead_requeue(), store_wake()): reading it is a scan of the
 * pending events, which under a backlog of 30,000 took 55 ms per wake-up
 * on PostgreSQL while the intake waited for the connection (make bench: 60
 * new-alert webhooks a second).  A time already past is read again.  What
 * another process changes is seen at the next wake-up, within timeout_ms.
 */
void store_wait_kind_since(struct store *st, const char *kind, struct store_mark mark,
			   int64_t timeout_ms);
/* Wake the store_wait() callers waiting now (e.g. on shutdown). */
void store_wake(struct store *st);
/* Copy the counters into *out. */
void store_stats(struct store *st, struct store_stats *out);

/*
 * Mark pending event id done (done_at_ms = now) and, when row is not NULL,
 * insert or replace the map row (row->receiver, row->key) in the same
 * transaction: both happen or neither.  The row is copied.
 * Errors: ERR_INVALID (row fails the checks of store_issue_put()),
 * ERR_NOTFOUND (no event id), ERR_CONFLICT (event already done or dead;
 * nothing changed), ERR_DB (rolled back; errmsg has sqlite's message).
 */
enum err store_event_done(struct store *st, int64_t id, const struct store_issue *row,
			  struct buf *errmsg) WARN_UNUSED;
/*
 * Record a failed attempt of pending event id: attempts+1, last_error = error
 * (may be NULL), retry not before next_at_ms.
 * Errors: ERR_NOTFOUND, ERR_CONFLICT (done or dead), ERR_DB (logged).
 */
enum err store_event_retry(struct store *st, int64_t id, int64_t next_at_ms,
			   const char *error) WARN_UNUSED;
/*
 * Record progress on pending event id: an opaque note (e.g. "close:1": the
 * comment of a close was posted) that the next store_next_event() returns,
 * so a worker retrying a multi-call transition skips the calls that already
 * succeeded.  Errors: ERR_INVALID (empty note), ERR_NOTFOUND (no such event),
 * ERR_CONFLICT (no longer pending), ERR_DB.
 */
enum err store_event_progress(struct store *st, int64_t id, const char *progress) WARN_UNUSED;
/*
 * Dead-letter pending event id with reason (kept in last_error; never
 * retried); when it is of kind "bridge" (the issue's own transitions), also
 * sets dead_reason on the map row of its (receiver, key) if one exists, in
 * the same transaction (another kind of the same key, e.g. a "silence"
 * command, leaves the row alone).  Older dead letters it repeats (the
 * same kind, receiver, key, status, starts_at_ms, ends_at_ms and reason: a
 * notification Alertmanager re-sent) are deleted, so one stands for them;
 * an event enqueued with dead_reason does the same.
 * Errors: ERR_INVALID (reason NULL or empty), ERR_NOTFOUND, ERR_CONFLICT
 * (done or dead), ERR_DB (logged).
 */
enum err store_event_dead(struct store *st, int64_t id, const char *reason) WARN_UNUSED;
/*
 * Call fn for the dead-lettered events of queue kind whose (receiver, key)
 * has no map row (e.g. a create GitHub rejected), oldest first, at most max
 * (capped at 1000); stop early when fn returns non-zero (still ERR_OK).  ev
 * is valid only during the call; fn runs without the store's lock.
 * Errors: ERR_INVALID (st, kind or fn missing, max <= 0), ERR_DB (logged).
 */
enum err store_dead_unmapped(struct store *st, const char *kind, int max,
			     int (*fn)(void *ctx, const struct store_event *ev),
			     void *ctx) WARN_UNUSED;
/*
 * What store_dead_requeue() writes before the old reason in last_error, so
 * that a worker can tell an event a person re-queued (e.g. after fixing a
 * repository) from one that merely failed before.
 */
#define STORE_REQUEUED "requeued; was: "
/*
 * Re-queue the dead-lettered events of queue kind that match every filter
 * given (NULL: any): receiver, key, and reason_like, an SQL LIKE pattern
 * over the dead-letter reason (e.g. "repository % not found or no access"),
 * matched without regard to ASCII case on both engines.
 * In one transaction they become pending, due now, with attempts 0 and
 * last_error STORE_REQUEUED + the reason (their progress note is kept: a
 * create attempted before still looks for its marker first), and, for kind
 * "bridge", the map rows of their (receiver, key) lose dead_reason.  Pending events of the
 * same key keep their order (by id).  Wakes store_wait() callers; a worker
 * of another process sees them on its next poll.  *n (may be NULL) gets how
 * many; 0 is not an error.
 * Errors: ERR_INVALID (st NULL, kind empty), ERR_DB (logged; nothing changed).
 */
enum err store_dead_requeue(struct store *st, const char *kind, const char *receiver,
			    const char *key, const char *reason_like, int64_t *n) WARN_UNUSED;
/* Number of dead-lettered events; -1 when st is NULL or on ERR_DB (logged). */
int64_t store_dead_count(struct store *st);
/*
 * Delete events of every kind marked done before before_ms; dead-lettered
 * and pending ones are kept (a dead letter stays until it is re-queued by
 * store_dead_requeue(), and is then pruned once done).  When rows went, their pages
 * are handed back to the file system (PRAGMA incremental_vacuum, then a WAL
 * checkpoint(TRUNCATE)), so the file stays the size of what is live.
 * *deleted (may be NULL) gets how many.  The map, notices and scans are not
 * touched.  Errors: ERR_INVALID (st NULL), ERR_DB (logged; the delete may
 * have committed when the vacuum failed).
 */
enum err store_prune_done(struct store *st, int64_t before_ms, int64_t *deleted) WARN_UNUSED;

/*
 * Fetch the map row into *out (release with store_issue_release()).
 * Errors: ERR_INVALID (receiver or key NULL or empty), ERR_NOTFOUND (no row),
 * ERR_DB (logged).
 */
enum err store_issue_get(struct store *st, const char *receiver, const char *key,
			 struct store_issue *out) WARN_UNUSED;
/*
 * Insert or replace a map row outside of an event (e.g. rebuilt from
 * GitHub).  The row is copied.  Required: receiver, key, repo non-empty,
 * state "open" or "closed"; state_reason is free text (GitHub adds values).
 * Errors: ERR_INVALID (a required field missing), ERR_DB (logged).
 */
enum err store_issue_put(struct store *st, const struct store_issue *row) WARN_UNUSED;
/*
 * Delete the map row, and in the same transaction the repeat_state of the
 * "bridge" events of (receiver, key), so that the key's next notification is
 * not a repeat (store_enqueue()) even if it equals the last one stored: its
 * next firing opens a new issue.  Errors: ERR_INVALID (receiver or key NULL
 * or empty), ERR_NOTFOUND (there was no map row; nothing changed), ERR_DB
 * (logged; nothing changed).
 */
enum err store_issue_forget(struct store *st, const char *receiver, const char *key) WARN_UNUSED;
/*
 * Call fn for each map row ordered by receiver, key; stop early when fn
 * returns non-zero (still ERR_OK).  receiver NULL lists all receivers.  The
 * row passed to fn is valid only during the call.  Rows are read in pages
 * and fn runs without the store's lock, so fn may call the store; a row
 * changed during the walk may or may not be seen, none is seen twice.
 * Errors: ERR_INVALID (st or fn NULL), ERR_DB (logged).
 */
enum err store_issue_each(struct store *st, const char *receiver,
			  int (*fn)(void *ctx, const struct store_issue *row), void *ctx) WARN_UNUSED;
/* Free the strings of row (not row itself); row may be NULL. */
void store_issue_release(struct store_issue *row);
/*
 * Number of distinct GitHub issues (repo, number) the map points at in state
 * ("open" or "closed", as GitHub last showed it): rows written in dry-run
 * (number 0) are not counted, and the rows a storm summary folds are one
 * issue.  -1 when st or state is missing or on ERR_DB (logged).
 */
int64_t store_issue_count(struct store *st, const char *state);

/*
 * The janitor's Slack outbox (schema version 2): one row per message to a
 * pod's owner, delivered by the janitor's outbox worker with retries.  kind
 * is "notice" (starts a thread), "reminder", "cancelled" or "deleted"
 * (replies in the notice's thread).  state is "pending" until Slack
 * confirmed delivery ("sent") or the janitor gave up ("dead").
 */
struct store_notice {
	int64_t id;               /* assigned by store_notice_add(); ignored on input */
	char *namespace;          /* the pod's */
	char *pod;
	char *uid;                /* the pod's metadata.uid: a recreated pod is another pod */
	char *kind;               /* notice | reminder | cancelled | deleted */
	int64_t expires_ms;       /* the expiry the message announces; 0 when none */
	char *notify;             /* owner candidates for resolution: janitor/notify, */
	char *owner;              /*   the owner label's value (either NULL) */
	char *channel;            /* where to post; NULL until resolved ("" in webhook mode) */
	char *thread_ts;          /* replies: the notice's Slack ts; NULL otherwise */
	char *text;               /* the rendered message, Slack mrkdwn */
	char *state;              /* pending | sent | dead */
	int attempts;             /* failed attempts so far */
	int64_t next_attempt_at_ms; /* on input: not sent before (0: at once) */
	int64_t created_at_ms;    /* <= 0 on input: now */
	int64_t sent_at_ms;       /* when Slack confirmed; 0 until sent */
	char *slack_channel_id;   /* from Slack's answer ("" in webhook mode) */
	char *slack_ts;
	char *last_error;
	int64_t digest_id;        /* read only: the digest it goes out in (schema 8); 0: none */
	char *line;               /* a notice's line of a digest (JSON object), or NULL */
};

/*
 * Queue n (copied; state pending, no attempts).  Required: namespace, pod,
 * uid, text non-empty, kind one of the four.  Sets n->id.
 * Errors: ERR_INVALID (errmsg names the field), ERR_DB.
 */
enum err store_notice_add(struct store *st, struct store_notice *n,
			  struct buf *errmsg) WARN_UNUSED;
/*
 * The oldest pending notice whose retry time has come (<= now_ms) into *out
 * (release with store_notice_release()).  ERR_NOTFOUND when there is none,
 * ERR_DB (logged).
 */
enum err store_notice_next(struct store *st, int64_t now_ms, struct store_notice *out) WARN_UNUSED;
/*
 * The newest notice of kind for the pod uid, whatever its state, into *out.
 * ERR_NOTFOUND when there is none, ERR_INVALID (uid or kind empty), ERR_DB (logged).
 */
enum err store_notice_latest(struct store *st, const char *uid, const char *kind,
			     struct store_notice *out) WARN_UNUSED;
/*
 * Record Slack's confirmation of pending notice id: state sent, sent_at_ms,
 * channel (the resolved one), slack_channel_id and slack_ts (may be "").
 * Errors: ERR_NOTFOUND (no pending notice id), ERR_DB (logged).
 */
enum err store_notice_sent(struct store *st, int64_t id, int64_t sent_at_ms, const char *channel,
			   const char *slack_channel_id, const char *slack_ts) WARN_UNUSED;
/*
 * Record a failed attempt of pending notice id: attempts+1, last_error,
 * retry not before next_at_ms, and channel (NULL: unresolved again).
 * Errors: ERR_NOTFOUND (no pending notice id), ERR_DB (logged).
 */
enum err store_notice_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *channel,
			    const char *error) WARN_UNUSED;
/*
 * Give up on pending notice id (state dead, attempts+1, last_error = reason).
 * Errors: ERR_NOTFOUND (no pending notice id), ERR_DB (logged).
 */
enum err store_notice_dead(struct store *st, int64_t id, const char *reason) WARN_UNUSED;
/*
 * Give up on every pending notice of the pod uid (e.g. the alert resolved
 * before the notice went out); *n (may be NULL) gets how many.  Errors: ERR_DB (logged).
 */
enum err store_notice_cancel(struct store *st, const char *uid, const char *reason,
			     int64_t *n) WARN_UNUSED;
/*
 * A digest (schema version 8): one Slack message for several pending
 * notices of one owner (kind "notice": a table of the pods, a new thread),
 * or for several replies of one kind in one thread (thread_ts set).  A
 * digest too long for one message is several parts (part of parts), each
 * its own row and message.  state as for a notice; a digest's members are
 * pending while it is, sent with it (same sent_at_ms, slack_channel_id,
 * slack_ts: replies to a member thread under its part) or dead with it.
 */
struct store_digest {
	int64_t id;               /* assigned by store_digest_add() */
	char *kind;               /* the members' kind */
	char *channel;            /* where it goes (resolved; "" in webhook mode) */
	char *thread_ts;          /* replies: the thread; NULL for notices */
	int part, parts;          /* 1-based part of how many */
	char *text;               /* the rendered message, Slack mrkdwn */
	char *state;              /* read only: pending | sent | dead */
	int attempts;             /* read only: failed attempts so far */
	int64_t next_attempt_at_ms; /* not sent before (0: at once) */
	int64_t created_at_ms;    /* <= 0 on input: now */
	int64_t sent_at_ms;       /* read only */
	char *slack_channel_id;   /* read only */
	char *slack_ts;           /* read only */
	char *last_error;         /* read only */
};

/*
 * The pending notices not in a digest that may go out with head (a pending
 * notice read from the store): same kind, thread_ts, notify, owner and
 * channel (SQL IS: NULL equals NULL), due by due_by_ms, oldest first, at
 * most max, head itself included; into a new array *out of *n (free with
 * store_notices_free()).  Errors: ERR_INVALID, ERR_DB (logged); *out NULL then.
 */
enum err store_notice_batch(struct store *st, const struct store_notice *head, int64_t due_by_ms,
			    size_t max, struct store_notice **out, size_t *n) WARN_UNUSED;
/* Free n notices of v and v; v may be NULL. */
void store_notices_free(struct store_notice *v, size_t n);
/*
 * Add the nparts digests parts[0..nparts) (ids set) and make their members
 * (notice ids members[first[i]..first[i+1]) for part i; first has nparts+1
 * offsets) theirs, channel set to the part's: all or nothing, in one
 * transaction, before any is posted.  Errors: ERR_INVALID (a part without
 * kind, text, channel or members), ERR_CONFLICT (a member not pending or in
 * a digest already: nothing added), ERR_DB (logged); errmsg says which.
 */
enum err store_digest_add(struct store *st, struct store_digest *parts, size_t nparts,
			  const int64_t *members, const size_t *first,
			  struct buf *errmsg) WARN_UNUSED;
/* The oldest pending digest due by now_ms into *out (store_digest_release()).
 * ERR_NOTFOUND when none, ERR_DB (logged). */
enum err store_digest_next(struct store *st, int64_t now_ms, struct store_digest *out) WARN_UNUSED;
/* Digest id and its pending members delivered (see struct store_digest), in
 * one transaction.  Errors: ERR_NOTFOUND (no pending digest id), ERR_DB (logged). */
enum err store_digest_sent(struct store *st, int64_t id, int64_t sent_at_ms,
			   const char *slack_channel_id, const char *slack_ts) WARN_UNUSED;
/* A failed attempt of pending digest id: attempts+1, retry not before
 * next_at_ms, channel (NULL: kept), error also on its members.
 * Errors: ERR_NOTFOUND, ERR_DB (logged). */
enum err store_digest_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *channel,
			    const char *error) WARN_UNUSED;
/* Give up on pending digest id and its pending members (state dead).
 * Errors: ERR_NOTFOUND, ERR_DB (logged). */
enum err store_digest_dead(struct store *st, int64_t id, const char *reason) WARN_UNUSED;
/* The members of digest id, oldest first, into a new array *out of *n
 * (store_notices_free()).  Errors: ERR_INVALID, ERR_DB (logged). */
enum err store_digest_members(struct store *st, int64_t id, struct store_notice **out,
			      size_t *n) WARN_UNUSED;
/* Pending digests; -1 when st is NULL or on ERR_DB (logged). */
int64_t store_digest_pending_count(struct store *st);
/* Free the strings of d (not d itself); d may be NULL. */
void store_digest_release(struct store_digest *d);

/* Pending notices; -1 when st is NULL or on ERR_DB (logged). */
int64_t store_notice_pending_count(struct store *st);
/* Free the strings of n (not n itself); n may be NULL. */
void store_notice_release(struct store_notice *n);

/*
 * Storm summaries (schema version 3; the logic is bridge/storm.h).  Under an
 * alert storm a receiver folds new alerts into one summary issue per
 * (receiver, repo, alertname).  A folded alert has two rows:
 *   - its map row (struct store_issue, as for any alert) whose repo and
 *     number are the summary issue's (number 0 until the summary exists on
 *     GitHub), state following the summary (open, then closed/completed);
 *   - a member row (struct store_member) naming the summary and the alert's
 *     own state in it.
 * A map row with a member row is "folded"; without one it is the alert's own
 * issue.  The summary row tracks the issue: state creating (row made, issue
 * not yet confirmed on GitHub), open, closed; dirty when members changed
 * since its text was last written to GitHub (synced_at_ms).
 */
struct store_summary {
	int64_t id;             /* assigned by store_summary_add() */
	char *receiver;
	char *repo;             /* "owner/name" of the summary issue */
	char *alertname;        /* "" for alerts without one */
	char *marker_key;       /* the key of the issue_marker() its body ends with */
	int64_t number;         /* GitHub issue number; 0 until created (and in dry-run) */
	char *state;            /* "creating", "open" or "closed" */
	int64_t created_at_ms;  /* row creation; <= 0 on input: now */
	int64_t synced_at_ms;   /* last write to GitHub; while creating, the last create attempt */
	int64_t next_sync_ms;   /* no GitHub call for it before (backoff after a failure) */
	int dirty;              /* members changed since synced_at_ms */
	int64_t firing;         /* read only: members firing */
	int64_t total;          /* read only: members */
};

/* One alert folded into a summary. */
struct store_member {
	char *key;              /* the alert's map key (fingerprint) */
	int64_t summary_id;
	int firing;             /* non-zero while firing, 0 once resolved */
	int64_t starts_at_ms;   /* startsAt of the newest episode applied */
	int64_t ends_at_ms;     /* endsAt of the newest resolve applied; 0 if none */
	char *line;             /* its one-line description for the summary body (may be "") */
};

/*
 * Distinct keys with a pending "firing" event of the "bridge" queue for
 * receiver and no map row: the creates waiting, counted up to at_most (> 0;
 * <= 0: all).  The storm's question is only whether they pass a threshold:
 * a bounded count stops after at_most keys instead of reading the whole
 * queue for each event (a 10,000-alert storm took minutes).  -1 when st or
 * receiver is missing, or on ERR_DB (logged).
 */
int64_t store_pending_creates(struct store *st, const char *receiver, int64_t at_most);
/*
 * The newest summary of (receiver, repo, alertname) that is not closed into
 * *out (release with store_summary_release()).  ERR_NOTFOUND when none,
 * ERR_INVALID (an argument missing; alertname may be ""), ERR_DB (logged).
 */
enum err store_summary_live(struct store *st, const char *receiver, const char *repo,
			    const char *alertname, struct store_summary *out) WARN_UNUSED;
/* Summary id into *out.  ERR_NOTFOUND, ERR_INVALID (st NULL), ERR_DB (logged). */
enum err store_summary_get(struct store *st, int64_t id, struct store_summary *out) WARN_UNUSED;
/*
 * A summary that needs a GitHub call now (next_sync_ms <= now_ms and not
 * closed): one being created, one with no member firing (to close), or a
 * dirty one last written at least interval_ms ago; the most overdue first.
 * ERR_NOTFOUND when none, ERR_INVALID (st NULL), ERR_DB (logged).
 */
enum err store_summary_due(struct store *st, int64_t now_ms, int64_t interval_ms,
			   struct store_summary *out) WARN_UNUSED;
/*
 * Insert s (receiver, repo, alertname, marker_key, created_at_ms) in state
 * creating; sets s->id.  Errors: ERR_INVALID (a field missing), ERR_DB.
 */
enum err store_summary_add(struct store *st, struct store_summary *s,
			   struct buf *errmsg) WARN_UNUSED;
/*
 * Write s's repo, number, state, synced_at_ms, next_sync_ms and dirty (by
 * s->id).  Unless the state is creating, the map rows of its members are set
 * to the summary's repo, number and state in the same transaction (closed:
 * state_reason completed, closed_at_ms = synced_at_ms).  Errors: ERR_INVALID
 * (repo empty, state not one of the three), ERR_NOTFOUND (no summary s->id), ERR_DB.
 */
enum err store_summary_save(struct store *st, const struct store_summary *s,
			    struct buf *errmsg) WARN_UNUSED;
/*
 * The member row of (receiver, key) into *out (release with
 * store_member_release()).  ERR_NOTFOUND when the alert is not folded,
 * ERR_INVALID (an argument missing), ERR_DB (logged).
 */
enum err store_member_get(struct store *st, const char *receiver, const char *key,
			  struct store_member *out) WARN_UNUSED;
/*
 * In one transaction: mark pending event event_id done, upsert the map row
 * row and the member row m of (row->receiver, m->key), and when dirty mark
 * the summary m->summary_id dirty.  Errors: ERR_INVALID (row fails
 * store_issue_put()'s checks, m->key empty or not row->key, summary_id <= 0),
 * ERR_NOTFOUND (no event), ERR_CONFLICT (event not pending), ERR_DB (rolled back).
 */
enum err store_member_fold(struct store *st, int64_t event_id, const struct store_issue *row,
			   const struct store_member *m, int dirty, struct buf *errmsg) WARN_UNUSED;
/*
 * Forget that (receiver, key) was folded: delete its map row and member row
 * in one transaction (its next firing then plans like a new alert).
 * Errors: ERR_INVALID (an argument missing), ERR_DB.
 */
enum err store_member_unfold(struct store *st, const char *receiver, const char *key,
			     struct buf *errmsg) WARN_UNUSED;
/*
 * The members of summary_id, firing first, then by starts_at_ms and key, as
 * a new array *out of *n (free with store_member_list_free()).  ERR_INVALID
 * (st NULL), ERR_DB (logged; *out NULL, *n 0).
 */
enum err store_member_list(struct store *st, int64_t summary_id, struct store_member **out,
			   size_t *n) WARN_UNUSED;
/* Free the strings of m (not m) and zero it; m may be NULL. */
void store_member_release(struct store_member *m);
/* Free an array from store_member_list(); v may be NULL. */
void store_member_list_free(struct store_member *v, size_t n);
/* Free the strings of s (not s) and zero it; s may be NULL. */
void store_summary_release(struct store_summary *s);

/*
 * Repository scans (schema version 4): the bridge rebuilds the map from the
 * markers on GitHub once per (receiver, repo) after the database was created
 * (bridge/bridge.h).  store_scan_get() sets *done_at_ms (may be NULL) to when
 * the scan of repo for receiver finished; ERR_NOTFOUND when it never did.
 * store_scan_done() records (or moves) that time.
 * Errors: ERR_INVALID (st NULL, receiver or repo NULL or empty), ERR_DB (logged).
 */
enum err store_scan_get(struct store *st, const char *receiver, const char *repo,
			int64_t *done_at_ms) WARN_UNUSED;
enum err store_scan_done(struct store *st, const char *receiver, const char *repo,
			 int64_t done_at_ms) WARN_UNUSED;

/*
 * Forget the finished scans of receiver (NULL: of every receiver), so the
 * next event of each (receiver, repo) scans the repository again and imports
 * what the map lacks (`alertbridge map rescan`, after restoring an older
 * backup: bridge/rebuild.h says what a scan imports).  *n (may be NULL) gets
 * how many scans were forgotten.  Errors: ERR_INVALID (st NULL, receiver
 * empty), ERR_DB (logged).
 */
enum err store_scan_forget(struct store *st, const char *receiver, int64_t *n) WARN_UNUSED;

/*
 * Group states (schema version 5; the logic is bridge/group.h): for a
 * receiver with issue_per: group, what the bridge remembers of the group of
 * map row (receiver, key) besides that row: its members' states and the
 * pending update of the issue body that lists them.  A pending update is
 * this row's dirty flag, so it survives a restart.
 */
struct store_group {
	char *receiver;
	char *key;              /* the map key: SHA-256 of the groupKey */
	char *members;          /* JSON array of the members' states (opaque here; bridge/group.h) */
	char *payload;          /* the newest event document of the group, to render the body */
	int dirty;              /* the issue body does not show the members yet */
	int64_t synced_at_ms;   /* last body written to GitHub (or the issue created); 0: never */
	int64_t next_sync_ms;   /* no body update before (backoff after a failure); 0: none */
};

/*
 * The group state of (receiver, key) into *out (release with
 * store_group_release()).  ERR_NOTFOUND when none, ERR_INVALID (an argument
 * missing), ERR_DB (logged).
 */
enum err store_group_get(struct store *st, const char *receiver, const char *key,
			 struct store_group *out) WARN_UNUSED;
/*
 * A group state whose body update is due: dirty, next_sync_ms <= now_ms,
 * synced_at_ms + interval_ms <= now_ms (at most one update per interval_ms
 * per issue), and whose map row has an issue (number > 0); the longest due
 * first.  ERR_NOTFOUND when none, ERR_INVALID (st NULL), ERR_DB (logged).
 */
enum err store_group_due(struct store *st, int64_t now_ms, int64_t interval_ms,
			 struct store_group *out) WARN_UNUSED;
/*
 * In one transaction: mark pending event event_id done, upsert the map row
 * row (NULL: none) and the group state g (copied).  Both happen or neither.
 * Errors: ERR_INVALID (g without receiver, key, members or payload; row
 * fails store_issue_put()'s checks), ERR_NOTFOUND (no event), ERR_CONFLICT
 * (event not pending), ERR_DB (rolled back; errmsg has sqlite's message).
 */
enum err store_group_done(struct store *st, int64_t event_id, const struct store_issue *row,
			  const struct store_group *g, struct buf *errmsg) WARN_UNUSED;
/*
 * Record the outcome of a body update of g (receiver, key): its dirty,
 * synced_at_ms and next_sync_ms; members and payload are left alone.
 * Errors: ERR_INVALID (receiver or key missing), ERR_NOTFOUND (no such
 * state), ERR_DB.
 */
enum err store_group_synced(struct store *st, const struct store_group *g,
			    struct buf *errmsg) WARN_UNUSED;
/* Free the strings of g (not g) and zero it; g may be NULL. */
void store_group_release(struct store_group *g);

/* ---- copying a store (store_copy.c) ---- */

#define STORE_COPY_TABLES 10

/* What store_copy() copied: rows[i] rows of table tables[i] (static names). */
struct store_copy_counts {
	const char *tables[STORE_COPY_TABLES];
	int64_t rows[STORE_COPY_TABLES];
};

/*
 * Copy every row of every table of src into dst (`alertbridge store copy`):
 * the map, events of every state, notices, digests, storm summaries and
 * members, repository scans, group states, the GitHub deliveries taken
 * and the silences made (store_silences.h), ids kept.  dst must be empty
 * (ERR_CONFLICT naming the first table that is not, nothing written); both
 * are at store_schema_version() since store_open_target() migrated them.
 * One transaction on each side: src is read under its write lock (no writer
 * meanwhile), dst commits all or nothing (ERR_DB with errmsg; counts zero).
 * On PostgreSQL the identity sequences are moved past the copied ids.
 * ERR_INVALID when src and dst are the same store.
 */
enum err store_copy(struct store *src, struct store *dst, struct store_copy_counts *out,
		    struct buf *errmsg) WARN_UNUSED;
/*
 * The columns store_copy() copies of its i-th table ("name t name i ..."; 't'
 * text, 'i' integer), the table's name in *table; NULL past the last.  For
 * the test that holds them to the schema.
 */
const char *store_copy_columns(size_t i, const char **table);
/*
 * `alertbridge store copy --from=SOURCE --to=TARGET [--from-password-file=F]
 * [--to-password-file=F]`: argv[0] is "copy".  Prints the rows copied per
 * table; returns the exit status (0 copied, 1 failed, 2 usage).
 */
int store_copy_command(int argc, char **argv);

/* ---- more than one replica on one database (store_lock.c, issue 10) ---- */

/*
 * The key of the worker lock: one per process for both queues ("bridge" and
 * the janitor's), as one Lease covers both ("ab" "wk" in ASCII; db.h's
 * DB_WRITE_LOCK is another key).
 */
#define STORE_WORKER_LOCK INT64_C(0x6162776b)

/*
 * On PostgreSQL, the longest store_wait_kind() waits before it returns to
 * let its caller look at the queue again: an event another replica stored
 * wakes nobody here, so this bounds how long it waits unseen.
 */
#define STORE_SHARED_WAIT_MS INT64_C(250)

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
