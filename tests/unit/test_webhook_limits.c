/*
 * test_webhook_limits.c - what a real Alertmanager sends at the edges of the
 * intake's limits (issue 18 items 3, 4, 11, 12): a long label or annotation
 * it copies into the group's derived fields, a 10,000-alert group, its
 * truncatedAlerts, and the metric series a receiver has before its first
 * request.  Same loopback fixture as test_webhook.c (webhook_fixture.h).
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

#include "bridge/webhook.h"
#include "core/buf.h"
#include "core/http_server.h"
#include "core/metrics.h"
#include "store/store_events.h"

#include "tests/unit/helpers/webhook_fixture.h"

static char *render(const struct fixture *f)
{
	struct buf out = BUF_INIT;

	metrics_render(f->metrics, &out);
	return buf_detach(&out);
}

/* The first dead letter's key and reason, "KEY REASON", into ctx (256 bytes). */
static int first_dead(void *ctx, const struct store_event *ev)
{
	char *reason = ctx;

	if (!reason[0])
		snprintf(reason, 256, "%s %s", ev->key, ev->last_error ? ev->last_error : "");
	return 0;
}

/* n bytes of 'y' as a JSON string. */
static json_t *filler(size_t n)
{
	char *s = calloc(1, n + 1);
	json_t *j;

	assert_non_null(s);
	memset(s, 'y', n);
	j = json_string(s);
	free(s);
	return j;
}

/* Alert i of a group: alertname Storm, pod p<i>, firing, a fingerprint of its own. */
static json_t *alert(size_t i)
{
	char pod[32], fp[17];

	snprintf(pod, sizeof(pod), "p%zu", i);
	snprintf(fp, sizeof(fp), "%016zx", i + 1);
	return json_pack("{s:s, s:{s:s, s:s, s:s}, s:{s:s}, s:s, s:s, s:s, s:s}", "status", "firing",
			 "labels", "alertname", "Storm", "namespace", "prod", "pod", pod,
			 "annotations", "summary", "storm", "startsAt", "2026-11-21T00:49:51.678Z",
			 "endsAt", "0001-01-01T00:00:00Z", "generatorURL",
			 "http://prometheus.example:9090/graph?g0.expr=up", "fingerprint", fp);
}

/* The members every object of alerts[*].key has with equal values (Alertmanager's common sets). */
static json_t *common(const json_t *alerts, const char *key)
{
	json_t *out = json_deep_copy(json_object_get(json_array_get(alerts, 0), key));
	const char *name;
	json_t *v, *tmp;

	for (size_t i = 1; i < json_array_size(alerts); i++) {
		const json_t *set = json_object_get(json_array_get(alerts, i), key);

		json_object_foreach_safe(out, tmp, name, v) {
			if (!json_equal(v, json_object_get(set, name)))
				json_object_del(out, name);
		}
	}
	return out;
}

/* The webhook body Alertmanager sends to receiver for alerts (taken). */
static char *am_body(const char *receiver, json_t *alerts, int64_t truncated)
{
	json_t *p = json_pack("{s:s, s:s, s:s, s:s, s:{s:s}, s:o, s:o, s:s, s:I, s:o}", "version",
			      "4", "status", "firing", "receiver", receiver, "groupKey",
			      "{}:{alertname=\"Storm\"}", "groupLabels", "alertname", "Storm",
			      "commonLabels", common(alerts, "labels"), "commonAnnotations",
			      common(alerts, "annotations"), "externalURL", "http://am.example:9093",
			      "truncatedAlerts", (json_int_t)truncated, "alerts", alerts);
	char *s = json_dumps(p, JSON_COMPACT | JSON_SORT_KEYS);  /* Go's encoding/json sorts maps */

	json_decref(p);
	return s;
}

/*
 * A one-alert group whose alert has a 70 KB description, as Alertmanager
 * sends it: the description is in commonAnnotations too.  Was 400 (field
 * commonAnnotations.description) for the whole webhook, never retried;
 * now 200, the alert dead-lettered with its reason, the cut logged.
 */
static void long_annotation_copied_into_common_fields_is_200(void **state)
{
	struct fixture *f = *state;
	json_t *alerts = json_pack("[o]", alert(0));
	char reason[256] = "";
	char *body, *log;

	json_object_set_new(json_object_get(json_array_get(alerts, 0), "annotations"),
			    "description", filler(70 * 1024));
	body = am_body("alert-service", alerts, 0);
	wfx_assert_contains(body, "\"commonAnnotations\":{\"description\":\"yyy");
	wfx_expect_ok(f, NULL, body,
		      "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":1,\"invalid\":1}");
	assert_int_equal(store_pending_count(f->st, "bridge"), 0);
	assert_int_equal(store_dead_unmapped(f->st, "bridge", 10, first_dead, reason), ERR_OK);
	assert_string_equal(reason, "0000000000000001 invalid alert: alerts[0].annotations."
				    "description: longer than 65536 bytes");
	log = wfx_read_log(f);
	wfx_assert_contains(log, "msg=\"webhook group fields left out\" receiver=alert-service "
				 "dropped=1 field=commonAnnotations.description "
				 "error=\"longer than 65536 bytes: left out\"");
	wfx_assert_contains(log, "msg=\"webhook alerts dead-lettered\"");
	wfx_assert_metric(f, "alertbridge_webhook_alerts_invalid_total"
			  "{receiver=\"alert-service\",reason=\"annotations\"} 1\n");
	wfx_assert_metric(f, "alertbridge_webhook_requests_total"
			  "{receiver=\"alert-service\",code=\"200\"} 1\n");
	free(log);
	free(body);
}

/* alert(i) with a 5,000-byte label "long" (big) or 300 more labels (!big). */
static json_t *bad_alert(size_t i, int big)
{
	json_t *a = alert(i), *labels = json_object_get(a, "labels");

	if (big)
		json_object_set_new(labels, "long", filler(5000));
	for (int k = 0; !big && k < 300; k++) {
		char name[16];

		snprintf(name, sizeof(name), "l%03d", k);
		json_object_set_new(labels, name, json_string("v"));
	}
	return a;
}

/*
 * A one-alert group with a 5,000-byte label, one with 300 labels (each in
 * commonLabels too), and a group with both beside a good alert: each bad
 * alert is dead-lettered, the group's copies cut, the good one queued.
 */
static void long_or_many_labels_cost_only_their_alert(void **state)
{
	struct fixture *f = *state;
	char *one_long = am_body("alert-service", json_pack("[o]", bad_alert(0, 1)), 0);
	char *one_many = am_body("alert-service", json_pack("[o]", bad_alert(1, 0)), 0);
	char *mixed = am_body("alert-service",
			      json_pack("[o, o, o]", bad_alert(2, 1), bad_alert(3, 0), alert(4)), 0);
	struct store_event ev;
	char *log;

	wfx_assert_contains(one_long, "\"commonLabels\":{\"alertname\":\"Storm\",\"long\":\"yyy");
	wfx_assert_contains(one_many, "\"l299\":\"v\",\"namespace\":\"prod\",\"pod\":\"p1\"},"
				      "\"externalURL\"");
	wfx_expect_ok(f, NULL, one_long,
		      "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":1,\"invalid\":1}");
	wfx_expect_ok(f, NULL, one_many,
		      "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":1,\"invalid\":1}");
	wfx_expect_ok(f, NULL, mixed,
		      "{\"status\":\"ok\",\"receiver\":\"alert-service\",\"alerts\":3,\"invalid\":2}");
	wfx_take_event(f, &ev);
	assert_string_equal(ev.key, "0000000000000005");
	store_event_release(&ev);
	wfx_assert_no_more_events(f);
	log = wfx_read_log(f);
	wfx_assert_contains(log, "dropped=1 field=commonLabels.long error=\"longer than 4096 bytes: "
				 "left out\"");
	wfx_assert_contains(log, "dropped=47 field=commonLabels error=\"more than 256 entries: 47 "
				 "left out\"");
	wfx_assert_contains(log, "key=0000000000000001 field=alerts[0].labels.long "
				 "error=\"longer than 4096 bytes\"");
	wfx_assert_contains(log, "key=0000000000000002 field=alerts[0].labels "
				 "error=\"more than 256 entries\"");
	free(log);
	free(mixed);
	free(one_many);
	free(one_long);
}

/*
 * Alertmanager's max_alerts: the webhook says how many alerts it left out
 * (truncatedAlerts).  Logged and counted per receiver, also when the body
 * is answered from the cache (a re-send), and it reaches the event
 * document the group issue's view is built from (bridge/view.c).
 */
static void truncated_alerts_are_logged_and_counted(void **state)
{
	struct fixture *f = *state;
	char *body = am_body("grouped", json_pack("[o, o]", alert(0), alert(1)), 3);
	const char *ok = "{\"status\":\"ok\",\"receiver\":\"grouped\",\"alerts\":2}";
	struct store_event ev;
	char *log;

	wfx_expect_ok(f, NULL, body, ok);
	wfx_expect_ok(f, NULL, body, ok);  /* the same body again: from the cache */
	wfx_take_event(f, &ev);
	wfx_assert_contains(ev.payload, ",\"truncatedAlerts\":3,\"members\":[");
	store_event_release(&ev);
	log = wfx_read_log(f);
	wfx_assert_contains(log, "msg=\"webhook alerts truncated by alertmanager\" "
				 "receiver=grouped truncated=3 alerts=2");
	wfx_assert_metric(f, "alertbridge_webhook_alerts_truncated_total"
			  "{receiver=\"grouped\"} 6\n");
	wfx_assert_metric(f, "alertbridge_webhook_cache_hits_total{receiver=\"grouped\"} 1\n");
	free(log);
	free(body);
}

/*
 * Every configured receiver's series of the counters with labels exist at
 * 0 from the start, so increase() sees the first dead letter (issue 18 item
 * 12); 400s name the receiver the request named when it is configured
 * (were receiver="").
 */
static void known_series_at_zero_and_400s_by_receiver(void **state)
{
	struct fixture *f = *state;
	static const char *const zero[] = {
		"alertbridge_webhook_alerts_invalid_total{receiver=\"alert-service\",reason=\"annotations\"} 0\n",
		"alertbridge_webhook_alerts_invalid_total{receiver=\"grouped\",reason=\"alertbridge_repo\"} 0\n",
		"alertbridge_webhook_alerts_invalid_total{receiver=\"team.a+b\",reason=\"startsAt\"} 0\n",
		"alertbridge_webhook_requests_total{receiver=\"grouped\",code=\"200\"} 0\n",
		"alertbridge_webhook_requests_total{receiver=\"grouped\",code=\"413\"} 0\n",
		"alertbridge_webhook_requests_total{receiver=\"\",code=\"401\"} 0\n",
		"alertbridge_webhook_alerts_total{receiver=\"team.a+b\",status=\"resolved\"} 0\n",
		"alertbridge_webhook_alerts_truncated_total{receiver=\"alert-service\"} 0\n",
		"alertbridge_webhook_alerts_repeated_total{receiver=\"grouped\"} 0\n",
	};
	const char *body = wfx_body(f, "01_single_firing.json");
	const char *v3 = wfx_edit(f, body, "\"version\": \"4\"", "\"version\": \"3\"");
	char *text;

	for (size_t i = 0; i < sizeof(zero) / sizeof(zero[0]); i++)
		wfx_assert_metric(f, "%s", zero[i]);
	/* The body's receiver, and ?receiver=, each when configured; else "". */
	wfx_expect_rejected(f, NULL, v3, wfx_good_headers, 400,
			    "{\"error\":\"unsupported version, want \\\"4\\\"\",\"field\":\"version\"}");
	wfx_expect_rejected(f, "?receiver=grouped", v3, wfx_good_headers, 400,
			    "{\"error\":\"unsupported version, want \\\"4\\\"\",\"field\":\"version\"}");
	wfx_expect_rejected(f, "?receiver=nobody", v3, wfx_good_headers, 400,
			    "{\"error\":\"unsupported version, want \\\"4\\\"\",\"field\":\"version\"}");
	wfx_expect_rejected(f, NULL, "{\"receiver\":\"grouped\"}", wfx_good_headers, 400,
			    "{\"error\":\"missing\",\"field\":\"version\"}");
	text = render(f);
	wfx_assert_contains(text, "alertbridge_webhook_requests_total"
				  "{receiver=\"alert-service\",code=\"400\"} 1\n");
	wfx_assert_contains(text, "alertbridge_webhook_requests_total"
				  "{receiver=\"grouped\",code=\"400\"} 2\n");
	wfx_assert_contains(text, "alertbridge_webhook_requests_total{receiver=\"\",code=\"400\"} 1\n");
	wfx_assert_lacks(text, "nobody");
	free(text);
}

/*
 * A body over max_body_bytes is answered 413 by the server, before the
 * handler: counted in alertbridge_webhook_requests_total through the
 * route's rejection hook (was not counted at all), under ?receiver= when
 * it is configured.
 */
static void server_413s_are_counted(void **state)
{
	struct fixture *f = *state;
	struct srv_options so = { 0 };
	struct srv *s = NULL, *saved = f->srv;
	char *body = am_body("grouped", json_pack("[o, o, o, o]", alert(0), alert(1), alert(2),
						  alert(3)), 0);
	struct reply r;

	so.listen_address = "127.0.0.1:0";
	so.threads = 1;
	so.max_body_bytes = 512;
	assert_true(strlen(body) > 512);
	assert_int_equal(srv_new(&so, &s, NULL), ERR_OK);
	assert_int_equal(srv_route(s, "POST", "/v1/webhook", webhook_handle, f->wh), ERR_OK);
	assert_int_equal(srv_route_rejected(s, "/v1/nothing", webhook_rejected, f->wh),
			 ERR_INVALID);
	assert_int_equal(srv_route_rejected(s, "/v1/webhook", webhook_rejected, f->wh), ERR_OK);
	assert_int_equal(srv_start(s, NULL), ERR_OK);
	f->srv = s;
	wfx_post(f, "?receiver=grouped", body, wfx_good_headers, &r);
	assert_int_equal(r.status, 413);
	wfx_reply_release(&r);
	wfx_post(f, "?receiver=nobody", body, wfx_good_headers, &r);
	assert_int_equal(r.status, 413);
	wfx_reply_release(&r);
	wfx_post(f, NULL, body, wfx_good_headers, &r);
	assert_int_equal(r.status, 413);
	wfx_reply_release(&r);
	f->srv = saved;
	srv_free(s);
	wfx_assert_metric(f, "alertbridge_webhook_requests_total"
			  "{receiver=\"grouped\",code=\"413\"} 1\n");
	wfx_assert_metric(f, "alertbridge_webhook_requests_total{receiver=\"\",code=\"413\"} 2\n");
	free(body);
}

/* A test of this file, between wfx_setup() and wfx_teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, wfx_setup, wfx_teardown)

UNIT_MAIN(
	T(long_annotation_copied_into_common_fields_is_200),
	T(long_or_many_labels_cost_only_their_alert),
	T(truncated_alerts_are_logged_and_counted),
	T(known_series_at_zero_and_400s_by_receiver),
	T(server_413s_are_counted))
