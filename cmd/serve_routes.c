/*
 * cmd/serve_routes.c - what `alertbridge serve` answers on which listener: the
 * health, readiness and metrics handlers, the main listener's routes and the
 * public endpoints' own listener (issue 21).  cmd/serve.c builds the modules
 * these routes point to.
 */
#include <stdint.h>
#include <stdio.h>

#include "cmd/serve.h"
#include "bridge/gh_webhook.h"
#include "bridge/webhook.h"
#include "core/active.h"
#include "core/log.h"
#include "core/map_admin.h"
#include "core/metrics.h"
#include "core/reload.h"
#include "store/store.h"
#include "janitor/janitor.h"
#include "janitor/slack_interact.h"
#include "web/status_page.h"
#include "core/banned.h"

static void handle_health(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	(void)ctx;
	(void)req;
	res->status = 200;
	res->content_type = "text/plain; charset=utf-8";
	buf_adds(&res->body, "Healthy.\n");
}

static void handle_ready(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct service *s = ctx;
	struct buf why = BUF_INIT;
	(void)req;
	res->content_type = "text/plain; charset=utf-8";
	if ((s->active && !active_ready(s->active, &why)) || !store_ready(s->store, &why)) {
		res->status = 503;
		buf_printf(&res->body, "Not ready: %s.\n", buf_str(&why));
	} else if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE)) {
		res->status = 200;
		buf_adds(&res->body, "Ready.\n");
	} else {
		res->status = 503;
		buf_adds(&res->body, "Not ready.\n");
	}
	buf_release(&why);
}

static void handle_metrics(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct service *s = ctx;
	(void)req;
	metrics_process_collect(s->metrics);
	metric_set(metrics_gauge(s->metrics, "alertbridge_http_connections",
				 "Open connections of the main listener, counted against "
				 "webhook.max_connections (this scrape's own included).", NULL),
		   NULL, (double)srv_connections(s->srv));
	res->status = 200;
	res->content_type = "text/plain; version=0.0.4; charset=utf-8";
	metrics_render(s->metrics, &res->body);
}

static void observe_request(void *ctx, const char *method, const char *path, int status,
			    int64_t duration_us)
{
	static const char *const names[] = { "method", "path", "code", NULL };
	struct service *s = ctx;
	char code[8];
	const char *labels[3];

	snprintf(code, sizeof(code), "%d", status);
	labels[0] = method;
	labels[1] = path;
	labels[2] = code;
	metric_add(metrics_counter(s->metrics, "alertbridge_http_requests_total",
				   "HTTP requests served, by route and status code.", names),
		   labels, 1);
	(void)duration_us;
}

/*
 * The endpoints the internet must reach (issue 21), one row each: on a
 * listener of their own, alone, when web.public_listen_address (or
 * --web.public-listen-address) is set, the main listener then answering 404
 * for them; else on the main listener.  That listener takes the main one's
 * limits and timeouts, its own TLS (web.public_tls) and, as its body bound,
 * the largest of its routes'.  Call after the main routes, before srv_start().
 */
static int route_public(struct service *s, const struct srv_options *main_so,
			const struct flags *f, struct buf *err)
{
	const struct public_route {
		const char *method, *path;
		srv_handler fn;
		void *ctx;
		srv_rejected rejected;  /* the route's hook for the server's own 413, or NULL */
		size_t max_body_bytes;  /* the largest body the route reads */
	} routes[] = {
		{ "POST", "/v1/github/webhook", gh_webhook_handle, s->gh_webhook, gh_webhook_rejected,
		  GH_WEBHOOK_MAX_BODY },
		{ "POST", "/v1/slack/interactions", slack_interact_handle, s->slack_interact, NULL,
		  SLACK_INTERACT_MAX_BODY },
	};
	const size_t n = sizeof(routes) / sizeof(routes[0]);
	const char *addr = f->public_listen_address ? f->public_listen_address :
						      s->cfg->web.public_listen_address;
	struct srv_options so = *main_so;
	struct srv *on = s->srv;

	if (addr) {
		so.listen_address = addr;
		so.tls_cert_file = s->cfg->web.public_tls.cert_file;
		so.tls_key_file = s->cfg->web.public_tls.key_file;
		so.tls_client_ca_file = s->cfg->web.public_tls.client_ca_file;
		so.max_body_bytes = 0;
		for (size_t i = 0; i < n; i++)
			if (routes[i].max_body_bytes > so.max_body_bytes)
				so.max_body_bytes = routes[i].max_body_bytes;
		if (srv_new(&so, &s->public_srv, err))
			return -1;
		srv_set_observer(s->public_srv, observe_request, s);
		on = s->public_srv;
	}
	for (size_t i = 0; i < n; i++) {
		if (srv_route(on, routes[i].method, routes[i].path, routes[i].fn, routes[i].ctx) ||
		    (routes[i].rejected && srv_route_rejected(on, routes[i].path,
							       routes[i].rejected, routes[i].ctx))) {
			buf_setf(err, "cannot route %s %s", routes[i].method, routes[i].path);
			return -1;
		}
	}
	return 0;
}

/*
 * The main listener's routes (each state-changing one behind its guard), the
 * janitor's intake when it runs, and the public endpoints.  Returns 0, or 1
 * after logging what failed.
 */
int serve_routes(struct service *s, const struct srv_options *so, const struct flags *f)
{
	struct buf err = BUF_INIT;
	int rc = 1;

	s->page_guard = (struct guard){ s->web_auth, status_page_handle, s->page };
	s->metrics_guard = (struct guard){ s->web_auth, handle_metrics, s };
	s->admin_guard = (struct guard_admin){ s->reload, s->web_auth, reload_handle, s->reload };
	s->map_guard = (struct guard_admin){ s->reload, s->web_auth, map_admin_handle, s->store };
	if (srv_route(s->srv, "POST", "/v1/webhook", webhook_handle, s->webhook) ||
	    srv_route(s->srv, "GET", "/metrics", guard_handle, &s->metrics_guard) ||
	    srv_route(s->srv, "GET", "/-/healthy", handle_health, s) ||
	    srv_route(s->srv, "GET", "/-/ready", handle_ready, s) ||
	    srv_route(s->srv, "POST", "/-/reload", guard_admin_handle, &s->admin_guard) ||
	    srv_route(s->srv, "PUT", "/-/reload", guard_admin_handle, &s->admin_guard) ||
	    map_admin_routes(s->srv, guard_admin_handle, &s->map_guard) ||
	    srv_route(s->srv, "GET", "/", guard_handle, &s->page_guard) ||
	    srv_route_rejected(s->srv, "/v1/webhook", webhook_rejected, s->webhook)) {
		log_msg(LOG_ERROR, "cannot register routes", NULL, NULL);
		goto out;
	}
	if (s->janitor_webhook && srv_route(s->srv, "POST", "/v1/janitor/webhook",
					    janitor_webhook_handle, s->janitor_webhook)) {
		log_msg(LOG_ERROR, "cannot register routes", NULL, NULL);
		goto out;
	}
	srv_set_observer(s->srv, observe_request, s);
	if (route_public(s, so, f, &err)) {
		log_msg(LOG_ERROR, "cannot set up the public endpoints", "detail", buf_str(&err));
		goto out;
	}
	rc = 0;
out:
	buf_release(&err);
	return rc;
}
