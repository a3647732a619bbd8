/*
 * rebuild.c - the map rebuilt from the markers of the issues on GitHub
 * (bridge/rebuild.h).  The listing only gathers the issues that may be this
 * receiver's, and the keys other receivers' markers claim; the rows are
 * written after it, when it is known which old markers (without a receiver)
 * belong to no other receiver.
 */
#include "bridge/rebuild.h"

#include <stdlib.h>
#include <string.h>

#include "bridge/issue.h"
#include "bridge/storm.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "store/store_map.h"

#include "core/banned.h"

/* A listed issue that may give a row: the fields the row takes. */
struct candidate {
	char *key;
	int old_form;          /* its marker names no receiver */
	struct gh_issue is;    /* without body */
	struct issue_episode_seen body_seen;  /* what its body's episode marker says */
};

/* One scan of a repository for one receiver. */
struct scan {
	struct gh_client *gh;
	struct store *st;
	const char *receiver;
	int64_t reopen_window_ms;
	int64_t now_ms;
	int64_t imported;
	struct candidate *cands;
	size_t n_cands, cap_cands;
	char **claimed;       /* keys that other receivers' markers name; sorted after listing */
	size_t n_claimed, cap_claimed;
	struct buf *errmsg;
};

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *xstrdup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* gh_issue_list() callback: gather this receiver's candidates and others' keys. */
static int gather(void *ctx, const struct gh_issue *is)
{
	struct scan *sc = ctx;
	struct buf rcv = BUF_INIT, key = BUF_INIT;
	struct candidate *c;

	if (!issue_marker_parse_receiver(is->body, &rcv, &key))
		goto out;
	/* A storm summary (bridge/storm.h) is not an alert's issue: its rows are rebuilt by
	 * no one, and its members get their own issues when they fire again. */
	if (storm_is_summary_key(buf_str(&key)))
		goto out;
	if (rcv.len && strcmp(buf_str(&rcv), sc->receiver)) {
		if (sc->n_claimed == sc->cap_claimed) {
			sc->cap_claimed = sc->cap_claimed ? 2 * sc->cap_claimed : 16;
			sc->claimed = xreallocarray(sc->claimed, sc->cap_claimed, sizeof(*sc->claimed));
		}
		sc->claimed[sc->n_claimed++] = xstrdup(buf_str(&key));
		goto out;
	}
	if (sc->n_cands == sc->cap_cands) {
		sc->cap_cands = sc->cap_cands ? 2 * sc->cap_cands : 16;
		sc->cands = xreallocarray(sc->cands, sc->cap_cands, sizeof(*sc->cands));
	}
	c = &sc->cands[sc->n_cands++];
	memset(c, 0, sizeof(*c));
	c->key = xstrdup(buf_str(&key));
	c->old_form = rcv.len == 0;
	c->is.repo = xstrdup_or_null(is->repo);
	c->is.number = is->number;
	c->is.state = xstrdup_or_null(is->state);
	c->is.state_reason = xstrdup_or_null(is->state_reason);
	c->is.closed_at_ms = is->closed_at_ms;
	c->is.created_at_ms = is->created_at_ms;
	c->is.comments = is->comments;
	issue_episode_fold(is->body, &c->body_seen);
out:
	buf_release(&rcv);
	buf_release(&key);
	return 0;
}

static int fold_comment(void *ctx, const char *body, int64_t created_at_ms)
{
	(void)created_at_ms;
	issue_episode_fold(body, ctx);
	return 0;
}

/*
 * The newest episode applied to an issue and its resolve, into row: the
 * newest episode marker of its body and of its comments, and the resolve of
 * that episode when a comment's marker says it was applied
 * (issue_episode_fold()).  Comments are read only when the issue may still
 * see the episode again: open, or closed within the reopen window.  One
 * closed longer ago whose comments are not read counts as resolved at its
 * episode (resolved_ends = episode): its resolve is not known, and a firing
 * after it is then a new episode (for an alert, as its startsAt says anyway;
 * for a group, whose members are not known, see group.h).  An issue without
 * any marker (made by a version without them) counts from its creation: a
 * notification that started before it is then stale.
 */
static enum err issue_episode(struct scan *sc, const struct candidate *c,
			      struct store_issue *row)
{
	const struct gh_issue *is = &c->is;
	struct issue_episode_seen seen = c->body_seen;
	int closed = is->state && !strcmp(is->state, "closed");
	int recent = !closed || sc->now_ms - is->closed_at_ms <= sc->reopen_window_ms;
	enum err rc = ERR_OK;

	if (is->comments > 0 && recent)
		rc = gh_comment_list(sc->gh, is->repo, is->number, fold_comment, &seen,
				     sc->errmsg);
	row->episode_starts_ms = seen.starts_ms ? seen.starts_ms : is->created_at_ms;
	row->resolved_ends_ms = seen.starts_ms ? seen.resolved_ends_ms : 0;
	if (closed && !recent && is->comments > 0 && !row->resolved_ends_ms)
		row->resolved_ends_ms = row->episode_starts_ms;
	return rc;
}

/*
 * Import one candidate: the map row of (receiver, key) unless one exists
 * already.  Candidates come oldest first, so a newer issue of the same key in
 * the same repository (a linked one) replaces the older, which becomes
 * previous_number.
 */
static enum err import(struct scan *sc, const struct candidate *c)
{
	const struct gh_issue *is = &c->is;
	struct store_issue row = { 0 }, old = { 0 };
	int have_old;
	enum err rc = store_issue_get(sc->st, sc->receiver, c->key, &old);

	if (rc && rc != ERR_NOTFOUND) {
		buf_setf(sc->errmsg, "rebuild: cannot read the map row of %s", c->key);
		return ERR_DB;
	}
	have_old = rc == ERR_OK;
	rc = ERR_OK;
	if (have_old && !(old.repo && !strcmp(old.repo, is->repo) && old.number < is->number))
		goto out;
	row.receiver = sc->receiver;
	row.key = c->key;
	row.repo = is->repo;
	row.number = is->number;
	if (store_issue_state_parse(is->state, &row.state) != ERR_OK)
		row.state = STORE_ISSUE_OPEN;  /* GitHub answers open or closed */
	row.state_reason = is->state_reason;
	row.closed_at_ms = is->closed_at_ms;
	row.previous_number = have_old ? old.number : 0;
	row.created_at_ms = is->created_at_ms ? is->created_at_ms : sc->now_ms;
	row.updated_at_ms = sc->now_ms;
	rc = issue_episode(sc, c, &row);
	if (rc)
		goto out;
	rc = store_issue_put(sc->st, &row);
	if (rc) {
		buf_setf(sc->errmsg, "rebuild: cannot store the map row of %s", c->key);
		goto out;
	}
	sc->imported++;
	{
		struct log_line *l = log_begin(LOG_INFO, "map row rebuilt from github");
		log_str(l, "receiver", sc->receiver);
		log_str(l, "key", row.key);
		log_str(l, "repo", row.repo);
		log_int(l, "issue", row.number);
		log_str(l, "state", store_issue_state_str(row.state));
		log_str(l, "marker", c->old_form ? "without receiver" : "receiver");
		log_int(l, "episode_starts_ms", row.episode_starts_ms);
		log_int(l, "resolved_ends_ms", row.resolved_ends_ms);
		log_end(l);
	}
out:
	store_issue_release(&old);
	return rc;
}

/* An old-form marker of a key another receiver's marker names: not ours. */
static int claimed_by_another(const struct scan *sc, const struct candidate *c)
{
	const char *k = c->key;

	return c->old_form && sc->n_claimed &&
	       bsearch(&k, sc->claimed, sc->n_claimed, sizeof(*sc->claimed), cmp_str) != NULL;
}

enum err rebuild_scan(struct gh_client *gh, struct store *st, const char *receiver,
		      const char *repo, const char *labels, int64_t reopen_window_ms,
		      int64_t now_ms, int64_t *imported, int *pages, struct buf *errmsg)
{
	struct gh_list_filter filter = { NULL, NULL };
	struct scan sc = { 0 };
	struct buf why = BUF_INIT;
	char *login = NULL;
	enum err rc;
	size_t i;

	/* Only issues alertbridge opened carry markers: list those of the login that acts on
	 * repo (each organisation's credential has its own). */
	if (gh_login(gh, repo, &login, &why) == ERR_OK) {
		filter.creator = login;
	} else {
		struct log_line *l = log_begin(LOG_INFO,
					       "rebuild: login unknown, listing by labels");
		log_str(l, "repo", repo);
		log_str(l, "labels", labels ? labels : "");
		log_str(l, "detail", buf_str(&why));
		log_end(l);
		filter.labels = labels;
	}
	buf_release(&why);

	sc.gh = gh;
	sc.st = st;
	sc.receiver = receiver;
	sc.reopen_window_ms = reopen_window_ms;
	sc.now_ms = now_ms;
	sc.errmsg = errmsg;
	rc = gh_issue_list_filtered(gh, repo, &filter, gather, &sc, pages, errmsg);
	if (sc.n_claimed)
		qsort(sc.claimed, sc.n_claimed, sizeof(*sc.claimed), cmp_str);
	for (i = 0; !rc && i < sc.n_cands; i++)
		if (!claimed_by_another(&sc, &sc.cands[i]))
			rc = import(&sc, &sc.cands[i]);
	for (i = 0; i < sc.n_cands; i++) {
		free(sc.cands[i].key);
		gh_issue_release(&sc.cands[i].is);
	}
	for (i = 0; i < sc.n_claimed; i++)
		free(sc.claimed[i]);
	free(sc.cands);
	free(sc.claimed);
	free(login);
	if (imported)
		*imported = sc.imported;
	return rc;
}

enum err rebuild_find_issue(struct gh_client *gh, const char *repo, const char *receiver,
			    const char *key, int64_t since_ms, struct gh_issue *out,
			    struct buf *errmsg)
{
	struct buf marker = BUF_INIT, rcv = BUF_INIT, found = BUF_INIT;
	enum err rc;

	issue_marker(key, &marker);
	rc = gh_issue_find_marker(gh, repo, buf_str(&marker), since_ms, out, errmsg);
	if (rc == ERR_OK && !(issue_marker_parse_receiver(out->body, &rcv, &found) &&
			      !strcmp(buf_str(&found), key) &&
			      (!rcv.len || !strcmp(buf_str(&rcv), receiver)))) {
		gh_issue_release(out);
		rc = ERR_NOTFOUND;
	}
	buf_release(&marker);
	buf_release(&rcv);
	buf_release(&found);
	return rc;
}
