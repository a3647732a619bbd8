/*
 * view.c - builds the Mustache view of one alert event (see view.h and
 * templates/VIEW_MODEL.md): labels as objects and sorted lists, times in
 * RFC 3339 and human form, a duration, and the Alertmanager silence link.
 */
#include "view.h"

#include <stdlib.h>
#include <string.h>

#include "core/duration.h"
#include "core/http_client.h"
#include "core/matchers.h"
#include "core/rfc3339.h"
#include "core/xalloc.h"

#include "core/banned.h"

/* ---- times ---- */

/* "2026-11-21T00:49:48.539Z"; the fraction only when not zero. */
static void fmt_rfc3339(int64_t ms, struct buf *out)
{
	char s[32];

	if (ms % 1000)
		rfc3339_format_ms(ms, s);
	else
		rfc3339_format(ms, s);
	(void)buf_adds(out, s);
}

/* ---- helpers ---- */

static int pair_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * Copy obj (an object of strings, or NULL) into a new object, and when list
 * is not NULL into a new array of {"name", "value"} sorted by name.
 * ERR_INVALID (nothing allocated) when obj is not an object of strings.
 */
static enum err string_map(const json_t *obj, json_t **map, json_t **list)
{
	const char *key;
	json_t *val;
	const char **names = NULL;
	size_t n = 0;
	enum err rc = ERR_OK;

	*map = json_object();
	if (list)
		*list = json_array();
	if (!obj)
		return ERR_OK;
	if (!json_is_object(obj)) {
		rc = ERR_INVALID;
		goto out;
	}
	names = xcalloc(json_object_size(obj) + 1, sizeof(*names));
	json_object_foreach((json_t *)obj, key, val) {
		if (!json_is_string(val)) {
			rc = ERR_INVALID;
			goto out;
		}
		names[n++] = key;
	}
	qsort(names, n, sizeof(*names), pair_cmp);
	for (size_t i = 0; i < n; i++) {
		json_t *v = json_object_get(obj, names[i]);
		json_object_set(*map, names[i], v);
		if (list)
			json_array_append_new(*list, json_pack("{s:s,s:O}", "name", names[i],
								"value", v));
	}
out:
	free(names);
	if (rc) {
		json_decref(*map);
		*map = NULL;
		if (list) {
			json_decref(*list);
			*list = NULL;
		}
	}
	return rc;
}

static const char *str_member(const json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : "";
}

static void set_str(json_t *o, const char *key, const char *value)
{
	json_object_set_new(o, key, json_string(value ? value : ""));
}

static void set_time(json_t *view, const char *key, const char *human_key, int64_t ms,
		     struct buf *tmp)
{
	char human[48];

	buf_reset(tmp);
	if (ms)
		fmt_rfc3339(ms, tmp);
	set_str(view, key, buf_str(tmp));
	human[0] = '\0';
	if (ms)
		rfc3339_human(ms, human);
	set_str(view, human_key, human);
}

void view_silence_url(const char *external_url, const json_t *labels, struct buf *out)
{
	struct buf filter = BUF_INIT;
	size_t len = strlen(external_url);
	const char *key;
	json_t *val;
	int first = 1;

	buf_reset(out);
	if (!len)
		return;
	if (external_url[len - 1] == '/')
		len--;
	(void)buf_add(out, external_url, len);
	(void)buf_adds(out, "/#/silences/new?filter=");
	(void)buf_addch(&filter, '{');
	json_object_foreach((json_t *)labels, key, val) {
		if (!first)
			(void)buf_adds(&filter, ", ");
		first = 0;
		(void)buf_adds(&filter, key);
		(void)buf_addch(&filter, '=');
		matcher_quote_value(json_string_value(val), &filter);
	}
	(void)buf_addch(&filter, '}');
	http_url_escape(buf_str(&filter), out);
	buf_release(&filter);
}

static json_t *issue_json(const struct view_issue *is, int with_closed, struct buf *tmp)
{
	json_t *o = json_object();

	json_object_set_new(o, "number", json_integer(is->number));
	set_str(o, "url", is->html_url);
	if (with_closed)
		set_time(o, "closedAt", "closedAtHuman", is->closed_at_ms, tmp);
	return o;
}

/* Add the labels, annotations and group maps of ev to view. */
static enum err add_maps(const json_t *ev, json_t *view, struct buf *errmsg)
{
	static const char *const group_maps[] = { "groupLabels", "commonLabels",
						  "commonAnnotations" };
	json_t *map, *list;

	if (!json_is_object(json_object_get(ev, "labels")) ||
	    string_map(json_object_get(ev, "labels"), &map, &list)) {
		buf_setf(errmsg, "event: labels must be an object of strings");
		return ERR_INVALID;
	}
	json_object_set_new(view, "labels", map);
	json_object_set_new(view, "labelList", list);
	if (string_map(json_object_get(ev, "annotations"), &map, &list)) {
		buf_setf(errmsg, "event: annotations must be an object of strings");
		return ERR_INVALID;
	}
	json_object_set_new(view, "annotations", map);
	json_object_set_new(view, "annotationList", list);
	for (size_t i = 0; i < 3; i++) {
		if (string_map(json_object_get(ev, group_maps[i]), &map, NULL)) {
			buf_setf(errmsg, "event: %s must be an object of strings", group_maps[i]);
			return ERR_INVALID;
		}
		json_object_set_new(view, group_maps[i], map);
	}
	return ERR_OK;
}

/* Add status, times and duration. */
static enum err add_times(const json_t *ev, const struct view_context *ctx, json_t *view,
			  struct buf *tmp, struct buf *errmsg)
{
	const char *status = str_member(ev, "status");
	int64_t starts_ms = 0, ends_ms = 0, end_ms;
	int firing = !strcmp(status, "firing");

	if (!firing && strcmp(status, "resolved")) {
		buf_setf(errmsg, "event: status must be \"firing\" or \"resolved\"");
		return ERR_INVALID;
	}
	if (rfc3339_parse_go(str_member(ev, "startsAt"), &starts_ms) ||
	    rfc3339_parse_go(str_member(ev, "endsAt"), &ends_ms)) {
		buf_setf(errmsg, "event: startsAt or endsAt is not an RFC 3339 time");
		return ERR_INVALID;
	}
	set_str(view, "status", status);
	json_object_set_new(view, "firing", json_boolean(firing));
	json_object_set_new(view, "resolved", json_boolean(!firing));
	set_time(view, "startsAt", "startsAtHuman", starts_ms, tmp);
	set_time(view, "endsAt", "endsAtHuman", firing ? 0 : ends_ms, tmp);
	end_ms = firing || !ends_ms ? ctx->now_ms : ends_ms;
	end_ms = end_ms > starts_ms ? (end_ms - starts_ms) / 1000 : 0;
	buf_reset(tmp);
	duration_human(end_ms * 1000, tmp);
	set_str(view, "duration", buf_str(tmp));
	json_object_set_new(view, "durationSeconds", json_integer(end_ms));
	return ERR_OK;
}

enum err view_build(const char *event_json, const struct view_context *ctx, json_t **out,
		    struct buf *errmsg)
{
	struct buf tmp = BUF_INIT;
	json_error_t jerr;
	json_t *ev = NULL, *view = NULL, *truncated;
	json_int_t n_truncated;
	enum err rc = ERR_INVALID;

	*out = NULL;
	ev = json_loads(event_json ? event_json : "", JSON_REJECT_DUPLICATES, &jerr);
	if (!ev) {
		buf_setf(errmsg, "event: invalid JSON: %s", jerr.text);
		goto out;
	}
	if (!json_is_object(ev)) {
		buf_setf(errmsg, "event: not a JSON object");
		goto out;
	}
	if (json_integer_value(json_object_get(ev, "v")) != 1) {
		buf_setf(errmsg, "event: unsupported version (want \"v\": 1)");
		goto out;
	}
	view = json_object();
	set_str(view, "receiver", ctx->receiver ? ctx->receiver : str_member(ev, "receiver"));
	set_str(view, "repo", ctx->repo);
	rc = add_times(ev, ctx, view, &tmp, errmsg);
	if (rc)
		goto out;
	rc = add_maps(ev, view, errmsg);
	if (rc)
		goto out;
	set_str(view, "alertname", json_string_value(json_object_get(
					   json_object_get(view, "labels"), "alertname")));
	set_str(view, "fingerprint", str_member(ev, "fingerprint"));
	set_str(view, "generatorURL", str_member(ev, "generatorURL"));
	view_silence_url(str_member(ev, "externalURL"), json_object_get(view, "labels"), &tmp);
	set_str(view, "silenceURL", buf_str(&tmp));
	set_str(view, "externalURL", str_member(ev, "externalURL"));
	set_str(view, "groupKey", str_member(ev, "groupKey"));
	set_str(view, "groupStatus", str_member(ev, "groupStatus"));
	truncated = json_object_get(ev, "truncatedAlerts");
	n_truncated = json_is_integer(truncated) ? json_integer_value(truncated) : 0;
	json_object_set_new(view, "truncatedAlerts", json_integer(n_truncated));
	/* Mustache's 0 is truthy: templates guard "N more alerts" with this. */
	json_object_set_new(view, "truncated", json_boolean(n_truncated > 0));
	if (ctx->issue)
		json_object_set_new(view, "issue", issue_json(ctx->issue, 0, &tmp));
	if (ctx->previous)
		json_object_set_new(view, "previous", issue_json(ctx->previous, 1, &tmp));
	*out = view;
	view = NULL;
	rc = ERR_OK;
out:
	json_decref(view);
	json_decref(ev);
	buf_release(&tmp);
	return rc;
}
