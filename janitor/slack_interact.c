/*
 * slack_interact.c - POST /v1/slack/interactions (slack_interact.h): verify
 * Slack's signature over the raw body, refuse what is outside the replay
 * window, take each click once and queue it for the janitor's worker.  Runs
 * on the HTTP server's threads; makes no call to Slack or Kubernetes.
 */
#include "janitor/slack_interact.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "core/hmac_sig.h"
#include "core/http_client.h"
#include "core/intake.h"
#include "core/log.h"
#include "store/store_events.h"
#include "store/store_silences.h"
#include "core/xalloc.h"
#include "core/banned.h"

struct slack_interact {
	struct slack_interact_options opts;
	struct metric *m_requests;
};

static const char *const refused_reasons[] = { "disabled", "too_large", "no_timestamp", "stale",
					       "no_signature", "bad_signature", "bad_payload",
					       "store", NULL };
static const char *const accepted_reasons[] = { "ignored", "duplicate", "queued", NULL };

void slack_click_release(struct slack_click *c)
{
	if (!c)
		return;
	free(c->user);
	free(c->user_name);
	free(c->action_ts);
	free(c->response_url);
	free(c->channel);
	free(c->message_ts);
	free(c->message_text);
	free(c->message_blocks);
	free(c->ns);
	free(c->pod);
	free(c->uid);
	memset(c, 0, sizeof(*c));
}

static char *dump(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	json_decref(o);
	if (!s)
		abort();  /* out of memory, as xmalloc does (the strings are valid UTF-8) */
	return s;
}

char *slack_button_value(const char *ns, const char *pod, const char *uid, int64_t notice)
{
	return dump(json_pack("{s:s, s:s, s:s, s:I}", "ns", ns, "pod", pod, "uid", uid, "notice",
			      (json_int_t)notice));
}

int slack_signature_ok(const char *secret, const char *timestamp, const char *body, size_t len,
		       const char *sig)
{
	const struct hmac_sig_part parts[] = {
		{ "v0:", 3 }, { timestamp, timestamp ? strlen(timestamp) : 0 }, { ":", 1 },
		{ body, len },
	};

	if (!timestamp || !*timestamp)
		return 0;
	return hmac_sig_ok(secret, "v0=", sig, parts, sizeof(parts) / sizeof(parts[0]));
}

int slack_timestamp_fresh(const char *timestamp, int64_t now_s, int64_t *ts_s)
{
	int64_t v = 0;
	size_t n = timestamp ? strlen(timestamp) : 0;

	*ts_s = 0;
	if (n < 1 || n > 12 || strspn(timestamp, "0123456789") != n)
		return -1;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (timestamp[i] - '0');
	*ts_s = v;
	return v >= now_s - SLACK_INTERACT_WINDOW_S && v <= now_s + SLACK_INTERACT_WINDOW_S;
}

/* The decoded payload= field of a form body into out; -1 when absent or undecodable. */
static int form_payload(const char *body, size_t len, struct buf *out)
{
	const char *p = body, *end = body + len;

	while (p < end) {
		const char *amp = memchr(p, '&', (size_t)(end - p));
		const char *stop = amp ? amp : end;

		if ((size_t)(stop - p) >= 8 && !memcmp(p, "payload=", 8)) {
			struct buf plus = BUF_INIT;
			int rc;

			/* application/x-www-form-urlencoded: '+' is a space (WHATWG URL, 5.1). */
			(void)buf_add(&plus, p + 8, (size_t)(stop - p - 8));
			for (size_t i = 0; i < plus.len; i++)
				if (plus.data[i] == '+')
					plus.data[i] = ' ';
			rc = http_url_unescape(buf_str(&plus), plus.len, out) == ERR_OK ? 0 : -1;
			buf_release(&plus);
			return rc;
		}
		p = stop + 1;
	}
	return -1;
}

static char *jdup(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s ? xstrdup(s) : NULL;
}

/* The button's value into c; -1 when it is not slack_button_value()'s. */
static int read_value(const char *value, struct slack_click *c)
{
	json_t *v = value ? json_loads(value, 0, NULL) : NULL;
	json_t *notice = json_object_get(v, "notice");
	int rc = -1;

	c->ns = jdup(v, "ns");
	c->pod = jdup(v, "pod");
	c->uid = jdup(v, "uid");
	if (c->ns && c->pod && c->uid && json_is_integer(notice)) {
		c->notice = (int64_t)json_integer_value(notice);
		rc = 0;
	}
	json_decref(v);
	return rc;
}

enum err slack_click_parse(const char *body, size_t len, struct slack_click *out,
			   struct buf *errmsg)
{
	struct buf text = BUF_INIT;
	json_t *doc = NULL, *user, *action, *container;
	const char *type, *what = NULL;
	enum err rc = ERR_INVALID;

	memset(out, 0, sizeof(*out));
	if (form_payload(body, len, &text)) {
		what = "no payload= field (a form body)";
		goto out;
	}
	doc = json_loadb(text.data ? text.data : "", text.len, 0, NULL);
	type = json_string_value(json_object_get(doc, "type"));
	if (!type) {
		what = "payload: not JSON with a \"type\"";
		goto out;
	}
	action = json_array_get(json_object_get(doc, "actions"), 0);
	if (strcmp(type, "block_actions") ||
	    !json_is_string(json_object_get(action, "action_id")) ||
	    strcmp(json_string_value(json_object_get(action, "action_id")), SLACK_ACTION_POSTPONE)) {
		rc = ERR_NOTFOUND;
		goto out;
	}
	user = json_object_get(doc, "user");
	container = json_object_get(doc, "container");
	out->user = jdup(user, "id");
	out->user_name = jdup(user, "username");
	if (!out->user_name)
		out->user_name = jdup(user, "name");
	if (!out->user_name)
		out->user_name = xstrdup("");
	out->action_ts = jdup(action, "action_ts");
	out->response_url = jdup(doc, "response_url");
	if (!out->response_url)
		out->response_url = xstrdup("");
	out->channel = jdup(container, "channel_id");
	out->message_ts = jdup(container, "message_ts");
	out->message_text = jdup(json_object_get(doc, "message"), "text");
	if (!out->message_text)
		out->message_text = xstrdup("");
	{
		json_t *blocks = json_object_get(json_object_get(doc, "message"), "blocks");

		out->message_blocks = json_is_array(blocks) ? json_dumps(blocks, JSON_COMPACT)
							    : xstrdup("[]");
		if (!out->message_blocks)
			abort();  /* out of memory */
	}
	if (!out->user || !*out->user || !out->action_ts || !*out->action_ts)
		what = "payload: no user.id or actions[0].action_ts";
	else if (!out->channel || !out->message_ts)
		what = "payload: no container.channel_id or container.message_ts";
	else if (read_value(json_string_value(json_object_get(action, "value")), out))
		what = "payload: actions[0].value is not alertbridge's button";
	else
		rc = ERR_OK;
out:
	if (what)
		buf_setf(errmsg, "%s", what);
	if (rc != ERR_OK)
		slack_click_release(out);
	json_decref(doc);
	buf_release(&text);
	return rc;
}

char *slack_click_json(const struct slack_click *c)
{
	return dump(json_pack("{s:i, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:I}",
			      "v", 1, "user", c->user, "user_name", c->user_name, "action_ts",
			      c->action_ts, "response_url", c->response_url, "channel",
			      c->channel, "message_ts", c->message_ts, "message_text",
			      c->message_text, "message_blocks", c->message_blocks, "ns", c->ns,
			      "pod", c->pod, "uid", c->uid, "notice", (json_int_t)c->notice));
}

enum err slack_click_from_json(const char *json, struct slack_click *out)
{
	json_t *o = json ? json_loads(json, 0, NULL) : NULL;
	enum err rc = ERR_INVALID;

	memset(out, 0, sizeof(*out));
	out->user = jdup(o, "user");
	out->user_name = jdup(o, "user_name");
	out->action_ts = jdup(o, "action_ts");
	out->response_url = jdup(o, "response_url");
	out->channel = jdup(o, "channel");
	out->message_ts = jdup(o, "message_ts");
	out->ns = jdup(o, "ns");
	out->pod = jdup(o, "pod");
	out->uid = jdup(o, "uid");
	out->message_text = jdup(o, "message_text");
	out->message_blocks = jdup(o, "message_blocks");
	out->notice = (int64_t)json_integer_value(json_object_get(o, "notice"));
	if (out->user && out->user_name && out->action_ts && out->response_url && out->channel &&
	    out->message_ts && out->message_text && out->message_blocks && out->ns && out->pod && out->uid)
		rc = ERR_OK;
	else
		slack_click_release(out);
	json_decref(o);
	return rc;
}

struct slack_interact *slack_interact_new(const struct slack_interact_options *opts)
{
	struct slack_interact *s = xcalloc(1, sizeof(*s));

	s->opts = *opts;
	s->m_requests = metrics_outcome_counter(
		opts->metrics, "alertbridge_slack_interactions_total",
		"Requests to POST /v1/slack/interactions by outcome and reason.", accepted_reasons,
		refused_reasons);
	return s;
}

void slack_interact_free(struct slack_interact *s)
{
	free(s);
}

/* Count the request and fill res: 200 with an empty body, or {"error": msg}. */
static void reply(struct slack_interact *s, struct srv_response *res, int status,
		  const char *reason, const char *msg)
{
	if (!intake_outcome(s->m_requests, res, status, reason, msg))
		res->content_type = "text/plain";
}

static void refused(struct slack_interact *s, const struct srv_request *req,
		    struct srv_response *res, const char *reason)
{
	struct log_line *l = log_begin(LOG_WARN, "slack interaction refused");

	log_str(l, "reason", reason);
	log_str(l, "remote_addr", srv_remote_addr(req));
	log_end(l);
	reply(s, res, 401, reason, "unauthorized");
}

/* A verified click: take it once, queue it. */
static void take(struct slack_interact *s, const struct config *cfg, const struct srv_request *req,
		 struct srv_response *res, int64_t now_ms)
{
	struct slack_click c;
	struct store_event ev = { 0 };
	struct buf err = BUF_INIT, id = BUF_INIT, key = BUF_INIT;
	char *payload = NULL;
	int taken;
	enum err rc = slack_click_parse(req->body, req->body_len, &c, &err);

	if (rc == ERR_NOTFOUND) {
		reply(s, res, 200, "ignored", NULL);
		goto out;
	}
	if (rc != ERR_OK) {
		log_msg(LOG_WARN, "slack interaction refused: bad payload", "error", buf_str(&err));
		reply(s, res, 400, "bad_payload", buf_str(&err));
		goto out;
	}
	/* Slack's retries repeat the payload: action_ts and user name the click. */
	(void)buf_printf(&id, "slack:%s:%s", c.action_ts, c.user);
	payload = slack_click_json(&c);
	(void)buf_printf(&key, "%s/%s", c.ns, c.pod);
	ev.kind = (char *)JANITOR_POSTPONE_QUEUE;
	ev.receiver = (char *)"slack";
	ev.key = key.data;
	ev.payload = payload;
	taken = intake_take_once(s->opts.store, buf_str(&id), now_ms, cfg->database_retention_ms,
				 &ev, "slack click");
	if (taken <= 0) {
		if (taken < 0)
			reply(s, res, 503, "store", "store unavailable");
		else
			reply(s, res, 200, "duplicate", NULL);
		goto out;
	}
	{
		struct log_line *l = log_begin(LOG_INFO, "slack click queued");

		log_str(l, "action", SLACK_ACTION_POSTPONE);
		log_str(l, "user", c.user);
		log_str(l, "namespace", c.ns);
		log_str(l, "pod", c.pod);
		log_end(l);
	}
	reply(s, res, 200, "queued", NULL);
out:
	slack_click_release(&c);
	free(payload);
	buf_release(&err);
	buf_release(&id);
	buf_release(&key);
}

void slack_interact_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct slack_interact *s = ctx;
	const struct reload_gen *g = reload_acquire(s->opts.reload);
	const struct config *cfg = g ? g->cfg : s->opts.cfg;
	const char *secret = cfg->janitor.slack.signing_secret;
	const char *ts = srv_header(req, "X-Slack-Request-Timestamp");
	const char *sig = srv_header(req, "X-Slack-Signature");
	int64_t now_ms = s->opts.now_ms ? s->opts.now_ms(s->opts.now_ctx) : clock_wall_ms();
	int64_t ts_s;
	int fresh = slack_timestamp_fresh(ts, now_ms / 1000, &ts_s);

	if (!cfg->janitor.enabled || !secret || !*secret)
		reply(s, res, 404, "disabled", "not found");
	else if (req->body_len > SLACK_INTERACT_MAX_BODY)
		reply(s, res, 413, "too_large", "payload too large");
	else if (fresh < 0)
		refused(s, req, res, "no_timestamp");
	else if (!fresh)
		refused(s, req, res, "stale");
	else if (!sig || !*sig)
		refused(s, req, res, "no_signature");
	else if (!slack_signature_ok(secret, ts, req->body, req->body_len, sig))
		refused(s, req, res, "bad_signature");
	else
		take(s, cfg, req, res, now_ms);
	reload_release(s->opts.reload, g);
}
