/*
 * leader.c - leader election on a coordination.k8s.io/v1 Lease (client-go's leaderelection).
 *
 * One thread steps (the leader's own, or a test) and owns the observed record and the kube
 * client; the leading flag and the last renewal time are atomics so that any thread may ask
 * leader_is_leader().  See leader.h for the rules.
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "ha/leader.h"

#include "core/clock.h"
#include "core/banned.h"

#define MS_PER_S INT64_C(1000)

struct leader {
	/* Set by leader_new(), read-only after. */
	struct kube_client *kube;
	char *ns;
	char *name;
	char *identity;
	char *desc;                  /* "ns/name", for logs and messages */
	int64_t lease_s;
	int64_t renew_deadline_ms;
	int64_t retry_ms;
	struct leader_options o;  /* callbacks and hooks; its strings are not used */

	/* The stepping thread's own. */
	struct kube_lease observed;  /* last record seen or written; name NULL when none */
	int64_t observed_ms;         /* when we saw it change (our clock) */
	char *reported_holder;       /* holder last logged, NULL before the first */

	struct metric *m_leader;     /* alertbridge_leader_election_is_leader, or NULL */

	/* Shared with readers of leader_is_leader(). */
	atomic_int leading;
	_Atomic int64_t renewed_ms;  /* start of the step that last wrote the Lease */

	/* The thread. */
	pthread_mutex_t mu;
	pthread_cond_t wake;         /* signalled by leader_stop() */
	int stopping;                /* under mu */
	int started;
	int stopped;                 /* leader_stop() ran */
	pthread_t thread;
};

static int64_t now_ms(const struct leader *l)
{
	return l->o.now_ms ? l->o.now_ms(l->o.clock_ctx) : clock_wall_ms();
}

static int streq(const char *a, const char *b)
{
	return strcmp(a ? a : "", b ? b : "") == 0;
}

struct leader *leader_new(const struct leader_options *o)
{
	struct leader *l = xcalloc(1, sizeof(*l));
	struct buf desc = BUF_INIT;
	pthread_condattr_t ca;
	int64_t lease_ms;

	assert(o && o->kube && o->lease_duration_ms >= 0);
	assert(o->namespace && *o->namespace && o->lease_name && *o->lease_name);
	assert(o->identity && *o->identity);
	l->o = *o;
	l->o.namespace = l->o.lease_name = l->o.identity = NULL;
	l->kube = o->kube;
	l->ns = xstrdup(o->namespace);
	l->name = xstrdup(o->lease_name);
	l->identity = xstrdup(o->identity);
	(void)buf_printf(&desc, "%s/%s", l->ns, l->name);
	l->desc = buf_detach(&desc);

	l->lease_s = o->lease_duration_ms ? o->lease_duration_ms / MS_PER_S
					  : LEADER_DEFAULT_LEASE_MS / MS_PER_S;
	if (l->lease_s < 1)
		l->lease_s = 1;
	lease_ms = l->lease_s * MS_PER_S;
	l->renew_deadline_ms = lease_ms * 2 / 3;   /* 15 s -> 10 s */
	l->retry_ms = lease_ms * 2 / 15;           /* 15 s -> 2 s */

	atomic_init(&l->leading, 0);
	atomic_init(&l->renewed_ms, 0);
	if (o->metrics) {
		l->m_leader = metrics_gauge(o->metrics, "alertbridge_leader_election_is_leader",
					    "1 while this replica holds the Lease, else 0.", NULL);
		metric_set(l->m_leader, NULL, 0);
	}
	pthread_mutex_init(&l->mu, NULL);
	/* The pause between steps is measured on the monotonic clock: wall time may jump. */
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&l->wake, &ca);
	pthread_condattr_destroy(&ca);
	return l;
}

int64_t leader_renew_deadline_ms(const struct leader *l)
{
	return l->renew_deadline_ms;
}

int64_t leader_retry_period_ms(const struct leader *l)
{
	return l->retry_ms;
}

int leader_is_leader(const struct leader *l)
{
	int64_t renewed;

	if (!atomic_load(&l->leading))
		return 0;
	renewed = atomic_load(&l->renewed_ms);
	return now_ms(l) - renewed < l->renew_deadline_ms;
}

/* ---- transitions ---- */

static void become_leader(struct leader *l)
{
	struct log_line *ll = log_begin(LOG_INFO, "became leader");

	log_str(ll, "identity", l->identity);
	log_str(ll, "lease", l->desc);
	log_int(ll, "transitions", l->observed.transitions);
	log_end(ll);
	atomic_store(&l->leading, 1);
	metric_set(l->m_leader, NULL, 1);
	if (l->o.on_start_leading)
		l->o.on_start_leading(l->o.ctx);
}

/* Stop leading first, then tell: nothing acts as leader once the callback runs. */
static void step_down(struct leader *l, const char *reason, enum err rc,
		      const struct buf *why)
{
	struct log_line *ll = log_begin(LOG_INFO, "lost leadership");

	atomic_store(&l->leading, 0);
	metric_set(l->m_leader, NULL, 0);
	if (rc)
		log_err(ll, rc);
	log_str(ll, "identity", l->identity);
	log_str(ll, "lease", l->desc);
	log_str(ll, "reason", reason);
	if (rc && why && why->len)
		log_str(ll, "detail", buf_str(why));
	log_end(ll);
	if (l->o.on_stop_leading)
		l->o.on_stop_leading(l->o.ctx);
}

/* Log at info when the holder we observe changes (client-go's OnNewLeader). */
static void report_holder(struct leader *l)
{
	const char *holder = l->observed.holder ? l->observed.holder : "";
	struct log_line *ll;

	if (!l->observed.name || (l->reported_holder && !strcmp(l->reported_holder, holder)))
		return;
	free(l->reported_holder);
	l->reported_holder = xstrdup(holder);
	ll = log_begin(LOG_INFO, "lease holder observed");
	log_str(ll, "holder", holder);
	log_str(ll, "identity", l->identity);
	log_str(ll, "lease", l->desc);
	log_end(ll);
}

/* ---- one try ---- */

static int same_record(const struct kube_lease *a, const struct kube_lease *b)
{
	return streq(a->resource_version, b->resource_version) && streq(a->holder, b->holder) &&
	       a->duration_s == b->duration_s && a->acquire_ms == b->acquire_ms &&
	       a->renew_ms == b->renew_ms && a->transitions == b->transitions;
}

/* Take got (moved) as the observed record, stamped seen_ms when it differs from the last. */
static void observe(struct leader *l, struct kube_lease *got, int64_t seen_ms)
{
	if (l->observed.name && same_record(&l->observed, got)) {
		kube_lease_release(got);
		return;
	}
	kube_lease_release(&l->observed);
	l->observed = *got;
	memset(got, 0, sizeof(*got));
	l->observed_ms = seen_ms;
}

/* client-go's isLeaseValid(): valid until leaseDurationSeconds after we saw it change. */
static int observed_valid(const struct leader *l, int64_t t_ms)
{
	return l->observed_ms + l->observed.duration_s * MS_PER_S > t_ms;
}

static int observed_is_ours(const struct leader *l)
{
	return l->observed.name && streq(l->observed.holder, l->identity);
}

/* The record we write at t_ms, before acquireTime and leaseTransitions are settled. */
static struct kube_lease our_record(const struct leader *l, int64_t t_ms)
{
	return (struct kube_lease){
		.namespace = l->ns, .name = l->name, .holder = l->identity,
		.duration_s = l->lease_s, .acquire_ms = t_ms, .renew_ms = t_ms,
	};
}

/* PUT rec; on success the answer becomes the observed record. */
static enum err write_lease(struct leader *l, const struct kube_lease *rec,
			    struct buf *errmsg)
{
	struct kube_lease got = { 0 };
	enum err rc = kube_lease_update(l->kube, rec, &got, errmsg);

	if (!rc)
		observe(l, &got, now_ms(l));
	return rc;
}

/* Step 1: renew what we last wrote without reading it first. */
static enum err renew_fast(struct leader *l, int64_t t_ms)
{
	struct kube_lease rec = our_record(l, t_ms);
	struct buf why = BUF_INIT;
	struct log_line *ll;
	enum err rc;

	rec.acquire_ms = l->observed.acquire_ms;
	rec.transitions = l->observed.transitions;
	rec.resource_version = l->observed.resource_version;
	rc = write_lease(l, &rec, &why);
	if (rc) {
		ll = log_begin(LOG_DEBUG, "optimistic lease renew failed, reading the lease");
		log_err(ll, rc);
		log_str(ll, "lease", l->desc);
		log_str(ll, "detail", buf_str(&why));
		log_end(ll);
	}
	buf_release(&why);
	return rc;
}

/* Steps 2-4: read, create when absent, and take or renew unless another holds it. */
static enum err acquire_slow(struct leader *l, int64_t t_ms, struct buf *errmsg)
{
	struct kube_lease got = { 0 }, rec = our_record(l, t_ms);
	enum err rc;

	rc = kube_lease_get(l->kube, l->ns, l->name, &got, errmsg);
	if (rc == ERR_NOTFOUND) {
		rc = kube_lease_create(l->kube, &rec, &got, errmsg);
		if (!rc)
			observe(l, &got, now_ms(l));
		goto out;
	}
	if (rc)
		goto out;
	observe(l, &got, now_ms(l));

	if (l->observed.holder && *l->observed.holder && !observed_is_ours(l) &&
	    observed_valid(l, t_ms)) {
		buf_setf(errmsg, "lease %s is held by %s", l->desc, l->observed.holder);
		rc = ERR_CONFLICT;
		goto out;
	}
	if (observed_is_ours(l)) {
		rec.acquire_ms = l->observed.acquire_ms;
		rec.transitions = l->observed.transitions;
	} else {
		rec.transitions = l->observed.transitions + 1;
	}
	rec.resource_version = l->observed.resource_version;
	rc = write_lease(l, &rec, errmsg);
out:
	kube_lease_release(&got);
	return rc;
}

static enum err try_acquire_or_renew(struct leader *l, int64_t t_ms, struct buf *errmsg)
{
	if (observed_is_ours(l) && observed_valid(l, t_ms) && renew_fast(l, t_ms) == ERR_OK)
		return ERR_OK;
	return acquire_slow(l, t_ms, errmsg);
}

enum err leader_step(struct leader *l, struct buf *errmsg)
{
	int64_t t_ms = now_ms(l);
	struct buf why = BUF_INIT;
	enum err rc;

	if (atomic_load(&l->leading) && t_ms - atomic_load(&l->renewed_ms) >= l->renew_deadline_ms)
		step_down(l, "renew deadline passed", ERR_OK, NULL);
	rc = try_acquire_or_renew(l, t_ms, &why);
	if (rc == ERR_OK) {
		atomic_store(&l->renewed_ms, t_ms);
		if (!atomic_load(&l->leading))
			become_leader(l);
	} else if (atomic_load(&l->leading)) {
		if (rc == ERR_CONFLICT)
			step_down(l, "lease taken by another", rc, &why);
		else if (now_ms(l) - atomic_load(&l->renewed_ms) >= l->renew_deadline_ms)
			step_down(l, "renew deadline passed", rc, &why);
	}
	report_holder(l);
	if (rc && errmsg)
		buf_setf(errmsg, "%s", buf_str(&why));
	buf_release(&why);
	return rc;
}

/* ---- release ---- */

/* client-go's release(): free the Lease for the next candidate, if it names us. */
static void release_lease(struct leader *l)
{
	int64_t t_ms = now_ms(l);
	struct kube_lease rec = our_record(l, t_ms);
	struct buf why = BUF_INIT;
	struct log_line *ll;
	enum err rc;

	if (!observed_is_ours(l))
		return;
	rec.holder = "";
	rec.duration_s = 1;
	rec.transitions = l->observed.transitions;
	rec.resource_version = l->observed.resource_version;
	rc = write_lease(l, &rec, &why);
	ll = log_begin(rc ? LOG_WARN : LOG_INFO, rc ? "lease release failed" : "lease released");
	if (rc)
		log_err(ll, rc);
	log_str(ll, "identity", l->identity);
	log_str(ll, "lease", l->desc);
	if (rc)
		log_str(ll, "detail", buf_str(&why));
	log_end(ll);
	buf_release(&why);
}

/* ---- the thread ---- */

static int is_stopping(struct leader *l)
{
	int s;

	pthread_mutex_lock(&l->mu);
	s = l->stopping;
	pthread_mutex_unlock(&l->mu);
	return s;
}

/* Wait one retry period, or less when leader_stop() is called. */
static void pause_retry(struct leader *l)
{
	struct timespec until;

	if (l->o.sleep_ms) {
		l->o.sleep_ms(l->o.clock_ctx, l->retry_ms);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += l->retry_ms / MS_PER_S;
	until.tv_nsec += (long)(l->retry_ms % MS_PER_S) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&l->mu);
	while (!l->stopping && pthread_cond_timedwait(&l->wake, &l->mu, &until) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&l->mu);
}

static void log_failed_step(struct leader *l, enum err rc, const struct buf *why)
{
	struct log_line *ll;

	if (!rc)
		return;
	ll = log_begin(rc == ERR_CONFLICT ? LOG_DEBUG : LOG_WARN, "leader election step failed");
	log_err(ll, rc);
	log_str(ll, "identity", l->identity);
	log_str(ll, "lease", l->desc);
	log_str(ll, "detail", buf_str(why));
	log_end(ll);
}

static void *run(void *arg)
{
	struct leader *l = arg;
	struct buf why = BUF_INIT;
	enum err rc;

	while (!is_stopping(l)) {
		buf_reset(&why);
		rc = leader_step(l, &why);
		log_failed_step(l, rc, &why);
		pause_retry(l);
	}
	buf_release(&why);
	return NULL;
}

enum err leader_start(struct leader *l)
{
	assert(!l->started);
	if (pthread_create(&l->thread, NULL, run, l)) {
		log_msg(LOG_ERROR, "cannot start the leader election thread", "lease", l->desc);
		return ERR_IO;
	}
	l->started = 1;
	return ERR_OK;
}

void leader_stop(struct leader *l)
{
	if (!l || l->stopped)
		return;
	l->stopped = 1;
	pthread_mutex_lock(&l->mu);
	l->stopping = 1;
	pthread_cond_broadcast(&l->wake);
	pthread_mutex_unlock(&l->mu);
	if (l->started) {
		pthread_join(l->thread, NULL);
		l->started = 0;
	}
	if (atomic_load(&l->leading))
		step_down(l, "stopping", ERR_OK, NULL);
	release_lease(l);
}

void leader_free(struct leader *l)
{
	if (!l)
		return;
	leader_stop(l);
	pthread_cond_destroy(&l->wake);
	pthread_mutex_destroy(&l->mu);
	kube_lease_release(&l->observed);
	free(l->reported_holder);
	free(l->ns);
	free(l->name);
	free(l->identity);
	free(l->desc);
	free(l);
}
