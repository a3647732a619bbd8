/*
 * gh.h - GitHub REST client for issues, comments and labels.
 *
 * Follows GitHub's REST API (API version 2022-11-28) and its "best practices
 * for integrators": every request sends Authorization: Bearer <token>,
 * Accept: application/vnd.github+json, X-GitHub-Api-Version: 2022-11-28 and a
 * User-Agent.  Mutating calls (POST/PATCH) are serialised, at least 1 s apart
 * and within content_per_minute and content_per_hour (GitHub's secondary rate
 * limits allow 80 content-creating requests a minute and 500 an hour: "Rate
 * limits for the REST API"); retry-after, x-ratelimit-remaining/-reset,
 * 429 and secondary-rate-limit 403 answers are honoured; 5xx and timeouts are
 * retried with jittered exponential backoff up to max_attempts (not a
 * write that was sent: below).
 *
 * A create or a write to an issue whose answer was lost (timeout after
 * sending, connection reset, 5xx) is in doubt: GitHub may still be making
 * it after the client gave up (it documents no idempotency for POST), so the
 * client never sends it again; the call ends in ERR_RETRY, the caller looks
 * for a create's or comment's marker once the write can no longer land
 * (gh_write_settled_at()), before any second POST, and no write to that
 * issue is sent before then (gh_settled_at()).  Mutating calls go on a fresh connection:
 * libcurl silently replays a request whose reused connection died before an
 * answer, which for a POST can make a second issue or comment.
 *
 * In dry-run every planned call is logged at info level
 * (msg="dry-run github call" method=POST path=/repos/o/r/issues title="...")
 * and none is made; creates return number 0 and state "open".  A gh_client is
 * used by one thread at a time.
 *
 * Waiting (all through the sleep_ms hook; a rate-limit wait is capped at 1 h):
 *   - every call first waits out a known rate limit: retry-after seconds, or
 *     until x-ratelimit-reset (epoch seconds) once x-ratelimit-remaining hit 0
 *     (also when seen on a successful answer);
 *   - mutating calls also wait until min_interval_ms after the previous one
 *     ended, until fewer than content_per_minute were sent in the last 60 s
 *     and fewer than content_per_hour in the last hour (sliding windows;
 *     per credential, counting what gh_budget_restore() says processes
 *     before this one sent);
 *   - 5xx, timeouts and connection errors back off base * 2^(n-1), capped at
 *     60 s, jittered into [d/2, d]; a 429 or secondary-limit 403 without
 *     retry-after or reset headers waits 60 s * 2^(n-1) (at most 16 min), as
 *     GitHub's rate-limit documentation asks.
 * Every attempt counts toward max_attempts.
 *
 * Issues returned through a struct gh_issue *out are overwritten without
 * being freed (pass a zeroed or released struct) and owned by the caller,
 * who frees them with gh_issue_release(); on error out holds nothing.
 */
#ifndef AB_GH_H
#define AB_GH_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct gh_client;
struct gh_creds;
struct cfg_github;

struct gh_options {
	const char *api_url;       /* e.g. https://api.github.com or https://HOST/api/v3; no trailing / */
	const char *token;         /* bearer token when creds is NULL; NULL or "" (and no creds)
				    * forces dry-run */
	struct gh_creds *creds;    /* credential set (gh_creds_new); the client takes it and
				    * frees it; NULL: the token above as the only credential */
	const char *user_agent;    /* e.g. "alertbridge/0.1.0" */
	int64_t timeout_ms;        /* whole-request timeout; 0 means 10 s */
	int content_per_minute;    /* budget for mutating calls; 0 or > 80 means 80 */
	int content_per_hour;      /* and per hour; 0 or > 500 means 500 */
	int64_t min_interval_ms;   /* spacing of mutating calls; 1000 by default (0 means 1000) */
	int max_attempts;          /* per call for transient failures; 0 means 5 */
	int64_t backoff_base_ms;   /* first backoff; 0 means 1000; doubles, jittered, capped at 60 s */
	int64_t window_ms;         /* test hook: the content budget's window; 0 means 60 s */
	int dry_run;               /* non-zero: log calls, make none */
	/* Test hooks: clock and sleep, both in milliseconds; NULL for the real ones. */
	int64_t (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
	/*
	 * Optional (NULL: never): non-zero once the owner is shutting down.  It
	 * is asked after every wait, before each request; when set, the request
	 * is not sent and the call ends with ERR_RETRY ("not sent: stopping"),
	 * so a sleep cut short by shutdown never sends a request early (before
	 * a retry-after, a reset or the pacing interval).  Uses clock_ctx.
	 */
	int (*stopping)(void *ctx);
	/*
	 * Optional (NULL: none): told which writes to issues may still land on
	 * GitHub, as text for gh_pending_restore(): right before each mutating
	 * request to an issue is sent (the writes in doubt and this one), and
	 * after its answer came or was lost (the writes in doubt).  For a note
	 * that outlives the process (store/serve_lock.h serve_lock_note()), so
	 * that the next one, should this one die, sends nothing to those issues
	 * before those writes can no longer land.  A create is not in it: its
	 * event's note says when to look for it (bridge/bridge.h).  The text is
	 * valid during the call only.  Uses clock_ctx.
	 */
	void (*pending_writes)(void *ctx, const char *text);
	/*
	 * Optional (NULL: none): told of every mutating request right before
	 * it is sent (each attempt; not in dry-run, which sends nothing): the
	 * owner of the credential whose content budget it spends (NULL: the
	 * default credential) and the time, ms of the client's clock.  For a
	 * record that outlives the process (store/store_budget.h), loaded into
	 * the next one with gh_budget_restore(), so that a restart does not
	 * start with a full minute: GitHub counts per token, and a request
	 * sent is counted even when the process dies before its answer.  Not
	 * ERR_OK (errmsg says why): it could not be recorded, the request is
	 * not sent and the call ends with ERR_RETRY ("METHOD PATH: not sent:
	 * its time could not be recorded: ...").  Uses clock_ctx.
	 */
	enum err (*note_spend)(void *ctx, const char *owner, int64_t sent_ms, struct buf *errmsg);
	const char *ca_file;       /* PEM CA bundle for api_url; NULL: the system's */
};

/* An issue as GitHub returned it. */
struct gh_issue {
	char *repo;          /* "owner/name" it lives in (changes after a transfer) */
	int64_t number;
	char *state;         /* "open" or "closed" */
	char *state_reason;  /* "completed", "not_planned", "reopened" or NULL */
	char *html_url;
	int64_t closed_at_ms;  /* 0 while open */
	int64_t created_at_ms; /* 0 when GitHub did not say */
	int64_t comments;      /* number of comments GitHub counted */
	char *body;            /* set by gh_issue_list() and gh_issue_find_marker(); else NULL */
	char **labels;         /* label names, NULL-terminated; NULL when GitHub sent none */
	char *etag;            /* the ETag header of the answer that carried the issue (a GET, a
	                          create, a state change), e.g. W/"1f2e..."; NULL when none */
};

/*
 * Why GitHub refused a request for good (a 403 that is no rate limit), told
 * apart by the message GitHub's answer carries (REST API "Troubleshooting":
 * a 403 without x-ratelimit-remaining: 0, retry-after or the secondary rate
 * limit message is about permission):
 *   GH_FORBIDDEN_ARCHIVED    "Repository was archived so is read-only." (every
 *                            write to an archived repository)
 *   GH_FORBIDDEN_LOCKED      "Unable to create comment because issue is locked."
 *   GH_FORBIDDEN_PERMISSION  any other: the token may not do it ("Resource not
 *                            accessible by personal access token" / "... by
 *                            integration", "Must have admin rights ...")
 */
enum gh_forbidden {
	GH_FORBIDDEN_PERMISSION,
	GH_FORBIDDEN_ARCHIVED,
	GH_FORBIDDEN_LOCKED,
};
#define GH_FORBIDDEN_COUNT 3
/* "permission", "archived", "locked" (the metrics' reason label); never NULL. */
const char *gh_forbidden_str(enum gh_forbidden why);

/*
 * Counters since gh_client_new(), for metrics.  A request is one HTTP
 * exchange (a retry is a second request).
 */
struct gh_stats {
	uint64_t requests_ok;            /* 2xx answers */
	uint64_t requests_client_error;  /* 4xx other than rate limits, and other non-2xx */
	uint64_t requests_server_error;  /* 5xx answers */
	uint64_t requests_rate_limited;  /* 429, and 403 that is a primary or secondary limit */
	uint64_t requests_failed;        /* no HTTP answer: connect error, timeout, reset */
	uint64_t requests_unauthorized;  /* credentials rejected: 401 answers (also counted as
					  * client errors), and GitHub App tokens refused for a
					  * wrong App, key or installation (see gh_creds) */
	uint64_t requests_forbidden[GH_FORBIDDEN_COUNT]; /* ERR_FORBIDDEN answers by reason
							  * (also client errors) */
	uint64_t retries;                /* requests repeated after a transient failure */
	int64_t ratelimit_wait_ms;       /* slept for retry-after / x-ratelimit-reset */
	int64_t backoff_wait_ms;         /* slept in exponential backoff */
	int64_t pacing_wait_ms;          /* slept to space mutating calls (min_interval, budget) */
	uint64_t ambiguous_resolved;     /* unreadable create answers found by their marker */
	uint64_t writes_in_doubt;        /* creates and marked comments sent, answer lost */
	int64_t ratelimit_remaining;     /* last x-ratelimit-remaining seen; -1 before any */
	int content_left_minute;         /* mutations that fit now in the last 60 s's budget */
	int content_left_hour;           /* ... and in the last hour's */
	int content_limit_minute;        /* the budgets: content_per_minute as capped */
	int content_limit_hour;          /*   and content_per_hour */
	int64_t content_full_minute_ms;  /* when the minute's budget is whole again; 0: it is */
	int64_t content_full_hour_ms;    /*   and the hour's (ms since the epoch, client clock) */
	int64_t ratelimit_reset_ms;      /* last x-ratelimit-reset seen (epoch s * 1000); 0: none */
	uint64_t assignees_dropped;      /* assignees left out of a create GitHub rejected them on */
	uint64_t app_token_renewals;     /* GitHub App installation tokens got (first and renewals) */
	uint64_t app_token_failures;     /* failed installation token requests or lookups */
};

/*
 * Credentials (GitHub "Authenticating as a GitHub App installation" and
 * "Generating a JSON Web Token (JWT) for a GitHub App").
 *
 * A credential set holds the default credential (github.token_file or
 * $GITHUB_TOKEN, or github.app; maybe none) and one per owner from
 * github.credentials.  A call on "/repos/{owner}/..." uses the credential
 * whose owner equals {owner} ignoring case (as GitHub compares logins), else
 * the default; with neither it fails with ERR_AUTH ("no GitHub credential
 * for owner ...") before any request.  Each credential keeps its own pacing
 * and rate-limit state (content budgets, retry-after/x-ratelimit-reset),
 * since GitHub counts them per token or installation.
 *
 * An App credential signs a JWT (RS256 with the App's private key; claims
 * iat = now - 60 s, exp = now + 9 min, iss = the app ID) and exchanges it
 * at POST {api_url}/app/installations/{installation_id}/access_tokens
 * (Authorization: Bearer <JWT>; answer 201 {"token", "expires_at"}).  The
 * installation token is cached and renewed 5 minutes before expires_at, and
 * once more when a request with it is answered 401.  Without an
 * installation_id, the installation of the target repository is looked up
 * with the JWT (GET /repos/{owner}/{repo}/installation, answer {"id"}) and
 * cached per owner (lower-case) with its token.  These calls go through the
 * same retry loop as every call; a call that cannot get a token fails with
 * ERR_RETRY (GitHub still failing after max_attempts) or else ERR_AUTH (the
 * App, key or installation is wrong, or GitHub's answer is not the
 * documented one), never ERR_INVALID, so its event is kept, not
 * dead-lettered; counted in gh_stats.app_token_failures.  GitHub's 404 for
 * the installation (a wrong installation_id, or the App not installed on the
 * owner) also counts in requests_unauthorized, as a rejected JWT's 401 does.
 * Each token got counts in app_token_renewals.
 */

/*
 * Build the credential set of a parsed github section: never NULL, copies
 * every string (the App's key PEM too: cfg_parse() read and checked it, so a
 * reload that parses the config again re-reads the key file).  A set with
 * no credential at all makes a client dry-run.  Free with gh_creds_free()
 * unless handed to a client.
 *
 * Config reload: parse the new config, build its set with gh_creds_new()
 * and hand it to the running client with gh_client_set_creds() (the bridge:
 * bridge_set_credentials()).  Cached installation tokens and rate-limit
 * state (retry-after, x-ratelimit-reset) start afresh with the new set; the
 * content budget spent (content_per_minute, content_per_hour) is kept for
 * each owner the new set has too (the default credential's included).
 */
struct gh_creds *gh_creds_new(const struct cfg_github *g);
/* Free a set the client did not take; s may be NULL.  Wipes the secrets. */
void gh_creds_free(struct gh_creds *s);
/*
 * Hand a new credential set to c (it takes s and frees the old one).
 * Thread-safe: may be called from any thread while another uses c; the
 * client switches at the start of its next call, never inside one.  A
 * client that was dry-run for want of credentials stays dry-run (its
 * dry-run state is fixed at gh_client_new()).
 */
void gh_client_set_creds(struct gh_client *c, struct gh_creds *s);

/*
 * The JWT of GitHub App app_id signed RS256 with the PEM RSA private key
 * pem, at now_s (seconds since the epoch, UTC): header {"alg":"RS256",
 * "typ":"JWT"}, claims iat = now_s - 60, exp = now_s + 540, iss = the app
 * ID as a decimal string.  *out is malloc'd (caller frees).  ERR_INVALID
 * when the key cannot sign (detail in errmsg, never the key).
 */
enum err gh_app_jwt(int64_t app_id, const char *pem, int64_t now_s, char **out,
		    struct buf *errmsg) WARN_UNUSED;

/* Create a client; never NULL.  Copies every string in opts. */
struct gh_client *gh_client_new(const struct gh_options *opts);
/* Free; c may be NULL. */
void gh_client_free(struct gh_client *c);
/* Non-zero when the client makes no calls (dry_run or no token). */
int gh_dry_run(const struct gh_client *c);
/* Free the strings of is (not is itself) and zero it; is may be NULL. */
void gh_issue_release(struct gh_issue *is);
/* Copy c's counters into *out (content_left_* as of the client's clock now). */
void gh_stats(const struct gh_client *c, struct gh_stats *out);

/*
 * Errors every call can return, with detail in errmsg (never the token):
 *   ERR_AUTH      401: GitHub rejected the credentials (or no credential, or
 *                 no GitHub App token could be got: see gh_creds)
 *   ERR_FORBIDDEN 403 that is not a rate limit (enum gh_forbidden): the
 *                 repository is archived, the issue locked, or the token may
 *                 not do this; GitHub's message is in errmsg.  A 403 is a rate
 *                 limit ("Rate limits for the REST API") when it carries
 *                 x-ratelimit-remaining: 0 (primary), a retry-after header
 *                 or the "secondary rate limit" message (secondary): those
 *                 are waited out and retried, never ERR_FORBIDDEN
 *   ERR_NOTFOUND  404 (repository or issue missing)
 *   ERR_GONE      410 (issue deleted)
 *   ERR_INVALID   422 or another 4xx: the request itself is wrong; do not retry
 *   ERR_RETRY     still failing after max_attempts (5xx, timeouts, connection
 *                 errors, rate limits); message "giving up after N attempts: ..."
 * Input that cannot make a valid request (repo not "owner/name", text that is
 * not UTF-8) is ERR_INVALID before any request.  A 2xx answer that is not the
 * documented JSON is ERR_INVALID too.
 */

/*
 * GitHub REST: POST /repos/{owner}/{repo}/issues.  body must end with the
 * unique marker (see issue_marker()); it is used to resolve an ambiguous
 * create.  labels/assignees are NULL-terminated arrays or NULL; they are sent
 * exactly as given (NULL: the key is left out).  title and body must be
 * non-empty and body must contain marker (ERR_INVALID otherwise).
 * When an attempt is ambiguous (sent, then a timeout, reset or 5xx) the
 * create is in doubt and never repeated: ERR_RETRY at once, the message
 * ending "create in doubt: sent, it may still land (not repeated)", counted
 * in gh_stats.writes_in_doubt.  The caller looks for marker
 * (gh_issue_find_marker()) from gh_write_settled_at() on, and creates only
 * when it is absent then.  A clean connect failure is retried without a
 * search.
 * A 2xx answer that cannot be read as an issue is resolved the same way (the
 * issue exists): ERR_OK when the marker is found, else ERR_RETRY ("the create
 * may have succeeded"), never ERR_INVALID, so the caller does not give up on
 * an issue GitHub made.
 * Assignees GitHub cannot assign (no access to the repository, no such user)
 * make it answer 422 "Validation Failed" with errors[] {field "assignees",
 * code "invalid", value: the login}, and make no issue: the create is then
 * sent once more without the logins named (without any assignee when no error
 * names one), logged at warn and counted in gh_stats.assignees_dropped; its
 * outcome is the call's.  So an alert is not dead-lettered for its assignee.
 */
enum err gh_issue_create(struct gh_client *c, const char *repo, const char *title,
			 const char *body, const char *marker, const char *const *labels,
			 const char *const *assignees, struct gh_issue *out,
			 struct buf *errmsg) WARN_UNUSED;

/*
 * GitHub REST: GET /repos/{owner}/{repo}/issues/{number}.  A 301 (issue
 * transferred) is followed; out->repo (from repository_url) and out->number
 * then name its new home.  Dry-run: no call; out is {repo, number, "open"}.
 */
enum err gh_issue_get(struct gh_client *c, const char *repo, int64_t number,
		      struct gh_issue *out, struct buf *errmsg) WARN_UNUSED;

/*
 * gh_issue_get() made conditional ("Conditional requests" of GitHub's REST
 * best practices): with etag (an ETag an earlier answer gave, e.g.
 * W/"1f2e..."; NULL or "": an unconditional GET) it sends If-None-Match:
 * etag.  GitHub answers 304 Not Modified when the issue is unchanged, and a
 * 304 does not count against the primary rate limit: then *not_modified = 1
 * and out holds nothing (the caller keeps what it had).  Else *not_modified
 * = 0 and out is the issue with its new etag.  Errors as gh_issue_get().
 */
enum err gh_issue_get_if_changed(struct gh_client *c, const char *repo, int64_t number,
				 const char *etag, int *not_modified, struct gh_issue *out,
				 struct buf *errmsg) WARN_UNUSED;

/*
 * The login the credential for repo ("owner/name": the owner's from
 * github.credentials, else the default) acts as: the author of the issues
 * it creates, for the issues list's creator= filter (bridge/rebuild.h).  A
 * token's is GitHub REST "Get the authenticated user", GET /user (with that
 * token), answer {"login"}; a GitHub App's is "<slug>[bot]", the slug from
 * "Get the authenticated app", GET /app with the App's JWT ("You must use a
 * JWT"; an installation token is refused on GET /user with 403 "Resource not
 * accessible by integration").  Learned once per credential and kept with
 * it (a failure is not kept): a set handed over by gh_client_set_creds()
 * learns its logins again.  *login is malloc'd (caller frees), NULL on
 * error.  Dry-run: no call, ERR_NOTFOUND.  ERR_INVALID for a repo that is
 * not owner/name or an answer without login (or slug); ERR_AUTH when no
 * credential covers repo; else the errors of every call.
 */
enum err gh_login(struct gh_client *c, const char *repo, char **login,
		  struct buf *errmsg) WARN_UNUSED;

/*
 * GitHub REST "Get a repository": GET /repos/{owner}/{repo}.  ERR_OK when
 * it exists and the token can see it; ERR_NOTFOUND when GitHub answers 404,
 * which means it does not exist or the token has no access (GitHub does not
 * tell the two apart).  Retries and other errors as every call: a 5xx or a
 * timeout ends in ERR_RETRY, never ERR_NOTFOUND.  The answer's body is not
 * read.  Dry-run: logged, no call, ERR_OK.
 */
enum err gh_repo_get(struct gh_client *c, const char *repo, struct buf *errmsg) WARN_UNUSED;

/*
 * GitHub REST: PATCH /repos/{owner}/{repo}/issues/{number} with
 * {"state": state, "state_reason": state_reason}.  state is "open" or
 * "closed" (else ERR_INVALID); state_reason "completed", "not_planned",
 * "reopened" or NULL (the key is then left out).  out may be NULL; else it
 * receives the updated issue (in dry-run: repo, number, state, state_reason).
 */
enum err gh_issue_set_state(struct gh_client *c, const char *repo, int64_t number,
			    const char *state, const char *state_reason,
			    struct gh_issue *out, struct buf *errmsg) WARN_UNUSED;

/*
 * GitHub REST: POST /repos/{owner}/{repo}/issues/{number}/comments
 * {"body": body}.  An empty body is ERR_INVALID.
 */
enum err gh_comment_create(struct gh_client *c, const char *repo, int64_t number,
			   const char *body, struct buf *errmsg) WARN_UNUSED;

/*
 * gh_comment_create() with a marker unique to this comment inside body
 * (else ERR_INVALID; NULL: none).  When an attempt is ambiguous (sent, then
 * a timeout, reset or 5xx) the comment is in doubt and never repeated:
 * ERR_RETRY at once ("comment in doubt: ..."), as gh_issue_create().  The
 * client remembers it (the last 32): asked again for the same repo, number
 * and marker, it sends nothing before gh_write_settled_at() (ERR_RETRY,
 * "comment on o/r#N in doubt: it may still land for MS ms, not posted
 * again"), then reads the issue's comments changed since the send minus
 * 60 s: one carrying marker means it was made (ERR_OK, no POST, counted in
 * ambiguous_resolved), else it is posted.  A caller that may restart in
 * between (the bridge) keeps a note of its own and looks first itself.  So
 * a transition's comment is posted once.  (gh_comment_create(), without
 * a marker, is posted again once settled, without a look: only for texts
 * whose repetition does no harm.)
 */
enum err gh_comment_create_marked(struct gh_client *c, const char *repo, int64_t number,
				  const char *body, const char *marker,
				  struct buf *errmsg) WARN_UNUSED;

/*
 * When a write of c sent at sent_ms (ms, c's clock) whose answer was lost can
 * no longer land on GitHub: sent_ms + the client's timeout (GitHub cannot
 * have received it later) + 10 s (GitHub ends a request it has processed
 * for 10 s: "Troubleshooting the REST API", Timeouts; scaled with the test
 * hook window_ms, as the budget's minute is).  A marker looked for before
 * then may be missing only because GitHub is still making the write.
 */
int64_t gh_write_settled_at(const struct gh_client *c, int64_t sent_ms);
/*
 * When every write to issue number of repo that c sent and whose answer was
 * lost (a state or body PATCH, a comment, labels) can no longer land
 * (gh_write_settled_at()), in ms of c's clock; 0 when none may land now.
 * Until then every write to that issue fails with ERR_RETRY before it is
 * sent ("an earlier write to o/r#N may still land for MS ms: not sent"):
 * a late PATCH would otherwise overtake a later one (close, then reopen,
 * then the close lands).  The client remembers the last 32 such writes.
 */
int64_t gh_settled_at(struct gh_client *c, const char *repo, int64_t number);
/*
 * Restore the writes another process noted as pending (the text of
 * gh_options.pending_writes: lines "write SETTLE_MS OWNER/NAME#NUMBER",
 * SETTLE_MS when it can no longer land, ms of the client's clock): each
 * still to settle is a write in doubt again (gh_settled_at()), so no write
 * to its issue is sent before then.  Returns how many were restored, and
 * *latest (may be NULL) the latest settle time among them (0: none); -1 when
 * a line cannot be read (nothing restored: the caller must assume any write
 * may land).  Blank lines and trailing blanks are ignored.
 */
int gh_pending_restore(struct gh_client *c, const char *text, int64_t *latest);
/*
 * The text gh_options.pending_writes would be told now: the writes to issues
 * in doubt still to settle (restored ones too), "" when none.  Owned by c,
 * valid until its next call.
 */
const char *gh_pending_text(struct gh_client *c);
/* The client's clock (gh_options.now_ms; else the wall clock), in ms since the epoch. */
int64_t gh_now(struct gh_client *c);

/* A mutating request another process (or this one) sent, for gh_budget_restore(). */
struct gh_spent {
	const char *owner;  /* its credential's owner, as gh_options.note_spend was told;
			     * NULL or "": the default credential */
	int64_t sent_ms;    /* when it was sent, ms of the client's clock */
};

/*
 * Replace what each credential of c counted against its content budget
 * (content_per_minute, content_per_hour, and the spacing min_interval_ms)
 * with the requests v[0..n) (any order) of its owner (compared ignoring
 * case; an owner no credential has is ignored; a credential none names
 * counts none): what gh_options.note_spend was told by the processes before
 * this one, and by this one.  From then on a mutating call waits as if
 * those were its own, so a restart or a replica taking the lead goes on
 * with the budget spent before it.  Credentials handed over later
 * (gh_client_set_creds()) keep the budget of the owner they replace.
 */
void gh_budget_restore(struct gh_client *c, const struct gh_spent *v, size_t n);
/*
 * How far back gh_budget_restore() needs requests, in ms: the longest
 * window, an hour (60 gh_options.window_ms under that test hook).
 */
int64_t gh_budget_span_ms(const struct gh_client *c);

/*
 * GitHub REST: POST /repos/{owner}/{repo}/issues/{number}/labels
 * {"labels": [...]}: adds, never replaces.  No labels (NULL or empty): no
 * call, ERR_OK.
 */
enum err gh_labels_add(struct gh_client *c, const char *repo, int64_t number,
		       const char *const *labels, struct buf *errmsg) WARN_UNUSED;

/*
 * Find the issue whose body contains marker among the repository's issues
 * (GET /repos/{owner}/{repo}/issues?state=all&sort=created&direction=desc&
 * since=<since_ms as ISO 8601>&per_page=100, following Link rel="next"; pull
 * requests skipped).  Reading stops at the first issue created before
 * since_ms or after 10 pages.  A Link next URL outside api_url is ERR_INVALID
 * (the token is never sent elsewhere).  The newest issue that has it is
 * returned, with its body.  ERR_NOTFOUND when none has it, and always in
 * dry-run.  GETs are not paced but wait out rate limits.
 */
enum err gh_issue_find_marker(struct gh_client *c, const char *repo, const char *marker,
			      int64_t since_ms, struct gh_issue *out,
			      struct buf *errmsg) WARN_UNUSED;

/*
 * GitHub REST: PATCH /repos/{owner}/{repo}/issues/{number} with {"title":
 * title, "body": body} (title NULL: left out), for the storm summary issues
 * (bridge/storm.h).  The body is sent as given: the caller keeps it within
 * GitHub's 65 536 characters and ends it with its marker.  Paced like every
 * mutating call.  An empty body or title is ERR_INVALID before any request,
 * as is text that is not UTF-8.  Dry-run: logged, no call.
 */
enum err gh_issue_set_body(struct gh_client *c, const char *repo, int64_t number,
			   const char *title, const char *body, struct buf *errmsg) WARN_UNUSED;

/*
 * Every issue of the repository, oldest first: GET /repos/{owner}/{repo}/
 * issues?state=all&sort=created&direction=asc&per_page=100, following Link
 * rel="next" to the end (the issues list is consistent with writes; the
 * search API lags and is never used).  Pull requests are skipped.  fn gets
 * each issue with its body (NULL when it has none); both are valid only
 * during the call; fn returns non-zero to stop early (still ERR_OK).  fn may
 * make other calls on c.  Dry-run: no call, fn never called, ERR_OK.
 * Errors: those of every call; ERR_INVALID for an answer that is not a list
 * of issues or a Link next outside api_url.
 */
enum err gh_issue_list(struct gh_client *c, const char *repo,
		       int (*fn)(void *ctx, const struct gh_issue *issue), void *ctx,
		       struct buf *errmsg) WARN_UNUSED;

/* Filters of the issues list, as GitHub's query parameters; NULL or "": not sent. */
struct gh_list_filter {
	const char *creator;  /* creator=LOGIN: only issues that login opened */
	const char *labels;   /* labels=a,b: only issues carrying every label named */
};

/*
 * gh_issue_list() with filter (may be NULL) added to the query, values
 * percent-encoded: GET /repos/{owner}/{repo}/issues?state=all&sort=created&
 * direction=asc&per_page=100[&creator=..][&labels=..].  *pages (may be NULL)
 * is set to the pages read (answers received), also on error.
 */
enum err gh_issue_list_filtered(struct gh_client *c, const char *repo,
				const struct gh_list_filter *filter,
				int (*fn)(void *ctx, const struct gh_issue *issue), void *ctx,
				int *pages, struct buf *errmsg) WARN_UNUSED;

/*
 * The comments of an issue, oldest first: GET /repos/{owner}/{repo}/issues/
 * {number}/comments?per_page=100, following Link rel="next".  fn gets each
 * comment's body (never NULL; "" when absent) and its created_at in ms (0
 * when absent); returns non-zero to stop.  Dry-run: no call, ERR_OK.
 * Errors: as gh_issue_list().
 */
enum err gh_comment_list(struct gh_client *c, const char *repo, int64_t number,
			 int (*fn)(void *ctx, const char *body, int64_t created_at_ms), void *ctx,
			 struct buf *errmsg) WARN_UNUSED;

/*
 * Is a comment carrying marker (a substring of its body) on the issue?  Reads
 * the comments as gh_comment_list() does, stopping at the first that does.
 * ERR_OK: one does; ERR_NOTFOUND: none does, or dry-run (no call; errmsg
 * untouched in both cases); else gh_comment_list()'s errors.
 */
enum err gh_comment_marked(struct gh_client *c, const char *repo, int64_t number,
			   const char *marker, struct buf *errmsg) WARN_UNUSED;

#endif
