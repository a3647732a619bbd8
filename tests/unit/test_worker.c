/*
 * test_worker.c - the queue worker (core/worker.h) with a handler of the
 * test's own on a real in-memory store: the step is called until idle, an
 * idle worker waits until its queue is woken, a failing store closes the gate
 * for its backoff, a replica that may not act takes no step, and a stop joins
 * the thread at once from each of its waits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "core/worker.h"
#include "tests/unit/helpers/store_fixture.h"

#define QUEUE "fake"

/*
 * The handler's state.  The counters are read by the test while the worker's
 * thread writes them: atomics.  script: the results of the first steps (then
 * the queue decides: an event taken and done is WORKER_RECORDED, none idle).
 */
struct fake {
	struct store *st;
	struct worker *w;
	int64_t now;         /* the clock in ms; 0: the wall clock (events are due by it) */
	int acting;          /* what may_act answers */
	int steps, standbys, afters;
	enum worker_did script[8];
	int nscript;
};

static int load(int *p)
{
	return __atomic_load_n(p, __ATOMIC_SEQ_CST);
}

static void bump(int *p)
{
	__atomic_add_fetch(p, 1, __ATOMIC_SEQ_CST);
}

static int64_t fake_now(void *ctx)
{
	struct fake *f = ctx;

	return f->now ? f->now : clock_wall_ms();
}

static int fake_may_act(void *ctx)
{
	struct fake *f = ctx;

	return __atomic_load_n(&f->acting, __ATOMIC_SEQ_CST);
}

static void fake_standby(void *ctx)
{
	struct fake *f = ctx;

	bump(&f->standbys);
}

static enum worker_did fake_step(void *ctx, int64_t now_ms)
{
	struct fake *f = ctx;
	int n = load(&f->steps);
	struct store_event ev;
	enum err rc;

	bump(&f->steps);
	if (n < f->nscript)
		return f->script[n];
	rc = store_next_event(f->st, QUEUE, now_ms, &ev);
	if (rc == ERR_NOTFOUND)
		return WORKER_IDLE;
	assert_int_equal(rc, ERR_OK);
	assert_int_equal(store_event_done(f->st, ev.id, NULL, NULL), ERR_OK);
	store_event_release(&ev);
	return WORKER_RECORDED;
}

static int fake_after(void *ctx, int r)
{
	struct fake *f = ctx;

	bump(&f->afters);
	return r;
}

/* A worker on a fresh in-memory store: acting, base 1 s, cap 8 s. */
static void fake_init(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	f->st = sfx_open_ok(":memory:");
	f->acting = 1;
	f->w = worker_new(&(struct worker_handler){
		.queue = QUEUE, .store = f->st, .ctx = f, .now_ms = fake_now,
		.retry_base_ms = 1000, .retry_max_ms = 8000, .may_act = fake_may_act,
		.standby = fake_standby, .step = fake_step,
		.after = fake_after,
	});
}

static void fake_release(struct fake *f)
{
	worker_free(f->w);
	store_close(f->st);
}

/* Wait (at most 3 s) until *p reaches n; the ms it took. */
static int64_t wait_for(int *p, int n)
{
	int64_t t0 = clock_mono_us();

	while (load(p) < n) {
		if (clock_mono_us() - t0 > 3000000)
			fail_msg("%d not reached within 3 s (%d)", n, load(p));
		usleep(2000);
	}
	return (clock_mono_us() - t0) / 1000;
}

static void start(struct fake *f)
{
	struct buf msg = BUF_INIT;

	assert_int_equal(worker_start(f->w, &msg), ERR_OK);
	assert_true(worker_started(f->w));
	assert_int_equal(worker_start(f->w, &msg), ERR_OK);  /* a second start: nothing */
	buf_release(&msg);
}

/* 300 ms later, *p is still n: the worker waits (its waits last WORKER_POLL_MS). */
static void still(int *p, int n)
{
	usleep(300000);
	assert_int_equal(load(p), n);
}

/* Stop, which joins the thread within max_ms, and release f. */
static void stop_release(struct fake *f, int64_t max_ms)
{
	int64_t t0 = clock_mono_us();

	worker_stop(f->w);
	assert_false(worker_started(f->w));
	assert_true(clock_mono_us() - t0 < max_ms * 1000);
	fake_release(f);
}

static void steps_until_idle(void **state)
{
	struct fake f;
	(void)state;

	/* On the caller's thread: the step's answers, mapped. */
	fake_init(&f);
	f.script[0] = WORKER_WORKED;
	f.script[1] = WORKER_RECORDED;
	f.nscript = 2;
	assert_int_equal(worker_step(f.w), 1);
	assert_int_equal(worker_step(f.w), 1);
	assert_int_equal(worker_step(f.w), 0);
	assert_int_equal(f.steps, 3);
	assert_int_equal(f.afters, 0);  /* the thread's hook only */
	fake_release(&f);

	/* The thread: three events, then one idle step, then it waits. */
	fake_init(&f);
	for (int i = 0; i < 3; i++) {
		char key[16];
		snprintf(key, sizeof(key), "k%d", i);
		sfx_enq1(f.st, QUEUE, key);
	}
	start(&f);
	wait_for(&f.steps, 4);
	still(&f.steps, 4);
	assert_int_equal(load(&f.afters), 4);
	assert_int_equal(store_pending_count(f.st, QUEUE), 0);
	stop_release(&f, 500);
}

static void idle_waits_until_woken(void **state)
{
	struct fake f;
	int64_t took;
	(void)state;

	fake_init(&f);
	start(&f);
	wait_for(&f.steps, 1);
	still(&f.steps, 1);  /* waiting on the queue, not polling */

	sfx_enq1(f.st, QUEUE, "k");  /* the enqueue ends the wait, long before its second */
	took = wait_for(&f.steps, 3);  /* the event, then idle again */
	assert_true(took < 500);
	assert_int_equal(store_pending_count(f.st, QUEUE), 0);

	store_wake(f.st);  /* a wake-up too */
	took = wait_for(&f.steps, 4);
	assert_true(took < 500);
	still(&f.steps, 4);
	stop_release(&f, 500);
}

/* A step on the caller's thread: the clock moved on by `later` ms first. */
static const struct backoff_step {
	int64_t later;
	int rc;     /* what worker_step() returns */
	int steps;  /* the handler's steps after it; -1: not asserted */
} backoff_steps[] = {
	/* The first failure closes the gate for 0.5-1 s: no step meanwhile. */
	{ 0, -1, -1 },
	{ 499, -1, 1 },
	{ 501, -1, 2 },  /* the second: 1-2 s */
	{ 999, -1, 2 },
	/* Work that recorded no outcome leaves the count: the third failure waits 2-4 s. */
	{ 1001, 1, -1 },
	{ 0, -1, -1 },
	{ 1999, -1, 4 },
	/* An outcome recorded opens the gate: the next failure waits 0.5-1 s again. */
	{ 2001, 1, -1 },
	{ 0, -1, 6 },
	{ 1000, -1, 7 },
};

/* f's worker, its first step failing on the store, started and past that step. */
static void start_failing(struct fake *f)
{
	fake_init(f);
	f->script[0] = WORKER_STORE_FAILED;
	f->nscript = 1;
	start(f);
	wait_for(&f->steps, 1);
}

static void failing_step_backs_off(void **state)
{
	struct fake f;
	(void)state;

	fake_init(&f);
	f.now = 1700000000000;
	for (int i = 0; i < 8; i++)
		f.script[i] = WORKER_STORE_FAILED;
	f.script[2] = WORKER_WORKED;
	f.script[4] = WORKER_RECORDED;
	f.nscript = 8;
	for (size_t i = 0; i < sizeof(backoff_steps) / sizeof(backoff_steps[0]); i++) {
		const struct backoff_step *t = &backoff_steps[i];
		int rc;

		f.now += t->later;
		rc = worker_step(f.w);
		if (rc != t->rc || (t->steps >= 0 && f.steps != t->steps))
			fail_msg("step %zu: returned %d after %d steps", i, rc, f.steps);
	}
	fake_release(&f);

	/* The thread sleeps after a failure: with a long backoff, one step in 300 ms. */
	start_failing(&f);
	sfx_enq1(f.st, QUEUE, "k");  /* not even an enqueue: the gate is closed */
	still(&f.steps, 1);
	assert_int_equal(store_pending_count(f.st, QUEUE), 1);
	stop_release(&f, 500);
}

static void no_step_unless_acting(void **state)
{
	struct fake f;
	(void)state;

	fake_init(&f);
	f.acting = 0;
	sfx_enq1(f.st, QUEUE, "k");
	assert_int_equal(worker_step_if_acting(f.w), 0);
	assert_int_equal(f.steps, 0);
	assert_int_equal(f.standbys, 1);

	/* The thread asks once a second, the event due or not (the queue's wait would not wait). */
	start(&f);
	wait_for(&f.standbys, 2);
	still(&f.standbys, 2);
	assert_int_equal(load(&f.steps), 0);
	assert_int_equal(load(&f.afters), 0);
	assert_int_equal(store_pending_count(f.st, QUEUE), 1);

	/* Acting again: the event is taken within the sleep's second. */
	__atomic_store_n(&f.acting, 1, __ATOMIC_SEQ_CST);
	wait_for(&f.steps, 2);
	assert_int_equal(store_pending_count(f.st, QUEUE), 0);
	stop_release(&f, 500);
}

/* A stop ends each of the thread's waits at once: the queue, the standby sleep, the error sleep. */
static void stop_joins_promptly(void **state)
{
	struct fake f;
	(void)state;

	fake_init(&f);
	worker_request_stop(f.w);  /* not started: nothing to stop, nothing requested */
	assert_false(worker_stopping(f.w));
	start(&f);
	wait_for(&f.steps, 1);
	usleep(50000);
	{
		int64_t t0 = clock_mono_us();
		worker_stop(f.w);  /* from the wait on the queue */
		assert_true(clock_mono_us() - t0 < 200000);
	}
	assert_true(worker_stopping(f.w));
	stop_release(&f, 200);  /* a second stop: nothing */

	fake_init(&f);
	f.acting = 0;
	start(&f);
	wait_for(&f.standbys, 1);
	usleep(50000);
	stop_release(&f, 200);

	start_failing(&f);
	usleep(50000);
	worker_request_stop(f.w);  /* without waiting; worker_sleep_ms() returns at once then */
	assert_true(worker_stopping(f.w));
	{
		int64_t t0 = clock_mono_us();
		worker_sleep_ms(f.w, 60000);
		assert_true(clock_mono_us() - t0 < 200000);
	}
	stop_release(&f, 200);
	worker_free(NULL);
}

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	cmocka_unit_test(steps_until_idle),
	cmocka_unit_test(idle_waits_until_woken),
	cmocka_unit_test(failing_step_backs_off),
	cmocka_unit_test(no_step_unless_acting),
	cmocka_unit_test(stop_joins_promptly))
