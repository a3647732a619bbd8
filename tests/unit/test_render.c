/*
 * test_render.c - the bridge's texts rendered with the default templates
 * (bridge/render.h) over views of hostile alerts: a body reads as the text
 * the alert sent and still ends with its marker, a title is one line, labels
 * one line; `alertbridge render`'s render_once() gives what the live path
 * sends; a group issue says how many alerts Alertmanager left out.
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

#include "bridge/issue.h"
#include "bridge/render.h"
#include "bridge/view.h"
#include "core/am.h"
#include "core/config.h"
#include "core/embed.h"

#include "tests/unit/helpers/render_fixture.h"
#include "core/banned.h"

#define WJ "\xe2\x81\xa0"  /* U+2060 WORD JOINER */
#define RLO "\xe2\x80\xae" /* U+202E RIGHT-TO-LEFT OVERRIDE */
#define T_NOW 1795222198320LL

/* The env whose receiver's labels are labels_yaml (a YAML list). */
static void start(struct render_env *e, const char *labels_yaml)
{
	char extra[512];

	snprintf(extra, sizeof(extra), "    labels: %s\n", labels_yaml);
	rfx_start(e, extra);
}

/* The view of the one alert of a webhook with these labels and annotations (JSON objects). */
static json_t *view_of(const char *labels, const char *annotations, int64_t truncated)
{
	struct buf body = BUF_INIT, ev = BUF_INIT, err = BUF_INIT;
	struct view_context ctx = { T_NOW, "default", "my-org/alerts", NULL, NULL };
	struct am_payload *p = NULL;
	struct am_error e;
	json_t *view = NULL;

	assert_int_equal(
		buf_printf(&body,
			   "{\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"default\","
			   "\"groupKey\":\"{}:{}\",\"groupLabels\":{},\"commonLabels\":{},"
			   "\"commonAnnotations\":{},\"externalURL\":\"\",\"truncatedAlerts\":%lld,"
			   "\"alerts\":[{\"status\":\"firing\",\"labels\":%s,\"annotations\":%s,"
			   "\"startsAt\":\"2026-11-21T00:49:48Z\",\"endsAt\":\"0001-01-01T00:00:00Z\","
			   "\"generatorURL\":\"\",\"fingerprint\":\"43257ea8bc3d7780\"}]}",
			   (long long)truncated, labels, annotations),
		ERR_OK);
	assert_int_equal(am_parse(buf_str(&body), body.len, NULL, &p, &e), ERR_OK);
	assert_int_equal(am_event_json(p, 0, &ev), ERR_OK);
	assert_int_equal(view_build(buf_str(&ev), &ctx, &view, &err), ERR_OK);
	am_payload_free(p);
	buf_release(&body);
	buf_release(&ev);
	buf_release(&err);
	return view;
}

static const char hostile_labels[] =
	"{\"alertname\":\"DiskFull\",\"severity\":\"critical\\nwarning\","
	"\"team\":\"a|b\\n# not a heading\",\"owner\":\"@octocat @acme/oncall\","
	"\"link\":\"[x](http://evil) <img src=x>\",\"fence\":\"```\",\"dir\":\"ab" RLO "cd\"}";
static const char hostile_annotations[] =
	"{\"summary\":\"disk " RLO "lluf\",\"description\":\"```\\nfence never closed #12\"}";

/* A body as the bridge sends it (bridge_exec.c): the rendered text, then the markers. */
static void sent_body(struct render_env *e, const json_t *view, struct buf *out)
{
	struct buf raw = BUF_INIT, marker = BUF_INIT;

	assert_int_equal(render_text(e->r, "default", -1, RENDER_BODY, view, &raw, NULL), ERR_OK);
	issue_marker_receiver("default", "43257ea8bc3d7780", &marker);
	issue_body_fit(buf_str(&raw), buf_str(&marker), out);
	buf_release(&raw);
	buf_release(&marker);
}

static void body_reads_hostile_values_as_text_and_keeps_its_marker(void **state)
{
	struct render_env e;
	json_t *view = view_of(hostile_labels, hostile_annotations, 0);
	struct buf body = BUF_INIT, key = BUF_INIT, rcv = BUF_INIT;
	const char *s;
	(void)state;

	start(&e, "[alert]");
	sent_body(&e, view, &body);
	s = buf_str(&body);
	/* each label one table row, its text escaped */
	assert_non_null(strstr(s, "\n| team | a\\|b<br># not a heading |\n"));
	assert_non_null(strstr(s, "\n| owner | @" WJ "octocat @" WJ "acme/oncall |\n"));
	assert_non_null(strstr(s, "\n| link | \\[x\\](http\\://evil) &lt;img src=x&gt; |\n"));
	assert_non_null(strstr(s, "\n| fence | \\`\\`\\` |\n"));
	assert_non_null(strstr(s, "\n| dir | abcd |\n"));
	assert_non_null(strstr(s, "\n| severity | critical<br>warning |\n"));
	assert_memory_equal(s, "### disk lluf\n\n", strlen("### disk lluf\n\n"));
	assert_non_null(strstr(s, "\n\\`\\`\\`<br>fence never closed \\#" WJ "12\n"));
	/* nothing a value sent can open a code block, a mention or a comment */
	assert_null(strstr(s, "``"));
	assert_null(strstr(s, "@octocat"));
	assert_null(strstr(s, RLO));
	assert_ptr_equal(strstr(s, "<!--"), strstr(s, "<!-- alertbridge:receiver=default -->"));
	/* ... and the body ends with the marker the map is rebuilt from */
	assert_string_equal(s + body.len - strlen("<!-- alertbridge:key=43257ea8bc3d7780 -->"),
			    "<!-- alertbridge:key=43257ea8bc3d7780 -->");
	assert_int_equal(issue_marker_parse_receiver(s, &rcv, &key), 1);
	assert_string_equal(buf_str(&key), "43257ea8bc3d7780");
	assert_string_equal(buf_str(&rcv), "default");
	buf_release(&body);
	buf_release(&key);
	buf_release(&rcv);
	json_decref(view);
	rfx_stop(&e);
}

static void title_is_one_line_without_bidi_controls(void **state)
{
	struct render_env e;
	json_t *view = view_of(hostile_labels, hostile_annotations, 0);
	struct buf title = BUF_INIT;
	(void)state;

	start(&e, "[alert]");
	assert_int_equal(render_text(e.r, "default", -1, RENDER_TITLE, view, &title, NULL), ERR_OK);
	assert_string_equal(buf_str(&title), "[critical warning] DiskFull: disk lluf");
	buf_release(&title);
	json_decref(view);
	rfx_stop(&e);
}

/* A title past GitHub's 256 characters is cut on a code point, "…" last. */
static void long_title_is_cut_on_a_code_point(void **state)
{
	struct render_env e;
	struct buf annotations = BUF_INIT, title = BUF_INIT;
	json_t *view;
	size_t chars = 0;
	(void)state;

	assert_int_equal(buf_adds(&annotations, "{\"summary\":\""), ERR_OK);
	for (int i = 0; i < 300; i++)
		assert_int_equal(buf_adds(&annotations, "\xc3\xa9"), ERR_OK); /* é: 2 bytes */
	assert_int_equal(buf_adds(&annotations, "\"}"), ERR_OK);
	view = view_of("{\"alertname\":\"X\"}", buf_str(&annotations), 0);
	buf_release(&annotations);
	start(&e, "[alert]");
	assert_int_equal(render_text(e.r, "default", -1, RENDER_TITLE, view, &title, NULL), ERR_OK);
	for (size_t i = 0; i < title.len; i++)
		chars += ((unsigned char)title.data[i] & 0xc0) != 0x80;
	assert_int_equal(chars, ISSUE_TITLE_MAX_CHARS);
	assert_string_equal(buf_str(&title) + title.len - 5, "\xc3\xa9\xe2\x80\xa6");
	buf_release(&title);
	json_decref(view);
	rfx_stop(&e);
}

static void labels_are_one_line(void **state)
{
	struct render_env e;
	json_t *view = view_of(hostile_labels, "{}", 0);
	char **labels = NULL;
	(void)state;

	start(&e, "[\"team:{{labels.team}}\", \"dir:{{labels.dir}}\"]");
	assert_int_equal(render_list(e.r, "default", -1, 0, view, &labels, NULL), ERR_OK);
	assert_string_equal(labels[0], "team:a|b # not a heading");
	assert_string_equal(labels[1], "dir:abcd");
	assert_null(labels[2]);
	render_list_free(labels);
	json_decref(view);
	rfx_stop(&e);
}

/* `alertbridge render` (render_once) and the live path give the same text for each kind. */
static void render_once_is_what_the_live_path_sends(void **state)
{
	static const enum render_text kinds[] = { RENDER_TITLE, RENDER_BODY, RENDER_REFIRE,
						  RENDER_RESOLVE, RENDER_REOPEN };
	struct render_env e;
	json_t *view = view_of(hostile_labels, hostile_annotations, 0);
	(void)state;

	start(&e, "[alert]");
	for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
		struct buf live = BUF_INIT, once = BUF_INIT;
		size_t len = 0;
		const char *tmpl = embed_get(render_default_name(kinds[i]), &len);

		assert_non_null(tmpl);
		assert_int_equal(render_text(e.r, "default", -1, kinds[i], view, &live, NULL),
				 ERR_OK);
		assert_int_equal(render_once(tmpl, len, kinds[i], view, &once, NULL), ERR_OK);
		assert_string_equal(buf_str(&once), buf_str(&live));
		buf_release(&live);
		buf_release(&once);
	}
	json_decref(view);
	rfx_stop(&e);
}

/* issue_per: group: the body counts the alerts Alertmanager's max_alerts left out. */
static void group_body_says_how_many_alerts_were_not_sent(void **state)
{
	struct render_env e;
	json_t *view = view_of("{\"alertname\":\"X\"}", "{}", 3);
	struct buf body = BUF_INIT;
	(void)state;

	start(&e, "[alert]");
	json_object_set_new(view, "group", json_true());
	json_object_set_new(view, "members", json_array());
	assert_int_equal(render_text(e.r, "default", -1, RENDER_BODY, view, &body, NULL), ERR_OK);
	assert_non_null(strstr(buf_str(&body),
			       "\n- 3 more alerts not sent by Alertmanager (its `max_alerts`)\n"));
	json_decref(view);
	buf_reset(&body);
	view = view_of("{\"alertname\":\"X\"}", "{}", 0);
	json_object_set_new(view, "group", json_true());
	json_object_set_new(view, "members", json_array());
	assert_int_equal(render_text(e.r, "default", -1, RENDER_BODY, view, &body, NULL), ERR_OK);
	assert_null(strstr(buf_str(&body), "not sent by Alertmanager"));
	buf_release(&body);
	json_decref(view);
	rfx_stop(&e);
}

UNIT_MAIN(
	cmocka_unit_test(body_reads_hostile_values_as_text_and_keeps_its_marker),
	cmocka_unit_test(title_is_one_line_without_bidi_controls),
	cmocka_unit_test(long_title_is_cut_on_a_code_point),
	cmocka_unit_test(labels_are_one_line),
	cmocka_unit_test(render_once_is_what_the_live_path_sends),
	cmocka_unit_test(group_body_says_how_many_alerts_were_not_sent))
