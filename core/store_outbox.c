/*
 * store_outbox.c - the janitor's Slack outbox: notices queued, sent, retried,
 * dead-lettered and cancelled.  Part of the store (store.c); shares its
 * connection and helpers via store_int.h.
 */
#include "store_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "banned.h"

/* ---- the janitor's Slack outbox ---- */

static int notice_kind_valid(const char *kind)
{
	static const char *const kinds[] = { "notice", "reminder", "cancelled", "deleted" };

	for (size_t i = 0; kind && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kind, kinds[i]))
			return 1;
	return 0;
}

enum err store_notice_add(struct store *st, struct store_notice *n, struct buf *errmsg)
{
	sqlite3_stmt *s;
	const char *missing = NULL;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st || !n) {
		buf_setf(errmsg, "store: notice: no store or no notice");
		return ERR_INVALID;
	}
	n->id = 0;
	if (store_empty(n->namespace))
		missing = "namespace";
	else if (store_empty(n->pod))
		missing = "pod";
	else if (store_empty(n->uid))
		missing = "uid";
	else if (store_empty(n->text))
		missing = "text";
	if (missing) {
		buf_setf(errmsg, "store: notice: %s is empty", missing);
		return ERR_INVALID;
	}
	if (!notice_kind_valid(n->kind)) {
		buf_setf(errmsg, "store: notice: kind \"%s\" is not notice, reminder, cancelled "
			 "or deleted", n->kind ? n->kind : "");
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_NO_INSERT];
	store_bind_text(s, 1, n->namespace, &brc);
	store_bind_text(s, 2, n->pod, &brc);
	store_bind_text(s, 3, n->uid, &brc);
	store_bind_text(s, 4, n->kind, &brc);
	store_bind_int(s, 5, n->expires_ms, &brc);
	store_bind_text(s, 6, n->notify, &brc);
	store_bind_text(s, 7, n->owner, &brc);
	store_bind_text(s, 8, n->channel, &brc);
	store_bind_text(s, 9, n->thread_ts, &brc);
	store_bind_text(s, 10, n->text, &brc);
	store_bind_int(s, 11, n->created_at_ms > 0 ? n->created_at_ms : clock_wall_ms(), &brc);
	store_bind_int(s, 12, n->next_attempt_at_ms, &brc);
	store_bind_text(s, 13, n->line, &brc);
	rc = store_run(st, S_NO_INSERT, brc, "add notice", errmsg);
	if (rc == ERR_OK)
		n->id = sqlite3_last_insert_rowid(st->db);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

void store_read_notice(sqlite3_stmt *s, struct store_notice *out)
{
	out->id = sqlite3_column_int64(s, 0);
	out->namespace = store_col_str(s, 1);
	out->pod = store_col_str(s, 2);
	out->uid = store_col_str(s, 3);
	out->kind = store_col_str(s, 4);
	out->expires_ms = sqlite3_column_int64(s, 5);
	out->notify = store_col_str(s, 6);
	out->owner = store_col_str(s, 7);
	out->channel = store_col_str(s, 8);
	out->thread_ts = store_col_str(s, 9);
	out->text = store_col_str(s, 10);
	out->state = store_col_str(s, 11);
	out->attempts = sqlite3_column_int(s, 12);
	out->next_attempt_at_ms = sqlite3_column_int64(s, 13);
	out->created_at_ms = sqlite3_column_int64(s, 14);
	out->sent_at_ms = sqlite3_column_int64(s, 15);
	out->slack_channel_id = store_col_str(s, 16);
	out->slack_ts = store_col_str(s, 17);
	out->last_error = store_col_str(s, 18);
	out->digest_id = sqlite3_column_int64(s, 19);
	out->line = store_col_str(s, 20);
}

/* Step a one-row notice SELECT whose parameters are bound (brc their result). */
static enum err one_notice(struct store *st, enum stmt_id id, int brc, const char *what,
			   struct store_notice *out)
{
	struct buf msg = BUF_INIT;
	sqlite3_stmt *s = st->stmt[id];
	int src = brc == SQLITE_OK ? sqlite3_step(s) : brc;
	enum err rc = ERR_OK;

	if (src == SQLITE_ROW)
		store_read_notice(s, out);
	else if (src == SQLITE_DONE)
		rc = ERR_NOTFOUND;
	else
		rc = store_db_fail(st, what, &msg);
	store_done_with(s);
	if (rc == ERR_DB)
		store_log_db(what, &msg);
	buf_release(&msg);
	return rc;
}

enum err store_notice_next(struct store *st, int64_t now_ms, struct store_notice *out)
{
	enum err rc;
	int brc = SQLITE_OK;

	memset(out, 0, sizeof(*out));
	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	store_bind_int(st->stmt[S_NO_NEXT], 1, now_ms, &brc);
	rc = one_notice(st, S_NO_NEXT, brc, "next notice", out);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_notice_latest(struct store *st, const char *uid, const char *kind,
			     struct store_notice *out)
{
	enum err rc;
	int brc = SQLITE_OK;

	memset(out, 0, sizeof(*out));
	if (!st || store_empty(uid) || store_empty(kind))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	store_bind_text(st->stmt[S_NO_LATEST], 1, uid, &brc);
	store_bind_text(st->stmt[S_NO_LATEST], 2, kind, &brc);
	rc = one_notice(st, S_NO_LATEST, brc, "latest notice", out);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

/* Run an UPDATE of one pending notice; ERR_NOTFOUND when it changed nothing. */
static enum err update_notice(struct store *st, enum stmt_id id, int brc, const char *what)
{
	struct buf msg = BUF_INIT;
	enum err rc = store_run(st, id, brc, what, &msg);

	if (rc == ERR_OK && sqlite3_changes(st->db) == 0)
		rc = ERR_NOTFOUND;
	if (rc == ERR_DB)
		store_log_db(what, &msg);
	buf_release(&msg);
	return rc;
}

enum err store_notice_sent(struct store *st, int64_t id, int64_t sent_at_ms, const char *channel,
			   const char *slack_channel_id, const char *slack_ts)
{
	sqlite3_stmt *s;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_NO_SENT];
	store_bind_int(s, 1, id, &brc);
	store_bind_int(s, 2, sent_at_ms, &brc);
	store_bind_text(s, 3, channel, &brc);
	store_bind_text(s, 4, slack_channel_id, &brc);
	store_bind_text(s, 5, slack_ts, &brc);
	rc = update_notice(st, S_NO_SENT, brc, "notice sent");
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_notice_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *channel,
			    const char *error)
{
	sqlite3_stmt *s;
	enum err rc;
	int brc = SQLITE_OK;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[S_NO_RETRY];
	store_bind_int(s, 1, id, &brc);
	store_bind_int(s, 2, next_at_ms, &brc);
	store_bind_text(s, 3, channel, &brc);
	store_bind_text(s, 4, error, &brc);
	rc = update_notice(st, S_NO_RETRY, brc, "retry notice");
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_notice_dead(struct store *st, int64_t id, const char *reason)
{
	enum err rc;
	int brc = SQLITE_OK;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	store_bind_int(st->stmt[S_NO_DEAD], 1, id, &brc);
	store_bind_text(st->stmt[S_NO_DEAD], 2, reason, &brc);
	rc = update_notice(st, S_NO_DEAD, brc, "notice dead");
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_notice_cancel(struct store *st, const char *uid, const char *reason, int64_t *n)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int brc = SQLITE_OK;

	if (n)
		*n = 0;
	if (!st || store_empty(uid))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	store_bind_text(st->stmt[S_NO_CANCEL], 1, uid, &brc);
	store_bind_text(st->stmt[S_NO_CANCEL], 2, reason, &brc);
	rc = store_run(st, S_NO_CANCEL, brc, "cancel notices", &msg);
	if (rc == ERR_OK && n)
		*n = sqlite3_changes64(st->db);
	pthread_mutex_unlock(&st->db_mu);
	if (rc)
		store_log_db("cancel notices", &msg);
	buf_release(&msg);
	return rc;
}

int64_t store_notice_pending_count(struct store *st)
{
	if (!st)
		return -1;
	return store_count(st, S_NO_PENDING, NULL, "pending notices");
}

void store_notice_release(struct store_notice *n)
{
	if (!n)
		return;
	free(n->namespace);
	free(n->pod);
	free(n->uid);
	free(n->kind);
	free(n->notify);
	free(n->owner);
	free(n->channel);
	free(n->thread_ts);
	free(n->text);
	free(n->state);
	free(n->slack_channel_id);
	free(n->slack_ts);
	free(n->last_error);
	free(n->line);
	memset(n, 0, sizeof(*n));
}
