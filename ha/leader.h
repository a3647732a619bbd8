/*
 * leader.h - leader election on a coordination.k8s.io/v1 Lease, with the semantics of
 * client-go's k8s.io/client-go/tools/leaderelection (LeaseLock, ReleaseOnCancel): only the
 * holder sweeps, drains the queues and reports ready (DESIGN.md "leader election").  A
 * candidate polls the Lease every retry period and takes it once it has expired; the leader
 * renews it every retry period and steps down when it could not renew within the renew deadline.
 *
 * In ha/ (high availability), not janitor/: the Lease gates the bridge's queue as much as the
 * janitor's (core/active.h), and the config key is the top-level leader_election.  The Lease
 * calls themselves are the Kubernetes client's (janitor/kube.h kube_lease_*).
 */
#ifndef AB_HA_LEADER_H
#define AB_HA_LEADER_H

#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/metrics.h"
#include "janitor/kube.h"

struct leader;

/* client-go's LeaseDuration default; RenewDeadline and RetryPeriod are derived from it. */
#define LEADER_DEFAULT_LEASE_MS INT64_C(15000)

struct leader_options {
	/*
	 * The leader's own Kubernetes client, borrowed: it must outlive the leader, and no other
	 * thread may use it while the leader exists (a kube_client is used by one thread at a
	 * time).  Give it timeout_ms and max_retry_after_ms of at most the retry period, so that a
	 * slow request cannot hold back on_stop_leading much past the renew deadline
	 * (leader_is_leader() turns false at the deadline regardless).
	 */
	struct kube_client *kube;
	const char *namespace;    /* the Lease's namespace; copied */
	const char *lease_name;   /* metadata.name of the Lease; copied */
	const char *identity;     /* spec.holderIdentity we write, unique per replica; copied */
	/*
	 * spec.leaseDurationSeconds: how long others wait after they last saw the Lease change
	 * before they take it.  Whole seconds on the wire: the part under a second is dropped and
	 * the least is 1 s.  0 means 15 s.  As client-go's defaults (15 s, 10 s, 2 s), the renew
	 * deadline is 2/3 of it and the retry period 2/15 of it.
	 */
	int64_t lease_duration_ms;
	/*
	 * Called, when not NULL, on the thread that runs leader_step() (the leader's
	 * thread after leader_start(); the caller of leader_stop() on release),
	 * with ctx, when this replica becomes leader and when it stops being leader.  They must
	 * return promptly (set a flag, signal a thread): the Lease is not renewed meanwhile.  Work
	 * done as leader should check leader_is_leader() before each action.
	 */
	void (*on_start_leading)(void *ctx);
	void (*on_stop_leading)(void *ctx);
	void *ctx;
	/*
	 * When not NULL (borrowed; it must outlive the leader): the gauge
	 * alertbridge_leader_election_is_leader is registered in it, 0 from the start, 1 from
	 * "became leader" to "lost leadership" (set where they are logged), so the replicas' sum
	 * says how many lead (alertbridge-rules.yml: AlertbridgeNoLeader when none does).
	 */
	struct metrics *metrics;
	/*
	 * Test hooks: the clock (ms since the epoch; called from any thread that calls
	 * leader_is_leader(), so it must be thread-safe) and the pause between steps of
	 * the leader's thread; NULL for the real ones.  The real pause ends at once on
	 * leader_stop(); a hooked one is not interrupted.
	 */
	int64_t (*now_ms)(void *clock_ctx);
	void (*sleep_ms)(void *clock_ctx, int64_t ms);
	void *clock_ctx;
};

/*
 * A follower with the options o (borrowed during the call; the strings are copied).  o->kube,
 * o->namespace, o->lease_name and o->identity must be set and non-empty; lease_duration_ms
 * must not be negative (both are bugs of the caller: the configuration is checked before).
 * Never NULL.  No request is made until leader_step() or leader_start().
 */
struct leader *leader_new(const struct leader_options *o);

/*
 * One iteration of client-go's tryAcquireOrRenew(), with the clock read once at its start
 * (call it T):
 *   - leading, and the Lease as we last wrote it still valid: PUT it with renewTime T and our
 *     last resourceVersion; on any failure fall through to the next step;
 *   - GET the Lease; 404: POST one naming us (acquireTime = renewTime = T, leaseTransitions 0);
 *   - held by another identity whose record has not expired: follower.  Expiry is judged
 *     with our clock: the record is valid until leaseDurationSeconds after the moment we
 *     last saw it change (any field or resourceVersion), never by the remote timestamps,
 *     so clock skew between nodes does not matter;
 *   - otherwise (free, expired, or already ours) PUT it with its resourceVersion: us as
 *     holder, renewTime T, and either our old acquireTime and leaseTransitions or, when it
 *     was not ours, acquireTime T and leaseTransitions + 1.
 * Success makes us leader (on_start_leading, log "became leader") or keeps us leader until
 * T + renew deadline.  A leader steps down (on_stop_leading, log "lost leadership") when
 * another holder or a conflicting write is seen, or when it has not renewed for the renew
 * deadline: at the start of a step that begins after it, or when a failed step ends after it.
 * Returns:
 *   ERR_OK        we hold the Lease, renewed at T
 *   ERR_CONFLICT  another holds it ("lease NS/NAME is held by ID"), or another replica won
 *                 the create or update (409, errmsg from kube)
 *   other         kube_lease_get/create/update's errors (ERR_RETRY, ERR_AUTH, ERR_INVALID,
 *                 ERR_NOTFOUND when deleted between GET and PUT, ...), errmsg from kube
 * errmsg may be NULL.  Only one thread may step at a time: do not call it after
 * leader_start() until leader_stop().
 */
enum err leader_step(struct leader *l, struct buf *errmsg) WARN_UNUSED;

/*
 * Run leader_step() on a thread of the leader's own: at once, then every retry
 * period.  Failed steps are logged at warn, ERR_CONFLICT at debug; each change of the
 * observed holder at info ("lease holder observed").  ERR_IO when the thread cannot be
 * created.  Start at most once, and not after leader_stop() (stopping is final).
 */
enum err leader_start(struct leader *l) WARN_UNUSED;

/*
 * Stop the thread (when started) and wait for it; then, when leading, stop leading
 * (on_stop_leading, "lost leadership") and release the Lease as client-go's ReleaseOnCancel
 * does: PUT it with holderIdentity "", leaseDurationSeconds 1, acquireTime = renewTime = now
 * and leaseTransitions unchanged, so a candidate takes it at its next retry.  A failed release
 * is logged at warn (the Lease then expires in its own time).  l may be NULL; a second call
 * does nothing.
 */
void leader_stop(struct leader *l);

/*
 * Non-zero while this replica leads: it holds the Lease and renewed it less than the renew
 * deadline ago (by the clock now, so a step stuck in a request cannot make it lie).  Safe from
 * any thread at any time, e.g. an HTTP handler answering /-/ready; l must not be NULL.
 */
int leader_is_leader(const struct leader *l);

/* The derived intervals, for logs and tests: renew deadline and retry period, in ms. */
int64_t leader_renew_deadline_ms(const struct leader *l);
int64_t leader_retry_period_ms(const struct leader *l);

/* leader_stop(), then free; the kube client is not freed.  l may be NULL. */
void leader_free(struct leader *l);

#endif
