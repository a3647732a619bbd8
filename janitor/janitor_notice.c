/*
 * janitor_notice.c - the Slack outbox: notices and replies are rendered and
 * queued in sqlite (store/store_outbox.h, table notices) by the worker and the
 * sweeper, then delivered one at a time with retries.  Only after Slack
 * confirmed a notice is the pod stamped with janitor/notified-at: the
 * sweeper never acts on a pod without that stamp (DESIGN.md "Janitor
 * semantics").
 */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "store/store_digest.h"
#include "store/store_outbox.h"
#include "janitor/janitor_int.h"
#include "core/banned.h"

static const char *const kinds[JT_COUNT] = {
	[JT_NOTICE] = "notice",
	[JT_REMINDER] = "reminder",
	[JT_CANCELLED] = "cancelled",
	[JT_DELETED] = "deleted",
	[JT_DIGEST] = "notice",  /* a digest's members are notices */
};

static void count_notice(struct janitor *j, const char *result)
{
	const char *labels[] = { result };

	metric_add(j->m_notices, labels, 1);
}

/* An info line begun with namespace and pod: dry (dry-run) or done as its message. */
static struct log_line *log_queued(const struct janitor *j, const char *dry, const char *done,
				   const char *ns, const char *pod)
{
	struct log_line *l = log_begin(LOG_INFO, j->dry_run ? dry : done);

	log_str(l, "namespace", ns);
	log_str(l, "pod", pod);
	return l;
}

/* ERR_DB, "cannot read the outbox" in errmsg. */
static enum err outbox_unreadable(struct buf *errmsg)
{
	buf_setf(errmsg, "cannot read the outbox");
	return ERR_DB;
}

/* janitor_render(), any failure ERR_INVALID (a template that does not fit the view). */
static enum err render(struct janitor *j, enum jtext which, const struct jtext_view *v,
		       int64_t now_ms, struct buf *out, struct buf *errmsg)
{
	return janitor_render(j, which, v, now_ms, out, errmsg) ? ERR_INVALID : ERR_OK;
}

/*
 * Whether old, the pod's latest notice, announced expiry_ms for the mark the
 * pod carries now.  Not when a resolve called it off since (given up on before
 * delivery, or a "never mind" reply after it): a mark after that is a new one,
 * even with the same expiry (fire, resolve, fire within a second).
 */
static int announced(struct janitor *j, const struct store_notice *old, int64_t expiry_ms)
{
	struct store_notice c = { 0 };
	int called_off;

	if (old->expires_ms != expiry_ms)
		return 0;
	if (old->state == STORE_NOTICE_DEAD && old->last_error &&
	    !strcmp(old->last_error, JANITOR_RESOLVED_BEFORE_DELIVERY))
		return 0;
	called_off = store_notice_latest(j->opts.store, old->uid, "cancelled", &c) == ERR_OK &&
		     c.id > old->id;
	store_notice_release(&c);
	return !called_off;
}

enum err janitor_queue_notice(struct janitor *j, const struct kube_pod *pod,
			      const struct kube_owner *owner, enum jaction action,
			      const char *reason, const char *why, int64_t expiry_ms,
			      int64_t grace_ms, int64_t lead_ms, int64_t delay_ms, int *queued,
			      struct buf *errmsg)
{
	int64_t now = janitor_now(j);
	struct store_notice old = { 0 }, n = { 0 };
	struct jtext_view v = { 0 };
	struct buf text = BUF_INIT;
	struct log_line *l;
	char *line = NULL;
	enum err rc;

	if (queued)
		*queued = 0;
	rc = store_notice_latest(j->opts.store, pod->uid, kinds[JT_NOTICE], &old);
	if (rc == ERR_OK && announced(j, &old, expiry_ms))
		goto out;  /* this expiry was announced (or is being) already */
	if (rc != ERR_OK && rc != ERR_NOTFOUND) {
		rc = outbox_unreadable(errmsg);
		goto out;
	}
	v = (struct jtext_view){
		.namespace = pod->namespace, .pod = pod->name, .uid = pod->uid, .owner = owner,
		.action = action, .reason = reason, .why = why,
		/* A late notice (an annotation, a janitor that was down) still gives lead_ms. */
		.expires_ms = expiry_ms > now + lead_ms ? expiry_ms : now + lead_ms,
		.grace_ms = grace_ms, .postponed = janitor_postponed_count(pod),
		.created_ms = pod->creation_ms,
	};
	rc = render(j, JT_NOTICE, &v, now, &text, errmsg);
	if (rc)
		goto out;
	l = log_queued(j, "dry-run: would send slack notice", "slack notice queued",
		       pod->namespace, pod->name);
	log_str(l, "uid", pod->uid);
	log_str(l, "notify", kube_pod_annotation(pod, JANITOR_ANN_NOTIFY));
	log_str(l, "owner", janitor_owner_value(j, pod));
	if (j->dry_run)
		log_str(l, "text", buf_str(&text));
	log_end(l);
	if (j->dry_run)
		goto out;
	n.namespace = pod->namespace;
	n.pod = pod->name;
	n.uid = pod->uid;
	n.kind = kinds[JT_NOTICE];
	n.expires_ms = expiry_ms;
	n.notify = kube_pod_annotation(pod, JANITOR_ANN_NOTIFY);
	n.owner = janitor_owner_value(j, pod);
	n.text = buf_str(&text);
	n.created_at_ms = janitor_now(j);
	n.next_attempt_at_ms = n.created_at_ms + delay_ms;
	line = janitor_render_line(&v);
	n.line = line;
	rc = store_notice_add(j->opts.store, &n, errmsg);
	if (rc == ERR_OK && queued)
		*queued = 1;
out:
	free(line);
	store_notice_release(&old);
	buf_release(&text);
	return rc;
}

enum err janitor_queue_reply(struct janitor *j, enum jtext which, const struct jtext_view *v,
			     struct buf *errmsg)
{
	struct store_notice parent = { 0 }, n = { 0 };
	struct buf text = BUF_INIT;
	struct jtext_view view = *v;
	struct log_line *l;
	enum err rc;

	rc = store_notice_latest(j->opts.store, v->uid, kinds[JT_NOTICE], &parent);
	if (rc == ERR_NOTFOUND || (rc == ERR_OK && parent.state != STORE_NOTICE_SENT)) {
		rc = ERR_OK;  /* no notice reached the owner: nothing to follow up */
		goto out;
	}
	if (rc) {
		rc = outbox_unreadable(errmsg);
		goto out;
	}
	if (view.expires_ms == JANITOR_NO_TIME)
		view.expires_ms = parent.expires_ms;
	rc = render(j, which, &view, janitor_now(j), &text, errmsg);
	if (rc)
		goto out;
	l = log_queued(j, "dry-run: would reply in the slack thread", "slack reply queued",
		       v->namespace, v->pod);
	log_str(l, "kind", kinds[which]);
	log_end(l);
	if (j->dry_run)
		goto out;
	n.namespace = parent.namespace;
	n.pod = parent.pod;
	n.uid = parent.uid;
	n.kind = kinds[which];
	n.expires_ms = parent.expires_ms;
	/* The notice's channel as Slack answered it (an ID; "" for a webhook). */
	n.channel = parent.slack_channel_id ? parent.slack_channel_id : parent.channel;
	n.thread_ts = parent.slack_ts && *parent.slack_ts ? parent.slack_ts : NULL;
	n.text = buf_str(&text);
	n.created_at_ms = janitor_now(j);
	rc = store_notice_add(j->opts.store, &n, errmsg);
out:
	store_notice_release(&parent);
	buf_release(&text);
	return rc;
}

enum err janitor_queue_reminder(struct janitor *j, const struct jtext_view *v, int *queued,
				struct buf *errmsg)
{
	struct store_notice parent = { 0 }, old = { 0 };
	enum err rc, orc;

	if (queued)
		*queued = 0;
	rc = store_notice_latest(j->opts.store, v->uid, kinds[JT_NOTICE], &parent);
	orc = store_notice_latest(j->opts.store, v->uid, kinds[JT_REMINDER], &old);
	if ((rc != ERR_OK && rc != ERR_NOTFOUND) || (orc != ERR_OK && orc != ERR_NOTFOUND)) {
		rc = outbox_unreadable(errmsg);
		goto out;
	}
	/* Not delivered (or none): no thread to remind in.  Reminded already: once is enough. */
	if (rc == ERR_NOTFOUND || parent.state != STORE_NOTICE_SENT ||
	    (orc == ERR_OK && old.expires_ms == parent.expires_ms)) {
		rc = ERR_OK;
		goto out;
	}
	rc = janitor_queue_reply(j, JT_REMINDER, v, errmsg);
	if (rc == ERR_OK && queued)
		*queued = 1;
out:
	store_notice_release(&parent);
	store_notice_release(&old);
	return rc;
}

enum err janitor_record_notified(struct janitor *j, const char *ns, const char *name,
				 const char *uid, int64_t sent_at_ms, struct buf *errmsg)
{
	struct kube_pod pod = { 0 };
	struct janitor_patch patch = JANITOR_PATCH_INIT;
	enum err rc = kube_pod_get(j->opts.kube, ns, name, &pod, errmsg);

	if (rc)
		goto out;
	if (!pod.uid || strcmp(pod.uid, uid)) {
		buf_setf(errmsg, "pod %s/%s has another uid now", ns, name);
		rc = ERR_CONFLICT;
		goto out;
	}
	janitor_notified_patch(sent_at_ms, &patch);
	rc = janitor_apply_patch(j, ns, name, uid, NULL, &patch, "notified", errmsg);
out:
	janitor_patch_release(&patch);
	kube_pod_release(&pod);
	return rc;
}

/* Record a failed attempt of m: a retry at next_at_ms (channel NULL: unresolved), or dead. */
static enum err record_retry(struct janitor *j, const struct jmsg *m, int64_t next_at_ms,
			     const char *channel, const char *why)
{
	if (m->digest)
		return store_digest_retry(j->opts.store, m->id, next_at_ms, channel, why);
	return store_notice_retry(j->opts.store, m->id, next_at_ms, channel, why);
}

static enum err record_dead(struct janitor *j, const struct jmsg *m, const char *why)
{
	if (m->digest)
		return store_digest_dead(j->opts.store, m->id, why);
	return store_notice_dead(j->opts.store, m->id, why);
}

static void log_msg_fields(struct log_line *l, const struct jmsg *m)
{
	log_int(l, m->digest ? "digest" : "notice", m->id);
	log_str(l, "kind", m->kind);
	log_str(l, "namespace", m->namespace);
	log_str(l, "pod", m->pod);
	if (m->digest)
		log_int(l, "pods", (int64_t)m->pods);
}

/* A failed attempt: retry later, or give up after the last one. */
static void failed(struct janitor *j, const struct jmsg *m, const char *channel, enum err rc,
		   const char *why)
{
	int64_t now = janitor_now(j);
	/* Waiting fixes an outage or a token an admin replaces: only ERR_INVALID gives up. */
	int transient = rc == ERR_RETRY || rc == ERR_AUTH;
	int dead = !transient && m->attempts + 1 >= JANITOR_NOTICE_MAX_ATTEMPTS;
	struct log_line *l;
	enum err src;

	if (dead)
		src = record_dead(j, m, why);
	else
		src = record_retry(j, m, now + janitor_backoff(j, m->attempts), channel, why);
	count_notice(j, dead ? "dead" : "failed");
	l = log_begin(dead || rc == ERR_AUTH ? LOG_ERROR : LOG_WARN,
		      dead ? "slack message given up"
		      : rc == ERR_AUTH ? "slack rejected the token, the message waits for a valid one"
				       : "slack message failed, will retry");
	log_err(l, rc);
	log_msg_fields(l, m);
	log_str(l, "channel", channel);
	log_int(l, "attempts", m->attempts + 1);
	log_str(l, "detail", why);
	log_end(l);
	if (src)
		log_msg(LOG_ERROR, "cannot record notice outcome", "err", err_str(src));
}

static void give_up(struct janitor *j, const struct jmsg *m, const char *why)
{
	struct log_line *l = log_begin(LOG_ERROR, "slack message given up");

	if (record_dead(j, m, why))
		log_msg(LOG_ERROR, "cannot record notice outcome", "notice", m->pod);
	count_notice(j, "dead");
	log_msg_fields(l, m);
	log_str(l, "detail", why);
	log_end(l);
}

/* Resolve the owner's channel into out; 0, or 1 when the notice was handled (failed). */
static int resolve(struct janitor *j, const struct store_notice *n, struct buf *out)
{
	struct jmsg m = { n->id, 0, n->kind, n->namespace, n->pod, n->attempts, n->thread_ts, 1 };
	struct buf err = BUF_INIT;
	enum err rc;

	rc = slack_resolve_owner(j->opts.slack, n->notify, n->owner,
				 janitor_namespace_channel(j, n->namespace),
				 j->cfg->slack.default_channel, out, &err);
	if (rc == ERR_NOTFOUND)
		give_up(j, &m, buf_str(&err));
	else if (rc)
		failed(j, &m, NULL, rc, buf_str(&err));
	buf_release(&err);
	return rc != ERR_OK;
}

void janitor_stamp_notified(struct janitor *j, const char *ns, const char *pod, const char *uid,
			    int64_t sent_at_ms)
{
	struct buf err = BUF_INIT;
	struct log_line *l;

	if (janitor_record_notified(j, ns, pod, uid, sent_at_ms, &err) != ERR_OK) {
		l = log_begin(LOG_WARN, "cannot stamp janitor/notified-at, the sweeper will retry");
		log_str(l, "namespace", ns);
		log_str(l, "pod", pod);
		log_str(l, "error", buf_str(&err));
		log_end(l);
	}
	buf_release(&err);
}

static void delivered(struct janitor *j, const struct store_notice *n, const char *channel,
		      const struct slack_posted *posted)
{
	int64_t now = janitor_now(j);

	if (store_notice_sent(j->opts.store, n->id, now, channel, posted->channel, posted->ts)) {
		/* Slack has it; without the record a retry would post it twice. */
		log_msg(LOG_ERROR, "cannot record a delivered slack message", "pod", n->pod);
		return;
	}
	janitor_log_sent(j, &(struct jmsg){ n->id, 0, n->kind, n->namespace, n->pod, 0, NULL, 1 },
			 channel, posted);
	if (!strcmp(n->kind, kinds[JT_NOTICE]))
		janitor_stamp_notified(j, n->namespace, n->pod, n->uid, now);
}

void janitor_log_sent(struct janitor *j, const struct jmsg *m, const char *channel,
		      const struct slack_posted *posted)
{
	struct log_line *l;

	count_notice(j, "sent");
	l = log_begin(LOG_INFO, "slack message sent");
	log_msg_fields(l, m);
	log_str(l, "channel", channel);
	log_str(l, "ts", posted->ts);
	log_end(l);
}

void janitor_post_failed(struct janitor *j, const struct jmsg *m, const char *channel,
			 enum err rc, const char *why)
{
	const char *dflt = j->cfg->slack.default_channel;

	if (rc == ERR_NOTFOUND && !m->thread_ts && dflt && *dflt && strcmp(channel, dflt)) {
		/* The owner's channel is gone: the default channel, once. */
		struct log_line *l = log_begin(LOG_WARN, "slack channel not found, "
							 "falling back to the default channel");
		log_msg_fields(l, m);
		log_str(l, "channel", channel);
		log_str(l, "default_channel", dflt);
		log_end(l);
		count_notice(j, "failed");
		if (record_retry(j, m, janitor_now(j), dflt, why))
			log_msg(LOG_ERROR, "cannot record notice outcome", "pod", m->pod);
	} else if (rc == ERR_NOTFOUND) {
		give_up(j, m, why);
	} else {
		failed(j, m, channel, rc, why);
	}
}

int janitor_notice_step(struct janitor *j)
{
	struct store_notice n = { 0 };
	struct slack_posted posted;
	struct buf channel = BUF_INIT, err = BUF_INIT;
	char *blocks = NULL;
	enum err rc;
	int r;

	/* Not leading (the Lease or the worker lock lost): the next leader sends it. */
	if (!j->opts.slack || j->dry_run || !janitor_leading(j))
		return 0;
	r = janitor_digest_step(j);
	if (r)
		return r;
	rc = store_notice_next(j->opts.store, janitor_now(j), &n);
	if (rc == ERR_NOTFOUND)
		return 0;
	if (rc)
		return -1;
	r = 1;
	if (n.channel)
		(void)buf_adds(&channel, n.channel);
	else if (resolve(j, &n, &channel))
		goto out;
	/* Others due with it: a digest (posted by the next step), or it goes alone. */
	r = janitor_digest_form(j, &n, buf_str(&channel));
	if (r) {
		r = r < 0 ? -1 : 1;
		goto out;
	}
	r = 1;
	if (!janitor_leading(j)) {  /* lost while the channel was looked up */
		r = 0;
		goto out;
	}
	blocks = janitor_keep_blocks(j, n.text, &n, 1);
	rc = slack_post_blocks(j->opts.slack, buf_str(&channel), n.text, blocks, n.thread_ts,
			       &posted, &err);
	if (rc == ERR_OK)
		delivered(j, &n, buf_str(&channel), &posted);
	else
		janitor_post_failed(j, &(struct jmsg){ n.id, 0, n.kind, n.namespace, n.pod,
						       n.attempts, n.thread_ts, 1 },
				    buf_str(&channel), rc, buf_str(&err));
out:
	free(blocks);
	store_notice_release(&n);
	buf_release(&channel);
	buf_release(&err);
	return r;
}
