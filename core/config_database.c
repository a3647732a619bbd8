/*
 * config_database.c - the checks of `database` and `database_password_file`
 * (issue 10): `database` is an sqlite file path, or a PostgreSQL URI in
 * libpq's form (postgres:// or postgresql://, parsed by PQconninfoParse())
 * that holds no password; the password comes from database_password_file or
 * from libpq's own PGPASSFILE.  Part of the configuration loader
 * (config_int.h); the store opens the database (db.h).
 */
#include "config_int.h"

#include <libpq-fe.h>
#include <string.h>

#include "banned.h"

/*
 * 1 when target is a PostgreSQL URI.  The same test as db.h's
 * db_target_is_postgres(); kept here so the loader does not depend on the
 * store.
 */
static int is_postgres_uri(const char *target)
{
	return !strncmp(target, "postgres://", 11) || !strncmp(target, "postgresql://", 13);
}

/*
 * 1 when uri (after its scheme) names a password where libpq looks for one:
 * user:password@ before the host (libpq scans for '@' up to the first '/'),
 * or a query parameter password=.  Checked before parsing, so that libpq's
 * messages, which may quote the URI, are never printed for such a URI.
 */
static int names_password(const char *uri)
{
	const char *p = strstr(uri, "://") + 3;
	const char *at = p + strcspn(p, "@/");
	const char *colon = memchr(p, ':', (size_t)(at - p));
	const char *q = strchr(p, '?');

	if (*at == '@' && colon && colon + 1 < at)
		return 1;
	for (; q; q = strchr(q + 1, '&'))
		if (!strncmp(q + 1, "password=", 9))
			return 1;
	return 0;
}

#define PASSWORD_IN_URI "the URI holds a password: put it in a file named by " \
	"database_password_file (or libpq's PGPASSFILE) instead"

/* A PostgreSQL URI: well formed for libpq, without a password. */
static enum err check_uri(struct ctx *c, yaml_node_t *node, const char *uri)
{
	char *why = NULL;
	PQconninfoOption *opts;
	enum err rc = ERR_OK;

	if (names_password(uri))
		return cfg_fail(c, node, "database", ERR_INVALID, PASSWORD_IN_URI);
	opts = PQconninfoParse(uri, &why);
	if (!opts) {
		size_t n = why ? strlen(why) : 0;

		while (n > 0 && why[n - 1] == '\n')
			why[--n] = '\0';
		rc = cfg_fail(c, node, "database", ERR_INVALID, "not a valid PostgreSQL URI: %s",
			      why ? why : "out of memory");
	}
	for (const PQconninfoOption *o = opts; o && o->keyword && rc == ERR_OK; o++)
		if (!strcmp(o->keyword, "password") && o->val && *o->val)
			rc = cfg_fail(c, node, "database", ERR_INVALID, PASSWORD_IN_URI);
	PQfreemem(why);
	PQconninfoFree(opts);
	return rc;
}

enum err cfg_check_database(struct ctx *c, yaml_node_t *map, struct config *cfg)
{
	yaml_node_t *db_node = cfg_key_or_map(c, map, "database");
	yaml_node_t *pw_node = cfg_key_or_map(c, map, "database_password_file");
	enum err rc;

	if (!is_postgres_uri(cfg->database)) {
		if (!cfg->database_password_file)
			return ERR_OK;
		return cfg_fail(c, pw_node, "database_password_file", ERR_INVALID,
				"only for a PostgreSQL database (database: postgres://...); "
				"database is the sqlite file \"%s\"", cfg->database);
	}
	rc = check_uri(c, db_node, cfg->database);
	if (rc == ERR_OK && cfg->database_password_file)
		rc = cfg_check_secret_file(c, cfg_find_value(c, map, "database_password_file", NULL),
					   "database_password_file", cfg->database_password_file);
	return rc;
}
