/*
 * test_store.c - the store (core/store.c): open, migrations, bad files and
 * paths.  Each test gets a fresh store on the engine of AB_TEST_STORE
 * (store_fixture.h).
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

/* ---- open and migrations ---- */

static void open_creates_wal_db_at_current_version(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);

	assert_true(store_schema_version() >= 1);
	assert_int_equal(sfx_schema_version(f->path), store_schema_version());
	assert_int_equal(store_pending_count(st, "bridge"), 0);
	if (!f->postgres)  /* the file's journal */
		assert_int_equal(sfx_sql_int(f->path, "SELECT journal_mode = 'wal' "
						      "FROM pragma_journal_mode"), 1);
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
	assert_int_equal(sfx_schema_version(f->path), store_schema_version());
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
	sfx_set_schema_version(f->path, 999);
	st = (struct store *)&msg; /* must be reset to NULL */
	assert_int_equal(store_open_target(f->path, NULL, &st, &msg), ERR_DB);
	assert_null(st);
	snprintf(want, sizeof(want), "schema version 999 is newer than this build's %d",
		 store_schema_version());
	sfx_assert_contains(buf_str(&msg), want);
	sfx_assert_contains(buf_str(&msg), f->path);
	/* Nothing was changed by the refusal. */
	assert_int_equal(sfx_schema_version(f->path), 999);
	buf_release(&msg);
}

/* map list/show: no migration behind a running service's back (issue 19). */
static void read_only_open_never_migrates(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct buf msg = BUF_INIT;
	int64_t id = sfx_enq1(st, "bridge", "aaaa000011112222");

	store_close(st);
	assert_int_equal(store_open_read_only(f->path, NULL, &st, &msg), ERR_OK);
	assert_int_equal(sfx_next_id(st, "bridge", 0), id);
	store_close(st);
	sfx_set_schema_version(f->path, store_schema_version() - 1);
	st = (struct store *)&msg;
	assert_int_equal(store_open_read_only(f->path, NULL, &st, &msg), ERR_DB);
	assert_null(st);
	sfx_assert_contains(buf_str(&msg), "is older than this build's");
	assert_int_equal(sfx_schema_version(f->path), store_schema_version() - 1);
	sfx_set_schema_version(f->path, 999);
	assert_int_equal(store_open_read_only(f->path, NULL, &st, &msg), ERR_DB);
	sfx_assert_contains(buf_str(&msg), "is newer than this build's");
	assert_int_equal(sfx_schema_version(f->path), 999);
	buf_release(&msg);
}

/* An sqlite file unlinked under the store: nothing more is acknowledged (issue 19). */
static void deleted_file_refuses_enqueue(void **state)
{
	struct fixture *f = *state;
	struct store *st;
	struct store_event ev;
	struct buf msg = BUF_INIT, why = BUF_INIT;

	sfx_sqlite_only("an sqlite file unlinked");
	st = sfx_open_ok(f->path);
	assert_true(store_ready(st, &why));
	assert_int_equal(unlink(f->path), 0);
	ev = sfx_mkev("bridge", "default", "bbbb000011112222", "firing");
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_DB);
	sfx_assert_contains(buf_str(&msg), "deleted or replaced");
	assert_int_equal(ev.id, 0);
	assert_false(store_ready(st, &why));
	sfx_assert_contains(buf_str(&why), "deleted or replaced");
	store_close(st);
	buf_release(&msg);
	buf_release(&why);
}

/* A worker takes no work from a deleted file: its outcome would go where nobody reads it. */
static void deleted_file_gives_no_work(void **state)
{
	struct fixture *f = *state;
	struct store *st;
	struct store_event ev, next;
	struct buf msg = BUF_INIT;

	sfx_sqlite_only("an sqlite file unlinked");
	st = sfx_open_ok(f->path);
	ev = sfx_mkev("bridge", "default", "cccc000011112222", "firing");
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_int_equal(store_next_event(st, "bridge", INT64_MAX / 2, &next), ERR_OK);
	store_event_release(&next);
	assert_int_equal(unlink(f->path), 0);
	assert_int_equal(store_next_event(st, "bridge", INT64_MAX / 2, &next), ERR_DB);
	store_close(st);
	buf_release(&msg);
}

static void garbage_file_is_refused(void **state)
{
	struct fixture *f = *state;
	struct buf msg = BUF_INIT;
	struct store *st = NULL;
	FILE *fp;

	sfx_sqlite_only("a file that is not an sqlite database");
	fp = fopen(f->other, "w");
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

	sfx_sqlite_only("file paths (PostgreSQL's bad targets: test_db)");
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
	assert_int_equal(sfx_schema_version(f->path), store_schema_version());

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

/* quiet "store migrated" on every fresh database */
UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	SFX_TEST(open_creates_wal_db_at_current_version),
	SFX_TEST(reopen_keeps_events_and_rows),
	SFX_TEST(newer_schema_is_refused),
	SFX_TEST(garbage_file_is_refused),
	SFX_TEST(read_only_open_never_migrates),
	SFX_TEST(deleted_file_refuses_enqueue),
	SFX_TEST(deleted_file_gives_no_work),
	SFX_TEST(bad_paths_are_refused),
	SFX_TEST(targets_choose_the_engine))
