/*
 * janitor_sweep.c - the sweeper: every pod's metadata, page by page
 * (kube_pods_each, memory flat in the number of pods); for each pod with
 * janitor/expires or janitor/ttl, janitor_sweep_decision(); a pod due is
 * fetched afresh and re-checked, and only acted on with a delivered notice
 * at least notice_lead old.  One pod's error never stops the sweep.
 */
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "janitor/janitor_int.h"
#include "core/clock.h"
#include "store/store_outbox.h"
#include "core/banned.h"

struct sweep {
	struct janitor *j;
	janitor_plan_fn fn;
	void *ctx;
	struct janitor_sweep_stats stats;
	unsigned budget_used;
	int budget_logged;
	int64_t now_ms;
	int lost;            /* the Lease was lost: act on nothing more */
	struct janitor_pod *pods;  /* what janitor_pods_each() will show */
	size_t n_pods, cap_pods;
};

/*
 * Still leading?  Asked before each pod and again right before the delete
 * or scale (the fresh GET and the owner lookup take time): once the Lease is
 * lost, another replica may be sweeping, so this one stops for good.
 */
static int still_leading(struct sweep *s)
{
	if (!s->lost && !janitor_leading(s->j))
		s->lost = 1;
	return !s->lost;
}

/* The policy of a pod: named by janitor/reason, else the first one; NULL: none. */
static const struct cfg_policy *policy_of(const struct janitor *j, const char *reason)
{
	const struct cfg_policy *p = reason ? cfg_policy_find(j->opts.cfg, reason) : NULL;

	if (!p && j->cfg->policies_count)
		p = &j->cfg->policies[0];
	return p;
}

static int64_t lead_of(const struct cfg_policy *p)
{
	return p ? p->notice_lead_ms : JANITOR_DEFAULT_NOTICE_LEAD_MS;
}

static const char *reason_text(const struct janitor_pod_state *st)
{
	if (st->reason)
		return st->reason;
	return st->expires_ms != JANITOR_NO_TIME ? JANITOR_ANN_EXPIRES : JANITOR_ANN_TTL;
}

static void log_pod_error(const char *msg, const struct kube_pod *pod, enum err rc,
			  const struct buf *err)
{
	struct log_line *l = log_begin(LOG_WARN, msg);

	log_err(l, rc);
	log_str(l, "namespace", pod->namespace);
	log_str(l, "pod", pod->name);
	log_str(l, "error", buf_str(err));
	log_end(l);
}

/*
 * The workload pod's time running out acts on (kube_pod_controller) into
 * owner, and *acted_on: owner, or what the pod names when its owner is gone.
 */
static enum err controller_of(struct janitor *j, const struct kube_pod *pod,
			      struct kube_owner *owner, const struct kube_owner **acted_on,
			      struct buf *err)
{
	enum err rc = kube_pod_controller(j->opts.kube, pod, owner, err);

	if (rc == ERR_NOTFOUND || rc == ERR_CONFLICT || rc == ERR_INVALID) {
		kube_owner_release(owner);  /* an owner gone: act on what the pod names */
		rc = ERR_OK;
	}
	*acted_on = owner->kind ? owner : &pod->owner;
	return rc;
}

/*
 * NOTIFY: queue the notice for this expiry unless one exists; a delivered
 * one whose stamp did not reach the pod is stamped again.
 */
static const char *notify(struct sweep *s, const struct kube_pod *pod,
			  const struct janitor_pod_state *st, const struct cfg_policy *pol)
{
	struct janitor *j = s->j;
	struct store_notice old = { 0 };
	struct kube_owner owner = { 0 };
	const struct kube_owner *acted_on = NULL;
	struct buf err = BUF_INIT;
	const char *action = "notify";
	int queued = 0;
	enum err rc;

	rc = store_notice_latest(j->opts.store, pod->uid, "notice", &old);
	if (rc == ERR_OK && old.expires_ms == st->expiry_ms) {
		if (old.state == STORE_NOTICE_SENT && !j->dry_run && !still_leading(s)) {
			action = "stopped";
			rc = ERR_OK;
		} else if (old.state == STORE_NOTICE_SENT && !j->dry_run) {
			rc = janitor_record_notified(j, pod->namespace, pod->name, pod->uid,
						     old.sent_at_ms, &err);
			action = rc ? "error" : "notified";
		} else {
			action = old.state == STORE_NOTICE_DEAD ? "notice-dead" : "notice-pending";
			rc = ERR_OK;
		}
		goto out;
	}
	rc = controller_of(j, pod, &owner, &acted_on, &err);
	if (rc == ERR_OK)
		rc = janitor_queue_notice(j, pod, acted_on,
					  janitor_jaction(pol ? pol->owned : CFG_OWNED_NOTIFY_ONLY,
							  acted_on),
					  reason_text(st), NULL, st->expiry_ms,
					  pol ? pol->grace_ms : 0, lead_of(pol), 0, &queued, &err);
	if (rc)
		action = "error";
	else
		s->stats.notified += queued || j->dry_run;
out:
	if (rc) {
		s->stats.errors++;
		log_pod_error("cannot notify the owner of a pod", pod, rc, &err);
	}
	store_notice_release(&old);
	kube_owner_release(&owner);
	buf_release(&err);
	return action;
}

static int64_t reminder_of(const struct cfg_policy *p)
{
	return p ? p->reminder_before_ms : JANITOR_DEFAULT_NOTICE_LEAD_MS / 2;
}

/*
 * WAIT with a notice on the pod: once the action at act_ms is reminder_before
 * away, the reminder goes into the notice's thread (once per notice: the
 * outbox remembers it).  Returns the row's action: "remind" or "wait".
 */
static const char *remind(struct sweep *s, const struct kube_pod *pod,
			  const struct janitor_pod_state *st, const struct cfg_policy *pol,
			  int64_t act_ms)
{
	struct janitor *j = s->j;
	struct kube_owner owner = { 0 };
	struct jtext_view v = { 0 };
	struct buf err = BUF_INIT;
	int queued = 0;
	enum err rc;

	if (st->notified_at_ms == JANITOR_NO_TIME || reminder_of(pol) <= 0 ||
	    s->now_ms < act_ms - reminder_of(pol))
		return "wait";
	rc = controller_of(j, pod, &owner, &v.owner, &err);
	v.namespace = pod->namespace;
	v.pod = pod->name;
	v.uid = pod->uid;
	v.action = janitor_jaction(pol ? pol->owned : CFG_OWNED_NOTIFY_ONLY, v.owner);
	v.reason = reason_text(st);
	v.expires_ms = act_ms;
	v.grace_ms = pol ? pol->grace_ms : 0;
	if (rc == ERR_OK)
		rc = janitor_queue_reminder(j, &v, &queued, &err);
	if (rc) {
		s->stats.errors++;
		log_pod_error("cannot remind the owner of a pod", pod, rc, &err);
	}
	kube_owner_release(&owner);
	buf_release(&err);
	return rc ? "error" : queued ? "remind" : "wait";
}

/* Is there a notice that reached the owner at least lead_ms ago? */
static int delivered_notice(struct janitor *j, const char *uid, int64_t now_ms, int64_t lead_ms)
{
	struct store_notice n = { 0 };
	int ok = 0;

	if (store_notice_latest(j->opts.store, uid, "notice", &n) == ERR_OK)
		ok = n.state == STORE_NOTICE_SENT && n.sent_at_ms + lead_ms <= now_ms;
	store_notice_release(&n);
	return ok;
}

/* Make the call of action on pod's workload. */
static enum err act_call(struct janitor *j, enum jaction action, const struct kube_pod *pod,
			 const struct kube_owner *owner, struct buf *err)
{
	enum kube_workload kind;

	switch (action) {
	case JA_DELETE_POD:
		return kube_pod_delete(j->opts.kube, pod->namespace, pod->name, pod->uid, err);
	case JA_DELETE_JOB:
		return kube_job_delete(j->opts.kube, pod->namespace, owner->name, owner->uid, err);
	case JA_SCALE:
		kind = !strcmp(owner->kind, "StatefulSet") ? KUBE_STATEFULSET : KUBE_DEPLOYMENT;
		return kube_scale(j->opts.kube, kind, pod->namespace, owner->name, 0, err);
	case JA_NOTIFY_ONLY:
		break;
	}
	return ERR_OK;
}

static const char *event_reason(enum jaction a)
{
	switch (a) {
	case JA_DELETE_POD: return JANITOR_EV_DELETED;
	case JA_DELETE_JOB: return JANITOR_EV_JOB_DELETED;
	case JA_SCALE: return JANITOR_EV_SCALED;
	case JA_NOTIFY_ONLY: break;
	}
	return JANITOR_EV_DELETED;
}

/* After acting: Event, metrics, gauge, the reply in the notice's thread. */
static void acted(struct sweep *s, enum jaction action, const struct kube_pod *pod,
		  const struct kube_owner *owner, const struct janitor_pod_state *st,
		  const struct cfg_policy *pol)
{
	struct janitor *j = s->j;
	struct jtext_view v = { 0 };
	struct buf msg = BUF_INIT, err = BUF_INIT;
	char when[JANITOR_TIME_LEN] = "";
	struct log_line *l;

	if (janitor_format_time(st->expiry_ms, when) != ERR_OK)
		when[0] = '\0';
	l = log_begin(LOG_INFO, j->dry_run ? "dry-run: would act on pod" : "pod acted on");
	log_str(l, "namespace", pod->namespace);
	log_str(l, "pod", pod->name);
	log_str(l, "uid", pod->uid);
	log_str(l, "action", janitor_jaction_str(action));
	log_str(l, "owner_kind", owner->kind);
	log_str(l, "owner", owner->name);
	log_str(l, "reason", reason_text(st));
	log_str(l, "expires", when);
	log_end(l);
	if (action != JA_NOTIFY_ONLY) {
		(void)buf_printf(&msg, "alertbridge: %s (%s): the pod's time ran out at %s after "
				 "its owner was told", janitor_jaction_str(action),
				 reason_text(st), when);
		janitor_event(j, pod, "Normal", event_reason(action), buf_str(&msg));
	}
	if (j->dry_run)
		goto out;
	if (action != JA_NOTIFY_ONLY) {
		janitor_count(j, action == JA_SCALE ? "scaled" : "deleted", reason_text(st));
		janitor_expiry_gauge(j, pod->namespace, pod->name, JANITOR_NO_TIME);
	}
	v.namespace = pod->namespace;
	v.pod = pod->name;
	v.uid = pod->uid;
	v.owner = owner;
	v.action = action;
	v.reason = reason_text(st);
	v.expires_ms = st->expiry_ms;
	v.grace_ms = pol ? pol->grace_ms : 0;
	if (janitor_queue_reply(j, JT_DELETED, &v, &err) != ERR_OK)
		log_pod_error("cannot queue the slack reply", pod, ERR_DB, &err);
out:
	buf_release(&msg);
	buf_release(&err);
}

/* Has the owner already been told that a notify-only pod ran out of time? */
static int told(struct janitor *j, const char *uid)
{
	struct store_notice n = { 0 };
	int yes = store_notice_latest(j->opts.store, uid, "deleted", &n) == ERR_OK;

	store_notice_release(&n);
	return yes;
}

/* ACT: fresh GET, re-check everything, then delete or scale (or tell). */
static const char *act(struct sweep *s, const struct kube_pod *listed)
{
	struct janitor *j = s->j;
	struct kube_pod pod = { 0 };
	struct kube_owner owner = { 0 };
	struct janitor_kv *kv = NULL;
	struct janitor_pod_state st;
	struct janitor_decision d;
	const struct cfg_policy *pol;
	struct buf err = BUF_INIT;
	const char *result = "error";
	enum jaction action;
	enum err rc;

	rc = kube_pod_get(j->opts.kube, listed->namespace, listed->name, &pod, &err);
	if (rc == ERR_NOTFOUND) {
		janitor_expiry_gauge(j, listed->namespace, listed->name, JANITOR_NO_TIME);
		result = "skip:gone";
		rc = ERR_OK;
		goto out;
	}
	if (rc)
		goto out;
	if (!pod.uid || strcmp(pod.uid, listed->uid)) {
		janitor_count(j, "skipped", "uid-changed");
		result = "skip:uid-changed";
		goto out;
	}
	kv = janitor_pod_kv(&pod);
	(void)!janitor_pod_state(kv, pod.nannotations, pod.creation_ms, &st, NULL);
	pol = policy_of(j, st.reason);
	d = janitor_sweep_decision(&st, s->now_ms, lead_of(pol),
				   janitor_excluded(j, pod.namespace), pod.deletion_ms != 0);
	if (d.action == JANITOR_NOTIFY) {
		result = notify(s, &pod, &st, pol);
		goto out;
	}
	if (d.action != JANITOR_ACT) {
		result = d.action == JANITOR_SKIP ? "skip:changed" : janitor_action_str(d.action);
		goto out;
	}
	if (!j->dry_run && !delivered_notice(j, pod.uid, s->now_ms, lead_of(pol))) {
		/* janitor/notified-at without a delivery in the outbox: tell the owner first. */
		result = notify(s, &pod, &st, pol);
		goto out;
	}
	rc = kube_pod_controller(j->opts.kube, &pod, &owner, &err);
	if (rc)
		goto out;
	action = janitor_jaction(pol ? pol->owned : CFG_OWNED_NOTIFY_ONLY, &owner);
	if (action == JA_NOTIFY_ONLY) {
		result = "notify-only";
		if (!told(j, pod.uid))
			acted(s, action, &pod, &owner, &st, pol);
		goto out;
	}
	if (!still_leading(s)) {
		result = "stopped";
		goto out;
	}
	if (s->budget_used >= j->cfg->max_deletions_per_sweep) {
		if (!s->budget_logged++)
			log_msg(LOG_WARN, "max_deletions_per_sweep reached, the rest waits for the "
				"next sweep", "namespace", pod.namespace);
		result = "deferred";
		goto out;
	}
	if (!j->dry_run)
		rc = act_call(j, action, &pod, &owner, &err);
	if (rc == ERR_NOTFOUND) {
		result = "skip:gone";
		rc = ERR_OK;
		janitor_expiry_gauge(j, pod.namespace, pod.name, JANITOR_NO_TIME);
		goto out;
	}
	if (rc == ERR_CONFLICT) {
		log_pod_error("pod changed underneath, skipped", &pod, rc, &err);
		result = "changed";
		rc = ERR_OK;
		goto out;
	}
	if (rc)
		goto out;
	s->budget_used++;
	s->stats.acted++;
	result = janitor_jaction_str(action);
	acted(s, action, &pod, &owner, &st, pol);
out:
	if (rc) {
		s->stats.errors++;
		log_pod_error("cannot act on pod, the sweep goes on", listed, rc, &err);
		result = "error";
	}
	free(kv);
	kube_owner_release(&owner);
	kube_pod_release(&pod);
	buf_release(&err);
	return result;
}

/* Keep a copy of row for janitor_pods_each() (the first JANITOR_PODS_MAX). */
static void keep_pod(struct sweep *s, const struct janitor_plan_row *row)
{
	struct janitor_pod *p;

	if (s->n_pods >= JANITOR_PODS_MAX)
		return;
	if (s->n_pods == s->cap_pods) {
		s->cap_pods = s->cap_pods ? s->cap_pods * 2 : 16;
		s->pods = xreallocarray(s->pods, s->cap_pods, sizeof(*s->pods));
	}
	p = &s->pods[s->n_pods++];
	p->namespace = xstrdup(row->namespace);
	p->pod = xstrdup(row->pod);
	p->uid = xstrdup(row->uid ? row->uid : "");
	p->owner = xstrdup(row->owner);
	p->reason = xstrdup(row->reason);
	p->action = xstrdup(row->action);
	p->expires_ms = row->expires_ms;
	p->notified_ms = row->notified_ms;
}

void janitor_pods_free(struct janitor_pod *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i].namespace);
		free(v[i].pod);
		free(v[i].uid);
		free(v[i].owner);
		free(v[i].reason);
		free(v[i].action);
	}
	free(v);
}

/* A complete sweep's pods replace the previous ones; an incomplete one's are dropped. */
static void publish_pods(struct sweep *s, enum err rc)
{
	struct janitor *j = s->j;

	if (rc) {
		janitor_pods_free(s->pods, s->n_pods);
		return;
	}
	pthread_mutex_lock(&j->pods_mu);
	janitor_pods_free(j->pods, j->n_pods);
	j->pods = s->pods;
	j->n_pods = s->n_pods;
	j->pods_total = s->stats.annotated;
	j->pods_at_ms = s->now_ms;
	pthread_mutex_unlock(&j->pods_mu);
}

int64_t janitor_pods_each(struct janitor *j, janitor_plan_fn fn, void *ctx, int64_t *total)
{
	int64_t at;

	pthread_mutex_lock(&j->pods_mu);
	at = j->pods_at_ms;
	if (total)
		*total = j->pods_total;
	for (size_t i = 0; i < j->n_pods && at; i++) {
		const struct janitor_pod *p = &j->pods[i];
		struct janitor_plan_row row = { p->namespace, p->pod, p->uid, p->owner, p->reason,
						p->expires_ms, p->notified_ms, p->action };

		fn(ctx, &row);
	}
	pthread_mutex_unlock(&j->pods_mu);
	return at;
}

static enum err sweep_pod(void *ctx, const struct kube_pod *pod)
{
	struct sweep *s = ctx;
	struct janitor *j = s->j;
	struct janitor_plan_row row = { 0 };
	struct janitor_kv *kv;
	struct janitor_pod_state st;
	struct janitor_decision d;
	const struct cfg_policy *pol;
	const char *owner;
	char skip[48];

	if (!still_leading(s))
		return ERR_CONFLICT;  /* ends the listing: janitor_sweep() reports it */
	s->stats.pods++;
	if (!kube_pod_annotation(pod, JANITOR_ANN_EXPIRES) &&
	    !kube_pod_annotation(pod, JANITOR_ANN_TTL))
		return ERR_OK;
	s->stats.annotated++;
	kv = janitor_pod_kv(pod);
	(void)!janitor_pod_state(kv, pod->nannotations, pod->creation_ms, &st, NULL);
	pol = policy_of(j, st.reason);
	d = janitor_sweep_decision(&st, s->now_ms, lead_of(pol),
				   janitor_excluded(j, pod->namespace), pod->deletion_ms != 0);
	owner = st.notify ? st.notify : janitor_owner_value(j, pod);
	row.namespace = pod->namespace;
	row.pod = pod->name;
	row.owner = owner ? owner : "-";
	row.reason = reason_text(&st);
	row.expires_ms = st.expiry_ms;
	row.notified_ms = st.notified_at_ms;
	switch (d.action) {
	case JANITOR_SKIP:
		snprintf(skip, sizeof(skip), "skip:%s", janitor_skip_str(d.why));
		row.action = skip;
		break;
	case JANITOR_WAIT:
		row.action = remind(s, pod, &st, pol, d.at_ms);
		break;
	case JANITOR_NOTIFY:
		row.action = notify(s, pod, &st, pol);
		break;
	case JANITOR_ACT:
		row.action = act(s, pod);
		break;
	}
	if (d.action == JANITOR_WAIT || d.action == JANITOR_NOTIFY)
		janitor_expiry_gauge(j, pod->namespace, pod->name, st.expiry_ms);
	row.uid = pod->uid;
	keep_pod(s, &row);
	if (s->fn)
		s->fn(s->ctx, &row);
	free(kv);
	return ERR_OK;
}

enum err janitor_sweep(struct janitor *j, janitor_plan_fn fn, void *ctx,
		       struct janitor_sweep_stats *stats, struct buf *errmsg)
{
	struct sweep s;
	int64_t start = (clock_mono_us() / 1000);
	struct log_line *l;
	enum err rc;

	memset(&s, 0, sizeof(s));
	s.j = j;
	s.fn = fn;
	s.ctx = ctx;
	s.now_ms = janitor_now(j);
	rc = kube_pods_each(j->opts.kube, NULL, 1, sweep_pod, &s, errmsg);
	if (s.lost) {
		buf_setf(errmsg, "not the leader any more (the Lease was lost mid-sweep): the sweep "
			 "stopped after %lld pods", (long long)s.stats.pods);
		rc = ERR_CONFLICT;
	}
	publish_pods(&s, rc);
	metric_observe(j->m_sweep, NULL, (double)((clock_mono_us() / 1000) - start) / 1000.0);
	{
		const char *result[] = { s.lost ? "stopped" : rc ? "failed" : "ok" };

		metric_add(j->m_sweeps, result, 1);
	}
	l = log_begin(rc ? LOG_WARN : (s.stats.acted || s.stats.notified ? LOG_INFO : LOG_DEBUG),
		      rc ? "sweep stopped" : "sweep done");
	if (rc)
		log_err(l, rc);
	log_str(l, "dry_run", j->dry_run ? "true" : "false");
	log_int(l, "pods", s.stats.pods);
	log_int(l, "annotated", s.stats.annotated);
	log_int(l, "notified", s.stats.notified);
	log_int(l, "acted", s.stats.acted);
	log_int(l, "errors", s.stats.errors);
	log_int(l, "duration_ms", (clock_mono_us() / 1000) - start);
	if (rc)
		log_str(l, "error", buf_str(errmsg));
	log_end(l);
	if (stats)
		*stats = s.stats;
	return rc;
}
