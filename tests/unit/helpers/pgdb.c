/*
 * pgdb.c - a PostgreSQL database per unit test (pgdb.h), made and dropped
 * through db.h on the server's own database.
 */
#include "tests/unit/helpers/pgdb.h"

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
#include "core/db.h"

static void admin_exec(const char *sql)
{
	struct buf msg = BUF_INIT;
	struct db *db = NULL;

	if (db_open(getenv("AB_TEST_PG_URI"), NULL, &db, &msg) != ERR_OK ||
	    db_exec(db, sql, &msg) != ERR_OK)
		fail_msg("%s: %s", sql, buf_str(&msg));
	db_close(db);
	buf_release(&msg);
}

/* uri's database name: after the first '/' past "://", up to '?'. */
static const char *db_part(const char *uri, size_t *len)
{
	const char *p = strstr(uri, "://");
	const char *slash = p ? strchr(p + 3, '/') : NULL;

	if (!slash)
		fail_msg("no database in the URI %s", uri);
	*len = strcspn(slash + 1, "?");
	return slash + 1;
}

int pgdb_create(char *out, size_t n, const char *tag)
{
	static int seq;
	const char *base = getenv("AB_TEST_PG_URI");
	char name[64], sql[128];
	const char *db;
	size_t len;

	out[0] = '\0';
	if (!base || !*base)
		return 0;
	snprintf(name, sizeof(name), "ab_%s_%ld_%d", tag, (long)getpid(), ++seq);
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	admin_exec(sql);
	db = db_part(base, &len);
	if ((size_t)snprintf(out, n, "%.*s%s%s", (int)(db - base), base, name, db + len) >= n)
		fail_msg("URI too long");
	return 1;
}

void pgdb_drop(const char *uri)
{
	char sql[160];
	size_t len;
	const char *db = db_part(uri, &len);

	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %.*s WITH (FORCE)", (int)len, db);
	admin_exec(sql);
}
