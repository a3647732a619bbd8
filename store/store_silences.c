/*
 * store_silences.c - the GitHub deliveries taken, the map row of an issue,
 * and the silences made for map rows (store_silences.h): tables
 * gh_deliveries and silences of schema version 11, run with per-call
 * statements (store_sq()): the webhook from GitHub and the silence worker
 * are rare next to the intake.
 */
#include "store/store_silences.h"
#include "store/store_int.h"
#include "store/store_events.h"

#include <stdlib.h>
#include <string.h>

#include "core/xalloc.h"
#include "core/banned.h"

/*
 * Take id at at_ms in one transaction: forget the ids taken before
 * prune_before_ms, then insert id unless it is there.  *fresh = 1 when it
 * was not there, or when retry and it was taken at at_ms (the same command
 * again: store_command_take()); else 0, and 0 on any error.  what names the
 * operation in errors and the log.
 */
static enum err take(struct store *st, const char *id, int64_t at_ms, int64_t prune_before_ms,
		     int retry, const char *what, int *fresh)
{
	struct buf msg = BUF_INIT;
	struct db_stmt *rows = NULL;
	enum err rc = store_txn_begin(st, &msg);

	if (rc == ERR_OK)
		rc = store_sq(st, "DELETE FROM gh_deliveries WHERE received_at_ms < ?1",
			      "prune deliveries", &msg, NULL, "i", prune_before_ms);
	if (rc == ERR_OK)
		rc = store_sq(st, "INSERT INTO gh_deliveries (id, received_at_ms) VALUES (?1, ?2) "
			      "ON CONFLICT (id) DO NOTHING", what, &msg, NULL, "ti", id, at_ms);
	if (rc == ERR_OK && db_changes(st->db) == 1) {
		*fresh = 1;
	} else if (rc == ERR_OK && retry) {
		rc = store_sq(st, "SELECT received_at_ms FROM gh_deliveries WHERE id = ?1", what,
			      &msg, &rows, "t", id);
		if (rc == ERR_OK) {
			rc = store_step_row(st, rows, what, &msg);
			if (rc == ERR_OK)
				*fresh = db_col_int(rows, 0) == at_ms;
			else if (rc == ERR_NOTFOUND)
				rc = ERR_OK;  /* cannot be: the row was there */
			db_finalize(rows);
		}
	}
	rc = store_txn_end(st, rc, &msg);
	if (rc != ERR_OK)
		*fresh = 0;
	return store_done(rc, what, &msg);
}

enum err store_delivery_take(struct store *st, const char *id, int64_t now_ms, int64_t keep_ms,
			     int *fresh)
{
	*fresh = 0;
	if (!st || store_empty(id))
		return ERR_INVALID;
	return take(st, id, now_ms, now_ms - keep_ms, 0, "take delivery", fresh);
}

enum err store_command_take(struct store *st, const char *key, int64_t at_ms, int64_t now_ms,
			    int64_t keep_ms, int *fresh)
{
	*fresh = 0;
	if (!st || store_empty(key))
		return ERR_INVALID;
	return take(st, key, at_ms, now_ms - keep_ms, 1, "take command", fresh);
}

enum err store_delivery_drop(struct store *st, const char *id)
{
	if (!st || store_empty(id))
		return ERR_INVALID;
	return store_sq_alone(st, "DELETE FROM gh_deliveries WHERE id = ?1", "drop delivery", NULL,
			      "t", id);
}

enum err store_issue_by_number(struct store *st, const char *repo, int64_t number,
			       char **receiver, char **key)
{
	struct buf msg = BUF_INIT;
	struct db_stmt *rows = NULL;
	enum err rc;

	*receiver = *key = NULL;
	if (!st || store_empty(repo) || number <= 0)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = store_sq(st, "SELECT receiver, key FROM issues WHERE number = ?1 AND "
		      "lower(repo) = lower(?2) ORDER BY receiver, key LIMIT 1", "issue by number",
		      &msg, &rows, "it", number, repo);
	if (rc == ERR_OK) {
		rc = store_step_row(st, rows, "issue by number", &msg);
		if (rc == ERR_OK) {
			*receiver = store_col_str(rows, 0);
			*key = store_col_str(rows, 1);
		}
		db_finalize(rows);
	}
	pthread_mutex_unlock(&st->db_mu);
	return store_done(rc, "issue by number", &msg);
}

enum err store_silence_put(struct store *st, const struct store_silence *s)
{
	if (!st || !s || store_empty(s->receiver) || store_empty(s->key) ||
	    store_empty(s->silence_id) || store_empty(s->created_by))
		return ERR_INVALID;
	return store_sq_alone(st, "INSERT INTO silences (receiver, key, silence_id, created_by, "
			      "ends_at_ms, created_at_ms, expired_at_ms) VALUES (?1, ?2, ?3, ?4, "
			      "?5, ?6, ?7) ON CONFLICT (receiver, key, silence_id) DO UPDATE SET "
			      "created_by = excluded.created_by, ends_at_ms = excluded.ends_at_ms, "
			      "expired_at_ms = excluded.expired_at_ms", "record silence", NULL,
			      "ttttiii", s->receiver, s->key, s->silence_id, s->created_by,
			      s->ends_at_ms, s->created_at_ms, s->expired_at_ms);
}

/* A row of store_silence_active()'s query into a struct store_silence (not receiver, key). */
static void read_silence(struct db_stmt *s, void *row)
{
	struct store_silence *out = row;

	out->silence_id = store_col_str(s, 0);
	out->created_by = store_col_str(s, 1);
	out->ends_at_ms = db_col_int(s, 2);
	out->created_at_ms = db_col_int(s, 3);
}

enum err store_silence_active(struct store *st, const char *receiver, const char *key,
			      int64_t now_ms, struct store_silence **out, size_t *n)
{
	struct store_rows list = STORE_ROWS_INIT(struct store_silence, 0, read_silence);
	struct buf msg = BUF_INIT;
	struct store_silence *v;
	enum err rc;

	*out = NULL;
	*n = 0;
	if (!st || store_empty(receiver) || store_empty(key))
		return ERR_INVALID;
	rc = store_sq_rows(st, "SELECT silence_id, created_by, ends_at_ms, created_at_ms FROM "
			       "silences WHERE receiver = ?1 AND key = ?2 AND expired_at_ms = 0 "
			       "AND ends_at_ms > ?3 ORDER BY created_at_ms DESC, silence_id",
			   "active silences", &list, &msg, "tti", receiver, key, now_ms);
	v = list.v;
	for (size_t i = 0; i < list.n; i++) {
		v[i].receiver = xstrdup(receiver);
		v[i].key = xstrdup(key);
	}
	if (rc != ERR_OK) {
		store_silences_free(v, list.n);
		v = NULL;
		list.n = 0;
	}
	*out = v;
	*n = list.n;
	return store_done(rc, "active silences", &msg);
}

enum err store_silence_expired(struct store *st, const char *receiver, const char *key,
			       const char *silence_id, int64_t now_ms)
{
	if (!st || store_empty(receiver) || store_empty(key) || store_empty(silence_id))
		return ERR_INVALID;
	return store_sq_alone(st, "UPDATE silences SET expired_at_ms = ?4 WHERE receiver = ?1 AND "
			      "key = ?2 AND silence_id = ?3", "expire silence", NULL, "ttti",
			      receiver, key, silence_id, now_ms);
}

enum err store_silence_dead_each(struct store *st, const char *receiver, const char *key,
				 int max, int (*fn)(void *ctx, const struct store_event *ev),
				 void *ctx)
{
	struct store_rows list = STORE_ROWS_INIT(struct store_event, 0, store_read_event_row);
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st || !fn || max <= 0)
		return ERR_INVALID;
	if (max > 1000)
		max = 1000;
	list.max = (size_t)max;
	rc = store_sq_rows(st, "SELECT id, kind, receiver, key, status, starts_at_ms, ends_at_ms, "
			       "payload, received_at_ms, attempts, last_error, progress "
			       "FROM events WHERE state = 'dead' AND kind = 'silence' AND "
			       "(CAST(?1 AS TEXT) IS NULL OR receiver = ?1) AND "
			       "(CAST(?2 AS TEXT) IS NULL OR key = ?2) ORDER BY id LIMIT ?3",
			   "dead silences", &list, &msg, "tti", receiver, key, (int64_t)max);
	store_events_hand(&list, rc, fn, ctx);
	return store_done(rc, "dead silences", &msg);
}

void store_silences_free(struct store_silence *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		store_free_str(v[i].receiver);
		store_free_str(v[i].key);
		store_free_str(v[i].silence_id);
		store_free_str(v[i].created_by);
	}
	free(v);
}
