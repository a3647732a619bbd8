/*
 * bridge_plan.c - the reconciler's planning: the action for one event from
 * its progress note, or from issue_plan() on the map row and, where the row
 * could mislead, on the issue as GitHub has it (a conditional read that
 * follows transfers; a dry-run row's issue looked for by its marker).
 * Part of the bridge (bridge.c takes the events); all share bridge_int.h.
 */
#include "bridge/bridge_int.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "bridge/issue.h"
#include "bridge/rebuild.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "core/banned.h"

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
 * (and the next call, a comment, may have been posted: *comment_sent = 1),
 * maybe followed by "@<ms>", when that was noted (*noted_ms; else 0);
 * 0 when there is none or it is unreadable.
 */
static int parse_progress(const char *note, enum issue_action *action, int *step,
			  int *comment_sent, int64_t *noted_ms)
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
			*noted_ms = 0;
			if (*comment_sent && !strncmp(colon + 3, COMMENT_SENT_AT,
						      strlen(COMMENT_SENT_AT))) {
				char *end = NULL;
				long long t = strtoll(colon + 3 + strlen(COMMENT_SENT_AT), &end,
						      10);
				*noted_ms = !*end && t > 0 ? (int64_t)t : 0;
			}
			return *step >= 0 && *step <= 9;
		}
	}
	return 0;
}

void bridge_row_take_etag(struct store_issue *row, const struct gh_issue *gi)
{
	json_t *names = NULL;

	free(row->etag);
	free(row->labels);
	row->etag = gi->etag ? xstrdup(gi->etag) : NULL;
	row->labels = NULL;
	if (!gi->etag || !gi->labels)
		return;
	names = json_array();
	for (char **l = gi->labels; *l; l++)
		json_array_append_new(names, json_string(*l));
	row->labels = json_dumps(names, JSON_COMPACT);
	json_decref(names);
}

/* The labels a row stored with its ETag (bridge_row_take_etag()), or NULL. */
static char **row_labels(const struct store_issue *row)
{
	json_t *names = row->labels ? json_loads(row->labels, 0, NULL) : NULL;
	char **out = NULL;
	size_t i, n = 0;
	json_t *v;

	if (json_is_array(names)) {
		out = xcalloc(json_array_size(names) + 1, sizeof(*out));
		json_array_foreach(names, i, v)
			if (json_is_string(v))
				out[n++] = xstrdup(json_string_value(v));
	}
	json_decref(names);
	return out;
}

/* The row takes the issue as GitHub has it: where it lives, number, state, ETag. */
static void take_issue(struct store_issue *row, const struct gh_issue *gi)
{
	if (gi->repo && (!row->repo || strcmp(gi->repo, row->repo))) {
		free(row->repo);
		row->repo = xstrdup(gi->repo);
	}
	row->number = gi->number;
	/* GitHub answers "open" or "closed" (its API's enum); another word: open. */
	if (store_issue_state_parse(gi->state, &row->state) != ERR_OK)
		row->state = STORE_ISSUE_OPEN;
	free(row->state_reason);
	row->state_reason = xstrdup(gi->state_reason);
	row->closed_at_ms = gi->closed_at_ms;
	bridge_row_take_etag(row, gi);
}

/*
 * Fresh state of the mapped issue from GitHub; follows transfers.  A
 * conditional read: with the ETag the row stored, an unchanged issue answers
 * 304 (no rate-limit unit) and the row, which holds what GitHub had with
 * that ETag, stands for it.
 */
static enum err refresh(struct bridge *b, struct work *w, struct buf *errmsg)
{
	struct gh_issue gi = { 0 };
	int not_modified = 0;
	enum err rc = gh_issue_get_if_changed(b->gh, w->row.repo, w->row.number, w->row.etag,
					      &not_modified, &gi, errmsg);

	if (rc == ERR_OK && not_modified) {
		gh_issue_release(&w->fresh);
		w->fresh.labels = row_labels(&w->row);
		return ERR_OK;
	}

	if (rc == ERR_NOTFOUND || rc == ERR_GONE) {
		struct log_line *l = log_begin(LOG_WARN, "mapped issue is gone, a new one will be made");
		log_str(l, "receiver", w->row.receiver);
		log_str(l, "key", w->row.key);
		log_str(l, "repo", w->row.repo);
		log_int(l, "issue", w->row.number);
		log_err(l, rc);
		log_end(l);
		w->have_row = 0;
		w->issue_gone = rc == ERR_GONE;  /* finish() records a resolve on the row */
		return ERR_OK;
	}
	if (rc)
		return rc;
	take_issue(&w->row, &gi);
	gh_issue_release(&w->fresh);
	w->fresh = gi;  /* kept for its labels (add_new_labels) */
	return ERR_OK;
}

/*
 * The first live event of a row written in dry-run (number 0: no issue was
 * made) that needs the issue: a firing the row has not overtaken
 * (issue_firing_current(): a stale or late copy of a resolved episode makes
 * nothing), or a resolve that would comment.  The issue may exist all the same
 * (made by another instance, or by a create whose row was not updated), so
 * look for its marker among the issues created since the row was.  Found: the
 * row takes it, and the episode its body was made for when that is newer (a
 * create of this very event whose answer was lost: no "firing again" on
 * it).  Not found: a firing creates it (the row is dropped: no issue
 * yet); a resolve is recorded on the row and calls nothing (w->no_issue).
 * Another error: retry later.
 */
static enum err adopt_dry_run_row(struct bridge *b, struct work *w, struct buf *errmsg)
{
	struct gh_issue gi = { 0 };
	const char *repo = w->row.repo ? w->row.repo : w->repo;
	struct log_line *l;
	enum err rc = rebuild_find_issue(b->gh, repo, w->ev.receiver, w->ev.key,
					 w->row.created_at_ms - CREATE_LOOKBACK_MS, &gi, errmsg);

	if (rc == ERR_OK) {
		struct issue_episode_seen seen = { 0 };

		issue_episode_fold(gi.body, &seen);
		take_issue(&w->row, &gi);
		if (seen.starts_ms > w->row.episode_starts_ms)
			w->row.episode_starts_ms = seen.starts_ms;
		l = log_begin(LOG_INFO, "dry-run row: issue found by marker");
		log_int(l, "issue", gi.number);
	} else if (rc == ERR_NOTFOUND) {
		rc = ERR_OK;
		if (w->iev.firing)
			w->have_row = 0;
		else
			w->no_issue = 1;
		l = log_begin(LOG_INFO, w->iev.firing ? "dry-run row: no issue yet, creating it"
						    : "dry-run row: no issue, resolve recorded only");
	} else {
		l = NULL;
	}
	if (l) {
		log_str(l, "receiver", w->ev.receiver);
		log_str(l, "key", w->ev.key);
		log_str(l, "repo", repo);
		log_end(l);
	}
	gh_issue_release(&gi);
	return rc;
}

/* Does w's row name an issue on GitHub that a call may read (not dry-run, not issue 0)? */
static int has_issue(struct bridge *b, const struct work *w)
{
	return w->have_row && w->row.number > 0 && !gh_dry_run(b->gh);
}

/*
 * A transition resumed from its progress note ("ACTION:STEP"): the row is
 * the map's, which a previous attempt's refresh did not reach, so the issue
 * is read again and the row takes GitHub's state (a person may have reopened
 * it; the map then ends as GitHub has it).  Returns 1 to resume, 0 when the
 * issue is gone (the event is planned afresh: a firing creates), -1 on an
 * error in *rc.
 */
static int resume(struct bridge *b, struct work *w, enum err *rc, struct buf *errmsg)
{
	if (!has_issue(b, w))
		return 1;
	*rc = refresh(b, w, errmsg);
	if (*rc)
		return -1;
	if (w->have_row)
		return 1;
	w->comment_in_doubt = w->comment_noted = 0;
	return 0;
}

/*
 * The action for w: a resumed one, or issue_plan() on the map row, then on
 * GitHub's state when the row's could mislead: a dry-run row looks for its
 * issue when the event needs one; a mapped issue is read before any call on
 * it, and before a "nothing" that rests on the closed state the map cached.
 */
enum err bridge_plan(struct bridge *b, struct work *w, struct buf *errmsg)
{
	const char *why = "";
	enum err rc = ERR_OK;

	if (parse_progress(w->ev.progress, &w->action, &w->step, &w->comment_in_doubt,
			   &w->comment_noted_ms)) {
		int r;

		w->comment_noted = w->comment_in_doubt;
		r = resume(b, w, &rc, errmsg);
		if (r)
			return r > 0 ? ERR_OK : rc;
	}
	w->step = 0;
	w->action = issue_plan(w->have_row ? &w->row : NULL, &w->iev, &w->pol, w->now_ms, &why);
	if (w->have_row && w->row.number == 0 && !gh_dry_run(b->gh) &&
	    (w->iev.firing ? issue_firing_current(&w->row, &w->iev) : needs_issue(w->action))) {
		rc = adopt_dry_run_row(b, w, errmsg);
		if (rc)
			return rc;
		w->action = issue_plan(w->have_row ? &w->row : NULL, &w->iev, &w->pol, w->now_ms,
				       &why);
	}
	if (has_issue(b, w) &&
	    (needs_issue(w->action) ||
	     issue_plan_rests_on_closed(&w->row, &w->iev, &w->pol, w->now_ms))) {
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
