/*
 * bridge_exec.c - the reconciler's calls: the view and texts of an issue or
 * comment, and the create, comment, label and state calls that carry out a
 * planned action, with progress notes so that a retry resumes, not repeats.
 * Part of the bridge (bridge.c); both share bridge_int.h.
 */
#include "bridge/bridge_int.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "bridge/view.h"
#include "core/log.h"
#include "core/matchers.h"
#include "core/metrics.h"
#include "core/rfc3339.h"
#include "core/xalloc.h"
#include "store/store_events.h"
#include "core/banned.h"

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
#define EPISODE_MARKER_OPEN ISSUE_EPISODE_MARKER_OPEN
#define EPISODE_MARKER_CLOSE " -->"

void bridge_episode_marker(int64_t starts_at_ms, struct buf *out)
{
	char t[32];

	rfc3339_format_ms(starts_at_ms, t);
	(void)buf_printf(out, EPISODE_MARKER_OPEN "%s" EPISODE_MARKER_CLOSE, t);
}

/* The marker of a resolve of the episode starting at starts_at_ms, ending at ends_at_ms. */
static void resolved_marker(int64_t starts_at_ms, int64_t ends_at_ms, struct buf *out)
{
	char t[32];

	rfc3339_format_ms(starts_at_ms, t);
	(void)buf_printf(out, EPISODE_MARKER_OPEN "%s event=resolved-%lld" EPISODE_MARKER_CLOSE, t,
			 (long long)ends_at_ms);
}

static void comment_marker(const struct issue_event *ev, struct buf *out)
{
	char t[32];

	if (!ev->firing) {
		resolved_marker(ev->starts_at_ms, ev->ends_at_ms, out);
		return;
	}
	rfc3339_format_ms(ev->starts_at_ms, t);
	(void)buf_printf(out, EPISODE_MARKER_OPEN "%s event=firing" EPISODE_MARKER_CLOSE, t);
}

void bridge_group_body_marker(const struct store_issue *row, struct buf *out)
{
	if (group_row_resolved(row))
		resolved_marker(row->episode_starts_ms, row->resolved_ends_ms, out);
	else
		bridge_episode_marker(row->episode_starts_ms, out);
}

void bridge_issue_url(const struct bridge *b, const char *repo, int64_t number,
		      struct buf *out)
{
	(void)buf_printf(out, "%s/%s/issues/%lld", b->html_base, repo, (long long)number);
}

/*
 * The link of w's mapped issue: GitHub's html_url when refresh() read the
 * issue, else built from the row's repository (bridge_issue_url()).
 */
static void current_url(const struct bridge *b, const struct work *w, struct buf *out)
{
	if (w->fresh.html_url && *w->fresh.html_url && w->fresh.number == w->row.number)
		(void)buf_adds(out, w->fresh.html_url);
	else
		bridge_issue_url(b, w->row.repo, w->row.number, out);
}

enum err bridge_build_view(struct bridge *b, struct work *w, json_t **view, struct buf *errmsg)
{
	struct buf cur_url = BUF_INIT, prev_url = BUF_INIT;
	struct view_issue cur = { 0 }, prev = { 0 };
	struct view_context ctx = { 0 };
	enum err rc;

	ctx.now_ms = w->now_ms;
	ctx.receiver = w->rcv->name;
	ctx.repo = w->repo;
	if (w->have_row && w->row.number > 0) {
		current_url(b, w, &cur_url);
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
		if (w->row.previous_url)  /* GitHub's: maybe another repository (a reroute) */
			(void)buf_adds(&prev_url, w->row.previous_url);
		else
			bridge_issue_url(b, w->row.repo, w->row.previous_number, &prev_url);
		prev.number = w->row.previous_number;
		prev.html_url = buf_str(&prev_url);
		ctx.previous = &prev;
	}
	rc = view_build(w->ev.payload, &ctx, view, errmsg);
	if (!rc && w->grp)
		group_view_add(*view, &w->grp->members);
	buf_release(&cur_url);
	buf_release(&prev_url);
	return rc;
}

/* The alert's value of label name (ctx: its event document), NULL when it lacks it. */
static const char *label_of(void *ctx, const char *name)
{
	json_t *v = json_object_get(json_object_get(ctx, "labels"), name);

	return json_is_string(v) ? json_string_value(v) : NULL;
}

int bridge_route_of(const struct cfg_receiver *rcv, const json_t *doc)
{
	return cfg_route_select(rcv, label_of, (void *)doc);
}

enum err bridge_route(struct bridge *b, struct work *w, struct buf *errmsg)
{
	json_t *given = json_object_get(w->payload_doc, "repo");
	const char *tmpl;
	struct buf why = BUF_INIT;
	json_t *view = NULL;
	enum err rc;

	w->route = bridge_route_of(w->rcv, w->payload_doc);
	if (json_is_string(given)) {  /* alertbridge_repo or ?repo=: the alert's own */
		w->repo = json_string_value(given);
		return ERR_OK;
	}
	tmpl = w->route >= 0 ? w->rcv->routes[w->route].repo : w->rcv->repo;
	if (!strstr(tmpl, "{{")) {  /* a literal, checked when the config was loaded */
		w->repo = tmpl;
		return ERR_OK;
	}
	w->repo = NULL;
	buf_reset(&w->repo_buf);
	rc = bridge_build_view(b, w, &view, errmsg);
	if (!rc)
		rc = render_repo(b->opts.render, w->rcv->name, w->route, view, &w->repo_buf, errmsg);
	json_decref(view);
	if (!rc && issue_repo_valid(buf_str(&w->repo_buf), &why) != ERR_OK) {
		buf_setf(errmsg, "repo \"%s\" rendered to \"%s\": %s", tmpl,
			 buf_str(&w->repo_buf), buf_str(&why));
		rc = ERR_INVALID;
	} else if (rc) {
		buf_printf(errmsg, " (repo \"%s\")", tmpl);
		rc = ERR_INVALID;
	} else {
		w->repo = buf_str(&w->repo_buf);
	}
	buf_release(&why);
	return rc;
}

/* Render a comment of kind which with its marker, cut to GitHub's limit. */
static enum err comment_text(struct bridge *b, struct work *w, const json_t *view,
			     enum render_text which, const char *marker, struct buf *out,
			     struct buf *errmsg)
{
	struct buf raw = BUF_INIT;
	enum err rc = render_text(b->opts.render, w->rcv->name, w->route, which, view, &raw,
				  errmsg);

	if (!rc)
		issue_body_fit(buf_str(&raw), marker, out);
	buf_release(&raw);
	return rc;
}

/* ---- actions ---- */

static enum err note_progress(struct bridge *b, struct work *w, int step, int comment_next,
			      struct buf *errmsg);

/* The hidden marker that ends the issue body of the event's alert (bridge/issue.h). */
static void key_marker(const struct work *w, struct buf *out)
{
	issue_marker_receiver(w->ev.receiver, w->ev.key, out);
}

/*
 * A write noted at noted_ms whose outcome is open may still land on GitHub
 * until gh_write_settled_at(): ERR_RETRY before then (the event is retried
 * from then on: w->not_before_ms, errmsg says why), so that its marker is
 * never looked for, and the write never repeated, while GitHub may still be
 * making it.  ERR_OK once it has settled.
 */
static enum err settled(struct bridge *b, struct work *w, const char *what, int64_t noted_ms,
			struct buf *errmsg)
{
	int64_t at = gh_write_settled_at(b->gh, noted_ms);

	if (bridge_now_ms(b) >= at)
		return ERR_OK;
	w->not_before_ms = at;
	buf_setf(errmsg, "the %s in doubt may still land on github: looked for in %lld ms", what,
		 (long long)(at - bridge_now_ms(b)));
	return ERR_RETRY;
}

/*
 * A create whose outcome a previous attempt left open (an answer lost, a
 * crash between the POST and the commit) has the note "create@<ms>" (see
 * CREATE_NOTE): once it has settled, look for the marker among the issues
 * created since then (minus the time it may have taken and a margin) before
 * posting again.  ERR_OK with *gi when found, ERR_NOTFOUND when the POST is
 * to be made, ERR_RETRY while it may still land, another error when GitHub
 * could not tell (retry later).
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
	rc = settled(b, w, "create", (int64_t)t, errmsg);
	if (rc)
		return rc;
	/* the answer's time, at most the timeout after the send (the timeout and 10 s) */
	rc = gh_issue_find_marker(b->gh, w->repo, marker,
				  (int64_t)t - (gh_write_settled_at(b->gh, t) - t) -
					  CREATE_LOOKBACK_MS,
				  gi, errmsg);
	if (rc == ERR_OK) {
		struct log_line *l = log_begin(LOG_INFO, "earlier create found by marker");
		metric_add(b->m_gh_ambiguous, NULL, 1);
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
	snprintf(note, sizeof(note), CREATE_NOTE "%lld", (long long)bridge_now_ms(b));
	rc = store_event_progress(b->opts.store, w->ev.id, note);
	if (rc) {
		buf_setf(errmsg, "cannot record the create attempt: %s", err_str(rc));
		return rc;
	}
	return ERR_NOTFOUND;
}

/*
 * A write that ended in ERR_RETRY may have been sent (its answer lost): note
 * the time now, at or after the send, so that the retry waits until it has
 * settled (settled()) and looks for it before writing again; the event is
 * not retried before then.  A failure to note it keeps the earlier note (its
 * time before the send: the retry then looks too early at worst, and sees
 * the write on a later retry; never posts while the note says "in doubt"
 * without looking).
 */
static void in_doubt(struct bridge *b, struct work *w, int create, struct buf *errmsg)
{
	struct buf why = BUF_INIT;
	enum err rc = create ? note_create(b, w, &why) : note_progress(b, w, w->step, 1, &why);

	if (rc == ERR_NOTFOUND || rc == ERR_OK)  /* note_create(): ERR_NOTFOUND once noted */
		w->not_before_ms = gh_write_settled_at(b->gh, bridge_now_ms(b));
	else
		(void)buf_printf(errmsg, "; %s", buf_str(&why));
	buf_release(&why);
}

/*
 * GitHub answered the create with a refusal (401, 403, 404, 422) or it was
 * not sent: nothing was made, so the note says so and a retry (map retry,
 * new credentials) posts without waiting or looking.  Not noted (a store
 * failure): the retry waits and looks, as for a create in doubt.
 */
static void refused(struct bridge *b, struct work *w)
{
	if (store_event_progress(b->opts.store, w->ev.id, CREATE_REFUSED_NOTE) != ERR_OK)
		log_msg(LOG_WARN, "cannot record the refused create", "key", w->ev.key);
}

/*
 * GitHub answered the comment with a refusal (a locked issue's 403, 401, 404,
 * 422): nothing was posted, so the note no longer says "in doubt" and a retry
 * (map retry once a person unlocked the issue) posts without waiting for it to
 * settle or looking.  Not noted (a store failure): the retry waits and looks.
 */
static void comment_refused(struct bridge *b, struct work *w)
{
	struct buf why = BUF_INIT;

	if (note_progress(b, w, w->step, 0, &why) != ERR_OK)
		log_msg(LOG_WARN, "cannot record the refused comment", "detail", buf_str(&why));
	buf_release(&why);
}

/* What the on-call page shows of the row: the alert's name and the issue's title. */
static void set_shown(struct store_issue *row, const json_t *view, const char *title)
{
	const char *alertname = json_string_value(json_object_get(view, "alertname"));

	free(row->alertname);
	row->alertname = alertname && *alertname ? xstrdup(alertname) : NULL;
	free(row->title);
	row->title = xstrdup(title);
}

static enum err do_create(struct bridge *b, struct work *w, const json_t *view,
			  struct buf *errmsg)
{
	struct buf raw_title = BUF_INIT, title = BUF_INIT, raw_body = BUF_INIT, body = BUF_INIT;
	struct buf marker = BUF_INIT, markers = BUF_INIT, superseded = BUF_INIT;
	char **labels = NULL, **assignees = NULL;
	struct gh_issue gi = { 0 };
	enum err rc;

	rc = render_text(b->opts.render, w->rcv->name, w->route, RENDER_TITLE, view, &raw_title,
			 errmsg);
	if (!rc)
		rc = render_text(b->opts.render, w->rcv->name, w->route, RENDER_BODY, view,
				 &raw_body, errmsg);
	if (!rc)
		rc = render_list(b->opts.render, w->rcv->name, w->route, 0, view, &labels,
				 errmsg);
	if (!rc)
		rc = render_list(b->opts.render, w->rcv->name, w->route, 1, view, &assignees,
				 errmsg);
	if (rc) {
		rc = ERR_INVALID;  /* a template that fails on this alert will fail again */
		goto out;
	}
	issue_title_clean(buf_str(&raw_title), &title);
	key_marker(w, &marker);
	bridge_episode_marker(w->iev.starts_at_ms, &markers);
	(void)buf_adds(&markers, "\n");
	(void)buf_adds(&markers, buf_str(&marker));
	issue_body_fit(buf_str(&raw_body), buf_str(&markers), &body);
	rc = earlier_create(b, w, buf_str(&marker), &gi, errmsg);
	if (rc == ERR_NOTFOUND)
		rc = note_create(b, w, errmsg);
	if (rc == ERR_NOTFOUND) {
		rc = gh_issue_create(b->gh, w->repo, buf_str(&title), buf_str(&body),
				     buf_str(&marker), (const char *const *)labels,
				     (const char *const *)assignees, &gi, errmsg);
		if (rc == ERR_RETRY)
			in_doubt(b, w, 1, errmsg);
		else if (rc)
			refused(b, w);
	}
	if (rc)
		goto out;
	if (w->action == ISSUE_CREATE_LINKED && w->have_row && w->row.number > 0)
		current_url(b, w, &superseded);  /* where it lives, before the row moves on */
	if (!w->have_row) {
		store_issue_release(&w->row);  /* a row whose issue was deleted: start afresh */
		memset(&w->row, 0, sizeof(w->row));
		w->row.receiver = xstrdup(w->ev.receiver);
		w->row.key = xstrdup(w->ev.key);
		w->row.created_at_ms = w->now_ms;
		w->have_row = 1;
	}
	issue_apply(&w->row, w->action, &w->iev, w->now_ms);
	if (superseded.len) {
		free(w->row.previous_url);
		w->row.previous_url = buf_detach(&superseded);
	}
	free(w->row.repo);
	w->row.repo = xstrdup(gi.repo ? gi.repo : w->repo);
	w->row.number = gi.number;
	set_shown(&w->row, view, buf_str(&title));
	bridge_row_take_etag(&w->row, &gi);
	{
		/* In dry-run nothing was sent: no number to tell. */
		int dry = gh_dry_run(b->gh);
		struct log_line *l = log_begin(LOG_INFO, dry ? "dry-run: issue not created"
							     : "issue created");
		log_str(l, "receiver", w->ev.receiver);
		log_str(l, "key", w->ev.key);
		log_str(l, "repo", w->row.repo);
		if (!dry)
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
	buf_release(&superseded);
	return rc;
}

/*
 * Record progress on the event: step calls of the action done; with
 * comment_next, the next call is a comment that may be posted from now on
 * ("~@<ms>": noted now).  A crash between that comment and the record of its
 * outcome, or its answer lost (in_doubt() notes it again), leaves this note,
 * and the retry looks for the comment's marker, once it has settled, before
 * posting again.
 */
static enum err note_progress(struct bridge *b, struct work *w, int step, int comment_next,
			      struct buf *errmsg)
{
	char note[64];
	enum err rc;

	if (comment_next)
		snprintf(note, sizeof(note), "%s:%d~" COMMENT_SENT_AT "%lld",
			 issue_action_str(w->action), step, (long long)bridge_now_ms(b));
	else
		snprintf(note, sizeof(note), "%s:%d", issue_action_str(w->action), step);
	rc = store_event_progress(b->opts.store, w->ev.id, note);
	if (rc) {
		buf_setf(errmsg, "cannot record progress: %s", err_str(rc));
		return rc;
	}
	w->step = step;
	w->comment_noted = comment_next;
	return ERR_OK;
}

/*
 * Is the comment carrying marker already on the issue (posted by an attempt
 * that died before recording it)?  ERR_OK yes, ERR_NOTFOUND no, another
 * error when GitHub could not tell.
 */
static enum err comment_posted(struct bridge *b, struct work *w, const char *marker,
			       struct buf *errmsg)
{
	enum err rc = gh_comment_marked(b->gh, w->row.repo, w->row.number, marker, errmsg);

	if (rc)
		return rc;
	metric_add(b->m_gh_ambiguous, NULL, 1);
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
		rc = w->comment_noted_ms ? settled(b, w, "comment", w->comment_noted_ms, errmsg)
					 : ERR_OK;
		if (!rc)
			rc = comment_posted(b, w, buf_str(&marker), errmsg);
		if (rc != ERR_NOTFOUND)
			goto out;  /* posted already (ERR_OK), or cannot tell yet */
		w->comment_in_doubt = 0;
		w->comment_noted = 0;  /* noted again: the time of this POST */
	}
	if (!w->comment_noted && !gh_dry_run(b->gh)) {
		rc = note_progress(b, w, w->step, 1, errmsg);
		if (rc)
			goto out;
	}
	rc = gh_comment_create_marked(b->gh, w->row.repo, w->row.number, buf_str(&text),
				      buf_str(&marker), errmsg);
	if (rc == ERR_RETRY && w->comment_noted)
		in_doubt(b, w, 0, errmsg);
	else if (rc && w->comment_noted)
		comment_refused(b, w);
out:
	buf_release(&text);
	buf_release(&marker);
	return rc;
}

static int has_label(char *const *have, const char *name)
{
	for (; *have; have++)
		if (!strcasecmp(*have, name))  /* GitHub's label names ignore case */
			return 1;
	return 0;
}

/*
 * A new episode on an open or reopened issue: the labels rendered for it that
 * the issue lacks (e.g. a severity that changed) are added (gh_labels_add);
 * none is ever removed, since a person may have added it.  Only when refresh()
 * read the issue's labels (not in dry-run).  Adding is idempotent, so a retry
 * (or a resumed attempt, which reads them again) needs no progress note.  A template that fails or
 * labels GitHub rejects (422) are logged and skipped: the comment still goes.
 */
static enum err add_new_labels(struct bridge *b, struct work *w, const json_t *view,
			       struct buf *errmsg)
{
	char **want = NULL;
	const char **missing = NULL;
	size_t n = 0, k = 0;
	struct log_line *l = NULL;
	enum err rc = ERR_OK;

	if (!w->fresh.labels)
		return ERR_OK;
	if (render_list(b->opts.render, w->rcv->name, w->route, 0, view, &want, errmsg) ==
	    ERR_OK) {
		while (want[n])
			n++;
		missing = xcalloc(n + 1, sizeof(*missing));
		for (size_t i = 0; i < n; i++)
			if (!has_label(w->fresh.labels, want[i]))
				missing[k++] = want[i];
		rc = k ? gh_labels_add(b->gh, w->row.repo, w->row.number, missing, errmsg)
		       : ERR_OK;
		if (!rc && k)
			l = log_begin(LOG_INFO, "labels added for the new episode");
	} else {
		rc = ERR_INVALID;
	}
	if (rc == ERR_INVALID) {
		l = log_begin(LOG_WARN, "new labels not added");
		log_str(l, "detail", buf_str(errmsg));
		buf_reset(errmsg);
		rc = ERR_OK;
	}
	if (l) {
		log_str(l, "receiver", w->ev.receiver);
		log_str(l, "key", w->ev.key);
		log_str(l, "repo", w->row.repo);
		log_int(l, "issue", w->row.number);
		log_int(l, "added", (int64_t)k);
		log_end(l);
	}
	free(missing);
	render_list_free(want);
	return rc;
}

static enum err do_state(struct bridge *b, struct work *w, const char *state, const char *reason,
			 struct buf *errmsg)
{
	struct gh_issue gi = { 0 };
	enum err rc = gh_issue_set_state(b->gh, w->row.repo, w->row.number, state, reason, &gi,
					 errmsg);

	if (!rc)  /* the answer is the issue after the change: its ETag fits the row then */
		bridge_row_take_etag(&w->row, &gi);
	gh_issue_release(&gi);
	return rc;
}

/*
 * Two calls, the first recorded: a retry resumes after it.  A reopen changes
 * the state first (the comment then explains it); a close comments first so
 * the issue reads "resolved at ..." above the close event.
 */
enum err bridge_execute(struct bridge *b, struct work *w, struct buf *errmsg)
{
	json_t *view = NULL;
	enum err rc = ERR_OK;

	if (w->action == ISSUE_NOTHING || w->no_issue)
		return ERR_OK;  /* no_issue: a resolve of a dry-run row, recorded by finish() */
	rc = bridge_build_view(b, w, &view, errmsg);
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
		rc = add_new_labels(b, w, view, errmsg);
		if (!rc)
			rc = do_comment(b, w, view, RENDER_REFIRE, errmsg);
		break;
	case ISSUE_COMMENT_RESOLVED:
		rc = do_comment(b, w, view, RENDER_RESOLVE, errmsg);
		break;
	case ISSUE_REOPEN:
		if (w->step < 1) {
			rc = add_new_labels(b, w, view, errmsg);
			if (!rc)
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
	if (rc == ERR_RETRY && w->have_row && w->row.number > 0) {
		/* a write to the issue in doubt: nothing more to it before it settles */
		int64_t at = gh_settled_at(b->gh, w->row.repo, w->row.number);

		if (at > w->not_before_ms)
			w->not_before_ms = at;
	}
	json_decref(view);
	return rc;
}
