/*
 * store_silences.h - the store's part for silences made from GitHub issues
 * (schema version 11; bridge/gh_webhook.h, bridge/silence.h): the GitHub
 * deliveries already taken (X-GitHub-Delivery), the lookup of a map row by
 * its issue, and the silences alertbridge made for a map row.  Thread-safe,
 * as every store call; times are ms since the epoch, UTC.
 */
#ifndef AB_STORE_SILENCES_H
#define AB_STORE_SILENCES_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"
#include "store/store_events.h"

/*
 * Take GitHub delivery id (the X-GitHub-Delivery GUID) at now_ms: *fresh = 1
 * when it was not taken before (it is now), 0 when it was (a redelivery:
 * act on nothing).  Deliveries taken before now_ms - keep_ms are deleted
 * first (database_retention), so the table stays the size of what is live.
 * Errors: ERR_INVALID (st NULL, id empty), ERR_DB (logged; nothing taken).
 */
enum err store_delivery_take(struct store *st, const char *id, int64_t now_ms, int64_t keep_ms,
			     int *fresh) WARN_UNUSED;
/* Forget delivery id again (its work could not be queued).  Errors: as above. */
enum err store_delivery_drop(struct store *st, const char *id) WARN_UNUSED;
/*
 * Take key (e.g. "comment:ID", a GitHub comment's ID) for the queued command
 * received at at_ms, in the same table as the deliveries (and pruned with
 * them, by now_ms - keep_ms): *fresh = 1 when no command took it before (it
 * is now) or this one did (the same at_ms: a retry of this command), 0 when
 * another command did: the same signed body sent again under a new
 * X-GitHub-Delivery, which the signature does not cover.
 * Errors: ERR_INVALID (st NULL, key empty), ERR_DB (logged; nothing taken).
 */
enum err store_command_take(struct store *st, const char *key, int64_t at_ms, int64_t now_ms,
			    int64_t keep_ms, int *fresh) WARN_UNUSED;

/*
 * The map row that points at issue number of repo ("owner/name", compared
 * without regard to ASCII case, as GitHub compares names): its receiver and
 * key (malloc'd, caller frees).  When several rows share the issue (a storm
 * summary) the first by (receiver, key).  Rows written in dry-run (number
 * 0) never match.  Errors: ERR_INVALID, ERR_NOTFOUND (no row: an issue
 * alertbridge does not track), ERR_DB (logged).
 */
enum err store_issue_by_number(struct store *st, const char *repo, int64_t number,
			       char **receiver, char **key) WARN_UNUSED;

/*
 * A silence alertbridge made in Alertmanager for a map row.  The strings
 * are the caller's on input (store_silence_put(): borrowed, copied), the
 * store's copies in the arrays it returns (store_silences_free()).
 */
struct store_silence {
	const char *receiver;
	const char *key;
	const char *silence_id; /* Alertmanager's ID */
	const char *created_by; /* the GitHub login that asked for it */
	int64_t ends_at_ms;     /* its endsAt */
	int64_t created_at_ms;
	int64_t expired_at_ms;  /* when /unsilence expired it; 0: not expired by us */
};

/*
 * Record s (copied).  The same (receiver, key, silence_id) again replaces it.
 * Errors: ERR_INVALID (a string empty), ERR_DB (logged).
 */
enum err store_silence_put(struct store *st, const struct store_silence *s) WARN_UNUSED;
/*
 * The silences of (receiver, key) that are active at now_ms (not expired by
 * us, ends_at_ms > now_ms), newest first, into a new array *out of *n (free
 * with store_silences_free()); none: ERR_OK with *n 0.
 * Errors: ERR_INVALID, ERR_DB (logged).
 */
enum err store_silence_active(struct store *st, const char *receiver, const char *key,
			      int64_t now_ms, struct store_silence **out, size_t *n) WARN_UNUSED;
/* Mark silence_id of (receiver, key) expired at now_ms.  Errors: as above. */
enum err store_silence_expired(struct store *st, const char *receiver, const char *key,
			       const char *silence_id, int64_t now_ms) WARN_UNUSED;
/*
 * Call fn for the dead-lettered commands of the silence queue (kind
 * "silence": a /silence Alertmanager refused) of receiver and key (each
 * NULL: any), oldest first, at most max (capped at 1000); stop early when fn
 * returns non-zero (still ERR_OK).  Unlike store_dead_unmapped() they are
 * listed whether or not their (receiver, key) has a map row (it has one: the
 * command came from its issue), for `map list` and the alert's card.  ev is
 * valid only during the call; fn runs without the store's lock.
 * Errors: ERR_INVALID (st or fn missing, max <= 0), ERR_DB (logged).
 */
enum err store_silence_dead_each(struct store *st, const char *receiver, const char *key,
				 int max, int (*fn)(void *ctx, const struct store_event *ev),
				 void *ctx) WARN_UNUSED;
/* Free an array from store_silence_active(); v may be NULL. */
void store_silences_free(struct store_silence *v, size_t n);

#endif
