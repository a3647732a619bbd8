/*
 * store_outbox.h - the janitor's Slack outbox (store_outbox.c): the
 * messages to pods' owners, delivered by the janitor's outbox worker with
 * retries.  Digests of several notices are store_digest.h.  Thread-safe, as
 * every store call; times are ms since the epoch, UTC.
 */
#ifndef AB_STORE_OUTBOX_H
#define AB_STORE_OUTBOX_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

struct store;

/*
 * Where a notice or a digest is in its delivery: pending until Slack
 * confirmed it (sent) or the janitor gave up (dead).  The database keeps the
 * words "pending", "sent", "dead" (store_notice_state_str()).
 */
enum store_notice_state {
	STORE_NOTICE_PENDING,
	STORE_NOTICE_SENT,
	STORE_NOTICE_DEAD,
};

/* "pending", "sent" or "dead" (static); "" for a value not of the enum. */
const char *store_notice_state_str(enum store_notice_state state);

/*
 * The janitor's Slack outbox (schema version 2): one row per message to a
 * pod's owner, delivered by the janitor's outbox worker with retries.  kind
 * is "notice" (starts a thread), "reminder", "cancelled" or "deleted"
 * (replies in the notice's thread).  state is "pending" until Slack
 * confirmed delivery ("sent") or the janitor gave up ("dead").
 * Ownership: the const strings are the caller's on input (borrowed for the
 * call; the store copies what it keeps and never writes through them); a
 * struct the store fills owns copies of every string, freed by
 * store_notice_release() (or store_notices_free()).
 */
struct store_notice {
	int64_t id;                    /* assigned by store_notice_add(); ignored on input */
	const char *namespace;         /* the pod's */
	const char *pod;
	const char *uid;               /* the pod's metadata.uid: a recreated pod is another pod */
	const char *kind;              /* notice | reminder | cancelled | deleted */
	int64_t expires_ms;            /* the expiry the message announces; 0 when none */
	const char *notify;            /* owner candidates for resolution: janitor/notify, */
	const char *owner;             /*   the owner label's value (either NULL) */
	const char *channel;           /* where to post; NULL until resolved ("" in webhook mode) */
	const char *thread_ts;         /* replies: the notice's Slack ts; NULL otherwise */
	const char *text;              /* the rendered message, Slack mrkdwn */
	enum store_notice_state state; /* read only (a new notice is pending) */
	int attempts;                  /* failed attempts so far */
	int64_t next_attempt_at_ms;    /* on input: not sent before (0: at once) */
	int64_t created_at_ms;         /* <= 0 on input: now */
	int64_t sent_at_ms;            /* when Slack confirmed; 0 until sent */
	const char *slack_channel_id;  /* from Slack's answer ("" in webhook mode) */
	const char *slack_ts;
	const char *last_error;
	int64_t digest_id;             /* read only: its digest (schema 8); 0: none */
	const char *line;              /* a notice's line of a digest (JSON object), or NULL */
};

/*
 * Queue n (copied; state pending, no attempts).  Required: namespace, pod,
 * uid, text non-empty, kind one of the four.  Sets n->id.
 * Errors: ERR_INVALID (errmsg names the field), ERR_DB.
 */
enum err store_notice_add(struct store *st, struct store_notice *n,
			  struct buf *errmsg) WARN_UNUSED;
/*
 * The oldest pending notice whose retry time has come (<= now_ms) into *out
 * (release with store_notice_release()).  ERR_NOTFOUND when there is none,
 * ERR_DB (logged).
 */
enum err store_notice_next(struct store *st, int64_t now_ms, struct store_notice *out) WARN_UNUSED;
/*
 * The newest notice of kind for the pod uid, whatever its state, into *out.
 * ERR_NOTFOUND when there is none, ERR_INVALID (uid or kind empty), ERR_DB (logged).
 */
enum err store_notice_latest(struct store *st, const char *uid, const char *kind,
			     struct store_notice *out) WARN_UNUSED;
/*
 * Record Slack's confirmation of pending notice id: state sent, sent_at_ms,
 * channel (the resolved one), slack_channel_id and slack_ts (may be "").
 * Errors: ERR_NOTFOUND (no pending notice id), ERR_DB (logged).
 */
enum err store_notice_sent(struct store *st, int64_t id, int64_t sent_at_ms, const char *channel,
			   const char *slack_channel_id, const char *slack_ts) WARN_UNUSED;
/*
 * Record a failed attempt of pending notice id: attempts+1, last_error,
 * retry not before next_at_ms, and channel (NULL: unresolved again).
 * Errors: ERR_NOTFOUND (no pending notice id), ERR_DB (logged).
 */
enum err store_notice_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *channel,
			    const char *error) WARN_UNUSED;
/*
 * Give up on pending notice id (state dead, attempts+1, last_error = reason).
 * Errors: ERR_NOTFOUND (no pending notice id), ERR_DB (logged).
 */
enum err store_notice_dead(struct store *st, int64_t id, const char *reason) WARN_UNUSED;
/*
 * Give up on every pending notice of the pod uid (e.g. the alert resolved
 * before the notice went out); *n (may be NULL) gets how many.  Errors: ERR_DB (logged).
 */
enum err store_notice_cancel(struct store *st, const char *uid, const char *reason,
			     int64_t *n) WARN_UNUSED;

/* Pending notices; -1 when st is NULL or on ERR_DB (logged). */
int64_t store_notice_pending_count(struct store *st);
/* Free the strings of n (not n itself); n may be NULL. */
void store_notice_release(struct store_notice *n);

#endif
