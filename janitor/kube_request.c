/*
 * kube_request.c - how the janitor's Kubernetes calls are made: the
 * connection, the credentials (token file re-read, exec plugin), and
 * kube_call(), through which every request goes, over the API clients'
 * retry loop (core/api.h): one 401 answered by refreshing the credentials,
 * one short Retry-After waited out, the answer judged by its Status object.
 * Part of kube (kube.c); both share kube_int.h.
 */
#include "janitor/kube_int.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>

#include "core/api.h"
#include "core/http_client.h"
#include "core/log.h"
#include "core/utf8.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define MAX_BODY_BYTES (64u << 20)       /* a page of 500 full pods stays well below */
#define TOKEN_REREAD_MS 60000
#define JSON_ACCEPT "application/json"
/* A first attempt, one after a 401 refreshed the credentials, one after a Retry-After. */
#define MAX_ATTEMPTS 3

int64_t kube_now(const struct kube_client *c)
{
	return c->opts.now_ms(c->opts.clock_ctx);
}

/* ---- connection ---- */

/* (Re)create the connection with the identity the configuration and plugin give. */
void kube_make_http(struct kube_client *c)
{
	struct http_client_options o = { 0 };

	o.ca_file = c->cfg.ca_file;
	o.ca_pem = c->cfg.ca_pem;
	o.insecure = c->cfg.insecure;
	o.max_body_bytes = MAX_BODY_BYTES;
	o.client_cert_file = c->cfg.client_cert_file;
	o.client_key_file = c->cfg.client_key_file;
	o.client_cert_pem = c->cred.client_cert_pem ? c->cred.client_cert_pem
						    : c->cfg.client_cert_pem;
	o.client_key_pem = c->cred.client_key_pem ? c->cred.client_key_pem : c->cfg.client_key_pem;
	http_client_free(c->http);
	c->http = http_client_new(&o);
}

/* ---- credentials ---- */

static int same_file(const struct stat *a, const struct stat *b)
{
	return a->st_ino == b->st_ino && a->st_dev == b->st_dev && a->st_size == b->st_size &&
	       a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Re-read the token file when it changed, after a minute, or when forced (a 401). */
static enum err refresh_token_file(struct kube_client *c, int force, struct buf *errmsg)
{
	struct stat st;
	struct buf fresh = BUF_INIT, why = BUF_INIT;
	int64_t t = kube_now(c);
	int changed = stat(c->cfg.token_file, &st) || !same_file(&st, &c->token_st);
	enum err rc = ERR_OK;

	if (c->have_token && !force && !changed && t - c->token_read_ms < TOKEN_REREAD_MS)
		return ERR_OK;
	rc = kube_token_read(c->cfg.token_file, &fresh, &why);
	if (rc && c->have_token) {
		struct log_line *l = log_begin(LOG_WARN, "kubernetes token re-read failed, "
							 "keeping the previous token");
		log_str(l, "error", buf_str(&why));
		log_end(l);
		c->token_read_ms = t;
		rc = ERR_OK;
	} else if (rc) {
		buf_setf(errmsg, "%s", buf_str(&why));
		rc = ERR_AUTH;
	} else {
		buf_release(&c->token);
		c->token = fresh;
		buf_init(&fresh, 0);
		c->have_token = 1;
		c->token_read_ms = t;
		if (!stat(c->cfg.token_file, &st))
			c->token_st = st;
	}
	buf_release(&fresh);
	buf_release(&why);
	return rc;
}

static int same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Run the exec plugin when there is no credential, it expired, or when forced. */
static enum err refresh_exec(struct kube_client *c, int force, struct buf *errmsg)
{
	struct kube_exec_credential fresh;
	int new_identity;
	enum err rc;

	if (c->have_cred && !force && (!c->cred.expiry_ms || kube_now(c) < c->cred.expiry_ms))
		return ERR_OK;
	rc = kube_exec_run(&c->cfg, c->opts.exec_timeout_ms, &fresh, errmsg);
	if (rc)
		return rc == ERR_INVALID ? ERR_AUTH : rc;
	new_identity = !same_str(fresh.client_cert_pem, c->cred.client_cert_pem) ||
		       !same_str(fresh.client_key_pem, c->cred.client_key_pem);
	kube_exec_credential_release(&c->cred);
	c->cred = fresh;
	c->have_cred = 1;
	if (new_identity)
		kube_make_http(c);
	return ERR_OK;
}

/* Whether a 401 may be cured by refreshing (token file or plugin). */
static int refreshable(const struct kube_client *c)
{
	return c->cfg.token_file || c->cfg.exec;
}

/* The Authorization header into hdr ("" when the client has no bearer token). */
static enum err authorization(struct kube_client *c, int force, struct buf *hdr,
			      struct buf *errmsg)
{
	const char *token = NULL;
	enum err rc = ERR_OK;

	buf_reset(hdr);
	if (c->cfg.exec) {
		rc = refresh_exec(c, force, errmsg);
		token = rc ? NULL : c->cred.token;
	} else if (c->cfg.token_file) {
		rc = refresh_token_file(c, force, errmsg);
		token = rc ? NULL : buf_str(&c->token);
	} else {
		token = c->cfg.token;
	}
	if (!rc && token && *token)
		(void)buf_printf(hdr, "Authorization: Bearer %s", token);
	return rc;
}

/* ---- requests ---- */

static enum err status_code(int status)
{
	if (status == 401 || status == 403)
		return ERR_AUTH;
	if (status == 404)
		return ERR_NOTFOUND;
	if (status == 409)
		return ERR_CONFLICT;
	if (status == 410)
		return ERR_GONE;
	if (status == 429 || status >= 500)
		return ERR_RETRY;
	return ERR_INVALID;
}

/* The start of a non-Status body, control characters replaced, for messages. */
static void add_snippet(struct buf *errmsg, const struct buf *body)
{
	size_t n = utf8_cut(buf_str(body), body->len, 200);

	(void)buf_adds(errmsg, n ? ": " : ": (empty body)");
	for (size_t i = 0; i < n; i++) {
		char ch = body->data[i];
		(void)buf_addch(errmsg, (unsigned char)ch < 0x20 ? ' ' : ch);
	}
}

/* Map a non-2xx answer to its code, with the Status object's reason and message. */
static enum err judge_status(const struct call *k, const struct http_response *res,
			     struct buf *errmsg)
{
	json_t *st = json_loadb(buf_str(&res->body), res->body.len, 0, NULL);
	const char *reason = json_string_value(json_object_get(st, "reason"));
	const char *message = json_string_value(json_object_get(st, "message"));
	const char *kind = json_string_value(json_object_get(st, "kind"));

	buf_setf(errmsg, "%s %s: %d", k->method, k->path, res->status);
	if (kind && !strcmp(kind, "Status")) {
		if (reason && *reason)
			(void)buf_printf(errmsg, " %s", reason);
		(void)buf_printf(errmsg, ": %s", message ? message : "(no message)");
	} else {
		add_snippet(errmsg, &res->body);
	}
	json_decref(st);
	return status_code(res->status);
}

/* One kube_call() across its attempts: what its hooks in the retry loop share. */
struct run {
	struct kube_client *c;
	const struct call *k;
	struct buf auth, accept, ua, ctype;
	const char *headers[6];
	int reauthed;   /* a 401 refreshed the credentials */
	int waited;     /* a Retry-After was waited out */
};

/* Before each attempt: the credentials (refreshed after a 401) and the headers. */
static enum err run_prepare(void *ctx, int attempt, struct buf *errmsg)
{
	struct run *r = ctx;
	size_t nh = 0;
	enum err rc;

	(void)attempt;
	rc = authorization(r->c, r->reauthed, &r->auth, errmsg);
	if (rc)
		return rc;
	r->headers[nh++] = buf_str(&r->accept);
	r->headers[nh++] = buf_str(&r->ua);
	if (r->auth.len)
		r->headers[nh++] = buf_str(&r->auth);
	if (r->ctype.len)
		r->headers[nh++] = buf_str(&r->ctype);
	r->headers[nh] = NULL;
	return ERR_OK;
}

/*
 * Judge attempt a: a transport failure is not retried here (the sweep comes
 * back); a 401 is retried once with refreshed credentials, a 429 or 503 once
 * after a Retry-After within max_retry_after_ms; anything else but a 2xx
 * fails with its Status.
 */
static enum api_verdict run_judge(void *ctx, struct api_attempt *a, struct buf *errmsg)
{
	struct run *r = ctx;
	const struct http_response *res = a->res;
	struct log_line *l;

	if (a->hrc) {
		buf_setf(errmsg, "%s", a->detail);
		a->rc = a->hrc == ERR_TOOBIG ? ERR_TOOBIG : ERR_RETRY;
		return API_FAILED;
	}
	if (res->status >= 200 && res->status <= 299)
		return API_DONE;
	if (res->status == 401 && !r->reauthed && refreshable(r->c)) {
		r->reauthed = 1;
		a->wait_ms = 0;
		return API_TRANSIENT;
	}
	if ((res->status == 429 || res->status == 503) && !r->waited && a->retry_after_s >= 0) {
		a->wait_ms = a->retry_after_s * 1000;
		l = log_begin(LOG_INFO, "kubernetes asked to retry later");
		log_int(l, "status", res->status);
		log_str(l, "path", r->k->path);
		log_int(l, "wait_ms", a->wait_ms);
		log_end(l);
		r->waited = 1;
		return API_TRANSIENT;
	}
	a->rc = judge_status(r->k, res, errmsg);
	return API_FAILED;
}

/*
 * Perform k and, on 2xx, parse the answer into *out (when out is not NULL;
 * the caller decrefs it).  See kube.h for the retry and refresh rules.
 */
enum err kube_call(struct kube_client *c, const struct call *k, json_t **out,
		   struct buf *errmsg)
{
	/* No backoff of its own: a 401 or a Retry-After is the only reason to repeat. */
	const struct api_policy policy = { .name = "kubernetes", .max_attempts = MAX_ATTEMPTS,
					   .retry_after_max_ms = c->opts.max_retry_after_ms };
	struct http_request req = HTTP_REQUEST_INIT;
	struct http_response res;
	struct buf url = BUF_INIT;
	struct run r = { 0 };
	enum err rc = ERR_OK;

	if (out)
		*out = NULL;
	http_response_init(&res);
	r.c = c;
	r.k = k;
	(void)buf_printf(&url, "%s%s", c->cfg.server, k->path);
	(void)buf_printf(&r.accept, "Accept: %s", k->accept ? k->accept : JSON_ACCEPT);
	(void)buf_printf(&r.ua, "User-Agent: %s", c->user_agent);
	if (k->content_type)
		(void)buf_printf(&r.ctype, "Content-Type: %s", k->content_type);
	req.method = k->method;
	req.url = buf_str(&url);
	req.headers = r.headers;
	req.body = k->body;
	req.body_len = k->body ? strlen(k->body) : 0;
	req.timeout_ms = c->opts.timeout_ms;

	rc = api_call(&(struct api_call){ .policy = &policy, .http = &c->http, .req = &req,
					  .ctx = &r, .now_ms = c->opts.now_ms,
					  .sleep_ms = c->opts.sleep_ms,
					  .clock_ctx = c->opts.clock_ctx,
					  .prepare = run_prepare, .judge = run_judge },
		      &res, NULL, errmsg);
	if (rc == ERR_OK && out) {
		json_error_t jerr;
		*out = json_loadb(buf_str(&res.body), res.body.len, 0, &jerr);
		if (!*out || !json_is_object(*out)) {
			buf_setf(errmsg, "%s %s: %d answer is not a JSON object: %s", k->method,
				 k->path, res.status, *out ? "wrong type" : jerr.text);
			json_decref(*out);
			*out = NULL;
			rc = ERR_INVALID;
		}
	}
	http_response_release(&res);
	buf_release(&url);
	buf_release(&r.auth);
	buf_release(&r.accept);
	buf_release(&r.ua);
	buf_release(&r.ctype);
	return rc;
}
