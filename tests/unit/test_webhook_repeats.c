/*
 * test_webhook_repeats.c - repeats at POST /v1/webhook (bridge/webhook.h,
 * core/store.h store_enqueue): an alert state equal to the newest stored for
 * its key adds no event, also from many threads at once and over a dry-run
 * row; after a forget or going live the next one is stored; and a body seen
 * before is answered from the cache of recent bodies when the store says it repeats.
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

#include <curl/curl.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <sqlite3.h>
#include <unistd.h>

#include "core/am.h"
#include "bridge/issue.h"
#include "bridge/webhook.h"
#include "core/auth.h"
#include "core/config.h"
#include "core/http_server.h"
#include "core/log.h"
#include "core/metrics.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "core/xalloc.h"

#include "tests/unit/helpers/webhook_fixture.h"

/* The count in alertbridge_webhook_alerts_repeated_total{receiver}. */
static void assert_repeated(const struct fixture *f, const char *receiver, int n)
{
	wfx_assert_metric(f, "alertbridge_webhook_alerts_repeated_total{receiver=\"%s\"} %d\n",
			  receiver, n);
}

/*
 * An alert state equal to the last one stored for its key adds no event,
 * without a transaction; a changed endsAt or status does.
 */
static void repeat_adds_no_event(void **state)
{
	struct fixture *f = *state;
	const char *fired = wfx_body(f, "01_single_firing.json");
	const char *resolved = wfx_body(f, "02_single_resolved.json");
	const char *later = wfx_edit(f, fired, "0001-01-01T00:00:00Z", "2026-11-21T01:49:48.539Z");
	struct store_stats before, after;
	struct store_event ev;

	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	wfx_take_event(f, &ev);  /* done: a repeat of a done event is still one */
	store_event_release(&ev);
	store_stats(f->st, &before);
	for (int i = 0; i < 5; i++)
		wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	store_stats(f->st, &after);
	wfx_assert_no_more_events(f);
	assert_int_equal(after.commits, before.commits);
	assert_repeated(f, "alert-service", 5);

	wfx_expect_ok(f, NULL, later, OK_ALERT_SERVICE_1);  /* endsAt moved: a new state */
	wfx_expect_ok(f, NULL, later, OK_ALERT_SERVICE_1);
	wfx_take_event(f, &ev);
	assert_int_equal(ev.ends_at_ms, INT64_C(1795225788539));
	store_event_release(&ev);
	wfx_assert_no_more_events(f);
	wfx_expect_ok(f, NULL, resolved, OK_ALERT_SERVICE_1);
	wfx_expect_ok(f, NULL, resolved, OK_ALERT_SERVICE_1);
	wfx_take_event(f, &ev);
	assert_string_equal(ev.status, "resolved");
	store_event_release(&ev);
	wfx_assert_no_more_events(f);
	/* The same receiver's other repository is another state. */
	wfx_expect_ok(f, "?repo=other/repo", resolved, OK_ALERT_SERVICE_1);
	wfx_take_event(f, &ev);
	store_event_release(&ev);
	wfx_assert_no_more_events(f);
	assert_repeated(f, "alert-service", 7);
}

/* A group event repeats only when its members (fingerprint, status, times) are equal too. */
static void group_member_change_is_no_repeat(void **state)
{
	struct fixture *f = *state;
	const char *fired = wfx_body(f, "03_group_of_3_firing.json");
	const char *partial = wfx_body(f, "04_group_partially_resolved.json");
	const char *two = wfx_edit(f, fired, "\"fingerprint\": \"04b8c13f54b78add\"",
				  "\"fingerprint\": \"04b8c13f54b78ade\"");
	const char *ok3 = "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":3}";

	wfx_expect_ok(f, "?receiver=grouped", fired, ok3);
	wfx_expect_ok(f, "?receiver=grouped", fired, ok3);
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	assert_repeated(f, "grouped", 3);
	wfx_expect_ok(f, "?receiver=grouped", two, ok3);  /* a member replaced */
	assert_int_equal(store_pending_count(f->st, "bridge"), 2);
	wfx_expect_ok(f, "?receiver=grouped", partial, ok3);  /* a member resolved */
	wfx_expect_ok(f, "?receiver=grouped", partial, ok3);
	assert_int_equal(store_pending_count(f->st, "bridge"), 3);
	assert_repeated(f, "grouped", 6);
}

/* 8 threads wfx_post the same group at once: one event, every answer 200. */
static void concurrent_repeats_stored_once(void **state)
{
	struct fixture *f = *state;
	const char *body = wfx_body_for(f, "03_group_of_3_firing.json", "grouped");
	const char *bodies[N_THREADS];

	for (int t = 0; t < N_THREADS; t++)
		bodies[t] = body;
	wfx_post_from_threads(f, bodies);
	assert_int_equal(store_pending_count(f->st, "bridge"), 1);
	assert_repeated(f, "grouped", (N_THREADS * POSTS_PER_THREAD - 1) * 3);
}

/*
 * Post 01_single_firing.json, take its event and give its key a map row
 * with issue number: the state a repeat is compared with.
 */
static void fire_and_map(const struct fixture *f, const char *fired, int64_t number)
{
	struct store_issue row = { .receiver = (char *)"alert-service",
				   .key = (char *)"43257ea8bc3d7780",
				   .repo = (char *)"my-org/cluster-alerts", .number = number,
				   .state = STORE_ISSUE_OPEN };
	struct store_event ev;

	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	wfx_take_event(f, &ev);
	store_event_release(&ev);
	assert_int_equal(store_issue_put(f->st, &row), ERR_OK);
}

/* fire_and_map() the single firing fired to issue number; then a re-send is a repeat. */
static void mapped_then_repeats(struct fixture *f, const char *fired, int64_t number)
{
	fire_and_map(f, fired, number);
	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	wfx_assert_no_more_events(f);
}

/* The single firing fired is stored once more (an event of its key), then repeats again. */
static void stored_then_repeats(struct fixture *f, const char *fired)
{
	struct store_event ev;

	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	wfx_take_event(f, &ev);
	assert_string_equal(ev.key, "43257ea8bc3d7780");
	store_event_release(&ev);
	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	wfx_assert_no_more_events(f);
}

/*
 * A dry-run map row (issue 0) repeats as a live one: dry-run stores what
 * live stores.  Going live (store_dry_rows_go_live(), at serve's start) the
 * next re-send is stored, so that it makes the issue; then it repeats again.
 */
static void dry_run_row_repeats_until_going_live(void **state)
{
	struct fixture *f = *state;
	const char *fired = wfx_body(f, "01_single_firing.json");

	mapped_then_repeats(f, fired, 0);
	assert_int_equal(store_dry_rows_go_live(f->st, NULL), ERR_OK);
	stored_then_repeats(f, fired);
}

/* After map forget (another process in production), the same firing is new. */
static void forgotten_key_is_no_repeat(void **state)
{
	struct fixture *f = *state;
	const char *fired = wfx_body(f, "01_single_firing.json");

	mapped_then_repeats(f, fired, 7);
	assert_int_equal(store_issue_forget(f->st, "alert-service", "43257ea8bc3d7780"), ERR_OK);
	stored_then_repeats(f, fired);
}

/* The count in alertbridge_webhook_cache_hits_total{receiver}; a configured receiver's is 0
 * from the start. */
static void assert_cache_hits(const struct fixture *f, const char *receiver, int n)
{
	wfx_assert_metric(f, "alertbridge_webhook_cache_hits_total{receiver=\"%s\"} %d\n", receiver,
			  n);
}

/*
 * A body seen before is answered from the cache when the store says its
 * alerts are all repeats, with the answer and metrics a parse would give;
 * when they are not (a resolve came between), it goes the whole way and its
 * new state is queued.  Query parameters are part of what is seen; a body
 * with a dead letter is never answered from the cache.
 */
static void seen_body_is_answered_from_the_cache(void **state)
{
	struct fixture *f = *state;
	const char *fired = wfx_body(f, "01_single_firing.json");
	const char *resolved = wfx_body(f, "02_single_resolved.json");
	const char *group = wfx_body(f, "03_group_of_3_firing.json");
	const char *bad = wfx_edit(f, group, "\"container\": \"sidecar\",",
				  "\"container\": \"sidecar\", \"alertbridge_repo\": \"a/b/c\",");
	const char *ok3 = "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3}";
	struct store_event ev;

	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	assert_cache_hits(f, "alert-service", 0);
	for (int i = 0; i < 3; i++)
		wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	assert_cache_hits(f, "alert-service", 3);
	assert_repeated(f, "alert-service", 3);
	wfx_take_event(f, &ev);
	store_event_release(&ev);
	wfx_assert_no_more_events(f);

	/* Resolved, then the same firing body: not a repeat any more, so queued. */
	wfx_expect_ok(f, NULL, resolved, OK_ALERT_SERVICE_1);
	wfx_take_event(f, &ev);
	assert_string_equal(ev.status, "resolved");
	store_event_release(&ev);
	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);
	assert_cache_hits(f, "alert-service", 3);
	wfx_take_event(f, &ev);
	assert_string_equal(ev.status, "firing");
	store_event_release(&ev);
	wfx_expect_ok(f, NULL, fired, OK_ALERT_SERVICE_1);  /* a repeat again, from the cache */
	assert_cache_hits(f, "alert-service", 4);

	/* Another repository asked for: another request, so the whole way. */
	wfx_expect_ok(f, "?repo=other/repo", fired, OK_ALERT_SERVICE_1);
	wfx_take_event(f, &ev);
	store_event_release(&ev);
	assert_cache_hits(f, "alert-service", 4);
	wfx_expect_ok(f, "?repo=other/repo", fired, OK_ALERT_SERVICE_1);
	assert_cache_hits(f, "alert-service", 5);
	wfx_assert_no_more_events(f);

	/* A group of three: counted as three alerts, answered the same. */
	wfx_expect_ok(f, NULL, group, ok3);
	wfx_expect_ok(f, NULL, group, ok3);
	assert_cache_hits(f, "alert-service", 6);
	assert_repeated(f, "alert-service", 3 + 1 + 1 + 3);

	/* With a dead letter: never from the cache (its answer says "invalid"). */
	for (int i = 0; i < 2; i++)
		wfx_expect_ok(f, "?repo=ok/repo", bad,
			  "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3,"
			  "\"invalid\":1}");
	assert_cache_hits(f, "alert-service", 6);
}

/* A test of this file, between wfx_setup() and wfx_teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, wfx_setup, wfx_teardown)

UNIT_MAIN_WITH(curl_global_init(CURL_GLOBAL_DEFAULT), curl_global_cleanup(),
	T(repeat_adds_no_event),
	T(group_member_change_is_no_repeat),
	T(concurrent_repeats_stored_once),
	T(forgotten_key_is_no_repeat),
	T(dry_run_row_repeats_until_going_live),
	T(seen_body_is_answered_from_the_cache))
