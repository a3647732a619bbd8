/*
 * store_groups.c - the states of grouped alerts: storm summaries and their
 * members (bridge/storm.h), and issue_per: group states (bridge/group.h).
 * Part of the store (store.c); shares its connection and helpers via store_int.h.
 */
#include "store/store_groups.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/banned.h"

/*
 * ---- storm summaries (schema version 3; bridge/storm.h) ----
 * These statements are prepared per call rather than kept in stmt_sql: they
 * run at most once per event or per summary update, and keeping them here
 * keeps the storm's part of the store in one block.
 */

#define SUMMARY_COLS                                                                \
	"s.id, s.receiver, s.repo, s.alertname, s.marker_key, s.number, s.state, "  \
	"s.created_at_ms, s.synced_at_ms, s.next_sync_ms, s.dirty, "                \
	"(SELECT count(*) FROM storm_members AS m WHERE m.summary_id = s.id AND m.firing = 1), " \
	"(SELECT count(*) FROM storm_members AS m WHERE m.summary_id = s.id)"

int64_t store_pending_creates(struct store *st, const char *receiver, int64_t at_most)
{
	if (!st || store_empty(receiver))
		return -1;
	if (at_most <= 0)
		at_most = INT64_MAX;
	return store_sq_count(st, "SELECT count(*) FROM (SELECT DISTINCT e.key FROM events AS e "
			      "WHERE e.kind = 'bridge' AND e.state = 'pending' AND "
			      "e.receiver = ?1 AND e.status = 'firing' AND NOT EXISTS "
			      "(SELECT 1 FROM issues AS i WHERE i.receiver = e.receiver AND "
			      "i.key = e.key) LIMIT ?2) AS c",
			      "pending creates", "ti", receiver, at_most);
}

/* The words of enum store_summary_state in storm_summaries.state. */
#define N_SUMMARY_STATES 3
static const char *const summary_states[N_SUMMARY_STATES] = {
	[STORE_SUMMARY_CREATING] = "creating",
	[STORE_SUMMARY_OPEN] = "open",
	[STORE_SUMMARY_CLOSED] = "closed",
};

const char *store_summary_state_str(enum store_summary_state state)
{
	return store_state_word(summary_states, N_SUMMARY_STATES, (int)state);
}

static void read_summary(struct db_stmt *s, void *o)
{
	struct store_summary *out = o;

	out->id = db_col_int(s, 0);
	out->receiver = store_col_str(s, 1);
	out->repo = store_col_str(s, 2);
	out->alertname = store_col_str(s, 3);
	out->marker_key = store_col_str(s, 4);
	out->number = db_col_int(s, 5);
	out->state = (enum store_summary_state)store_col_state(s, 6, summary_states, N_SUMMARY_STATES,
								STORE_SUMMARY_CREATING);
	out->created_at_ms = db_col_int(s, 7);
	out->synced_at_ms = db_col_int(s, 8);
	out->next_sync_ms = db_col_int(s, 9);
	out->dirty = (int)db_col_int(s, 10);
	out->firing = db_col_int(s, 11);
	out->total = db_col_int(s, 12);
}

enum err store_summary_live(struct store *st, const char *receiver, const char *repo,
			    const char *alertname, struct store_summary *out)
{
	memset(out, 0, sizeof(*out));
	if (!st || store_empty(receiver) || store_empty(repo) || !alertname)
		return ERR_INVALID;
	return store_sq_row_alone(st, "SELECT " SUMMARY_COLS " FROM storm_summaries AS s WHERE "
				  "s.receiver = ?1 AND s.repo = ?2 AND s.alertname = ?3 AND "
				  "s.state != 'closed' ORDER BY s.id DESC LIMIT 1",
				  "live summary", read_summary, out, "ttt", receiver, repo,
				  alertname);
}

enum err store_summary_get(struct store *st, int64_t id, struct store_summary *out)
{
	memset(out, 0, sizeof(*out));
	if (!st)
		return ERR_INVALID;
	return store_sq_row_alone(st, "SELECT " SUMMARY_COLS " FROM storm_summaries AS s WHERE "
				  "s.id = ?1", "get summary", read_summary, out, "i", id);
}

enum err store_summary_due(struct store *st, int64_t now_ms, int64_t interval_ms,
			   struct store_summary *out)
{
	memset(out, 0, sizeof(*out));
	if (!st)
		return ERR_INVALID;
	return store_sq_row_alone(st, "SELECT " SUMMARY_COLS " FROM storm_summaries AS s WHERE "
				  "s.state != 'closed' AND s.next_sync_ms <= ?1 AND "
				  "(s.state = 'creating' OR "
				  "(s.dirty <> 0 AND s.synced_at_ms + ?2 <= ?1) OR NOT EXISTS "
				  "(SELECT 1 FROM storm_members AS m WHERE "
				  "m.summary_id = s.id AND m.firing = 1)) "
				  "ORDER BY s.next_sync_ms, s.id LIMIT 1",
				  "due summary", read_summary, out, "ii", now_ms, interval_ms);
}

enum err store_summary_add(struct store *st, struct store_summary *s, struct buf *errmsg)
{
	enum err rc;

	if (!st || !s || store_empty(s->receiver) || store_empty(s->repo) || !s->alertname ||
	    store_empty(s->marker_key)) {
		buf_setf(errmsg, "store: summary: receiver, repo, alertname and marker_key needed");
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	s->id = 0;
	rc = store_sq_insert(st, "INSERT INTO storm_summaries (receiver, repo, alertname, "
			     "marker_key, state, created_at_ms) VALUES (?1, ?2, ?3, ?4, 'creating', "
			     "?5) RETURNING id", &s->id, "add summary", errmsg, "tttti", s->receiver,
			     s->repo, s->alertname, s->marker_key,
			     s->created_at_ms > 0 ? s->created_at_ms : clock_wall_ms());
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_summary_save(struct store *st, const struct store_summary *s, struct buf *errmsg)
{
	enum err rc;

	if (!st || !s || store_empty(s->repo) || !*store_summary_state_str(s->state)) {
		buf_setf(errmsg, "store: summary: repo and state (creating, open or closed) needed");
		return ERR_INVALID;
	}
	rc = store_txn_begin(st, errmsg);
	if (rc)
		goto out;
	rc = store_sq(st, "UPDATE storm_summaries SET repo = ?2, number = ?3, state = ?4, "
			  "synced_at_ms = ?5, next_sync_ms = ?6, dirty = ?7 WHERE id = ?1",
		      "save summary", errmsg, NULL, "ititiii", s->id, s->repo, s->number,
		      store_summary_state_str(s->state),
		      s->synced_at_ms, s->next_sync_ms, (int64_t)s->dirty);
	if (rc == ERR_OK && db_changes(st->db) == 0) {
		buf_setf(errmsg, "store: summary %lld does not exist", (long long)s->id);
		rc = ERR_NOTFOUND;
	}
	/* The map rows of its alerts follow the summary issue (store_groups.h). */
	if (rc == ERR_OK && s->state != STORE_SUMMARY_CREATING)
		rc = store_sq(st, "UPDATE issues SET repo = ?2, number = ?3, state = ?4, "
				  "state_reason = CASE WHEN ?4 = 'closed' THEN 'completed' END, "
				  "closed_at_ms = CASE WHEN ?4 = 'closed' THEN CAST(?5 AS BIGINT) ELSE 0 END, "
				  "updated_at_ms = ?5, etag = NULL WHERE (receiver, key) IN "
				  "(SELECT receiver, key FROM storm_members WHERE summary_id = ?1) "
				  "AND (state != ?4 OR number != ?3 OR repo != ?2)",
			      "update folded rows", errmsg, NULL, "ititi", s->id, s->repo, s->number,
			      store_summary_state_str(s->state),
			      s->synced_at_ms > 0 ? s->synced_at_ms : clock_wall_ms());
out:
	return store_txn_end(st, rc, errmsg);
}

static void read_member(struct db_stmt *s, void *o)
{
	struct store_member *out = o;

	out->key = store_col_str(s, 0);
	out->summary_id = db_col_int(s, 1);
	out->firing = (int)db_col_int(s, 2);
	out->starts_at_ms = db_col_int(s, 3);
	out->ends_at_ms = db_col_int(s, 4);
	out->line = store_col_str(s, 5);
}

enum err store_member_get(struct store *st, const char *receiver, const char *key,
			  struct store_member *out)
{
	memset(out, 0, sizeof(*out));
	if (!st || store_empty(receiver) || store_empty(key))
		return ERR_INVALID;
	return store_sq_row_alone(st, "SELECT key, summary_id, firing, starts_at_ms, ends_at_ms, "
				  "line FROM storm_members WHERE receiver = ?1 AND key = ?2",
				  "get member", read_member, out, "tt", receiver, key);
}

/* Mark pending event id done inside the caller's transaction.  Caller holds db_mu. */
static enum err mark_done(struct store *st, int64_t id, struct buf *errmsg)
{
	return store_event_changed(st, id, store_run1(st, S_EV_DONE, "mark event done", errmsg,
						      "ii", id, clock_wall_ms()),
				   "mark event done", errmsg);
}

enum err store_member_fold(struct store *st, int64_t event_id, const struct store_issue *row,
			   const struct store_member *m, int dirty, struct buf *errmsg)
{
	enum err rc;

	if (!st || !m || store_empty(m->key) || m->summary_id <= 0) {
		buf_setf(errmsg, "store: member: key and summary_id needed");
		return ERR_INVALID;
	}
	rc = store_check_issue(row, errmsg);
	if (rc)
		return rc;
	if (strcmp(row->key, m->key)) {
		buf_setf(errmsg, "store: member key \"%s\" is not the row's \"%s\"", m->key,
			 row->key);
		return ERR_INVALID;
	}
	rc = store_txn_begin(st, errmsg);
	if (rc)
		goto out;
	rc = mark_done(st, event_id, errmsg);
	if (rc == ERR_OK)
		rc = store_put_issue(st, row, errmsg);
	if (rc == ERR_OK)
		rc = store_sq(st, "INSERT INTO storm_members (receiver, key, summary_id, firing, "
				  "starts_at_ms, ends_at_ms, line) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) "
				  "ON CONFLICT (receiver, key) DO UPDATE SET summary_id = excluded.summary_id, "
				  "firing = excluded.firing, starts_at_ms = excluded.starts_at_ms, "
				  "ends_at_ms = excluded.ends_at_ms, line = excluded.line",
			      "fold member", errmsg, NULL, "ttiiiit", row->receiver, m->key, m->summary_id,
			      (int64_t)(m->firing != 0), m->starts_at_ms, m->ends_at_ms,
			      m->line ? m->line : "");
	if (rc == ERR_OK && dirty)
		rc = store_sq(st, "UPDATE storm_summaries SET dirty = 1 WHERE id = ?1", "mark summary",
			      errmsg, NULL, "i", m->summary_id);
out:
	return store_txn_end(st, rc, errmsg);
}

enum err store_member_unfold(struct store *st, const char *receiver, const char *key,
			     struct buf *errmsg)
{
	enum err rc;

	if (!st || store_empty(receiver) || store_empty(key)) {
		buf_setf(errmsg, "store: unfold: receiver and key needed");
		return ERR_INVALID;
	}
	rc = store_txn_begin(st, errmsg);
	if (rc == ERR_OK)
		rc = store_sq(st, "DELETE FROM issues WHERE receiver = ?1 AND key = ?2", "unfold row",
			      errmsg, NULL, "tt", receiver, key);
	if (rc == ERR_OK)
		rc = store_sq(st, "DELETE FROM storm_members WHERE receiver = ?1 AND key = ?2",
			      "unfold member", errmsg, NULL, "tt", receiver, key);
	return store_txn_end(st, rc, errmsg);
}

enum err store_member_list(struct store *st, int64_t summary_id, struct store_member **out,
			   size_t *n)
{
	struct store_rows list = STORE_ROWS_INIT(struct store_member, 0, read_member);
	struct buf msg = BUF_INIT;
	enum err rc;

	*out = NULL;
	*n = 0;
	if (!st)
		return ERR_INVALID;
	rc = store_sq_rows(st, "SELECT key, summary_id, firing, starts_at_ms, ends_at_ms, line "
			       "FROM storm_members WHERE summary_id = ?1 "
			       "ORDER BY firing DESC, starts_at_ms, key",
			   "list members", &list, &msg, "i", summary_id);
	if (rc) {
		store_member_list_free(list.v, list.n);
		list.v = NULL;
		list.n = 0;
	}
	*out = list.v;
	*n = list.n;
	return store_done(rc, "list members", &msg);
}

void store_member_release(struct store_member *m)
{
	if (!m)
		return;
	store_free_str(m->key);
	free(m->line);
	memset(m, 0, sizeof(*m));
}

void store_member_list_free(struct store_member *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++)
		store_member_release(&v[i]);
	free(v);
}

void store_summary_release(struct store_summary *s)
{
	if (!s)
		return;
	const char *const owned[] = { s->receiver, s->repo, s->alertname, s->marker_key };

	store_free_strs(owned, STORE_N_FIELDS(owned));
	memset(s, 0, sizeof(*s));
}

/* ---- issue_per: group states ---- */

#define GROUP_COLS "receiver, key, members, payload, dirty, synced_at_ms, next_sync_ms"

static void read_group(struct db_stmt *s, void *o)
{
	struct store_group *out = o;

	out->receiver = store_col_str(s, 0);
	out->key = store_col_str(s, 1);
	out->members = store_col_str(s, 2);
	out->payload = store_col_str(s, 3);
	out->dirty = (int)db_col_int(s, 4);
	out->synced_at_ms = db_col_int(s, 5);
	out->next_sync_ms = db_col_int(s, 6);
}

enum err store_group_get(struct store *st, const char *receiver, const char *key,
			 struct store_group *out)
{
	memset(out, 0, sizeof(*out));
	if (!st || store_empty(receiver) || store_empty(key))
		return ERR_INVALID;
	return store_sq_row_alone(st, "SELECT " GROUP_COLS " FROM group_states WHERE "
				  "receiver = ?1 AND key = ?2", "get group state", read_group, out,
				  "tt", receiver, key);
}

enum err store_group_due(struct store *st, int64_t now_ms, int64_t interval_ms,
			 struct store_group *out)
{
	memset(out, 0, sizeof(*out));
	if (!st)
		return ERR_INVALID;
	return store_sq_row_alone(st, "SELECT g.receiver, g.key, g.members, g.payload, g.dirty, "
				  "g.synced_at_ms, g.next_sync_ms FROM group_states AS g "
				  "JOIN issues AS i ON i.receiver = g.receiver AND i.key = g.key "
				  "WHERE "
				  "g.dirty = 1 AND g.next_sync_ms <= ?1 AND "
				  "g.synced_at_ms + ?2 <= ?1 AND i.number > 0 "
				  "ORDER BY CASE WHEN g.next_sync_ms > g.synced_at_ms + ?2 THEN "
				  "g.next_sync_ms ELSE g.synced_at_ms + ?2 END, g.key LIMIT 1",
				  "due group state", read_group, out, "ii", now_ms, interval_ms);
}

static enum err check_group(const struct store_group *g, struct buf *errmsg)
{
	if (!g || store_empty(g->receiver) || store_empty(g->key) || store_empty(g->members) || store_empty(g->payload)) {
		buf_setf(errmsg, "store: group state: receiver, key, members and payload needed");
		return ERR_INVALID;
	}
	return ERR_OK;
}

/* Upsert g.  Caller holds db_mu. */
static enum err put_group(struct store *st, const struct store_group *g, struct buf *errmsg)
{
	return store_sq(st, "INSERT INTO group_states (" GROUP_COLS ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, "
			    "?7) ON CONFLICT (receiver, key) DO UPDATE SET members = excluded.members, "
			    "payload = excluded.payload, dirty = excluded.dirty, "
			    "synced_at_ms = excluded.synced_at_ms, next_sync_ms = excluded.next_sync_ms",
			"put group state", errmsg, NULL, "ttttiii", g->receiver, g->key, g->members,
			g->payload, (int64_t)(g->dirty != 0), g->synced_at_ms, g->next_sync_ms);
}

enum err store_group_done(struct store *st, int64_t event_id, const struct store_issue *row,
			  const struct store_group *g, struct buf *errmsg)
{
	enum err rc;

	if (!st) {
		buf_setf(errmsg, "store: no store");
		return ERR_INVALID;
	}
	rc = check_group(g, errmsg);
	if (rc == ERR_OK && row)
		rc = store_check_issue(row, errmsg);
	if (rc)
		return rc;
	rc = store_txn_begin(st, errmsg);
	if (rc)
		goto out;
	rc = mark_done(st, event_id, errmsg);
	if (rc == ERR_OK && row)
		rc = store_put_issue(st, row, errmsg);
	if (rc == ERR_OK)
		rc = put_group(st, g, errmsg);
out:
	return store_txn_end(st, rc, errmsg);
}

enum err store_group_synced(struct store *st, const struct store_group *g, struct buf *errmsg)
{
	enum err rc;

	if (!st || !g || store_empty(g->receiver) || store_empty(g->key)) {
		buf_setf(errmsg, "store: group state: receiver and key needed");
		return ERR_INVALID;
	}
	pthread_mutex_lock(&st->db_mu);
	rc = store_sq(st, "UPDATE group_states SET dirty = ?3, synced_at_ms = ?4, next_sync_ms = ?5 "
			  "WHERE receiver = ?1 AND key = ?2",
		      "record group body update", errmsg, NULL, "ttiii", g->receiver, g->key,
		      (int64_t)(g->dirty != 0), g->synced_at_ms, g->next_sync_ms);
	if (rc == ERR_OK && db_changes(st->db) == 0) {
		buf_setf(errmsg, "store: no group state for %s", g->key);
		rc = ERR_NOTFOUND;
	}
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

void store_group_release(struct store_group *g)
{
	if (!g)
		return;
	const char *const owned[] = { g->receiver, g->key, g->members, g->payload };

	store_free_strs(owned, STORE_N_FIELDS(owned));
	memset(g, 0, sizeof(*g));
}
