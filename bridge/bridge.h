/*
 * bridge.h - the reconciler: one serial worker that drains the durable
 * "bridge" queue (store/store_events.h) and keeps one GitHub issue per alert, as
 * DESIGN.md's state table says (plan: bridge/issue.h; calls: bridge/gh.h;
 * texts: bridge/render.h, bridge/view.h).
 *
 * Each event is applied exactly once per transition: the map row and the
 * event's completion are written in one transaction after GitHub answered,
 * and a transition of two calls (a comment and a state change) records its
 * progress in between, so a retry after a crash or a failure skips what
 * already happened.  Transient failures (5xx, timeouts, rate limits, a bad
 * token) are retried with backoff forever — the event stays queued; a request
 * GitHub rejects as invalid (422) is dead-lettered with the reason, and so is
 * an event whose repository GitHub says is missing (a 404 on a call that
 * GitHub confirms with a 404 on GET /repos/{owner}/{repo}: bridge/repos.h;
 * reason "repository OWNER/NAME not found or no access").  That answer is
 * kept 10 minutes: the repository's other events are dead-lettered without a
 * call, except those re-queued by a person (store_dead_requeue()), which ask
 * GitHub again.
 *
 * Routing: an event takes the first of its receiver's routes whose matchers
 * match its alert's labels (cfg_route_select(); a group's: its first
 * alert's), whose repo, labels, assignees and templates then apply; its
 * repository is the one the alert names (alertbridge_repo, ?repo=), else
 * the route's repo template rendered over the alert's view.  One that
 * renders to no valid name dead-letters the event with the rendered value
 * in the reason, unless its alert has an issue: the map row's repository
 * wins over the routes, for every event of an alert that has its issue.
 * Before acting on a mapped issue it is read conditionally (If-None-Match
 * with the ETag the row kept): a 304 is answered from the row.
 *
 * No second issue, no second comment:
 *   - every issue body ends with the receiver's key marker
 *     "<!-- alertbridge:receiver=R --> <!-- alertbridge:key=K -->"
 *     (issue_marker_receiver(); the body still ends with the key marker, as
 *     DESIGN.md says), unique per (receiver, key) even when receivers share a
 *     repository;
 *   - before its POST a create writes the progress note "create@<ms>"; a
 *     retry of that event (after an ambiguous answer whose lookup failed, or
 *     a crash) first looks for that marker among the issues created since
 *     then (gh_issue_find_marker), and adopts the issue it finds;
 *   - every comment carries "<!-- alertbridge:episode=<startsAt> event=... -->",
 *     unique per transition, and is posted with gh_comment_create_marked();
 *     before its POST the note "ACTION:STEP~" says it may be posted, and a
 *     retry with that note (a crash between GitHub's answer and our commit)
 *     first reads the issue's comments (gh_comment_list) for that marker;
 *   - a row written in dry-run has number 0 (no issue).  Its first live event
 *     looks for the key marker among the issues created since the row was
 *     (gh_issue_find_marker; an issue whose marker names another receiver is
 *     not taken) and then acts on the issue found; when there is none, a
 *     firing creates the issue and a resolve is only recorded on the row (no
 *     call), so nothing is ever sent for issue 0;
 *   - lost database: before the first event of a (receiver, repo) after the
 *     database was created, the map is rebuilt from GitHub by listing the
 *     repository's issues that can carry a marker page by page
 *     (gh_issue_list_filtered: state=all, per_page=100, creator= the
 *     credentials' login, else labels= the receiver's fixed labels; never
 *     search, which lags behind writes; the log says the pages read):
 *     bridge/rebuild.h.
 *     Each issue whose marker names the receiver gives the row of
 *     (receiver, K) unless one exists: number, repo, state, state_reason,
 *     closed_at as GitHub has them, the newest issue of a key winning (an
 *     older one becomes previous_number).  Receivers that share a repository
 *     each import only their own markers.  A marker of the old form, without
 *     a receiver ("<!-- alertbridge:key=K -->", issues made before markers
 *     named one), is imported by every receiver of the repository unless
 *     another receiver's marker names the same key there.  The episode is
 *     the newest "alertbridge:episode=" marker of the body and of the
 *     comments (read only for issues that are open or closed within
 *     reopen_window, and that have comments), else the issue's created_at (a
 *     notification that started before the issue is then stale); a marker
 *     " event=resolved-<endsAt ms>" of that episode (a comment's, or a group
 *     issue's rewritten body's) says its resolve was applied (the row's resolved_ends; issue_episode_fold()), and an
 *     issue closed longer ago whose comments are not read counts as resolved
 *     at its episode.  So a re-sent notification of the episode last applied,
 *     firing or resolved, changes nothing (no second "resolved" comment, no
 *     close of an issue a person reopened); a newer one is a new episode.
 *     The scan is recorded (store_scan_done) and
 *     done once; a failed scan keeps the event queued (retry) and makes no
 *     create.
 *
 * On a new episode of an open or reopened issue the rendered labels the
 * issue lacks are added (gh_labels_add), none removed.  A re-fire after
 * reopen_window creates a new issue; the row then holds its number, and
 * previous_number the old one it links.
 */
#ifndef AB_BRIDGE_H
#define AB_BRIDGE_H

#include <stdint.h>

#include "bridge/gh.h"
#include "bridge/render.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"
#include "core/metrics.h"
#include "core/reload.h"
#include "store/store.h"

struct bridge;

struct bridge_options {
	const struct config *cfg;      /* receivers, github settings; outlives the bridge */
	struct store *store;           /* the queue and the map; outlives the bridge */
	const struct render *render;   /* compiled templates; outlives the bridge */
	/*
	 * The reloadable config (core/reload.h), or NULL: cfg and render for
	 * good.  Else each bridge_step() first takes the current generation
	 * (cfg, and its ext: a struct render), so one event is handled wholly
	 * under one config, and sends the generation's GitHub token.
	 */
	struct reload *reload;
	struct metrics *metrics;       /* may be NULL */
	const char *user_agent;        /* e.g. "alertbridge/0.1.0" */
	/*
	 * Retry schedule of a failed event: retry_base_ms doubled per attempt,
	 * jittered, capped at retry_max_ms.  0 means 5 s and 10 min.
	 */
	int64_t retry_base_ms;
	int64_t retry_max_ms;
	/*
	 * Test hooks, also handed to the GitHub client: clock and sleep in
	 * milliseconds.  NULL: the real clock, and a sleep that bridge_stop()
	 * interrupts.
	 */
	int64_t (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
	/* Test hooks for the GitHub client (0: its defaults). */
	int64_t gh_min_interval_ms;
	int gh_max_attempts;
	/*
	 * May this replica act?  NULL: always.  main.c wires it to core/active.h
	 * (the Lease with leader election, else the store's worker lock on
	 * PostgreSQL, else always): while may_act(may_act_ctx)
	 * is 0, bridge_step() takes no event (returns 0), and it is asked again
	 * right before every GitHub request, so a worker that loses the Lease
	 * mid-event sends nothing more; that event stays queued, not counted as
	 * a failed attempt, and its progress note lets the leader resume it.
	 * Called on the worker's thread; must be thread-safe (the worker lock
	 * costs one database round trip).
	 */
	int (*may_act)(void *ctx);
	void *may_act_ctx;
	int64_t gh_backoff_base_ms;
	int64_t gh_window_ms;       /* the content budget's window */
	/*
	 * Writes another process may still have in flight.  A write whose
	 * answer was lost may land until gh_write_settled_at() of its send
	 * (bridge/gh.h); the client guards its own in memory, but a process
	 * that died (SIGKILL) or a replica that acted before this one took
	 * its place leaves no such memory, and its late PATCH can overtake
	 * ours (a close landing after the reopen: issue 19).  So, when one of
	 * these says such writes may exist, bridge_step() takes no event and
	 * makes no GitHub call ("settle hold") until gh_write_settled_at() of
	 * the moment the bridge learnt of them; then it goes on, reading the
	 * issue (and markers) again before writing, as every event does.
	 * Webhooks are still taken meanwhile (they only queue).  Each hold is
	 * logged when it starts and ends, and shown by the gauge
	 * alertbridge_github_writes_held (1 while held).  Once no hold from
	 * the start is left, the bridge tells note_pending its pending writes
	 * ("" at first), so a note always says what may land.
	 *   settle_at_start  non-zero: from bridge_new() on (the previous
	 *                    process stopped uncleanly and left no note of
	 *                    its pending writes: serve_lock_unclean(); with a
	 *                    note, pending_note below holds only their issues)
	 *   settle_on_gain   non-zero: each time may_act turns true, the first
	 *                    time too (a shared queue: the Lease or the worker
	 *                    lock; whoever acted before may have died mid-write)
	 *   settle_gain_waited_ms  what may_act already waited after the gain
	 *                    before saying yes, in ms (the worker lock's grace,
	 *                    core/active.h: every write of the holder before was
	 *                    sent before the lock changed hands); a gain's hold
	 *                    ends that much sooner, and not at all when it is
	 *                    longer than the settle time.  0 for the Lease.
	 */
	int settle_at_start;
	int settle_on_gain;
	int64_t settle_gain_waited_ms;
	/*
	 * What the previous process noted of its writes that may still land
	 * (gh_options.pending_writes' text, kept by serve_lock_note()), NULL:
	 * none.  bridge_new() restores them into the GitHub client
	 * (gh_pending_restore()): no write to those issues before each can no
	 * longer land; their events wait in the queue until then, the others go
	 * on.  Logged, and alertbridge_github_writes_held is 1 until the last
	 * settles.  A note it cannot read holds every write, as
	 * settle_at_start.  Copied.
	 */
	const char *pending_note;
	/*
	 * Optional (NULL: none): gets gh_options.pending_writes' text (the
	 * bridge's writes that may still land) for the next process
	 * (serve_lock_note()).  Called on the worker's thread.
	 */
	void (*note_pending)(void *ctx, const char *text);
	void *note_ctx;
};

/*
 * Create the bridge and its GitHub client (dry-run when cfg->github.dry_run
 * or no token).  Never NULL.  Does not start the worker.
 */
struct bridge *bridge_new(const struct bridge_options *opts);
/* Stop (if started) and free; b may be NULL. */
void bridge_free(struct bridge *b);

/* Start the worker thread.  Errors: ERR_IO when the thread cannot start. */
enum err bridge_start(struct bridge *b, struct buf *errmsg) WARN_UNUSED;
/*
 * Ask the worker to stop, interrupt its waits, and join it.  The GitHub call
 * in flight finishes first (its outcome is recorded); a wait cut short (rate
 * limit, pacing, backoff) sends nothing after it, and its event stays queued
 * without counting as a failed attempt.  Nothing is lost: what is not done
 * stays queued for the next start.
 */
void bridge_stop(struct bridge *b);
/*
 * Ask the worker to stop without waiting for it: its waits end and no new
 * GitHub call starts; the one in flight finishes.  bridge_stop() joins it.
 * Lets main drain the HTTP server and the worker at the same time.
 */
void bridge_request_stop(struct bridge *b);

/*
 * Process at most one due event on the calling thread (tests, and the
 * worker's loop).  Returns 1 when an event was handled (done, retried or
 * dead-lettered), 0 when none was due, -1 when the store failed: it could
 * not give the next event, or not record an event's outcome.  After a store
 * failure the bridge backs off as for any fault (retry_base_ms doubling up to
 * retry_max_ms, with jitter, from opts.now_ms): until then every call returns
 * -1 at once, with no GitHub call and no store access, so a full or failing
 * disk never spends GitHub's budget on an event whose outcome cannot be kept
 * (issue 19).  The first outcome recorded again ends the backoff.
 *
 * The content budget (github.content_per_minute, content_per_hour) outlives
 * the process: the time of each mutating GitHub call is written to
 * opts.store before the call is sent (store/store_budget.h; a call whose time
 * cannot be written is not sent: ERR_RETRY, the event retried), and the
 * first step, and the first after each gain of may_act, loads the times of
 * the last hour (60 gh_window_ms under that test hook) into the GitHub
 * client (gh_budget_restore()) before any call, so a restarted process, or
 * a replica taking over a shared queue, waits for what was spent before it.
 * A load that fails returns -1 (a store failure, with its backoff).
 */
int bridge_step(struct bridge *b);

/*
 * Re-queue every dead letter whose repository GitHub said was missing
 * (reason REPOS_MISSING_LIKE, all receivers), and forget what GitHub said
 * of repositories, so the next event of each asks again.  For a reload (a
 * repository created, a token given access).  *n (may be NULL) gets how
 * many.  Thread-safe.  Errors: those of store_dead_requeue().
 */
enum err bridge_retry_dead(struct bridge *b, int64_t *n) WARN_UNUSED;

/*
 * When the current settle hold (bridge_options.settle_at_start and
 * settle_on_gain) ends, in ms of the bridge's clock; 0 when none holds now
 * and none from settle_at_start is left to wait (so a clean stop may be
 * recorded: serve_lock_settled()).  Thread-safe.
 */
int64_t bridge_settle_until(struct bridge *b);

/* Non-zero when GitHub calls are only logged (dry-run). */
int bridge_dry_run(const struct bridge *b);
/*
 * Config reload: replace the GitHub credentials with creds, built from the
 * new config with gh_creds_new(&cfg->github) (bridge/gh.h).  Takes creds.
 * Thread-safe; the bridge's GitHub client switches before its next call.
 */
void bridge_set_credentials(struct bridge *b, struct gh_creds *creds);

/*
 * The GitHub client's counters and budgets (bridge/gh.h struct gh_stats) as
 * of the worker's last step, for the on-call page: ratelimit_remaining and
 * ratelimit_reset_ms (GitHub's x-ratelimit-remaining/-reset, the core
 * limit), content_left_* of content_limit_* and when each is whole again
 * (content_full_*_ms, 0: it is).  Thread-safe; a copy, not live.
 */
void bridge_budget(struct bridge *b, struct gh_stats *out);
/*
 * Append the web address of issue number in repo ("owner/name") to out:
 * https://github.com/{owner}/{repo}/issues/{n} for api.github.com, or the
 * GitHub Enterprise host of github.api_url (https://HOST/api/v3 ->
 * https://HOST/{owner}/{repo}/issues/{n}); any other api_url is used as the
 * base as it is.  Thread-safe (reads what bridge_new() set).
 */
void bridge_issue_url(const struct bridge *b, const char *repo, int64_t number,
		      struct buf *out);

#endif
