/*
 * guard.c - who may reach a route (web/guard.h): web.auth in front of a
 * page, and the credential rule of every state-changing endpoint.
 */
#include "web/guard.h"

#include <string.h>

#include "core/log.h"
#include "core/banned.h"

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

void guard_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	const struct guard *g = ctx;
	struct buf why = BUF_INIT;

	if (auth_check(g->auth, srv_header(req, "Authorization"), &why) == ERR_OK)
		g->inner(g->inner_ctx, req, res);
	else
		refuse(req, res, buf_str(&why), auth_challenge(g->auth), NULL);
	buf_release(&why);
}

int guard_may_change_state(const struct guard_admin *g, const struct srv_request *req,
			   struct srv_response *res)
{
	const struct reload_gen *gen = g->reload ? reload_acquire(g->reload) : NULL;
	const struct auth *hook = gen ? gen->auth : NULL;
	const char *hdr = srv_header(req, "Authorization");
	struct buf why = BUF_INIT;
	int hook_on = auth_mode(hook) != AUTH_NONE;
	int admins_on = auth_mode(g->admins) != AUTH_NONE;
	int ok = 0;

	/* auth_check() passes anything for AUTH_NONE: ask only the configured ones. */
	if (!hook_on && !admins_on)
		ok = 1;
	else if (hook_on && auth_check(hook, hdr, &why) == ERR_OK)
		ok = 1;
	else if (admins_on && auth_check(g->admins, hdr, hook_on ? NULL : &why) == ERR_OK)
		ok = 1;
	if (!ok)
		refuse(req, res, buf_str(&why), auth_challenge(hook), auth_challenge(g->admins));
	reload_release(g->reload, gen);
	buf_release(&why);
	return ok;
}

void guard_admin_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	const struct guard_admin *g = ctx;

	if (guard_may_change_state(g, req, res))
		g->inner(g->inner_ctx, req, res);
}
