/*
 * db_int.h - what db.c shares with the engines (db_sqlite.c, db_pg.c): each
 * engine fills a struct db_ops, and every struct db / struct db_stmt starts
 * with the common part below, which db.c's public functions dispatch on.
 * Not for other modules: they use db.h.
 */
#ifndef AB_DB_INT_H
#define AB_DB_INT_H

#include <stdint.h>

#include "core/buf.h"
#include "store/db.h"
#include "core/err.h"

struct db_ops {
	enum db_engine engine;
	void (*close)(struct db *db);
	enum err (*prepare)(struct db *db, const char *sql, struct db_stmt **out,
			    struct buf *errmsg);
	void (*finalize)(struct db_stmt *s);
	void (*bind_text)(struct db_stmt *s, int idx, const char *v);
	void (*bind_int)(struct db_stmt *s, int idx, int64_t v);
	void (*bind_null)(struct db_stmt *s, int idx);
	enum db_step (*step)(struct db_stmt *s);
	int64_t (*col_int)(struct db_stmt *s, int i);
	const char *(*col_text)(struct db_stmt *s, int i);
	int (*col_is_null)(struct db_stmt *s, int i);
	void (*reset)(struct db_stmt *s);
	int64_t (*changes)(struct db *db);
	const char *(*errmsg)(struct db *db);
	enum err (*exec)(struct db *db, const char *sql, struct buf *errmsg);
	enum err (*begin)(struct db *db, struct buf *errmsg);
	enum err (*commit)(struct db *db, struct buf *errmsg);
	void (*rollback)(struct db *db);
	int (*in_transaction)(struct db *db);
	enum err (*schema_version)(struct db *db, int *version, struct buf *errmsg);
	enum err (*set_schema_version)(struct db *db, int version, struct buf *errmsg);
	enum err (*reclaim)(struct db *db, struct buf *errmsg);
	enum err (*data_version)(struct db *db, uint64_t *version, struct buf *errmsg);
	int (*data_version_unlocked)(struct db *db, uint64_t *version);
	enum err (*try_lock)(struct db *db, int64_t key, int *held, struct buf *errmsg);
	int (*lock_held)(struct db *db, int64_t key);
	void (*unlock)(struct db *db, int64_t key);
	enum err (*set_timeout)(struct db *db, int64_t timeout_ms, struct buf *errmsg);
	int (*file_lost)(struct db *db, struct buf *why);
};

/* The first member of every engine's connection. */
struct db {
	const struct db_ops *ops;
	char *name;   /* db_name(): path, or URI without its password; set by the engine's
		       * open function, malloc'd, freed by db_close() in db.c after ops->close */
	/*
	 * db_busy_ms(): when the engine call running now began (CLOCK_MONOTONIC,
	 * microseconds), 0 when none; written by db.c around each call that may
	 * wait on the database, read from any thread (__atomic builtins).
	 */
	int64_t busy_since_us;
};

/* The first member of every engine's statement. */
struct db_stmt {
	struct db *db;
};

/*
 * The engines' open functions, called by db_open() with target already
 * classified.  read_only (sqlite): open the file without creating or
 * writing it (db_open_read_only()).
 */
enum err db_sqlite_open(const char *path, int read_only, struct db **out, struct buf *errmsg);
enum err db_pg_open(const char *uri, const char *password_file, struct db **out,
		    struct buf *errmsg);
/*
 * uri without its password, for names and messages (db_pg_uri.c):
 * postgres://user:secret@host/db?password=secret becomes
 * postgres://user:xxxxx@host/db?password=xxxxx.  Malloc'd: the caller frees
 * it.  A string without "://" is copied as it is.
 */
char *db_pg_redact(const char *uri);
/*
 * The first line of file, its line end removed, into pw (n bytes, NUL
 * included) for db_pg_open() (db_pg_uri.c).  ERR_IO when it cannot be read;
 * ERR_INVALID when it is empty or its first line does not fit; errmsg names
 * the file, never the password; pw is wiped on any error.
 */
enum err db_pg_read_password(const char *file, char *pw, size_t n, struct buf *errmsg);
/* The most parameters one PostgreSQL statement takes (its protocol counts them in 16 bits). */
#define DB_PG_MAX_PARAMS 65535
/*
 * sql with ?N rewritten to $N, outside '...' literals, "..." identifiers and
 * comments, appended to out (db_pg_uri.c); *nparams is the largest N.  A bare
 * ? is left alone.  ERR_DB with why set for a ?0 or a ?N past
 * DB_PG_MAX_PARAMS.
 */
enum err db_pg_translate(const char *sql, struct buf *out, int *nparams, struct buf *why);

#endif
