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

#include "store/db.h"
#include "banned.h"

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

enum err cfg_database_uri_check(const char *uri, struct buf *why)
{
	char *msg = NULL;
	PQconninfoOption *opts;
	enum err rc = ERR_OK;

	if (names_password(uri)) {
		buf_setf(why, PASSWORD_IN_URI);
		return ERR_INVALID;
	}
	opts = PQconninfoParse(uri, &msg);
	if (!opts) {
		size_t n = msg ? strlen(msg) : 0;

		while (n > 0 && msg[n - 1] == '\n')
			msg[--n] = '\0';
		buf_setf(why, "not a valid PostgreSQL URI: %s", msg ? msg : "out of memory");
		rc = ERR_INVALID;
	}
	for (const PQconninfoOption *o = opts; o && o->keyword && rc == ERR_OK; o++)
		if (!strcmp(o->keyword, "password") && o->val && *o->val) {
			buf_setf(why, PASSWORD_IN_URI);
			rc = ERR_INVALID;
		}
	PQfreemem(msg);
	PQconninfoFree(opts);
	return rc;
}

/* A PostgreSQL URI: well formed for libpq, without a password. */
static enum err check_uri(struct ctx *c, yaml_node_t *node, const char *uri)
{
	struct buf why = BUF_INIT;
	enum err rc = cfg_database_uri_check(uri, &why);

	if (rc != ERR_OK)
		rc = cfg_fail(c, node, "database", rc, "%s", buf_str(&why));
	buf_release(&why);
	return rc;
}

enum err cfg_check_database(struct ctx *c, yaml_node_t *map, struct config *cfg)
{
	yaml_node_t *db_node = cfg_key_or_map(c, map, "database");
	yaml_node_t *pw_node = cfg_key_or_map(c, map, "database_password_file");
	enum err rc;

	if (!db_target_is_postgres(cfg->database)) {
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
