/*
 * api.c - the API clients' one retry loop (api.h): the attempts, the waits
 * between them and the giving up live here once; each client brings its
 * policy and its judge.
 */
#include "api.h"

#include "backoff.h"
#include "log.h"
#include "banned.h"

int64_t api_backoff_ms(const struct api_policy *p, int n, unsigned int *seed)
{
	int64_t d = p->base_ms;

	if (p->jitter)
		return backoff_ms(n - 1, p->base_ms, p->cap_ms, seed);
	/* Without jitter (Slack's waits are exact): the same doubling, the cap as is. */
	for (int i = 1; i < n && d < p->cap_ms; i++)
		d *= 2;
	return d < p->cap_ms ? d : p->cap_ms;
}

static void pause_ms(const struct api_call *k, int64_t ms, int64_t *counter)
{
	if (ms <= 0)
		return;
	k->sleep_ms(k->clock_ctx, ms);
	*counter += ms;
}

/* Wait out the rate limit the client recorded; ERR_RETRY when it ends too late. */
static enum err wait_block(const struct api_call *k, struct api_tally *t, struct buf *errmsg)
{
	const struct api_policy *p = k->policy;
	int64_t wait;
	struct log_line *l;

	if (!k->blocked_until_ms)
		return ERR_OK;
	wait = k->blocked_until_ms(k->ctx) - k->now_ms(k->clock_ctx);
	if (wait <= 0)
		return ERR_OK;
	if (p->block_max_wait_ms > 0 && wait > p->block_max_wait_ms) {
		buf_setf(errmsg, "%s: rate limited by %s, retry after %lld s",
			 k->method ? k->method : p->name, p->name, (long long)((wait + 999) / 1000));
		return ERR_RETRY;
	}
	l = log_begin(LOG_INFO, p->block_log);
	if (k->method)
		log_str(l, "method", k->method);
	log_int(l, "wait_ms", wait);
	log_end(l);
	pause_ms(k, wait, &t->block_wait_ms);
	return ERR_OK;
}

/* res's Retry-After in s within the policy's limit; -1 when absent, malformed or too long. */
static int64_t retry_after_s(const struct api_call *k, const struct http_response *res)
{
	int64_t s = http_retry_after_s(res, k->now_ms(k->clock_ctx));
	int64_t max_ms = k->policy->retry_after_max_ms;

	return max_ms > 0 && s > max_ms / 1000 ? -1 : s;
}

/* errmsg becomes "giving up after N attempts: " and what it held. */
static void give_up(int attempts, struct buf *errmsg)
{
	struct buf detail = BUF_INIT;

	(void)buf_adds(&detail, buf_str(errmsg));
	buf_setf(errmsg, "giving up after %d attempts: %s", attempts, buf_str(&detail));
	buf_release(&detail);
}

enum err api_call(const struct api_call *k, struct http_response *res, struct api_tally *tally,
		  struct buf *errmsg)
{
	struct api_tally local_tally = { 0, 0, 0 };
	struct buf local_err = BUF_INIT;
	struct buf detail = BUF_INIT;  /* http_do()'s text: the judge words errmsg */
	enum err rc = ERR_OK;

	if (!tally)
		tally = &local_tally;
	if (!errmsg)
		errmsg = &local_err;
	for (int n = 1;; n++) {
		struct api_attempt a = { 0 };
		enum api_verdict v;

		rc = wait_block(k, tally, errmsg);
		if (rc == ERR_OK && k->prepare)
			rc = k->prepare(k->ctx, n, errmsg);
		if (rc != ERR_OK)
			goto out;
		a.n = n;
		buf_reset(&detail);
		a.hrc = http_do(*k->http, k->req, res, &detail);
		a.detail = buf_str(&detail);
		a.res = res;
		a.retry_after_s = retry_after_s(k, res);
		a.rc = ERR_OK;
		v = k->judge(k->ctx, &a, errmsg);
		if (v == API_DONE || v == API_FAILED) {
			rc = v == API_DONE ? ERR_OK : a.rc;
			goto out;
		}
		if (v == API_AMBIGUOUS) {
			rc = ERR_RETRY;
			goto out;
		}
		if (a.uncounted) {
			n--;
			continue;
		}
		if (n >= k->policy->max_attempts) {
			give_up(n, errmsg);
			rc = ERR_RETRY;
			goto out;
		}
		pause_ms(k, a.wait_ms == API_BACKOFF ? api_backoff_ms(k->policy, n, k->seed)
						     : a.wait_ms, &tally->retry_wait_ms);
		tally->retries++;
	}
out:
	buf_release(&detail);
	buf_release(&local_err);
	return rc;
}
