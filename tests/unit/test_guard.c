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

#define CHALLENGE "WWW-Authenticate: Basic realm=\"alertbridge\", charset=\"UTF-8\""

/* One request of a case, and what its answer must be. */
struct step {
	const char *method;  /* NULL ends the steps */
	const char *header;  /* a request header; NULL: none */
	long status;
	int calls;           /* hfx_calls() after it; -1: not asserted */
	const char *body;    /* the answer's body; NULL: not asserted */
	const char *has[2];  /* what the answer's headers hold; NULL: nothing (more) */
	const char *lacks;   /* what they do not hold; NULL: nothing */
	int times;           /* how many times it is sent; 0: once */
};

/* A case: its name (its cmocka test's, UNIT_CASE()) and its steps. */
struct guard_case {
	const char *name;
	int users;            /* web.auth's user oncall (HASH4) configured; else none */
	const char *webhook;  /* admin guard: the config's webhook section ("" for none) */
	struct step steps[7];  /* ended by one whose method is NULL */
};

/* method /guarded on s with header (NULL: none), a body ("") unless GET. */
static long ask(struct srv *s, const char *method, const char *header, struct reply *r)
{
	const char *extra[] = { header, NULL };

	return hfx_ask(s, method, "/guarded", strcmp(method, "GET") ? "" : NULL,
		       header ? extra : NULL, r);
}

static void step_failed(const struct guard_case *c, size_t i, const char *want, const char *got)
{
	fail_msg("%s, step %zu: want %s, got %s", c->name, i, want, got);
}

/* Send c's steps to s, whose route's calls sn counts; a failure names the case and step. */
static void run_steps(const struct guard_case *c, struct srv *s, struct seen *sn)
{
	for (size_t i = 0; c->steps[i].method; i++) {
		const struct step *t = &c->steps[i];

		for (int n = 0; n < (t->times ? t->times : 1); n++) {
			struct reply r;
			long st = ask(s, t->method, t->header, &r);
			const char *h = buf_str(&r.headers);

			if (st != t->status)
				fail_msg("%s, step %zu: status %ld, want %ld", c->name, i, st,
					 t->status);
			if (t->body && strcmp(buf_str(&r.body), t->body))
				step_failed(c, i, t->body, buf_str(&r.body));
			for (size_t k = 0; k < 2 && t->has[k]; k++)
				if (!strstr(h, t->has[k]))
					step_failed(c, i, t->has[k], h);
			if (t->lacks && strstr(h, t->lacks))
				step_failed(c, i, t->lacks, h);
			hfx_reply_release(&r);
		}
		if (t->calls >= 0 && hfx_calls(sn) != t->calls)
			fail_msg("%s, step %zu: %d calls, want %d", c->name, i, hfx_calls(sn),
				 t->calls);
	}
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

/*
 * GET /guarded behind web.auth: 401 with the challenge and no call without valid
 * credentials, the route's answer with them; open without users.  Issue 19 item 1: each
 * wrong password costs a bcrypt, so a client address gets AUTH_FAIL_BURST of them, then 429
 * with Retry-After and no bcrypt; a pair the cache knows still passes (the admin's page
 * keeps polling).
 */
static const struct guard_case guard_cases[] = {
	{ "guards_the_route", 1, NULL, {
		{ "GET", NULL, 401, -1, "Unauthorized.\n", { CHALLENGE }, NULL, 0 },
		{ "GET", BAD, 401, 0, NULL, { NULL }, NULL, 0 },
		{ "GET", GOOD, 200, 1, "hello GET", { NULL }, NULL, 0 },
	} },
	{ "open_without_users", 0, NULL, {
		{ "GET", NULL, 200, 1, NULL, { NULL }, NULL, 0 },
	} },
	{ "failed_logins_slow_the_client_down", 1, NULL, {
		{ "GET", GOOD, 200, -1, NULL, { NULL }, NULL, 0 },
		{ "GET", BAD, 401, -1, NULL, { NULL }, NULL, AUTH_FAIL_BURST },
		{ "GET", BAD, 429, -1, NULL, { "Retry-After: " }, NULL, 0 },
		{ "GET", GOOD, 200, 2, NULL, { NULL }, NULL, 0 },
	} },
};

static void run_guard_case(void **state)
{
	static struct cfg_pair user = { (char *)"oncall", (char *)HASH4 };
	static const struct cfg_web_auth wa = { &user, 1 };
	const struct guard_case *c = *state;
	struct auth *a = NULL;
	struct guard g;
	struct seen sn;
	struct srv *s;

	assert_int_equal(auth_new_web(c->users ? &wa : NULL, &a, NULL), ERR_OK);
	s = serve(&g, &sn, a);
	run_steps(c, s, &sn);
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
 * POST and PUT /guarded behind the admin guard.  Issue 19 item 8: web.auth admins and no
 * webhook credentials (the old /-/reload asked only the webhook's, none, so anyone could
 * reload).  Issue 18 item 12: the webhook's token or a web.auth admin, either passes, both
 * schemes offered (RFC 9110 11.6.1).  Only the webhook's credentials: as before, the token
 * passes; no admin to ask.  No credential configured anywhere: open, as Prometheus'
 * lifecycle endpoints.
 */
#define HOOK "webhook:\n  bearer_token_file: hook-token\n"
#define HOOK_TOKEN "Authorization: Bearer hook-secret"
static const struct guard_case admin_cases[] = {
	{ "admin_guard_wants_an_admin_without_webhook_credentials", 1, "", {
		{ "POST", NULL, 401, -1, "Unauthorized.\n", { CHALLENGE }, NULL, 0 },
		{ "PUT", NULL, 401, -1, NULL, { NULL }, NULL, 0 },
		{ "POST", BAD, 401, -1, NULL, { NULL }, NULL, 0 },
		{ "POST", HOOK_TOKEN, 401, 0, NULL, { NULL }, NULL, 0 },
		{ "POST", GOOD, 200, -1, NULL, { NULL }, NULL, 0 },
		{ "PUT", GOOD, 200, 2, NULL, { NULL }, NULL, 0 },
	} },
	{ "admin_guard_takes_the_webhook_token_or_an_admin", 1, HOOK, {
		{ "POST", NULL, 401, -1, NULL,
		  { "WWW-Authenticate: Bearer realm=", "WWW-Authenticate: Basic realm=" },
		  NULL, 0 },
		{ "POST", "Authorization: Bearer nope", 401, -1, NULL, { NULL }, NULL, 0 },
		{ "POST", BAD, 401, 0, NULL, { NULL }, NULL, 0 },
		{ "POST", HOOK_TOKEN, 200, -1, NULL, { NULL }, NULL, 0 },
		{ "PUT", GOOD, 200, 2, NULL, { NULL }, NULL, 0 },
	} },
	{ "admin_guard_webhook_token_alone", 0, HOOK, {
		{ "POST", GOOD, 401, -1, NULL, { "WWW-Authenticate: Bearer realm=" },
		  "WWW-Authenticate: Basic", 0 },
		{ "POST", HOOK_TOKEN, 200, 1, NULL, { NULL }, NULL, 0 },
	} },
	{ "admin_guard_open_without_any_credential", 0, "", {
		{ "POST", NULL, 200, 1, NULL, { NULL }, NULL, 0 },
	} },
};

static void run_admin_case(void **state)
{
	const struct guard_case *c = *state;
	struct admin_case ac;

	admin_start(&ac, c->webhook, c->users);
	run_steps(c, ac.s, &ac.sn);
	admin_stop(&ac);
}

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	UNIT_CASE(run_guard_case, guard_cases[0]),
	UNIT_CASE(run_guard_case, guard_cases[1]),
	UNIT_CASE(run_guard_case, guard_cases[2]),
	UNIT_CASE(run_admin_case, admin_cases[0]),
	UNIT_CASE(run_admin_case, admin_cases[1]),
	UNIT_CASE(run_admin_case, admin_cases[2]),
	UNIT_CASE(run_admin_case, admin_cases[3]))
