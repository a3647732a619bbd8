/*
 * test_store_groups.c - issue_per: group states in the store
 * (core/store_groups.c).
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
#include "store/store_groups.h"
#include "store/store_map.h"
#include "tests/unit/helpers/store_fixture.h"

/* issue_per: group states: done with the event and the row, due when paced, synced. */
static void group_states_done_due_synced(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("default", "g1", 0);
	struct store_group g = { 0 }, got;
	int64_t id = sfx_enq1(st, "bridge", "g1");
	struct buf msg = BUF_INIT;

	g.receiver = (char *)"default";
	g.key = (char *)"g1";
	g.members = (char *)"[]";
	g.payload = (char *)"{}";
	g.dirty = 1;
	g.synced_at_ms = 1000;
	assert_int_equal(store_group_get(st, "default", "g1", &got), ERR_NOTFOUND);
	/* a failing row rolls back the event and the state */
	sfx_inject(f->path, "issues", NULL, "injected row failure");
	assert_int_equal(store_group_done(st, id, &row, &g, &msg), ERR_DB);
	assert_int_equal(sfx_next_id(st, "bridge", 0), id);
	assert_int_equal(store_group_get(st, "default", "g1", &got), ERR_NOTFOUND);
	sfx_uninject(f->path, "issues");
	g.members = (char *)"";
	assert_int_equal(store_group_done(st, id, &row, &g, &msg), ERR_INVALID);
	g.members = (char *)"[{\"fingerprint\":\"a\"}]";
	assert_int_equal(store_group_done(st, id, &row, &g, &msg), ERR_OK);
	assert_int_equal(store_group_done(st, id, &row, &g, &msg), ERR_CONFLICT);
	assert_int_equal(store_group_get(st, "default", "g1", &got), ERR_OK);
	assert_string_equal(got.members, g.members);
	assert_int_equal(got.dirty, 1);
	store_group_release(&got);

	/* due: dirty, paced by interval, and only once the issue exists (number > 0) */
	assert_int_equal(store_group_due(st, 100000, 60000, &got), ERR_NOTFOUND);
	row.number = 7;
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_group_due(st, 60999, 60000, &got), ERR_NOTFOUND);
	assert_int_equal(store_group_due(st, 61000, 60000, &got), ERR_OK);
	assert_string_equal(got.key, "g1");
	got.next_sync_ms = 90000;  /* a failed update: backoff */
	assert_int_equal(store_group_synced(st, &got, &msg), ERR_OK);
	store_group_release(&got);
	assert_int_equal(store_group_due(st, 89999, 60000, &got), ERR_NOTFOUND);
	assert_int_equal(store_group_due(st, 90000, 60000, &got), ERR_OK);
	got.dirty = 0;
	got.synced_at_ms = 90000;
	got.next_sync_ms = 0;
	assert_int_equal(store_group_synced(st, &got, &msg), ERR_OK);
	store_group_release(&got);
	assert_int_equal(store_group_due(st, 999999, 60000, &got), ERR_NOTFOUND);
	g.key = (char *)"nope";
	assert_int_equal(store_group_synced(st, &g, &msg), ERR_NOTFOUND);
	buf_release(&msg);
}

/* quiet "store migrated" on every fresh database */
UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	SFX_TEST(group_states_done_due_synced))
