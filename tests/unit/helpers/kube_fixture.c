/*
 * kube_fixture.c - a Kubernetes client on a fake server in virtual time, and the checks of
 * what it sent (kube_fixture.h).
 */
#include "tests/unit/helpers/kube_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include <jansson.h>

#include "core/log.h"
#include "tests/unit/helpers/tmpdir.h"

struct kube_client *kfx_new_client(struct kfx *fx, struct kube_config *cfg)
{
	struct kube_options o = { 0 };

	o.now_ms = vclock_now;
	o.sleep_ms = vclock_sleep;
	o.clock_ctx = &fx->clock;
	o.timeout_ms = 2000;
	return kube_client_new(cfg, &o);
}

int kfx_setup(void **state)
{
	struct kfx *fx = calloc(1, sizeof(*fx));
	struct kube_config cfg = KUBE_CONFIG_INIT;

	log_setup(LOG_ERROR, LOG_LOGFMT);
	fx->fake = fake_http_start();
	fx->now = T0;
	fx->clock.at = &fx->now;
	fx->clock.most = 16;
	buf_init(&fx->err, 0);
	cfg.server = strdup(fake_http_url(fx->fake));
	cfg.token = strdup("t0k3n");
	cfg.namespace = strdup("ml-team");
	fx->kc = kfx_new_client(fx, &cfg);
	assert_null(cfg.server); /* moved */
	*state = fx;
	return 0;
}

static void rm_dir(const char *dir)
{
	tfx_remove_tree(dir);
}

int kfx_teardown(void **state)
{
	struct kfx *fx = *state;
	kube_pod_release(&fx->pod);
	kube_client_free(fx->kc);
	fake_http_stop(fx->fake);
	buf_release(&fx->err);
	if (fx->dir[0])
		rm_dir(fx->dir);
	free(fx);
	return 0;
}

const char *kfx_fixture_text(struct kfx *fx, const char *name)
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

const struct fake_request *kfx_req_is(struct kfx *fx, size_t i, const char *method,
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

void kfx_body_is(const struct fake_request *r, const char *ctype, const char *want)
{
	json_t *a = json_loads(r->body, 0, NULL), *b = json_loads(want, 0, NULL);

	assert_non_null(b);
	if (!a || !json_equal(a, b))
		fail_msg("body %s\n  want %s", r->body, want);
	assert_string_equal(fake_request_header(r, "content-type"), ctype);
	json_decref(a);
	json_decref(b);
}
