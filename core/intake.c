/*
 * intake.c - the answers both webhook intakes share: Content-Type check,
 * JSON quoting and error bodies, 401 challenge, 503 Retry-After.
 */
#include "intake.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "codec.h"
#include "store/store_events.h"
#include "store/store_silences.h"
#include "banned.h"

int intake_reject(struct intake_verdict *v, int status, const char *reason, const char *fmt, ...)
{
	va_list ap;

	v->status = status;
	v->reason = reason;
	buf_reset(&v->msg);
	va_start(ap, fmt);
	(void)buf_vprintf(&v->msg, fmt, ap);
	va_end(ap);
	return status;
}

int intake_admit(struct intake_verdict *v, const struct auth *a, const struct srv_request *req)
{
	if (auth_check(a, srv_header(req, "Authorization"), &v->msg) != ERR_OK) {
		v->reason = "unauthorized";
		return v->status = 401;
	}
	if (!intake_content_type_is_json(srv_header(req, "Content-Type")))
		return intake_reject(v, 415, "unsupported content type",
				     "unsupported Content-Type: want application/json");
	return 0;
}

void intake_log_rejected(struct log_line *l, const struct intake_verdict *v, const char *field,
			 const struct srv_request *req, int64_t duration_us)
{
	if (field && field[0])
		log_str(l, "field", field);
	log_str(l, "error", buf_str(&v->msg));
	log_str(l, "remote", srv_remote_addr(req));
	log_fmt(l, "duration_ms", "%.3f", (double)duration_us / 1000.0);
	log_end(l);
}

int intake_outcome(struct metric *m, struct srv_response *res, int status, const char *reason,
		   const char *msg)
{
	const char *v[] = { status < 300 ? "accepted" : "refused", reason };

	metric_add(m, v, 1);
	if (status >= 300) {
		intake_error(res, status, NULL, msg, NULL);
		return 1;
	}
	res->status = status;
	return 0;
}

int intake_content_type_is_json(const char *ct)
{
	static const char want[] = "application/json";

	if (!ct)
		return 0;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	if (strncasecmp(ct, want, sizeof(want) - 1) != 0)
		return 0;
	ct += sizeof(want) - 1;
	while (*ct == ' ' || *ct == '\t')
		ct++;
	return *ct == '\0' || *ct == ';';
}

void intake_json_quote(struct buf *b, const char *s)
{
	codec_json_string(b, s, s ? strlen(s) : 0);
}

void intake_error_member(struct srv_response *res, int status, const struct auth *a,
			 const char *msg, const char *field, const char *name, const char *value)
{
	struct buf *b = &res->body;

	if (status == 401)
		msg = "unauthorized";
	else if (status == 503)
		msg = "store unavailable";
	else if (status >= 500)
		msg = "internal error";
	res->status = status;
	res->content_type = "application/json";
	(void)buf_adds(b, "{\"error\":");
	intake_json_quote(b, msg);
	if (field && *field) {
		(void)buf_adds(b, ",\"field\":");
		intake_json_quote(b, field);
	}
	if (name) {
		(void)buf_addch(b, ',');
		intake_json_quote(b, name);
		(void)buf_addch(b, ':');
		intake_json_quote(b, value);
	}
	(void)buf_addch(b, '}');
	/* Header names and values here are constants: srv_response_header cannot fail. */
	if (status == 401 && auth_challenge(a))
		(void)!srv_response_header(res, "WWW-Authenticate", auth_challenge(a));
	if (status == 503) {
		char retry[16];

		snprintf(retry, sizeof(retry), "%d", INTAKE_RETRY_AFTER_S);
		(void)!srv_response_header(res, "Retry-After", retry);
	}
}

void intake_error(struct srv_response *res, int status, const struct auth *a, const char *msg,
		  const char *field)
{
	intake_error_member(res, status, a, msg, field, NULL, NULL);
}


/* Append alert a's dead letter document and then its reason, each ended by a NUL. */
static enum err add_dead(const char *receiver, const struct am_alert *a, struct buf *docs)
{
	struct buf d = BUF_INIT;
	enum err rc;

	(void)buf_adds(&d, "{\"v\":1,\"receiver\":");
	intake_json_quote(&d, receiver);
	(void)buf_adds(&d, ",\"invalid\":{\"field\":");
	intake_json_quote(&d, a->invalid->field);
	(void)buf_adds(&d, ",\"error\":");
	intake_json_quote(&d, a->invalid->message);
	(void)buf_adds(&d, "},\"alert\":");
	rc = am_alert_raw_json(a, &d);
	(void)buf_add(&d, "}", 2);
	(void)buf_printf(&d, "invalid alert: %s: %s", a->invalid->field, a->invalid->message);
	if (rc == ERR_OK)
		rc = buf_add(docs, d.data, d.len + 1);  /* with the reason's NUL */
	buf_release(&d);
	return rc;
}

enum err intake_dead_events(const struct am_payload *p, const char *kind, const char *receiver,
			    int64_t received_ms, struct buf *docs, struct store_event *evs)
{
	const struct am_alert *bad = p->alerts + p->n_alerts;
	size_t start = docs->len;
	const char *at;

	if (!p->n_invalid)
		return ERR_OK;
	for (size_t i = 0; i < p->n_invalid; i++) {
		enum err rc = add_dead(receiver, &bad[i], docs);

		if (rc != ERR_OK)
			return rc;
	}
	/* docs no longer moves: point the events into it. */
	at = docs->data + start;
	for (size_t i = 0; i < p->n_invalid; i++) {
		struct store_event *ev = &evs[i];

		memset(ev, 0, sizeof(*ev));
		ev->kind = kind;
		ev->receiver = receiver;
		ev->key = bad[i].fingerprint;
		ev->status = bad[i].status;
		ev->starts_at_ms = bad[i].starts_at_ms;
		ev->ends_at_ms = bad[i].ends_at_ms;
		ev->received_at_ms = received_ms;
		ev->payload = at;
		at += strlen(at) + 1;
		ev->dead_reason = at;
		at += strlen(at) + 1;
	}
	return ERR_OK;
}

int intake_take_once(struct store *st, const char *delivery, int64_t now_ms, int64_t keep_ms,
		     struct store_event *ev, const char *what)
{
	struct buf err = BUF_INIT;
	int fresh = 0;

	if (store_delivery_take(st, delivery, now_ms, keep_ms, &fresh) != ERR_OK)
		return -1;
	if (!fresh)
		return 0;
	ev->status = (char *)"firing";
	ev->starts_at_ms = now_ms;
	ev->received_at_ms = now_ms;
	if (store_enqueue(st, ev, 1, &err) == ERR_OK) {
		buf_release(&err);
		return 1;
	}
	{
		struct log_line *l = log_begin(LOG_ERROR, "cannot queue a delivery");

		log_str(l, "what", what);
		log_str(l, "error", buf_str(&err));
		log_str(l, "delivery", delivery);
		log_end(l);
	}
	if (store_delivery_drop(st, delivery) != ERR_OK) {
		struct log_line *l = log_begin(LOG_ERROR, "cannot forget a delivery not queued");

		log_str(l, "what", what);
		log_str(l, "delivery", delivery);
		log_end(l);
	}
	buf_release(&err);
	return -1;
}
