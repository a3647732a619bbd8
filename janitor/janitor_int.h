/*
 * janitor_int.h - what the parts of the janitor module share (SQLite's
 * btreeInt.h): struct janitor, the action an owner gets, the texts, and
 * small helpers.  Not for other modules: they use janitor/janitor.h.
 */
#ifndef AB_JANITOR_INT_H
#define AB_JANITOR_INT_H

#include <pthread.h>
#include <stdint.h>

#include "core/backoff.h"
#include "core/clock.h"
#include "core/mustache.h"
#include "core/worker.h"
#include "store/store_outbox.h"
#include "janitor/annotate.h"
#include "janitor/janitor.h"

/* What happens to a pod once its time runs out, by owner and policy. */
enum jaction {
	JA_DELETE_POD,   /* a bare pod: DELETE it */
	JA_DELETE_JOB,   /* owned by a Job: DELETE the Job (Background) */
	JA_SCALE,        /* owned by a Deployment or StatefulSet: scale to 0 */
	JA_NOTIFY_ONLY,  /* nothing automatic: the owner is told */
};

/* The Slack texts, as in templates/SLACK_VIEW_MODEL.md. */
enum jtext { JT_NOTICE, JT_REMINDER, JT_CANCELLED, JT_DELETED, JT_DIGEST, JT_COUNT };

struct janitor {
	struct janitor_options opts;
	int step_store_fault;            /* this step could not record an outcome */
	const struct cfg_janitor *cfg;
	const struct reload_gen *gen;  /* the generation opts.cfg is from (opts.reload) */
	int dry_run;
	struct mustache *tmpl[JT_COUNT];
	struct worker *worker;  /* the queue worker (core/worker.h): thread, stop, store gate */
	unsigned int seed;      /* events' and notices' retry jitter (janitor_backoff()) */
	int64_t next_sweep_ms;
	char **unknown_alerts;     /* alert names already logged as without policy */
	size_t n_unknown_alerts;
	/* The annotated pods of the last complete sweep (janitor_pods_each()). */
	pthread_mutex_t pods_mu;
	struct janitor_pod *pods;
	size_t n_pods;
	int64_t pods_total;        /* annotated pods it saw (n_pods is capped) */
	int64_t pods_at_ms;        /* when that sweep started; 0: none yet */
	struct metric *m_pods;
	struct metric *m_notices;
	struct metric *m_sweep;
	struct metric *m_sweeps;
	struct metric *m_expiry;
	struct metric *m_pending;
	struct metric *m_notices_pending;
	struct metric *m_postpones;     /* janitor_postpone.c */
};

/* What a text is about; strings borrowed. */
struct jtext_view {
	const char *namespace, *pod, *uid;
	const struct kube_owner *owner;  /* the controller acted on; NULL or empty for none */
	enum jaction action;
	const char *reason;
	const char *why;
	int64_t expires_ms;
	int64_t grace_ms;                /* for snoozeUntil */
	int postponed;                   /* janitor/postponed: the Keep button's count so far */
	int64_t created_ms;              /* the pod's creationTimestamp (max_lifetime); 0: unknown */
};

/* One pod of a sweep, as kept for janitor_pods_each(): owned copies of a plan row. */
struct janitor_pod {
	char *namespace, *pod, *uid, *owner, *reason, *action;
	int64_t expires_ms, notified_ms;
};
/* Free n pods and the array; v may be NULL. */
void janitor_pods_free(struct janitor_pod *v, size_t n);

int64_t janitor_now(struct janitor *j);
/* Retry delay after attempts failures: base * 2^attempts, jittered, capped. */
int64_t janitor_backoff(struct janitor *j, int attempts);
/* Non-zero when ns is in exclude_namespaces. */
int janitor_excluded(const struct janitor *j, const char *ns);
/* The action for a pod whose controller is owner, under policy owned. */
enum jaction janitor_jaction(enum cfg_owned owned, const struct kube_owner *owner);
const char *janitor_jaction_str(enum jaction a);
/* The pod's annotations as a sorted janitor_kv array (caller frees the array only). */
struct janitor_kv *janitor_pod_kv(const struct kube_pod *pod);
/* The owner label's value of pod (cfg slack.owner_label), or NULL. */
const char *janitor_owner_value(const struct janitor *j, const struct kube_pod *pod);
/* slack.namespace_channels[ns], or NULL. */
const char *janitor_namespace_channel(const struct janitor *j, const char *ns);
/* Count pods_total{action, reason}. */
void janitor_count(struct janitor *j, const char *action, const char *reason);
/* Set or remove (expires_ms == JANITOR_NO_TIME) the expiry gauge of a pod. */
void janitor_expiry_gauge(struct janitor *j, const char *ns, const char *pod, int64_t expires_ms);
/* Write the patch as the JSON the merge patch sends, for dry-run logs. */
void janitor_patch_json(const struct janitor_patch *p, struct buf *out);
/*
 * Non-zero while this replica may act: opts.is_leader says so (or is NULL).
 * Checked right before every mutating Kubernetes call, so a replica that
 * lost the Lease mid-step or mid-sweep stops before its next write.
 */
int janitor_leading(struct janitor *j);
/*
 * Apply patch to pod ns/name if it is still the pod uid (ERR_CONFLICT when
 * the name now holds another pod) and, when resource_version is not NULL,
 * still that version of it (kube_pod_annotate_rv: ERR_CONFLICT when it
 * changed since it was read), or log it in dry-run.  what names the change
 * in the log ("mark", "unmark", "notified").  ERR_RETRY ("not the leader")
 * without a request when janitor_leading() is 0.
 */
enum err janitor_apply_patch(struct janitor *j, const char *ns, const char *name,
			     const char *uid, const char *resource_version,
			     const struct janitor_patch *patch, const char *what,
			     struct buf *errmsg) WARN_UNUSED;
/*
 * Create an Event on pod (best effort: a failure is logged), or log it in
 * dry-run; nothing (logged at debug) when janitor_leading() is 0.
 */
void janitor_event(struct janitor *j, const struct kube_pod *pod, const char *type,
		   const char *reason, const char *message);

/* Compile the embedded templates (janitor_new). */
void janitor_render_init(struct janitor *j);
void janitor_render_release(struct janitor *j);
/* Render text which (not JT_DIGEST) over v at now_ms into out.  Errors: mustache's. */
enum err janitor_render(struct janitor *j, enum jtext which, const struct jtext_view *v,
			int64_t now_ms, struct buf *out, struct buf *errmsg) WARN_UNUSED;
/*
 * A pod's line of a digest, the notice's v (expires_ms: what the notice
 * announces), as a JSON object (malloc'd, the caller frees it):
 * {"namespace", "pod", "uid", "policy", "action", "expiresMs"}; NULL when v
 * holds invalid UTF-8.
 */
char *janitor_render_line(const struct jtext_view *v);
/*
 * Render part of parts of a digest (templates/slack_digest.mustache) over
 * the n lines (JSON objects of janitor_render_line) at now_ms into out; total
 * is the pods of all parts.  Errors: ERR_TOOBIG past Slack's 40,000 bytes
 * (out is then unusable), ERR_INVALID (a line that is not such an object).
 */
enum err janitor_render_digest(struct janitor *j, const char *const *lines, size_t n, int part,
			       int parts, size_t total, int64_t now_ms, struct buf *out,
			       struct buf *errmsg) WARN_UNUSED;

/*
 * Queue a notice for pod unless the outbox already holds one of this uid for
 * expiry_ms (in any state); *queued (may be NULL) says whether it did.  The
 * text announces the later of expiry_ms and now + lead_ms: nothing happens
 * before the notice is lead_ms old.  It is not sent before now + delay_ms
 * (janitor.notice_batch_window for an alert's, so a burst joins one digest;
 * 0 for a sweep's), and carries its line of a digest (janitor_render_line).
 * In dry-run it only logs.
 * Errors: ERR_DB, ERR_INVALID (rendering).
 */
enum err janitor_queue_notice(struct janitor *j, const struct kube_pod *pod,
			      const struct kube_owner *owner, enum jaction action,
			      const char *reason, const char *why, int64_t expiry_ms,
			      int64_t grace_ms, int64_t lead_ms, int64_t delay_ms, int *queued,
			      struct buf *errmsg) WARN_UNUSED;
/*
 * Queue a reply (JT_CANCELLED or JT_DELETED) in the thread of the newest
 * delivered notice of the pod's uid; nothing when none was delivered.  In
 * dry-run it only logs.  Errors: ERR_DB, ERR_INVALID (rendering).
 */
enum err janitor_queue_reply(struct janitor *j, enum jtext which, const struct jtext_view *v,
			     struct buf *errmsg) WARN_UNUSED;
/*
 * Queue the reminder (JT_REMINDER) in the thread of the newest delivered
 * notice of v->uid, unless the outbox holds a reminder for that notice
 * already (in any state: once per notice, across restarts); nothing when no
 * notice was delivered.  v->expires_ms is when the pod will be acted on.
 * *queued (may be NULL) says whether it queued one (dry-run: would have).
 * Errors: ERR_DB, ERR_INVALID (rendering).
 */
enum err janitor_queue_reminder(struct janitor *j, const struct jtext_view *v, int *queued,
				struct buf *errmsg) WARN_UNUSED;
/* One outbox message being delivered (logs and outcome): a notice, or a digest. */
struct jmsg {
	int64_t id;             /* the notice's or the digest's */
	int digest;             /* non-zero: id is a digest's (store_digest_*) */
	const char *kind;
	const char *namespace;  /* a digest: its first pod's */
	const char *pod;
	int attempts;           /* failed attempts so far */
	const char *thread_ts;  /* a reply's thread; NULL otherwise */
	size_t pods;            /* pods it is about */
};

/* Count and log m delivered to channel as posted. */
void janitor_log_sent(struct janitor *j, const struct jmsg *m, const char *channel,
		      const struct slack_posted *posted);
/*
 * Record a failed post of m to channel (slack_post()'s rc and detail why):
 * channel_not_found falls back to the default channel once (not in a
 * thread), then m is dead; ERR_RETRY and ERR_AUTH retry with backoff; other
 * errors retry until JANITOR_NOTICE_MAX_ATTEMPTS.
 */
void janitor_post_failed(struct janitor *j, const struct jmsg *m, const char *channel,
			 enum err rc, const char *why);
/* janitor_record_notified(), a failure logged (the sweeper stamps it again). */
void janitor_stamp_notified(struct janitor *j, const char *ns, const char *pod, const char *uid,
			    int64_t sent_at_ms);
/*
 * Digests (janitor_digest.c).  janitor_digest_form(): head is the due
 * pending notice the outbox is about to send alone, to channel (resolved).
 * When other pending notices may go with it (store_notice_batch(): a
 * notice's same owner and namespace channel, due within
 * janitor.notice_batch_window; a reply's same kind and thread, due now),
 * they become a digest of one or more parts (at most JANITOR_DIGEST_MAX_PODS
 * pods and Slack's 40,000 bytes each), durable in the outbox: returns 1.  0:
 * head goes alone; -1: the store failed.
 * janitor_digest_step(): deliver at most one due digest part; then each of
 * its members is sent (the notice lead counts from now) and, for notices,
 * its pod stamped janitor/notified-at.  1 handled, 0 none due, -1 store failed.
 */
int janitor_digest_form(struct janitor *j, const struct store_notice *head, const char *channel);
int janitor_digest_step(struct janitor *j);

/* Register alertbridge_janitor_postpones_total (janitor_new). */
void janitor_postpone_init(struct janitor *j);
/*
 * The Block Kit blocks of a notice message whose text is text and members
 * m[0..n) (a notice alone: n 1; a digest's pods): the text as section
 * blocks and one "Keep until ..." button per pod (action_id "postpone",
 * value slack_button_value()) whose policy allows one more postpone now (the
 * line's count of postpones below max_postpones, an expiry before
 * max_lifetime), labelled with the expiry a click gives, as JSON text (the
 * caller frees it).  NULL (send the text alone) without
 * janitor.slack.signing_secret, in webhook mode, for replies and reminders,
 * or when no pod may be postponed.
 */
char *janitor_keep_blocks(struct janitor *j, const char *text, const struct store_notice *m,
			  size_t n);
/* last_error of the notices a resolve gives up on (store_notice_cancel). */
#define JANITOR_RESOLVED_BEFORE_DELIVERY "the alert resolved before delivery"
/* janitor/postponed of pod as a count (0 when absent or not a count). */
int janitor_postponed_count(const struct kube_pod *pod);

/* Patch janitor/notified-at = sent_at_ms onto ns/name if its uid is still uid. */
enum err janitor_record_notified(struct janitor *j, const char *ns, const char *name,
				 const char *uid, int64_t sent_at_ms, struct buf *errmsg) WARN_UNUSED;

#endif
