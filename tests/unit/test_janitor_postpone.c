/*
 * test_janitor_postpone.c - a queued "Keep until" click applied by the
 * janitor (janitor_postpone_step, janitor/janitor.h) against fake Kubernetes
 * and Slack servers: the conditional patch, the Event, chat.update and the
 * threaded reply when it is done; the ephemeral answer and no write for each
 * refusal; the button a notice carries.
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

#include "core/config.h"
#include "store/store_events.h"
#include "store/store_outbox.h"
#include "janitor/janitor.h"
#include "janitor/janitor_int.h"
#include "janitor/slack_interact.h"
#include "tests/unit/helpers/janitor_fixture.h"

#define OWNER_ANN MARKED_BY_US ",\"janitor/notify\":\"U0OWNER\"," \
	"\"janitor/notified-at\":\"2026-11-18T00:00:00Z\""
#define RESPOND "/actions/T1/1/abc"

/* Queue a click of user on the button of notice 7 about train-1 (uid-1), as the endpoint does. */
static void click(struct env *e, const char *user, const char *action_ts)
{
	struct buf url = BUF_INIT, err = BUF_INIT;
	struct slack_click c = { 0 };
	struct store_event ev = { 0 };
	char *payload;

	(void)buf_printf(&url, "%s" RESPOND, fake_http_url(e->slack));
	c.user = (char *)user;
	c.user_name = (char *)"ada";
	c.action_ts = (char *)action_ts;
	c.response_url = url.data;
	c.channel = (char *)"C0GPU";
	c.message_ts = (char *)"1794960000.000100";
	c.message_text = (char *)"Pod train-1 goes at 2026-11-19T00:00:00Z";
	c.message_blocks = (char *)"[{\"type\":\"section\",\"text\":{\"type\":\"mrkdwn\",\"text\":"
				   "\"Pod train-1\"}},{\"type\":\"actions\",\"elements\":[{\"type\":"
				   "\"button\",\"action_id\":\"postpone\",\"value\":\"{\\\"ns\\\":"
				   "\\\"ml-team\\\",\\\"pod\\\":\\\"train-1\\\",\\\"uid\\\":\\\"uid-1\\\","
				   "\\\"notice\\\":7}\"}]}]";
	c.ns = (char *)"ml-team";
	c.pod = (char *)"train-1";
	c.uid = (char *)"uid-1";
	c.notice = 7;
	ev.kind = (char *)JANITOR_POSTPONE_QUEUE;
	ev.receiver = (char *)"slack";
	ev.key = (char *)"ml-team/train-1";
	ev.status = (char *)"firing";
	ev.starts_at_ms = e->now;
	ev.received_at_ms = e->now;
	payload = slack_click_json(&c);
	ev.payload = payload;
	assert_int_equal(store_enqueue(e->st, &ev, 1, &err), ERR_OK);
	free(payload);
	buf_release(&url);
	buf_release(&err);
}

/* The ephemeral answer the fake Slack's i-th request carries; fails unless it says want. */
static void answered(struct env *e, size_t i, const char *want)
{
	const struct fake_request *r = jfx_req(e->slack, i, "POST", RESPOND);
	json_t *o = jfx_body_json(r);

	assert_string_equal(json_string_value(json_object_get(o, "response_type")), "ephemeral");
	assert_true(json_is_false(json_object_get(o, "replace_original")));
	jfx_assert_contains(json_string_value(json_object_get(o, "text")), want);
	assert_null(fake_request_header(r, "Authorization"));  /* a response_url needs no token */
	json_decref(o);
}

/*
 * One postpone step that goes through: the pod's GET and the PATCH's answer (both
 * OWNER_ANN), the Event's 201 and Slack's two OK_POSTs are queued first.
 */
static void postpone_done(struct env *e)
{
	jfx_push_pod(e->kube, "train-1", "uid-1", OWNER_ANN);
	jfx_push_pod(e->kube, "train-1", "uid-1", OWNER_ANN);  /* the PATCH's answer */
	fake_http_push(e->kube, 201, NULL, "{}");
	fake_http_push(e->slack, 200, NULL, OK_POST);
	fake_http_push(e->slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_postpone_step(e->j), 1);
}

static void owner_click_moves_expires_a_day(void **state)
{
	struct env *e = *state;
	const struct fake_request *r;
	json_t *o;

	click(e, "U0OWNER", "1794960001.000200");
	postpone_done(e);
	jfx_req(e->kube, 0, "GET", POD_PATH);
	r = jfx_req(e->kube, 1, "PATCH", POD_PATH);
	assert_string_equal(fake_request_header(r, "Content-Type"), "application/merge-patch+json");
	/* uid and resourceVersion are the API server's preconditions (409 on a change). */
	jfx_body_is(r, "{\"metadata\":{\"uid\":\"uid-1\",\"resourceVersion\":\"7\",\"annotations\":{"
		       "\"janitor/expires\":\"2026-11-20T00:00:00Z\","
		       "\"janitor/marked-expires\":\"2026-11-20T00:00:00Z\","
		       "\"janitor/notified-at\":null,\"janitor/postponed\":\"1\"}}}");
	o = jfx_body_json(jfx_req(e->kube, 2, "POST", EVENTS_PATH));
	assert_string_equal(json_string_value(json_object_get(o, "reason")), "JanitorPostponed");
	jfx_assert_contains(json_string_value(json_object_get(o, "message")),
			    "kept until 2026-11-20T00:00:00Z by Slack user U0OWNER (ada), "
			    "postpone 1 of 3");
	json_decref(o);
	o = jfx_body_json(jfx_req(e->slack, 0, "POST", "/chat.update"));
	assert_string_equal(json_string_value(json_object_get(o, "channel")), "C0GPU");
	assert_string_equal(json_string_value(json_object_get(o, "ts")), "1794960000.000100");
	jfx_assert_contains(json_string_value(json_object_get(o, "text")),
			    "Pod train-1 goes at 2026-11-19T00:00:00Z\n\n:white_check_mark: <@U0OWNER> "
			    "kept pod `ml-team/train-1` until 2026-11-20T00:00:00Z (1 of 3).");
	/* The clicked button is gone: the section stays, the empty actions block goes. */
	assert_int_equal(json_array_size(json_object_get(o, "blocks")), 2);
	assert_string_equal(json_string_value(json_object_get(
				    json_array_get(json_object_get(o, "blocks"), 1), "type")),
			    "section");
	json_decref(o);
	o = jfx_body_json(jfx_req(e->slack, 1, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(o, "thread_ts")), "1794960000.000100");
	json_decref(o);
	jfx_assert_contains(jfx_metrics_text(e),
			    "alertbridge_janitor_postpones_total{result=\"done\",reason=\"done\"} 1");
	assert_int_equal(janitor_postpone_step(e->j), 0);  /* done with */
}

static void second_click_of_the_same_button_changes_nothing(void **state)
{
	struct env *e = *state;
	size_t k;

	click(e, "U0OWNER", "1794960001.000200");
	postpone_done(e);
	k = fake_http_count(e->kube);
	/* Another click (its own action_ts) of the same notice's button. */
	click(e, "U0OWNER", "1794960009.000300");
	jfx_push_pod(e->kube, "train-1", "uid-1",
		     "\"janitor/expires\":\"2026-11-20T00:00:00Z\",\"janitor/notify\":\"U0OWNER\","
		     "\"janitor/postponed\":\"1\"");
	fake_http_push(e->slack, 200, NULL, "{\"ok\":true}");
	assert_int_equal(janitor_postpone_step(e->j), 1);
	jfx_no_mutation(e->kube, k);
	answered(e, 2, "kept already with this button: it now goes at 2026-11-20T00:00:00Z");
	jfx_assert_contains(jfx_metrics_text(e),
			    "alertbridge_janitor_postpones_total{result=\"refused\",reason=\"already\"} 1");
}

/* One refusal: the pod answer(s) given, the answer expected, no write to Kubernetes. */
static void refused(const char *user, int status, const char *uid, const char *ann,
		    const char *reason, const char *want)
{
	struct env e;
	struct buf m = BUF_INIT;

	jfx_env_start(&e, 0);
	click(&e, user, "1794960001.000200");
	if (status == 200)
		jfx_push_pod(e.kube, "train-1", uid, ann);
	else
		fake_http_push(e.kube, status, NULL,
			       "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
			       "\"reason\":\"NotFound\",\"code\":404}");
	fake_http_push(e.slack, 200, NULL, "ok");
	assert_int_equal(janitor_postpone_step(e.j), 1);
	jfx_no_mutation(e.kube, 0);
	assert_int_equal(fake_http_count(e.slack), 1);
	answered(&e, 0, want);
	(void)buf_printf(&m, "alertbridge_janitor_postpones_total{result=\"refused\",reason=\"%s\"} 1",
			 reason);
	jfx_assert_contains(jfx_metrics_text(&e), buf_str(&m));
	buf_release(&m);
	jfx_env_stop(&e);
}

static void someone_else_may_not_keep_the_pod(void **state)
{
	(void)state;
	refused("U0OTHER", 200, "uid-1", OWNER_ANN, "not-owner",
		"can be kept only by its owner");
}

static void an_owner_named_by_email_is_looked_up(void **state)
{
	struct env e;

	(void)state;
	jfx_env_start(&e, 0);
	click(&e, "U0ADA", "1794960001.000200");
	jfx_push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US ",\"janitor/notify\":\"ada@example.com\"");
	jfx_push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e.kube, 201, NULL, "{}");
	fake_http_push(e.slack, 200, NULL, "{\"ok\":true,\"user\":{\"id\":\"U0ADA\"}}");
	fake_http_push(e.slack, 200, NULL, OK_POST);
	fake_http_push(e.slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_postpone_step(e.j), 1);
	jfx_req(e.slack, 0, "GET", "/users.lookupByEmail?email=ada%40example.com");
	jfx_req(e.kube, 1, "PATCH", POD_PATH);
	jfx_req(e.slack, 1, "POST", "/chat.update");
	jfx_env_stop(&e);
	/* The address is someone else's. */
	jfx_env_start(&e, 0);
	click(&e, "U0ADA", "1794960001.000200");
	jfx_push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US ",\"janitor/notify\":\"bob@example.com\"");
	fake_http_push(e.slack, 200, NULL, "{\"ok\":true,\"user\":{\"id\":\"U0BOB\"}}");
	fake_http_push(e.slack, 200, NULL, "ok");
	assert_int_equal(janitor_postpone_step(e.j), 1);
	jfx_no_mutation(e.kube, 0);
	answered(&e, 1, "can be kept only by its owner");
	jfx_env_stop(&e);
}

static void a_pod_gone_or_replaced_is_not_kept(void **state)
{
	(void)state;
	refused("U0OWNER", 404, NULL, NULL, "gone", "Pod `ml-team/train-1` is gone");
	refused("U0OWNER", 200, "uid-2", OWNER_ANN, "uid-changed", "its uid changed");
}

static void limits_are_answered(void **state)
{
	(void)state;
	refused("U0OWNER", 200, "uid-1",
		"\"janitor/expires\":\"2026-11-19T00:00:00Z\",\"janitor/notify\":\"U0OWNER\","
		"\"janitor/postponed\":\"3\",\"janitor/reason\":\"JanitorIdleGPUPod\"",
		"limit", "was kept 3 times already, the most its policy allows");
}

static void a_conflict_retries_the_click(void **state)
{
	struct env *e = *state;
	struct store_event ev = { 0 };

	click(e, "U0OWNER", "1794960001.000200");
	jfx_push_pod(e->kube, "train-1", "uid-1", OWNER_ANN);
	fake_http_push(e->kube, 409, NULL,
		       "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
		       "\"reason\":\"Conflict\",\"code\":409}");
	assert_int_equal(janitor_postpone_step(e->j), 1);
	assert_int_equal(fake_http_count(e->slack), 0);  /* nothing told: it is not done */
	/* Read again later, and then done (the one-per-notice mark was given back). */
	e->now += HOUR;
	postpone_done(e);
	jfx_req(e->kube, 3, "PATCH", POD_PATH);
	assert_int_equal(store_next_event(e->st, JANITOR_POSTPONE_QUEUE, e->now + 10 * HOUR, &ev),
			 ERR_NOTFOUND);
}

static void notice_carries_the_button_with_a_signing_secret(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };
	char *blocks;
	json_t *o, *button;

	n.id = 7;
	jfx_notice_of(&n, "train-1", "uid-1", "notice");
	n.expires_ms = T0 + 6 * HOUR;
	n.line = (char *)"{\"policy\":\"JanitorIdleGPUPod\"}";
	/* No signing secret: the text alone, as before. */
	assert_null(janitor_keep_blocks(e->j, "Pod train-1 goes", &n, 1));
	e->cfg->janitor.slack.signing_secret = strdup("s3cret");
	blocks = janitor_keep_blocks(e->j, "Pod train-1 goes", &n, 1);
	assert_non_null(blocks);
	o = json_loads(blocks, 0, NULL);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
				    json_array_get(o, 0), "text"), "text")), "Pod train-1 goes");
	button = json_array_get(json_object_get(json_array_get(o, 1), "elements"), 0);
	assert_string_equal(json_string_value(json_object_get(button, "action_id")), "postpone");
	assert_string_equal(json_string_value(json_object_get(json_object_get(button, "text"),
							      "text")),
			    "Keep until 2026-11-19 06:00 UTC");
	assert_string_equal(json_string_value(json_object_get(button, "value")),
			    "{\"ns\":\"ml-team\",\"pod\":\"train-1\",\"uid\":\"uid-1\",\"notice\":7}");
	json_decref(o);
	free(blocks);
	/* Replies and reminders carry none. */
	n.kind = (char *)"reminder";
	assert_null(janitor_keep_blocks(e->j, "Pod train-1 goes", &n, 1));
}

static void a_digest_has_one_button_per_pod(void **state)
{
	struct env *e = *state;
	struct store_notice m[2] = { { 0 } };
	json_t *o, *els;
	char *blocks;

	e->cfg->janitor.slack.signing_secret = strdup("s3cret");
	for (int i = 0; i < 2; i++) {
		m[i].id = 10 + i;
		jfx_notice_of(&m[i], i ? "train-2" : "train-1", i ? "uid-2" : "uid-1", "notice");
		m[i].expires_ms = T0 + 6 * HOUR;
		/* The second pod's policy allows no postpone: no button for it. */
		m[i].line = (char *)(i ? "{\"policy\":\"JanitorPodPendingTooLong\"}"
				       : "{\"policy\":\"JanitorIdleGPUPod\"}");
	}
	for (size_t k = 0; k < e->cfg->janitor.policies_count; k++)
		if (!strcmp(e->cfg->janitor.policies[k].alertname, "JanitorPodPendingTooLong"))
			e->cfg->janitor.policies[k].max_postpones = 0;
	blocks = janitor_keep_blocks(e->j, "Pods of yours go", m, 2);
	o = json_loads(blocks, 0, NULL);
	els = json_object_get(json_array_get(o, 1), "elements");
	assert_int_equal(json_array_size(els), 1);
	assert_string_equal(json_string_value(json_object_get(json_object_get(
				    json_array_get(els, 0), "text"), "text")),
			    "Keep train-1 until 2026-11-19 06:00 UTC");
	m[1].line = (char *)"{\"policy\":\"JanitorIdleGPUPod\"}";
	json_decref(o);
	free(blocks);
	blocks = janitor_keep_blocks(e->j, "Pods of yours go", m, 2);
	o = json_loads(blocks, 0, NULL);
	assert_int_equal(json_array_size(json_object_get(json_array_get(o, 1), "elements")), 2);
	json_decref(o);
	free(blocks);
}

/*
 * A notice queued once the pod was kept max_postpones times, or whose expiry
 * is at creation + max_lifetime already, carries no button (a click could only
 * be refused); one a click could keep only up to max_lifetime says that time.
 */
static void no_button_a_click_could_not_use(void **state)
{
	struct env *e = *state;
	struct store_notice n = { 0 };
	struct cfg_policy *gpu = NULL;
	struct buf line = BUF_INIT;
	char *blocks;
	json_t *o, *button;

	e->cfg->janitor.slack.signing_secret = strdup("s3cret");
	for (size_t k = 0; k < e->cfg->janitor.policies_count; k++)
		if (!strcmp(e->cfg->janitor.policies[k].alertname, "JanitorIdleGPUPod"))
			gpu = &e->cfg->janitor.policies[k];
	assert_non_null(gpu);
	gpu->max_postpones = 2;
	n.id = 7;
	jfx_notice_of(&n, "train-1", "uid-1", "notice");
	n.expires_ms = T0 + 6 * HOUR;
	n.line = (char *)"{\"policy\":\"JanitorIdleGPUPod\",\"postponed\":1}";
	blocks = janitor_keep_blocks(e->j, "Pod train-1 goes", &n, 1);
	assert_non_null(blocks);
	free(blocks);
	n.line = (char *)"{\"policy\":\"JanitorIdleGPUPod\",\"postponed\":2}";
	assert_null(janitor_keep_blocks(e->j, "Pod train-1 goes", &n, 1));
	/* max_lifetime 1d from creation at T0 - 12h: a click keeps it until T0 + 12h only. */
	gpu->max_lifetime_ms = 24 * HOUR;
	(void)buf_printf(&line, "{\"policy\":\"JanitorIdleGPUPod\",\"postponed\":0,"
			 "\"createdMs\":%lld}", (long long)(T0 - 12 * HOUR));
	n.line = line.data;
	blocks = janitor_keep_blocks(e->j, "Pod train-1 goes", &n, 1);
	o = json_loads(blocks, 0, NULL);
	button = json_array_get(json_object_get(json_array_get(o, 1), "elements"), 0);
	assert_string_equal(json_string_value(json_object_get(json_object_get(button, "text"),
							      "text")),
			    "Keep until 2026-11-18 12:00 UTC");
	json_decref(o);
	free(blocks);
	/* Its expiry at the bound already: no button. */
	n.expires_ms = T0 + 12 * HOUR;
	assert_null(janitor_keep_blocks(e->j, "Pod train-1 goes", &n, 1));
	buf_release(&line);
}

UNIT_MAIN(
	JFX_TEST(owner_click_moves_expires_a_day),
	JFX_TEST(second_click_of_the_same_button_changes_nothing),
	cmocka_unit_test(someone_else_may_not_keep_the_pod),
	cmocka_unit_test(an_owner_named_by_email_is_looked_up),
	cmocka_unit_test(a_pod_gone_or_replaced_is_not_kept),
	cmocka_unit_test(limits_are_answered),
	JFX_TEST(a_conflict_retries_the_click),
	JFX_TEST(notice_carries_the_button_with_a_signing_secret),
	JFX_TEST(a_digest_has_one_button_per_pod),
	JFX_TEST(no_button_a_click_could_not_use))
