/*
 * annotate.h - the janitor's pod annotations and its deletion policy, as pure functions.
 *
 * The pod's own annotations hold the janitor's state (DESIGN.md "Janitor semantics"), in
 * kube-janitor's format (codeberg.org/hjacobs/kube-janitor, kube_janitor/helper.py): this part of
 * the janitor module reads them, computes the merge patches that mark and unmark a pod, and
 * decides what the sweeper does with a pod.  No I/O, no clock: callers pass now_ms.
 */
#ifndef AB_JANITOR_ANNOTATE_H
#define AB_JANITOR_ANNOTATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* Annotation names.  kube-janitor reads the first two; the others are alertbridge's own. */
#define JANITOR_ANN_EXPIRES "janitor/expires"         /* when the pod goes, UTC */
#define JANITOR_ANN_TTL "janitor/ttl"                 /* lifetime from creationTimestamp */
#define JANITOR_ANN_REASON "janitor/reason"           /* why the janitor marked it */
#define JANITOR_ANN_MARKED_AT "janitor/marked-at"     /* when the janitor marked it, UTC */
#define JANITOR_ANN_MARKED_EXPIRES "janitor/marked-expires" /* the expires value it wrote */
#define JANITOR_ANN_NOTIFIED_AT "janitor/notified-at" /* when a notice reached the owner, UTC */
#define JANITOR_ANN_EXEMPT "janitor/exempt"           /* "true": never touch this pod */
#define JANITOR_ANN_NOTIFY "janitor/notify"           /* Slack user ID, channel or e-mail */
#define JANITOR_ANN_POSTPONED "janitor/postponed"     /* times the owner kept it (postpone.h) */

/* "no such time": an absent annotation.  Every time here is int64 ms since the epoch, UTC. */
#define JANITOR_NO_TIME INT64_MIN
/* janitor_parse_ttl()'s value for "forever". */
#define JANITOR_TTL_FOREVER (-1)
/* Bytes janitor_format_time() writes, NUL included: "YYYY-MM-DDTHH:MM:SSZ". */
#define JANITOR_TIME_LEN 21

/*
 * One annotation.  An annotation set is an array of these sorted by name (strcmp order) with
 * unique names, as Kubernetes' metadata.annotations map is; the strings belong to the caller.
 */
struct janitor_kv {
	const char *name;
	const char *value;
};

/* Sort kv[0..n) by name so it can be passed to the functions below.  kv may be NULL when n is 0. */
void janitor_kv_sort(struct janitor_kv *kv, size_t n);

/*
 * The value of annotation name in the sorted set kv[0..n), or NULL when it is absent.  The
 * pointer is kv's own.
 */
const char *janitor_kv_get(const struct janitor_kv *kv, size_t n, const char *name);

/*
 * Parse a janitor/expires value in any of kube-janitor's forms (Python strptime patterns
 * "%Y-%m-%dT%H:%M:%SZ", "%Y-%m-%dT%H:%M" and "%Y-%m-%d", all read as UTC; a missing time is
 * midnight).  As with strptime: the year has exactly 4 digits (0001-9999), the other fields 1 or
 * 2 digits, letters T and Z in either case, nothing before or after.  Days are checked against
 * the month (leap years included), seconds 0-59.  On success sets *out_ms and returns ERR_OK;
 * otherwise ERR_INVALID with errmsg (may be NULL) saying what is wrong, *out_ms unchanged.
 */
enum err janitor_parse_time(const char *s, int64_t *out_ms, struct buf *errmsg) WARN_UNUSED;

/*
 * Write time_ms as "YYYY-MM-DDTHH:MM:SSZ" (UTC, the form kube-janitor writes) into out, rounded
 * down to the second.  ERR_INVALID (out set to "") when the year falls outside 0001-9999.
 */
enum err janitor_format_time(int64_t time_ms, char out[JANITOR_TIME_LEN]) WARN_UNUSED;

/*
 * Parse a janitor/ttl value: kube-janitor's ^\d+[smhdw]$ (seconds, minutes, hours, days, weeks;
 * leading zeros allowed) or "forever" in any case.  Sets *ttl_ms to the lifetime in ms (0 is
 * allowed), or JANITOR_TTL_FOREVER; returns ERR_OK.  ERR_INVALID with errmsg (may be NULL) for
 * anything else, including a value whose ms do not fit in int64_t; *ttl_ms is then unchanged.
 */
enum err janitor_parse_ttl(const char *s, int64_t *ttl_ms, struct buf *errmsg) WARN_UNUSED;

/*
 * What a pod's annotations say.  The string pointers point into the annotation set it was built
 * from and live as long as it does.
 */
struct janitor_pod_state {
	bool invalid;              /* an annotation could not be read: leave the pod alone */
	bool exempt;               /* janitor/exempt is "true" (any case) */
	bool forever;              /* janitor/ttl is "forever" */
	bool marked;               /* janitor/marked-at is present: the janitor marked this pod */
	int64_t expires_ms;        /* janitor/expires, or JANITOR_NO_TIME */
	int64_t ttl_expiry_ms;     /* creation + janitor/ttl (saturating), or JANITOR_NO_TIME;
				    * also for a TTL of 0, which kube-janitor never acts on */
	int64_t expiry_ms;         /* the earlier of the two; JANITOR_NO_TIME when neither is set */
	int64_t marked_at_ms;      /* janitor/marked-at, or JANITOR_NO_TIME */
	int64_t notified_at_ms;    /* janitor/notified-at, or JANITOR_NO_TIME: no notice yet */
	const char *reason;        /* janitor/reason, or NULL */
	const char *notify;        /* janitor/notify, or NULL */
};

/*
 * Read the janitor annotations of a pod from the sorted set kv[0..n) into *out; creation_ms is
 * its metadata.creationTimestamp (what janitor/ttl counts from).  A janitor/ttl of 0 ("0s",
 * "0m", ...) gives no expiry, as in kube-janitor (janitor.py acts only when the TTL is above
 * zero); a janitor/expires beside it still applies.  Returns ERR_OK, or ERR_INVALID
 * when janitor/expires, janitor/ttl, janitor/marked-at, janitor/notified-at or janitor/exempt
 * ("true" or "false") holds something else: out->invalid is then set, the fields that could be
 * read are filled, and errmsg (may be NULL) names the first bad annotation and quotes its value
 * (escaped, cut at 64 bytes), e.g. `annotation janitor/ttl "5y": ...`.
 */
enum err janitor_pod_state(const struct janitor_kv *kv, size_t n, int64_t creation_ms,
			   struct janitor_pod_state *out, struct buf *errmsg) WARN_UNUSED;

/* Most entries a patch holds: one per annotation the janitor writes. */
#define JANITOR_PATCH_MAX 8

/*
 * Annotations to change with a JSON merge patch (RFC 7386) of metadata.annotations: each op sets
 * name to value, or removes it when value is NULL (JSON null).  Ops are sorted by name; names are
 * the static JANITOR_ANN_* strings, values are owned by the patch.  n == 0: nothing to change.
 */
struct janitor_patch_op {
	const char *name;
	char *value;
};
struct janitor_patch {
	struct janitor_patch_op ops[JANITOR_PATCH_MAX];
	size_t n;
};
#define JANITOR_PATCH_INIT { { { NULL, NULL } }, 0 }

/* Free the values and empty p; p may be NULL. */
void janitor_patch_release(struct janitor_patch *p);

/* The op for name in p, or NULL when p leaves name alone. */
const struct janitor_patch_op *janitor_patch_find(const struct janitor_patch *p, const char *name);

/*
 * The patch that marks a pod whose state is st (from janitor_pod_state) for deletion, into out
 * (which must be empty: JANITOR_PATCH_INIT or released).  reason is the policy's text
 * (non-empty); grace_ms >= 0.
 * - Not yet marked: janitor/expires = now + grace (rounded down to the second), unless an expiry
 *   is already set no later than that: it is never moved later.  When it writes expires it
 *   writes the same value to janitor/marked-expires, so janitor_unmark_patch() knows it is its
 *   own.  janitor/marked-at = now.
 * - Already marked: marked-at and an existing expires are left as they are (a later expires is
 *   the owner's snooze), so repeated notifications change nothing; an expires that was removed
 *   is written again as above.
 * - janitor/reason = reason unless it already says that.
 * janitor/ttl still applies on its own: st->expiry_ms is what the sweeper uses.
 * ERR_INVALID (out empty, errmsg says why) when st is invalid, exempt or forever: such a pod is
 * not marked.
 */
enum err janitor_mark_patch(const struct janitor_pod_state *st, int64_t now_ms, int64_t grace_ms,
			    const char *reason, struct janitor_patch *out,
			    struct buf *errmsg) WARN_UNUSED;

/*
 * The patch recording that a notice reached the owner at now_ms, into out (must be empty):
 * janitor/notified-at = now rounded UP to the second, so the notice lead is never cut short.
 */
void janitor_notified_patch(int64_t now_ms, struct janitor_patch *out);

/*
 * The patch that takes the janitor's mark off the pod whose sorted annotations are kv[0..n), into
 * out (must be empty), removing only what the janitor set.  Without janitor/marked-at it is empty
 * (the janitor did not mark the pod: a person's janitor/expires is theirs).  With it: removes
 * marked-at, reason, notified-at, postponed and marked-expires where present, and janitor/expires only when
 * it still equals janitor/marked-expires (a person who changed it since owns it).
 */
void janitor_unmark_patch(const struct janitor_kv *kv, size_t n, struct janitor_patch *out);

/* What the sweeper does with a pod. */
enum janitor_action {
	JANITOR_SKIP,   /* leave it alone (see why) */
	JANITOR_WAIT,   /* nothing yet; look again at at_ms */
	JANITOR_NOTIFY, /* send the notice now (then record it), act no earlier than at_ms */
	JANITOR_ACT,    /* delete or scale it now, after a fresh GET and re-check */
};

enum janitor_skip {
	JANITOR_SKIP_NONE,          /* not skipped */
	JANITOR_SKIP_EXCLUDED,      /* its namespace is excluded (wins over everything) */
	JANITOR_SKIP_BEING_DELETED, /* metadata.deletionTimestamp is set */
	JANITOR_SKIP_INVALID,       /* an annotation could not be read */
	JANITOR_SKIP_EXEMPT,        /* janitor/exempt: "true" */
	JANITOR_SKIP_FOREVER,       /* janitor/ttl: forever */
	JANITOR_SKIP_NO_EXPIRY,     /* neither janitor/expires nor janitor/ttl */
};

struct janitor_decision {
	enum janitor_action action;
	enum janitor_skip why;   /* JANITOR_SKIP_NONE unless action is JANITOR_SKIP */
	int64_t at_ms;           /* WAIT, NOTIFY: earliest time it may act; else JANITOR_NO_TIME */
};

/*
 * The sweeper's rule (DESIGN.md "Janitor semantics") for a pod in state st at now_ms, with the
 * policy's notice_lead_ms (>= 0).  Skips, in this order: excluded namespace, being deleted,
 * invalid, exempt, forever, no expiry.  Otherwise, with expiry = st->expiry_ms:
 * - no notice yet: NOTIFY once now >= expiry - notice_lead (so it can act right at expiry), and
 *   WAIT with at_ms = expiry - notice_lead before that;
 * - a notice at notified_at: ACT when now >= expiry and now >= notified_at + notice_lead, exactly
 *   at that instant and not 1 ms before; else WAIT with at_ms = the later of the two.
 */
struct janitor_decision janitor_sweep_decision(const struct janitor_pod_state *st, int64_t now_ms,
					       int64_t notice_lead_ms, bool namespace_excluded,
					       bool being_deleted);

/* Static lower-case names for logs and metrics, e.g. "notify", "being-deleted"; never NULL. */
const char *janitor_action_str(enum janitor_action action);
const char *janitor_skip_str(enum janitor_skip why);

#endif
