/*
 * repos.c - repositories GitHub answered 404 for (repos.h): a small array of
 * answers, the oldest replaced when it is full, and the dead letters of
 * their events.
 */
#include "bridge/repos.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "store/store_events.h"
#include "core/banned.h"

#define MAX_KEPT 64
#define DEFAULT_TTL_MS 600000

struct kept {
	char *repo;        /* NULL: a free slot */
	int64_t at_ms;     /* when GitHub answered 404 */
};

struct repos {
	struct gh_client *gh;
	struct store *st;
	int64_t ttl_ms;
	pthread_mutex_t mu;
	struct kept kept[MAX_KEPT];
};

struct repos *repos_new(struct gh_client *gh, struct store *st, int64_t ttl_ms)
{
	struct repos *r = xcalloc(1, sizeof(*r));

	r->gh = gh;
	r->st = st;
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

enum err repos_check(struct repos *r, const char *repo, int64_t now_ms, struct buf *errmsg)
{
	enum err rc = gh_repo_get(r->gh, repo, errmsg);

	if (rc == ERR_NOTFOUND)
		keep(r, repo, now_ms);
	else if (rc == ERR_OK)
		keep(r, repo, -1);
	return rc;
}

/* Dead-letter ev, logged.  Returns 1, or -1 when the store could not record it. */
static int dead(struct repos *r, const struct store_event *ev, const char *repo,
		const char *detail)
{
	struct buf reason = BUF_INIT;
	struct log_line *l;
	enum err rc;

	buf_setf(&reason, REPOS_MISSING_REASON, repo);
	rc = store_event_dead(r->st, ev->id, buf_str(&reason));
	l = log_begin(LOG_ERROR, rc ? "cannot dead-letter event" : "event dead-lettered");
	log_err(l, rc ? rc : ERR_NOTFOUND);
	log_int(l, "event", ev->id);
	log_str(l, "receiver", ev->receiver);
	log_str(l, "key", ev->key);
	log_str(l, "repo", repo);
	log_str(l, "reason", buf_str(&reason));
	log_str(l, "detail", detail);
	log_end(l);
	buf_release(&reason);
	return rc ? -1 : 1;
}

int repos_dead_if_known(struct repos *r, const struct store_event *ev, const char *repo,
			int64_t now_ms)
{
	int requeued = ev->last_error &&
		       !strncmp(ev->last_error, STORE_REQUEUED, strlen(STORE_REQUEUED));

	if (requeued || !repos_known_missing(r, repo, now_ms))
		return 0;
	return dead(r, ev, repo, "known missing: no call made");
}

int repos_dead_if_missing(struct repos *r, const struct store_event *ev, const char *repo,
			  int64_t now_ms, struct buf *errmsg)
{
	struct buf why = BUF_INIT;
	enum err rc = repos_check(r, repo, now_ms, &why);
	int r_dead = 0;

	if (rc == ERR_NOTFOUND)
		r_dead = dead(r, ev, repo, buf_str(errmsg));
	else if (rc)
		(void)buf_printf(errmsg, "; is the repository there? %s", buf_str(&why));
	buf_release(&why);
	return r_dead;
}

enum err repos_retry_dead(struct repos *r, int64_t *n)
{
	int64_t got = 0;
	enum err rc;

	repos_forget(r);
	rc = store_dead_requeue(r->st, "bridge", NULL, NULL, REPOS_MISSING_LIKE, &got);
	if (rc == ERR_OK && got > 0) {
		struct log_line *l = log_begin(LOG_INFO, "dead letters re-queued");
		log_int(l, "events", got);
		log_str(l, "reason", REPOS_MISSING_HUMAN);
		log_end(l);
	}
	if (n)
		*n = got;
	return rc;
}
