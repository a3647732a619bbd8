/*
 * test_store_budget.c - the GitHub content budget's spending in the store
 * (store/store_budget.c): recorded, loaded since a time, pruned to the
 * budget's window, shared by two stores of one database (PostgreSQL
 * replicas), and nothing recorded when the write fails.  Both engines.
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

#include "store/store.h"
#include "store/store_budget.h"
#include "tests/unit/helpers/store_fixture.h"

#define T0 INT64_C(1795000000000)
#define HOUR INT64_C(3600000)

static void note_ok(struct store *st, const char *owner, int64_t sent_ms)
{
	struct buf msg = BUF_INIT;

	if (store_budget_note(st, owner, sent_ms, sent_ms - HOUR, &msg) != ERR_OK)
		fail_msg("store_budget_note: %s", buf_str(&msg));
	buf_release(&msg);
}

/* The records at or after since_ms as "owner@offset-from-T0 ..." (newest first). */
static void load_text(struct store *st, int64_t since_ms, char *out, size_t n)
{
	struct store_budget_call *v = NULL;
	size_t len = 0, used = 0;

	assert_int_equal(store_budget_load(st, since_ms, &v, &len, NULL), ERR_OK);
	out[0] = '\0';
	for (size_t i = 0; i < len && used < n; i++)
		used += (size_t)snprintf(out + used, n - used, "%s%s@%lld", i ? " " : "",
					 v[i].owner, (long long)(v[i].sent_ms - T0));
	store_budget_calls_free(v, len);
}

static void recorded_calls_are_loaded_newest_first(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	char text[256];

	load_text(st, 0, text, sizeof(text));
	assert_string_equal(text, "");
	note_ok(st, NULL, T0);
	note_ok(st, "acme", T0 + 1000);
	note_ok(st, "", T0 + 2000);
	load_text(st, 0, text, sizeof(text));
	assert_string_equal(text, "@2000 acme@1000 @0");
	load_text(st, T0 + 1000, text, sizeof(text));
	assert_string_equal(text, "@2000 acme@1000");
	store_close(st);

	/* the next process's store */
	st = sfx_open_ok(f->path);
	load_text(st, 0, text, sizeof(text));
	assert_string_equal(text, "@2000 acme@1000 @0");
	store_close(st);
}

/* Each record forgets those before its prune time: the table holds one window. */
static void old_records_are_pruned(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_store(state);
	char text[256];

	note_ok(st, "", T0);
	note_ok(st, "", T0 + 1000);
	note_ok(st, "", T0 + HOUR + 500);  /* prunes what is older than T0 + 500 */
	load_text(st, 0, text, sizeof(text));
	assert_string_equal(text, "@3600500 @1000");
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM gh_budget"), 2);
}

/* Two stores of one database (replicas on PostgreSQL) see each other's records at once. */
static void two_stores_share_the_records(void **state)
{
	struct fixture *f = *state;
	struct store *a = sfx_open_ok(f->path), *b = sfx_open_ok(f->path);
	char text[256];

	note_ok(a, "", T0);
	note_ok(b, "", T0 + 1000);
	load_text(a, 0, text, sizeof(text));
	assert_string_equal(text, "@1000 @0");
	store_close(b);
	store_close(a);
}

/* A record that fails says why and leaves nothing; the store goes on. */
static void failed_record_leaves_nothing(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_store(state);
	struct buf msg = BUF_INIT;
	char text[256];

	note_ok(st, "", T0);
	sfx_inject(f->path, "gh_budget", NULL, "database or disk is full");
	assert_int_equal(store_budget_note(st, "", T0 + HOUR + 1, T0 + 1, &msg), ERR_DB);
	sfx_assert_contains(buf_str(&msg), "record a github call");
	sfx_assert_contains(buf_str(&msg), "database or disk is full");
	load_text(st, 0, text, sizeof(text));
	assert_string_equal(text, "@0");  /* the prune was rolled back with it */
	sfx_uninject(f->path, "gh_budget");
	note_ok(st, "", T0 + 1000);
	load_text(st, 0, text, sizeof(text));
	assert_string_equal(text, "@1000 @0");
	assert_int_equal(store_budget_note(NULL, "", T0, 0, NULL), ERR_INVALID);
	buf_release(&msg);
}

UNIT_MAIN(
	SFX_TEST(recorded_calls_are_loaded_newest_first),
	SFX_TEST(old_records_are_pruned),
	SFX_TEST(two_stores_share_the_records),
	SFX_TEST(failed_record_leaves_nothing))
