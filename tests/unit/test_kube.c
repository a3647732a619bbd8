/*
 * test_kube.c - the Kubernetes client's reads against fake_http in virtual time: exact
 * method, path, query and headers, pods got and listed (paging with 410 restarts,
 * malformed answers), names checked, owner resolution.  Writes are test_kube_writes.c's,
 * errors test_kube_errors.c's, in-cluster tokens test_kube_token.c's.
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

#include "core/log.h"
#include "janitor/kube.h"
#include "tests/unit/helpers/kube_fixture.h"

/* ---- pod get ---- */

static void pod_get_sends_exact_request_and_parses(void **state)
{
	struct kfx *fx = *state;
	const struct fake_request *r;
	struct kube_pod *p = &fx->pod;

	fake_http_push(fx->fake, 200, "Content-Type: application/json",
		       kfx_fixture_text(fx, "pod_pending.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "train-7d9f-abcde", p, &fx->err),
			 ERR_OK);
	r = kfx_req_is(fx, 0, "GET", "/api/v1/namespaces/ml-team/pods/train-7d9f-abcde",
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
	struct kfx *fx = *state;

	fake_http_push(fx->fake, 200, NULL, kfx_fixture_text(fx, "pod_running_deleting.json"));
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
	struct kfx *fx = *state;
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

/*
 * Queue a 200 page of the metadata list: pods p<first>..p<first+count-1> (in ns<i>), and
 * continue token cont (NULL: the last page).
 */
static void push_page(struct kfx *fx, const char *cont, int first, int count)
{
	char out[4096];
	size_t size = sizeof(out);
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
	fake_http_push(fx->fake, 200, NULL, out);
}

/*
 * The requests from the first-th on were the metadata list's GETs with the continue tokens
 * conts (URI-encoded; "" for none; NULL ends them), in order.
 */
static void listed(struct kfx *fx, size_t first, const char *const *conts)
{
	char uri[256];

	for (size_t i = 0; conts[i]; i++) {
		snprintf(uri, sizeof(uri), "/api/v1/pods?limit=500%s%s",
			 *conts[i] ? "&continue=" : "", conts[i]);
		kfx_req_is(fx, first + i, "GET", uri, META);
	}
}

static void list_metadata_three_pages(void **state)
{
	struct kfx *fx = *state;
	struct seen s = { 0 };

	push_page(fx, "tok/1+=", 1, 2);
	push_page(fx, "tok2", 3, 2);
	push_page(fx, NULL, 5, 1);
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_OK);
	assert_int_equal(s.n, 5);
	assert_string_equal(s.names[0], "ns1/p1");
	assert_string_equal(s.names[4], "ns5/p5");
	assert_int_equal(s.with_phase, 0);
	assert_int_equal(fake_http_count(fx->fake), 3);
	listed(fx, 0, (const char *const[]){ "", "tok%2F1%2B%3D", "tok2", NULL });
}

static void list_full_objects_in_namespace(void **state)
{
	struct kfx *fx = *state;
	struct seen s = { 0 };
	char b[8192];
	int n = snprintf(b, sizeof(b), "{\"kind\":\"PodList\",\"apiVersion\":\"v1\","
			 "\"metadata\":{\"resourceVersion\":\"5\"},\"items\":[%s]}",
			 kfx_fixture_text(fx, "pod_pending.json"));

	assert_true(n < (int)sizeof(b));
	fake_http_push(fx->fake, 200, NULL, b);
	assert_int_equal(kube_pods_each(fx->kc, "ml-team", 0, collect, &s, &fx->err), ERR_OK);
	assert_int_equal(s.n, 1);
	assert_int_equal(s.with_phase, 1);
	kfx_req_is(fx, 0, "GET", "/api/v1/namespaces/ml-team/pods?limit=500", "application/json");
}

static void list_restarts_on_410_expired(void **state)
{
	struct kfx *fx = *state;
	struct seen s = { 0 };

	push_page(fx, "old", 1, 2);
	fake_http_push(fx->fake, 410, NULL, kfx_fixture_text(fx, "status_410.json"));
	push_page(fx, "new", 1, 2);
	push_page(fx, NULL, 3, 1);
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_OK);
	assert_int_equal(s.n, 5); /* p1, p2 seen twice */
	assert_string_equal(s.names[2], "ns1/p1");
	assert_int_equal(fake_http_count(fx->fake), 4);
	listed(fx, 1, (const char *const[]){ "old", "", "new", NULL });
}

static void list_410_restarts_are_bounded(void **state)
{
	struct kfx *fx = *state;
	struct seen s = { 0 };

	for (int i = 0; i < 4; i++) {
		push_page(fx, "c", 1, 1);
		fake_http_push(fx->fake, 410, NULL, kfx_fixture_text(fx, "status_410.json"));
	}
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_GONE);
	assert_int_equal(fake_http_count(fx->fake), 8);
	assert_non_null(strstr(buf_str(&fx->err),
			       "GET /api/v1/pods?limit=500&continue=c: 410 Expired: The provided "
			       "continue parameter is too old"));
}

static void list_first_page_410_is_not_restarted(void **state)
{
	struct kfx *fx = *state;
	struct seen s = { 0 };

	fake_http_push(fx->fake, 410, NULL, kfx_fixture_text(fx, "status_410.json"));
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_GONE);
	assert_int_equal(fake_http_count(fx->fake), 1);
}

static void list_callback_stops_listing(void **state)
{
	struct kfx *fx = *state;
	struct seen s = { 0 };

	s.stop_at = 2;
	push_page(fx, "more", 1, 3);
	assert_int_equal(kube_pods_each(fx->kc, NULL, 1, collect, &s, &fx->err), ERR_IO);
	assert_int_equal(s.n, 2);
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_string_equal(buf_str(&fx->err),
			    "listing stopped by the callback at pod ns2/p2: io");
}

static void list_malformed_answers_are_invalid(void **state)
{
	struct kfx *fx = *state;
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
	struct kfx *fx = *state;

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

/* ---- owners ---- */

static void owner_replicaset_resolves_to_deployment(void **state)
{
	struct kfx *fx = *state;
	struct kube_owner o;

	fake_http_push(fx->fake, 200, NULL, kfx_fixture_text(fx, "pod_pending.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "train-7d9f-abcde", &fx->pod, &fx->err),
			 ERR_OK);
	fake_http_push(fx->fake, 200, NULL,
		       "{\"kind\":\"ReplicaSet\",\"metadata\":{\"name\":\"train-7d9f\",\"uid\":"
		       "\"rs-uid-1\",\"ownerReferences\":[{\"apiVersion\":\"apps/v1\",\"kind\":"
		       "\"Deployment\",\"name\":\"train\",\"uid\":\"dep-uid\","
		       "\"controller\":true}]}}");
	assert_int_equal(kube_pod_controller(fx->kc, &fx->pod, &o, &fx->err), ERR_OK);
	kfx_req_is(fx, 1, "GET", "/apis/apps/v1/namespaces/ml-team/replicasets/train-7d9f",
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

	fake_http_push(fx->fake, 404, NULL, kfx_fixture_text(fx, "status_404.json"));
	assert_int_equal(kube_pod_controller(fx->kc, &fx->pod, &o, &fx->err), ERR_NOTFOUND);
}

static void owner_job_statefulset_and_bare_need_no_request(void **state)
{
	struct kfx *fx = *state;
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

UNIT_MAIN(
	KFX_TEST(pod_get_sends_exact_request_and_parses),
	KFX_TEST(pod_get_deleting_pod_with_offset_time),
	KFX_TEST(invalid_names_make_no_request),
	KFX_TEST(list_metadata_three_pages),
	KFX_TEST(list_full_objects_in_namespace),
	KFX_TEST(list_restarts_on_410_expired),
	KFX_TEST(list_410_restarts_are_bounded),
	KFX_TEST(list_first_page_410_is_not_restarted),
	KFX_TEST(list_callback_stops_listing),
	KFX_TEST(list_malformed_answers_are_invalid),
	KFX_TEST(pod_get_malformed_answers_are_invalid),
	KFX_TEST(owner_replicaset_resolves_to_deployment),
	KFX_TEST(owner_job_statefulset_and_bare_need_no_request),
	cmocka_unit_test(name_validators))
