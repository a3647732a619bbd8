/*
 * storm.h - alert storms: when a receiver's backlog of issue creates would
 * take longer than its storm.storm_after to drain at the GitHub content
 * budget, new alerts are folded into one summary issue per alertname
 * instead of one issue each; the summary's text follows its alerts (paced:
 * at most one edit per summary per STORM_SYNC_INTERVAL_MS) and it closes
 * when all of them resolved.  The row representation is in
 * store/store_groups.h.
 */
#ifndef AB_STORM_H
#define AB_STORM_H

#include <jansson.h>
#include <stdint.h>

#include "bridge/gh.h"
#include "bridge/issue.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_groups.h"

/* A summary's title and body are written to GitHub at most this often (plus its close). */
#define STORM_SYNC_INTERVAL_MS 60000
/* Members listed in the body's table with their labels (firing first). */
#define STORM_LIST_DETAILED 50
/* Longest member line (labels) in bytes, cut on a UTF-8 boundary. */
#define STORM_LINE_MAX_BYTES 200
/* Bytes of fingerprints listed (firing, then resolved); the rest are counted. */
#define STORM_KEYS_BUDGET_BYTES 40000
/* Wait after a failed summary call before the next one. */
#define STORM_RETRY_MS 30000

/* ---- pure parts ---- */

/*
 * Non-zero when a create should be folded: enabled, and pending_creates
 * creates at content_per_minute per minute would take longer than
 * storm_after_ms to drain (pending_creates * 60 s / content_per_minute >
 * storm_after_ms).  content_per_minute 0 counts as 80 (GitHub's ceiling).
 */
int storm_should_fold(int enabled, int64_t pending_creates, unsigned content_per_minute,
		      int64_t storm_after_ms);

/*
 * The fewest pending creates that storm_should_fold() folds at (enabled),
 * >= 1: what the storm asks store_pending_creates() to count up to.
 */
int64_t storm_fold_threshold(unsigned content_per_minute, int64_t storm_after_ms);

enum storm_change {
	STORM_STALE,    /* older than what the member holds: ignored */
	STORM_SAME,     /* a repeat of what it holds: nothing to do */
	STORM_CHANGED,  /* m was updated */
};

/*
 * Apply one alert transition ev to member m, with the episode rules of
 * issue_plan() (bridge/issue.h): an event of an older episode is stale; a
 * firing of the same episode is the same (also once it resolved); a firing
 * whose start is before the applied resolve's end is stale; a new episode
 * sets firing, starts_at and clears ends_at; a resolve sets firing 0 and
 * ends_at (ev's end, or its start when that is later), unless it is not
 * newer than the resolve already applied.
 */
enum storm_change storm_member_apply(struct store_member *m, const struct issue_event *ev);

/*
 * Append the alertname of event_json (a queued event's payload,
 * am_event_json()) to out; "" when absent or unreadable.
 */
void storm_alertname(const char *event_json, struct buf *out);

/*
 * Append the member line of event_json to out: its labels other than
 * alertname as "name=value" separated by spaces, in the payload's (sorted)
 * order, with control characters and '|' (a table cell's end) replaced by
 * spaces and '/', at most STORM_LINE_MAX_BYTES bytes (cut on a UTF-8
 * boundary, ending "…").  "" when there are none or it is unreadable.
 */
void storm_member_line(const char *event_json, struct buf *out);

/*
 * The line of storm_member_line() from a labels object (NULL: none), leaving
 * out also every label whose value is the same in except (NULL: none; e.g. a
 * group's commonLabels, so that only what tells its members apart is left).
 */
void storm_labels_line(const json_t *labels, const json_t *except, struct buf *out);

/* Non-zero when key (from an issue marker) names a storm summary, not an alert. */
int storm_is_summary_key(const char *key);

/*
 * Append the summary's marker key to out: "storm-" then the first 16 hex
 * digits of SHA-256(receiver "\n" repo "\n" alertname) then "-" and
 * created_at_ms, so each summary (also a later one for the same alertname)
 * has its own issue_marker().
 */
void storm_marker_key(const char *receiver, const char *repo, const char *alertname,
		      int64_t created_at_ms, struct buf *out);

/* Append n (>= 0) with thousands separators to out: 1234567 -> "1,234,567". */
void storm_count_human(int64_t n, struct buf *out);

/*
 * The template view of summary s with its n members m (as
 * store_member_list() orders them: firing first), a new JSON object the
 * caller json_decref()s.  Fields (documented for users with the templates):
 *   alertname, receiver, repo        string
 *   status                           "firing" while any member fires, else "resolved"
 *   firing, resolved, total          integer; firingHuman, resolvedHuman, totalHuman
 *                                    the same as "1,234"
 *   count, countHuman                firing while any fires, else total (the title's)
 *   alerts                           [{fingerprint, line, status, startsAt, endsAt}] the
 *                                    first STORM_LIST_DETAILED members
 *   notListed, notListedHuman        members not in alerts (0: key absent)
 *   firingKeys, resolvedKeys         fingerprints separated by spaces, firing ones
 *                                    first, together at most STORM_KEYS_BUDGET_BYTES
 *   firingKeysOmitted, resolvedKeysOmitted  those left out (0: key absent)
 * Never NULL.
 */
json_t *storm_view(const struct store_summary *s, const struct store_member *m, size_t n);

/*
 * Render the summary's title (templates/storm_title.mustache, no escaping,
 * cleaned by issue_title_clean()) and body (storm_body.mustache, HTML
 * escaping, ended by the marker of marker_key and cut with
 * issue_body_fit() to GitHub's 65 536 bytes) over view, appending to title
 * and body.  Errors: ERR_INVALID when a template is missing or fails.
 */
enum err storm_text(const json_t *view, const char *marker_key, struct buf *title,
		    struct buf *body, struct buf *errmsg) WARN_UNUSED;

/* ---- the part that calls the store and GitHub (the bridge worker's thread) ---- */

struct storm;

struct storm_options {
	const struct config *cfg;   /* receivers and the content budget; outlives the storm */
	struct store *store;        /* outlives the storm */
	struct gh_client *gh;       /* the bridge's client (paced); outlives the storm */
	int64_t sync_interval_ms;   /* 0: STORM_SYNC_INTERVAL_MS */
};

/* Never NULL.  Copies opts. */
struct storm *storm_new(const struct storm_options *opts);
/* Free; s may be NULL. */
void storm_free(struct storm *s);
/* Use cfg (a reloaded config, core/reload.h) from now on; on the bridge's worker thread. */
void storm_set_cfg(struct storm *s, const struct config *cfg);

/* What the bridge does with an event after storm_route(). */
enum storm_route {
	STORM_PASS,      /* not the storm's: plan it as usual */
	STORM_PASS_NEW,  /* plan it as usual as an alert without a map row (it was unfolded) */
	STORM_DONE,      /* handled: with *rc ERR_OK the event is done, else fail it with errmsg */
};

/*
 * Route event ev of receiver rcv (repo: where its issue goes; row: its map
 * row, NULL when none):
 *   - a folded alert (row with a member row) of a summary not closed: the
 *     member is updated, the summary marked dirty when it changed, the
 *     event done: STORM_DONE;
 *   - a folded alert of a closed summary: a new firing episode unfolds it
 *     (store_member_unfold()) and continues as an alert without a row; any
 *     other event is done without a change (STORM_DONE);
 *   - a firing alert without a row, with storm enabled for rcv and
 *     storm_should_fold() true for the receiver's pending creates: folded
 *     into the live summary of (receiver, repo, alertname), made (state
 *     creating) when there is none: STORM_DONE;
 *   - anything else: STORM_PASS (STORM_PASS_NEW after an unfold).
 * No GitHub call is made here (storm_sync() makes them).  *rc is ERR_DB
 * when the store failed.
 */
enum storm_route storm_route(struct storm *s, const struct store_event *ev,
			     const struct cfg_receiver *rcv, const char *repo,
			     const struct store_issue *row, int64_t now_ms, enum err *rc,
			     struct buf *errmsg);

/*
 * Make the GitHub calls of at most one summary that is due
 * (store_summary_due()): create its issue (after looking for its marker when
 * an earlier attempt may have made it), or write its title and body, and
 * close it (completed) when none of its alerts fires.  Failures are logged
 * and retried after STORM_RETRY_MS; a rewrite GitHub refuses for good
 * (ERR_FORBIDDEN: an archived repository; ERR_INVALID) is logged at error
 * once and not tried again until the summary changes.  Returns 1 when a summary was handled,
 * 0 when none was due; after a call that returned 1 the next one returns 0
 * without looking, so that summaries (one per alertname) never take every
 * step of the worker from the queue.
 */
int storm_sync(struct storm *s, int64_t now_ms);

#endif
