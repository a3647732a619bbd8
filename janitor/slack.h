/*
 * slack.h - Slack client of the janitor: posts the notices that tell a pod's
 * owner what will happen to the pod, and finds where to post them.
 *
 * Two modes, chosen by the options: a bot token (Web API: chat.postMessage,
 * users.lookupByEmail, conversations.open; replies thread under a notice) or
 * an incoming webhook (one fixed channel, no threads, no lookups).
 */
#ifndef AB_SLACK_H
#define AB_SLACK_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct slack_client;

/*
 * Options of a client; every field may be left zero except one of bot_token
 * and webhook_url.  Strings are copied by slack_client_new().
 */
struct slack_options {
	const char *api_url;        /* Web API base; NULL: "https://slack.com/api"; no trailing / */
	const char *bot_token;      /* "xoxb-..."; non-empty: Web API mode */
	const char *webhook_url;    /* incoming webhook, used when bot_token is NULL or "" */
	int64_t timeout_ms;         /* whole request; 0 means 10 s */
	int64_t min_interval_ms;    /* posts to one channel at least this far apart; 0: 1000 */
	int max_attempts;           /* attempts per request on 429, 5xx, timeouts; 0 means 4 */
	int64_t backoff_base_ms;    /* 5xx/timeout backoff base * 2^(n-1), capped 30 s; 0: 1000 */
	int64_t max_wait_ms;        /* longest rate-limit wait inside one call; 0 means 60 s */
	/* Test hooks: clock and sleep, both in milliseconds; NULL for the real ones. */
	int64_t (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
	const char *ca_file;        /* PEM CA bundle; NULL: the system's */
};

/* Longest channel ID or message ts kept in struct slack_posted, NUL included. */
#define SLACK_ID_MAX 64

/*
 * Where a message landed: the channel ID ("C...", "D...") and the message's
 * ts ("1700000000.000100"), to pass as thread_ts for replies.  Both are ""
 * in webhook mode: incoming webhooks return neither.
 */
struct slack_posted {
	char channel[SLACK_ID_MAX];
	char ts[SLACK_ID_MAX];
};

/*
 * Create a client; never NULL.  opts must set bot_token or webhook_url
 * (asserted: it is configuration, checked when the config is loaded).
 */
struct slack_client *slack_client_new(const struct slack_options *opts);
/* Free the client and wipe its copies of the secrets; c may be NULL. */
void slack_client_free(struct slack_client *c);
/* Non-zero in incoming-webhook mode (no threads, no lookups, channel ignored). */
int slack_webhook_mode(const struct slack_client *c);
/*
 * Use a rotated secret (copied) from the next call on, in the client's mode:
 * bot_token in bot mode, webhook_url in webhook mode; NULL or "" leaves the
 * current one.  The mode never changes.  Call on the thread that makes the
 * calls (the janitor's worker, after a reload: core/reload.h).
 */
void slack_set_secret(struct slack_client *c, const char *bot_token, const char *webhook_url);

/*
 * Errors every call can return.  errmsg (may be NULL) gets detail naming the
 * Slack method and Slack's error code; it never holds the token or the
 * webhook URL (they are replaced by "[redacted]" should a transport message
 * carry them), and neither does any log line.
 *   ERR_RETRY     429 / "ratelimited" still failing after max_attempts, or a
 *                 Retry-After longer than max_wait_ms (no wait then: the
 *                 message says "retry after N s"; later calls of the same
 *                 method wait the rest out, or fail the same way without a
 *                 request while it is still over max_wait_ms); 5xx,
 *                 Slack's internal_error/fatal_error/service_unavailable/
 *                 request_timeout, timeouts and connection errors after
 *                 max_attempts
 *   ERR_AUTH      invalid_auth, not_authed, token_revoked, token_expired,
 *                 account_inactive, missing_scope, not_allowed_token_type,
 *                 no_permission; webhook: invalid_token, no_service,
 *                 no_team, team_disabled; or HTTP 401/403 without a code
 *   ERR_NOTFOUND  channel_not_found, users_not_found, user_not_found
 *   ERR_INVALID   any other "ok": false error (errmsg names the code, e.g.
 *                 "chat.postMessage: not_in_channel"), another 4xx, or an
 *                 answer that is not the documented JSON (or "ok")
 * Transient failures are retried inside the call: a Retry-After (seconds) is
 * waited out, other failures back off base * 2^(n-1).  A post retried after
 * an answer was lost may appear twice: Slack has no idempotency key.
 */

/*
 * Post text to channel.  Web API mode: POST {api_url}/chat.postMessage with
 * Authorization: Bearer <token>, Content-Type: application/json;
 * charset=utf-8 and {"channel", "text", "thread_ts" (only when thread_ts is
 * non-NULL and non-empty), "unfurl_links": false}; out receives the answer's
 * channel and ts.  Webhook mode: POST webhook_url {"text"} (channel and
 * thread_ts are ignored: the webhook's channel is fixed); success is a 2xx
 * answer "ok" and out gets "" for both.
 *
 * text is sent as it is: escape interpolated values with slack_escape() (the
 * slack_*.mustache templates do, through MUSTACHE_ESCAPE_SLACK).  It must be
 * non-empty UTF-8 of at most 40000 bytes (Slack's limit), channel non-empty
 * in Web API mode: ERR_INVALID otherwise, before any request.
 *
 * Pacing (docs.slack.dev/apis/web-api/rate-limits, "1 per second" per
 * channel): a post waits until min_interval_ms after the previous post to the
 * same channel (the channel string as given; all webhook posts count as one
 * channel).  out may be NULL; on error it is zeroed.
 */
enum err slack_post(struct slack_client *c, const char *channel, const char *text,
		    const char *thread_ts, struct slack_posted *out,
		    struct buf *errmsg) WARN_UNUSED;

/*
 * slack_post() with Block Kit blocks (docs.slack.dev/reference/block-kit):
 * blocks is a JSON array (text, e.g. "[{\"type\":\"section\",...}]") sent
 * as the body's "blocks" beside "text" (which stays the notification's
 * fallback); NULL: exactly slack_post().  Errors: slack_post()'s, and
 * ERR_INVALID when blocks is not a JSON array (before any request).
 */
enum err slack_post_blocks(struct slack_client *c, const char *channel, const char *text,
			   const char *blocks, const char *thread_ts, struct slack_posted *out,
			   struct buf *errmsg) WARN_UNUSED;

/*
 * Replace the message ts of channel (the channel ID Slack gave) with text
 * and blocks (NULL: none, the buttons go): POST {api_url}/chat.update
 * {"channel", "ts", "text"[, "blocks"]} (docs.slack.dev/reference/methods/
 * chat.update).  Bot mode only.  Errors as slack_post(); ERR_INVALID before
 * any request in webhook mode or for an empty channel, ts or text.
 */
enum err slack_update(struct slack_client *c, const char *channel, const char *ts,
		      const char *text, const char *blocks, struct buf *errmsg) WARN_UNUSED;

/*
 * Non-zero when url may be posted to as an interaction's response_url:
 * under https://hooks.slack.com/ (where Slack's response URLs live), or
 * under the origin of the client's api_url (a test's fake Slack).  Any other
 * URL is refused, so a payload cannot make alertbridge post elsewhere.
 */
int slack_response_url_ok(const struct slack_client *c, const char *url);

/*
 * Answer an interaction only its user sees: POST response_url
 * {"text", "response_type": "ephemeral", "replace_original": false}, no
 * Authorization header (docs.slack.dev/interactivity/handling-user-
 * interaction#message_responses: valid 30 minutes, at most 5 times).
 * Success: a 2xx answer {"ok": true} or "ok".  Errors as slack_post();
 * ERR_INVALID when slack_response_url_ok() refuses the URL (no request).
 */
enum err slack_respond(struct slack_client *c, const char *response_url, const char *text,
		       struct buf *errmsg) WARN_UNUSED;

/*
 * The Slack user ID an owner value names, into user: a user ID ("U..." or
 * "W...") as it is, an e-mail through users.lookupByEmail (bot mode).
 * ERR_NOTFOUND when value is neither (a channel, empty, NULL) or Slack knows
 * no such user; other errors as slack_post().
 */
enum err slack_user_id(struct slack_client *c, const char *value, char user[SLACK_ID_MAX],
		       struct buf *errmsg) WARN_UNUSED;

/*
 * Find the channel to tell a pod's owner in, following DESIGN.md "Janitor
 * semantics": the first non-empty of notify_annotation (the pod's
 * janitor/notify), owner_label_value (the configured owner label), then
 * namespace_channel, then default_channel.  Every argument may be NULL or "".
 * The owner values are read as:
 *   "U..." / "W..."  a user ID: POST {api_url}/conversations.open
 *                    {"users": ID} and the DM's channel.id is the answer
 *   "#name", "C...", "G...", "D..."  a channel, used as it is
 *   "a@b"            an e-mail: GET {api_url}/users.lookupByEmail?email=...
 *                    gives user.id, then conversations.open as above
 * (IDs are an upper-case letter then upper-case letters and digits.)  An
 * owner value that is none of these, or one Slack answers users_not_found /
 * user_not_found / channel_not_found for, falls through to the next
 * candidate with a warning logged (a notice that reaches the namespace's
 * channel beats none).  namespace_channel and default_channel must be
 * channels ("#name" or an ID); other values are skipped the same way.
 *
 * channel_out is reset and receives the channel ("#name" as given, or an
 * ID).  Webhook mode makes no request: every value resolves to "" (the
 * webhook's channel).  Errors: ERR_NOTFOUND when no candidate is left (errmsg
 * says what was tried); ERR_RETRY, ERR_AUTH, ERR_INVALID from a lookup, as for
 * slack_post() (no fall-through then: a DM must not go to a public channel
 * because Slack was briefly down).  Lookups are not paced per channel but
 * honour 429 / Retry-After.
 */
enum err slack_resolve_owner(struct slack_client *c, const char *notify_annotation,
			     const char *owner_label_value, const char *namespace_channel,
			     const char *default_channel, struct buf *channel_out,
			     struct buf *errmsg) WARN_UNUSED;

/*
 * Append text to out with Slack's escaping
 * (docs.slack.dev/messaging/formatting-message-text#escaping): & < > become
 * &amp; &lt; &gt;, nothing else changes.  text NULL appends nothing.
 * ERR_TOOBIG when out's maximum would be passed (out unchanged).
 */
enum err slack_escape(const char *text, struct buf *out) WARN_UNUSED;

#endif
