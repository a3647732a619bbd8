/*
 * gh_doubt.c - the GitHub client's writes in doubt: a write to an issue
 * whose answer was lost is remembered until it can no longer land
 * (gh_write_settled_at()), no later write to that issue is sent before then,
 * and a marked comment is looked for by its marker before it is posted
 * again.  Part of the GitHub client (gh.c); the parts share gh_int.h.
 */
#include "gh_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define AMBIGUOUS_LOOKBACK_MS 60000 /* a comment in doubt is looked for since its send - this */

/* Forget doubts[i]. */
static void doubt_drop(struct gh_client *c, int i)
{
	free(c->doubts[i].repo);
	free(c->doubts[i].marker);
	memmove(&c->doubts[i], &c->doubts[i + 1],
		(size_t)(c->ndoubts - i - 1) * sizeof(c->doubts[0]));
	c->ndoubts--;
	memset(&c->doubts[c->ndoubts], 0, sizeof(c->doubts[0]));
}

void gh_doubt_note(struct gh_client *c, const struct call *k, int64_t sent_ms)
{
	struct gh_doubt *d;

	if (c->ndoubts == GH_DOUBTS)
		doubt_drop(c, 0);
	d = &c->doubts[c->ndoubts++];
	d->repo = xstrdup(k->repo);
	d->number = k->number;
	d->marker = k->marker ? xstrdup(k->marker) : NULL;
	d->sent_ms = sent_ms;
}

static int doubt_about(const struct gh_doubt *d, const char *repo, int64_t number)
{
	return d->number == number && !strcasecmp(d->repo, repo);
}

int64_t gh_settled_at(struct gh_client *c, const char *repo, int64_t number)
{
	int64_t at = 0;

	for (int i = 0; repo && i < c->ndoubts; i++)
		if (doubt_about(&c->doubts[i], repo, number) &&
		    gh_write_settled_at(c, c->doubts[i].sent_ms) > at)
			at = gh_write_settled_at(c, c->doubts[i].sent_ms);
	return at > gh_now(c) ? at : 0;
}

enum err gh_doubt_check(struct gh_client *c, const struct call *k, struct buf *errmsg)
{
	int64_t at = gh_settled_at(c, k->repo, k->number);

	if (at) {
		buf_setf(errmsg, "%s %s: an earlier write to %s#%" PRId64 " may still land for "
			 "%" PRId64 " ms: not sent", k->method, k->path, k->repo, k->number,
			 at - gh_now(c));
		return ERR_RETRY;
	}
	for (int i = c->ndoubts - 1; i >= 0; i--)  /* settled: only a comment's is looked for */
		if (!c->doubts[i].marker && doubt_about(&c->doubts[i], k->repo, k->number))
			doubt_drop(c, i);
	return ERR_OK;
}

const char *gh_pending_text(struct gh_client *c)
{
	int64_t now = gh_now(c);

	buf_reset(&c->pending_text);
	for (int i = 0; i < c->ndoubts; i++)
		if (gh_write_settled_at(c, c->doubts[i].sent_ms) > now)
			(void)buf_printf(&c->pending_text, "write %" PRId64 " %s#%" PRId64 "\n",
					 gh_write_settled_at(c, c->doubts[i].sent_ms),
					 c->doubts[i].repo, c->doubts[i].number);
	return buf_str(&c->pending_text);
}

void gh_pending_tell(struct gh_client *c, const struct call *k, int64_t sent_ms)
{
	(void)gh_pending_text(c);
	if (k)
		(void)buf_printf(&c->pending_text, "write %" PRId64 " %s#%" PRId64 "\n",
				 gh_write_settled_at(c, sent_ms), k->repo, k->number);
	c->pending_writes(c->clock_ctx, buf_str(&c->pending_text));
}

int gh_pending_restore(struct gh_client *c, const char *text, int64_t *latest)
{
	int64_t now = gh_now(c), most = 0, span = gh_write_settled_at(c, 0);
	const char *p = text ? text : "";
	int n = 0;

	if (latest)
		*latest = 0;
	while (*p) {
		char repo[256], *end;
		long long settle, number;
		size_t len = strcspn(p, "\n");
		int used = 0;

		if (strspn(p, " \t\r") >= len) {  /* a blank line, or the padding */
			p += len + (p[len] == '\n');
			continue;
		}
		if (sscanf(p, "write %lld %255[^# \n]#%lld%n", &settle, repo, &number, &used) != 3 ||
		    (size_t)used > len || number <= 0 || !gh_valid_repo(repo))
			return -1;
		end = (char *)p + used;
		if (strspn(end, " \t\r") < (size_t)(p + len - end))
			return -1;
		p += len + (p[len] == '\n');
		if (settle <= now)
			continue;  /* it can no longer land */
		gh_doubt_note(c, &(struct call){ .repo = repo, .number = number }, settle - span);
		if (settle > most)
			most = settle;
		n++;
	}
	if (latest)
		*latest = most;
	return n;
}

void gh_doubts_release(struct gh_client *c)
{
	while (c->ndoubts)
		doubt_drop(c, c->ndoubts - 1);
}

enum err gh_comment_in_doubt(struct gh_client *c, const char *repo, int64_t number,
			     const char *marker, struct buf *errmsg)
{
	int64_t settled;
	enum err rc;
	int i;

	for (i = c->ndoubts - 1; i >= 0; i--)
		if (doubt_about(&c->doubts[i], repo, number) && c->doubts[i].marker &&
		    !strcmp(c->doubts[i].marker, marker))
			break;
	if (i < 0)
		return ERR_NOTFOUND;
	settled = gh_write_settled_at(c, c->doubts[i].sent_ms);
	if (gh_now(c) < settled) {
		buf_setf(errmsg, "comment on %s#%" PRId64 " in doubt: it may still land for %" PRId64
			 " ms, not posted again", repo, number, settled - gh_now(c));
		return ERR_RETRY;
	}
	rc = gh_find_comment_marker(c, repo, number, marker,
				    c->doubts[i].sent_ms - AMBIGUOUS_LOOKBACK_MS, errmsg);
	if (rc == ERR_OK || rc == ERR_NOTFOUND) {
		doubt_drop(c, i);
		buf_reset(errmsg);
	}
	if (rc == ERR_OK) {
		struct log_line *l = log_begin(LOG_INFO, "comment in doubt found by marker");
		c->stats.ambiguous_resolved++;
		log_str(l, "repo", repo);
		log_int(l, "issue", number);
		log_end(l);
	}
	return rc;
}
