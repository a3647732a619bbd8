/*
 * store_events.h - the event queue at the store's centre (store_events.c)
 * and its dead letters (store_dead.c): intake enqueues each alert
 * transition durably before it answers 200, the bridge's and the janitor's
 * workers drain their queue kind in order, retry, and dead-letter what
 * cannot succeed; a person re-queues dead letters (`alertbridge map retry`).
 *
 * Intake uses group commit: concurrent store_enqueue() callers share one
 * transaction (the first caller to arrive commits for everyone queued behind
 * it), and each returns only after the COMMIT that holds its events.
 * Thread-safe, as every store call (store.h); times are ms since the epoch, UTC.
 */
#ifndef AB_STORE_EVENTS_H
#define AB_STORE_EVENTS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "store/store.h"

/*
 * Where an event is: pending (waiting for a worker or its retry), done, or
 * dead-lettered.  The database keeps the words "pending", "done", "dead"
 * (store_event_state_str()).
 */
enum store_event_state {
	STORE_EVENT_PENDING,
	STORE_EVENT_DONE,
	STORE_EVENT_DEAD,
};

/* "pending", "done" or "dead" (static); "" for a value not of the enum. */
const char *store_event_state_str(enum store_event_state state);

/*
 * One alert transition as queued by intake and drained by a worker.
 * Ownership: the const strings are the input of store_enqueue() and
 * store_repeats(), the caller's, borrowed for the call (the store never
 * writes through them).  An event the store fills (store_next_event(),
 * store_event_latest(), store_dead_unmapped()'s) owns copies of all its
 * strings, freed by store_event_release(); last_error and progress are only
 * ever the store's (a worker may edit its copy of progress).
 */
struct store_event {
	int64_t id;           /* assigned by store_enqueue(); ignored on input */
	const char *kind;     /* queue name: "bridge" or "janitor" */
	const char *receiver; /* receiver name (unescaped) */
	const char *key;      /* map key: fingerprint (16 hex) or group key hash */
	const char *status;   /* "firing" or "resolved" */
	int64_t starts_at_ms; /* the alert's startsAt: identifies the episode */
	int64_t ends_at_ms;   /* endsAt; 0 when Alertmanager sent 0001-01-01 */
	const char *payload;  /* JSON document with what rendering needs (opaque here) */
	int64_t received_at_ms;
	int attempts;         /* failed attempts so far */
	char *last_error;     /* last failure detail, or NULL */
	char *progress;       /* the worker's note of steps already done, or NULL */
	/*
	 * Input to store_enqueue() only: non-NULL and non-empty queues the event
	 * already dead-lettered with this reason (an alert invalid at intake).
	 * Never set by the functions that read events (see last_error).
	 */
	const char *dead_reason;
	/*
	 * Input to store_enqueue() only: non-NULL makes the event subject to
	 * repeat detection, with what besides status, starts_at_ms and
	 * ends_at_ms its state is (e.g. the repository, or a digest of a
	 * group's members; "" for nothing).  Kept with the event.
	 */
	const char *repeat_state;
	/*
	 * Output of store_enqueue(): 1 when the event was a repeat and was not
	 * stored (id 0), else 0.
	 */
	int repeated;
};

/* Counters since store_open(), for metrics and the group-commit benchmark. */
struct store_stats {
	uint64_t commits;         /* store_enqueue() transactions committed */
	uint64_t batches;         /* store_enqueue() calls those commits held */
	uint64_t events;          /* events those commits held */
	uint64_t failed_commits;  /* store_enqueue() transactions rolled back */
};

/*
 * On PostgreSQL, the longest store_wait_kind() waits before it returns to
 * let its caller look at the queue again: an event another replica stored
 * wakes nobody here, so this bounds how long it waits unseen.
 */
#define STORE_SHARED_WAIT_MS INT64_C(250)

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
 * *state gets where it is.  Events pruned
 * (store_prune_done()) are gone, so an old alert may have none.  Read by the
 * on-call page: "last event and its time" (received_at_ms).
 * ERR_NOTFOUND when there is none, ERR_INVALID (an argument NULL or empty),
 * ERR_DB (logged).
 */
enum err store_event_latest(struct store *st, const char *kind, const char *receiver,
			    const char *key, struct store_event *out,
			    enum store_event_state *state) WARN_UNUSED;
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

#endif
