/*
 * test_kube_writes.c - the Kubernetes client's writes against fake_http in virtual time:
 * the exact method, path, headers and JSON body of annotating, deleting, scaling, Events
 * and Leases, and the input each rejects.
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

#include "core/log.h"
#include "janitor/kube.h"
#include "tests/unit/helpers/kube_fixture.h"

/* ---- mutations ---- */

static void annotate_sends_merge_patch_of_annotations_only(void **state)
{
	struct kfx *fx = *state;
	const struct fake_request *r;
	struct kube_annotation changes[] = {
		{ "janitor/expires", "2024-05-02T12:00:00Z" },
		{ "janitor/reason", "idle GPU \"A100\"" },
		{ "x", NULL },
	};

	fake_http_push(fx->fake, 200, NULL, kfx_fixture_text(fx, "pod_pending.json"));
	assert_int_equal(kube_pod_annotate(fx->kc, "ml-team", "train-7d9f-abcde", changes, 3,
					   &fx->pod, &fx->err),
			 ERR_OK);
	r = kfx_req_is(fx, 0, "PATCH", "/api/v1/namespaces/ml-team/pods/train-7d9f-abcde",
		   "application/json");
	kfx_body_is(r, "application/merge-patch+json",
		"{\"metadata\":{\"annotations\":{\"janitor/expires\":\"2024-05-02T12:00:00Z\","
		"\"janitor/reason\":\"idle GPU \\\"A100\\\"\",\"x\":null}}}");
	assert_string_equal(fx->pod.uid, "5f1c2d3e-0000-4000-8000-000000000001");

	fake_http_push(fx->fake, 200, NULL, "{}");
	assert_int_equal(kube_pod_annotate(fx->kc, "ml-team", "p", changes + 2, 1, NULL, &fx->err),
			 ERR_OK);
	kfx_body_is(fake_http_request(fx->fake, 1), "application/merge-patch+json",
		"{\"metadata\":{\"annotations\":{\"x\":null}}}");
}

static void delete_pod_with_uid_precondition_background(void **state)
{
	struct kfx *fx = *state;
	const struct fake_request *r;

	fake_http_push(fx->fake, 200, NULL, kfx_fixture_text(fx, "pod_running_deleting.json"));
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "uid-bare", &fx->err), ERR_OK);
	r = kfx_req_is(fx, 0, "DELETE", "/api/v1/namespaces/ml-team/pods/bare", "application/json");
	kfx_body_is(r, "application/json",
		"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		"\"Background\",\"preconditions\":{\"uid\":\"uid-bare\"}}");
	assert_null(strstr(r->body, "gracePeriodSeconds"));
}

static void delete_job_background(void **state)
{
	struct kfx *fx = *state;
	const struct fake_request *r;

	fake_http_push(fx->fake, 200, NULL, "{\"kind\":\"Status\",\"status\":\"Success\"}");
	assert_int_equal(kube_job_delete(fx->kc, "ml-team", "train-job", "job-uid", &fx->err),
			 ERR_OK);
	r = kfx_req_is(fx, 0, "DELETE", "/apis/batch/v1/namespaces/ml-team/jobs/train-job",
		   "application/json");
	kfx_body_is(r, "application/json",
		"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		"\"Background\",\"preconditions\":{\"uid\":\"job-uid\"}}");

	fake_http_push(fx->fake, 202, NULL, "{}");
	assert_int_equal(kube_job_delete(fx->kc, "ml-team", "j2", NULL, &fx->err), ERR_OK);
	kfx_body_is(fake_http_request(fx->fake, 1), "application/json",
		"{\"kind\":\"DeleteOptions\",\"apiVersion\":\"v1\",\"propagationPolicy\":"
		"\"Background\"}");
}

static void scale_deployment_and_statefulset(void **state)
{
	struct kfx *fx = *state;

	fake_http_push(fx->fake, 200, NULL, "{\"kind\":\"Scale\"}");
	fake_http_push(fx->fake, 200, NULL, "{\"kind\":\"Scale\"}");
	assert_int_equal(kube_scale(fx->kc, KUBE_DEPLOYMENT, "ml-team", "train", 0, &fx->err),
			 ERR_OK);
	assert_int_equal(kube_scale(fx->kc, KUBE_STATEFULSET, "ml-team", "db", 0, &fx->err),
			 ERR_OK);
	kfx_body_is(kfx_req_is(fx, 0, "PATCH", "/apis/apps/v1/namespaces/ml-team/deployments/train/scale",
		       "application/json"),
		"application/merge-patch+json", "{\"spec\":{\"replicas\":0}}");
	kfx_body_is(kfx_req_is(fx, 1, "PATCH", "/apis/apps/v1/namespaces/ml-team/statefulsets/db/scale",
		       "application/json"),
		"application/merge-patch+json", "{\"spec\":{\"replicas\":0}}");
}

static void event_create_exact_body(void **state)
{
	struct kfx *fx = *state;
	const struct fake_request *r;
	struct kube_event ev = { "ml-team", "train-7d9f-abcde", "uid-1", "123456", "Warning",
				 "JanitorMarked", "idle for 24h; deletion at 2024-05-02T12:00:00Z",
				 T0 };
	char want[1024];

	fake_http_push(fx->fake, 201, NULL, "{\"kind\":\"Event\"}");
	assert_int_equal(kube_event_create(fx->kc, &ev, &fx->err), ERR_OK);
	r = kfx_req_is(fx, 0, "POST", "/api/v1/namespaces/ml-team/events", "application/json");
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
	kfx_body_is(r, "application/json", want);

	/* A second event in the same millisecond gets another name. */
	fake_http_push(fx->fake, 201, NULL, "{}");
	assert_int_equal(kube_event_create(fx->kc, &ev, &fx->err), ERR_OK);
	snprintf(want, sizeof(want), "\"name\":\"train-7d9f-abcde.%llx\"",
		 (unsigned long long)T0 * 1000000ULL + 1);
	assert_non_null(strstr(fake_http_request(fx->fake, 1)->body, want));
}

static void event_long_message_is_cut_and_bad_input_rejected(void **state)
{
	struct kfx *fx = *state;
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

/* ---- leases ---- */

#define LEASE_ANSWER                                                                         \
	"{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":\"Lease\",\"metadata\":{\"name\":" \
	"\"alertbridge\",\"namespace\":\"alertbridge\",\"resourceVersion\":\"42\"},\"spec\":{"  \
	"\"holderIdentity\":\"pod-a\",\"leaseDurationSeconds\":15,\"acquireTime\":"           \
	"\"2024-05-01T12:00:00.000000Z\",\"renewTime\":\"2024-05-01T12:00:10.250000Z\","      \
	"\"leaseTransitions\":3}}"

static void lease_get_create_update(void **state)
{
	struct kfx *fx = *state;
	struct kube_lease got, in = { 0 };
	const char *spec = "\"spec\":{\"holderIdentity\":\"pod-a\",\"leaseDurationSeconds\":15,"
			   "\"acquireTime\":\"2024-05-01T12:00:00.000000Z\",\"renewTime\":"
			   "\"2024-05-01T12:00:10.250000Z\",\"leaseTransitions\":3}";
	char want[1024];

	fake_http_push(fx->fake, 200, NULL, LEASE_ANSWER);
	assert_int_equal(kube_lease_get(fx->kc, "alertbridge", "alertbridge", &got, &fx->err),
			 ERR_OK);
	kfx_req_is(fx, 0, "GET", "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases/"
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
	kfx_body_is(kfx_req_is(fx, 1, "POST", "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases",
		       "application/json"),
		"application/json", want);
	kube_lease_release(&got);

	in.resource_version = "42";
	fake_http_push(fx->fake, 200, NULL, LEASE_ANSWER);
	assert_int_equal(kube_lease_update(fx->kc, &in, &got, &fx->err), ERR_OK);
	snprintf(want, sizeof(want), "{\"apiVersion\":\"coordination.k8s.io/v1\",\"kind\":"
		 "\"Lease\",\"metadata\":{\"name\":\"alertbridge\",\"namespace\":\"alertbridge\","
		 "\"resourceVersion\":\"42\"},%s}", spec);
	kfx_body_is(kfx_req_is(fx, 2, "PUT", "/apis/coordination.k8s.io/v1/namespaces/alertbridge/leases/"
				     "alertbridge", "application/json"),
		"application/json", want);
	kube_lease_release(&got);
}

static void lease_conflicts_and_bad_input(void **state)
{
	struct kfx *fx = *state;
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

UNIT_MAIN(
	KFX_TEST(annotate_sends_merge_patch_of_annotations_only),
	KFX_TEST(delete_pod_with_uid_precondition_background),
	KFX_TEST(delete_job_background),
	KFX_TEST(scale_deployment_and_statefulset),
	KFX_TEST(event_create_exact_body),
	KFX_TEST(event_long_message_is_cut_and_bad_input_rejected),
	KFX_TEST(lease_get_create_update),
	KFX_TEST(lease_conflicts_and_bad_input))
