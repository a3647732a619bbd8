/*
 * store_outbox.c - the janitor's Slack outbox: notices queued, sent, retried,
 * dead-lettered and cancelled.  Part of the store (store.c); shares its
 * connection and helpers via store_int.h.
 */
#include "store/store_outbox.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/banned.h"

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
	const char *missing;
	enum err rc;

	if (!st || !n) {
		buf_setf(errmsg, "store: notice: no store or no notice");
		return ERR_INVALID;
	}
	n->id = 0;
	const struct store_field need[] = {
		{ "namespace", n->namespace }, { "pod", n->pod }, { "uid", n->uid },
		{ "text", n->text },
	};
	missing = store_first_empty(need, STORE_N_FIELDS(need));
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
	rc = store_insert(st, S_NO_INSERT, &n->id, "add notice", errmsg, "ttttitttttiit",
			  n->namespace, n->pod, n->uid, n->kind, n->expires_ms, n->notify, n->owner,
			  n->channel, n->thread_ts, n->text,
			  n->created_at_ms > 0 ? n->created_at_ms : clock_wall_ms(),
			  n->next_attempt_at_ms, n->line);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

const char *const store_notice_states[STORE_NOTICE_STATES] = {
	[STORE_NOTICE_PENDING] = "pending",
	[STORE_NOTICE_SENT] = "sent",
	[STORE_NOTICE_DEAD] = "dead",
};

const char *store_notice_state_str(enum store_notice_state state)
{
	return store_state_word(store_notice_states, STORE_NOTICE_STATES, (int)state);
}

void store_read_notice(struct db_stmt *s, struct store_notice *out)
{
	out->id = db_col_int(s, 0);
	out->namespace = store_col_str(s, 1);
	out->pod = store_col_str(s, 2);
	out->uid = store_col_str(s, 3);
	out->kind = store_col_str(s, 4);
	out->expires_ms = db_col_int(s, 5);
	out->notify = store_col_str(s, 6);
	out->owner = store_col_str(s, 7);
	out->channel = store_col_str(s, 8);
	out->thread_ts = store_col_str(s, 9);
	out->text = store_col_str(s, 10);
	out->state = (enum store_notice_state)store_col_state(s, 11, store_notice_states,
							      STORE_NOTICE_STATES, STORE_NOTICE_PENDING);
	out->attempts = (int)db_col_int(s, 12);
	out->next_attempt_at_ms = db_col_int(s, 13);
	out->created_at_ms = db_col_int(s, 14);
	out->sent_at_ms = db_col_int(s, 15);
	out->slack_channel_id = store_col_str(s, 16);
	out->slack_ts = store_col_str(s, 17);
	out->last_error = store_col_str(s, 18);
	out->digest_id = db_col_int(s, 19);
	out->line = store_col_str(s, 20);
}

void store_read_notice_row(struct db_stmt *s, void *row)
{
	store_read_notice(s, row);
}

enum err store_notice_next(struct store *st, int64_t now_ms, struct store_notice *out)
{
	memset(out, 0, sizeof(*out));
	if (!st)
		return ERR_INVALID;
	return store_row_alone(st, S_NO_NEXT, "next notice", store_read_notice_row, out, "i",
			       now_ms);
}

enum err store_notice_latest(struct store *st, const char *uid, const char *kind,
			     struct store_notice *out)
{
	memset(out, 0, sizeof(*out));
	if (!st || store_empty(uid) || store_empty(kind))
		return ERR_INVALID;
	return store_row_alone(st, S_NO_LATEST, "latest notice", store_read_notice_row, out, "tt",
			       uid, kind);
}

enum err store_notice_sent(struct store *st, int64_t id, int64_t sent_at_ms, const char *channel,
			   const char *slack_channel_id, const char *slack_ts)
{
	if (!st)
		return ERR_INVALID;
	return store_run1_alone(st, S_NO_SENT, "notice sent", "iittt", id, sent_at_ms, channel,
				slack_channel_id, slack_ts);
}

enum err store_notice_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *channel,
			    const char *error)
{
	if (!st)
		return ERR_INVALID;
	return store_run1_alone(st, S_NO_RETRY, "retry notice", "iitt", id, next_at_ms, channel,
				error);
}

enum err store_notice_dead(struct store *st, int64_t id, const char *reason)
{
	if (!st)
		return ERR_INVALID;
	return store_run1_alone(st, S_NO_DEAD, "notice dead", "it", id, reason);
}

enum err store_notice_cancel(struct store *st, const char *uid, const char *reason, int64_t *n)
{
	if (n)
		*n = 0;
	if (!st || store_empty(uid))
		return ERR_INVALID;
	return store_run_alone(st, S_NO_CANCEL, "cancel notices", n, "tt", uid, reason);
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
	const char *const owned[] = { n->namespace, n->pod, n->uid, n->kind, n->notify, n->owner,
				      n->channel, n->thread_ts, n->text, n->slack_channel_id,
				      n->slack_ts, n->last_error, n->line };

	store_free_strs(owned, STORE_N_FIELDS(owned));
	memset(n, 0, sizeof(*n));
}
