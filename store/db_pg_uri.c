/*
 * db_pg_uri.c - what the PostgreSQL engine (db_pg.c) does with the database
 * settings before it connects: the URI redacted for names and messages (no
 * password in a log line), the password read from database_password_file, and
 * the SQL's ?N placeholders written as PostgreSQL's $N.
 * Plain C, no libpq; both share db_int.h.
 */
#ifdef AB_HAVE_LIBPQ

#include "store/db_int.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xalloc.h"
#include "core/banned.h"

/* Append the query string s to b, its password parameter's value, if any, replaced by xxxxx. */
static void add_query_redacted(struct buf *b, const char *s)
{
	while (*s) {
		size_t n = strcspn(s, "&");

		if (strncmp(s, "password=", 9) == 0 && n >= 9)
			(void)buf_adds(b, "password=xxxxx");
		else
			(void)buf_add(b, s, n);
		s += n;
		if (*s)
			(void)buf_addch(b, *s++);
	}
}

/*
 * uri without its password: postgres://user:secret@host/db?password=secret
 * becomes postgres://user:xxxxx@host/db?password=xxxxx (malloc'd).
 */
char *db_pg_redact(const char *uri)
{
	struct buf b = BUF_INIT;
	const char *host = strstr(uri, "://");
	const char *at = NULL, *colon, *query;
	size_t auth;

	if (!host)
		return xstrdup(uri);
	host += 3;
	auth = strcspn(host, "/?");
	for (size_t i = 0; i < auth; i++)
		if (host[i] == '@')
			at = host + i;
	colon = at ? memchr(host, ':', (size_t)(at - host)) : NULL;
	if (colon) {
		(void)buf_add(&b, uri, (size_t)(colon + 1 - uri));
		(void)buf_adds(&b, "xxxxx");
		(void)buf_add(&b, at, (size_t)(host + auth - at));
	} else {
		(void)buf_add(&b, uri, (size_t)(host + auth - uri));
	}
	query = strchr(host + auth, '?');
	if (query) {
		(void)buf_add(&b, host + auth, (size_t)(query + 1 - (host + auth)));
		add_query_redacted(&b, query + 1);
	} else {
		(void)buf_adds(&b, host + auth);
	}
	return buf_detach(&b);
}

/* The first line of file (no newline) into pw (n bytes): ERR_IO or ERR_INVALID with why. */
enum err db_pg_read_password(const char *file, char *pw, size_t n, struct buf *errmsg)
{
	FILE *f = fopen(file, "r");
	size_t len;
	enum err rc = ERR_OK;

	pw[0] = '\0';
	if (!f) {
		buf_setf(errmsg, "cannot read the database password file \"%s\": %s", file,
			 strerror(errno));
		return ERR_IO;
	}
	if (!fgets(pw, (int)n, f)) {
		pw[0] = '\0';
		if (ferror(f)) {
			buf_setf(errmsg, "cannot read the database password file \"%s\": %s",
				 file, strerror(errno));
			rc = ERR_IO;
		}
	}
	len = strlen(pw);
	if (rc == ERR_OK && len == n - 1 && pw[len - 1] != '\n' && !feof(f)) {
		buf_setf(errmsg, "the database password file \"%s\" has a line longer than %zu "
			 "bytes", file, n - 2);
		rc = ERR_INVALID;
	}
	fclose(f);
	while (len && (pw[len - 1] == '\n' || pw[len - 1] == '\r'))
		pw[--len] = '\0';
	if (rc == ERR_OK && len == 0) {
		buf_setf(errmsg, "the database password file \"%s\" is empty", file);
		rc = ERR_INVALID;
	}
	if (rc != ERR_OK)
		explicit_bzero(pw, n);
	return rc;
}

enum err db_pg_translate(const char *sql, struct buf *out, int *nparams, struct buf *why)
{
	const char *p = sql;

	*nparams = 0;
	while (*p) {
		const char *end = NULL;

		if (*p == '\'' || *p == '"') {
			end = strchr(p + 1, *p); /* '' inside a literal: two literals in a row */
			end = end ? end + 1 : p + strlen(p);
		} else if (p[0] == '-' && p[1] == '-') {
			end = p + strcspn(p, "\n");
		} else if (p[0] == '/' && p[1] == '*') {
			end = strstr(p + 2, "*/");
			end = end ? end + 2 : p + strlen(p);
		} else if (p[0] == '?' && isdigit((unsigned char)p[1])) {
			char *stop;
			long n = strtol(p + 1, &stop, 10);

			if (n < 1 || n > DB_PG_MAX_PARAMS) {
				buf_setf(why, "placeholder ?%.10s out of range (1..%d)", p + 1,
					 DB_PG_MAX_PARAMS);
				return ERR_DB;
			}
			(void)buf_printf(out, "$%ld", n);
			if (n > *nparams)
				*nparams = (int)n;
			p = stop;
			continue;
		}
		if (!end)
			end = p + 1;
		(void)buf_add(out, p, (size_t)(end - p));
		p = end;
	}
	if (!out->data)
		(void)buf_adds(out, "");
	return ERR_OK;
}


#else

/* Built without libpq (AB_HAVE_LIBPQ unset): db_pg.c, the only user, is not built either. */
typedef int db_pg_uri_not_built;

#endif
