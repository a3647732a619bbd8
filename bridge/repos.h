/*
 * repos.h - the bridge's handling of repositories GitHub says are missing.
 * A call on a repository that fails with 404 is confirmed by GitHub REST
 * "Get a repository" (GET /repos/{owner}/{repo}, gh_repo_get()): only a 404
 * there means the repository does not exist or the token cannot see it, and
 * the event is dead-lettered with REPOS_MISSING_REASON.  The answer is kept
 * for a while, so the other events of that repository are dead-lettered
 * without asking GitHub again; an event a person re-queued
 * (store_dead_requeue(), last_error starting with STORE_REQUEUED) asks again.
 * Thread-safe (the worker asks; a reload may retry the dead letters).
 */
#ifndef AB_REPOS_H
#define AB_REPOS_H

#include <stdint.h>

#include "bridge/gh.h"
#include "core/buf.h"
#include "core/err.h"
#include "store/store.h"
#include "store/store_events.h"

/*
 * The dead-letter reason (printf format over "owner/name"), an SQL LIKE
 * pattern for it, and how the log names them all.
 */
#define REPOS_MISSING_REASON "repository %s not found or no access"
#define REPOS_MISSING_LIKE "repository % not found or no access"
#define REPOS_MISSING_HUMAN "repository not found or no access"

struct repos;

/*
 * Asking gh, dead-lettering in st (both borrowed; they must outlive it).  An
 * answer is kept ttl_ms (<= 0: 10 minutes).  Never NULL.
 */
struct repos *repos_new(struct gh_client *gh, struct store *st, int64_t ttl_ms);
/* Free; r may be NULL. */
void repos_free(struct repos *r);

/*
 * Non-zero when GitHub answered 404 for repo at most ttl_ms before now_ms
 * (no call is made).
 */
int repos_known_missing(struct repos *r, const char *repo, int64_t now_ms);

/*
 * A call on repo failed with 404: ask GitHub about the repository itself
 * (GET /repos/{owner}/{repo}).  ERR_NOTFOUND when GitHub answers 404 (kept
 * until now_ms + ttl_ms); ERR_OK when it is there (the 404 was about
 * something in it; any kept answer is dropped); another error (ERR_RETRY for
 * 5xx and timeouts, ERR_AUTH...) when GitHub could not tell, with errmsg.
 */
enum err repos_check(struct repos *r, const char *repo, int64_t now_ms,
		     struct buf *errmsg) WARN_UNUSED;

/*
 * Before any call for ev on repo: when GitHub said repo is missing a moment
 * ago (repos_known_missing()) and ev was not re-queued by a person,
 * dead-letter ev (store_event_dead(), logged) and return 1; else 0.  -1: the
 * store could not record the dead letter (logged; the caller backs off as for
 * any store failure, before it makes another call for ev).
 */
int repos_dead_if_known(struct repos *r, const struct store_event *ev, const char *repo,
			int64_t now_ms);

/*
 * A call for ev on repo failed with 404 (errmsg holds its detail): ask
 * GitHub (repos_check()).  On its 404, dead-letter ev and return 1 (-1 when
 * the store could not record it, as repos_dead_if_known()).  Else return 0
 * and, when GitHub could not tell, append that to errmsg: the caller retries
 * ev as for any failure.
 */
int repos_dead_if_missing(struct repos *r, const struct store_event *ev, const char *repo,
			  int64_t now_ms, struct buf *errmsg);

/*
 * Forget every kept answer and re-queue the "bridge" dead letters whose
 * reason is REPOS_MISSING_LIKE (store_dead_requeue()); *n (may be NULL) gets
 * how many.  Errors: those of store_dead_requeue().
 */
enum err repos_retry_dead(struct repos *r, int64_t *n) WARN_UNUSED;

/* Drop every kept answer. */
void repos_forget(struct repos *r);

#endif
