/*
 * store_dead.c - the event inbox's dead letters: those without a map row
 * listed (for `map` and the status page), and dead letters re-queued by kind,
 * receiver, key or reason (`map retry`, a repository found again).  Part of
 * the store (store.c); shares its connection and helpers via store_int.h; the
 * inbox itself is store_events.c.
 */
#include "store/store_events.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/banned.h"

/* ---- dead letters without a map row ---- */

enum err store_dead_unmapped(struct store *st, const char *kind, int max,
			     int (*fn)(void *ctx, const struct store_event *ev), void *ctx)
{
	struct store_rows list = STORE_ROWS_INIT(struct store_event, 0, store_read_event_row);
	struct buf msg = BUF_INIT;
	struct db_stmt *s;
	enum err rc;

	if (!st || store_empty(kind) || !fn || max <= 0)
		return ERR_INVALID;
	if (max > 1000)
		max = 1000;
	list.max = (size_t)max;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_EV_DEAD_UNMAPPED];
	db_bind_text(s, 1, kind);
	db_bind_int(s, 2, max);
	rc = store_read_rows(st, s, "list dead letters", &list, &msg);
	db_reset(s);
	pthread_mutex_unlock(&st->db_mu);
	store_events_hand(&list, rc, fn, ctx);
	return store_done(rc, "list dead letters", &msg);
}

/* ---- re-queueing dead letters ---- */

/* The dead events store_dead_requeue() selects: ?1 kind, ?2 receiver, ?3 key, ?4 reason. */
#define DEAD_MATCH                                                                  \
	"state = 'dead' AND kind = ?1 AND (CAST(?2 AS TEXT) IS NULL OR receiver = ?2) AND " \
	"(CAST(?3 AS TEXT) IS NULL OR key = ?3) AND "                                 \
	"(CAST(?4 AS TEXT) IS NULL OR lower(last_error) LIKE lower(?4))"

enum err store_dead_requeue(struct store *st, const char *kind, const char *receiver,
			    const char *key, const char *reason_like, int64_t *n)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int64_t changed = 0;

	if (n)
		*n = 0;
	if (!st || store_empty(kind))
		return ERR_INVALID;
	rc = store_txn_begin(st, &msg);
	/* Only the issue's own transitions mark its row (mark_dead()). */
	if (rc == ERR_OK && !strcmp(kind, "bridge"))
		rc = store_sq(st, "UPDATE issues SET dead_reason = NULL WHERE EXISTS (SELECT 1 FROM "
				  "events WHERE " DEAD_MATCH " AND events.receiver = issues.receiver AND "
				  "events.key = issues.key)",
			      "clear dead reasons", &msg, NULL, "tttt", kind, receiver, key, reason_like);
	if (rc == ERR_OK)
		rc = store_sq(st, "UPDATE events SET state = 'pending', done_at_ms = NULL, attempts = 0, "
				  "next_attempt_at_ms = 0, last_error = '" STORE_REQUEUED "' || "
				  "coalesce(last_error, '') WHERE " DEAD_MATCH,
			      "requeue dead letters", &msg, NULL, "tttt", kind, receiver, key,
			      reason_like);
	if (rc == ERR_OK)
		changed = db_changes(st->db);
	rc = store_txn_end(st, rc, &msg);
	if (rc) {
		store_log_db("requeue dead letters", &msg);
	} else if (changed > 0) {
		if (n)
			*n = changed;
		store_wake(st);
	}
	buf_release(&msg);
	return rc;
}
