/*
 * intake.h - what the two webhook intakes (bridge/webhook.c for
 * POST /v1/webhook, janitor/janitor_webhook.c for POST /v1/janitor/webhook)
 * answer alike: the Content-Type check, JSON error bodies, the 401 with its
 * challenge and the 503 with Retry-After (DESIGN.md "HTTP answers to
 * Alertmanager": Alertmanager retries only 5xx), and the dead letters of the
 * invalid alerts of a payload that is otherwise accepted.
 */
#ifndef AB_INTAKE_H
#define AB_INTAKE_H

#include <stdint.h>

#include "am.h"
#include "auth.h"
#include "buf.h"
#include "http_server.h"
#include "log.h"
#include "metrics.h"
#include "store/store_events.h"

/* Seconds sent in Retry-After with a 503. */
#define INTAKE_RETRY_AFTER_S 5

/*
 * How an intake answers one request: status, the HTTP status (0 until
 * decided); for a rejection reason, a short static text for the log line,
 * and msg, the error text (the caller buf_release()s it).  Zeroed to start.
 */
struct intake_verdict {
	int status;
	const char *reason;
	struct buf msg;
};

/* Reject: v's status and reason set, msg replaced by fmt's text; returns status. */
int intake_reject(struct intake_verdict *v, int status, const char *reason, const char *fmt, ...)
	PRINTF_LIKE(4, 5);

/*
 * The checks before the body is read: the Authorization header by
 * auth_check(a) (401, reason "unauthorized", msg its text), then the
 * Content-Type (415 unless intake_content_type_is_json()).  0 when req
 * passes both; else the status, v filled as by intake_reject().
 */
int intake_admit(struct intake_verdict *v, const struct auth *a, const struct srv_request *req);

/*
 * The answer of a signed endpoint (GitHub's webhook, Slack's interactions):
 * status counted in m (metrics_outcome_counter(): outcome "accepted" below
 * 300, else "refused", and reason; m NULL counts nothing) and res->status
 * set.  From 300 on, res is filled by intake_error(res, status, NULL, msg,
 * NULL) and 1 returned; below, 0: the caller writes the body.
 */
int intake_outcome(struct metric *m, struct srv_response *res, int status, const char *reason,
		   const char *msg);

/*
 * End l, the log line of a rejected request begun by the caller (its code,
 * reason, ...): field (left out when NULL or empty), error v->msg, remote
 * (req's peer), duration_ms from duration_us; then log_end(l).
 */
void intake_log_rejected(struct log_line *l, const struct intake_verdict *v, const char *field,
			 const struct srv_request *req, int64_t duration_us);

/*
 * Non-zero when ct is application/json, any case, optionally followed by
 * parameters such as "; charset=utf-8" (RFC 9110 8.3.1).  NULL gives 0.
 */
int intake_content_type_is_json(const char *ct);

/*
 * Append s (NULL: "") as a JSON string: codec_json_string() of s, so text
 * that is not valid UTF-8 (a query parameter can be anything) has each byte
 * >= 0x80 written as \uFFFD.  Meant for response bodies without a size limit:
 * buf errors are ignored.
 */
void intake_json_quote(struct buf *b, const char *s);

/*
 * A signed endpoint's delivery (GitHub's webhook, Slack's interactions) taken
 * once and queued: store_delivery_take() of delivery at now_ms (kept keep_ms,
 * database_retention; ms, UTC), then store_enqueue() of ev, whose kind,
 * receiver, key and payload the caller set; its status is set to "firing",
 * starts_at_ms and received_at_ms to now_ms.  Returns 1, queued; 0, taken
 * before (a redelivery: nothing queued); -1, the store failed (an enqueue
 * failure logged as "cannot queue a delivery" with what, e.g. "github
 * command", and the delivery forgotten again so that the sender's retry is
 * taken): the caller answers 503.
 */
int intake_take_once(struct store *st, const char *delivery, int64_t now_ms, int64_t keep_ms,
		     struct store_event *ev, const char *what);

/*
 * Fill res as an application/json error answer: status, body
 * {"error": msg, "field": field} ("field" left out when NULL or empty).
 * For 401 the body is {"error":"unauthorized"} whatever msg says, and
 * WWW-Authenticate is auth_challenge(a) when a has one; for 503 (the
 * intakes' answer while the store cannot commit) it is {"error":"store
 * unavailable"} and Retry-After is INTAKE_RETRY_AFTER_S; for any other 5xx
 * {"error":"internal error"}.  A server-side failure's msg (a database's URI,
 * host, port and user; a file path) is for the caller's log line, never for
 * whoever can reach the port.  Further members can be appended by the caller
 * before the closing brace with intake_error_member() instead.
 */
void intake_error(struct srv_response *res, int status, const struct auth *a, const char *msg,
		  const char *field);

/*
 * As intake_error() with one more string member name: value appended after
 * "field" (e.g. the bridge's 404 {"receiver": ...}).  name NULL adds nothing.
 */
void intake_error_member(struct srv_response *res, int status, const struct auth *a,
			 const char *msg, const char *field, const char *name, const char *value);

/*
 * The dead-lettered events of the invalid alerts of p (p->n_invalid of them,
 * behind the valid ones; see am_options.keep_invalid_alerts), written into
 * evs[0 .. p->n_invalid), which the caller allocated: kind and receiver as
 * given, key = the alert's fingerprint, its status, starts_at_ms and
 * ends_at_ms, received_at_ms, dead_reason = "invalid alert: <field>:
 * <message>", payload = {"v":1,"receiver":...,"invalid":{"field":...,
 * "error":...},"alert":<am_alert_raw_json()>}.  The strings live in docs
 * (appended to, NUL-separated), which must not change while evs is used.
 * Errors: ERR_TOOBIG when docs' max is reached (evs then unusable).
 */
enum err intake_dead_events(const struct am_payload *p, const char *kind, const char *receiver,
			    int64_t received_ms, struct buf *docs,
			    struct store_event *evs) WARN_UNUSED;

#endif
