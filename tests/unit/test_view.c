/*
 * test_view.c - the template view model: exact fields for every captured
 * Alertmanager payload (through am_event_json()), durations, silence links,
 * issue context, and malformed events.
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

#include "core/am.h"
#include "tests/unit/helpers/am_fixture.h"
#include "bridge/group.h"
#include "bridge/view.h"

/* The view of alert i of fixture name, rendered at now_ms with ctx's other fields. */
static json_t *fixture_view(const char *name, size_t i, const struct view_context *ctx)
{
	struct am_payload *p = afx_parse_fixture(name);
	struct buf ev = BUF_INIT, err = BUF_INIT;
	json_t *v = NULL;

	assert_int_equal(am_event_json(p, i, &ev), ERR_OK);
	assert_int_equal(view_build(buf_str(&ev), ctx, &v, &err), ERR_OK);
	assert_string_equal(buf_str(&err), "");
	assert_non_null(v);
	buf_release(&ev);
	buf_release(&err);
	am_payload_free(p);
	return v;
}

static const char *str(const json_t *v, const char *key)
{
	const json_t *s = json_object_get(v, key);
	assert_true(json_is_string(s));
	return json_string_value(s);
}

static const char *path2(const json_t *v, const char *a, const char *b)
{
	return str(json_object_get(v, a), b);
}

#define T01_START 1795222188539LL

/*
 * v is of receiver and repo, its status status: "firing" true and "resolved" false for a
 * firing one, the other way round for a resolved one.
 */
static void assert_view_head(json_t *v, const char *receiver, const char *repo,
			     const char *status)
{
	int firing = !strcmp(status, "firing");

	assert_string_equal(str(v, "receiver"), receiver);
	assert_string_equal(str(v, "repo"), repo);
	assert_string_equal(str(v, "status"), status);
	assert_true(json_is_boolean(json_object_get(v, "firing")));
	assert_true(json_is_boolean(json_object_get(v, "resolved")));
	assert_int_equal(json_is_true(json_object_get(v, "firing")), firing);
	assert_int_equal(json_is_true(json_object_get(v, "resolved")), !firing);
}

static void single_firing_view_exact(void **state)
{
	struct view_context ctx = { T01_START + (2 * 3600 + 5 * 60) * 1000LL, "default",
				    "my-org/cluster-alerts", NULL, NULL };
	json_t *v = fixture_view("01_single_firing.json", 0, &ctx);
	const json_t *list;
	(void)state;

	assert_view_head(v, "default", "my-org/cluster-alerts", "firing");
	assert_string_equal(path2(v, "labels", "severity"), "critical");
	assert_string_equal(path2(v, "annotations", "summary"), "DiskFull on db-0");
	assert_string_equal(str(v, "alertname"), "DiskFull");
	assert_string_equal(str(v, "fingerprint"), "43257ea8bc3d7780");
	assert_string_equal(str(v, "startsAt"), "2026-11-21T00:49:48.539Z");
	assert_string_equal(str(v, "startsAtHuman"), "Sat, 21 Nov 2026 00:49:48 UTC");
	assert_string_equal(str(v, "endsAt"), "");
	assert_string_equal(str(v, "endsAtHuman"), "");
	assert_string_equal(str(v, "duration"), "2 hours 5 minutes");
	assert_int_equal(json_integer_value(json_object_get(v, "durationSeconds")), 7500);
	assert_string_equal(str(v, "generatorURL"),
			    "http://prometheus.example:9090/graph?g0.expr=up%3D%3D0");
	assert_string_equal(str(v, "silenceURL"),
			    "http://127.0.0.1:41227/#/silences/new?filter="
			    "%7Balertname%3D%22DiskFull%22%2C%20namespace%3D%22prod%22%2C%20"
			    "pod%3D%22db-0%22%2C%20severity%3D%22critical%22%7D");
	assert_string_equal(str(v, "externalURL"), "http://127.0.0.1:41227");
	assert_string_equal(str(v, "groupKey"),
			    "{}:{alertname=\"DiskFull\", namespace=\"prod\", pod=\"db-0\"}");
	assert_string_equal(str(v, "groupStatus"), "firing");
	assert_string_equal(path2(v, "groupLabels", "pod"), "db-0");
	assert_null(json_object_get(json_object_get(v, "groupLabels"), "severity"));
	assert_string_equal(path2(v, "commonLabels", "severity"), "critical");
	assert_string_equal(path2(v, "commonAnnotations", "summary"), "DiskFull on db-0");
	assert_int_equal(json_integer_value(json_object_get(v, "truncatedAlerts")), 0);
	assert_true(json_is_false(json_object_get(v, "truncated")));
	list = json_object_get(v, "labelList");
	assert_int_equal(json_array_size(list), 4);
	assert_string_equal(str(json_array_get(list, 0), "name"), "alertname");
	assert_string_equal(str(json_array_get(list, 0), "value"), "DiskFull");
	assert_string_equal(str(json_array_get(list, 3), "name"), "severity");
	assert_string_equal(str(json_array_get(list, 3), "value"), "critical");
	list = json_object_get(v, "annotationList");
	assert_int_equal(json_array_size(list), 2);
	assert_string_equal(str(json_array_get(list, 0), "name"), "description");
	assert_string_equal(str(json_array_get(list, 1), "name"), "summary");
	assert_null(json_object_get(v, "issue"));
	assert_null(json_object_get(v, "previous"));
	json_decref(v);
}

static void single_resolved_view_exact(void **state)
{
	/* now is far later: a resolved alert's duration is endsAt - startsAt. */
	struct view_context ctx = { T01_START + 86400000LL, NULL, NULL, NULL, NULL };
	json_t *v = fixture_view("02_single_resolved.json", 0, &ctx);
	(void)state;

	assert_view_head(v, "alert-service", "", "resolved");
	assert_string_equal(str(v, "endsAt"), "2026-11-21T00:49:49.542Z");
	assert_string_equal(str(v, "endsAtHuman"), "Sat, 21 Nov 2026 00:49:49 UTC");
	assert_string_equal(str(v, "duration"), "1 second");
	assert_int_equal(json_integer_value(json_object_get(v, "durationSeconds")), 1);
	json_decref(v);
}

static void every_fixture_alert_has_the_fields(void **state)
{
	static const char *const names[] = {
		"01_single_firing.json", "02_single_resolved.json", "03_group_of_3_firing.json",
		"04_group_partially_resolved.json", "04b_group_all_resolved.json",
		"05_truncated_max_alerts_2.json", "06_repeat_firing_after_repeat_interval.json",
	};
	static const char *const keys[] = {
		"receiver", "repo", "status", "alertname", "fingerprint", "startsAt",
		"startsAtHuman", "endsAt", "endsAtHuman", "duration", "generatorURL", "silenceURL",
		"externalURL", "groupKey", "groupStatus",
	};
	size_t checked = 0;
	(void)state;

	for (size_t f = 0; f < sizeof(names) / sizeof(names[0]); f++) {
		struct am_payload *p = afx_parse_fixture(names[f]);
		for (size_t i = 0; i < p->n_alerts; i++) {
			const struct am_alert *a = &p->alerts[i];
			struct view_context ctx = { a->starts_at_ms + 61000, "r", "o/r", NULL, NULL };
			json_t *v = fixture_view(names[f], i, &ctx);
			char prefix[64];

			for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++)
				(void)str(v, keys[k]);
			assert_string_equal(str(v, "fingerprint"), a->fingerprint);
			assert_string_equal(str(v, "status"), a->status);
			assert_string_equal(str(v, "alertname"), am_labels_get(&a->labels, "alertname"));
			assert_int_equal(json_array_size(json_object_get(v, "labelList")), a->labels.n);
			assert_int_equal(json_object_size(json_object_get(v, "labels")), a->labels.n);
			assert_int_equal(json_is_true(json_object_get(v, "firing")), a->firing);
			snprintf(prefix, sizeof(prefix), "%s/#/silences/new?filter=%%7Balertname%%3D%%22",
				 p->external_url);
			assert_memory_equal(str(v, "silenceURL"), prefix, strlen(prefix));
			assert_int_equal(json_integer_value(json_object_get(v, "truncatedAlerts")),
					 p->truncated_alerts);
			if (a->firing)
				assert_string_equal(str(v, "duration"), "1 minute 1 second");
			else
				assert_string_equal(str(v, "endsAt") + 10, strchr(a->ends_at, 'T'));
			json_decref(v);
			checked++;
		}
		am_payload_free(p);
	}
	assert_int_equal(checked, 13);
}

static void truncated_fixture_fraction_is_normalised(void **state)
{
	struct view_context ctx = { 1795222198320LL, NULL, NULL, NULL, NULL };
	json_t *v = fixture_view("05_truncated_max_alerts_2.json", 1, &ctx);
	(void)state;

	/* Alertmanager sent "…58.32Z"; the view writes milliseconds. */
	assert_string_equal(str(v, "startsAt"), "2026-11-21T00:49:58.320Z");
	assert_string_equal(str(v, "fingerprint"), "c63d584896f86761");
	assert_string_equal(path2(v, "labels", "container"), "c1");
	assert_int_equal(json_integer_value(json_object_get(v, "truncatedAlerts")), 3);
	assert_true(json_is_true(json_object_get(v, "truncated")));
	assert_string_equal(str(v, "duration"), "0 seconds");
	json_decref(v);
}

static void issue_and_previous(void **state)
{
	struct view_issue issue = { 42, "https://github.com/o/r/issues/42", 0 };
	struct view_issue prev = { 7, "https://github.com/o/r/issues/7", 1795222188000LL };
	struct view_context ctx = { T01_START, "r", "o/r", &issue, &prev };
	json_t *v = fixture_view("01_single_firing.json", 0, &ctx);
	json_t *o;
	(void)state;

	o = json_object_get(v, "issue");
	assert_int_equal(json_integer_value(json_object_get(o, "number")), 42);
	assert_string_equal(str(o, "url"), "https://github.com/o/r/issues/42");
	assert_null(json_object_get(o, "closedAt"));
	o = json_object_get(v, "previous");
	assert_int_equal(json_integer_value(json_object_get(o, "number")), 7);
	assert_string_equal(str(o, "url"), "https://github.com/o/r/issues/7");
	assert_string_equal(str(o, "closedAt"), "2026-11-21T00:49:48Z");
	assert_string_equal(str(o, "closedAtHuman"), "Sat, 21 Nov 2026 00:49:48 UTC");
	json_decref(v);
}

#define EVENT_HEAD "{\"v\":1,\"receiver\":\"r\",\"status\":\"firing\","
#define EVENT_TIMES "\"startsAt\":\"2026-01-01T00:00:00Z\",\"endsAt\":\"0001-01-01T00:00:00Z\""
#define JAN1 1767225600000LL

static json_t *build_ok(const char *event, int64_t now_ms)
{
	struct view_context ctx = { now_ms, NULL, NULL, NULL, NULL };
	json_t *v = NULL;

	assert_int_equal(view_build(event, &ctx, &v, NULL), ERR_OK);
	return v;
}

static void durations(void **state)
{
	static const struct {
		int64_t s;
		const char *want;
	} cases[] = {
		{ 0, "0 seconds" },          { 1, "1 second" },
		{ 59, "59 seconds" },        { 60, "1 minute" },
		{ 61, "1 minute 1 second" }, { 3599, "59 minutes 59 seconds" },
		{ 3600, "1 hour" },          { 7500, "2 hours 5 minutes" },
		{ 7201, "2 hours" },         { 86400, "1 day" },
		{ 90061, "1 day 1 hour" },   { 172800 + 7200, "2 days 2 hours" },
		{ -5, "0 seconds" },
	};
	static const char ev[] = EVENT_HEAD "\"labels\":{\"a\":\"b\"}," EVENT_TIMES "}";
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *v = build_ok(ev, JAN1 + cases[i].s * 1000 + 999);
		assert_string_equal(str(v, "duration"), cases[i].want);
		json_decref(v);
	}
}

/* v's silenceURL is http://am:9093's new-silence page with that (encoded) filter. */
static void assert_am_silence_filter(json_t *v, const char *filter)
{
	char want[512];

	snprintf(want, sizeof(want), "http://am:9093/#/silences/new?filter=%s", filter);
	assert_string_equal(str(v, "silenceURL"), want);
}

static void silence_url_escaping(void **state)
{
	static const char ev[] =
		EVENT_HEAD "\"labels\":{\"b\":\"\xc3\xa9\\n\",\"a\":\"x \\\"y\\\\\"},"
		EVENT_TIMES ",\"externalURL\":\"http://am:9093/\"}";
	static const char no_url[] = EVENT_HEAD "\"labels\":{\"a\":\"b\"}," EVENT_TIMES "}";
	json_t *v;
	(void)state;

	v = build_ok(ev, JAN1);
	/* {a="x \"y\\", b="é\n"}: sorted, quoted, then percent-encoded. */
	assert_am_silence_filter(v, "%7Ba%3D%22x%20%5C%22y%5C%5C%22%2C%20b%3D%22%C3%A9%5Cn%22%7D");
	assert_string_equal(str(v, "alertname"), "");
	assert_string_equal(str(v, "fingerprint"), "");
	assert_string_equal(str(json_array_get(json_object_get(v, "labelList"), 0), "name"), "a");
	json_decref(v);
	v = build_ok(no_url, JAN1);
	assert_string_equal(str(v, "silenceURL"), "");
	assert_string_equal(str(v, "externalURL"), "");
	assert_int_equal(json_object_size(json_object_get(v, "annotations")), 0);
	assert_int_equal(json_array_size(json_object_get(v, "annotationList")), 0);
	json_decref(v);
}

/* A group issue's silence is the group's: its groupLabels, not its first alert's labels. */
static void group_silence_url_is_the_groups(void **state)
{
	static const char ev[] =
		EVENT_HEAD "\"labels\":{\"alertname\":\"HighLatency\",\"pod\":\"api-0\"},"
		"\"groupLabels\":{\"alertname\":\"HighLatency\"}," EVENT_TIMES
		",\"externalURL\":\"http://am:9093\"}";
	struct group_members none = { 0 };
	json_t *v;
	(void)state;

	v = build_ok(ev, JAN1);
	assert_am_silence_filter(v, "%7Balertname%3D%22HighLatency%22%2C%20pod%3D%22api-0%22%7D");
	group_view_add(v, &none);
	assert_am_silence_filter(v, "%7Balertname%3D%22HighLatency%22%7D");
	json_decref(v);
}

static void malformed_events(void **state)
{
	static const char *const cases[][2] = {
		{ "", "event: invalid JSON: '[' or '{' expected near end of file" },
		{ "[1]", "event: not a JSON object" },
		{ "{\"v\":2}", "event: unsupported version (want \"v\": 1)" },
		{ "{\"v\":1,\"status\":\"pending\"}", "event: status must be \"firing\" or \"resolved\"" },
		{ EVENT_HEAD "\"labels\":{}}", "event: startsAt or endsAt is not an RFC 3339 time" },
		{ EVENT_HEAD "\"labels\":[]," EVENT_TIMES "}",
		  "event: labels must be an object of strings" },
		{ EVENT_HEAD EVENT_TIMES "}", "event: labels must be an object of strings" },
		{ EVENT_HEAD "\"labels\":{\"a\":1}," EVENT_TIMES "}",
		  "event: labels must be an object of strings" },
		{ EVENT_HEAD "\"labels\":{},\"annotations\":{\"s\":true}," EVENT_TIMES "}",
		  "event: annotations must be an object of strings" },
		{ EVENT_HEAD "\"labels\":{},\"commonLabels\":3," EVENT_TIMES "}",
		  "event: commonLabels must be an object of strings" },
	};
	struct view_context ctx = { JAN1, NULL, NULL, NULL, NULL };
	struct buf err = BUF_INIT;
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		json_t *v = (json_t *)&ctx;
		buf_reset(&err);
		assert_int_equal(view_build(cases[i][0], &ctx, &v, &err), ERR_INVALID);
		assert_null(v);
		assert_string_equal(buf_str(&err), cases[i][1]);
	}
	buf_release(&err);
}

UNIT_MAIN(
	cmocka_unit_test(single_firing_view_exact),
	cmocka_unit_test(single_resolved_view_exact),
	cmocka_unit_test(every_fixture_alert_has_the_fields),
	cmocka_unit_test(truncated_fixture_fraction_is_normalised),
	cmocka_unit_test(issue_and_previous),
	cmocka_unit_test(durations),
	cmocka_unit_test(silence_url_escaping),
	cmocka_unit_test(group_silence_url_is_the_groups),
	cmocka_unit_test(malformed_events))
