/*
 * test_am.c - Alertmanager payload parsing against real captured payloads,
 * fingerprints, QuoteMeta unescaping, RFC 3339 times, the event document and
 * a matrix of malformed bodies with their exact error paths.
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

static const char *const fixtures[] = {
	"01_single_firing.json",
	"02_single_resolved.json",
	"03_group_of_3_firing.json",
	"04_group_partially_resolved.json",
	"04b_group_all_resolved.json",
	"05_truncated_max_alerts_2.json",
	"06_repeat_firing_after_repeat_interval.json",
};
#define N_FIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

static void assert_labels(const struct am_labels *set, const char *const *kv, size_t n)
{
	assert_int_equal(set->n, n);
	for (size_t i = 0; i < n; i++) {
		assert_string_equal(set->v[i].name, kv[2 * i]);
		assert_string_equal(set->v[i].value, kv[2 * i + 1]);
	}
}

static void fixture_single_firing_exact(void **state)
{
	struct am_payload *p = afx_parse_fixture("01_single_firing.json");
	const struct am_alert *a = &p->alerts[0];
	static const char *const labels[] = { "alertname", "DiskFull", "namespace", "prod",
					      "pod", "db-0", "severity", "critical" };
	static const char *const group[] = { "alertname", "DiskFull", "namespace", "prod",
					     "pod", "db-0" };
	static const char *const annotations[] = {
		"description",
		"Harness alert with labels alertname=DiskFull, namespace=prod, pod=db-0, "
		"severity=critical",
		"summary", "DiskFull on db-0" };
	(void)state;

	assert_string_equal(p->version, "4");
	assert_string_equal(p->receiver, "alert-service");
	assert_string_equal(p->receiver_name, "alert-service");
	assert_string_equal(p->status, "firing");
	assert_string_equal(p->group_key, "{}:{alertname=\"DiskFull\", namespace=\"prod\", pod=\"db-0\"}");
	assert_string_equal(p->external_url, "http://127.0.0.1:41227");
	assert_int_equal(p->truncated_alerts, 0);
	assert_labels(&p->group_labels, group, 3);
	assert_labels(&p->common_labels, labels, 4);
	assert_labels(&p->common_annotations, annotations, 2);
	assert_int_equal(p->n_alerts, 1);
	assert_string_equal(a->status, "firing");
	assert_true(a->firing);
	assert_labels(&a->labels, labels, 4);
	assert_labels(&a->annotations, annotations, 2);
	assert_string_equal(a->starts_at, "2026-11-21T00:49:48.539Z");
	assert_int_equal(a->starts_at_ms, 1795222188539LL);
	assert_string_equal(a->ends_at, "0001-01-01T00:00:00Z");
	assert_int_equal(a->ends_at_ms, 0);
	assert_string_equal(a->generator_url, "http://prometheus.example:9090/graph?g0.expr=up%3D%3D0");
	assert_string_equal(a->fingerprint, "43257ea8bc3d7780");
	assert_false(a->fingerprint_computed);
	assert_string_equal(am_labels_get(&a->labels, "severity"), "critical");
	assert_string_equal(am_labels_get(&a->labels, "alertname"), "DiskFull");
	assert_null(am_labels_get(&a->labels, "missing"));
	assert_null(am_labels_get(&a->labels, ""));
	am_payload_free(p);
}

static void fixture_single_resolved_exact(void **state)
{
	struct am_payload *p = afx_parse_fixture("02_single_resolved.json");
	(void)state;

	assert_string_equal(p->status, "resolved");
	assert_int_equal(p->n_alerts, 1);
	assert_string_equal(p->alerts[0].status, "resolved");
	assert_false(p->alerts[0].firing);
	assert_string_equal(p->alerts[0].ends_at, "2026-11-21T00:49:49.542Z");
	assert_int_equal(p->alerts[0].starts_at_ms, 1795222188539LL);
	assert_int_equal(p->alerts[0].ends_at_ms, 1795222189542LL);
	assert_string_equal(p->alerts[0].fingerprint, "43257ea8bc3d7780");
	am_payload_free(p);
}

static void fixture_groups_exact(void **state)
{
	static const char *const fps03[] = { "98e2b6219b0e1a8d", "9329cd68b64d6724",
					     "04b8c13f54b78add" };
	static const char *const containers[] = { "app", "proxy", "sidecar" };
	static const char *const common_ann[] = { "summary", "HighLatency on api-0" };
	struct am_payload *p = afx_parse_fixture("03_group_of_3_firing.json");
	(void)state;

	assert_int_equal(p->n_alerts, 3);
	assert_labels(&p->common_annotations, common_ann, 1);
	for (size_t i = 0; i < 3; i++) {
		assert_string_equal(p->alerts[i].fingerprint, fps03[i]);
		assert_string_equal(am_labels_get(&p->alerts[i].labels, "container"), containers[i]);
		assert_int_equal(p->alerts[i].labels.n, 5);
		assert_string_equal(p->alerts[i].labels.v[1].name, "container");
		assert_int_equal(p->alerts[i].starts_at_ms, 1795222191678LL);
	}
	am_payload_free(p);

	p = afx_parse_fixture("04_group_partially_resolved.json");
	assert_string_equal(p->status, "firing");
	assert_string_equal(p->alerts[0].status, "resolved");
	assert_int_equal(p->alerts[0].ends_at_ms, 1795222192686LL);
	assert_string_equal(p->alerts[1].status, "firing");
	assert_int_equal(p->alerts[1].ends_at_ms, 0);
	am_payload_free(p);

	p = afx_parse_fixture("05_truncated_max_alerts_2.json");
	assert_int_equal(p->truncated_alerts, 3);
	assert_int_equal(p->n_alerts, 2);
	assert_string_equal(p->alerts[0].starts_at, "2026-11-21T00:49:58.32Z");
	assert_int_equal(p->alerts[0].starts_at_ms, 1795222198320LL);
	assert_string_equal(p->external_url, "http://127.0.0.1:47401");
	am_payload_free(p);
}

/* Every alert of every fixture: our fingerprint equals Alertmanager's. */
static void fingerprints_match_every_fixture(void **state)
{
	size_t checked = 0;
	(void)state;

	for (size_t f = 0; f < N_FIXTURES; f++) {
		struct am_payload *p = afx_parse_fixture(fixtures[f]);
		for (size_t i = 0; i < p->n_alerts; i++) {
			char fp[17];
			am_fingerprint(&p->alerts[i].labels, fp);
			assert_string_equal(fp, p->alerts[i].fingerprint);
			checked++;
		}
		am_payload_free(p);
	}
	assert_int_equal(checked, 13);
}

/* The same payloads without "fingerprint": computed, and equal to what AM sent. */
static void fingerprints_computed_when_absent(void **state)
{
	size_t checked = 0;
	(void)state;

	for (size_t f = 0; f < N_FIXTURES; f++) {
		struct am_payload *want = afx_parse_fixture(fixtures[f]);
		struct am_payload *got = NULL;
		struct am_error e;
		size_t len;
		char *body = afx_read_fixture(fixtures[f], &len);
		char *s = body;

		/* Rename the key so it becomes an unknown (ignored) field. */
		while ((s = strstr(s, "\"fingerprint\"")) != NULL) {
			memcpy(s, "\"fingerprinz\"", 13);
			s += 13;
		}
		assert_int_equal(am_parse(body, len, NULL, &got, &e), ERR_OK);
		assert_int_equal(got->n_alerts, want->n_alerts);
		for (size_t i = 0; i < got->n_alerts; i++) {
			assert_true(got->alerts[i].fingerprint_computed);
			assert_string_equal(got->alerts[i].fingerprint, want->alerts[i].fingerprint);
			checked++;
		}
		am_payload_free(got);
		am_payload_free(want);
		free(body);
	}
	assert_int_equal(checked, 13);
}

static void fingerprint_edge_cases(void **state)
{
	struct am_label one[] = { { "a", "" } };
	struct am_labels empty = { NULL, 0 }, set = { one, 1 };
	char fp[17];
	(void)state;

	/* The empty set hashes to FNV-1a's offset basis, as in prometheus/common. */
	am_fingerprint(&empty, fp);
	assert_string_equal(fp, "cbf29ce484222325");
	am_fingerprint(NULL, fp);
	assert_string_equal(fp, "cbf29ce484222325");
	/* FNV-1a 64 of "a\xff" "" "\xff" (computed independently in Python). */
	am_fingerprint(&set, fp);
	assert_string_equal(fp, "e57e2e1903df23e2");
}

static void unquote_meta_cases(void **state)
{
	static const char *const cases[][2] = {
		{ "alert-service", "alert-service" },
		{ "team\\.gpu", "team.gpu" },
		{ "a\\+b\\*c\\?d", "a+b*c?d" },
		{ "\\(x\\)\\|\\[y\\]\\{z\\}", "(x)|[y]{z}" },
		{ "\\^start\\$", "^start$" },
		{ "back\\\\slash", "back\\slash" },
		{ "keep\\d", "keep\\d" },      /* not a QuoteMeta escape: kept */
		{ "trailing\\", "trailing\\" },
		{ "", "" },
		{ "\xc3\xa9quipe\\.1", "\xc3\xa9quipe.1" },
	};
	struct buf b = BUF_INIT;
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		buf_reset(&b);
		am_unquote_meta(cases[i][0], &b);
		assert_string_equal(buf_str(&b), cases[i][1]);
	}
	buf_reset(&b);
	am_unquote_meta(NULL, &b);
	assert_string_equal(buf_str(&b), "");
	buf_release(&b);
}

static void receiver_name_is_unescaped(void **state)
{
	static const char body[] =
		"{\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"gpu\\\\.team\","
		"\"groupKey\":\"k\",\"alerts\":[{\"status\":\"firing\",\"labels\":{\"a\":\"b\"},"
		"\"startsAt\":\"2026-11-21T00:49:48Z\",\"endsAt\":\"0001-01-01T00:00:00Z\"}]}";
	struct am_payload *p = NULL;
	struct am_error e;
	(void)state;

	assert_int_equal(am_parse(body, strlen(body), NULL, &p, &e), ERR_OK);
	assert_string_equal(p->receiver, "gpu\\.team");
	assert_string_equal(p->receiver_name, "gpu.team");
	/* Absent optional fields take their documented defaults. */
	assert_string_equal(p->external_url, "");
	assert_int_equal(p->truncated_alerts, 0);
	assert_int_equal(p->group_labels.n, 0);
	assert_int_equal(p->alerts[0].annotations.n, 0);
	assert_string_equal(p->alerts[0].generator_url, "");
	assert_true(p->alerts[0].fingerprint_computed);
	am_payload_free(p);
}

static void event_json_exact(void **state)
{
	struct am_payload *p = afx_parse_fixture("01_single_firing.json");
	struct buf b = BUF_INIT;
	static const char want[] =
		"{\"v\":1,\"receiver\":\"alert-service\",\"groupStatus\":\"firing\","
		"\"status\":\"firing\",\"labels\":{\"alertname\":\"DiskFull\",\"namespace\":\"prod\","
		"\"pod\":\"db-0\",\"severity\":\"critical\"},\"annotations\":{\"description\":"
		"\"Harness alert with labels alertname=DiskFull, namespace=prod, pod=db-0, "
		"severity=critical\",\"summary\":\"DiskFull on db-0\"},"
		"\"startsAt\":\"2026-11-21T00:49:48.539Z\",\"endsAt\":\"0001-01-01T00:00:00Z\","
		"\"generatorURL\":\"http://prometheus.example:9090/graph?g0.expr=up%3D%3D0\","
		"\"fingerprint\":\"43257ea8bc3d7780\","
		"\"groupKey\":\"{}:{alertname=\\\"DiskFull\\\", namespace=\\\"prod\\\", pod=\\\"db-0\\\"}\","
		"\"groupLabels\":{\"alertname\":\"DiskFull\",\"namespace\":\"prod\",\"pod\":\"db-0\"},"
		"\"commonLabels\":{\"alertname\":\"DiskFull\",\"namespace\":\"prod\",\"pod\":\"db-0\","
		"\"severity\":\"critical\"},\"commonAnnotations\":{\"description\":\"Harness alert "
		"with labels alertname=DiskFull, namespace=prod, pod=db-0, severity=critical\","
		"\"summary\":\"DiskFull on db-0\"},\"externalURL\":\"http://127.0.0.1:41227\","
		"\"truncatedAlerts\":0}";
	(void)state;

	assert_int_equal(am_event_json(p, 0, &b), ERR_OK);
	assert_string_equal(buf_str(&b), want);
	buf_release(&b);
	am_payload_free(p);
}

static void event_json_too_big_leaves_buf(void **state)
{
	struct am_payload *p = afx_parse_fixture("03_group_of_3_firing.json");
	struct buf b;
	(void)state;

	buf_init(&b, 100);
	assert_int_equal(buf_adds(&b, "prefix"), ERR_OK);
	assert_int_equal(am_event_json(p, 2, &b), ERR_TOOBIG);
	assert_string_equal(buf_str(&b), "prefix");
	buf_release(&b);
	am_payload_free(p);
}

/* ---- the validation matrix ---- */

#define HDR "\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"r\",\"groupKey\":\"k\","
#define T0 "\"2026-11-21T00:49:48.539Z\""
#define ZT "\"0001-01-01T00:00:00Z\""
#define ALERT_F(st, labels, starts, ends, extra)                                           \
	"{\"status\":" st ",\"labels\":" labels ",\"startsAt\":" starts ",\"endsAt\":" ends \
	extra "}"
#define GOOD ALERT_F("\"firing\"", "{\"alertname\":\"A\"}", T0, ZT, "")
#define BODY(hdr, alerts) "{" hdr "\"alerts\":[" alerts "]}"

struct bad_case {
	const char *body;
	size_t len;  /* 0: strlen(body) */
	struct am_options opts;
	const char *field;
	const char *message;
};

static const struct bad_case bad_cases[] = {
	{ "", 0, { 0 }, "", "invalid JSON at line 1 column 0: '[' or '{' expected near end of file" },
	{ "{\"version\":\"4\"", 0, { 0 }, "",
	  "invalid JSON at line 1 column 14: '}' expected near end of file" },
	{ "[]", 0, { 0 }, "", "payload must be a JSON object" },
	{ "\"x\"", 0, { 0 }, "", "invalid JSON at line 1 column 3: '[' or '{' expected near '\"x\"'" },
	{ BODY(HDR, GOOD) " x", 0, { 0 }, "",
	  "invalid JSON at line 1 column 193: end of file expected near 'x'" },
	{ "{}", 0, { 0 }, "version", "missing" },
	{ "{\"version\":\"3\"}", 0, { 0 }, "version", "unsupported version, want \"4\"" },
	{ "{\"version\":4}", 0, { 0 }, "version", "must be a string" },
	{ "{\"version\":\"4\"}", 0, { 0 }, "status", "missing" },
	{ "{\"version\":\"4\",\"status\":\"pending\"}", 0, { 0 }, "status",
	  "must be \"firing\" or \"resolved\"" },
	{ "{\"version\":\"4\",\"status\":\"firing\"}", 0, { 0 }, "receiver", "missing" },
	{ "{\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"\"}", 0, { 0 }, "receiver",
	  "must not be empty" },
	{ "{\"version\":\"4\",\"status\":\"firing\",\"receiver\":5}", 0, { 0 }, "receiver",
	  "must be a string" },
	{ "{\"version\":\"4\",\"status\":\"firing\",\"receiver\":\"r\"}", 0, { 0 }, "groupKey",
	  "missing" },
	{ BODY(HDR "\"truncatedAlerts\":-1,", GOOD), 0, { 0 }, "truncatedAlerts",
	  "must not be negative" },
	{ BODY(HDR "\"truncatedAlerts\":\"0\",", GOOD), 0, { 0 }, "truncatedAlerts",
	  "must be an integer" },
	{ BODY(HDR "\"truncatedAlerts\":1.5,", GOOD), 0, { 0 }, "truncatedAlerts",
	  "must be an integer" },
	{ BODY(HDR "\"groupLabels\":[],", GOOD), 0, { 0 }, "groupLabels",
	  "must be an object of strings" },
	{ BODY(HDR "\"commonLabels\":{\"a\":1},", GOOD), 0, { 0 }, "commonLabels.a",
	  "must be a string" },
	{ BODY(HDR "\"commonAnnotations\":{\"s\":null},", GOOD), 0, { 0 }, "commonAnnotations.s",
	  "must be a string" },
	{ BODY(HDR "\"externalURL\":1,", GOOD), 0, { 0 }, "externalURL", "must be a string" },
	{ "{" HDR "\"x\":1}", 0, { 0 }, "alerts", "missing" },
	{ "{" HDR "\"alerts\":{}}", 0, { 0 }, "alerts", "must be an array" },
	{ BODY(HDR, ), 0, { 0 }, "alerts", "must not be empty" },
	{ BODY(HDR, "1"), 0, { 0 }, "alerts[0]", "must be an object" },
	{ BODY(HDR, GOOD "," ALERT_F("\"bad\"", "{\"a\":\"b\"}", T0, ZT, "")), 0, { 0 },
	  "alerts[1].status", "must be \"firing\" or \"resolved\"" },
	{ BODY(HDR, "{\"status\":\"firing\"}"), 0, { 0 }, "alerts[0].labels", "missing" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{}", T0, ZT, "")), 0, { 0 }, "alerts[0].labels",
	  "must have at least one label" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"alertname\":\"A\",\"severity\":3}", T0, ZT, "")), 0,
	  { 0 }, "alerts[0].labels.severity", "must be a string" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"\":\"A\"}", T0, ZT, "")), 0, { 0 },
	  "alerts[0].labels", "empty name" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", T0, ZT, ",\"annotations\":\"x\"")), 0,
	  { 0 }, "alerts[0].annotations", "must be an object of strings" },
	{ BODY(HDR, "{\"status\":\"firing\",\"labels\":{\"a\":\"b\"}}"), 0, { 0 },
	  "alerts[0].startsAt", "missing" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", "\"yesterday\"", ZT, "")), 0, { 0 },
	  "alerts[0].startsAt", "not an RFC 3339 time" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", "\"2026-02-30T00:00:00Z\"", ZT, "")), 0,
	  { 0 }, "alerts[0].startsAt", "not an RFC 3339 time" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", ZT, ZT, "")), 0, { 0 },
	  "alerts[0].startsAt", "must not be the zero time" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", T0, "1", "")), 0, { 0 },
	  "alerts[0].endsAt", "must be a string" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", T0, "\"2026-11-21 00:49:48Z\"", "")),
	  0, { 0 }, "alerts[0].endsAt", "not an RFC 3339 time" },
	{ BODY(HDR, "{\"status\":\"firing\",\"labels\":{\"a\":\"b\"},\"startsAt\":" T0 "}"), 0,
	  { 0 }, "alerts[0].endsAt", "missing" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", T0, ZT,
			    ",\"fingerprint\":\"43257EA8BC3D7780\"")),
	  0, { 0 }, "alerts[0].fingerprint", "must be 16 lowercase hex digits" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", T0, ZT, ",\"fingerprint\":\"123\"")), 0,
	  { 0 }, "alerts[0].fingerprint", "must be 16 lowercase hex digits" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", T0, ZT, ",\"fingerprint\":5")), 0, { 0 },
	  "alerts[0].fingerprint", "must be a string" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", T0, ZT, ",\"generatorURL\":[]")), 0,
	  { 0 }, "alerts[0].generatorURL", "must be a string" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\\u0000c\"}", T0, ZT, "")), 0, { 0 }, "",
	  "invalid JSON at line 1 column 116: \\u0000 is not allowed without JSON_ALLOW_NUL "
	  "near '\"b\\u0000c\"'" },
	{ "{\"version\":\"4\0\"}", 16, { 0 }, "",
	  "invalid JSON at line 1 column 13: control character 0x0 near '\"4'" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\xff\"}", T0, ZT, "")), 0, { 0 }, "",
	  "invalid JSON at line 1 column 108: unable to decode byte 0xff near '\"b'" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"\\ud800\"}", T0, ZT, "")), 0, { 0 }, "",
	  "invalid JSON at line 1 column 114: invalid Unicode '\\uD800' near '\"\\ud800\"'" },
	{ BODY(HDR "\"status\":\"resolved\",", GOOD), 0, { 0 }, "",
	  "invalid JSON at line 1 column 71: duplicate object key near '\"status\"'" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\",\"a\":\"c\"}", T0, ZT, "")), 0, { 0 }, "",
	  "invalid JSON at line 1 column 113: duplicate object key near '\"a\"'" },
	{ BODY(HDR, GOOD "," GOOD "," GOOD), 0, { .max_alerts = 2 }, "alerts",
	  "more than 2 alerts" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\",\"c\":\"d\"}", T0, ZT, "")), 0,
	  { .max_labels = 1 }, "alerts[0].labels", "more than 1 entries" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"12345\"}", T0, ZT, "")), 0,
	  { .max_label_bytes = 4 }, "alerts[0].labels.a", "longer than 4 bytes" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"abcde\":\"1\"}", T0, ZT, "")), 0,
	  { .max_label_bytes = 4 }, "alerts[0].labels.abcde", "name longer than 4 bytes" },
	{ BODY(HDR, ALERT_F("\"firing\"", "{\"a\":\"b\"}", T0, ZT, ",\"annotations\":{\"d\":\"123\"}")),
	  0, { .max_annotation_bytes = 2 }, "alerts[0].annotations.d", "longer than 2 bytes" },
};

static void malformed_bodies_are_rejected_with_path(void **state)
{
	(void)state;

	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct am_payload *p = (struct am_payload *)1;
		struct am_error e;
		size_t len = c->len ? c->len : strlen(c->body);
		enum err rc;

		memset(&e, 'x', sizeof(e));
		rc = am_parse(c->body, len, &c->opts, &p, &e);
		if (rc != ERR_INVALID || strcmp(e.field, c->field) || strcmp(e.message, c->message))
			print_error("case %zu: rc %d field '%s' message '%s'\n", i, rc, e.field,
				    e.message);
		assert_int_equal(rc, ERR_INVALID);
		assert_null(p);
		assert_string_equal(e.field, c->field);
		assert_string_equal(e.message, c->message);
	}
	assert_true(sizeof(bad_cases) / sizeof(bad_cases[0]) >= 30);
}

/* The good body of the matrix parses, so each bad case fails for its own reason. */
static void matrix_baseline_parses(void **state)
{
	static const char body[] = BODY(HDR, GOOD);
	struct am_payload *p = NULL;
	(void)state;

	assert_int_equal(am_parse(body, strlen(body), NULL, &p, NULL), ERR_OK);
	assert_int_equal(p->n_alerts, 1);
	am_payload_free(p);
	/* err NULL is allowed on failure too. */
	assert_int_equal(am_parse("[]", 2, NULL, &p, NULL), ERR_INVALID);
	assert_null(p);
	am_payload_free(NULL);
}

static void long_error_path_is_cut(void **state)
{
	struct buf body = BUF_INIT;
	struct am_payload *p = NULL;
	struct am_error e;
	(void)state;

	buf_adds(&body, "{" HDR "\"alerts\":[{\"status\":\"firing\",\"labels\":{\"");
	for (int i = 0; i < 200; i++)
		buf_adds(&body, "\xe2\x82\xac"); /* U+20AC, 3 bytes */
	buf_adds(&body, "\":1}}]}");
	assert_int_equal(am_parse(body.data, body.len, NULL, &p, &e), ERR_INVALID);
	/* 127 bytes fit: the 17-byte prefix and 36 whole 3-byte characters. */
	assert_int_equal(strlen(e.field), 17 + 36 * 3);
	assert_memory_equal(e.field, "alerts[0].labels.", 17);
	assert_string_equal(e.message, "must be a string");
	buf_release(&body);
}

/*
 * keep_invalid_alerts: a problem inside an alert makes that alert invalid,
 * behind the valid ones, with its error, reason and a stable fingerprint;
 * the envelope is still checked as a whole.
 */
static void invalid_alerts_are_kept_apart(void **state)
{
	static const char body[] = BODY(
		HDR, GOOD "," ALERT_F("\"pending\"", "{\"alertname\":\"B\"}", T0, ZT, "") ","
		     ALERT_F("\"resolved\"", "{\"alertname\":\"C\",\"x\":1}", T0, T0, "") ","
		     GOOD);
	struct am_options keep = { .keep_invalid_alerts = 1 };
	struct am_labels b = { (struct am_label[]){ { "alertname", "B" } }, 1 };
	struct am_labels c = { (struct am_label[]){ { "alertname", "C" } }, 1 };
	struct am_payload *p = NULL;
	struct am_error e;
	struct buf raw = BUF_INIT;
	char fp[17];
	(void)state;

	/* Strict: the first problem fails the payload. */
	assert_int_equal(am_parse(body, strlen(body), NULL, &p, &e), ERR_INVALID);
	assert_string_equal(e.field, "alerts[1].status");
	assert_int_equal(am_parse(body, strlen(body), &keep, &p, &e), ERR_OK);
	assert_int_equal(p->n_alerts, 2);
	assert_int_equal(p->n_invalid, 2);
	assert_int_equal(p->alerts[0].index, 0);
	assert_int_equal(p->alerts[1].index, 3);
	assert_null(p->alerts[0].invalid);
	assert_null(p->alerts[1].invalid);
	assert_int_equal(p->alerts[2].index, 1);
	assert_string_equal(p->alerts[2].invalid->field, "alerts[1].status");
	assert_string_equal(p->alerts[2].invalid->message, "must be \"firing\" or \"resolved\"");
	assert_string_equal(p->alerts[2].invalid_reason, "status");
	assert_string_equal(p->alerts[2].status, "firing");  /* the group's */
	am_fingerprint(&b, fp);
	assert_string_equal(p->alerts[2].fingerprint, fp);
	assert_int_equal(p->alerts[3].index, 2);
	assert_string_equal(p->alerts[3].invalid->field, "alerts[2].labels.x");
	assert_string_equal(p->alerts[3].invalid_reason, "labels");
	assert_string_equal(p->alerts[3].status, "resolved");
	am_fingerprint(&c, fp);  /* the string labels only */
	assert_string_equal(p->alerts[3].fingerprint, fp);
	assert_int_equal(am_alert_raw_json(&p->alerts[3], &raw), ERR_OK);
	assert_string_equal(buf_str(&raw), "{\"endsAt\":\"2026-11-21T00:49:48.539Z\",\"labels\":"
					   "{\"alertname\":\"C\",\"x\":1},\"startsAt\":"
					   "\"2026-11-21T00:49:48.539Z\",\"status\":\"resolved\"}");

	/* The caller's own check: mark, then sort; indexes stay valid while marking. */
	am_alert_invalidate(p, 1, "repo", "alerts[3].labels.repo", "bad %s", "repo");
	am_payload_sort_invalid(p);
	assert_int_equal(p->n_alerts, 1);
	assert_int_equal(p->n_invalid, 3);
	assert_int_equal(p->alerts[0].index, 0);
	assert_int_equal(p->alerts[1].index, 1);  /* the parse's invalid ones stay in order */
	assert_int_equal(p->alerts[3].index, 3);
	assert_string_equal(p->alerts[3].invalid->message, "bad repo");
	assert_string_equal(p->alerts[3].invalid_reason, "repo");
	am_payload_free(p);

	/* The envelope is still all or nothing, an alert that is not an object too. */
	assert_int_equal(am_parse(BODY(HDR, GOOD ",7"), strlen(BODY(HDR, GOOD ",7")), &keep, &p,
				  &e), ERR_INVALID);
	assert_string_equal(e.field, "alerts[1]");
	assert_null(p);
	buf_release(&raw);
}

/*
 * What Alertmanager derives from the alerts (groupLabels, commonLabels,
 * commonAnnotations) repeats an alert's long label or annotation when the
 * group has one alert (or all share it): an entry over a limit is left out
 * and noted, the payload parses, and the alert that carries it is the
 * invalid one (issue 18 item 3: 400 "commonAnnotations.description" lost
 * the whole group).
 */
static void derived_sets_over_limits_are_cut_not_refused(void **state)
{
	static const char body[] = BODY(
		HDR "\"groupLabels\":{\"alertname\":\"A\",\"a\":\"1234567890\"},"
		"\"commonLabels\":{\"z\":\"1\",\"abcdefghij\":\"1\",\"b\":\"2\",\"a\":\"3\"},"
		"\"commonAnnotations\":{\"d\":\"123\",\"e\":\"12\"},",
		GOOD "," ALERT_F("\"firing\"", "{\"alertname\":\"B\"}", T0, ZT,
				 ",\"annotations\":{\"d\":\"123\"}"));
	struct am_options o = { .max_labels = 2, .max_label_bytes = 9, .max_annotation_bytes = 2,
				.keep_invalid_alerts = 1 };
	struct am_payload *p = NULL;
	struct am_error e;
	struct buf doc = BUF_INIT;
	(void)state;

	assert_int_equal(am_parse(body, strlen(body), &o, &p, &e), ERR_OK);
	assert_labels(&p->group_labels, (const char *const[]){ "alertname", "A" }, 1);
	/* "abcdefghij" (name too long) out, then the first two in name order of a, b, z. */
	assert_labels(&p->common_labels, (const char *const[]){ "a", "3", "b", "2" }, 2);
	assert_labels(&p->common_annotations, (const char *const[]){ "e", "12" }, 1);
	/* groupLabels.a, commonLabels.abcdefghij, commonLabels' z, commonAnnotations.d */
	assert_int_equal(p->n_dropped, 4);
	assert_string_equal(p->dropped.field, "groupLabels.a");
	assert_string_equal(p->dropped.message, "longer than 9 bytes: left out");
	/* The alert with the long annotation is the invalid one; the other stays. */
	assert_int_equal(p->n_alerts, 1);
	assert_int_equal(p->n_invalid, 1);
	assert_string_equal(p->alerts[1].invalid->field, "alerts[1].annotations.d");
	assert_int_equal(am_event_json(p, 0, &doc), ERR_OK);
	assert_non_null(strstr(buf_str(&doc), "\"commonLabels\":{\"a\":\"3\",\"b\":\"2\"},"
					 "\"commonAnnotations\":{\"e\":\"12\"}"));
	am_payload_free(p);

	/* A set over max_labels alone says how many it left out. */
	p = NULL;
	{
		static const char many[] = BODY(
			HDR "\"commonLabels\":{\"c\":\"1\",\"b\":\"1\",\"a\":\"1\",\"d\":\"1\"},", GOOD);

		assert_int_equal(am_parse(many, strlen(many), &o, &p, &e), ERR_OK);
		assert_int_equal(p->n_dropped, 2);
		assert_string_equal(p->dropped.field, "commonLabels");
		assert_string_equal(p->dropped.message, "more than 2 entries: 2 left out");
		assert_labels(&p->common_labels, (const char *const[]){ "a", "1", "b", "1" }, 2);
		am_payload_free(p);
	}
	/* Within the limits nothing is noted. */
	assert_int_equal(am_parse(BODY(HDR, GOOD), strlen(BODY(HDR, GOOD)), NULL, &p, &e), ERR_OK);
	assert_int_equal(p->n_dropped, 0);
	assert_string_equal(p->dropped.field, "");
	am_payload_free(p);
	buf_release(&doc);
}

/* A rejected payload still says which receiver it named (for the metrics' label). */
static void rejected_payload_names_its_receiver(void **state)
{
	static const char *const bodies[] = { "{\"receiver\":\"team\\\\.a\"}",
					      "{\"version\":\"3\",\"receiver\":\"r\"}",
					      BODY(HDR, "1"), "{\"receiver\":7}", "[]" };
	static const char *const want[] = { "team.a", "r", "r", "", "" };
	struct am_payload *p = NULL;
	struct am_error e;
	(void)state;

	for (size_t i = 0; i < sizeof(bodies) / sizeof(bodies[0]); i++) {
		memset(e.receiver, 'x', sizeof(e.receiver));
		assert_int_equal(am_parse(bodies[i], strlen(bodies[i]), NULL, &p, &e), ERR_INVALID);
		assert_string_equal(e.receiver, want[i]);
	}
}

/* A released alert keeps its identity and state; the others and the group are intact. */
static void released_alert_keeps_its_identity(void **state)
{
	size_t len;
	char *body = afx_read_fixture("03_group_of_3_firing.json", &len);
	struct am_payload *p = NULL;
	struct buf before = BUF_INIT, after = BUF_INIT;
	char fp[17];
	int64_t starts;
	(void)state;

	assert_int_equal(am_parse(body, len, NULL, &p, NULL), ERR_OK);
	assert_int_equal(am_event_json(p, 2, &before), ERR_OK);
	memcpy(fp, p->alerts[1].fingerprint, sizeof(fp));
	starts = p->alerts[1].starts_at_ms;
	am_alert_release(p, 1);
	assert_string_equal(p->alerts[1].fingerprint, fp);
	assert_string_equal(p->alerts[1].status, "firing");
	assert_int_equal(p->alerts[1].firing, 1);
	assert_int_equal(p->alerts[1].starts_at_ms, starts);
	assert_int_equal(p->alerts[1].index, 1);
	assert_int_equal(p->alerts[1].labels.n, 0);
	assert_int_equal(p->alerts[1].annotations.n, 0);
	assert_string_equal(p->alerts[1].starts_at, "");
	assert_int_equal(am_event_json(p, 2, &after), ERR_OK);
	assert_string_equal(buf_str(&after), buf_str(&before));
	am_alert_release(p, 0);
	am_alert_release(p, 2);
	am_payload_free(p);  /* valgrind/ASan: nothing freed twice, nothing leaked */
	buf_release(&after);
	buf_release(&before);
	free(body);
}

UNIT_MAIN(
	cmocka_unit_test(fixture_single_firing_exact),
	cmocka_unit_test(fixture_single_resolved_exact),
	cmocka_unit_test(fixture_groups_exact),
	cmocka_unit_test(fingerprints_match_every_fixture),
	cmocka_unit_test(fingerprints_computed_when_absent),
	cmocka_unit_test(fingerprint_edge_cases),
	cmocka_unit_test(unquote_meta_cases),
	cmocka_unit_test(receiver_name_is_unescaped),
	cmocka_unit_test(event_json_exact),
	cmocka_unit_test(event_json_too_big_leaves_buf),
	cmocka_unit_test(malformed_bodies_are_rejected_with_path),
	cmocka_unit_test(matrix_baseline_parses),
	cmocka_unit_test(long_error_path_is_cut),
	cmocka_unit_test(invalid_alerts_are_kept_apart),
	cmocka_unit_test(derived_sets_over_limits_are_cut_not_refused),
	cmocka_unit_test(rejected_payload_names_its_receiver),
	cmocka_unit_test(released_alert_keeps_its_identity))
