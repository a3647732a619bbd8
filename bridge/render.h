/*
 * render.h - the bridge's texts: issue title, body, comments, labels and
 * assignees of each receiver, rendered from Mustache templates
 * (core/mustache.h) over the view model (bridge/view.h).
 *
 * Templates come from the files the receiver's `templates` block names, else
 * from the defaults compiled into the binary (templates/ in the source tree,
 * core/embed.h).  All of them are read and compiled once, at start, so a
 * broken template stops the service before it accepts a webhook.
 */
#ifndef AB_RENDER_H
#define AB_RENDER_H

#include <jansson.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

struct render;

enum render_text {
	RENDER_TITLE = 0,  /* issue_title.mustache; one line of plain text (see render_text()) */
	RENDER_BODY,       /* issue_body.mustache; GitHub Markdown, values read as text */
	RENDER_REFIRE,     /* comment_refire.mustache: a new episode on an open issue */
	RENDER_RESOLVE,    /* comment_resolve.mustache: the alert resolved */
	RENDER_REOPEN,     /* comment_reopen.mustache: a closed issue reopened */
	RENDER_TEXT_COUNT
};

/* The default template's file name for which, e.g. "issue_title.mustache". */
const char *render_default_name(enum render_text which);

/*
 * Read and compile the templates of every receiver of cfg (and its label and
 * assignee templates).  cfg must outlive the result.  Errors: ERR_IO when a
 * template file cannot be read ("receivers[0].templates.body: cannot read
 * PATH: ..."), ERR_INVALID for a Mustache syntax error (message names the
 * receiver, the file and the line/column).
 */
enum err render_new(const struct config *cfg, struct render **out, struct buf *errmsg) WARN_UNUSED;
/* Free r; may be NULL. */
void render_free(struct render *r);
/*
 * render_new() and render_free() in the shapes of reload_options.prepare and
 * .ext_free (core/reload.h): *ext gets the struct render; ctx is unused.
 */
enum err render_reload_prepare(void *ctx, const struct config *cfg, void **ext,
			       struct buf *errmsg) WARN_UNUSED;
void render_reload_free(void *ext);

/*
 * Routes: every call takes route, the index of the receiver's route the
 * alert took (cfg_route_select(), core/matchers.h), or -1 for the receiver's
 * own texts; a route's texts are those its config sets, else its receiver's.
 *
 * Append the text which of receiver (route) over view to out.  {{x}} in a
 * title is MUSTACHE_ESCAPE_LINE (core/mustache.h: a value is one line of
 * text, no bidi controls) and the whole title is then made one GitHub title
 * by issue_title_clean() (one line, at most 256 characters, cut on a code
 * point); in bodies and comments {{x}} is MUSTACHE_ESCAPE_MARKDOWN (a value
 * never becomes Markdown, a link or a mention).  {{{x}}} is never escaped.
 * The caller appends the hidden markers and cuts bodies and comments to
 * GitHub's 65536 bytes (issue_body_fit()).  Errors: ERR_NOTFOUND unknown
 * receiver or route, ERR_TOOBIG when the output passes 1 MiB; errmsg names
 * the template: `template body of receiver "r" [route N]: output over ...`.
 */
enum err render_text(const struct render *r, const char *receiver, int route,
		     enum render_text which, const json_t *view, struct buf *out,
		     struct buf *errmsg) WARN_UNUSED;

/*
 * Append the repository of receiver (route) rendered over view to out: its
 * `repo` template (a literal "owner/name" renders to itself), without
 * escaping, white space trimmed.  The result is not checked: the caller
 * checks it is "owner/name" (issue_repo_valid()).  Errors: ERR_NOTFOUND
 * unknown receiver or route, ERR_TOOBIG past 4 KiB.
 */
enum err render_repo(const struct render *r, const char *receiver, int route,
		     const json_t *view, struct buf *out, struct buf *errmsg) WARN_UNUSED;

/*
 * The receiver's labels (assignees when assignees != 0) rendered over view,
 * {{x}} as MUSTACHE_ESCAPE_LINE (one line, no bidi controls), whitespace-trimmed; empty results and labels whose value
 * after a "name:" prefix came out empty ("severity:") are dropped,
 * duplicates removed, each cut to GitHub's 50 characters.  *out is a
 * NULL-terminated array the caller frees with render_list_free(); never NULL.
 */
enum err render_list(const struct render *r, const char *receiver, int route, int assignees,
		     const json_t *view, char ***out, struct buf *errmsg) WARN_UNUSED;
/* Free a list from render_list(); may be NULL. */
void render_list_free(char **list);

/*
 * For `alertbridge check-config`: append to out one line per receiver and
 * per route saying which repository a sample alert gets there, e.g.
 *   # receivers[0] "team": route 0 [severity=~"critical|page", team!="ml"]: repo for
 *   the sample alert: acme/pager           (one line; "no route matches: " for the
 *   receiver's own repo when it has routes)
 * The sample alert is firing with the labels alertname="SampleAlert",
 * severity="critical", team="sample", namespace="default",
 * instance="sample:9100", plus name="value" of each = matcher of the route
 * (so that it matches the route where it can).  A repo that renders to no
 * valid "owner/name" gets "WARNING: not a valid repository: <why>" on its
 * line and counts in the result (the number of such lines; alerts with the
 * labels the template needs may still render well).  cfg and r as
 * render_new() made them.
 */
int render_sample_repos(const struct config *cfg, const struct render *r, int64_t now_ms,
			struct buf *out);

/*
 * One-off render for `alertbridge render` and the storm issue: compile tmpl
 * (len bytes) and render it over view as render_text() renders which (its
 * escaping; a title made one GitHub title), so that what `render` prints is
 * what the bridge sends, but for the markers.  Errors as mustache_render().
 */
enum err render_once(const char *tmpl, size_t len, enum render_text which, const json_t *view,
		     struct buf *out, struct buf *errmsg) WARN_UNUSED;

/*
 * Read the file at path into out (at most 1 MiB).  Errors: ERR_IO
 * ("cannot read PATH: strerror"), ERR_TOOBIG.
 */
enum err render_read_file(const char *path, struct buf *out, struct buf *errmsg) WARN_UNUSED;

#endif
