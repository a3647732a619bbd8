/*
 * store_map.h - the issue map (store_map.c): one row per (receiver, key),
 * struct store_issue (store.h), saying which GitHub issue an alert has, and
 * the repository scans that rebuild it from GitHub's markers.  Thread-safe,
 * as every store call; times are ms since the epoch, UTC.
 */
#ifndef AB_STORE_MAP_H
#define AB_STORE_MAP_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "store/store.h"

/*
 * Fetch the map row into *out (release with store_issue_release()).
 * Errors: ERR_INVALID (receiver or key NULL or empty), ERR_NOTFOUND (no row),
 * ERR_DB (logged).
 */
enum err store_issue_get(struct store *st, const char *receiver, const char *key,
			 struct store_issue *out) WARN_UNUSED;
/*
 * Insert or replace a map row outside of an event (e.g. rebuilt from
 * GitHub).  The row is copied.  Required: receiver, key, repo non-empty,
 * state of the enum; state_reason is free text (GitHub adds values).
 * Errors: ERR_INVALID (a required field missing), ERR_DB (logged).
 */
enum err store_issue_put(struct store *st, const struct store_issue *row) WARN_UNUSED;
/*
 * Delete the map row, and in the same transaction the repeat_state of the
 * "bridge" events of (receiver, key), so that the key's next notification is
 * not a repeat (store_enqueue()) even if it equals the last one stored: its
 * next firing opens a new issue.  Errors: ERR_INVALID (receiver or key NULL
 * or empty), ERR_NOTFOUND (there was no map row; nothing changed), ERR_DB
 * (logged; nothing changed).
 */
enum err store_issue_forget(struct store *st, const char *receiver, const char *key) WARN_UNUSED;
/*
 * Call fn for each map row ordered by receiver, key; stop early when fn
 * returns non-zero (still ERR_OK).  receiver NULL lists all receivers.  The
 * row passed to fn is valid only during the call.  Rows are read in pages
 * and fn runs without the store's lock, so fn may call the store; a row
 * changed during the walk may or may not be seen, none is seen twice.
 * Errors: ERR_INVALID (st or fn NULL), ERR_DB (logged).
 */
enum err store_issue_each(struct store *st, const char *receiver,
			  int (*fn)(void *ctx, const struct store_issue *row), void *ctx) WARN_UNUSED;
/*
 * Number of distinct GitHub issues (repo, number) the map points at in state
 * (as GitHub last showed it): rows written in dry-run (number 0) are not
 * counted, and the rows a storm summary folds are one issue.  -1 when st is
 * missing, state is not of the enum, or on ERR_DB (logged).
 */
int64_t store_issue_count(struct store *st, enum store_issue_state state);

/*
 * Repository scans (schema version 4): the bridge rebuilds the map from the
 * markers on GitHub once per (receiver, repo) after the database was created
 * (bridge/bridge.h).  store_scan_get() sets *done_at_ms (may be NULL) to when
 * the scan of repo for receiver finished; ERR_NOTFOUND when it never did.
 * store_scan_done() records (or moves) that time.
 * Errors: ERR_INVALID (st NULL, receiver or repo NULL or empty), ERR_DB (logged).
 */
enum err store_scan_get(struct store *st, const char *receiver, const char *repo,
			int64_t *done_at_ms) WARN_UNUSED;
enum err store_scan_done(struct store *st, const char *receiver, const char *repo,
			 int64_t done_at_ms) WARN_UNUSED;

/*
 * Forget the finished scans of receiver (NULL: of every receiver), so the
 * next event of each (receiver, repo) scans the repository again and imports
 * what the map lacks (`alertbridge map rescan`, after restoring an older
 * backup: bridge/rebuild.h says what a scan imports).  *n (may be NULL) gets
 * how many scans were forgotten.  Errors: ERR_INVALID (st NULL, receiver
 * empty), ERR_DB (logged).
 */
enum err store_scan_forget(struct store *st, const char *receiver, int64_t *n) WARN_UNUSED;

#endif
