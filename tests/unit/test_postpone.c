/*
 * test_postpone.c - the rule of "Keep until" (janitor/postpone.h): how far a
 * postpone moves janitor/expires, the limits that refuse it, and the patch
 * it makes, on annotation sets as the pod holds them.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "janitor/annotate.h"
#include "janitor/postpone.h"

#define H (3600 * 1000LL)
#define CREATED INT64_C(1794787200000)  /* 2026-11-16T00:00:00Z */
#define NOW INT64_C(1794960000000)      /* 2026-11-18T00:00:00Z */

static const struct postpone_policy dflt = POSTPONE_POLICY_DEFAULT;

static enum postpone_why decide(struct janitor_kv *kv, size_t n, const struct postpone_policy *p,
				struct postpone_plan *plan, struct janitor_patch *out)
{
	janitor_kv_sort(kv, n);
	return postpone_decide(kv, n, CREATED, NOW, p, plan, out);
}

/* Operation i of p sets name to value (NULL: removes it). */
static void op_is(const struct janitor_patch *p, size_t i, const char *name, const char *value)
{
	assert_true(i < p->n);
	assert_string_equal(p->ops[i].name, name);
	if (value == NULL)
		assert_null(p->ops[i].value);
	else
		assert_string_equal(p->ops[i].value, value);
}

static void moves_expires_a_day_and_counts(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_EXPIRES, "2026-11-18T06:00:00Z" },
		{ JANITOR_ANN_MARKED_EXPIRES, "2026-11-18T06:00:00Z" },
		{ JANITOR_ANN_MARKED_AT, "2026-11-17T06:00:00Z" },
		{ JANITOR_ANN_NOTIFIED_AT, "2026-11-17T23:00:00Z" },
		{ JANITOR_ANN_REASON, "JanitorIdleGPUPod" },
	};
	struct janitor_patch p = JANITOR_PATCH_INIT;
	struct postpone_plan plan;

	(void)state;
	assert_int_equal(decide(kv, 5, &dflt, &plan, &p), POSTPONE_OK);
	assert_int_equal(plan.count, 0);
	assert_int_equal(plan.new_expires_ms, NOW + 30 * H);
	assert_int_equal(p.n, 4);
	op_is(&p, 0, JANITOR_ANN_EXPIRES, "2026-11-19T06:00:00Z");
	/* Still the janitor's own mark: unmarking on resolve removes the new value. */
	op_is(&p, 1, JANITOR_ANN_MARKED_EXPIRES, "2026-11-19T06:00:00Z");
	/* A fresh notice with its button goes out before the new expiry. */
	op_is(&p, 2, JANITOR_ANN_NOTIFIED_AT, NULL);
	op_is(&p, 3, JANITOR_ANN_POSTPONED, "1");
	janitor_patch_release(&p);
}

static void a_persons_expires_is_moved_not_marked(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_EXPIRES, "2026-11-18T06:00:00Z" },
		{ JANITOR_ANN_POSTPONED, "2" },
	};
	struct janitor_patch p = JANITOR_PATCH_INIT;
	struct postpone_plan plan;

	(void)state;
	assert_int_equal(decide(kv, 2, &dflt, &plan, &p), POSTPONE_OK);
	assert_int_equal(plan.count, 2);
	assert_int_equal(p.n, 2);
	assert_string_equal(p.ops[0].name, JANITOR_ANN_EXPIRES);
	op_is(&p, 1, JANITOR_ANN_POSTPONED, "3");
	janitor_patch_release(&p);
}

static void an_overdue_pod_gets_postpone_by_from_now(void **state)
{
	struct janitor_kv kv[] = { { JANITOR_ANN_EXPIRES, "2026-11-17T00:00:00Z" } };
	struct janitor_patch p = JANITOR_PATCH_INIT;
	struct postpone_plan plan;

	(void)state;
	assert_int_equal(decide(kv, 1, &dflt, &plan, &p), POSTPONE_OK);
	assert_int_equal(plan.new_expires_ms, NOW + 24 * H);
	assert_string_equal(p.ops[0].value, "2026-11-19T00:00:00Z");
	janitor_patch_release(&p);
}

static void limit_reached_is_refused(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_EXPIRES, "2026-11-18T06:00:00Z" },
		{ JANITOR_ANN_POSTPONED, "3" },
	};
	struct postpone_policy none = { 24 * H, 0, 0 };
	struct janitor_patch p = JANITOR_PATCH_INIT;
	struct postpone_plan plan;

	(void)state;
	assert_int_equal(decide(kv, 2, &dflt, &plan, &p), POSTPONE_LIMIT);
	assert_int_equal(plan.count, 3);
	assert_int_equal(p.n, 0);
	/* max_postpones 0: never. */
	kv[1].value = "0";
	assert_int_equal(decide(kv, 2, &none, &plan, &p), POSTPONE_LIMIT);
	assert_int_equal(p.n, 0);
	assert_string_equal(postpone_why_str(POSTPONE_LIMIT), "limit");
}

static void max_lifetime_caps_then_refuses(void **state)
{
	/* Created 2026-11-16; max_lifetime 3d: never past 2026-11-19T00:00:00Z. */
	struct postpone_policy p3 = { 24 * H, 5, 72 * H };
	struct janitor_kv kv[] = { { JANITOR_ANN_EXPIRES, "2026-11-18T06:00:00Z" } };
	struct janitor_patch p = JANITOR_PATCH_INIT;
	struct postpone_plan plan;

	(void)state;
	assert_int_equal(decide(kv, 1, &p3, &plan, &p), POSTPONE_OK);
	assert_int_equal(plan.new_expires_ms, CREATED + 72 * H);
	assert_string_equal(p.ops[0].value, "2026-11-19T00:00:00Z");
	janitor_patch_release(&p);
	kv[0].value = "2026-11-19T00:00:00Z";
	assert_int_equal(decide(kv, 1, &p3, &plan, &p), POSTPONE_LIFETIME);
	assert_int_equal(p.n, 0);
	assert_string_equal(postpone_why_str(POSTPONE_LIFETIME), "max-lifetime");
}

static void nothing_to_move_or_unreadable(void **state)
{
	struct janitor_kv ttl[] = { { JANITOR_ANN_TTL, "2d" } };
	struct janitor_kv bad[] = { { JANITOR_ANN_EXPIRES, "2026-11-18T06:00:00Z" },
				    { JANITOR_ANN_POSTPONED, "many" } };
	struct janitor_kv ex[] = { { JANITOR_ANN_EXEMPT, "true" },
				   { JANITOR_ANN_EXPIRES, "2026-11-18T06:00:00Z" } };
	struct janitor_kv badexp[] = { { JANITOR_ANN_EXPIRES, "tomorrow" } };
	struct janitor_patch p = JANITOR_PATCH_INIT;
	struct postpone_plan plan;

	(void)state;
	assert_int_equal(decide(ttl, 1, &dflt, &plan, &p), POSTPONE_NO_EXPIRY);
	assert_int_equal(decide(NULL, 0, &dflt, &plan, &p), POSTPONE_NO_EXPIRY);
	assert_int_equal(decide(bad, 2, &dflt, &plan, &p), POSTPONE_INVALID);
	assert_int_equal(decide(ex, 2, &dflt, &plan, &p), POSTPONE_EXEMPT);
	assert_int_equal(decide(badexp, 1, &dflt, &plan, &p), POSTPONE_INVALID);
	assert_int_equal(p.n, 0);
}

static void unmark_removes_the_count(void **state)
{
	struct janitor_kv kv[] = {
		{ JANITOR_ANN_EXPIRES, "2026-11-19T06:00:00Z" },
		{ JANITOR_ANN_MARKED_EXPIRES, "2026-11-19T06:00:00Z" },
		{ JANITOR_ANN_MARKED_AT, "2026-11-17T06:00:00Z" },
		{ JANITOR_ANN_POSTPONED, "1" },
	};
	struct janitor_patch p = JANITOR_PATCH_INIT;

	(void)state;
	janitor_kv_sort(kv, 4);
	janitor_unmark_patch(kv, 4, &p);
	assert_non_null(janitor_patch_find(&p, JANITOR_ANN_POSTPONED));
	assert_null(janitor_patch_find(&p, JANITOR_ANN_POSTPONED)->value);
	assert_non_null(janitor_patch_find(&p, JANITOR_ANN_EXPIRES));
	janitor_patch_release(&p);
}

UNIT_MAIN(
	cmocka_unit_test(moves_expires_a_day_and_counts),
	cmocka_unit_test(a_persons_expires_is_moved_not_marked),
	cmocka_unit_test(an_overdue_pod_gets_postpone_by_from_now),
	cmocka_unit_test(limit_reached_is_refused),
	cmocka_unit_test(max_lifetime_caps_then_refuses),
	cmocka_unit_test(nothing_to_move_or_unreadable),
	cmocka_unit_test(unmark_removes_the_count))
