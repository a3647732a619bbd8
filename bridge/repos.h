/*
 * repos.h - the repositories GitHub told the bridge are missing.  A call on a
 * repository that fails with 404 is confirmed by GitHub REST "Get a
 * repository" (GET /repos/{owner}/{repo}, gh_repo_get()): only a 404 there
 * means the repository does not exist or the token cannot see it, and the
 * event is dead-lettered with REPOS_MISSING_REASON.  The answer is kept for a
 * while, so the other events of that repository are dead-lettered without
 * asking GitHub again.  Thread-safe (the worker asks; a reload may forget).
 */
#ifndef AB_REPOS_H
#define AB_REPOS_H

#include <stdint.h>

#include "bridge/gh.h"
#include "core/buf.h"
#include "core/err.h"

/* The dead-letter reason (printf format over "owner/name"), and an SQL LIKE pattern for it. */
#define REPOS_MISSING_REASON "repository %s not found or no access"
#define REPOS_MISSING_LIKE "repository % not found or no access"

struct repos;

/*
 * A cache of missing repositories asking gh (borrowed; it must outlive the
 * cache).  An answer is kept ttl_ms (<= 0: 10 minutes).  Never NULL.
 */
struct repos *repos_new(struct gh_client *gh, int64_t ttl_ms);
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
 * until now_ms + ttl_ms; *reason, may be NULL, gets REPOS_MISSING_REASON);
 * ERR_OK when it is there (the 404 was about something in it; any kept
 * answer is dropped); another error (ERR_RETRY for 5xx and timeouts,
 * ERR_AUTH...) when GitHub could not tell, with errmsg: never a dead letter.
 */
enum err repos_check(struct repos *r, const char *repo, int64_t now_ms, struct buf *reason,
		     struct buf *errmsg) WARN_UNUSED;

/* Drop every kept answer (e.g. before dead letters are retried). */
void repos_forget(struct repos *r);

#endif
