/*
 * janitor.h - the janitor (DESIGN.md "Janitor semantics"): the intake of
 * POST /v1/janitor/webhook, one serial worker that drains the "janitor"
 * queue (mark a pod on firing, unmark it on resolved), the Slack outbox
 * (notices delivered with retries, and only then janitor/notified-at on the
 * pod), and the sweeper that deletes or scales what expired after a notice.
 *
 * Parts of one module: janitor.c (lifecycle, worker), janitor_webhook.c,
 * janitor_notice.c (outbox), janitor_digest.c (one message per owner: several
 * pods' notices, or several replies of one thread), janitor_sweep.c, janitor_render.c (Slack texts
 * from templates/slack_*.mustache, templates/SLACK_VIEW_MODEL.md).  It builds
 * on janitor/kube.h, janitor/slack.h and the pure rules of janitor/annotate.h.
 *
 * Safety rules kept everywhere: never act on a pod without a delivered
 * notice at least the policy's notice_lead old; never touch a pod whose uid
 * changed; excluded namespaces win; dry-run (the default) writes nothing to
 * Kubernetes, Slack or the outbox and logs each planned write with "dry-run"
 * in the message.
 */
#ifndef AB_JANITOR_H
#define AB_JANITOR_H

#include <stdint.h>

#include "core/am.h"
#include "core/auth.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/http_server.h"
#include "core/metrics.h"
#include "core/reload.h"
#include "store/store.h"
#include "janitor/annotate.h"
#include "janitor/kube.h"
#include "janitor/slack.h"

/* The queue (store_event.kind) the janitor's intake fills and its worker drains. */
#define JANITOR_QUEUE "janitor"
/* Event reasons on pods (Kubernetes Events, UpperCamelCase). */
#define JANITOR_EV_MARKED "JanitorMarked"
#define JANITOR_EV_UNMARKED "JanitorUnmarked"
#define JANITOR_EV_DELETED "JanitorDeleted"
#define JANITOR_EV_JOB_DELETED "JanitorJobDeleted"
#define JANITOR_EV_SCALED "JanitorScaled"
#define JANITOR_EV_INVALID "JanitorInvalidAnnotation"
#define JANITOR_EV_POSTPONED "JanitorPostponed"
/* notice_lead for a pod a person annotated when no policy is configured: 2h. */
#define JANITOR_DEFAULT_NOTICE_LEAD_MS (2 * 3600 * 1000LL)
/*
 * Failed deliveries of one Slack message before it is given up (state dead),
 * counting only answers that will not change by waiting (ERR_INVALID, e.g.
 * not_in_channel).  Transient failures (ERR_RETRY: 429, 5xx, timeouts) and a
 * rejected token (ERR_AUTH: invalid_auth, logged at error) are retried with
 * the capped backoff until they clear: a notice is never lost to an outage.
 */
#define JANITOR_NOTICE_MAX_ATTEMPTS 10
/*
 * Pods listed in one Slack message of a digest (one notice for several pods
 * of one owner): more are split into parts, as is a text past Slack's
 * 40,000 characters (docs.slack.dev/reference/methods/chat.postMessage).
 */
#define JANITOR_DIGEST_MAX_PODS 50

/* ---- intake: POST /v1/janitor/webhook ---- */

struct janitor_webhook;

struct janitor_webhook_options {
	struct store *store;       /* required, must outlive the webhook */
	struct metrics *metrics;   /* NULL: no metrics */
	const struct auth *auth;   /* NULL (or AUTH_NONE): no authentication */
	/* The reloadable config (core/reload.h): each request checks its generation's
	 * webhook credentials instead of auth.  NULL: auth for good. */
	struct reload *reload;
	struct am_options limits;  /* passed to am_parse(); zero fields take its defaults */
	size_t max_events_bytes;   /* event documents per request; 0: 64 MiB (then 413) */
	/* The clock for received_at_ms, in ms since the epoch; NULL: CLOCK_REALTIME. */
	int64_t (*now_ms)(void *now_ctx);
	void *now_ctx;
};

/*
 * A new intake; opts is copied (limits.keep_invalid_alerts always set).
 * Never NULL (store must be set).  Registers, when metrics is set,
 * alertbridge_janitor_webhook_requests_total{code} and
 * alertbridge_janitor_webhook_alerts_invalid_total{reason} (alerts
 * dead-lettered at intake; reason "pod", "namespace" or the alert's member
 * that failed, am_alert.invalid_reason).
 */
struct janitor_webhook *janitor_webhook_new(const struct janitor_webhook_options *opts);
/* Free w; w may be NULL.  No janitor_webhook_handle() may be running. */
void janitor_webhook_free(struct janitor_webhook *w);

/*
 * The srv_handler for POST /v1/janitor/webhook; ctx is the janitor_webhook.
 * The same checks and answers as the bridge's intake (bridge/webhook.h,
 * core/intake.h), every body application/json, in order:
 *   401 {"error":"unauthorized"} with WWW-Authenticate;
 *   415 {"error":"unsupported Content-Type: want application/json"};
 *   400 {"error":..., "field":...} for a body am_parse() rejects (not JSON,
 *       or not a version-4 envelope);
 *   413 {"error":"events of this payload exceed N bytes"};
 *   503 {"error":"store unavailable: ..."} with Retry-After: 5 (ERR_DB);
 *   200 {"status":"ok","receiver":<receiver>,"alerts":N[,"invalid":K]} once
 *       committed; K (left out when 0) alerts were dead-lettered.
 * An alert without a valid namespace and pod label (reason "invalid alert:
 * alerts[i].labels.pod: the janitor needs the label pod", or "... label pod
 * is not a valid Kubernetes pod name"), or with a problem inside it
 * (am_options.keep_invalid_alerts), is queued as a dead letter of the
 * "janitor" queue (intake_dead_events(): key its fingerprint) in the same
 * commit as the others' events, not answered 400: Alertmanager would re-send
 * the group forever.  The receiver is not looked up (any receiver name is
 * accepted).  Nothing of a rejected request is stored.  One event per valid
 * alert: kind "janitor",
 * receiver = the unescaped receiver name, key "namespace/pod", status,
 * startsAt/endsAt of the alert, payload = am_event_json().  Logs
 * "janitor webhook request" (debug) or "janitor webhook rejected" (warn,
 * error for 5xx) with code, reason, field, error, remote, duration_ms.
 */
void janitor_webhook_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

/* ---- the janitor ---- */

struct janitor;

struct janitor_options {
	const struct config *cfg;     /* cfg->janitor; required, outlives the janitor */
	/*
	 * The reloadable config (core/reload.h), or NULL: cfg for good.  Else
	 * janitor_step() first takes the current generation (the worker's
	 * notices and sweep that follow use it too), and gives the Slack client
	 * its secret.
	 */
	struct reload *reload;
	struct store *store;          /* queue and outbox; required, outlives the janitor */
	struct kube_client *kube;     /* required; borrowed, used only by the janitor's thread */
	struct slack_client *slack;   /* borrowed; NULL: Slack is not configured, notices wait */
	struct metrics *metrics;      /* may be NULL */
	int force_dry_run;            /* non-zero: dry-run whatever cfg->janitor.dry_run says */
	/*
	 * May this replica act (main.c: core/active.h, the Lease or the store's
	 * worker lock): the worker drains the queue, the outbox and sweeps only
	 * while is_leader(leader_ctx) is non-zero, asked again before every
	 * Kubernetes write and Slack post.  NULL: always the leader.
	 */
	int (*is_leader)(void *leader_ctx);
	void *leader_ctx;
	/* Retry schedule of events and notices: base doubled per attempt, jittered,
	 * capped.  0 means 5 s and 10 min. */
	int64_t retry_base_ms;
	int64_t retry_max_ms;
	/* Test hooks: clock and sleep in ms.  NULL: the real clock, and a sleep
	 * janitor_stop() interrupts.  Give the kube and Slack clients the same. */
	int64_t (*now_ms)(void *clock_ctx);
	void (*sleep_ms)(void *clock_ctx, int64_t ms);
	void *clock_ctx;
};

/*
 * Build the clients of cfg->janitor: the Kubernetes client
 * (kubernetes.kubeconfig, or in-cluster when empty; context) and, when a bot
 * token or webhook URL is configured, the Slack client (*slack NULL
 * otherwise).  The caller frees both.  user_agent may be NULL.  Errors: those
 * of kube_config_load() (ERR_IO, ERR_INVALID), with errmsg; nothing is
 * returned then.
 */
enum err janitor_clients_new(const struct config *cfg, struct kube_client **kube,
			     struct slack_client **slack, struct buf *errmsg) WARN_UNUSED;

/*
 * A new janitor; never NULL (cfg, store and kube are required: a bug
 * otherwise).  Compiles the embedded Slack templates.  Does not start the
 * worker.  With metrics it registers:
 *   alertbridge_janitor_pods_total{action,reason}  counter: action marked,
 *       unmarked, deleted, scaled (reason: the alert or policy name) and
 *       skipped (reason: why: excluded, exempt, forever, being-deleted, gone,
 *       uid-changed, invalid, no-policy, other-alert);
 *   alertbridge_janitor_notices_total{result}      counter: Slack messages sent,
 *       failed, dead (a digest part, however many pods it lists, counts once);
 *   alertbridge_janitor_sweep_duration_seconds     histogram;
 *   alertbridge_janitor_pod_expiry_timestamp_seconds{namespace,pod} gauge:
 *       the expiry of each pod marked or seen by a sweep, removed when the
 *       pod is unmarked, deleted or gone;
 *   alertbridge_janitor_queue_pending              gauge: events waiting;
 *   alertbridge_janitor_notices_pending            gauge: notices waiting.
 */
struct janitor *janitor_new(const struct janitor_options *opts);
/* Stop (if started) and free; j may be NULL.  The clients are not freed. */
void janitor_free(struct janitor *j);
/* Non-zero when the janitor only logs what it would write. */
int janitor_dry_run(const struct janitor *j);

/*
 * Start the worker thread: while leader, it handles due events, then due
 * notices and digests (all that are due before the next sweep), and sweeps
 * every sweep_interval.  Errors: ERR_IO (no thread).
 */
enum err janitor_start(struct janitor *j, struct buf *errmsg) WARN_UNUSED;
/* Stop the worker after the call in flight and join it; nothing queued is lost. */
void janitor_stop(struct janitor *j);

/*
 * Handle at most one due event of the "janitor" queue on the calling thread
 * (tests, the worker).  firing: policy, GET, checks, mark patch, Event,
 * notice queued; resolved: GET, unmark patch (only what the janitor set),
 * Event, pending notices cancelled and a "cancelled" reply queued in the
 * thread of a delivered notice.  A Kubernetes failure that may pass
 * (ERR_RETRY, ERR_AUTH, ERR_IO) retries the event with backoff; a request
 * the API server rejects as invalid dead-letters it.  Returns 1 when an
 * event was handled, 0 when none was due, -1 when the store failed (it could
 * not give the next event or record an outcome): then, as bridge_step() does,
 * the janitor backs off (retry_base_ms doubling to retry_max_ms, jitter), and
 * until then every call returns -1 at once, with no call to Kubernetes and no
 * store access; the first outcome recorded ends the backoff.
 */
int janitor_step(struct janitor *j);

/*
 * Deliver at most one due digest part (janitor_digest.c; its pods' notices
 * are sent with it and each pod stamped janitor/notified-at) or else one due
 * notice of the outbox (tests, the worker).  A due notice that others may
 * join (pods of the same owner due within janitor.notice_batch_window, or
 * replies of one kind in one thread) becomes a digest in the outbox instead,
 * posted by the next calls.  A notice alone: resolve
 * the owner's channel (slack_resolve_owner: janitor/notify, the owner label,
 * the namespace's channel, the default channel), post it (slack_post, paced
 * per channel), record it sent and, for a notice, then patch the pod with
 * janitor/notified-at (same uid only).  channel_not_found falls back to the
 * default channel once, then the notice is dead; other failures retry with
 * backoff (JANITOR_NOTICE_MAX_ATTEMPTS says which ones give up).  The stamp is a
 * uid-conditional patch (janitor_apply_patch).  Nothing happens without a
 * Slack client, in dry-run, or while this replica does not lead
 * (janitor_options.is_leader, asked again right before the post): the
 * notice stays pending, no attempt counted.  Returns 1 when a notice was
 * handled, 0 when none was due (or not leading), -1 when the store failed.
 */
int janitor_notice_step(struct janitor *j);

/*
 * Apply at most one due click of the "postpone" queue (janitor/
 * slack_interact.h) on the calling thread (tests, the worker), only while
 * leading: GET the pod; refuse (an ephemeral answer through the click's
 * response_url, nothing changed) when it is gone or being deleted, its uid
 * is not the button's, the clicker is not its owner (the Slack user its
 * notice was addressed to: janitor/notify or the owner label, a user ID or
 * an e-mail users.lookupByEmail maps to the clicker), postpone_decide()
 * refuses (janitor/postpone.h), or this notice's button was used already;
 * else patch janitor/expires (and the rest of the plan) with the pod's uid
 * and resourceVersion as preconditions, create a JanitorPostponed Event,
 * update the message (chat.update: the button gone, a line "<@user> kept
 * pod ns/pod until T (k of max)") and reply so in its thread.  In dry-run it
 * only answers that nothing changed.  A 409 or an outage retries the event
 * with backoff (read afresh then).  Counts
 * alertbridge_janitor_postpones_total{result="done"|"refused", reason}.
 * Returns 1 when a click was handled, 0 when none was due, -1 when the store
 * failed.
 */
int janitor_postpone_step(struct janitor *j);

/* One line of a sweep's plan (for `alertbridge janitor sweep --once`). */
struct janitor_plan_row {
	const char *namespace;
	const char *pod;
	const char *uid;         /* the pod's metadata.uid (the outbox's key: store_notice_latest) */
	const char *owner;       /* janitor/notify, else the owner label's value, else "-" */
	const char *reason;      /* janitor/reason, else "janitor/ttl" or "janitor/expires" */
	int64_t expires_ms;      /* the effective expiry; JANITOR_NO_TIME when none */
	int64_t notified_ms;     /* janitor/notified-at; JANITOR_NO_TIME when none */
	const char *action;      /* what the sweep did or, in dry-run, would do (below) */
};

/* Called once per pod with janitor annotations; row is valid during the call only. */
typedef void (*janitor_plan_fn)(void *ctx, const struct janitor_plan_row *row);

/* What one sweep did. */
struct janitor_sweep_stats {
	int64_t pods;        /* pods listed */
	int64_t annotated;   /* with janitor/expires or janitor/ttl */
	int64_t notified;    /* notices queued */
	int64_t acted;       /* deletions and scales made (or planned, in dry-run) */
	int64_t errors;      /* pods whose handling failed (the sweep went on) */
};

/*
 * One sweep (the worker calls it every sweep_interval while leader): list
 * every pod's metadata page by page (kube_pods_each, metadata-only) and, for
 * each pod with janitor/expires or janitor/ttl, apply janitor_sweep_decision()
 * with its policy's notice_lead (the policy named by janitor/reason; for a
 * pod a person annotated without a reason, the first policy's, else
 * JANITOR_DEFAULT_NOTICE_LEAD_MS).  Row actions:
 *   "skip:<why>"  janitor_skip_str() (excluded, exempt, ...), or uid-changed, gone
 *   "wait"        not yet
 *   "remind"      not yet, but the action is the policy's reminder_before
 *                 away (JANITOR_DEFAULT_NOTICE_LEAD_MS / 2 without a policy):
 *                 the reminder was queued in the delivered notice's thread,
 *                 once per notice (dry-run: would be)
 *   "notify"      a notice was queued (dry-run: would be)
 *   "notice-pending", "notice-dead"  a notice for this expiry exists already
 *   "delete-pod", "delete-job", "scale-to-zero"  done (dry-run: would be done)
 *   "notify-only" the owner was told the time ran out; nothing deleted
 *   "deferred"    max_deletions_per_sweep reached
 *   "changed"     409: the pod changed underneath, skipped
 *   "error"       this pod failed; logged, the sweep went on
 *   "stopped"     the Lease was lost (is_leader turned 0): nothing done, the
 *                 sweep ends here
 * Leadership is checked before each pod and again right before each delete,
 * scale or patch: a replica that lost the Lease makes no further write.
 * Before acting it GETs the pod afresh and re-checks uid, annotations and
 * the decision, and it requires a delivered notice in the outbox at least
 * notice_lead old.  fn may be NULL; stats may be NULL.
 * Errors: the listing's (ERR_RETRY, ERR_AUTH, ...), with errmsg; pods
 * handled before it failed stay handled.  ERR_CONFLICT ("not the leader any
 * more ...") when the Lease was lost mid-sweep.
 */
enum err janitor_sweep(struct janitor *j, janitor_plan_fn fn, void *ctx,
		       struct janitor_sweep_stats *stats, struct buf *errmsg) WARN_UNUSED;

/* Pods a sweep keeps for janitor_pods_each(); those past it are counted, not kept. */
#define JANITOR_PODS_MAX 10000
/*
 * For the on-call page: call fn with each annotated pod the last complete
 * sweep saw (its plan row, action as that sweep left it), in listing order,
 * at most JANITOR_PODS_MAX.  A sweep that failed or stopped leaves the
 * previous one's pods.  Returns when that sweep started (ms since the
 * epoch, UTC), 0 when none has completed yet (fn is then not called);
 * *total (may be NULL) gets how many annotated pods it saw.  fn runs with
 * the janitor's snapshot lock held: it must not call the janitor (it may
 * call the store).  Thread-safe.
 */
int64_t janitor_pods_each(struct janitor *j, janitor_plan_fn fn, void *ctx, int64_t *total);

#endif
