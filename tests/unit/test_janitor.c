/*
 * test_janitor.c - the janitor's worker, Slack outbox and sweeper against
 * two fake_http servers (the Kubernetes API and Slack) and a real sqlite
 * store, in virtual time: the exact requests of marking, unmarking,
 * notifying and acting, and every safety rule (notice before deletion,
 * uid preconditions, exclusions, dry-run, deletion budget).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "core/am.h"
#include "core/config.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/store.h"
#include "janitor/janitor.h"
#include "tests/unit/helpers/fake_http.h"

#define T0 INT64_C(1794960000000) /* 2026-11-18T00:00:00Z */
#define MIN (60 * 1000LL)
#define HOUR (60 * MIN)
#define POD_PATH "/api/v1/namespaces/ml-team/pods/train-1"
#define LIST_PATH "/api/v1/pods?limit=500"
#define OK_POST "{\"ok\":true,\"channel\":\"C0GPU\",\"ts\":\"1794960000.000100\"}"
#define MARKED_BY_US                                                                   \
	"\"janitor/expires\":\"2026-11-19T00:00:00Z\","                                \
	"\"janitor/marked-expires\":\"2026-11-19T00:00:00Z\","                         \
	"\"janitor/marked-at\":\"2026-11-18T00:00:00Z\","                              \
	"\"janitor/reason\":\"JanitorIdleGPUPod\""

struct env {
	struct fake_http *kube, *slack;
	struct config *cfg;
	struct store *st;
	struct metrics *metrics;
	struct kube_client *kc;
	struct slack_client *sc;
	struct janitor *j;
	int64_t now;
	struct buf rows;  /* "ns/pod=action;" per plan row */
	FILE *log;
	int leading;          /* what is_leader answers (env_opts.leader_hook) */
	size_t lose_after;    /* >0: is_leader turns 0 once the kube fake saw this many requests */
};

/* What a test changes of the environment; zero fields keep the defaults. */
struct env_opts {
	int leader_hook;         /* give the janitor is_leader() (env.leading) */
	int64_t kube_timeout_ms; /* real time: 0 means 5000 */
	int64_t slack_timeout_ms;
	int slack_attempts;      /* 0 means 1 */
};

static int64_t v_now(void *ctx)
{
	return ((struct env *)ctx)->now;
}

static void v_sleep(void *ctx, int64_t ms)
{
	((struct env *)ctx)->now += ms;
}

static size_t count_method(struct fake_http *f, const char *method)
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

static void env_start_with(struct env *e, int dry_run, const struct env_opts *o)
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
		 "janitor:\n  enabled: true\n  dry_run: %s\n  max_deletions_per_sweep: 2\n"
		 "  policies:\n"
		 "    - {alertname: JanitorIdleGPUPod, grace: 24h, notice_lead: 2h, "
		 "owned: scale-to-zero}\n"
		 "    - {alertname: JanitorPodPendingTooLong, grace: 6h, notice_lead: 1h}\n"
		 "  slack: {default_channel: \"#gpu-cluster\", owner_label: owner}\n",
		 dry_run ? "true" : "false");
	if (cfg_parse(yaml, strlen(yaml), "test.yml", NULL, &e->cfg, &err))
		fail_msg("cfg_parse: %s", buf_str(&err));
	assert_int_equal(store_open(":memory:", &e->st, &err), ERR_OK);
	e->metrics = metrics_new();
	kc.server = strdup(fake_http_url(e->kube));
	kc.token = strdup("t0k3n");
	kc.namespace = strdup("alertbridge");
	ko.now_ms = v_now;
	ko.sleep_ms = v_sleep;
	ko.clock_ctx = e;
	ko.timeout_ms = o->kube_timeout_ms ? o->kube_timeout_ms : 5000;
	e->kc = kube_client_new(&kc, &ko);
	so.api_url = fake_http_url(e->slack);
	so.bot_token = "xoxb-test";
	so.timeout_ms = o->slack_timeout_ms ? o->slack_timeout_ms : 5000;
	so.max_attempts = o->slack_attempts ? o->slack_attempts : 1;
	so.now_ms = v_now;
	so.sleep_ms = v_sleep;
	so.clock_ctx = e;
	e->sc = slack_client_new(&so);
	jo.cfg = e->cfg;
	jo.store = e->st;
	jo.kube = e->kc;
	jo.slack = e->sc;
	jo.metrics = e->metrics;
	jo.now_ms = v_now;
	jo.sleep_ms = v_sleep;
	jo.clock_ctx = e;
	e->leading = 1;
	if (o->leader_hook) {
		jo.is_leader = v_is_leader;
		jo.leader_ctx = e;
	}
	e->j = janitor_new(&jo);
	buf_init(&e->rows, 0);
	buf_release(&err);
}

static void env_start(struct env *e, int dry_run)
{
	struct env_opts o = { 0 };

	env_start_with(e, dry_run, &o);
}

static void env_stop(struct env *e)
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

static char *read_log(struct env *e)
{
	static char text[65536];
	size_t n;

	fflush(e->log);
	rewind(e->log);
	n = fread(text, 1, sizeof(text) - 1, e->log);
	text[n] = '\0';
	return text;
}

static void assert_contains(const char *hay, const char *needle)
{
	if (!hay || !strstr(hay, needle))
		fail_msg("\"%s\" does not contain \"%s\"", hay ? hay : "(null)", needle);
}

/* A pod object: annotations is the inside of the JSON object ("" for none). */
static char *pod_json(const char *name, const char *uid, const char *annotations,
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

static void push_pod(struct fake_http *f, const char *name, const char *uid,
		     const char *annotations)
{
	char *p = pod_json(name, uid, annotations, NULL, NULL);

	fake_http_push(f, 200, NULL, p);
	free(p);
}

/* A metadata-only list page of n pods (each a pod_json string, consumed). */
static void push_list(struct fake_http *f, char **pods, size_t n)
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

static void push_one(struct fake_http *f, const char *name, const char *uid, const char *ann)
{
	char *p = pod_json(name, uid, ann, NULL, NULL);

	push_list(f, &p, 1);
}

/* Queue one alert for pod ml-team/<pod> (or ns) as the intake would. */
static void enqueue(struct env *e, const char *status, const char *alertname, const char *ns,
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

/* A notice of uid already delivered at sent_at_ms, as the outbox records it. */
static void delivered_notice(struct env *e, const char *pod, const char *uid, int64_t expires_ms,
			     int64_t sent_at_ms)
{
	struct store_notice n = { 0 };

	n.namespace = (char *)"ml-team";
	n.pod = (char *)pod;
	n.uid = (char *)uid;
	n.kind = (char *)"notice";
	n.expires_ms = expires_ms;
	n.text = (char *)"notice";
	assert_int_equal(store_notice_add(e->st, &n, NULL), ERR_OK);
	assert_int_equal(store_notice_sent(e->st, n.id, sent_at_ms, "#gpu-cluster", "C0GPU",
					   "1794950000.000100"),
			 ERR_OK);
}

static const struct fake_request *req(struct fake_http *f, size_t i, const char *method,
				      const char *uri)
{
	const struct fake_request *r = fake_http_request(f, i);

	if (!r)
		fail_msg("no request %zu (want %s %s)", i, method, uri);
	assert_string_equal(r->method, method);
	assert_string_equal(r->uri, uri);
	return r;
}

static void body_is(const struct fake_request *r, const char *want)
{
	json_error_t je;
	json_t *got = json_loads(r->body, 0, &je), *w = json_loads(want, 0, &je);

	assert_non_null(w);
	if (!got || !json_equal(got, w))
		fail_msg("body %s\nwant %s", r->body, want);
	json_decref(got);
	json_decref(w);
}

static json_t *body_json(const struct fake_request *r)
{
	json_t *o = json_loads(r->body, 0, NULL);

	assert_non_null(o);
	return o;
}

/* Requests from the first-th on were all reads. */
static void no_mutation(struct fake_http *f, size_t first)
{
	for (size_t i = first; i < fake_http_count(f); i++)
		assert_string_equal(fake_http_request(f, i)->method, "GET");
}

static void collect_row(void *ctx, const struct janitor_plan_row *row)
{
	struct env *e = ctx;

	(void)buf_printf(&e->rows, "%s/%s=%s;", row->namespace, row->pod, row->action);
}

static void sweep(struct env *e, enum err want)
{
	struct buf err = BUF_INIT;

	buf_reset(&e->rows);
	assert_int_equal(janitor_sweep(e->j, collect_row, e, NULL, &err), want);
	buf_release(&err);
}

static const char *metrics_text(struct env *e)
{
	static char text[16384];
	struct buf b = BUF_INIT;

	metrics_render(e->metrics, &b);
	snprintf(text, sizeof(text), "%s", buf_str(&b));
	buf_release(&b);
	return text;
}

/* ---- the worker ---- */

static void firing_marks_pod_posts_event_and_queues_notice(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	json_t *ev;
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", "\"a/b\":\"1\"");
	push_pod(e.kube, "train-1", "uid-1", "\"a/b\":\"1\"," MARKED_BY_US);
	fake_http_push(e.kube, 201, NULL, "{\"kind\":\"Event\"}");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 3);
	req(e.kube, 0, "GET", POD_PATH);
	/* uid and resourceVersion of the GET: preconditions, so a stale attempt cannot land */
	body_is(req(e.kube, 1, "PATCH", POD_PATH),
		"{\"metadata\":{\"uid\":\"uid-1\",\"resourceVersion\":\"7\",\"annotations\":{"
		MARKED_BY_US "}}}");
	assert_string_equal(fake_request_header(fake_http_request(e.kube, 1), "content-type"),
			    "application/merge-patch+json");
	ev = body_json(req(e.kube, 2, "POST", "/api/v1/namespaces/ml-team/events"));
	assert_string_equal(json_string_value(json_object_get(ev, "reason")), "JanitorMarked");
	assert_string_equal(json_string_value(json_object_get(ev, "type")), "Normal");
	assert_string_equal(json_string_value(json_object_get(
				    json_object_get(ev, "involvedObject"), "uid")),
			    "uid-1");
	assert_contains(json_string_value(json_object_get(ev, "message")),
			"delete-pod at 2026-11-19T00:00:00Z");
	json_decref(ev);
	assert_int_equal(fake_http_count(e.slack), 0);  /* the outbox sends, not the worker */

	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_string_equal(n.state, "pending");
	assert_true(n.expires_ms == T0 + 24 * HOUR);
	assert_null(n.channel);
	assert_string_equal(n.text,
			    ":hourglass_flowing_sand: *Pod `ml-team/train-1` is marked for clean-up* "
			    "(JanitorIdleGPUPod)\n"
			    "*What:* the pod will be deleted in 1 day, at Thu, 19 Nov 2026 00:00:00 "
			    "UTC.\n"
			    "*Why:* GPU idle for 6h &amp; &lt;1% used\n"
			    "*To keep it:* `kubectl annotate pod -n ml-team train-1 "
			    "janitor/exempt=true`\n"
			    "*To snooze it:* `kubectl annotate pod -n ml-team train-1 --overwrite "
			    "janitor/expires=2026-11-20T00:00:00Z` (any later UTC time)\n");
	store_notice_release(&n);
	assert_int_equal(store_pending_count(e.st, "janitor"), 0);
	assert_contains(metrics_text(&e),
			"alertbridge_janitor_pods_total{action=\"marked\",reason=\"JanitorIdleGPUPod\"} 1");
	assert_contains(metrics_text(&e), "alertbridge_janitor_pod_expiry_timestamp_seconds"
					  "{namespace=\"ml-team\",pod=\"train-1\"} 1795046400");

	/* The same firing again (repeat_interval): nothing changes, no second notice. */
	e.now += HOUR;
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", "\"a/b\":\"1\"," MARKED_BY_US);
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 4);
	assert_int_equal(store_notice_pending_count(e.st), 1);
	env_stop(&e);
}

static void notice_delivered_then_pod_stamped(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	json_t *post;
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", "");
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);

	e.now = T0 + 1500;
	fake_http_push(e.slack, 200, NULL, OK_POST);
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	assert_int_equal(janitor_notice_step(e.j), 1);
	post = body_json(req(e.slack, 0, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(post, "channel")), "#gpu-cluster");
	assert_null(json_object_get(post, "thread_ts"));
	assert_contains(json_string_value(json_object_get(post, "text")), "marked for clean-up");
	json_decref(post);
	req(e.kube, 3, "GET", POD_PATH);
	body_is(req(e.kube, 4, "PATCH", POD_PATH),
		"{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/notified-at\":"
		"\"2026-11-18T00:00:02Z\"}}}");
	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_string_equal(n.state, "sent");
	assert_string_equal(n.slack_channel_id, "C0GPU");
	assert_string_equal(n.slack_ts, "1794960000.000100");
	store_notice_release(&n);
	assert_int_equal(janitor_notice_step(e.j), 0);
	assert_contains(metrics_text(&e), "alertbridge_janitor_notices_total{result=\"sent\"} 1");
	env_stop(&e);
}

static void slack_failure_no_stamp_no_deletion(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", "");
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);

	fake_http_push(e.slack, 200, NULL, "{\"ok\":false,\"error\":\"internal_error\"}");
	assert_int_equal(janitor_notice_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 3);  /* no notified-at */
	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_string_equal(n.state, "pending");
	assert_int_equal(n.attempts, 1);
	assert_string_equal(n.channel, "#gpu-cluster");
	assert_contains(n.last_error, "internal_error");
	assert_true(n.next_attempt_at_ms > e.now);
	store_notice_release(&n);
	assert_contains(metrics_text(&e), "alertbridge_janitor_notices_total{result=\"failed\"} 1");

	/* Long past the expiry, the sweeper still only waits for the notice. */
	e.now = T0 + 48 * HOUR;
	push_one(e.kube, "train-1", "uid-1", MARKED_BY_US);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=notice-pending;");
	assert_int_equal(fake_http_count(e.kube), 4);
	no_mutation(e.kube, 3);
	env_stop(&e);
}

static void uid_label_differs_pod_untouched(void **state)
{
	struct env e;
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-OLD");
	push_pod(e.kube, "train-1", "uid-1", "");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 1);
	assert_int_equal(store_notice_pending_count(e.st), 0);
	assert_contains(metrics_text(&e), "{action=\"skipped\",reason=\"uid-changed\"} 1");
	assert_contains(read_log(&e), "why=uid-changed");
	env_stop(&e);
}

static void excluded_and_exempt_untouched(void **state)
{
	struct env e;
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "kube-system", "coredns-1", NULL);
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 0);  /* exclusion wins: not even a GET */

	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	push_pod(e.kube, "train-1", "uid-1", "\"janitor/exempt\":\"true\"");
	assert_int_equal(janitor_step(e.j), 1);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	push_pod(e.kube, "train-1", "uid-1", "\"janitor/ttl\":\"forever\"");
	assert_int_equal(janitor_step(e.j), 1);
	enqueue(&e, "firing", "NoSuchPolicy", "ml-team", "train-1", NULL);
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 2);
	no_mutation(e.kube, 0);
	assert_int_equal(store_notice_pending_count(e.st), 0);
	assert_contains(metrics_text(&e), "{action=\"skipped\",reason=\"excluded\"} 1");
	assert_contains(metrics_text(&e), "{action=\"skipped\",reason=\"exempt\"} 1");
	assert_contains(metrics_text(&e), "{action=\"skipped\",reason=\"forever\"} 1");
	assert_contains(read_log(&e), "no janitor policy for this alert, pods left alone");
	env_stop(&e);
}

static void invalid_annotation_warning_event(void **state)
{
	struct env e;
	json_t *ev;
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	push_pod(e.kube, "train-1", "uid-1", "\"janitor/ttl\":\"5y\"");
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 2);
	ev = body_json(req(e.kube, 1, "POST", "/api/v1/namespaces/ml-team/events"));
	assert_string_equal(json_string_value(json_object_get(ev, "type")), "Warning");
	assert_string_equal(json_string_value(json_object_get(ev, "reason")),
			    "JanitorInvalidAnnotation");
	assert_contains(json_string_value(json_object_get(ev, "message")), "janitor/ttl \"5y\"");
	json_decref(ev);
	assert_contains(read_log(&e), "invalid janitor annotation, pod left alone");
	env_stop(&e);
}

static void resolved_unmarks_only_ours_and_replies(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	(void)state;

	env_start(&e, 0);
	delivered_notice(&e, "train-1", "uid-1", T0 + 24 * HOUR, T0 - HOUR);
	enqueue(&e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1",
		 MARKED_BY_US ",\"janitor/notified-at\":\"2026-11-17T23:00:00Z\","
		 "\"janitor/notify\":\"U0ALICE\",\"a/b\":\"1\"");
	push_pod(e.kube, "train-1", "uid-1", "");
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 3);
	body_is(req(e.kube, 1, "PATCH", POD_PATH),
		"{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/expires\":null,"
		"\"janitor/marked-at\":null,\"janitor/marked-expires\":null,"
		"\"janitor/notified-at\":null,\"janitor/reason\":null}}}");
	assert_contains(req(e.kube, 2, "POST", "/api/v1/namespaces/ml-team/events")->body,
			"\"JanitorUnmarked\"");
	assert_int_equal(store_notice_latest(e.st, "uid-1", "cancelled", &n), ERR_OK);
	assert_string_equal(n.channel, "C0GPU");
	assert_string_equal(n.thread_ts, "1794950000.000100");
	assert_contains(n.text, ":white_check_mark: *Never mind:* pod `ml-team/train-1` "
				"will not be deleted");
	store_notice_release(&n);

	/* A person moved janitor/expires: theirs now, it stays. */
	enqueue(&e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1",
		 "\"janitor/expires\":\"2026-12-01T00:00:00Z\","
		 "\"janitor/marked-expires\":\"2026-11-19T00:00:00Z\","
		 "\"janitor/marked-at\":\"2026-11-18T00:00:00Z\","
		 "\"janitor/reason\":\"JanitorIdleGPUPod\"");
	push_pod(e.kube, "train-1", "uid-1", "");
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);
	body_is(req(e.kube, 4, "PATCH", POD_PATH),
		"{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/marked-at\":null,"
		"\"janitor/marked-expires\":null,\"janitor/reason\":null}}}");

	/* Not marked by the janitor: nothing to undo. */
	enqueue(&e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", "\"janitor/expires\":\"2026-12-01T00:00:00Z\"");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 7);
	env_stop(&e);
}

static void kube_failure_retries_event(void **state)
{
	struct env e;
	struct store_event ev = { 0 };
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	fake_http_push(e.kube, 500, NULL, "{\"kind\":\"Status\",\"message\":\"etcd down\"}");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(store_pending_count(e.st, "janitor"), 1);
	assert_int_equal(janitor_step(e.j), 0);  /* not due yet */
	assert_int_equal(store_next_event(e.st, "janitor", INT64_MAX / 2, &ev), ERR_OK);
	assert_int_equal(ev.attempts, 1);
	assert_contains(ev.last_error, "etcd down");
	store_event_release(&ev);
	assert_contains(read_log(&e), "janitor event failed, will retry");
	env_stop(&e);
}

/* ---- the sweeper ---- */

#define DUE_ANN(notified)                                                             \
	"\"janitor/expires\":\"2026-11-17T23:59:00Z\",\"janitor/marked-at\":"          \
	"\"2026-11-16T23:59:00Z\",\"janitor/reason\":\"JanitorPodPendingTooLong\","   \
	"\"janitor/notified-at\":\"" notified "\""

static void not_deleted_before_notice_lead_then_deleted(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	(void)state;

	env_start(&e, 0);
	delivered_notice(&e, "train-1", "uid-1", T0 - MIN, T0 - 30 * MIN);
	push_one(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	sweep(&e, ERR_OK);
	/* 30 min (reminder_before: notice_lead / 2) before acting: the reminder */
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=remind;");
	assert_int_equal(fake_http_count(e.kube), 1);
	assert_string_equal(fake_request_header(fake_http_request(e.kube, 0), "accept"),
			    "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1");

	e.now = T0 + 30 * MIN - 1;  /* 1 ms before notified + 1h */
	push_one(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=wait;");

	e.now = T0 + 30 * MIN;
	push_one(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	push_pod(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T23:30:00Z"));
	fake_http_push(e.kube, 200, NULL, "{\"kind\":\"Pod\"}");
	fake_http_push(e.kube, 201, NULL, "{}");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=delete-pod;");
	req(e.kube, 3, "GET", POD_PATH);
	body_is(req(e.kube, 4, "DELETE", POD_PATH),
		"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		"\"Background\",\"preconditions\":{\"uid\":\"uid-1\"}}");
	assert_contains(req(e.kube, 5, "POST", "/api/v1/namespaces/ml-team/events")->body,
			"\"JanitorDeleted\"");
	assert_int_equal(store_notice_latest(e.st, "uid-1", "deleted", &n), ERR_OK);
	assert_string_equal(n.thread_ts, "1794950000.000100");
	assert_contains(n.text, ":wastebasket: Pod `ml-team/train-1` was deleted as announced");
	store_notice_release(&n);
	assert_contains(metrics_text(&e), "{action=\"deleted\",reason=\"JanitorPodPendingTooLong\"} 1");
	env_stop(&e);
}

/*
 * Reminders: one reply in the notice's thread reminder_before (default notice_lead / 2;
 * JanitorPodPendingTooLong: 1h / 2) ahead of the action, once per notice, recorded in the
 * outbox so a restart does not send it again; none without a delivered notice, none once
 * the mark is gone.
 */
#define REMIND_ANN                                                                    \
	"\"janitor/expires\":\"2026-11-18T02:00:00Z\",\"janitor/marked-at\":"          \
	"\"2026-11-17T20:00:00Z\",\"janitor/reason\":\"JanitorPodPendingTooLong\","   \
	"\"janitor/notified-at\":\"2026-11-17T23:00:00Z\""
#define REMIND_AT (T0 + 90 * MIN) /* act at T0 + 2h (janitor/expires), less 30 min */

static void reminder_once_in_the_notice_thread(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	struct janitor_options jo = { 0 };
	json_t *post;
	(void)state;

	env_start(&e, 0);
	delivered_notice(&e, "train-1", "uid-1", T0 + 2 * HOUR, T0 - HOUR);
	e.now = REMIND_AT - 1;
	push_one(e.kube, "train-1", "uid-1", REMIND_ANN);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=wait;");
	assert_int_equal(store_notice_latest(e.st, "uid-1", "reminder", &n), ERR_NOTFOUND);

	e.now = REMIND_AT;
	push_one(e.kube, "train-1", "uid-1", REMIND_ANN);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=remind;");
	no_mutation(e.kube, 0);
	assert_int_equal(store_notice_latest(e.st, "uid-1", "reminder", &n), ERR_OK);
	assert_string_equal(n.state, "pending");
	assert_string_equal(n.channel, "C0GPU");
	assert_string_equal(n.thread_ts, "1794950000.000100");
	assert_string_equal(n.text,
			    ":alarm_clock: *Reminder:* pod `ml-team/train-1` will be deleted in 30 "
			    "minutes, at Wed, 18 Nov 2026 02:00:00 UTC (JanitorPodPendingTooLong).\n"
			    "*To keep it:* `kubectl annotate pod -n ml-team train-1 "
			    "janitor/exempt=true`\n"
			    "*To snooze it:* `kubectl annotate pod -n ml-team train-1 --overwrite "
			    "janitor/expires=2026-11-18T08:00:00Z` (any later UTC time)\n");
	store_notice_release(&n);

	/* the next sweeps queue no second one */
	e.now = REMIND_AT + MIN;
	push_one(e.kube, "train-1", "uid-1", REMIND_ANN);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=wait;");
	assert_int_equal(store_notice_pending_count(e.st), 1);

	/* delivered as a reply in the notice's thread; the pod is not stamped again */
	fake_http_push(e.slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e.j), 1);
	post = body_json(req(e.slack, 0, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(post, "channel")), "C0GPU");
	assert_string_equal(json_string_value(json_object_get(post, "thread_ts")),
			    "1794950000.000100");
	assert_contains(json_string_value(json_object_get(post, "text")), ":alarm_clock:");
	json_decref(post);
	assert_int_equal(fake_http_count(e.kube), 3);  /* the three listings */

	/* a restart: the outbox remembers the reminder */
	janitor_free(e.j);
	jo.cfg = e.cfg;
	jo.store = e.st;
	jo.kube = e.kc;
	jo.slack = e.sc;
	jo.now_ms = v_now;
	jo.sleep_ms = v_sleep;
	jo.clock_ctx = &e;
	e.j = janitor_new(&jo);
	e.now = REMIND_AT + 2 * MIN;
	push_one(e.kube, "train-1", "uid-1", REMIND_ANN);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=wait;");
	assert_int_equal(store_notice_pending_count(e.st), 0);
	assert_int_equal(janitor_notice_step(e.j), 0);
	assert_int_equal(fake_http_count(e.slack), 1);
	env_stop(&e);
}

static void no_reminder_without_a_delivered_notice_or_a_mark(void **state)
{
	struct env e;
	struct store_notice n = { 0 }, r = { 0 };
	(void)state;

	env_start(&e, 0);
	/* janitor/notified-at by hand, the outbox's notice still pending: no reminder */
	n.namespace = (char *)"ml-team";
	n.pod = (char *)"train-1";
	n.uid = (char *)"uid-1";
	n.kind = (char *)"notice";
	n.expires_ms = T0 + 2 * HOUR;
	n.text = (char *)"notice";
	assert_int_equal(store_notice_add(e.st, &n, NULL), ERR_OK);
	e.now = REMIND_AT;
	push_one(e.kube, "train-1", "uid-1", REMIND_ANN);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=wait;");
	assert_int_equal(store_notice_latest(e.st, "uid-1", "reminder", &r), ERR_NOTFOUND);

	/* delivered: the reminder is queued, then the alert resolves before it went out */
	assert_int_equal(store_notice_sent(e.st, n.id, T0 - HOUR, "#gpu-cluster", "C0GPU",
					   "1794950000.000100"),
			 ERR_OK);
	push_one(e.kube, "train-1", "uid-1", REMIND_ANN);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=remind;");
	enqueue(&e, "resolved", "JanitorPodPendingTooLong", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", REMIND_ANN);
	push_pod(e.kube, "train-1", "uid-1", "");
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(store_notice_latest(e.st, "uid-1", "reminder", &r), ERR_OK);
	assert_string_equal(r.state, "dead");  /* cancelled: it never goes out */
	store_notice_release(&r);

	/* the mark is gone: later sweeps have nothing to remind of */
	e.now = REMIND_AT + 10 * MIN;
	push_one(e.kube, "train-1", "uid-1", "");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "");
	fake_http_push(e.slack, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e.j), 1);  /* the "cancelled" reply only */
	assert_int_equal(janitor_notice_step(e.j), 0);
	assert_int_equal(fake_http_count(e.slack), 1);
	assert_contains(fake_http_request(e.slack, 0)->body, "Never mind");
	env_stop(&e);
}

static void uid_changed_before_acting_untouched(void **state)
{
	struct env e;
	(void)state;

	env_start(&e, 0);
	delivered_notice(&e, "train-1", "uid-1", T0 - MIN, T0 - 3 * HOUR);
	push_one(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	push_pod(e.kube, "train-1", "uid-2", DUE_ANN("2026-11-17T21:00:00Z"));
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=skip:uid-changed;");
	assert_int_equal(fake_http_count(e.kube), 2);
	no_mutation(e.kube, 0);
	env_stop(&e);
}

static void annotation_without_delivered_notice_notifies_first(void **state)
{
	struct env e;
	(void)state;

	env_start(&e, 0);
	/* notified-at set by hand, nothing in the outbox: tell the owner first. */
	push_one(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	push_pod(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=notify;");
	no_mutation(e.kube, 0);
	assert_int_equal(store_notice_pending_count(e.st), 1);
	env_stop(&e);
}

static void user_ttl_notice_first_delete_after_lead(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	(void)state;

	env_start(&e, 0);
	/* Created 2026-11-16, ttl 1h: long expired, but no notice yet. */
	push_one(e.kube, "train-1", "uid-1", "\"janitor/ttl\":\"1h\"");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=notify;");
	assert_int_equal(fake_http_count(e.kube), 1);
	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_contains(n.text, "(janitor/ttl)");
	/* Long expired: the notice announces now + notice_lead (2h), not the past. */
	assert_contains(n.text, "will be deleted in 2 hours, at Wed, 18 Nov 2026 02:00:00 UTC");
	store_notice_release(&n);

	/* The next sweep does not queue it twice. */
	push_one(e.kube, "train-1", "uid-1", "\"janitor/ttl\":\"1h\"");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=notice-pending;");

	fake_http_push(e.slack, 200, NULL, OK_POST);
	push_pod(e.kube, "train-1", "uid-1", "\"janitor/ttl\":\"1h\"");
	push_pod(e.kube, "train-1", "uid-1", "");
	assert_int_equal(janitor_notice_step(e.j), 1);
	body_is(req(e.kube, 3, "PATCH", POD_PATH),
		"{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/notified-at\":"
		"\"2026-11-18T00:00:00Z\"}}}");

	/* First policy's notice_lead (2h): wait (reminding 1h before), then act. */
	e.now = T0 + 2 * HOUR - 1000;
	push_one(e.kube, "train-1", "uid-1",
		 "\"janitor/ttl\":\"1h\",\"janitor/notified-at\":\"2026-11-18T00:00:00Z\"");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=remind;");
	e.now = T0 + 2 * HOUR;
	push_one(e.kube, "train-1", "uid-1",
		 "\"janitor/ttl\":\"1h\",\"janitor/notified-at\":\"2026-11-18T00:00:00Z\"");
	push_pod(e.kube, "train-1", "uid-1",
		 "\"janitor/ttl\":\"1h\",\"janitor/notified-at\":\"2026-11-18T00:00:00Z\"");
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=delete-pod;");
	req(e.kube, 7, "DELETE", POD_PATH);
	env_stop(&e);
}

static void dry_run_makes_no_mutating_request(void **state)
{
	struct env e;
	(void)state;

	env_start(&e, 1);
	assert_true(janitor_dry_run(e.j));
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", "");
	assert_int_equal(janitor_step(e.j), 1);
	enqueue(&e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	assert_int_equal(janitor_step(e.j), 1);
	push_one(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	push_pod(e.kube, "train-1", "uid-1", DUE_ANN("2026-11-17T21:00:00Z"));
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=delete-pod;");
	push_one(e.kube, "train-1", "uid-1", "\"janitor/ttl\":\"1h\"");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=notify;");
	assert_int_equal(fake_http_count(e.kube), 5);
	no_mutation(e.kube, 0);
	assert_int_equal(fake_http_count(e.slack), 0);
	assert_int_equal(store_notice_pending_count(e.st), 0);
	assert_int_equal(janitor_notice_step(e.j), 0);
	assert_contains(read_log(&e), "dry-run: would patch pod annotations");
	assert_contains(read_log(&e), "dry-run: would send slack notice");
	assert_contains(read_log(&e), "dry-run: would act on pod");
	env_stop(&e);
}

static void deployment_owned_is_scaled_not_deleted(void **state)
{
	struct env e;
	char *p;
	(void)state;

	env_start(&e, 0);
	delivered_notice(&e, "train-1", "uid-1", T0 - MIN, T0 - 3 * HOUR);
#define GPU_DUE                                                                       \
	"\"janitor/expires\":\"2026-11-17T23:59:00Z\",\"janitor/marked-at\":"          \
	"\"2026-11-16T23:59:00Z\",\"janitor/reason\":\"JanitorIdleGPUPod\","          \
	"\"janitor/notified-at\":\"2026-11-17T21:00:00Z\""
	p = pod_json("train-1", "uid-1", GPU_DUE, "ReplicaSet", "train-7d9f");
	push_list(e.kube, &p, 1);
	p = pod_json("train-1", "uid-1", GPU_DUE, "ReplicaSet", "train-7d9f");
	fake_http_push(e.kube, 200, NULL, p);
	free(p);
	fake_http_push(e.kube, 200, NULL,
		       "{\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"train-7d9f\",\"uid\":"
		       "\"owner-uid\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
		       "\"Deployment\",\"name\":\"train\",\"uid\":\"dep-uid\",\"controller\":true}]}}");
	fake_http_push(e.kube, 200, NULL, "{\"kind\":\"Scale\"}");
	fake_http_push(e.kube, 201, NULL, "{}");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=scale-to-zero;");
	req(e.kube, 2, "GET", "/apis/apps/v1/namespaces/ml-team/replicasets/train-7d9f");
	body_is(req(e.kube, 3, "PATCH", "/apis/apps/v1/namespaces/ml-team/deployments/train/scale"),
		"{\"spec\":{\"replicas\":0}}");
	assert_contains(req(e.kube, 4, "POST", "/api/v1/namespaces/ml-team/events")->body,
			"\"JanitorScaled\"");
	for (size_t i = 0; i < fake_http_count(e.kube); i++)
		assert_string_not_equal(fake_http_request(e.kube, i)->method, "DELETE");
	assert_contains(metrics_text(&e), "{action=\"scaled\",reason=\"JanitorIdleGPUPod\"} 1");
	env_stop(&e);
}

static void max_deletions_per_sweep_bounds_harm(void **state)
{
	struct env e;
	char *pods[3];
	const char *names[] = { "a", "b", "c" }, *uids[] = { "u-a", "u-b", "u-c" };
	size_t deletes = 0;
	(void)state;

	env_start(&e, 0);
	for (int i = 0; i < 3; i++) {
		delivered_notice(&e, names[i], uids[i], T0 - MIN, T0 - 3 * HOUR);
		pods[i] = pod_json(names[i], uids[i], DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	}
	push_list(e.kube, pods, 3);
	for (int i = 0; i < 2; i++) {
		push_pod(e.kube, names[i], uids[i], DUE_ANN("2026-11-17T21:00:00Z"));
		fake_http_push(e.kube, 200, NULL, "{}");
		fake_http_push(e.kube, 201, NULL, "{}");
	}
	push_pod(e.kube, "c", "u-c", DUE_ANN("2026-11-17T21:00:00Z"));
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows),
			    "ml-team/a=delete-pod;ml-team/b=delete-pod;ml-team/c=deferred;");
	for (size_t i = 0; i < fake_http_count(e.kube); i++)
		deletes += !strcmp(fake_http_request(e.kube, i)->method, "DELETE");
	assert_int_equal(deletes, 2);
	assert_contains(read_log(&e), "max_deletions_per_sweep reached");
	env_stop(&e);
}

static void one_pods_error_does_not_stop_the_sweep(void **state)
{
	struct env e;
	char *pods[2];
	struct janitor_sweep_stats stats;
	struct buf err = BUF_INIT;
	(void)state;

	env_start(&e, 0);
	delivered_notice(&e, "a", "u-a", T0 - MIN, T0 - 3 * HOUR);
	delivered_notice(&e, "b", "u-b", T0 - MIN, T0 - 3 * HOUR);
	pods[0] = pod_json("a", "u-a", DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	pods[1] = pod_json("b", "u-b", DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	push_list(e.kube, pods, 2);
	fake_http_push(e.kube, 500, NULL, "{\"kind\":\"Status\",\"message\":\"boom\"}");
	push_pod(e.kube, "b", "u-b", DUE_ANN("2026-11-17T21:00:00Z"));
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_sweep(e.j, collect_row, &e, &stats, &err), ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/a=error;ml-team/b=delete-pod;");
	assert_int_equal(stats.errors, 1);
	assert_int_equal(stats.acted, 1);
	assert_int_equal(stats.pods, 2);
	req(e.kube, 3, "DELETE", "/api/v1/namespaces/ml-team/pods/b");
	assert_contains(read_log(&e), "cannot act on pod, the sweep goes on");
	buf_release(&err);
	env_stop(&e);
}

static void conflict_and_gone_are_skipped(void **state)
{
	struct env e;
	char *pods[2];
	(void)state;

	env_start(&e, 0);
	delivered_notice(&e, "a", "u-a", T0 - MIN, T0 - 3 * HOUR);
	delivered_notice(&e, "b", "u-b", T0 - MIN, T0 - 3 * HOUR);
	pods[0] = pod_json("a", "u-a", DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	pods[1] = pod_json("b", "u-b", DUE_ANN("2026-11-17T21:00:00Z"), NULL, NULL);
	push_list(e.kube, pods, 2);
	push_pod(e.kube, "a", "u-a", DUE_ANN("2026-11-17T21:00:00Z"));
	fake_http_push(e.kube, 409, NULL, "{\"kind\":\"Status\",\"reason\":\"Conflict\"}");
	fake_http_push(e.kube, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/a=changed;ml-team/b=skip:gone;");
	assert_int_equal(fake_http_count(e.kube), 4);
	env_stop(&e);
}

static void listing_failure_is_returned(void **state)
{
	struct env e;
	struct buf err = BUF_INIT;
	(void)state;

	env_start(&e, 0);
	fake_http_push(e.kube, 403, NULL, "{\"kind\":\"Status\",\"message\":\"pods is forbidden\"}");
	assert_int_equal(janitor_sweep(e.j, NULL, NULL, NULL, &err), ERR_AUTH);
	assert_contains(buf_str(&err), "pods is forbidden");
	assert_contains(read_log(&e), "sweep stopped");
	buf_release(&err);
	env_stop(&e);
}

static void channel_not_found_falls_back_once_then_dead(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	json_t *post;
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	push_pod(e.kube, "train-1", "uid-1", "\"janitor/notify\":\"#gone\"");
	push_pod(e.kube, "train-1", "uid-1", "");
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);

	fake_http_push(e.slack, 200, NULL, "{\"ok\":false,\"error\":\"channel_not_found\"}");
	assert_int_equal(janitor_notice_step(e.j), 1);
	post = body_json(req(e.slack, 0, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(post, "channel")), "#gone");
	json_decref(post);
	assert_contains(read_log(&e), "falling back to the default channel");

	fake_http_push(e.slack, 200, NULL, "{\"ok\":false,\"error\":\"channel_not_found\"}");
	assert_int_equal(janitor_notice_step(e.j), 1);
	post = body_json(req(e.slack, 1, "POST", "/chat.postMessage"));
	assert_string_equal(json_string_value(json_object_get(post, "channel")), "#gpu-cluster");
	json_decref(post);
	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_string_equal(n.state, "dead");
	store_notice_release(&n);
	assert_int_equal(janitor_notice_step(e.j), 0);
	assert_int_equal(fake_http_count(e.kube), 3);  /* never stamped */
	env_stop(&e);
}

static void gauge_removed_when_unmarked(void **state)
{
	struct env e;
	(void)state;

	env_start(&e, 0);
	push_one(e.kube, "train-1", "uid-1", MARKED_BY_US);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=wait;");
	assert_contains(metrics_text(&e), "pod=\"train-1\"} 1795046400");
	enqueue(&e, "resolved", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	push_pod(e.kube, "train-1", "uid-1", "");
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);
	assert_null(strstr(metrics_text(&e), "pod=\"train-1\"} 1795046400"));
	env_stop(&e);
}

/* ---- faults (issue 4, item 8): every rule holds under each of them ---- */

#define STATUS_409 "{\"kind\":\"Status\",\"reason\":\"Conflict\",\"code\":409,\"message\":" \
		   "\"Precondition failed: UID in precondition\"}"
#define DUE DUE_ANN("2026-11-17T21:00:00Z")

/* n due pods p0, p1, ... (uids u-p0, ...) with notices delivered 3h ago, listed on one page. */
static void due_pods(struct env *e, int n)
{
	char *pods[4], name[16], uid[16];

	assert_true(n <= 4);
	for (int i = 0; i < n; i++) {
		snprintf(name, sizeof(name), "p%d", i);
		snprintf(uid, sizeof(uid), "u-p%d", i);
		delivered_notice(e, name, uid, T0 - MIN, T0 - 3 * HOUR);
		pods[i] = pod_json(name, uid, DUE, NULL, NULL);
	}
	push_list(e->kube, pods, (size_t)n);
}

/* A list page with a continue token (NULL: the last page). */
static void push_page(struct fake_http *f, const char *name, const char *uid, const char *cont)
{
	char *p = pod_json(name, uid, DUE, NULL, NULL);
	struct buf b = BUF_INIT;

	(void)buf_printf(&b, "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":"
			 "\"meta.k8s.io/v1\",\"metadata\":{\"continue\":\"%s\"},\"items\":[%s]}",
			 cont ? cont : "", p);
	fake_http_push(f, 200, NULL, buf_str(&b));
	buf_release(&b);
	free(p);
}

static void lease_lost_mid_sweep_stops_before_the_next_write(void **state)
{
	struct env e;
	struct env_opts o = { .leader_hook = 1 };
	struct buf err = BUF_INIT;
	(void)state;

	env_start_with(&e, 0, &o);
	due_pods(&e, 3);
	push_pod(e.kube, "p0", "u-p0", DUE);
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	push_pod(e.kube, "p1", "u-p1", DUE);
	/* Lost while p1 is looked at: after its fresh GET, before its DELETE. */
	e.lose_after = 5;
	buf_reset(&e.rows);
	assert_int_equal(janitor_sweep(e.j, collect_row, &e, NULL, &err), ERR_CONFLICT);
	assert_contains(buf_str(&err), "the Lease was lost mid-sweep");
	assert_string_equal(buf_str(&e.rows), "ml-team/p0=delete-pod;ml-team/p1=stopped;");
	assert_int_equal(fake_http_count(e.kube), 5);
	assert_int_equal(count_method(e.kube, "DELETE"), 1);
	req(e.kube, 2, "DELETE", "/api/v1/namespaces/ml-team/pods/p0");
	assert_contains(read_log(&e), "sweep stopped");

	/* Lost between two pods: not even a GET of the next one. */
	buf_reset(&err);
	e.leading = 1;
	due_pods(&e, 2);
	e.lose_after = fake_http_count(e.kube) + 1;
	buf_reset(&e.rows);
	assert_int_equal(janitor_sweep(e.j, collect_row, &e, NULL, &err), ERR_CONFLICT);
	assert_string_equal(buf_str(&e.rows), "");
	assert_int_equal(fake_http_count(e.kube), 6);

	/* Leading again: the rest is done, nothing lost. */
	e.leading = 1;
	e.lose_after = 0;
	due_pods(&e, 3);
	push_pod(e.kube, "p0", "u-p0", DUE);   /* the first DELETE is still pending */
	fake_http_push(e.kube, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
	push_pod(e.kube, "p1", "u-p1", DUE);
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	push_pod(e.kube, "p2", "u-p2", DUE);
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows),
			    "ml-team/p0=skip:gone;ml-team/p1=delete-pod;ml-team/p2=delete-pod;");
	assert_int_equal(count_method(e.kube, "DELETE"), 4);
	buf_release(&err);
	env_stop(&e);
}

static void lease_lost_mid_step_sends_no_patch_then_marks(void **state)
{
	struct env e;
	struct env_opts o = { .leader_hook = 1 };
	(void)state;

	env_start_with(&e, 0, &o);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", "");
	e.lose_after = 1;  /* lost once the pod was read */
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 1);
	no_mutation(e.kube, 0);
	assert_int_equal(store_pending_count(e.st, "janitor"), 1);
	assert_contains(read_log(&e), "not the leader (the Lease is lost): mark patch");

	e.leading = 1;
	e.lose_after = 0;
	e.now += HOUR;
	push_pod(e.kube, "train-1", "uid-1", "");
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);
	req(e.kube, 2, "PATCH", POD_PATH);
	assert_int_equal(store_pending_count(e.st, "janitor"), 0);
	assert_int_equal(store_notice_pending_count(e.st), 1);
	env_stop(&e);
}

/* Mark train-1 (uid-1) through the worker: 3 Kubernetes answers. */
static void mark_train(struct env *e)
{
	enqueue(e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e->kube, "train-1", "uid-1", "");
	push_pod(e->kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e->kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e->j), 1);
}

static void slack_outage_and_bad_token_never_lose_the_notice(void **state)
{
	static const char *const answers[] = {
		"{\"ok\":false,\"error\":\"invalid_auth\"}",
		"{\"ok\":false,\"error\":\"ratelimited\"}",
		"{\"ok\":false,\"error\":\"service_unavailable\"}",
		"{\"ok\":false,\"error\":\"token_revoked\"}",
	};
	struct env e;
	struct store_notice n = { 0 };
	(void)state;

	env_start(&e, 0);
	mark_train(&e);
	/* More failures than JANITOR_NOTICE_MAX_ATTEMPTS, over hours: never dead. */
	for (int i = 0; i < JANITOR_NOTICE_MAX_ATTEMPTS + 2; i++) {
		if (i % 4 == 1)
			fake_http_push(e.slack, 429, "Retry-After: 120", answers[1]);
		else
			fake_http_push(e.slack, i % 4 == 2 ? 503 : 200, NULL, answers[i % 4]);
		assert_int_equal(janitor_notice_step(e.j), 1);
		assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
		assert_string_equal(n.state, "pending");
		assert_int_equal(n.attempts, i + 1);
		store_notice_release(&n);
		e.now += 11 * MIN;  /* past the capped backoff (10 min) */
	}
	assert_int_equal(fake_http_count(e.slack), JANITOR_NOTICE_MAX_ATTEMPTS + 2);
	assert_contains(read_log(&e), "slack rejected the token, the message waits for a valid one");
	assert_null(strstr(metrics_text(&e), "result=\"dead\""));
	assert_contains(metrics_text(&e), "alertbridge_janitor_notices_total{result=\"failed\"} 12");

	/* Meanwhile the pod's time ran out: the sweeper waits for the notice. */
	e.now = T0 + 48 * HOUR;
	push_one(e.kube, "train-1", "uid-1", MARKED_BY_US);
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=notice-pending;");
	no_mutation(e.kube, 3);

	/* The fault clears: delivered once, then stamped. */
	fake_http_push(e.slack, 200, NULL, OK_POST);
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	assert_int_equal(janitor_notice_step(e.j), 1);
	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_string_equal(n.state, "sent");
	store_notice_release(&n);
	req(e.kube, 5, "PATCH", POD_PATH);
	assert_int_equal(janitor_notice_step(e.j), 0);
	env_stop(&e);
}

static void slack_rejecting_the_message_still_gives_up(void **state)
{
	struct env e;
	struct store_notice n = { 0 };
	(void)state;

	env_start(&e, 0);
	mark_train(&e);
	for (int i = 0; i < JANITOR_NOTICE_MAX_ATTEMPTS; i++) {
		fake_http_push(e.slack, 200, NULL, "{\"ok\":false,\"error\":\"not_in_channel\"}");
		assert_int_equal(janitor_notice_step(e.j), 1);
		e.now += 11 * MIN;
	}
	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_string_equal(n.state, "dead");
	assert_contains(n.last_error, "not_in_channel");
	store_notice_release(&n);
	assert_int_equal(janitor_notice_step(e.j), 0);
	assert_contains(read_log(&e), "slack message given up");
	assert_int_equal(fake_http_count(e.kube), 3);  /* never stamped */
	env_stop(&e);
}

static void slack_timeout_retried_then_delivered(void **state)
{
	struct env e;
	struct env_opts o = { .slack_timeout_ms = 200 };
	struct store_notice n = { 0 };
	(void)state;

	env_start_with(&e, 0, &o);
	mark_train(&e);
	fake_http_push_delayed(e.slack, 700, 200, NULL, OK_POST);
	assert_int_equal(janitor_notice_step(e.j), 1);
	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_string_equal(n.state, "pending");
	assert_int_equal(n.attempts, 1);
	store_notice_release(&n);
	assert_int_equal(fake_http_count(e.kube), 3);  /* no stamp without an answer */
	assert_contains(read_log(&e), "slack message failed, will retry");

	e.now += 11 * MIN;
	fake_http_push(e.slack, 200, NULL, OK_POST);
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	assert_int_equal(janitor_notice_step(e.j), 1);
	assert_int_equal(store_notice_latest(e.st, "uid-1", "notice", &n), ERR_OK);
	assert_string_equal(n.state, "sent");
	store_notice_release(&n);
	req(e.kube, 4, "PATCH", POD_PATH);
	env_stop(&e);
}

static void conflict_on_mark_patch_retries_and_never_marks_another_uid(void **state)
{
	struct env e;
	json_t *b;
	(void)state;

	env_start(&e, 0);
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", "uid-1");
	push_pod(e.kube, "train-1", "uid-1", "");
	fake_http_push(e.kube, 409, NULL, STATUS_409);  /* recreated between GET and PATCH */
	assert_int_equal(janitor_step(e.j), 1);
	b = body_json(req(e.kube, 1, "PATCH", POD_PATH));
	/* The patch names the pod it read: the API server applies it to that pod only. */
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "metadata"),
							      "uid")), "uid-1");
	json_decref(b);
	assert_int_equal(store_pending_count(e.st, "janitor"), 1);
	assert_int_equal(store_notice_pending_count(e.st), 0);
	assert_contains(read_log(&e), "janitor event failed, will retry");

	e.now += HOUR;
	push_pod(e.kube, "train-1", "uid-2", "");
	assert_int_equal(janitor_step(e.j), 1);
	assert_int_equal(fake_http_count(e.kube), 3);
	assert_int_equal(count_method(e.kube, "PATCH"), 1);
	assert_int_equal(store_pending_count(e.st, "janitor"), 0);
	assert_contains(metrics_text(&e), "{action=\"skipped\",reason=\"uid-changed\"} 1");

	/* Without a uid label the alert is about the name: the retry marks the new pod. */
	enqueue(&e, "firing", "JanitorIdleGPUPod", "ml-team", "train-1", NULL);
	push_pod(e.kube, "train-1", "uid-1", "");
	fake_http_push(e.kube, 409, NULL, STATUS_409);
	assert_int_equal(janitor_step(e.j), 1);
	e.now += HOUR;
	push_pod(e.kube, "train-1", "uid-2", "");
	push_pod(e.kube, "train-1", "uid-2", MARKED_BY_US);
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_step(e.j), 1);
	b = body_json(req(e.kube, 6, "PATCH", POD_PATH));
	assert_string_equal(json_string_value(json_object_get(json_object_get(b, "metadata"),
							      "uid")), "uid-2");
	json_decref(b);
	assert_int_equal(store_notice_pending_count(e.st), 1);
	env_stop(&e);
}

static void conflict_on_stamp_is_retried_by_the_sweeper(void **state)
{
	struct env e;
	char *p;
	(void)state;

	env_start(&e, 0);
	mark_train(&e);
	fake_http_push(e.slack, 200, NULL, OK_POST);
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e.kube, 409, NULL, STATUS_409);
	assert_int_equal(janitor_notice_step(e.j), 1);
	assert_contains(read_log(&e), "cannot stamp janitor/notified-at, the sweeper will retry");

	/* Past the expiry the sweeper stamps it (the notice was delivered), then acts later. */
	e.now = T0 + 25 * HOUR;
	p = pod_json("train-1", "uid-1", MARKED_BY_US, NULL, NULL);
	push_list(e.kube, &p, 1);
	push_pod(e.kube, "train-1", "uid-1", MARKED_BY_US);
	fake_http_push(e.kube, 200, NULL, "{}");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows), "ml-team/train-1=notified;");
	body_is(req(e.kube, 7, "PATCH", POD_PATH),
		"{\"metadata\":{\"uid\":\"uid-1\",\"annotations\":{\"janitor/notified-at\":"
		"\"2026-11-18T00:00:00Z\"}}}");
	assert_int_equal(count_method(e.kube, "DELETE"), 0);
	env_stop(&e);
}

static void expired_continue_token_restarts_without_acting_twice(void **state)
{
	struct env e;
	struct janitor_sweep_stats stats;
	struct buf err = BUF_INIT;
	(void)state;

	env_start(&e, 0);
	delivered_notice(&e, "a", "u-a", T0 - MIN, T0 - 3 * HOUR);
	delivered_notice(&e, "b", "u-b", T0 - MIN, T0 - 3 * HOUR);
	push_page(e.kube, "a", "u-a", "tok1");
	push_pod(e.kube, "a", "u-a", DUE);
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	fake_http_push(e.kube, 410, NULL, "{\"kind\":\"Status\",\"reason\":\"Expired\",\"code\":410,"
				     "\"message\":\"The provided continue parameter is too old\"}");
	push_page(e.kube, "a", "u-a", "tok2");  /* the listing starts over: a again */
	fake_http_push(e.kube, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
	push_page(e.kube, "b", "u-b", NULL);
	push_pod(e.kube, "b", "u-b", DUE);
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	assert_int_equal(janitor_sweep(e.j, collect_row, &e, &stats, &err), ERR_OK);
	assert_string_equal(buf_str(&e.rows),
			    "ml-team/a=delete-pod;ml-team/a=skip:gone;ml-team/b=delete-pod;");
	req(e.kube, 4, "GET", "/api/v1/pods?limit=500&continue=tok1");
	req(e.kube, 5, "GET", LIST_PATH);
	assert_int_equal(count_method(e.kube, "DELETE"), 2);
	req(e.kube, 2, "DELETE", "/api/v1/namespaces/ml-team/pods/a");
	req(e.kube, 9, "DELETE", "/api/v1/namespaces/ml-team/pods/b");
	assert_int_equal(stats.acted, 2);
	assert_int_equal(stats.errors, 0);
	assert_contains(read_log(&e), "pod listing expired, restarting");
	buf_release(&err);
	env_stop(&e);
}

static void server_error_and_timeout_do_not_stop_the_sweep(void **state)
{
	struct env e;
	struct env_opts o = { .kube_timeout_ms = 300 };
	struct janitor_sweep_stats stats;
	struct buf err = BUF_INIT;
	(void)state;

	env_start_with(&e, 0, &o);
	due_pods(&e, 3);
	fake_http_push(e.kube, 500, NULL, "{\"kind\":\"Status\",\"message\":\"etcd timeout\"}");
	push_pod(e.kube, "p1", "u-p1", DUE);
	fake_http_push_delayed(e.kube, 900, 200, NULL, "{}");  /* past the client's 300 ms */
	push_pod(e.kube, "p2", "u-p2", DUE);
	fake_http_push(e.kube, 409, NULL, STATUS_409);
	assert_int_equal(janitor_sweep(e.j, collect_row, &e, &stats, &err), ERR_OK);
	assert_string_equal(buf_str(&e.rows),
			    "ml-team/p0=error;ml-team/p1=error;ml-team/p2=changed;");
	assert_int_equal(stats.errors, 2);
	assert_int_equal(stats.pods, 3);
	assert_contains(read_log(&e), "cannot act on pod, the sweep goes on");
	assert_contains(read_log(&e), "etcd timeout");

	/* The API recovers: what was left is done, each pod once. */
	due_pods(&e, 3);
	push_pod(e.kube, "p0", "u-p0", DUE);
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	fake_http_push(e.kube, 404, NULL, "{\"kind\":\"Status\",\"reason\":\"NotFound\"}");
	push_pod(e.kube, "p2", "u-p2", DUE);
	fake_http_push(e.kube, 200, NULL, "{}");
	fake_http_push(e.kube, 201, NULL, "{}");
	sweep(&e, ERR_OK);
	assert_string_equal(buf_str(&e.rows),
			    "ml-team/p0=delete-pod;ml-team/p1=skip:gone;ml-team/p2=delete-pod;");
	buf_release(&err);
	env_stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(firing_marks_pod_posts_event_and_queues_notice),
		cmocka_unit_test(notice_delivered_then_pod_stamped),
		cmocka_unit_test(slack_failure_no_stamp_no_deletion),
		cmocka_unit_test(uid_label_differs_pod_untouched),
		cmocka_unit_test(excluded_and_exempt_untouched),
		cmocka_unit_test(invalid_annotation_warning_event),
		cmocka_unit_test(resolved_unmarks_only_ours_and_replies),
		cmocka_unit_test(kube_failure_retries_event),
		cmocka_unit_test(not_deleted_before_notice_lead_then_deleted),
		cmocka_unit_test(reminder_once_in_the_notice_thread),
		cmocka_unit_test(no_reminder_without_a_delivered_notice_or_a_mark),
		cmocka_unit_test(uid_changed_before_acting_untouched),
		cmocka_unit_test(annotation_without_delivered_notice_notifies_first),
		cmocka_unit_test(user_ttl_notice_first_delete_after_lead),
		cmocka_unit_test(dry_run_makes_no_mutating_request),
		cmocka_unit_test(deployment_owned_is_scaled_not_deleted),
		cmocka_unit_test(max_deletions_per_sweep_bounds_harm),
		cmocka_unit_test(one_pods_error_does_not_stop_the_sweep),
		cmocka_unit_test(conflict_and_gone_are_skipped),
		cmocka_unit_test(listing_failure_is_returned),
		cmocka_unit_test(channel_not_found_falls_back_once_then_dead),
		cmocka_unit_test(gauge_removed_when_unmarked),
		cmocka_unit_test(lease_lost_mid_sweep_stops_before_the_next_write),
		cmocka_unit_test(lease_lost_mid_step_sends_no_patch_then_marks),
		cmocka_unit_test(slack_outage_and_bad_token_never_lose_the_notice),
		cmocka_unit_test(slack_rejecting_the_message_still_gives_up),
		cmocka_unit_test(slack_timeout_retried_then_delivered),
		cmocka_unit_test(conflict_on_mark_patch_retries_and_never_marks_another_uid),
		cmocka_unit_test(conflict_on_stamp_is_retried_by_the_sweeper),
		cmocka_unit_test(expired_continue_token_restarts_without_acting_twice),
		cmocka_unit_test(server_error_and_timeout_do_not_stop_the_sweep),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
