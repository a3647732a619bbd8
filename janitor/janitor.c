/*
 * janitor.c - the janitor's lifecycle and its serial worker (core/worker.h:
 * this file is its handler): one thread that, while this replica leads,
 * applies the "janitor" queue's events to pods (mark on firing, unmark on
 * resolved), delivers the Slack outbox and runs the sweeper every
 * sweep_interval.  Serial by design: one Kubernetes client and one Slack
 * client, each used by this thread only.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/log.h"
#include "core/queue_job.h"
#include "core/xalloc.h"
#include "janitor/janitor_int.h"
#include "core/clock.h"
#include "store/store_events.h"
#include "store/store_outbox.h"
#include "core/banned.h"

/* Alert names remembered as "no policy" (logged once each); past it, logged at debug. */
#define MAX_UNKNOWN_ALERTS 64

/* The worker's handler (core/worker.h), with the worker at the end of this file. */
static int64_t now_hook(void *ctx);
static int leading_hook(void *ctx);
static void standby(void *ctx);
static enum worker_did step(void *ctx, int64_t now_ms);
static int after_step(void *ctx, int r);

static const double SWEEP_BUCKETS[] = { 0.01, 0.05, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300 };

/* ---- helpers the parts share ---- */

int64_t janitor_now(struct janitor *j)
{
	return j->opts.now_ms ? j->opts.now_ms(j->opts.clock_ctx) : clock_wall_ms();
}

int64_t janitor_backoff(struct janitor *j, int attempts)
{
	return backoff_ms(attempts, j->opts.retry_base_ms, j->opts.retry_max_ms, &j->seed);
}

int janitor_excluded(const struct janitor *j, const char *ns)
{
	for (size_t i = 0; ns && i < j->cfg->exclude_namespaces.count; i++)
		if (!strcmp(j->cfg->exclude_namespaces.items[i], ns))
			return 1;
	return 0;
}

enum jaction janitor_jaction(enum cfg_owned owned, const struct kube_owner *owner)
{
	const char *kind = owner ? owner->kind : NULL;

	if (!kind || !owner->name)
		return JA_DELETE_POD;
	if (owned == CFG_OWNED_NOTIFY_ONLY)
		return JA_NOTIFY_ONLY;
	if (!strcmp(kind, "Job"))
		return JA_DELETE_JOB;
	/* kube.h deletes Jobs only: delete-owner scales a Deployment/StatefulSet to 0. */
	if (!strcmp(kind, "Deployment") || !strcmp(kind, "StatefulSet"))
		return JA_SCALE;
	return JA_NOTIFY_ONLY;  /* a bare ReplicaSet, DaemonSet, ...: would recreate it */
}

const char *janitor_jaction_str(enum jaction a)
{
	switch (a) {
	case JA_DELETE_POD: return "delete-pod";
	case JA_DELETE_JOB: return "delete-job";
	case JA_SCALE: return "scale-to-zero";
	case JA_NOTIFY_ONLY: return "notify-only";
	}
	return "";
}

struct janitor_kv *janitor_pod_kv(const struct kube_pod *pod)
{
	struct janitor_kv *kv = xcalloc(pod->nannotations ? pod->nannotations : 1, sizeof(*kv));

	for (size_t i = 0; i < pod->nannotations; i++) {
		kv[i].name = pod->annotations[i].name;
		kv[i].value = pod->annotations[i].value;
	}
	janitor_kv_sort(kv, pod->nannotations);
	return kv;
}

const char *janitor_owner_value(const struct janitor *j, const struct kube_pod *pod)
{
	const char *label = j->cfg->slack.owner_label;

	return label && *label ? kube_pod_label(pod, label) : NULL;
}

const char *janitor_namespace_channel(const struct janitor *j, const char *ns)
{
	const struct cfg_slack *s = &j->cfg->slack;

	for (size_t i = 0; ns && i < s->namespace_channels_count; i++)
		if (!strcmp(s->namespace_channels[i].key, ns))
			return s->namespace_channels[i].value;
	return NULL;
}

void janitor_count(struct janitor *j, const char *action, const char *reason)
{
	const char *labels[] = { action, reason ? reason : "" };

	metric_add(j->m_pods, labels, 1);
}

void janitor_expiry_gauge(struct janitor *j, const char *ns, const char *pod, int64_t expires_ms)
{
	const char *labels[] = { ns, pod };

	if (expires_ms == JANITOR_NO_TIME)
		metric_remove(j->m_expiry, labels);
	else
		metric_set(j->m_expiry, labels, (double)(expires_ms / 1000));
}

void janitor_patch_json(const struct janitor_patch *p, struct buf *out)
{
	json_t *ann = json_object();
	char *s;

	for (size_t i = 0; i < p->n; i++)
		json_object_set_new(ann, p->ops[i].name,
				    p->ops[i].value ? json_string(p->ops[i].value) : json_null());
	s = json_dumps(ann, JSON_COMPACT | JSON_SORT_KEYS);
	(void)buf_adds(out, s);
	free(s);
	json_decref(ann);
}

int janitor_leading(struct janitor *j)
{
	return !j->opts.is_leader || j->opts.is_leader(j->opts.leader_ctx);
}

enum err janitor_apply_patch(struct janitor *j, const char *ns, const char *name,
			     const char *uid, const char *resource_version,
			     const struct janitor_patch *patch, const char *what,
			     struct buf *errmsg)
{
	struct kube_annotation ch[JANITOR_PATCH_MAX];

	if (patch->n == 0)
		return ERR_OK;
	if (j->dry_run) {
		struct buf body = BUF_INIT;
		struct log_line *l = log_begin(LOG_INFO, "dry-run: would patch pod annotations");

		janitor_patch_json(patch, &body);
		log_str(l, "namespace", ns);
		log_str(l, "pod", name);
		log_str(l, "change", what);
		log_str(l, "annotations", buf_str(&body));
		log_end(l);
		buf_release(&body);
		return ERR_OK;
	}
	if (!janitor_leading(j)) {
		buf_setf(errmsg, "not the leader (the Lease is lost): %s patch of %s/%s not sent",
			 what, ns, name);
		return ERR_RETRY;
	}
	for (size_t i = 0; i < patch->n; i++) {
		ch[i].name = patch->ops[i].name;
		ch[i].value = patch->ops[i].value;
	}
	return kube_pod_annotate_rv(j->opts.kube, ns, name, uid, resource_version, ch, patch->n,
				    NULL, errmsg);
}

void janitor_event(struct janitor *j, const struct kube_pod *pod, const char *type,
		   const char *reason, const char *message)
{
	struct kube_event ev;
	struct buf err = BUF_INIT;
	struct log_line *l;

	if (j->dry_run) {
		l = log_begin(LOG_INFO, "dry-run: would create event");
		log_str(l, "namespace", pod->namespace);
		log_str(l, "pod", pod->name);
		log_str(l, "type", type);
		log_str(l, "reason", reason);
		log_str(l, "message", message);
		log_end(l);
		return;
	}
	if (!janitor_leading(j)) {
		log_msg(LOG_DEBUG, "not the leader, event not created", "reason", reason);
		return;
	}
	ev = (struct kube_event){
		.namespace = pod->namespace, .pod_name = pod->name, .pod_uid = pod->uid,
		.pod_resource_version = pod->resource_version, .type = type, .reason = reason,
		.message = message, .time_ms = janitor_now(j),
	};
	if (kube_event_create(j->opts.kube, &ev, &err) != ERR_OK) {
		l = log_begin(LOG_WARN, "cannot create event");
		log_str(l, "namespace", pod->namespace);
		log_str(l, "pod", pod->name);
		log_str(l, "reason", reason);
		log_str(l, "error", buf_str(&err));
		log_end(l);
	}
	buf_release(&err);
}

/* ---- lifecycle ---- */

static void register_metrics(struct janitor *j)
{
	static const char *const pods[] = { "action", "reason", NULL };
	static const char *const result[] = { "result", NULL };
	static const char *const pod[] = { "namespace", "pod", NULL };
	static const char *const sweep_results[] = { "ok", "failed", "stopped" };
	struct metrics *m = j->opts.metrics;

	if (!m)
		return;
	j->m_pods = metrics_counter(m, "alertbridge_janitor_pods_total",
				    "Pods the janitor marked, unmarked, deleted, scaled or skipped.",
				    pods);
	j->m_notices = metrics_counter(m, "alertbridge_janitor_notices_total",
				       "Slack messages to pod owners, by result.", result);
	j->m_sweep = metrics_histogram(m, "alertbridge_janitor_sweep_duration_seconds",
				       "Time one sweep of all pods took.", NULL, SWEEP_BUCKETS,
				       sizeof(SWEEP_BUCKETS) / sizeof(SWEEP_BUCKETS[0]));
	j->m_sweeps = metrics_counter(m, "alertbridge_janitor_sweeps_total",
				      "Sweeps by result: ok, failed (the pods could not be listed), "
				      "stopped (the Lease was lost mid-sweep).", result);
	for (size_t i = 0; i < sizeof(sweep_results) / sizeof(sweep_results[0]); i++)
		metric_add(j->m_sweeps, &sweep_results[i], 0);  /* each result shows from the start */
	j->m_expiry = metrics_gauge(m, "alertbridge_janitor_pod_expiry_timestamp_seconds",
				    "When each pod the janitor tracks expires (Unix seconds).", pod);
	j->m_pending = metrics_gauge(m, "alertbridge_janitor_queue_pending",
				     "Events waiting in the janitor queue.", NULL);
	j->m_notices_pending = metrics_gauge(m, "alertbridge_janitor_notices_pending",
					     "Slack messages waiting in the outbox.", NULL);
}

struct janitor *janitor_new(const struct janitor_options *opts)
{
	struct janitor *j = xcalloc(1, sizeof(*j));

	j->opts = *opts;
	j->cfg = &opts->cfg->janitor;
	j->dry_run = opts->force_dry_run || j->cfg->dry_run;
	if (!j->opts.retry_base_ms)
		j->opts.retry_base_ms = 5000;
	if (!j->opts.retry_max_ms)
		j->opts.retry_max_ms = 600000;
	j->worker = worker_new(&(struct worker_handler){
		.queue = JANITOR_QUEUE, .store = opts->store, .ctx = j, .now_ms = now_hook,
		.retry_base_ms = j->opts.retry_base_ms, .retry_max_ms = j->opts.retry_max_ms,
		.may_act = leading_hook, .standby = standby,
		.step = step, .after = after_step,
	});
	j->seed = (unsigned int)clock_wall_ms();
	janitor_render_init(j);
	pthread_mutex_init(&j->pods_mu, NULL);
	register_metrics(j);
	janitor_postpone_init(j);
	return j;
}

int janitor_dry_run(const struct janitor *j)
{
	return j->dry_run;
}

void janitor_free(struct janitor *j)
{
	if (!j)
		return;
	janitor_stop(j);
	reload_release(j->opts.reload, j->gen);
	janitor_render_release(j);
	for (size_t i = 0; i < j->n_unknown_alerts; i++)
		free(j->unknown_alerts[i]);
	free(j->unknown_alerts);
	janitor_pods_free(j->pods, j->n_pods);
	pthread_mutex_destroy(&j->pods_mu);
	worker_free(j->worker);
	free(j);
}

enum err janitor_clients_new(const struct config *cfg, struct kube_client **kube,
			     struct slack_client **slack, struct buf *errmsg)
{
	const struct cfg_janitor *jc = &cfg->janitor;
	struct slack_options so = { 0 };
	enum err rc;

	*kube = NULL;
	*slack = NULL;
	rc = kube_config_load(jc->kubernetes.kubeconfig, jc->kubernetes.context, kube, errmsg);
	if (rc)
		return rc;
	if ((jc->slack.bot_token && *jc->slack.bot_token) ||
	    (jc->slack.webhook_url && *jc->slack.webhook_url)) {
		so.api_url = jc->slack.api_url;
		so.bot_token = jc->slack.bot_token;
		so.webhook_url = jc->slack.webhook_url;
		*slack = slack_client_new(&so);
	}
	return ERR_OK;
}

/* ---- the worker: events ---- */

/* One event while it is handled; released in one place. */
struct work {
	struct store_event ev;
	json_t *doc;
	const char *ns, *pod, *uid, *alertname, *why;
	struct kube_pod p;
	struct kube_owner owner;
	struct janitor_kv *kv;
	struct janitor_patch patch;
	int64_t now_ms;
	const char *skip;        /* why the event changed nothing, for the log and metric */
};

static const char *label(json_t *doc, const char *set, const char *name)
{
	const char *v = json_string_value(json_object_get(json_object_get(doc, set), name));

	return v && *v ? v : NULL;
}

static void skip(struct janitor *j, struct work *w, const char *why)
{
	w->skip = why;
	janitor_count(j, "skipped", why);
}

/* Log "no janitor policy" once per alert name (bounded), then at debug. */
static void no_policy(struct janitor *j, const char *alertname)
{
	enum log_level level = LOG_WARN;
	struct log_line *l;

	for (size_t i = 0; i < j->n_unknown_alerts; i++)
		if (!strcmp(j->unknown_alerts[i], alertname))
			level = LOG_DEBUG;
	if (level == LOG_WARN && j->n_unknown_alerts < MAX_UNKNOWN_ALERTS) {
		j->unknown_alerts = xreallocarray(j->unknown_alerts, j->n_unknown_alerts + 1,
						  sizeof(*j->unknown_alerts));
		j->unknown_alerts[j->n_unknown_alerts++] = xstrdup(alertname);
	} else if (level == LOG_WARN) {
		level = LOG_DEBUG;
	}
	l = log_begin(level, "no janitor policy for this alert, pods left alone");
	log_str(l, "alertname", alertname);
	log_end(l);
}

/*
 * GET the pod; ERR_OK with w->skip set when its namespace is excluded (no
 * GET then), or it is gone or another pod now.
 */
static enum err get_pod(struct janitor *j, struct work *w, struct buf *errmsg)
{
	enum err rc;

	if (janitor_excluded(j, w->ns)) {
		skip(j, w, "excluded");
		return ERR_OK;
	}
	rc = kube_pod_get(j->opts.kube, w->ns, w->pod, &w->p, errmsg);

	if (rc == ERR_NOTFOUND) {
		skip(j, w, "gone");
		janitor_expiry_gauge(j, w->ns, w->pod, JANITOR_NO_TIME);
		if (w->uid && !j->dry_run) {
			int64_t n = 0;
			rc = store_notice_cancel(j->opts.store, w->uid, "the pod is gone", &n);
			return rc ? ERR_DB : ERR_OK;
		}
		return ERR_OK;
	}
	if (rc)
		return rc;
	if (w->uid && strcmp(w->uid, w->p.uid ? w->p.uid : ""))
		skip(j, w, "uid-changed");
	return ERR_OK;
}

/* The scheduler's message for a Pending pod, else the alert's summary or description. */
static const char *why_of(const struct work *w)
{
	if (w->p.pod_scheduled_message && w->p.phase && !strcmp(w->p.phase, "Pending"))
		return w->p.pod_scheduled_message;
	return w->why;
}

/* The workload the pod's time running out acts on; a failed lookup keeps the reference. */
static enum err controller(struct janitor *j, const struct kube_pod *p, struct kube_owner *out,
			   struct buf *errmsg)
{
	enum err rc = kube_pod_controller(j->opts.kube, p, out, errmsg);

	if (rc == ERR_RETRY || rc == ERR_AUTH || rc == ERR_IO)
		return rc;
	if (rc) {
		kube_owner_release(out);
		out->api_version = xstrdup(p->owner.api_version);
		out->kind = xstrdup(p->owner.kind);
		out->name = xstrdup(p->owner.name);
		out->uid = xstrdup(p->owner.uid);
	}
	return ERR_OK;
}

static int64_t patched_expiry(const struct janitor_pod_state *st, const struct janitor_patch *p)
{
	const struct janitor_patch_op *op = janitor_patch_find(p, JANITOR_ANN_EXPIRES);
	int64_t expires = st->expires_ms;

	if (op && op->value && janitor_parse_time(op->value, &expires, NULL) != ERR_OK)
		expires = st->expires_ms;
	if (st->ttl_expiry_ms != JANITOR_NO_TIME &&
	    (expires == JANITOR_NO_TIME || st->ttl_expiry_ms < expires))
		return st->ttl_expiry_ms;
	return expires;
}

static void log_pod(enum log_level level, const char *msg, const struct work *w,
		    const char *key, const char *value)
{
	struct log_line *l = log_begin(level, msg);

	log_str(l, "namespace", w->ns);
	log_str(l, "pod", w->pod);
	log_str(l, "alertname", w->alertname);
	if (key)
		log_str(l, key, value);
	log_end(l);
}

static enum err mark(struct janitor *j, struct work *w, struct buf *errmsg)
{
	const struct cfg_policy *pol = cfg_policy_find(j->opts.cfg, w->alertname);
	struct janitor_pod_state st;
	struct buf why = BUF_INIT, msg = BUF_INIT;
	char when[JANITOR_TIME_LEN] = "";
	int64_t expiry;
	enum jaction action;
	enum err rc;

	if (!pol) {
		no_policy(j, w->alertname);
		skip(j, w, "no-policy");
		return ERR_OK;
	}
	rc = get_pod(j, w, errmsg);
	if (rc || w->skip)
		return rc;
	if (w->p.deletion_ms) {
		skip(j, w, "being-deleted");
		return ERR_OK;
	}
	w->kv = janitor_pod_kv(&w->p);
	if (janitor_pod_state(w->kv, w->p.nannotations, w->p.creation_ms, &st, &why) != ERR_OK) {
		log_pod(LOG_WARN, "invalid janitor annotation, pod left alone", w, "error",
			buf_str(&why));
		(void)buf_printf(&msg, "alertbridge leaves this pod alone: %s", buf_str(&why));
		janitor_event(j, &w->p, "Warning", JANITOR_EV_INVALID, buf_str(&msg));
		skip(j, w, "invalid");
		goto out;
	}
	if (st.exempt || st.forever) {
		skip(j, w, st.exempt ? "exempt" : "forever");
		goto out;
	}
	rc = janitor_mark_patch(&st, w->now_ms, pol->grace_ms, w->alertname, &w->patch, errmsg);
	if (rc)
		goto out;
	expiry = patched_expiry(&st, &w->patch);
	rc = controller(j, &w->p, &w->owner, errmsg);
	if (rc)
		goto out;
	action = janitor_jaction(pol->owned, &w->owner);
	if (w->patch.n > 0) {
		/* Computed from the GET above: a stale attempt landing late must not win. */
		rc = janitor_apply_patch(j, w->ns, w->pod, w->p.uid, w->p.resource_version,
					 &w->patch, "mark", errmsg);
		if (rc == ERR_NOTFOUND) {
			skip(j, w, "gone");
			rc = ERR_OK;
			goto out;
		}
		if (rc)
			goto out;
		if (janitor_format_time(expiry, when) != ERR_OK)
			when[0] = '\0';
		(void)buf_printf(&msg, "Marked for clean-up by alertbridge (%s): %s at %s unless "
				 "the alert resolves; to keep it, annotate janitor/exempt=true",
				 w->alertname, janitor_jaction_str(action), when);
		janitor_event(j, &w->p, "Normal", JANITOR_EV_MARKED, buf_str(&msg));
		if (!j->dry_run) {
			janitor_count(j, "marked", w->alertname);
			janitor_expiry_gauge(j, w->ns, w->pod, expiry);
		}
		{
			struct log_line *l = log_begin(LOG_INFO, j->dry_run ? "dry-run: would mark pod"
									    : "pod marked");
			log_str(l, "namespace", w->ns);
			log_str(l, "pod", w->pod);
			log_str(l, "uid", w->p.uid);
			log_str(l, "alertname", w->alertname);
			log_str(l, "expires", when);
			log_str(l, "action", janitor_jaction_str(action));
			log_end(l);
		}
	}
	rc = janitor_queue_notice(j, &w->p, &w->owner, action, w->alertname, why_of(w), expiry,
				  pol->grace_ms, pol->notice_lead_ms,
				  j->cfg->notice_batch_window_ms, NULL, errmsg);
out:
	buf_release(&why);
	buf_release(&msg);
	return rc;
}

static enum err unmark(struct janitor *j, struct work *w, struct buf *errmsg)
{
	const char *reason;
	struct jtext_view v = { 0 };
	struct buf msg = BUF_INIT;
	int64_t cancelled = 0;
	enum err rc;

	rc = get_pod(j, w, errmsg);
	if (rc || w->skip)
		return rc;
	w->kv = janitor_pod_kv(&w->p);
	reason = janitor_kv_get(w->kv, w->p.nannotations, JANITOR_ANN_REASON);
	if (reason && strcmp(reason, w->alertname)) {
		skip(j, w, "other-alert");  /* another alert marked it: its resolve unmarks it */
		return ERR_OK;
	}
	janitor_unmark_patch(w->kv, w->p.nannotations, &w->patch);
	if (w->patch.n == 0) {
		w->skip = "not-marked";
		return ERR_OK;
	}
	rc = janitor_apply_patch(j, w->ns, w->pod, w->p.uid, NULL, &w->patch, "unmark", errmsg);
	if (rc == ERR_NOTFOUND) {
		skip(j, w, "gone");
		return ERR_OK;
	}
	if (rc)
		return rc;
	(void)buf_printf(&msg, "Clean-up called off by alertbridge: the %s alert resolved",
			 w->alertname);
	janitor_event(j, &w->p, "Normal", JANITOR_EV_UNMARKED, buf_str(&msg));
	buf_release(&msg);
	log_pod(LOG_INFO, j->dry_run ? "dry-run: would unmark pod" : "pod unmarked", w, "uid",
		w->p.uid);
	if (j->dry_run)
		return ERR_OK;
	janitor_count(j, "unmarked", w->alertname);
	janitor_expiry_gauge(j, w->ns, w->pod, JANITOR_NO_TIME);
	if (store_notice_cancel(j->opts.store, w->p.uid, JANITOR_RESOLVED_BEFORE_DELIVERY,
				&cancelled))
		return ERR_DB;
	rc = controller(j, &w->p, &w->owner, errmsg);
	if (rc)
		return rc;
	v.namespace = w->ns;
	v.pod = w->pod;
	v.uid = w->p.uid;
	v.owner = &w->owner;
	v.action = janitor_jaction(cfg_policy_find(j->opts.cfg, w->alertname)
					   ? cfg_policy_find(j->opts.cfg, w->alertname)->owned
					   : CFG_OWNED_NOTIFY_ONLY,
				   &w->owner);
	v.reason = w->alertname;
	v.why = label(w->doc, "annotations", "summary");
	v.expires_ms = JANITOR_NO_TIME;
	return janitor_queue_reply(j, JT_CANCELLED, &v, errmsg);
}

static void work_release(struct work *w)
{
	store_event_release(&w->ev);
	json_decref(w->doc);
	kube_pod_release(&w->p);
	kube_owner_release(&w->owner);
	free(w->kv);
	janitor_patch_release(&w->patch);
}

static void fail(struct janitor *j, struct work *w, enum err rc, const char *why)
{
	struct log_line *l;
	enum err src;

	if (rc == ERR_INVALID) {
		src = store_event_dead(j->opts.store, w->ev.id, why);
		l = log_begin(LOG_ERROR, "janitor event dead-lettered");
	} else {
		int64_t next = w->now_ms + janitor_backoff(j, w->ev.attempts);

		src = store_event_retry(j->opts.store, w->ev.id, next, why);
		l = log_begin(LOG_WARN, "janitor event failed, will retry");
		log_int(l, "retry_in_ms", next - w->now_ms);
	}
	log_err(l, rc);
	log_int(l, "event", w->ev.id);
	log_str(l, "key", w->ev.key);
	log_str(l, "status", w->ev.status);
	if (queue_job_failed(l, &w->ev, why, src))
		j->step_store_fault = 1;
}

static void handle(struct janitor *j, struct work *w)
{
	struct buf errmsg = BUF_INIT;
	enum err rc;

	w->doc = json_loads(w->ev.payload, 0, NULL);
	w->ns = label(w->doc, "labels", "namespace");
	w->pod = label(w->doc, "labels", "pod");
	w->uid = label(w->doc, "labels", "uid");
	w->alertname = label(w->doc, "labels", "alertname");
	w->why = label(w->doc, "annotations", "summary");
	if (!w->why)
		w->why = label(w->doc, "annotations", "description");
	if (!w->alertname)
		w->alertname = "";
	if (!w->ns || !w->pod) {
		fail(j, w, ERR_INVALID, "the event names no namespace or pod");
		goto out;
	}
	if (!strcmp(w->ev.status, "firing"))
		rc = mark(j, w, &errmsg);
	else
		rc = unmark(j, w, &errmsg);
	if (rc) {
		fail(j, w, rc == ERR_CONFLICT ? ERR_RETRY : rc, buf_str(&errmsg));
		goto out;
	}
	rc = store_event_done(j->opts.store, w->ev.id, NULL, &errmsg);
	if (rc) {
		log_msg(LOG_ERROR, "cannot record event done", "detail", buf_str(&errmsg));
		j->step_store_fault = 1;
		goto out;
	}
	if (w->skip) {
		struct log_line *l = log_begin(LOG_INFO, "janitor event skipped");
		log_str(l, "namespace", w->ns);
		log_str(l, "pod", w->pod);
		log_str(l, "status", w->ev.status);
		log_str(l, "alertname", w->alertname);
		log_str(l, "why", w->skip);
		log_end(l);
	}
out:
	buf_release(&errmsg);
}

static void update_gauges(struct janitor *j)
{
	if (!j->opts.metrics)
		return;
	metric_set(j->m_pending, NULL, (double)store_pending_count(j->opts.store, JANITOR_QUEUE));
	metric_set(j->m_notices_pending, NULL, (double)store_notice_pending_count(j->opts.store));
}

/* Between two events: take the current generation of the config (core/reload.h). */
static void pick_up_config(struct janitor *j)
{
	const struct reload_gen *g = queue_job_newer_gen(j->opts.reload, &j->gen);

	if (!g)
		return;
	j->opts.cfg = g->cfg;
	j->cfg = &g->cfg->janitor;
	slack_set_secret(j->opts.slack, j->cfg->slack.bot_token, j->cfg->slack.webhook_url);
}

/*
 * worker_handler.step: the oldest due event of the "janitor" queue.  The
 * config is taken first: the round's notices and sweep (after_step()) use
 * it too.
 */
static enum worker_did step(void *ctx, int64_t now_ms)
{
	struct janitor *j = ctx;
	struct work w;
	enum err rc;

	memset(&w, 0, sizeof(w));
	w.now_ms = now_ms;
	pick_up_config(j);
	rc = store_next_event(j->opts.store, JANITOR_QUEUE, w.now_ms, &w.ev);
	if (rc == ERR_NOTFOUND) {
		update_gauges(j);
		return WORKER_IDLE;
	}
	if (rc)
		return WORKER_STORE_FAILED;
	j->step_store_fault = 0;
	handle(j, &w);
	work_release(&w);
	if (j->step_store_fault)
		return WORKER_STORE_FAILED;
	update_gauges(j);
	return WORKER_RECORDED;
}

int janitor_step(struct janitor *j)
{
	return worker_step(j->worker);
}

/* ---- the worker's other hooks (core/worker.h) ---- */

static int64_t now_hook(void *ctx)
{
	return janitor_now(ctx);
}

static int leading_hook(void *ctx)
{
	return janitor_leading(ctx);
}

/* Not leading: sweep at once when leadership comes. */
static void standby(void *ctx)
{
	struct janitor *j = ctx;

	j->next_sweep_ms = 0;
}

static void sweep_if_due(struct janitor *j)
{
	struct buf err = BUF_INIT;
	int64_t now = janitor_now(j);

	if (now < j->next_sweep_ms)
		return;
	j->next_sweep_ms = now + j->cfg->sweep_interval_ms;
	if (janitor_sweep(j, NULL, NULL, NULL, &err) != ERR_OK)
		log_msg(LOG_WARN, "sweep failed, next one at the next interval", "error",
			buf_str(&err));
	buf_release(&err);
}

/*
 * worker_handler.after: with no event due, a click, else a Slack message;
 * then the sweep when due.  Slack's due messages go before the next sweep
 * (a sweep takes long): one sent skips the sweep and ends the round.
 */
static int after_step(void *ctx, int r)
{
	struct janitor *j = ctx;

	if (r == 0)
		r = janitor_postpone_step(j);
	if (r == 0) {
		r = janitor_notice_step(j);
		if (r > 0)
			return r;
	}
	sweep_if_due(j);
	return r;
}

enum err janitor_start(struct janitor *j, struct buf *errmsg)
{
	struct log_line *l;

	if (worker_started(j->worker))
		return ERR_OK;
	if (worker_start(j->worker, errmsg))
		return ERR_IO;
	l = log_begin(LOG_INFO, "janitor started");
	log_str(l, "kubernetes", kube_client_source(j->opts.kube));
	log_str(l, "dry_run", j->dry_run ? "true" : "false");
	log_str(l, "slack", j->opts.slack ? (slack_webhook_mode(j->opts.slack) ? "webhook" : "bot")
					  : "none");
	log_int(l, "policies", (int64_t)j->cfg->policies_count);
	log_int(l, "sweep_interval_ms", j->cfg->sweep_interval_ms);
	log_end(l);
	if (!j->opts.slack)
		log_msg(LOG_WARN, "slack is not configured: notices wait in the outbox and no pod "
			"is ever deleted", "hint", "set janitor.slack.bot_token_file or webhook_url_file");
	return ERR_OK;
}

void janitor_stop(struct janitor *j)
{
	if (j)
		worker_stop(j->worker);
}
