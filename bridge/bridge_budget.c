/*
 * bridge_budget.c - the GitHub content budget across processes and
 * replicas (issue 19): the time of each mutating request is recorded in the
 * store before it is sent (store_budget_note()), and what was recorded in
 * the last hour is loaded into the GitHub client at the first step and at
 * each gain of the lead (gh_budget_restore()).  Part of the reconciler
 * (bridge.c); the parts share bridge_int.h.
 */
#include "bridge/bridge_int.h"

#include <stdint.h>
#include <stdlib.h>

#include "core/log.h"
#include "store/store_budget.h"
#include "core/xalloc.h"
#include "core/banned.h"

enum err bridge_budget_note(void *ctx, const char *owner, int64_t sent_ms, struct buf *errmsg)
{
	struct bridge *b = ctx;

	return store_budget_note(b->opts.store, owner, sent_ms,
				 sent_ms - gh_budget_span_ms(b->gh), errmsg);
}

/* How many of v[0..n) were sent in the minute before now_ms (the client's minute). */
static size_t last_minute(const struct store_budget_call *v, size_t n, int64_t minute_ms,
			  int64_t now_ms)
{
	size_t k = 0;

	for (size_t i = 0; i < n; i++)
		k += v[i].sent_ms > now_ms - minute_ms;
	return k;
}

int bridge_budget_load(struct bridge *b, int64_t now_ms)
{
	int64_t span_ms = gh_budget_span_ms(b->gh);
	struct store_budget_call *v = NULL;
	struct gh_spent *spent;
	struct buf errmsg = BUF_INIT;
	struct log_line *l;
	size_t n = 0;

	if (b->budget_loaded)
		return 0;
	if (store_budget_load(b->opts.store, now_ms - span_ms, &v, &n, &errmsg) != ERR_OK) {
		l = log_begin(LOG_ERROR, "cannot read the github budget spent before: no github "
					 "call until it is read");
		log_str(l, "detail", buf_str(&errmsg));
		log_end(l);
		buf_release(&errmsg);
		return -1;
	}
	spent = xcalloc(n ? n : 1, sizeof(*spent));
	for (size_t i = 0; i < n; i++) {
		spent[i].owner = v[i].owner;
		spent[i].sent_ms = v[i].sent_ms;
	}
	gh_budget_restore(b->gh, spent, n);
	b->budget_loaded = 1;
	if (n) {
		l = log_begin(LOG_INFO, "github content budget spent before restored");
		log_int(l, "calls_last_minute", (int64_t)last_minute(v, n, span_ms / 60, now_ms));
		log_int(l, "calls_last_hour", (int64_t)n);
		log_end(l);
	}
	free(spent);
	store_budget_calls_free(v, n);
	return 0;
}
