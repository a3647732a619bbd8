/*
 * store_budget.c - the GitHub content budget's spending (store_budget.h):
 * table gh_budget of schema version 13, one row per mutating request, run
 * with per-call statements (store_sq()): at most one request a second is
 * recorded (the client's spacing), and the table holds an hour of them.
 */
#include "store/store_budget.h"
#include "store/store_int.h"

#include <stdlib.h>

#include "core/log.h"
#include "core/banned.h"

/*
 * The record's commit need not wait for the disk: what it guards against is
 * the process dying, and a commit that returned survives that without a
 * sync (sqlite's WAL is written before COMMIT returns; PostgreSQL's commit
 * is in the server).  sqlite's level is the connection's and cannot change
 * inside a transaction (PRAGMA synchronous), so it is lowered around this
 * one and set back; PostgreSQL's is set for this transaction only.
 */
#define SQ_RELAXED "PRAGMA synchronous = NORMAL"
#define SQ_STRICT "PRAGMA synchronous = FULL"  /* the store's own, as db_sqlite.c sets it */
#define PG_RELAXED "SET LOCAL synchronous_commit = off"

/* The record's transaction; the caller holds db_mu and restores sqlite's level. */
static enum err note_txn(struct store *st, int pg, const char *owner, int64_t sent_ms,
			 int64_t prune_before_ms, struct buf *errmsg)
{
	enum err rc = store_begin(st, errmsg);

	if (rc == ERR_OK && pg && db_exec(st->db, PG_RELAXED, NULL) != ERR_OK)
		rc = store_db_fail(st, "relax the commit", errmsg);
	if (rc == ERR_OK)
		rc = store_sq(st, "DELETE FROM gh_budget WHERE sent_at_ms < ?1",
			      "prune the github budget", errmsg, NULL, "i", prune_before_ms);
	if (rc == ERR_OK)
		rc = store_sq(st, "INSERT INTO gh_budget (owner, sent_at_ms) VALUES (?1, ?2)",
			      "record a github call", errmsg, NULL, "ti", owner ? owner : "",
			      sent_ms);
	if (rc == ERR_OK)
		rc = store_commit(st, errmsg);
	if (rc != ERR_OK)
		store_rollback(st);
	return rc;
}

enum err store_budget_note(struct store *st, const char *owner, int64_t sent_ms,
			   int64_t prune_before_ms, struct buf *errmsg)
{
	struct buf msg = BUF_INIT;
	enum err rc = ERR_OK;
	int pg;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	pg = db_engine(st->db) == DB_POSTGRES;
	if (!pg && db_exec(st->db, SQ_RELAXED, NULL) != ERR_OK)
		rc = store_db_fail(st, "relax the commit", errmsg);
	if (rc == ERR_OK)
		rc = note_txn(st, pg, owner, sent_ms, prune_before_ms, errmsg);
	/* Every other commit of the store stays synced: a failure here is logged, not hidden. */
	if (!pg && db_exec(st->db, SQ_STRICT, NULL) != ERR_OK) {
		store_db_fail(st, "restore synchronous=FULL", &msg);
		store_log_db("record a github call", &msg);
	}
	pthread_mutex_unlock(&st->db_mu);
	buf_release(&msg);
	return rc;
}

static void read_call(struct db_stmt *s, void *row)
{
	struct store_budget_call *call = row;

	call->owner = store_col_str(s, 0);
	call->sent_ms = db_col_int(s, 1);
}

enum err store_budget_load(struct store *st, int64_t since_ms, struct store_budget_call **out,
			   size_t *n, struct buf *errmsg)
{
	/* At most the limit: the newest are all a window holds. */
	struct store_rows list = STORE_ROWS_INIT(struct store_budget_call, STORE_BUDGET_LOAD_MAX,
						 read_call);
	enum err rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return ERR_INVALID;
	rc = store_sq_rows(st, "SELECT owner, sent_at_ms FROM gh_budget WHERE sent_at_ms >= ?1 "
			       "ORDER BY sent_at_ms DESC LIMIT ?2", "load the github budget", &list,
			   errmsg, "ii", since_ms, (int64_t)STORE_BUDGET_LOAD_MAX);
	if (rc != ERR_OK) {
		store_budget_calls_free(list.v, list.n);
		return rc;
	}
	*out = list.v;
	*n = list.n;
	return ERR_OK;
}

void store_budget_calls_free(struct store_budget_call *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		free(v[i].owner);
	free(v);
}
