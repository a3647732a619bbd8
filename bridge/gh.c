/*
 * gh.c - GitHub REST client: issues, comments, labels (see gh.h).
 *
 * Every call goes through gh_call() and the API clients' retry loop
 * (core/api.h): wait out a known rate limit, pace mutating calls, send, judge
 * the answer (here: GitHub's 403s, rate limits, writes in doubt), and back
 * off or give up.  Waiting uses the injected clock, so unit tests run in
 * virtual time.  This part is the client, its policy and judge; gh_issues.c
 * the API calls.
 */
#include "gh_int.h"

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
/*
 * GitHub ends a request it has processed for 10 s ("Troubleshooting the REST
 * API": "If GitHub takes more than 10 seconds to process an API request,
 * GitHub will terminate the request"), so a write it received lands within
 * this long or never.
 */
#define GH_PROCESSING_LIMIT_MS 10000
#define MAX_BODY_BYTES (32u << 20) /* a page of 100 issues of 64 KiB bodies fits */
#define MAX_ERRMSG_JSON 1024

static void adopt(struct gh_client *c, struct gh_creds *s);

int64_t gh_now(struct gh_client *c)
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

void gh_window_note(struct window *w, int64_t t_ms)
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

/* When every slot is free again: the newest mutation still in the window + span; 0: none. */
static int64_t window_full_at(const struct window *w, int64_t now_ms)
{
	int64_t at = 0;

	for (int i = 0; i < w->len; i++)
		if (w->t[i] + w->span_ms > now_ms && w->t[i] + w->span_ms > at)
			at = w->t[i] + w->span_ms;
	return at;
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
	(void)buf_printf(&b, "User-Agent: %s", opts->user_agent ? opts->user_agent : "alertbridge");
	c->ua_header = buf_detach(&b);
	c->timeout_ms = opts->timeout_ms > 0 ? opts->timeout_ms : 10000;
	c->content_per_minute = opts->content_per_minute;
	c->content_per_hour = opts->content_per_hour;
	c->window_ms = opts->window_ms;
	c->min_interval_ms = opts->min_interval_ms > 0 ? opts->min_interval_ms : 1000;
	c->policy.name = "github";
	c->policy.max_attempts = opts->max_attempts > 0 ? opts->max_attempts : 5;
	c->policy.base_ms = opts->backoff_base_ms > 0 ? opts->backoff_base_ms : 1000;
	c->policy.cap_ms = BACKOFF_CAP_MS;
	c->policy.jitter = 1;
	c->policy.block_log = "waiting for github rate limit";
	c->creds = opts->creds ? opts->creds : gh_creds_token(opts->token);
	c->dry_run = opts->dry_run || gh_creds_none(c->creds);
	adopt(c, c->creds);
	pthread_mutex_init(&c->mu, NULL);
	c->now_ms = opts->now_ms ? opts->now_ms : clock_hook_now_ms;
	c->sleep_ms = opts->sleep_ms ? opts->sleep_ms : clock_hook_sleep_ms;
	c->clock_ctx = opts->clock_ctx;
	c->stopping = opts->stopping;
	c->pending_writes = opts->pending_writes;
	c->note_spend = opts->note_spend;
	c->http = http_client_new(&hopts);
	c->seed = (unsigned int)((uint64_t)clock_wall_ms() ^ (uint64_t)(uintptr_t)c);
	c->stats.ratelimit_remaining = -1;
	return c;
}

void gh_client_free(struct gh_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	gh_doubts_release(c);
	buf_release(&c->pending_text);
	gh_creds_free(c->creds);
	gh_creds_free(c->pending);
	pthread_mutex_destroy(&c->mu);
	free(c->api_url);
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
	free(is->etag);
	memset(is, 0, sizeof(*is));
}

/* The budgets of s sized by c's options (once per set). */
static void adopt(struct gh_client *c, struct gh_creds *s)
{
	/* window_ms (a test hook) scales both windows: the hour is 60 of them. */
	for (size_t i = 0; !s->budgets_ready && i < s->n; i++) {
		window_init(&s->v[i].budget.minute, c->content_per_minute, MAX_BUDGET,
			    c->window_ms > 0 ? c->window_ms : MINUTE_MS);
		window_init(&s->v[i].budget.hour, c->content_per_hour, MAX_HOUR_BUDGET,
			    c->window_ms > 0 ? 60 * c->window_ms : HOUR_MS);
	}
	s->budgets_ready = 1;
	c->budget = &s->v[0].budget;
}

void gh_client_set_creds(struct gh_client *c, struct gh_creds *s)
{
	struct gh_creds *old;

	pthread_mutex_lock(&c->mu);
	old = c->pending;
	c->pending = s;
	pthread_mutex_unlock(&c->mu);
	gh_creds_free(old);
}

static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

/* Whether a and b hold the same credentials (owners, tokens, Apps, keys). */
static int creds_same(const struct gh_creds *a, const struct gh_creds *b)
{
	if (!a || !b || a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct gh_cred *x = &a->v[i], *y = &b->v[i];

		if (!same_str(x->owner, y->owner) || !same_str(x->auth_header, y->auth_header) ||
		    x->app_id != y->app_id || x->installation_id != y->installation_id ||
		    !same_str(x->key_pem, y->key_pem))
			return 0;
	}
	return 1;
}

void gh_adopt_pending(struct gh_client *c)
{
	struct gh_creds *s;
	int same;

	pthread_mutex_lock(&c->mu);
	s = c->pending;
	c->pending = NULL;
	pthread_mutex_unlock(&c->mu);
	if (!s)
		return;
	/* Every start and reload hands over the set: only a change is news. */
	same = creds_same(c->creds, s);
	adopt(c, s);
	gh_budget_carry(c->creds, s);  /* GitHub counts per token, not per set */
	gh_creds_free(c->creds);
	c->creds = s;
	if (!same)
		log_end(log_begin(LOG_INFO, "github credentials replaced"));
}

/* Mutations that fit now: the least over the credentials (the tightest budget). */
void gh_stats(const struct gh_client *c, struct gh_stats *out)
{
	int64_t now = c->now_ms(c->clock_ctx);

	*out = c->stats;
	/* The tightest credential's windows (the caps are the same for all). */
	size_t tm = 0, th = 0;

	for (size_t i = 1; i < c->creds->n; i++) {
		if (window_left(&c->creds->v[i].budget.minute, now) <
		    window_left(&c->creds->v[tm].budget.minute, now))
			tm = i;
		if (window_left(&c->creds->v[i].budget.hour, now) <
		    window_left(&c->creds->v[th].budget.hour, now))
			th = i;
	}
	out->content_left_minute = window_left(&c->creds->v[tm].budget.minute, now);
	out->content_left_hour = window_left(&c->creds->v[th].budget.hour, now);
	out->content_limit_minute = c->creds->v[tm].budget.minute.cap;
	out->content_limit_hour = c->creds->v[th].budget.hour.cap;
	out->content_full_minute_ms = window_full_at(&c->creds->v[tm].budget.minute, now);
	out->content_full_hour_ms = window_full_at(&c->creds->v[th].budget.hour, now);
}

/* ---- time and text helpers ---- */

/* GitHub's "YYYY-MM-DDTHH:MM:SSZ" (RFC 3339); 0 when s is NULL or malformed. */
int64_t gh_parse_iso8601(const char *s)
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
int gh_valid_repo(const char *repo)
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

/* 60 s * 2^(attempt-1), capped at 16 min. */
static int64_t secondary_wait_ms(int attempt)
{
	int64_t d = SECONDARY_MIN_WAIT_MS;

	for (int i = 1; i < attempt && i < 5; i++)
		d *= 2;
	return d;
}

/* ---- pacing and rate limits ---- */

/*
 * Mutating calls: min_interval_ms apart, at most content_per_minute in any
 * 60 s and content_per_hour in any hour.
 */
void gh_pace(struct gh_client *c)
{
	int64_t t = gh_now(c), wait = 0;

	struct gh_budget *b = c->budget;

	if (b->last_mutation_ms)
		wait = b->last_mutation_ms + c->min_interval_ms - t;
	if (window_wait_ms(&b->minute, t) > wait)
		wait = window_wait_ms(&b->minute, t);
	if (window_wait_ms(&b->hour, t) > wait)
		wait = window_wait_ms(&b->hour, t);
	pause_ms(c, wait, &c->stats.pacing_wait_ms);
}

void gh_note_mutation(struct gh_client *c)
{
	int64_t t = gh_now(c);

	c->budget->last_mutation_ms = t;
	gh_window_note(&c->budget->minute, t);
	gh_window_note(&c->budget->hour, t);
}

/* Block until t (ms), capped, unless already blocked longer. */
static void block_until(struct gh_client *c, int64_t t)
{
	int64_t cap = gh_now(c) + MAX_RATELIMIT_WAIT_MS;

	if (t > cap)
		t = cap;
	if (t > c->budget->blocked_until_ms)
		c->budget->blocked_until_ms = t;
}

/* Remember the primary limit; an exhausted one blocks until its reset. */
static void note_ratelimit(struct gh_client *c, const struct http_response *res)
{
	int64_t remaining = header_int(res, "x-ratelimit-remaining");
	int64_t reset_s = header_int(res, "x-ratelimit-reset");

	if (remaining < 0)
		return;
	c->stats.ratelimit_remaining = remaining;
	c->stats.ratelimit_reset_ms = reset_s > 0 ? reset_s * 1000 : 0;
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

/*
 * GitHub's "Rate limits for the REST API": a primary limit is a 403 or 429
 * with x-ratelimit-remaining: 0; a secondary one a 403 or 429 with
 * retry-after or a message saying "secondary rate limit".  ("API rate limit
 * exceeded" is the primary limit's message, taken too should a proxy drop
 * the header.)  Every other 403 is about permission (forbidden_of()).
 */
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

const char *gh_forbidden_str(enum gh_forbidden why)
{
	switch (why) {
	case GH_FORBIDDEN_PERMISSION: return "permission";
	case GH_FORBIDDEN_ARCHIVED: return "archived";
	case GH_FORBIDDEN_LOCKED: return "locked";
	}
	return "permission";
}

/* Which permanent 403 res is, by GitHub's message (gh.h, enum gh_forbidden). */
static enum gh_forbidden forbidden_of(const struct http_response *res)
{
	json_t *root = json_loadb(res->body.data ? res->body.data : "", res->body.len, 0, NULL);
	const char *msg = json_string_value(json_object_get(root, "message"));
	enum gh_forbidden why = GH_FORBIDDEN_PERMISSION;

	if (msg && strcasestr(msg, "archived"))
		why = GH_FORBIDDEN_ARCHIVED;
	else if (msg && strcasestr(msg, "is locked"))
		why = GH_FORBIDDEN_LOCKED;
	json_decref(root);
	return why;
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
 * Classify attempt a: API_DONE (2xx), API_FAILED (*rc set, do not retry)
 * or API_TRANSIENT (*ambiguous: the server may have acted on it).  Rate
 * limits set blocked_until_ms (*wait_ms 0); other transient answers ask for
 * the policy's backoff.  errmsg holds the detail either way.
 */
static enum api_verdict classify(struct gh_client *c, const struct call *k,
				 const struct api_attempt *a, enum err *rc, int64_t *wait_ms,
				 int *ambiguous, struct buf *errmsg)
{
	const struct http_response *res = a->res;
	int64_t retry_after_s = a->retry_after_s;
	int status = res->status;
	int attempt = a->n;

	*wait_ms = 0;
	*ambiguous = 0;
	if (a->hrc != ERR_OK)
		buf_setf(errmsg, "%s", a->detail);
	if (a->hrc == ERR_IO || a->hrc == ERR_RETRY) {
		c->stats.requests_failed++;
		*ambiguous = res->sent;
		*wait_ms = API_BACKOFF;
		return API_TRANSIENT; /* errmsg: http_do's detail */
	}
	if (a->hrc != ERR_OK) {
		*rc = a->hrc;
		return API_FAILED;
	}
	if ((status >= 200 && status < 300) || (status == 304 && k->if_none_match)) {
		c->stats.requests_ok++;
		return API_DONE;
	}
	buf_setf(errmsg, "%s %s: %d %s", k->method, k->path, status, status_word(status));
	add_github_message(errmsg, res);
	if (is_rate_limited(res)) {
		int64_t reset_s = header_int(res, "x-ratelimit-reset");
		c->stats.requests_rate_limited++;
		if (retry_after_s >= 0)
			block_until(c, gh_now(c) + retry_after_s * 1000);
		else if (header_int(res, "x-ratelimit-remaining") == 0 && reset_s > 0)
			block_until(c, reset_s * 1000);
		else /* no headers: GitHub asks for a minute, then exponentially longer */
			block_until(c, gh_now(c) + secondary_wait_ms(attempt));
		return API_TRANSIENT;
	}
	if (status >= 500) {
		c->stats.requests_server_error++;
		*ambiguous = 1;
		if (retry_after_s >= 0)
			block_until(c, gh_now(c) + retry_after_s * 1000);
		else
			*wait_ms = API_BACKOFF;
		return API_TRANSIENT;
	}
	c->stats.requests_client_error++;
	if (status == 401)
		c->stats.requests_unauthorized++;
	if (status == 403)
		c->stats.requests_forbidden[forbidden_of(res)]++;
	switch (status) {
	case 401: *rc = ERR_AUTH; break;
	case 403: *rc = ERR_FORBIDDEN; break;
	case 404: *rc = ERR_NOTFOUND; break;
	case 410: *rc = ERR_GONE; break;
	default: *rc = ERR_INVALID; break;
	}
	return API_FAILED;
}

/* ---- the request loop ---- */

/*
 * A create GitHub answered 2xx with a body that cannot be read: the issue
 * exists, so look for its marker among the issues created since a margin
 * before the attempt.  ERR_OK and *out when found, ERR_NOTFOUND when it is
 * not there, another error when GitHub could not tell.
 */
enum err gh_resolve_ambiguous(struct gh_client *c, const struct call *k, int64_t attempt_ms,
			      struct gh_issue *out)
{
	struct buf why = BUF_INIT;
	enum err rc;
	struct log_line *l;

	rc = gh_find_marker(c, k->repo, k->marker, attempt_ms - AMBIGUOUS_MARGIN_MS, out, &why);
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

int64_t gh_write_settled_at(const struct gh_client *c, int64_t sent_ms)
{
	/* window_ms (a test hook: the binary's minute) scales GitHub's 10 s with it */
	int64_t limit = c->window_ms > 0 ? GH_PROCESSING_LIMIT_MS * c->window_ms / MINUTE_MS
					 : GH_PROCESSING_LIMIT_MS;

	return sent_ms + c->timeout_ms + limit;
}

/* One gh_call() across its attempts: what its hooks in the retry loop share. */
struct run {
	struct gh_client *c;
	const struct call *k;
	struct gh_cred *cred;     /* NULL: the call carries next_auth (an App's JWT) */
	const char **headers;     /* the request's; [0] the Authorization header */
	struct buf *auth_copy;    /* what headers[0] points to */
	int renewed;              /* an App's token was renewed after a 401 */
	int told;                 /* the write was told pending (gh_pending_tell()) */
	int64_t attempt_ms;       /* when the current attempt was sent */
};

static int64_t run_blocked_until(void *ctx)
{
	struct run *r = ctx;

	return r->c->budget->blocked_until_ms;
}

/*
 * Before each attempt: pace a mutation, check for a stop, record a mutation's
 * time (gh_budget_spend()), tell the write pending.
 */
static enum err run_prepare(void *ctx, int attempt, struct buf *errmsg)
{
	struct run *r = ctx;
	struct gh_client *c = r->c;
	const struct call *k = r->k;

	if (k->mutating)
		gh_pace(c);
	if (c->stopping && c->stopping(c->clock_ctx)) {
		/* The wait may have been cut short: sending now could break it. */
		if (attempt > 1)
			(void)buf_adds(errmsg, "; ");
		else
			buf_reset(errmsg);
		(void)buf_printf(errmsg, "%s %s: not sent: stopping", k->method, k->path);
		return ERR_RETRY;
	}
	r->attempt_ms = gh_now(c);
	if (k->mutating &&
	    gh_budget_spend(c, r->cred, r->attempt_ms, k, attempt, errmsg) != ERR_OK)
		return ERR_RETRY;
	if (k->mutating && k->number && k->repo && c->pending_writes) {
		gh_pending_tell(c, k, r->attempt_ms);
		r->told = 1;
	}
	return ERR_OK;
}

/* A 401 to an App's installation token GitHub no longer takes: renew it, once, and retry. */
static enum api_verdict renew(struct run *r, struct api_attempt *a, struct buf *errmsg)
{
	struct gh_client *c = r->c;
	const char *auth = NULL;

	if (a->rc != ERR_AUTH || a->res->status != 401 || !r->cred || !r->cred->app_id ||
	    r->renewed)
		return API_FAILED;
	r->renewed = 1;
	a->rc = gh_cred_auth(c, r->cred, r->k->path, 1, &auth, errmsg);
	c->budget = &r->cred->budget;
	if (a->rc != ERR_OK)
		return API_FAILED;
	buf_reset(r->auth_copy);
	(void)buf_adds(r->auth_copy, auth);
	r->headers[0] = buf_str(r->auth_copy);
	a->wait_ms = 0;
	a->uncounted = 1;
	return API_TRANSIENT;
}

/*
 * A create or marked comment (k->marker) or a write to an issue (k->number)
 * sent and not answered: GitHub may still be making it.  Never sent again
 * from here (GitHub documents no idempotency for POST; a late PATCH would
 * overtake a later one): the caller looks for a marker once the write can no
 * longer land (gh_write_settled_at()), and no write to the issue is sent
 * before then (gh_doubt_check()).
 */
static enum api_verdict in_doubt(struct run *r, struct buf *errmsg)
{
	const struct call *k = r->k;

	if (k->number)
		gh_doubt_note(r->c, k, r->attempt_ms);
	r->c->stats.writes_in_doubt++;
	(void)buf_printf(errmsg, "; %s in doubt: sent, it may still land (not repeated)",
			 !k->marker ? "write" : k->number ? "comment" : "create");
	return API_AMBIGUOUS;
}

/* Judge an attempt (the retry loop's hook): count it, classify, renew or doubt. */
static enum api_verdict run_judge(void *ctx, struct api_attempt *a, struct buf *errmsg)
{
	struct run *r = ctx;
	struct gh_client *c = r->c;
	const struct call *k = r->k;
	enum api_verdict v;
	int ambiguous;

	if (k->mutating && a->res->sent)
		gh_note_mutation(c);
	note_ratelimit(c, a->res);
	v = classify(c, k, a, &a->rc, &a->wait_ms, &ambiguous, errmsg);
	if (v == API_FAILED)
		return renew(r, a, errmsg);
	if (v == API_TRANSIENT && ambiguous && (k->marker || k->number))
		return in_doubt(r, errmsg);
	return v;
}

/*
 * Perform k with pacing and retries; on ERR_OK res holds the 2xx answer.
 * A create or marked comment (k->marker set) whose attempt was sent and not
 * answered (a timeout, reset or 5xx) ends at once in ERR_RETRY, "in doubt".
 */
enum err gh_call(struct gh_client *c, const struct call *k, struct http_response *res,
		 struct buf *errmsg)
{
	const char *headers[8];
	struct http_request req = HTTP_REQUEST_INIT;
	struct api_tally tally = { 0, 0, 0 };
	struct run r = { 0 };
	const char *auth = c->next_auth;
	struct buf auth_copy = BUF_INIT; /* a call inside this one may renew (free) the token */
	struct buf cond = BUF_INIT;
	struct buf url = BUF_INIT;
	struct buf local_err = BUF_INIT;
	enum err rc = ERR_OK;
	int n = 0;

	if (!errmsg)
		errmsg = &local_err;

	c->next_auth = NULL;
	if (c->depth++ == 0) /* never inside a call: its credential stays valid */
		gh_adopt_pending(c);
	if (k->mutating && k->number && k->repo) {
		rc = gh_doubt_check(c, k, errmsg);
		if (rc != ERR_OK)
			goto out;
	}
	if (!auth) {
		r.cred = gh_cred_for_path(c, k->path, errmsg);
		rc = r.cred ? gh_cred_auth(c, r.cred, k->path, 0, &auth, errmsg) : ERR_AUTH;
		if (rc != ERR_OK)
			goto out;
		c->budget = &r.cred->budget;
	}
	(void)buf_adds(&auth_copy, auth);
	headers[n++] = buf_str(&auth_copy);
	headers[n++] = "Accept: application/vnd.github+json";
	headers[n++] = "X-GitHub-Api-Version: " API_VERSION;
	headers[n++] = c->ua_header;
	if (k->body)
		headers[n++] = "Content-Type: application/json";
	if (k->if_none_match) {
		(void)buf_printf(&cond, "If-None-Match: %s", k->if_none_match);
		headers[n++] = buf_str(&cond);
	}
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

	r.c = c;
	r.k = k;
	r.headers = headers;
	r.auth_copy = &auth_copy;
	rc = api_call(&(struct api_call){ .policy = &c->policy, .http = &c->http, .req = &req,
					  .ctx = &r, .now_ms = c->now_ms, .sleep_ms = c->sleep_ms,
					  .clock_ctx = c->clock_ctx, .seed = &c->seed,
					  .blocked_until_ms = run_blocked_until,
					  .prepare = run_prepare, .judge = run_judge },
		      res, &tally, errmsg);
	c->stats.ratelimit_wait_ms += tally.block_wait_ms;
	c->stats.backoff_wait_ms += tally.retry_wait_ms;
	c->stats.retries += tally.retries;
out:
	if (r.told)  /* answered or in doubt: what is left to land */
		gh_pending_tell(c, NULL, 0);
	c->depth--;
	if (auth_copy.data)
		explicit_bzero(auth_copy.data, auth_copy.cap);
	buf_release(&auth_copy);
	buf_release(&local_err);
	buf_release(&url);
	buf_release(&cond);
	return rc;
}
