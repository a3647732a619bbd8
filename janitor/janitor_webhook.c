/*
 * janitor_webhook.c - POST /v1/janitor/webhook: authenticate, parse, check
 * that each alert names a pod, queue one "janitor" event per valid alert and
 * a dead letter per invalid one (group commit), answer.  The checks and
 * answers are the bridge's (core/intake.h).
 */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/intake.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "janitor/janitor.h"
#include "janitor/kube.h"
#include "core/clock.h"
#include "store/store_events.h"
#include "core/banned.h"

#define DEFAULT_MAX_EVENTS_BYTES ((size_t)64 << 20)

struct janitor_webhook {
	struct janitor_webhook_options o;
	struct metric *requests;  /* {code} */
	struct metric *invalid;   /* {reason} */
};

/* One request, from the first check to the answer. */
struct request {
	const struct srv_request *req;
	const struct auth *auth;  /* the credentials of this request (options.reload) */
	struct am_payload *p;
	struct intake_verdict v; /* the HTTP status answered; a rejection's reason */
	char field[128];
	struct buf docs;        /* event documents, NUL-separated */
	struct buf keys;        /* "namespace/pod" keys, NUL-separated */
	struct buf dead_docs;   /* documents and reasons of the dead letters */
	struct store_event *evs;  /* the valid alerts' events, then the dead letters */
};

struct janitor_webhook *janitor_webhook_new(const struct janitor_webhook_options *opts)
{
	static const char *const code[] = { "code", NULL };
	static const char *const reason[] = { "reason", NULL };
	struct janitor_webhook *w;

	assert(opts && opts->store);
	w = xcalloc(1, sizeof(*w));
	w->o = *opts;
	w->o.limits.keep_invalid_alerts = 1;
	if (!w->o.max_events_bytes)
		w->o.max_events_bytes = DEFAULT_MAX_EVENTS_BYTES;
	if (opts->metrics) {
		w->requests = metrics_counter(opts->metrics,
					      "alertbridge_janitor_webhook_requests_total",
					      "Janitor webhook requests answered, by code.", code);
		w->invalid = metrics_counter(opts->metrics,
					     "alertbridge_janitor_webhook_alerts_invalid_total",
					     "Janitor alerts dead-lettered at intake as invalid, by "
					     "reason (the label or member that failed).", reason);
	}
	return w;
}

void janitor_webhook_free(struct janitor_webhook *w)
{
	free(w);
}

static int64_t now_ms(const struct janitor_webhook *w)
{
	if (w->o.now_ms)
		return w->o.now_ms(w->o.now_ctx);
	return clock_wall_ms();
}

/*
 * Every alert names its pod: labels namespace and pod, valid Kubernetes
 * names.  One that does not is made invalid (a dead letter), not the request.
 */
static void check_pods(struct request *r)
{
	static const char *const need[] = { "namespace", "pod" };
	char field[128];

	for (size_t i = 0; i < r->p->n_alerts; i++) {
		for (size_t k = 0; k < 2; k++) {
			const char *v = am_labels_get(&r->p->alerts[i].labels, need[k]);

			if (v && *v && (k ? kube_name_valid(v) : kube_namespace_valid(v)))
				continue;
			snprintf(field, sizeof(field), "alerts[%zu].labels.%s",
				 r->p->alerts[i].index, need[k]);
			if (v && *v)
				am_alert_invalidate(r->p, i, need[k], field,
						    "label %s is not a valid Kubernetes %s name",
						    need[k], k ? "pod" : "namespace");
			else
				am_alert_invalidate(r->p, i, need[k], field,
						    "the janitor needs the label %s", need[k]);
			break;
		}
	}
	am_payload_sort_invalid(r->p);
}

/* Documents and keys of every alert, then the events pointing into them. */
static enum err build_events(struct janitor_webhook *w, struct request *r)
{
	const struct am_payload *p = r->p;
	const char *doc, *key;
	int64_t received = now_ms(w);

	for (size_t i = 0; i < p->n_alerts; i++) {
		const struct am_labels *l = &p->alerts[i].labels;
		enum err rc = am_event_json(p, i, &r->docs);

		if (rc == ERR_OK)
			rc = buf_add(&r->docs, "", 1);
		if (rc != ERR_OK)
			return rc;
		(void)buf_printf(&r->keys, "%s/%s", am_labels_get(l, "namespace"),
				 am_labels_get(l, "pod"));
		(void)buf_add(&r->keys, "", 1);
	}
	r->evs = xcalloc(p->n_alerts + p->n_invalid, sizeof(*r->evs));
	if (intake_dead_events(p, JANITOR_QUEUE, p->receiver_name, received, &r->dead_docs,
			       r->evs + p->n_alerts) != ERR_OK)
		return ERR_TOOBIG;
	doc = r->docs.data;
	key = r->keys.data;
	for (size_t i = 0; i < p->n_alerts; i++) {
		struct store_event *ev = &r->evs[i];
		const struct am_alert *a = &p->alerts[i];

		ev->kind = (char *)JANITOR_QUEUE;
		ev->receiver = p->receiver_name;
		ev->key = key;
		ev->status = a->status;
		ev->starts_at_ms = a->starts_at_ms;
		ev->ends_at_ms = a->ends_at_ms;
		ev->payload = doc;
		ev->received_at_ms = received;
		doc += strlen(doc) + 1;
		key += strlen(key) + 1;
	}
	return ERR_OK;
}

static int intake(struct janitor_webhook *w, struct request *r)
{
	const struct srv_request *req = r->req;
	struct buf detail = BUF_INIT;
	struct am_error aerr;
	enum err rc;

	if (intake_admit(&r->v, r->auth, req))
		return r->v.status;
	if (am_parse(req->body, req->body_len, &w->o.limits, &r->p, &aerr) != ERR_OK) {
		snprintf(r->field, sizeof(r->field), "%s", aerr.field);
		return intake_reject(&r->v, 400, "invalid payload", "%s", aerr.message);
	}
	check_pods(r);
	buf_init(&r->docs, w->o.max_events_bytes);
	buf_init(&r->dead_docs, w->o.max_events_bytes);
	if (build_events(w, r) != ERR_OK)
		return intake_reject(&r->v, 413, "payload too large",
				     "events of this payload exceed %zu bytes", w->o.max_events_bytes);
	rc = store_enqueue(w->o.store, r->evs, r->p->n_alerts + r->p->n_invalid, &detail);
	if (rc == ERR_DB)
		intake_reject(&r->v, 503, "store unavailable", "store unavailable: %s",
			      buf_str(&detail));
	else if (rc != ERR_OK)
		intake_reject(&r->v, 500, "internal error", "internal error: %s", buf_str(&detail));
	else
		r->v.status = 200;
	buf_release(&detail);
	return r->v.status;
}

static void answer(struct request *r, struct srv_response *res)
{
	struct buf *b = &res->body;

	if (r->v.status != 200) {
		intake_error(res, r->v.status, r->auth, buf_str(&r->v.msg), r->field);
		return;
	}
	res->status = 200;
	res->content_type = "application/json";
	(void)buf_adds(b, "{\"status\":\"ok\",\"receiver\":");
	intake_json_quote(b, r->p->receiver_name);
	(void)buf_printf(b, ",\"alerts\":%zu", r->p->n_alerts + r->p->n_invalid);
	if (r->p->n_invalid)
		(void)buf_printf(b, ",\"invalid\":%zu", r->p->n_invalid);
	(void)buf_addch(b, '}');
}

static void log_request(const struct request *r, int64_t duration_us)
{
	struct log_line *l;

	if (r->v.status == 200 && r->p->n_invalid) {
		const struct am_alert *first = &r->p->alerts[r->p->n_alerts];

		/* One line per request, however many alerts: the first reason, and the count. */
		l = log_begin(LOG_WARN, "janitor webhook alerts dead-lettered");
		log_str(l, "receiver", r->p->receiver_name);
		log_int(l, "invalid", (int64_t)r->p->n_invalid);
		log_int(l, "alerts", (int64_t)(r->p->n_alerts + r->p->n_invalid));
		log_str(l, "field", first->invalid->field);
		log_str(l, "error", first->invalid->message);
		log_str(l, "remote", srv_remote_addr(r->req));
		log_end(l);
	}
	if (r->v.status != 200) {
		l = log_begin(r->v.status >= 500 ? LOG_ERROR : LOG_WARN,
			      "janitor webhook rejected");
		log_int(l, "code", r->v.status);
		log_str(l, "reason", r->v.reason);
		intake_log_rejected(l, &r->v, r->field, r->req, duration_us);
		return;
	}
	l = log_begin(LOG_DEBUG, "janitor webhook request");
	log_int(l, "code", r->v.status);
	log_str(l, "receiver", r->p->receiver_name);
	log_int(l, "alerts", (int64_t)(r->p->n_alerts + r->p->n_invalid));
	log_int(l, "invalid", (int64_t)r->p->n_invalid);
	log_fmt(l, "duration_ms", "%.3f", (double)duration_us / 1000.0);
	log_end(l);
}

void janitor_webhook_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct janitor_webhook *w = ctx;
	struct request r;
	int64_t start_us = clock_mono_us();
	char code[8];
	const char *labels[] = { code };
	const struct reload_gen *g = reload_acquire(w->o.reload);

	memset(&r, 0, sizeof(r));
	r.req = req;
	r.auth = g ? g->auth : w->o.auth;
	(void)intake(w, &r);
	answer(&r, res);
	reload_release(w->o.reload, g);
	snprintf(code, sizeof(code), "%d", r.v.status);
	metric_add(w->requests, labels, 1);
	for (size_t i = 0; r.v.status == 200 && i < r.p->n_invalid; i++) {
		const char *reason[] = { r.p->alerts[r.p->n_alerts + i].invalid_reason };

		metric_add(w->invalid, reason, 1);
	}
	log_request(&r, clock_mono_us() - start_us);
	am_payload_free(r.p);
	buf_release(&r.v.msg);
	buf_release(&r.docs);
	buf_release(&r.dead_docs);
	buf_release(&r.keys);
	free(r.evs);
}
