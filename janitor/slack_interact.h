/*
 * slack_interact.h - POST /v1/slack/interactions: Slack's interactivity
 * requests (docs.slack.dev/interactivity/handling-user-interaction), of which
 * the janitor takes one: a click on a notice's "Keep until ..." button
 * (block_actions, action_id "postpone").  The raw body is verified as Slack
 * documents ("Verifying requests from Slack", docs.slack.dev/authentication/
 * verifying-requests-from-slack) before anything of it is parsed; the click
 * goes to the durable queue (kind JANITOR_POSTPONE_QUEUE) and the janitor's
 * worker does the rest (janitor_postpone.c), so Slack gets its answer at
 * once, well within its 3 seconds.
 *
 * Each request, in this order, counted in
 * alertbridge_slack_interactions_total{outcome="accepted"|"refused", reason}:
 *   404 disabled       no janitor.slack.signing_secret_file in the current config
 *   413 too_large      body over SLACK_INTERACT_MAX_BODY
 *   401 no_timestamp   X-Slack-Request-Timestamp missing or not a number
 *   401 stale          it is more than SLACK_INTERACT_WINDOW_S away from now
 *                      (a replay of a recorded request)
 *   401 no_signature   no X-Slack-Signature
 *   401 bad_signature  not "v0=" + hex HMAC-SHA256 of "v0:{timestamp}:{body}"
 *                      (constant-time compare); nothing parsed or logged
 *   400 bad_payload    not a form with a payload= of the documented JSON
 *   200 ignored        another type or action (nothing to do)
 *   200 duplicate      this click was taken before (Slack's retry, X-Slack-
 *                      Retry-Num: the same action_ts by the same user)
 *   200 queued         queued; the answer body is empty, as Slack wants
 *   503 store          the store failed; nothing taken (Slack retries)
 */
#ifndef AB_SLACK_INTERACT_H
#define AB_SLACK_INTERACT_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/http_server.h"
#include "core/metrics.h"
#include "core/reload.h"
#include "store/store.h"

/* The queue (store_event.kind) of clicks; the janitor's worker drains it. */
#define JANITOR_POSTPONE_QUEUE "postpone"
/* The largest body read: Slack's block_actions carry the whole message. */
#define SLACK_INTERACT_MAX_BODY (256u * 1024)
/* Slack's advice: refuse a request whose timestamp is more than 5 minutes off. */
#define SLACK_INTERACT_WINDOW_S 300
/* The button's action_id. */
#define SLACK_ACTION_POSTPONE "postpone"

/* A click on a "Keep until" button, as queued.  Strings owned; release with slack_click_release(). */
struct slack_click {
	char *user;          /* user.id of who clicked ("U...") */
	char *user_name;     /* user.username or user.name, for texts; may be "" */
	char *action_ts;     /* actions[0].action_ts */
	char *response_url;  /* where the ephemeral answer goes; may be "" */
	char *channel;       /* container.channel_id: the message's channel */
	char *message_ts;    /* container.message_ts: the message to update */
	char *message_text;  /* message.text as the user saw it; may be "" */
	char *message_blocks; /* message.blocks as JSON text ("[]" when absent) */
	/* From the button's value (slack_button_value()). */
	char *ns, *pod, *uid;
	int64_t notice;      /* the outbox notice (or digest member) the button was on */
};

/* Free what c holds and zero it; c may be NULL. */
void slack_click_release(struct slack_click *c);

/*
 * The button value (at most 2,000 characters, Block Kit's limit) naming the
 * pod ns/pod of uid and the outbox notice id it is on: a compact JSON object
 * {"ns","pod","uid","notice"}.  The caller frees it.
 */
char *slack_button_value(const char *ns, const char *pod, const char *uid, int64_t notice);

/*
 * 1 when sig is "v0=" and the lower-case hex HMAC-SHA256 (nettle) of
 * "v0:" timestamp ":" body[0..len) keyed with secret, compared in constant
 * time; else 0 (NULL or empty secret, timestamp or sig: 0).
 */
int slack_signature_ok(const char *secret, const char *timestamp, const char *body, size_t len,
		       const char *sig);

/*
 * Read X-Slack-Request-Timestamp (decimal seconds since the epoch) into
 * *ts_s: 0 when it is not 1-12 digits.  Then 1 when it is within
 * SLACK_INTERACT_WINDOW_S of now_s either way, else 0.  -1: unreadable.
 */
int slack_timestamp_fresh(const char *timestamp, int64_t now_s, int64_t *ts_s);

/*
 * Parse a verified body (application/x-www-form-urlencoded, its payload=
 * field decoded with http_url_unescape after '+' became ' ') into *out.
 * Returns ERR_OK for a block_actions click on SLACK_ACTION_POSTPONE with a
 * value from slack_button_value(); ERR_NOTFOUND for another type or action
 * (nothing to do); ERR_INVALID (errmsg says which part) otherwise.  out is
 * zeroed first and released on error.
 */
enum err slack_click_parse(const char *body, size_t len, struct slack_click *out,
			   struct buf *errmsg) WARN_UNUSED;

/* The click as the queue's JSON payload (the caller frees it), and back. */
char *slack_click_json(const struct slack_click *c);
enum err slack_click_from_json(const char *json, struct slack_click *out) WARN_UNUSED;

struct slack_interact;

struct slack_interact_options {
	const struct config *cfg;  /* used when reload is NULL; outlives the endpoint */
	struct reload *reload;     /* NULL: cfg for good; else each request's generation */
	struct store *store;       /* outlives the endpoint */
	struct metrics *metrics;   /* may be NULL */
	int64_t (*now_ms)(void *ctx);  /* NULL: the wall clock */
	void *now_ctx;
};

/* A new endpoint; never NULL. */
struct slack_interact *slack_interact_new(const struct slack_interact_options *opts);
/* Free; s may be NULL. */
void slack_interact_free(struct slack_interact *s);
/* The route's handler (srv_handler); ctx is the struct slack_interact. */
void slack_interact_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

#endif
