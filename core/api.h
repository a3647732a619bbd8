/*
 * api.h - the one retry loop of the API clients (GitHub, Slack, Kubernetes)
 * over http_client: wait out a rate limit, send, let the client judge the
 * answer, then wait and try again or give up.  How often and how long to wait
 * is data (struct api_policy); what an answer means stays in each client's
 * judge.  What one event retries here and what goes back to its queue:
 * docs/DESIGN.md, "One retry layer".
 */
#ifndef AB_API_H
#define AB_API_H

#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "http_client.h"

/* How one attempt ended, as the client's judge tells it. */
enum api_verdict {
	API_DONE,       /* succeeded: the call ends in ERR_OK */
	API_FAILED,     /* failed for good: the call ends in the attempt's rc, not retried */
	API_TRANSIENT,  /* may succeed later: tried again after the attempt's wait_ms, while
			 * max_attempts last */
	API_AMBIGUOUS,  /* sent, answer lost, and not to be sent again (a create): the call ends
			 * in ERR_RETRY; the judge has noted the doubt, the client resolves it */
};

/* wait_ms of an API_TRANSIENT attempt: the policy's backoff for its number. */
#define API_BACKOFF (-1)

/* A client's retry policy; constant while a call runs. */
struct api_policy {
	const char *name;            /* "github", "slack": the rate-limit messages' */
	int max_attempts;            /* attempts of one call, counted ones (>= 1) */
	int64_t base_ms;             /* API_BACKOFF after attempt 1; doubled per attempt */
	int64_t cap_ms;              /* ... capped at this */
	int jitter;                  /* non-zero: equal jitter, the wait uniform in [d/2, d]
				      * (core/backoff.h backoff_ms()); 0: d exactly */
	int64_t retry_after_max_ms;  /* a longer Retry-After counts as absent (-1); 0: no limit */
	int64_t block_max_wait_ms;   /* a rate limit ending later fails the call (ERR_RETRY)
				      * without waiting; 0: always waited out */
	const char *block_log;       /* the info line of a rate-limit wait, e.g. "waiting for
				      * github rate limit" */
};

/* One attempt as the loop hands it to the judge, and the judge's answer. */
struct api_attempt {
	int n;                             /* 1 for the first counted attempt */
	enum err hrc;                      /* http_do()'s result */
	const char *detail;                /* http_do()'s error text, "" on ERR_OK, valid during
					    * the judge; not in errmsg (it names the URL, which
					    * may be secret): the judge words errmsg */
	const struct http_response *res;   /* its answer (status 0 when none) */
	int64_t retry_after_s;             /* res's Retry-After (http_retry_after_s()) within the
					    * policy's limit; -1: absent, malformed or too long */
	/* Set by the judge: */
	enum err rc;                       /* API_FAILED: the call's error */
	int64_t wait_ms;                   /* API_TRANSIENT: ms to wait before the next attempt
					    * (0: none, a rate limit the judge recorded is waited
					    * out anyway), or API_BACKOFF */
	int uncounted;                     /* API_TRANSIENT: not counted against max_attempts
					    * and tried again at once (a renewed credential) */
};

/* Waits a call made, for a client's counters. */
struct api_tally {
	int64_t block_wait_ms;    /* slept for a rate limit (blocked_until) */
	int64_t retry_wait_ms;    /* slept between attempts (backoff, a judge's wait_ms) */
	uint64_t retries;         /* counted attempts after the first */
};

/*
 * One API call: the request, the policy and the client's hooks.  Every hook
 * gets ctx.  The request may be changed by prepare between attempts (a new
 * Authorization header); its strings must live until api_call() returns.
 */
struct api_call {
	const struct api_policy *policy;
	struct http_client *const *http;  /* read at each attempt: prepare may replace the client
					   * (Kubernetes: an exec plugin's new identity) */
	const struct http_request *req;
	const char *method;          /* the API method in messages and logs ("chat.postMessage");
				      * NULL: none */
	void *ctx;
	int64_t (*now_ms)(void *clock_ctx);          /* ms since the epoch, UTC */
	void (*sleep_ms)(void *clock_ctx, int64_t ms);
	void *clock_ctx;
	unsigned int *seed;          /* rand_r(3) state for jitter; the caller's thread owns it */
	/*
	 * No request before this time (ms, the same clock): a rate limit the
	 * client recorded.  Read before each attempt.  NULL: never blocked.
	 */
	int64_t (*blocked_until_ms)(void *ctx);
	/*
	 * Before each attempt, after any rate-limit wait (pace, authorise,
	 * check for a stop): ERR_OK sends; any other code ends the call with it
	 * (errmsg says why).  attempt counts from 1.  NULL: always send.
	 */
	enum err (*prepare)(void *ctx, int attempt, struct buf *errmsg);
	/* Judge an attempt (required); errmsg carries the detail of any verdict but API_DONE. */
	enum api_verdict (*judge)(void *ctx, struct api_attempt *a, struct buf *errmsg);
};

/*
 * Perform k: at most policy->max_attempts counted attempts, each preceded by
 * the wait for a recorded rate limit, then prepare, http_do() and judge.
 * res is reset by each attempt and holds the last answer (the caller
 * initialises and releases it).  tally, when not NULL, is added to.
 * Returns ERR_OK (API_DONE), the judge's rc (API_FAILED), ERR_RETRY
 * (API_AMBIGUOUS; or transient still after max_attempts, errmsg then
 * "giving up after N attempts: " and the last attempt's detail; or a rate
 * limit ending past block_max_wait_ms: "METHOD: rate limited by NAME, retry
 * after S s"), or prepare's error.  errmsg may be NULL.
 */
enum err api_call(const struct api_call *k, struct http_response *res, struct api_tally *tally,
		  struct buf *errmsg) WARN_UNUSED;

/*
 * The wait before the attempt after attempt n (n >= 1) of p: base_ms *
 * 2^(n-1) capped at cap_ms, with p's jitter (seed as in struct api_call).
 */
int64_t api_backoff_ms(const struct api_policy *p, int n, unsigned int *seed);

#endif
