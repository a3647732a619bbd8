/*
 * test_guard.c - web.auth in front of a route (web/guard.c), on a real server
 * on 127.0.0.1: 401 with WWW-Authenticate and no call of the route without
 * valid credentials, the route's own answer with them, open without users,
 * a client past its failed logins slowed down (429);
 * and the guard of state-changing routes (struct guard_admin): the webhook's
 * credentials or a web.auth admin, whichever is configured.
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

#include "core/auth.h"
#include "core/log.h"
#include "tests/unit/helpers/http_server_fixture.h"
#include "tests/unit/helpers/tmpdir.h"
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

/* The status of GET /guarded on s with header (NULL: none). */
static long fetch_status(struct srv *s, const char *header)
{
	struct reply r;
	long st;

	fetch(s, header, &r);
	st = r.status;
	hfx_reply_release(&r);
	return st;
}

/* A server on 127.0.0.1:0 whose only route, GET /guarded, is hfx_hello behind g. */
static struct srv *serve(struct guard *g, struct seen *sn, struct auth *a)
{
	struct srv_options so = { 0 };
	const struct hfx_route routes[] = {
		{ "GET", "/guarded", guard_handle, g },
		{ NULL, NULL, NULL, NULL },
	};

	*g = (struct guard){ a, hfx_hello, sn };
	return hfx_serve(sn, &so, routes, NULL);
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
	assert_int_equal(fetch_status(s, BAD), 401);
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

	(void)state;
	assert_int_equal(auth_new_web(NULL, &a, NULL), ERR_OK);
	s = serve(&g, &sn, a);
	assert_int_equal(fetch_status(s, NULL), 200);
	assert_int_equal(hfx_calls(&sn), 1);
	srv_free(s);
	auth_free(a);
	pthread_mutex_destroy(&sn.lock);
}

/*
 * Issue 19 item 1: each wrong password costs a bcrypt, so a client address
 * gets AUTH_FAIL_BURST of them, then 429 with Retry-After and no bcrypt; a
 * pair the cache knows still passes (the admin's page keeps polling).
 */
static void failed_logins_slow_the_client_down(void **state)
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
	assert_int_equal(fetch_status(s, GOOD), 200);
	for (int i = 0; i < AUTH_FAIL_BURST; i++)
		assert_int_equal(fetch_status(s, BAD), 401);
	fetch(s, BAD, &r);
	assert_int_equal(r.status, 429);
	assert_non_null(strstr(buf_str(&r.headers), "Retry-After: "));
	hfx_reply_release(&r);
	assert_int_equal(fetch_status(s, GOOD), 200);
	assert_int_equal(hfx_calls(&sn), 2);
	srv_free(s);
	auth_free(a);
	pthread_mutex_destroy(&sn.lock);
}

/* ---- the guard of state-changing routes ---- */

/* A reload of a config in dir whose webhook section is webhook ("" for none). */
static struct reload *reload_with(const char *dir, const char *webhook)
{
	struct reload_options ro = { 0 };
	struct config *cfg = NULL;
	struct reload *r = NULL;
	struct buf err = BUF_INIT;
	char path[160], text[512];

	snprintf(text, sizeof(text), "listen_address: 127.0.0.1:9095\n"
		 "receivers:\n  - name: r\n    repo: o/r\n%s", webhook);
	tfx_write_file(dir, "hook-token", "hook-secret\n");
	tfx_write_file(dir, "alertbridge.yml", text);
	snprintf(path, sizeof(path), "%s/alertbridge.yml", dir);
	if (cfg_load(path, &cfg, &err))
		fail_msg("%s", buf_str(&err));
	ro.config_file = path;
	assert_int_equal(reload_new(&ro, cfg, NULL, &r, &err), ERR_OK);
	buf_release(&err);
	return r;
}

/* A server whose POST and PUT /guarded are hfx_hello behind g (webhook credentials of r). */
static struct srv *serve_admin(struct guard_admin *g, struct seen *sn, struct reload *r,
			       const struct auth *admins)
{
	struct srv_options so = { 0 };
	const struct hfx_route routes[] = {
		{ "POST", "/guarded", guard_admin_handle, g },
		{ "PUT", "/guarded", guard_admin_handle, g },
		{ NULL, NULL, NULL, NULL },
	};

	*g = (struct guard_admin){ r, admins, hfx_hello, sn };
	return hfx_serve(sn, &so, routes, NULL);
}

static long post(struct srv *s, const char *method, const char *header, struct reply *r)
{
	const char *extra[] = { header, NULL };
	char url[128];

	hfx_url_for(url, sizeof(url), s, "/guarded");
	memset(r, 0, sizeof(*r));
	assert_int_equal(hfx_fetch(method, url, "", header ? extra : NULL, r), CURLE_OK);
	return r->status;
}

static long post_status(struct srv *s, const char *method, const char *header)
{
	struct reply r;
	long st = post(s, method, header, &r);

	hfx_reply_release(&r);
	return st;
}

/* One admin-guard case: a reload of a config in dir, the admins, the server. */
struct admin_case {
	char dir[64];
	struct auth *admins;  /* NULL: no web.auth */
	struct guard_admin g;
	struct reload *r;
	struct seen sn;
	struct srv *s;
};

/*
 * Start c: a config whose webhook section is webhook ("" for none) and, when with_admin,
 * web.auth's user oncall (password HASH4's) as the admin.
 */
static void admin_start(struct admin_case *c, const char *webhook, int with_admin)
{
	static struct cfg_pair user = { (char *)"oncall", (char *)HASH4 };
	static const struct cfg_web_auth wa = { &user, 1 };

	memset(c, 0, sizeof(*c));
	tfx_mkdtemp(c->dir, sizeof(c->dir), "ab-guard");
	c->r = reload_with(c->dir, webhook);
	if (with_admin)
		assert_int_equal(auth_new_web(&wa, &c->admins, NULL), ERR_OK);
	c->s = serve_admin(&c->g, &c->sn, c->r, c->admins);
}

static void admin_stop(struct admin_case *c)
{
	srv_free(c->s);
	auth_free(c->admins);
	reload_free(c->r);
	pthread_mutex_destroy(&c->sn.lock);
	tfx_remove_tree(c->dir);
}

/*
 * Issue 19 item 8: web.auth admins and no webhook credentials.  The old
 * /-/reload asked only the webhook's (none), so anyone could reload.
 */
static void admin_guard_wants_an_admin_without_webhook_credentials(void **state)
{
	struct admin_case c;
	struct reply rep;

	(void)state;
	admin_start(&c, "", 1);
	assert_int_equal(post(c.s, "POST", NULL, &rep), 401);
	assert_string_equal(buf_str(&rep.body), "Unauthorized.\n");
	assert_non_null(strstr(buf_str(&rep.headers),
			       "WWW-Authenticate: Basic realm=\"alertbridge\", charset=\"UTF-8\""));
	hfx_reply_release(&rep);
	assert_int_equal(post_status(c.s, "PUT", NULL), 401);
	assert_int_equal(post_status(c.s, "POST", BAD), 401);
	assert_int_equal(post_status(c.s, "POST", "Authorization: Bearer hook-secret"), 401);
	assert_int_equal(hfx_calls(&c.sn), 0);
	assert_int_equal(post_status(c.s, "POST", GOOD), 200);
	assert_int_equal(post_status(c.s, "PUT", GOOD), 200);
	assert_int_equal(hfx_calls(&c.sn), 2);
	admin_stop(&c);
}

/* Issue 18 item 12: the webhook's token or a web.auth admin, either passes. */
static void admin_guard_takes_the_webhook_token_or_an_admin(void **state)
{
	struct admin_case c;
	struct reply rep;

	(void)state;
	admin_start(&c, "webhook:\n  bearer_token_file: hook-token\n", 1);
	assert_int_equal(post(c.s, "POST", NULL, &rep), 401);
	/* both schemes are offered (RFC 9110 11.6.1) */
	assert_non_null(strstr(buf_str(&rep.headers), "WWW-Authenticate: Bearer realm="));
	assert_non_null(strstr(buf_str(&rep.headers), "WWW-Authenticate: Basic realm="));
	hfx_reply_release(&rep);
	assert_int_equal(post_status(c.s, "POST", "Authorization: Bearer nope"), 401);
	assert_int_equal(post_status(c.s, "POST", BAD), 401);
	assert_int_equal(hfx_calls(&c.sn), 0);
	assert_int_equal(post_status(c.s, "POST", "Authorization: Bearer hook-secret"), 200);
	assert_int_equal(post_status(c.s, "PUT", GOOD), 200);
	assert_int_equal(hfx_calls(&c.sn), 2);
	admin_stop(&c);
}

/* Only the webhook's credentials: as before, the token passes; no admin to ask. */
static void admin_guard_webhook_token_alone(void **state)
{
	struct admin_case c;
	struct reply rep;

	(void)state;
	admin_start(&c, "webhook:\n  bearer_token_file: hook-token\n", 0);
	assert_int_equal(post(c.s, "POST", GOOD, &rep), 401);
	assert_non_null(strstr(buf_str(&rep.headers), "WWW-Authenticate: Bearer realm="));
	assert_null(strstr(buf_str(&rep.headers), "WWW-Authenticate: Basic"));
	hfx_reply_release(&rep);
	assert_int_equal(post_status(c.s, "POST", "Authorization: Bearer hook-secret"), 200);
	assert_int_equal(hfx_calls(&c.sn), 1);
	admin_stop(&c);
}

/* No credential configured anywhere: open, as Prometheus' lifecycle endpoints. */
static void admin_guard_open_without_any_credential(void **state)
{
	struct admin_case c;

	(void)state;
	admin_start(&c, "", 0);
	assert_int_equal(post_status(c.s, "POST", NULL), 200);
	assert_int_equal(hfx_calls(&c.sn), 1);
	admin_stop(&c);
}

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	cmocka_unit_test(guards_the_route),
	cmocka_unit_test(open_without_users),
	cmocka_unit_test(failed_logins_slow_the_client_down),
	cmocka_unit_test(admin_guard_wants_an_admin_without_webhook_credentials),
	cmocka_unit_test(admin_guard_takes_the_webhook_token_or_an_admin),
	cmocka_unit_test(admin_guard_webhook_token_alone),
	cmocka_unit_test(admin_guard_open_without_any_credential))
