/*
 * status_page.h - the on-call page at GET /: what alertbridge tracks, server
 * rendered as one HTML document (inline CSS, no script, no external asset),
 * readable on a phone.  It reads the store (map rows, events, dead letters,
 * the Slack outbox), the bridge's GitHub budget and the janitor's last sweep;
 * it writes nothing.  main.c registers status_page_handle() for "/", behind
 * web.auth (web/guard.h).
 */
#ifndef AB_STATUS_PAGE_H
#define AB_STATUS_PAGE_H

#include <stdint.h>

#include "bridge/bridge.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/http_server.h"
#include "store/store.h"
#include "janitor/janitor.h"

/* Rows of each section shown at most when status_page_options.max_rows is 0. */
#define STATUS_PAGE_MAX_ROWS 500

struct status_page_options {
	const struct config *cfg;  /* receivers for the filter; outlives the page */
	struct store *store;       /* required; outlives the page */
	struct bridge *bridge;     /* issue links and the GitHub budget; NULL: neither shown */
	struct janitor *janitor;   /* NULL: no janitor section */
	const char *version;       /* shown in the header; NULL: none */
	int max_rows;              /* per section; 0: STATUS_PAGE_MAX_ROWS */
	/* The clock, ms since the epoch (UTC); NULL: the real one.  Ages and countdowns use it. */
	int64_t (*now_ms)(void *clock_ctx);
	void *clock_ctx;
};

/*
 * Filters from the query string (GET /?receiver=R&state=S&alertname=A); NULL
 * or "" is no filter.  receiver: exact receiver name.  state: firing,
 * resolved, dead-lettered or dry-run (another value shows nothing and says
 * so).  alertname: a case-insensitive substring of the alert's name.  They
 * apply to the alerts, the dead letters (state: only dead-lettered) and the
 * janitor's pods (alertname matches the policy; receiver and state hide them).
 */
struct status_filter {
	const char *receiver;
	const char *state;
	const char *alertname;
};

struct status_page;

/* A page over opts (copied; the pointers are borrowed).  Never NULL. */
struct status_page *status_page_new(const struct status_page_options *opts);
/* Free p; p may be NULL. */
void status_page_free(struct status_page *p);

/*
 * Append the whole HTML document for filter f (NULL: none) to out:
 *   - a summary: alerts firing, dead letters, each queue's depth and the age
 *     of its oldest pending event (store_oldest_pending_ms()), GitHub's core
 *     rate limit left and its reset (x-ratelimit-remaining/-reset), the
 *     content budget left per minute and per hour and when each is whole
 *     again (bridge_budget());
 *   - one card per map row (store_issue_each(), by receiver and key): state
 *     (firing, resolved, dead-lettered or dry-run), alertname, the issue's
 *     title linked to its html_url (bridge_issue_url()), receiver, repo and
 *     number, since when (the episode's startsAt) and the last event
 *     (store_event_latest(): firing/resolved, when received, queued or
 *     applied); a dead-lettered one with its reason and the command that
 *     retries it: alertbridge map retry KEY --receiver=R;
 *   - the dead letters without a map row (store_dead_unmapped(), both
 *     queues), each with its reason and, for the bridge's, that command;
 *   - with a janitor, each pod its last sweep saw (janitor_pods_each()):
 *     namespace, pod, owner, policy, janitor/expires with a countdown, the
 *     notice (queued, delivered, failed) and reminder from the outbox
 *     (store_notice_latest()), janitor/notified-at, dry-run.
 * Every value from the store, the config or an alert is HTML-escaped
 * (mustache_html_escape()).  Each section shows at most max_rows and then
 * "N more not shown".  A store failure shows as a line in its section.
 */
void status_page_render(struct status_page *p, const struct status_filter *f, struct buf *out);

/*
 * The srv_handler of GET /; ctx is the status_page.  200 text/html with
 * status_page_render() of the query's filters, Cache-Control: no-store and
 * Content-Security-Policy: default-src 'none'; style-src 'unsafe-inline';
 * form-action 'self'; frame-ancestors 'none' (no script may run at all).
 */
void status_page_handle(void *ctx, const struct srv_request *req, struct srv_response *res);

#endif
