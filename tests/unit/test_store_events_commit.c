/*
 * test_store_events_commit.c - the inbox's commits (core/store_events.c): a failed commit
 * stores nothing, group commit from 8 threads, a failed group fails every batch in it,
 * durability across _exit, wait/wake.  Failures are injected with triggers added through
 * a second connection.  Each test gets a fresh store on the engine of AB_TEST_STORE
 * (store_fixture.h).
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

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "tests/unit/helpers/clock.h"
#include "tests/unit/helpers/store_fixture.h"

static void failed_commit_stores_nothing(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_store(state);
	struct store_event evs[3] = { sfx_mkev("bridge", "default", "k1", "firing"),
				      sfx_mkev("bridge", "default", "k2", "firing"),
				      sfx_mkev("bridge", "default", "boom", "firing") };
	struct buf msg = BUF_INIT;
	struct store_stats stats;

	sfx_inject(f->path, "events", "NEW.key = 'boom'", "injected insert failure");
	assert_int_equal(store_enqueue(st, evs, 3, &msg), ERR_DB);
	sfx_assert_contains(buf_str(&msg), "injected insert failure");
	sfx_assert_contains(buf_str(&msg), "nothing of this group commit was stored");
	for (int i = 0; i < 3; i++)
		assert_int_equal(evs[i].id, 0);
	assert_int_equal(store_pending_count(st, "bridge"), 0);
	store_stats(st, &stats);
	assert_int_equal(stats.failed_commits, 1);
	assert_int_equal(stats.commits, 0);
	/* The store goes on working after a failed group. */
	assert_true(sfx_enq1(st, "bridge", "k3") > 0);
	assert_int_equal(store_pending_count(st, "bridge"), 1);
	buf_release(&msg);
}

/* ---- group commit and durability ---- */

#define GC_THREADS 8
#define GC_CALLS 200

struct gc_arg {
	struct store *st;
	int idx;
	int64_t ids[GC_CALLS];
	int done;
	int64_t deadline_ms;
};

static void *gc_thread(void *p)
{
	struct gc_arg *a = p;
	char key[32];

	for (int i = 0; i < GC_CALLS && tclock_mono_ms() < a->deadline_ms; i++) {
		snprintf(key, sizeof(key), "t%d-%d", a->idx, i);
		struct store_event ev = sfx_mkev("bridge", "default", key, "firing");
		if (store_enqueue(a->st, &ev, 1, NULL) != ERR_OK)
			break;
		a->ids[i] = ev.id;
		a->done++;
	}
	return NULL;
}

static int cmp_i64(const void *x, const void *y)
{
	int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;

	return (a > b) - (a < b);
}

static void group_commit_from_8_threads(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct gc_arg *args = calloc(GC_THREADS, sizeof(*args));
	pthread_t th[GC_THREADS];
	int64_t *all = calloc(GC_THREADS * GC_CALLS, sizeof(*all));
	int64_t deadline = tclock_mono_ms() + 60000;
	struct store_stats stats;

	for (int t = 0; t < GC_THREADS; t++) {
		args[t].st = st;
		args[t].idx = t;
		args[t].deadline_ms = deadline;
		assert_int_equal(pthread_create(&th[t], NULL, gc_thread, &args[t]), 0);
	}
	for (int t = 0; t < GC_THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < GC_THREADS; t++) {
		assert_int_equal(args[t].done, GC_CALLS);
		memcpy(all + t * GC_CALLS, args[t].ids, sizeof(args[t].ids));
	}
	qsort(all, GC_THREADS * GC_CALLS, sizeof(*all), cmp_i64);
	assert_true(all[0] > 0);
	for (int i = 1; i < GC_THREADS * GC_CALLS; i++)
		assert_true(all[i] > all[i - 1]);
	assert_int_equal(store_pending_count(st, "bridge"), GC_THREADS * GC_CALLS);
	store_stats(st, &stats);
	assert_int_equal(stats.batches, GC_THREADS * GC_CALLS);
	assert_int_equal(stats.events, GC_THREADS * GC_CALLS);
	assert_int_equal(stats.failed_commits, 0);
	assert_true(stats.commits >= 1);
	assert_true(stats.commits < stats.batches);
	print_message("group commit: %llu commits for %llu calls\n",
		      (unsigned long long)stats.commits, (unsigned long long)stats.batches);
	store_close(st);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(DISTINCT id) FROM events"),
			 GC_THREADS * GC_CALLS);
	free(all);
	free(args);
}

#define GF_THREADS 4
#define GF_CALLS 60

struct gf_arg {
	struct store *st;
	int idx;
	int64_t ids[GF_CALLS];
	enum err rc[GF_CALLS];
	char msg[GF_CALLS][16];
};

/* Thread 0 sends a poisoned event every 3rd call; the others are all valid. */
static void *gf_thread(void *p)
{
	struct gf_arg *a = p;
	struct buf msg = BUF_INIT;
	char key[32];

	for (int i = 0; i < GF_CALLS; i++) {
		snprintf(key, sizeof(key), "%s%d-%d", a->idx == 0 && i % 3 == 0 ? "boom" : "k",
			 a->idx, i);
		struct store_event ev = sfx_mkev("bridge", "default", key, "firing");
		buf_reset(&msg);
		a->rc[i] = store_enqueue(a->st, &ev, 1, &msg);
		a->ids[i] = ev.id;
		snprintf(a->msg[i], sizeof(a->msg[i]), "%s", strstr(buf_str(&msg), "injected")
								? "injected" : "");
	}
	buf_release(&msg);
	return NULL;
}

static void failed_group_fails_every_batch_in_it(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct gf_arg *args = calloc(GF_THREADS, sizeof(*args));
	pthread_t th[GF_THREADS];
	struct store_stats stats;
	int64_t ok = 0, failed = 0;

	sfx_inject(f->path, "events", "NEW.key LIKE 'boom%'", "injected insert failure");
	for (int t = 0; t < GF_THREADS; t++) {
		args[t].st = st;
		args[t].idx = t;
		assert_int_equal(pthread_create(&th[t], NULL, gf_thread, &args[t]), 0);
	}
	for (int t = 0; t < GF_THREADS; t++)
		pthread_join(th[t], NULL);
	for (int t = 0; t < GF_THREADS; t++) {
		for (int i = 0; i < GF_CALLS; i++) {
			if (args[t].rc[i] == ERR_OK) {
				assert_true(args[t].ids[i] > 0);
				ok++;
				continue;
			}
			/* Poisoned or merely in the same group: same error, nothing stored. */
			assert_int_equal(args[t].rc[i], ERR_DB);
			assert_int_equal(args[t].ids[i], 0);
			assert_string_equal(args[t].msg[i], "injected");
			failed++;
		}
	}
	store_stats(st, &stats);
	assert_int_equal(failed, GF_THREADS * GF_CALLS - (int64_t)stats.batches);
	assert_int_equal(ok, (int64_t)stats.batches);
	assert_true(failed >= GF_CALLS / 3);
	assert_int_equal(stats.failed_commits >= 1, 1);
	assert_int_equal(store_pending_count(st, "bridge"), ok);
	print_message("group failure: %lld of %d calls failed in %llu failed commits\n",
		      (long long)failed, GF_THREADS * GF_CALLS,
		      (unsigned long long)stats.failed_commits);
	store_close(st);
	free(args);
}

static void committed_events_survive_exit(void **state)
{
	struct fixture *f = *state;
	struct store *st = NULL;
	struct store_event got;
	int status = 0;
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		/* Child: its own connection; no cleanup, no close, no checkpoint. */
		struct store_event evs[5];
		const char *keys[] = { "d0", "d1", "d2", "d3", "d4" };
		struct store *cst = NULL;
		int ok = 0;

		if (store_open(f->path, &cst, NULL) == ERR_OK) {
			for (int i = 0; i < 5; i++)
				evs[i] = sfx_mkev("bridge", "default", keys[i], "firing");
			ok = store_enqueue(cst, evs, 5, NULL) == ERR_OK;
		}
		_exit(ok ? 0 : 1);
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);

	st = sfx_open_ok(f->path);
	assert_int_equal(store_pending_count(st, "bridge"), 5);
	assert_int_equal(store_next_event(st, "bridge", clock_wall_ms(), &got), ERR_OK);
	assert_string_equal(got.key, "d0");
	store_event_release(&got);
	store_close(st);
}

/* ---- wait and wake ---- */

struct waiter {
	struct store *st;
	const char *kind;
	int64_t timeout_ms;
	int64_t took_ms;
	atomic_int started;
};

static void *wait_thread(void *p)
{
	struct waiter *w = p;
	int64_t t0 = tclock_mono_ms();

	atomic_store(&w->started, 1);
	store_wait_kind(w->st, w->kind, w->timeout_ms);
	w->took_ms = tclock_mono_ms() - t0;
	return NULL;
}

/* Start a waiter and give it time to block (bounded). */
static void start_waiter(pthread_t *th, struct waiter *w)
{
	assert_int_equal(pthread_create(th, NULL, wait_thread, w), 0);
	for (int i = 0; i < 200 && !atomic_load(&w->started); i++)
		usleep(1000);
	usleep(50000);
}

static void wait_returns_on_enqueue_wake_and_close(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct waiter w = { st, "bridge", 10000, 0, 0 };
	struct waiter w_wake = { st, "janitor", 10000, 0, 0 };
	struct waiter w_close = { st, "janitor", 10000, 0, 0 };
	pthread_t th;

	/* Nothing queued: times out. */
	int64_t t0 = tclock_mono_ms();
	store_wait(st, 100);
	assert_true(tclock_mono_ms() - t0 >= 90);
	t0 = tclock_mono_ms();
	store_wait(st, 0);
	assert_true(tclock_mono_ms() - t0 < 50);

	start_waiter(&th, &w);
	sfx_enq1(st, "bridge", "k");
	pthread_join(th, NULL);
	assert_true(w.took_ms < 5000);

	/* An event is due now: no wait at all. */
	t0 = tclock_mono_ms();
	store_wait(st, 5000);
	store_wait_kind(st, "bridge", 5000);
	assert_true(tclock_mono_ms() - t0 < 1000);

	/* Events of another kind do not end a kind's wait early... */
	t0 = tclock_mono_ms();
	store_wait_kind(st, "janitor", 150);
	assert_true(tclock_mono_ms() - t0 >= 140);

	/* ...a retry that comes due does. */
	assert_int_equal(store_event_retry(st, sfx_next_id(st, "bridge", 0), clock_wall_ms() + 200, "x"),
			 ERR_OK);
	t0 = tclock_mono_ms();
	store_wait_kind(st, "bridge", 5000);
	assert_true(tclock_mono_ms() - t0 >= 150);
	assert_true(tclock_mono_ms() - t0 < 2000);

	start_waiter(&th, &w_wake);
	store_wake(st);
	pthread_join(th, NULL);
	assert_true(w_wake.took_ms < 5000);

	start_waiter(&th, &w_close);
	store_close(st);
	pthread_join(th, NULL);
	assert_true(w_close.took_ms < 5000);
	store_wake(NULL);
	store_wait(NULL, 10);
}

/*
 * store_wait_kind_since(): an event stored after the mark ends the wait at
 * once though the due time is kept from the wait before (a retry 3 s
 * ahead); a retry time changed since is read again.
 */
static void wait_since_a_mark_keeps_the_due_time_until_the_queue_changes(void **state)
{
	struct store *st = sfx_store(state);
	struct store_mark mark;
	int64_t a, b, t0;

	sfx_enq1(st, "bridge", "ka");
	a = sfx_next_id(st, "bridge", 0);
	assert_int_equal(store_event_retry(st, a, clock_wall_ms() + 3000, "x"), ERR_OK);
	mark = store_mark(st);
	t0 = tclock_mono_ms();
	store_wait_kind_since(st, "bridge", mark, 150);  /* reads and keeps the due time */
	assert_true(tclock_mono_ms() - t0 >= 140);

	mark = store_mark(st);  /* a worker's look finds nothing due ... */
	sfx_enq1(st, "bridge", "kb");  /* ... and an event is stored before it waits */
	t0 = tclock_mono_ms();
	store_wait_kind_since(st, "bridge", mark, 5000);
	assert_true(tclock_mono_ms() - t0 < 1000);
	b = sfx_next_id(st, "bridge", clock_wall_ms());
	assert_true(b > a);
	assert_int_equal(store_event_dead(st, b, "done with it"), ERR_OK);
	mark = store_mark(st);
	t0 = tclock_mono_ms();
	store_wait_kind_since(st, "bridge", mark, 150);  /* the due time read again, kept */
	assert_true(tclock_mono_ms() - t0 >= 140);

	/* the retry comes sooner: the kept due time is stale */
	assert_int_equal(store_event_retry(st, a, clock_wall_ms() + 200, "x"), ERR_OK);
	mark = store_mark(st);
	t0 = tclock_mono_ms();
	store_wait_kind_since(st, "bridge", mark, 5000);
	assert_true(tclock_mono_ms() - t0 >= 150);
	assert_true(tclock_mono_ms() - t0 < 2000);
}

/* quiet "store migrated" on every fresh database */
UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	SFX_TEST(failed_commit_stores_nothing),
	SFX_TEST(group_commit_from_8_threads),
	SFX_TEST(failed_group_fails_every_batch_in_it),
	SFX_TEST(committed_events_survive_exit),
	SFX_MEMORY_TEST(wait_returns_on_enqueue_wake_and_close),
	SFX_MEMORY_TEST(wait_since_a_mark_keeps_the_due_time_until_the_queue_changes))
