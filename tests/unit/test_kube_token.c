/*
 * test_kube_token.c - the in-cluster Kubernetes client's token file: re-read when the
 * kubelet rotates it, once more on a 401.
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

#include <fcntl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "janitor/kube.h"
#include "tests/unit/helpers/kube_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

/* ---- in-cluster token rotation ---- */

static void write_file(const char *dir, const char *name, const char *text, time_t mtime)
{
	char p[128];
	struct timespec ts[2] = { { mtime, 0 }, { mtime, 0 } };

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	tfx_write_file(NULL, p, text);
	assert_int_equal(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static struct kube_client *incluster_client(struct kfx *fx)
{
	struct kube_config cfg;

	tfx_mkdtemp(fx->dir, sizeof(fx->dir), "test_kube");
	write_file(fx->dir, "token", "tok-1\n", 1000);
	write_file(fx->dir, "namespace", "alertbridge", 1000);
	setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_incluster(fx->dir, &cfg, &fx->err), ERR_OK);
	assert_string_equal(cfg.server, "https://10.96.0.1:443");
	assert_null(cfg.ca_file); /* no ca.crt in the directory */
	free(cfg.server);
	cfg.server = strdup(fake_http_url(fx->fake)); /* the fake speaks plain http */
	return kfx_new_client(fx, &cfg);
}

static const char *auth_of(struct kfx *fx, size_t i)
{
	return fake_request_header(fake_http_request(fx->fake, i), "authorization");
}

static void incluster_token_is_reread_when_it_rotates(void **state)
{
	/* Each step writes the token file (unless NULL), lets time pass, then GETs a pod. */
	static const struct {
		const char *why;
		const char *token;
		int64_t mtime_s;
		int64_t advance_ms;
		const char *want;  /* the GET's Authorization */
	} steps[] = {
		{ "the token at start", NULL, 0, 0, "Bearer tok-1" },
		{ "kubelet rotates the projected token: new content, new mtime", "tok-2", 2000, 0,
		  "Bearer tok-2" },
		{ "same mtime and size: kept until a minute passed", "tok-3", 2000, 0,
		  "Bearer tok-2" },
		{ "a minute passed", NULL, 0, 60000, "Bearer tok-3" },
		{ "a vanished file keeps the last token", "", 3000, 0, "Bearer tok-3" },
	};
	struct kfx *fx = *state;
	struct kube_client *kc = incluster_client(fx);
	struct kube_pod p;

	assert_string_equal(kube_client_namespace(kc), "alertbridge");
	assert_string_equal(kube_client_source(kc), "in-cluster");
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++)
		fake_http_push(fx->fake, 200, NULL, kfx_fixture_text(fx, "pod_running_deleting.json"));
	for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		const char *got;

		if (steps[i].token)
			write_file(fx->dir, "token", steps[i].token, steps[i].mtime_s);
		fx->now += steps[i].advance_ms;
		assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_OK);
		kube_pod_release(&p);
		got = auth_of(fx, i);
		if (!got || strcmp(got, steps[i].want))
			fail_msg("step %zu (%s): %s, want %s", i, steps[i].why,
				 got ? got : "no Authorization", steps[i].want);
	}
	kube_client_free(kc);
}

static void unauthorized_rereads_token_once(void **state)
{
	struct kfx *fx = *state;
	struct kube_client *kc = incluster_client(fx);
	struct kube_pod p;
	const char *unauth = "{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"message\":"
			     "\"Unauthorized\",\"code\":401}";

	fake_http_push(fx->fake, 401, NULL, unauth);
	fake_http_push(fx->fake, 200, NULL, kfx_fixture_text(fx, "pod_running_deleting.json"));
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

UNIT_MAIN(
	KFX_TEST(incluster_token_is_reread_when_it_rotates),
	KFX_TEST(unauthorized_rereads_token_once))
