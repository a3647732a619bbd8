/*
 * worker.h - the one queue worker of the bridge and the janitor: a thread
 * that, while this replica may act, takes work from its store queue one step
 * at a time, waits on the queue when there is none, and backs off when the
 * store fails.  The jobs supply a handler (struct worker_handler): the step
 * and the hooks around it; the thread, the stop signal, the may-act check,
 * the store-failure gate (core/backoff.h) and the loop are here.
 */
#ifndef AB_WORKER_H
#define AB_WORKER_H

#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "store/store_events.h"

/* The longest the worker waits on its queue, its stop or a hold before it looks again, in ms. */
#define WORKER_POLL_MS INT64_C(1000)

/* What a handler's step did (worker_handler.step). */
enum worker_did {
	WORKER_STORE_FAILED = -1,  /* the store could not give work or record an outcome */
	WORKER_IDLE = 0,           /* nothing was due */
	WORKER_WORKED = 1,         /* work done that recorded no event's outcome: gate unchanged */
	WORKER_RECORDED = 2,       /* an event's outcome was recorded: the store works again */
};

/*
 * What a job supplies.  Every hook is called with ctx, on the worker's
 * thread (or the thread of a test that calls worker_step()), one at a time.
 * Copied by worker_new(); the strings and ctx must outlive the worker.
 */
struct worker_handler {
	/*
	 * The queue's kind in the store ("bridge", "janitor"): the wait looks
	 * at its events only.  Also the worker's name in its log lines
	 * ("cannot start the QUEUE worker thread", "store failing: worker backs
	 * off" worker=QUEUE).
	 */
	const char *queue;
	struct store *store;    /* the queue's store; required, outlives the worker */
	void *ctx;
	/* The job's clock in ms since the epoch, UTC (test hooks: virtual time); required. */
	int64_t (*now_ms)(void *ctx);
	/*
	 * The store-failure gate's schedule: after n store failures in a row
	 * no step is taken for backoff_ms(n - 1, retry_base_ms, retry_max_ms)
	 * (core/backoff.h: doubling, capped, jittered).  Both > 0.
	 */
	int64_t retry_base_ms;
	int64_t retry_max_ms;
	/*
	 * May this replica act now (the Lease, the store's worker lock)?
	 * NULL: always.  Asked once per round of the thread, before the step,
	 * and by worker_step_if_acting(); never by worker_step().
	 */
	int (*may_act)(void *ctx);
	/*
	 * Called each time may_act says no (gauges kept true, a sweep made
	 * due); may be NULL.  The thread then sleeps (cut short by a stop) as
	 * long as a wait on an empty queue lasts, WORKER_POLL_MS or, on a shared
	 * store, STORE_SHARED_WAIT_MS, and asks again: not a wait on the queue,
	 * which returns at once while an event is due (another replica's to
	 * drain).
	 */
	void (*standby)(void *ctx);
	/*
	 * A hold the job keeps (the bridge's settle hold): non-zero while no
	 * work may be taken at now_ms; worker_step() then answers 0 before
	 * the gate.  NULL: none.
	 */
	int (*hold)(void *ctx, int64_t now_ms);
	/*
	 * When that hold ends, in ms of now_ms's clock; 0: none.  After an
	 * idle round the thread sleeps until then (at most WORKER_POLL_MS)
	 * instead of waiting on the queue.  NULL: never held.
	 */
	int64_t (*hold_until_ms)(void *ctx);
	/*
	 * One step at now_ms (the time the round began): at most one unit of
	 * work (one event), its outcome recorded, the job's gauges updated.
	 * Required.  Returns what it did (enum worker_did).
	 */
	enum worker_did (*step)(void *ctx, int64_t now_ms);
	/*
	 * The thread's work after each of its worker_step() calls (not called
	 * for other callers of worker_step()): given what it returned, r (1, 0,
	 * or -1, also for a closed gate or a hold's 0), returns the round's
	 * result, which picks the idle: > 0 looks again at once, 0 waits on
	 * the queue (or the hold), < 0 sleeps WORKER_POLL_MS.  The janitor's
	 * clicks, outbox and sweep.  NULL: r.
	 */
	int (*after)(void *ctx, int r);
};

struct worker;

/*
 * A worker for h (copied); never NULL.  The stop signal and the gate exist
 * from here on, so worker_step(), worker_stopping() and worker_sleep_ms()
 * work without a thread; worker_start() starts it.
 */
struct worker *worker_new(const struct worker_handler *h);
/* worker_stop() and free; w may be NULL. */
void worker_free(struct worker *w);

/*
 * Start the thread.  Each round, until a stop: ask may_act (no: standby,
 * then sleep, see standby); else take the queue's mark (store_mark()),
 * worker_step(), then after; then idle by the round's result: > 0 go on at
 * once; 0 sleep until the hold ends (at most WORKER_POLL_MS) when
 * hold_until_ms says one lasts, else wait on the queue's kind until the
 * mark changes (an enqueue, store_wake()), its earliest event is due, or
 * WORKER_POLL_MS (store_wait_kind_since()); < 0 sleep WORKER_POLL_MS.  A
 * second start is a no-op.  Errors: ERR_IO when the thread cannot start
 * (errmsg says so).
 */
enum err worker_start(struct worker *w, struct buf *errmsg) WARN_UNUSED;
/*
 * Ask the thread to stop without waiting: worker_stopping() turns true, its
 * sleeps (worker_sleep_ms()) and its wait on the queue (store_wake()) end
 * now.  The step in progress finishes.  Nothing without a started thread;
 * w may be NULL.  Thread-safe.
 */
void worker_request_stop(struct worker *w);
/* worker_request_stop(), then join the thread.  Nothing without one; w may be NULL. */
void worker_stop(struct worker *w);
/* Non-zero from a worker_start() that started the thread until worker_stop() joined it. */
int worker_started(const struct worker *w);
/* Non-zero once a stop was requested (the job's clients send nothing after it).  Thread-safe. */
int worker_stopping(struct worker *w);
/* Sleep ms milliseconds on the worker's stop: a stop requested (before or during) ends it. */
void worker_sleep_ms(struct worker *w, int64_t ms);

/*
 * One step on the calling thread (tests, and the thread's rounds), without
 * asking may_act: at now_ms() 0 while hold says so; -1 at once while the
 * gate is closed (after store failures, until their backoff passed: no step
 * called, nothing touched); else the handler's step.  Its WORKER_STORE_FAILED
 * closes the gate for the next backoff and logs "store failing: worker backs
 * off" (backoff_store_failed()); its WORKER_RECORDED opens it and restarts
 * the count of failures.  Returns 1 (the step worked), 0 (idle or held), -1
 * (the store failed, or the gate is closed).
 */
int worker_step(struct worker *w);
/* may_act first: when it says no, standby and 0; else worker_step(). */
int worker_step_if_acting(struct worker *w);

#endif
