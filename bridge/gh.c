/*
 * gh.c - GitHub REST client: issues, comments, labels (see gh.h).
 *
 * Every call goes through one loop, call(): wait out a known rate limit,
 * pace mutating calls, send, judge the answer, and back off or give up.
 * Waiting uses the injected clock, so unit tests run in virtual time.
 */
#include "gh.h"
#include "gh_assignees.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/http_client.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/xalloc.h"
#include "core/clock.h"
#include "core/banned.h"

#define API_VERSION "2022-11-28"
#define MAX_BUDGET 80              /* GitHub's content-creation ceiling per minute */
#define MAX_HOUR_BUDGET 500        /* ... and per hour */
#define MINUTE_MS 60000
#define HOUR_MS 3600000
#define BACKOFF_CAP_MS 60000
#define SECONDARY_MIN_WAIT_MS 60000  /* GitHub: "wait at least one minute" */
#define MAX_RATELIMIT_WAIT_MS 3600000
#define AMBIGUOUS_MARGIN_MS 60000
#define MAX_PAGES 10               /* find_marker: at most 1000 issues */
#define MAX_BODY_BYTES (32u << 20) /* a page of 100 issues of 64 KiB bodies fits */
#define MAX_ERRMSG_JSON 1024

/* At most cap mutations in any span_ms: the times of the last cap, as a ring. */
struct window {
	int64_t *t;
	int cap;
	int len;
	int pos;      /* the oldest once len == cap; the next slot to write */
	int64_t span_ms;
};

struct gh_client {
	char *api_url;
	char *token;
	char *auth_header;
	char *ua_header;
	int64_t timeout_ms;
	int64_t min_interval_ms;
	int max_attempts;
	int64_t backoff_base_ms;
	int dry_run;
	int64_t (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
	int (*stopping)(void *ctx);
	struct http_client *http;
	int64_t last_mutation_ms;  /* end of the last mutating request; 0: none yet */
	struct window minute;      /* content_per_minute */
	struct window hour;        /* content_per_hour */
	int64_t blocked_until_ms;  /* no request before this (rate limit) */
	uint64_t rng;
	struct gh_stats stats;
};

/* One API call as call() performs it. */
struct call {
	const char *method;
	const char *path;     /* "/repos/o/r/issues"; for messages and dry-run logs */
	const char *url;      /* absolute; NULL: api_url + path */
	const char *body;     /* JSON or NULL */
	int mutating;
	const char *repo;     /* for an ambiguous create: where to look for the marker */
	const char *marker;   /* non-NULL for creates and marked comments */
	int64_t number;       /* a marked comment: its issue; 0 for an issue create */
};

/* How one attempt ended. */
enum verdict { DONE, FAILED, TRANSIENT };

static int64_t now(struct gh_client *c)
{
	return c->now_ms(c->clock_ctx);
}

static void window_init(struct window *w, int cap, int max, int64_t span_ms)
{
	w->cap = cap > 0 && cap < max ? cap : max;
	w->t = xcalloc((size_t)w->cap, sizeof(*w->t));
	w->span_ms = span_ms;
}

/* How long until one more fits (<= 0: now). */
static int64_t window_wait_ms(const struct window *w, int64_t now_ms)
{
	return w->len < w->cap ? 0 : w->t[w->pos] + w->span_ms - now_ms;
}

static void window_note(struct window *w, int64_t t_ms)
{
	w->t[w->pos] = t_ms;
	w->pos = (w->pos + 1) % w->cap;
	if (w->len < w->cap)
		w->len++;
}

/* How many more fit now. */
static int window_left(const struct window *w, int64_t now_ms)
{
	int used = 0;

	for (int i = 0; i < w->len; i++)
		used += w->t[i] + w->span_ms > now_ms;
	return w->cap - used;
}

static void pause_ms(struct gh_client *c, int64_t ms, int64_t *counter)
{
	if (ms <= 0)
		return;
	c->sleep_ms(c->clock_ctx, ms);
	*counter += ms;
}

struct gh_client *gh_client_new(const struct gh_options *opts)
{
	struct gh_client *c = xcalloc(1, sizeof(*c));
	struct http_client_options hopts = { .ca_file = opts->ca_file,
					      .max_body_bytes = MAX_BODY_BYTES };
	struct buf b = BUF_INIT;
	size_t n;

	c->api_url = xstrdup(opts->api_url ? opts->api_url : "https://api.github.com");
	n = strlen(c->api_url);
	while (n && c->api_url[n - 1] == '/')
		c->api_url[--n] = '\0';
	c->token = xstrdup(opts->token ? opts->token : "");
	(void)buf_printf(&b, "Authorization: Bearer %s", c->token);
	c->auth_header = buf_detach(&b);
	(void)buf_printf(&b, "User-Agent: %s", opts->user_agent ? opts->user_agent : "alertbridge");
	c->ua_header = buf_detach(&b);
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 10000;
	/* window_ms (a test hook) scales both windows: the hour is 60 of them. */
	window_init(&c->minute, opts->content_per_minute, MAX_BUDGET,
		    opts->window_ms > 0 ? opts->window_ms : MINUTE_MS);
	window_init(&c->hour, opts->content_per_hour, MAX_HOUR_BUDGET,
		    opts->window_ms > 0 ? 60 * opts->window_ms : HOUR_MS);
	c->min_interval_ms = opts->min_interval_ms > 0 ? opts->min_interval_ms : 1000;
	c->max_attempts = opts->max_attempts > 0 ? opts->max_attempts : 5;
	c->backoff_base_ms = opts->backoff_base_ms > 0 ? opts->backoff_base_ms : 1000;
	c->dry_run = opts->dry_run || !*c->token;
	c->now_ms = opts->now_ms ? opts->now_ms : clock_hook_now_ms;
	c->sleep_ms = opts->sleep_ms ? opts->sleep_ms : clock_hook_sleep_ms;
	c->clock_ctx = opts->clock_ctx;
	c->stopping = opts->stopping;
	c->http = http_client_new(&hopts);
	c->rng = (uint64_t)clock_wall_ms() ^ (uint64_t)(uintptr_t)c ^ 0x9e3779b97f4a7c15u;
	if (!c->rng)
		c->rng = 1;
	c->stats.ratelimit_remaining = -1;
	return c;
}

void gh_client_free(struct gh_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	free(c->minute.t);
	free(c->hour.t);
	free(c->api_url);
	if (c->token) /* wipe the secret copies before handing memory back */
		memset(c->token, 0, strlen(c->token));
	free(c->token);
	if (c->auth_header)
		memset(c->auth_header, 0, strlen(c->auth_header));
	free(c->auth_header);
	free(c->ua_header);
	free(c);
}

int gh_dry_run(const struct gh_client *c)
{
	return c->dry_run;
}

void gh_issue_release(struct gh_issue *is)
{
	if (!is)
		return;
	free(is->repo);
	free(is->state);
	free(is->state_reason);
	free(is->html_url);
	free(is->body);
	for (char **l = is->labels; l && *l; l++)
		free(*l);
	free(is->labels);
	memset(is, 0, sizeof(*is));
}

void gh_stats(const struct gh_client *c, struct gh_stats *out)
{
	*out = c->stats;
	out->content_left_minute = window_left(&c->minute, c->now_ms(c->clock_ctx));
	out->content_left_hour = window_left(&c->hour, c->now_ms(c->clock_ctx));
}

/* ---- time and text helpers ---- */

/* GitHub's "YYYY-MM-DDTHH:MM:SSZ" (RFC 3339); 0 when s is NULL or malformed. */
static int64_t parse_iso8601(const char *s)
{
	int64_t ms;

	return rfc3339_parse(s, &ms) == ERR_OK ? ms : 0;
}

/* Parse a non-negative decimal header value; -1 when absent or malformed. */
static int64_t header_int(const struct http_response *res, const char *name)
{
	const char *s = http_response_header(res, name);
	char *end = NULL;
	long long v;

	if (!s || !*s)
		return -1;
	v = strtoll(s, &end, 10);
	if (*end || v < 0)
		return -1;
	return v;
}

/*
 * "owner/name" with GitHub's characters only, so that it cannot change the
 * request path.
 */
static int valid_repo(const char *repo)
{
	const char *slash;

	if (!repo)
		return 0;
	slash = strchr(repo, '/');
	if (!slash || slash == repo || !slash[1] || strchr(slash + 1, '/'))
		return 0;
	if (!strcmp(slash + 1, ".") || !strcmp(slash + 1, ".."))
		return 0;
	for (const char *p = repo; *p; p++) {
		if (p == slash)
			continue;
		if (!(*p >= 'a' && *p <= 'z') && !(*p >= 'A' && *p <= 'Z') &&
		    !(*p >= '0' && *p <= '9') && *p != '-' && *p != '_' && *p != '.')
			return 0;
	}
	return 1;
}

static uint64_t next_random(struct gh_client *c)
{
	/* xorshift64*: jitter only, not security. */
	c->rng ^= c->rng >> 12;
	c->rng ^= c->rng << 25;
	c->rng ^= c->rng >> 27;
	return c->rng * 0x2545f4914f6cdd1dULL;
}

/* base * 2^(attempt-1), capped at 60 s, jittered into [d/2, d]. */
static int64_t backoff_ms(struct gh_client *c, int attempt)
{
	int64_t d = c->backoff_base_ms;

	for (int i = 1; i < attempt && d < BACKOFF_CAP_MS; i++)
		d *= 2;
	if (d > BACKOFF_CAP_MS)
		d = BACKOFF_CAP_MS;
	return d / 2 + (int64_t)(next_random(c) % (uint64_t)(d / 2 + 1));
}

/* 60 s * 2^(attempt-1), capped at 16 min. */
static int64_t secondary_wait_ms(int attempt)
{
	int64_t d = SECONDARY_MIN_WAIT_MS;

	for (int i = 1; i < attempt && i < 5; i++)
		d *= 2;
	return d;
}

/* ---- pacing and rate limits ---- */

static void wait_rate_limit(struct gh_client *c)
{
	int64_t wait = c->blocked_until_ms - now(c);
	struct log_line *l;

	if (wait <= 0)
		return;
	l = log_begin(LOG_INFO, "waiting for github rate limit");
	log_int(l, "wait_ms", wait);
	log_end(l);
	pause_ms(c, wait, &c->stats.ratelimit_wait_ms);
}

/*
 * Mutating calls: min_interval_ms apart, at most content_per_minute in any
 * 60 s and content_per_hour in any hour.
 */
static void pace(struct gh_client *c)
{
	int64_t t = now(c), wait = 0;

	if (c->last_mutation_ms)
		wait = c->last_mutation_ms + c->min_interval_ms - t;
	if (window_wait_ms(&c->minute, t) > wait)
		wait = window_wait_ms(&c->minute, t);
	if (window_wait_ms(&c->hour, t) > wait)
		wait = window_wait_ms(&c->hour, t);
	pause_ms(c, wait, &c->stats.pacing_wait_ms);
}

static void note_mutation(struct gh_client *c)
{
	int64_t t = now(c);

	c->last_mutation_ms = t;
	window_note(&c->minute, t);
	window_note(&c->hour, t);
}

/* Block until t (ms), capped, unless already blocked longer. */
static void block_until(struct gh_client *c, int64_t t)
{
	int64_t cap = now(c) + MAX_RATELIMIT_WAIT_MS;

	if (t > cap)
		t = cap;
	if (t > c->blocked_until_ms)
		c->blocked_until_ms = t;
}

/* Remember the primary limit; an exhausted one blocks until its reset. */
static void note_ratelimit(struct gh_client *c, const struct http_response *res)
{
	int64_t remaining = header_int(res, "x-ratelimit-remaining");
	int64_t reset_s = header_int(res, "x-ratelimit-reset");

	if (remaining < 0)
		return;
	c->stats.ratelimit_remaining = remaining;
	if (remaining == 0 && reset_s > 0)
		block_until(c, reset_s * 1000);
}

/* ---- judging answers ---- */

/* GitHub's error body: "message" and "errors"; appended to errmsg. */
static void add_github_message(struct buf *errmsg, const struct http_response *res)
{
	json_t *root = json_loadb(res->body.data ? res->body.data : "", res->body.len, 0, NULL);
	json_t *msg = json_object_get(root, "message");
	json_t *errs = json_object_get(root, "errors");

	if (json_is_string(msg))
		(void)buf_printf(errmsg, ": %s", json_string_value(msg));
	if (errs) {
		char *s = json_dumps(errs, JSON_COMPACT);
		if (s && strlen(s) > MAX_ERRMSG_JSON)
			s[MAX_ERRMSG_JSON] = '\0';
		if (s)
			(void)buf_printf(errmsg, " (errors: %s)", s);
		free(s);
	}
	json_decref(root);
}

static int is_rate_limited(const struct http_response *res)
{
	const char *msg;

	if (res->status == 429)
		return 1;
	if (res->status != 403)
		return 0;
	if (http_response_header(res, "retry-after") ||
	    header_int(res, "x-ratelimit-remaining") == 0)
		return 1;
	msg = buf_str(&res->body);
	return strcasestr(msg, "secondary rate limit") || strcasestr(msg, "rate limit exceeded");
}

/* Status words used in messages. */
static const char *status_word(int status)
{
	switch (status) {
	case 401: return "unauthorized";
	case 403: return "forbidden";
	case 404: return "not found";
	case 410: return "gone";
	case 422: return "unprocessable";
	case 429: return "too many requests";
	default: return status >= 500 ? "server error" : "error";
	}
}

/*
 * Judge one attempt: DONE (2xx), FAILED (*rc set, do not retry) or
 * TRANSIENT (*ambiguous: the server may have acted on it).  Rate limits set
 * blocked_until_ms; other transient answers set *wait_ms.  errmsg holds the
 * detail either way.
 */
static enum verdict judge(struct gh_client *c, const struct call *k, enum err hrc,
			  const struct http_response *res, int attempt, enum err *rc,
			  int64_t *wait_ms, int *ambiguous, struct buf *errmsg)
{
	int64_t retry_after_s;
	int status = res->status;

	*wait_ms = 0;
	*ambiguous = 0;
	if (hrc == ERR_IO || hrc == ERR_RETRY) {
		c->stats.requests_failed++;
		*ambiguous = res->sent;
		*wait_ms = backoff_ms(c, attempt);
		return TRANSIENT; /* errmsg: http_do's detail */
	}
	if (hrc != ERR_OK) {
		*rc = hrc;
		return FAILED;
	}
	if (status >= 200 && status < 300) {
		c->stats.requests_ok++;
		return DONE;
	}
	buf_setf(errmsg, "%s %s: %d %s", k->method, k->path, status, status_word(status));
	add_github_message(errmsg, res);
	retry_after_s = header_int(res, "retry-after");
	if (is_rate_limited(res)) {
		int64_t reset_s = header_int(res, "x-ratelimit-reset");
		c->stats.requests_rate_limited++;
		if (retry_after_s >= 0)
			block_until(c, now(c) + retry_after_s * 1000);
		else if (header_int(res, "x-ratelimit-remaining") == 0 && reset_s > 0)
			block_until(c, reset_s * 1000);
		else /* no headers: GitHub asks for a minute, then exponentially longer */
			block_until(c, now(c) + secondary_wait_ms(attempt));
		return TRANSIENT;
	}
	if (status >= 500) {
		c->stats.requests_server_error++;
		*ambiguous = 1;
		if (retry_after_s >= 0)
			block_until(c, now(c) + retry_after_s * 1000);
		else
			*wait_ms = backoff_ms(c, attempt);
		return TRANSIENT;
	}
	c->stats.requests_client_error++;
	if (status == 401)
		c->stats.requests_unauthorized++;
	switch (status) {
	case 401:
	case 403: *rc = ERR_AUTH; break;
	case 404: *rc = ERR_NOTFOUND; break;
	case 410: *rc = ERR_GONE; break;
	default: *rc = ERR_INVALID; break;
	}
	return FAILED;
}

/* ---- the request loop ---- */

static enum err find_marker(struct gh_client *c, const char *repo, const char *marker,
			    int64_t since_ms, struct gh_issue *out, struct buf *errmsg);

/*
 * An ambiguous create: look for its marker among the issues created since
 * a margin before the attempt.  ERR_OK and *out when found, ERR_NOTFOUND
 * when it was not created, another error when GitHub could not tell.
 */
static enum err find_comment_marker(struct gh_client *c, const char *repo, int64_t number,
				    const char *marker, int64_t since_ms, struct buf *errmsg);

static enum err resolve_ambiguous(struct gh_client *c, const struct call *k, int64_t attempt_ms,
				  struct gh_issue *out)
{
	struct buf why = BUF_INIT;
	enum err rc;
	struct log_line *l;

	if (k->number) {
		rc = find_comment_marker(c, k->repo, k->number, k->marker,
					 attempt_ms - AMBIGUOUS_MARGIN_MS, &why);
		if (rc == ERR_OK) {
			c->stats.ambiguous_resolved++;
			l = log_begin(LOG_INFO, "ambiguous comment resolved by marker");
			log_str(l, "repo", k->repo);
			log_int(l, "issue", k->number);
			log_end(l);
		}
		buf_release(&why);
		return rc;
	}
	rc = find_marker(c, k->repo, k->marker, attempt_ms - AMBIGUOUS_MARGIN_MS, out, &why);
	if (rc == ERR_OK) {
		c->stats.ambiguous_resolved++;
		l = log_begin(LOG_INFO, "ambiguous create resolved by marker");
		log_str(l, "repo", out->repo);
		log_int(l, "issue", out->number);
		log_end(l);
	}
	buf_release(&why);
	return rc;
}

/*
 * Perform k with pacing and retries; on ERR_OK res holds the 2xx answer.
 * For a create (k->marker set) an ambiguous failure may end in ERR_OK with
 * *found filled (found->number != 0) and res not meaningful.
 */
static enum err call(struct gh_client *c, const struct call *k, struct http_response *res,
		     struct gh_issue *found, struct buf *errmsg)
{
	const char *headers[7];
	struct http_request req = HTTP_REQUEST_INIT;
	struct buf url = BUF_INIT;
	struct buf local_err = BUF_INIT;
	enum err rc = ERR_OK;
	int n = 0;

	if (!errmsg)
		errmsg = &local_err;

	headers[n++] = c->auth_header;
	headers[n++] = "Accept: application/vnd.github+json";
	headers[n++] = "X-GitHub-Api-Version: " API_VERSION;
	headers[n++] = c->ua_header;
	if (k->body)
		headers[n++] = "Content-Type: application/json";
	headers[n] = NULL;
	if (k->url)
		(void)buf_adds(&url, k->url);
	else
		(void)buf_printf(&url, "%s%s", c->api_url, k->path);
	req.method = k->method;
	req.url = buf_str(&url);
	req.headers = headers;
	req.body = k->body;
	req.body_len = k->body ? strlen(k->body) : 0;
	req.timeout_ms = c->timeout_ms;
	req.connect_timeout_ms = c->timeout_ms < 10000 ? c->timeout_ms : 10000;
	req.follow_redirects = 1;
	req.fresh_connect = k->mutating;

	for (int attempt = 1;; attempt++) {
		int64_t attempt_ms, wait_ms;
		int ambiguous;
		enum err hrc;

		wait_rate_limit(c);
		if (k->mutating)
			pace(c);
		if (c->stopping && c->stopping(c->clock_ctx)) {
			/* The wait may have been cut short: sending now could break it. */
			if (attempt > 1)
				(void)buf_adds(errmsg, "; ");
			else
				buf_reset(errmsg);
			(void)buf_printf(errmsg, "%s %s: not sent: stopping", k->method, k->path);
			rc = ERR_RETRY;
			goto out;
		}
		attempt_ms = now(c);
		hrc = http_do(c->http, &req, res, errmsg);
		if (k->mutating && res->sent)
			note_mutation(c);
		note_ratelimit(c, res);
		switch (judge(c, k, hrc, res, attempt, &rc, &wait_ms, &ambiguous, errmsg)) {
		case DONE:
			rc = ERR_OK;
			goto out;
		case FAILED:
			goto out;
		case TRANSIENT:
			break;
		}
		if (attempt >= c->max_attempts && !(ambiguous && k->marker))
			goto give_up;
		pause_ms(c, wait_ms, &c->stats.backoff_wait_ms);
		if (ambiguous && k->marker) {
			enum err r = resolve_ambiguous(c, k, attempt_ms, found);
			if (r == ERR_OK)
				goto out;
			if (r != ERR_NOTFOUND) {
				(void)buf_printf(errmsg, "; the create may have succeeded: "
					   "marker lookup failed: %s", err_str(r));
				rc = ERR_RETRY;
				goto out;
			}
		}
		if (attempt >= c->max_attempts)
			goto give_up;
		c->stats.retries++;
	}
give_up:
	{
		struct buf detail = BUF_INIT;
		(void)buf_adds(&detail, buf_str(errmsg));
		buf_setf(errmsg, "giving up after %d attempts: %s", c->max_attempts,
			 buf_str(&detail));
		buf_release(&detail);
	}
	rc = ERR_RETRY;
out:
	buf_release(&local_err);
	buf_release(&url);
	return rc;
}

/* ---- JSON ---- */

/* Set key to the string value; -1 when value is not valid UTF-8. */
static int set_str(json_t *obj, const char *key, const char *value)
{
	json_t *s = json_string(value);
	return s ? json_object_set_new(obj, key, s) : -1;
}

static int set_str_array(json_t *obj, const char *key, const char *const *values)
{
	json_t *arr = json_array();

	for (const char *const *v = values; v && *v; v++) {
		json_t *s = json_string(*v);
		if (!s || json_array_append_new(arr, s)) {
			json_decref(arr);
			return -1;
		}
	}
	return json_object_set_new(obj, key, arr);
}

/* Dump obj (consumed) to a malloc'd string; NULL when it could not be built. */
static char *dump(json_t *obj, int failed)
{
	char *s = failed ? NULL : json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return s;
}

static char *dup_string(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
}

/* The names of an issue's "labels" (objects with "name", or strings); NULL when absent. */
static char **label_names(json_t *labels)
{
	size_t i, n = 0;
	json_t *v;
	char **out;

	if (!json_is_array(labels))
		return NULL;
	out = xcalloc(json_array_size(labels) + 1, sizeof(*out));
	json_array_foreach(labels, i, v) {
		json_t *name = json_is_object(v) ? json_object_get(v, "name") : v;
		if (json_is_string(name))
			out[n++] = xstrdup(json_string_value(name));
	}
	return out;
}

/* Fill out from an issue object; repo from repository_url (".../repos/{o}/{r}"). */
static enum err parse_issue(json_t *j, const char *what, struct gh_issue *out,
			    struct buf *errmsg)
{
	json_t *num = json_object_get(j, "number");
	json_t *state = json_object_get(j, "state");
	json_t *rurl = json_object_get(j, "repository_url");
	const char *r, *p;

	if (!json_is_integer(num) || !json_is_string(state) || !json_is_string(rurl)) {
		buf_setf(errmsg, "%s: answer is not an issue (number, state, repository_url)",
			 what);
		return ERR_INVALID;
	}
	r = json_string_value(rurl);
	p = strstr(r, "/repos/");
	if (!p || !valid_repo(p + 7)) {
		buf_setf(errmsg, "%s: unexpected repository_url \"%s\"", what, r);
		return ERR_INVALID;
	}
	gh_issue_release(out);
	out->repo = xstrdup(p + 7);
	out->number = (int64_t)json_integer_value(num);
	out->state = xstrdup(json_string_value(state));
	out->state_reason = dup_string(j, "state_reason");
	out->html_url = dup_string(j, "html_url");
	out->closed_at_ms = parse_iso8601(json_string_value(json_object_get(j, "closed_at")));
	out->created_at_ms = parse_iso8601(json_string_value(json_object_get(j, "created_at")));
	if (json_is_integer(json_object_get(j, "comments")))
		out->comments = (int64_t)json_integer_value(json_object_get(j, "comments"));
	out->labels = label_names(json_object_get(j, "labels"));
	return ERR_OK;
}

static enum err parse_issue_body(const struct http_response *res, const char *what,
				 struct gh_issue *out, struct buf *errmsg)
{
	json_error_t jerr;
	json_t *root = json_loadb(buf_str(&res->body), res->body.len, 0, &jerr);
	enum err rc;

	if (!root) {
		buf_setf(errmsg, "%s: answer is not JSON: %s", what, jerr.text);
		return ERR_INVALID;
	}
	rc = parse_issue(root, what, out, errmsg);
	json_decref(root);
	return rc;
}

/* ---- dry run ---- */

static void log_dry_run(const char *method, const char *path, const char *title);

/*
 * A mutating call in dry-run is paced like a real one, so the log shows the
 * calls at the rate they would be made and a dry-run map fills up as a live
 * one would.
 */
static void dry_run_mutation(struct gh_client *c, const char *method, const char *path,
			     const char *title)
{
	pace(c);
	log_dry_run(method, path, title);
	note_mutation(c);
}

static void log_dry_run(const char *method, const char *path, const char *title)
{
	struct log_line *l = log_begin(LOG_INFO, "dry-run github call");
	log_str(l, "method", method);
	log_str(l, "path", path);
	if (title)
		log_str(l, "title", title);
	log_end(l);
}

static void fake_issue(struct gh_issue *out, const char *repo, int64_t number, const char *state,
		       const char *state_reason)
{
	gh_issue_release(out);
	out->repo = xstrdup(repo);
	out->number = number;
	out->state = xstrdup(state ? state : "open");
	out->state_reason = xstrdup(state_reason);
}

/* ---- the API ---- */

/*
 * GitHub answered a create with 2xx but a body we cannot read: the issue
 * exists, so find it by its marker rather than fail for good (which would
 * leave an issue no map row knows) or create it again.
 */
static enum err unreadable_create(struct gh_client *c, const struct call *k, int64_t sent_ms,
				  struct gh_issue *out, struct buf *errmsg)
{
	enum err rc;
	struct log_line *l = log_begin(LOG_WARN, "create answer unreadable, looking for marker");

	log_str(l, "repo", k->repo);
	log_str(l, "detail", buf_str(errmsg));
	log_end(l);
	rc = resolve_ambiguous(c, k, sent_ms, out);
	if (rc == ERR_OK)
		return ERR_OK;
	gh_issue_release(out);
	(void)buf_printf(errmsg, "; the create may have succeeded: marker lookup: %s",
			 err_str(rc));
	return ERR_RETRY;
}

static enum err check_repo(const char *repo, struct buf *errmsg)
{
	if (valid_repo(repo))
		return ERR_OK;
	buf_setf(errmsg, "invalid repository \"%s\": want owner/name", repo ? repo : "");
	return ERR_INVALID;
}

/* One POST /repos/{o}/{r}/issues (with its retries and marker lookups); res: the answer. */
static enum err post_create(struct gh_client *c, const char *repo, const char *path,
			    const char *title, const char *body, const char *marker,
			    const char *const *labels, const char *const *assignees,
			    struct http_response *res, struct gh_issue *out, struct buf *errmsg)
{
	json_t *o = json_object();
	int failed = 0;
	char *json;
	enum err rc;

	failed |= set_str(o, "title", title);
	failed |= set_str(o, "body", body);
	if (labels)
		failed |= set_str_array(o, "labels", labels);
	if (assignees)
		failed |= set_str_array(o, "assignees", assignees);
	json = dump(o, failed);
	if (!json) {
		buf_setf(errmsg, "issue create in %s: title, body, labels and assignees must be "
			 "valid UTF-8", repo);
		return ERR_INVALID;
	}
	{
		struct call k = { "POST", path, NULL, json, 1, repo, marker, 0 };
		int64_t sent_ms = now(c);
		rc = call(c, &k, res, out, errmsg);
		if (rc == ERR_OK && !out->number &&
		    parse_issue_body(res, "POST issue", out, errmsg) != ERR_OK)
			rc = unreadable_create(c, &k, sent_ms, out, errmsg);
	}
	free(json);
	return rc;
}

static void log_assignees_dropped(struct gh_client *c, const char *repo, const char *dropped,
				  const char *why)
{
	struct log_line *l = log_begin(LOG_WARN, "github cannot assign them: creating the issue "
				       "without those assignees");
	size_t n = 1;

	for (const char *p = dropped; *p; p++)
		n += *p == ',';
	c->stats.assignees_dropped += n;
	log_str(l, "repo", repo);
	log_str(l, "dropped", dropped);
	log_str(l, "detail", why);
	log_end(l);
}

enum err gh_issue_create(struct gh_client *c, const char *repo, const char *title,
			 const char *body, const char *marker, const char *const *labels,
			 const char *const *assignees, struct gh_issue *out,
			 struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT, dropped = BUF_INIT;
	const char **kept = NULL;
	enum err rc = check_repo(repo, errmsg);

	memset(out, 0, sizeof(*out));
	http_response_init(&res);
	if (rc)
		goto out;
	if (!title || !*title || !body || !marker || !*marker || !strstr(body, marker)) {
		buf_setf(errmsg, "issue create in %s: title, body and a marker inside the body "
			 "are required", repo);
		rc = ERR_INVALID;
		goto out;
	}
	(void)buf_printf(&path, "/repos/%s/issues", repo);
	if (c->dry_run) {
		dry_run_mutation(c, "POST", buf_str(&path), title);
		fake_issue(out, repo, 0, "open", NULL);
		goto out;
	}
	rc = post_create(c, repo, buf_str(&path), title, body, marker, labels, assignees, &res,
			 out, errmsg);
	if (rc == ERR_INVALID && assignees && *assignees &&
	    (kept = gh_assignees_kept(res.status, buf_str(&res.body), res.body.len, assignees,
				       &dropped)) != NULL) {
		/* Nothing was made (422): the same create once more, without them. */
		log_assignees_dropped(c, repo, buf_str(&dropped), buf_str(errmsg));
		rc = post_create(c, repo, buf_str(&path), title, body, marker, labels,
				 (const char *const *)kept, &res, out, errmsg);
	}
out:
	free(kept);
	buf_release(&dropped);
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

enum err gh_issue_get(struct gh_client *c, const char *repo, int64_t number,
		      struct gh_issue *out, struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	enum err rc = check_repo(repo, errmsg);

	memset(out, 0, sizeof(*out));
	http_response_init(&res);
	if (rc)
		goto out;
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64, repo, number);
	if (c->dry_run) {
		log_dry_run("GET", buf_str(&path), NULL);
		fake_issue(out, repo, number, "open", NULL);
		goto out;
	}
	{
		struct call k = { "GET", buf_str(&path), NULL, NULL, 0, NULL, NULL, 0 };
		rc = call(c, &k, &res, NULL, errmsg);
	}
	if (rc == ERR_OK)
		rc = parse_issue_body(&res, buf_str(&path), out, errmsg);
out:
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

enum err gh_repo_get(struct gh_client *c, const char *repo, struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	enum err rc = check_repo(repo, errmsg);

	http_response_init(&res);
	if (rc)
		goto out;
	(void)buf_printf(&path, "/repos/%s", repo);
	if (c->dry_run) {
		log_dry_run("GET", buf_str(&path), NULL);
		goto out;
	}
	{
		struct call k = { "GET", buf_str(&path), NULL, NULL, 0, NULL, NULL, 0 };
		rc = call(c, &k, &res, NULL, errmsg);
	}
out:
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

enum err gh_issue_set_state(struct gh_client *c, const char *repo, int64_t number,
			    const char *state, const char *state_reason,
			    struct gh_issue *out, struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	struct gh_issue tmp = { 0 };
	char *json = NULL;
	json_t *o;
	int failed = 0;
	enum err rc = check_repo(repo, errmsg);

	if (out)
		memset(out, 0, sizeof(*out));
	http_response_init(&res);
	if (rc)
		goto out;
	if (!state || (strcmp(state, "open") && strcmp(state, "closed"))) {
		buf_setf(errmsg, "issue state \"%s\": want open or closed", state ? state : "");
		rc = ERR_INVALID;
		goto out;
	}
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64, repo, number);
	if (c->dry_run) {
		dry_run_mutation(c, "PATCH", buf_str(&path), NULL);
		if (out)
			fake_issue(out, repo, number, state, state_reason);
		goto out;
	}
	o = json_object();
	failed |= set_str(o, "state", state);
	if (state_reason)
		failed |= set_str(o, "state_reason", state_reason);
	json = dump(o, failed);
	if (!json) {
		buf_setf(errmsg, "issue state_reason must be valid UTF-8");
		rc = ERR_INVALID;
		goto out;
	}
	{
		struct call k = { "PATCH", buf_str(&path), NULL, json, 1, NULL, NULL, 0 };
		rc = call(c, &k, &res, NULL, errmsg);
	}
	if (rc == ERR_OK)
		rc = parse_issue_body(&res, buf_str(&path), out ? out : &tmp, errmsg);
out:
	gh_issue_release(&tmp);
	free(json);
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

/*
 * POST a JSON body built from one key to path; shared by comments and labels.
 * k_repo, number and marker: a marked comment (see gh_comment_create_marked).
 */
static enum err post_simple(struct gh_client *c, const char *path, json_t *o, int failed,
			    const char *what, const char *k_repo, int64_t number,
			    const char *marker, struct buf *errmsg)
{
	struct http_response res;
	char *json = dump(o, failed);
	enum err rc;

	if (!json) {
		buf_setf(errmsg, "%s must be valid UTF-8", what);
		return ERR_INVALID;
	}
	http_response_init(&res);
	{
		struct call k = { "POST", path, NULL, json, 1, marker ? k_repo : NULL, marker,
				  marker ? number : 0 };
		rc = call(c, &k, &res, NULL, errmsg);
	}
	http_response_release(&res);
	free(json);
	return rc;
}

enum err gh_comment_create(struct gh_client *c, const char *repo, int64_t number,
			   const char *body, struct buf *errmsg)
{
	return gh_comment_create_marked(c, repo, number, body, NULL, errmsg);
}

enum err gh_comment_create_marked(struct gh_client *c, const char *repo, int64_t number,
				  const char *body, const char *marker, struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	json_t *o;
	int failed;
	enum err rc = check_repo(repo, errmsg);

	if (rc)
		return rc;
	if (!body || !*body) {
		buf_setf(errmsg, "comment on %s#%" PRId64 ": empty body", repo, number);
		return ERR_INVALID;
	}
	if (marker && (!*marker || !strstr(body, marker))) {
		buf_setf(errmsg, "comment on %s#%" PRId64 ": the marker must be in the body", repo,
			 number);
		return ERR_INVALID;
	}
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64 "/comments", repo, number);
	if (c->dry_run) {
		dry_run_mutation(c, "POST", buf_str(&path), NULL);
		goto out;
	}
	o = json_object();
	failed = set_str(o, "body", body);
	rc = post_simple(c, buf_str(&path), o, failed, "comment body", repo, number, marker,
			 errmsg);
out:
	buf_release(&path);
	return rc;
}

enum err gh_labels_add(struct gh_client *c, const char *repo, int64_t number,
		       const char *const *labels, struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	json_t *o;
	int failed;
	enum err rc = check_repo(repo, errmsg);

	if (rc)
		return rc;
	if (!labels || !*labels)
		return ERR_OK; /* nothing to add: no call */
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64 "/labels", repo, number);
	if (c->dry_run) {
		dry_run_mutation(c, "POST", buf_str(&path), NULL);
		goto out;
	}
	o = json_object();
	failed = set_str_array(o, "labels", labels);
	rc = post_simple(c, buf_str(&path), o, failed, "labels", NULL, 0, NULL, errmsg);
out:
	buf_release(&path);
	return rc;
}

/* The URL of Link's rel="next" (RFC 8288), malloc'd; NULL when none. */
static char *link_next(const struct http_response *res)
{
	const char *link = http_response_header(res, "link");
	const char *p = link;

	while (p && *p) {
		const char *lt = strchr(p, '<');
		const char *gt = lt ? strchr(lt, '>') : NULL;
		const char *end;
		if (!gt)
			return NULL;
		end = strchr(gt, ',');
		if (!end)
			end = gt + strlen(gt);
		{
			const char *rel = strstr(gt, "rel=\"next\"");
			if (rel && rel < end)
				return xstrndup(lt + 1, (size_t)(gt - lt - 1));
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

/*
 * GET path and its Link rel="next" pages (at most max_pages; 0: no limit)
 * and hand each page's JSON array to fn, which sets *stop to end the walk
 * early or returns an error (errmsg set) to fail it.  what names the list
 * in messages.
 */
static enum err list_pages(struct gh_client *c, const char *path, const char *what,
			   int max_pages,
			   enum err (*fn)(void *ctx, json_t *page, int *stop, struct buf *errmsg),
			   void *ctx, struct buf *errmsg)
{
	struct http_response res;
	char *next = NULL;
	enum err rc = ERR_OK;

	http_response_init(&res);
	for (int page = 0; !max_pages || page < max_pages; page++) {
		struct call k = { "GET", path, next, NULL, 0, NULL, NULL, 0 };
		json_error_t jerr;
		json_t *root;
		int stop = 0;

		rc = call(c, &k, &res, NULL, errmsg);
		if (rc)
			goto out;
		root = json_loadb(buf_str(&res.body), res.body.len, 0, &jerr);
		if (!json_is_array(root)) {
			buf_setf(errmsg, "%s: answer is not a JSON array", what);
			json_decref(root);
			rc = ERR_INVALID;
			goto out;
		}
		rc = fn(ctx, root, &stop, errmsg);
		json_decref(root);
		if (rc || stop)
			goto out;
		free(next);
		next = link_next(&res);
		if (!next)
			goto out;
		/* Never send the token to a host the API did not name. */
		if (strncmp(next, c->api_url, strlen(c->api_url)) ||
		    (next[strlen(c->api_url)] != '/' && next[strlen(c->api_url)] != '?')) {
			buf_setf(errmsg, "%s: Link next points off the API: %s", what, next);
			rc = ERR_INVALID;
			goto out;
		}
		http_response_release(&res);
		http_response_init(&res);
	}
out:
	free(next);
	http_response_release(&res);
	return rc;
}

/* find_marker()'s walk: the newest issue created since since_ms carrying marker. */
struct marker_walk {
	const char *marker;
	int64_t since_ms;
	struct gh_issue *out;
	int found;
};

/*
 * Scan one page, sorted newest first: stop at the first issue carrying the
 * marker, or once the page reached issues created before since_ms.  Those
 * older issues are never taken: an earlier issue of the same key (the one a
 * linked issue supersedes) carries the same marker.
 */
static enum err scan_marker_page(void *ctx, json_t *page, int *stop, struct buf *errmsg)
{
	struct marker_walk *w = ctx;
	json_t *it;
	size_t i;
	enum err rc;

	json_array_foreach(page, i, it) {
		const char *body = json_string_value(json_object_get(it, "body"));
		int64_t created = parse_iso8601(json_string_value(json_object_get(it,
										 "created_at")));
		if (created && created < w->since_ms) {
			*stop = 1;
			continue;
		}
		if (json_object_get(it, "pull_request") || !body || !strstr(body, w->marker))
			continue;
		*stop = 1;
		w->found = 1;
		rc = parse_issue(it, "issue list", w->out, errmsg);
		if (!rc)
			w->out->body = xstrdup(body);
		return rc;
	}
	return ERR_OK;
}

static enum err find_marker(struct gh_client *c, const char *repo, const char *marker,
			    int64_t since_ms, struct gh_issue *out, struct buf *errmsg)
{
	struct marker_walk w = { marker, since_ms, out, 0 };
	struct buf path = BUF_INIT, what = BUF_INIT;
	char since[32];
	enum err rc;

	rfc3339_format(since_ms, since);
	(void)buf_printf(&path, "/repos/%s/issues?state=all&sort=created&direction=desc"
			 "&since=%s&per_page=100", repo, since);
	(void)buf_printf(&what, "issue list of %s", repo);
	rc = list_pages(c, buf_str(&path), buf_str(&what), MAX_PAGES, scan_marker_page, &w,
			errmsg);
	if (rc == ERR_OK && !w.found) {
		buf_setf(errmsg, "no issue in %s created since %s carries the marker %s", repo,
			 since, marker);
		rc = ERR_NOTFOUND;
	}
	buf_release(&path);
	buf_release(&what);
	return rc;
}

enum err gh_issue_find_marker(struct gh_client *c, const char *repo, const char *marker,
			      int64_t since_ms, struct gh_issue *out, struct buf *errmsg)
{
	enum err rc = check_repo(repo, errmsg);

	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	if (!marker || !*marker) {
		buf_setf(errmsg, "find marker in %s: empty marker", repo);
		return ERR_INVALID;
	}
	if (c->dry_run) {
		struct buf path = BUF_INIT;
		(void)buf_printf(&path, "/repos/%s/issues", repo);
		log_dry_run("GET", buf_str(&path), NULL);
		buf_release(&path);
		buf_setf(errmsg, "dry-run: no issue in %s carries the marker %s", repo, marker);
		return ERR_NOTFOUND;
	}
	return find_marker(c, repo, marker, since_ms, out, errmsg);
}

/* ---- summary issues (bridge/storm.h) ---- */

enum err gh_issue_set_body(struct gh_client *c, const char *repo, int64_t number,
			   const char *title, const char *body, struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	char *json = NULL;
	json_t *o;
	int failed = 0;
	enum err rc = check_repo(repo, errmsg);

	http_response_init(&res);
	if (rc)
		goto out;
	if (!body || !*body || (title && !*title)) {
		if (body && *body)
			buf_setf(errmsg, "issue #%" PRId64 ": empty title", number);
		else
			buf_setf(errmsg, "issue #%" PRId64 ": empty body", number);
		rc = ERR_INVALID;
		goto out;
	}
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64, repo, number);
	if (c->dry_run) {
		dry_run_mutation(c, "PATCH", buf_str(&path), title);
		goto out;
	}
	o = json_object();
	if (title)
		failed |= set_str(o, "title", title);
	failed |= set_str(o, "body", body);
	json = dump(o, failed);
	if (!json) {
		buf_setf(errmsg, "issue #%" PRId64 ": title and body must be valid UTF-8", number);
		rc = ERR_INVALID;
		goto out;
	}
	{
		struct call k = { "PATCH", buf_str(&path), NULL, json, 1, NULL, NULL, 0 };
		rc = call(c, &k, &res, NULL, errmsg);
	}
out:
	free(json);
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

/* gh_issue_list()'s walk. */
struct issue_walk {
	int (*fn)(void *ctx, const struct gh_issue *issue);
	void *ctx;
};

static enum err list_issue_page(void *ctx, json_t *page, int *stop, struct buf *errmsg)
{
	struct issue_walk *w = ctx;
	struct gh_issue is = { 0 };
	json_t *it;
	size_t i;
	enum err rc = ERR_OK;

	json_array_foreach(page, i, it) {
		if (json_object_get(it, "pull_request"))
			continue;
		rc = parse_issue(it, "issue list", &is, errmsg);
		if (rc)
			break;
		is.body = dup_string(it, "body");
		*stop = w->fn(w->ctx, &is) != 0;
		gh_issue_release(&is);
		if (*stop)
			break;
	}
	gh_issue_release(&is);
	return rc;
}

enum err gh_issue_list(struct gh_client *c, const char *repo,
		       int (*fn)(void *ctx, const struct gh_issue *issue), void *ctx,
		       struct buf *errmsg)
{
	struct issue_walk w = { fn, ctx };
	struct buf path = BUF_INIT, what = BUF_INIT;
	enum err rc = check_repo(repo, errmsg);

	if (rc)
		return rc;
	(void)buf_printf(&path, "/repos/%s/issues?state=all&sort=created&direction=asc"
			 "&per_page=100", repo);
	if (c->dry_run) {
		log_dry_run("GET", buf_str(&path), NULL);
		goto out;
	}
	(void)buf_printf(&what, "issue list of %s", repo);
	rc = list_pages(c, buf_str(&path), buf_str(&what), 0, list_issue_page, &w, errmsg);
out:
	buf_release(&path);
	buf_release(&what);
	return rc;
}

/* gh_comment_list()'s walk. */
struct comment_walk {
	int (*fn)(void *ctx, const char *body, int64_t created_at_ms);
	void *ctx;
};

static enum err list_comment_page(void *ctx, json_t *page, int *stop, struct buf *errmsg)
{
	struct comment_walk *w = ctx;
	json_t *it;
	size_t i;

	(void)errmsg;
	json_array_foreach(page, i, it) {
		const char *body = json_string_value(json_object_get(it, "body"));
		int64_t t = parse_iso8601(json_string_value(json_object_get(it, "created_at")));
		if (w->fn(w->ctx, body ? body : "", t)) {
			*stop = 1;
			break;
		}
	}
	return ERR_OK;
}

enum err gh_comment_list(struct gh_client *c, const char *repo, int64_t number,
			 int (*fn)(void *ctx, const char *body, int64_t created_at_ms), void *ctx,
			 struct buf *errmsg)
{
	struct comment_walk w = { fn, ctx };
	struct buf path = BUF_INIT, what = BUF_INIT;
	enum err rc = check_repo(repo, errmsg);

	if (rc)
		return rc;
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64 "/comments?per_page=100", repo,
			 number);
	if (c->dry_run) {
		log_dry_run("GET", buf_str(&path), NULL);
		goto out;
	}
	(void)buf_printf(&what, "comments of %s#%" PRId64, repo, number);
	rc = list_pages(c, buf_str(&path), buf_str(&what), 0, list_comment_page, &w, errmsg);
out:
	buf_release(&path);
	buf_release(&what);
	return rc;
}

/* find_comment_marker()'s walk. */
struct comment_marker_walk {
	const char *marker;
	int found;
};

static int has_comment_marker(void *ctx, const char *body, int64_t created_at_ms)
{
	struct comment_marker_walk *w = ctx;

	(void)created_at_ms;
	if (strstr(body, w->marker))
		w->found = 1;
	return w->found;
}

/*
 * An ambiguous comment: look for its marker among the issue's comments
 * changed since since_ms (GET .../comments?since=...; oldest first).
 */
static enum err find_comment_marker(struct gh_client *c, const char *repo, int64_t number,
				    const char *marker, int64_t since_ms, struct buf *errmsg)
{
	struct comment_marker_walk m = { marker, 0 };
	struct comment_walk w = { has_comment_marker, &m };
	struct buf path = BUF_INIT, what = BUF_INIT;
	char since[32];
	enum err rc;

	rfc3339_format(since_ms, since);
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64 "/comments?since=%s&per_page=100",
			 repo, number, since);
	(void)buf_printf(&what, "comments of %s#%" PRId64, repo, number);
	rc = list_pages(c, buf_str(&path), buf_str(&what), MAX_PAGES, list_comment_page, &w,
			errmsg);
	if (rc == ERR_OK && !m.found) {
		buf_setf(errmsg, "no comment on %s#%" PRId64 " since %s carries %s", repo, number,
			 since, marker);
		rc = ERR_NOTFOUND;
	}
	buf_release(&path);
	buf_release(&what);
	return rc;
}
