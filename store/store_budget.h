/*
 * store_budget.h - what the GitHub content budget spent, kept in the store
 * (table gh_budget, schema version 13) so that it outlives the process:
 * GitHub's secondary rate limits count content-creating requests per token
 * or account ("Rate limits for the REST API": at most 80 a minute, 500 an
 * hour), not per process, so a restart (a deploy, SIGTERM, SIGKILL) or a
 * replica taking the lead must go on with what was spent before it, not
 * with a full minute (issue 19).  The bridge records each mutating
 * request's time before it is sent and loads the last hour's at start and
 * on gaining the lead (bridge/bridge.h).  On PostgreSQL every replica
 * shares the table, as GitHub's limit is shared by the replicas' token.
 */
#ifndef AB_STORE_BUDGET_H
#define AB_STORE_BUDGET_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "store/store.h"

/* One mutating GitHub request recorded (store_budget_load()). */
struct store_budget_call {
	char *owner;      /* the credential's owner, "" for the default credential */
	int64_t sent_ms;  /* when it was about to be sent (ms since the epoch, the caller's clock) */
};

/*
 * Record that a mutating request of the credential of owner (NULL or "": the
 * default) is sent at sent_ms, and forget every record from before
 * prune_before_ms (the table keeps the budget's longest window only), in one
 * transaction.  Its commit does not wait for the disk: sqlite writes it to
 * the WAL at synchronous=NORMAL (PRAGMA synchronous, "WAL mode"; durable
 * when the process dies, as a restart needs; a crash of the machine may
 * lose it, and the next commit of the store's own syncs it), PostgreSQL
 * commits it with synchronous_commit off (visible to the other replicas at
 * once).  So one GitHub call costs no fsync of its own.  Errors: ERR_INVALID
 * (st NULL), ERR_DB with errmsg (nothing recorded: do not send).
 */
enum err store_budget_note(struct store *st, const char *owner, int64_t sent_ms,
			   int64_t prune_before_ms, struct buf *errmsg) WARN_UNUSED;

/* At most this many records are loaded: 500 an hour per credential is all a client sends. */
#define STORE_BUDGET_LOAD_MAX 10000

/*
 * The requests recorded at or after since_ms, newest first, at most
 * STORE_BUDGET_LOAD_MAX: *out (an array of *n, NULL when none;
 * store_budget_calls_free() it).  Errors: ERR_INVALID (st NULL), ERR_DB
 * with errmsg (*out NULL, *n 0).
 */
enum err store_budget_load(struct store *st, int64_t since_ms, struct store_budget_call **out,
			   size_t *n, struct buf *errmsg) WARN_UNUSED;

/* Free v[0..n) and v; v may be NULL. */
void store_budget_calls_free(struct store_budget_call *v, size_t n);

#endif
