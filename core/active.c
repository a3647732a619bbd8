/*
 * active.c - the gate "may this replica act now?" (active.h): the Lease, the
 * store's worker lock on PostgreSQL, or always on sqlite.  On PostgreSQL a
 * thread takes the lock when it is free (or, with a Lease, pings) every
 * ACTIVE_RETRY_MS; active_may_act() confirms a held lock with one query.
 */
#include "active.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"
#include "store/store_lock.h"
#include "banned.h"

struct active {
	struct active_options o;
	int shared;                  /* the store is PostgreSQL's */
	struct metric *m_held;       /* alertbridge_store_worker_lock_held, or NULL */
	pthread_t thread;
	int started;
	struct clock_stop stop;

	pthread_mutex_t mu;          /* orders the held <-> lost transitions and their logs */
	atomic_int held;             /* this replica holds the worker lock */
	atomic_llong acts_from_us;   /* clock_mono_us() when the grace after taking it ends */
	atomic_int db_ok;            /* the last round trip reached the database */
};

/* Why a held lock is gone: the server says so (the session is new, or it was released). */
static const char NOT_HELD[] =
	"the database does not show it held (the connection was lost or reset)";

static int lock_decides(const struct active *a)
{
	return a->shared && !a->o.lease;
}

struct active *active_new(const struct active_options *o)
{
	struct active *a = xcalloc(1, sizeof(*a));

	a->o = *o;
	a->shared = store_shared(o->store);
	pthread_mutex_init(&a->mu, NULL);
	clock_stop_init(&a->stop);
	atomic_init(&a->held, !a->shared);
	atomic_init(&a->acts_from_us, 0);
	atomic_init(&a->db_ok, 1);
	if (o->metrics && !o->lease) {
		a->m_held = metrics_gauge(o->metrics, "alertbridge_store_worker_lock_held",
					  "1 while this replica holds the store's worker lock "
					  "(drains the queues), else 0; always 1 on sqlite.",
					  NULL);
		metric_set(a->m_held, NULL, a->shared ? 0 : 1);
	}
	return a;
}

static void lost(struct active *a, const char *why)
{
	pthread_mutex_lock(&a->mu);
	if (atomic_exchange(&a->held, 0)) {
		metric_set(a->m_held, NULL, 0);
		log_msg(LOG_WARN, "lost the worker lock: no more GitHub, Slack or Kubernetes calls",
			"reason", why);
	}
	pthread_mutex_unlock(&a->mu);
}

/* Take the lock if free; note whether the database answered. */
static void try_take(struct active *a)
{
	struct buf err = BUF_INIT;
	int held = 0;
	enum err rc = store_worker_lock(a->o.store, STORE_WORKER_LOCK, &held, &err);

	atomic_store(&a->db_ok, rc == ERR_OK);
	if (rc != ERR_OK) {
		log_msg(LOG_DEBUG, "cannot try the worker lock", "error", buf_str(&err));
	} else if (held) {
		pthread_mutex_lock(&a->mu);
		if (!atomic_load(&a->held)) {
			struct log_line *l = log_begin(LOG_INFO, "took the worker lock");

			log_int(l, "grace_ms", a->o.grace_ms > 0 ? a->o.grace_ms : 0);
			log_end(l);
			atomic_store(&a->acts_from_us,
				     clock_mono_us() + (a->o.grace_ms > 0 ? a->o.grace_ms : 0) * 1000);
			atomic_store(&a->held, 1);
			metric_set(a->m_held, NULL, 1);
		}
		pthread_mutex_unlock(&a->mu);
	}
	buf_release(&err);
}

/* One tick of the thread: take the lock, or see that it is still ours; or ping. */
static void tick(struct active *a)
{
	if (!lock_decides(a)) {
		struct buf err = BUF_INIT;

		atomic_store(&a->db_ok, store_ping(a->o.store, &err) == ERR_OK);
		buf_release(&err);
		return;
	}
	if (atomic_load(&a->held)) {
		if (store_worker_lock_held(a->o.store, STORE_WORKER_LOCK)) {
			atomic_store(&a->db_ok, 1);
			return;
		}
		lost(a, NOT_HELD);
	}
	try_take(a);
}

static void *run(void *arg)
{
	struct active *a = arg;

	while (!clock_stop_requested(&a->stop)) {
		clock_stop_sleep_ms(&a->stop, ACTIVE_RETRY_MS);
		if (!clock_stop_requested(&a->stop))
			tick(a);
	}
	return NULL;
}

enum err active_start(struct active *a, struct buf *errmsg)
{
	if (!a->shared || a->started)
		return ERR_OK;
	tick(a);
	if (pthread_create(&a->thread, NULL, run, a)) {
		buf_setf(errmsg, "cannot start the worker lock thread");
		return ERR_IO;
	}
	a->started = 1;
	return ERR_OK;
}

void active_stop(struct active *a)
{
	if (!a || !a->started)
		return;
	clock_stop_join(&a->stop, a->thread);
	a->started = 0;
	if (lock_decides(a) && atomic_load(&a->held)) {
		store_worker_unlock(a->o.store, STORE_WORKER_LOCK);
		atomic_store(&a->held, 0);
		metric_set(a->m_held, NULL, 0);
		log_msg(LOG_INFO, "released the worker lock", NULL, NULL);
	}
}

void active_free(struct active *a)
{
	if (!a)
		return;
	active_stop(a);
	clock_stop_release(&a->stop);
	pthread_mutex_destroy(&a->mu);
	free(a);
}

int active_may_act(void *ctx)
{
	struct active *a = ctx;

	if (a->o.lease)
		return a->o.lease(a->o.lease_ctx);
	if (!a->shared)
		return 1;
	if (!atomic_load(&a->held) || clock_mono_us() < atomic_load(&a->acts_from_us))
		return 0;
	if (store_worker_lock_held(a->o.store, STORE_WORKER_LOCK))
		return 1;
	lost(a, NOT_HELD);
	return 0;
}

int active_ready(struct active *a, struct buf *why)
{
	if (a->shared && !atomic_load(&a->db_ok)) {
		buf_setf(why, "the database cannot be reached");
		return 0;
	}
	if (!a->shared && a->o.lease && !a->o.lease(a->o.lease_ctx)) {
		buf_setf(why, "not the leader");
		return 0;
	}
	return 1;
}
