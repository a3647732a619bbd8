/*
 * store_groups.h - the rows behind issues that stand for several alerts
 * (store_groups.c): storm summaries and their members, and the group states
 * of receivers with issue_per: group.  Thread-safe, as every store call;
 * times are ms since the epoch, UTC.
 */
#ifndef AB_STORE_GROUPS_H
#define AB_STORE_GROUPS_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "store/store.h"

/*
 * Storm summaries (schema version 3; the logic is bridge/storm.h).  Under an
 * alert storm a receiver folds new alerts into one summary issue per
 * (receiver, repo, alertname).  A folded alert has two rows:
 *   - its map row (struct store_issue, as for any alert) whose repo and
 *     number are the summary issue's (number 0 until the summary exists on
 *     GitHub), state following the summary (open, then closed/completed);
 *   - a member row (struct store_member) naming the summary and the alert's
 *     own state in it.
 * A map row with a member row is "folded"; without one it is the alert's own
 * issue.  The summary row tracks the issue: state creating (row made, issue
 * not yet confirmed on GitHub), open, closed; dirty when members changed
 * since its text was last written to GitHub (synced_at_ms).
 */
enum store_summary_state {
	STORE_SUMMARY_CREATING,  /* row made, issue not yet confirmed on GitHub */
	STORE_SUMMARY_OPEN,
	STORE_SUMMARY_CLOSED,
};

/* "creating", "open" or "closed" (static; the database's words); "" for a value not of the enum. */
const char *store_summary_state_str(enum store_summary_state state);

struct store_summary {
	int64_t id;             /* assigned by store_summary_add() */
	char *receiver;
	char *repo;             /* "owner/name" of the summary issue */
	char *alertname;        /* "" for alerts without one */
	char *marker_key;       /* the key of the issue_marker() its body ends with */
	int64_t number;         /* GitHub issue number; 0 until created (and in dry-run) */
	enum store_summary_state state;
	int64_t created_at_ms;  /* row creation; <= 0 on input: now */
	int64_t synced_at_ms;   /* last write to GitHub; while creating, the last create attempt */
	int64_t next_sync_ms;   /* no GitHub call for it before (backoff after a failure) */
	int dirty;              /* members changed since synced_at_ms */
	int64_t firing;         /* read only: members firing */
	int64_t total;          /* read only: members */
};

/*
 * One alert folded into a summary.  key is the caller's on input (borrowed)
 * and a copy in a member the store fills; line is always owned by the
 * struct's holder (store_member_release() frees both).
 */
struct store_member {
	const char *key;      /* the alert's map key (fingerprint) */
	int64_t summary_id;
	int firing;           /* non-zero while firing, 0 once resolved */
	int64_t starts_at_ms; /* startsAt of the newest episode applied */
	int64_t ends_at_ms;   /* endsAt of the newest resolve applied; 0 if none */
	char *line;           /* its one-line description for the summary body (may be "") */
};

/*
 * Distinct keys with a pending "firing" event of the "bridge" queue for
 * receiver and no map row: the creates waiting, counted up to at_most (> 0;
 * <= 0: all).  The storm's question is only whether they pass a threshold:
 * a bounded count stops after at_most keys instead of reading the whole
 * queue for each event (a 10,000-alert storm took minutes).  -1 when st or
 * receiver is missing, or on ERR_DB (logged).
 */
int64_t store_pending_creates(struct store *st, const char *receiver, int64_t at_most);
/*
 * The newest summary of (receiver, repo, alertname) that is not closed into
 * *out (release with store_summary_release()).  ERR_NOTFOUND when none,
 * ERR_INVALID (an argument missing; alertname may be ""), ERR_DB (logged).
 */
enum err store_summary_live(struct store *st, const char *receiver, const char *repo,
			    const char *alertname, struct store_summary *out) WARN_UNUSED;
/* Summary id into *out.  ERR_NOTFOUND, ERR_INVALID (st NULL), ERR_DB (logged). */
enum err store_summary_get(struct store *st, int64_t id, struct store_summary *out) WARN_UNUSED;
/*
 * A summary that needs a GitHub call now (next_sync_ms <= now_ms and not
 * closed): one being created, one with no member firing (to close), or a
 * dirty one last written at least interval_ms ago; the most overdue first.
 * ERR_NOTFOUND when none, ERR_INVALID (st NULL), ERR_DB (logged).
 */
enum err store_summary_due(struct store *st, int64_t now_ms, int64_t interval_ms,
			   struct store_summary *out) WARN_UNUSED;
/*
 * Insert s (receiver, repo, alertname, marker_key, created_at_ms) in state
 * creating; sets s->id.  Errors: ERR_INVALID (a field missing), ERR_DB.
 */
enum err store_summary_add(struct store *st, struct store_summary *s,
			   struct buf *errmsg) WARN_UNUSED;
/*
 * Write s's repo, number, state, synced_at_ms, next_sync_ms and dirty (by
 * s->id).  Unless the state is creating, the map rows of its members are set
 * to the summary's repo, number and state in the same transaction (closed:
 * state_reason completed, closed_at_ms = synced_at_ms).  Errors: ERR_INVALID
 * (repo empty, state not one of the three), ERR_NOTFOUND (no summary s->id), ERR_DB.
 */
enum err store_summary_save(struct store *st, const struct store_summary *s,
			    struct buf *errmsg) WARN_UNUSED;
/*
 * The member row of (receiver, key) into *out (release with
 * store_member_release()).  ERR_NOTFOUND when the alert is not folded,
 * ERR_INVALID (an argument missing), ERR_DB (logged).
 */
enum err store_member_get(struct store *st, const char *receiver, const char *key,
			  struct store_member *out) WARN_UNUSED;
/*
 * In one transaction: mark pending event event_id done, upsert the map row
 * row and the member row m of (row->receiver, m->key), and when dirty mark
 * the summary m->summary_id dirty.  Errors: ERR_INVALID (row fails
 * store_issue_put()'s checks, m->key empty or not row->key, summary_id <= 0),
 * ERR_NOTFOUND (no event), ERR_CONFLICT (event not pending), ERR_DB (rolled back).
 */
enum err store_member_fold(struct store *st, int64_t event_id, const struct store_issue *row,
			   const struct store_member *m, int dirty, struct buf *errmsg) WARN_UNUSED;
/*
 * Forget that (receiver, key) was folded: delete its map row and member row
 * in one transaction (its next firing then plans like a new alert).
 * Errors: ERR_INVALID (an argument missing), ERR_DB.
 */
enum err store_member_unfold(struct store *st, const char *receiver, const char *key,
			     struct buf *errmsg) WARN_UNUSED;
/*
 * The members of summary_id, firing first, then by starts_at_ms and key, as
 * a new array *out of *n (free with store_member_list_free()).  ERR_INVALID
 * (st NULL), ERR_DB (logged; *out NULL, *n 0).
 */
enum err store_member_list(struct store *st, int64_t summary_id, struct store_member **out,
			   size_t *n) WARN_UNUSED;
/* Free the strings of m (not m) and zero it; m may be NULL. */
void store_member_release(struct store_member *m);
/* Free an array from store_member_list(); v may be NULL. */
void store_member_list_free(struct store_member *v, size_t n);
/* Free the strings of s (not s) and zero it; s may be NULL. */
void store_summary_release(struct store_summary *s);

/*
 * Group states (schema version 5; the logic is bridge/group.h): for a
 * receiver with issue_per: group, what the bridge remembers of the group of
 * map row (receiver, key) besides that row: its members' states and the
 * pending update of the issue body that lists them.  A pending update is
 * this row's dirty flag, so it survives a restart.  The const strings are
 * the caller's on input (borrowed for the call), the store's copies in a
 * state it fills (store_group_release()).
 */
struct store_group {
	const char *receiver;
	const char *key;      /* the map key: SHA-256 of the groupKey */
	const char *members;  /* JSON array of the members' states (opaque here; bridge/group.h) */
	const char *payload;  /* the newest event document of the group, to render the body */
	int dirty;            /* the issue body does not show the members yet */
	int64_t synced_at_ms; /* last body written to GitHub (or the issue created); 0: never */
	int64_t next_sync_ms; /* no body update before (backoff after a failure); 0: none */
};

/*
 * The group state of (receiver, key) into *out (release with
 * store_group_release()).  ERR_NOTFOUND when none, ERR_INVALID (an argument
 * missing), ERR_DB (logged).
 */
enum err store_group_get(struct store *st, const char *receiver, const char *key,
			 struct store_group *out) WARN_UNUSED;
/*
 * A group state whose body update is due: dirty, next_sync_ms <= now_ms,
 * synced_at_ms + interval_ms <= now_ms (at most one update per interval_ms
 * per issue), and whose map row has an issue (number > 0); the longest due
 * first.  ERR_NOTFOUND when none, ERR_INVALID (st NULL), ERR_DB (logged).
 */
enum err store_group_due(struct store *st, int64_t now_ms, int64_t interval_ms,
			 struct store_group *out) WARN_UNUSED;
/*
 * In one transaction: mark pending event event_id done, upsert the map row
 * row (NULL: none) and the group state g (copied).  Both happen or neither.
 * Errors: ERR_INVALID (g without receiver, key, members or payload; row
 * fails store_issue_put()'s checks), ERR_NOTFOUND (no event), ERR_CONFLICT
 * (event not pending), ERR_DB (rolled back; errmsg has sqlite's message).
 */
enum err store_group_done(struct store *st, int64_t event_id, const struct store_issue *row,
			  const struct store_group *g, struct buf *errmsg) WARN_UNUSED;
/*
 * Record the outcome of a body update of g (receiver, key): its dirty,
 * synced_at_ms and next_sync_ms; members and payload are left alone.
 * Errors: ERR_INVALID (receiver or key missing), ERR_NOTFOUND (no such
 * state), ERR_DB.
 */
enum err store_group_synced(struct store *st, const struct store_group *g,
			    struct buf *errmsg) WARN_UNUSED;
/* Free the strings of g (not g) and zero it; g may be NULL. */
void store_group_release(struct store_group *g);

#endif
