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
	int claimed;           /* old form, and another receiver's marker names key in its repo */
	size_t repo_index;     /* in the repos of rebuild_scan() */
	struct gh_issue is;    /* without body */
	struct issue_episode_seen body_seen;  /* what its body's episode marker says */
};

/* One scan of the repositories of one receiver. */
struct scan {
	struct gh_client *gh;
	struct store *st;
	const char *receiver;
	size_t repo_index;    /* the repository being listed */
	int64_t reopen_window_ms;
	int64_t now_ms;
	int64_t imported;
	struct candidate *cands;
	size_t n_cands, cap_cands;
	char **claimed;       /* keys that other receivers' markers name in the repository listed */
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
	c->repo_index = sc->repo_index;
	c->is.repo = xstrdup_or_null(is->repo);
	c->is.number = is->number;
	c->is.html_url = xstrdup_or_null(is->html_url);
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
 * Import candidate c, the newest issue of its key in the repositories scanned
 * (prev, the one before it, or NULL): the map row of (receiver, key) unless
 * one exists already that is not an older issue of c's repository.  prev (or
 * the row c replaces) becomes previous_number; a prev in another repository
 * (a reroute) gives previous_url, GitHub's link to it.
 */
static enum err import(struct scan *sc, const struct candidate *c, const struct candidate *prev)
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
	if (prev) {
		row.previous_number = prev->is.number;
		if (prev->repo_index != c->repo_index)
			row.previous_url = prev->is.html_url;
	} else {
		row.previous_number = have_old ? old.number : 0;
	}
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

/* An old-form marker of a key another receiver's marker names in its repository: not ours. */
static int claimed_by_another(const struct scan *sc, const struct candidate *c)
{
	const char *k = c->key;

	return c->old_form && sc->n_claimed &&
	       bsearch(&k, sc->claimed, sc->n_claimed, sizeof(*sc->claimed), cmp_str) != NULL;
}

/* After the listing of one repository: its candidates that another receiver's marker claims. */
static void mark_claimed(struct scan *sc, size_t first)
{
	if (sc->n_claimed)
		qsort(sc->claimed, sc->n_claimed, sizeof(*sc->claimed), cmp_str);
	for (size_t i = first; i < sc->n_cands; i++)
		sc->cands[i].claimed = claimed_by_another(sc, &sc->cands[i]);
	for (size_t i = 0; i < sc->n_claimed; i++)
		free(sc->claimed[i]);
	sc->n_claimed = 0;
}

/*
 * Whether issue a of a key is newer than issue b of the same key: in one
 * repository, by number; across repositories (a reroute), by the episode its
 * body was made for, then by created_at (whole seconds on GitHub), then the
 * earlier repository of rebuild_scan()'s list (the event's own first).
 */
static int newer(const struct candidate *a, const struct candidate *b)
{
	if (a->repo_index == b->repo_index)
		return a->is.number > b->is.number;
	if (a->body_seen.starts_ms != b->body_seen.starts_ms)
		return a->body_seen.starts_ms > b->body_seen.starts_ms;
	if (a->is.created_at_ms != b->is.created_at_ms)
		return a->is.created_at_ms > b->is.created_at_ms;
	return a->repo_index < b->repo_index;
}

static int cmp_cand_key(const void *a, const void *b)
{
	return strcmp(((const struct candidate *)a)->key, ((const struct candidate *)b)->key);
}

/* Import, key by key, the newest unclaimed candidate, the one before it as its previous. */
static enum err import_newest(struct scan *sc)
{
	enum err rc = ERR_OK;
	size_t i = 0, j;

	if (sc->n_cands)
		qsort(sc->cands, sc->n_cands, sizeof(*sc->cands), cmp_cand_key);
	for (; !rc && i < sc->n_cands; i = j) {
		const struct candidate *best = NULL, *prev = NULL;

		for (j = i; j < sc->n_cands && !strcmp(sc->cands[j].key, sc->cands[i].key); j++) {
			const struct candidate *c = &sc->cands[j];

			if (c->claimed)
				continue;
			if (!best || newer(c, best)) {
				prev = best;
				best = c;
			} else if (!prev || newer(c, prev)) {
				prev = c;
			}
		}
		if (best)
			rc = import(sc, best, prev);
	}
	return rc;
}

/* Forget the candidates from first on. */
static void drop_from(struct scan *sc, size_t first)
{
	for (size_t i = first; i < sc->n_cands; i++) {
		free(sc->cands[i].key);
		gh_issue_release(&sc->cands[i].is);
	}
	sc->n_cands = first;
}

/* Whether a listing's error means the repository holds nothing the scan can read. */
static int unreadable(enum err rc)
{
	return rc == ERR_NOTFOUND || rc == ERR_FORBIDDEN || rc == ERR_GONE;
}

/* List the issues of repo that may carry the receiver's markers into sc. */
static enum err list_repo(struct scan *sc, const char *repo, const char *labels, int *pages)
{
	struct gh_list_filter filter = { NULL, NULL };
	struct buf why = BUF_INIT;
	char *login = NULL;
	enum err rc;

	/* Only issues alertbridge opened carry markers: list those of the login that acts on
	 * repo (each organisation's credential has its own). */
	if (gh_login(sc->gh, repo, &login, &why) == ERR_OK) {
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
	rc = gh_issue_list_filtered(sc->gh, repo, &filter, gather, sc, pages, sc->errmsg);
	free(login);
	return rc;
}

enum err rebuild_scan(struct gh_client *gh, struct store *st, const char *receiver,
		      const char *const *repos, size_t n_repos, const char *labels,
		      int64_t reopen_window_ms, int64_t now_ms, enum err *skipped,
		      int64_t *imported, int *pages, struct buf *errmsg)
{
	struct scan sc = { 0 };
	enum err rc = ERR_OK;
	size_t i;

	sc.gh = gh;
	sc.st = st;
	sc.receiver = receiver;
	sc.reopen_window_ms = reopen_window_ms;
	sc.now_ms = now_ms;
	sc.errmsg = errmsg;
	if (pages)
		*pages = 0;
	for (i = 0; !rc && i < n_repos; i++) {
		size_t first = sc.n_cands;
		int n = 0;

		sc.repo_index = i;
		if (skipped)
			skipped[i] = ERR_OK;
		rc = list_repo(&sc, repos[i], labels, &n);
		if (pages)
			*pages += n;
		if (rc && i > 0 && unreadable(rc)) {
			struct log_line *l = log_begin(LOG_WARN,
						       "rebuild: repository not readable, skipped");
			log_err(l, rc);
			log_str(l, "receiver", receiver);
			log_str(l, "repo", repos[i]);
			log_str(l, "detail", buf_str(errmsg));
			log_end(l);
			buf_reset(errmsg);
			if (skipped)
				skipped[i] = rc;
			rc = ERR_OK;
			drop_from(&sc, first);  /* a listing cut short is not what the repository has */
		}
		mark_claimed(&sc, first);
	}
	if (!rc)
		rc = import_newest(&sc);
	drop_from(&sc, 0);
	free(sc.cands);
	free(sc.claimed);
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
