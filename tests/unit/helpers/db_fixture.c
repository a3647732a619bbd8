/*
 * db_fixture.c - one test's database on sqlite or PostgreSQL and the db.h wrappers of the
 * db.h contract's tests (db_fixture.h).
 */
#include "tests/unit/helpers/db_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/buf.h"
#include "tests/unit/helpers/tmpdir.h"

const enum db_engine dbfx_sqlite_engine = DB_SQLITE, dbfx_pg_engine = DB_POSTGRES;

const char *dbfx_pg_uri(void)
{
	const char *u = getenv("AB_TEST_PG_URI");

	return u && *u ? u : NULL;
}

struct db *dbfx_open_ok(const char *target)
{
	struct buf msg = BUF_INIT;
	struct db *db = NULL;
	enum err rc = db_open(target, NULL, &db, &msg);

	if (rc != ERR_OK)
		fail_msg("db_open: %s: %s", err_str(rc), buf_str(&msg));
	buf_release(&msg);
	return db;
}

void dbfx_exec_ok(struct db *db, const char *sql)
{
	struct buf msg = BUF_INIT;

	if (db_exec(db, sql, &msg) != ERR_OK)
		fail_msg("%s: %s", sql, buf_str(&msg));
	buf_release(&msg);
}

struct db_stmt *dbfx_prepare_ok(struct db *db, const char *sql)
{
	struct buf msg = BUF_INIT;
	struct db_stmt *s = NULL;

	if (db_prepare(db, sql, &s, &msg) != ERR_OK)
		fail_msg("%s: %s", sql, buf_str(&msg));
	buf_release(&msg);
	return s;
}

int64_t dbfx_one_int(struct db *db, const char *sql)
{
	struct db_stmt *s = dbfx_prepare_ok(db, sql);
	int64_t v;

	if (db_step(s) != DB_ROW)
		fail_msg("%s: no row: %s", sql, db_errmsg(db));
	v = db_col_int(s, 0);
	db_finalize(s);
	return v;
}

void dbfx_assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("\"%s\" does not contain \"%s\"", hay ? hay : "(null)", needle);
}

const char *dbfx_by_engine(const struct dbfx_env *e, const char *sqlite, const char *pg)
{
	return e->engine == DB_SQLITE ? sqlite : pg;
}

int dbfx_setup(void **state)
{
	static int seq;
	enum db_engine engine = *(const enum db_engine *)*state;
	struct dbfx_env *e = calloc(1, sizeof(*e));
	const char *base = dbfx_pg_uri();

	assert_non_null(e);
	e->engine = engine;
	if (engine == DB_SQLITE) {
		tfx_mkdtemp(e->dir, sizeof(e->dir), "test_db");
		snprintf(e->target, sizeof(e->target), "%s/test.db", e->dir);
	} else {
		char sql[128];

		assert_non_null(base);
		snprintf(e->schema, sizeof(e->schema), "test_db_%ld_%d", (long)getpid(), ++seq);
		e->admin = dbfx_open_ok(base);
		snprintf(sql, sizeof(sql), "CREATE SCHEMA %s", e->schema);
		dbfx_exec_ok(e->admin, sql);
		/* libpq decodes the URI's %3D: options=-csearch_path=SCHEMA */
		snprintf(e->target, sizeof(e->target), "%s%soptions=-csearch_path%%3D%s", base,
			 strchr(base, '?') ? "&" : "?", e->schema);
	}
	*state = e;
	return 0;
}

struct db *dbfx_db(void **state)
{
	struct dbfx_env *e = *state;

	if (!e->db)
		e->db = dbfx_open_ok(e->target);
	return e->db;
}

int dbfx_teardown(void **state)
{
	struct dbfx_env *e = *state;

	db_close(e->db);
	if (e->engine == DB_SQLITE) {
		tfx_remove_tree(e->dir);
	} else {
		char sql[128];

		snprintf(sql, sizeof(sql), "DROP SCHEMA %s CASCADE", e->schema);
		/* After a server restart the first call is unavailable, the next reconnects. */
		if (db_exec(e->admin, sql, NULL) != ERR_OK)
			dbfx_exec_ok(e->admin, sql);
		db_close(e->admin);
	}
	free(e);
	return 0;
}

int dbfx_run(const char *name, const struct CMUnitTest *tests, size_t n, size_t n_pg)
{
	const char *why = NULL;

#ifdef AB_HAVE_LIBPQ
	if (!dbfx_pg_uri())
		why = "AB_TEST_PG_URI is unset; make test sets it";
#else
	why = "built without libpq";
#endif
	if (why) { /* the PostgreSQL tests are the last ones */
		print_message("%s: the PostgreSQL half skipped (%s)\n", name, why);
		n -= n_pg;
	}
	return _cmocka_run_group_tests(name, tests, n, NULL, NULL);
}
