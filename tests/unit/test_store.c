/*
 * test_store.c - the sqlite store (core/store.c): open, migrations, bad
 * files and paths.  Each test gets a fresh directory under /tmp.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <sqlite3.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "core/store.h"
#include "tests/unit/helpers/store_fixture.h"

/* ---- open and migrations ---- */

static void open_creates_wal_db_at_current_version(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;

	assert_true(store_schema_version() >= 1);
	assert_int_equal(sfx_sql_int(f->path, "PRAGMA user_version"), store_schema_version());
	assert_int_equal(sqlite3_open(f->path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA journal_mode", -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	assert_string_equal((const char *)sqlite3_column_text(s, 0), "wal");
	sqlite3_finalize(s);
	sqlite3_close(db);
	assert_int_equal(store_pending_count(st, "bridge"), 0);
	store_close(st);
	store_close(NULL);
}

static void reopen_keeps_events_and_rows(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct store_issue row = sfx_mkrow("default", "aaaa000011112222", 42), got;
	int64_t id = sfx_enq1(st, "bridge", "aaaa000011112222");

	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	store_close(st);

	st = sfx_open_ok(f->path);
	assert_int_equal(sfx_sql_int(f->path, "PRAGMA user_version"), store_schema_version());
	assert_int_equal(sfx_next_id(st, "bridge", 0), id);
	assert_int_equal(store_issue_get(st, "default", "aaaa000011112222", &got), ERR_OK);
	assert_int_equal(got.number, 42);
	store_issue_release(&got);
	store_close(st);
}

static void newer_schema_is_refused(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct buf msg = BUF_INIT;
	char want[96];

	store_close(st);
	sfx_sql_exec(f->path, "PRAGMA user_version = 999");
	st = (struct store *)&msg; /* must be reset to NULL */
	assert_int_equal(store_open(f->path, &st, &msg), ERR_DB);
	assert_null(st);
	snprintf(want, sizeof(want), "schema version 999 is newer than this build's %d",
		 store_schema_version());
	sfx_assert_contains(buf_str(&msg), want);
	sfx_assert_contains(buf_str(&msg), f->path);
	/* Nothing was changed by the refusal. */
	assert_int_equal(sfx_sql_int(f->path, "PRAGMA user_version"), 999);
	buf_release(&msg);
}

static void garbage_file_is_refused(void **state)
{
	struct fixture *f = *state;
	struct buf msg = BUF_INIT;
	struct store *st = NULL;
	FILE *fp = fopen(f->other, "w");

	assert_non_null(fp);
	for (int i = 0; i < 64; i++)
		fputs("this is not an sqlite database, just text\n", fp);
	fclose(fp);
	assert_int_equal(store_open(f->other, &st, &msg), ERR_DB);
	assert_null(st);
	sfx_assert_contains(buf_str(&msg), "file is not a database");
	sfx_assert_contains(buf_str(&msg), f->other);
	buf_release(&msg);
}

static void bad_paths_are_refused(void **state)
{
	struct fixture *f = *state;
	struct buf msg = BUF_INIT;
	struct store *st = NULL;
	char path[192];

	assert_int_equal(store_open(NULL, &st, &msg), ERR_INVALID);
	sfx_assert_contains(buf_str(&msg), "path is empty");
	assert_int_equal(store_open("", &st, &msg), ERR_INVALID);
	assert_null(st);
	snprintf(path, sizeof(path), "%s/no/such/dir/ab.db", f->dir);
	assert_int_equal(store_open(path, &st, &msg), ERR_DB);
	assert_null(st);
	sfx_assert_contains(buf_str(&msg), path);
	sfx_assert_contains(buf_str(&msg), "unable to open database file");
	buf_release(&msg);
}

/*
 * store_open_target(): a path is an sqlite file (as store_open()); a
 * postgres:// URI is PostgreSQL, refused by a build without libpq, and its
 * errors never show the URI's password.
 */
static void targets_choose_the_engine(void **state)
{
	struct fixture *f = *state;
	struct buf msg = BUF_INIT;
	struct store *st = NULL;

	assert_int_equal(store_open_target(f->path, NULL, &st, &msg), ERR_OK);
	assert_non_null(st);
	assert_int_equal(store_pending_count(st, "bridge"), 0);
	store_close(st);
	assert_int_equal(sfx_sql_int(f->path, "PRAGMA user_version"), store_schema_version());

	st = (struct store *)&msg; /* must be reset to NULL */
	assert_int_equal(store_open_target("", NULL, &st, &msg), ERR_INVALID);
	assert_null(st);
	st = (struct store *)&msg;
#ifdef AB_HAVE_LIBPQ
	/* Port 1 of the loopback: refused at once. */
	assert_int_equal(store_open_target("postgres://ab:s3cret@127.0.0.1:1/ab", NULL, &st, &msg),
			 ERR_DB);
	assert_null(strstr(buf_str(&msg), "s3cret"));
#else
	assert_int_equal(store_open_target("postgres://ab:s3cret@127.0.0.1:1/ab", NULL, &st, &msg),
			 ERR_INVALID);
	sfx_assert_contains(buf_str(&msg), "built without PostgreSQL support");
	assert_null(strstr(buf_str(&msg), "s3cret"));
	assert_int_equal(store_open_target("postgresql://ab@db/ab", NULL, &st, &msg), ERR_INVALID);
#endif
	assert_null(st);
	buf_release(&msg);
}

int main(void)
{
	log_setup(LOG_WARN, LOG_LOGFMT); /* quiet "store migrated" on every fresh database */
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(open_creates_wal_db_at_current_version, sfx_setup,
						sfx_teardown),
		cmocka_unit_test_setup_teardown(reopen_keeps_events_and_rows, sfx_setup, sfx_teardown),
		cmocka_unit_test_setup_teardown(newer_schema_is_refused, sfx_setup, sfx_teardown),
		cmocka_unit_test_setup_teardown(garbage_file_is_refused, sfx_setup, sfx_teardown),
		cmocka_unit_test_setup_teardown(bad_paths_are_refused, sfx_setup, sfx_teardown),
		cmocka_unit_test_setup_teardown(targets_choose_the_engine, sfx_setup, sfx_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
