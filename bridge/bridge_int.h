/*
 * bridge_int.h - what the parts of the reconciler share: struct bridge, the
 * work of one event, and the calls bridge.c makes into bridge_plan.c and
 * bridge_exec.c.  Not for other modules: they use bridge/bridge.h.
 */
#ifndef AB_BRIDGE_INT_H
#define AB_BRIDGE_INT_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "bridge/bridge.h"
#include "bridge/group.h"
#include "bridge/issue.h"
#include "bridge/silence.h"
#include "core/backoff.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/err.h"
#include "core/worker.h"
#include "store/store_events.h"

/*
 * The progress note of a create about to be sent: CREATE_NOTE "<ms>", the
 * time it was noted, and again when its answer was lost (the time of that
 * answer, at or after the send).  The create is not looked for before
 * gh_write_settled_at() of that time (it may still land), nor posted again
 * before it was looked for.
 */
#define CREATE_NOTE "create@"
/* ... and once GitHub refused it: nothing was made, nothing to look for. */
#define CREATE_REFUSED_NOTE "create-refused"
/* How far before a create (or its note) its issue is looked for by marker, in ms. */
#define CREATE_LOOKBACK_MS 60000
/* A comment's note (bridge_exec.c note_progress()) ends "~" "@<ms>" the same way. */
#define COMMENT_SENT_AT "@"

struct bridge {
	struct bridge_options opts;
	struct gh_client *gh;
	struct storm *storm;  /* alert storms: bridge/storm.h */
	struct repos *repos;  /* repositories GitHub says are missing: bridge/repos.h */
	struct group *group;  /* issue_per: group body updates: bridge/group.h */
	struct silencer *silencer;  /* commands from GitHub comments: bridge/silence.h */
	const struct reload_gen *gen;  /* the generation opts.cfg and opts.render are from */
	char *html_base;  /* https://github.com or https://HOST for Enterprise */
	struct worker *worker;  /* the queue worker (core/worker.h): thread, stop, store gate */
	unsigned int seed;      /* events' retry jitter (fail()) */
	struct gh_stats last_stats;
	pthread_mutex_t budget_mu;  /* guards budget: written by the worker, read by the page */
	struct gh_stats budget;     /* the GitHub client's counters after the last step */
	struct metric *m_events;
	struct metric *m_pending;
	struct metric *m_dead;
	struct metric *m_oldest;
	struct metric *m_issues;
	int64_t issues_counted_us;  /* monotonic time m_issues was last counted */
	int64_t queue_counted_us;   /* monotonic time the queue gauges were last counted */
	int64_t standby_counted_us; /* monotonic time the gauges were updated while not acting */
	struct metric *m_dead_letters;
	struct metric *m_gh_requests;
	struct metric *m_gh_retries;
	struct metric *m_gh_ratelimit;
	struct metric *m_gh_content_left;
	struct metric *m_gh_ambiguous;
	struct metric *m_gh_unauthorized;
	struct metric *m_gh_forbidden;
	struct metric *m_rebuilt;
	struct metric *m_assignees_dropped;
	struct metric *m_app_renewals;
	struct metric *m_app_failures;
	struct metric *m_held;
	/*
	 * The settle hold (bridge_options.settle_at_start, settle_on_gain):
	 * no event and no GitHub call before settle_until (ms, bridge clock;
	 * 0: none; written by bridge_new() and the worker, read atomically by
	 * bridge_settle_until()).  acting: may_act was true at the last ask
	 * (a false answer, also inside a GitHub call, clears it, so the next
	 * true one is a gain).
	 */
	int64_t settle_until;
	int64_t restored_until;  /* the latest write pending_note restored settles then (ms) */
	int start_hold;          /* settle_until is the hold from bridge_new() (settle_at_start) */
	int acting;
	int budget_loaded;  /* the budget spent before was loaded since the last gain */
	int step_store_fault;       /* this step could not record an outcome */
};

/* What one event needs while it is handled; released in one place. */
struct work {
	struct store_event ev;
	const struct cfg_receiver *rcv;
	const char *repo;         /* points into payload_doc, or repo_buf (rendered) */
	struct buf repo_buf;      /* the repo rendered for this alert (bridge_route()) */
	int route;                /* the receiver's route the alert took; -1: none (its own) */
	json_t *payload_doc;
	struct store_issue row;
	int have_row;
	int issue_gone;           /* the mapped issue was deleted (410): row is still its row */
	struct issue_event iev;
	struct issue_policy pol;
	enum issue_action action;
	int step;                 /* calls of the action already done (progress note) */
	int comment_noted;        /* the stored note says the next call, a comment, may be made */
	int comment_in_doubt;     /* ... and it said so before this attempt: look before posting */
	int64_t comment_noted_ms; /* ... at this time (ms; 0: a note of an older version) */
	int64_t not_before_ms;    /* a write in doubt: no retry of the event before this (ms) */
	int no_issue;             /* a dry-run row with no issue on GitHub: record, call nothing */
	struct gh_issue fresh;    /* the mapped issue as refresh() read it (labels); else zero */
	int64_t now_ms;
	struct group_event *grp;  /* issue_per: group, else NULL */
};
/*
 * The settle holds (bridge_settle.c).  bridge_pending_writes: the GitHub
 * client's gh_options.pending_writes (ctx the bridge), passed on to
 * opts.note_pending.  bridge_settle_start: at bridge_new(), restore
 * opts.pending_note, start the hold of settle_at_start (or of a note it
 * cannot read), and else note what is pending ("").  bridge_settle_step: at
 * each step of a replica that may act, at now_ms: a gain starts its hold
 * (settle_on_gain); 1 while a hold lasts (take no event), else 0.
 */
void bridge_pending_writes(void *ctx, const char *text);
void bridge_settle_start(struct bridge *b);
int bridge_settle_step(struct bridge *b, int64_t now_ms);
/*
 * The content budget across processes (bridge_budget.c).  bridge_budget_note:
 * the GitHub client's gh_options.note_spend (ctx the bridge): the request's
 * time into the store (store_budget_note()), pruned to gh_budget_span_ms().
 * bridge_budget_load: unless loaded since the last gain (budget_loaded,
 * cleared by bridge_settle_step() on each), what the store recorded in the
 * last gh_budget_span_ms() before now_ms into the client
 * (gh_budget_restore()); 0, or -1 when the store cannot say (logged: the
 * step makes no GitHub call and backs off as for any store failure).
 */
enum err bridge_budget_note(void *ctx, const char *owner, int64_t sent_ms, struct buf *errmsg);
int bridge_budget_load(struct bridge *b, int64_t now_ms);
/* The bridge's clock (opts.now_ms, else the wall clock), in ms since the epoch. */
int64_t bridge_now_ms(struct bridge *b);
/* The episode marker of the episode starting at starts_at_ms, appended to out. */
void bridge_episode_marker(int64_t starts_at_ms, struct buf *out);
/*
 * The episode marker of a group issue's body as its rewrites write it, from
 * its map row, appended to out: with " event=resolved-<resolved_ends_ms>" when
 * the row shows the group resolved (group_row_resolved()), so that a map
 * rebuilt after a lost database knows the group's resolve even when it was
 * applied to a closed issue, without a comment (bridge/rebuild.h).
 */
void bridge_group_body_marker(const struct store_issue *row, struct buf *out);
/*
 * The row keeps gi's ETag (NULL: none) and, with it, gi's labels as a JSON
 * array, so that a later conditional read answered 304 is answered from the
 * row (refresh() in bridge_plan.c).  For every answer that carries the issue.
 */
void bridge_row_take_etag(struct store_issue *row, const struct gh_issue *gi);
/*
 * The route w's alert takes (w->route, by the labels of w->payload_doc; an
 * issue_per: group event's are its first alert's) and the repository it is
 * filed in (w->repo): the payload's "repo" (the alertbridge_repo label or
 * ?repo=, set at intake), else the route's (or receiver's) repo template
 * rendered over the alert's view, as titles are.  ERR_INVALID when what it
 * renders to is no "owner/name" GitHub accepts, errmsg naming the rendered
 * value.
 */
enum err bridge_route(struct bridge *b, struct work *w, struct buf *errmsg);
/* The route of rcv an event document's alert takes (cfg_route_select()), -1: none. */
int bridge_route_of(const struct cfg_receiver *rcv, const json_t *doc);
/* The view of w for the templates in *view (json_decref() it); an error with errmsg. */
enum err bridge_build_view(struct bridge *b, struct work *w, json_t **view, struct buf *errmsg);
/*
 * Plan w (bridge_plan.c): w->action and w->step from the event's progress
 * note, else issue_plan() on the map row, re-planned on GitHub's state when
 * the row could mislead (which may clear w->have_row: the issue is gone, or
 * set w->no_issue).  ERR_OK, or a GitHub or store error with errmsg: retry.
 */
/*
 * Before the first event of (receiver, w->repo) since the database was
 * created, rebuild the receiver's map rows from the issues' markers
 * (rebuild_scan(), bridge_scan.c): in w->repo and in every other repository
 * the receiver's configuration names as "owner/name" (its repo, its routes'
 * repos; not templates) that was not scanned yet, so that a lost database
 * never leads to a second issue for an alert (or to a resolve that finds no
 * issue to close), an alert rerouted since its issue was made included.
 * Each scan is recorded in the store (store_scan_done()) and done once; a
 * repository skipped as unreadable (404, 403, 410: rebuild_scan()) is not
 * recorded, and is read again with the next event routed there.  No
 * call in dry-run, nor for a w->repo that issue_repo_valid() rejects (the
 * create rejects it for good).  Errors: those of rebuild_scan() (ERR_NOTFOUND:
 * w->repo does not exist), ERR_DB when the store fails; errmsg says why.
 */
enum err bridge_ensure_scanned(struct bridge *b, struct work *w, struct buf *errmsg);
enum err bridge_plan(struct bridge *b, struct work *w, struct buf *errmsg);
/* Make the calls w->action needs from w->step on, noting progress; ERR_INVALID: no view. */
enum err bridge_execute(struct bridge *b, struct work *w, struct buf *errmsg);

#endif
