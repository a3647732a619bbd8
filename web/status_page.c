/*
 * status_page.c - the on-call page (web/status_page.h): one HTML document
 * written into a struct buf, section by section, from the store, the
 * bridge's GitHub budget and the janitor's last sweep.  Every value that
 * comes from outside goes through text(), which escapes it; the markup
 * around it is literal.  Cards, not wide tables, so a 412 px screen needs no
 * horizontal scrolling.
 */
#include "web/status_page.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bridge/group.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/mustache.h"
#include "core/rfc3339.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "store/store_outbox.h"
#include "store/store_silences.h"
#include "core/xalloc.h"
#include "core/banned.h"

struct status_page {
	struct status_page_options opts;
};

/* One render: the page, its filter, the clock, and where it writes. */
struct render_ctx {
	struct status_page *p;
	const struct status_filter *f;
	struct buf *out;
	int64_t now_ms;
	int shown;      /* cards written in the current section */
	int64_t more;   /* matching rows past max_rows */
	int64_t firing;
	/* The alerts by state, in the order shown (states[]): each keeps max_rows cards at most. */
	struct buf bucket[4];
	size_t *ends[4];  /* where each card of a bucket ends: cards are cut whole */
	int in_bucket[4];
	int64_t matched[4];
};

static const char css[] =
	":root{color-scheme:light dark;--bg:#f6f8fa;--card:#fff;--fg:#1f2328;--muted:#59636e;"
	"--line:#d1d9e0;--red:#cf222e;--green:#1a7f37;--amber:#9a6700;--purple:#8250df;"
	"--grey:#6e7781;--link:#0969da}"
	"@media(prefers-color-scheme:dark){:root{--bg:#0d1117;--card:#151b23;--fg:#e6edf3;"
	"--muted:#9198a1;--line:#3d444d;--link:#4493f8}}"
	"*{box-sizing:border-box}"
	"body{margin:0;font:15px/1.45 system-ui,-apple-system,'Segoe UI',Roboto,sans-serif;"
	"background:var(--bg);color:var(--fg)}"
	"header{background:#24292f;color:#fff;padding:10px 14px}"
	"header h1{font-size:18px;margin:0}header p{margin:2px 0 0;font-size:13px;color:#d1d9e0}"
	"main{max-width:980px;margin:0 auto;padding:10px}"
	"h2{font-size:16px;margin:18px 0 6px}h2 small{font-weight:400;color:var(--muted)}"
	"a{color:var(--link)}"
	".tiles{display:grid;grid-template-columns:repeat(auto-fit,minmax(118px,1fr));gap:6px}"
	".tile,.card{background:var(--card);border:1px solid var(--line);border-radius:8px}"
	".tile{padding:6px 9px;font-size:12px;line-height:1.3;color:var(--muted)}"
	".tile b{display:block;font-size:19px;color:var(--fg)}"
	".tile.bad b{color:var(--red)}"
	".card{border-left:5px solid var(--grey);padding:9px 12px;margin:8px 0;"
	"overflow-wrap:anywhere}"
	".firing{border-left-color:var(--red)}.resolved{border-left-color:var(--green)}"
	".dead-lettered{border-left-color:var(--purple)}.dry-run{border-left-color:var(--grey)}"
	".wait{border-left-color:var(--amber)}"
	".badge{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;"
	"font-weight:600;color:#fff;background:var(--grey);margin-right:6px;vertical-align:1px}"
	".firing .badge{background:var(--red)}.resolved .badge{background:var(--green)}"
	".dead-lettered .badge{background:var(--purple)}.wait .badge{background:var(--amber)}"
	".name{font-weight:600}.title{display:block;margin:3px 0}"
	".meta{color:var(--muted);font-size:13px;margin:2px 0}"
	".reason{font-size:13px;margin:4px 0}"
	"code{font:12.5px ui-monospace,SFMono-Regular,Menlo,Consolas,monospace;"
	"background:rgba(127,127,127,.14);padding:1px 4px;border-radius:4px}"
	"pre{margin:4px 0;white-space:pre-wrap;overflow-wrap:anywhere}"
	"form{display:flex;flex-wrap:wrap;gap:6px;margin:12px 0 0}"
	"input,select,button{font:inherit;padding:6px 8px;min-width:0;flex:1 1 110px;"
	"border:1px solid var(--line);border-radius:6px;background:var(--card);color:var(--fg)}"
	"button{flex:0 0 auto;background:#1f883d;color:#fff;border-color:#1f883d}"
	".clear{align-self:center;font-size:13px}"
	".note{color:var(--muted);font-size:13px}.nw{white-space:nowrap}";

/* ---- small writers ---- */

static void text(struct render_ctx *r, const char *s)
{
	mustache_html_escape(r->out, s);
}

static void lit(struct render_ctx *r, const char *s)
{
	(void)buf_adds(r->out, s);
}

/* fmt as it is but each %s, the next argument (const char *, NULL: ""), HTML-escaped. */
static void html(struct render_ctx *r, const char *fmt, ...)
{
	va_list ap;
	const char *p;

	va_start(ap, fmt);
	while ((p = strstr(fmt, "%s")) != NULL) {
		(void)buf_add(r->out, fmt, (size_t)(p - fmt));
		text(r, va_arg(ap, const char *));
		fmt = p + 2;
	}
	va_end(ap);
	lit(r, fmt);
}

/* A short age: "45s", "12m", "3h5m", "2d4h" (two units at most, truncated). */
static void age(struct buf *out, int64_t ms)
{
	int64_t s = ms < 0 ? -ms / 1000 : ms / 1000;

	if (ms < 0)
		(void)buf_addch(out, '-');
	if (s < 60)
		(void)buf_printf(out, "%llds", (long long)s);
	else if (s < 3600)
		(void)buf_printf(out, "%lldm", (long long)(s / 60));
	else if (s < 86400)
		(void)buf_printf(out, "%lldh%lldm", (long long)(s / 3600), (long long)(s % 3600 / 60));
	else
		(void)buf_printf(out, "%lldd%lldh", (long long)(s / 86400), (long long)(s % 86400 / 3600));
}

/* <time datetime="T">T</time> and " (3h5m ago)" / " (in 3h5m)". */
static void when(struct render_ctx *r, int64_t ms)
{
	char t[32];

	if (ms <= 0) {
		lit(r, "-");
		return;
	}
	rfc3339_format(ms, t);
	(void)buf_printf(r->out, "<time datetime=\"%s\">%s</time> (", t, t);
	if (ms <= r->now_ms) {
		age(r->out, r->now_ms - ms);
		lit(r, " ago)");
	} else {
		lit(r, "in ");
		age(r->out, ms - r->now_ms);
		lit(r, ")");
	}
}

/* A word for a shell: as it is when it needs no quoting, else in single quotes. */
static void shell_word(struct buf *out, const char *s)
{
	if (*s && strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
			    "._-/:@%+=,") == strlen(s)) {
		(void)buf_adds(out, s);
		return;
	}
	(void)buf_addch(out, '\'');
	for (; *s; s++)
		(void)buf_adds(out, *s == '\'' ? "'\\''" : (char[2]){ *s, '\0' });
	(void)buf_addch(out, '\'');
}

/*
 * The command that re-queues the bridge dead letters of (receiver, key)
 * (main.c map retry); its flag does not break at its hyphens on a narrow screen.
 */
static void retry_command(struct render_ctx *r, const char *receiver, const char *key)
{
	struct buf w = BUF_INIT;

	lit(r, "<div class=\"reason\">Retry: <pre><code class=\"retry\">alertbridge map retry ");
	shell_word(&w, key);
	text(r, buf_str(&w));
	buf_reset(&w);
	shell_word(&w, receiver);
	lit(r, " <span class=\"nw\">--receiver=");
	text(r, buf_str(&w));
	lit(r, "</span></code></pre></div>");
	buf_release(&w);
}

/* ---- filters ---- */

static const char *const states[] = { "firing", "resolved", "dead-lettered", "dry-run" };

static int empty(const char *s)
{
	return !s || !*s;
}

static int known_state(const char *s)
{
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		if (!strcmp(s, states[i]))
			return 1;
	return 0;
}

static int match_receiver(const struct status_filter *f, const char *receiver)
{
	return empty(f->receiver) || (receiver && !strcmp(f->receiver, receiver));
}

static int match_state(const struct status_filter *f, const char *state)
{
	return empty(f->state) || !strcmp(f->state, state);
}

static int match_alertname(const struct status_filter *f, const char *alertname)
{
	return empty(f->alertname) || (alertname && strcasestr(alertname, f->alertname));
}

/* A map row's state on the page; the order of the checks is what matters most first. */
static const char *row_state(const struct store_issue *row)
{
	if (row->dead_reason)
		return "dead-lettered";
	if (row->number == 0)
		return "dry-run";
	return group_row_resolved(row) ? "resolved" : "firing";
}

/* Past the cap a matching row is only counted; 1 when this one is to be written. */
static int take_row(struct render_ctx *r)
{
	if (r->shown >= r->p->opts.max_rows) {
		r->more++;
		return 0;
	}
	r->shown++;
	return 1;
}

static void more_note(struct render_ctx *r, const char *what)
{
	if (r->more)
		(void)buf_printf(r->out, "<p class=\"note more\">%lld more not shown%s</p>\n",
				 (long long)r->more, what);
	else if (!r->shown)
		lit(r, "<p class=\"note\">None.</p>\n");
}

/* ---- the alerts ---- */

static void last_event(struct render_ctx *r, const struct store_issue *row)
{
	struct store_event ev = { 0 };
	enum store_event_state state;

	if (store_event_latest(r->p->opts.store, "bridge", row->receiver, row->key, &ev,
			       &state) != ERR_OK) {
		lit(r, "<div class=\"meta\">Last change ");
		when(r, row->updated_at_ms);
		lit(r, "</div>");
		return;
	}
	lit(r, "<div class=\"meta\">Last event: ");
	text(r, ev.status);
	lit(r, " ");
	when(r, ev.received_at_ms);
	if (state == STORE_EVENT_PENDING)
		(void)buf_printf(r->out, ", queued (%d failed attempts)", ev.attempts);
	lit(r, "</div>");
	store_event_release(&ev);
}

/* The alert's active silences made from its issue (bridge/silence.h): until when, by whom. */
static void silences(struct render_ctx *r, const struct store_issue *row)
{
	struct store_silence *v = NULL;
	size_t n = 0;

	if (store_silence_active(r->p->opts.store, row->receiver, row->key, r->now_ms, &v, &n) !=
	    ERR_OK)
		return;  /* logged */
	for (size_t i = 0; i < n; i++) {
		lit(r, "<div class=\"meta silence\">Silenced until ");
		when(r, v[i].ends_at_ms);
		lit(r, " by ");
		text(r, v[i].created_by);
		lit(r, " · silence <code>");
		text(r, v[i].silence_id);
		lit(r, "</code></div>");
	}
	store_silences_free(v, n);
}

/* A /silence of the alert's issue that Alertmanager refused (dead-lettered). */
static int refused_silence(void *ctx, const struct store_event *ev)
{
	struct render_ctx *r = ctx;

	lit(r, "<div class=\"reason silence-refused\">Silence refused (dead letter): ");
	text(r, ev->last_error ? ev->last_error : "-");
	lit(r, "</div>");
	retry_command(r, ev->receiver, ev->key);
	return 0;
}

static void issue_link(struct render_ctx *r, const struct store_issue *row)
{
	const char *title = row->title ? row->title : row->key;

	if (row->number <= 0 || !r->p->opts.bridge) {
		lit(r, "<span class=\"title\">");
		text(r, title);
		lit(r, "</span>");
		return;
	}
	{
		struct buf url = BUF_INIT;

		bridge_issue_url(r->p->opts.bridge, row->repo, row->number, &url);
		lit(r, "<a class=\"title\" href=\"");
		text(r, buf_str(&url));
		lit(r, "\">");
		text(r, title);
		lit(r, "</a>");
		buf_release(&url);
	}
}

static int state_index(const char *state)
{
	for (int i = 0; i < (int)(sizeof(states) / sizeof(states[0])); i++)
		if (!strcmp(state, states[i]))
			return i;
	return 0;
}

/*
 * A matching row's card goes into its state's bucket, up to max_rows each;
 * alerts_section() then shows firing ones first, so a cap never hides a
 * firing alert behind resolved ones.
 */
static int alert_card(void *ctx, const struct store_issue *row)
{
	struct render_ctx *r = ctx;
	const char *state = row_state(row);
	int b = state_index(state);
	struct buf *section = r->out;

	if (b == 0)
		r->firing++;
	if (!match_state(r->f, state) || !match_alertname(r->f, row->alertname))
		return 0;
	r->matched[b]++;
	if (r->in_bucket[b] >= r->p->opts.max_rows)
		return 0;
	if (!r->ends[b])
		r->ends[b] = xcalloc((size_t)r->p->opts.max_rows, sizeof(size_t));
	r->out = &r->bucket[b];
	(void)buf_printf(r->out, "<article class=\"card alert %s\"><div><span class=\"badge\">%s"
			 "</span><span class=\"name\">", state, state);
	text(r, row->alertname ? row->alertname : "(alertname not recorded)");
	lit(r, "</span></div>");
	issue_link(r, row);
	lit(r, "<div class=\"meta\">");
	text(r, row->receiver);
	lit(r, " · ");
	text(r, row->repo);
	if (row->number > 0)
		(void)buf_printf(r->out, "#%lld", (long long)row->number);
	lit(r, " · key <code>");
	text(r, row->key);
	lit(r, "</code></div><div class=\"meta\">Since ");
	when(r, row->episode_starts_ms);
	if (row->state == STORE_ISSUE_CLOSED) {
		lit(r, " · issue closed");
		if (row->state_reason) {
			lit(r, " (");
			text(r, row->state_reason);
			lit(r, ")");
		}
	}
	lit(r, "</div>");
	last_event(r, row);
	silences(r, row);
	if (store_silence_dead_each(r->p->opts.store, row->receiver, row->key, 5, refused_silence,
				    r) != ERR_OK)
		lit(r, "<div class=\"reason\">Cannot read its silence commands (see the log).</div>");
	if (row->dead_reason) {
		lit(r, "<div class=\"reason\">Dead letter: ");
		text(r, row->dead_reason);
		lit(r, "</div>");
		retry_command(r, row->receiver, row->key);
	}
	lit(r, "</article>\n");
	r->ends[b][r->in_bucket[b]++] = r->bucket[b].len;
	r->out = section;
	return 0;
}

static void alerts_section(struct render_ctx *r)
{
	const struct status_filter *f = r->f;
	struct buf head = BUF_INIT, *section = r->out;
	int64_t all = 0;
	enum err rc = ERR_OK;

	r->shown = 0;
	r->more = 0;
	if (empty(f->state) || known_state(f->state))
		rc = store_issue_each(r->p->opts.store, empty(f->receiver) ? NULL : f->receiver,
				      alert_card, r);
	for (int i = 0; i < 4; i++) {
		if (r->matched[i])
			(void)buf_printf(&head, "%s%lld %s", all ? ", " : "",
					 (long long)r->matched[i], states[i]);
		all += r->matched[i];
	}
	lit(r, "<section id=\"alerts\"><h2>Alerts <small>");
	text(r, buf_str(&head));
	lit(r, "</small></h2>\n");
	if (!empty(f->state) && !known_state(f->state)) {
		lit(r, "<p class=\"note\">Unknown state filter \"");
		text(r, f->state);
		lit(r, "\": use firing, resolved, dead-lettered or dry-run.</p>");
	} else if (rc != ERR_OK) {
		lit(r, "<p class=\"note\">Cannot read the map (see the log).</p>");
	}
	for (int i = 0; i < 4; i++) {
		int n = r->in_bucket[i];

		if (r->shown + n > r->p->opts.max_rows)
			n = r->p->opts.max_rows - r->shown;
		if (n > 0)
			(void)buf_add(section, r->bucket[i].data, r->ends[i][n - 1]);
		r->shown += n;
		buf_release(&r->bucket[i]);
		free(r->ends[i]);
	}
	r->more = all - r->shown;
	more_note(r, "; see alertbridge map list");
	lit(r, "</section>\n");
	buf_release(&head);
}

/* ---- dead letters without a map row ---- */

/* labels.alertname of an event document, or NULL; *doc holds it (json_decref). */
static const char *event_alertname(const char *payload, json_t **doc)
{
	*doc = json_loads(payload ? payload : "", 0, NULL);
	return json_string_value(json_object_get(json_object_get(*doc, "labels"), "alertname"));
}

static int dead_card(void *ctx, const struct store_event *ev)
{
	struct render_ctx *r = ctx;
	json_t *doc = NULL;
	const char *alertname = event_alertname(ev->payload, &doc);

	if (!match_receiver(r->f, ev->receiver) || !match_alertname(r->f, alertname) ||
	    !take_row(r))
		goto out;
	html(r, "<article class=\"card dead-lettered deadletter\"><div><span class=\"badge\">"
		"dead-lettered</span><span class=\"name\">%s</span></div><div class=\"meta\">%s"
		" queue · %s · key <code>%s</code> · %s, received ",
	     alertname ? alertname : ev->key, ev->kind, ev->receiver, ev->key, ev->status);
	when(r, ev->received_at_ms);
	html(r, "</div><div class=\"reason\">Reason: %s</div>",
	     ev->last_error ? ev->last_error : "-");
	if (!strcmp(ev->kind, "bridge"))
		retry_command(r, ev->receiver, ev->key);
	lit(r, "</article>\n");
out:
	json_decref(doc);
	return 0;
}

static void dead_section(struct render_ctx *r)
{
	static const char *const kinds[] = { "bridge", "janitor" };

	if (!empty(r->f->state) && strcmp(r->f->state, "dead-lettered"))
		return;
	lit(r, "<section id=\"dead\"><h2>Dead letters without an issue</h2>\n");
	r->shown = 0;
	r->more = 0;
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (store_dead_unmapped(r->p->opts.store, kinds[i], 1000, dead_card, r) != ERR_OK)
			lit(r, "<p class=\"note\">Cannot read the queue (see the log).</p>");
	more_note(r, " (the first 1000 of each queue are looked at)");
	lit(r, "</section>\n");
}

/* ---- the janitor ---- */

/* "delivered 12:03Z (3m ago)", "queued", "failed: why", "none" for the newest kind of uid. */
static void notice_state(struct render_ctx *r, const char *label, const char *uid,
			 const char *kind)
{
	struct store_notice n = { 0 };
	enum err rc = uid && *uid ? store_notice_latest(r->p->opts.store, uid, kind, &n)
				  : ERR_NOTFOUND;

	(void)buf_printf(r->out, "<div class=\"meta %s\">%s: ", kind, label);
	if (rc == ERR_NOTFOUND) {
		lit(r, "none");
	} else if (rc) {
		lit(r, "cannot read the outbox");
	} else if (n.state == STORE_NOTICE_SENT) {
		lit(r, "delivered ");
		when(r, n.sent_at_ms);
	} else if (n.state == STORE_NOTICE_PENDING) {
		lit(r, "queued ");
		when(r, n.created_at_ms);
		if (n.attempts)
			(void)buf_printf(r->out, ", %d failed attempts", n.attempts);
	} else {
		lit(r, "failed: ");
		text(r, n.last_error ? n.last_error : store_notice_state_str(n.state));
	}
	lit(r, "</div>");
	store_notice_release(&n);
}

static void pod_card(void *ctx, const struct janitor_plan_row *row)
{
	struct render_ctx *r = ctx;
	int dry_run = janitor_dry_run(r->p->opts.janitor);

	if (!match_alertname(r->f, row->reason) || !take_row(r))
		return;
	html(r, "<article class=\"card wait pod\"><div><span class=\"badge\">%s</span>"
		"<span class=\"name\">%s/%s</span></div><div class=\"meta\">Owner %s · policy %s",
	     row->action, row->namespace, row->pod, row->owner, row->reason);
	if (dry_run)
		lit(r, " · dry-run");
	/* when() writes "-" for JANITOR_NO_TIME (INT64_MIN), as for any time not set. */
	lit(r, "</div><div class=\"meta expires\">janitor/expires ");
	when(r, row->expires_ms);
	lit(r, "</div>");
	notice_state(r, "Notice", row->uid, "notice");
	lit(r, "<div class=\"meta\">janitor/notified-at ");
	when(r, row->notified_ms);
	lit(r, "</div>");
	notice_state(r, "Reminder", row->uid, "reminder");
	lit(r, "</article>\n");
}

static void janitor_section(struct render_ctx *r)
{
	struct janitor *j = r->p->opts.janitor;
	int64_t at, total = 0;

	if (!j || !empty(r->f->receiver) || !empty(r->f->state))
		return;
	lit(r, "<section id=\"janitor\"><h2>Janitor: marked pods");
	if (janitor_dry_run(j))
		lit(r, " <small>(dry-run: nothing is written)</small>");
	lit(r, "</h2>\n");
	r->shown = 0;
	r->more = 0;
	at = janitor_pods_each(j, pod_card, r, &total);
	if (!at) {
		lit(r, "<p class=\"note\">No sweep has completed yet.</p>");
	} else {
		if (total > r->shown + r->more)  /* past what the sweep keeps */
			r->more += total - r->shown - r->more;
		more_note(r, "");
		lit(r, "<p class=\"note\">As of the sweep ");
		when(r, at);
		lit(r, ".</p>");
	}
	lit(r, "</section>\n");
}

/* ---- the summary ---- */

static void tile(struct render_ctx *r, int bad, const char *label, const char *value,
		 const char *detail)
{
	(void)buf_printf(r->out, "<div class=\"tile%s\"><b>", bad ? " bad" : "");
	text(r, value);
	lit(r, "</b>");
	text(r, label);
	if (detail && *detail) {
		lit(r, "<br>");
		text(r, detail);
	}
	lit(r, "</div>");
}

static void queue_tile(struct render_ctx *r, const char *kind, const char *label)
{
	char v[32];
	struct buf d = BUF_INIT;
	int64_t n = store_pending_count(r->p->opts.store, kind);
	int64_t oldest = store_oldest_pending_ms(r->p->opts.store, kind);

	if (oldest == INT64_MAX)  /* none pending */
		oldest = 0;

	snprintf(v, sizeof(v), "%lld", (long long)n);
	if (oldest > 0) {
		(void)buf_adds(&d, "oldest ");
		age(&d, r->now_ms - oldest);
	} else if (n == 0) {
		(void)buf_adds(&d, "empty");
	}
	tile(r, oldest > 0 && r->now_ms - oldest > 15 * 60 * 1000, label, v, buf_str(&d));
	buf_release(&d);
}

/* "left/limit" and when the budget is whole again. */
static void budget_tile(struct render_ctx *r, const char *label, int left, int limit,
			int64_t full_ms)
{
	char v[32];
	struct buf d = BUF_INIT;

	snprintf(v, sizeof(v), "%d/%d", full_ms && full_ms <= r->now_ms ? limit : left, limit);
	if (full_ms > r->now_ms) {
		(void)buf_adds(&d, "full in ");
		age(&d, full_ms - r->now_ms);
	}
	tile(r, left == 0 && full_ms > r->now_ms, label, v, buf_str(&d));
	buf_release(&d);
}

static void github_tiles(struct render_ctx *r)
{
	struct gh_stats g;
	char v[32];
	struct buf d = BUF_INIT;

	if (!r->p->opts.bridge)
		return;
	if (bridge_dry_run(r->p->opts.bridge)) {
		tile(r, 0, "GitHub", "dry-run", "no calls are made");
		return;
	}
	bridge_budget(r->p->opts.bridge, &g);
	if (g.ratelimit_remaining < 0) {
		snprintf(v, sizeof(v), "?");
		(void)buf_adds(&d, "no answer seen yet");
	} else {
		snprintf(v, sizeof(v), "%lld", (long long)g.ratelimit_remaining);
		if (g.ratelimit_reset_ms > r->now_ms) {
			(void)buf_adds(&d, "resets in ");
			age(&d, g.ratelimit_reset_ms - r->now_ms);
		}
	}
	tile(r, g.ratelimit_remaining == 0 && g.ratelimit_reset_ms > r->now_ms,
	     "GitHub API calls left", v, buf_str(&d));
	budget_tile(r, "writes left / minute", g.content_left_minute, g.content_limit_minute,
		    g.content_full_minute_ms);
	budget_tile(r, "writes left / hour", g.content_left_hour, g.content_limit_hour,
		    g.content_full_hour_ms);
	buf_release(&d);
}

static void summary(struct render_ctx *r, int64_t firing)
{
	char v[32];
	int64_t dead = store_dead_count(r->p->opts.store);

	lit(r, "<section class=\"tiles\" id=\"summary\">");
	snprintf(v, sizeof(v), "%lld", (long long)firing);
	tile(r, firing > 0, "alerts firing", v, empty(r->f->receiver) ? "" : r->f->receiver);
	snprintf(v, sizeof(v), "%lld", (long long)dead);
	tile(r, dead > 0, "dead letters", v, "");
	queue_tile(r, "bridge", "GitHub queue");
	if (r->p->opts.janitor)
		queue_tile(r, "janitor", "janitor queue");
	github_tiles(r);
	lit(r, "</section>\n");
}

/* ---- the document ---- */

static void filter_form(struct render_ctx *r)
{
	const struct config *cfg = r->p->opts.cfg;
	const struct status_filter *f = r->f;

	lit(r, "<form method=\"get\" action=\"/\" id=\"filters\"><select name=\"receiver\" "
	       "aria-label=\"receiver\"><option value=\"\">all receivers</option>");
	for (size_t i = 0; cfg && i < cfg->receivers_count; i++) {
		const char *name = cfg->receivers[i].name;

		lit(r, "<option value=\"");
		text(r, name);
		lit(r, !empty(f->receiver) && !strcmp(f->receiver, name) ? "\" selected>" : "\">");
		text(r, name);
		lit(r, "</option>");
	}
	lit(r, "</select><select name=\"state\" aria-label=\"state\"><option value=\"\">"
	       "any state</option>");
	for (size_t i = 0; i < sizeof(states) / sizeof(states[0]); i++)
		(void)buf_printf(r->out, "<option%s>%s</option>",
				 !empty(f->state) && !strcmp(f->state, states[i]) ? " selected" : "",
				 states[i]);
	lit(r, "</select><input name=\"alertname\" placeholder=\"alertname\" "
	       "aria-label=\"alertname\" value=\"");
	text(r, f->alertname);
	lit(r, "\"><button type=\"submit\">Filter</button><a class=\"clear\" href=\"/\">clear</a>"
	       "</form>\n");
}

static int64_t real_now(void *ctx)
{
	(void)ctx;
	return clock_wall_ms();
}

struct status_page *status_page_new(const struct status_page_options *opts)
{
	struct status_page *p = xcalloc(1, sizeof(*p));

	p->opts = *opts;
	if (p->opts.max_rows <= 0)
		p->opts.max_rows = STATUS_PAGE_MAX_ROWS;
	if (!p->opts.now_ms)
		p->opts.now_ms = real_now;
	return p;
}

void status_page_free(struct status_page *p)
{
	free(p);
}

void status_page_render(struct status_page *p, const struct status_filter *f, struct buf *out)
{
	static const struct status_filter none = { NULL, NULL, NULL };
	struct render_ctx r;
	struct buf body = BUF_INIT;
	char t[32];

	memset(&r, 0, sizeof(r));
	r.p = p;
	r.f = f ? f : &none;
	r.now_ms = p->opts.now_ms(p->opts.clock_ctx);
	/* The sections first, into body: the summary's firing count comes from them. */
	r.out = &body;
	alerts_section(&r);
	dead_section(&r);
	janitor_section(&r);
	r.out = out;
	rfc3339_format(r.now_ms, t);
	lit(&r, "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
		"<meta http-equiv=\"refresh\" content=\"60\">"
		"<title>alertbridge</title><style>");
	lit(&r, css);
	lit(&r, "</style></head><body>\n<header><h1>alertbridge</h1><p>");
	if (p->opts.version) {
		text(&r, p->opts.version);
		lit(&r, " · ");
	}
	if (p->opts.bridge)
		lit(&r, bridge_dry_run(p->opts.bridge) ? "GitHub dry-run · " : "GitHub live · ");
	(void)buf_printf(out, "%s · <a href=\"/metrics\" style=\"color:#fff\">metrics</a></p>"
			 "</header>\n<main>\n", t);
	summary(&r, r.firing);
	filter_form(&r);
	(void)buf_add(out, body.data ? body.data : "", body.len);
	lit(&r, "</main></body></html>\n");
	buf_release(&body);
}

void status_page_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct status_filter f;

	f.receiver = srv_query(req, "receiver");
	f.state = srv_query(req, "state");
	f.alertname = srv_query(req, "alertname");
	res->status = 200;
	res->content_type = "text/html; charset=utf-8";
	(void)!srv_response_header(res, "Cache-Control", "no-store");
	/* No script, no external asset: a value that slipped past escaping could run nothing. */
	(void)!srv_response_header(res, "Content-Security-Policy",
				   "default-src 'none'; style-src 'unsafe-inline'; "
				   "form-action 'self'; frame-ancestors 'none'");
	status_page_render(ctx, &f, &res->body);
}
