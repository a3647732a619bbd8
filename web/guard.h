/*
 * guard.h - web.auth in front of a route: the on-call page and /metrics are
 * registered through a guard, which answers 401 with WWW-Authenticate
 * (RFC 9110 11.6.1) unless the request's Basic credentials pass
 * auth_check(), and else calls the route's own handler.  /-/healthy,
 * /-/ready and the webhooks are registered without one.
 */
#ifndef AB_GUARD_H
#define AB_GUARD_H

#include "core/auth.h"
#include "core/http_server.h"

/* A guarded route; a value type, set up by the caller and outliving the server. */
struct guard {
	const struct auth *auth;  /* web.auth (auth_new_web()); NULL or AUTH_NONE: open */
	srv_handler inner;        /* the route's handler */
	void *inner_ctx;
};

/*
 * The srv_handler of a guarded route; ctx is the struct guard.  Without valid
 * credentials: 401, "Unauthorized.\n", WWW-Authenticate: auth_challenge(),
 * and a log line at warn with the reason (never the credentials) and the
 * client's address; inner is not called.
 */
void guard_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

#endif
