/*
 * issue.h - the bridge's issue state machine and the rules for issue text.
 *
 * issue_plan() is a pure function: from the map row (store/store.h) and one
 * Alertmanager event it decides what to do on GitHub; issue_apply() is the
 * row change that action implies once GitHub accepted it.  No I/O here: the
 * reconciler calls GitHub (bridge/gh.h) and the store.  The text helpers
 * keep titles, bodies and markers within GitHub's limits.
 */
#ifndef AB_ISSUE_H
#define AB_ISSUE_H

#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "store/store.h"

/* What to do on GitHub for one event (DESIGN.md, "Bridge semantics"). */
enum issue_action {
	ISSUE_NOTHING,           /* no call; still issue_apply() it (see there) */
	ISSUE_CREATE,            /* POST /repos/{o}/{r}/issues */
	ISSUE_COMMENT_REFIRE,    /* comment "firing again since ..." on the open issue */
	ISSUE_REOPEN,            /* PATCH state=open, state_reason=reopened, plus a comment */
	ISSUE_CREATE_LINKED,     /* create a new issue whose body links row->number */
	ISSUE_CLOSE,             /* comment "resolved at ...", PATCH state=closed, completed */
	ISSUE_COMMENT_RESOLVED,  /* auto_close false: comment "resolved at ..." only */
};

/* A static lower-case name, e.g. "create_linked"; never NULL. */
const char *issue_action_str(enum issue_action a);

/* One alert transition, as queued in struct store_event. */
struct issue_event {
	int firing;            /* non-zero: status "firing"; zero: "resolved" */
	int64_t starts_at_ms;  /* the alert's startsAt: identifies the episode */
	int64_t ends_at_ms;    /* endsAt; 0 when absent (Alertmanager's 0001-01-01) */
};

/* A receiver's settings that the planner needs (DESIGN.md, Configuration). */
struct issue_policy {
	int auto_close;            /* non-zero: close on resolve; zero: comment only */
	int64_t reopen_window_ms;  /* reopen when closed at most this long ago */
};

/*
 * Decide the action for event ev given the map row (NULL: no row yet), the
 * receiver's policy pol and the current time now_ms.  Pure: reads only its
 * arguments.  When why is not NULL, *why is set to a static lower-case
 * reason for logs (never NULL).  ev and pol must not be NULL.
 *
 * An issue counts as closed when row->state is "closed", open otherwise.
 * A resolve's end is ev->ends_at_ms, or ev->starts_at_ms when that is 0 or
 * earlier (Alertmanager always sends endsAt on resolve; this only keeps a
 * malformed event from being applied twice).
 *
 * Stale events (ignored, reason "stale event" unless said otherwise):
 *  - any event with starts_at < row->episode_starts_ms: it belongs to an
 *    older episode (out-of-order delivery, an HA peer's late copy);
 *  - a firing with starts_at < row->resolved_ends_ms ("started before the
 *    applied resolve ended"): Alertmanager merges an alert that overlaps a
 *    resolved one into it, keeping its startsAt, so a real new episode
 *    starts at or after the previous endsAt;
 *  - a resolve whose end is before row->resolved_ends_ms.
 *
 * Firing (after the stale checks):
 *   no row                                 CREATE          "no issue for the alert yet"
 *   starts_at == episode (open or closed)  NOTHING         "same episode"
 *   new episode, open                      COMMENT_REFIRE  "new episode, issue open"
 *   new episode, closed more than
 *     reopen_window ago (or closed_at 0)   CREATE_LINKED   "closed longer ago than reopen_window"
 *   new episode, closed within the window
 *     as not_planned                       NOTHING         "closed as not planned"
 *     as duplicate                         NOTHING         "closed as duplicate"
 *     otherwise                            REOPEN          "closed within reopen_window"
 * "Within" is now_ms - closed_at_ms <= reopen_window_ms.  A person's won't-fix
 * is respected for the window; after it a new episode gets a new issue that
 * links the old one.
 *
 * Resolved:
 *   no row                                 NOTHING         "no issue for the alert"
 *   end == row->resolved_ends_ms           NOTHING         "resolve already applied"
 *   closed                                 NOTHING         "issue already closed"
 *   open, auto_close                       CLOSE           "resolved, auto_close on"
 *   open, auto_close off                   COMMENT_RESOLVED "resolved, auto_close off"
 * so with auto_close off the resolve comment is made once per episode.
 */
enum issue_action issue_plan(const struct store_issue *row, const struct issue_event *ev,
			     const struct issue_policy *pol, int64_t now_ms, const char **why);

/*
 * Does a firing ev still count against row: ev->firing, and ev neither older
 * than row's episode nor started before the resolve row applied (so the alert
 * fires by row and ev: the episode row applied and no resolve of it, or a
 * newer one)?  Zero for a resolve and for the stale firings issue_plan()
 * ignores.  Pure; row and ev must not be NULL.  The reconciler asks it of a
 * row written in dry-run whose issue GitHub does not have: only such a
 * firing makes the issue.
 */
int issue_firing_current(const struct store_issue *row, const struct issue_event *ev);

/*
 * Does issue_plan() decide ISSUE_NOTHING for ev only because row says the
 * issue is closed?  Non-zero when row->state is "closed", issue_plan(row, ...)
 * is ISSUE_NOTHING, and it would be an action were the issue open (a new
 * episode of an issue closed as not planned or duplicate, a new resolve of a
 * closed issue).  Then the decision rests on a state a person may have changed
 * on GitHub since (reopened, deleted): the reconciler reads the issue and
 * plans again.  Zero for stale events and for repeats of the episode or
 * resolve row applied, which stay call-free.  Pure: arguments as issue_plan();
 * row NULL gives 0.
 */
int issue_plan_rests_on_closed(const struct store_issue *row, const struct issue_event *ev,
			       const struct issue_policy *pol, int64_t now_ms);

/*
 * Change row as action a implies, after it succeeded on GitHub, so that the
 * next issue_plan() sees it.  Call it for every planned action, ISSUE_NOTHING
 * included, and store the row: a NOTHING still records the newest episode
 * and resolve seen (so the repeats of an episode left alone as not_planned
 * stay "same episode", and a resolve of a closed issue is not seen as new).
 * row NULL is a no-op.  row's strings are heap-owned as store_issue_get()
 * returns them (state and state_reason are replaced and the old ones freed).
 *
 *   CREATE, CREATE_LINKED  state open, state_reason NULL, episode = starts_at,
 *                          resolved_ends 0, closed_at 0, created_at and
 *                          updated_at now_ms; CREATE_LINKED sets
 *                          previous_number to the old number and number to 0.
 *                          The caller then fills number (and repo, receiver,
 *                          key of a new row).
 *   COMMENT_REFIRE         episode = starts_at
 *   REOPEN                 state open, state_reason "reopened", closed_at 0,
 *                          episode = starts_at
 *   CLOSE                  state closed, state_reason "completed",
 *                          closed_at now_ms, resolved_ends = the resolve's end
 *   COMMENT_RESOLVED       resolved_ends = the resolve's end
 *   NOTHING                episode = max(episode, starts_at); for a resolve
 *                          not older than the episode, resolved_ends =
 *                          max(resolved_ends, its end)
 * Resolves also raise episode to starts_at when newer.  updated_at is set to
 * now_ms whenever a field changes.
 */
void issue_apply(struct store_issue *row, enum issue_action a, const struct issue_event *ev,
		 int64_t now_ms);

/*
 * The opening of the episode marker that every issue body and comment
 * alertbridge posts carries: "<!-- alertbridge:episode=<startsAt, RFC 3339>"
 * (the bridge writes it, bridge/bridge_exec.c).
 */
#define ISSUE_EPISODE_MARKER_OPEN "<!-- alertbridge:episode="

/*
 * What the episode markers of an issue say was applied to it (the map row's
 * episode_starts_ms and resolved_ends_ms, as issue_apply() left them), for a
 * map rebuilt from GitHub (bridge/rebuild.h).
 */
struct issue_episode_seen {
	int64_t starts_ms;         /* the newest episode marker's startsAt (ms UTC); 0: none */
	int64_t resolved_ends_ms;  /* the resolve applied to that episode (ms UTC); 0: none */
};

/*
 * Fold the episode markers of text (NULL: none; an issue body or a comment)
 * into *seen, which starts zeroed; texts may come in any order.  A marker is
 * ISSUE_EPISODE_MARKER_OPEN, its startsAt (RFC 3339) ended by a space, tab or
 * line break, then optionally the transition: "event=firing" or
 * "event=resolved-<endsAt, ms since the epoch>" (the comment markers the
 * bridge writes); markers whose startsAt does not parse are skipped.
 *   - a startsAt newer than seen->starts_ms is the newest episode: starts_ms
 *     takes it and resolved_ends_ms is reset (its resolve is not known yet);
 *   - a "resolved-" marker of the newest episode means its resolve was
 *     applied: resolved_ends_ms = the latest of them, its endsAt or, when that
 *     is earlier (or 0), its startsAt (issue_plan()'s resolve end).
 * A marker without a transition (a body) or "event=firing" leaves
 * resolved_ends_ms as it is: within one episode the resolve comes last.
 */
void issue_episode_fold(const char *text, struct issue_episode_seen *seen);

/* GitHub's limits: title 256 characters, body and comment 65536. */
#define ISSUE_TITLE_MAX_CHARS 256
#define ISSUE_BODY_MAX_BYTES 65536

/*
 * Append the hidden marker "<!-- alertbridge:key=KEY -->" that ends every
 * issue body, so the map can be rebuilt from GitHub.  key is a fingerprint
 * (16 hex digits) or a group key hash (64 hex digits); it must consist of
 * [A-Za-z0-9._-] so that issue_marker_parse() finds it again.
 */
void issue_marker(const char *key, struct buf *out);

/*
 * The marker of an alert's issue, which names its receiver too, so that
 * receivers sharing a repository each rebuild only their own rows:
 * "<!-- alertbridge:receiver=RECEIVER --> <!-- alertbridge:key=KEY -->",
 * appended to out.  The body still ends with the key marker above (old
 * readers find the key); the whole string is unique per (receiver, key), so a
 * create looked for by it (gh_issue_find_marker) is never another receiver's.
 * receiver is percent-encoded as http_url_escape() does: every byte but
 * [A-Za-z0-9._~-] becomes %XX (upper-case hex), e.g. "team a" -> "team%20a"
 * (markers written before 2026-11 have '~' as %7E: both are read); NULL or "" gives
 * issue_marker(key, out) alone.  key as issue_marker().
 */
void issue_marker_receiver(const char *receiver, const char *key, struct buf *out);

/*
 * Find the last marker in body (NULL: none) and set key_out to its key.
 * Tolerates spaces, tabs and line breaks after "<!--" and before "-->" (a
 * body edited on GitHub).  The key is 1-128 characters of [A-Za-z0-9._-].
 * Returns 1 when found (key_out reset, then set), 0 otherwise (key_out
 * unchanged).
 */
int issue_marker_parse(const char *body, struct buf *key_out);

/*
 * issue_marker_parse() that also reads the receiver: when the last key
 * marker directly follows a "<!-- alertbridge:receiver=R -->" (only spaces,
 * tabs or line breaks between), receiver_out is set to R decoded (1-255
 * bytes once decoded; a malformed %XX makes the receiver marker count as
 * absent); else (the form issue_marker() writes, and issues made before
 * receivers were named) receiver_out is reset to "".  Returns 1 when a key
 * marker was found (both outputs set), 0 otherwise (both unchanged).
 */
int issue_marker_parse_receiver(const char *body, struct buf *receiver_out,
				struct buf *key_out);

/*
 * Append to out a GitHub issue title made from raw (NULL: ""): its first
 * line that is not empty after cleaning; C0 and C1 control characters and
 * DEL removed (a tab becomes a space); invalid UTF-8 replaced by U+FFFD;
 * leading and trailing spaces trimmed; at most ISSUE_TITLE_MAX_CHARS code
 * points, when longer cut on a code point and ended with "…" (the total
 * still 256); "alert" when nothing is left.  Line breaks are \n, \r, U+2028
 * and U+2029.
 */
void issue_title_clean(const char *raw, struct buf *out);

/*
 * Append to out body (NULL: "") followed by "\n\n" and marker (NULL: no
 * marker, for comments), at most ISSUE_BODY_MAX_BYTES bytes in all.  When it
 * does not fit, body is cut on a UTF-8 boundary and
 * "\n\n_(truncated by alertbridge: N bytes omitted)_" is added after it,
 * before the marker; the marker is always kept whole.  marker must be short
 * (the ones issue_marker() makes are).
 */
void issue_body_fit(const char *body, const char *marker, struct buf *out);

/*
 * The map key for issue_per: group: SHA-256 (FIPS 180-4) of group_key (the
 * payload's groupKey) as 64 lower-case hex digits and a NUL in out.
 */
void issue_group_key_hash(const char *group_key, char out[65]);

/*
 * Check that repo is "owner/name" as GitHub allows: owner 1-39 characters of
 * [A-Za-z0-9-_] not starting with '-' (the underscore is for Enterprise
 * Managed Users), name 1-100 characters of [A-Za-z0-9._-] and not "." or
 * "..".  Returns ERR_OK, or ERR_INVALID with the reason in errmsg (may be
 * NULL), e.g. `repo "a/b/c": want owner/name`.
 */
enum err issue_repo_valid(const char *repo, struct buf *errmsg) WARN_UNUSED;

#endif
