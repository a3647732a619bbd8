/*
 * janitor_webhook.c - POST /v1/janitor/webhook: authenticate, parse, check
 * that each alert names a pod, queue one "janitor" event per alert (group
 * commit), answer.  The checks and answers are the bridge's (core/intake.h).
 */
#include <assert.h>
#include <stdarg.h>
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
#include "core/banned.h"

#define DEFAULT_MAX_EVENTS_BYTES ((size_t)64 << 20)

struct janitor_webhook {
	struct janitor_webhook_options o;
	struct metric *requests;  /* {code} */
};

/* One request, from the first check to the answer. */
struct request {
	const struct srv_request *req;
	struct am_payload *p;
	int status;
	const char *reason;     /* short static reason of a rejection, for the log */
	struct buf msg;         /* error text of a rejection */
	char field[128];
	struct buf docs;        /* event documents, NUL-separated */
	struct buf keys;        /* "namespace/pod" keys, NUL-separated */
	struct store_event *evs;
};

struct janitor_webhook *janitor_webhook_new(const struct janitor_webhook_options *opts)
{
	static const char *const code[] = { "code", NULL };
	struct janitor_webhook *w;

	assert(opts && opts->store);
	w = xcalloc(1, sizeof(*w));
	w->o = *opts;
	if (!w->o.max_events_bytes)
		w->o.max_events_bytes = DEFAULT_MAX_EVENTS_BYTES;
	if (opts->metrics)
		w->requests = metrics_counter(opts->metrics,
					      "alertbridge_janitor_webhook_requests_total",
					      "Janitor webhook requests answered, by code.", code);
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

static int reject(struct request *r, int status, const char *reason, const char *fmt, ...)
	PRINTF_LIKE(4, 5);

static int reject(struct request *r, int status, const char *reason, const char *fmt, ...)
{
	va_list ap;

	r->status = status;
	r->reason = reason;
	buf_reset(&r->msg);
	va_start(ap, fmt);
	(void)buf_vprintf(&r->msg, fmt, ap);
	va_end(ap);
	return status;
}

/* Every alert names its pod: labels namespace and pod, valid Kubernetes names. */
static int check_pods(struct request *r)
{
	static const char *const need[] = { "namespace", "pod" };

	for (size_t i = 0; i < r->p->n_alerts; i++) {
		for (size_t k = 0; k < 2; k++) {
			const char *v = am_labels_get(&r->p->alerts[i].labels, need[k]);

			if (v && *v && (k ? kube_name_valid(v) : kube_namespace_valid(v)))
				continue;
			snprintf(r->field, sizeof(r->field), "alerts[%zu].labels.%s", i, need[k]);
			if (v && *v)
				return reject(r, 400, "invalid pod name",
					      "label %s is not a valid Kubernetes %s name", need[k],
					      k ? "pod" : "namespace");
			return reject(r, 400, "alert without a pod", "the janitor needs the label %s",
				      need[k]);
		}
	}
	return 0;
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
	r->evs = xcalloc(p->n_alerts, sizeof(*r->evs));
	doc = r->docs.data;
	key = r->keys.data;
	for (size_t i = 0; i < p->n_alerts; i++) {
		struct store_event *ev = &r->evs[i];
		const struct am_alert *a = &p->alerts[i];

		ev->kind = (char *)JANITOR_QUEUE;
		ev->receiver = p->receiver_name;
		ev->key = (char *)key;
		ev->status = (char *)a->status;
		ev->starts_at_ms = a->starts_at_ms;
		ev->ends_at_ms = a->ends_at_ms;
		ev->payload = (char *)doc;
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

	if (auth_check(w->o.auth, srv_header(req, "Authorization"), &r->msg) != ERR_OK) {
		r->reason = "unauthorized";
		return r->status = 401;
	}
	if (!intake_content_type_is_json(srv_header(req, "Content-Type")))
		return reject(r, 415, "unsupported content type",
			      "unsupported Content-Type: want application/json");
	if (am_parse(req->body, req->body_len, &w->o.limits, &r->p, &aerr) != ERR_OK) {
		snprintf(r->field, sizeof(r->field), "%s", aerr.field);
		return reject(r, 400, "invalid payload", "%s", aerr.message);
	}
	if (check_pods(r))
		return r->status;
	buf_init(&r->docs, w->o.max_events_bytes);
	if (build_events(w, r) != ERR_OK)
		return reject(r, 413, "payload too large", "events of this payload exceed %zu bytes",
			      w->o.max_events_bytes);
	rc = store_enqueue(w->o.store, r->evs, r->p->n_alerts, &detail);
	if (rc == ERR_DB)
		reject(r, 503, "store unavailable", "store unavailable: %s", buf_str(&detail));
	else if (rc != ERR_OK)
		reject(r, 500, "internal error", "internal error: %s", buf_str(&detail));
	else
		r->status = 200;
	buf_release(&detail);
	return r->status;
}

static void answer(const struct janitor_webhook *w, struct request *r, struct srv_response *res)
{
	struct buf *b = &res->body;

	if (r->status != 200) {
		intake_error(res, r->status, w->o.auth, buf_str(&r->msg), r->field);
		return;
	}
	res->status = 200;
	res->content_type = "application/json";
	(void)buf_adds(b, "{\"status\":\"ok\",\"receiver\":");
	intake_json_quote(b, r->p->receiver_name);
	(void)buf_printf(b, ",\"alerts\":%zu}", r->p->n_alerts);
}

static void log_request(const struct request *r, int64_t duration_us)
{
	struct log_line *l;

	if (r->status == 200) {
		l = log_begin(LOG_DEBUG, "janitor webhook request");
		log_int(l, "code", r->status);
		log_str(l, "receiver", r->p->receiver_name);
		log_int(l, "alerts", (int64_t)r->p->n_alerts);
	} else {
		l = log_begin(r->status >= 500 ? LOG_ERROR : LOG_WARN, "janitor webhook rejected");
		log_int(l, "code", r->status);
		log_str(l, "reason", r->reason);
		if (r->field[0])
			log_str(l, "field", r->field);
		log_str(l, "error", buf_str(&r->msg));
		log_str(l, "remote", srv_remote_addr(r->req));
	}
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

	memset(&r, 0, sizeof(r));
	r.req = req;
	(void)intake(w, &r);
	answer(w, &r, res);
	snprintf(code, sizeof(code), "%d", r.status);
	metric_add(w->requests, labels, 1);
	log_request(&r, clock_mono_us() - start_us);
	am_payload_free(r.p);
	buf_release(&r.msg);
	buf_release(&r.docs);
	buf_release(&r.keys);
	free(r.evs);
}
