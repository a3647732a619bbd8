/*
 * test_kube_errors.c - the Kubernetes client's errors against fake_http in virtual time:
 * Status codes mapped, messages quoted safely, Retry-After honoured once, timeouts and
 * refused connections to retry.
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

#include <time.h>

#include "core/log.h"
#include "janitor/kube.h"
#include "tests/unit/helpers/kube_fixture.h"

/* ---- errors ---- */

static void status_errors_map_to_codes(void **state)
{
	struct kfx *fx = *state;
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
	struct kfx *fx = *state;

	fake_http_push(fx->fake, 404, NULL, kfx_fixture_text(fx, "status_404.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "gone", &fx->pod, &fx->err),
			 ERR_NOTFOUND);
	assert_string_equal(buf_str(&fx->err), "GET /api/v1/namespaces/ml-team/pods/gone: "
					       "404 NotFound: pods \"gone\" not found");
}

static void non_status_error_bodies_are_quoted_safely(void **state)
{
	struct kfx *fx = *state;

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
	struct kfx *fx = *state;
	const char *tmr = "{\"kind\":\"Status\",\"message\":\"too many requests\","
			  "\"reason\":\"TooManyRequests\",\"code\":429}";

	fake_http_push(fx->fake, 429, "Retry-After: 2", tmr);
	fake_http_push(fx->fake, 200, NULL, kfx_fixture_text(fx, "pod_running_deleting.json"));
	assert_int_equal(kube_pod_get(fx->kc, "ml-team", "bare", &fx->pod, &fx->err), ERR_OK);
	assert_int_equal(fx->clock.slept, 2000);
	assert_int_equal(fake_http_count(fx->fake), 2);

	fake_http_push(fx->fake, 429, "Retry-After: 1", tmr);
	fake_http_push(fx->fake, 503, "Retry-After: 1", tmr);
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "u", &fx->err), ERR_RETRY);
	assert_int_equal(fx->clock.slept, 3000);
	assert_int_equal(fake_http_count(fx->fake), 4);
	assert_string_equal(buf_str(&fx->err), "DELETE /api/v1/namespaces/ml-team/pods/bare: "
					       "503 TooManyRequests: too many requests");
	kfx_body_is(fake_http_request(fx->fake, 3), "application/json",
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
		fake_http_push(fx->fake, 200, NULL, kfx_fixture_text(fx, "pod_running_deleting.json"));
		fx->clock.slept = 0;
		kube_pod_release(&fx->pod);
		assert_int_equal(kube_pod_get(fx->kc, "ml-team", "bare", &fx->pod, &fx->err), ERR_OK);
		assert_in_range(fx->clock.slept, 3000, 4000);
		fx->clock.slept = 3000;
	}
	fake_http_push(fx->fake, 429, "Retry-After: soon", tmr);
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "u", &fx->err), ERR_RETRY);

	/* Too long a wait, or a 500, is the caller's to schedule. */
	fake_http_push(fx->fake, 429, "Retry-After: 3600", tmr);
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "u", &fx->err), ERR_RETRY);
	fake_http_push(fx->fake, 500, "Retry-After: 1", tmr);
	assert_int_equal(kube_pod_delete(fx->kc, "ml-team", "bare", "u", &fx->err), ERR_RETRY);
	assert_int_equal(fx->clock.slept, 3000);
	assert_int_equal(fake_http_count(fx->fake), 9);
}

static void timeout_and_refused_are_retry(void **state)
{
	struct kfx *fx = *state;
	struct kube_config cfg = KUBE_CONFIG_INIT;
	struct fake_http *gone = fake_http_start();
	struct kube_client *kc;

	fake_http_push_delayed(fx->fake, 3000, 200, NULL, "{}");
	assert_int_equal(kube_pod_get(fx->kc, "n", "p", &fx->pod, &fx->err), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err), "/api/v1/namespaces/n/pods/p"));
	assert_non_null(strstr(buf_str(&fx->err), "timed out"));

	cfg.server = strdup(fake_http_url(gone));
	fake_http_stop(gone);
	kc = kfx_new_client(fx, &cfg);
	assert_int_equal(kube_pod_get(kc, "n", "p", &fx->pod, &fx->err), ERR_RETRY);
	assert_non_null(strstr(buf_str(&fx->err), "GET http://127.0.0.1:"));
	kube_client_free(kc);
}

UNIT_MAIN(
	KFX_TEST(status_errors_map_to_codes),
	KFX_TEST(not_found_uses_status_message),
	KFX_TEST(non_status_error_bodies_are_quoted_safely),
	KFX_TEST(retry_after_is_honoured_once),
	KFX_TEST(timeout_and_refused_are_retry))
