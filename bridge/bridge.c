/*
 * bridge.c - the reconciler.  One worker thread (core/worker.h; this file
 * is its handler) takes the oldest due event of the "bridge" queue, plans
 * with issue_plan() against the map row (refreshed from GitHub before any
 * call on an existing issue, before a "nothing" that rests on the closed
 * state the map cached, and when a transition resumes from its progress
 * note), makes the calls, and records the outcome.  Serial by design:
 * GitHub asks integrations to make mutating calls one at a time.  This part
 * takes the events and records outcomes; bridge_plan.c plans, bridge_exec.c
 * builds the texts and makes the calls.
 */
#include "bridge/bridge_int.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge/group.h"
#include "bridge/issue.h"
#include "bridge/rebuild.h"
#include "bridge/repos.h"
#include "bridge/storm.h"
#include "core/log.h"
#include "core/queue_job.h"
#include "core/xalloc.h"
#include "core/clock.h"
#include "store/store_events.h"
#include "store/store_groups.h"
#include "store/store_map.h"
#include "core/banned.h"

static enum err group_body(void *ctx, const struct store_group *gs, const struct store_issue *row,
			   const struct group_members *gm, struct buf *body, struct buf *errmsg);
/* The worker's handler (core/worker.h), at the end of this file. */
static void standby_gauges(void *ctx);
static int settle_step(void *ctx, int64_t now_ms);
static int64_t settle_until(void *ctx);
static enum worker_did step(void *ctx, int64_t now_ms);

int64_t bridge_now_ms(struct bridge *b)
{
	return b->opts.now_ms ? b->opts.now_ms(b->opts.clock_ctx) : clock_wall_ms();
}

static int64_t gh_clock(void *ctx)
{
	return bridge_now_ms(ctx);
}

static void gh_sleep(void *ctx, int64_t ms)
{
	struct bridge *b = ctx;
	if (b->opts.sleep_ms)
		b->opts.sleep_ms(b->opts.clock_ctx, ms);
	else
		worker_sleep_ms(b->worker, ms);
}

/* Set by bridge_stop(): the GitHub client sends nothing after a cut-short wait. */
static int gh_stopping(void *ctx)
{
	struct bridge *b = ctx;

	return worker_stopping(b->worker);
}

/*
 * bridge_options.may_act: does this replica hold the Lease (or need none)?
 * A no clears b->acting: the next yes is a gain (settle_on_gain).  Also the
 * worker's may_act (worker_handler).
 */
static int may_act(void *ctx)
{
	struct bridge *b = ctx;
	int yes = !b->opts.may_act || b->opts.may_act(b->opts.may_act_ctx);

	if (!yes)
		b->acting = 0;
	return yes;
}

/*
 * The GitHub client's gate before each request: stopping, or no longer
 * allowed to act, or (settle_on_gain) allowed again since this step began,
 * which is a gain bridge_step() must hold for before any call.
 */
static int gh_hold(void *ctx)
{
	struct bridge *b = ctx;

	return gh_stopping(ctx) || !may_act(b) || (b->opts.settle_on_gain && !b->acting);
}

/* https://api.github.com -> https://github.com; https://HOST/api/v3 -> https://HOST. */
static char *html_base_of(const char *api_url)
{
	size_t n = strlen(api_url);
	const char *host = strstr(api_url, "://");

	if (host && !strcmp(host + 3, "api.github.com"))
		return xstrdup("https://github.com");
	if (n >= 7 && !strcmp(api_url + n - 7, "/api/v3"))
		return xstrndup(api_url, n - 7);
	return xstrdup(api_url);
}

/*
 * Every reason count_dead() is given and every result count() is given:
 * each configured receiver's series of the two counters exist at 0
 * (declare_series()), so that increase() sees the first dead letter
 * (AlertbridgeDeadLettersRising) and the first of each outcome.
 */
static const char *const DEAD_REASONS[] = { "repo_not_found", "invalid", "forbidden", NULL };
static const char *const RESULTS[] = { "created", "created_linked", "commented", "reopened",
				       "closed", "nothing", "retried", "dead", "storm", NULL };

/* The known series of cfg's receivers at 0 (metric_declare()); once per config. */
static void declare_series(struct bridge *b, const struct config *cfg)
{
	for (size_t i = 0; i < cfg->receivers_count; i++) {
		const char *const rcv[] = { cfg->receivers[i].name, NULL };

		metric_declare(b->m_dead_letters, (const char *const *const[]){ rcv, DEAD_REASONS });
		metric_declare(b->m_events, (const char *const *const[]){ rcv, RESULTS });
	}
}

static void register_metrics(struct bridge *b)
{
	static const char *const rcv_result[] = { "receiver", "result", NULL };
	static const char *const rcv_reason[] = { "receiver", "reason", NULL };
	static const char *const outcome[] = { "outcome", NULL };
	static const char *const window[] = { "window", NULL };
	static const char *const reason[] = { "reason", NULL };
	static const char *const state[] = { "state", NULL };
	struct metrics *m = b->opts.metrics;

	if (!m)
		return;
	b->m_events = metrics_counter(m, "alertbridge_bridge_events_total",
				      "Alert events the reconciler finished, by outcome.", rcv_result);
	b->m_pending = metrics_gauge(m, "alertbridge_bridge_queue_pending",
				     "Events waiting in the bridge queue.", NULL);
	b->m_oldest = metrics_gauge(
		m, "alertbridge_bridge_queue_oldest_event_timestamp_seconds",
		"When the oldest event waiting in the bridge queue was received (Unix seconds; "
		"0: the queue is empty).", NULL);
	b->m_issues = metrics_gauge(
		m, "alertbridge_bridge_issues",
		"GitHub issues the map points at, by the state GitHub last showed (open, closed).",
		state);
	b->m_dead = metrics_gauge(m, "alertbridge_dead_letter_events",
				  "Events dead-lettered (never retried); see alertbridge map.", NULL);
	b->m_dead_letters = metrics_counter(
		m, "alertbridge_bridge_dead_letters_total",
		"Events dead-lettered, by reason (repo_not_found, invalid, forbidden).", rcv_reason);
	b->m_gh_requests = metrics_counter(m, "alertbridge_github_requests_total",
					   "GitHub REST requests by outcome.", outcome);
	b->m_gh_retries = metrics_counter(m, "alertbridge_github_retries_total",
					  "GitHub requests repeated after a transient failure.", NULL);
	b->m_gh_ratelimit = metrics_gauge(m, "alertbridge_github_ratelimit_remaining",
					  "Last x-ratelimit-remaining GitHub sent (-1: none yet).",
					  NULL);
	b->m_gh_content_left = metrics_gauge(
		m, "alertbridge_github_content_budget_remaining",
		"Mutating GitHub calls that fit now in the content budget, by window (minute, hour).",
		window);
	b->m_gh_ambiguous = metrics_counter(
		m, "alertbridge_github_ambiguous_creates_resolved_total",
		"Creates and comments whose answer was lost (or a crash left in doubt), found "
		"afterwards by their marker.", NULL);
	b->m_gh_unauthorized = metrics_counter(
		m, "alertbridge_github_unauthorized_total",
		"GitHub rejected the credentials (401, or a GitHub App token refused for a wrong "
		"App, key or installation); events are kept and retried.", NULL);
	b->m_gh_forbidden = metrics_counter(
		m, "alertbridge_github_forbidden_total",
		"GitHub answers 403 that are no rate limit, by reason (archived, locked, "
		"permission); their events are dead-lettered.", reason);
	for (int i = 0; i < GH_FORBIDDEN_COUNT; i++) {
		const char *why[] = { gh_forbidden_str((enum gh_forbidden)i) };
		metric_add(b->m_gh_forbidden, why, 0);  /* known series from the start */
	}
	b->m_assignees_dropped = metrics_counter(
		m, "alertbridge_github_assignees_dropped_total",
		"Assignees left out of a create because GitHub cannot assign them (422).", NULL);
	b->m_app_renewals = metrics_counter(
		m, "alertbridge_github_app_token_renewals_total",
		"GitHub App installation tokens obtained (the first and each renewal).", NULL);
	b->m_app_failures = metrics_counter(
		m, "alertbridge_github_app_token_failures_total",
		"Failed GitHub App installation token requests or installation look-ups.", NULL);
	b->m_held = metrics_gauge(
		m, "alertbridge_github_writes_held",
		"1 while GitHub writes (all, or to some issues) are held back because writes of the "
		"previous process (or of the replica that acted before) may still land; webhooks "
		"are still taken.",
		NULL);
	metric_set(b->m_held, NULL, 0);
	b->m_rebuilt = metrics_counter(
		m, "alertbridge_map_rows_rebuilt_total",
		"Map rows rebuilt from the markers of issues on GitHub (a lost database).", NULL);
	declare_series(b, b->opts.cfg);
}

struct bridge *bridge_new(const struct bridge_options *opts)
{
	struct bridge *b = xcalloc(1, sizeof(*b));
	const struct cfg_github *g = &opts->cfg->github;
	struct gh_options go = { 0 };

	b->opts = *opts;
	if (!b->opts.retry_base_ms)
		b->opts.retry_base_ms = 5000;
	if (!b->opts.retry_max_ms)
		b->opts.retry_max_ms = 600000;
	b->worker = worker_new(&(struct worker_handler){
		.queue = "bridge", .store = opts->store, .ctx = b, .now_ms = gh_clock,
		.retry_base_ms = b->opts.retry_base_ms, .retry_max_ms = b->opts.retry_max_ms,
		.may_act = may_act, .standby = standby_gauges, .hold = settle_step,
		.hold_until_ms = settle_until, .step = step,
	});
	b->seed = (unsigned int)clock_wall_ms();
	go.api_url = g->api_url;
	go.creds = gh_creds_new(g);
	go.user_agent = opts->user_agent ? opts->user_agent : "alertbridge";
	go.timeout_ms = g->timeout_ms;
	go.content_per_minute = (int)g->content_per_minute;
	go.content_per_hour = (int)g->content_per_hour;
	go.min_interval_ms = opts->gh_min_interval_ms;
	go.max_attempts = opts->gh_max_attempts;
	go.backoff_base_ms = opts->gh_backoff_base_ms;
	go.window_ms = opts->gh_window_ms;
	go.dry_run = g->dry_run;
	go.now_ms = gh_clock;
	go.sleep_ms = gh_sleep;
	go.stopping = gh_hold;
	go.pending_writes = bridge_pending_writes;
	go.note_spend = bridge_budget_note;
	go.clock_ctx = b;
	b->gh = gh_client_new(&go);
	b->html_base = html_base_of(g->api_url);
	b->storm = storm_new(&(struct storm_options){ opts->cfg, opts->store, b->gh,
						       g->body_update_interval_ms });
	b->group = group_new(&(struct group_options){ opts->store, b->gh,
						      g->body_update_interval_ms, group_body, b });
	b->repos = repos_new(b->gh, opts->store, 0);
	b->silencer = silencer_new(&(struct silencer_options){
		opts->store, opts->metrics, opts->user_agent, opts->retry_base_ms,
		opts->retry_max_ms });
	gh_stats(b->gh, &b->last_stats);
	pthread_mutex_init(&b->budget_mu, NULL);
	b->budget = b->last_stats;
	register_metrics(b);
	bridge_settle_start(b);
	b->opts.pending_note = NULL;  /* the caller's: read by bridge_settle_start() only */
	return b;
}

void bridge_budget(struct bridge *b, struct gh_stats *out)
{
	pthread_mutex_lock(&b->budget_mu);
	*out = b->budget;
	pthread_mutex_unlock(&b->budget_mu);
}

void bridge_set_credentials(struct bridge *b, struct gh_creds *creds)
{
	gh_client_set_creds(b->gh, creds);
}

int bridge_dry_run(const struct bridge *b)
{
	return gh_dry_run(b->gh);
}

/* ---- issue_per: group (bridge/group.h) ---- */

/* group_body_fn: the group issue's body as a create writes it, with the members gm. */
static enum err group_body(void *ctx, const struct store_group *gs, const struct store_issue *row,
			   const struct group_members *gm, struct buf *body, struct buf *errmsg)
{
	struct bridge *b = ctx;
	struct group_event ge = { 0 };
	struct buf raw = BUF_INIT, markers = BUF_INIT;
	json_t *view = NULL;
	struct work w;
	enum err rc;

	memset(&w, 0, sizeof(w));
	w.rcv = cfg_receiver_find(b->opts.cfg, gs->receiver);
	if (!w.rcv) {
		buf_setf(errmsg, "receiver \"%s\" is no longer configured", gs->receiver);
		return ERR_INVALID;
	}
	w.now_ms = bridge_now_ms(b);
	w.repo = row->repo;
	{  /* the route of the group's first alert, as at its create */
		json_t *doc = json_loads(gs->payload, 0, NULL);
		w.route = bridge_route_of(w.rcv, doc);
		json_decref(doc);
	}
	w.row = *row;  /* borrowed, read only */
	w.have_row = 1;
	w.action = ISSUE_NOTHING;
	w.ev.receiver = gs->receiver;
	w.ev.payload = gs->payload;
	ge.members = *gm;  /* borrowed */
	w.grp = &ge;
	rc = bridge_build_view(b, &w, &view, errmsg);
	if (!rc)
		rc = render_text(b->opts.render, w.rcv->name, w.route, RENDER_BODY, view, &raw,
				 errmsg);
	if (!rc) {
		bridge_group_body_marker(row, &markers);
		(void)buf_adds(&markers, "\n");
		issue_marker_receiver(gs->receiver, row->key, &markers);
		issue_body_fit(buf_str(&raw), buf_str(&markers), body);
	}
	json_decref(view);
	buf_release(&raw);
	buf_release(&markers);
	return rc ? ERR_INVALID : ERR_OK;
}

/* ---- outcome ---- */

static const char *result_of(enum issue_action a)
{
	switch (a) {
	case ISSUE_NOTHING: return "nothing";
	case ISSUE_CREATE: return "created";
	case ISSUE_CREATE_LINKED: return "created_linked";
	case ISSUE_COMMENT_REFIRE: return "commented";
	case ISSUE_COMMENT_RESOLVED: return "commented";
	case ISSUE_REOPEN: return "reopened";
	case ISSUE_CLOSE: return "closed";
	}
	return "nothing";
}

static void count(struct bridge *b, const char *receiver, const char *result)
{
	const char *labels[] = { receiver, result };
	metric_add(b->m_events, labels, 1);
}

static void count_dead(struct bridge *b, const char *receiver, const char *reason)
{
	const char *labels[] = { receiver, reason };
	metric_add(b->m_dead_letters, labels, 1);
}

static void fail(struct bridge *b, struct work *w, enum err rc, const char *why)
{
	struct log_line *l;
	enum err src;

	if (rc == ERR_INVALID || rc == ERR_FORBIDDEN) {
		/* Permanent: GitHub's message says what a person must fix, then map retry. */
		src = store_event_dead(b->opts.store, w->ev.id, why);
		l = log_begin(LOG_ERROR, "event dead-lettered");
		count(b, w->ev.receiver, "dead");
		count_dead(b, w->ev.receiver, rc == ERR_FORBIDDEN ? "forbidden" : "invalid");
	} else {
		/* From the time of the failure: the client's own retries took time. */
		int64_t t = bridge_now_ms(b);
		int64_t next = t + backoff_ms(w->ev.attempts, b->opts.retry_base_ms,
						 b->opts.retry_max_ms, &b->seed);
		if (next < w->not_before_ms)  /* a write in doubt: not looked for before */
			next = w->not_before_ms;
		src = store_event_retry(b->opts.store, w->ev.id, next, why);
		l = log_begin(rc == ERR_AUTH ? LOG_ERROR : LOG_WARN,
			      rc == ERR_AUTH ? "github rejected the credentials, event kept"
					     : "event failed, will retry");
		log_int(l, "retry_in_ms", next - t);
		count(b, w->ev.receiver, "retried");
	}
	log_err(l, rc);
	log_int(l, "event", w->ev.id);
	log_str(l, "receiver", w->ev.receiver);
	log_str(l, "key", w->ev.key);
	log_str(l, "action", issue_action_str(w->action));
	if (queue_job_failed(l, &w->ev, why, src))
		b->step_store_fault = 1;
}

static void finish(struct bridge *b, struct work *w)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	/* A create applied its action in do_create() (with the new number): once only. */
	if (w->have_row && w->action != ISSUE_CREATE && w->action != ISSUE_CREATE_LINKED)
		issue_apply(&w->row, w->action, &w->iev, w->now_ms);
	/*
	 * A resolve that found its issue deleted (410) makes nothing, but the row records it
	 * (closed, its endsAt): a late copy of the episode stays stale, and the next episode
	 * plans a reopen, whose read finds the issue gone and creates.  Without it a group
	 * rebuilt without its members went on in the row's episode and fired with no issue.
	 */
	if (!w->have_row && w->issue_gone && !w->iev.firing && w->action == ISSUE_NOTHING) {
		w->row.state = STORE_ISSUE_CLOSED;
		if (w->iev.ends_at_ms > w->row.resolved_ends_ms)
			w->row.resolved_ends_ms = w->iev.ends_at_ms;
		if (!w->row.closed_at_ms)
			w->row.closed_at_ms = w->now_ms;
		w->have_row = 1;
	}
	if (w->grp)
		rc = group_event_done(b->opts.store, w->grp, &w->ev, w->have_row ? &w->row : NULL,
				      w->action == ISSUE_CREATE || w->action == ISSUE_CREATE_LINKED,
				      w->now_ms, &msg);
	else
		rc = store_event_done(b->opts.store, w->ev.id, w->have_row ? &w->row : NULL, &msg);
	if (rc) {
		struct log_line *l = log_begin(LOG_ERROR, "cannot record event done");
		b->step_store_fault = 1;
		log_err(l, rc);
		log_int(l, "event", w->ev.id);
		log_str(l, "detail", buf_str(&msg));
		log_end(l);
	} else {
		count(b, w->ev.receiver, result_of(w->action));
		if (w->action != ISSUE_NOTHING) {
			struct log_line *l = log_begin(LOG_INFO, "event applied");
			log_int(l, "event", w->ev.id);
			log_str(l, "receiver", w->ev.receiver);
			log_str(l, "key", w->ev.key);
			log_str(l, "action", issue_action_str(w->action));
			log_str(l, "repo", w->row.repo);
			if (w->row.number > 0)
				log_int(l, "issue", w->row.number);
			else  /* dry-run: the row has no issue yet */
				log_str(l, "issue", "none");
			log_end(l);
		}
	}
	buf_release(&msg);
}

/*
 * Alert storms (bridge/storm.h): a folded alert's event, or a create under a
 * storm, is the storm's.  Returns 1 when the event was handled there.
 */
static int storm_hook(struct bridge *b, struct work *w, struct buf *errmsg)
{
	enum err rc = ERR_OK;

	switch (storm_route(b->storm, &w->ev, w->rcv, w->repo, w->have_row ? &w->row : NULL,
			    w->now_ms, &rc, errmsg)) {
	case STORM_PASS:
		return 0;
	case STORM_PASS_NEW:
		w->have_row = 0;  /* unfolded: from here on an alert without an issue */
		return 0;
	case STORM_DONE:
		if (rc)
			fail(b, w, rc, buf_str(errmsg));
		else
			count(b, w->ev.receiver, "storm");
		return 1;
	}
	return 0;
}

/* ---- repositories GitHub says are missing (bridge/repos.h) ---- */

/*
 * The calls whose 404 can only be about the repository: a create (POST
 * /repos/{o}/{r}/issues) and the scan's list.  A 404 on an issue's comment or
 * state is about the issue first: the retry's refresh finds it gone and
 * creates, whose 404 then asks about the repository.
 */
static int is_create(enum issue_action a)
{
	return a == ISSUE_CREATE || a == ISSUE_CREATE_LINKED;
}

/*
 * What repos_dead_if_known() or _if_missing() answered, r: 1, the event is a dead letter
 * (counted); -1, the store could not record it, so the worker backs off (a full disk once
 * made it ask GitHub about the repository again thousands of times a second).
 */
static void count_repo_dead(struct bridge *b, struct work *w, int r)
{
	if (r < 0) {
		b->step_store_fault = 1;
		return;
	}
	count(b, w->ev.receiver, "dead");
	count_dead(b, w->ev.receiver, "repo_not_found");
}

enum err bridge_retry_dead(struct bridge *b, int64_t *n)
{
	return repos_retry_dead(b->repos, n);
}

/*
 * The repository of w's map row, into w->repo: for an alert whose route's
 * repo renders to no valid name but that has its issue (the map wins).
 * ERR_NOTFOUND when it has none.
 */
static enum err map_repo(struct bridge *b, struct work *w)
{
	struct store_issue row = { 0 };
	enum err rc = store_issue_get(b->opts.store, w->ev.receiver, w->ev.key, &row);

	if (rc == ERR_OK && row.repo && row.number > 0) {
		buf_reset(&w->repo_buf);
		(void)buf_adds(&w->repo_buf, row.repo);
		w->repo = buf_str(&w->repo_buf);
	} else {
		rc = ERR_NOTFOUND;
	}
	store_issue_release(&row);
	return rc;
}

static void handle(struct bridge *b, struct work *w)
{
	struct buf errmsg = BUF_INIT;
	enum err rc;
	int dead;

	w->route = -1;
	w->rcv = cfg_receiver_find(b->opts.cfg, w->ev.receiver);
	if (!w->rcv) {
		buf_setf(&errmsg, "receiver \"%s\" is no longer configured", w->ev.receiver);
		fail(b, w, ERR_INVALID, buf_str(&errmsg));
		goto out;
	}
	w->payload_doc = json_loads(w->ev.payload, 0, NULL);
	rc = bridge_route(b, w, &errmsg);
	if (rc && map_repo(b, w) != ERR_OK) {  /* an alert with an issue keeps it (the map wins) */
		fail(b, w, ERR_INVALID, buf_str(&errmsg));
		goto out;
	}
	buf_reset(&errmsg);
	dead = repos_dead_if_known(b->repos, &w->ev, w->repo, bridge_now_ms(b));
	if (dead) {
		count_repo_dead(b, w, dead);
		goto out;
	}
	rc = bridge_ensure_scanned(b, w, &errmsg);
	if (rc == ERR_NOTFOUND &&
	    (dead = repos_dead_if_missing(b->repos, &w->ev, w->repo, bridge_now_ms(b), &errmsg))) {
		count_repo_dead(b, w, dead);
		goto out;
	}
	if (rc) {
		fail(b, w, rc == ERR_INVALID ? ERR_RETRY : rc, buf_str(&errmsg));
		goto out;
	}
	rc = store_issue_get(b->opts.store, w->ev.receiver, w->ev.key, &w->row);
	if (rc && rc != ERR_NOTFOUND) {
		fail(b, w, ERR_DB, "cannot read the map row");
		goto out;
	}
	w->have_row = rc == ERR_OK;
	w->iev.firing = !strcmp(w->ev.status, "firing");
	w->iev.starts_at_ms = w->ev.starts_at_ms;
	w->iev.ends_at_ms = w->ev.ends_at_ms;
	w->pol.auto_close = w->rcv->auto_close;
	w->pol.reopen_window_ms = w->rcv->reopen_window_ms;
	if (w->rcv->issue_per == CFG_ISSUE_PER_GROUP) {
		w->grp = xcalloc(1, sizeof(*w->grp));
		rc = group_event_load(b->opts.store, &w->ev, w->have_row ? &w->row : NULL, w->grp,
				      &w->iev, &errmsg);
		if (rc) {
			fail(b, w, rc, buf_str(&errmsg));
			goto out;
		}
	} else if (storm_hook(b, w, &errmsg)) {
		goto out;
	}
	rc = bridge_plan(b, w, &errmsg);
	if (!rc)
		rc = bridge_execute(b, w, &errmsg);
	if (rc == ERR_RETRY && gh_hold(b)) {
		/* Cut short by bridge_stop() or a lost Lease: not a failure; resumed later. */
		struct log_line *l = log_begin(LOG_INFO, gh_stopping(b)
							 ? "stopping: event left for the next start"
							 : "not the leader: event left for the leader");
		log_int(l, "event", w->ev.id);
		log_str(l, "key", w->ev.key);
		log_str(l, "detail", buf_str(&errmsg));
		log_end(l);
	} else if (rc == ERR_NOTFOUND && is_create(w->action) &&
		   (dead = repos_dead_if_missing(b->repos, &w->ev, w->repo, bridge_now_ms(b),
						 &errmsg))) {
		count_repo_dead(b, w, dead);
	} else if (rc) {
		fail(b, w, rc, buf_str(&errmsg));
	} else {
		finish(b, w);
	}
out:
	buf_release(&errmsg);
}

/*
 * The gauges after a step.  The queue's are scans of the pending events
 * (count, oldest): under a backlog they cost the worker O(pending) per
 * event while the intake waits for the store, so they are counted at most
 * once a second, and whenever the queue was found empty (cheap then, and
 * the gauges reach 0 at once).
 */
static void update_gauges(struct bridge *b, int queue_empty)
{
	struct gh_stats s;
	int64_t oldest, now_us = clock_mono_us();

	gh_stats(b->gh, &s);
	pthread_mutex_lock(&b->budget_mu);
	b->budget = s;
	pthread_mutex_unlock(&b->budget_mu);
	if (!b->opts.metrics)
		return;
	if (queue_empty || !b->queue_counted_us || now_us - b->queue_counted_us >= 1000000) {
		b->queue_counted_us = now_us;
		metric_set(b->m_pending, NULL,
			   (double)store_pending_count(b->opts.store, "bridge"));
		metric_set(b->m_dead, NULL, (double)store_dead_count(b->opts.store));
		oldest = store_oldest_pending_ms(b->opts.store, "bridge");
		if (oldest >= 0)
			metric_set(b->m_oldest, NULL,
				   oldest == INT64_MAX ? 0 : (double)(oldest / 1000));
	}
	/* Counting the map is a scan: at most once a second. */
	if (clock_mono_us() - b->issues_counted_us >= 1000000 || !b->issues_counted_us) {
		static const char *const is_open[] = { "open" }, *const is_closed[] = { "closed" };
		int64_t n_open = store_issue_count(b->opts.store, STORE_ISSUE_OPEN);
		int64_t n_closed = store_issue_count(b->opts.store, STORE_ISSUE_CLOSED);

		b->issues_counted_us = clock_mono_us();
		if (n_open >= 0)
			metric_set(b->m_issues, is_open, (double)n_open);
		if (n_closed >= 0)
			metric_set(b->m_issues, is_closed, (double)n_closed);
	}
	{
		const char *ok[] = { "ok" }, *ce[] = { "client_error" }, *se[] = { "server_error" };
		const char *rl[] = { "rate_limited" }, *fa[] = { "failed" };
		metric_add(b->m_gh_requests, ok, (double)(s.requests_ok - b->last_stats.requests_ok));
		metric_add(b->m_gh_requests, ce,
			   (double)(s.requests_client_error - b->last_stats.requests_client_error));
		metric_add(b->m_gh_requests, se,
			   (double)(s.requests_server_error - b->last_stats.requests_server_error));
		metric_add(b->m_gh_requests, rl,
			   (double)(s.requests_rate_limited - b->last_stats.requests_rate_limited));
		metric_add(b->m_gh_requests, fa,
			   (double)(s.requests_failed - b->last_stats.requests_failed));
	}
	metric_add(b->m_gh_retries, NULL, (double)(s.retries - b->last_stats.retries));
	metric_add(b->m_gh_ambiguous, NULL,
		   (double)(s.ambiguous_resolved - b->last_stats.ambiguous_resolved));
	metric_add(b->m_gh_unauthorized, NULL,
		   (double)(s.requests_unauthorized - b->last_stats.requests_unauthorized));
	for (int i = 0; i < GH_FORBIDDEN_COUNT; i++) {
		const char *why[] = { gh_forbidden_str((enum gh_forbidden)i) };
		metric_add(b->m_gh_forbidden, why, (double)(s.requests_forbidden[i] -
							    b->last_stats.requests_forbidden[i]));
	}
	metric_add(b->m_assignees_dropped, NULL,
		   (double)(s.assignees_dropped - b->last_stats.assignees_dropped));
	metric_add(b->m_app_renewals, NULL,
		   (double)(s.app_token_renewals - b->last_stats.app_token_renewals));
	metric_add(b->m_app_failures, NULL,
		   (double)(s.app_token_failures - b->last_stats.app_token_failures));
	metric_set(b->m_gh_ratelimit, NULL, (double)s.ratelimit_remaining);
	{
		const char *mi[] = { "minute" }, *hr[] = { "hour" };
		metric_set(b->m_gh_content_left, mi, (double)s.content_left_minute);
		metric_set(b->m_gh_content_left, hr, (double)s.content_left_hour);
	}
	b->last_stats = s;
}

/*
 * Between two events: take the current generation of the config, so that
 * the next event is handled wholly under it (core/reload.h).
 */
static void pick_up_config(struct bridge *b)
{
	const struct reload_gen *g = queue_job_newer_gen(b->opts.reload, &b->gen);

	if (!g)
		return;
	b->opts.cfg = g->cfg;
	b->opts.render = g->ext;
	declare_series(b, g->cfg);
	storm_set_cfg(b->storm, g->cfg);
	gh_client_set_creds(b->gh, gh_creds_new(&g->cfg->github));
}

/*
 * Not acting (worker_handler.standby): the queue may be shared (PostgreSQL)
 * and drained by another replica, so keep this one's gauges true too, at
 * most once a second.
 */
static void standby_gauges(void *ctx)
{
	struct bridge *b = ctx;
	int64_t now = clock_mono_us();

	if (b->standby_counted_us && now - b->standby_counted_us < 1000000)
		return;
	b->standby_counted_us = now;
	update_gauges(b, 0);
}

/* worker_handler.hold: the settle hold (bridge_settle.c); the worker sleeps until it ends. */
static int settle_step(void *ctx, int64_t now_ms)
{
	return bridge_settle_step(ctx, now_ms);
}

static int64_t settle_until(void *ctx)
{
	return bridge_settle_until(ctx);
}

/*
 * worker_handler.step: a due storm summary or group body first, else the
 * oldest due event, else a command from a GitHub comment (bridge/silence.h).
 */
static enum worker_did step(void *ctx, int64_t now_ms)
{
	struct bridge *b = ctx;
	struct work w;
	enum err rc;

	memset(&w, 0, sizeof(w));
	w.now_ms = now_ms;
	if (bridge_budget_load(b, w.now_ms))
		return WORKER_STORE_FAILED;  /* no GitHub call before the budget is known */
	pick_up_config(b);
	if (storm_sync(b->storm, w.now_ms) ||  /* a due summary issue's calls first */
	    group_sync(b->group, w.now_ms)) {  /* then a due group body update */
		update_gauges(b, 0);
		return WORKER_WORKED;
	}
	rc = store_next_event(b->opts.store, "bridge", w.now_ms, &w.ev);
	if (rc == ERR_NOTFOUND) {
		/* Then the commands from GitHub comments (bridge/silence.h). */
		int r = silence_step(b->silencer, b->opts.cfg, b->gh, w.now_ms);

		if (r < 0)
			return WORKER_STORE_FAILED;
		update_gauges(b, !r);
		return r ? WORKER_WORKED : WORKER_IDLE;
	}
	if (rc)
		return WORKER_STORE_FAILED;
	b->step_store_fault = 0;
	handle(b, &w);
	store_event_release(&w.ev);
	store_issue_release(&w.row);
	gh_issue_release(&w.fresh);
	buf_release(&w.repo_buf);
	json_decref(w.payload_doc);
	group_event_release(w.grp);
	free(w.grp);
	if (b->step_store_fault)
		return WORKER_STORE_FAILED;
	update_gauges(b, 0);
	return WORKER_RECORDED;
}

int bridge_step(struct bridge *b)
{
	return worker_step_if_acting(b->worker);
}

enum err bridge_start(struct bridge *b, struct buf *errmsg)
{
	if (worker_started(b->worker))
		return ERR_OK;
	if (worker_start(b->worker, errmsg))
		return ERR_IO;
	{
		struct log_line *l = log_begin(LOG_INFO, "bridge started");
		log_str(l, "github", b->opts.cfg->github.api_url);
		log_str(l, "dry_run", gh_dry_run(b->gh) ? "true" : "false");
		log_int(l, "receivers", (int64_t)b->opts.cfg->receivers_count);
		log_end(l);
	}
	return ERR_OK;
}

void bridge_request_stop(struct bridge *b)
{
	if (b)
		worker_request_stop(b->worker);
}

void bridge_stop(struct bridge *b)
{
	if (b)
		worker_stop(b->worker);
}

void bridge_free(struct bridge *b)
{
	if (!b)
		return;
	bridge_stop(b);
	storm_free(b->storm);
	repos_free(b->repos);
	group_free(b->group);
	silencer_free(b->silencer);
	gh_client_free(b->gh);
	free(b->html_base);
	reload_release(b->opts.reload, b->gen);
	pthread_mutex_destroy(&b->budget_mu);
	worker_free(b->worker);
	free(b);
}
