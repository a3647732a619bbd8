/*
 * test_group.c - issue_per: group's pure part (bridge/group.h) on the real
 * group payloads of tests/fixtures/alertmanager/ (03 three firing, 04 one
 * resolved, 04b all resolved): the members and the episode they give, the
 * issue_event that issue_plan() then decides on, the members' JSON and view.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <jansson.h>

#include "bridge/group.h"
#include "bridge/issue.h"
#include "core/am.h"
#include "core/rfc3339.h"

#define T_EARLY "2026-11-21T00:40:00.000Z"  /* "app" starts before the others */
#define T_AGAIN "2026-11-21T01:30:00.000Z"  /* a later episode */
#define HOUR INT64_C(3600000)

static json_t *fixture(const char *name)
{
	const char *src = getenv("ALERTBRIDGE_SRC");
	char path[512];
	json_error_t je;
	json_t *doc;

	snprintf(path, sizeof(path), "%s/tests/fixtures/alertmanager/%s", src ? src : ".", name);
	doc = json_load_file(path, 0, &je);
	if (!doc)
		fail_msg("cannot read %s: %s", path, je.text);
	return doc;
}

static json_t *alert_of(json_t *payload, const char *container)
{
	size_t i;
	json_t *a;

	json_array_foreach(json_object_get(payload, "alerts"), i, a) {
		const char *c = json_string_value(
			json_object_get(json_object_get(a, "labels"), "container"));
		if (c && !strcmp(c, container))
			return a;
	}
	fail_msg("no alert with container=%s", container);
	return NULL;
}

static void drop_alert(json_t *payload, const char *container)
{
	json_t *alerts = json_object_get(payload, "alerts");
	size_t i;
	json_t *a;

	json_array_foreach(alerts, i, a) {
		const char *c = json_string_value(
			json_object_get(json_object_get(a, "labels"), "container"));
		if (c && !strcmp(c, container)) {
			json_array_remove(alerts, i);
			return;
		}
	}
}

static void set_starts(json_t *payload, const char *container, const char *starts)
{
	json_object_set_new(alert_of(payload, container), "startsAt", json_string(starts));
}

/* The event document intake queues for payload (released); the caller frees it. */
static char *event_doc(json_t *payload)
{
	char *body = json_dumps(payload, JSON_COMPACT);
	struct am_payload *p = NULL;
	struct am_error e;
	struct buf doc = BUF_INIT;

	assert_int_equal(am_parse(body, strlen(body), NULL, &p, &e), ERR_OK);
	assert_int_equal(am_group_event_json(p, &doc), ERR_OK);
	am_payload_free(p);
	free(body);
	json_decref(payload);
	return buf_detach(&doc);
}

static int64_t ms(const char *t)
{
	int64_t v = 0;
	assert_int_equal(rfc3339_parse(t, &v), ERR_OK);
	return v;
}

static const struct group_member *member(const struct group_members *g, const char *fp)
{
	for (size_t i = 0; i < g->n; i++)
		if (!strcmp(g->v[i].m.key, fp))
			return &g->v[i];
	return NULL;
}

#define APP "98e2b6219b0e1a8d"
#define PROXY "9329cd68b64d6724"
#define SIDECAR "04b8c13f54b78add"

/* The group's state as the bridge keeps it: members, and the map row the plans apply to. */
struct life {
	struct group_members g;
	struct store_issue row;
	int have_row;
	struct issue_policy pol;
	int64_t now;
};

/* Feed payload through merge, issue_event, plan and apply, as the reconciler does. */
static enum issue_action step(struct life *l, json_t *payload, struct group_change *c)
{
	char *doc = event_doc(payload);
	struct issue_event iev;
	struct buf err = BUF_INIT;
	enum issue_action a;
	int known = l->g.n > 0;

	assert_int_equal(group_merge(&l->g, doc, group_row_firing(l->have_row ? &l->row : NULL),
				     c, &err), ERR_OK);
	group_issue_event(&l->g, c, known, l->have_row ? &l->row : NULL, &iev);
	a = issue_plan(l->have_row ? &l->row : NULL, &iev, &l->pol, l->now, NULL);
	if (a == ISSUE_CREATE) {
		memset(&l->row, 0, sizeof(l->row));
		l->have_row = 1;
	}
	issue_apply(&l->row, a, &iev, l->now);
	free(doc);
	buf_release(&err);
	return a;
}

static void life_init(struct life *l)
{
	memset(l, 0, sizeof(*l));
	l->pol.auto_close = 1;
	l->pol.reopen_window_ms = 7 * 24 * HOUR;
	l->now = ms("2026-11-21T02:00:00Z");
}

/* The life's first notification, first, creates the issue; c: its change. */
static void first_creates(struct life *l, json_t *first, struct group_change *c)
{
	assert_int_equal(step(l, first, c), ISSUE_CREATE);
}

static void life_release(struct life *l)
{
	group_members_release(&l->g);
	store_issue_release(&l->row);
}

static json_t *fired_staggered(void)
{
	json_t *p = fixture("03_group_of_3_firing.json");
	set_starts(p, "app", T_EARLY);
	return p;
}

static json_t *partly_staggered(void)
{
	json_t *p = fixture("04_group_partially_resolved.json");
	set_starts(p, "app", T_EARLY);
	return p;
}

/* cmocka setup and teardown: *state a fresh life (life_init()), released and freed after. */
static int life_setup(void **state)
{
	struct life *l = malloc(sizeof(*l));

	if (!l)
		return -1;
	life_init(l);
	*state = l;
	return 0;
}

static int life_teardown(void **state)
{
	life_release(*state);
	free(*state);
	return 0;
}

/* A row of the test table: f(void **state) on a fresh life, *state. */
#define LIFE_TEST(f) cmocka_unit_test_setup_teardown(f, life_setup, life_teardown)

/* The defect: the earliest member resolving (and leaving) is not "firing again". */
static void member_resolving_is_not_a_new_episode(void **state)
{
	struct life *l = *state;
	struct group_change c;
	json_t *dropped;

	first_creates(l, fired_staggered(), &c);
	assert_int_equal(l->row.episode_starts_ms, ms(T_EARLY));
	assert_int_equal(l->g.n, 3);
	assert_false(c.was_firing);
	assert_true(c.is_firing);

	assert_int_equal(step(l, partly_staggered(), &c), ISSUE_NOTHING);
	assert_true(c.changed);
	assert_true(c.was_firing && c.is_firing);
	assert_false(member(&l->g, APP)->m.firing);
	assert_int_equal(member(&l->g, APP)->m.ends_at_ms, ms("2026-11-21T00:49:52.686Z"));
	assert_true(member(&l->g, PROXY)->m.firing);

	/* Alertmanager drops the resolved alert once notified: still the same episode. */
	dropped = partly_staggered();
	drop_alert(dropped, "app");
	assert_int_equal(step(l, dropped, &c), ISSUE_NOTHING);
	assert_false(c.changed);
	assert_int_equal(l->g.n, 3);  /* app stays listed, resolved */
	assert_false(member(&l->g, APP)->m.firing);
	assert_int_equal(l->row.episode_starts_ms, ms(T_EARLY));

	/* The same notification again (repeat_interval, an HA twin): nothing changes. */
	assert_int_equal(step(l, partly_staggered(), &c), ISSUE_NOTHING);
	assert_false(c.changed);
}

static void member_joining_is_not_a_new_episode(void **state)
{
	struct life *l = *state;
	struct group_change c;
	json_t *two = fixture("03_group_of_3_firing.json");
	json_t *three = fixture("03_group_of_3_firing.json");

	drop_alert(two, "sidecar");
	set_starts(three, "sidecar", T_AGAIN);
	first_creates(l, two, &c);
	assert_int_equal(l->g.n, 2);
	assert_int_equal(step(l, three, &c), ISSUE_NOTHING);
	assert_true(c.changed);
	assert_int_equal(l->g.n, 3);
	assert_true(member(&l->g, SIDECAR)->m.firing);
	assert_int_equal(member(&l->g, SIDECAR)->m.starts_at_ms, ms(T_AGAIN));
	assert_int_equal(l->row.episode_starts_ms, ms("2026-11-21T00:49:51.678Z"));
}

static void all_resolved_closes_then_a_new_episode_reopens(void **state)
{
	struct life *l = *state;
	struct group_change c;
	json_t *again = fixture("03_group_of_3_firing.json");

	first_creates(l, fired_staggered(), &c);
	assert_int_equal(step(l, partly_staggered(), &c), ISSUE_NOTHING);
	assert_int_equal(step(l, fixture("04b_group_all_resolved.json"), &c), ISSUE_CLOSE);
	assert_true(c.was_firing);
	assert_false(c.is_firing);
	assert_int_equal(l->row.resolved_ends_ms, ms("2026-11-21T00:49:54.703Z"));
	for (size_t i = 0; i < l->g.n; i++)
		assert_false(l->g.v[i].m.firing);

	/* A late copy of 04 (the group's older notification) does not reopen it. */
	assert_int_equal(step(l, partly_staggered(), &c), ISSUE_NOTHING);
	assert_false(c.is_firing);
	assert_int_equal(l->row.state, STORE_ISSUE_CLOSED);

	/* The group fires again: a new episode, listing only its members. */
	drop_alert(again, "app");
	set_starts(again, "proxy", T_AGAIN);
	set_starts(again, "sidecar", T_AGAIN);
	l->now += HOUR;
	assert_int_equal(step(l, again, &c), ISSUE_REOPEN);
	assert_int_equal(l->row.episode_starts_ms, ms(T_AGAIN));
	assert_int_equal(l->g.n, 2);
	assert_null(member(&l->g, APP));
}

static void resolved_group_resolves_members_not_listed(void **state)
{
	struct life *l = *state;
	struct group_change c;
	json_t *resolved = fixture("04b_group_all_resolved.json");

	first_creates(l, fixture("03_group_of_3_firing.json"), &c);
	/* 04b lacks "app", which never got its own resolve: the group's status says it. */
	assert_int_equal(step(l, resolved, &c), ISSUE_CLOSE);
	assert_false(member(&l->g, APP)->m.firing);
	assert_int_equal(member(&l->g, APP)->m.ends_at_ms, ms("2026-11-21T00:49:54.703Z"));
}

static void unknown_members_follow_the_issue_state(void **state)
{
	struct life l;
	struct group_change c;
	(void)state;

	/* A row rebuilt from GitHub (no members known): open means the episode goes on. */
	life_init(&l);
	l.have_row = 1;
	l.row.state = STORE_ISSUE_OPEN;
	l.row.episode_starts_ms = ms("2026-11-21T00:49:51.678Z");
	assert_int_equal(step(&l, fixture("03_group_of_3_firing.json"), &c), ISSUE_NOTHING);
	assert_true(c.was_firing);
	assert_true(c.changed);  /* the members are new: the body is to be updated */
	life_release(&l);

	/* Closed, and the same episode re-sent: nothing (not a reopen). */
	life_init(&l);
	l.have_row = 1;
	l.row.state = STORE_ISSUE_CLOSED;
	l.row.closed_at_ms = l.now - HOUR;
	l.row.episode_starts_ms = ms("2026-11-21T00:49:51.678Z");
	assert_int_equal(step(&l, fixture("03_group_of_3_firing.json"), &c), ISSUE_NOTHING);
	life_release(&l);
}

/* A rebuilt row (no members known) in the given state, whose episode is episode. */
static void rebuilt_row(struct life *l, const char *state, int64_t episode, int64_t resolved_ends)
{
	life_init(l);
	l->have_row = 1;
	assert_int_equal(store_issue_state_parse(state, &l->row.state), ERR_OK);
	if (!strcmp(state, "closed")) {
		l->row.state_reason = strdup("completed");
		l->row.closed_at_ms = l->now - HOUR;
	}
	l->row.episode_starts_ms = episode;
	l->row.resolved_ends_ms = resolved_ends;
}

/*
 * After a lost database the row's episode (from the markers) decides, not
 * the members' startsAt alone: the group is in the row's episode unless the
 * row shows its resolve applied.
 */
static void unknown_members_continue_the_rows_episode(void **state)
{
	struct life l;
	struct group_change c;
	json_t *p;
	(void)state;

	/* A person closed it while the group fired; then "app" resolved and fired again
	 * while the others kept the group firing: the same episode, left closed. */
	rebuilt_row(&l, "closed", ms(T_EARLY), 0);
	p = fixture("03_group_of_3_firing.json");
	set_starts(p, "app", T_AGAIN);
	assert_int_equal(step(&l, p, &c), ISSUE_NOTHING);
	assert_int_equal(l.row.state, STORE_ISSUE_CLOSED);
	assert_int_equal(l.row.episode_starts_ms, ms(T_EARLY));
	assert_int_equal(l.g.n, 3);
	life_release(&l);

	/* Open and not resolved: the same, whatever the members' startsAt. */
	rebuilt_row(&l, "open", ms(T_EARLY), 0);
	p = fixture("03_group_of_3_firing.json");
	set_starts(p, "app", T_AGAIN);
	assert_int_equal(step(&l, p, &c), ISSUE_NOTHING);
	life_release(&l);

	/* auto_close off: the resolve was applied (a "resolved" comment), the issue is open; the
	 * group fires again: a new episode. */
	rebuilt_row(&l, "open", ms(T_EARLY), ms("2026-11-21T00:49:54.703Z"));
	l.pol.auto_close = 0;
	p = fixture("03_group_of_3_firing.json");
	set_starts(p, "app", T_AGAIN);
	set_starts(p, "proxy", T_AGAIN);
	set_starts(p, "sidecar", T_AGAIN);
	assert_int_equal(step(&l, p, &c), ISSUE_COMMENT_REFIRE);
	assert_int_equal(l.row.episode_starts_ms, ms(T_AGAIN));
	life_release(&l);

	/* Closed on its resolve: a late copy of the resolved episode's firing is stale; a firing
	 * after the resolve reopens. */
	rebuilt_row(&l, "closed", ms(T_EARLY), ms("2026-11-21T00:49:54.703Z"));
	assert_int_equal(step(&l, fired_staggered(), &c), ISSUE_NOTHING);
	assert_int_equal(l.row.state, STORE_ISSUE_CLOSED);
	life_release(&l);
	rebuilt_row(&l, "closed", ms(T_EARLY), ms("2026-11-21T00:49:54.703Z"));
	p = fixture("03_group_of_3_firing.json");
	set_starts(p, "proxy", T_AGAIN);
	set_starts(p, "sidecar", T_AGAIN);
	drop_alert(p, "app");
	assert_int_equal(step(&l, p, &c), ISSUE_REOPEN);
	assert_int_equal(l.row.episode_starts_ms, ms(T_AGAIN));
	life_release(&l);
}

static void bad_events_change_nothing(void **state)
{
	struct group_members g = { 0 };
	struct group_change c;
	struct buf err = BUF_INIT;
	char *doc = event_doc(fixture("03_group_of_3_firing.json"));
	(void)state;

	assert_int_equal(group_merge(&g, doc, 0, &c, &err), ERR_OK);
	assert_int_equal(g.n, 3);
	assert_int_equal(group_merge(&g, "{\"v\":1}", 0, &c, &err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&err), "members"));
	assert_int_equal(group_merge(&g, "{\"members\":[]}", 0, &c, &err), ERR_INVALID);
	assert_int_equal(group_merge(&g, "{\"members\":[{\"fingerprint\":\"a\",\"status\":\"x\","
					 "\"startsAt\":\"2026-11-21T00:00:00Z\","
					 "\"endsAt\":\"0001-01-01T00:00:00Z\"}]}",
				     0, &c, &err),
			 ERR_INVALID);
	assert_int_equal(group_merge(&g, "not json", 0, &c, &err), ERR_INVALID);
	assert_int_equal(g.n, 3);
	assert_true(g.v[0].m.firing);
	group_members_release(&g);
	free(doc);
	buf_release(&err);
}

/* An event queued by a version without "members": its own alert is the member. */
static void event_without_members_is_its_alert(void **state)
{
	struct group_members g = { 0 };
	struct group_change c;
	struct buf err = BUF_INIT;
	(void)state;

	assert_int_equal(group_merge(&g, "{\"v\":1,\"groupStatus\":\"firing\",\"status\":"
					 "\"firing\",\"fingerprint\":\"" APP "\",\"startsAt\":"
					 "\"2026-11-21T00:49:51.678Z\",\"endsAt\":"
					 "\"0001-01-01T00:00:00Z\",\"labels\":{\"alertname\":\"A\"}}",
				     0, &c, &err),
			 ERR_OK);
	assert_int_equal(g.n, 1);
	assert_string_equal(g.v[0].m.key, APP);
	assert_string_equal(g.v[0].alertname, "A");
	assert_true(c.is_firing);
	group_members_release(&g);
	buf_release(&err);
}

static void members_json_round_trip(void **state)
{
	struct group_members g = { 0 }, back = { 0 };
	struct group_change c;
	struct buf err = BUF_INIT, json = BUF_INIT, again = BUF_INIT;
	char *doc = event_doc(partly_staggered());
	(void)state;

	assert_int_equal(group_merge(&g, doc, 0, &c, &err), ERR_OK);
	group_members_json(&g, &json);
	assert_int_equal(group_members_parse(buf_str(&json), &back, &err), ERR_OK);
	assert_int_equal(back.n, g.n);
	for (size_t i = 0; i < g.n; i++) {
		assert_string_equal(back.v[i].m.key, g.v[i].m.key);
		assert_string_equal(back.v[i].m.line, g.v[i].m.line);
		assert_string_equal(back.v[i].alertname, "HighLatency");
		assert_int_equal(back.v[i].m.firing, g.v[i].m.firing);
		assert_int_equal(back.v[i].m.starts_at_ms, g.v[i].m.starts_at_ms);
		assert_int_equal(back.v[i].m.ends_at_ms, g.v[i].m.ends_at_ms);
	}
	/* Only what tells the members apart: the labels not common to the group. */
	assert_string_equal(member(&g, APP)->m.line, "container=app");
	group_members_json(&back, &again);
	assert_string_equal(buf_str(&again), buf_str(&json));
	group_members_release(&back);
	assert_int_equal(group_members_parse("", &back, &err), ERR_OK);
	assert_int_equal(back.n, 0);
	assert_int_equal(group_members_parse("{}", &back, &err), ERR_INVALID);
	assert_int_equal(group_members_parse("[{\"firing\":true}]", &back, &err), ERR_INVALID);
	assert_int_equal(back.n, 0);
	group_members_release(&g);
	free(doc);
	buf_release(&err);
	buf_release(&json);
	buf_release(&again);
}

static void view_lists_members(void **state)
{
	struct group_members g = { 0 };
	struct group_change c;
	struct buf err = BUF_INIT;
	char *doc = event_doc(partly_staggered());
	json_t *view = json_pack("{s:s, s:b, s:{s:s, s:s}}", "status", "resolved", "resolved", 1,
				 "commonLabels", "alertname", "HighLatency", "pod", "api-0");
	json_t *members, *app;
	(void)state;

	assert_int_equal(group_merge(&g, doc, 0, &c, &err), ERR_OK);
	group_view_add(view, &g);
	assert_true(json_is_true(json_object_get(view, "group")));
	assert_string_equal(json_string_value(json_object_get(view, "status")), "firing");
	assert_true(json_is_true(json_object_get(view, "firing")));
	assert_true(json_is_false(json_object_get(view, "resolved")));
	assert_int_equal(json_integer_value(json_object_get(view, "membersFiring")), 2);
	assert_int_equal(json_integer_value(json_object_get(view, "membersTotal")), 3);
	members = json_object_get(view, "members");
	assert_int_equal(json_array_size(members), 3);
	app = json_array_get(members, 2);  /* the resolved one, added after the firing ones */
	assert_string_equal(json_string_value(json_object_get(app, "fingerprint")), APP);
	assert_string_equal(json_string_value(json_object_get(app, "status")), "resolved");
	assert_true(json_is_true(json_object_get(app, "resolved")));
	assert_string_equal(json_string_value(json_object_get(app, "startsAt")), T_EARLY);
	assert_string_equal(json_string_value(json_object_get(app, "endsAt")),
			    "2026-11-21T00:49:52.686Z");
	assert_string_equal(json_string_value(json_object_get(json_array_get(members, 0), "endsAt")),
			    "");
	assert_int_equal(json_array_size(json_object_get(view, "labelList")), 2);
	json_decref(view);
	group_members_release(&g);
	free(doc);
	buf_release(&err);
}

UNIT_MAIN(
	LIFE_TEST(member_resolving_is_not_a_new_episode),
	LIFE_TEST(member_joining_is_not_a_new_episode),
	LIFE_TEST(all_resolved_closes_then_a_new_episode_reopens),
	LIFE_TEST(resolved_group_resolves_members_not_listed),
	cmocka_unit_test(unknown_members_follow_the_issue_state),
	cmocka_unit_test(unknown_members_continue_the_rows_episode),
	cmocka_unit_test(bad_events_change_nothing),
	cmocka_unit_test(event_without_members_is_its_alert),
	cmocka_unit_test(members_json_round_trip),
	cmocka_unit_test(view_lists_members))
