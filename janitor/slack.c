/*
 * slack.c - Slack Web API and incoming-webhook client (see slack.h).
 *
 * Every request goes through call() and the API clients' retry loop
 * (core/api.h): wait out a known rate limit, send, judge the answer (here:
 * HTTP status, then Slack's "ok"/"error"), back off or give up.  Posts are
 * first paced per channel.  Time comes from the injected clock, so the unit
 * tests run in virtual time.
 */
#include "slack.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/api.h"
#include "core/http_client.h"
#include "core/log.h"
#include "core/utf8.h"
#include "core/xalloc.h"
#include "core/clock.h"
#include "core/banned.h"

#define DEFAULT_API_URL "https://slack.com/api"
#define MAX_TEXT_BYTES 40000        /* chat.postMessage truncates longer text */
#define MAX_ANSWER_BYTES (1u << 20) /* Slack's answers here are a few KiB */
#define BACKOFF_CAP_MS 30000
#define RETRY_AFTER_MAX_MS (86400000LL * 7)  /* a longer Retry-After is nonsense: ignored */
#define MAX_PACED 256               /* channels remembered for pacing (posted within 1 s) */
#define MAX_CODE_BYTES 100          /* Slack's error codes are short words */
#define MAX_EMAIL_BYTES 254         /* RFC 5321 path limit */
#define MAX_CHANNEL_NAME 80         /* Slack channel names are at most 80 characters */
#define REDACTED "[redacted]"

/* The endpoints; rate limits are per method, so each has its own block. */
enum method { M_POST, M_LOOKUP, M_OPEN, M_WEBHOOK, M_UPDATE, M_RESPOND, N_METHODS };

static const char *const method_name[N_METHODS] = {
	"chat.postMessage", "users.lookupByEmail", "conversations.open", "incoming webhook",
	"chat.update", "response_url",
};

struct paced {
	char *channel;
	int64_t last_ms;  /* end of the last post to it */
};

struct slack_client {
	char *api_url;
	char *token;
	char *auth_header;
	char *webhook_url;
	const char *webhook_path;  /* inside webhook_url: the secret part after the host */
	int webhook;
	int64_t timeout_ms;
	int64_t min_interval_ms;
	struct api_policy policy;  /* attempts, backoff, Retry-After and rate-limit waits */
	int64_t (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
	struct http_client *http;
	struct paced paced[MAX_PACED];
	size_t npaced;
	int64_t blocked_until_ms[N_METHODS];
};

/* One request as call() performs it. */
struct call {
	enum method m;
	const char *http_method;
	const char *url;
	const char *body;         /* JSON or NULL */
	const char *pace_key;     /* posts: the channel to pace; NULL: not paced */
};

/* What Slack's error code asks of us. */
enum code_class { C_INVALID, C_AUTH, C_NOTFOUND, C_TRANSIENT, C_RATELIMITED };

static int64_t now(struct slack_client *c)
{
	return c->now_ms(c->clock_ctx);
}

static void pause_ms(struct slack_client *c, int64_t ms)
{
	if (ms > 0)
		c->sleep_ms(c->clock_ctx, ms);
}

static char *strip_slashes(const char *s)
{
	char *r = xstrdup(s);
	size_t n = strlen(r);

	while (n && r[n - 1] == '/')
		r[--n] = '\0';
	return r;
}

/* The part of url after "scheme://host": what makes a webhook URL secret. */
static const char *url_path(const char *url)
{
	const char *p = strstr(url, "://");

	p = p ? strchr(p + 3, '/') : NULL;
	return p ? p : "";
}

struct slack_client *slack_client_new(const struct slack_options *opts)
{
	struct slack_client *c = xcalloc(1, sizeof(*c));
	struct http_client_options hopts = { .ca_file = opts->ca_file,
					     .max_body_bytes = MAX_ANSWER_BYTES };
	struct buf b = BUF_INIT;

	assert((opts->bot_token && *opts->bot_token) || (opts->webhook_url && *opts->webhook_url));
	c->api_url = strip_slashes(opts->api_url ? opts->api_url : DEFAULT_API_URL);
	c->token = xstrdup(opts->bot_token ? opts->bot_token : "");
	c->webhook_url = xstrdup(opts->webhook_url ? opts->webhook_url : "");
	c->webhook_path = url_path(c->webhook_url);
	c->webhook = !*c->token;
	(void)buf_printf(&b, "Authorization: Bearer %s", c->token);
	c->auth_header = buf_detach(&b);
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 10000;
	c->min_interval_ms = opts->min_interval_ms > 0 ? opts->min_interval_ms : 1000;
	c->policy.name = "slack";
	c->policy.max_attempts = opts->max_attempts > 0 ? opts->max_attempts : 4;
	c->policy.base_ms = opts->backoff_base_ms > 0 ? opts->backoff_base_ms : 1000;
	c->policy.cap_ms = BACKOFF_CAP_MS;
	c->policy.jitter = 0;  /* exact: base * 2^(attempt-1), capped */
	c->policy.retry_after_max_ms = RETRY_AFTER_MAX_MS;
	c->policy.block_max_wait_ms = opts->max_wait_ms > 0 ? opts->max_wait_ms : 60000;
	c->policy.block_log = "waiting for slack rate limit";
	c->now_ms = opts->now_ms ? opts->now_ms : clock_hook_now_ms;
	c->sleep_ms = opts->sleep_ms ? opts->sleep_ms : clock_hook_sleep_ms;
	c->clock_ctx = opts->clock_ctx;
	c->http = http_client_new(&hopts);
	return c;
}

static void wipe_free(char *s)
{
	if (s)
		memset(s, 0, strlen(s));
	free(s);
}

void slack_set_secret(struct slack_client *c, const char *bot_token, const char *webhook_url)
{
	struct buf b = BUF_INIT;

	if (!c)
		return;
	if (c->webhook && webhook_url && *webhook_url && strcmp(webhook_url, c->webhook_url)) {
		wipe_free(c->webhook_url);
		c->webhook_url = xstrdup(webhook_url);
		c->webhook_path = url_path(c->webhook_url);
	} else if (!c->webhook && bot_token && *bot_token && strcmp(bot_token, c->token)) {
		wipe_free(c->token);
		wipe_free(c->auth_header);
		c->token = xstrdup(bot_token);
		(void)buf_printf(&b, "Authorization: Bearer %s", c->token);
		c->auth_header = buf_detach(&b);
	}
}

void slack_client_free(struct slack_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	for (size_t i = 0; i < c->npaced; i++)
		free(c->paced[i].channel);
	free(c->api_url);
	wipe_free(c->token);
	wipe_free(c->auth_header);
	wipe_free(c->webhook_url);
	free(c);
}

int slack_webhook_mode(const struct slack_client *c)
{
	return c->webhook;
}

enum err slack_escape(const char *text, struct buf *out)
{
	struct buf tmp = BUF_INIT;
	enum err rc = ERR_OK;

	for (const char *p = text; p && *p; p++) {
		switch (*p) {
		case '&': rc = buf_adds(&tmp, "&amp;"); break;
		case '<': rc = buf_adds(&tmp, "&lt;"); break;
		case '>': rc = buf_adds(&tmp, "&gt;"); break;
		default: rc = buf_addch(&tmp, *p); break;
		}
		if (rc)
			goto out;
	}
	rc = buf_add(out, tmp.data ? tmp.data : "", tmp.len);
out:
	buf_release(&tmp);
	return rc;
}

/* ---- secrets out of messages ---- */

/* Replace every occurrence of secret (when non-trivial) in b by REDACTED. */
static void redact(struct buf *b, const char *secret)
{
	size_t n = secret ? strlen(secret) : 0;
	struct buf tmp = BUF_INIT;
	const char *p, *hit;

	if (n < 4 || !b->data || !strstr(b->data, secret))
		return;
	for (p = b->data; (hit = strstr(p, secret)) != NULL; p = hit + n) {
		(void)buf_add(&tmp, p, (size_t)(hit - p));
		(void)buf_adds(&tmp, REDACTED);
	}
	(void)buf_adds(&tmp, p);
	buf_reset(b);
	(void)buf_add(b, tmp.data ? tmp.data : "", tmp.len);
	buf_release(&tmp);
}

/* The last line of defence: no secret leaves in an error message. */
static void scrub(const struct slack_client *c, struct buf *errmsg)
{
	if (!errmsg)
		return;
	redact(errmsg, c->webhook_url);
	redact(errmsg, c->webhook_path);
	redact(errmsg, c->token);
}

/* The end of a call that wrote: answer, body and url freed, errmsg scrubbed; rc. */
static enum err call_done(const struct slack_client *c, enum err rc, json_t *answer,
			  char *body, struct buf *url, struct buf *errmsg)
{
	json_decref(answer);
	free(body);
	buf_release(url);
	scrub(c, errmsg);
	return rc;
}

/* ---- pacing and rate limits ---- */

/* Forget channels whose last post no longer constrains the next one. */
static void prune_paced(struct slack_client *c, int64_t t)
{
	size_t j = 0;

	for (size_t i = 0; i < c->npaced; i++) {
		if (c->paced[i].last_ms + c->min_interval_ms <= t) {
			free(c->paced[i].channel);
			continue;
		}
		c->paced[j++] = c->paced[i];
	}
	c->npaced = j;
}

static struct paced *find_paced(struct slack_client *c, const char *channel)
{
	for (size_t i = 0; i < c->npaced; i++)
		if (!strcmp(c->paced[i].channel, channel))
			return &c->paced[i];
	return NULL;
}

/* Wait until min_interval_ms after the previous post to channel. */
static void pace(struct slack_client *c, const char *channel)
{
	struct paced *p;

	prune_paced(c, now(c));
	p = find_paced(c, channel);
	if (p)
		pause_ms(c, p->last_ms + c->min_interval_ms - now(c));
}

static void note_post(struct slack_client *c, const char *channel)
{
	struct paced *p = find_paced(c, channel);

	if (!p) {
		if (c->npaced == MAX_PACED) { /* drop the oldest: only burst pacing is lost */
			free(c->paced[0].channel);
			memmove(c->paced, c->paced + 1, (MAX_PACED - 1) * sizeof(*c->paced));
			c->npaced--;
		}
		p = &c->paced[c->npaced++];
		p->channel = xstrdup(channel);
	}
	p->last_ms = now(c);
}

/* ---- judging answers ---- */

static enum code_class classify_code(const char *code)
{
	static const char *const auth[] = {
		"invalid_auth", "not_authed", "token_revoked", "token_expired",
		"account_inactive", "missing_scope", "not_allowed_token_type", "no_permission",
		"invalid_token", "no_service", "no_team", "team_disabled", NULL,
	};
	static const char *const notfound[] = {
		"channel_not_found", "users_not_found", "user_not_found", NULL,
	};
	static const char *const transient[] = {
		"internal_error", "fatal_error", "service_unavailable", "request_timeout", NULL,
	};

	if (!strcmp(code, "ratelimited") || !strcmp(code, "rate_limited"))
		return C_RATELIMITED;
	for (int i = 0; auth[i]; i++)
		if (!strcmp(code, auth[i]))
			return C_AUTH;
	for (int i = 0; notfound[i]; i++)
		if (!strcmp(code, notfound[i]))
			return C_NOTFOUND;
	for (int i = 0; transient[i]; i++)
		if (!strcmp(code, transient[i]))
			return C_TRANSIENT;
	return C_INVALID;
}

/*
 * A webhook's plain-text answer ("ok", "invalid_payload", ...), blanks
 * around it ignored, into out; nothing when it is not such a code (an HTML
 * error page of a proxy, say).
 */
static void text_code(const struct http_response *res, struct buf *out)
{
	const char *s = buf_str(&res->body);
	size_t n;

	while (*s == ' ' || *s == '\t' || *s == '\r' || *s == '\n')
		s++;
	n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789_");
	if (!n || n > MAX_CODE_BYTES || s[n + strspn(s + n, " \t\r\n")])
		return;
	(void)buf_add(out, s, n);
}

/*
 * Slack's verdict from the body: API_DONE for "ok": true (the JSON kept in
 * *answer) or a webhook's "ok"; else the error code in code.  Returns
 * API_FAILED with code "" when the body is neither.
 */
static enum api_verdict read_body(const struct call *k, const struct http_response *res,
			      json_t **answer, struct buf *code)
{
	json_t *root = json_loadb(buf_str(&res->body), res->body.len, 0, NULL);
	json_t *ok = json_object_get(root, "ok");
	json_t *error = json_object_get(root, "error");

	if (json_is_true(ok)) {
		*answer = root;
		return API_DONE;
	}
	if (json_is_false(ok)) {
		if (json_is_string(error) && json_string_length(error)) /* "channel_not_found" */
			(void)buf_add(code, json_string_value(error),
				      utf8_cut(json_string_value(error), json_string_length(error),
					       MAX_CODE_BYTES));
		else
			(void)buf_adds(code, "\"ok\": false without \"error\"");
		json_decref(root);
		return API_FAILED;
	}
	json_decref(root);
	if (k->m == M_WEBHOOK || k->m == M_RESPOND) {
		text_code(res, code);
		if (!strcmp(buf_str(code), "ok")) {
			buf_reset(code);
			return API_DONE;
		}
	}
	return API_FAILED;
}

/* http_do's message is "METHOD URL: text"; keep the text only (the URL may be secret). */
static void transport_message(const struct call *k, const char *detail, struct buf *errmsg)
{
	const char *p = strstr(detail, k->url);

	if (p && p[strlen(k->url)] == ':' && p[strlen(k->url) + 1] == ' ')
		detail = p + strlen(k->url) + 2;
	buf_setf(errmsg, "%s: %s", method_name[k->m], detail);
}

/* One call() across its attempts: what its hooks in the retry loop share. */
struct run {
	struct slack_client *c;
	const struct call *k;
	json_t **answer;
};

static int64_t run_blocked_until(void *ctx)
{
	struct run *r = ctx;

	return r->c->blocked_until_ms[r->k->m];
}

/* Before each attempt: a post waits for its channel's pace. */
static enum err run_prepare(void *ctx, int attempt, struct buf *errmsg)
{
	struct run *r = ctx;

	(void)attempt;
	(void)errmsg;
	if (r->k->pace_key)
		pace(r->c, r->k->pace_key);
	return ERR_OK;
}

/*
 * Judge attempt a: API_DONE (*answer holds the JSON, NULL for a webhook's
 * "ok"), API_FAILED (a->rc set) or API_TRANSIENT (a->wait_ms: the backoff,
 * 0 when a rate limit was recorded instead).  errmsg gets the detail either
 * way.
 */
static enum api_verdict judge(void *ctx, struct api_attempt *a, struct buf *errmsg)
{
	struct run *r = ctx;
	struct slack_client *c = r->c;
	const struct call *k = r->k;
	const struct http_response *res = a->res;
	json_t **answer = r->answer;
	enum err hrc = a->hrc;
	const char *name = method_name[k->m];
	struct buf code = BUF_INIT;
	int64_t retry_after_s = a->retry_after_s;  /* a week at most */
	enum api_verdict v = API_FAILED;
	enum code_class cls;
	int status = res->status;
	int ok2xx = status >= 200 && status < 300;

	a->wait_ms = 0;
	if (k->pace_key && res->sent)
		note_post(c, k->pace_key);
	if (hrc)
		transport_message(k, a->detail, errmsg);
	if (hrc == ERR_IO || hrc == ERR_RETRY) {
		a->wait_ms = API_BACKOFF;
		v = API_TRANSIENT;
		goto out;
	}
	if (hrc == ERR_TOOBIG) {
		buf_setf(errmsg, "%s: answer over %u bytes (HTTP %d)", name, MAX_ANSWER_BYTES,
			 status);
		a->rc = ERR_INVALID;
		goto out;
	}
	if (hrc != ERR_OK) {
		a->rc = hrc;
		goto out;
	}
	if (read_body(k, res, answer, &code) == API_DONE && ok2xx) {
		v = API_DONE;
		goto out;
	}
	json_decref(*answer);
	*answer = NULL;
	if (code.len)
		buf_setf(errmsg, "%s: %s (HTTP %d)", name, buf_str(&code), status);
	else if (ok2xx)
		buf_setf(errmsg, "%s: malformed answer (HTTP %d): not %s", name, status,
			 k->m == M_WEBHOOK ? "\"ok\"" : "JSON with a boolean \"ok\"");
	else
		buf_setf(errmsg, "%s: HTTP %d", name, status);
	cls = code.len ? classify_code(buf_str(&code)) : C_INVALID;
	if (status == 429 || status >= 500 || cls == C_RATELIMITED || cls == C_TRANSIENT) {
		/* Slack sends Retry-After with 429, and sometimes with 503 */
		if (retry_after_s >= 0)
			c->blocked_until_ms[k->m] = now(c) + retry_after_s * 1000;
		else
			a->wait_ms = API_BACKOFF;
		v = API_TRANSIENT;
		goto out;
	}
	if (cls == C_AUTH || (!code.len && (status == 401 || status == 403)))
		a->rc = ERR_AUTH;
	else if (cls == C_NOTFOUND)
		a->rc = ERR_NOTFOUND;
	else
		a->rc = ERR_INVALID;
out:
	buf_release(&code);
	return v;
}

/*
 * Perform k with pacing and retries.  On ERR_OK *answer holds Slack's JSON
 * (the caller frees it), or NULL for a webhook's "ok".
 */
static enum err call(struct slack_client *c, const struct call *k, json_t **answer,
		     struct buf *errmsg)
{
	const char *headers[3];
	struct http_request req = HTTP_REQUEST_INIT;
	struct http_response res;
	struct run r = { c, k, answer };
	enum err rc;
	int n = 0;

	*answer = NULL;
	http_response_init(&res);
	if (k->m != M_WEBHOOK && k->m != M_RESPOND)  /* a response_url needs no token */
		headers[n++] = c->auth_header;
	if (k->body)
		headers[n++] = "Content-Type: application/json; charset=utf-8";
	headers[n] = NULL;
	req.method = k->http_method;
	req.url = k->url;
	req.headers = headers;
	req.body = k->body;
	req.body_len = k->body ? strlen(k->body) : 0;
	req.timeout_ms = c->timeout_ms;
	req.connect_timeout_ms = c->timeout_ms < 10000 ? c->timeout_ms : 10000;
	req.follow_redirects = 0; /* never carry the token elsewhere */

	rc = api_call(&(struct api_call){ .policy = &c->policy, .http = &c->http, .req = &req,
					  .method = method_name[k->m], .ctx = &r,
					  .now_ms = c->now_ms, .sleep_ms = c->sleep_ms,
					  .clock_ctx = c->clock_ctx,
					  .blocked_until_ms = run_blocked_until,
					  .prepare = run_prepare, .judge = judge },
		      &res, NULL, errmsg);
	http_response_release(&res);
	return rc;
}

/* ---- chat.postMessage and the webhook ---- */

/* Copy the string at key of obj into dst[SLACK_ID_MAX]; -1 when absent, empty or too long. */
static int copy_id(json_t *obj, const char *key, char *dst)
{
	json_t *v = json_object_get(obj, key);
	const char *s = json_is_string(v) ? json_string_value(v) : "";
	size_t n = strlen(s);

	if (!n || n >= SLACK_ID_MAX)
		return -1;
	memcpy(dst, s, n + 1);
	return 0;
}

static int set_str(json_t *obj, const char *key, const char *value)
{
	json_t *s = json_string(value);
	return s ? json_object_set_new(obj, key, s) : -1;
}

/* The request body; NULL when a string is not valid UTF-8 or blocks not a JSON array. */
static char *post_body(const struct slack_client *c, const char *channel, const char *text,
		       const char *blocks, const char *thread_ts)
{
	json_t *obj = json_object();
	int failed = set_str(obj, "text", text);
	char *s = NULL;

	if (blocks) {
		json_t *b = json_loads(blocks, 0, NULL);

		failed |= !json_is_array(b) || json_object_set_new(obj, "blocks", b);
		if (!json_is_array(b))
			json_decref(b);
	}
	if (!c->webhook) {
		failed |= set_str(obj, "channel", channel);
		if (thread_ts && *thread_ts)
			failed |= set_str(obj, "thread_ts", thread_ts);
		failed |= json_object_set_new(obj, "unfurl_links", json_false());
	}
	if (!failed)
		s = json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return s;
}

enum err slack_post(struct slack_client *c, const char *channel, const char *text,
		    const char *thread_ts, struct slack_posted *out, struct buf *errmsg)
{
	return slack_post_blocks(c, channel, text, NULL, thread_ts, out, errmsg);
}

enum err slack_post_blocks(struct slack_client *c, const char *channel, const char *text,
			   const char *blocks, const char *thread_ts, struct slack_posted *out,
			   struct buf *errmsg)
{
	const char *name = method_name[c->webhook ? M_WEBHOOK : M_POST];
	struct call k = { c->webhook ? M_WEBHOOK : M_POST, "POST", NULL, NULL, NULL };
	struct buf url = BUF_INIT;
	json_t *answer = NULL;
	char *body = NULL;
	enum err rc = ERR_OK;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!text || !*text || strlen(text) > MAX_TEXT_BYTES || !utf8_valid(text, strlen(text))) {
		buf_setf(errmsg, "%s: text must be 1 to %d bytes of UTF-8", name, MAX_TEXT_BYTES);
		rc = ERR_INVALID;
		goto out;
	}
	if (!c->webhook && (!channel || !*channel)) {
		buf_setf(errmsg, "%s: no channel", name);
		rc = ERR_INVALID;
		goto out;
	}
	body = post_body(c, channel, text, blocks, thread_ts);
	if (!body) {
		buf_setf(errmsg, "%s: %s", name, blocks ? "blocks is not a JSON array"
						       : "channel or thread_ts is not UTF-8");
		rc = ERR_INVALID;
		goto out;
	}
	if (c->webhook)
		(void)buf_adds(&url, c->webhook_url);
	else
		(void)buf_printf(&url, "%s/chat.postMessage", c->api_url);
	k.url = buf_str(&url);
	k.body = body;
	k.pace_key = c->webhook ? "" : channel;
	rc = call(c, &k, &answer, errmsg);
	if (rc || c->webhook)
		goto out;
	if (out && (copy_id(answer, "channel", out->channel) || copy_id(answer, "ts", out->ts))) {
		memset(out, 0, sizeof(*out));
		buf_setf(errmsg, "%s: malformed answer: no channel or ts (the message was posted)",
			 name);
		rc = ERR_INVALID;
	}
out:
	return call_done(c, rc, answer, body, &url, errmsg);
}

/* ---- owner resolution ---- */

enum target { T_NONE, T_USER, T_CHANNEL, T_EMAIL };

/* An upper-case letter then upper-case letters and digits, as Slack's IDs are. */
static int is_id(const char *s)
{
	size_t n = strlen(s);

	if (n < 2 || n >= SLACK_ID_MAX)
		return 0;
	for (size_t i = 0; i < n; i++) {
		int upper = s[i] >= 'A' && s[i] <= 'Z', digit = s[i] >= '0' && s[i] <= '9';
		if (!upper && !(digit && i > 0))
			return 0;
	}
	return 1;
}

static int has_blank_or_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s <= 0x20 || *s == 0x7f)
			return 1;
	return 0;
}

static enum target classify_target(const char *v)
{
	const char *at = strchr(v, '@');

	if (has_blank_or_control(v))
		return T_NONE;
	if (v[0] == '#')
		return v[1] && strlen(v + 1) <= MAX_CHANNEL_NAME && !strpbrk(v, "<>&@") ?
			       T_CHANNEL : T_NONE;
	if (is_id(v))
		return v[0] == 'U' || v[0] == 'W' ? T_USER :
		       v[0] == 'C' || v[0] == 'G' || v[0] == 'D' ? T_CHANNEL : T_NONE;
	if (at && at != v && at[1] && !strchr(at + 1, '@') && strlen(v) <= MAX_EMAIL_BYTES &&
	    !strpbrk(v, "<>&,;\"") && utf8_valid(v, strlen(v)))
		return T_EMAIL;
	return T_NONE;
}

/* answer's obj.id into id[SLACK_ID_MAX]; ERR_INVALID "malformed answer" when none. */
static enum err answer_id(json_t *answer, const char *obj, enum method m, char *id,
			  struct buf *errmsg)
{
	if (!copy_id(json_object_get(answer, obj), "id", id) && is_id(id))
		return ERR_OK;
	buf_setf(errmsg, "%s: malformed answer: no %s.id", method_name[m], obj);
	return ERR_INVALID;
}

/*
 * users.lookupByEmail: the user ID of email into user[SLACK_ID_MAX].
 * (docs.slack.dev/reference/methods/users.lookupByEmail)
 */
static enum err lookup_email(struct slack_client *c, const char *email, char *user,
			     struct buf *errmsg)
{
	struct call k = { M_LOOKUP, "GET", NULL, NULL, NULL };
	struct buf url = BUF_INIT;
	json_t *answer = NULL;
	enum err rc;

	(void)buf_printf(&url, "%s/users.lookupByEmail?email=", c->api_url);
	http_url_escape(email, &url);
	k.url = buf_str(&url);
	rc = call(c, &k, &answer, errmsg);
	if (rc == ERR_OK)
		rc = answer_id(answer, "user", M_LOOKUP, user, errmsg);
	json_decref(answer);
	buf_release(&url);
	return rc;
}

/*
 * conversations.open {"users": user}: the DM channel's ID into channel.
 * (docs.slack.dev/reference/methods/conversations.open)
 */
static enum err open_dm(struct slack_client *c, const char *user, struct buf *channel,
			struct buf *errmsg)
{
	struct call k = { M_OPEN, "POST", NULL, NULL, NULL };
	struct buf url = BUF_INIT;
	json_t *answer = NULL;
	json_t *req = json_object();
	char id[SLACK_ID_MAX];
	char *body;
	enum err rc;

	(void)set_str(req, "users", user); /* user passed is_id(): ASCII */
	body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	(void)buf_printf(&url, "%s/conversations.open", c->api_url);
	k.url = buf_str(&url);
	k.body = body;
	rc = call(c, &k, &answer, errmsg);
	if (rc == ERR_OK)
		rc = answer_id(answer, "channel", M_OPEN, id, errmsg);
	if (rc == ERR_OK) {
		buf_reset(channel);
		(void)buf_adds(channel, id);
	}
	json_decref(answer);
	free(body);
	buf_release(&url);
	return rc;
}

/* Resolve one owner value v (already classified) to a channel. */
static enum err resolve_one(struct slack_client *c, enum target t, const char *v,
			    struct buf *channel, struct buf *errmsg)
{
	char user[SLACK_ID_MAX];
	enum err rc;

	switch (t) {
	case T_CHANNEL:
		buf_reset(channel);
		(void)buf_adds(channel, v);
		return ERR_OK;
	case T_EMAIL:
		rc = lookup_email(c, v, user, errmsg);
		return rc ? rc : open_dm(c, user, channel, errmsg);
	case T_USER:
		return open_dm(c, v, channel, errmsg);
	case T_NONE:
		break;
	}
	buf_setf(errmsg, "not a slack user ID, channel or e-mail address");
	return ERR_NOTFOUND;
}

static char *trimmed(const char *s)
{
	size_t n;

	s = s ? s : "";
	while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
		s++;
	n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		n--;
	return xstrndup(s, n);
}

enum err slack_resolve_owner(struct slack_client *c, const char *notify_annotation,
			     const char *owner_label_value, const char *namespace_channel,
			     const char *default_channel, struct buf *channel_out,
			     struct buf *errmsg)
{
	static const char *const source[] = {
		"janitor/notify annotation", "owner label", "namespace channel", "default channel",
	};
	const char *given[] = { notify_annotation, owner_label_value, namespace_channel,
				default_channel };
	struct buf tried = BUF_INIT;
	struct buf why = BUF_INIT;
	enum err rc = ERR_NOTFOUND;

	buf_reset(channel_out);
	if (c->webhook) {
		rc = ERR_OK;
		goto out;
	}
	for (int i = 0; i < 4; i++) {
		char *v = trimmed(given[i]);
		enum target t = classify_target(v);
		struct log_line *l;

		buf_reset(&why);
		if (*v && i >= 2 && t != T_CHANNEL) {
			buf_setf(&why, "not a slack channel name or ID");
			rc = ERR_NOTFOUND;
		} else if (*v) {
			rc = resolve_one(c, t, v, channel_out, &why);
		}
		if (!*v || rc == ERR_NOTFOUND) {
			if (*v) {
				scrub(c, &why);
				l = log_begin(LOG_WARN, "slack owner not found, trying the next");
				log_str(l, "error", buf_str(&why));
				log_str(l, "source", source[i]);
				log_str(l, "value", v);
				log_end(l);
				(void)buf_printf(&tried, "%s%s \"%s\" (%s)", tried.len ? ", " : "",
						 source[i], v, buf_str(&why));
			}
			free(v);
			rc = ERR_NOTFOUND;
			continue;
		}
		if (rc)
			buf_setf(errmsg, "%s \"%s\": %s", source[i], v, buf_str(&why));
		free(v);
		goto out;
	}
	if (tried.len)
		buf_setf(errmsg, "no slack channel for the owner: tried %s", buf_str(&tried));
	else
		buf_setf(errmsg, "no slack channel for the owner: no owner, namespace or default "
			 "channel given");
out:
	buf_release(&tried);
	buf_release(&why);
	scrub(c, errmsg);
	return rc;
}

/* ---- interactivity: chat.update, response_url, the user of an owner value ---- */

enum err slack_update(struct slack_client *c, const char *channel, const char *ts,
		      const char *text, const char *blocks, struct buf *errmsg)
{
	struct call k = { M_UPDATE, "POST", NULL, NULL, NULL };
	struct buf url = BUF_INIT;
	json_t *answer = NULL;
	char *body = NULL;
	enum err rc = ERR_INVALID;
	json_t *o;

	if (c->webhook || !channel || !*channel || !ts || !*ts || !text || !*text ||
	    strlen(text) > MAX_TEXT_BYTES) {
		buf_setf(errmsg, "%s: needs bot mode, a channel, a ts and 1 to %d bytes of text",
			 method_name[M_UPDATE], MAX_TEXT_BYTES);
		goto out;
	}
	body = post_body(c, channel, text, blocks, NULL);
	o = body ? json_loads(body, 0, NULL) : NULL;
	free(body);
	body = NULL;
	if (o && !set_str(o, "ts", ts)) {
		json_object_del(o, "unfurl_links");
		body = json_dumps(o, JSON_COMPACT);
	}
	json_decref(o);
	if (!body) {
		buf_setf(errmsg, "%s: a string is not UTF-8, or bad blocks", method_name[M_UPDATE]);
		goto out;
	}
	(void)buf_printf(&url, "%s/chat.update", c->api_url);
	k.url = buf_str(&url);
	k.body = body;
	rc = call(c, &k, &answer, errmsg);
out:
	return call_done(c, rc, answer, body, &url, errmsg);
}

/* The length of url's origin ("scheme://host[:port]", RFC 6454); 0 when it has none. */
static size_t origin_len(const char *url)
{
	const char *p = strstr(url, "://");

	return p ? (size_t)(p + 3 - url) + strcspn(p + 3, "/?#") : 0;
}

int slack_response_url_ok(const struct slack_client *c, const char *url)
{
	static const char hooks[] = "https://hooks.slack.com/";
	size_t n;

	if (!url || !*url || has_blank_or_control(url))
		return 0;
	if (!strncmp(url, hooks, sizeof(hooks) - 1))
		return 1;
	n = origin_len(c->api_url);
	return n && !strncmp(url, c->api_url, n) && url[n] == '/';
}

enum err slack_respond(struct slack_client *c, const char *response_url, const char *text,
		       struct buf *errmsg)
{
	struct call k = { M_RESPOND, "POST", NULL, NULL, NULL };
	json_t *answer = NULL, *o = json_object();
	char *body = NULL;
	enum err rc = ERR_INVALID;

	if (!slack_response_url_ok(c, response_url)) {
		buf_setf(errmsg, "%s: not a Slack URL", method_name[M_RESPOND]);
		goto out;
	}
	if (set_str(o, "text", text) || set_str(o, "response_type", "ephemeral") ||
	    json_object_set_new(o, "replace_original", json_false()) ||
	    !(body = json_dumps(o, JSON_COMPACT))) {
		buf_setf(errmsg, "%s: text is not UTF-8", method_name[M_RESPOND]);
		goto out;
	}
	k.url = response_url;
	k.body = body;
	rc = call(c, &k, &answer, errmsg);
out:
	json_decref(o);
	json_decref(answer);
	free(body);
	return rc;
}

enum err slack_user_id(struct slack_client *c, const char *value, char user[SLACK_ID_MAX],
		       struct buf *errmsg)
{
	char *v = value ? trimmed(value) : NULL;
	enum target t = v ? classify_target(v) : T_NONE;
	enum err rc = ERR_NOTFOUND;

	user[0] = '\0';
	if (t == T_USER && strlen(v) < SLACK_ID_MAX) {
		memcpy(user, v, strlen(v) + 1);
		rc = ERR_OK;
	} else if (t == T_EMAIL && !c->webhook) {
		rc = lookup_email(c, v, user, errmsg);
	} else {
		buf_setf(errmsg, "not a Slack user ID or an e-mail address");
	}
	free(v);
	return rc;
}
