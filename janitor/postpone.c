/*
 * postpone.c - the postpone rule (postpone.h): a pure function over a pod's
 * annotations, so every limit is a unit test (tests/unit/test_postpone.c).
 */
#include "janitor/postpone.h"

#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/xalloc.h"
#include "core/banned.h"

const char *postpone_why_str(enum postpone_why why)
{
	switch (why) {
	case POSTPONE_OK:
		return "ok";
	case POSTPONE_INVALID:
		return "invalid";
	case POSTPONE_NO_EXPIRY:
		return "no-expiry";
	case POSTPONE_ALREADY:
		return "already";
	case POSTPONE_LIMIT:
		return "limit";
	case POSTPONE_LIFETIME:
		return "max-lifetime";
	case POSTPONE_EXEMPT:
		return "exempt";
	}
	return "unknown";
}

/* janitor/postponed as a count; -1 when it is not a number 0-1000. */
static int read_count(const char *s)
{
	int v = 0;

	if (!s)
		return 0;
	if (!*s || strlen(s) > 4)
		return -1;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		v = v * 10 + (*s - '0');
	}
	return v <= 1000 ? v : -1;
}

static void op(struct janitor_patch *out, const char *name, const char *value)
{
	assert(out->n < JANITOR_PATCH_MAX);
	out->ops[out->n].name = name;
	out->ops[out->n].value = value ? xstrdup(value) : NULL;
	out->n++;
}

enum postpone_why postpone_decide(const struct janitor_kv *kv, size_t n, int64_t creation_ms,
				  int64_t now_ms, const struct postpone_policy *p,
				  struct postpone_plan *plan, struct janitor_patch *out)
{
	struct janitor_pod_state st;
	int count = read_count(janitor_kv_get(kv, n, JANITOR_ANN_POSTPONED));
	const char *expires = janitor_kv_get(kv, n, JANITOR_ANN_EXPIRES);
	const char *marked = janitor_kv_get(kv, n, JANITOR_ANN_MARKED_EXPIRES);
	char when[JANITOR_TIME_LEN], num[16];
	int64_t base, next;

	assert(out->n == 0 && p->by_ms > 0);
	memset(plan, 0, sizeof(*plan));
	plan->old_expires_ms = JANITOR_NO_TIME;
	plan->new_expires_ms = JANITOR_NO_TIME;
	if (janitor_pod_state(kv, n, creation_ms, &st, NULL) != ERR_OK || count < 0)
		return plan->why = POSTPONE_INVALID;
	plan->count = (unsigned)count;
	plan->old_expires_ms = st.expires_ms;
	if (st.exempt || st.forever)
		return plan->why = POSTPONE_EXEMPT;
	if (st.expires_ms == JANITOR_NO_TIME)
		return plan->why = POSTPONE_NO_EXPIRY;
	if ((unsigned)count >= p->max)
		return plan->why = POSTPONE_LIMIT;
	base = st.expires_ms > now_ms ? st.expires_ms : now_ms;
	next = base > INT64_MAX - p->by_ms ? INT64_MAX : base + p->by_ms;
	if (p->max_lifetime_ms > 0 && creation_ms <= INT64_MAX - p->max_lifetime_ms &&
	    next > creation_ms + p->max_lifetime_ms)
		next = creation_ms + p->max_lifetime_ms;
	next -= ((next % 1000) + 1000) % 1000;  /* the second janitor_format_time() writes */
	if (next <= st.expires_ms || janitor_format_time(next, when) != ERR_OK)
		return plan->why = POSTPONE_LIFETIME;
	snprintf(num, sizeof(num), "%d", count + 1);
	/* In name order, as a janitor_patch is. */
	op(out, JANITOR_ANN_EXPIRES, when);
	if (marked && expires && !strcmp(marked, expires))
		op(out, JANITOR_ANN_MARKED_EXPIRES, when);
	if (janitor_kv_get(kv, n, JANITOR_ANN_NOTIFIED_AT))
		op(out, JANITOR_ANN_NOTIFIED_AT, NULL);
	op(out, JANITOR_ANN_POSTPONED, num);
	plan->new_expires_ms = next;
	return plan->why = POSTPONE_OK;
}
