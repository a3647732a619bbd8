/*
 * gh_int.h - what the parts of the GitHub client share: struct gh_client,
 * one API call's description, and the request loop with its pacing.  gh.c is
 * the client and the loop; gh_issues.c the API calls; gh_doubt.c the writes
 * in doubt.  Not for other modules: they use bridge/gh.h.
 */
#ifndef AB_GH_INT_H
#define AB_GH_INT_H

#include <pthread.h>
#include <stdint.h>

#include "bridge/gh.h"
#include "core/api.h"
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

/* A credential's pacing and rate-limit state: GitHub counts both per token/installation. */
struct gh_budget {
	int64_t last_mutation_ms;  /* end of the last mutating request; 0: none yet */
	struct window minute;      /* content_per_minute */
	struct window hour;        /* content_per_hour */
	int64_t blocked_until_ms;  /* no request before this (rate limit) */
};

/* A GitHub App installation and its cached installation token. */
struct gh_install {
	char *owner;          /* lower-case owner it was found for; "" for a configured id */
	int64_t id;           /* 0: not found yet */
	char *auth_header;    /* "Authorization: Bearer <installation token>", or NULL */
	int64_t expires_ms;   /* the token's expires_at */
};

/* One credential: a token, or a GitHub App (app_id != 0). */
struct gh_cred {
	char *owner;            /* NULL: the default credential */
	char *auth_header;      /* a token's "Authorization: Bearer ..."; NULL for an App or none */
	int64_t app_id;         /* 0: not an App */
	int64_t installation_id;
	char *key_pem;          /* the App's RSA private key (PEM) */
	struct gh_install *inst;
	size_t ninst;
	struct gh_budget budget;
	char *login;            /* the login it acts as (gh_login()), NULL until learned */
};

/* The credential set: v[0] the default (maybe none), then one per owner. */
struct gh_creds {
	struct gh_cred *v;
	size_t n;
	int budgets_ready;      /* windows sized by the client that adopted the set */
};

/* A write to an issue sent whose answer was lost (gh_call()). */
struct gh_doubt {
	char *repo;
	int64_t number;
	char *marker;     /* a marked comment's (gh_comment_create_marked()), else NULL */
	int64_t sent_ms;  /* when it was sent (the client's clock) */
};
#define GH_DOUBTS 32  /* remembered at most; the oldest is forgotten first */

struct gh_client {
	char *api_url;
	char *ua_header;
	int64_t timeout_ms;
	int64_t min_interval_ms;
	struct api_policy policy;  /* attempts, backoff (max_attempts, backoff_base_ms) */
	int content_per_minute;
	int content_per_hour;
	int64_t window_ms;
	int dry_run;
	int64_t (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
	int (*stopping)(void *ctx);
	void (*pending_writes)(void *ctx, const char *text);  /* gh_options' */
	enum err (*note_spend)(void *ctx, const char *owner, int64_t sent_ms,
			       struct buf *errmsg);  /* gh_options' */
	struct buf pending_text;  /* gh_pending_text()'s */
	struct http_client *http;
	struct gh_creds *creds;    /* in use (by the calling thread only) */
	struct gh_budget *budget;  /* the budget of the credential of the current call */
	pthread_mutex_t mu;        /* guards pending */
	struct gh_creds *pending;  /* set by gh_client_set_creds(), adopted by the next call */
	int depth;                 /* gh_call() nesting (App token and marker look-ups) */
	const char *next_auth;     /* "Authorization: ..." for the next gh_call() only (an App's
				    * JWT) instead of the credential's; that call clears it */
	unsigned int seed;         /* the backoff's jitter (rand_r) */
	struct gh_stats stats;
	struct gh_doubt doubts[GH_DOUBTS];  /* writes to issues in doubt, oldest first */
	int ndoubts;
};

/* One API call as gh_call() performs it. */
struct call {
	const char *method;
	const char *path;     /* "/repos/o/r/issues"; for messages and dry-run logs */
	const char *url;      /* absolute; NULL: api_url + path */
	const char *body;     /* JSON or NULL */
	int mutating;
	const char *repo;     /* a write's repository (a create's: where to look for its marker) */
	const char *marker;   /* non-NULL for creates and marked comments: never sent twice */
	int64_t number;       /* a write to an issue: its number; 0: none (a create) */
	const char *if_none_match; /* a conditional GET: the ETag; a 304 is then a success */
};

/* Note a mutation at t_ms in w (the oldest is forgotten once cap are noted). */
void gh_window_note(struct window *w, int64_t t_ms);
/*
 * Before mutating call k (attempt n) with cred (NULL: none) is sent at
 * sent_ms: tell gh_options.note_spend.  ERR_OK (also without one), else
 * ERR_RETRY with errmsg ("METHOD PATH: not sent: ..."): send nothing.
 * gh_budget.c.
 */
enum err gh_budget_spend(struct gh_client *c, const struct gh_cred *cred, int64_t sent_ms,
			 const struct call *k, int attempt, struct buf *errmsg);
/*
 * A credential set replaces from: each credential of to whose owner one of
 * from has (the default's too) takes what that one spent of its content
 * budget (the windows and the last mutation; not a rate-limit block, which
 * GitHub answers per token), so a reload does not start the budget afresh.
 * to's windows are sized already (adopt()).  gh_budget.c.
 */
void gh_budget_carry(const struct gh_creds *from, struct gh_creds *to);
/* Wait until one more mutating call fits min_interval_ms and the content budgets. */
void gh_pace(struct gh_client *c);
/* Count a mutating call just made against the budgets. */
void gh_note_mutation(struct gh_client *c);
/* GitHub's "YYYY-MM-DDTHH:MM:SSZ" (RFC 3339) in ms since the epoch; 0 when NULL or malformed. */
int64_t gh_parse_iso8601(const char *s);
/* 1 when repo is "owner/name" with GitHub's characters only. */
int gh_valid_repo(const char *repo);
/* A create k answered 2xx unreadably: find its marker; ERR_OK (*out), ERR_NOTFOUND, other. */
enum err gh_resolve_ambiguous(struct gh_client *c, const struct call *k, int64_t attempt_ms,
			      struct gh_issue *out);
/* A set whose only credential is token (NULL or "": none). */
struct gh_creds *gh_creds_token(const char *token);
/* 1 when s has no credential at all. */
int gh_creds_none(const struct gh_creds *s);
/* Adopt a pending credential set, if any (start of every call). */
void gh_adopt_pending(struct gh_client *c);
/*
 * The credential for the repository a path names ("/repos/{owner}/..."):
 * the owner's, else the default.  NULL when neither (ERR_AUTH in errmsg).
 */
struct gh_cred *gh_cred_for_path(struct gh_client *c, const char *path, struct buf *errmsg);
/*
 * The Authorization header to send for path with cred: a token's, or an App's
 * installation token, got or renewed (5 min before expires_at, or always
 * when force) through gh_call.  Errors: those of gh_call, ERR_AUTH.
 */
enum err gh_cred_auth(struct gh_client *c, struct gh_cred *cred, const char *path, int force,
		      const char **header, struct buf *errmsg);
/* Perform k with pacing and retries; ERR_OK with res holding the 2xx answer (see gh.c). */
enum err gh_call(struct gh_client *c, const struct call *k, struct http_response *res,
		 struct buf *errmsg);
/* The issue in repo created since since_ms whose body carries marker, into *out; ERR_NOTFOUND. */
enum err gh_find_marker(struct gh_client *c, const char *repo, const char *marker,
			int64_t since_ms, struct gh_issue *out, struct buf *errmsg);
/* ERR_OK when a comment on issue number changed since since_ms carries marker; ERR_NOTFOUND. */
enum err gh_find_comment_marker(struct gh_client *c, const char *repo, int64_t number,
				const char *marker, int64_t since_ms, struct buf *errmsg);
/* Remember write k to an issue, sent at sent_ms, as in doubt (its answer lost). */
void gh_doubt_note(struct gh_client *c, const struct call *k, int64_t sent_ms);
/*
 * Before write k to an issue: ERR_RETRY (errmsg says so) while an earlier
 * write to it may still land (it could overtake this one); else ERR_OK.
 */
enum err gh_doubt_check(struct gh_client *c, const struct call *k, struct buf *errmsg);
/* Forget every comment in doubt (gh_client_free()). */
void gh_doubts_release(struct gh_client *c);
/*
 * Tell gh_options.pending_writes the writes in doubt still to settle, and k
 * sent at sent_ms when k is not NULL (about to be sent).
 */
void gh_pending_tell(struct gh_client *c, const struct call *k, int64_t sent_ms);
/*
 * Before a marked comment is posted (gh_comment_create_marked()): was the
 * same one, same issue and marker, sent before, its answer lost?  Then not
 * before it can no longer land (ERR_RETRY, errmsg says for how long), and
 * then only when its marker is not on the issue (ERR_OK: it is, counted in
 * ambiguous_resolved).  ERR_NOTFOUND: post it; another error: GitHub could
 * not tell (gh_find_comment_marker()'s, with errmsg).  gh_doubt.c.
 */
enum err gh_comment_in_doubt(struct gh_client *c, const char *repo, int64_t number,
			     const char *marker, struct buf *errmsg);

#endif
