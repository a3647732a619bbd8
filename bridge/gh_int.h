/*
 * gh_int.h - what the parts of the GitHub client share: struct gh_client,
 * one API call's description, and the request loop with its pacing.  gh.c is
 * the client and the loop; gh_issues.c the API calls.  Not for other
 * modules: they use bridge/gh.h.
 */
#ifndef AB_GH_INT_H
#define AB_GH_INT_H

#include <stdint.h>

#include "bridge/gh.h"
#include "core/buf.h"
#include "core/err.h"
#include "core/http_client.h"

/* At most cap mutations in any span_ms: the times of the last cap, as a ring. */
struct window {
	int64_t *t;
	int cap;
	int len;
	int pos;      /* the oldest once len == cap; the next slot to write */
	int64_t span_ms;
};

struct gh_client {
	char *api_url;
	char *token;
	char *auth_header;
	char *ua_header;
	int64_t timeout_ms;
	int64_t min_interval_ms;
	int max_attempts;
	int64_t backoff_base_ms;
	int dry_run;
	int64_t (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
	int (*stopping)(void *ctx);
	struct http_client *http;
	int64_t last_mutation_ms;  /* end of the last mutating request; 0: none yet */
	struct window minute;      /* content_per_minute */
	struct window hour;        /* content_per_hour */
	int64_t blocked_until_ms;  /* no request before this (rate limit) */
	uint64_t rng;
	struct gh_stats stats;
	char *login;               /* gh_login()'s cache, or NULL */
};

/* One API call as gh_call() performs it. */
struct call {
	const char *method;
	const char *path;     /* "/repos/o/r/issues"; for messages and dry-run logs */
	const char *url;      /* absolute; NULL: api_url + path */
	const char *body;     /* JSON or NULL */
	int mutating;
	const char *repo;     /* for an ambiguous create: where to look for the marker */
	const char *marker;   /* non-NULL for creates and marked comments */
	int64_t number;       /* a marked comment: its issue; 0 for an issue create */
	const char *if_none_match; /* a conditional GET: the ETag; a 304 is then a success */
};

/* The injected clock's time, in ms. */
int64_t gh_now(struct gh_client *c);
/* Wait until one more mutating call fits min_interval_ms and the content budgets. */
void gh_pace(struct gh_client *c);
/* Count a mutating call just made against the budgets. */
void gh_note_mutation(struct gh_client *c);
/* GitHub's "YYYY-MM-DDTHH:MM:SSZ" (RFC 3339) in ms since the epoch; 0 when NULL or malformed. */
int64_t gh_parse_iso8601(const char *s);
/* 1 when repo is "owner/name" with GitHub's characters only. */
int gh_valid_repo(const char *repo);
/* Ambiguous create or marked comment k: find its marker; ERR_OK (*out), ERR_NOTFOUND, other. */
enum err gh_resolve_ambiguous(struct gh_client *c, const struct call *k, int64_t attempt_ms,
			      struct gh_issue *out);
/* Perform k with pacing and retries; ERR_OK with res holding the 2xx answer (see gh.c). */
enum err gh_call(struct gh_client *c, const struct call *k, struct http_response *res,
		 struct gh_issue *found, struct buf *errmsg);
/* The issue in repo created since since_ms whose body carries marker, into *out; ERR_NOTFOUND. */
enum err gh_find_marker(struct gh_client *c, const char *repo, const char *marker,
			int64_t since_ms, struct gh_issue *out, struct buf *errmsg);
/* ERR_OK when a comment on issue number changed since since_ms carries marker; ERR_NOTFOUND. */
enum err gh_find_comment_marker(struct gh_client *c, const char *repo, int64_t number,
				const char *marker, int64_t since_ms, struct buf *errmsg);

#endif
