/*
 * store_map.c - the (receiver, key) -> issue map and the record of repository
 * scans that rebuild it.  Part of the store (store.c); shares its connection
 * and helpers via store_int.h.
 */
#include "store/store_map.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/xalloc.h"
#include "core/banned.h"

#define EACH_PAGE_ROWS 64

/* The words of enum store_issue_state in issues.state (and GitHub's). */
#define N_ISSUE_STATES 2
static const char *const issue_states[N_ISSUE_STATES] = {
	[STORE_ISSUE_OPEN] = "open",
	[STORE_ISSUE_CLOSED] = "closed",
};

const char *store_issue_state_str(enum store_issue_state state)
{
	return store_state_word(issue_states, N_ISSUE_STATES, (int)state);
}

enum err store_issue_state_parse(const char *word, enum store_issue_state *out)
{
	int i = store_state_index(issue_states, N_ISSUE_STATES, word, -1);

	if (i < 0)
		return ERR_INVALID;
	*out = (enum store_issue_state)i;
	return ERR_OK;
}

enum err store_check_issue(const struct store_issue *row, struct buf *errmsg)
{
	const char *missing = "row";

	if (row) {
		const struct store_field need[] = {
			{ "receiver", row->receiver }, { "key", row->key }, { "repo", row->repo },
		};

		missing = store_first_empty(need, STORE_N_FIELDS(need));
	}
	if (missing) {
		buf_setf(errmsg, "store: issue row: %s is empty", missing);
		return ERR_INVALID;
	}
	if (!*store_issue_state_str(row->state)) {
		buf_setf(errmsg, "store: issue row: state %d is not open or closed",
			 (int)row->state);
		return ERR_INVALID;
	}
	return ERR_OK;
}

/* Upsert row.  Caller holds db_mu. */
enum err store_put_issue(struct store *st, const struct store_issue *row, struct buf *errmsg)
{
	return store_run(st, S_IS_PUT, "put issue", errmsg, "tttittiiiiiitttttt", row->receiver,
			 row->key, row->repo, row->number, store_issue_state_str(row->state),
			 row->state_reason,
			 row->episode_starts_ms, row->resolved_ends_ms, row->closed_at_ms,
			 row->previous_number, row->created_at_ms, row->updated_at_ms,
			 row->dead_reason, row->alertname, row->title, row->etag, row->labels,
			 row->previous_url);
}

/* ---- the issue map ---- */

static void read_issue(struct db_stmt *s, void *row)
{
	struct store_issue *out = row;

	out->receiver = store_col_str(s, 0);
	out->key = store_col_str(s, 1);
	out->repo = store_col_str(s, 2);
	out->number = db_col_int(s, 3);
	out->state = (enum store_issue_state)store_col_state(s, 4, issue_states, N_ISSUE_STATES,
							     STORE_ISSUE_OPEN);
	out->state_reason = store_col_str(s, 5);
	out->episode_starts_ms = db_col_int(s, 6);
	out->resolved_ends_ms = db_col_int(s, 7);
	out->closed_at_ms = db_col_int(s, 8);
	out->previous_number = db_col_int(s, 9);
	out->created_at_ms = db_col_int(s, 10);
	out->updated_at_ms = db_col_int(s, 11);
	out->dead_reason = store_col_str(s, 12);
	out->alertname = store_col_str(s, 13);
	out->title = store_col_str(s, 14);
	out->etag = store_col_str(s, 15);
	out->labels = store_col_str(s, 16);
	out->previous_url = store_col_str(s, 17);
}

enum err store_issue_get(struct store *st, const char *receiver, const char *key,
			 struct store_issue *out)
{
	memset(out, 0, sizeof(*out));
	if (!st || store_empty(receiver) || store_empty(key))
		return ERR_INVALID;
	return store_row_alone(st, S_IS_GET, "get issue", read_issue, out, "tt", receiver, key);
}

enum err store_issue_put(struct store *st, const struct store_issue *row)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st)
		return ERR_INVALID;
	rc = store_check_issue(row, &msg);
	if (rc == ERR_OK) {
		pthread_mutex_lock(&st->db_mu);
		rc = store_put_issue(st, row, &msg);
		pthread_mutex_unlock(&st->db_mu);
		if (rc)
			store_log_db("put issue", &msg);
	}
	buf_release(&msg);
	return rc;
}

enum err store_issue_forget(struct store *st, const char *receiver, const char *key)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st || store_empty(receiver) || store_empty(key))
		return ERR_INVALID;
	rc = store_txn_begin(st, &msg);
	if (rc == ERR_OK)
		rc = store_run1(st, S_IS_FORGET, "forget issue", &msg, "tt", receiver, key);
	if (rc == ERR_OK)
		rc = store_run(st, S_EV_FORGET_STATE, "forget repeat state", &msg, "tt", receiver,
			       key);
	rc = store_txn_end(st, rc, &msg);
	return store_done(rc, "forget issue", &msg);
}

/*
 * Read up to EACH_PAGE_ROWS rows after (after_rcv, after_key) into page;
 * *n gets how many.  Keyset paging, so the lock is held per page only.
 */
static enum err read_page(struct store *st, const char *receiver, const char *after_rcv,
			  const char *after_key, struct store_issue *page, int *n,
			  struct buf *errmsg)
{
	enum stmt_id id = receiver ? S_IS_PAGE_RCV : S_IS_PAGE_ALL;
	struct db_stmt *s;
	enum err rc;

	*n = 0;
	pthread_mutex_lock(&st->db_mu);
	s = st->stmt[id];
	db_bind_text(s, 1, receiver ? receiver : after_rcv);
	db_bind_text(s, 2, after_key);
	db_bind_int(s, 3, EACH_PAGE_ROWS);
	while ((rc = store_step_row(st, s, "list issues", errmsg)) == ERR_OK) {
		memset(&page[*n], 0, sizeof(page[*n]));
		read_issue(s, &page[*n]);
		(*n)++;
	}
	if (rc == ERR_NOTFOUND)
		rc = ERR_OK;
	db_reset(s);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}

enum err store_issue_each(struct store *st, const char *receiver,
			  int (*fn)(void *ctx, const struct store_issue *row), void *ctx)
{
	struct store_issue page[EACH_PAGE_ROWS];
	struct buf msg = BUF_INIT;
	const char *after_rcv = xstrdup(""), *after_key = xstrdup("");
	enum err rc = ERR_OK;
	int n = 0, stop = 0;

	if (!st || !fn) {
		rc = ERR_INVALID;
		goto out;
	}
	do {
		rc = read_page(st, receiver, after_rcv, after_key, page, &n, &msg);
		for (int i = 0; i < n; i++) {
			if (!stop && rc == ERR_OK)
				stop = fn(ctx, &page[i]);
			if (i == n - 1) {
				store_free_str(after_rcv);
				store_free_str(after_key);
				after_rcv = page[i].receiver;
				after_key = page[i].key;
				page[i].receiver = page[i].key = NULL;
			}
			store_issue_release(&page[i]);
		}
	} while (rc == ERR_OK && !stop && n == EACH_PAGE_ROWS);
	if (rc == ERR_DB)
		store_log_db("list issues", &msg);
out:
	store_free_str(after_rcv);
	store_free_str(after_key);
	buf_release(&msg);
	return rc;
}

int64_t store_issue_count(struct store *st, enum store_issue_state state)
{
	if (!st || !*store_issue_state_str(state))
		return -1;
	return store_count(st, S_IS_COUNT_STATE, store_issue_state_str(state), "count issues");
}

void store_issue_release(struct store_issue *row)
{
	if (!row)
		return;
	const char *const owned[] = { row->receiver, row->key, row->repo, row->state_reason,
				      row->dead_reason, row->alertname, row->title, row->etag,
				      row->labels, row->previous_url };

	store_free_strs(owned, STORE_N_FIELDS(owned));
	row->receiver = row->key = NULL;
	row->repo = NULL;
	row->state_reason = row->dead_reason = row->alertname = row->title = NULL;
	row->etag = row->labels = row->previous_url = NULL;
}

/* ---- repository scans (map rebuild) ---- */

enum err store_scan_get(struct store *st, const char *receiver, const char *repo,
			int64_t *done_at_ms)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (!st || store_empty(receiver) || store_empty(repo))
		return ERR_INVALID;
	pthread_mutex_lock(&st->db_mu);
	rc = store_row(st, S_SCAN_GET, "read repo scan", &msg, "tt", receiver, repo);
	if (rc == ERR_OK) {
		if (done_at_ms)
			*done_at_ms = db_col_int(st->stmt[S_SCAN_GET], 0);
		db_reset(st->stmt[S_SCAN_GET]);
	}
	pthread_mutex_unlock(&st->db_mu);
	return store_done(rc, "read repo scan", &msg);
}

enum err store_scan_done(struct store *st, const char *receiver, const char *repo,
			 int64_t done_at_ms)
{
	if (!st || store_empty(receiver) || store_empty(repo))
		return ERR_INVALID;
	return store_run_alone(st, S_SCAN_PUT, "record repo scan", NULL, "tti", receiver, repo,
			       done_at_ms);
}

enum err store_scan_forget(struct store *st, const char *receiver, int64_t *n)
{
	if (!st || (receiver && !*receiver))
		return ERR_INVALID;
	return store_run_alone(st, S_SCAN_FORGET, "forget repo scans", n, "t", receiver);
}
