/*
 * group.c - issue_per: group (bridge/group.h): the members of a group and
 * their episode, which decide the issue_event a group's issue is planned
 * with, and the paced rewrites of the body that lists the members.  The
 * reconciler (bridge/bridge.c) calls both; the store keeps the members as
 * JSON in struct store_group.
 */
#include "bridge/group.h"

#include <stdlib.h>
#include <string.h>

#include "bridge/storm.h"
#include "bridge/view.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/xalloc.h"
#include "store/store_events.h"
#include "store/store_groups.h"
#include "store/store_map.h"
#include "core/banned.h"

/* ---- members ---- */

static void member_release(struct group_member *gm)
{
	store_member_release(&gm->m);
	free(gm->alertname);
	gm->alertname = NULL;
}

void group_members_release(struct group_members *g)
{
	if (!g)
		return;
	for (size_t i = 0; i < g->n; i++)
		member_release(&g->v[i]);
	free(g->v);
	g->v = NULL;
	g->n = 0;
}

static struct group_member *add_member(struct group_members *g, const char *fingerprint)
{
	struct group_member *gm;

	g->v = xreallocarray(g->v, g->n + 1, sizeof(*g->v));
	gm = &g->v[g->n++];
	memset(gm, 0, sizeof(*gm));
	gm->m.key = xstrdup(fingerprint);
	gm->m.line = xstrdup("");
	gm->alertname = xstrdup("");
	return gm;
}

static struct group_member *find_member(struct group_members *g, const char *fingerprint)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->v[i].m.key, fingerprint))
			return &g->v[i];
	return NULL;
}

static void set_owned(char **field, const char *value)
{
	free(*field);
	*field = xstrdup(value ? value : "");
}

enum err group_members_parse(const char *json, struct group_members *out, struct buf *errmsg)
{
	json_t *doc, *e;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!json || !*json)
		return ERR_OK;
	doc = json_loads(json, 0, NULL);
	if (!json_is_array(doc)) {
		json_decref(doc);
		buf_setf(errmsg, "group members: not a JSON array");
		return ERR_INVALID;
	}
	json_array_foreach(doc, i, e) {
		const char *fp = json_string_value(json_object_get(e, "fingerprint"));
		struct group_member *gm;

		if (!fp || !*fp) {
			group_members_release(out);
			json_decref(doc);
			buf_setf(errmsg, "group members: member %zu has no fingerprint", i);
			return ERR_INVALID;
		}
		gm = add_member(out, fp);
		set_owned(&gm->alertname, json_string_value(json_object_get(e, "alertname")));
		set_owned(&gm->m.line, json_string_value(json_object_get(e, "line")));
		gm->m.firing = json_is_true(json_object_get(e, "firing"));
		gm->m.starts_at_ms = json_integer_value(json_object_get(e, "startsAt"));
		gm->m.ends_at_ms = json_integer_value(json_object_get(e, "endsAt"));
	}
	json_decref(doc);
	return ERR_OK;
}

void group_members_json(const struct group_members *g, struct buf *out)
{
	json_t *arr = json_array();
	char *text;

	for (size_t i = 0; i < g->n; i++) {
		const struct group_member *gm = &g->v[i];

		json_array_append_new(arr, json_pack("{s:s, s:s, s:s, s:b, s:I, s:I}", "fingerprint",
						     gm->m.key, "alertname", gm->alertname,
						     "line", gm->m.line, "firing", gm->m.firing,
						     "startsAt", (json_int_t)gm->m.starts_at_ms,
						     "endsAt", (json_int_t)gm->m.ends_at_ms));
	}
	text = json_dumps(arr, JSON_COMPACT);
	if (!text)
		abort();  /* jansson fails only when it cannot allocate: as xmalloc does */
	(void)buf_adds(out, text);
	free(text);
	json_decref(arr);
}

/* ---- merging a group event ---- */

static int any_firing(const struct group_members *g)
{
	for (size_t i = 0; i < g->n; i++)
		if (g->v[i].m.firing)
			return 1;
	return 0;
}

/* One member of the event as an issue_event; ERR_INVALID when it is not one. */
static enum err event_member(const json_t *e, struct issue_event *iev, const char **fp)
{
	const char *status = json_string_value(json_object_get(e, "status"));

	*fp = json_string_value(json_object_get(e, "fingerprint"));
	if (!*fp || !**fp || !status || (strcmp(status, "firing") && strcmp(status, "resolved")))
		return ERR_INVALID;
	iev->firing = !strcmp(status, "firing");
	if (rfc3339_parse_go(json_string_value(json_object_get(e, "startsAt")),
			     &iev->starts_at_ms) ||
	    rfc3339_parse_go(json_string_value(json_object_get(e, "endsAt")), &iev->ends_at_ms))
		return ERR_INVALID;
	return ERR_OK;
}

/* Keep only the firing members: a new episode's list. */
static void keep_firing(struct group_members *g)
{
	size_t kept = 0;

	for (size_t i = 0; i < g->n; i++) {
		if (g->v[i].m.firing)
			g->v[kept++] = g->v[i];
		else
			member_release(&g->v[i]);
	}
	g->n = kept;
}

/*
 * Apply one member of the event; returns whether g changed.  A member not in
 * g is added only when add_new: a firing one always, a resolved one once the
 * episode it belongs to is known to go on (see group_merge()).
 */
static int apply_member(struct group_members *g, const json_t *e, const struct issue_event *iev,
			const char *fp, const json_t *common, int add_new)
{
	struct group_member *gm = find_member(g, fp);
	const json_t *labels = json_object_get(e, "labels");
	struct buf line = BUF_INIT;
	int changed = 0;

	if (!gm) {
		if (!add_new)
			return 0;
		gm = add_member(g, fp);
		gm->m.firing = iev->firing;
		gm->m.starts_at_ms = iev->starts_at_ms;
		if (!iev->firing)
			gm->m.ends_at_ms = iev->ends_at_ms > iev->starts_at_ms ? iev->ends_at_ms
									 : iev->starts_at_ms;
		changed = 1;
	} else {
		changed = storm_member_apply(&gm->m, iev) == STORM_CHANGED;
	}
	set_owned(&gm->alertname, json_string_value(json_object_get(labels, "alertname")));
	storm_labels_line(labels, common, &line);
	set_owned(&gm->m.line, buf_str(&line));
	buf_release(&line);
	return changed;
}

/* A resolved notification: every member still firing ends at the latest endsAt. */
static int resolve_all(struct group_members *g, int64_t end_ms)
{
	int changed = 0;

	for (size_t i = 0; i < g->n; i++) {
		struct store_member *m = &g->v[i].m;

		if (!m->firing)
			continue;
		m->firing = 0;
		m->ends_at_ms = end_ms > m->starts_at_ms ? end_ms : m->starts_at_ms;
		changed = 1;
	}
	return changed;
}

enum err group_merge(struct group_members *g, const char *event_json, int assume_firing,
		     struct group_change *out, struct buf *errmsg)
{
	json_t *doc = json_loads(event_json ? event_json : "", 0, NULL);
	json_t *members = json_object_get(doc, "members"), *e;
	const json_t *common = json_object_get(doc, "commonLabels");
	const char *status = json_string_value(json_object_get(doc, "groupStatus"));
	struct issue_event *iev = NULL;
	const char **fps = NULL;
	int64_t latest_end = 0;
	enum err rc = ERR_OK;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (json_is_object(doc) && !members) {
		/* queued by a version without members: its one alert stands for them */
		members = json_array();
		json_array_append_new(members, json_copy(doc));  /* a copy: no cycle */
		json_object_set_new(doc, "members", members);
	}
	if (!json_is_array(members) || json_array_size(members) == 0) {
		buf_setf(errmsg, "group event: no \"members\" array");
		rc = ERR_INVALID;
		goto out;
	}
	/* Check every member before changing g: a bad event changes nothing. */
	iev = xcalloc(json_array_size(members), sizeof(*iev));
	fps = xcalloc(json_array_size(members), sizeof(*fps));
	json_array_foreach(members, i, e) {
		if (event_member(e, &iev[i], &fps[i])) {
			buf_setf(errmsg, "group event: members[%zu] is not a valid alert state", i);
			rc = ERR_INVALID;
			goto out;
		}
		if (iev[i].ends_at_ms > latest_end)
			latest_end = iev[i].ends_at_ms;
	}
	out->was_firing = g->n ? any_firing(g) : assume_firing != 0;
	json_array_foreach(members, i, e)
		out->changed |= apply_member(g, e, &iev[i], fps[i], common, iev[i].firing);
	if (status && !strcmp(status, "resolved"))
		out->changed |= resolve_all(g, latest_end);
	out->is_firing = any_firing(g);
	if (out->is_firing && !out->was_firing)
		keep_firing(g);
	/*
	 * A resolved member not seen before fired and resolved between two
	 * notifications: it belongs to the episode that goes on (or starts) now;
	 * when the group neither fired nor fires, to one that is over.
	 */
	if (out->was_firing || out->is_firing)
		json_array_foreach(members, i, e)
			if (!iev[i].firing)
				out->changed |= apply_member(g, e, &iev[i], fps[i], common, 1);
out:
	free(iev);
	free(fps);
	json_decref(doc);
	return rc;
}

int group_row_resolved(const struct store_issue *row)
{
	return row && row->resolved_ends_ms != 0 &&
	       row->resolved_ends_ms >= row->episode_starts_ms;
}

int group_row_firing(const struct store_issue *row)
{
	return row && row->state != STORE_ISSUE_CLOSED && !group_row_resolved(row);
}

void group_issue_event(const struct group_members *g, const struct group_change *c, int known,
		       const struct store_issue *row, struct issue_event *out)
{
	int64_t earliest = 0, latest_end = 0;

	for (size_t i = 0; i < g->n; i++) {
		const struct store_member *m = &g->v[i].m;

		if ((m->firing || !c->is_firing) && (!earliest || m->starts_at_ms < earliest))
			earliest = m->starts_at_ms;
		if (m->ends_at_ms > latest_end)
			latest_end = m->ends_at_ms;
	}
	memset(out, 0, sizeof(*out));
	out->firing = c->is_firing;
	out->starts_at_ms = row ? row->episode_starts_ms : earliest;
	/* Members not known (a rebuilt row): the row says whether the episode is over. */
	if (c->is_firing && (!row || (known ? !c->was_firing : group_row_resolved(row)))) {
		out->starts_at_ms = earliest;
		/* Members known: their own episodes already ruled out stale events. */
		if (known && row && out->starts_at_ms <= row->episode_starts_ms)
			out->starts_at_ms = row->episode_starts_ms + 1;
		if (known && row && out->starts_at_ms < row->resolved_ends_ms)
			out->starts_at_ms = row->resolved_ends_ms;
	}
	if (!c->is_firing)
		out->ends_at_ms = latest_end > out->starts_at_ms ? latest_end : out->starts_at_ms;
}

/* ---- the template view ---- */

static void set_time(json_t *o, const char *key, const char *human_key, int64_t ms)
{
	char t[32] = "", human[48] = "";

	if (ms) {
		rfc3339_format_ms(ms, t);
		rfc3339_human(ms, human);
	}
	json_object_set_new(o, key, json_string(t));
	json_object_set_new(o, human_key, json_string(human));
}

/* Whether gm fits the bound (group.h) after *shown members of *bytes; counts it if so. */
static int member_shown(const struct group_member *gm, size_t *shown, size_t *bytes)
{
	size_t len = GROUP_VIEW_MEMBER_FIXED + strlen(gm->alertname) + strlen(gm->m.line);

	if (*shown >= GROUP_VIEW_MAX_MEMBERS || *bytes + len > GROUP_VIEW_MAX_BYTES)
		return 0;
	++*shown;
	*bytes += len;
	return 1;
}

static json_t *member_json(const struct group_member *gm)
{
	json_t *o = json_pack("{s:s, s:s, s:s, s:s, s:b, s:b}", "fingerprint", gm->m.key,
			      "alertname", gm->alertname, "line", gm->m.line, "status",
			      gm->m.firing ? "firing" : "resolved", "firing", gm->m.firing,
			      "resolved", !gm->m.firing);

	set_time(o, "startsAt", "startsAtHuman", gm->m.starts_at_ms);
	set_time(o, "endsAt", "endsAtHuman", gm->m.firing ? 0 : gm->m.ends_at_ms);
	return o;
}

void group_view_add(json_t *view, const struct group_members *g)
{
	json_t *list = json_array(), *labels = json_array(), *v;
	int64_t firing = 0, cut_firing = 0, cut_resolved = 0;
	size_t shown = 0, bytes = 0;
	struct buf url = BUF_INIT;
	const char *name, *ext;

	/* The firing members first, then the resolved, while the bound allows. */
	for (int pass = 1; pass >= 0; pass--) {
		for (size_t i = 0; i < g->n; i++) {
			const struct group_member *gm = &g->v[i];

			if ((gm->m.firing != 0) != pass)
				continue;
			if (member_shown(gm, &shown, &bytes))
				json_array_append_new(list, member_json(gm));
			else if (pass)
				cut_firing++;
			else
				cut_resolved++;
		}
	}
	for (size_t i = 0; i < g->n; i++)
		firing += g->v[i].m.firing != 0;
	json_object_foreach(json_object_get(view, "commonLabels"), name, v)
		json_array_append_new(labels, json_pack("{s:s, s:O}", "name", name, "value", v));
	json_object_set_new(view, "labelList", labels);
	/* A silence of the group, as /silence makes, not of its first alert. */
	ext = json_string_value(json_object_get(view, "externalURL"));
	view_silence_url(ext ? ext : "", json_object_get(view, "groupLabels"), &url);
	json_object_set_new(view, "silenceURL", json_string(buf_str(&url)));
	buf_release(&url);
	json_object_set_new(view, "group", json_true());
	json_object_set_new(view, "members", list);
	json_object_set_new(view, "membersFiring", json_integer(firing));
	json_object_set_new(view, "membersTotal", json_integer((json_int_t)g->n));
	json_object_set_new(view, "membersNotShown", json_integer(cut_firing + cut_resolved));
	json_object_set_new(view, "membersNotShownFiring", json_integer(cut_firing));
	json_object_set_new(view, "membersNotShownResolved", json_integer(cut_resolved));
	/* Mustache's 0 is truthy: templates guard "N more" with this. */
	json_object_set_new(view, "membersCut", json_boolean(cut_firing + cut_resolved > 0));
	json_object_set_new(view, "status", json_string(firing ? "firing" : "resolved"));
	json_object_set_new(view, "firing", json_boolean(firing));
	json_object_set_new(view, "resolved", json_boolean(!firing));
}

/* ---- one group event ---- */

enum err group_event_load(struct store *st, const struct store_event *ev,
			  const struct store_issue *row, struct group_event *out,
			  struct issue_event *iev, struct buf *errmsg)
{
	int known;
	enum err rc;

	rc = store_group_get(st, ev->receiver, ev->key, &out->state);
	if (rc && rc != ERR_NOTFOUND) {
		buf_setf(errmsg, "cannot read the group state");
		return ERR_DB;
	}
	if (group_members_parse(out->state.members, &out->members, errmsg) != ERR_OK) {
		struct log_line *l = log_begin(LOG_WARN, "group members unreadable, starting afresh");
		log_str(l, "receiver", ev->receiver);
		log_str(l, "key", ev->key);
		log_str(l, "detail", buf_str(errmsg));
		log_end(l);
		buf_reset(errmsg);
	}
	known = out->members.n > 0;
	rc = group_merge(&out->members, ev->payload, group_row_firing(row), &out->change, errmsg);
	if (!rc)
		group_issue_event(&out->members, &out->change, known, row, iev);
	return rc;
}

enum err group_event_done(struct store *st, const struct group_event *ge,
			  const struct store_event *ev, const struct store_issue *row,
			  int created, int64_t now_ms, struct buf *errmsg)
{
	struct store_group g = ge->state;  /* borrowed strings */
	struct buf members = BUF_INIT;
	enum err rc;

	group_members_json(&ge->members, &members);
	g.receiver = ev->receiver;
	g.key = ev->key;
	g.members = buf_str(&members);
	g.payload = ev->payload;
	if (created) {
		g.dirty = 0;
		g.synced_at_ms = now_ms;
		g.next_sync_ms = 0;
	} else {
		g.dirty = g.dirty || ge->change.changed;
	}
	rc = store_group_done(st, ev->id, row, &g, errmsg);
	buf_release(&members);
	return rc;
}

void group_event_release(struct group_event *ge)
{
	if (!ge)
		return;
	store_group_release(&ge->state);
	group_members_release(&ge->members);
	memset(ge, 0, sizeof(*ge));
}

/* ---- paced body updates ---- */

struct group {
	struct group_options opts;
	int yield;  /* the last group_sync() made an update: the next step is the queue's */
};

struct group *group_new(const struct group_options *opts)
{
	struct group *g = xcalloc(1, sizeof(*g));

	g->opts = *opts;
	return g;
}

void group_free(struct group *g)
{
	free(g);
}

static void log_sync(enum log_level lvl, const char *msg, const struct store_group *gs,
		     const struct store_issue *row, enum err rc, const char *detail)
{
	struct log_line *l = log_begin(lvl, msg);

	if (rc)
		log_err(l, rc);
	log_str(l, "receiver", gs->receiver);
	log_str(l, "key", gs->key);
	log_str(l, "repo", row->repo);
	log_int(l, "issue", row->number);
	if (detail)
		log_str(l, "detail", detail);
	log_end(l);
}

/* Write the body of gs to its issue; ERR_OK once GitHub has it. */
static enum err sync_one(struct group *g, const struct store_group *gs,
			 const struct store_issue *row, struct buf *errmsg)
{
	struct group_members gm = { 0 };
	struct buf body = BUF_INIT;
	enum err rc;

	rc = group_members_parse(gs->members, &gm, errmsg);
	if (!rc)
		rc = g->opts.body(g->opts.body_ctx, gs, row, &gm, &body, errmsg);
	if (!rc)
		rc = gh_issue_set_body(g->opts.gh, row->repo, row->number, NULL, buf_str(&body),
				       errmsg);
	group_members_release(&gm);
	buf_release(&body);
	return rc;
}

int group_sync(struct group *g, int64_t now_ms)
{
	struct store_group gs = { 0 };
	struct store_issue row = { 0 };
	struct buf errmsg = BUF_INIT;
	enum err rc;

	if (!g)
		return 0;
	if (g->yield) {
		g->yield = 0;
		return 0;
	}
	if (store_group_due(g->opts.store, now_ms, g->opts.interval_ms, &gs))
		return 0;
	g->yield = 1;
	rc = store_issue_get(g->opts.store, gs.receiver, gs.key, &row);
	if (!rc)
		rc = sync_one(g, &gs, &row, &errmsg);
	if (!rc) {
		gs.dirty = 0;
		gs.synced_at_ms = now_ms;
		gs.next_sync_ms = 0;
		log_sync(LOG_INFO, "group issue body updated", &gs, &row, ERR_OK, NULL);
	} else {
		/*
		 * Refused for good (an archived repository, a locked issue, a body
		 * GitHub will not take): the same body would be refused again, so
		 * none is sent until the group changes (which marks it dirty).
		 */
		int refused = rc == ERR_FORBIDDEN || rc == ERR_INVALID;
		/* Deleted (410), or no map row (forgotten): the group's next event makes its issue. */
		int gone = rc == ERR_GONE || rc == ERR_NOTFOUND;

		log_sync(refused || rc == ERR_AUTH ? LOG_ERROR : LOG_WARN,
			 refused ? "group issue body refused, kept until the group changes"
			 : gone  ? "group issue is gone, no body update until the group changes"
				 : "group issue body update failed, will retry",
			 &gs, &row, rc, buf_str(&errmsg));
		if (refused || gone)
			gs.dirty = 0;
		gs.next_sync_ms = now_ms + GROUP_RETRY_MS;
	}
	buf_reset(&errmsg);
	if (store_group_synced(g->opts.store, &gs, &errmsg))
		log_msg(LOG_ERROR, "cannot record the group body update", "detail",
			buf_str(&errmsg));
	store_group_release(&gs);
	store_issue_release(&row);
	buf_release(&errmsg);
	return 1;
}
