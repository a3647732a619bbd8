/*
 * backoff.c - exponential backoff with equal jitter, and the gate a worker
 * keeps after failures of its own (backoff.h).
 */
#include "backoff.h"

#include <stdlib.h>

#include "log.h"

int64_t backoff_ms(int attempts, int64_t base_ms, int64_t max_ms, unsigned int *seed)
{
	int64_t d = base_ms, half;

	if (d <= 0)
		return 0;
	for (int i = 0; i < attempts && d < max_ms; i++)
		d *= 2;
	if (d > max_ms)
		d = max_ms;
	half = d / 2;
	return half + (half > 0 ? (int64_t)rand_r(seed) % (half + 1) : 0);
}

int backoff_gate_closed(const struct backoff_gate *g, int64_t now_ms)
{
	return g->failures > 0 && now_ms < g->until_ms;
}

int64_t backoff_gate_fail(struct backoff_gate *g, int64_t now_ms, int64_t base_ms,
			  int64_t max_ms, unsigned int *seed)
{
	int64_t wait = backoff_ms(g->failures, base_ms, max_ms, seed);

	g->failures++;
	g->until_ms = now_ms + wait;
	return wait;
}

int backoff_store_failed(struct backoff_gate *g, const char *worker, int64_t now_ms,
			 int64_t base_ms, int64_t max_ms, unsigned int *seed)
{
	int64_t wait = backoff_gate_fail(g, now_ms, base_ms, max_ms, seed);
	struct log_line *l = log_begin(LOG_WARN, "store failing: worker backs off");

	log_str(l, "worker", worker);
	log_int(l, "failures", g->failures);
	log_int(l, "retry_in_ms", wait);
	log_end(l);
	return -1;
}

void backoff_gate_ok(struct backoff_gate *g)
{
	g->failures = 0;
	g->until_ms = 0;
}
