/*
 * test_guard.c - web.auth in front of a route (web/guard.c), on a real server
 * on 127.0.0.1: 401 with WWW-Authenticate and no call of the route without
 * valid credentials, the route's own answer with them, open without users.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/auth.h"
#include "core/log.h"
#include "tests/unit/helpers/http_server_fixture.h"
#include "web/guard.h"

/* "correct horse battery staple" at bcrypt cost 4. */
#define HASH4 "$2y$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6yG"
/* oncall:correct horse battery staple, and oncall:wrong */
#define GOOD "Authorization: Basic b25jYWxsOmNvcnJlY3QgaG9yc2UgYmF0dGVyeSBzdGFwbGU="
#define BAD "Authorization: Basic b25jYWxsOndyb25n"

static void fetch(struct srv *s, const char *header, struct reply *r)
{
	const char *extra[] = { header, NULL };
	char url[128];

	hfx_url_for(url, sizeof(url), s, "/guarded");
	memset(r, 0, sizeof(*r));
	assert_int_equal(hfx_fetch("GET", url, NULL, header ? extra : NULL, r), CURLE_OK);
}

/* A server on 127.0.0.1:0 whose only route, GET /guarded, is hfx_hello behind g. */
static struct srv *serve(struct guard *g, struct seen *sn, struct auth *a)
{
	struct srv_options so = { 0 };
	struct buf err = BUF_INIT;
	struct srv *s = NULL;

	memset(sn, 0, sizeof(*sn));
	pthread_mutex_init(&sn->lock, NULL);
	*g = (struct guard){ a, hfx_hello, sn };
	so.listen_address = "127.0.0.1:0";
	so.timeout_s = 5;
	assert_int_equal(srv_new(&so, &s, &err), ERR_OK);
	assert_int_equal(srv_route(s, "GET", "/guarded", guard_handle, g), ERR_OK);
	assert_int_equal(srv_start(s, &err), ERR_OK);
	buf_release(&err);
	return s;
}

static void guards_the_route(void **state)
{
	struct cfg_pair user = { (char *)"oncall", (char *)HASH4 };
	struct cfg_web_auth wa = { &user, 1 };
	struct seen sn;
	struct auth *a = NULL;
	struct guard g;
	struct srv *s;
	struct reply r;

	(void)state;
	assert_int_equal(auth_new_web(&wa, &a, NULL), ERR_OK);
	s = serve(&g, &sn, a);
	fetch(s, NULL, &r);
	assert_int_equal(r.status, 401);
	assert_string_equal(buf_str(&r.body), "Unauthorized.\n");
	assert_non_null(strstr(buf_str(&r.headers),
			       "WWW-Authenticate: Basic realm=\"alertbridge\", charset=\"UTF-8\""));
	hfx_reply_release(&r);
	fetch(s, BAD, &r);
	assert_int_equal(r.status, 401);
	hfx_reply_release(&r);
	assert_int_equal(hfx_calls(&sn), 0);
	fetch(s, GOOD, &r);
	assert_int_equal(r.status, 200);
	assert_string_equal(buf_str(&r.body), "hello GET");
	hfx_reply_release(&r);
	assert_int_equal(hfx_calls(&sn), 1);
	srv_free(s);
	auth_free(a);
	pthread_mutex_destroy(&sn.lock);
}

static void open_without_users(void **state)
{
	struct auth *a = NULL;
	struct guard g;
	struct seen sn;
	struct srv *s;
	struct reply r;

	(void)state;
	assert_int_equal(auth_new_web(NULL, &a, NULL), ERR_OK);
	s = serve(&g, &sn, a);
	fetch(s, NULL, &r);
	assert_int_equal(r.status, 200);
	hfx_reply_release(&r);
	assert_int_equal(hfx_calls(&sn), 1);
	srv_free(s);
	auth_free(a);
	pthread_mutex_destroy(&sn.lock);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(guards_the_route),
		cmocka_unit_test(open_without_users),
	};

	log_setup(LOG_ERROR, LOG_LOGFMT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
