/*
 * guard.h - who may reach a route.  Two guards: web.auth in front of a page
 * (the on-call page and /metrics: struct guard), and the guard of every
 * endpoint that changes state (POST|PUT /-/reload, the map admin endpoint:
 * struct guard_admin), which takes the webhook's credentials or a web.auth
 * admin.  Both answer 401 with WWW-Authenticate (RFC 9110 11.6.1) and log the
 * refusal.  /-/healthy, /-/ready and the webhooks are registered without one.
 *
 * A web.auth password costs a bcrypt (tens of ms of CPU) unless auth.h's
 * cache knows it.  That bcrypt never runs on the server's worker threads,
 * which take the webhooks: the request waits, suspended, for the server's
 * slow-work thread (srv_defer(); the handler then runs again).  When that
 * thread's queue is full the answer is 503 with "Retry-After: 1" ("password
 * checks busy"); a client address past its failed logins
 * (auth_client_wait_s(): 10, then one every 6 s) gets 429 with Retry-After
 * and no bcrypt.  Each is logged at debug only (an attack makes thousands a
 * second); the moment a client starts waiting is logged at warn ("too many
 * failed logins", remote, retry_after_s).  The webhook's credentials (no
 * bcrypt) are always checked at once.
 */
#ifndef AB_GUARD_H
#define AB_GUARD_H

#include "core/auth.h"
#include "core/http_server.h"
#include "core/reload.h"

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
 * client's address; inner is not called.  Or 429/503, or deferred for a
 * bcrypt, as above.
 */
void guard_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

/*
 * The guard of a state-changing endpoint; a value type, set up by the caller
 * and outliving the server.  Its credentials are those of the webhook (the
 * running generation's, so a reload that changes the token applies at once)
 * and the web.auth users (the admins).
 */
struct guard_admin {
	struct reload *reload;      /* webhook credentials: reload_acquire()->auth; NULL: none */
	const struct auth *admins;  /* web.auth (auth_new_web()); NULL or AUTH_NONE: none */
	srv_handler inner;          /* for guard_admin_handle(); unused by guard_may_change_state() */
	void *inner_ctx;
};

/*
 * Whether req may change state (may defer: see the top of this file).  The rule (issue 19 item 8): whenever any
 * credential is configured (a webhook bearer token or basic auth, or a
 * web.auth user), the request's Authorization header must pass one of them
 * (auth_check()); with none configured every request passes, as Prometheus'
 * lifecycle endpoints are open without web-config users.  Returns 1 when
 * req may go on (res untouched); else 0 with res filled in: 401,
 * "Unauthorized.\n", one WWW-Authenticate per distinct configured scheme
 * (RFC 9110 11.6.1 allows several), and a log line at warn ("unauthorized
 * request", path, reason, remote; never the credentials); or a 429 or 503
 * (above); or the request was deferred for a bcrypt (res untouched, nothing
 * is sent now): in each case just return, and when deferred the handler is
 * called again with the result.  Thread-safe.
 */
int guard_may_change_state(const struct guard_admin *g, const struct srv_request *req,
			   struct srv_response *res);

/*
 * The srv_handler of a state-changing route; ctx is the struct guard_admin:
 * guard_may_change_state(), then g->inner when it passes.
 */
void guard_admin_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

#endif
