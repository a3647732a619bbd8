/*
 * worker.c - the queue worker the bridge and the janitor share (worker.h):
 * one thread, one loop (mark, may-act, step, idle), the stop signal that
 * cuts its sleeps short, and the gate that holds it back after store
 * failures.  What a step does is the handler's.
 */
#include "worker.h"

#include <pthread.h>
#include <stdlib.h>

#include "backoff.h"
#include "clock.h"
#include "xalloc.h"
#include "store/store_lock.h"
#include "banned.h"

struct worker {
	struct worker_handler h;
	pthread_t thread;
	int started;
	struct clock_stop stop;
	struct backoff_gate gate;  /* after store failures: worker_step()'s backoff */
	unsigned int seed;         /* the gate's jitter; rand_r(3) state of the stepping thread */
};

struct worker *worker_new(const struct worker_handler *h)
{
	struct worker *w = xcalloc(1, sizeof(*w));

	w->h = *h;
	clock_stop_init(&w->stop);
	w->gate = (struct backoff_gate)BACKOFF_GATE_INIT;
	w->seed = (unsigned int)clock_wall_ms();
	return w;
}

void worker_free(struct worker *w)
{
	if (!w)
		return;
	worker_stop(w);
	clock_stop_release(&w->stop);
	free(w);
}

int worker_stopping(struct worker *w)
{
	return clock_stop_requested(&w->stop);
}

void worker_sleep_ms(struct worker *w, int64_t ms)
{
	clock_stop_sleep_ms(&w->stop, ms);
}

/* may_act, and standby when it says no. */
static int acting(struct worker *w)
{
	if (!w->h.may_act || w->h.may_act(w->h.ctx))
		return 1;
	if (w->h.standby)
		w->h.standby(w->h.ctx);
	return 0;
}

int worker_step(struct worker *w)
{
	int64_t now_ms = w->h.now_ms(w->h.ctx);

	if (w->h.hold && w->h.hold(w->h.ctx, now_ms))
		return 0;
	if (backoff_gate_closed(&w->gate, now_ms))
		return -1;
	switch (w->h.step(w->h.ctx, now_ms)) {
	case WORKER_STORE_FAILED:
		return backoff_store_failed(&w->gate, w->h.queue, now_ms, w->h.retry_base_ms,
					    w->h.retry_max_ms, &w->seed);
	case WORKER_IDLE:
		return 0;
	case WORKER_WORKED:
		return 1;
	case WORKER_RECORDED:
		backoff_gate_ok(&w->gate);
		return 1;
	}
	return 0;
}

int worker_step_if_acting(struct worker *w)
{
	return acting(w) ? worker_step(w) : 0;
}

/* After a round that found nothing: the hold's end, else the queue, within WORKER_POLL_MS. */
static void idle(struct worker *w, struct store_mark mark)
{
	int64_t held = w->h.hold_until_ms ? w->h.hold_until_ms(w->h.ctx) : 0;

	if (held)
		held -= w->h.now_ms(w->h.ctx);
	if (held > 0)
		worker_sleep_ms(w, held < WORKER_POLL_MS ? held : WORKER_POLL_MS);
	else
		store_wait_kind_since(w->h.store, w->h.queue, mark, WORKER_POLL_MS);
}

/*
 * How long a worker that may not act sleeps: as long as its wait on an empty
 * queue would last (store_wait_kind_since() caps it on a shared store), so
 * a gain is seen as soon as before.
 */
static int64_t standby_ms(const struct worker *w)
{
	if (store_shared(w->h.store) && STORE_SHARED_WAIT_MS < WORKER_POLL_MS)
		return STORE_SHARED_WAIT_MS;
	return WORKER_POLL_MS;
}

static void *loop(void *arg)
{
	struct worker *w = arg;

	while (!worker_stopping(w)) {
		struct store_mark mark;
		int r;

		if (!acting(w)) {
			worker_sleep_ms(w, standby_ms(w));
			continue;
		}
		mark = store_mark(w->h.store);  /* before the step looks: what comes after wakes */
		r = worker_step(w);
		if (w->h.after)
			r = w->h.after(w->h.ctx, r);
		if (r == 0)
			idle(w, mark);
		else if (r < 0)
			worker_sleep_ms(w, WORKER_POLL_MS);
	}
	return NULL;
}

enum err worker_start(struct worker *w, struct buf *errmsg)
{
	if (w->started)
		return ERR_OK;
	if (pthread_create(&w->thread, NULL, loop, w)) {
		buf_setf(errmsg, "cannot start the %s worker thread", w->h.queue);
		return ERR_IO;
	}
	w->started = 1;
	return ERR_OK;
}

int worker_started(const struct worker *w)
{
	return w->started;
}

void worker_request_stop(struct worker *w)
{
	if (!w || !w->started)
		return;
	clock_stop_request(&w->stop);
	store_wake(w->h.store);
}

void worker_stop(struct worker *w)
{
	if (!w || !w->started)
		return;
	worker_request_stop(w);
	pthread_join(w->thread, NULL);
	w->started = 0;
}
