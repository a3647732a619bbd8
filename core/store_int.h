/*
 * store_int.h - what the parts of the store share (SQLite's btreeInt.h):
 * struct store, its prepared statements and the small helpers every part
 * uses.  The parts: store.c (open, migrations, helpers), store_events.c,
 * store_map.c, store_outbox.c, store_digest.c, store_groups.c.  Not for other modules: they
 * use store.h.  Every helper that takes st expects the caller to hold db_mu.
 */
#ifndef AB_STORE_INT_H
#define AB_STORE_INT_H

#include <pthread.h>
#include <stdint.h>

#include <sqlite3.h>

#include "buf.h"
#include "err.h"
#include "store.h"

/* The statements store_open() prepares once, by id into stmt_sql (store.c). */
enum stmt_id {
	S_BEGIN,
	S_COMMIT,
	S_ROLLBACK,
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
/* The columns of a notice, in the order store_read_notice() reads them. */
#define NOTICE_COLS                                                                 \
	"id, namespace, pod, uid, kind, expires_ms, notify, owner, channel, thread_ts, text, " \
	"state, attempts, next_attempt_at_ms, created_at_ms, sent_at_ms, slack_channel_id, " \
	"slack_ts, last_error, digest_id, line"
/* The notice at the current row of s (NOTICE_COLS) into out; strings malloc'd. */
void store_read_notice(sqlite3_stmt *s, struct store_notice *out);
/* 1 when s is NULL or "". */
int store_empty(const char *s);
/* Log an ERR_DB detail (op, msg) for the functions that have no errmsg to return it in. */
void store_log_db(const char *op, const struct buf *msg);
/* Bind text v (NULL binds SQL NULL) at idx; the first failure is kept in *brc. */
void store_bind_text(sqlite3_stmt *s, int idx, const char *v, int *brc);
/* Bind v at idx; the first failure is kept in *brc. */
void store_bind_int(sqlite3_stmt *s, int idx, int64_t v, int *brc);
/* Reset a cached statement and drop bindings that point into callers' memory. */
void store_done_with(sqlite3_stmt *s);
/* Run sql (statements, no rows) on db outside the statement cache; errors name path. */
enum err store_exec(sqlite3 *db, const char *path, const char *sql, struct buf *errmsg);
/* Put st's last sqlite error, with what, in errmsg; returns ERR_DB. */
enum err store_db_fail(struct store *st, const char *what, struct buf *errmsg);
/* Step cached statement id (bindings' result brc) that returns no rows, and reset it. */
enum err store_run(struct store *st, enum stmt_id id, int brc, const char *what,
		   struct buf *errmsg);
/* Roll back the open transaction, if any. */
void store_rollback(struct store *st);
/* A copy of a text column (free()); NULL for SQL NULL. */
char *store_col_str(sqlite3_stmt *s, int i);
/* Prepare and bind sql per call ('t' text, 'i' int64_t); run it, or hand it out in *rows. */
enum err store_sq(struct store *st, const char *sql, const char *what, struct buf *errmsg,
		  sqlite3_stmt **rows, const char *types, ...);
/* The one integer counting statement id (bound to kind if not NULL) returns; -1 on error. */
int64_t store_count(struct store *st, enum stmt_id id, const char *kind, const char *what);
/* Why a pending-only UPDATE of event id changed nothing (ERR_NOTFOUND, ERR_CONFLICT). */
enum err store_event_state(struct store *st, int64_t id, char **receiver, char **key,
			   struct buf *errmsg);
/* ERR_INVALID with errmsg when an issue map row lacks a required field. */
enum err store_check_issue(const struct store_issue *row, struct buf *errmsg);
/* Upsert an issue map row. */
enum err store_put_issue(struct store *st, const struct store_issue *row, struct buf *errmsg);

#endif
