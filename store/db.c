/*
 * db.c - the public functions of db.h: db_open() picks the engine by the
 * target's form, every other call dispatches through the engine's table
 * (db_int.h) to db_sqlite.c or db_pg.c.
 */
#include "store/db.h"

#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "store/db_int.h"
#include "core/banned.h"

/* db_busy_ms(): stamp the start of an engine call that may wait, and its end. */
static void enter(struct db *db)
{
	__atomic_store_n(&db->busy_since_us, clock_mono_us(), __ATOMIC_RELEASE);
}

static void leave(struct db *db)
{
	__atomic_store_n(&db->busy_since_us, 0, __ATOMIC_RELEASE);
}

/* Run op, an engine call that may wait and needs no argument but errmsg, between the two. */
static enum err timed(struct db *db, enum err (*op)(struct db *db, struct buf *errmsg),
		      struct buf *errmsg)
{
	enum err rc;

	enter(db);
	rc = op(db, errmsg);
	leave(db);
	return rc;
}

int db_target_is_postgres(const char *target)
{
	return target && (!strncmp(target, "postgres://", 11) ||
			  !strncmp(target, "postgresql://", 13));
}

static enum err open_target(const char *target, const char *password_file, int read_only,
			    struct db **out, struct buf *errmsg)
{
	*out = NULL;
	if (!target || !*target) {
		buf_setf(errmsg, "database: the target (a file path or postgres:// URI) is empty");
		return ERR_INVALID;
	}
	if (db_target_is_postgres(target)) {
#ifdef AB_HAVE_LIBPQ
		enum err rc = db_pg_open(target, password_file, out, errmsg);

		if (rc == ERR_OK && read_only) {
			rc = db_exec(*out, "SET default_transaction_read_only = on", errmsg);
			if (rc != ERR_OK) {
				db_close(*out);
				*out = NULL;
			}
		}
		return rc;
#else
		(void)password_file;
		buf_setf(errmsg,
			 "database: alertbridge was built without PostgreSQL support (libpq)");
		return ERR_INVALID;
#endif
	}
	return db_sqlite_open(target, read_only, out, errmsg);
}

enum err db_open(const char *target, const char *password_file, struct db **out,
		 struct buf *errmsg)
{
	return open_target(target, password_file, 0, out, errmsg);
}

enum err db_open_read_only(const char *target, const char *password_file, struct db **out,
			   struct buf *errmsg)
{
	return open_target(target, password_file, 1, out, errmsg);
}

enum err db_set_timeout(struct db *db, int64_t timeout_ms, struct buf *errmsg)
{
	enum err rc;

	if (timeout_ms <= 0) {
		buf_setf(errmsg, "%s: statement timeout %lld ms: must be positive", db->name,
			 (long long)timeout_ms);
		return ERR_INVALID;
	}
	enter(db);
	rc = db->ops->set_timeout(db, timeout_ms, errmsg);
	leave(db);
	return rc;
}

int64_t db_busy_ms(struct db *db)
{
	int64_t since = __atomic_load_n(&db->busy_since_us, __ATOMIC_ACQUIRE);

	return since ? (clock_mono_us() - since) / 1000 : 0;
}

int db_file_lost(struct db *db, struct buf *why)
{
	return db->ops->file_lost(db, why);
}

void db_close(struct db *db)
{
	char *name;

	if (!db)
		return;
	name = db->name;
	db->ops->close(db);
	free(name);
}

enum db_engine db_engine(const struct db *db)
{
	return db->ops->engine;
}

const char *db_name(const struct db *db)
{
	return db->name;
}

enum err db_prepare(struct db *db, const char *sql, struct db_stmt **out, struct buf *errmsg)
{
	return db->ops->prepare(db, sql, out, errmsg);
}

void db_finalize(struct db_stmt *s)
{
	if (s)
		s->db->ops->finalize(s);
}

void db_bind_text(struct db_stmt *s, int idx, const char *v)
{
	s->db->ops->bind_text(s, idx, v);
}

void db_bind_int(struct db_stmt *s, int idx, int64_t v)
{
	s->db->ops->bind_int(s, idx, v);
}

void db_bind_null(struct db_stmt *s, int idx)
{
	s->db->ops->bind_null(s, idx);
}

enum db_step db_step(struct db_stmt *s)
{
	enum db_step r;

	enter(s->db);
	r = s->db->ops->step(s);
	leave(s->db);
	return r;
}

int64_t db_col_int(struct db_stmt *s, int i)
{
	return s->db->ops->col_int(s, i);
}

const char *db_col_text(struct db_stmt *s, int i)
{
	return s->db->ops->col_text(s, i);
}

int db_col_is_null(struct db_stmt *s, int i)
{
	return s->db->ops->col_is_null(s, i);
}

void db_reset(struct db_stmt *s)
{
	s->db->ops->reset(s);
}

int64_t db_changes(struct db *db)
{
	return db->ops->changes(db);
}

const char *db_errmsg(struct db *db)
{
	return db->ops->errmsg(db);
}

enum err db_exec(struct db *db, const char *sql, struct buf *errmsg)
{
	enum err rc;

	enter(db);
	rc = db->ops->exec(db, sql, errmsg);
	leave(db);
	return rc;
}

enum err db_begin(struct db *db, struct buf *errmsg)
{
	return timed(db, db->ops->begin, errmsg);
}

enum err db_commit(struct db *db, struct buf *errmsg)
{
	return timed(db, db->ops->commit, errmsg);
}

void db_rollback(struct db *db)
{
	enter(db);
	db->ops->rollback(db);
	leave(db);
}

int db_in_transaction(struct db *db)
{
	return db->ops->in_transaction(db);
}

enum err db_schema_version(struct db *db, int *version, struct buf *errmsg)
{
	return db->ops->schema_version(db, version, errmsg);
}

enum err db_set_schema_version(struct db *db, int version, struct buf *errmsg)
{
	return db->ops->set_schema_version(db, version, errmsg);
}

enum err db_data_version(struct db *db, uint64_t *version, struct buf *errmsg)
{
	return db->ops->data_version(db, version, errmsg);
}

int db_data_version_unlocked(struct db *db, uint64_t *version)
{
	return db->ops->data_version_unlocked(db, version);
}

enum err db_reclaim(struct db *db, struct buf *errmsg)
{
	return timed(db, db->ops->reclaim, errmsg);
}

enum err db_try_lock(struct db *db, int64_t key, int *held, struct buf *errmsg)
{
	enum err rc;

	enter(db);
	rc = db->ops->try_lock(db, key, held, errmsg);
	leave(db);
	return rc;
}

int db_lock_held(struct db *db, int64_t key)
{
	int held;

	enter(db);
	held = db->ops->lock_held(db, key);
	leave(db);
	return held;
}

void db_unlock(struct db *db, int64_t key)
{
	enter(db);
	db->ops->unlock(db, key);
	leave(db);
}
