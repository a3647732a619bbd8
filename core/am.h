/*
 * am.h - Alertmanager's webhook payload (version 4): parse, validate,
 * fingerprint, and the per-alert event document the queue stores.
 *
 * Follows the webhook notifier's Message of prometheus/alertmanager
 * (notify/webhook, https://prometheus.io/docs/alerting/latest/configuration/#webhook_config)
 * and the fingerprint of prometheus/common model.LabelSet.Fingerprint().
 */
#ifndef AB_AM_H
#define AB_AM_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

/* One label or annotation.  Both strings are NUL-free, valid UTF-8. */
struct am_label {
	const char *name;
	const char *value;
};

/* A label set sorted by name (byte order, as Go's sort.Strings); names unique. */
struct am_labels {
	struct am_label *v;  /* n entries, NULL when n == 0 */
	size_t n;
};

/* The value of name in set, or NULL when absent (binary search). */
const char *am_labels_get(const struct am_labels *set, const char *name);

/*
 * Why a payload was rejected, for an HTTP 400 {"error": message, "field": field}.
 * field is a JSON path into the body such as "version", "alerts[2].startsAt"
 * or "alerts[0].labels.severity"; it is "" when the body is not well-formed
 * JSON (syntax, duplicate key, \u0000, invalid UTF-8) or not an object.
 * Both are NUL-terminated, cut at a UTF-8 boundary when too long.
 * receiver is set by a failed am_parse() only: when the body is a JSON
 * object whose "receiver" is a string of at most 127 bytes, that string
 * with am_unquote_meta() applied (whatever else failed), so that a
 * rejection can be counted by receiver; "" otherwise.
 */
struct am_error {
	char field[128];
	char message[256];
	char receiver[128];
};

struct am_alert {
	const char *status;          /* "firing" or "resolved" */
	int firing;                  /* non-zero when status is "firing" */
	struct am_labels labels;     /* at least one label */
	struct am_labels annotations;  /* empty when absent */
	const char *starts_at;       /* the original RFC 3339 string */
	const char *ends_at;         /* the original string; "0001-01-01T00:00:00Z" while firing */
	int64_t starts_at_ms;        /* never 0 */
	int64_t ends_at_ms;          /* 0 for Go's zero time 0001-01-01T00:00:00Z */
	const char *generator_url;   /* "" when absent */
	char fingerprint[17];        /* 16 lowercase hex digits */
	int fingerprint_computed;    /* non-zero when the payload had none and am_fingerprint made it */
	size_t index;                /* its position in the payload's "alerts" array */
	/*
	 * Set only on the invalid alerts of a payload (am_options.keep_invalid_alerts,
	 * am_alert_invalidate()): why, as {field, message} for a dead letter, and
	 * invalid_reason, a short static name for a metric label: the member that
	 * failed ("status", "labels", "annotations", "startsAt", "endsAt",
	 * "generatorURL", "fingerprint") or the caller's.  NULL on a valid alert.
	 */
	struct am_error *invalid;
	const char *invalid_reason;
	const struct json_t *json;   /* private: the alert's object in the document */
};

/*
 * A parsed payload.  Every const char * points into memory the payload owns;
 * all of it lives until am_payload_free().
 */
struct am_payload {
	const char *version;         /* always "4" */
	const char *receiver;        /* as sent: regexp.QuoteMeta-escaped, non-empty */
	char *receiver_name;         /* receiver with am_unquote_meta() applied */
	const char *status;          /* "firing" or "resolved" (the group's) */
	const char *group_key;
	struct am_labels group_labels;       /* empty when absent */
	struct am_labels common_labels;      /* empty when absent */
	struct am_labels common_annotations; /* empty when absent */
	const char *external_url;    /* "" when absent */
	int64_t truncated_alerts;    /* >= 0; 0 when absent */
	/*
	 * Entries of groupLabels, commonLabels and commonAnnotations left out
	 * for passing a limit of am_options (Alertmanager derives these sets
	 * from the alerts, so one long label or annotation of a one-alert group,
	 * or 300 labels, lands in them too: the alert that carries it is what is
	 * invalid, not the group).  n_dropped counts them; dropped says where
	 * and why of the first ({"commonAnnotations.description", "longer than
	 * 65536 bytes: left out"}); zeroed when n_dropped is 0.
	 */
	size_t n_dropped;
	struct am_error dropped;
	/*
	 * n_alerts valid alerts in payload order, then n_invalid invalid ones
	 * (also in payload order; see am_options.keep_invalid_alerts).  n_alerts
	 * >= 1 unless keep_invalid_alerts is set; n_alerts + n_invalid >= 1.
	 */
	struct am_alert *alerts;
	size_t n_alerts;
	size_t n_invalid;
	struct json_t *doc;          /* private: the parsed document the strings live in */
};

/* Limits on what am_parse() accepts; zero fields take the defaults. */
struct am_options {
	size_t max_alerts;       /* alerts per payload; default 10000 */
	size_t max_labels;       /* entries per label or annotation set; default 256 */
	size_t max_label_bytes;  /* bytes of a label name or value; default 4096 */
	size_t max_annotation_bytes;  /* bytes of an annotation value; default 65536 */
	/*
	 * Non-zero: a problem inside one alert object (its status, labels,
	 * annotations, times, generatorURL, fingerprint, or a limit above) makes
	 * that alert invalid, not the payload: am_parse() succeeds and puts it
	 * behind the valid ones (see struct am_payload), with as much filled in
	 * as could be read - status the alert's when valid, else the group's;
	 * fingerprint the payload's when valid, else am_fingerprint() of the
	 * labels object's string members (limits ignored); starts_at_ms and
	 * ends_at_ms 0 when unreadable; labels and annotations possibly empty.
	 * The envelope (the body, the group's fields, "alerts" an array of 1 to
	 * max_alerts objects) is still checked as a whole.  Zero: any problem
	 * fails the parse.
	 */
	int keep_invalid_alerts;
};

/*
 * Every value am_alert.invalid_reason takes after am_parse(): the member of
 * an alert that failed.  NULL-terminated; for metric series known in advance.
 */
extern const char *const am_invalid_members[];

#define AM_DEFAULT_MAX_ALERTS 10000
#define AM_DEFAULT_MAX_LABELS 256
#define AM_DEFAULT_MAX_LABEL_BYTES 4096
#define AM_DEFAULT_MAX_ANNOTATION_BYTES 65536

/*
 * Parse and validate len bytes of body (need not be NUL-terminated) as a
 * version-4 webhook payload.  opts NULL takes the defaults.  Unknown fields
 * are ignored.  On ERR_OK *out is a new payload (free with am_payload_free());
 * otherwise *out is NULL and err, when not NULL, says what and where.
 *
 * Rules: the body is one JSON object, no duplicate keys, no \u0000, valid
 * UTF-8.  version "4"; status firing|resolved; receiver a non-empty string;
 * groupKey a string; truncatedAlerts, when present, an integer >= 0;
 * groupLabels, commonLabels, commonAnnotations, when present, objects of
 * strings (an entry over a limit is left out, never an error: see
 * am_payload.n_dropped); externalURL, when present, a string; alerts a non-empty array of
 * at most max_alerts objects, each with status firing|resolved, labels a
 * non-empty object of strings, annotations (optional) an object of strings,
 * startsAt an RFC 3339 time as rfc3339_parse_go() reads it (not the zero
 * time), endsAt likewise (the zero time 0001-01-01T00:00:00Z means none),
 * generatorURL (optional) a string, fingerprint (optional) exactly 16
 * lowercase hex digits.
 * Errors: ERR_INVALID.
 */
enum err am_parse(const char *body, size_t len, const struct am_options *opts,
		  struct am_payload **out, struct am_error *err) WARN_UNUSED;

/* Free p and everything it points to; p may be NULL. */
void am_payload_free(struct am_payload *p);

/*
 * Mark valid alert i of p (i < p->n_alerts) invalid for a reason the caller
 * checks (e.g. a label that must name a repository): reason is a static
 * name for a metric label, field the JSON path ("alerts[2].labels.x"),
 * message printf-style; both cut as struct am_error cuts them.  The alert
 * stays where it is until am_payload_sort_invalid(), so indexes stay valid
 * while the caller marks several.
 */
void am_alert_invalidate(struct am_payload *p, size_t i, const char *reason, const char *field,
			 const char *fmt, ...) PRINTF_LIKE(5, 6);

/*
 * Give back the memory valid alert i of p (i < p->n_alerts) holds in the
 * parsed document - its JSON object, its labels and annotations - once the
 * caller has taken what it needs from it (its event document): the JSON
 * tree of a webhook is about 4.4 times the body (44 MB for a 10,000-alert,
 * 10 MB body), so an intake that releases each alert as it writes its event
 * keeps its peak near body + tree instead of body + tree + events.  Kept:
 * fingerprint, firing, index, starts_at_ms, ends_at_ms, invalid; status
 * becomes the static "firing" or "resolved"; labels and annotations become
 * empty, starts_at, ends_at and generator_url "".  After it am_event_json(),
 * am_group_event_json() and am_alert_raw_json() must not be asked about
 * alert i; the group's fields and the other alerts are unchanged.
 */
void am_alert_release(struct am_payload *p, size_t i);

/*
 * Move the alerts marked by am_alert_invalidate() behind the valid ones
 * (stable: both keep payload order), updating n_alerts and n_invalid.
 */
void am_payload_sort_invalid(struct am_payload *p);

/*
 * Append the compact JSON object of alert a of p exactly as it was received
 * (keys sorted), valid or not: what a dead letter keeps for inspection.
 * Errors: ERR_TOOBIG when out's max is reached (out is then left unchanged).
 */
enum err am_alert_raw_json(const struct am_alert *a, struct buf *out) WARN_UNUSED;

/*
 * Alertmanager's alert fingerprint of labels (prometheus/common
 * model.LabelSet.Fingerprint): FNV-1a 64 over, for each label in name order,
 * name, 0xff, value, 0xff; written as "%016x" into out (17 bytes with NUL).
 */
void am_fingerprint(const struct am_labels *labels, char out[17]);

/*
 * Undo Go's regexp.QuoteMeta: a backslash before one of \.+*?()|[]{}^$ is
 * dropped; any other backslash is kept.  Appends to out (buf errors ignored:
 * out should have no max, or room for strlen(s)).  s NULL appends nothing.
 */
void am_unquote_meta(const char *s, struct buf *out);

/*
 * Append to out the compact JSON document the queue stores for alert i of p
 * (i < p->n_alerts): self-contained, so bridge/view.c can build the template
 * view from it after a restart.  Keys, in this order:
 *   "v": 1, "receiver" (unescaped name), "groupStatus", "status", "labels",
 *   "annotations" (objects, keys sorted), "startsAt", "endsAt" (the original
 *   strings), "generatorURL", "fingerprint", "groupKey", "groupLabels",
 *   "commonLabels", "commonAnnotations", "externalURL", "truncatedAlerts".
 * Errors: ERR_TOOBIG when out's max is reached (out is then left unchanged).
 */
enum err am_event_json(const struct am_payload *p, size_t i, struct buf *out) WARN_UNUSED;

/*
 * Append to out the document of a whole group notification (issue_per:
 * group): am_event_json() of alert 0 (the group's stand-in for the title and
 * the body's text), with one more key at its end, "members": every alert of
 * p in payload order as {"v": 1, "fingerprint", "status", "startsAt", "endsAt" (the
 * original strings), "labels" (object, keys sorted)}, so that the bridge
 * knows each member's state (bridge/group.h).
 * Errors: ERR_TOOBIG when out's max is reached (out is then left unchanged).
 */
enum err am_group_event_json(const struct am_payload *p, struct buf *out) WARN_UNUSED;

#endif
