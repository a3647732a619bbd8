/*
 * janitor_render.c - the janitor's Slack texts: the embedded
 * templates/slack_*.mustache (core/embed.h), compiled once, rendered with
 * Slack's escaping over the view of templates/SLACK_VIEW_MODEL.md.
 */
#include <assert.h>
#include <jansson.h>
#include <string.h>

#include "core/duration.h"
#include "core/embed.h"
#include "core/rfc3339.h"
#include "janitor/janitor_int.h"
#include "core/banned.h"

/* Slack's limit is 40000 bytes; templates stay far below. */
#define TEXT_MAX_BYTES 40000

static const char *const names[JT_COUNT] = {
	[JT_NOTICE] = "slack_notice.mustache",
	[JT_REMINDER] = "slack_reminder.mustache",
	[JT_CANCELLED] = "slack_cancelled.mustache",
	[JT_DELETED] = "slack_deleted.mustache",
	[JT_DIGEST] = "slack_digest.mustache",
};

void janitor_render_init(struct janitor *j)
{
	for (int i = 0; i < JT_COUNT; i++) {
		size_t len = 0;
		const char *src = embed_get(names[i], &len);
		enum err rc;

		/* Embedded at build time and tested: a failure here is a bug. */
		assert(src);
		rc = mustache_compile(src, len, &j->tmpl[i], NULL);
		assert(rc == ERR_OK);
		(void)rc;
	}
}

void janitor_render_release(struct janitor *j)
{
	for (int i = 0; i < JT_COUNT; i++) {
		mustache_free(j->tmpl[i]);
		j->tmpl[i] = NULL;
	}
}

static const char *resource_of(const char *kind)
{
	if (!kind)
		return "";
	if (!strcmp(kind, "Job"))
		return "job";
	if (!strcmp(kind, "Deployment"))
		return "deployment";
	if (!strcmp(kind, "StatefulSet"))
		return "statefulset";
	if (!strcmp(kind, "ReplicaSet"))
		return "replicaset";
	if (!strcmp(kind, "DaemonSet"))
		return "daemonset";
	return "";
}

static const char *action_text(enum jaction a)
{
	switch (a) {
	case JA_DELETE_POD: return "deleted";
	case JA_DELETE_JOB: return "job deleted";
	case JA_SCALE: return "scaled to 0";
	case JA_NOTIFY_ONLY: return "notify only";
	}
	return "";
}

static json_t *str(const char *s)
{
	return json_string(s ? s : "");
}

/* "in 2h" or "5m ago": from now_ms to at_ms, appended to out. */
static void relative(int64_t at_ms, int64_t now_ms, struct buf *out)
{
	int64_t d = at_ms - now_ms;

	if (d >= 0) {
		(void)buf_adds(out, "in ");
		duration_human(d, out);
	} else {
		duration_human(-d, out);
		(void)buf_adds(out, " ago");
	}
}

static json_t *build_view(const struct jtext_view *v, int64_t now_ms)
{
	const struct kube_owner *o = v->owner;
	char expires[JANITOR_TIME_LEN] = "", snooze[JANITOR_TIME_LEN] = "", human[48] = "";
	struct buf in = BUF_INIT;
	json_t *view;

	if (v->expires_ms != JANITOR_NO_TIME) {
		if (janitor_format_time(v->expires_ms, expires) != ERR_OK)
			expires[0] = '\0';
		if (janitor_format_time(v->expires_ms + v->grace_ms, snooze) != ERR_OK)
			snooze[0] = '\0';
		rfc3339_human(v->expires_ms, human);
		relative(v->expires_ms, now_ms, &in);
	}
	view = json_pack("{s:{s:o,s:o,s:o},s:{s:o,s:o,s:s,s:s},s:o,s:o,s:s,s:b,s:b,s:b,s:b,"
			 "s:s,s:s,s:s,s:s}",
			 "pod", "namespace", str(v->namespace), "name", str(v->pod), "uid",
			 str(v->uid), "owner", "kind", str(o ? o->kind : NULL), "name",
			 str(o ? o->name : NULL), "resource", resource_of(o ? o->kind : NULL),
			 "replicas", "", "reason", str(v->reason), "why", str(v->why), "action",
			 action_text(v->action), "deletePod", v->action == JA_DELETE_POD, "deleteJob",
			 v->action == JA_DELETE_JOB, "scaleToZero", v->action == JA_SCALE,
			 "notifyOnly", v->action == JA_NOTIFY_ONLY, "expires", expires,
			 "expiresHuman", human, "expiresIn", buf_str(&in), "snoozeUntil", snooze);
	buf_release(&in);
	return view;
}

/* Render the template which over view (taken: released here) into out, as Slack text. */
static enum err render_view(struct janitor *j, enum jtext which, json_t *view, struct buf *out,
			    struct buf *errmsg)
{
	struct mustache_options mo = MUSTACHE_OPTIONS_INIT;
	enum err rc;

	mo.escape = MUSTACHE_ESCAPE_SLACK;
	mo.max_out_bytes = TEXT_MAX_BYTES;
	rc = mustache_render_compiled(j->tmpl[which], view, &mo, out, errmsg);
	json_decref(view);
	return rc;
}

enum err janitor_render(struct janitor *j, enum jtext which, const struct jtext_view *v,
			int64_t now_ms, struct buf *out, struct buf *errmsg)
{
	json_t *view = build_view(v, now_ms);

	/* Invalid UTF-8 from a label would make json_pack fail: nothing to send then. */
	if (!view) {
		buf_setf(errmsg, "cannot build the Slack view of pod %s/%s", v->namespace, v->pod);
		return ERR_INVALID;
	}
	return render_view(j, which, view, out, errmsg);
}

char *janitor_render_line(const struct jtext_view *v)
{
	json_t *line = json_pack("{s:o,s:o,s:o,s:o,s:s,s:I,s:i,s:I}", "namespace",
				 str(v->namespace), "pod", str(v->pod), "uid", str(v->uid),
				 "policy", str(v->reason), "action", action_text(v->action),
				 "expiresMs", (json_int_t)v->expires_ms, "postponed", v->postponed,
				 "createdMs", (json_int_t)v->created_ms);
	char *out = line ? json_dumps(line, JSON_COMPACT) : NULL;

	json_decref(line);
	return out;
}

/* The view of one digest line (templates/SLACK_VIEW_MODEL.md "digest"), or NULL. */
static json_t *line_view(const char *line, int64_t now_ms)
{
	json_t *in = json_loads(line ? line : "", 0, NULL), *out = NULL;
	const char *ns = NULL, *pod = NULL, *policy = NULL, *action = NULL;
	json_int_t at = 0;
	char expires[JANITOR_TIME_LEN] = "", human[48] = "";
	struct buf rel = BUF_INIT;

	if (in && !json_unpack(in, "{s:s,s:s,s:s,s:s,s:I}", "namespace", &ns, "pod", &pod,
			       "policy", &policy, "action", &action, "expiresMs", &at)) {
		if (janitor_format_time(at, expires) != ERR_OK)
			expires[0] = '\0';
		rfc3339_human(at, human);
		relative(at, now_ms, &rel);
		out = json_pack("{s:s,s:s,s:s,s:s,s:s,s:s,s:s}", "namespace", ns, "name", pod,
				"policy", policy, "action", action, "expires", expires,
				"expiresHuman", human, "expiresIn", buf_str(&rel));
	}
	buf_release(&rel);
	json_decref(in);
	return out;
}

enum err janitor_render_digest(struct janitor *j, const char *const *lines, size_t n, int part,
			       int parts, size_t total, int64_t now_ms, struct buf *out,
			       struct buf *errmsg)
{
	json_t *pods = json_array(), *view;

	for (size_t i = 0; i < n; i++) {
		json_t *p = line_view(lines[i], now_ms);

		if (!p) {
			json_decref(pods);
			buf_setf(errmsg, "digest line %zu is not a pod's line", i + 1);
			return ERR_INVALID;
		}
		json_array_append_new(pods, p);
	}
	view = json_pack("{s:o,s:I,s:I,s:I,s:I,s:b}", "pods", pods, "count", (json_int_t)n,
			 "total", (json_int_t)total, "part", (json_int_t)part, "parts",
			 (json_int_t)parts, "multipart", parts > 1);
	if (!view) {
		buf_setf(errmsg, "cannot build the Slack view of a digest");
		return ERR_INVALID;
	}
	return render_view(j, JT_DIGEST, view, out, errmsg);
}
