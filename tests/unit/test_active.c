/*
 * test_active.c - "may this replica act now?" (core/active.c): always on
 * sqlite, the Lease when one is given, and with AB_TEST_PG_URI the worker
 * lock between two replicas on one database: one acts, after its grace; the
 * other stands by, takes over within ACTIVE_RETRY_MS of a release; a lock
 * lost behind the gate's back stops the acting at the next ask; the gauge.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/active.h"
#include "core/clock.h"
#include "core/log.h"
#include "core/metrics.h"
#include "store/store.h"
#include "store/store_lock.h"
#include "tests/unit/helpers/pg_fixture.h"
#include "tests/unit/helpers/store_fixture.h"

#define GAUGE "alertbridge_store_worker_lock_held"

static int lease_value;

static int lease(void *ctx)
{
	return *(int *)ctx;
}

/* The gauge's value in m's rendering; -1 when it is not there. */
static int gauge(struct metrics *m)
{
	struct buf out = BUF_INIT;
	const char *p;
	int v = -1;

	metrics_render(m, &out);
	p = strstr(buf_str(&out), "\n" GAUGE " ");
	if (p)
		v = (int)strtol(p + strlen(GAUGE) + 2, NULL, 10);
	buf_release(&out);
	return v;
}

static struct active *gate(struct store *st, struct metrics *m, int with_lease, int64_t grace_ms)
{
	struct active_options o = { 0 };

	o.store = st;
	o.metrics = m;
	o.grace_ms = grace_ms;
	if (with_lease) {
		o.lease = lease;
		o.lease_ctx = &lease_value;
	}
	return active_new(&o);
}

/* An sqlite test's gate: on the store of the fixture, with metrics of its own, started. */
struct sqlite_gate {
	struct store *st;
	struct metrics *m;
	struct active *a;
	struct buf why;
};

static void sqlite_gate_start(struct sqlite_gate *g, void **state, int with_lease,
			      int64_t grace_ms)
{
	struct fixture *f = *state;

	g->st = sfx_open_ok(f->path);
	g->m = metrics_new();
	g->a = gate(g->st, g->m, with_lease, grace_ms);
	buf_init(&g->why, 0);
	assert_int_equal(active_start(g->a, NULL), ERR_OK);
}

static void sqlite_gate_free(struct sqlite_gate *g)
{
	active_free(g->a);
	metrics_free(g->m);
	buf_release(&g->why);
	store_close(g->st);
}

static void sqlite_always_acts(void **state)
{
	struct sqlite_gate g;

	sqlite_gate_start(&g, state, 0, 10000);
	assert_true(active_may_act(g.a)); /* no grace: one process owns the file */
	assert_true(active_ready(g.a, &g.why));
	assert_int_equal(gauge(g.m), 1);
	sqlite_gate_free(&g);
}

static void lease_decides(void **state)
{
	struct sqlite_gate g;

	sqlite_gate_start(&g, state, 1, 0);
	lease_value = 0;
	assert_false(active_may_act(g.a));
	/* sqlite: a standby's webhooks would wait on its own file, so only the leader is ready. */
	assert_false(active_ready(g.a, &g.why));
	assert_string_equal(buf_str(&g.why), "not the leader");
	lease_value = 1;
	assert_true(active_may_act(g.a));
	assert_true(active_ready(g.a, NULL));
	assert_int_equal(gauge(g.m), -1); /* the Lease has its own gauge */
	sqlite_gate_free(&g);
}

/* Wait up to limit_ms for active_may_act(a) to become want; the ms it took. */
static int64_t until(struct active *a, int want, int64_t limit_ms)
{
	int64_t t0 = clock_mono_us() / 1000, now = t0;

	while (!!active_may_act(a) != want && now - t0 < limit_ms) {
		struct timespec ts = { 0, 20 * 1000000L };

		nanosleep(&ts, NULL);
		now = clock_mono_us() / 1000;
	}
	assert_int_equal(!!active_may_act(a), want);
	return now - t0;
}

static void postgres_one_acts(void **state)
{
	char uri[1024];
	struct store *s1, *s2;
	struct metrics *m1, *m2;
	struct active *a1, *a2;
	int64_t ms;

	(void)state;
	if (!pgfx_create_or_skip(uri, sizeof(uri), "ab_active", "postgres_one_acts"))
		return;
	s1 = sfx_open_ok(uri);
	s2 = sfx_open_ok(uri);
	m1 = metrics_new();
	m2 = metrics_new();
	a1 = gate(s1, m1, 0, 300);
	a2 = gate(s2, m2, 0, 0);
	assert_int_equal(gauge(m1), 0);
	assert_int_equal(active_start(a1, NULL), ERR_OK); /* its first try is made here */
	assert_int_equal(gauge(m1), 1);
	assert_false(active_may_act(a1)); /* the grace: a former holder's request may be in flight */
	ms = until(a1, 1, 1000);
	assert_true(ms >= 200);
	assert_int_equal(active_start(a2, NULL), ERR_OK);
	assert_false(active_may_act(a2));
	assert_int_equal(gauge(m2), 0);
	assert_true(active_ready(a2, NULL)); /* every replica takes webhooks */

	/* A clean stop releases it: the other takes it at its next try. */
	active_stop(a1);
	assert_int_equal(gauge(m1), 0);
	ms = until(a2, 1, ACTIVE_RETRY_MS + 1000);
	assert_true(ms <= ACTIVE_RETRY_MS + 500);
	assert_int_equal(gauge(m2), 1);

	/* Lost behind the gate's back (as a dropped session): the next ask says no. */
	{
		int held = 0;

		/* a2's thread may take it back in between: a few tries. */
		for (int i = 0; i < 5 && !held; i++) {
			store_worker_unlock(s2, STORE_WORKER_LOCK);
			assert_int_equal(store_worker_lock(s1, STORE_WORKER_LOCK, &held, NULL),
					 ERR_OK);
		}
		assert_true(held);
	}
	assert_false(active_may_act(a2));
	assert_int_equal(gauge(m2), 0);
	store_worker_unlock(s1, STORE_WORKER_LOCK);
	until(a2, 1, ACTIVE_RETRY_MS + 1000); /* and it is tried for again */

	active_free(a2);
	active_free(a1);
	metrics_free(m1);
	metrics_free(m2);
	store_close(s1);
	store_close(s2);
	pgfx_drop(uri);
}

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	cmocka_unit_test_setup_teardown(sqlite_always_acts, sfx_setup, sfx_teardown),
	cmocka_unit_test_setup_teardown(lease_decides, sfx_setup, sfx_teardown),
	cmocka_unit_test(postgres_one_acts))
