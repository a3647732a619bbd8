/*
 * storm.c - alert storms (bridge/storm.h): the fold decision, the member
 * rules and the summary text are pure; storm_route() folds events in the
 * store without calling GitHub, and storm_sync() makes the paced GitHub
 * calls of one due summary at a time from the bridge worker's loop.
 */
#include "bridge/storm.h"

#include <stdlib.h>
#include <string.h>

#include "bridge/render.h"
#include "core/embed.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/utf8.h"
#include "core/xalloc.h"
#include "store/store_events.h"
#include "store/store_groups.h"
#include "core/banned.h"

struct storm {
	struct storm_options opts;
	int yield;  /* the last storm_sync() made calls: let one event go first */
};

/* ---- pure parts ---- */

int storm_should_fold(int enabled, int64_t pending_creates, unsigned content_per_minute,
		      int64_t storm_after_ms)
{
	int64_t cpm = content_per_minute ? content_per_minute : 80;

	if (!enabled || pending_creates <= 0)
		return 0;
	/* pending * 60 s / cpm > storm_after, without dividing */
	return pending_creates * 60000 > storm_after_ms * cpm;
}

int64_t storm_fold_threshold(unsigned content_per_minute, int64_t storm_after_ms)
{
	int64_t cpm = content_per_minute ? content_per_minute : 80;

	/* the least n with n * 60 s > storm_after * cpm (see storm_should_fold()) */
	return (storm_after_ms > 0 ? storm_after_ms * cpm / 60000 : 0) + 1;
}

enum storm_change storm_member_apply(struct store_member *m, const struct issue_event *ev)
{
	int64_t end;

	if (ev->starts_at_ms < m->starts_at_ms)
		return STORM_STALE;
	if (ev->firing) {
		if (ev->starts_at_ms == m->starts_at_ms)
			return STORM_SAME;
		if (!m->firing && ev->starts_at_ms < m->ends_at_ms)
			return STORM_STALE;
		m->firing = 1;
		m->starts_at_ms = ev->starts_at_ms;
		m->ends_at_ms = 0;
		return STORM_CHANGED;
	}
	end = ev->ends_at_ms > ev->starts_at_ms ? ev->ends_at_ms : ev->starts_at_ms;
	if (!m->firing && end <= m->ends_at_ms)
		return STORM_SAME;
	m->firing = 0;
	m->starts_at_ms = ev->starts_at_ms;
	m->ends_at_ms = end;
	return STORM_CHANGED;
}

void storm_alertname(const char *event_json, struct buf *out)
{
	json_t *doc = event_json ? json_loads(event_json, 0, NULL) : NULL;
	json_t *name = json_object_get(json_object_get(doc, "labels"), "alertname");

	if (json_is_string(name))
		(void)buf_adds(out, json_string_value(name));
	json_decref(doc);
}

/* Append s with control characters as spaces and '|' as '/'. */
static void add_clean(struct buf *out, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		char ch = c < 0x20 || c == 0x7f ? ' ' : c == '|' ? '/' : (char)c;
		(void)buf_add(out, &ch, 1);
	}
}

void storm_member_line(const char *event_json, struct buf *out)
{
	json_t *doc = event_json ? json_loads(event_json, 0, NULL) : NULL;

	storm_labels_line(json_object_get(doc, "labels"), NULL, out);
	json_decref(doc);
}

void storm_labels_line(const json_t *labels, const json_t *except, struct buf *out)
{
	static const char ellipsis[] = "\xe2\x80\xa6";
	struct buf line = BUF_INIT;
	const char *name;
	json_t *v;
	size_t keep;

	json_object_foreach((json_t *)labels, name, v) {
		if (!strcmp(name, "alertname") || !json_is_string(v) ||
		    json_equal(json_object_get(except, name), v))
			continue;
		if (line.len)
			(void)buf_add(&line, " ", 1);
		add_clean(&line, name);
		(void)buf_add(&line, "=", 1);
		add_clean(&line, json_string_value(v));
		if (line.len > STORM_LINE_MAX_BYTES)
			break;
	}
	if (line.len > STORM_LINE_MAX_BYTES) {
		keep = utf8_cut(buf_str(&line), line.len, STORM_LINE_MAX_BYTES - strlen(ellipsis));
		(void)buf_add(out, buf_str(&line), keep);
		(void)buf_adds(out, ellipsis);
	} else {
		(void)buf_adds(out, buf_str(&line));
	}
	buf_release(&line);
}

int storm_is_summary_key(const char *key)
{
	return key && !strncmp(key, "storm-", 6);
}

void storm_marker_key(const char *receiver, const char *repo, const char *alertname,
		      int64_t created_at_ms, struct buf *out)
{
	struct buf id = BUF_INIT;
	char hash[65];

	(void)buf_printf(&id, "%s\n%s\n%s", receiver ? receiver : "", repo ? repo : "",
			 alertname ? alertname : "");
	issue_group_key_hash(buf_str(&id), hash);
	(void)buf_printf(out, "storm-%.16s-%lld", hash, (long long)created_at_ms);
	buf_release(&id);
}

void storm_count_human(int64_t n, struct buf *out)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%lld", (long long)(n < 0 ? 0 : n));

	for (int i = 0; i < len; i++) {
		if (i > 0 && (len - i) % 3 == 0)
			(void)buf_add(out, ",", 1);
		(void)buf_add(out, &digits[i], 1);
	}
}

static void set_count(json_t *view, const char *key, const char *human_key, int64_t n)
{
	struct buf h = BUF_INIT;

	storm_count_human(n, &h);
	json_object_set_new(view, key, json_integer(n));
	json_object_set_new(view, human_key, json_string(buf_str(&h)));
	buf_release(&h);
}

static json_t *member_json(const struct store_member *m)
{
	char starts[32] = "", ends[32] = "";
	json_t *o = json_object();

	if (m->starts_at_ms)
		rfc3339_format(m->starts_at_ms, starts);
	if (m->ends_at_ms)
		rfc3339_format(m->ends_at_ms, ends);
	json_object_set_new(o, "fingerprint", json_string(m->key ? m->key : ""));
	json_object_set_new(o, "line", json_string(m->line ? m->line : ""));
	json_object_set_new(o, "status", json_string(m->firing ? "firing" : "resolved"));
	json_object_set_new(o, "startsAt", json_string(starts));
	json_object_set_new(o, "endsAt", json_string(ends));
	return o;
}

/*
 * The fingerprints of the members with firing == want, space-separated,
 * while *budget lasts; *omitted counts the rest.
 */
static void key_list(const struct store_member *m, size_t n, int want, size_t *budget,
		     struct buf *out, int64_t *omitted)
{
	for (size_t i = 0; i < n; i++) {
		size_t len;

		if (!m[i].firing != !want || !m[i].key)
			continue;
		len = strlen(m[i].key) + 1;
		if (len > *budget) {
			(*omitted)++;
			continue;
		}
		*budget -= len;
		if (out->len)
			(void)buf_add(out, " ", 1);
		(void)buf_adds(out, m[i].key);
	}
}

json_t *storm_view(const struct store_summary *s, const struct store_member *m, size_t n)
{
	json_t *view = json_object(), *alerts = json_array();
	struct buf fk = BUF_INIT, rk = BUF_INIT;
	int64_t firing = 0, fk_omitted = 0, rk_omitted = 0;
	size_t budget = STORM_KEYS_BUDGET_BYTES;

	for (size_t i = 0; i < n; i++) {
		firing += m[i].firing != 0;
		if (i < STORM_LIST_DETAILED)
			json_array_append_new(alerts, member_json(&m[i]));
	}
	json_object_set_new(view, "alertname", json_string(s->alertname ? s->alertname : ""));
	json_object_set_new(view, "receiver", json_string(s->receiver ? s->receiver : ""));
	json_object_set_new(view, "repo", json_string(s->repo ? s->repo : ""));
	json_object_set_new(view, "status", json_string(firing ? "firing" : "resolved"));
	set_count(view, "firing", "firingHuman", firing);
	set_count(view, "resolved", "resolvedHuman", (int64_t)n - firing);
	set_count(view, "total", "totalHuman", (int64_t)n);
	set_count(view, "count", "countHuman", firing ? firing : (int64_t)n);
	json_object_set_new(view, "alerts", alerts);
	if (n > STORM_LIST_DETAILED)
		set_count(view, "notListed", "notListedHuman", (int64_t)(n - STORM_LIST_DETAILED));
	key_list(m, n, 1, &budget, &fk, &fk_omitted);
	key_list(m, n, 0, &budget, &rk, &rk_omitted);
	json_object_set_new(view, "firingKeys", json_string(buf_str(&fk)));
	json_object_set_new(view, "resolvedKeys", json_string(buf_str(&rk)));
	if (fk_omitted)
		set_count(view, "firingKeysOmitted", "firingKeysOmittedHuman", fk_omitted);
	if (rk_omitted)
		set_count(view, "resolvedKeysOmitted", "resolvedKeysOmittedHuman", rk_omitted);
	buf_release(&fk);
	buf_release(&rk);
	return view;
}

static enum err render_embedded(const char *name, int html, const json_t *view, struct buf *out,
				struct buf *errmsg)
{
	size_t len = 0;
	const char *tmpl = embed_get(name, &len);
	enum err rc;

	if (!tmpl) {
		buf_setf(errmsg, "storm template %s is not built in", name);
		return ERR_INVALID;
	}
	rc = render_once(tmpl, len, html ? RENDER_BODY : RENDER_TITLE, view, out, errmsg);
	return rc ? ERR_INVALID : ERR_OK;
}

enum err storm_text(const json_t *view, const char *marker_key, struct buf *title,
		    struct buf *body, struct buf *errmsg)
{
	struct buf raw_title = BUF_INIT, raw_body = BUF_INIT, marker = BUF_INIT;
	enum err rc = render_embedded("storm_title.mustache", 0, view, &raw_title, errmsg);

	if (!rc)
		rc = render_embedded("storm_body.mustache", 1, view, &raw_body, errmsg);
	if (!rc) {
		issue_title_clean(buf_str(&raw_title), title);
		issue_marker(marker_key, &marker);
		issue_body_fit(buf_str(&raw_body), buf_str(&marker), body);
	}
	buf_release(&raw_title);
	buf_release(&raw_body);
	buf_release(&marker);
	return rc;
}

/* ---- routing events ---- */

struct storm *storm_new(const struct storm_options *opts)
{
	struct storm *s = xcalloc(1, sizeof(*s));

	s->opts = *opts;
	if (s->opts.sync_interval_ms <= 0)
		s->opts.sync_interval_ms = STORM_SYNC_INTERVAL_MS;
	return s;
}

void storm_set_cfg(struct storm *s, const struct config *cfg)
{
	s->opts.cfg = cfg;
}

void storm_free(struct storm *s)
{
	free(s);
}

static void event_of(const struct store_event *ev, struct issue_event *iev)
{
	iev->firing = !strcmp(ev->status, "firing");
	iev->starts_at_ms = ev->starts_at_ms;
	iev->ends_at_ms = ev->ends_at_ms;
}

/* The live summary of (receiver, repo, alertname), made when there is none. */
static enum err live_summary(struct storm *s, const struct store_event *ev, const char *repo,
			     const char *alertname, int64_t now_ms, struct store_summary *sum,
			     struct buf *errmsg)
{
	struct buf key = BUF_INIT;
	enum err rc = store_summary_live(s->opts.store, ev->receiver, repo, alertname, sum);

	if (rc != ERR_NOTFOUND) {
		if (rc)
			buf_setf(errmsg, "cannot read the storm summary");
		return rc;
	}
	storm_marker_key(ev->receiver, repo, alertname, now_ms, &key);
	sum->receiver = xstrdup(ev->receiver);
	sum->repo = xstrdup(repo);
	sum->alertname = xstrdup(alertname);
	sum->marker_key = buf_detach(&key);
	sum->state = STORE_SUMMARY_CREATING;
	sum->created_at_ms = now_ms;
	rc = store_summary_add(s->opts.store, sum, errmsg);
	if (!rc) {
		struct log_line *l = log_begin(LOG_WARN, "alert storm: folding new alerts into a summary");
		log_str(l, "receiver", ev->receiver);
		log_str(l, "repo", repo);
		log_str(l, "alertname", alertname);
		log_int(l, "summary", sum->id);
		log_end(l);
	}
	return rc;
}

/* Fold a new firing alert into its summary; the event is done with it. */
static enum err fold(struct storm *s, const struct store_event *ev, const char *repo,
		     int64_t now_ms, struct buf *errmsg)
{
	struct buf name = BUF_INIT, line = BUF_INIT;
	struct store_summary sum = { 0 };
	struct store_member m = { 0 };
	struct store_issue row = { 0 };
	enum err rc;

	storm_alertname(ev->payload, &name);
	rc = live_summary(s, ev, repo, buf_str(&name), now_ms, &sum, errmsg);
	if (rc)
		goto out;
	storm_member_line(ev->payload, &line);
	m.key = ev->key;
	m.summary_id = sum.id;
	m.firing = 1;
	m.starts_at_ms = ev->starts_at_ms;
	m.line = (char *)buf_str(&line);
	row.receiver = ev->receiver;
	row.key = ev->key;
	row.repo = sum.repo;
	row.number = sum.number;
	row.state = STORE_ISSUE_OPEN;
	row.episode_starts_ms = ev->starts_at_ms;
	row.created_at_ms = now_ms;
	row.updated_at_ms = now_ms;
	rc = store_member_fold(s->opts.store, ev->id, &row, &m, 1, errmsg);
out:
	store_summary_release(&sum);
	buf_release(&name);
	buf_release(&line);
	return rc;
}

/* An event of a folded alert. */
static enum storm_route member_event(struct storm *s, const struct store_event *ev,
				     const struct store_issue *row, struct store_member *m,
				     int64_t now_ms, enum err *rc, struct buf *errmsg)
{
	struct store_summary sum = { 0 };
	struct issue_event iev;
	struct store_issue r;
	enum storm_change ch;
	enum storm_route route = STORM_DONE;

	event_of(ev, &iev);
	*rc = store_summary_get(s->opts.store, m->summary_id, &sum);
	if (*rc && *rc != ERR_NOTFOUND) {
		buf_setf(errmsg, "cannot read storm summary %lld", (long long)m->summary_id);
		goto out;
	}
	ch = storm_member_apply(m, &iev);
	if (*rc == ERR_NOTFOUND || sum.state == STORE_SUMMARY_CLOSED) {
		if (ch == STORM_CHANGED && iev.firing) {
			/* fires again after its summary closed: a new alert from here on */
			*rc = store_member_unfold(s->opts.store, ev->receiver, ev->key, errmsg);
			route = *rc ? STORM_DONE : STORM_PASS_NEW;
		} else {
			*rc = store_event_done(s->opts.store, ev->id, NULL, errmsg);
		}
		goto out;
	}
	r = *row;  /* borrowed strings; only the episode fields change */
	r.episode_starts_ms = m->starts_at_ms;
	r.resolved_ends_ms = m->ends_at_ms;
	if (ch == STORM_CHANGED)
		r.updated_at_ms = now_ms;
	*rc = store_member_fold(s->opts.store, ev->id, &r, m, ch == STORM_CHANGED, errmsg);
out:
	store_summary_release(&sum);
	return route;
}

enum storm_route storm_route(struct storm *s, const struct store_event *ev,
			     const struct cfg_receiver *rcv, const char *repo,
			     const struct store_issue *row, int64_t now_ms, enum err *rc,
			     struct buf *errmsg)
{
	enum storm_route route = STORM_PASS;
	struct store_member m = { 0 };
	int64_t pending;

	*rc = ERR_OK;
	if (!s)
		return STORM_PASS;
	if (row) {
		*rc = store_member_get(s->opts.store, ev->receiver, ev->key, &m);
		if (*rc == ERR_NOTFOUND) {
			*rc = ERR_OK;
			return STORM_PASS;
		}
		if (*rc) {
			buf_setf(errmsg, "cannot read the storm member row");
			return STORM_DONE;
		}
		route = member_event(s, ev, row, &m, now_ms, rc, errmsg);
		store_member_release(&m);
		if (route != STORM_PASS_NEW)
			return route;
	}
	if (strcmp(ev->status, "firing") || !rcv->storm.enabled)
		return route;
	pending = store_pending_creates(s->opts.store, ev->receiver,
					storm_fold_threshold(s->opts.cfg->github.content_per_minute,
							     rcv->storm.storm_after_ms));
	if (!storm_should_fold(rcv->storm.enabled, pending, s->opts.cfg->github.content_per_minute,
			       rcv->storm.storm_after_ms))
		return route;
	*rc = fold(s, ev, repo, now_ms, errmsg);
	return STORM_DONE;
}

/* ---- GitHub calls of a due summary ---- */

static void log_summary(enum log_level lvl, const char *msg, const struct store_summary *sum,
			enum err rc, const char *detail)
{
	struct log_line *l = log_begin(lvl, msg);

	if (rc)
		log_err(l, rc);
	log_str(l, "receiver", sum->receiver);
	log_str(l, "repo", sum->repo);
	log_str(l, "alertname", sum->alertname);
	log_int(l, "summary", sum->id);
	log_int(l, "issue", sum->number);
	log_int(l, "firing", sum->firing);
	log_int(l, "total", sum->total);
	if (detail)
		log_str(l, "detail", detail);
	log_end(l);
}

/*
 * Create the summary issue, unless an earlier attempt did (found by its
 * marker).  An attempt whose answer was lost (in doubt) is looked for only
 * once it can no longer land (gh_write_settled_at() of its time), never
 * posted again before.
 */
static enum err create_issue(struct storm *s, struct store_summary *sum, const char *title,
			     const char *body, int64_t now_ms, struct buf *errmsg)
{
	struct buf marker = BUF_INIT;
	struct gh_issue gi = { 0 };
	enum err rc = ERR_NOTFOUND;

	issue_marker(sum->marker_key, &marker);
	if (sum->synced_at_ms > 0 &&
	    gh_now(s->opts.gh) < gh_write_settled_at(s->opts.gh, sum->synced_at_ms)) {
		buf_setf(errmsg, "the summary create in doubt may still land on github");
		rc = ERR_RETRY;
	} else if (sum->synced_at_ms > 0) {
		/* since the send: at most the timeout (and GitHub's 10 s) before, and a margin */
		int64_t took = gh_write_settled_at(s->opts.gh, sum->synced_at_ms) - sum->synced_at_ms;

		rc = gh_issue_find_marker(s->opts.gh, sum->repo, buf_str(&marker),
					  sum->synced_at_ms - took - 60000, &gi, errmsg);
	}
	if (rc == ERR_NOTFOUND) {
		sum->synced_at_ms = now_ms;  /* the attempt, recorded before it is made */
		rc = store_summary_save(s->opts.store, sum, errmsg);
		if (!rc)
			rc = gh_issue_create(s->opts.gh, sum->repo, title, body, buf_str(&marker),
					     NULL, NULL, &gi, errmsg);
		if (rc == ERR_RETRY)  /* maybe sent: from now on (storm_sync() saves it) */
			sum->synced_at_ms = gh_now(s->opts.gh);
	}
	if (!rc) {
		if (gi.repo) {
			free(sum->repo);
			sum->repo = xstrdup(gi.repo);
		}
		sum->number = gi.number;
		sum->state = STORE_SUMMARY_OPEN;
	}
	gh_issue_release(&gi);
	buf_release(&marker);
	return rc;
}

static enum err sync_one(struct storm *s, struct store_summary *sum, int64_t now_ms,
			 struct buf *errmsg)
{
	struct buf title = BUF_INIT, body = BUF_INIT;
	struct store_member *m = NULL;
	const char *what = "summary updated";
	json_t *view = NULL;
	size_t n = 0;
	enum err rc;

	rc = store_member_list(s->opts.store, sum->id, &m, &n);
	if (rc) {
		buf_setf(errmsg, "cannot list the summary's alerts");
		goto out;
	}
	view = storm_view(sum, m, n);
	rc = storm_text(view, sum->marker_key, &title, &body, errmsg);
	if (rc)
		goto out;
	if (sum->state == STORE_SUMMARY_CREATING) {
		rc = create_issue(s, sum, buf_str(&title), buf_str(&body), now_ms, errmsg);
		what = "summary issue created";
	} else {
		rc = gh_issue_set_body(s->opts.gh, sum->repo, sum->number, buf_str(&title),
				       buf_str(&body), errmsg);
		if (!rc && sum->firing == 0) {
			rc = gh_issue_set_state(s->opts.gh, sum->repo, sum->number, "closed",
						"completed", NULL, errmsg);
			if (!rc) {
				sum->state = STORE_SUMMARY_CLOSED;
				what = "summary closed: all its alerts resolved";
			}
		}
	}
	if (rc)
		goto out;
	sum->synced_at_ms = now_ms;
	sum->next_sync_ms = 0;
	sum->dirty = 0;
	rc = store_summary_save(s->opts.store, sum, errmsg);
	if (!rc)
		log_summary(LOG_INFO, what, sum, ERR_OK, NULL);
out:
	json_decref(view);
	store_member_list_free(m, n);
	buf_release(&title);
	buf_release(&body);
	return rc;
}

int storm_sync(struct storm *s, int64_t now_ms)
{
	struct store_summary sum = { 0 };
	struct buf errmsg = BUF_INIT;
	enum err rc;

	if (!s)
		return 0;
	if (s->yield) {
		/* many summaries must not starve the queue: every other step is an event's */
		s->yield = 0;
		return 0;
	}
	if (store_summary_due(s->opts.store, now_ms, s->opts.sync_interval_ms, &sum))
		return 0;
	s->yield = 1;
	if (sum.total == 0 && sum.state == STORE_SUMMARY_CREATING && sum.synced_at_ms == 0) {
		/* made for an alert whose fold did not commit: nothing to show */
		sum.state = STORE_SUMMARY_CLOSED;
		rc = store_summary_save(s->opts.store, &sum, &errmsg);
	} else {
		rc = sync_one(s, &sum, now_ms, &errmsg);
	}
	if (rc) {
		/*
		 * Refused for good (an archived repository, a text GitHub will not
		 * take): a rewrite is not tried again until the summary changes
		 * (dirty again); a create or close, due anyway, after STORM_RETRY_MS.
		 */
		int refused = rc == ERR_FORBIDDEN || rc == ERR_INVALID;

		log_summary(refused || rc == ERR_AUTH ? LOG_ERROR : LOG_WARN,
			    refused ? "summary issue call refused, kept until the summary changes"
				    : "summary issue call failed, will retry",
			    &sum, rc, buf_str(&errmsg));
		if (refused)
			sum.dirty = 0;
		sum.next_sync_ms = now_ms + STORM_RETRY_MS;
		buf_reset(&errmsg);
		if (store_summary_save(s->opts.store, &sum, &errmsg))
			log_msg(LOG_ERROR, "cannot record the summary's retry", "detail",
				buf_str(&errmsg));
	}
	store_summary_release(&sum);
	buf_release(&errmsg);
	return 1;
}
