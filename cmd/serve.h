/*
 * cmd/serve.h - the modules one `alertbridge serve` process builds, shared by
 * cmd/serve.c (build, run, tear down) and cmd/serve_routes.c (what each
 * listener answers).  Internal to cmd/.
 */
#ifndef AB_CMD_SERVE_H
#define AB_CMD_SERVE_H

#include <stdint.h>

#include "cmd/cmd.h"
#include "core/buf.h"
#include "core/http_server.h"
#include "web/guard.h"

struct service {
	struct config *cfg;
	struct store *store;
	struct metrics *metrics;
	struct render *render;
	struct auth *auth;
	struct webhook *webhook;
	struct gh_webhook *gh_webhook;  /* POST /v1/github/webhook: bridge/gh_webhook.h */
	struct slack_interact *slack_interact;  /* POST /v1/slack/interactions */
	struct bridge *bridge;
	struct kube_client *kube;
	struct slack_client *slack;
	struct janitor_webhook *janitor_webhook;
	struct janitor *janitor;
	struct kube_client *leader_kube;  /* the leader's own client: one thread each */
	struct leader *leader;
	struct srv *srv;
	struct srv *public_srv;  /* web.public_listen_address: GitHub's and Slack's alone */
	struct retention *retention;  /* prunes done events after database_retention */
	struct reload *reload;  /* owns cfg and render once set: core/reload.h */
	struct auth *web_auth;        /* web.auth: the page and /metrics */
	struct status_page *page;
	struct guard page_guard, metrics_guard;
	struct guard_admin admin_guard, map_guard;  /* every state-changing route: web/guard.h */
	struct serve_lock *lock;      /* the sqlite file's: one serving process (serve_lock.h) */
	int ready;
	/*
	 * Leader election (ha/leader.h, when leader_election.enabled):
	 * NULL means this replica always leads.
	 */
	int (*is_leader)(void *ctx);
	void *leader_ctx;
	/* May this replica act (the Lease, the worker lock, or sqlite)?  core/active.h */
	struct active *active;
};

/*
 * Registers every route of s->srv (built from *so, whose options the public
 * listener takes over) and, with web.public_listen_address or
 * --web.public-listen-address, creates s->public_srv with GitHub's and Slack's
 * endpoints.  Call before srv_start().  Returns 0, or 1 after logging the error.
 */
int serve_routes(struct service *s, const struct srv_options *so, const struct flags *f);

#endif
