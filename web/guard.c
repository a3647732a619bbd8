/*
 * guard.c - web.auth in front of a route (web/guard.h).
 */
#include "web/guard.h"

#include "core/log.h"
#include "core/banned.h"

void guard_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	const struct guard *g = ctx;
	struct buf why = BUF_INIT;
	struct log_line *l;

	if (auth_check(g->auth, srv_header(req, "Authorization"), &why) == ERR_OK) {
		buf_release(&why);
		g->inner(g->inner_ctx, req, res);
		return;
	}
	l = log_begin(LOG_WARN, "unauthorized request");
	log_str(l, "path", req->path);
	log_str(l, "reason", buf_str(&why));
	log_str(l, "remote", srv_remote_addr(req));
	log_end(l);
	res->status = 401;
	res->content_type = "text/plain; charset=utf-8";
	(void)buf_adds(&res->body, "Unauthorized.\n");
	(void)!srv_response_header(res, "WWW-Authenticate", auth_challenge(g->auth));
	buf_release(&why);
}
