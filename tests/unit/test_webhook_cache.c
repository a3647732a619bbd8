/*
 * test_webhook_cache.c - the cache of recent webhook bodies (bridge/webhook_cache.h):
 * exact matching of body and query parameters, slot replacement, what is never kept.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "bridge/webhook_cache.h"
#include "store/store_events.h"
#include "tests/unit/helpers/event_fixture.h"

static struct store_event event(const char *key, const char *repeat_state)
{
	struct store_event ev = efx_firing("r", key, 1700000000000);

	ev.repeat_state = repeat_state;
	return ev;
}

static struct webhook_cache_request request(const char *body, const char *q_receiver,
					    const char *q_repo)
{
	struct webhook_cache_request rq = { 1, q_receiver, q_repo, body, strlen(body) };

	return rq;
}

static void put_one(struct webhook_cache *c, const struct webhook_cache_request *rq,
		    const char *key, const char *repeat_state)
{
	struct store_event ev = event(key, repeat_state);
	struct webhook_cache_entry e = { 0 };

	e.receiver = "r";
	e.n_alerts = 1;
	e.n_firing = 1;
	e.n_repeated = 1;
	e.evs = &ev;
	e.n_evs = 1;
	webhook_cache_put(c, rq, &e);
}

static void exact_request_only(void **state)
{
	struct webhook_cache *c = webhook_cache_new(64);
	struct webhook_cache_request a = request("{\"x\":1}", NULL, NULL);
	struct webhook_cache_request same = request("{\"x\":1}", NULL, NULL);
	struct webhook_cache_request other = request("{\"x\":2}", NULL, NULL);
	struct webhook_cache_request empty_q = request("{\"x\":1}", "", NULL);
	struct webhook_cache_request repo_q = request("{\"x\":1}", NULL, "o/r");
	struct webhook_cache_entry got;

	(void)state;
	assert_int_equal(webhook_cache_get(c, &a, &got), 0);
	put_one(c, &a, "k1", "o/r");
	assert_int_equal(webhook_cache_get(c, &same, &got), 1);
	assert_int_equal(got.n_evs, 1);
	assert_string_equal(got.evs[0].key, "k1");
	assert_string_equal(got.evs[0].repeat_state, "o/r");
	assert_string_equal(got.receiver, "r");
	assert_int_equal(got.evs[0].starts_at_ms, 1700000000000);
	webhook_cache_entry_release(&got);
	assert_int_equal(webhook_cache_get(c, &other, &got), 0);
	assert_int_equal(webhook_cache_get(c, &empty_q, &got), 0);  /* "" is not absent */
	assert_int_equal(webhook_cache_get(c, &repo_q, &got), 0);
	same.generation = 2;  /* after a reload: the config may give the body another meaning */
	assert_int_equal(webhook_cache_get(c, &same, &got), 0);
	same.generation = 1;
	webhook_cache_clear(c);
	assert_int_equal(webhook_cache_get(c, &same, &got), 0);
	webhook_cache_free(c);
}

static void one_slot_keeps_the_newest(void **state)
{
	struct webhook_cache *c = webhook_cache_new(1);
	struct webhook_cache_request a = request("{\"a\":1}", NULL, NULL);
	struct webhook_cache_request b = request("{\"b\":1}", NULL, NULL);
	struct webhook_cache_entry got;

	(void)state;
	put_one(c, &a, "ka", "");
	put_one(c, &b, "kb", "");
	assert_int_equal(webhook_cache_get(c, &a, &got), 0);
	assert_int_equal(webhook_cache_get(c, &b, &got), 1);
	assert_string_equal(got.evs[0].key, "kb");
	webhook_cache_entry_release(&got);
	webhook_cache_free(c);
}

static void never_kept(void **state)
{
	struct webhook_cache *c = webhook_cache_new(8);
	char *big = malloc(WEBHOOK_CACHE_MAX_BODY + 2);
	struct webhook_cache_request rq = request("{\"n\":1}", NULL, NULL), large;
	struct webhook_cache_entry got;
	struct store_event dead = event("kd", "");
	struct webhook_cache_entry e = { 0 };

	(void)state;
	put_one(c, &rq, "k", NULL);  /* no repeat_state: always queued in full */
	assert_int_equal(webhook_cache_get(c, &rq, &got), 0);
	dead.dead_reason = "invalid alert";
	e.receiver = "r";
	e.evs = &dead;
	e.n_evs = 1;
	webhook_cache_put(c, &rq, &e);
	assert_int_equal(webhook_cache_get(c, &rq, &got), 0);
	memset(big, ' ', WEBHOOK_CACHE_MAX_BODY + 1);
	big[WEBHOOK_CACHE_MAX_BODY + 1] = '\0';
	large = request(big, NULL, NULL);
	put_one(c, &large, "k", "");
	assert_int_equal(webhook_cache_get(c, &large, &got), 0);
	free(big);
	webhook_cache_free(c);
}

UNIT_MAIN(
	cmocka_unit_test(exact_request_only),
	cmocka_unit_test(one_slot_keeps_the_newest),
	cmocka_unit_test(never_kept))
