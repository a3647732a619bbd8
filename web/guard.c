/*
 * guard.c - who may reach a route (web/guard.h): web.auth in front of a
 * page, and the credential rule of every state-changing endpoint.  A
 * web.auth password that only a bcrypt can check is checked on the server's
 * slow-work thread (srv_defer()), never on a worker that takes webhooks.
 */
#include "web/guard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "core/banned.h"

/* What is left to do after the web.auth users were asked. */
enum verdict {
	PASSED,    /* the credentials are good */
	FAILED,    /* they are not: why says so */
	ANSWERED,  /* res is already an answer (429, 503), or the request waits for a bcrypt */
};

/* One bcrypt check on the slow-work thread: its input, then its result. */
struct verify {
	const struct auth *admins;
	char *header;
	char client[64];
	int ok;
	struct buf why;
};

/* Answer 401 with the challenges (NULLs skipped, duplicates sent once) and log why. */
static void refuse(const struct srv_request *req, struct srv_response *res, const char *why,
		   const char *challenge1, const char *challenge2)
{
	struct log_line *l = log_begin(LOG_WARN, "unauthorized request");

	log_str(l, "path", req->path);
	log_str(l, "reason", why);
	log_str(l, "remote", srv_remote_addr(req));
	log_end(l);
	res->status = 401;
	res->content_type = "text/plain; charset=utf-8";
	buf_reset(&res->body);
	(void)buf_adds(&res->body, "Unauthorized.\n");
	if (challenge1)
		(void)!srv_response_header(res, "WWW-Authenticate", challenge1);
	if (challenge2 && (!challenge1 || strcmp(challenge1, challenge2)))
		(void)!srv_response_header(res, "WWW-Authenticate", challenge2);
}

/* The slow-work thread's part: the bcrypt, and a failure counted against the client. */
static void verify_run(void *arg)
{
	struct verify *v = arg;

	v->ok = auth_check(v->admins, v->header, &v->why) == ERR_OK;
	if (!v->ok && auth_client_failed(v->admins, v->client)) {
		struct log_line *l = log_begin(LOG_WARN, "too many failed logins");

		log_str(l, "remote", v->client);
		log_int(l, "retry_after_s", auth_client_wait_s(v->admins, v->client));
		log_end(l);
	}
}

static void verify_free(void *arg)
{
	struct verify *v = arg;

	free(v->header);
	buf_release(&v->why);
	free(v);
}

/*
 * Answer status (429 or 503) with Retry-After: wait_s, logged at debug as
 * msg: an attack makes thousands a second, each as cheap as possible (the
 * request metrics count them by status; the start of a client's wait is
 * logged at warn once).
 */
static void answer_later(const struct srv_request *req, struct srv_response *res, int status,
			 unsigned wait_s, const char *msg)
{
	struct log_line *l = log_begin(LOG_DEBUG, msg);
	char after[16];

	log_str(l, "path", req->path);
	log_str(l, "remote", srv_remote_addr(req));
	log_int(l, "retry_after_s", wait_s);
	log_end(l);
	snprintf(after, sizeof(after), "%u", wait_s);
	res->status = status;
	res->content_type = "text/plain; charset=utf-8";
	buf_reset(&res->body);
	(void)buf_adds(&res->body, status == 429 ? "Too many failed logins: try later.\n"
						 : "Busy: try again.\n");
	(void)!srv_response_header(res, "Retry-After", after);
}

/*
 * Ask the web.auth users (admins configured) about req without a bcrypt on
 * this thread: the cache, or cheap refusals, answer at once; else the
 * client's failed logins may make it wait (429), or the bcrypt is deferred
 * to the slow-work thread (503 when its queue is full), after which the
 * handler runs again and finds the result in srv_deferred().
 */
static enum verdict ask_admins(const struct auth *admins, const struct srv_request *req,
			       struct srv_response *res, struct buf *why)
{
	const char *hdr = srv_header(req, "Authorization");
	struct verify *v = srv_deferred(req);
	unsigned wait_s;
	enum err rc;

	if (v) {
		if (!v->ok)
			(void)buf_adds(why, buf_str(&v->why));
		return v->ok ? PASSED : FAILED;
	}
	rc = auth_check_cached(admins, hdr, why);
	if (rc != ERR_RETRY)
		return rc == ERR_OK ? PASSED : FAILED;
	wait_s = auth_client_wait_s(admins, srv_remote_addr(req));
	if (wait_s) {
		answer_later(req, res, 429, wait_s, "login refused: too many failed logins");
		return ANSWERED;
	}
	v = xcalloc(1, sizeof(*v));
	v->admins = admins;
	v->header = xstrdup(hdr);
	snprintf(v->client, sizeof(v->client), "%s", srv_remote_addr(req));
	buf_init(&v->why, 0);
	if (srv_defer(req, verify_run, verify_free, v) == ERR_OK)
		return ANSWERED;
	verify_free(v);
	answer_later(req, res, 503, 1, "login refused: password checks busy");
	return ANSWERED;
}

void guard_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	const struct guard *g = ctx;
	struct buf why = BUF_INIT;
	enum verdict v = auth_mode(g->auth) == AUTH_NONE ? PASSED :
			 ask_admins(g->auth, req, res, &why);

	if (v == PASSED)
		g->inner(g->inner_ctx, req, res);
	else if (v == FAILED)
		refuse(req, res, buf_str(&why), auth_challenge(g->auth), NULL);
	buf_release(&why);
}

int guard_may_change_state(const struct guard_admin *g, const struct srv_request *req,
			   struct srv_response *res)
{
	const struct reload_gen *gen = g->reload ? reload_acquire(g->reload) : NULL;
	const struct auth *hook = gen ? gen->auth : NULL;
	const char *hdr = srv_header(req, "Authorization");
	struct buf why = BUF_INIT, admins_why = BUF_INIT;
	int hook_on = auth_mode(hook) != AUTH_NONE;
	int admins_on = auth_mode(g->admins) != AUTH_NONE;
	enum verdict v = FAILED;

	/* auth_check() passes anything for AUTH_NONE: ask only the configured ones. */
	if (!hook_on && !admins_on)
		v = PASSED;
	else if (hook_on && auth_check(hook, hdr, &why) == ERR_OK)
		v = PASSED;
	else if (admins_on)
		v = ask_admins(g->admins, req, res, hook_on ? &admins_why : &why);
	if (v == FAILED)
		refuse(req, res, buf_str(&why), auth_challenge(hook), auth_challenge(g->admins));
	reload_release(g->reload, gen);
	buf_release(&why);
	buf_release(&admins_why);
	return v == PASSED;
}

void guard_admin_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	const struct guard_admin *g = ctx;

	if (guard_may_change_state(g, req, res))
		g->inner(g->inner_ctx, req, res);
}
