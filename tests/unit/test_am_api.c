/*
 * test_am_api.c - the Alertmanager API v2 client of silences (core/am_api.h)
 * against a scripted server: the exact requests (method, path, headers,
 * JSON body of a postableSilence, the filter), and each answer's error.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "core/am_api.h"
#include "core/http_client.h"
#include "tests/unit/helpers/fake_http.h"

static const struct am_api_matcher matchers[] = { { "alertname", "GPUHot" },
						  { "pod", "trainer-0" } };

static struct am_api_silence silence(void)
{
	struct am_api_silence s = { matchers, 2, 1700000000000, 1700007200000, "octocat",
				    "rollout https://github.com/o/r/issues/1 (alertbridge:comment=5)" };

	return s;
}

static int setup(void **state)
{
	(void)state;
	return http_global_init() == ERR_OK ? 0 : -1;
}

/* Each test's Alertmanager: a scripted server, a client and a target without credentials. */
struct am_env {
	struct fake_http *f;
	struct am_api *a;
	struct am_api_target t;
};

static int env_setup(void **state)
{
	struct am_env *x = calloc(1, sizeof(*x));

	if (!x)
		return -1;
	x->f = fake_http_start();
	x->a = am_api_new("alertbridge/test");
	x->t.url = fake_http_url(x->f);
	x->t.timeout_ms = 5000;
	*state = x;
	return 0;
}

static int env_teardown(void **state)
{
	struct am_env *x = *state;

	am_api_free(x->a);
	fake_http_stop(x->f);
	free(x);
	return 0;
}

/* A row of the test table: f(void **state) on a fresh am_env, *state. */
#define AM_TEST(f) cmocka_unit_test_setup_teardown(f, env_setup, env_teardown)

static void create_posts_the_silence_and_returns_its_id(void **state)
{
	struct am_env *x = *state;
	struct am_api_silence s = silence();
	const struct fake_request *r;
	char *id = NULL;
	int ambiguous = -1;
	json_t *body;

	x->t.bearer_token = "am-token";
	fake_http_push(x->f, 200, "Content-Type: application/json", "{\"silenceID\":\"abc-1\"}");
	assert_int_equal(am_api_silence_create(x->a, &x->t, &s, &id, &ambiguous, NULL), ERR_OK);
	assert_string_equal(id, "abc-1");
	assert_int_equal(ambiguous, 0);
	r = fake_http_request(x->f, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->uri, "/api/v2/silences");
	assert_string_equal(fake_request_header(r, "Authorization"), "Bearer am-token");
	assert_string_equal(fake_request_header(r, "Content-Type"), "application/json");
	body = json_loads(r->body, 0, NULL);
	assert_non_null(body);
	assert_string_equal(json_string_value(json_object_get(body, "createdBy")), "octocat");
	assert_string_equal(json_string_value(json_object_get(body, "startsAt")),
			    "2023-11-14T22:13:20.000Z");
	assert_string_equal(json_string_value(json_object_get(body, "endsAt")),
			    "2023-11-15T00:13:20.000Z");
	assert_int_equal(json_array_size(json_object_get(body, "matchers")), 2);
	{
		json_t *m = json_array_get(json_object_get(body, "matchers"), 1);

		assert_string_equal(json_string_value(json_object_get(m, "name")), "pod");
		assert_string_equal(json_string_value(json_object_get(m, "value")), "trainer-0");
		assert_true(json_is_false(json_object_get(m, "isRegex")));
		assert_true(json_is_true(json_object_get(m, "isEqual")));
	}
	json_decref(body);
	free(id);
}

static void create_refused_400_is_invalid_and_5xx_ambiguous(void **state)
{
	struct am_env *x = *state;
	struct am_api_silence s = silence();
	struct buf err = BUF_INIT;
	char *id = NULL;
	int ambiguous = -1;

	x->t.username = "am";
	x->t.password = "pw";
	fake_http_push(x->f, 400, NULL, "\"silence invalid: invalid label matcher 0\"");
	assert_int_equal(am_api_silence_create(x->a, &x->t, &s, &id, &ambiguous, &err),
			 ERR_INVALID);
	assert_null(id);
	assert_int_equal(ambiguous, 0);
	assert_non_null(strstr(buf_str(&err), "400 \"silence invalid"));
	/* RFC 7617: base64("am:pw"). */
	assert_string_equal(fake_request_header(fake_http_request(x->f, 0), "Authorization"),
			    "Basic YW06cHc=");
	fake_http_push(x->f, 500, NULL, "boom");
	assert_int_equal(am_api_silence_create(x->a, &x->t, &s, &id, &ambiguous, &err), ERR_RETRY);
	assert_int_equal(ambiguous, 1);
	/* A 200 without silenceID: made, but which? Ambiguous too. */
	fake_http_push(x->f, 200, NULL, "{}");
	assert_int_equal(am_api_silence_create(x->a, &x->t, &s, &id, &ambiguous, &err), ERR_RETRY);
	assert_int_equal(ambiguous, 1);
	/* Nothing is sent for a silence Alertmanager would refuse. */
	s.n_matchers = 0;
	assert_int_equal(am_api_silence_create(x->a, &x->t, &s, &id, &ambiguous, &err),
			 ERR_INVALID);
	assert_int_equal(fake_http_count(x->f), 3);
	buf_release(&err);
}

static void find_by_marker_skips_expired_and_others(void **state)
{
	struct am_env *x = *state;
	struct am_api_matcher quoted[] = { { "alertname", "GPUHot" }, { "path", "C:\\ \"x\"" } };
	struct am_api_silence s = silence();
	char *id = NULL;

	s.matchers = quoted;
	fake_http_push(x->f, 200, NULL,
		       "[{\"id\":\"old\",\"comment\":\"x (alertbridge:comment=5)\","
		       "\"createdBy\":\"octocat\",\"status\":{\"state\":\"expired\"}},"
		       "{\"id\":\"other\",\"comment\":\"x (alertbridge:comment=55)\","
		       "\"createdBy\":\"octocat\",\"status\":{\"state\":\"active\"}},"
		       "{\"id\":\"someone\",\"comment\":\"x (alertbridge:comment=5)\","
		       "\"createdBy\":\"mallory\",\"status\":{\"state\":\"active\"}},"
		       "{\"id\":\"mine\",\"comment\":\"x (alertbridge:comment=5)\","
		       "\"createdBy\":\"octocat\",\"status\":{\"state\":\"active\"}}]");
	assert_int_equal(am_api_silence_find(x->a, &x->t, &s, "(alertbridge:comment=5)", &id, NULL),
			 ERR_OK);
	assert_string_equal(id, "mine");
	free(id);
	/* One filter per matcher (Alertmanager filters silences by their matchers). */
	assert_string_equal(fake_http_request(x->f, 0)->uri,
			    "/api/v2/silences?filter=alertname%3D%22GPUHot%22"
			    "&filter=path%3D%22C%3A%5C%5C%20%5C%22x%5C%22%22");
	fake_http_push(x->f, 200, NULL, "[]");
	assert_int_equal(am_api_silence_find(x->a, &x->t, &s, "(alertbridge:comment=5)", &id, NULL),
			 ERR_NOTFOUND);
}

static void expire_reads_the_state_before_delete(void **state)
{
	struct am_env *x = *state;
	int was_active = -1;

	fake_http_push(x->f, 200, NULL, "{\"id\":\"s1\",\"status\":{\"state\":\"active\"}}");
	fake_http_push(x->f, 200, NULL, NULL);
	assert_int_equal(am_api_silence_expire(x->a, &x->t, "s1", &was_active, NULL), ERR_OK);
	assert_int_equal(was_active, 1);
	assert_string_equal(fake_http_request(x->f, 0)->method, "GET");
	assert_string_equal(fake_http_request(x->f, 0)->uri, "/api/v2/silence/s1");
	assert_string_equal(fake_http_request(x->f, 1)->method, "DELETE");
	assert_string_equal(fake_http_request(x->f, 1)->uri, "/api/v2/silence/s1");
	/* Already expired (Alertmanager would answer a DELETE 500): no DELETE. */
	fake_http_push(x->f, 200, NULL, "{\"id\":\"s1\",\"status\":{\"state\":\"expired\"}}");
	assert_int_equal(am_api_silence_expire(x->a, &x->t, "s1", &was_active, NULL), ERR_OK);
	assert_int_equal(was_active, 0);
	assert_int_equal(fake_http_count(x->f), 3);
	fake_http_push(x->f, 404, NULL, NULL);
	assert_int_equal(am_api_silence_expire(x->a, &x->t, "gone", &was_active, NULL),
			 ERR_NOTFOUND);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		AM_TEST(create_posts_the_silence_and_returns_its_id),
		AM_TEST(create_refused_400_is_invalid_and_5xx_ambiguous),
		AM_TEST(find_by_marker_skips_expired_and_others),
		AM_TEST(expire_reads_the_state_before_delete),
	};

	return cmocka_run_group_tests(tests, setup, NULL);
}
