/*
 * test_store_map.c - the issue map (core/store_map.c): put, get, forget,
 * paging, bad rows, and done + row atomicity.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "tests/unit/helpers/store_fixture.h"

/* ---- the map ---- */

struct collect {
	char seen[300][40];
	int n;
	int stop_after;
	struct store *st;  /* when set, fn calls back into the store */
};

static int collect_fn(void *ctx, const struct store_issue *row)
{
	struct collect *c = ctx;
	struct store_issue again;

	if (c->n < 300)
		snprintf(c->seen[c->n], sizeof(c->seen[0]), "%s/%s", row->receiver, row->key);
	c->n++;
	if (c->st) {
		/* Re-entering the store from fn must not deadlock. */
		if (store_issue_get(c->st, row->receiver, row->key, &again) != ERR_OK)
			return 1;
		store_issue_release(&again);
	}
	return c->stop_after && c->n >= c->stop_after;
}

/*
 * store_issue_each(st, receiver) into c, emptied first, stopping after stop_after rows
 * (0: all); fails unless it returns ERR_OK.  The rows collect_fn saw.
 */
static int each(struct store *st, const char *receiver, struct collect *c, int stop_after)
{
	memset(c, 0, sizeof(*c));
	c->stop_after = stop_after;
	assert_int_equal(store_issue_each(st, receiver, collect_fn, c), ERR_OK);
	return c->n;
}

static void map_put_get_forget_each(void **state)
{
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("team-b", "k2", 11), got;
	struct collect *c = calloc(1, sizeof(*c));

	assert_int_equal(store_issue_get(st, "team-b", "k2", &got), ERR_NOTFOUND);
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	row = sfx_mkrow("team-a", "k9", 12);
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	row = sfx_mkrow("team-a", "k1", 13);
	row.state = STORE_ISSUE_CLOSED;
	row.state_reason = (char *)"not_planned";
	row.closed_at_ms = 1700000005000;
	row.resolved_ends_ms = 1700000004000;
	row.previous_number = 3;
	assert_int_equal(store_issue_put(st, &row), ERR_OK);

	assert_int_equal(store_issue_get(st, "team-a", "k1", &got), ERR_OK);
	assert_string_equal(got.receiver, "team-a");
	assert_string_equal(got.key, "k1");
	assert_string_equal(got.repo, "my-org/cluster-alerts");
	assert_int_equal(got.number, 13);
	assert_int_equal(got.state, STORE_ISSUE_CLOSED);
	assert_string_equal(got.state_reason, "not_planned");
	assert_int_equal(got.episode_starts_ms, 1700000000000);
	assert_int_equal(got.resolved_ends_ms, 1700000004000);
	assert_int_equal(got.closed_at_ms, 1700000005000);
	assert_int_equal(got.previous_number, 3);
	assert_int_equal(got.created_at_ms, 1700000002000);
	assert_int_equal(got.updated_at_ms, 1700000003000);
	assert_null(got.dead_reason);
	store_issue_release(&got);
	store_issue_release(NULL);

	/* Replace keeps one row per (receiver, key). */
	row = sfx_mkrow("team-a", "k1", 14);
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_issue_get(st, "team-a", "k1", &got), ERR_OK);
	assert_int_equal(got.number, 14);
	assert_int_equal(got.state, STORE_ISSUE_OPEN);
	assert_null(got.state_reason);
	store_issue_release(&got);

	assert_int_equal(each(st, NULL, c, 0), 3);
	assert_string_equal(c->seen[0], "team-a/k1");
	assert_string_equal(c->seen[1], "team-a/k9");
	assert_string_equal(c->seen[2], "team-b/k2");
	assert_int_equal(each(st, "team-b", c, 0), 1);
	assert_string_equal(c->seen[0], "team-b/k2");
	assert_int_equal(each(st, NULL, c, 2), 2);
	assert_int_equal(store_issue_each(st, NULL, NULL, c), ERR_INVALID);

	assert_int_equal(store_issue_forget(st, "team-a", "k9"), ERR_OK);
	assert_int_equal(store_issue_forget(st, "team-a", "k9"), ERR_NOTFOUND);
	assert_int_equal(store_issue_get(st, "team-a", "k9", &got), ERR_NOTFOUND);
	assert_int_equal(store_issue_forget(st, "", "k9"), ERR_INVALID);
	assert_int_equal(store_issue_get(st, "team-a", NULL, &got), ERR_INVALID);
	free(c);
}

/* Issues by state: dry-run rows (no issue) are not counted, one storm summary counts once. */
static void issue_count_by_state(void **state)
{
	struct store *st = sfx_store(state);
	struct store_issue row;

	assert_int_equal(store_issue_count(st, STORE_ISSUE_OPEN), 0);
	row = sfx_mkrow("team-a", "k1", 11);
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	row = sfx_mkrow("team-a", "k2", 12);
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	row = sfx_mkrow("team-a", "k3", 12);   /* folded into the same summary issue */
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	row = sfx_mkrow("team-a", "k4", 0);    /* dry-run: no issue yet */
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	row = sfx_mkrow("team-b", "k5", 13);
	row.state = STORE_ISSUE_CLOSED;
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_issue_count(st, STORE_ISSUE_OPEN), 2);
	assert_int_equal(store_issue_count(st, STORE_ISSUE_CLOSED), 1);
	assert_int_equal(store_issue_count(st, (enum store_issue_state)9), -1);
	assert_int_equal(store_issue_count(NULL, STORE_ISSUE_OPEN), -1);
}

static void map_each_pages_and_allows_reentry(void **state)
{
	struct store *st = sfx_store(state);
	struct collect *c = calloc(1, sizeof(*c));
	char key[32];

	for (int i = 0; i < 150; i++) {
		snprintf(key, sizeof(key), "key%03d", i);
		struct store_issue row = sfx_mkrow(i % 2 ? "odd" : "even", key, i + 1);
		assert_int_equal(store_issue_put(st, &row), ERR_OK);
	}
	c->st = st;
	assert_int_equal(store_issue_each(st, NULL, collect_fn, c), ERR_OK);
	assert_int_equal(c->n, 150);
	assert_string_equal(c->seen[0], "even/key000");
	assert_string_equal(c->seen[74], "even/key148");
	assert_string_equal(c->seen[75], "odd/key001");
	assert_string_equal(c->seen[149], "odd/key149");
	assert_int_equal(each(st, "odd", c, 0), 75);
	assert_string_equal(c->seen[74], "odd/key149");
	free(c);
}

static void map_put_rejects_bad_rows(void **state)
{
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("default", "k", 1);
	struct collect c;

	row.repo = NULL;
	assert_int_equal(store_issue_put(st, &row), ERR_INVALID);
	row = sfx_mkrow("default", "", 1);
	assert_int_equal(store_issue_put(st, &row), ERR_INVALID);
	row = sfx_mkrow("default", "k", 1);
	row.state = (enum store_issue_state)9;  /* neither open nor closed */
	assert_int_equal(store_issue_put(st, &row), ERR_INVALID);
	assert_int_equal(store_issue_put(st, NULL), ERR_INVALID);
	assert_int_equal(each(st, NULL, &c, 0), 0);
}

static void done_and_row_commit_together_or_not_at_all(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("default", "boom", 5), got;
	int64_t id = sfx_enq1(st, "bridge", "boom");
	struct buf msg = BUF_INIT;

	/* Invalid row (repo is NOT NULL): refused, event untouched. */
	row.repo = NULL;
	assert_int_equal(store_event_done(st, id, &row, &msg), ERR_INVALID);
	assert_string_equal(buf_str(&msg), "store: issue row: repo is empty");
	assert_int_equal(sfx_next_id(st, "bridge", 0), id);

	/* The row insert fails inside the transaction: the event update rolls back. */
	sfx_inject(f->path, "issues", "NEW.key = 'boom'", "injected row failure");
	row = sfx_mkrow("default", "boom", 5);
	assert_int_equal(store_event_done(st, id, &row, &msg), ERR_DB);
	sfx_assert_contains(buf_str(&msg), "injected row failure");
	assert_int_equal(sfx_next_id(st, "bridge", 0), id);
	assert_int_equal(store_pending_count(st, "bridge"), 1);
	assert_int_equal(store_issue_get(st, "default", "boom", &got), ERR_NOTFOUND);

	/* Without the failure both land. */
	sfx_uninject(f->path, "issues");
	assert_int_equal(store_event_done(st, id, &row, &msg), ERR_OK);
	assert_int_equal(store_pending_count(st, "bridge"), 0);
	assert_int_equal(store_issue_get(st, "default", "boom", &got), ERR_OK);
	assert_int_equal(got.number, 5);
	store_issue_release(&got);
	buf_release(&msg);
}

/* alertname and title (schema 8): stored, and kept when a row is written without them. */
static void map_keeps_alertname_and_title(void **state)
{
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("oncall", "k1", 7), got;

	row.alertname = (char *)"DiskFull";
	row.title = (char *)"[critical] DiskFull: /var 3% left";
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_issue_get(st, "oncall", "k1", &got), ERR_OK);
	assert_string_equal(got.alertname, "DiskFull");
	assert_string_equal(got.title, "[critical] DiskFull: /var 3% left");
	store_issue_release(&got);
	/* A rebuild or a fold writes the row without them: what was known stays. */
	row.alertname = row.title = NULL;
	row.number = 8;
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_issue_get(st, "oncall", "k1", &got), ERR_OK);
	assert_int_equal(got.number, 8);
	assert_string_equal(got.alertname, "DiskFull");
	assert_string_equal(got.title, "[critical] DiskFull: /var 3% left");
	store_issue_release(&got);
	row.title = (char *)"new title";
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_issue_get(st, "oncall", "k1", &got), ERR_OK);
	assert_string_equal(got.title, "new title");
	store_issue_release(&got);
	/* A row from before has neither. */
	row = sfx_mkrow("oncall", "k2", 9);
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_issue_get(st, "oncall", "k2", &got), ERR_OK);
	assert_null(got.alertname);
	assert_null(got.title);
	store_issue_release(&got);
}

/* quiet "store migrated" on every fresh database */
UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	SFX_MEMORY_TEST(map_put_get_forget_each),
	SFX_MEMORY_TEST(issue_count_by_state),
	SFX_MEMORY_TEST(map_each_pages_and_allows_reentry),
	SFX_MEMORY_TEST(map_put_rejects_bad_rows),
	SFX_MEMORY_TEST(map_keeps_alertname_and_title),
	SFX_TEST(done_and_row_commit_together_or_not_at_all))
