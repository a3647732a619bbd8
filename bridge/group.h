/*
 * group.h - issue_per: group: one issue per Alertmanager group (DESIGN.md,
 * "Bridge semantics").  The group's episode starts when it starts firing after
 * all its members resolved; a member resolving, or a new member joining while
 * others fire, is not a new episode.  The issue body lists every member seen
 * in the episode as a Markdown task list ("- [ ]" firing, "- [x]" resolved),
 * rewritten at most once per github.body_update_interval; the group closes
 * when all its members resolved.
 *
 * The pure part turns one group event (am_group_event_json()) and the members
 * remembered (store/store_groups.h, struct store_group) into the issue_event that
 * issue_plan() (bridge/issue.h) decides on, so the group's issue follows the
 * same state table as an alert's.  When no members are remembered (a map
 * rebuilt after a lost database) the map row decides: a firing group goes on
 * with the row's episode unless the row shows the group resolved
 * (group_issue_event()).  The rest makes the paced body updates.
 */
#ifndef AB_GROUP_H
#define AB_GROUP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "bridge/gh.h"
#include "bridge/issue.h"
#include "core/buf.h"
#include "core/err.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_groups.h"

/* Wait after a failed body update before the next attempt. */
#define GROUP_RETRY_MS 30000

/* One member of a group: an alert of it, as last seen. */
struct group_member {
	/*
	 * m.key is the alert's fingerprint; m.firing, m.starts_at_ms and
	 * m.ends_at_ms follow its notifications with the episode rules of
	 * storm_member_apply(); m.line is what tells it apart from the other
	 * members (its labels not in the group's commonLabels, alertname
	 * excepted; storm_labels_line()).  m.summary_id is unused (0).
	 */
	struct store_member m;
	char *alertname;  /* its labels.alertname, "" when none */
};

/* The members seen in the group's current episode, in the order first seen. */
struct group_members {
	struct group_member *v;
	size_t n;
};

/*
 * Parse the members JSON (store_group.members, as group_members_json()
 * writes it) into *out (release with group_members_release()).  json NULL or
 * "" is no member.  Errors: ERR_INVALID (not such an array; *out is empty).
 */
enum err group_members_parse(const char *json, struct group_members *out,
			     struct buf *errmsg) WARN_UNUSED;
/*
 * Append g as a JSON array to out: [{"fingerprint", "alertname", "line",
 * "firing" (bool), "startsAt", "endsAt" (ms since the epoch, UTC)}].
 */
void group_members_json(const struct group_members *g, struct buf *out);
/* Free the members of g and zero it; g may be NULL. */
void group_members_release(struct group_members *g);

/* What one group event did to the members (group_merge()). */
struct group_change {
	int was_firing;  /* a member fired before the event */
	int is_firing;   /* a member fires after it */
	int changed;     /* a member was added, or changed state or episode */
};

/*
 * Apply the group event event_json (am_group_event_json() plus "repo") to g:
 *   - each member of the event goes through storm_member_apply() (so a late
 *     or repeated notification changes nothing); one not in g is added when
 *     it fires, or when it is resolved while the group was or is firing (it
 *     fired and resolved between two notifications);
 *   - a notification whose groupStatus is "resolved" (Alertmanager: every
 *     alert of the group resolved) resolves every member still firing, at
 *     the latest endsAt of the notification;
 *   - when the group starts firing after all of it resolved (a new episode),
 *     only the members firing now are kept: the list is the episode's.
 * was_firing is taken from g, or, when g is empty, from assume_firing (a
 * group whose members are not known: a map row rebuilt from GitHub, or made
 * by a version that did not remember them; pass group_row_firing()).
 * An event without "members" (queued by a version that did not send them)
 * counts as one member: its own alert.
 * Errors: ERR_INVALID (event_json is not an object whose "members" is an
 * array of valid alert states; g is then unchanged).
 */
enum err group_merge(struct group_members *g, const char *event_json, int assume_firing,
		     struct group_change *out, struct buf *errmsg) WARN_UNUSED;

/*
 * Whether the map row row (NULL: none) shows its group resolved: the resolve
 * of its episode applied (resolved_ends_ms not 0 and not before
 * episode_starts_ms), as issue_apply() records it and a map rebuilt from
 * GitHub reads it from the comments' markers (bridge/rebuild.h).
 */
int group_row_resolved(const struct store_issue *row);
/*
 * Whether a group whose members are not known fires, as its row says: a row
 * whose issue is open and whose group is not resolved (group_row_resolved()).
 * A person's close is no resolve: the group may fire on.  0 when row is NULL.
 */
int group_row_firing(const struct store_issue *row);

/*
 * The issue_event that issue_plan() plans the group's issue with, after
 * group_merge() gave c and g (row: the map row, NULL when none):
 *   firing, and was not        firing at the earliest startsAt of the members
 *                              firing: a new episode (with members known
 *                              before, never before the row's episode or its
 *                              resolve, so issue_plan() sees it as new);
 *   firing, and was            firing at the row's episode: "same episode"
 *                              (no row: as a new episode, a create);
 *   not firing                 resolved at the row's episode (no row: the
 *                              earliest startsAt), ending at the latest
 *                              endsAt of the members: a close while it was
 *                              firing, else "resolve already applied".
 * known: whether g held members before the event.  When it did not (a map
 * row rebuilt from GitHub after a lost database, or one made by a version
 * that did not remember members), "was firing" is decided from the row, not
 * from the members' startsAt, which cannot tell a member that resolved and
 * fired again while others kept the group firing from a new episode:
 *   firing, row not resolved   the row's episode goes on: "same episode",
 *                              whether its issue is open or a person closed it;
 *   firing, row resolved       (group_row_resolved()) a new episode at the
 *                              earliest startsAt of the members firing, which
 *                              issue_plan() calls stale when it started before
 *                              the applied resolve ended (a late copy).
 */
void group_issue_event(const struct group_members *g, const struct group_change *c, int known,
		       const struct store_issue *row, struct issue_event *out);

/*
 * The bound of the member list in a group's view, so that a group's body
 * fits GitHub's 65,536 bytes (ISSUE_BODY_MAX_BYTES) by design, with its
 * labels table, links and footer, and stays far within the render limit
 * (1 MiB) whatever the group's size (up to webhook.max_alerts, 10,000): at
 * most GROUP_VIEW_MAX_MEMBERS members, and as many as fit
 * GROUP_VIEW_MAX_BYTES counting each as GROUP_VIEW_MEMBER_FIXED bytes plus
 * its alertname and line.  A member's line in the default
 * issue_body.mustache is about 70 bytes besides those two (task box, a human
 * time, fingerprint), 110 when resolved (a second time): with a typical
 * alertname and line (35 bytes) 300 members make about 35-45 KB.  Lines are
 * at most 200 bytes (STORM_LINE_MAX_BYTES), so the budget holds 130 or more
 * members; Markdown escaping may lengthen them, and issue_body_fit() is the
 * last guard.
 */
#define GROUP_VIEW_MAX_MEMBERS 300
#define GROUP_VIEW_MEMBER_FIXED 110
#define GROUP_VIEW_MAX_BYTES 45000

/*
 * Add the members to view (bridge/view.h), for the body template:
 *   group         true
 *   members       [{fingerprint, alertname, line, status, firing, resolved,
 *                   startsAt, startsAtHuman, endsAt, endsAtHuman}]: the
 *                 firing ones, then the resolved, each in the order first
 *                 seen, within the bound above; endsAt "" while firing
 *   membersFiring, membersTotal  integers, over all members (shown or not)
 *   membersNotShown              integer: members left out of members by
 *                                the bound (0 when none)
 *   membersNotShownFiring, membersNotShownResolved  integers: of those, how
 *                                many fire and how many resolved
 *   membersCut    bool: membersNotShown > 0 (0 is true in a Mustache section)
 *   status, firing, resolved     the group's (firing while any member fires)
 *   labelList     the group's commonLabels as [{name, value}] (sorted by name,
 *                 as Alertmanager's commonLabels are), not the first alert's
 *   silenceURL    a silence of the group's groupLabels (as /silence makes),
 *                 not of the first alert's labels; "" without externalURL
 */
void group_view_add(json_t *view, const struct group_members *g);

/* ---- one group event (the bridge worker's thread) ---- */

/* What one group event does to its group; release with group_event_release(). */
struct group_event {
	struct store_group state;      /* as stored before the event; zero when none */
	struct group_members members;  /* after the event */
	struct group_change change;
};

/*
 * Load the group state of ev (store_group_get()), merge ev into its members
 * (group_merge(); members the store cannot parse are logged and started
 * afresh) and set *iev to what issue_plan() plans with (group_issue_event();
 * row: ev's map row, NULL when none).  *out must be zeroed.
 * Errors: ERR_DB (the store), ERR_INVALID (an event without valid members).
 */
enum err group_event_load(struct store *st, const struct store_event *ev,
			  const struct store_issue *row, struct group_event *out,
			  struct issue_event *iev, struct buf *errmsg) WARN_UNUSED;
/*
 * Record ev done with its map row row (NULL: none) and the group's new
 * state in one transaction (store_group_done()).  The body update is pending
 * (dirty) when the members changed, unless created (the issue was just
 * created with them: the state is then clean, synced at now_ms).
 * Errors: those of store_group_done().
 */
enum err group_event_done(struct store *st, const struct group_event *ge,
			  const struct store_event *ev, const struct store_issue *row,
			  int created, int64_t now_ms, struct buf *errmsg) WARN_UNUSED;
/* Free what ge holds and zero it; ge may be NULL. */
void group_event_release(struct group_event *ge);

/* ---- the body updates (the bridge worker's thread) ---- */

struct group;

/*
 * Render the body of the group state g whose map row is row, with its
 * members gm: the text to send, marker included (issue_body_fit()).
 */
typedef enum err (*group_body_fn)(void *ctx, const struct store_group *g,
				  const struct store_issue *row, const struct group_members *gm,
				  struct buf *body, struct buf *errmsg);

struct group_options {
	struct store *store;     /* outlives the group */
	struct gh_client *gh;    /* the bridge's client (paced); outlives the group */
	int64_t interval_ms;     /* at most one body update per issue this often; > 0 */
	group_body_fn body;      /* renders a body; called with body_ctx */
	void *body_ctx;
};

/* Never NULL.  Copies opts. */
struct group *group_new(const struct group_options *opts);
/* Free; g may be NULL. */
void group_free(struct group *g);

/*
 * Make the body update of at most one group whose update is due
 * (store_group_due() with interval_ms): GitHub REST PATCH
 * /repos/{o}/{r}/issues/{n} with the body only (gh_issue_set_body()), then
 * the state is clean (store_group_synced()).  Updates are coalesced: the
 * members as they are when it is due are written, once.  A failure is
 * logged and retried after GROUP_RETRY_MS, the update kept pending; but a
 * refusal for good (ERR_FORBIDDEN: an archived repository or locked issue;
 * ERR_INVALID: a body GitHub or the template will not take) is logged at
 * error once and not retried until the group changes again (counted in
 * gh_stats.requests_forbidden, alertbridge_github_forbidden_total).
 * Returns 1 when one was handled, 0 when none was due; after a call that
 * returned 1 the next one returns 0 without looking, so body updates never
 * take every step of the worker from the queue.
 */
int group_sync(struct group *g, int64_t now_ms);

#endif
