/*
 * test_group_large.c - a group as large as webhook.max_alerts (10,000
 * alerts) gets an issue: its body, rendered with the default template
 * (bridge/render.h) over the group's view (bridge/group.h), fits GitHub's
 * 65,536 bytes by design with its labels table, links, footer and marker,
 * lists the firing members first and says how many it leaves out; a custom
 * template that does pass the render limit is named in the error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <jansson.h>

#include "bridge/group.h"
#include "bridge/issue.h"
#include "bridge/render.h"
#include "core/buf.h"
#include "core/config.h"

#include "tests/unit/helpers/tmpdir.h"
#include "tests/unit/helpers/render_fixture.h"
#include "core/banned.h"

#define N_MEMBERS 10000
#define N_FIRING 6000  /* the even members, then the first odd ones, fire; the rest resolved */
#define T_START INT64_C(1795222198320)

/* The env of issue_per: group, templates_yaml added under the receiver. */
static void start(struct render_env *e, const char *templates_yaml)
{
	char extra[1024];

	snprintf(extra, sizeof(extra), "    issue_per: group\n%s", templates_yaml);
	rfx_start(e, extra);
}

/* n members, firing and resolved interleaved, as group_members_json() writes them. */
static void large_group(struct group_members *g, size_t n, size_t *firing)
{
	struct buf json = BUF_INIT, err = BUF_INIT;

	*firing = 0;
	(void)buf_adds(&json, "[");
	for (size_t i = 0; i < n; i++) {
		int fires = i % 2 == 0 ? i / 2 < N_FIRING : (i - 1) / 2 + n / 2 < N_FIRING;

		*firing += fires;
		assert_int_equal(
			buf_printf(&json,
				   "%s{\"fingerprint\":\"%016zx\",\"alertname\":\"HighLatency\","
				   "\"line\":\"pod=api-%zu container=app\",\"firing\":%s,"
				   "\"startsAt\":%lld,\"endsAt\":%lld}",
				   i ? "," : "", i, i, fires ? "true" : "false",
				   (long long)T_START, fires ? 0LL : (long long)(T_START + 60000)),
			ERR_OK);
	}
	(void)buf_adds(&json, "]");
	if (group_members_parse(buf_str(&json), g, &err) != ERR_OK)
		fail_msg("group_members_parse: %s", buf_str(&err));
	assert_int_equal(g->n, n);
	buf_release(&json);
	buf_release(&err);
}

static json_t *group_view(const struct group_members *g)
{
	json_t *view = json_pack(
		"{s:s, s:s, s:s, s:s, s:s, s:s, s:{s:s}, s:{s:s, s:s}, s:{s:s}, s:b, s:i}",
		"receiver", "default", "repo", "my-org/alerts", "fingerprint", "0000000000000000",
		"startsAt", "2026-11-21T00:49:48.000Z", "externalURL", "http://am.example:9093",
		"generatorURL", "http://prom.example:9090/graph", "groupLabels", "alertname",
		"HighLatency", "commonLabels", "alertname",
		"HighLatency", "namespace", "prod", "annotations", "runbook_url",
		"https://runbooks.example/high-latency", "truncated", 0, "truncatedAlerts", 0);

	group_view_add(view, g);
	return view;
}

static void ten_thousand_alerts_fit_githubs_limit(void **state)
{
	struct render_env e;
	struct group_members g = { 0 };
	struct buf raw = BUF_INIT, body = BUF_INIT, marker = BUF_INIT, err = BUF_INIT;
	char more[128];
	size_t firing, shown;
	json_int_t not_shown, not_firing, not_resolved;
	json_t *view, *members;
	(void)state;

	start(&e, "");
	large_group(&g, N_MEMBERS, &firing);
	assert_int_equal(firing, N_FIRING);
	view = group_view(&g);
	/* The summary counts all members. */
	assert_int_equal(json_integer_value(json_object_get(view, "membersTotal")), N_MEMBERS);
	assert_int_equal(json_integer_value(json_object_get(view, "membersFiring")), N_FIRING);
	members = json_object_get(view, "members");
	shown = json_array_size(members);
	assert_true(shown > 0 && shown <= GROUP_VIEW_MAX_MEMBERS);
	/* Firing ones first: more of them than the bound, so only they are shown. */
	for (size_t i = 0; i < shown; i++)
		assert_true(json_is_true(json_object_get(json_array_get(members, i), "firing")));
	not_shown = json_integer_value(json_object_get(view, "membersNotShown"));
	not_firing = json_integer_value(json_object_get(view, "membersNotShownFiring"));
	not_resolved = json_integer_value(json_object_get(view, "membersNotShownResolved"));
	assert_int_equal(not_shown, N_MEMBERS - shown);
	assert_int_equal(not_firing, N_FIRING - shown);
	assert_int_equal(not_resolved, N_MEMBERS - N_FIRING);
	assert_true(json_is_true(json_object_get(view, "membersCut")));

	if (render_text(e.r, "default", -1, RENDER_BODY, view, &raw, &err) != ERR_OK)
		fail_msg("render_text: %s", buf_str(&err));
	issue_marker_receiver("default", "0000000000000000", &marker);
	issue_body_fit(buf_str(&raw), buf_str(&marker), &body);
	/* It fits by design: nothing cut, every part there, the marker at its end. */
	assert_true(raw.len + 2 + marker.len <= ISSUE_BODY_MAX_BYTES);
	assert_null(strstr(buf_str(&body), "truncated by alertbridge"));
	assert_non_null(strstr(buf_str(&body), "alerts of the group firing"));
	snprintf(more, sizeof(more), "… and %lld more alerts (%lld firing, %lld resolved)",
		 (long long)not_shown, (long long)not_firing, (long long)not_resolved);
	assert_non_null(strstr(buf_str(&body), more));
	assert_non_null(strstr(buf_str(&body), "| Label | Value |"));
	assert_non_null(strstr(buf_str(&body), "| namespace | prod |"));
	assert_non_null(strstr(buf_str(&body), "[Silence this alert]"));
	assert_non_null(strstr(buf_str(&body), "<sub>Started"));
	assert_true(body.len > marker.len);
	assert_string_equal(buf_str(&body) + body.len - marker.len, buf_str(&marker));
	json_decref(view);
	group_members_release(&g);
	buf_release(&raw);
	buf_release(&body);
	buf_release(&marker);
	buf_release(&err);
	rfx_stop(&e);
}

static void small_group_is_listed_whole(void **state)
{
	struct render_env e;
	struct group_members g = { 0 };
	struct buf raw = BUF_INIT;
	size_t firing;
	json_t *view;
	(void)state;

	start(&e, "");
	large_group(&g, 40, &firing);
	view = group_view(&g);
	assert_int_equal(json_array_size(json_object_get(view, "members")), 40);
	assert_int_equal(json_integer_value(json_object_get(view, "membersNotShown")), 0);
	assert_true(json_is_false(json_object_get(view, "membersCut")));
	assert_int_equal(render_text(e.r, "default", -1, RENDER_BODY, view, &raw, NULL), ERR_OK);
	assert_null(strstr(buf_str(&raw), "more alerts ("));
	json_decref(view);
	group_members_release(&g);
	buf_release(&raw);
	rfx_stop(&e);
}

static void overflowing_custom_template_is_named(void **state)
{
	char dir[256], path[300], yaml[400];
	struct render_env e;
	struct group_members g = { 0 };
	struct buf raw = BUF_INIT, err = BUF_INIT;
	size_t firing;
	json_t *view;
	(void)state;

	tfx_mkdtemp(dir, sizeof(dir), "ab-group-large");
	snprintf(path, sizeof(path), "%s/body.mustache", dir);
	/* members x members x 16-digit fingerprints: about 1.4 MB over 300 members. */
	tfx_write_file(NULL, path,
		       "{{#members}}{{#members}}{{fingerprint}}{{/members}}{{/members}}\n");
	snprintf(yaml, sizeof(yaml), "    templates: {body: %s}\n", path);
	start(&e, yaml);
	large_group(&g, N_MEMBERS, &firing);
	view = group_view(&g);
	assert_int_equal(render_text(e.r, "default", -1, RENDER_BODY, view, &raw, &err),
			 ERR_TOOBIG);
	assert_non_null(strstr(buf_str(&err), "template body of receiver \"default\""));
	assert_non_null(strstr(buf_str(&err), "output over the limit of 1048576 bytes"));
	json_decref(view);
	group_members_release(&g);
	buf_release(&raw);
	buf_release(&err);
	rfx_stop(&e);
	tfx_remove_tree(dir);
}

UNIT_MAIN(
	cmocka_unit_test(ten_thousand_alerts_fit_githubs_limit),
	cmocka_unit_test(small_group_is_listed_whole),
	cmocka_unit_test(overflowing_custom_template_is_named))
