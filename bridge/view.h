/*
 * view.h - the template view model: the JSON object the Mustache templates
 * (templates/NAME.mustache, core/mustache.h) are rendered against, built from
 * one queued event (am_event_json()) plus what the bridge knows at render
 * time (the clock, the receiver's repo, the issue).  Documented for users in
 * templates/VIEW_MODEL.md; the two must stay in step.
 */
#ifndef AB_VIEW_H
#define AB_VIEW_H

#include <jansson.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* A GitHub issue the view refers to.  Strings are borrowed for the call. */
struct view_issue {
	int64_t number;
	const char *html_url;   /* e.g. https://github.com/o/r/issues/12; NULL as "" */
	int64_t closed_at_ms;   /* 0 when open or unknown */
};

/* Render-time context.  Every pointer is borrowed for the duration of view_build(). */
struct view_context {
	int64_t now_ms;                      /* the clock, for the duration of a firing alert */
	const char *receiver;                /* the receiver config's name; NULL: the event's */
	const char *repo;                    /* "owner/name"; NULL as "" */
	const struct view_issue *issue;      /* the alert's issue when known, else NULL */
	const struct view_issue *previous;   /* the previous, closed issue, else NULL */
};

/*
 * Build the view of event_json (a NUL-terminated document made by
 * am_event_json()) into *out, a new JSON object the caller json_decref()s.
 * On error *out is NULL and errmsg (may be NULL) says why.
 *
 * Fields (all present unless marked optional; strings are "" when unknown):
 *   receiver          string   ctx->receiver, else the event's (unescaped) receiver
 *   repo              string   ctx->repo
 *   status            string   "firing" or "resolved"
 *   firing, resolved  bool
 *   labels            object   name -> value, e.g. {{labels.severity}}
 *   labelList         array    [{"name", "value"}] sorted by name, for {{#labelList}}
 *   annotations       object   name -> value, e.g. {{annotations.summary}}
 *   annotationList    array    [{"name", "value"}] sorted by name
 *   alertname         string   labels.alertname, "" when absent
 *   fingerprint       string   16 hex digits
 *   startsAt          string   RFC 3339 UTC, milliseconds when not zero:
 *                              "2026-11-21T00:49:48.539Z"
 *   startsAtHuman     string   "Sat, 21 Nov 2026 00:49:48 UTC"
 *   endsAt, endsAtHuman  string  as startsAt; "" while firing
 *   duration          string   "2 hours 5 minutes" (two largest units; "0 seconds"):
 *                              now - startsAt while firing, endsAt - startsAt when resolved
 *   durationSeconds   integer  the same in whole seconds (>= 0)
 *   generatorURL      string   the alert's source (Prometheus graph), "" when absent
 *   silenceURL        string   <externalURL>/#/silences/new?filter=<URL-encoded
 *                              {name="value", ...} of every label>; "" without externalURL
 *   externalURL       string   the Alertmanager's URL
 *   groupKey          string
 *   groupStatus       string   the notification's status ("firing" while any alert fires)
 *   groupLabels, commonLabels, commonAnnotations  object
 *   truncatedAlerts   integer  alerts Alertmanager left out of the notification
 *                              (its max_alerts), >= 0
 *   truncated         bool     truncatedAlerts > 0 (0 is true in a Mustache section)
 *   issue             object   optional: {"number", "url"} when ctx->issue
 *   previous          object   optional: {"number", "url", "closedAt", "closedAtHuman"}
 *                              when ctx->previous
 * The view of an issue_per: group issue gets more fields from group_view_add()
 * (bridge/group.h): group, members, membersFiring, membersTotal, and the
 * group's status, firing, resolved, labelList and silenceURL (its groupLabels).
 *
 * Errors: ERR_INVALID when event_json is not such a document (not JSON, "v"
 * not 1, status not firing|resolved, labels not an object of strings,
 * startsAt or endsAt not RFC 3339).
 */
enum err view_build(const char *event_json, const struct view_context *ctx, json_t **out,
		    struct buf *errmsg) WARN_UNUSED;

/*
 * Set out to Alertmanager's new-silence page pre-filled with labels (an
 * object of strings, borrowed): <external_url>/#/silences/new?filter=
 * {name="value", ...} URL-encoded, the form view_build()'s silenceURL has;
 * "" when external_url is "".
 */
void view_silence_url(const char *external_url, const json_t *labels, struct buf *out);

#endif
