/*
 * test_kube.c - the Kubernetes client against fake_http in virtual time:
 * exact method, path, query, headers and JSON body of every call, paging
 * with 410 restarts, Status error mapping, Retry-After, malformed answers,
 * owner resolution, leases, and token-file rotation (in-cluster).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <jansson.h>

#include "core/log.h"
#include "janitor/kube.h"
#include "tests/unit/helpers/fake_http.h"

#define T0 1714564800000LL /* 2024-05-01T12:00:00Z */
#define META "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

struct fixture {
	struct fake_http *fake;
	struct kube_client *kc;
	int64_t now;
	int64_t slept;
	int nsleeps;
	struct buf err;
	struct kube_pod pod;
	char dir[64];  /* temp dir for token files, "" when unused */
	char body[65536];
};

static int64_t v_now(void *ctx)
{
	return ((struct fixture *)ctx)->now;
}

static void v_sleep(void *ctx, int64_t ms)
{
	struct fixture *fx = ctx;
	assert_true(ms > 0);
	assert_true(fx->nsleeps < 16);
	fx->nsleeps++;
	fx->slept += ms;
	fx->now += ms;
}

static struct kube_client *new_client(struct fixture *fx, struct kube_config *cfg)
{
	struct kube_options o = { 0 };

	o.now_ms = v_now;
	o.sleep_ms = v_sleep;
	o.clock_ctx = fx;
	o.timeout_ms = 2000;
	return kube_client_new(cfg, &o);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	struct kube_config cfg = KUBE_CONFIG_INIT;

	log_setup(LOG_ERROR, LOG_LOGFMT);
	fx->fake = fake_http_start();
	fx->now = T0;
	buf_init(&fx->err, 0);
	cfg.server = strdup(fake_http_url(fx->fake));
	cfg.token = strdup("t0k3n");
	cfg.namespace = strdup("ml-team");
	fx->kc = new_client(fx, &cfg);
	assert_null(cfg.server); /* moved */
	*state = fx;
	return 0;
}

static void rm_dir(const char *dir)
{
	char p[128];
	const char *names[] = { "token", "ca.crt", "namespace" };

	for (size_t i = 0; i < 3; i++) {
		snprintf(p, sizeof(p), "%s/%s", dir, names[i]);
		unlink(p);
	}
	rmdir(dir);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	kube_pod_release(&fx->pod);
	kube_client_free(fx->kc);
	fake_http_stop(fx->fake);
	buf_release(&fx->err);
	if (fx->dir[0])
		rm_dir(fx->dir);
	free(fx);
	return 0;
}

static const char *fixture_text(struct fixture *fx, const char *name)
{
	char path[256];
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "tests/unit/data/kube/%s", name);
	f = fopen(path, "rb");
	assert_non_null(f);
	n = fread(fx->body, 1, sizeof(fx->body) - 1, f);
	fclose(f);
	fx->body[n] = '\0';
	return fx->body;
}

/* The i-th request had this method, URI and the standard headers. */
static const struct fake_request *req_is(struct fixture *fx, size_t i, const char *method,
					 const char *uri, const char *accept)
{
	const struct fake_request *r = fake_http_request(fx->fake, i);

	assert_non_null(r);
	assert_string_equal(r->method, method);
	assert_string_equal(r->uri, uri);
	assert_string_equal(fake_request_header(r, "accept"), accept);
	assert_string_equal(fake_request_header(r, "authorization"), "Bearer t0k3n");
	assert_string_equal(fake_request_header(r, "user-agent"), "alertbridge");
	return r;
}

/* The request's body is JSON equal to want, and its Content-Type is ctype. */
static void body_is(const struct fake_request *r, const char *ctype, const char *want)
{
	json_t *a = json_loads(r->body, 0, NULL), *b = json_loads(want, 0, NULL);

	assert_non_null(b);
	if (!a || !json_equal(a, b))
		fail_msg("body %s\n  want %s", r->body, want);
	assert_string_equal(fake_request_header(r, "content-type"), ctype);
	json_decref(a);
	json_decref(b);
}

/* ---- pod get ---- */

static void pod_get_sends_exact_request_and_parses(void **state)
{
	struct fixture *fx = *state;
	const struct fake_request *r;
	struct kube_pod *p = &fx->pod;

	fake_http_push(fx->fake, 200, "Content-Type: application/json",
		       fixture_text(fx, "pod_pending.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "train-7d9f-abcde", p, &fx->err),
			 ERR_OK);
	r = req_is(fx, 0, "GET", "/api/v1/namespaces/ml-team/pods/train-7d9f-abcde",
		   "application/json");
	assert_int_equal(r->body_len, 0);
	assert_null(fake_request_header(r, "content-type"));

	assert_string_equal(p->namespace, "ml-team");
	assert_string_equal(p->name, "train-7d9f-abcde");
	assert_string_equal(p->uid, "5f1c2d3e-0000-4000-8000-000000000001");
	assert_string_equal(p->resource_version, "123456");
	assert_int_equal(p->creation_ms, T0);
	assert_int_equal(p->deletion_ms, 0);
	assert_string_equal(p->phase, "Pending");
	assert_null(p->node_name);
	assert_string_equal(p->pod_scheduled_message,
			    "0/4 nodes are available: 4 Insufficient nvidia.com/gpu.");
	assert_int_equal(p->nannotations, 3);
	assert_string_equal(p->annotations[0].name, "a/first");
	assert_string_equal(p->annotations[1].name, "janitor/exempt");
	assert_string_equal(p->annotations[2].name, "janitor/ttl");
	assert_string_equal(kube_pod_annotation(p, "janitor/ttl"), "2d");
	assert_null(kube_pod_annotation(p, "janitor/expires"));
	assert_int_equal(p->nlabels, 2);
	assert_string_equal(kube_pod_label(p, "owner"), "alice");
	assert_string_equal(p->owner.kind, "ReplicaSet");
	assert_string_equal(p->owner.api_version, "apps/v1");
	assert_string_equal(p->owner.name, "train-7d9f");
	assert_string_equal(p->owner.uid, "rs-uid-1");
}

static void pod_get_deleting_pod_with_offset_time(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, fixture_text(fx, "pod_running_deleting.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "bare", &fx->pod, &fx->err), ERR_OK);
	/* 2024-05-02T00:00:30.5+02:00 = 2024-05-01T22:00:30.500Z */
	assert_int_equal(fx->pod.deletion_ms, T0 + 10 * 3600000LL + 30500);
	assert_string_equal(fx->pod.node_name, "gpu-node-3");
	assert_string_equal(fx->pod.phase, "Running");
	assert_null(fx->pod.owner.kind);
	assert_int_equal(fx->pod.nannotations, 0);
	assert_null(kube_pod_annotation(&fx->pod, "x"));
}

/* The names the janitor's intake accepts (janitor_webhook.c) are exactly those the client will use. */
static void name_validators(void **state)
{
	static const char *const good_names[] = { "p", "p0", "my-pod-7d9c", "a.b-c", "0abc" };
	static const char *const bad_names[] = { "", "-p", "p-", ".p", "P", "a/b", "../x", "a b",
						 "p?x=1", "p%2f", "\xc3\xa9" };
	char long_name[260];

	(void)state;
	for (size_t i = 0; i < sizeof(good_names) / sizeof(good_names[0]); i++)
		assert_true(kube_name_valid(good_names[i]));
	for (size_t i = 0; i < sizeof(bad_names) / sizeof(bad_names[0]); i++) {
		assert_false(kube_name_valid(bad_names[i]));
		assert_false(kube_namespace_valid(bad_names[i]));
	}
	assert_false(kube_name_valid(NULL));
	assert_false(kube_namespace_valid(NULL));
	assert_true(kube_namespace_valid("ml-team"));
	assert_false(kube_namespace_valid("a.b"));  /* a DNS label: no dots */
	memset(long_name, 'a', sizeof(long_name));
	long_name[253] = '\0';
	assert_true(kube_name_valid(long_name));
	assert_false(kube_namespace_valid(long_name));  /* over 63 */
	long_name[63] = '\0';
	assert_true(kube_namespace_valid(long_name));
	long_name[63] = 'a';
	long_name[64] = '\0';
	assert_false(kube_namespace_valid(long_name));
	memset(long_name, 'a', 254);
	long_name[254] = '\0';
	assert_false(kube_name_valid(long_name));
}

static void invalid_names_make_no_request(void **state)
{
	struct fixture *fx = *state;
	struct kube_annotation a = { "x", "y" };

	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "../secrets", &fx->pod, &fx->err),
			 ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "invalid name \"../secrets\" in namespace ml-team");
	assert_int_equal(kube_pod_get(fx->kc, "Bad NS", "p", &fx->pod, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "invalid namespace \"Bad NS\"");
	/* a namespace is a DNS label: a dot is refused before any request */
	assert_int_equal(kube_pod_get(fx->kc, "ml.team", "p", &fx->pod, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "invalid namespace \"ml.team\"");
	assert_int_equal(kube_pod_annotate(fx->kc, "ns", "p?x=1", &a, 1, NULL, &fx->err),
			 ERR_INVALID);
	assert_int_equal(kube_pod_delete(fx->kc, "ns", "-p", "u", &fx->err), ERR_INVALID);
	assert_int_equal(kube_pod_annotate(fx->kc, "ns", "p", &a, 0, NULL, &fx->err),
			 ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "annotate ns/p: no annotations to change");
	assert_int_equal(kube_pod_delete(fx->kc, "ns", "p", "", &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "delete pod ns/p: no uid precondition");
	assert_int_equal(kube_scale(fx->kc, KUBE_DEPLOYMENT, "ns", "d", -1, &fx->err),
			 ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "scale ns/d: replicas -1 < 0");
	assert_int_equal(fake_http_count(fx->fake), 0);
}

/* ---- listing ---- */

struct seen {
	int n;
	char names[16][32];
	int stop_at;  /* stop (ERR_IO) at this pod number, 0: never */
	int with_phase;
};

static enum err collect(void *ctx, const struct kube_pod *pod)
{
	struct seen *s = ctx;

	assert_true(s->n < 16);
	snprintf(s->names[s->n], sizeof(s->names[0]), "%s/%s", pod->namespace, pod->name);
	if (pod->phase)
		s->with_phase++;
	s->n++;
	return s->stop_at && s->n == s->stop_at ? ERR_IO : ERR_OK;
}

static const char *page(char *out, size_t size, const char *cont, int first, int count)
{
	int n = snprintf(out, size, "{\"kind\":\"PartialObjectMetadataList\",\"apiVersion\":"
			 "\"meta.k8s.io/v1\",\"metadata\":{\"resourceVersion\":\"9\"%s%s%s},"
			 "\"items\":[", cont ? ",\"continue\":\"" : "", cont ? cont : "",
			 cont ? "\"" : "");
	for (int i = 0; i < count; i++)
		n += snprintf(out + n, size - (size_t)n,
			      "%s{\"kind\":\"PartialObjectMetadata\","
			      "\"apiVersion\":\"meta.k8s.io/v1\",\"metadata\":{\"name\":\"p%d\","
			      "\"namespace\":\"ns%d\",\"uid\":\"u%d\","
			      "\"creationTimestamp\":\"2024-05-01T12:00:00Z\","
			      "\"annotations\":{\"janitor/expires\":\"2024-05-02T00:00:00Z\"}}}",
			      i ? "," : "", first + i, first + i, first + i);
	snprintf(out + n, size - (size_t)n, "]}");
	return out;
}

static void list_metadata_three_pages(void **state)
{
	struct fixture *fx = *state;
	struct seen s = { 0 };
	char b[4096];

	fake_http_push(fx->fake, 200, NULL, page(b, sizeof(b), "tok/1+=", 1, 2));
	fake_http_push(fx->fake, 200, NULL, page(b, sizeof(b), "tok2", 3, 2));
	fake_http_push(fx->fake, 200, NULL, page(b, sizeof(b), NULL, 5, 1));
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_OK);
	assert_int_equal(s.n, 5);
	assert_string_equal(s.names[0], "ns1/p1");
	assert_string_equal(s.names[4], "ns5/p5");
	assert_int_equal(s.with_phase, 0);
	assert_int_equal(fake_http_count(fx->fake), 3);
	req_is(fx, 0, "GET", "/api/v1/pods?limit=500", META);
	req_is(fx, 1, "GET", "/api/v1/pods?limit=500&continue=tok%2F1%2B%3D", META);
	req_is(fx, 2, "GET", "/api/v1/pods?limit=500&continue=tok2", META);
}

static void list_full_objects_in_namespace(void **state)
{
	struct fixture *fx = *state;
	struct seen s = { 0 };
	char b[8192];
	int n = snprintf(b, sizeof(b), "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
			 "\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[%s]}",
			 fixture_text(fx, "pod_pending.json"));

	assert_true(n < (int)sizeof(b));
	fake_http_push(fx->fake, 200, NULL, b);
	assert_int_equal(kube_pods_each(fx->kc, "ml-team", 0, collect, &s, &fx->err), ERR_OK);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.with_phase, 1);
	req_is(fx, 0, "GET", "/api/v1/namespaces/ml-team/pods?limit=500", "application/json");
}

static void list_restarts_on_410_expired(void **state)
{
	struct fixture *fx = *state;
	struct seen s = { 0 };
	char b[4096];

	fake_http_push(fx->fake, 200, NULL, page(b, sizeof(b), "old", 1, 2));
	fake_http_push(fx->fake, 410, NULL, fixture_text(fx, "status_410.json"));
	fake_http_push(fx->fake, 200, NULL, page(b, sizeof(b), "new", 1, 2));
	fake_http_push(fx->fake, 200, NULL, page(b, sizeof(b), NULL, 3, 1));
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_OK);
	assert_int_equal(s.n, 5); /* p1, p2 seen twice */
	assert_string_equal(s.names[2], "ns1/p1");
	assert_int_equal(fake_http_count(fx->fake), 4);
	req_is(fx, 1, "GET", "/api/v1/pods?limit=500&continue=old", META);
	req_is(fx, 2, "GET", "/api/v1/pods?limit=500", META);
	req_is(fx, 3, "GET", "/api/v1/pods?limit=500&continue=new", META);
}

static void list_410_restarts_are_bounded(void **state)
{
	struct fixture *fx = *state;
	struct seen s = { 0 };
	char b[4096];

	for (int i = 0; i < 4; i++) {
		fake_http_push(fx->fake, 200, NULL, page(b, sizeof(b), "c", 1, 1));
		fake_http_push(fx->fake, 410, NULL, fixture_text(fx, "status_410.json"));
	}
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_GONE);
	assert_int_equal(fake_http_count(fx->fake), 8);
	assert_non_null(strstr(buf_str(&fx->err),
			       "GET /api/v1/pods?limit=500&continue=c: 410 Expired: The provided "
			       "continue parameter is too old"));
}

static void list_first_page_410_is_not_restarted(void **state)
{
	struct fixture *fx = *state;
	struct seen s = { 0 };

	fake_http_push(fx->fake, 410, NULL, fixture_text(fx, "status_410.json"));
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_GONE);
	assert_int_equal(fake_http_count(fx->fake), 1);
}

static void list_callback_stops_listing(void **state)
{
	struct fixture *fx = *state;
	struct seen s = { 0 };
	char b[4096];

	s.stop_at = 2;
	fake_http_push(fx->fake, 200, NULL, page(b, sizeof(b), "more", 1, 3));
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_IO);
	assert_int_equal(s.n, 2);
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_string_equal(buf_str(&fx->err),
			    "listing stopped by the callback at pod ns2/p2: io");
}

static void list_malformed_answers_are_invalid(void **state)
{
	struct fixture *fx = *state;
	struct seen s = { 0 };

	fake_http_push(fx->fake, 200, NULL, "{\"items\": {\"not\": \"a list\"}}");
	assert_int_equal(kube_pods_each(fx->kc, NULL, 0, collect, &s, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err),
			    "GET /api/v1/pods?limit=500: invalid answer: items is not a list");

	fake_http_push(fx->fake, 200, NULL, "{\"items\": [{\"metadata\": {\"name\": \"x\"}}]}");
	assert_int_equal(kube_pods_each(fx->kc, NULL, 0, collect, &s, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "GET /api/v1/pods?limit=500: invalid answer: "
					       "pod without metadata.name and metadata.uid");

	fake_http_push(fx->fake, 200, NULL, "{\"items\": [{\"metadata\": {\"name\": \"x\", "
					    "\"namespace\": \"n\", \"uid\": \"u\", "
					    "\"creationTimestamp\": \"yesterday\"}}]}");
	assert_int_equal(kube_pods_each(fx->kc, NULL, 0, collect, &s, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err),
			    "GET /api/v1/pods?limit=500: invalid answer: pod n/x: "
			    "creationTimestamp is not an RFC 3339 time");

	fake_http_push(fx->fake, 200, NULL, "{\"items\": [{\"metadata\": {\"name\": \"x\", "
					    "\"namespace\": \"n\", \"uid\": \"u\", "
					    "\"labels\": {\"a\": 1}}}]}");
	assert_int_equal(kube_pods_each(fx->kc, NULL, 0, collect, &s, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "GET /api/v1/pods?limit=500: invalid answer: "
					       "pod n/x: metadata.labels[\"a\"] is not a string");

	fake_http_push(fx->fake, 200, NULL, "{\"items\": [ {\"meta");
	assert_int_equal(kube_pods_each(fx->kc, NULL, 0, collect, &s, &fx->err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err),
			       "GET /api/v1/pods?limit=500: 200 answer is not a JSON object: "));
	assert_int_equal(s.n, 0);
}

static void pod_get_malformed_answers_are_invalid(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, "[1, 2]");
	assert_int_equal(kube_pod_get(fx->kc, "n", "p", &fx->pod, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err),
			    "GET /api/v1/namespaces/n/pods/p: 200 answer is not a JSON object: "
			    "wrong type");
	fake_http_push(fx->fake, 200, NULL, "");
	assert_int_equal(kube_pod_get(fx->kc, "n", "p", &fx->pod, &fx->err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err), "200 answer is not a JSON object: "));
	assert_null(fx->pod.name);
}

/* ---- mutations ---- */

static void annotate_sends_merge_patch_of_annotations_only(void **state)
{
	struct fixture *fx = *state;
	const struct fake_request *r;
	struct kube_annotation changes[] = {
		{ "janitor/expires", "2024-05-02T12:00:00Z" },
		{ "janitor/reason", "idle GPU \"A100\"" },
		{ "x", NULL },
	};

	fake_http_push(fx->fake, 200, NULL, fixture_text(fx, "pod_pending.json"));
	assert_int_equal(kube_pod_annotate(fx->kc, "ml-team", "train-7d9f-abcde", changes, 3,
					   &fx->pod, &fx->err),
			 ERR_OK);
	r = req_is(fx, 0, "PATCH", "/api/v1/namespaces/ml-team/pods/train-7d9f-abcde",
		   "application/json");
	body_is(r, "application/merge-patch+json",
		"{\"metadata\":{\"annotations\":{\"janitor/expires\":\"2024-05-02T12:00:00Z\","
		"\"janitor/reason\":\"idle GPU \\\"A100\\\"\",\"x\":null}}}");
	assert_string_equal(fx->pod.uid, "5f1c2d3e-0000-4000-8000-000000000001");

	fake_http_push(fx->fake, 200, NULL, "{}");
	assert_int_equal(kube_pod_annotate(fx->kc, "ml-team", "p", changes + 2, 1, NULL, &fx->err),
			 ERR_OK);
	body_is(fake_http_request(fx->fake, 1), "application/merge-patch+json",
		"{\"metadata\":{\"annotations\":{\"x\":null}}}");
}

static void delete_pod_with_uid_precondition_background(void **state)
{
	struct fixture *fx = *state;
	const struct fake_request *r;

	fake_http_push(fx->fake, 200, NULL, fixture_text(fx, "pod_running_deleting.json"));
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "uid-bare", &fx->err), ERR_OK);
	r = req_is(fx, 0, "DELETE", "/api/v1/namespaces/ml-team/pods/bare", "application/json");
	body_is(r, "application/json",
		"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		"\"Background\",\"preconditions\":{\"uid\":\"uid-bare\"}}");
	assert_null(strstr(r->body, "gracePeriodSeconds"));
}

static void delete_job_background(void **state)
{
	struct fixture *fx = *state;
	const struct fake_request *r;

	fake_http_push(fx->fake, 200, NULL, "{\"kind\":\"Status\",\"status\":\"Success\"}");
	assert_int_equal(kube_job_delete(fx->kc, "ml-team", "train-job", "job-uid", &fx->err),
			 ERR_OK);
	r = req_is(fx, 0, "DELETE", "/apis/batch/v1/namespaces/ml-team/jobs/train-job",
		   "application/json");
	body_is(r, "application/json",
		"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		"\"Background\",\"preconditions\":{\"uid\":\"job-uid\"}}");

	fake_http_push(fx->fake, 202, NULL, "{}");
	assert_int_equal(kube_job_delete(fx->kc, "ml-team", "j2", NULL, &fx->err), ERR_OK);
	body_is(fake_http_request(fx->fake, 1), "application/json",
		"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		"\"Background\"}");
}

static void scale_deployment_and_statefulset(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 200, NULL, "{\"kind\":\"Scale\"}");
	fake_http_push(fx->fake, 200, NULL, "{\"kind\":\"Scale\"}");
	assert_int_equal(kube_scale(fx->kc, KUBE_DEPLOYMENT, "ml-team", "train", 0, &fx->err),
			 ERR_OK);
	assert_int_equal(kube_scale(fx->kc, KUBE_STATEFULSET, "ml-team", "db", 0, &fx->err),
			 ERR_OK);
	body_is(req_is(fx, 0, "PATCH", "/apis/apps/v1/namespaces/ml-team/deployments/train/scale",
		       "application/json"),
		"application/merge-patch+json", "{\"spec\":{\"replicas\":0}}");
	body_is(req_is(fx, 1, "PATCH", "/apis/apps/v1/namespaces/ml-team/statefulsets/db/scale",
		       "application/json"),
		"application/merge-patch+json", "{\"spec\":{\"replicas\":0}}");
}

static void event_create_exact_body(void **state)
{
	struct fixture *fx = *state;
	const struct fake_request *r;
	struct kube_event ev = { "ml-team", "train-7d9f-abcde", "uid-1", "123456", "Warning",
				 "JanitorMarked", "idle for 24h; deletion at 2024-05-02T12:00:00Z",
				 T0 };
	char want[1024];

	fake_http_push(fx->fake, 201, NULL, "{\"kind\":\"Event\"}");
	assert_int_equal(kube_event_create(fx->kc, &ev, &fx->err), ERR_OK);
	r = req_is(fx, 0, "POST", "/api/v1/namespaces/ml-team/events", "application/json");
	snprintf(want, sizeof(want),
		 "{\"apiVersion\":\"v1\",\"kind\":\"Event\",\"metadata\":{\"name\":"
		 "\"train-7d9f-abcde.%llx\",\"namespace\":\"ml-team\"},\"involvedObject\":{"
		 "\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"namespace\":\"ml-team\",\"name\":"
		 "\"train-7d9f-abcde\",\"uid\":\"uid-1\",\"resourceVersion\":\"123456\"},"
		 "\"reason\":\"JanitorMarked\",\"message\":\"idle for 24h; deletion at "
		 "2024-05-02T12:00:00Z\",\"type\":\"Warning\",\"source\":{\"component\":"
		 "\"alertbridge\"},\"reportingComponent\":\"alertbridge\",\"firstTimestamp\":"
		 "\"2024-05-01T12:00:00Z\",\"lastTimestamp\":\"2024-05-01T12:00:00Z\",\"count\":1}",
		 (unsigned long long)T0 * 1000000ULL);
	body_is(r, "application/json", want);

	/* A second event in the same millisecond gets another name. */
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(kube_event_create(fx->kc, &ev, &fx->err), ERR_OK);
	snprintf(want, sizeof(want), "\"name\":\"train-7d9f-abcde.%llx\"",
		 (unsigned long long)T0 * 1000000ULL + 1);
	assert_non_null(strstr(fake_http_request(fx->fake, 1)->body, want));
}

static void event_long_message_is_cut_and_bad_input_rejected(void **state)
{
	struct fixture *fx = *state;
	char msg[1100];
	struct kube_event ev = { "ns", "p", "u", NULL, "Normal", "R", msg, T0 };
	json_t *o;

	memset(msg, 'a', sizeof(msg) - 1);
	memcpy(msg + 1023, "\xc3\xa9", 2); /* an é across the 1024-byte limit */
	msg[sizeof(msg) - 1] = '\0';
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(kube_event_create(fx->kc, &ev, &fx->err), ERR_OK);
	o = json_loads(fake_http_request(fx->fake, 0)->body, 0, NULL);
	assert_int_equal(strlen(json_string_value(json_object_get(o, "message"))), 1023);
	assert_null(json_object_get(json_object_get(o, "involvedObject"), "resourceVersion"));
	json_decref(o);

	ev.type = "Error";
	assert_int_equal(kube_event_create(fx->kc, &ev, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err),
			    "event on ns/p: type must be Normal or Warning, not \"Error\"");
	ev.type = "Normal";
	ev.reason = "";
	assert_int_equal(kube_event_create(fx->kc, &ev, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "event on ns/p: reason and pod uid are required");
	ev.reason = "R";
	ev.message = "\xff bad";
	assert_int_equal(kube_event_create(fx->kc, &ev, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "event on ns/p: message is not UTF-8");
	assert_int_equal(fake_http_count(fx->fake), 1);
}

/* ---- errors ---- */

static void status_errors_map_to_codes(void **state)
{
	struct fixture *fx = *state;
	static const struct {
		int status;
		const char *reason;
		enum err want;
	} cases[] = {
		{ 400, "BadRequest", ERR_INVALID }, { 401, "Unauthorized", ERR_AUTH },
		{ 403, "Forbidden", ERR_AUTH },     { 404, "NotFound", ERR_NOTFOUND },
		{ 409, "Conflict", ERR_CONFLICT },  { 410, "Gone", ERR_GONE },
		{ 422, "Invalid", ERR_INVALID },    { 500, "InternalError", ERR_RETRY },
		{ 504, "Timeout", ERR_RETRY },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char body[256], want[256];
		snprintf(body, sizeof(body),
			 "{\"kind\":\"Status\",\"apiVersion\":\"v1\",\"status\":\"Failure\","
			 "\"message\":\"msg %d\",\"reason\":\"%s\",\"code\":%d}",
			 cases[i].status, cases[i].reason, cases[i].status);
		fake_http_push(fx->fake, cases[i].status, NULL, body);
		assert_int_equal(kube_pod_delete(fx->kc, "ns", "p", "u", &fx->err), cases[i].want);
		snprintf(want, sizeof(want), "DELETE /api/v1/namespaces/ns/pods/p: %d %s: msg %d",
			 cases[i].status, cases[i].reason, cases[i].status);
		assert_string_equal(buf_str(&fx->err), want);
	}
	assert_int_equal(fake_http_count(fx->fake), sizeof(cases) / sizeof(cases[0]));
}

static void not_found_uses_status_message(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 404, NULL, fixture_text(fx, "status_404.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "gone", &fx->pod, &fx->err),
			 ERR_NOTFOUND);
	assert_string_equal(buf_str(&fx->err), "GET /api/v1/namespaces/ml-team/pods/gone: "
					       "404 NotFound: pods \"gone\" not found");
}

static void non_status_error_bodies_are_quoted_safely(void **state)
{
	struct fixture *fx = *state;

	fake_http_push(fx->fake, 502, NULL, "<html>\n<b>Bad gateway</b></html>");
	assert_int_equal(kube_pod_get(fx->kc, "n", "p", &fx->pod, &fx->err), ERR_RETRY);
	assert_string_equal(buf_str(&fx->err), "GET /api/v1/namespaces/n/pods/p: 502: "
					       "<html> <b>Bad gateway</b></html>");
	fake_http_push(fx->fake, 403, NULL, NULL);
	assert_int_equal(kube_pod_get(fx->kc, "n", "p", &fx->pod, &fx->err), ERR_AUTH);
	assert_string_equal(buf_str(&fx->err),
			    "GET /api/v1/namespaces/n/pods/p: 403: (empty body)");
}

static void retry_after_is_honoured_once(void **state)
{
	struct fixture *fx = *state;
	const char *tmr = "{\"kind\":\"Status\",\"message\":\"too many requests\","
			  "\"reason\":\"TooManyRequests\",\"code\":429}";

	fake_http_push(fx->fake, 429, "Retry-After: 2", tmr);
	fake_http_push(fx->fake, 200, NULL, fixture_text(fx, "pod_running_deleting.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "bare", &fx->pod, &fx->err), ERR_OK);
	assert_int_equal(fx->slept, 2000);
	assert_int_equal(fake_http_count(fx->fake), 2);

	fake_http_push(fx->fake, 429, "Retry-After: 1", tmr);
	fake_http_push(fx->fake, 503, "Retry-After: 1", tmr);
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "u", &fx->err), ERR_RETRY);
	assert_int_equal(fx->slept, 3000);
	assert_int_equal(fake_http_count(fx->fake), 4);
	assert_string_equal(buf_str(&fx->err), "DELETE /api/v1/namespaces/ml-team/pods/bare: "
					       "503 TooManyRequests: too many requests");
	body_is(fake_http_request(fx->fake, 3), "application/json",
		"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		"\"Background\",\"preconditions\":{\"uid\":\"u\"}}");

	/*
	 * An HTTP-date (RFC 9110 10.2.3) is a wait too: until that time by the client's
	 * clock (it was read as "not delta-seconds" and the answer given up).
	 */
	{
		char hdr[96];
		time_t at = (time_t)((fx->now + 4000) / 1000);
		struct tm tm;

		gmtime_r(&at, &tm);
		strftime(hdr, sizeof(hdr), "Retry-After: %a, %d %b %Y %H:%M:%S GMT", &tm);
		fake_http_push(fx->fake, 429, hdr, tmr);
		fake_http_push(fx->fake, 200, NULL, fixture_text(fx, "pod_running_deleting.json"));
		fx->slept = 0;
		kube_pod_release(&fx->pod);
		assert_int_equal(kube_pod_get(fx->kc, "ml-team", "bare", &fx->pod, &fx->err), ERR_OK);
		assert_in_range(fx->slept, 3000, 4000);
		fx->slept = 3000;
	}
	fake_http_push(fx->fake, 429, "Retry-After: soon", tmr);
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "u", &fx->err), ERR_RETRY);

	/* Too long a wait, or a 500, is the caller's to schedule. */
	fake_http_push(fx->fake, 429, "Retry-After: 3600", tmr);
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "u", &fx->err), ERR_RETRY);
	fake_http_push(fx->fake, 500, "Retry-After: 1", tmr);
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "u", &fx->err), ERR_RETRY);
	assert_int_equal(fx->slept, 3000);
	assert_int_equal(fake_http_count(fx->fake), 9);
}

static void timeout_and_refused_are_retry(void **state)
{
	struct fixture *fx = *state;
	struct kube_config cfg = KUBE_CONFIG_INIT;
	struct fake_http *gone = fake_http_start();
	struct kube_client *kc;

	fake_http_push_delayed(fx->fake, 3000, 200, NULL, "{}");
	assert_int_equal(kube_pod_get(fx->kc, "n", "p", &fx->pod, &fx->err), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err), "/api/v1/namespaces/n/pods/p"));
	assert_non_null(strstr(buf_str(&fx->err), "timed out"));

	cfg.server = strdup(fake_http_url(gone));
	fake_http_stop(gone);
	kc = new_client(fx, &cfg);
	assert_int_equal(kube_pod_get(kc, "n", "p", &fx->pod, &fx->err), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err), "GET http://127.0.0.1:"));
	kube_client_free(kc);
}

/* ---- owners ---- */

static void owner_replicaset_resolves_to_deployment(void **state)
{
	struct fixture *fx = *state;
	struct kube_owner o;

	fake_http_push(fx->fake, 200, NULL, fixture_text(fx, "pod_pending.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "train-7d9f-abcde", &fx->pod, &fx->err),
			 ERR_OK);
	fake_http_push(fx->fake, 200, NULL,
		       "{\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"train-7d9f\",\"uid\":"
		       "\"rs-uid-1\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
		       "\"Deployment\",\"name\":\"train\",\"uid\":\"dep-uid\","
		       "\"controller\":true}]}}");
	assert_int_equal(kube_pod_controller(fx->kc, &fx->pod, &o, &fx->err), ERR_OK);
	req_is(fx, 1, "GET", "/apis/apps/v1/namespaces/ml-team/replicasets/train-7d9f",
	       "application/json");
	assert_string_equal(o.kind, "Deployment");
	assert_string_equal(o.name, "train");
	assert_string_equal(o.uid, "dep-uid");
	assert_string_equal(o.api_version, "apps/v1");
	kube_owner_release(&o);

	/* A bare ReplicaSet stays itself. */
	fake_http_push(fx->fake, 200, NULL,
		       "{\"metadata\":{\"name\":\"train-7d9f\",\"uid\":\"rs-uid-1\"}}");
	assert_int_equal(kube_pod_controller(fx->kc, &fx->pod, &o, &fx->err), ERR_OK);
	assert_string_equal(o.kind, "ReplicaSet");
	assert_string_equal(o.name, "train-7d9f");
	kube_owner_release(&o);

	/* A ReplicaSet recreated under the same name is not the pod's. */
	fake_http_push(fx->fake, 200, NULL,
		       "{\"metadata\":{\"name\":\"train-7d9f\",\"uid\":\"other\"}}");
	assert_int_equal(kube_pod_controller(fx->kc, &fx->pod, &o, &fx->err), ERR_CONFLICT);
	assert_string_equal(buf_str(&fx->err),
			    "GET /apis/apps/v1/namespaces/ml-team/replicasets/train-7d9f: "
			    "replicaset uid other, the pod's reference says rs-uid-1");
	assert_null(o.kind);

	fake_http_push(fx->fake, 404, NULL, fixture_text(fx, "status_404.json"));
	assert_int_equal(kube_pod_controller(fx->kc, &fx->pod, &o, &fx->err), ERR_NOTFOUND);
}

static void owner_job_statefulset_and_bare_need_no_request(void **state)
{
	struct fixture *fx = *state;
	struct kube_owner o;
	struct kube_pod p = { 0 };

	p.namespace = "ns";
	p.name = "p";
	assert_int_equal(kube_pod_controller(fx->kc, &p, &o, &fx->err), ERR_OK);
	assert_null(o.kind);
	assert_null(o.name);
	p.owner.api_version = "batch/v1";
	p.owner.kind = "Job";
	p.owner.name = "train-job";
	p.owner.uid = "job-uid";
	assert_int_equal(kube_pod_controller(fx->kc, &p, &o, &fx->err), ERR_OK);
	assert_string_equal(o.kind, "Job");
	assert_string_equal(o.name, "train-job");
	assert_string_equal(o.uid, "job-uid");
	kube_owner_release(&o);
	p.owner.api_version = "apps/v1";
	p.owner.kind = "StatefulSet";
	assert_int_equal(kube_pod_controller(fx->kc, &p, &o, &fx->err), ERR_OK);
	assert_string_equal(o.kind, "StatefulSet");
	kube_owner_release(&o);
	assert_int_equal(fake_http_count(fx->fake), 0);
}

/* ---- leases ---- */

#define LEASE_ANSWER                                                                         \
	"{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":" \
	"\"alertbridge\",\"namespace\":\"alertbridge\",\"resourceVersion\":\"42\"},\"spec\":{"  \
	"\"holderIdentity\":\"pod-a\",\"leaseDurationSeconds\":15,\"acquireTime\":"           \
	"\"2024-05-01T12:00:00.000000Z\",\"renewTime\":\"2024-05-01T12:00:10.250000Z\","      \
	"\"leaseTransitions\":3}}"

static void lease_get_create_update(void **state)
{
	struct fixture *fx = *state;
	struct kube_lease got, in = { 0 };
	const char *spec = "\"spec\":{\"holderIdentity\":\"pod-a\",\"leaseDurationSeconds\":15,"
			   "\"acquireTime\":\"2024-05-01T12:00:00.000000Z\",\"renewTime\":"
			   "\"2024-05-01T12:00:10.250000Z\",\"leaseTransitions\":3}";
	char want[1024];

	fake_http_push(fx->fake, 200, NULL, LEASE_ANSWER);
	assert_int_equal(kube_lease_get(fx->kc, "alertbridge", "alertbridge", &got, &fx->err),
			 ERR_OK);
	req_is(fx, 0, "GET", "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases/"
			     "alertbridge", "application/json");
	assert_string_equal(got.holder, "pod-a");
	assert_string_equal(got.resource_version, "42");
	assert_int_equal(got.duration_s, 15);
	assert_int_equal(got.acquire_ms, T0);
	assert_int_equal(got.renew_ms, T0 + 10250);
	assert_int_equal(got.transitions, 3);
	kube_lease_release(&got);

	in.namespace = "alertbridge";
	in.name = "alertbridge";
	in.holder = "pod-a";
	in.duration_s = 15;
	in.acquire_ms = T0;
	in.renew_ms = T0 + 10250;
	in.transitions = 3;
	fake_http_push(fx->fake, 201, NULL, LEASE_ANSWER);
	assert_int_equal(kube_lease_create(fx->kc, &in, &got, &fx->err), ERR_OK);
	snprintf(want, sizeof(want), "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":"
		 "\"Lease\",\"metadata\":{\"name\":\"alertbridge\",\"namespace\":\"alertbridge\"},"
		 "%s}", spec);
	body_is(req_is(fx, 1, "POST", "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases",
		       "application/json"),
		"application/json", want);
	kube_lease_release(&got);

	in.resource_version = "42";
	fake_http_push(fx->fake, 200, NULL, LEASE_ANSWER);
	assert_int_equal(kube_lease_update(fx->kc, &in, &got, &fx->err), ERR_OK);
	snprintf(want, sizeof(want), "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":"
		 "\"Lease\",\"metadata\":{\"name\":\"alertbridge\",\"namespace\":\"alertbridge\","
		 "\"resourceVersion\":\"42\"},%s}", spec);
	body_is(req_is(fx, 2, "PUT", "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases/"
				     "alertbridge", "application/json"),
		"application/json", want);
	kube_lease_release(&got);
}

static void lease_conflicts_and_bad_input(void **state)
{
	struct fixture *fx = *state;
	struct kube_lease got, in = { 0 };

	in.namespace = "alertbridge";
	in.name = "alertbridge";
	in.resource_version = "41";
	fake_http_push(fx->fake, 409, NULL,
		       "{\"kind\":\"Status\",\"reason\":\"Conflict\","
		       "\"message\":\"Operation cannot "
		       "be fulfilled on leases.coordination.k8s.io \\\"alertbridge\\\": the object "
		       "has been modified\",\"code\":409}");
	assert_int_equal(kube_lease_update(fx->kc, &in, &got, &fx->err), ERR_CONFLICT);
	assert_non_null(strstr(buf_str(&fx->err), ": 409 Conflict: Operation cannot be fulfilled"));
	assert_null(got.name);

	fake_http_push(fx->fake, 409, NULL, "{\"kind\":\"Status\",\"reason\":\"AlreadyExists\","
					    "\"message\":\"already exists\",\"code\":409}");
	assert_int_equal(kube_lease_create(fx->kc, &in, &got, &fx->err), ERR_CONFLICT);

	in.resource_version = NULL;
	assert_int_equal(kube_lease_update(fx->kc, &in, &got, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err),
			    "update lease alertbridge/alertbridge: no resourceVersion");

	fake_http_push(fx->fake, 200, NULL, "{\"metadata\":{\"name\":\"alertbridge\"}}");
	assert_int_equal(kube_lease_get(fx->kc, "alertbridge", "alertbridge", &got, &fx->err),
			 ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err), "invalid lease: no metadata.name or "
						  "resourceVersion"));
	fake_http_push(fx->fake, 200, NULL, "{\"metadata\":{\"name\":\"a\",\"resourceVersion\":"
					    "\"1\"},\"spec\":{\"renewTime\":\"soon\"}}");
	assert_int_equal(kube_lease_get(fx->kc, "alertbridge", "a", &got, &fx->err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err), "renewTime is not an RFC 3339 time"));
	assert_int_equal(fake_http_count(fx->fake), 4);
}

/* ---- in-cluster token rotation ---- */

static void write_file(const char *dir, const char *name, const char *text, time_t mtime)
{
	char p[128];
	FILE *f;
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static struct kube_client *incluster_client(struct fixture *fx)
{
	struct kube_config cfg;

	snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_kube.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	write_file(fx->dir, "token", "tok-1\n", 1000);
	write_file(fx->dir, "namespace", "alertbridge", 1000);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_incluster(fx->dir, &cfg, &fx->err), ERR_OK);
	assert_string_equal(cfg.server, "https://10.96.0.1:443");
	assert_null(cfg.ca_file); /* no ca.crt in the directory */
	free(cfg.server);
	cfg.server = strdup(fake_http_url(fx->fake)); /* the fake speaks plain http */
	return new_client(fx, &cfg);
}

static const char *auth_of(struct fixture *fx, size_t i)
{
	return fake_request_header(fake_http_request(fx->fake, i), "authorization");
}

static void incluster_token_is_reread_when_it_rotates(void **state)
{
	struct fixture *fx = *state;
	struct kube_client *kc = incluster_client(fx);
	struct kube_pod p;

	assert_string_equal(kube_client_namespace(kc), "alertbridge");
	assert_string_equal(kube_client_source(kc), "in-cluster");
	for (int i = 0; i < 5; i++)
		fake_http_push(fx->fake, 200, NULL, fixture_text(fx, "pod_running_deleting.json"));
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_OK);
	kube_pod_release(&p);
	assert_string_equal(auth_of(fx, 0), "Bearer tok-1");

	/* kubelet rotates the projected token: new content, new mtime. */
	write_file(fx->dir, "token", "tok-2", 2000);
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_OK);
	kube_pod_release(&p);
	assert_string_equal(auth_of(fx, 1), "Bearer tok-2");

	/* Same mtime and size: kept until a minute passed. */
	write_file(fx->dir, "token", "tok-3", 2000);
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_OK);
	kube_pod_release(&p);
	assert_string_equal(auth_of(fx, 2), "Bearer tok-2");
	fx->now += 60000;
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_OK);
	kube_pod_release(&p);
	assert_string_equal(auth_of(fx, 3), "Bearer tok-3");

	/* A vanished file keeps the last token. */
	write_file(fx->dir, "token", "", 3000);
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_OK);
	kube_pod_release(&p);
	assert_string_equal(auth_of(fx, 4), "Bearer tok-3");
	kube_client_free(kc);
}

static void unauthorized_rereads_token_once(void **state)
{
	struct fixture *fx = *state;
	struct kube_client *kc = incluster_client(fx);
	struct kube_pod p;
	const char *unauth = "{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"message\":"
			     "\"Unauthorized\",\"code\":401}";

	fake_http_push(fx->fake, 401, NULL, unauth);
	fake_http_push(fx->fake, 200, NULL, fixture_text(fx, "pod_running_deleting.json"));
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_OK);
	kube_pod_release(&p);
	assert_int_equal(fake_http_count(fx->fake), 2);

	fake_http_push(fx->fake, 401, NULL, unauth);
	fake_http_push(fx->fake, 401, NULL, unauth);
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_AUTH);
	assert_string_equal(buf_str(&fx->err),
			    "GET /api/v1/namespaces/n/pods/p: 401 Unauthorized: Unauthorized");
	assert_int_equal(fake_http_count(fx->fake), 4);
	kube_client_free(kc);
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN(
	T(pod_get_sends_exact_request_and_parses),
	T(pod_get_deleting_pod_with_offset_time),
	T(invalid_names_make_no_request),
	T(list_metadata_three_pages),
	T(list_full_objects_in_namespace),
	T(list_restarts_on_410_expired),
	T(list_410_restarts_are_bounded),
	T(list_first_page_410_is_not_restarted),
	T(list_callback_stops_listing),
	T(list_malformed_answers_are_invalid),
	T(pod_get_malformed_answers_are_invalid),
	T(annotate_sends_merge_patch_of_annotations_only),
	T(delete_pod_with_uid_precondition_background),
	T(delete_job_background),
	T(scale_deployment_and_statefulset),
	T(event_create_exact_body),
	T(event_long_message_is_cut_and_bad_input_rejected),
	T(status_errors_map_to_codes),
	T(not_found_uses_status_message),
	T(non_status_error_bodies_are_quoted_safely),
	T(retry_after_is_honoured_once),
	T(timeout_and_refused_are_retry),
	T(owner_replicaset_resolves_to_deployment),
	T(owner_job_statefulset_and_bare_need_no_request),
	T(lease_get_create_update),
	T(lease_conflicts_and_bad_input),
	T(incluster_token_is_reread_when_it_rotates),
	T(unauthorized_rereads_token_once),
	cmocka_unit_test(name_validators))
