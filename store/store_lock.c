/*
 * store_lock.c - the store's part in running more than one replica on one
 * PostgreSQL database (issue 10): the worker lock that elects the one
 * replica draining the queues (a session advisory lock on the store's
 * connection; always held on sqlite) and a ping for readiness.  The policy
 * (when to try, the grace, the Lease instead) is core/active.c's.
 */
#include "store/store_lock.h"
#include "store/store_int.h"

#include <pthread.h>
#include <stdint.h>

#include "store/db.h"
#include "core/banned.h"

int store_shared(const struct store *st)
{
	return st && db_engine(st->db) == DB_POSTGRES;
}

enum err store_worker_lock(struct store *st, int64_t key, int *held, struct buf *errmsg)
{
	enum err rc;

	pthread_mutex_lock(&st->db_mu);
	rc = db_try_lock(st->db, key, held, errmsg);
	pthread_mutex_unlock(&st->db_mu);
	if (rc != ERR_OK)
		*held = 0;
	return rc;
}

int store_worker_lock_held(struct store *st, int64_t key)
{
	int held;

	pthread_mutex_lock(&st->db_mu);
	held = db_lock_held(st->db, key);
	pthread_mutex_unlock(&st->db_mu);
	return held;
}

void store_worker_unlock(struct store *st, int64_t key)
{
	pthread_mutex_lock(&st->db_mu);
	db_unlock(st->db, key);
	pthread_mutex_unlock(&st->db_mu);
}

enum err store_ping(struct store *st, struct buf *errmsg)
{
	enum err rc;

	pthread_mutex_lock(&st->db_mu);
	rc = db_exec(st->db, "SELECT 1", errmsg);
	pthread_mutex_unlock(&st->db_mu);
	return rc;
}
