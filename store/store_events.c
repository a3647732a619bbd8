/*
 * store_events.c - the event inbox: group-committed intake, the workers' next/
 * wait/done/retry/dead calls, and pruning; store_dead.c lists and re-queues
 * the dead letters.  Part of the store (store.c); shares its connection and
 * helpers via store_int.h.
 */
#include "store/store_events.h"
#include "store/store_int.h"

#include <errno.h>
#include <stdio.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/clock.h"
#include "core/xalloc.h"
#include "store/store_lock.h"
#include "core/banned.h"

/* ---- intake: group commit ---- */

/*
 * Dead-letter pending event id of (receiver, key) with reason and, when it is
 * one of the issue's own transitions (kind "bridge"), set the reason on its
 * map row, if any: a failed silence command (kind "silence", same key) says
 * nothing about the issue, whose card would otherwise show it.  Older dead
 * letters that id repeats (the same alert state and reason: a re-sent
 * notification) are deleted, so one dead letter stands for them.  Caller
 * holds db_mu inside a transaction.
 */
static enum err mark_dead(struct store *st, int64_t id, const char *receiver, const char *key,
			  int64_t now_ms, const char *reason, struct buf *errmsg)
{
	enum err rc = store_run(st, S_EV_DEAD, "dead-letter event", errmsg, "iit", id, now_ms,
				reason);

	if (rc == ERR_OK)
		rc = store_run(st, S_EV_DEAD_SUPERSEDE, "replace repeated dead letters", errmsg,
			       "i", id);
	if (rc == ERR_OK)
		rc = store_run(st, S_IS_SET_DEAD, "set dead reason", errmsg, "ttti", receiver, key,
			       reason, id);
	return rc;
}

static enum err check_event(const struct store_event *ev, size_t i, struct buf *errmsg)
{
	const struct store_field need[] = {
		{ "kind", ev->kind },     { "receiver", ev->receiver }, { "key", ev->key },
		{ "status", ev->status }, { "payload", ev->payload },
	};
	const char *missing = store_first_empty(need, STORE_N_FIELDS(need));

	if (missing) {
		buf_setf(errmsg, "store: event %zu: %s is empty", i, missing);
		return ERR_INVALID;
	}
	if (strcmp(ev->status, "firing") && strcmp(ev->status, "resolved")) {
		buf_setf(errmsg, "store: event %zu: status \"%s\" is not firing or resolved", i,
			 ev->status);
		return ERR_INVALID;
	}
	return ERR_OK;
}

static enum err insert_event(struct store *st, struct store_event *ev, int64_t now,
			     struct buf *errmsg)
{
	enum err rc = store_insert(st, S_EV_INSERT, &ev->id, "insert event", errmsg, "ttttiitit",
				   ev->kind, ev->receiver, ev->key, ev->status, ev->starts_at_ms,
				   ev->ends_at_ms, ev->payload,
				   ev->received_at_ms > 0 ? ev->received_at_ms : now,
				   ev->repeat_state);

	if (rc == ERR_OK && !store_empty(ev->dead_reason))
		rc = mark_dead(st, ev->id, ev->receiver, ev->key, now, ev->dead_reason, errmsg);
	return rc;
}

int store_event_may_repeat(const struct store_event *ev)
{
	return ev->repeat_state && store_empty(ev->dead_reason);
}

/*
 * Whether ev repeats the newest comparable event of its key (S_EV_REPEAT):
 * sets ev->repeated; 0 for an event without repeat_state.
 */
static enum err check_repeat(struct store *st, struct store_event *ev, struct buf *errmsg)
{
	enum err rc;

	ev->repeated = 0;
	if (!store_event_may_repeat(ev))
		return ERR_OK;
	rc = store_row(st, S_EV_REPEAT, "repeat check", errmsg, "ttttiit", ev->kind, ev->receiver,
		       ev->key, ev->status, ev->starts_at_ms, ev->ends_at_ms, ev->repeat_state);
	if (rc == ERR_NOTFOUND)
		return ERR_OK;
	if (rc == ERR_OK) {
		ev->repeated = db_col_int(st->stmt[S_EV_REPEAT], 0) != 0;
		db_reset(st->stmt[S_EV_REPEAT]);
	}
	return rc;
}

/* 1 when every event of list is a repeat (read outside a transaction); 0 on doubt. */
static int all_repeats(struct store *st, struct batch *list)
{
	for (struct batch *b = list; b; b = b->next) {
		for (size_t i = 0; i < b->n; i++) {
			if (check_repeat(st, &b->evs[i], NULL) != ERR_OK || !b->evs[i].repeated)
				return 0;
		}
	}
	return 1;
}

/* Whether every event of evs[0..n) may be a repeat (the others need no question). */
static int batchable(const struct store_event *evs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!store_event_may_repeat(&evs[i]))
			return 0;
	}
	return 1;
}

#define REPEAT_BATCH 16  /* events per statement of batch_repeats() */

/*
 * PostgreSQL: the repeat rule for evs[0..n) (each with a repeat_state and
 * no dead_reason) in statements of up to REPEAT_BATCH events, one round
 * trip each instead of one per event.  Sets each event's repeated.
 */
static enum err batch_repeats(struct store *st, struct store_event *evs, size_t n,
			      struct buf *errmsg)
{
	struct buf sql = BUF_INIT;
	struct db_stmt *s = NULL;
	enum err rc = ERR_OK;

	for (size_t at = 0; at < n && rc == ERR_OK; at += REPEAT_BATCH) {
		size_t m = n - at < REPEAT_BATCH ? n - at : REPEAT_BATCH;

		buf_reset(&sql);
		buf_adds(&sql, "WITH v (n, kind, receiver, key, status, starts, ends, state) AS "
			       "(VALUES ");
		for (size_t i = 0; i < m; i++)
			buf_printf(&sql, "%s(%zu, ?%zu, ?%zu, ?%zu, ?%zu, ?%zu, ?%zu, ?%zu)",
				   i ? ", " : "", i, 7 * i + 1, 7 * i + 2, 7 * i + 3, 7 * i + 4,
				   7 * i + 5, 7 * i + 6, 7 * i + 7);
		buf_adds(&sql, ") SELECT v.n, (" STORE_REPEAT_SQL("v.kind", "v.receiver", "v.key",
								"v.status", "v.starts", "v.ends",
								"v.state") ") FROM v ORDER BY v.n");
		if (db_prepare(st->db, buf_str(&sql), &s, NULL) != ERR_OK) {
			rc = store_db_fail(st, "repeat check", errmsg);
			break;
		}
		for (size_t i = 0; i < m; i++) {
			struct store_event *ev = &evs[at + i];
			int p = (int)(7 * i);

			db_bind_text(s, p + 1, ev->kind);
			db_bind_text(s, p + 2, ev->receiver);
			db_bind_text(s, p + 3, ev->key);
			db_bind_text(s, p + 4, ev->status);
			db_bind_int(s, p + 5, ev->starts_at_ms);
			db_bind_int(s, p + 6, ev->ends_at_ms);
			db_bind_text(s, p + 7, ev->repeat_state);
		}
		for (size_t i = 0; i < m && rc == ERR_OK; i++) {
			rc = store_step_row(st, s, "repeat check", errmsg);
			if (rc == ERR_NOTFOUND)  /* VALUES gives m rows: a mistake of ours */
				rc = store_db_fail(st, "repeat check", errmsg);
			else if (rc == ERR_OK && db_col_int(s, 0) == (int64_t)i)
				evs[at + i].repeated = !db_col_is_null(s, 1) && db_col_int(s, 1) != 0;
			else if (rc == ERR_OK)
				rc = store_db_fail(st, "repeat check", errmsg);
		}
		db_finalize(s);
		s = NULL;
	}
	buf_release(&sql);
	return rc;
}

static void mark_repeated(struct store_event *evs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		evs[i].repeated = 1;
}

enum err store_repeats(struct store *st, struct store_event *evs, size_t n, uint64_t *version,
		       int *all)
{
	struct buf msg = BUF_INIT;
	uint64_t known = version ? *version : 0, now_v = 0;
	enum err rc = ERR_OK;

	*all = 0;
	if (version)
		*version = 0;
	if (!st || (n > 0 && !evs))
		return ERR_INVALID;
	for (size_t i = 0; i < n; i++) {
		rc = check_event(&evs[i], i, &msg);
		if (rc)
			goto out;
		evs[i].repeated = 0;
	}
	/* A repeat of what went to a lost file is no repeat: Alertmanager must send it again. */
	rc = store_check_lost(st, 0, &msg);
	if (rc)
		goto out;
	/*
	 * Nothing written since the same events were all repeats: so they still
	 * are, stalled or not (what they repeat is stored already).
	 */
	if (known && n > 0 && db_data_version_unlocked(st->db, &now_v) && now_v == known) {
		mark_repeated(evs, n);
		*all = 1;
		*version = now_v;
		goto out;
	}
	rc = store_check_stall(st, &msg);
	if (rc == ERR_OK)
		rc = store_lock_intake(st, store_intake_deadline(st), &msg);
	if (rc) {
		store_note_intake(st, rc);
		goto out;
	}
	rc = db_data_version(st->db, &now_v, &msg);
	if (rc == ERR_OK && known && now_v == known && n > 0) {
		mark_repeated(evs, n);
	} else if (db_engine(st->db) == DB_POSTGRES && n > 1 && batchable(evs, n)) {
		rc = batch_repeats(st, evs, n, &msg);
	} else {
		for (size_t i = 0; i < n && rc == ERR_OK; i++) {
			rc = check_repeat(st, &evs[i], &msg);
			if (rc == ERR_OK && !evs[i].repeated)
				break;
		}
	}
	pthread_mutex_unlock(&st->db_mu);
	*all = rc == ERR_OK && n > 0;
	for (size_t i = 0; i < n && *all; i++)
		*all = evs[i].repeated;
	if (version && *all)
		*version = now_v;
	if (rc == ERR_DB) {
		store_note_intake(st, rc);
		store_log_db("repeat check", &msg);
	}
out:
	buf_release(&msg);
	return rc;
}

enum err store_dry_rows_go_live(struct store *st, int64_t *n)
{
	if (n)
		*n = 0;
	if (!st)
		return ERR_INVALID;
	return store_sq_alone(st, "UPDATE events SET repeat_state = NULL WHERE kind = 'bridge' AND "
			      "repeat_state IS NOT NULL AND EXISTS (SELECT 1 FROM issues AS i "
			      "WHERE i.receiver = events.receiver AND i.key = events.key AND "
			      "i.number = 0)", "forget the repeat states of dry-run rows", n, "");
}

/*
 * The leader's transaction: every event of every batch in list, one BEGIN
 * IMMEDIATE .. COMMIT, repeats left out (checked again inside it, so that an
 * event repeats one just inserted before it); none when all are repeats.
 * Sets each batch's rc (and ids, repeated or errmsg) but not done: the
 * caller publishes that under q_mu.  Returns 1 when a transaction committed.
 */
static int commit_group(struct store *st, struct batch *list, int64_t deadline_us)
{
	struct buf msg = BUF_INIT;
	int64_t now = clock_wall_ms();
	int committed = 0;
	enum err rc = store_check_lost(st, 0, &msg);

	if (rc == ERR_OK)
		rc = store_lock_intake(st, deadline_us, &msg);
	if (rc)
		goto fail;
	if (all_repeats(st, list))
		goto unlock;
	rc = store_begin(st, &msg);
	for (struct batch *b = list; b && rc == ERR_OK; b = b->next) {
		for (size_t i = 0; i < b->n && rc == ERR_OK; i++) {
			struct store_event *ev = &b->evs[i];

			rc = check_repeat(st, ev, &msg);
			if (rc == ERR_OK && !ev->repeated)
				rc = insert_event(st, ev, now, &msg);
		}
	}
	if (rc == ERR_OK)
		rc = store_commit(st, &msg);
	if (rc)
		store_rollback(st);
	committed = rc == ERR_OK;
unlock:
	pthread_mutex_unlock(&st->db_mu);
	/*
	 * Before anything is acknowledged: a file deleted or replaced under us
	 * took what was just committed with it (issue 19).
	 */
	if (rc == ERR_OK)
		rc = store_check_lost(st, 1, &msg);
fail:
	for (struct batch *b = list; b; b = b->next) {
		b->rc = rc;
		if (rc == ERR_OK)
			continue;
		for (size_t i = 0; i < b->n; i++) {
			b->evs[i].id = 0;
			b->evs[i].repeated = 0;
		}
		buf_setf(b->errmsg, "%s (%s)", buf_str(&msg),
			 committed ? "committed to that file, which nobody will open again"
				   : "nothing of this group commit was stored");
	}
	if (rc)
		store_log_db("enqueue", &msg);
	buf_release(&msg);
	return committed;
}

/* Wait on commit_cond (q_mu held) for SLICE_US at most, and never past deadline_us. */
static void wait_slice(struct store *st, int64_t deadline_us)
{
	int64_t until = clock_mono_us() + STORE_SLICE_US;
	struct timespec ts;

	if (until > deadline_us)
		until = deadline_us;
	ts.tv_sec = (time_t)(until / 1000000);
	ts.tv_nsec = (long)(until % 1000000) * 1000;
	(void)pthread_cond_timedwait(&st->commit_cond, &st->q_mu, &ts);
}

/*
 * A follower waited past deadline_us, or the store stalled: leave the queue
 * and say why (1), unless a leader took the batch already (0: it is in a
 * transaction bounded by the statement timeout, and its result is ours).
 * q_mu held.
 */
static int give_up(struct store *st, struct batch *me, int64_t deadline_us, struct buf *errmsg)
{
	struct batch **pp = &st->head;

	if (store_check_stall(st, errmsg) == ERR_OK) {
		if (clock_mono_us() < deadline_us)
			return 0;
		buf_setf(errmsg, "store %s: waited %lld ms for a group commit", db_name(st->db),
			 (long long)__atomic_load_n(&st->timeout_ms, __ATOMIC_ACQUIRE));
	}
	while (*pp && *pp != me)
		pp = &(*pp)->next;
	if (!*pp)
		return 0;
	*pp = me->next;
	if (st->tail == &me->next)
		st->tail = pp;
	return 1;
}

enum err store_enqueue(struct store *st, struct store_event *evs, size_t n, struct buf *errmsg)
{
	struct batch me = { evs, n, errmsg, ERR_OK, 0, NULL };
	struct batch *list;
	int64_t deadline;
	int committed;
	enum err rc;

	if (!st || (n > 0 && !evs)) {
		buf_setf(errmsg, "store: enqueue: no store or no events");
		return ERR_INVALID;
	}
	for (size_t i = 0; i < n; i++) {
		rc = check_event(&evs[i], i, errmsg);
		if (rc)
			return rc;
		evs[i].id = 0;
		evs[i].repeated = 0;
	}
	if (n == 0)
		return ERR_OK;

	deadline = store_intake_deadline(st);
	rc = store_check_stall(st, errmsg);
	if (rc) {
		store_note_intake(st, rc);
		return rc;
	}
	pthread_mutex_lock(&st->q_mu);
	*st->tail = &me;
	st->tail = &me.next;
	/* Wait while another leader commits; it may take our batch with it. */
	while (!me.done && st->committing) {
		wait_slice(st, deadline);
		if (!me.done && give_up(st, &me, deadline, errmsg)) {
			pthread_mutex_unlock(&st->q_mu);
			store_note_intake(st, ERR_DB);
			return ERR_DB;
		}
	}
	if (!me.done) {
		/* Lead: take everything queued so far (our batch included). */
		st->committing = 1;
		list = st->head;
		st->head = NULL;
		st->tail = &st->head;
		pthread_mutex_unlock(&st->q_mu);

		committed = commit_group(st, list, deadline);

		pthread_mutex_lock(&st->q_mu);
		for (struct batch *b = list; b; b = b->next) {
			b->done = 1;
			if (!committed)
				continue;
			st->stats.batches++;
			for (size_t i = 0; i < b->n; i++)
				st->stats.events += !b->evs[i].repeated;
		}
		if (committed) {
			st->stats.commits++;
			st->enq_seq++;
			pthread_cond_broadcast(&st->event_cond);
		} else if (list->rc != ERR_OK) {
			st->stats.failed_commits++;
		}
		st->committing = 0;
		/* Wake our followers, and the first of the next group to lead it. */
		pthread_cond_broadcast(&st->commit_cond);
	}
	rc = me.rc;
	pthread_mutex_unlock(&st->q_mu);
	store_note_intake(st, rc);
	return rc;
}

/* ---- workers: next, wait, done, retry, dead ---- */

void store_read_event(struct db_stmt *s, struct store_event *out)
{
	out->id = db_col_int(s, 0);
	out->kind = store_col_str(s, 1);
	out->receiver = store_col_str(s, 2);
	out->key = store_col_str(s, 3);
	out->status = store_col_str(s, 4);
	out->starts_at_ms = db_col_int(s, 5);
	out->ends_at_ms = db_col_int(s, 6);
	out->payload = store_col_str(s, 7);
	out->received_at_ms = db_col_int(s, 8);
	out->attempts = (int)db_col_int(s, 9);
	out->last_error = store_col_str(s, 10);
	out->progress = store_col_str(s, 11);
}

void store_read_event_row(struct db_stmt *s, void *row)
{
	store_read_event(s, row);
}

void store_events_hand(struct store_rows *list, enum err rc,
		       int (*fn)(void *ctx, const struct store_event *ev), void *ctx)
{
	struct store_event *evs = list->v;
	int stopped = 0;

	for (size_t i = 0; i < list->n; i++) {
		if (rc == ERR_OK && !stopped)
			stopped = fn(ctx, &evs[i]);
		store_event_release(&evs[i]);
	}
	free(evs);
	list->v = NULL;
	list->n = list->cap = 0;
}

/* The words of enum store_event_state in events.state. */
#define N_EVENT_STATES 3
static const char *const event_states[N_EVENT_STATES] = {
	[STORE_EVENT_PENDING] = "pending",
	[STORE_EVENT_DONE] = "done",
	[STORE_EVENT_DEAD] = "dead",
};

const char *store_event_state_str(enum store_event_state state)
{
	return store_state_word(event_states, N_EVENT_STATES, (int)state);
}

/* store_event_latest()'s row (EVENT_COLS, then state): the event and its state. */
struct latest {
	struct store_event *ev;
	enum store_event_state *state;
};

static void read_latest(struct db_stmt *s, void *o)
{
	struct latest *l = o;

	store_read_event(s, l->ev);
	*l->state = (enum store_event_state)store_col_state(s, 12, event_states, N_EVENT_STATES,
							    STORE_EVENT_PENDING);
}

enum err store_next_event(struct store *st, const char *kind, int64_t now_ms,
			  struct store_event *out)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	memset(out, 0, sizeof(*out));
	if (!st || store_empty(kind))
		return ERR_INVALID;
	/* No work from a lost file: what it did would be recorded where nobody reads it. */
	rc = store_check_lost(st, 1, &msg);
	buf_release(&msg);
	if (rc != ERR_OK)
		return rc;
	return store_row_alone(st, S_EV_NEXT, "next event", store_read_event_row, out, "ti", kind,
			       now_ms);
}

enum err store_event_latest(struct store *st, const char *kind, const char *receiver,
			    const char *key, struct store_event *out,
			    enum store_event_state *state)
{
	struct latest l = { out, state };

	memset(out, 0, sizeof(*out));
	if (!st || store_empty(kind) || store_empty(receiver) || store_empty(key) || !state)
		return ERR_INVALID;
	*state = STORE_EVENT_PENDING;
	return store_row_alone(st, S_EV_LATEST, "latest event", read_latest, &l, "ttt", kind,
			       receiver, key);
}

void store_event_release(struct store_event *ev)
{
	if (!ev)
		return;
	const char *const owned[] = { ev->kind, ev->receiver, ev->key, ev->status, ev->payload,
				      ev->last_error, ev->progress };

	store_free_strs(owned, STORE_N_FIELDS(owned));
	ev->kind = ev->receiver = ev->key = ev->status = ev->payload = ev->last_error = NULL;
	ev->progress = NULL;
}

/* The one integer a counting statement returns; -1 on error (logged). */
int64_t store_count(struct store *st, enum stmt_id id, const char *kind, const char *what)
{
	struct buf msg = BUF_INIT;
	struct db_stmt *s = st->stmt[id];
	int64_t n = -1;
	enum err rc;

	pthread_mutex_lock(&st->db_mu);
	rc = kind ? store_row(st, id, what, &msg, "t", kind) : store_row(st, id, what, &msg, "");
	if (rc == ERR_OK) {
		n = db_col_is_null(s, 0) ? INT64_MAX : db_col_int(s, 0);
		db_reset(s);
	} else if (rc == ERR_NOTFOUND) {
		(void)store_db_fail(st, what, &msg);
	}
	pthread_mutex_unlock(&st->db_mu);
	if (n == -1)
		store_log_db(what, &msg);
	buf_release(&msg);
	return n;
}

int64_t store_pending_count(struct store *st, const char *kind)
{
	if (!st || store_empty(kind))
		return -1;
	return store_count(st, S_EV_PENDING, kind, "pending count");
}

int64_t store_dead_count(struct store *st)
{
	if (!st)
		return -1;
	return store_count(st, S_EV_DEAD_COUNT, NULL, "dead count");
}

int64_t store_oldest_pending_ms(struct store *st, const char *kind)
{
	if (!st || store_empty(kind))
		return -1;
	return store_count(st, S_EV_OLDEST_PENDING, kind, "oldest pending");
}

/* wait_ms from now on CLOCK_MONOTONIC (clock_mono_us()), for pthread_cond_timedwait(). */
static struct timespec mono_deadline(int64_t wait_ms)
{
	int64_t until_us = clock_mono_us() + wait_ms * 1000;
	struct timespec ts;

	ts.tv_sec = (time_t)(until_us / 1000000);
	ts.tv_nsec = (long)(until_us % 1000000) * 1000;
	return ts;
}

struct store_mark store_mark(struct store *st)
{
	struct store_mark m = { 0, 0 };

	if (!st)
		return m;
	pthread_mutex_lock(&st->q_mu);
	m.seq = st->enq_seq;
	m.gen = st->wake_gen;
	pthread_mutex_unlock(&st->q_mu);
	return m;
}

/* The cache slot of kind (NULL: any), under q_mu; NULL for a kind too long to keep. */
static struct due_cache *due_slot(struct store *st, const char *kind)
{
	struct due_cache *free_slot = NULL;

	if (kind && strlen(kind) >= sizeof(st->due[0].kind))
		return NULL;
	for (size_t i = 0; i < sizeof(st->due) / sizeof(st->due[0]); i++) {
		struct due_cache *d = &st->due[i];

		if (!d->any && !d->kind[0]) {
			if (!free_slot)
				free_slot = d;
			continue;
		}
		if (kind ? !d->any && !strcmp(d->kind, kind) : d->any)
			return d;
	}
	if (free_slot) {
		if (kind)
			snprintf(free_slot->kind, sizeof(free_slot->kind), "%s", kind);
		else
			free_slot->any = 1;
	}
	return free_slot;
}

/*
 * When the earliest head of kind's queue is due: the cached time while no
 * event left the queue or changed its retry time since it was read and it
 * is still ahead (a time passed is read again: nothing was due at the
 * caller's step), else a scan of the pending events (S_EV_DUE_KIND).
 */
static int64_t due_time(struct store *st, const char *kind, int use_cache, int64_t now)
{
	struct due_cache *d;
	uint64_t changes;
	int64_t due;

	pthread_mutex_lock(&st->q_mu);
	d = use_cache ? due_slot(st, kind) : NULL;
	changes = st->queue_changes;
	if (d && d->valid && d->changes == changes && d->due > now) {
		due = d->due;
		pthread_mutex_unlock(&st->q_mu);
		return due;
	}
	pthread_mutex_unlock(&st->q_mu);
	if (kind)
		due = store_count(st, S_EV_DUE_KIND, kind, "due time");
	else
		due = store_count(st, S_EV_DUE_ANY, NULL, "due time");
	if (d && due >= 0) {
		pthread_mutex_lock(&st->q_mu);
		d->due = due;
		d->changes = changes;
		d->valid = 1;
		pthread_mutex_unlock(&st->q_mu);
	}
	return due;
}

static void wait_kind(struct store *st, const char *kind, const struct store_mark *mark,
		      int64_t timeout_ms)
{
	uint64_t seq, gen;
	int64_t due, now, wait_ms;
	struct timespec deadline;

	if (!st || timeout_ms <= 0)
		return;
	if (timeout_ms > INT64_C(86400000))
		timeout_ms = INT64_C(86400000);
	if (store_shared(st) && timeout_ms > STORE_SHARED_WAIT_MS)
		timeout_ms = STORE_SHARED_WAIT_MS;  /* another replica's enqueue wakes nobody here */
	pthread_mutex_lock(&st->q_mu);
	if (st->closing) {
		pthread_mutex_unlock(&st->q_mu);
		return;
	}
	st->waiters++;
	/* Snapshot before looking at the table: a commit after this changes enq_seq. */
	seq = mark ? mark->seq : st->enq_seq;
	gen = mark ? mark->gen : st->wake_gen;
	pthread_mutex_unlock(&st->q_mu);

	now = clock_wall_ms();
	due = due_time(st, kind, mark != NULL, now);
	wait_ms = timeout_ms;
	if (due >= 0 && due < INT64_MAX)
		wait_ms = due <= now ? 0 : (due - now < wait_ms ? due - now : wait_ms);
	deadline = mono_deadline(wait_ms);

	pthread_mutex_lock(&st->q_mu);
	while (wait_ms > 0 && !st->closing && st->enq_seq == seq && st->wake_gen == gen) {
		if (pthread_cond_timedwait(&st->event_cond, &st->q_mu, &deadline) == ETIMEDOUT)
			break;
	}
	st->waiters--;
	if (st->closing && st->waiters == 0)
		pthread_cond_broadcast(&st->idle_cond);
	pthread_mutex_unlock(&st->q_mu);
}

void store_wait_kind(struct store *st, const char *kind, int64_t timeout_ms)
{
	wait_kind(st, kind, NULL, timeout_ms);
}

void store_wait_kind_since(struct store *st, const char *kind, struct store_mark mark,
			   int64_t timeout_ms)
{
	wait_kind(st, kind, &mark, timeout_ms);
}

void store_wait(struct store *st, int64_t timeout_ms)
{
	store_wait_kind(st, NULL, timeout_ms);
}

void store_wake(struct store *st)
{
	if (!st)
		return;
	pthread_mutex_lock(&st->q_mu);
	st->wake_gen++;
	st->queue_changes++;  /* e.g. dead letters re-queued: due times read again */
	pthread_cond_broadcast(&st->event_cond);
	pthread_mutex_unlock(&st->q_mu);
}

void store_stats(struct store *st, struct store_stats *out)
{
	memset(out, 0, sizeof(*out));
	if (!st)
		return;
	pthread_mutex_lock(&st->q_mu);
	*out = st->stats;
	pthread_mutex_unlock(&st->q_mu);
}

/*
 * Why an UPDATE ... AND state = 'pending' changed nothing: ERR_NOTFOUND or
 * ERR_CONFLICT, with errmsg.  When the event is pending, ERR_OK and its
 * receiver and key copied to *receiver, *key (may be NULL).  Caller holds db_mu.
 */
enum err store_event_why(struct store *st, int64_t id, char **receiver, char **key,
			   struct buf *errmsg)
{
	struct db_stmt *s = st->stmt[S_EV_STATE];
	enum err rc = store_row(st, S_EV_STATE, "event state", errmsg, "i", id);

	if (rc == ERR_NOTFOUND) {
		buf_setf(errmsg, "store: event %lld does not exist", (long long)id);
		return rc;
	}
	if (rc)
		return rc;
	if (strcmp(db_col_text(s, 0), "pending")) {
		buf_setf(errmsg, "store: event %lld is already %s", (long long)id,
			 db_col_text(s, 0));
		rc = ERR_CONFLICT;
	} else {
		if (receiver)
			*receiver = store_col_str(s, 1);
		if (key)
			*key = store_col_str(s, 2);
	}
	db_reset(s);
	return rc;
}

void store_queue_changed(struct store *st)
{
	pthread_mutex_lock(&st->q_mu);
	st->queue_changes++;
	pthread_mutex_unlock(&st->q_mu);
}

enum err store_event_changed(struct store *st, int64_t id, enum err rc, const char *what,
			     struct buf *errmsg)
{
	store_queue_changed(st);
	if (rc != ERR_NOTFOUND)
		return rc;
	rc = store_event_why(st, id, NULL, NULL, errmsg);
	if (rc == ERR_OK) /* pending yet not updated */
		rc = what ? store_db_fail(st, what, errmsg) : ERR_CONFLICT;
	return rc;
}

enum err store_event_done(struct store *st, int64_t id, const struct store_issue *row,
			  struct buf *errmsg)
{
	enum err rc = ERR_OK;

	if (!st) {
		buf_setf(errmsg, "store: no store");
		return ERR_INVALID;
	}
	if (row) {
		rc = store_check_issue(row, errmsg);
		if (rc)
			return rc;
	}
	rc = store_txn_begin(st, errmsg);
	if (rc)
		goto out;
	rc = store_event_changed(st, id, store_run1(st, S_EV_DONE, "mark event done", errmsg, "ii", id,
					      clock_wall_ms()), "mark event done", errmsg);
	if (rc == ERR_OK && row)
		rc = store_put_issue(st, row, errmsg);
out:
	return store_txn_end(st, rc, errmsg);
}

enum err store_event_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *error)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = store_event_changed(st, id, store_run1(st, S_EV_RETRY, "retry event", &msg, "iit", id,
					      next_at_ms, error), NULL, &msg);
	pthread_mutex_unlock(&st->db_mu);
	return store_done(rc, "retry event", &msg);
}

enum err store_event_progress(struct store *st, int64_t id, const char *progress)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st || store_empty(progress))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = store_event_changed(st, id, store_run1(st, S_EV_PROGRESS, "record event progress", &msg,
					      "it", id, progress), NULL, &msg);
	pthread_mutex_unlock(&st->db_mu);
	return store_done(rc, "record event progress", &msg);
}

enum err store_event_dead(struct store *st, int64_t id, const char *reason)
{
	struct buf msg = BUF_INIT;
	char *receiver = NULL, *key = NULL;
	enum err rc;

	if (!st || store_empty(reason))
		return ERR_INVALID;
	rc = store_txn_begin(st, &msg);
	if (rc == ERR_OK)
		rc = store_event_why(st, id, &receiver, &key, &msg);
	if (rc == ERR_OK)
		rc = mark_dead(st, id, receiver, key, clock_wall_ms(), reason, &msg);
	rc = store_txn_end(st, rc, &msg);
	store_queue_changed(st);
	if (rc == ERR_DB)
		store_log_db("dead-letter event", &msg);
	free(receiver);
	free(key);
	buf_release(&msg);
	return rc;
}

enum err store_prune_done(struct store *st, int64_t before_ms, int64_t *deleted)
{
	struct buf msg = BUF_INIT;
	enum err rc;
	int64_t n;

	if (deleted)
		*deleted = 0;
	if (!st)
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = store_run(st, S_EV_PRUNE, "prune events", &msg, "i", before_ms);
	n = rc == ERR_OK ? db_changes(st->db) : 0;
	if (deleted)
		*deleted = n;
	/* Give the freed space back (sqlite: to the file system). */
	if (n > 0 && db_reclaim(st->db, NULL) != ERR_OK)
		rc = store_db_fail(st, "reclaim space", &msg);
	pthread_mutex_unlock(&st->db_mu);
	if (rc)
		store_log_db("prune events", &msg);
	buf_release(&msg);
	return rc;
}
