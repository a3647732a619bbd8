/*
 * test_store_copy.c - `alertbridge store copy` (core/store_copy.c): every
 * table's rows copied exactly (NULLs, integers past 2^31, UTF-8), ids kept,
 * a non-empty target refused with nothing written, the column lists held to
 * the schema, and, with AB_TEST_PG_URI, sqlite -> PostgreSQL -> sqlite with
 * the identities going on after the copied ids.
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

#include <inttypes.h>
#include <unistd.h>

#include "core/buf.h"
#include "store/db.h"
#include "store/store.h"
#include "store/store_copy.h"
#include "store/store_events.h"
#include "tests/unit/helpers/pg_fixture.h"
#include "tests/unit/helpers/store_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

struct fx {
	char dir[256];
	char a[300], b[300], c[300];  /* sqlite files */
	char pg[512];                  /* a PostgreSQL database, "" when none */
};

static int setup(void **state)
{
	struct fx *f = calloc(1, sizeof(*f));

	tfx_mkdtemp(f->dir, sizeof(f->dir), "ab-copy");
	snprintf(f->a, sizeof(f->a), "%s/a.db", f->dir);
	snprintf(f->b, sizeof(f->b), "%s/b.db", f->dir);
	snprintf(f->c, sizeof(f->c), "%s/c.db", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fx *f = *state;

	if (f->pg[0])
		pgfx_drop(f->pg);
	tfx_remove_tree(f->dir);
	free(f);
	return 0;
}

static void exec_ok(const char *target, const char *sql)
{
	struct buf msg = BUF_INIT;
	struct db *db = NULL;

	if (db_open(target, NULL, &db, &msg) != ERR_OK || db_exec(db, sql, &msg) != ERR_OK)
		fail_msg("%s: %s", target, buf_str(&msg));
	db_close(db);
	buf_release(&msg);
}

/* A row in every table, with NULLs, integers past 2^31, UTF-8 and empty text. */
static const char fill_sql[] =
	"INSERT INTO issues (receiver, key, repo, number, state, state_reason, "
	"episode_starts_ms, resolved_ends_ms, closed_at_ms, previous_number, created_at_ms, "
	"updated_at_ms, dead_reason, alertname, title, etag, labels) VALUES "
	"('gpu', 'a1b2c3d4e5f60718', 'acme/alerts', 41, 'open', NULL, 1764000000000, 0, 0, 0, "
	"1764000000001, 1764000000002, NULL, 'GPUIdle', 'GPU idle on n\xc3\xb6" "de-7 \xe2\x9c\x93', "
	"'W/\"abc\"', '[\"alert\",\"gpu\"]'), "
	"('gpu', 'ffff000011112222', 'acme/alerts', 0, 'dead', NULL, 0, 0, 0, 7, 1, 2, "
	"'repository acme/gone not found', NULL, '', NULL, NULL);"
	"INSERT INTO events (id, kind, receiver, key, status, starts_at_ms, ends_at_ms, payload, "
	"received_at_ms, attempts, next_attempt_at_ms, last_error, progress, state, done_at_ms, "
	"repeat_state) VALUES "
	"(5, 'bridge', 'gpu', 'a1b2c3d4e5f60718', 'firing', 1764000000000, 0, '{\"x\":1}', "
	"1764000000005, 0, 0, NULL, NULL, 'done', 1764000000009, 'r1'), "
	"(9, 'bridge', 'gpu', 'a1b2c3d4e5f60718', 'resolved', 1764000000000, 1764000300000, "
	"'{\"x\":2}', 1764000300001, 3, 1764000400000, 'HTTP 502', 'created #41', 'pending', "
	"NULL, 'r2'), "
	"(12, 'bridge', 'gpu', 'ffff000011112222', 'firing', 5000000000000, 0, '{}', 1, 1, 0, "
	"'repository acme/gone not found', NULL, 'dead', 2, NULL), "
	"(13, 'janitor', 'pods', 'ns/p', 'firing', 1, 0, '{}', 1, 0, 0, NULL, NULL, 'pending', "
	"NULL, NULL);"
	"INSERT INTO digests (id, kind, channel, thread_ts, part, parts, text, state, attempts, "
	"next_attempt_at_ms, created_at_ms, sent_at_ms, slack_channel_id, slack_ts, last_error) "
	"VALUES (3, 'notice', '@ana', NULL, 1, 2, 'Your pods \xe2\x80\xa6', 'sent', 0, 0, 10, 11, "
	"'C024BE91L', '1764000000.000100', NULL);"
	"INSERT INTO notices (id, namespace, pod, uid, kind, expires_ms, notify, owner, channel, "
	"thread_ts, text, state, attempts, next_attempt_at_ms, created_at_ms, sent_at_ms, "
	"slack_channel_id, slack_ts, last_error, digest_id, line) VALUES "
	"(7, 'ml', 'train-0', '0e4f', 'notice', 1764086400000, 'ana', 'ana', '@ana', NULL, 'idle', "
	"'sent', 0, 0, 10, 11, 'C024BE91L', '1764000000.000100', NULL, 3, '{\"pod\":\"train-0\"}'), "
	"(8, 'ml', 'train-1', '0e50', 'reminder', 0, NULL, NULL, NULL, '1764000000.000100', 'r', "
	"'pending', 2, 1764000000000, 12, 0, NULL, NULL, 'channel_not_found', NULL, NULL);"
	"INSERT INTO storm_summaries (id, receiver, repo, alertname, marker_key, number, state, "
	"created_at_ms, synced_at_ms, next_sync_ms, dirty) VALUES "
	"(2, 'gpu', 'acme/alerts', 'NodeDown', 'storm-1', 77, 'open', 1, 2, 3, 1);"
	"INSERT INTO storm_members (receiver, key, summary_id, firing, starts_at_ms, ends_at_ms, "
	"line) VALUES ('gpu', 'aaaa', 2, 1, 1764000000000, 0, '- node-3');"
	"INSERT INTO repo_scans (receiver, repo, done_at_ms) VALUES ('gpu', 'acme/alerts', 99);"
	"INSERT INTO group_states (receiver, key, members, payload, dirty, synced_at_ms, "
	"next_sync_ms) VALUES ('gpu', 'g-1', '[]', '{}', 0, 5, 6);"
	"INSERT INTO gh_deliveries (id, received_at_ms) VALUES "
	"('72d3162e-cc78-11e3-81ab-4c9367dc0958', 1764000000000);"
	"INSERT INTO silences (receiver, key, silence_id, created_by, ends_at_ms, created_at_ms, "
	"expired_at_ms) VALUES ('gpu', 'a1b2c3d4e5f60718', '890821be-53a6', 'octocat', "
	"1764007200000, 1764000000000, 0);"
	"INSERT INTO gh_budget (owner, sent_at_ms) VALUES ('', 1764000000000), ('acme', "
	"1764000001000);";

/* Every copied table of target as text, rows sorted, NULL as "NULL". */
static void dump(const char *target, struct buf *out)
{
	struct buf msg = BUF_INIT;
	struct db *db = NULL;
	const char *table, *cols;

	if (db_open(target, NULL, &db, &msg) != ERR_OK)
		fail_msg("%s: %s", target, buf_str(&msg));
	buf_reset(out);
	for (size_t t = 0; (cols = store_copy_columns(t, &table)); t++) {
		struct buf sql = BUF_INIT;
		struct db_stmt *s = NULL;
		char types[64];
		int n = 0;

		(void)buf_printf(&sql, "SELECT ");
		for (const char *p = cols; *p; n++) {
			size_t len = strcspn(p, " ");
			(void)buf_printf(&sql, "%s%.*s", n ? ", " : "", (int)len, p);
			types[n] = p[len + 1];
			p += len + 2;
			p += strspn(p, " ");
		}
		(void)buf_printf(&sql, " FROM %s ORDER BY 1, 2", table);
		if (db_prepare(db, buf_str(&sql), &s, &msg) != ERR_OK)
			fail_msg("%s", buf_str(&msg));
		(void)buf_printf(out, "[%s]\n", table);
		while (db_step(s) == DB_ROW) {
			for (int i = 0; i < n; i++) {
				if (db_col_is_null(s, i))
					(void)buf_printf(out, "NULL|");
				else if (types[i] == 'i')
					(void)buf_printf(out, "%" PRId64 "|", db_col_int(s, i));
				else
					(void)buf_printf(out, "'%s'|", db_col_text(s, i));
			}
			(void)buf_printf(out, "\n");
		}
		db_finalize(s);
		buf_release(&sql);
	}
	db_close(db);
	buf_release(&msg);
}

static void copy_ok(const char *from, const char *to, struct store_copy_counts *counts)
{
	struct store *src = sfx_open_ok(from), *dst = sfx_open_ok(to);
	struct buf msg = BUF_INIT;

	if (store_copy(src, dst, counts, &msg) != ERR_OK)
		fail_msg("store_copy %s -> %s: %s", from, to, buf_str(&msg));
	store_close(dst);
	store_close(src);
	buf_release(&msg);
}

static int64_t rows_of(const struct store_copy_counts *c, const char *table)
{
	for (int i = 0; i < STORE_COPY_TABLES; i++)
		if (c->tables[i] && !strcmp(c->tables[i], table))
			return c->rows[i];
	return -1;
}

/* A store with fill_sql's rows at path. */
static void make_source(const char *path)
{
	store_close(sfx_open_ok(path));  /* the schema */
	exec_ok(path, fill_sql);
}

static void sqlite_to_sqlite_copies_every_row(void **state)
{
	struct fx *f = *state;
	struct buf want = BUF_INIT, got = BUF_INIT;
	struct store_copy_counts counts;

	make_source(f->a);
	copy_ok(f->a, f->b, &counts);
	dump(f->a, &want);
	dump(f->b, &got);
	assert_string_equal(buf_str(&got), buf_str(&want));
	assert_non_null(strstr(buf_str(&got), "'GPU idle on n\xc3\xb6" "de-7 \xe2\x9c\x93'"));
	assert_non_null(strstr(buf_str(&got), "5000000000000|"));
	assert_int_equal(rows_of(&counts, "issues"), 2);
	assert_int_equal(rows_of(&counts, "events"), 4);
	assert_int_equal(rows_of(&counts, "notices"), 2);
	assert_int_equal(rows_of(&counts, "digests"), 1);
	assert_int_equal(rows_of(&counts, "storm_members"), 1);
	assert_int_equal(rows_of(&counts, "gh_deliveries"), 1);
	assert_int_equal(rows_of(&counts, "silences"), 1);
	assert_int_equal(rows_of(&counts, "gh_budget"), 2);
	buf_release(&want);
	buf_release(&got);
}

static void non_empty_target_is_refused(void **state)
{
	struct fx *f = *state;
	struct buf before = BUF_INIT, after = BUF_INIT, msg = BUF_INIT;
	struct store *src, *dst;
	struct store_copy_counts counts;

	make_source(f->a);
	store_close(sfx_open_ok(f->b));
	exec_ok(f->b, "INSERT INTO repo_scans (receiver, repo, done_at_ms) VALUES ('x', 'y/z', 1)");
	dump(f->b, &before);
	src = sfx_open_ok(f->a);
	dst = sfx_open_ok(f->b);
	assert_int_equal(store_copy(src, dst, &counts, &msg), ERR_CONFLICT);
	assert_non_null(strstr(buf_str(&msg), "1 row(s) in table repo_scans"));
	assert_non_null(strstr(buf_str(&msg), "new, empty database"));
	assert_int_equal(rows_of(&counts, "issues"), -1);
	assert_int_equal(store_copy(src, src, &counts, &msg), ERR_INVALID);
	store_close(dst);
	store_close(src);
	dump(f->b, &after);
	assert_string_equal(buf_str(&after), buf_str(&before));
	buf_release(&before);
	buf_release(&after);
	buf_release(&msg);
}

/* The spec's "name type" pairs, sorted, against the schema's; target's engine decides the query. */
static void check_columns(const char *target)
{
	struct buf msg = BUF_INIT;
	struct db *db = NULL;
	const char *table, *cols;

	if (db_open(target, NULL, &db, &msg) != ERR_OK)
		fail_msg("%s: %s", target, buf_str(&msg));
	for (size_t t = 0; (cols = store_copy_columns(t, &table)); t++) {
		struct buf have = BUF_INIT, want = BUF_INIT;
		struct db_stmt *s = NULL;
		const char *sql = db_engine(db) == DB_SQLITE ?
			"SELECT name, lower(type) FROM pragma_table_info(?1) ORDER BY name" :
			"SELECT column_name, data_type FROM information_schema.columns WHERE "
			"table_name = ?1 AND table_schema = current_schema() ORDER BY column_name";
		char *spec = strdup(cols), *names[64], *save = NULL;
		int n = 0;

		for (char *w = strtok_r(spec, " ", &save); w && n < 64; w = strtok_r(NULL, " ", &save))
			names[n++] = w;
		/* sort the (name, type) pairs by name: a small insertion sort */
		for (int i = 2; i < n; i += 2)
			for (int j = i; j >= 2 && strcmp(names[j - 2], names[j]) > 0; j -= 2) {
				char *a = names[j], *b = names[j + 1];
				names[j] = names[j - 2], names[j + 1] = names[j - 1];
				names[j - 2] = a, names[j - 1] = b;
			}
		for (int i = 0; i < n; i += 2)
			(void)buf_printf(&want, "%s %s\n", names[i], names[i + 1]);
		if (db_prepare(db, sql, &s, &msg) != ERR_OK)
			fail_msg("%s", buf_str(&msg));
		db_bind_text(s, 1, table);
		while (db_step(s) == DB_ROW) {
			const char *type = db_col_text(s, 1);
			(void)buf_printf(&have, "%s %c\n", db_col_text(s, 0),
					 strstr(type, "int") ? 'i' : 't');
		}
		db_finalize(s);
		if (strcmp(buf_str(&have), buf_str(&want)))
			fail_msg("table %s on %s: the schema has\n%sstore_copy.c copies\n%s", table,
				 db_name(db), buf_str(&have), buf_str(&want));
		free(spec);
		buf_release(&have);
		buf_release(&want);
	}
	db_close(db);
	buf_release(&msg);
}

static void columns_are_the_schemas(void **state)
{
	struct fx *f = *state;

	store_close(sfx_open_ok(f->a));
	check_columns(f->a);
	if (pgfx_server()) {
		pgfx_create(f->pg, sizeof(f->pg), "ab_copy_cols");
		store_close(sfx_open_ok(f->pg));
		check_columns(f->pg);
	}
}

static void sqlite_to_postgres_and_back(void **state)
{
	struct fx *f = *state;
	struct buf want = BUF_INIT, got = BUF_INIT, msg = BUF_INIT;
	struct store_copy_counts counts;
	struct store *st;
	struct store_event ev = {
		.kind = "bridge", .receiver = "gpu", .key = "0123456789abcdef",
		.status = "firing", .starts_at_ms = 1764000000000, .payload = "{}",
		.received_at_ms = 1764000000000,
	};

	if (!pgfx_create_or_skip(f->pg, sizeof(f->pg), "ab_copy", "sqlite_to_postgres_and_back"))
		return;
	make_source(f->a);
	copy_ok(f->a, f->pg, &counts);
	assert_int_equal(rows_of(&counts, "events"), 4);
	copy_ok(f->pg, f->c, &counts);
	dump(f->a, &want);
	dump(f->pg, &got);
	assert_string_equal(buf_str(&got), buf_str(&want));
	dump(f->c, &got);
	assert_string_equal(buf_str(&got), buf_str(&want));
	/* The identity goes on after the copied ids (13 the largest event id). */
	st = sfx_open_ok(f->pg);
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_true(ev.id > 13);
	assert_int_equal(store_pending_count(st, "bridge"), 2);
	assert_int_equal(store_dead_count(st), 1);
	store_close(st);
	buf_release(&want);
	buf_release(&got);
	buf_release(&msg);
}

static void the_command(void **state)
{
	struct fx *f = *state;
	char from[320], to[320], missing[320];
	char *no_to[] = { "copy", from };
	char *bad[] = { "copy", "--frm=x" };
	char *not_copy[] = { "move" };
	char *from_missing[] = { "copy", missing, to };
	char *ok[] = { "copy", from, to };
	struct buf got = BUF_INIT, want = BUF_INIT;

	make_source(f->a);
	snprintf(from, sizeof(from), "--from=%s", f->a);
	snprintf(to, sizeof(to), "--to=%s", f->b);
	snprintf(missing, sizeof(missing), "--from=%s/none.db", f->dir);
	assert_int_equal(store_copy_command(2, no_to), 2);
	assert_int_equal(store_copy_command(2, bad), 2);
	assert_int_equal(store_copy_command(1, not_copy), 2);
	assert_int_equal(store_copy_command(3, from_missing), 1);
	assert_int_equal(access(f->b, F_OK), -1);  /* nothing made for a missing source */
	assert_int_equal(store_copy_command(3, ok), 0);
	dump(f->a, &want);
	dump(f->b, &got);
	assert_string_equal(buf_str(&got), buf_str(&want));
	assert_int_equal(store_copy_command(3, ok), 1);  /* the target is not empty now */
	buf_release(&got);
	buf_release(&want);
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN(
	T(sqlite_to_sqlite_copies_every_row),
	T(non_empty_target_is_refused),
	T(columns_are_the_schemas),
	T(sqlite_to_postgres_and_back),
	T(the_command))
