/*
 * test_store_plans.c - the store's statements do not scan the tables that grow with traffic
 * (events, issues, notices): each is asked sqlite's EXPLAIN QUERY PLAN (a documented
 * interface: sqlite.org/eqp.html) on the real schema, and a SCAN of one of those tables fails
 * it unless the statement is one whose job is the whole table (a count for the gauges, a
 * page of the map, the pruning).  A statement run once per alert that scans makes a webhook's
 * cost quadratic (issue 19: a dead letter's supersede scanned every dead letter).
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

#include <sqlite3.h>

#include "core/buf.h"
#include "store/store_int.h"
#include "tests/unit/helpers/tmpdir.h"

/* The statements whose work is the whole table, run at most once a second or by a person. */
static const enum stmt_id whole_table[] = {
	S_EV_DEAD_COUNT,     /* the dead-letter gauge */
	S_NO_PENDING,        /* the outbox gauge */
	S_IS_COUNT_STATE,    /* the issues gauge (bridge.c: at most once a second) */
};

static int allowed(enum stmt_id id)
{
	for (size_t i = 0; i < sizeof(whole_table) / sizeof(whole_table[0]); i++)
		if (whole_table[i] == id)
			return 1;
	return 0;
}

/* The SCANs of a growing table in sql's plan, appended to out; sql is prepared on db. */
static void scans(sqlite3 *db, const char *sql, struct buf *out)
{
	static const char *const growing[] = { "events", "issues", "notices" };
	struct buf q = BUF_INIT;
	sqlite3_stmt *s = NULL;

	buf_printf(&q, "EXPLAIN QUERY PLAN %s", sql);
	if (sqlite3_prepare_v2(db, buf_str(&q), -1, &s, NULL) != SQLITE_OK)
		fail_msg("prepare %s: %s", sql, sqlite3_errmsg(db));
	while (sqlite3_step(s) == SQLITE_ROW) {
		const char *detail = (const char *)sqlite3_column_text(s, 3);

		for (size_t i = 0; detail && i < sizeof(growing) / sizeof(growing[0]); i++) {
			size_t n = strlen(growing[i]);

			if (!strncmp(detail, "SCAN ", 5) && !strncmp(detail + 5, growing[i], n) &&
			    (detail[5 + n] == '\0' || detail[5 + n] == ' '))
				buf_printf(out, " [%s]", detail);
		}
	}
	sqlite3_finalize(s);
	buf_release(&q);
}

static void no_statement_scans_a_growing_table(void **state)
{
	char dir[256], path[300];
	struct buf err = BUF_INIT, found = BUF_INIT, bad = BUF_INIT;
	struct store *st = NULL;
	sqlite3 *db = NULL;
	(void)state;

	tfx_mkdtemp(dir, sizeof(dir), "ab-store-plans");
	snprintf(path, sizeof(path), "%s/alertbridge.db", dir);
	assert_int_equal(store_open(path, &st, &err), ERR_OK);  /* the schema, migrated */
	store_close(st);
	assert_int_equal(sqlite3_open_v2(path, &db, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
	for (int id = 0; id < S_COUNT; id++) {
		const char *sql = store_stmt_sql((enum stmt_id)id);

		assert_non_null(sql);
		buf_reset(&found);
		scans(db, sql, &found);
		if (found.len && !allowed((enum stmt_id)id))
			buf_printf(&bad, "\n  statement %d:%s\n    %s", id, buf_str(&found), sql);
	}
	if (bad.len)
		fail_msg("statements that scan a table growing with traffic:%s", buf_str(&bad));
	/* the whitelist is no blanket: its statements do scan (else drop them from it) */
	for (size_t i = 0; i < sizeof(whole_table) / sizeof(whole_table[0]); i++) {
		buf_reset(&found);
		scans(db, store_stmt_sql(whole_table[i]), &found);
		assert_true(found.len > 0);
	}
	assert_null(store_stmt_sql(S_COUNT));
	sqlite3_close(db);
	buf_release(&err);
	buf_release(&found);
	buf_release(&bad);
	tfx_remove_tree(dir);
}

UNIT_MAIN(
	cmocka_unit_test(no_statement_scans_a_growing_table))
