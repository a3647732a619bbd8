/*
 * rebuild.h - the bridge's map rebuilt from the markers of the issues on
 * GitHub, after the database was lost (bridge/bridge.h says when).
 */
#ifndef AB_REBUILD_H
#define AB_REBUILD_H

#include <stddef.h>
#include <stdint.h>

#include "bridge/gh.h"
#include "core/buf.h"
#include "core/err.h"
#include "store/store.h"

/*
 * Import into st the map rows of receiver from the issues of repos[0 ..
 * n_repos - 1] ("owner/name"; repos[0] the repository the receiver's event
 * is routed to, the others the rest its configuration names, so that an
 * alert rerouted since its issue was made finds it).  In each repository
 * the issues that can carry its marker are listed (gh_issue_list_filtered:
 * state=all, per_page=100, oldest first): those opened by the login of the
 * credential that acts on it (creator=, gh_login(gh, repo): GET /user once
 * per credential, or "<app-slug>[bot]" from GET /app for a GitHub App), since
 * only alertbridge's issues carry markers; when the login cannot be read,
 * those carrying every one of labels (labels=, a comma-separated list of the
 * receiver's fixed labels; NULL or "": every issue of the repository).  A
 * person's removal of such a label hides that issue from a labels= rebuild,
 * which is why creator= comes first.  *pages (not NULL) is set to the pages
 * read, all repositories together.  Rows are written only after every
 * listing; the issues whose marker (issue_marker_parse_receiver()) gives this
 * receiver's rows:
 *   - a marker naming this receiver: its row;
 *   - a marker naming another receiver: never;
 *   - an old marker without a receiver (made before markers named one): its
 *     row, unless a marker of another receiver names the same key in the
 *     same repository (then the key is that receiver's, and this receiver's
 *     own issue, if it has one, carries its name);
 *   - storm summaries (storm_is_summary_key()): never.
 * Of several issues of one key the newest gives the row: in one repository
 * the higher number; across repositories the later episode of its body's
 * marker, then the later created_at, then the earlier of repos.  The one
 * before it becomes previous_number (with previous_url, GitHub's html_url,
 * when it is in another repository).  A row of (receiver, key) that exists
 * is kept, unless it is an older issue of the same repository, which then
 * becomes previous_number.  The row takes number, repo, state, state_reason
 * and closed_at as GitHub has them; its episode is the newest
 * "alertbridge:episode=" marker of the body and of the comments (read,
 * GET .../issues/{n}/comments, only for issues with comments that are open or
 * closed within reopen_window_ms of now_ms, both in ms UTC), else the
 * issue's created_at; its resolved_ends_ms the resolve of that episode that a
 * marker " event=resolved-<endsAt ms>" of a comment, or of a group issue's
 * rewritten body (bridge_group_body_marker()), says was applied
 * (issue_episode_fold()), else 0 — but an issue closed longer ago whose
 * comments are not read counts as resolved at its episode (resolved_ends_ms =
 * episode_starts_ms: its resolve is not known; bridge/group.h says why it
 * matters).  *imported (not NULL) is set to the rows written.
 * Errors (detail in errmsg): those of gh_issue_list() and gh_comment_list(),
 * except that a repository after the first whose listing GitHub answers 404,
 * 403 or 410 (ERR_NOTFOUND, ERR_FORBIDDEN, ERR_GONE: it does not exist, or
 * this credential may not read it) is skipped (logged), and skipped[i] (an
 * array of n_repos, or NULL) says so: ERR_OK for a repository read, else
 * its error; a skipped repository must not count as scanned (an App that
 * lost a repository for a while would otherwise never find its issues).
 * ERR_DB when the store fails.  Rows written before an error
 * stay (a retry writes the same newest issue again, or keeps it).
 */
enum err rebuild_scan(struct gh_client *gh, struct store *st, const char *receiver,
		      const char *const *repos, size_t n_repos, const char *labels,
		      int64_t reopen_window_ms, int64_t now_ms, enum err *skipped,
		      int64_t *imported, int *pages, struct buf *errmsg) WARN_UNUSED;

/*
 * The issue of a map row of (receiver, key) that has none (number 0, written
 * in dry-run), by its marker among the issues of repo created since since_ms
 * (ms UTC): gh_issue_find_marker() with the key marker, which both forms
 * contain, so an issue made before markers named the receiver is found too;
 * the newest issue found is taken when its marker names receiver or no
 * receiver.  ERR_OK with *out (release with gh_issue_release()); ERR_NOTFOUND
 * when there is none (or the newest is another receiver's); the errors of
 * gh_issue_find_marker() otherwise.
 */
enum err rebuild_find_issue(struct gh_client *gh, const char *repo, const char *receiver,
			    const char *key, int64_t since_ms, struct gh_issue *out,
			    struct buf *errmsg) WARN_UNUSED;

#endif
