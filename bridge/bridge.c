/*
 * bridge.c - the reconciler.  One worker thread takes the oldest due event
 * of the "bridge" queue, plans with issue_plan() against the map row
 * (refreshed from GitHub before any call on an existing issue), makes the
 * calls, and records the outcome.  Serial by design: GitHub asks
 * integrations to make mutating calls one at a time.
 */
#include "bridge/bridge.h"

#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bridge/issue.h"
#include "bridge/storm.h"
#include "bridge/view.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/xalloc.h"
#include "core/clock.h"
#include "core/banned.h"

struct bridge {
	struct bridge_options opts;
	struct gh_client *gh;
	struct storm *storm;  /* alert storms: bridge/storm.h */
	char *html_base;  /* https://github.com or https://HOST for Enterprise */
	pthread_t thread;
	int started;
	struct clock_stop stop;  /* bridge_request_stop(); cuts the worker's sleeps short */
	unsigned int seed;
	struct gh_stats last_stats;
	struct metric *m_events;
	struct metric *m_pending;
	struct metric *m_dead;
	struct metric *m_gh_requests;
	struct metric *m_gh_retries;
	struct metric *m_gh_ratelimit;
	struct metric *m_gh_ambiguous;
	struct metric *m_gh_unauthorized;
	struct metric *m_rebuilt;
};

/* What one event needs while it is handled; released in one place. */
struct work {
	struct store_event ev;
	const struct cfg_receiver *rcv;
	const char *repo;         /* points into payload_doc or the config */
	json_t *payload_doc;
	struct store_issue row;
	int have_row;
	struct issue_event iev;
	struct issue_policy pol;
	enum issue_action action;
	int step;                 /* calls of the action already done (progress note) */
	int comment_noted;        /* the stored note says the next call, a comment, may be made */
	int comment_in_doubt;     /* ... and it said so before this attempt: look before posting */
	int64_t now_ms;
};

static int64_t now_ms(struct bridge *b)
{
	return b->opts.now_ms ? b->opts.now_ms(b->opts.clock_ctx) : clock_wall_ms();
}

static int64_t gh_clock(void *ctx)
{
	return now_ms(ctx);
}

static void gh_sleep(void *ctx, int64_t ms)
{
	struct bridge *b = ctx;
	if (b->opts.sleep_ms)
		b->opts.sleep_ms(b->opts.clock_ctx, ms);
	else
		clock_stop_sleep_ms(&b->stop, ms);
}

/* Set by bridge_stop(): the GitHub client sends nothing after a cut-short wait. */
static int gh_stopping(void *ctx)
{
	struct bridge *b = ctx;

	return clock_stop_requested(&b->stop);
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

static void register_metrics(struct bridge *b)
{
	static const char *const rcv_result[] = { "receiver", "result", NULL };
	static const char *const outcome[] = { "outcome", NULL };
	struct metrics *m = b->opts.metrics;

	if (!m)
		return;
	b->m_events = metrics_counter(m, "alertbridge_bridge_events_total",
				      "Alert events the reconciler finished, by outcome.", rcv_result);
	b->m_pending = metrics_gauge(m, "alertbridge_bridge_queue_pending",
				     "Events waiting in the bridge queue.", NULL);
	b->m_dead = metrics_gauge(m, "alertbridge_dead_letter_events",
				  "Events dead-lettered (never retried); see alertbridge map.", NULL);
	b->m_gh_requests = metrics_counter(m, "alertbridge_github_requests_total",
					   "GitHub REST requests by outcome.", outcome);
	b->m_gh_retries = metrics_counter(m, "alertbridge_github_retries_total",
					  "GitHub requests repeated after a transient failure.", NULL);
	b->m_gh_ratelimit = metrics_gauge(m, "alertbridge_github_ratelimit_remaining",
					  "Last x-ratelimit-remaining GitHub sent (-1: none yet).",
					  NULL);
	b->m_gh_ambiguous = metrics_counter(
		m, "alertbridge_github_ambiguous_creates_resolved_total",
		"Creates whose answer was lost, found afterwards by their marker.", NULL);
	b->m_gh_unauthorized = metrics_counter(
		m, "alertbridge_github_unauthorized_total",
		"GitHub answers 401 (bad or expired token); events are kept and retried.", NULL);
	b->m_rebuilt = metrics_counter(
		m, "alertbridge_map_rows_rebuilt_total",
		"Map rows rebuilt from the markers of issues on GitHub (a lost database).", NULL);
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
	clock_stop_init(&b->stop);
	b->seed = (unsigned int)clock_wall_ms();
	go.api_url = g->api_url;
	go.token = g->token;
	go.user_agent = opts->user_agent ? opts->user_agent : "alertbridge";
	go.timeout_ms = g->timeout_ms;
	go.content_per_minute = (int)g->content_per_minute;
	go.min_interval_ms = opts->gh_min_interval_ms;
	go.max_attempts = opts->gh_max_attempts;
	go.backoff_base_ms = opts->gh_backoff_base_ms;
	go.window_ms = opts->gh_window_ms;
	go.dry_run = g->dry_run;
	go.now_ms = gh_clock;
	go.sleep_ms = gh_sleep;
	go.stopping = gh_stopping;
	go.clock_ctx = b;
	b->gh = gh_client_new(&go);
	b->html_base = html_base_of(g->api_url);
	b->storm = storm_new(&(struct storm_options){ opts->cfg, opts->store, b->gh, 0 });
	gh_stats(b->gh, &b->last_stats);
	register_metrics(b);
	return b;
}

int bridge_dry_run(const struct bridge *b)
{
	return gh_dry_run(b->gh);
}

/* ---- planning ---- */

static int needs_issue(enum issue_action a)
{
	switch (a) {
	case ISSUE_COMMENT_REFIRE:
	case ISSUE_REOPEN:
	case ISSUE_CREATE_LINKED:
	case ISSUE_CLOSE:
	case ISSUE_COMMENT_RESOLVED:
		return 1;
	case ISSUE_NOTHING:
	case ISSUE_CREATE:
		return 0;
	}
	return 0;
}

/*
 * Parse a progress note "ACTION:STEP" (STEP calls done), or "ACTION:STEP~"
 * (and the next call, a comment, may have been posted: *comment_sent = 1);
 * 0 when there is none or it is unreadable.
 */
static int parse_progress(const char *note, enum issue_action *action, int *step,
			  int *comment_sent)
{
	static const enum issue_action all[] = { ISSUE_REOPEN, ISSUE_CLOSE, ISSUE_COMMENT_REFIRE,
						 ISSUE_COMMENT_RESOLVED };
	const char *colon = note ? strchr(note, ':') : NULL;

	if (!colon)
		return 0;
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		const char *name = issue_action_str(all[i]);
		if (strlen(name) == (size_t)(colon - note) && !strncmp(note, name, strlen(name))) {
			*action = all[i];
			*step = colon[1] - '0';
			*comment_sent = *step >= 0 && *step <= 9 && colon[2] == '~';
			return *step >= 0 && *step <= 9;
		}
	}
	return 0;
}

/* Fresh state of the mapped issue from GitHub; follows transfers. */
static enum err refresh(struct bridge *b, struct work *w, struct buf *errmsg)
{
	struct gh_issue gi = { 0 };
	enum err rc = gh_issue_get(b->gh, w->row.repo, w->row.number, &gi, errmsg);

	if (rc == ERR_NOTFOUND || rc == ERR_GONE) {
		struct log_line *l = log_begin(LOG_WARN, "mapped issue is gone, a new one will be made");
		log_str(l, "receiver", w->row.receiver);
		log_str(l, "key", w->row.key);
		log_str(l, "repo", w->row.repo);
		log_int(l, "issue", w->row.number);
		log_err(l, rc);
		log_end(l);
		w->have_row = 0;
		return ERR_OK;
	}
	if (rc)
		return rc;
	if (gi.repo && strcmp(gi.repo, w->row.repo)) {
		free(w->row.repo);
		w->row.repo = xstrdup(gi.repo);
	}
	w->row.number = gi.number;
	free(w->row.state);
	w->row.state = xstrdup(gi.state ? gi.state : "open");
	free(w->row.state_reason);
	w->row.state_reason = xstrdup(gi.state_reason);
	w->row.closed_at_ms = gi.closed_at_ms;
	gh_issue_release(&gi);
	return ERR_OK;
}

static enum err plan(struct bridge *b, struct work *w, struct buf *errmsg)
{
	const char *why = "";
	enum err rc;

	if (parse_progress(w->ev.progress, &w->action, &w->step, &w->comment_in_doubt)) {
		w->comment_noted = w->comment_in_doubt;
		return ERR_OK;
	}
	w->step = 0;
	w->action = issue_plan(w->have_row ? &w->row : NULL, &w->iev, &w->pol, w->now_ms, &why);
	if (needs_issue(w->action) && w->have_row && w->row.number > 0 && !gh_dry_run(b->gh)) {
		rc = refresh(b, w, errmsg);
		if (rc)
			return rc;
		w->action = issue_plan(w->have_row ? &w->row : NULL, &w->iev, &w->pol, w->now_ms,
				       &why);
	}
	if (log_enabled(LOG_DEBUG)) {
		struct log_line *l = log_begin(LOG_DEBUG, "event planned");
		log_int(l, "event", w->ev.id);
		log_str(l, "receiver", w->ev.receiver);
		log_str(l, "key", w->ev.key);
		log_str(l, "status", w->ev.status);
		log_str(l, "action", issue_action_str(w->action));
		log_str(l, "why", why);
		log_end(l);
	}
	return ERR_OK;
}

/* ---- texts ---- */

/*
 * The episode marker: every issue body and every comment alertbridge posts
 * carries "<!-- alertbridge:episode=<startsAt, RFC 3339 with ms> ... -->" of
 * the event it was made for, so that a map rebuilt from GitHub knows the
 * newest episode applied (the newest marker of the body and the comments)
 * and a re-sent notification of that episode changes nothing.  A comment's
 * marker also names its transition (" event=firing", " event=resolved-<endsAt
 * ms>"), which makes it unique on its issue: an ambiguous comment is looked
 * for by it before it is posted again (gh_comment_create_marked()).
 */
#define EPISODE_MARKER_OPEN "<!-- alertbridge:episode="
#define EPISODE_MARKER_CLOSE " -->"

static void episode_marker(int64_t starts_at_ms, struct buf *out)
{
	char t[32];

	rfc3339_format_ms(starts_at_ms, t);
	(void)buf_printf(out, EPISODE_MARKER_OPEN "%s" EPISODE_MARKER_CLOSE, t);
}

static void comment_marker(const struct issue_event *ev, struct buf *out)
{
	char t[32];

	rfc3339_format_ms(ev->starts_at_ms, t);
	if (ev->firing)
		(void)buf_printf(out, EPISODE_MARKER_OPEN "%s event=firing" EPISODE_MARKER_CLOSE,
				 t);
	else
		(void)buf_printf(out, EPISODE_MARKER_OPEN "%s event=resolved-%lld"
				 EPISODE_MARKER_CLOSE, t, (long long)ev->ends_at_ms);
}

/* The newest episode marker in text (NULL: none); 0 when there is none. */
static int64_t episode_of(const char *text)
{
	size_t open_len = strlen(EPISODE_MARKER_OPEN);
	int64_t best = 0;

	for (const char *p = text ? strstr(text, EPISODE_MARKER_OPEN) : NULL; p;
	     p = strstr(p + open_len, EPISODE_MARKER_OPEN)) {
		const char *v = p + open_len;
		const char *end = strpbrk(v, " \t\r\n");
		char t[40];
		int64_t ms;

		if (!end || (size_t)(end - v) >= sizeof(t))
			continue;
		memcpy(t, v, (size_t)(end - v));
		t[end - v] = '\0';
		if (rfc3339_parse(t, &ms) == ERR_OK && ms > best)
			best = ms;
	}
	return best;
}

static void issue_url(struct bridge *b, const char *repo, int64_t number, struct buf *out)
{
	buf_printf(out, "%s/%s/issues/%lld", b->html_base, repo, (long long)number);
}

static enum err build_view(struct bridge *b, struct work *w, json_t **view, struct buf *errmsg)
{
	struct buf cur_url = BUF_INIT, prev_url = BUF_INIT;
	struct view_issue cur = { 0 }, prev = { 0 };
	struct view_context ctx = { 0 };
	enum err rc;

	ctx.now_ms = w->now_ms;
	ctx.receiver = w->rcv->name;
	ctx.repo = w->repo;
	if (w->have_row && w->row.number > 0) {
		issue_url(b, w->row.repo, w->row.number, &cur_url);
		cur.number = w->row.number;
		cur.html_url = buf_str(&cur_url);
		cur.closed_at_ms = w->row.closed_at_ms;
		if (w->action == ISSUE_CREATE_LINKED) {
			prev = cur;  /* the closed issue the new one supersedes */
			ctx.previous = &prev;
		} else {
			ctx.issue = &cur;
		}
	}
	if (!ctx.previous && w->have_row && w->row.previous_number > 0) {
		issue_url(b, w->row.repo, w->row.previous_number, &prev_url);
		prev.number = w->row.previous_number;
		prev.html_url = buf_str(&prev_url);
		ctx.previous = &prev;
	}
	rc = view_build(w->ev.payload, &ctx, view, errmsg);
	buf_release(&cur_url);
	buf_release(&prev_url);
	return rc;
}

/* Render a comment of kind which with its marker, cut to GitHub's limit. */
static enum err comment_text(struct bridge *b, struct work *w, const json_t *view,
			     enum render_text which, const char *marker, struct buf *out,
			     struct buf *errmsg)
{
	struct buf raw = BUF_INIT;
	enum err rc = render_text(b->opts.render, w->rcv->name, which, view, &raw, errmsg);

	if (!rc)
		issue_body_fit(buf_str(&raw), marker, out);
	buf_release(&raw);
	return rc;
}

/* ---- actions ---- */

#define CREATE_NOTE "create@"
#define CREATE_LOOKBACK_MS 60000

/*
 * A create whose outcome a previous attempt left open (an ambiguous answer
 * whose lookup failed, a crash between the POST and the commit) has the note
 * "create@<ms>" written before its POST: look for the marker among the issues
 * created since then (minus a margin) before posting again.  ERR_OK with *gi
 * when found, ERR_NOTFOUND when the POST is to be made, another error when
 * GitHub could not tell (retry later).
 */
static enum err earlier_create(struct bridge *b, struct work *w, const char *marker,
			       struct gh_issue *gi, struct buf *errmsg)
{
	const char *note = w->ev.progress;
	char *end = NULL;
	long long t;
	enum err rc;

	if (!note || strncmp(note, CREATE_NOTE, strlen(CREATE_NOTE)) || gh_dry_run(b->gh))
		return ERR_NOTFOUND;
	t = strtoll(note + strlen(CREATE_NOTE), &end, 10);
	if (*end || t <= 0)
		return ERR_NOTFOUND;
	rc = gh_issue_find_marker(b->gh, w->repo, marker, (int64_t)t - CREATE_LOOKBACK_MS, gi,
				  errmsg);
	if (rc == ERR_OK) {
		struct log_line *l = log_begin(LOG_INFO, "earlier create found by marker");
		log_str(l, "receiver", w->ev.receiver);
		log_str(l, "key", w->ev.key);
		log_str(l, "repo", gi->repo);
		log_int(l, "issue", gi->number);
		log_end(l);
	}
	return rc;
}

/* Write the note earlier_create() reads; ERR_NOTFOUND (go on) once it is durable. */
static enum err note_create(struct bridge *b, struct work *w, struct buf *errmsg)
{
	char note[48];
	enum err rc;

	if (gh_dry_run(b->gh))
		return ERR_NOTFOUND;
	snprintf(note, sizeof(note), CREATE_NOTE "%lld", (long long)now_ms(b));
	rc = store_event_progress(b->opts.store, w->ev.id, note);
	if (rc) {
		buf_setf(errmsg, "cannot record the create attempt: %s", err_str(rc));
		return rc;
	}
	return ERR_NOTFOUND;
}

static enum err do_create(struct bridge *b, struct work *w, const json_t *view,
			  struct buf *errmsg)
{
	struct buf raw_title = BUF_INIT, title = BUF_INIT, raw_body = BUF_INIT, body = BUF_INIT;
	struct buf marker = BUF_INIT, markers = BUF_INIT;
	char **labels = NULL, **assignees = NULL;
	struct gh_issue gi = { 0 };
	enum err rc;

	rc = render_text(b->opts.render, w->rcv->name, RENDER_TITLE, view, &raw_title, errmsg);
	if (!rc)
		rc = render_text(b->opts.render, w->rcv->name, RENDER_BODY, view, &raw_body, errmsg);
	if (!rc)
		rc = render_list(b->opts.render, w->rcv->name, 0, view, &labels, errmsg);
	if (!rc)
		rc = render_list(b->opts.render, w->rcv->name, 1, view, &assignees, errmsg);
	if (rc) {
		rc = ERR_INVALID;  /* a template that fails on this alert will fail again */
		goto out;
	}
	issue_title_clean(buf_str(&raw_title), &title);
	issue_marker(w->ev.key, &marker);
	episode_marker(w->iev.starts_at_ms, &markers);
	(void)buf_adds(&markers, "\n");
	(void)buf_adds(&markers, buf_str(&marker));
	issue_body_fit(buf_str(&raw_body), buf_str(&markers), &body);
	rc = earlier_create(b, w, buf_str(&marker), &gi, errmsg);
	if (rc == ERR_NOTFOUND)
		rc = note_create(b, w, errmsg);
	if (rc == ERR_NOTFOUND)
		rc = gh_issue_create(b->gh, w->repo, buf_str(&title), buf_str(&body),
				     buf_str(&marker), (const char *const *)labels,
				     (const char *const *)assignees, &gi, errmsg);
	if (rc)
		goto out;
	if (!w->have_row) {
		store_issue_release(&w->row);  /* a row whose issue was deleted: start afresh */
		memset(&w->row, 0, sizeof(w->row));
		w->row.receiver = xstrdup(w->ev.receiver);
		w->row.key = xstrdup(w->ev.key);
		w->row.created_at_ms = w->now_ms;
		w->have_row = 1;
	}
	issue_apply(&w->row, w->action, &w->iev, w->now_ms);
	free(w->row.repo);
	w->row.repo = xstrdup(gi.repo ? gi.repo : w->repo);
	w->row.number = gi.number;
	{
		struct log_line *l = log_begin(LOG_INFO, "issue created");
		log_str(l, "receiver", w->ev.receiver);
		log_str(l, "key", w->ev.key);
		log_str(l, "repo", w->row.repo);
		log_int(l, "issue", gi.number);
		if (w->row.previous_number)
			log_int(l, "previous", w->row.previous_number);
		log_str(l, "title", buf_str(&title));
		log_end(l);
	}
out:
	gh_issue_release(&gi);
	render_list_free(labels);
	render_list_free(assignees);
	buf_release(&raw_title);
	buf_release(&title);
	buf_release(&raw_body);
	buf_release(&body);
	buf_release(&marker);
	buf_release(&markers);
	return rc;
}

/*
 * Record progress on the event: step calls of the action done; with
 * comment_next, the next call is a comment that may be posted from now on.
 * A crash between that comment and the record of its outcome leaves this
 * note, and the retry looks for the comment's marker before posting again.
 */
static enum err note_progress(struct bridge *b, struct work *w, int step, int comment_next,
			      struct buf *errmsg)
{
	char note[40];
	enum err rc;

	snprintf(note, sizeof(note), "%s:%d%s", issue_action_str(w->action), step,
		 comment_next ? "~" : "");
	rc = store_event_progress(b->opts.store, w->ev.id, note);
	if (rc) {
		buf_setf(errmsg, "cannot record progress: %s", err_str(rc));
		return rc;
	}
	w->step = step;
	w->comment_noted = comment_next;
	return ERR_OK;
}

static int has_marker(void *ctx, const char *body, int64_t created_at_ms)
{
	const char **marker = ctx;

	(void)created_at_ms;
	if (*marker && strstr(body, *marker))
		*marker = NULL;  /* found */
	return *marker == NULL;
}

/*
 * Is the comment carrying marker already on the issue (posted by an attempt
 * that died before recording it)?  ERR_OK yes, ERR_NOTFOUND no, another
 * error when GitHub could not tell.
 */
static enum err comment_posted(struct bridge *b, struct work *w, const char *marker,
			       struct buf *errmsg)
{
	const char *m = marker;
	enum err rc = gh_comment_list(b->gh, w->row.repo, w->row.number, has_marker, &m, errmsg);

	if (rc)
		return rc;
	if (m)
		return ERR_NOTFOUND;
	{
		struct log_line *l = log_begin(LOG_INFO, "earlier comment found by marker");
		log_str(l, "receiver", w->ev.receiver);
		log_str(l, "key", w->ev.key);
		log_str(l, "repo", w->row.repo);
		log_int(l, "issue", w->row.number);
		log_end(l);
	}
	return ERR_OK;
}

static enum err do_comment(struct bridge *b, struct work *w, const json_t *view,
			   enum render_text which, struct buf *errmsg)
{
	struct buf text = BUF_INIT, marker = BUF_INIT;
	enum err rc;

	comment_marker(&w->iev, &marker);
	rc = comment_text(b, w, view, which, buf_str(&marker), &text, errmsg);
	if (rc) {
		rc = ERR_INVALID;
		goto out;
	}
	if (w->comment_in_doubt) {
		rc = comment_posted(b, w, buf_str(&marker), errmsg);
		if (rc != ERR_NOTFOUND)
			goto out;  /* posted already (ERR_OK), or cannot tell yet */
		w->comment_in_doubt = 0;
	} else if (!w->comment_noted && !gh_dry_run(b->gh)) {
		rc = note_progress(b, w, w->step, 1, errmsg);
		if (rc)
			goto out;
	}
	rc = gh_comment_create_marked(b->gh, w->row.repo, w->row.number, buf_str(&text),
				      buf_str(&marker), errmsg);
out:
	buf_release(&text);
	buf_release(&marker);
	return rc;
}

static enum err do_state(struct bridge *b, struct work *w, const char *state, const char *reason,
			 struct buf *errmsg)
{
	struct gh_issue gi = { 0 };
	enum err rc = gh_issue_set_state(b->gh, w->row.repo, w->row.number, state, reason, &gi,
					 errmsg);
	gh_issue_release(&gi);
	return rc;
}

/*
 * Two calls, the first recorded: a retry resumes after it.  A reopen changes
 * the state first (the comment then explains it); a close comments first so
 * the issue reads "resolved at ..." above the close event.
 */
static enum err execute(struct bridge *b, struct work *w, struct buf *errmsg)
{
	json_t *view = NULL;
	enum err rc = ERR_OK;

	if (w->action == ISSUE_NOTHING)
		return ERR_OK;
	rc = build_view(b, w, &view, errmsg);
	if (rc)
		return ERR_INVALID;
	switch (w->action) {
	case ISSUE_NOTHING:
		break;
	case ISSUE_CREATE:
	case ISSUE_CREATE_LINKED:
		rc = do_create(b, w, view, errmsg);
		break;
	case ISSUE_COMMENT_REFIRE:
		rc = do_comment(b, w, view, RENDER_REFIRE, errmsg);
		break;
	case ISSUE_COMMENT_RESOLVED:
		rc = do_comment(b, w, view, RENDER_RESOLVE, errmsg);
		break;
	case ISSUE_REOPEN:
		if (w->step < 1) {
			rc = do_state(b, w, "open", "reopened", errmsg);
			if (!rc)  /* the comment follows at once */
				rc = note_progress(b, w, 1, !gh_dry_run(b->gh), errmsg);
		}
		if (!rc)
			rc = do_comment(b, w, view, RENDER_REOPEN, errmsg);
		break;
	case ISSUE_CLOSE:
		if (w->step < 1) {
			rc = do_comment(b, w, view, RENDER_RESOLVE, errmsg);
			if (!rc)
				rc = note_progress(b, w, 1, 0, errmsg);
		}
		if (!rc)
			rc = do_state(b, w, "closed", "completed", errmsg);
		break;
	}
	json_decref(view);
	return rc;
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

static int64_t backoff_ms(struct bridge *b, int attempts)
{
	int64_t d = b->opts.retry_base_ms;
	int64_t half;

	for (int i = 0; i < attempts && d < b->opts.retry_max_ms; i++)
		d *= 2;
	if (d > b->opts.retry_max_ms)
		d = b->opts.retry_max_ms;
	half = d / 2;
	return half + (half > 0 ? (int64_t)(rand_r(&b->seed) % (half + 1)) : 0);
}

static void fail(struct bridge *b, struct work *w, enum err rc, const char *why)
{
	struct log_line *l;
	enum err src;

	if (rc == ERR_INVALID) {
		src = store_event_dead(b->opts.store, w->ev.id, why);
		l = log_begin(LOG_ERROR, "event dead-lettered");
		count(b, w->ev.receiver, "dead");
	} else {
		/* From the time of the failure: the client's own retries took time. */
		int64_t t = now_ms(b);
		int64_t next = t + backoff_ms(b, w->ev.attempts);
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
	log_int(l, "attempts", w->ev.attempts + 1);
	log_str(l, "detail", why);
	log_end(l);
	if (src)
		log_msg(LOG_ERROR, "cannot record event outcome", "err", err_str(src));
}

static void finish(struct bridge *b, struct work *w)
{
	struct buf msg = BUF_INIT;
	enum err rc;

	if (w->have_row)
		issue_apply(&w->row, w->action, &w->iev, w->now_ms);
	rc = store_event_done(b->opts.store, w->ev.id, w->have_row ? &w->row : NULL, &msg);
	if (rc) {
		struct log_line *l = log_begin(LOG_ERROR, "cannot record event done");
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
			log_int(l, "issue", w->row.number);
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

/* ---- rebuilding the map from GitHub ---- */

/* One scan of a repository for one receiver. */
struct scan {
	struct bridge *b;
	const char *receiver;
	const char *repo;
	int64_t reopen_window_ms;
	int64_t now_ms;
	int64_t imported;
	enum err rc;        /* first failure; stops the walk */
	struct buf *errmsg;
};

static int newest_comment_episode(void *ctx, const char *body, int64_t created_at_ms)
{
	int64_t *best = ctx;
	int64_t e = episode_of(body);

	(void)created_at_ms;
	if (e > *best)
		*best = e;
	return 0;
}

/*
 * The newest episode applied to an issue: the newest episode marker of its
 * body and of its comments.  Comments are read only when the issue may still
 * see the episode again: open, or closed within the reopen window.  An issue
 * without any marker (made by a version without them) counts from its
 * creation: a notification that started before it is then stale.
 */
static enum err issue_episode(struct scan *sc, const struct gh_issue *is, int64_t *out)
{
	int64_t e = episode_of(is->body);
	int recent = !is->state || strcmp(is->state, "closed") ||
		     sc->now_ms - is->closed_at_ms <= sc->reopen_window_ms;
	enum err rc = ERR_OK;

	if (is->comments > 0 && recent)
		rc = gh_comment_list(sc->b->gh, is->repo, is->number, newest_comment_episode, &e,
				     sc->errmsg);
	*out = e ? e : is->created_at_ms;
	return rc;
}

/*
 * Import one listed issue that carries a key marker: the map row of
 * (receiver, key) unless one exists already.  Issues come oldest first, so a
 * newer issue of the same key in the same repository (a linked one)
 * replaces the older, which becomes previous_number.
 */
static int scan_issue(void *ctx, const struct gh_issue *is)
{
	struct scan *sc = ctx;
	struct buf key = BUF_INIT;
	struct store_issue row = { 0 }, old = { 0 };
	int have_old = 0;
	enum err rc;

	if (!issue_marker_parse(is->body, &key))
		goto out;
	/* A storm summary (bridge/storm.h) is not an alert's issue: its rows are rebuilt by
	 * no one, and its members get their own issues when they fire again. */
	if (storm_is_summary_key(buf_str(&key)))
		goto out;
	rc = store_issue_get(sc->b->opts.store, sc->receiver, buf_str(&key), &old);
	if (rc && rc != ERR_NOTFOUND) {
		sc->rc = ERR_DB;
		buf_setf(sc->errmsg, "rebuild: cannot read the map row of %s", buf_str(&key));
		goto out;
	}
	have_old = rc == ERR_OK;
	if (have_old && !(old.repo && !strcmp(old.repo, is->repo) && old.number < is->number))
		goto out;
	row.receiver = (char *)sc->receiver;
	row.key = (char *)buf_str(&key);
	row.repo = is->repo;
	row.number = is->number;
	row.state = is->state;
	row.state_reason = is->state_reason;
	row.closed_at_ms = is->closed_at_ms;
	row.previous_number = have_old ? old.number : 0;
	row.created_at_ms = is->created_at_ms ? is->created_at_ms : sc->now_ms;
	row.updated_at_ms = sc->now_ms;
	sc->rc = issue_episode(sc, is, &row.episode_starts_ms);
	if (sc->rc)
		goto out;
	sc->rc = store_issue_put(sc->b->opts.store, &row);
	if (sc->rc) {
		buf_setf(sc->errmsg, "rebuild: cannot store the map row of %s", buf_str(&key));
		goto out;
	}
	sc->imported++;
	{
		struct log_line *l = log_begin(LOG_INFO, "map row rebuilt from github");
		log_str(l, "receiver", sc->receiver);
		log_str(l, "key", row.key);
		log_str(l, "repo", row.repo);
		log_int(l, "issue", row.number);
		log_str(l, "state", row.state);
		log_int(l, "episode_starts_ms", row.episode_starts_ms);
		log_end(l);
	}
out:
	store_issue_release(&old);
	buf_release(&key);
	return sc->rc != ERR_OK;
}

/*
 * Before the first event of (receiver, repo) after the database was created,
 * rebuild the map rows of that repository from the issues' markers, so a lost
 * database never leads to a second issue for an alert (or to a resolve that
 * finds no issue to close).  Done once, recorded in the store; not in
 * dry-run (no calls are made there).
 */
static enum err ensure_scanned(struct bridge *b, struct work *w, struct buf *errmsg)
{
	struct scan sc = { 0 };
	enum err rc;

	if (gh_dry_run(b->gh) || issue_repo_valid(w->repo, NULL) != ERR_OK)
		return ERR_OK;  /* no calls; or a repo the create will reject for good */
	rc = store_scan_get(b->opts.store, w->ev.receiver, w->repo, NULL);
	if (rc != ERR_NOTFOUND) {
		if (rc)
			buf_setf(errmsg, "cannot read the scans of %s", w->repo);
		return rc;
	}
	sc.b = b;
	sc.receiver = w->ev.receiver;
	sc.repo = w->repo;
	sc.reopen_window_ms = w->rcv->reopen_window_ms;
	sc.now_ms = now_ms(b);
	sc.errmsg = errmsg;
	rc = gh_issue_list(b->gh, w->repo, scan_issue, &sc, errmsg);
	if (!rc)
		rc = sc.rc;
	if (!rc)
		rc = store_scan_done(b->opts.store, w->ev.receiver, w->repo, now_ms(b));
	{
		struct log_line *l = log_begin(rc ? LOG_WARN : LOG_INFO,
					       rc ? "map rebuild from github failed, will retry"
						  : "map rebuilt from github");
		if (rc)
			log_err(l, rc);
		log_str(l, "receiver", w->ev.receiver);
		log_str(l, "repo", w->repo);
		log_int(l, "rows", sc.imported);
		if (rc)
			log_str(l, "detail", buf_str(errmsg));
		log_end(l);
	}
	metric_add(b->m_rebuilt, NULL, (double)sc.imported);
	return rc;
}

static void handle(struct bridge *b, struct work *w)
{
	struct buf errmsg = BUF_INIT;
	json_t *repo;
	enum err rc;

	w->rcv = cfg_receiver_find(b->opts.cfg, w->ev.receiver);
	if (!w->rcv) {
		buf_setf(&errmsg, "receiver \"%s\" is no longer configured", w->ev.receiver);
		fail(b, w, ERR_INVALID, buf_str(&errmsg));
		goto out;
	}
	w->payload_doc = json_loads(w->ev.payload, 0, NULL);
	repo = json_object_get(w->payload_doc, "repo");
	w->repo = json_is_string(repo) ? json_string_value(repo) : w->rcv->repo;
	rc = ensure_scanned(b, w, &errmsg);
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
	if (storm_hook(b, w, &errmsg))
		goto out;
	rc = plan(b, w, &errmsg);
	if (!rc)
		rc = execute(b, w, &errmsg);
	if (rc == ERR_RETRY && gh_stopping(b)) {
		/* Cut short by bridge_stop(): not a failure; the next start resumes it. */
		struct log_line *l = log_begin(LOG_INFO, "stopping: event left for the next start");
		log_int(l, "event", w->ev.id);
		log_str(l, "key", w->ev.key);
		log_str(l, "detail", buf_str(&errmsg));
		log_end(l);
	} else if (rc) {
		fail(b, w, rc, buf_str(&errmsg));
	} else {
		finish(b, w);
	}
out:
	buf_release(&errmsg);
}

static void update_gauges(struct bridge *b)
{
	struct gh_stats s;

	if (!b->opts.metrics)
		return;
	metric_set(b->m_pending, NULL, (double)store_pending_count(b->opts.store, "bridge"));
	metric_set(b->m_dead, NULL, (double)store_dead_count(b->opts.store));
	gh_stats(b->gh, &s);
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
	metric_set(b->m_gh_ratelimit, NULL, (double)s.ratelimit_remaining);
	b->last_stats = s;
}

int bridge_step(struct bridge *b)
{
	struct work w;
	enum err rc;

	memset(&w, 0, sizeof(w));
	w.now_ms = now_ms(b);
	if (storm_sync(b->storm, w.now_ms)) {  /* a due summary issue's calls first */
		update_gauges(b);
		return 1;
	}
	rc = store_next_event(b->opts.store, "bridge", w.now_ms, &w.ev);
	if (rc == ERR_NOTFOUND) {
		update_gauges(b);
		return 0;
	}
	if (rc)
		return -1;
	handle(b, &w);
	store_event_release(&w.ev);
	store_issue_release(&w.row);
	json_decref(w.payload_doc);
	update_gauges(b);
	return 1;
}

static void *worker(void *arg)
{
	struct bridge *b = arg;

	while (!gh_stopping(b)) {
		int r = bridge_step(b);
		if (r == 0)
			store_wait_kind(b->opts.store, "bridge", 1000);
		else if (r < 0)
			clock_stop_sleep_ms(&b->stop, 1000);
	}
	return NULL;
}

enum err bridge_start(struct bridge *b, struct buf *errmsg)
{
	if (b->started)
		return ERR_OK;
	if (pthread_create(&b->thread, NULL, worker, b)) {
		buf_setf(errmsg, "cannot start the bridge worker thread");
		return ERR_IO;
	}
	b->started = 1;
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
	if (!b || !b->started)
		return;
	clock_stop_request(&b->stop);
	store_wake(b->opts.store);
}

void bridge_stop(struct bridge *b)
{
	if (!b || !b->started)
		return;
	bridge_request_stop(b);
	pthread_join(b->thread, NULL);
	b->started = 0;
}

void bridge_free(struct bridge *b)
{
	if (!b)
		return;
	bridge_stop(b);
	storm_free(b->storm);
	gh_client_free(b->gh);
	free(b->html_base);
	clock_stop_release(&b->stop);
	free(b);
}
