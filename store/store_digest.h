/*
 * store_digest.h - digests of the Slack outbox (store_digest.c): one
 * message for several pending notices (store_outbox.h) of one owner or one
 * thread.  Thread-safe, as every store call; times are ms since the epoch,
 * UTC.
 */
#ifndef AB_STORE_DIGEST_H
#define AB_STORE_DIGEST_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "store/store_outbox.h"

struct store;

/*
 * A digest (schema version 8): one Slack message for several pending
 * notices of one owner (kind "notice": a table of the pods, a new thread),
 * or for several replies of one kind in one thread (thread_ts set).  A
 * digest too long for one message is several parts (part of parts), each
 * its own row and message.  state as for a notice; a digest's members are
 * pending while it is, sent with it (same sent_at_ms, slack_channel_id,
 * slack_ts: replies to a member thread under its part) or dead with it.
 * Ownership as struct store_notice's: the caller's strings on input, the
 * store's copies in a digest it fills (store_digest_release()).
 */
struct store_digest {
	int64_t id;                    /* assigned by store_digest_add() */
	const char *kind;              /* the members' kind */
	const char *channel;           /* where it goes (resolved; "" in webhook mode) */
	const char *thread_ts;         /* replies: the thread; NULL for notices */
	int part, parts;               /* 1-based part of how many */
	const char *text;              /* the rendered message, Slack mrkdwn */
	enum store_notice_state state; /* read only */
	int attempts;                  /* read only: failed attempts so far */
	int64_t next_attempt_at_ms;    /* not sent before (0: at once) */
	int64_t created_at_ms;         /* <= 0 on input: now */
	int64_t sent_at_ms;            /* read only */
	const char *slack_channel_id;  /* read only */
	const char *slack_ts;          /* read only */
	const char *last_error;        /* read only */
};

/*
 * The pending notices not in a digest that may go out with head (a pending
 * notice read from the store): same kind, thread_ts, notify, owner and
 * channel (SQL IS: NULL equals NULL), due by due_by_ms, oldest first, at
 * most max, head itself included; into a new array *out of *n (free with
 * store_notices_free()).  Errors: ERR_INVALID, ERR_DB (logged); *out NULL then.
 */
enum err store_notice_batch(struct store *st, const struct store_notice *head, int64_t due_by_ms,
			    size_t max, struct store_notice **out, size_t *n) WARN_UNUSED;
/* Free n notices of v and v; v may be NULL. */
void store_notices_free(struct store_notice *v, size_t n);
/*
 * Add the nparts digests parts[0..nparts) (ids set) and make their members
 * (notice ids members[first[i]..first[i+1]) for part i; first has nparts+1
 * offsets) theirs, channel set to the part's: all or nothing, in one
 * transaction, before any is posted.  Errors: ERR_INVALID (a part without
 * kind, text, channel or members), ERR_CONFLICT (a member not pending or in
 * a digest already: nothing added), ERR_DB (logged); errmsg says which.
 */
enum err store_digest_add(struct store *st, struct store_digest *parts, size_t nparts,
			  const int64_t *members, const size_t *first,
			  struct buf *errmsg) WARN_UNUSED;
/* The oldest pending digest due by now_ms into *out (store_digest_release()).
 * ERR_NOTFOUND when none, ERR_DB (logged). */
enum err store_digest_next(struct store *st, int64_t now_ms, struct store_digest *out) WARN_UNUSED;
/* Digest id and its pending members delivered (see struct store_digest), in
 * one transaction.  Errors: ERR_NOTFOUND (no pending digest id), ERR_DB (logged). */
enum err store_digest_sent(struct store *st, int64_t id, int64_t sent_at_ms,
			   const char *slack_channel_id, const char *slack_ts) WARN_UNUSED;
/* A failed attempt of pending digest id: attempts+1, retry not before
 * next_at_ms, channel (NULL: kept), error also on its members.
 * Errors: ERR_NOTFOUND, ERR_DB (logged). */
enum err store_digest_retry(struct store *st, int64_t id, int64_t next_at_ms, const char *channel,
			    const char *error) WARN_UNUSED;
/* Give up on pending digest id and its pending members (state dead).
 * Errors: ERR_NOTFOUND, ERR_DB (logged). */
enum err store_digest_dead(struct store *st, int64_t id, const char *reason) WARN_UNUSED;
/* The members of digest id, oldest first, into a new array *out of *n
 * (store_notices_free()).  Errors: ERR_INVALID, ERR_DB (logged). */
enum err store_digest_members(struct store *st, int64_t id, struct store_notice **out,
			      size_t *n) WARN_UNUSED;
/* Pending digests; -1 when st is NULL or on ERR_DB (logged). */
int64_t store_digest_pending_count(struct store *st);
/* Free the strings of d (not d itself); d may be NULL. */
void store_digest_release(struct store_digest *d);

#endif
