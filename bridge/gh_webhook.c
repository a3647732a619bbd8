/*
 * gh_webhook.c - POST /v1/github/webhook (gh_webhook.h): verify the raw
 * body's signature before anything else, take the delivery once, read the
 * issue_comment, and queue its command for the silence worker
 * (bridge/silence.h).  Runs on the HTTP server's threads.
 */
#include "bridge/gh_webhook.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/silence.h"
#include "core/clock.h"
#include "core/hmac_sig.h"
#include "core/intake.h"
#include "core/log.h"
#include "store/store_events.h"
#include "store/store_silences.h"
#include "core/xalloc.h"
#include "core/banned.h"

struct gh_webhook {
	struct gh_webhook_options opts;
	struct metric *m_requests;
};

static const char *const refused_reasons[] = { "disabled", "too_large", "no_signature",
					       "bad_signature", "no_delivery", "bad_payload",
					       "store", NULL };
static const char *const accepted_reasons[] = { "ping", "duplicate", "ignored", "own_comment",
						"not_command", "untracked", "not_allowed",
						"queued", NULL };

struct gh_webhook *gh_webhook_new(const struct gh_webhook_options *opts)
{
	struct gh_webhook *w = xcalloc(1, sizeof(*w));

	w->opts = *opts;
	w->m_requests = metrics_outcome_counter(
		opts->metrics, "alertbridge_github_webhook_requests_total",
		"Requests to POST /v1/github/webhook by outcome and reason.", accepted_reasons,
		refused_reasons);
	return w;
}

void gh_webhook_free(struct gh_webhook *w)
{
	free(w);
}

int gh_webhook_signature_ok(const char *secret, const char *body, size_t len,
			    const char *header)
{
	const struct hmac_sig_part part = { body, len };

	return hmac_sig_ok(secret, "sha256=", header, &part, 1);
}

/* Count the request and fill res: 2xx {"status": reason}, else {"error": msg}. */
static void reply(struct gh_webhook *w, struct srv_response *res, int status, const char *reason,
		  const char *msg)
{
	if (intake_outcome(w->m_requests, res, status, reason, msg))
		return;
	res->content_type = "application/json";
	(void)buf_adds(&res->body, "{\"status\":");
	intake_json_quote(&res->body, reason);
	(void)buf_adds(&res->body, "}");
}

static const char *jstr(const json_t *o, const char *path1, const char *path2)
{
	const json_t *v = json_object_get(o, path1);

	if (path2)
		v = json_object_get(v, path2);
	return json_string_value(v);
}

static int allowed(const char *association)
{
	return association && (!strcmp(association, "OWNER") || !strcmp(association, "MEMBER") ||
			       !strcmp(association, "COLLABORATOR"));
}

/* The event's payload: the command and where to answer it. */
static char *command_json(const struct silence_command *c, const json_t *doc)
{
	static const char *const names[] = { "", "silence", "unsilence", "unknown", "invalid" };
	json_t *o = json_object();
	char *text;

	json_object_set_new(o, "v", json_integer(1));
	json_object_set_new(o, "cmd", json_string(names[c->cmd]));
	json_object_set(o, "login", json_object_get(json_object_get(json_object_get(doc, "comment"),
								     "user"), "login"));
	json_object_set(o, "comment_id", json_object_get(json_object_get(doc, "comment"), "id"));
	json_object_set(o, "repo", json_object_get(json_object_get(doc, "repository"), "full_name"));
	json_object_set(o, "number", json_object_get(json_object_get(doc, "issue"), "number"));
	json_object_set(o, "issue_url", json_object_get(json_object_get(doc, "issue"), "html_url"));
	json_object_set_new(o, "duration_ms", json_integer(c->duration_ms));
	json_object_set_new(o, "reason", json_stringn_nocheck(c->reason, strlen(c->reason)));
	json_object_set_new(o, "word", json_stringn_nocheck(c->word, strlen(c->word)));
	json_object_set_new(o, "error", json_string(c->error));
	text = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
	json_decref(o);
	if (!text)
		abort();  /* out of memory: as xmalloc does */
	return text;
}

/*
 * An issue_comment: what it asks, on which tracked issue, by whom.  Returns
 * the reason it was answered with (reply() done).
 */
static void handle_comment(struct gh_webhook *w, const struct config *cfg,
			   const struct srv_request *req, struct srv_response *res,
			   const char *delivery, int64_t now_ms)
{
	json_t *doc = json_loadb(req->body, req->body_len, 0, NULL);
	const char *action = jstr(doc, "action", NULL), *body = jstr(doc, "comment", "body");
	const char *repo = jstr(doc, "repository", "full_name");
	const char *login = NULL, *user_type = NULL;
	json_t *issue = json_object_get(doc, "issue"), *comment = json_object_get(doc, "comment");
	struct silence_command cmd;
	struct store_event ev = { 0 };
	char *receiver = NULL, *key = NULL, *payload = NULL;
	int taken;

	login = jstr(comment, "user", "login");
	user_type = jstr(comment, "user", "type");
	if (!action || !json_is_object(issue) || !json_is_object(comment) || !body || !repo ||
	    !login || !json_is_integer(json_object_get(issue, "number")) ||
	    !json_is_integer(json_object_get(comment, "id"))) {
		reply(w, res, 400, "bad_payload", "not an issue_comment payload");
		goto out;
	}
	if (strcmp(action, "created")) {
		reply(w, res, 200, "ignored", NULL);
		goto out;
	}
	if (strstr(body, SILENCE_OWN_MARKER) || (user_type && !strcmp(user_type, "Bot"))) {
		reply(w, res, 200, "own_comment", NULL);
		goto out;
	}
	silence_command_parse(body, &cmd);
	if (cmd.cmd == SILENCE_CMD_NONE) {
		reply(w, res, 200, "not_command", NULL);
		goto out;
	}
	if (json_object_get(issue, "pull_request") ||
	    store_issue_by_number(w->opts.store, repo,
				  (int64_t)json_integer_value(json_object_get(issue, "number")),
				  &receiver, &key) == ERR_NOTFOUND) {
		reply(w, res, 200, "untracked", NULL);
		goto out;
	}
	if (!receiver) {
		reply(w, res, 503, "store", "store unavailable");
		goto out;
	}
	if (!allowed(jstr(comment, "author_association", NULL))) {
		struct log_line *l = log_begin(LOG_INFO, "github command refused: not a member");

		log_str(l, "login", login);
		log_str(l, "repo", repo);
		log_str(l, "delivery", delivery);
		log_end(l);
		reply(w, res, 200, "not_allowed", NULL);
		goto out;
	}
	payload = command_json(&cmd, doc);
	ev.kind = (char *)SILENCE_QUEUE;
	ev.receiver = receiver;
	ev.key = key;
	ev.payload = payload;
	taken = intake_take_once(w->opts.store, delivery, now_ms, cfg->database_retention_ms, &ev,
				 "github command");
	if (taken <= 0) {
		if (taken < 0)
			reply(w, res, 503, "store", "store unavailable");
		else
			reply(w, res, 200, "duplicate", NULL);
		goto out;
	}
	{
		struct log_line *l = log_begin(LOG_INFO, "github command queued");

		log_str(l, "command", cmd.word);
		log_str(l, "login", login);
		log_str(l, "repo", repo);
		log_str(l, "receiver", receiver);
		log_str(l, "key", key);
		log_str(l, "delivery", delivery);
		log_end(l);
	}
	reply(w, res, 202, "queued", NULL);
out:
	json_decref(doc);
	free(receiver);
	free(key);
	free(payload);
}

void gh_webhook_rejected(void *ctx, const struct srv_request *req, int status)
{
	struct gh_webhook *w = ctx;
	const char *v[] = { "refused", "too_large" };

	(void)req;
	if (status == 413)
		metric_add(w->m_requests, v, 1);
}

void gh_webhook_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct gh_webhook *w = ctx;
	const struct reload_gen *g = reload_acquire(w->opts.reload);
	const struct config *cfg = g ? g->cfg : w->opts.cfg;
	const char *secret = cfg->github.webhook_secret;
	const char *sig = srv_header(req, "X-Hub-Signature-256");
	const char *event = srv_header(req, "X-GitHub-Event");
	const char *delivery = srv_header(req, "X-GitHub-Delivery");
	int64_t now_ms = w->opts.now_ms ? w->opts.now_ms(w->opts.now_ctx) : clock_wall_ms();

	if (!secret || !*secret)
		reply(w, res, 404, "disabled", "not found");
	else if (req->body_len > GH_WEBHOOK_MAX_BODY)
		reply(w, res, 413, "too_large", "payload too large");
	else if (!sig || !*sig)
		reply(w, res, 401, "no_signature", "unauthorized");
	else if (!gh_webhook_signature_ok(secret, req->body, req->body_len, sig)) {
		struct log_line *l = log_begin(LOG_WARN, "github webhook refused: bad signature");

		log_str(l, "remote_addr", srv_remote_addr(req));
		log_str(l, "delivery", delivery);
		log_end(l);
		reply(w, res, 401, "bad_signature", "unauthorized");
	} else if (!delivery || !*delivery || strlen(delivery) > 128)
		reply(w, res, 400, "no_delivery", "missing X-GitHub-Delivery");
	else if (event && !strcmp(event, "ping"))
		reply(w, res, 200, "ping", NULL);
	else if (!event || strcmp(event, "issue_comment"))
		reply(w, res, 200, "ignored", NULL);
	else
		handle_comment(w, cfg, req, res, delivery, now_ms);
	reload_release(w->opts.reload, g);
}
