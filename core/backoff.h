/*
 * backoff.h - the retry schedule of the queue workers (bridge, janitor): a base
 * delay doubled per failure, capped, with "equal jitter" (half the delay fixed,
 * half random), so that replicas and events retried together spread out.
 *
 * A backoff_gate holds a worker back after failures of its own (a store that
 * cannot record outcomes): closed until the backoff of the failures in a row
 * has passed, opened again by the first success.
 */
#ifndef AB_BACKOFF_H
#define AB_BACKOFF_H

#include <stdint.h>

/*
 * The wait before retry number attempts + 1, in ms: base_ms * 2^attempts capped
 * at max_ms, then a uniform value in [d/2, d].  attempts < 0 counts as 0;
 * base_ms <= 0 gives 0.  seed is rand_r(3)'s state, owned by the caller's thread.
 */
int64_t backoff_ms(int attempts, int64_t base_ms, int64_t max_ms, unsigned int *seed);

struct backoff_gate {
	int failures;       /* failures in a row */
	int64_t until_ms;   /* closed before this time (the caller's clock) */
};

#define BACKOFF_GATE_INIT { 0, 0 }

/* 1 while the gate is closed at now_ms (after a failure, before its backoff ends). */
int backoff_gate_closed(const struct backoff_gate *g, int64_t now_ms);
/*
 * Record a failure at now_ms: the gate closes for backoff_ms(failures so far, base_ms,
 * max_ms, seed).  Returns that wait in ms.
 */
int64_t backoff_gate_fail(struct backoff_gate *g, int64_t now_ms, int64_t base_ms,
			  int64_t max_ms, unsigned int *seed);
/*
 * backoff_gate_fail() for a queue worker whose store failed (it could not give an event or
 * record an outcome), logged at warn as "store failing: WORKER backs off" with the failures
 * in a row and the wait.  Returns -1, what bridge_step() and janitor_step() answer then.
 */
int backoff_store_failed(struct backoff_gate *g, const char *worker, int64_t now_ms,
			 int64_t base_ms, int64_t max_ms, unsigned int *seed);
/* Record a success: the gate opens and the count of failures in a row restarts. */
void backoff_gate_ok(struct backoff_gate *g);

#endif
