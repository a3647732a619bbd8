/*
 * postpone.h - the rule of "Keep until ..." (issue 21 section 2), as a pure
 * function beside annotate.h: how far an owner's click on a notice's button
 * moves the pod's janitor/expires, and when it is refused.  No I/O, no
 * clock: callers pass now_ms.  The worker that applies it is
 * janitor_postpone.c; the endpoint that receives the click is
 * slack_interact.h.
 */
#ifndef AB_POSTPONE_H
#define AB_POSTPONE_H

#include <stddef.h>
#include <stdint.h>

#include "janitor/annotate.h"

/* A policy's postpone knobs (core/config.h struct cfg_policy). */
struct postpone_policy {
	int64_t by_ms;            /* each postpone adds this (> 0) */
	unsigned max;             /* postpones allowed in the pod's life; 0: none */
	int64_t max_lifetime_ms;  /* expiry never past creation + this; 0: no bound */
};
/* Without a policy (a pod a person annotated): 24h, 3 times, no bound. */
#define POSTPONE_POLICY_DEFAULT { 24 * 3600 * 1000LL, 3, 0 }

/* Why a postpone was refused; POSTPONE_OK when it was not. */
enum postpone_why {
	POSTPONE_OK,
	POSTPONE_INVALID,    /* an annotation could not be read (janitor_pod_state) */
	POSTPONE_NO_EXPIRY,  /* no janitor/expires: nothing to move (janitor/ttl is a person's) */
	POSTPONE_ALREADY,    /* the button was used already (janitor_postpone.c: one
			      * postpone per notice; the next notice brings a new button) */
	POSTPONE_LIMIT,      /* janitor/postponed reached the policy's max */
	POSTPONE_LIFETIME,   /* the expiry is at creation + max_lifetime already */
	POSTPONE_EXEMPT,     /* exempt or forever: nothing will happen to it anyway */
};

/* What a postpone does. */
struct postpone_plan {
	enum postpone_why why;
	unsigned count;          /* janitor/postponed before it (what the pod holds) */
	int64_t old_expires_ms;  /* janitor/expires before; JANITOR_NO_TIME when absent */
	int64_t new_expires_ms;  /* after (POSTPONE_OK); rounded down to the second */
};

/*
 * Decide a postpone of the pod whose sorted annotations are kv[0..n),
 * created at creation_ms, asked at now_ms, under policy p.  On
 * POSTPONE_OK, out (must be empty) gets the merge patch:
 *   janitor/expires = max(expires, now) + by, but no later than
 *       creation + max_lifetime (when set), as "YYYY-MM-DDTHH:MM:SSZ";
 *   janitor/marked-expires = the same, when it equalled janitor/expires (the
 *       janitor's own mark, still its own: unmarking on resolve removes it);
 *   janitor/notified-at removed (a fresh notice, with the button, goes out
 *       before the new expiry: nothing is deleted without one);
 *   janitor/postponed = count + 1.
 * Refusals, in this order (out stays empty): INVALID, EXEMPT, NO_EXPIRY,
 * LIMIT (count >= max), LIFETIME (the new expiry
 * would not be later).  A janitor/postponed that is not a number 0-1000 is
 * INVALID.
 */
enum postpone_why postpone_decide(const struct janitor_kv *kv, size_t n, int64_t creation_ms,
				  int64_t now_ms, const struct postpone_policy *p,
				  struct postpone_plan *plan, struct janitor_patch *out);

/* Static lower-case names for metrics and logs ("limit", "max-lifetime", ...); never NULL. */
const char *postpone_why_str(enum postpone_why why);

#endif
