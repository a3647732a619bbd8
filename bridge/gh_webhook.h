/*
 * gh_webhook.h - POST /v1/github/webhook: GitHub's webhook deliveries of a
 * repository (GitHub Docs, "Webhook events and payloads": issue_comment and
 * ping; "Validating webhook deliveries"), turned into silence commands on
 * the durable queue (bridge/silence.h).
 *
 * Each request, in this order, answered with JSON ({"status": ...} or
 * {"error": ...}) and counted in alertbridge_github_webhook_requests_total
 * {outcome="accepted"|"refused", reason}:
 *   404 disabled       no github.webhook_secret_file in the current config
 *   413 too_large      body over GH_WEBHOOK_MAX_BODY (before anything is read)
 *   401 no_signature   no X-Hub-Signature-256
 *   401 bad_signature  it is not "sha256=" + the lower-case hex HMAC-SHA256 of
 *                      the raw body keyed with the secret (compared in
 *                      constant time); nothing of the body is parsed or logged
 *   400 no_delivery    no X-GitHub-Delivery
 *   200 ping           X-GitHub-Event: ping
 *   200 ignored        another event, or an action other than "created"
 *   400 bad_payload    not the documented issue_comment JSON
 *   200 own_comment    a comment carrying alertbridge's marker, or by a Bot
 *   200 not_command    its first line is no command (silence_command_parse())
 *   200 untracked      no map row points at the issue (or a pull request)
 *   200 not_allowed    author_association is not OWNER, MEMBER or
 *                      COLLABORATOR: nothing queued and no reply, so nobody
 *                      outside can spend the GitHub budget on replies
 *   200 duplicate      a delivery taken before (store_delivery_take(): a
 *                      redelivery changes nothing)
 *   202 queued         the command is durably queued (kind SILENCE_QUEUE)
 *   503 store          the store failed: the delivery is not taken, so
 *                      GitHub's "Redeliver" may send it again
 */
#ifndef AB_GH_WEBHOOK_H
#define AB_GH_WEBHOOK_H

#include <stddef.h>
#include <stdint.h>

#include "core/config.h"
#include "core/http_server.h"
#include "core/metrics.h"
#include "core/reload.h"
#include "store/store.h"

/* The largest body read: an issue_comment with a 65,536-character comment and issue body. */
#define GH_WEBHOOK_MAX_BODY (1u << 20)

struct gh_webhook;

struct gh_webhook_options {
	const struct config *cfg;  /* used when reload is NULL; outlives the webhook */
	struct reload *reload;     /* NULL: cfg for good; else each request's generation */
	struct store *store;       /* outlives the webhook */
	struct metrics *metrics;   /* may be NULL */
	int64_t (*now_ms)(void *ctx);  /* NULL: the wall clock */
	void *now_ctx;
};

/* A new endpoint; never NULL. */
struct gh_webhook *gh_webhook_new(const struct gh_webhook_options *opts);
/* Free; w may be NULL. */
void gh_webhook_free(struct gh_webhook *w);
/* The route's handler (http_server.h srv_handler); ctx is the struct gh_webhook. */
void gh_webhook_handle(void *ctx, const struct srv_request *req, struct srv_response *res);
/*
 * The route's rejection hook (http_server.h srv_rejected; ctx the struct
 * gh_webhook): a body the server itself refused as too large (413, on a
 * listener whose max_body_bytes is GH_WEBHOOK_MAX_BODY) is counted as
 * refused, too_large, like the handler's own 413.
 */
void gh_webhook_rejected(void *ctx, const struct srv_request *req, int status);

/*
 * 1 when header (X-Hub-Signature-256) is "sha256=" followed by the
 * lower-case hex HMAC-SHA256 of body[0..len) keyed with secret (nettle's
 * hmac_sha256, compared with memeql_sec in constant time), else 0; NULL or
 * empty secret or header: 0.  GitHub Docs, "Validating webhook deliveries".
 */
int gh_webhook_signature_ok(const char *secret, const char *body, size_t len,
			    const char *header);

#endif
