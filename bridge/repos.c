/*
 * repos.c - the cache of repositories GitHub answered 404 for (repos.h): a
 * small array, the oldest answer replaced when it is full.
 */
#include "bridge/repos.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define MAX_KEPT 64
#define DEFAULT_TTL_MS 600000

struct kept {
	char *repo;        /* NULL: a free slot */
	int64_t at_ms;     /* when GitHub answered 404 */
};

struct repos {
	struct gh_client *gh;
	int64_t ttl_ms;
	pthread_mutex_t mu;
	struct kept kept[MAX_KEPT];
};

struct repos *repos_new(struct gh_client *gh, int64_t ttl_ms)
{
	struct repos *r = xcalloc(1, sizeof(*r));

	r->gh = gh;
	r->ttl_ms = ttl_ms > 0 ? ttl_ms : DEFAULT_TTL_MS;
	pthread_mutex_init(&r->mu, NULL);
	return r;
}

void repos_forget(struct repos *r)
{
	pthread_mutex_lock(&r->mu);
	for (int i = 0; i < MAX_KEPT; i++) {
		free(r->kept[i].repo);
		r->kept[i].repo = NULL;
	}
	pthread_mutex_unlock(&r->mu);
}

void repos_free(struct repos *r)
{
	if (!r)
		return;
	repos_forget(r);
	pthread_mutex_destroy(&r->mu);
	free(r);
}

/* The slot of repo (GitHub's names are case-insensitive), or -1.  Caller holds mu. */
static int find(struct repos *r, const char *repo)
{
	for (int i = 0; i < MAX_KEPT; i++)
		if (r->kept[i].repo && !strcasecmp(r->kept[i].repo, repo))
			return i;
	return -1;
}

int repos_known_missing(struct repos *r, const char *repo, int64_t now_ms)
{
	int i, yes;

	pthread_mutex_lock(&r->mu);
	i = find(r, repo);
	yes = i >= 0 && now_ms - r->kept[i].at_ms < r->ttl_ms;
	pthread_mutex_unlock(&r->mu);
	return yes;
}

/* Keep (at_ms set) or drop (at_ms < 0) the answer for repo. */
static void keep(struct repos *r, const char *repo, int64_t at_ms)
{
	int i;

	pthread_mutex_lock(&r->mu);
	i = find(r, repo);
	if (at_ms < 0) {
		if (i >= 0) {
			free(r->kept[i].repo);
			r->kept[i].repo = NULL;
		}
		goto out;
	}
	if (i < 0) {  /* a free slot, else the oldest answer */
		i = 0;
		for (int j = 0; j < MAX_KEPT; j++) {
			if (!r->kept[j].repo) {
				i = j;
				break;
			}
			if (r->kept[j].at_ms < r->kept[i].at_ms)
				i = j;
		}
		free(r->kept[i].repo);
		r->kept[i].repo = xstrdup(repo);
	}
	r->kept[i].at_ms = at_ms;
out:
	pthread_mutex_unlock(&r->mu);
}

enum err repos_check(struct repos *r, const char *repo, int64_t now_ms, struct buf *reason,
		     struct buf *errmsg)
{
	enum err rc = gh_repo_get(r->gh, repo, errmsg);

	if (rc == ERR_NOTFOUND) {
		struct log_line *l = log_begin(LOG_WARN, "github repository not found or no access");
		log_str(l, "repo", repo);
		log_str(l, "detail", buf_str(errmsg));
		log_end(l);
		keep(r, repo, now_ms);
		if (reason)
			buf_setf(reason, REPOS_MISSING_REASON, repo);
	} else if (rc == ERR_OK) {
		keep(r, repo, -1);
	}
	return rc;
}
