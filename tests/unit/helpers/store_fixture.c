/*
 * store_fixture.c - what the store's unit tests (test_store*.c) share: a fresh
 * store per test on either engine, a second connection to inject failures,
 * and builders of events and map rows.
 */
#include "store_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <unistd.h>

#include "store/db.h"
#include "store/store_events.h"
#include "db_fixture.h"
#include "pg_fixture.h"

int sfx_postgres(void)
{
	const char *e = getenv("AB_TEST_STORE");

	return e && strcmp(e, "postgres") == 0;
}

void sfx_sqlite_only(const char *why)
{
	if (!sfx_postgres())
		return;
	print_message("skipped on PostgreSQL: %s\n", why);
	skip();
}

/* sfx_setup() (memory 0) and sfx_setup_memory() (memory 1). */
static int setup(void **state, int memory)
{
	struct fixture *f;

	if (sfx_postgres() && !pgfx_server()) {
		print_error("AB_TEST_STORE=postgres needs AB_TEST_PG_URI\n");
		return -1;
	}
	f = calloc(1, sizeof(*f));
	if (!f)
		return -1;
	snprintf(f->dir, sizeof(f->dir), "/tmp/test_store.XXXXXX");
	if (!mkdtemp(f->dir)) {
		free(f);
		return -1;
	}
	snprintf(f->other, sizeof(f->other), "%s/garbage.db", f->dir);
	*state = f;
	if (sfx_postgres()) {
		f->postgres = 1;
		pgfx_create(f->path, sizeof(f->path), "ab_store");
	} else if (memory) {
		snprintf(f->path, sizeof(f->path), ":memory:");
	} else {
		snprintf(f->path, sizeof(f->path), "%s/ab.db", f->dir);
	}
	return 0;
}

int sfx_setup(void **state)
{
	return setup(state, 0);
}

int sfx_setup_memory(void **state)
{
	return setup(state, 1);
}

int sfx_teardown(void **state)
{
	struct fixture *f = *state;
	const char *suffix[] = { "", "-wal", "-shm", "-journal" };
	char p[300];

	store_close(f->st);
	if (f->postgres)
		pgfx_drop(f->path);
	for (size_t i = 0; i < 4; i++) {
		if (!strncmp(f->path, f->dir, strlen(f->dir))) {  /* an sqlite file */
			snprintf(p, sizeof(p), "%s%s", f->path, suffix[i]);
			unlink(p);
		}
		snprintf(p, sizeof(p), "%s%s", f->other, suffix[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

/*
 * sqlite: a plain connection of sqlite3's, not db_open()'s (which would
 * switch the file to WAL and incremental vacuum): what the test sees and
 * sets is the file as the store left it.
 */
static void sq_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("sql_exec %s: %s", sql, msg);
	sqlite3_close(db);
}

static int64_t sq_int(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	sqlite3_stmt *s = NULL;
	int64_t v;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &s, NULL), SQLITE_OK);
	assert_int_equal(sqlite3_step(s), SQLITE_ROW);
	v = sqlite3_column_int64(s, 0);
	sqlite3_finalize(s);
	sqlite3_close(db);
	return v;
}

void sfx_sql_exec(const char *target, const char *sql)
{
	struct db *db;

	if (!db_target_is_postgres(target)) {
		sq_exec(target, sql);
		return;
	}
	db = dbfx_open_ok(target);
	dbfx_exec_ok(db, sql);
	db_close(db);
}

int64_t sfx_sql_int(const char *target, const char *sql)
{
	struct db *db;
	int64_t v;

	if (!db_target_is_postgres(target))
		return sq_int(target, sql);
	db = dbfx_open_ok(target);
	v = dbfx_one_int(db, sql);
	db_close(db);
	return v;
}

void sfx_inject(const char *target, const char *table, const char *when, const char *message)
{
	char sql[512];

	if (db_target_is_postgres(target))
		snprintf(sql, sizeof(sql),
			 "CREATE FUNCTION inject_fail() RETURNS trigger LANGUAGE plpgsql AS "
			 "$$BEGIN RAISE EXCEPTION '%s'; END$$; "
			 "CREATE TRIGGER inject BEFORE INSERT ON %s FOR EACH ROW %s%s%s "
			 "EXECUTE FUNCTION inject_fail()",
			 message, table, when ? "WHEN (" : "", when ? when : "", when ? ")" : "");
	else
		snprintf(sql, sizeof(sql),
			 "CREATE TRIGGER inject BEFORE INSERT ON %s %s%s "
			 "BEGIN SELECT RAISE(ABORT, '%s'); END",
			 table, when ? "WHEN " : "", when ? when : "", message);
	sfx_sql_exec(target, sql);
}

void sfx_uninject(const char *target, const char *table)
{
	char sql[160];

	if (db_target_is_postgres(target))
		snprintf(sql, sizeof(sql),
			 "DROP TRIGGER inject ON %s; DROP FUNCTION inject_fail()", table);
	else
		snprintf(sql, sizeof(sql), "DROP TRIGGER inject");
	sfx_sql_exec(target, sql);
}

/* version < 0: read it; else set it.  The schema version of target then. */
static int pg_schema_version(const char *uri, int version)
{
	struct buf msg = BUF_INIT;
	struct db *db = dbfx_open_ok(uri);
	int v = -1;

	if (db_begin(db, &msg) != ERR_OK || db_schema_version(db, &v, &msg) != ERR_OK ||
	    (version >= 0 && db_set_schema_version(db, v = version, &msg) != ERR_OK) ||
	    db_commit(db, &msg) != ERR_OK)
		fail_msg("schema version of %s: %s", uri, buf_str(&msg));
	db_close(db);
	buf_release(&msg);
	return v;
}

int sfx_schema_version(const char *target)
{
	if (db_target_is_postgres(target))
		return pg_schema_version(target, -1);
	return (int)sq_int(target, "PRAGMA user_version");
}

void sfx_set_schema_version(const char *target, int version)
{
	char sql[64];

	if (db_target_is_postgres(target)) {
		pg_schema_version(target, version);
		return;
	}
	snprintf(sql, sizeof(sql), "PRAGMA user_version = %d", version);
	sq_exec(target, sql);
}

struct store *sfx_store(void **state)
{
	struct fixture *f = *state;

	if (!f->st)
		f->st = sfx_open_ok(f->path);
	return f->st;
}

struct store *sfx_open_ok(const char *target)
{
	struct buf msg = BUF_INIT;
	struct store *st = NULL;

	if (store_open_target(target, NULL, &st, &msg) != ERR_OK)
		fail_msg("store_open %s: %s", target, buf_str(&msg));
	buf_release(&msg);
	return st;
}

struct store_event sfx_mkev(const char *kind, const char *receiver, const char *key,
			    const char *status)
{
	struct store_event ev;

	memset(&ev, 0, sizeof(ev));
	ev.kind = (char *)kind;
	ev.receiver = (char *)receiver;
	ev.key = (char *)key;
	ev.status = (char *)status;
	ev.starts_at_ms = 1700000000000;
	ev.payload = (char *)"{\"alertname\":\"GPUIdle\"}";
	ev.received_at_ms = 1700000001000;
	return ev;
}

int64_t sfx_enq1(struct store *st, const char *kind, const char *key)
{
	struct store_event ev = sfx_mkev(kind, "default", key, "firing");
	struct buf msg = BUF_INIT;

	if (store_enqueue(st, &ev, 1, &msg) != ERR_OK)
		fail_msg("enqueue: %s", buf_str(&msg));
	buf_release(&msg);
	return ev.id;
}

int64_t sfx_next_id(struct store *st, const char *kind, int64_t now)
{
	struct store_event ev;
	int64_t id;
	enum err rc = store_next_event(st, kind, now, &ev);

	if (rc == ERR_NOTFOUND)
		return 0;
	assert_int_equal(rc, ERR_OK);
	id = ev.id;
	store_event_release(&ev);
	return id;
}

struct store_issue sfx_mkrow(const char *receiver, const char *key, int64_t number)
{
	struct store_issue r;

	memset(&r, 0, sizeof(r));
	r.receiver = (char *)receiver;
	r.key = (char *)key;
	r.repo = (char *)"my-org/cluster-alerts";
	r.number = number;
	r.state = STORE_ISSUE_OPEN;
	r.episode_starts_ms = 1700000000000;
	r.created_at_ms = 1700000002000;
	r.updated_at_ms = 1700000003000;
	return r;
}

void sfx_assert_contains(const char *haystack, const char *needle)
{
	if (!strstr(haystack, needle))
		fail_msg("\"%s\" does not contain \"%s\"", haystack, needle);
}
