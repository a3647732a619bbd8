/* pg_fixture.c - see pg_fixture.h. */
#include "pg_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/buf.h"
#include "store/db.h"

const char *pgfx_server(void)
{
	const char *u = getenv("AB_TEST_PG_URI");

	return u && *u ? u : NULL;
}

/* Run sql on the server's own database (CREATE / DROP DATABASE cannot run in a transaction). */
static void admin_exec(const char *sql)
{
	struct buf msg = BUF_INIT;
	struct db *db = NULL;

	if (!pgfx_server())
		fail_msg("pg_fixture: AB_TEST_PG_URI is unset");
	if (db_open(pgfx_server(), NULL, &db, &msg) != ERR_OK ||
	    db_exec(db, sql, &msg) != ERR_OK)
		fail_msg("pg_fixture: %s: %s", sql, buf_str(&msg));
	db_close(db);
	buf_release(&msg);
}

/* The name of uri's database: between the '/' after the authority and any '?'. */
static const char *db_part(const char *uri, size_t *len)
{
	const char *p = strstr(uri, "://");
	const char *slash = p ? strchr(p + 3, '/') : NULL;

	if (!slash)
		fail_msg("pg_fixture: no database name in %s", uri);
	*len = strcspn(slash + 1, "?");
	return slash + 1;
}

void pgfx_create(char *out, size_t n, const char *prefix)
{
	static int counter;
	char name[64], sql[128];
	const char *server = pgfx_server(), *part;
	size_t len;

	if (!server)
		fail_msg("pg_fixture: AB_TEST_PG_URI is unset");
	snprintf(name, sizeof(name), "%s_%ld_%d", prefix, (long)getpid(), ++counter);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s", name);
	admin_exec(sql);  /* one statement each: not in a transaction block */
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s", name);
	admin_exec(sql);
	part = db_part(server, &len);
	if ((size_t)snprintf(out, n, "%.*s%s%s", (int)(part - server), server, name,
			     part + len) >= n)
		fail_msg("pg_fixture: URI too long");
}

int pgfx_create_or_skip(char *out, size_t n, const char *prefix, const char *test)
{
	if (!pgfx_server()) {
		print_message("%s: skipped (AB_TEST_PG_URI is unset)\n", test);
		return 0;
	}
	pgfx_create(out, n, prefix);
	return 1;
}

void pgfx_drop(const char *uri)
{
	char sql[128];
	size_t len;
	const char *part = db_part(uri, &len);

	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %.*s WITH (FORCE)", (int)len, part);
	admin_exec(sql);
}
