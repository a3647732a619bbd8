/*
 * janitor_fixture.c - what the janitor's unit tests (test_janitor*.c) share:
 * a janitor wired to two fake_http servers (Kubernetes, Slack) and an
 * in-memory store in virtual time, canned pods, and request checks.
 */
#include "janitor_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/am.h"
#include "core/log.h"
#include "store/store_events.h"
#include "store/store_outbox.h"

int64_t jfx_v_now(void *ctx)
{
	return ((struct env *)ctx)->now;
}

void jfx_v_sleep(void *ctx, int64_t ms)
{
	((struct env *)ctx)->now += ms;
}

size_t jfx_count_method(struct fake_http *f, const char *method)
{
	size_t n = 0;

	for (size_t i = 0; i < fake_http_count(f); i++)
		n += !strcmp(fake_http_request(f, i)->method, method);
	return n;
}

static int v_is_leader(void *ctx)
{
	struct env *e = ctx;

	if (e->lose_after && fake_http_count(e->kube) >= e->lose_after)
		e->leading = 0;
	return e->leading;
}

void jfx_janitor_options(struct env *e, struct janitor_options *jo)
{
	jo->cfg = e->cfg;
	jo->store = e->st;
	jo->kube = e->kc;
	jo->slack = e->sc;
	jo->now_ms = jfx_v_now;
	jo->sleep_ms = jfx_v_sleep;
	jo->clock_ctx = e;
}

void jfx_env_start_with(struct env *e, int dry_run, const struct env_opts *o)
{
	char yaml[1024];
	struct buf err = BUF_INIT;
	struct kube_config kc = KUBE_CONFIG_INIT;
	struct kube_options ko = { 0 };
	struct slack_options so = { 0 };
	struct janitor_options jo = { 0 };

	memset(e, 0, sizeof(*e));
	e->now = T0;
	e->kube = fake_http_start();
	e->slack = fake_http_start();
	e->log = tmpfile();
	assert_non_null(e->log);
	log_set_fd(fileno(e->log));
	snprintf(yaml, sizeof(yaml),
		 "janitor:\n  enabled: true\n  dry_run: %s\n  max_deletions_per_sweep: %u\n"
		 "  notice_batch_window: %lldms\n"
		 "  policies:\n"
		 "    - {alertname: JanitorIdleGPUPod, grace: 24h, notice_lead: 2h, "
		 "owned: scale-to-zero}\n"
		 "    - {alertname: JanitorPodPendingTooLong, grace: 6h, notice_lead: 1h}\n"
		 "  slack: {default_channel: \"#gpu-cluster\", owner_label: owner}\n",
		 dry_run ? "true" : "false", o->max_deletions ? o->max_deletions : 2,
		 (long long)o->batch_window_ms);
	if (cfg_parse(yaml, strlen(yaml), "test.yml", NULL, &e->cfg, &err))
		fail_msg("cfg_parse: %s", buf_str(&err));
	assert_int_equal(store_open(o->store_target ? o->store_target : ":memory:", &e->st, &err),
			 ERR_OK);
	e->metrics = metrics_new();
	kc.server = strdup(fake_http_url(e->kube));
	kc.token = strdup("t0k3n");
	kc.namespace = strdup("alertbridge");
	ko.now_ms = jfx_v_now;
	ko.sleep_ms = jfx_v_sleep;
	ko.clock_ctx = e;
	ko.timeout_ms = o->kube_timeout_ms ? o->kube_timeout_ms : 5000;
	e->kc = kube_client_new(&kc, &ko);
	so.api_url = fake_http_url(e->slack);
	so.bot_token = "xoxb-test";
	so.timeout_ms = o->slack_timeout_ms ? o->slack_timeout_ms : 5000;
	so.max_attempts = o->slack_attempts ? o->slack_attempts : 1;
	so.now_ms = jfx_v_now;
	so.sleep_ms = jfx_v_sleep;
	so.clock_ctx = e;
	e->sc = slack_client_new(&so);
	jfx_janitor_options(e, &jo);
	jo.reload = o->reload;
	jo.metrics = e->metrics;
	e->leading = 1;
	if (o->leader_hook) {
		jo.is_leader = v_is_leader;
		jo.leader_ctx = e;
	}
	e->j = janitor_new(&jo);
	buf_init(&e->rows, 0);
	buf_release(&err);
}

void jfx_env_start(struct env *e, int dry_run)
{
	struct env_opts o = { 0 };

	jfx_env_start_with(e, dry_run, &o);
}

void jfx_env_stop(struct env *e)
{
	janitor_free(e->j);
	slack_client_free(e->sc);
	kube_client_free(e->kc);
	metrics_free(e->metrics);
	store_close(e->st);
	cfg_free(e->cfg);
	fake_http_stop(e->kube);
	fake_http_stop(e->slack);
	buf_release(&e->rows);
	log_set_fd(2);
	fclose(e->log);
}

int jfx_setup(void **state)
{
	static const struct env_opts defaults = { 0 };
	const struct env_opts *o = *state ? *state : &defaults;
	struct env *e = malloc(sizeof(*e));

	assert_non_null(e);
	jfx_env_start_with(e, 0, o);
	*state = e;
	return 0;
}

int jfx_teardown(void **state)
{
	jfx_env_stop(*state);
	free(*state);
	return 0;
}

char *jfx_read_log(struct env *e)
{
	static char text[65536];
	size_t n;

	fflush(e->log);
	rewind(e->log);
	n = fread(text, 1, sizeof(text) - 1, e->log);
	text[n] = '\0';
	return text;
}

void jfx_assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("\"%s\" does not contain \"%s\"", hay ? hay : "(null)", needle);
}

/* A pod object: annotations is the inside of the JSON object ("" for none). */
char *jfx_pod_json(const char *name, const char *uid, const char *annotations,
		   const char *owner_kind, const char *owner_name)
{
	struct buf b = BUF_INIT;

	(void)buf_printf(&b,
			 "{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":\"%s\","
			 "\"namespace\":\"ml-team\",\"uid\":\"%s\",\"resourceVersion\":\"7\","
			 "\"creationTimestamp\":\"2026-11-16T00:00:00Z\","
			 "\"labels\":{\"app\":\"train\"},\"annotations\":{%s}",
			 name, uid, annotations);
	if (owner_kind)
		(void)buf_printf(&b,
				 ",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
				 "\"%s\",\"name\":\"%s\",\"uid\":\"owner-uid\",\"controller\":true}]",
				 owner_kind, owner_name);
	(void)buf_adds(&b, "},\"status\":{\"phase\":\"Running\"}}");
	return buf_detach(&b);
}

void jfx_push_pod(struct fake_http *f, const char *name, const char *uid,
		  const char *annotations)
{
	char *p = jfx_pod_json(name, uid, annotations, NULL, NULL);

	fake_http_push(f, 200, NULL, p);
	free(p);
}

/* A metadata-only list page of n pods (each a pod_json string, consumed). */
void jfx_push_list(struct fake_http *f, char **pods, size_t n)
{
	struct buf b = BUF_INIT;

	(void)buf_adds(&b, "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":\"meta.k8s.io/v1\","
			   "\"metadata\":{},\"items\":[");
	for (size_t i = 0; i < n; i++) {
		(void)buf_printf(&b, "%s%s", i ? "," : "", pods[i]);
		free(pods[i]);
	}
	(void)buf_adds(&b, "]}");
	fake_http_push(f, 200, NULL, buf_str(&b));
	buf_release(&b);
}

void jfx_push_one(struct fake_http *f, const char *name, const char *uid, const char *ann)
{
	char *p = jfx_pod_json(name, uid, ann, NULL, NULL);

	jfx_push_list(f, &p, 1);
}

/* Queue one alert for pod ml-team/<pod> (or ns) as the intake would. */
void jfx_enqueue(struct env *e, const char *status, const char *alertname, const char *ns,
		 const char *pod, const char *uid)
{
	char body[1024], key[128];
	struct am_payload *p = NULL;
	struct am_error ae;
	struct buf doc = BUF_INIT;
	struct store_event ev = { 0 };

	snprintf(body, sizeof(body),
		 "{\"version\":\"4\",\"status\":\"%s\",\"receiver\":\"janitor\",\"groupKey\":\"g\","
		 "\"alerts\":[{\"status\":\"%s\",\"labels\":{\"alertname\":\"%s\","
		 "\"namespace\":\"%s\",\"pod\":\"%s\"%s%s%s},\"annotations\":{\"summary\":"
		 "\"GPU idle for 6h & <1%% used\"},\"startsAt\":\"2026-11-17T18:00:00Z\","
		 "\"endsAt\":\"%s\"}]}",
		 status, status, alertname, ns, pod, uid ? ",\"uid\":\"" : "", uid ? uid : "",
		 uid ? "\"" : "",
		 strcmp(status, "firing") ? "2026-11-18T00:00:00Z" : "0001-01-01T00:00:00Z");
	if (am_parse(body, strlen(body), NULL, &p, &ae))
		fail_msg("am_parse: %s: %s", ae.field, ae.message);
	assert_int_equal(am_event_json(p, 0, &doc), ERR_OK);
	snprintf(key, sizeof(key), "%s/%s", ns, pod);
	ev.kind = (char *)"janitor";
	ev.receiver = (char *)"janitor";
	ev.key = key;
	ev.status = (char *)status;
	ev.starts_at_ms = p->alerts[0].starts_at_ms;
	ev.ends_at_ms = p->alerts[0].ends_at_ms;
	ev.payload = (char *)buf_str(&doc);
	assert_int_equal(store_enqueue(e->st, &ev, 1, NULL), ERR_OK);
	buf_release(&doc);
	am_payload_free(p);
}

void jfx_notice_of(struct store_notice *n, const char *pod, const char *uid, const char *kind)
{
	n->namespace = (char *)"ml-team";
	n->pod = (char *)pod;
	n->uid = (char *)uid;
	n->kind = (char *)kind;
}

/* A notice of uid already delivered at sent_at_ms, as the outbox records it. */
void jfx_delivered_notice(struct env *e, const char *pod, const char *uid, int64_t expires_ms,
			  int64_t sent_at_ms)
{
	struct store_notice n = { 0 };

	jfx_notice_of(&n, pod, uid, "notice");
	n.expires_ms = expires_ms;
	n.text = (char *)"notice";
	assert_int_equal(store_notice_add(e->st, &n, NULL), ERR_OK);
	assert_int_equal(store_notice_sent(e->st, n.id, sent_at_ms, "#gpu-cluster", "C0GPU",
					   "1794950000.000100"),
			 ERR_OK);
}

const struct fake_request *jfx_req(struct fake_http *f, size_t i, const char *method,
				   const char *uri)
{
	const struct fake_request *r = fake_http_request(f, i);

	if (!r)
		fail_msg("no request %zu (want %s %s)", i, method, uri);
	assert_string_equal(r->method, method);
	assert_string_equal(r->uri, uri);
	return r;
}

void jfx_event_posted(struct fake_http *f, size_t i, const char *reason)
{
	char quoted[128];

	snprintf(quoted, sizeof(quoted), "\"%s\"", reason);
	jfx_assert_contains(jfx_req(f, i, "POST", EVENTS_PATH)->body, quoted);
}

void jfx_body_is(const struct fake_request *r, const char *want)
{
	json_error_t je;
	json_t *got = json_loads(r->body, 0, &je), *w = json_loads(want, 0, &je);

	assert_non_null(w);
	if (!got || !json_equal(got, w))
		fail_msg("body %s\nwant %s", r->body, want);
	json_decref(got);
	json_decref(w);
}

json_t *jfx_body_json(const struct fake_request *r)
{
	json_t *o = json_loads(r->body, 0, NULL);

	assert_non_null(o);
	return o;
}

/* Requests from the first-th on were all reads. */
void jfx_no_mutation(struct fake_http *f, size_t first)
{
	for (size_t i = first; i < fake_http_count(f); i++)
		assert_string_equal(fake_http_request(f, i)->method, "GET");
}

void jfx_collect_row(void *ctx, const struct janitor_plan_row *row)
{
	struct env *e = ctx;

	(void)buf_printf(&e->rows, "%s/%s=%s;", row->namespace, row->pod, row->action);
}

void jfx_sweep(struct env *e, enum err want)
{
	struct buf err = BUF_INIT;

	buf_reset(&e->rows);
	assert_int_equal(janitor_sweep(e->j, jfx_collect_row, e, NULL, &err), want);
	buf_release(&err);
}

void jfx_sweep_rows(struct env *e, const char *want)
{
	jfx_sweep(e, ERR_OK);
	assert_string_equal(buf_str(&e->rows), want);
}

void jfx_mark(struct env *e, const char *pod, const char *uid)
{
	jfx_enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", pod, uid);
	jfx_push_pod(e->kube, pod, uid, "");
	jfx_push_pod(e->kube, pod, uid, MARKED_BY_US);
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
}

void jfx_deliver(struct env *e)
{
	fake_http_push(e->slack, 200, NULL, OK_POST);
	jfx_push_pod(e->kube, "train-1", "uid-1", MARKED_BY_US);
	jfx_push_pod(e->kube, "train-1", "uid-1", MARKED_BY_US);
	assert_int_equal(janitor_notice_step(e->j), 1);
}

void jfx_reply_is(struct env *e, const char *kind, const char *channel, const char *text)
{
	struct store_notice n = { 0 };

	assert_int_equal(store_notice_latest(e->st, "uid-1", kind, &n), ERR_OK);
	if (channel)
		assert_string_equal(n.channel, channel);
	assert_string_equal(n.thread_ts, "1794950000.000100");
	jfx_assert_contains(n.text, text);
	store_notice_release(&n);
}

void jfx_notice_state_is(struct env *e, const char *uid, const char *kind,
			 enum store_notice_state want)
{
	struct store_notice n = { 0 };

	assert_int_equal(store_notice_latest(e->st, uid, kind, &n), ERR_OK);
	assert_int_equal(n.state, want);
	store_notice_release(&n);
}

const char *jfx_metrics_text(struct env *e)
{
	static char text[16384];
	struct buf b = BUF_INIT;

	metrics_render(e->metrics, &b);
	snprintf(text, sizeof(text), "%s", buf_str(&b));
	buf_release(&b);
	return text;
}
