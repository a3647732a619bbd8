/*
 * store_digest.c - digests of the janitor's Slack outbox (schema version 8):
 * one message for several pending notices of one owner, or for several
 * replies in one thread.  The digest rows and their members' assignment are
 * written in one transaction before anything is posted, and a delivered
 * digest marks its members sent in one transaction: a restart neither loses
 * nor repeats a member.  Part of the store (store.c); shares its connection
 * and helpers via store_int.h.
 */
#include "store/store_digest.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "store/store_outbox.h"
#include "core/banned.h"

#define DIGEST_COLS                                                                 \
	"id, kind, channel, thread_ts, part, parts, text, state, attempts, "        \
	"next_attempt_at_ms, created_at_ms, sent_at_ms, slack_channel_id, slack_ts, last_error"

void store_notices_free(struct store_notice *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		store_notice_release(&v[i]);
	free(v);
}

/*
 * After a list of notices read into list: *out and *n the notices, or on an
 * error what logged and none (NULL, 0); rc.
 */
static enum err notices_done(enum err rc, const char *what, struct store_rows *list,
			     struct store_notice **out, size_t *n, struct buf *msg)
{
	*out = list->v;
	*n = list->n;
	if (rc) {
		store_log_db(what, msg);
		store_notices_free(*out, *n);
		*out = NULL;
		*n = 0;
	}
	buf_release(msg);
	return rc;
}

enum err store_notice_batch(struct store *st, const struct store_notice *head, int64_t due_by_ms,
			    size_t max, struct store_notice **out, size_t *n)
{
	struct store_rows list = STORE_ROWS_INIT(struct store_notice, 0, store_read_notice_row);
	struct buf msg = BUF_INIT;
	enum err rc;

	*out = NULL;
	*n = 0;
	if (!st || !head || store_empty(head->kind))
		return ERR_INVALID;
	rc = store_sq_rows(st, "SELECT " NOTICE_COLS " FROM notices WHERE state = 'pending' AND "
			       "digest_id IS NULL AND kind = ?1 AND next_attempt_at_ms <= ?2 AND "
			       "thread_ts IS NOT DISTINCT FROM ?3 AND "
			       "notify IS NOT DISTINCT FROM ?4 AND "
			       "owner IS NOT DISTINCT FROM ?5 AND "
			       "channel IS NOT DISTINCT FROM ?6 ORDER BY id LIMIT ?7",
			   "notice batch", &list, &msg, "titttti",
			   head->kind, due_by_ms, head->thread_ts, head->notify, head->owner,
			   head->channel, (int64_t)max);
	return notices_done(rc, "notice batch", &list, out, n, &msg);
}

enum err store_digest_add(struct store *st, struct store_digest *parts, size_t nparts,
			  const int64_t *members, const size_t *first, struct buf *errmsg)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st || !parts || !nparts || !members || !first) {
		buf_setf(errmsg, "store: digest: nothing to add");
		return ERR_INVALID;
	}
	for (size_t i = 0; i < nparts; i++)
		if (store_empty(parts[i].kind) || store_empty(parts[i].text) || !parts[i].channel ||
		    first[i + 1] <= first[i]) {
			buf_setf(errmsg, "store: digest part %zu: no kind, text, channel or members",
				 i + 1);
			return ERR_INVALID;
		}
	rc = store_txn_begin(st, &msg);
	for (size_t i = 0; rc == ERR_OK && i < nparts; i++) {
		struct store_digest *d = &parts[i];

		if (d->created_at_ms <= 0)
			d->created_at_ms = clock_wall_ms();
		rc = store_sq_insert(st, "INSERT INTO digests (kind, channel, thread_ts, part, parts, "
				     "text, created_at_ms, next_attempt_at_ms) VALUES (?1, ?2, ?3, ?4, "
				     "?5, ?6, ?7, ?8) RETURNING id", &d->id, "add digest", &msg,
				     "tttiitii", d->kind, d->channel, d->thread_ts, (int64_t)d->part,
				     (int64_t)d->parts, d->text, d->created_at_ms,
				     d->next_attempt_at_ms);
		if (rc)
			break;
		for (size_t m = first[i]; rc == ERR_OK && m < first[i + 1]; m++) {
			rc = store_sq(st, "UPDATE notices SET digest_id = ?1, channel = ?2 WHERE "
				      "id = ?3 AND state = 'pending' AND digest_id IS NULL",
				      "digest member", &msg, NULL, "iti", d->id, d->channel,
				      members[m]);
			if (rc == ERR_OK && db_changes(st->db) != 1) {
				buf_setf(&msg, "notice %lld is not pending or in a digest already",
					 (long long)members[m]);
				rc = ERR_CONFLICT;
			}
		}
	}
	rc = store_txn_end(st, rc, &msg);
	if (rc) {
		for (size_t i = 0; i < nparts; i++)
			parts[i].id = 0;
		buf_setf(errmsg, "%s", buf_str(&msg));
		if (rc == ERR_DB)
			store_log_db("add digest", &msg);
	}
	buf_release(&msg);
	return rc;
}

enum err store_digest_next(struct store *st, int64_t now_ms, struct store_digest *out)
{
	struct buf msg = BUF_INIT;
	struct db_stmt *s = NULL;
	enum err rc;

	memset(out, 0, sizeof(*out));
	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = store_sq(st, "SELECT " DIGEST_COLS " FROM digests WHERE state = 'pending' AND "
		      "next_attempt_at_ms <= ?1 ORDER BY id LIMIT 1", "next digest", &msg, &s, "i",
		      now_ms);
	if (rc == ERR_OK) {
		rc = store_step_row(st, s, "next digest", &msg);
		if (rc == ERR_OK) {
			out->id = db_col_int(s, 0);
			out->kind = store_col_str(s, 1);
			out->channel = store_col_str(s, 2);
			out->thread_ts = store_col_str(s, 3);
			out->part = (int)db_col_int(s, 4);
			out->parts = (int)db_col_int(s, 5);
			out->text = store_col_str(s, 6);
			out->state = (enum store_notice_state)store_col_state(
				s, 7, store_notice_states, STORE_NOTICE_STATES, STORE_NOTICE_PENDING);
			out->attempts = (int)db_col_int(s, 8);
			out->next_attempt_at_ms = db_col_int(s, 9);
			out->created_at_ms = db_col_int(s, 10);
			out->sent_at_ms = db_col_int(s, 11);
			out->slack_channel_id = store_col_str(s, 12);
			out->slack_ts = store_col_str(s, 13);
			out->last_error = store_col_str(s, 14);
		}
		db_finalize(s);
	}
	pthread_mutex_unlock(&st->db_mu);
	return store_done(rc, "next digest", &msg);
}

/*
 * Run sql1 (the digest id) then sql2 (its members) in one transaction, both
 * bound to ?1 id, ?2 i2, ?3 t3, ?4 t4 as types says: each names all four
 * (store_sq() binds every one), an unused one as "CAST(?2 AS BIGINT) IS NOT NULL"
 * or "CAST(?4 AS TEXT) IS NULL" (typed: PostgreSQL infers no type otherwise).
 */
static enum err digest_update(struct store *st, const char *what, const char *sql1,
			      const char *sql2, const char *types, int64_t id, int64_t i2,
			      const char *t3, const char *t4)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st)
		return ERR_INVALID;
	rc = store_txn_begin(st, &msg);
	if (rc == ERR_OK)
		rc = store_sq(st, sql1, what, &msg, NULL, types, id, i2, t3, t4);
	if (rc == ERR_OK && db_changes(st->db) == 0)
		rc = ERR_NOTFOUND;
	if (rc == ERR_OK && sql2)
		rc = store_sq(st, sql2, what, &msg, NULL, types, id, i2, t3, t4);
	rc = store_txn_end(st, rc, &msg);
	return store_done(rc, what, &msg);
}

enum err store_digest_sent(struct store *st, int64_t id, int64_t sent_at_ms,
			   const char *slack_channel_id, const char *slack_ts)
{
	return digest_update(st, "digest sent",
			     "UPDATE digests SET state = 'sent', sent_at_ms = ?2, "
			     "slack_channel_id = ?3, slack_ts = ?4 WHERE id = ?1 AND state = 'pending'",
			     "UPDATE notices SET state = 'sent', sent_at_ms = ?2, "
			     "slack_channel_id = ?3, slack_ts = ?4 WHERE digest_id = ?1 AND "
			     "state = 'pending'", "iitt", id, sent_at_ms, slack_channel_id, slack_ts);
}

enum err store_digest_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *channel,
			    const char *error)
{
	return digest_update(st, "retry digest",
			     "UPDATE digests SET attempts = attempts + 1, next_attempt_at_ms = ?2, "
			     "channel = coalesce(?3, channel), last_error = ?4 WHERE id = ?1 AND "
			     "state = 'pending'",
			     "UPDATE notices SET channel = coalesce(?3, channel), last_error = ?4 "
			     "WHERE digest_id = ?1 AND state = 'pending' AND "
			     "CAST(?2 AS BIGINT) IS NOT NULL",
			     "iitt", id, next_at_ms, channel, error);
}

enum err store_digest_dead(struct store *st, int64_t id, const char *reason)
{
	return digest_update(st, "digest dead",
			     "UPDATE digests SET state = 'dead', attempts = attempts + 1, "
			     "last_error = ?3 WHERE id = ?1 AND state = 'pending' AND "
			     "CAST(?2 AS BIGINT) IS NOT NULL AND CAST(?4 AS TEXT) IS NULL",
			     "UPDATE notices SET state = 'dead', last_error = ?3 WHERE "
			     "digest_id = ?1 AND state = 'pending' AND CAST(?2 AS BIGINT) IS NOT NULL "
			     "AND CAST(?4 AS TEXT) IS NULL",
			     "iitt", id, (int64_t)0, reason, (const char *)NULL);
}

enum err store_digest_members(struct store *st, int64_t id, struct store_notice **out, size_t *n)
{
	struct store_rows list = STORE_ROWS_INIT(struct store_notice, 0, store_read_notice_row);
	struct buf msg = BUF_INIT;
	enum err rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return ERR_INVALID;
	rc = store_sq_rows(st, "SELECT " NOTICE_COLS " FROM notices WHERE digest_id = ?1 "
			       "ORDER BY id", "digest members", &list, &msg, "i", id);
	return notices_done(rc, "digest members", &list, out, n, &msg);
}

int64_t store_digest_pending_count(struct store *st)
{
	if (!st)
		return -1;
	return store_sq_count(st, "SELECT count(*) FROM digests WHERE state = 'pending'",
			      "pending digests", "");
}

void store_digest_release(struct store_digest *d)
{
	if (!d)
		return;
	const char *const owned[] = { d->kind, d->channel, d->thread_ts, d->text,
				      d->slack_channel_id, d->slack_ts, d->last_error };

	store_free_strs(owned, STORE_N_FIELDS(owned));
	memset(d, 0, sizeof(*d));
}
