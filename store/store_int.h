/*
 * store_int.h - what the parts of the store share (SQLite's btreeInt.h):
 * struct store, its prepared statements and the small helpers every part
 * uses.  The parts: store.c (open, migrations, helpers), store_events.c,
 * store_dead.c, store_map.c, store_outbox.c, store_digest.c, store_groups.c,
 * store_budget.c, store_silences.c.
 * Not for other modules: they use store.h and the headers of the parts.
 * Every helper that takes st expects the caller to hold db_mu, but those
 * that say they take it themselves (store_count(), store_sq_count(),
 * store_sq_rows() and the _alone ones, for a call that runs nothing else).
 */
#ifndef AB_STORE_INT_H
#define AB_STORE_INT_H

#include <pthread.h>
#include <stdint.h>

#include "core/buf.h"
#include "store/db.h"
#include "core/err.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_outbox.h"

/*
 * The repeat rule, one row of one column: 1 when the newest comparable event
 * of (kind, receiver, key) has the state (status, startsAt, endsAt,
 * repeat_state) and is not a dead letter: the event would be a repeat.  No
 * row: none to repeat.  A map row written in dry-run (issue 0) is no
 * exception: going live forgets its key's states once
 * (store_dry_rows_go_live()), so dry-run and live store the same.  Each
 * argument is the SQL that gives that value: a bound parameter "?1".."?7"
 * (S_EV_REPEAT) or a column of a VALUES list (batch_repeats() in
 * store_events.c: PostgreSQL, up to 16 events in one statement).
 */
#define STORE_REPEAT_SQL(kind, receiver, key, status, starts, ends, state)                \
	"SELECT e.status = " status " AND e.starts_at_ms = " starts " AND e.ends_at_ms = " \
	ends " AND e.repeat_state = " state " AND e.state <> 'dead' FROM events AS e "     \
	"WHERE e.kind = " kind " AND e.receiver = " receiver " AND e.key = " key           \
	" AND e.repeat_state IS NOT NULL ORDER BY e.id DESC LIMIT 1"

/* The statements store_open() prepares once, by id into stmt_sql (store.c). */
enum stmt_id {
	S_EV_INSERT,
	S_EV_REPEAT,
	S_EV_FORGET_STATE,
	S_EV_NEXT,
	S_EV_DUE_KIND,
	S_EV_DUE_ANY,
	S_EV_PENDING,
	S_EV_DEAD_COUNT,
	S_EV_OLDEST_PENDING,
	S_EV_STATE,
	S_EV_DONE,
	S_EV_RETRY,
	S_EV_DEAD,
	S_EV_DEAD_SUPERSEDE,
	S_EV_LATEST,
	S_EV_PROGRESS,
	S_EV_PRUNE,
	S_IS_GET,
	S_IS_PUT,
	S_IS_FORGET,
	S_IS_SET_DEAD,
	S_IS_PAGE_ALL,
	S_IS_PAGE_RCV,
	S_IS_COUNT_STATE,
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
	S_SCAN_FORGET,
	S_EV_DEAD_UNMAPPED,
	S_COUNT
};

/*
 * The SQL of statement id (engine-neutral, with ?N parameters), NULL for an id out of range;
 * static storage.  For tests that check the statements' query plans (test_store_plans).
 */
const char *store_stmt_sql(enum stmt_id id);

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
	struct db *db;                 /* used only under db_mu */
	struct db_stmt *stmt[S_COUNT]; /* used only under db_mu */
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
	/*
	 * Issue 19: the intake's bound and what readiness reads, each without a
	 * lock (__atomic builtins) so that neither waits on a stalled statement.
	 */
	int64_t timeout_ms;            /* store_set_timeout(): how long an intake waits */
	int64_t intake_failed_us;      /* CLOCK_MONOTONIC of the last failed intake, 0: none since */
	int64_t lost_checked_us;       /* when db_file_lost() was last asked */
	int lost;                      /* the file was found deleted or replaced (sticky) */
	/*
	 * store_wait_kind_since()'s due times, a slot per queue (kind NULL:
	 * any), kept while queue_changes stays what it was when they were read.
	 */
	uint64_t queue_changes;        /* events finished, retried, dead-lettered, re-queued */
	struct due_cache {
		char kind[16];         /* "" with any = 1 for all kinds */
		int any, valid;
		int64_t due;           /* ms since the epoch; INT64_MAX: none */
		uint64_t changes;      /* queue_changes when due was read */
	} due[3];
};

/* How long one wait of an intake's bounded loop lasts before the stall is looked at again. */
#define STORE_SLICE_US INT64_C(50000)
/* An intake starting now gives up waiting at this time (CLOCK_MONOTONIC, us; the timeout). */
int64_t store_intake_deadline(struct store *st);
/*
 * Take db_mu for an intake: wait at most until deadline_us (CLOCK_MONOTONIC,
 * clock_mono_us()), and not at all once the store is stalled (a statement
 * has been running for store_stall_ms()).  ERR_OK with db_mu held, or ERR_DB
 * with errmsg saying why (db_mu not held).
 */
enum err store_lock_intake(struct store *st, int64_t deadline_us, struct buf *errmsg);
/* ERR_DB with errmsg when a statement has been running for store_stall_ms() or more. */
enum err store_check_stall(struct store *st, struct buf *errmsg);
/*
 * ERR_DB with errmsg (and the one error log line, the first time) when the
 * sqlite file is deleted or replaced (db_file_lost()); asked of the file
 * system when force, or when STORE_LOST_CHECK_MS passed since the last ask.
 */
enum err store_check_lost(struct store *st, int force, struct buf *errmsg);
/* An intake answered (rc): readiness notes a failure for STORE_FAILED_MS. */
void store_note_intake(struct store *st, enum err rc);

/* An event left the queue or changed its retry time: the cached due times are stale. */
void store_queue_changed(struct store *st);
/* The columns of a notice, in the order store_read_notice() reads them. */
#define NOTICE_COLS                                                                 \
	"id, namespace, pod, uid, kind, expires_ms, notify, owner, channel, thread_ts, text, " \
	"state, attempts, next_attempt_at_ms, created_at_ms, sent_at_ms, slack_channel_id, " \
	"slack_ts, last_error, digest_id, line"
/* The notice at the current row of s (NOTICE_COLS) into out; strings malloc'd. */
void store_read_notice(struct db_stmt *s, struct store_notice *out);
/* store_read_notice() as store_read_rows() and store_row_alone() call it (row: a notice). */
void store_read_notice_row(struct db_stmt *s, void *row);
/* The event at the current row of s (EVENT_COLS, store.c) into out; strings malloc'd. */
void store_read_event(struct db_stmt *s, struct store_event *out);
/*
 * The rows of a query read into a growing array (store_read_rows()): how to
 * read them (set by STORE_ROWS_INIT), and what was read.
 */
struct store_rows {
	size_t size;  /* of an element */
	size_t max;   /* rows at most; 0: no bound */
	void (*read)(struct db_stmt *s, void *row);  /* a zeroed element from the current row */
	void *v;      /* the elements read (malloc'd; the caller frees them, and what they own) */
	size_t n, cap;
};
/* Rows of type read by read, at most max (0: no bound), none read yet. */
#define STORE_ROWS_INIT(type, max, read) { sizeof(type), (max), (read), NULL, 0, 0 }
/* store_read_event() as store_read_rows() and store_row_alone() call it (row: an event). */
void store_read_event_row(struct db_stmt *s, void *row);
/*
 * Hand the events list holds (store_read_rows() of EVENT_COLS) to fn(ctx,
 * ev) in order until fn returns non-zero, none when rc is not ERR_OK; then
 * release them all, free the array and empty list.  Without db_mu: fn may
 * call the store.
 */
void store_events_hand(struct store_rows *list, enum err rc,
		       int (*fn)(void *ctx, const struct store_event *ev), void *ctx);
/* 1 when s is NULL or "". */
int store_empty(const char *s);
/* A string a row needs, for store_first_empty(): its name in errors, its value. */
struct store_field {
	const char *name;
	const char *value;
};
#define STORE_N_FIELDS(fields) (sizeof(fields) / sizeof((fields)[0]))
/* The name of the first of fields[0..n) whose value is store_empty(); NULL when none is. */
const char *store_first_empty(const struct store_field *fields, size_t n);
/* Log an ERR_DB detail (op, msg) for the functions that have no errmsg to return it in. */
void store_log_db(const char *op, const struct buf *msg);
/* The end of such a function: store_log_db(op, msg) when rc is ERR_DB, msg released; rc. */
enum err store_done(enum err rc, const char *op, struct buf *msg);
/* Put st's last database error, with what, in errmsg; returns ERR_DB. */
enum err store_db_fail(struct store *st, const char *what, struct buf *errmsg);
/* BEGIN (the write lock, db_begin()) and COMMIT; ERR_DB with errmsg. */
enum err store_begin(struct store *st, struct buf *errmsg);
enum err store_commit(struct store *st, struct buf *errmsg);
/* Roll back the open transaction, if any. */
void store_rollback(struct store *st);
/*
 * A write transaction of its own: store_txn_begin() locks db_mu and begins
 * (store_begin()); db_mu stays held whatever it returns.  store_txn_end()
 * then commits when rc is ERR_OK, rolls back when rc (or the commit) is not,
 * and unlocks db_mu; it returns the outcome (rc, or the commit's ERR_DB).
 */
enum err store_txn_begin(struct store *st, struct buf *errmsg);
enum err store_txn_end(struct store *st, enum err rc, struct buf *errmsg);
/*
 * free() a string the store allocated into a field the API declares const
 * (the store never writes through it; callers fill it with borrowed strings
 * as input): the one place the const is dropped.
 */
void store_free_str(const char *s);
/* store_free_str() each of strs[0..n): the strings a struct owns, for its _release(). */
void store_free_strs(const char *const *strs, size_t n);
/* A copy of a text column (free()); NULL for SQL NULL. */
char *store_col_str(struct db_stmt *s, int i);
/*
 * The states of the API are enums; the database keeps them as the words of
 * names[0..n) (its text columns and CHECK constraints, unchanged).  The
 * index of word in names, or fallback when it is none of them (or NULL).
 */
int store_state_index(const char *const *names, size_t n, const char *word, int fallback);
/* The word of the enum value state in names[0..n); "" when out of range (a bug). */
const char *store_state_word(const char *const *names, size_t n, int state);
/* The words of enum store_notice_state (store_outbox.c; digests have the same). */
#define STORE_NOTICE_STATES 3
extern const char *const store_notice_states[STORE_NOTICE_STATES];
/* store_state_index() of text column i of the current row of s. */
int store_col_state(struct db_stmt *s, int i, const char *const *names, size_t n,
		    int fallback);
/*
 * The statement helpers.  types describes the arguments bound to ?1, ?2, ...
 * in order: 't' const char * (NULL binds SQL NULL), 'i' int64_t.  what names
 * the operation in errmsg ("store PATH: WHAT: ERROR"); every ERR_DB has it.
 *
 * store_run: run cached statement id (no rows wanted) and reset it.
 * store_run1: the same, and it must change exactly one row: ERR_NOTFOUND
 *   (errmsg untouched) when it changed none (or several).
 * store_row: run cached statement id for its first row: ERR_OK with the row
 *   current (read it, then db_reset(st->stmt[id])), ERR_NOTFOUND (no row) or
 *   ERR_DB, both with the statement reset.
 * store_insert: run cached statement id, an INSERT ... RETURNING id, into *id.
 */
enum err store_run(struct store *st, enum stmt_id id, const char *what, struct buf *errmsg,
		   const char *types, ...);
enum err store_run1(struct store *st, enum stmt_id id, const char *what, struct buf *errmsg,
		    const char *types, ...);
enum err store_row(struct store *st, enum stmt_id id, const char *what, struct buf *errmsg,
		   const char *types, ...);
enum err store_insert(struct store *st, enum stmt_id id, int64_t *row_id, const char *what,
		      struct buf *errmsg, const char *types, ...);
/*
 * Prepare sql per call (statements that run seldom) and bind types as above.
 * With rows NULL run it (no rows wanted) and finalize it; else hand the
 * statement to the caller, who steps it (store_step_row()) and finalizes it.
 */
enum err store_sq(struct store *st, const char *sql, const char *what, struct buf *errmsg,
		  struct db_stmt **rows, const char *types, ...);
/* store_sq() of an INSERT ... RETURNING id, the new row's id into *row_id. */
enum err store_sq_insert(struct store *st, const char *sql, int64_t *row_id, const char *what,
			 struct buf *errmsg, const char *types, ...);
/*
 * One statement on its own, for a call that runs nothing else: take db_mu,
 * run it, let go of db_mu, and log an ERR_DB with what (store_done()).
 * store_run_alone and store_run1_alone run cached statement id as
 * store_run() and store_run1() do (ERR_NOTFOUND, not logged, when it changed
 * no row but one); store_sq_alone runs sql as store_sq() without rows.
 * changes, when not NULL, gets the rows the statement changed (db_changes();
 * left as it is unless ERR_OK).  ERR_OK or ERR_DB (or ERR_NOTFOUND).
 */
enum err store_run_alone(struct store *st, enum stmt_id id, const char *what, int64_t *changes,
			 const char *types, ...);
enum err store_run1_alone(struct store *st, enum stmt_id id, const char *what,
			  const char *types, ...);
enum err store_sq_alone(struct store *st, const char *sql, const char *what, int64_t *changes,
			const char *types, ...);
/*
 * One query on its own, for its first row: take db_mu, run cached statement
 * id (store_row_alone) or sql (store_sq_row_alone, prepared per call), both
 * bound as store_run() binds; when there is a row, read(s, out) reads it;
 * let go of db_mu and log an ERR_DB with what.  ERR_OK (out read),
 * ERR_NOTFOUND (no row: out untouched) or ERR_DB.
 */
enum err store_row_alone(struct store *st, enum stmt_id id, const char *what,
			 void (*read)(struct db_stmt *s, void *out), void *out,
			 const char *types, ...);
enum err store_sq_row_alone(struct store *st, const char *sql, const char *what,
			    void (*read)(struct db_stmt *s, void *out), void *out,
			    const char *types, ...);
/*
 * The one integer sql (a per-call query, bound as store_sq() binds) returns
 * in its first row, under db_mu taken and let go here; -1 on an error or no
 * row (logged with what).
 */
int64_t store_sq_count(struct store *st, const char *sql, const char *what, const char *types,
		       ...);
/*
 * Step s (bound; neither reset nor finalized here) and append each row to
 * list, up to list->max rows in all: a new element, zeroed, then filled by
 * list->read.  ERR_OK when the rows ended or max was reached, ERR_DB with
 * errmsg; the rows read so far stay in list either way.
 */
enum err store_read_rows(struct store *st, struct db_stmt *s, const char *what,
			 struct store_rows *list, struct buf *errmsg);
/*
 * A query on its own, its rows into list: take db_mu, prepare sql and bind
 * types as store_sq() does, store_read_rows(), finalize, let go of db_mu.
 * ERR_OK or ERR_DB with errmsg (not logged); the rows read stay in list.
 */
enum err store_sq_rows(struct store *st, const char *sql, const char *what,
		       struct store_rows *list, struct buf *errmsg, const char *types, ...);
/* Step s once: ERR_OK (a row is current), ERR_NOTFOUND (no more) or ERR_DB (errmsg). */
enum err store_step_row(struct store *st, struct db_stmt *s, const char *what,
			struct buf *errmsg);
/* The one integer counting statement id (bound to kind if not NULL) returns; -1 on error. */
int64_t store_count(struct store *st, enum stmt_id id, const char *kind, const char *what);
/* Why a pending-only UPDATE of event id changed nothing (ERR_NOTFOUND, ERR_CONFLICT). */
enum err store_event_why(struct store *st, int64_t id, char **receiver, char **key,
			   struct buf *errmsg);
/*
 * After store_run1() (its result rc) of an UPDATE of pending event id: when
 * it changed nothing, why (store_event_why(): ERR_NOTFOUND, ERR_CONFLICT).
 * An event still pending was changed by another process in between:
 * ERR_CONFLICT, or with what (a write under db_begin(), where that cannot
 * happen) ERR_DB.
 */
enum err store_event_changed(struct store *st, int64_t id, enum err rc, const char *what,
			     struct buf *errmsg);
/* ERR_INVALID with errmsg when an issue map row lacks a required field. */
enum err store_check_issue(const struct store_issue *row, struct buf *errmsg);
/*
 * The schema migrations of engine (store_schema.c): *n steps, step i takes
 * version i to i + 1 (an empty step does nothing on that engine).
 */
const char *const *store_migrations(enum db_engine engine, int *n);
/* Upsert an issue map row. */
enum err store_put_issue(struct store *st, const struct store_issue *row, struct buf *errmsg);

#endif
