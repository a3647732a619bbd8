/*
 * janitor_postpone.c - "Keep until ..." (issue 21 section 2), the janitor's
 * side: the button a notice carries (janitor_keep_blocks) and the worker
 * step that applies a queued click (janitor_postpone_step): fresh GET, uid,
 * owner, the rule of postpone.h, a patch with uid and resourceVersion as
 * preconditions, an Event, the message updated, a threaded reply; every
 * refusal answered to the clicker alone through response_url.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "store/store_events.h"
#include "store/store_outbox.h"
#include "store/store_silences.h"
#include "core/utf8.h"
#include "core/xalloc.h"
#include "janitor/janitor_int.h"
#include "janitor/postpone.h"
#include "janitor/slack_interact.h"
#include "core/banned.h"

#define SECTION_MAX 3000      /* a section block's text (Block Kit reference) */
#define BUTTON_TEXT_MAX 75    /* a button's plain_text */
#define ACTIONS_MAX 25        /* elements of one actions block */

static const char *const postpone_reasons[] = {
	"done", "gone", "uid-changed", "not-owner", "already", "limit", "max-lifetime",
	"no-expiry", "exempt", "invalid", "dry-run", NULL,
};

void janitor_postpone_init(struct janitor *j)
{
	static const char *const labels[] = { "result", "reason", NULL };
	static const char *const done[] = { "done", NULL }, *const refused[] = { "refused", NULL };
	static const char *const done_reason[] = { "done", NULL };
	const char *const *vd[] = { done, done_reason, NULL };
	const char *const *vr[] = { refused, postpone_reasons + 1, NULL };

	if (!j->opts.metrics)
		return;
	j->m_postpones = metrics_counter(j->opts.metrics, "alertbridge_janitor_postpones_total",
					 "Clicks on Keep until: done, or refused by reason.",
					 labels);
	metric_declare(j->m_postpones, vd);
	metric_declare(j->m_postpones, vr);
}

/* The policy knobs for a pod whose janitor/reason is reason (NULL: none). */
static struct postpone_policy policy_of(const struct janitor *j, const char *reason)
{
	struct postpone_policy p = POSTPONE_POLICY_DEFAULT;
	const struct cfg_policy *cp = reason ? cfg_policy_find(j->opts.cfg, reason) : NULL;

	if (cp) {
		p.by_ms = cp->postpone_by_ms;
		p.max = cp->max_postpones;
		p.max_lifetime_ms = cp->max_lifetime_ms;
	}
	return p;
}

/* ---- the button ---- */

static void add_section(json_t *blocks, const char *text, size_t n)
{
	json_array_append_new(blocks, json_pack("{s:s, s:{s:s, s:s%}}", "type", "section", "text",
						"type", "mrkdwn", "text", text, n));
}

/* text as section blocks of at most SECTION_MAX bytes, cut at line ends where it can be. */
static void add_sections(json_t *blocks, const char *text)
{
	size_t len = strlen(text);

	while (len) {
		size_t n = len <= SECTION_MAX ? len : utf8_cut(text, len, SECTION_MAX);
		const char *nl = NULL;

		for (size_t i = n; n < len && i > SECTION_MAX / 2; i--)
			if (text[i - 1] == '\n') {
				nl = text + i;
				break;
			}
		if (nl)
			n = (size_t)(nl - text);
		add_section(blocks, text, n);
		text += n;
		len -= n;
	}
}

/* What a notice's digest line says of its pod's postpones (janitor_render_line). */
struct line_keep {
	char *policy;         /* NULL when none */
	int postponed;        /* janitor/postponed when it was queued (0: a line without it) */
	int64_t created_ms;   /* creationTimestamp (0: unknown) */
};

static void line_keep(const struct store_notice *n, struct line_keep *k)
{
	json_t *o = n->line ? json_loads(n->line, 0, NULL) : NULL;
	const char *s = json_string_value(json_object_get(o, "policy"));

	k->policy = s && *s ? xstrdup(s) : NULL;
	k->postponed = (int)json_integer_value(json_object_get(o, "postponed"));
	k->created_ms = json_integer_value(json_object_get(o, "createdMs"));
	json_decref(o);
}

int janitor_postponed_count(const struct kube_pod *pod)
{
	const char *s = kube_pod_annotation(pod, JANITOR_ANN_POSTPONED);
	int v = 0;

	if (!s || !*s || strlen(s) > 4)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		v = v * 10 + (*s - '0');
	}
	return v;
}

char *janitor_keep_blocks(struct janitor *j, const char *text, const struct store_notice *m,
			  size_t n)
{
	const char *secret = j->cfg->slack.signing_secret;
	json_t *blocks, *actions = NULL;
	size_t buttons = 0;
	char *out;

	if (!secret || !*secret || !j->opts.slack || slack_webhook_mode(j->opts.slack) || !n ||
	    !text || !*text || strcmp(m[0].kind, "notice") || m[0].thread_ts)
		return NULL;
	blocks = json_array();
	add_sections(blocks, text);
	for (size_t i = 0; i < n && json_array_size(blocks) < 50; i++) {
		struct line_keep k;
		struct postpone_policy p;
		int64_t base = m[i].expires_ms > janitor_now(j) ? m[i].expires_ms : janitor_now(j);
		int64_t next;
		char when[JANITOR_TIME_LEN], *value;
		struct buf label = BUF_INIT;

		line_keep(&m[i], &k);
		p = policy_of(j, k.policy);
		free(k.policy);
		/* As postpone_decide() would answer a click now: no button it would refuse. */
		if (!p.max || k.postponed < 0 || (unsigned)k.postponed >= p.max)
			continue;
		next = base > INT64_MAX - p.by_ms ? INT64_MAX : base + p.by_ms;
		if (p.max_lifetime_ms > 0 && k.created_ms > 0 &&
		    k.created_ms <= INT64_MAX - p.max_lifetime_ms &&
		    next > k.created_ms + p.max_lifetime_ms)
			next = k.created_ms + p.max_lifetime_ms;
		next -= ((next % 1000) + 1000) % 1000;
		if ((m[i].expires_ms && next <= m[i].expires_ms) ||
		    janitor_format_time(next, when) != ERR_OK)
			continue;
		when[16] = '\0';  /* "YYYY-MM-DDTHH:MM" */
		when[10] = ' ';
		if (n > 1)
			(void)buf_printf(&label, "Keep %s until %s UTC", m[i].pod, when);
		else
			(void)buf_printf(&label, "Keep until %s UTC", when);
		if (label.len > BUTTON_TEXT_MAX)
			buf_truncate(&label, utf8_cut(label.data, label.len, BUTTON_TEXT_MAX));
		if (buttons % ACTIONS_MAX == 0) {
			actions = json_pack("{s:s, s:[]}", "type", "actions", "elements");
			json_array_append_new(blocks, actions);
		}
		value = slack_button_value(m[i].namespace, m[i].pod, m[i].uid, m[i].id);
		json_array_append_new(json_object_get(actions, "elements"),
				      json_pack("{s:s, s:s, s:{s:s, s:s}, s:s}", "type", "button",
						"action_id", SLACK_ACTION_POSTPONE, "text", "type",
						"plain_text", "text", buf_str(&label), "value",
						value));
		free(value);
		buf_release(&label);
		buttons++;
	}
	out = buttons ? json_dumps(blocks, JSON_COMPACT) : NULL;
	json_decref(blocks);
	return out;
}

/* ---- a click ---- */

struct click_work {
	struct store_event ev;
	struct slack_click c;
	struct kube_pod pod;
	struct janitor_kv *kv;
	struct janitor_patch patch;
	struct postpone_plan plan;
	struct postpone_policy policy;
	int64_t now_ms;
};

static void count(struct janitor *j, const char *reason)
{
	const char *v[] = { strcmp(reason, "done") ? "refused" : "done", reason };

	metric_add(j->m_postpones, v, 1);
}

/* Append "`ns/pod`" to b, escaped for Slack (a name too long for b is cut: a text, not data). */
static void pod_ref(struct buf *b, const struct slack_click *c)
{
	if (buf_adds(b, "`") || slack_escape(c->ns, b) || buf_adds(b, "/") ||
	    slack_escape(c->pod, b) || buf_adds(b, "`"))
		return;
}

static void fmt_time(int64_t ms, char out[JANITOR_TIME_LEN])
{
	if (janitor_format_time(ms, out) != ERR_OK)
		(void)snprintf(out, JANITOR_TIME_LEN, "?");
}

/* Tell the clicker alone why nothing changed (response_url), count and log it. */
static void refuse(struct janitor *j, struct click_work *w, const char *reason, const char *text)
{
	struct buf err = BUF_INIT;
	struct log_line *l = log_begin(LOG_INFO, "postpone refused");

	log_str(l, "reason", reason);
	log_str(l, "user", w->c.user);
	log_str(l, "namespace", w->c.ns);
	log_str(l, "pod", w->c.pod);
	log_end(l);
	count(j, reason);
	if (!*w->c.response_url || !j->opts.slack)
		goto out;
	if (slack_respond(j->opts.slack, w->c.response_url, text, &err) != ERR_OK)
		log_msg(LOG_WARN, "cannot answer a slack click", "error", buf_str(&err));
out:
	buf_release(&err);
}

/* Non-zero when value names Slack user `user` (an ID, or an e-mail Slack maps to it). */
static int names_user(struct janitor *j, const char *value, const char *user)
{
	char id[SLACK_ID_MAX];
	struct buf err = BUF_INIT;
	int r;

	if (!value || !*value)
		return 0;
	r = slack_user_id(j->opts.slack, value, id, &err) == ERR_OK && !strcmp(id, user);
	buf_release(&err);
	return r;
}

/*
 * The owner check: the clicker is the user the notice was addressed to
 * (its janitor/notify or owner label value, as queued), or the one the pod's
 * janitor/notify or owner label names now.
 */
static int is_owner(struct janitor *j, struct click_work *w)
{
	struct store_notice n = { 0 };
	int r = 0;

	if (store_notice_latest(j->opts.store, w->pod.uid, "notice", &n) == ERR_OK)
		r = names_user(j, n.notify, w->c.user) || names_user(j, n.owner, w->c.user);
	store_notice_release(&n);
	return r || names_user(j, kube_pod_annotation(&w->pod, JANITOR_ANN_NOTIFY), w->c.user) ||
	       names_user(j, janitor_owner_value(j, &w->pod), w->c.user);
}

/* The message's blocks without the clicked button, and a line saying who kept what. */
static char *updated_blocks(const struct click_work *w, const char *line)
{
	json_t *blocks = json_loads(w->c.message_blocks, 0, NULL), *b, *el;
	char *value = slack_button_value(w->c.ns, w->c.pod, w->c.uid, w->c.notice), *out;
	size_t i, k;

	if (!json_is_array(blocks)) {
		json_decref(blocks);
		blocks = json_array();
	}
	json_array_foreach(blocks, i, b) {
		json_t *els = json_object_get(b, "elements");

		for (k = json_array_size(els); k-- > 0;) {
			el = json_array_get(els, k);
			if (json_is_string(json_object_get(el, "value")) &&
			    !strcmp(json_string_value(json_object_get(el, "value")), value))
				json_array_remove(els, k);
		}
	}
	for (i = json_array_size(blocks); i-- > 0;) {
		b = json_array_get(blocks, i);
		if (json_is_array(json_object_get(b, "elements")) &&
		    !json_array_size(json_object_get(b, "elements")))
			json_array_remove(blocks, i);
	}
	if (json_array_size(blocks) < 50)
		add_section(blocks, line, strlen(line));
	out = json_dumps(blocks, JSON_COMPACT);
	json_decref(blocks);
	free(value);
	return out;
}

/* Tell: the message updated, a reply in its thread, an Event on the pod. */
static void announce(struct janitor *j, struct click_work *w)
{
	char until[JANITOR_TIME_LEN];
	struct buf line = BUF_INIT, text = BUF_INIT, ev = BUF_INIT, err = BUF_INIT;
	char *blocks;

	fmt_time(w->plan.new_expires_ms, until);
	(void)buf_printf(&line, ":white_check_mark: <@%s> kept pod ", w->c.user);
	pod_ref(&line, &w->c);
	(void)buf_printf(&line, " until %s (%u of %u).", until, w->plan.count + 1,
			 w->policy.max);
	(void)buf_adds(&text, w->c.message_text);
	while (text.len && text.data[text.len - 1] == '\n')
		buf_truncate(&text, text.len - 1);
	(void)buf_printf(&text, "\n\n%s", buf_str(&line));
	blocks = updated_blocks(w, buf_str(&line));
	if (slack_update(j->opts.slack, w->c.channel, w->c.message_ts, buf_str(&text), blocks,
			 &err) != ERR_OK)
		log_msg(LOG_WARN, "cannot update the notice after a postpone", "error",
			buf_str(&err));
	buf_reset(&err);
	if (slack_post(j->opts.slack, w->c.channel, buf_str(&line), w->c.message_ts, NULL, &err) !=
	    ERR_OK)
		log_msg(LOG_WARN, "cannot reply to the notice after a postpone", "error",
			buf_str(&err));
	(void)buf_printf(&ev, "kept until %s by Slack user %s (%s), postpone %u of %u", until,
			 w->c.user, w->c.user_name, w->plan.count + 1, w->policy.max);
	janitor_event(j, &w->pod, "Normal", JANITOR_EV_POSTPONED, buf_str(&ev));
	free(blocks);
	buf_release(&line);
	buf_release(&text);
	buf_release(&ev);
	buf_release(&err);
}

/* The refusal's text for the clicker. */
static void refuse_plan(struct janitor *j, struct click_work *w)
{
	struct buf t = BUF_INIT;
	char at[JANITOR_TIME_LEN];

	fmt_time(w->plan.old_expires_ms, at);
	(void)buf_adds(&t, "Pod ");
	pod_ref(&t, &w->c);
	(void)buf_adds(&t, " ");
	switch (w->plan.why) {
	case POSTPONE_LIMIT:
		(void)buf_printf(&t, "was kept %u times already, the most its policy allows: it "
				 "still goes at %s. Nothing changed.", w->plan.count, at);
		break;
	case POSTPONE_LIFETIME:
		(void)buf_printf(&t, "cannot be kept past its maximum lifetime: it goes at %s. "
				 "Nothing changed.", at);
		break;
	case POSTPONE_EXEMPT:
		(void)buf_adds(&t, "is exempt or kept forever: nothing to postpone.");
		break;
	case POSTPONE_NO_EXPIRY:
		(void)buf_adds(&t, "has no janitor/expires to move. Nothing changed.");
		break;
	default:
		(void)buf_adds(&t, "has janitor annotations that cannot be read. Nothing changed.");
		break;
	}
	refuse(j, w, postpone_why_str(w->plan.why), buf_str(&t));
	buf_release(&t);
}

/* "Pod `ns/pod` " + what, into a refusal. */
static void refuse_pod(struct janitor *j, struct click_work *w, const char *reason,
		       const char *what)
{
	struct buf t = BUF_INIT;

	(void)buf_adds(&t, "Pod ");
	pod_ref(&t, &w->c);
	(void)buf_printf(&t, " %s", what);
	refuse(j, w, reason, buf_str(&t));
	buf_release(&t);
}

/*
 * Apply one click.  ERR_OK: handled (done or refused, answered);
 * ERR_RETRY and the like: Kubernetes failed, the event is retried.
 */
static enum err apply(struct janitor *j, struct click_work *w, struct buf *errmsg)
{
	struct buf key = BUF_INIT;
	int fresh = 0;
	enum err rc;

	if (j->dry_run) {
		refuse(j, w, "dry-run", "alertbridge's janitor runs in dry-run: nothing changed.");
		return ERR_OK;
	}
	rc = kube_pod_get(j->opts.kube, w->c.ns, w->c.pod, &w->pod, errmsg);
	if (rc == ERR_NOTFOUND || (rc == ERR_OK && w->pod.deletion_ms)) {
		refuse_pod(j, w, "gone", "is gone: there is nothing to keep.");
		return ERR_OK;
	}
	if (rc)
		return rc;
	if (!w->pod.uid || strcmp(w->pod.uid, w->c.uid)) {
		refuse_pod(j, w, "uid-changed", "is another pod now (its uid changed): the notice "
			   "was about one that is gone. Nothing changed.");
		return ERR_OK;
	}
	if (!is_owner(j, w)) {
		refuse_pod(j, w, "not-owner", "can be kept only by its owner, the person the "
			   "notice was addressed to. Nothing changed.");
		return ERR_OK;
	}
	/* One postpone per notice: a second click of its button changes nothing. */
	(void)buf_printf(&key, "postpone:%s:%lld", w->c.uid, (long long)w->c.notice);
	rc = store_delivery_take(j->opts.store, buf_str(&key), w->now_ms,
				 j->opts.cfg->database_retention_ms, &fresh);
	if (rc != ERR_OK) {
		buf_setf(errmsg, "store: cannot take the click");
		rc = ERR_RETRY;
		goto out;
	}
	w->kv = janitor_pod_kv(&w->pod);
	w->policy = policy_of(j, kube_pod_annotation(&w->pod, JANITOR_ANN_REASON));
	postpone_decide(w->kv, w->pod.nannotations, w->pod.creation_ms, w->now_ms, &w->policy,
			&w->plan, &w->patch);
	if (!fresh) {
		char at[JANITOR_TIME_LEN];
		struct buf t = BUF_INIT;

		fmt_time(w->plan.old_expires_ms, at);
		(void)buf_printf(&t, "was kept already with this button: it now goes at %s. "
				 "Nothing changed.", at);
		refuse_pod(j, w, "already", buf_str(&t));
		buf_release(&t);
		goto out;
	}
	if (w->plan.why == POSTPONE_OK)
		rc = janitor_apply_patch(j, w->c.ns, w->c.pod, w->pod.uid, w->pod.resource_version,
					 &w->patch, "postpone", errmsg);
	/* Not applied: the button stays usable (a retry after a 409 reads the pod again). */
	if ((w->plan.why != POSTPONE_OK || rc != ERR_OK) &&
	    store_delivery_drop(j->opts.store, buf_str(&key)) != ERR_OK)
		log_msg(LOG_ERROR, "cannot forget a postpone not applied", "pod", w->c.pod);
	if (w->plan.why != POSTPONE_OK) {
		refuse_plan(j, w);
	} else if (rc == ERR_OK) {
		struct log_line *l = log_begin(LOG_INFO, "pod postponed");

		log_str(l, "namespace", w->c.ns);
		log_str(l, "pod", w->c.pod);
		log_str(l, "user", w->c.user);
		log_int(l, "expires_ms", w->plan.new_expires_ms);
		log_int(l, "postponed", w->plan.count + 1);
		log_end(l);
		count(j, "done");
		janitor_expiry_gauge(j, w->c.ns, w->c.pod, w->plan.new_expires_ms);
		announce(j, w);
	}
out:
	buf_release(&key);
	return rc;
}

int janitor_postpone_step(struct janitor *j)
{
	struct click_work w;
	struct buf errmsg = BUF_INIT;
	enum err rc, src;

	memset(&w, 0, sizeof(w));
	w.now_ms = janitor_now(j);
	if (!janitor_leading(j))
		return 0;
	rc = store_next_event(j->opts.store, JANITOR_POSTPONE_QUEUE, w.now_ms, &w.ev);
	if (rc == ERR_NOTFOUND)
		return 0;
	if (rc)
		return -1;
	if (slack_click_from_json(w.ev.payload, &w.c) != ERR_OK) {
		src = store_event_dead(j->opts.store, w.ev.id, "not a slack click");
		goto out;
	}
	rc = apply(j, &w, &errmsg);
	if (rc == ERR_OK || rc == ERR_INVALID) {
		if (rc == ERR_INVALID)
			log_msg(LOG_ERROR, "postpone failed", "error", buf_str(&errmsg));
		src = rc == ERR_OK ? store_event_done(j->opts.store, w.ev.id, NULL, NULL)
				   : store_event_dead(j->opts.store, w.ev.id, buf_str(&errmsg));
	} else {
		/* A conflict (the pod changed since the GET) or an outage: read it again later. */
		int64_t next = w.now_ms + janitor_backoff(j, w.ev.attempts);
		struct log_line *l = log_begin(LOG_WARN, "postpone failed, will retry");

		log_err(l, rc);
		log_str(l, "detail", buf_str(&errmsg));
		log_str(l, "key", w.ev.key);
		log_end(l);
		src = store_event_retry(j->opts.store, w.ev.id, next, buf_str(&errmsg));
	}
out:
	store_event_release(&w.ev);
	slack_click_release(&w.c);
	kube_pod_release(&w.pod);
	free(w.kv);
	janitor_patch_release(&w.patch);
	buf_release(&errmsg);
	return src == ERR_OK ? 1 : -1;
}
