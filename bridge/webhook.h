/*
 * webhook.h - the bridge's intake: POST /v1/webhook from Alertmanager.
 *
 * Authenticates the request (core/auth.h), parses the version-4 payload
 * (bridge/am.h), routes it to a configured receiver and repository, and
 * queues one event per alert (or one per group) in the store's durable inbox
 * (store/store_events.h, group commit).  The answer follows DESIGN.md "HTTP answers
 * to Alertmanager": Alertmanager retries only 5xx, so every 4xx means
 * "this request can never succeed", and 200 means "committed".
 */
#ifndef AB_WEBHOOK_H
#define AB_WEBHOOK_H

#include <stdint.h>

#include "core/am.h"
#include "core/auth.h"
#include "core/config.h"
#include "core/http_server.h"
#include "core/intake.h"
#include "core/metrics.h"
#include "core/reload.h"
#include "store/store.h"

struct webhook;

/* The label with which an alert chooses its own repository. */
#define WEBHOOK_REPO_LABEL "alertbridge_repo"
/* Seconds sent in Retry-After with a 503. */
#define WEBHOOK_RETRY_AFTER_S INTAKE_RETRY_AFTER_S
/* Slots of the cache of recent bodies, and the most events of a body it keeps. */
#define WEBHOOK_CACHE_SLOTS 256
#define WEBHOOK_CACHE_MAX_EVENTS 128
/* Default of webhook_options.max_events_bytes. */
#define WEBHOOK_MAX_EVENTS_BYTES ((size_t)64 << 20)

struct webhook_options {
	const struct config *cfg;  /* receivers; required, must outlive the webhook */
	struct store *store;       /* required, must outlive the webhook */
	struct metrics *metrics;   /* NULL: no metrics */
	const struct auth *auth;   /* NULL (or AUTH_NONE): no authentication */
	/*
	 * The reloadable config (core/reload.h), or NULL: cfg and auth for good.
	 * Else each request takes the current generation's receivers and
	 * webhook credentials, and holds them until it is answered.
	 */
	struct reload *reload;
	struct am_options limits;  /* passed to am_parse(); zero fields take its defaults */
	/*
	 * Most bytes of event documents one request may queue (each alert's
	 * document repeats the group context, so N alerts can expand a body N
	 * times); past it the answer is 413.  0: WEBHOOK_MAX_EVENTS_BYTES.
	 */
	size_t max_events_bytes;
	/* The clock for received_at_ms, in ms since the epoch; NULL: CLOCK_REALTIME. */
	int64_t (*now_ms)(void *now_ctx);
	void *now_ctx;
};

/*
 * A new intake; opts is copied (not what it points to).  Never NULL (cfg
 * and store must be set: a bug otherwise).  opts->limits.keep_invalid_alerts
 * is always set (invalid alerts are dead-lettered, see below).  When
 * opts->metrics is set it registers there:
 *   alertbridge_webhook_requests_total{receiver,code}   counter, every answer
 *   alertbridge_webhook_alerts_total{receiver,status}   counter, alerts committed
 *   alertbridge_webhook_alerts_invalid_total{receiver,reason}  counter, alerts
 *       dead-lettered at intake; reason is am_alert.invalid_reason (the
 *       alert's member that failed, or "alertbridge_repo")
 *   alertbridge_webhook_duration_seconds                histogram, handler time
 *   alertbridge_webhook_alerts_repeated_total{receiver}  counter, repeats
 *   alertbridge_webhook_cache_hits_total{receiver}      counter, cache answers
 *   alertbridge_webhook_alerts_truncated_total{receiver}  counter, the
 *       truncatedAlerts of the requests answered 200 (Alertmanager's max_alerts)
 * The receiver label is a configured receiver's name - the one the request
 * named (?receiver=, else the payload's receiver, also in a 400 when the
 * body names it) - or "" when it names none that is configured (so label
 * values stay bounded whatever clients send).  Every series of each
 * configured receiver whose labels are known in advance (the codes 200,
 * 400, 413, 503; firing, resolved; the reasons of invalid alerts) and
 * those of "" (400, 401, 404, 413, 415) exist at 0 from the start and from
 * the first request of each new config generation (metric_declare()).
 */
struct webhook *webhook_new(const struct webhook_options *opts);

/* Free w; w may be NULL.  No webhook_handle() may be running. */
void webhook_free(struct webhook *w);

/*
 * The srv_handler for srv_route(s, "POST", "/v1/webhook", webhook_handle, w);
 * ctx is the struct webhook.  Thread-safe: every call owns what it allocates.
 * Every answer is application/json.  In order:
 *
 * 401 {"error":"unauthorized"} with WWW-Authenticate (auth_challenge()) when
 *     auth_check() fails on the Authorization header.
 * 415 {"error":"unsupported Content-Type: want application/json"} unless the
 *     Content-Type is application/json, case-insensitive, parameters such as
 *     "; charset=utf-8" allowed.  (A body over max_body_bytes gets the server's
 *     413 before the handler runs; webhook_rejected() counts it.)
 * 400 {"error": <am_error.message>, "field": <am_error.field>} when am_parse()
 *     rejects the body: not JSON, or its envelope is not a version-4 payload
 *     (the group's fields, "alerts" not an array of 1..max_alerts objects);
 *     "field" is left out when empty.
 * 404 {"error":"unknown receiver \"x\"","receiver":"x"} when no receiver of
 *     the config is named x: the query's ?receiver= when given and non-empty,
 *     else the payload's receiver with regexp.QuoteMeta undone.
 * 400 {"error":"query parameter repo: <why>"} when ?repo= is not
 *     "owner/name" (issue_repo_valid()).
 * 413 {"error":"events of this payload exceed N bytes"} when the queued
 *     documents would pass max_events_bytes.
 * 503 {"error":"store unavailable: <store_enqueue's message>"} with
 *     Retry-After: 5 when the store cannot commit (ERR_DB); 500
 *     {"error":"internal error: ..."} for any other store error (a bug).
 * 200 {"status":"ok","receiver":"<name>","alerts":N[,"invalid":K]} once
 *     store_enqueue() committed, N being the number of alerts in the
 *     payload, K (left out when 0) how many of them were dead-lettered.
 *
 * Invalid alerts (DESIGN.md: Alertmanager re-sends a 4xx'd group forever, so
 * one bad alert must not lose the others): an alert with a problem inside it
 * (am_options.keep_invalid_alerts: a label or annotation over its limit, a
 * bad time, status or fingerprint) or whose alertbridge_repo label is not
 * "owner/name" is queued as a dead letter (intake_dead_events(): key its
 * fingerprint, reason "invalid alert: <field>: <message>") in the same
 * commit as the valid alerts' events, and counted in
 * alertbridge_webhook_alerts_invalid_total; `alertbridge map list` shows it.
 * The valid alerts are queued as if the invalid ones were not there; with
 * none left only the dead letters are stored.  The repository of an alert
 * is its label alertbridge_repo, else ?repo=, else the receiver's repo; an
 * empty value counts as absent (as an empty Prometheus label does).
 *
 * Nothing of a rejected request is stored.  Queued events (all with kind
 * "bridge", the receiver's configured name and received_at_ms = now):
 *
 * issue_per: alert - one event per valid alert, in payload order: key = the alert's
 *   fingerprint, status, starts_at_ms and ends_at_ms = the alert's; payload =
 *   am_event_json() of the alert with one more member, "repo" (the resolved
 *   repository), appended last (the document is extended, not re-parsed).
 * issue_per: group - one event for the valid alerts of the payload: key =
 *   issue_group_key_hash(groupKey), status = the group's status, starts_at_ms =
 *   the earliest startsAt of its alerts, ends_at_ms = the latest endsAt when
 *   the group is resolved (else 0), payload = am_group_event_json(): the
 *   document of the FIRST valid alert (which carries the group context: groupKey,
 *   groupLabels, commonLabels, commonAnnotations, externalURL) with every valid
 *   alert's state in "members", plus "repo", resolved from that first
 *   alert's label.  The first alert stands for the group because Alertmanager
 *   sorts a group's alerts by their labels before sending (dispatch: a stable
 *   sort of types.AlertSlice), so it stays the same while the group's members
 *   do.  The bridge decides the group's episodes from the members' states
 *   (bridge/group.h), not from starts_at_ms.
 *
 * Entries of groupLabels, commonLabels or commonAnnotations over the
 * limits of am_options are left out (am_payload.n_dropped): Alertmanager
 * derives them from the alerts, so the alert that carries the long value
 * is dead-lettered and the group goes on.  truncatedAlerts (the alerts
 * Alertmanager left out for its webhook_config max_alerts) stays in each
 * event document, for the text.
 *
 * Logs one line per request: "webhook request" at debug when accepted
 * (code, receiver, alerts, events, invalid, duration_ms) - with invalid
 * alerts also "webhook alerts dead-lettered" at warn (receiver, invalid,
 * alerts, and key, field and error of the first), with derived entries
 * left out "webhook group fields left out" at warn (receiver, dropped,
 * field and error of the first, group_key), with truncatedAlerts > 0
 * "webhook alerts truncated by alertmanager" at info (receiver, truncated,
 * alerts, hint) - else "webhook rejected" at
 * warn (error for 5xx) with code, reason, receiver (as asked, at most 128
 * bytes), field, error, remote address and duration_ms; never the body or
 * credentials.
 */
void webhook_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

/*
 * The srv_rejected hook of the same route (srv_route_rejected(s,
 * "/v1/webhook", webhook_rejected, w)): counts a request the server
 * answered itself (413, a body over webhook.max_body_bytes) in
 * alertbridge_webhook_requests_total{receiver,code}, receiver being the
 * one ?receiver= names when it is configured, else "" (the body, which
 * names it otherwise, is never read).  The server logs the request.
 */
void webhook_rejected(void *ctx, const struct srv_request *req, int status);

#endif
