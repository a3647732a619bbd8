/*
 * store_fixture.c - what the store's unit tests (test_store*.c) share: a fresh
 * directory per test, a second sqlite connection to inject failures, and
 * builders of events and map rows.
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

int sfx_setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	snprintf(f->dir, sizeof(f->dir), "/tmp/test_store.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->path, sizeof(f->path), "%s/ab.db", f->dir);
	snprintf(f->other, sizeof(f->other), "%s/garbage.db", f->dir);
	*state = f;
	return 0;
}

int sfx_teardown(void **state)
{
	struct fixture *f = *state;
	const char *suffix[] = { "", "-wal", "-shm", "-journal" };
	char p[160];

	for (size_t i = 0; i < 4; i++) {
		snprintf(p, sizeof(p), "%s%s", f->path, suffix[i]);
		unlink(p);
		snprintf(p, sizeof(p), "%s%s", f->other, suffix[i]);
		unlink(p);
	}
	rmdir(f->dir);
	free(f);
	return 0;
}

/* Run sql on path through a connection of the test's own. */
void sfx_sql_exec(const char *path, const char *sql)
{
	sqlite3 *db = NULL;
	char *msg = NULL;

	assert_int_equal(sqlite3_open(path, &db), SQLITE_OK);
	sqlite3_busy_timeout(db, 5000);
	if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
		fail_msg("sql_exec %s: %s", sql, msg);
	sqlite3_close(db);
}

int64_t sfx_sql_int(const char *path, const char *sql)
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

struct store *sfx_open_ok(const char *path)
{
	struct buf msg = BUF_INIT;
	struct store *st = NULL;

	if (store_open(path, &st, &msg) != ERR_OK)
		fail_msg("store_open %s: %s", path, buf_str(&msg));
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
	r.state = (char *)"open";
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
