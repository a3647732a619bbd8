/*
 * kube_fixture.h - what the Kubernetes client's tests (test_kube*.c) share: a kube_client
 * on a fake_http server in virtual time (T0, sleeps advance the clock), the test data of
 * tests/unit/data/kube/, and checks of the exact request sent.  Failures end the test
 * (cmocka).
 */
#ifndef AB_TEST_KUBE_FIXTURE_H
#define AB_TEST_KUBE_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "janitor/kube.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/vclock.h"

#define T0 1714564800000LL /* 2024-05-01T12:00:00Z */
#define META "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"

/* One test's client and fake server; kfx_setup() makes it, kfx_teardown() frees it all. */
struct kfx {
	struct fake_http *fake;
	struct kube_client *kc;  /* server: the fake; token "t0k3n"; namespace "ml-team" */
	int64_t now;             /* the virtual clock, ms since the epoch; starts at T0 */
	struct vclock clock;     /* the client's, on now: .slept all told (at most 16 sleeps) */
	struct buf err;
	struct kube_pod pod;     /* released at teardown */
	char dir[256];           /* temp dir for token files, "" when unused; removed at teardown */
	char body[65536];
};

/* Per-test setup and teardown (cmocka): *state is a struct kfx. */
int kfx_setup(void **state);
int kfx_teardown(void **state);

/* A test between kfx_setup() and kfx_teardown(). */
#define KFX_TEST(test) cmocka_unit_test_setup_teardown(test, kfx_setup, kfx_teardown)

/* kube_client_new(cfg) on fx's virtual clock with a 2 s timeout; cfg's strings move into it. */
struct kube_client *kfx_new_client(struct kfx *fx, struct kube_config *cfg);

/* The text of tests/unit/data/kube/<name>, read into fx->body (valid until the next call). */
const char *kfx_fixture_text(struct kfx *fx, const char *name);

/* The i-th request had this method, URI and accept header, and the standard headers
 * (authorization "Bearer t0k3n", user-agent "alertbridge"); returns it. */
const struct fake_request *kfx_req_is(struct kfx *fx, size_t i, const char *method,
				      const char *uri, const char *accept);

/* The request's body is JSON equal to want, and its Content-Type is ctype. */
void kfx_body_is(const struct fake_request *r, const char *ctype, const char *want);

#endif
