/*
 * test_auth.c - webhook authentication: bearer and Basic checks, malformed
 * headers, configuration errors, challenges, and that no errmsg ever carries
 * a secret or any part of the presented header.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/auth.h"

#define TOKEN "s3cr3t-T0ken"
#define USER "alertmanager"
#define PASS "p4ss:w0rd"  /* a ':' in the password is allowed (RFC 7617) */

/* Fragments of secrets and of the presented headers no message may contain. */
static const char *const SECRETS[] = { TOKEN, "s3cr3t", PASS, "p4ss", "w0rd", "wrong-token",
				       "YWxlcnRtYW5hZ2VyOnA0c3M6dzByZA", "bm9jb2xvbg" };

static void assert_no_secret(const char *msg)
{
	for (size_t i = 0; i < sizeof(SECRETS) / sizeof(SECRETS[0]); i++)
		if (strstr(msg, SECRETS[i]))
			fail_msg("message \"%s\" contains the secret \"%s\"", msg, SECRETS[i]);
}

static struct auth *bearer(void)
{
	struct cfg_webhook wh = { 0 };
	struct auth *a = NULL;

	wh.bearer_token = (char *)TOKEN;
	assert_int_equal(auth_new(&wh, &a, NULL), ERR_OK);
	assert_non_null(a);
	return a;
}

static struct auth *basic(void)
{
	struct cfg_webhook wh = { 0 };
	struct auth *a = NULL;

	wh.basic_auth.username = (char *)USER;
	wh.basic_auth.password = (char *)PASS;
	assert_int_equal(auth_new(&wh, &a, NULL), ERR_OK);
	assert_non_null(a);
	return a;
}

/* auth_check(a, header) must fail with ERR_AUTH and exactly want as errmsg; names header. */
static void check_rejects(const struct auth *a, const char *header, const char *want)
{
	struct buf msg = BUF_INIT;

	if (auth_check(a, header, &msg) != ERR_AUTH || strcmp(buf_str(&msg), want))
		fail_msg("\"%s\": \"%s\", want ERR_AUTH and \"%s\"", header ? header : "(none)",
			 buf_str(&msg), want);
	assert_no_secret(buf_str(&msg));
	buf_release(&msg);
}

static void check_accepts(const struct auth *a, const char *header)
{
	struct buf msg = BUF_INIT;

	if (auth_check(a, header, &msg) != ERR_OK)
		fail_msg("\"%s\" rejected: %s", header, buf_str(&msg));
	assert_string_equal(buf_str(&msg), "");
	buf_release(&msg);
}

/* base64("alertmanager:p4ss:w0rd") */
#define GOOD_BASIC "YWxlcnRtYW5hZ2VyOnA0c3M6dzByZA=="

/* The webhook's Authorization headers: accepted (want NULL) or refused with want. */
struct header_case {
	int basic; /* 0: the bearer token's auth(), 1: the Basic user's */
	const char *header, *want;
};

#define BAD_BASE64 "malformed basic credentials: not valid base64"
#define WRONG_USER_OR_PASS "invalid username or password"
#define NOT_BEARER "authorization scheme is not Bearer"

static const struct header_case header_cases[] = {
	/* bearer: accepted */
	{ 0, "Bearer " TOKEN, NULL },
	{ 0, "bearer " TOKEN, NULL },   /* scheme is case-insensitive */
	{ 0, "BEARER " TOKEN, NULL },
	{ 0, "Bearer " TOKEN " \t", NULL },  /* trailing OWS */
	{ 0, "Bearer   " TOKEN, NULL },  /* 1*SP (RFC 9110 11.4) */
	/* bearer: extra spaces */
	{ 0, "Bearer", "missing credentials after the scheme" },
	{ 0, "Bearer    ", "missing credentials after the scheme" },
	{ 0, "Bearer " TOKEN " x", "invalid bearer token" },
	{ 0, "Bearer\t" TOKEN, NOT_BEARER },
	/* bearer: wrong token */
	{ 0, "Bearer wrong-token", "invalid bearer token" },
	{ 0, "Bearer " TOKEN "x", "invalid bearer token" },   /* longer */
	{ 0, "Bearer s3cr3t", "invalid bearer token" },       /* prefix */
	{ 0, "Bearer S3CR3T-T0KEN", "invalid bearer token" },  /* case matters */
	/* bearer: missing */
	{ 0, NULL, "missing Authorization header" },
	{ 0, "", "missing Authorization header" },
	/* bearer: wrong scheme */
	{ 0, "Basic YWxlcnRtYW5hZ2VyOnA0c3M6dzByZA==", NOT_BEARER },
	{ 0, TOKEN, NOT_BEARER },  /* no scheme */
	{ 0, "Bearer" TOKEN, NOT_BEARER },
	{ 0, "Token " TOKEN, NOT_BEARER },
	/* basic: accepted */
	{ 1, "Basic " GOOD_BASIC, NULL },
	{ 1, "basic  " GOOD_BASIC " ", NULL },
	/* basic: wrong user: base64("alertmanagex:p4ss:w0rd"), base64(":p4ss:w0rd") (empty) */
	{ 1, "Basic YWxlcnRtYW5hZ2V4OnA0c3M6dzByZA==", WRONG_USER_OR_PASS },
	{ 1, "Basic OnA0c3M6dzByZA==", WRONG_USER_OR_PASS },
	/* basic: wrong password */
	{ 1, "Basic YWxlcnRtYW5hZ2VyOnA0c3M=", WRONG_USER_OR_PASS },  /* "alertmanager:p4ss" */
	{ 1, "Basic YWxlcnRtYW5hZ2VyOnA0c3M6dzByZCA=", WRONG_USER_OR_PASS }, /* "...:p4ss:w0rd " */
	{ 1, "Basic YWxlcnRtYW5hZ2VyOg==", WRONG_USER_OR_PASS },  /* "alertmanager:" */
	/* basic: bad base64 */
	{ 1, "Basic YWxlcnRtYW5hZ2VyOnA0c3M6dzByZA", BAD_BASE64 },   /* no padding */
	{ 1, "Basic YWxlcnRtYW5hZ2VyOnA0c3M6dzByZA=", BAD_BASE64 },  /* short */
	{ 1, "Basic YWxl=nRtYW5hZ2VyOnA0c3M6dzByZA==", BAD_BASE64 }, /* '=' inside */
	{ 1, "Basic YWxl*nRtYW5hZ2VyOnA0c3M6dzByZA==", BAD_BASE64 }, /* not alphabet */
	{ 1, "Basic YQ=a", BAD_BASE64 },                             /* data after '=' */
	{ 1, "Basic ====", BAD_BASE64 },
	{ 1, "Basic YWxl cnRt", BAD_BASE64 },                        /* space inside */
	/* basic: no colon (base64("nocolon")), and other refusals */
	{ 1, "Basic bm9jb2xvbg==",
	  "malformed basic credentials: no ':' between user and password" },
	{ 1, "Bearer " TOKEN, "authorization scheme is not Basic" },
	{ 1, NULL, "missing Authorization header" },
	{ 1, "Basic", "missing credentials after the scheme" },
};

/* Every header_cases row against its auth; a failure names the header. */
static void headers_accepted_or_refused(void **state)
{
	struct auth *a[2] = { bearer(), basic() };

	(void)state;
	assert_int_equal(auth_mode(a[0]), AUTH_BEARER);
	assert_int_equal(auth_mode(a[1]), AUTH_BASIC);
	for (size_t i = 0; i < sizeof(header_cases) / sizeof(header_cases[0]); i++) {
		const struct header_case *c = &header_cases[i];

		if (c->want)
			check_rejects(a[c->basic], c->header, c->want);
		else
			check_accepts(a[c->basic], c->header);
	}
	auth_free(a[0]);
	auth_free(a[1]);
}

static void bearer_too_long(void **state)
{
	struct auth *a = bearer();
	char h[8 + AUTH_MAX_CREDENTIALS_BYTES + 2];

	(void)state;
	memcpy(h, "Bearer ", 7);
	memset(h + 7, 'a', AUTH_MAX_CREDENTIALS_BYTES + 1);
	h[7 + AUTH_MAX_CREDENTIALS_BYTES + 1] = '\0';
	check_rejects(a, h, "credentials too long");
	auth_free(a);
}

static void open_when_nothing_configured(void **state)
{
	struct cfg_webhook wh = { 0 };
	struct auth *a = NULL;

	(void)state;
	assert_int_equal(auth_new(&wh, &a, NULL), ERR_OK);
	assert_int_equal(auth_mode(a), AUTH_NONE);
	assert_int_equal(auth_check(a, NULL, NULL), ERR_OK);
	assert_int_equal(auth_check(a, "Bearer anything", NULL), ERR_OK);
	assert_null(auth_challenge(a));
	auth_free(a);
	assert_int_equal(auth_new(NULL, &a, NULL), ERR_OK);
	assert_int_equal(auth_mode(a), AUTH_NONE);
	auth_free(a);
	assert_int_equal(auth_mode(NULL), AUTH_NONE);
	assert_int_equal(auth_check(NULL, NULL, NULL), ERR_OK);
	auth_free(NULL);
}

static void challenges(void **state)
{
	struct auth *a = bearer(), *b = basic();

	(void)state;
	assert_string_equal(auth_challenge(a), "Bearer realm=\"alertbridge\"");
	assert_string_equal(auth_challenge(b), "Basic realm=\"alertbridge\", charset=\"UTF-8\"");
	assert_null(auth_challenge(NULL));
	auth_free(a);
	auth_free(b);
}

static void new_rejects(const struct cfg_webhook *wh, const char *want)
{
	struct buf msg = BUF_INIT;
	struct auth *a = (struct auth *)&msg;  /* must be reset to NULL */

	assert_int_equal(auth_new(wh, &a, &msg), ERR_INVALID);
	assert_null(a);
	assert_string_equal(buf_str(&msg), want);
	assert_no_secret(buf_str(&msg));
	buf_release(&msg);
}

static void config_errors(void **state)
{
	struct cfg_webhook wh = { 0 };

	(void)state;
	wh.bearer_token = (char *)TOKEN;
	wh.basic_auth.username = (char *)USER;
	wh.basic_auth.password = (char *)PASS;
	new_rejects(&wh, "webhook: bearer_token_file and basic_auth are exclusive");
	memset(&wh, 0, sizeof(wh));
	wh.bearer_token = (char *)"";
	new_rejects(&wh, "webhook: bearer token is empty");
	memset(&wh, 0, sizeof(wh));
	wh.basic_auth.username = (char *)"";
	wh.basic_auth.password = (char *)PASS;
	new_rejects(&wh, "webhook.basic_auth: username is empty");
	wh.basic_auth.username = (char *)"a:b";
	new_rejects(&wh, "webhook.basic_auth: username must not contain ':'");
	wh.basic_auth.username = (char *)USER;
	wh.basic_auth.password = NULL;
	new_rejects(&wh, "webhook.basic_auth: no password");
}

/* ---- web.auth: bcrypt users (auth_new_web) ---- */

/* "correct horse battery staple" as htpasswd -nbBC would hash it: cost 4 (fast) and 10. */
#define HASH4 "$2y$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6yG"
#define HASH10 "$2y$10$TnD4qJFgqkaiWogpqY.qW.F3RqJSEuLmh0VW.H7ERxFCttn6Bne1O"
#define ONCALL_OK "Basic b25jYWxsOmNvcnJlY3QgaG9yc2UgYmF0dGVyeSBzdGFwbGU=" /* oncall:correct... */
#define ONCALL_WRONG "Basic b25jYWxsOndyb25n"                              /* oncall:wrong */
#define NOBODY "Basic bm9ib2R5OmNvcnJlY3QgaG9yc2UgYmF0dGVyeSBzdGFwbGU="     /* nobody:correct... */
#define OPS_OK "Basic b3BzOmNvcnJlY3QgaG9yc2UgYmF0dGVyeSBzdGFwbGU="        /* ops:correct... */

static struct auth *web(const char *hash_oncall, const char *hash_ops)
{
	struct cfg_pair users[2] = { { (char *)"oncall", (char *)hash_oncall },
				     { (char *)"ops", (char *)hash_ops } };
	struct cfg_web_auth wa = { users, 2 };
	struct auth *a = NULL;

	assert_int_equal(auth_new_web(&wa, &a, NULL), ERR_OK);
	assert_non_null(a);
	return a;
}

static void web_users_bcrypt(void **state)
{
	struct auth *a = web(HASH4, "$2b$04$SmYCdmELKs64DosuJAvFuuV5AR//F.Ys6JBAsoV3.QtsyUfWlMT5K");

	(void)state;
	assert_int_equal(auth_mode(a), AUTH_BASIC_USERS);
	assert_string_equal(auth_challenge(a), "Basic realm=\"alertbridge\", charset=\"UTF-8\"");
	check_accepts(a, ONCALL_OK);
	check_accepts(a, ONCALL_OK);  /* the cache's answer is the same */
	check_rejects(a, ONCALL_WRONG, "invalid username or password");
	check_rejects(a, NOBODY, "invalid username or password");
	/* ops's hash is of "wrong": oncall's password is not ops's */
	check_rejects(a, OPS_OK, "invalid username or password");
	check_rejects(a, NULL, "missing Authorization header");
	check_rejects(a, "Bearer x", "authorization scheme is not Basic");
	auth_free(a);
}

static void web_open_without_users(void **state)
{
	struct cfg_web_auth wa = { NULL, 0 };
	struct auth *a = NULL;

	(void)state;
	assert_int_equal(auth_new_web(&wa, &a, NULL), ERR_OK);
	assert_int_equal(auth_mode(a), AUTH_NONE);
	check_accepts(a, NULL);
	auth_free(a);
	assert_int_equal(auth_new_web(NULL, &a, NULL), ERR_OK);
	assert_int_equal(auth_mode(a), AUTH_NONE);
	auth_free(a);
}

static void web_rejects_bad_users(void **state)
{
	struct cfg_pair bad_hash = { (char *)"oncall", (char *)"$1$salt$notbcrypt" };
	struct cfg_pair bad_name = { (char *)"on:call", (char *)HASH4 };
	struct cfg_web_auth wa = { &bad_hash, 1 };
	struct buf msg = BUF_INIT;
	struct auth *a = (struct auth *)0x1;

	(void)state;
	assert_int_equal(auth_new_web(&wa, &a, &msg), ERR_INVALID);
	assert_null(a);
	assert_string_equal(buf_str(&msg), "web.auth.basic_auth_users.oncall: not a bcrypt hash");
	wa.basic_auth_users = &bad_name;
	assert_int_equal(auth_new_web(&wa, &a, &msg), ERR_INVALID);
	assert_string_equal(buf_str(&msg),
			    "web.auth.basic_auth_users: a user name is empty or has ':'");
	buf_release(&msg);
}

static int64_t check_us(const struct auth *a, const char *header, enum err want)
{
	struct timespec t0, t1;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	assert_int_equal(auth_check(a, header, NULL), want);
	clock_gettime(CLOCK_MONOTONIC, &t1);
	return (t1.tv_sec - t0.tv_sec) * 1000000 + (t1.tv_nsec - t0.tv_nsec) / 1000;
}

/*
 * Cost 10 is tens of ms of CPU per check: the first check of a pair pays it,
 * the next ones (a Prometheus scraping /metrics) take the cache; a wrong
 * password is never cached and an unknown user costs a bcrypt too.
 */
static void web_cache_skips_bcrypt(void **state)
{
	struct auth *a = web(HASH10, HASH10);
	int64_t first, cached, wrong, unknown;

	(void)state;
	first = check_us(a, ONCALL_OK, ERR_OK);
	cached = check_us(a, ONCALL_OK, ERR_OK);
	wrong = check_us(a, ONCALL_WRONG, ERR_AUTH);
	unknown = check_us(a, NOBODY, ERR_AUTH);
	print_message("bcrypt cost 10: first check %lld us, cached %lld us, wrong password %lld us, "
		      "unknown user %lld us\n", (long long)first, (long long)cached,
		      (long long)wrong, (long long)unknown);
	assert_true(first > 10 * cached);
	assert_true(wrong > 10 * cached);
	assert_true(unknown > 10 * cached);
	auth_free(a);
}

/* auth_check_cached(): never a bcrypt; ERR_RETRY until auth_check() cached the pair. */
static void web_cached_check_never_bcrypts(void **state)
{
	struct auth *a = web(HASH4, HASH4);
	struct buf msg = BUF_INIT;

	(void)state;
	assert_int_equal(auth_check_cached(a, ONCALL_OK, &msg), ERR_RETRY);
	assert_string_equal(buf_str(&msg), "");
	assert_int_equal(auth_check_cached(a, ONCALL_WRONG, &msg), ERR_RETRY);
	/* What needs no bcrypt is answered as auth_check() does. */
	assert_int_equal(auth_check_cached(a, NULL, &msg), ERR_AUTH);
	assert_string_equal(buf_str(&msg), "missing Authorization header");
	assert_int_equal(auth_check_cached(a, "Basic !!!!", &msg), ERR_AUTH);
	assert_int_equal(auth_check(a, ONCALL_OK, NULL), ERR_OK);
	assert_int_equal(auth_check_cached(a, ONCALL_OK, NULL), ERR_OK);
	/* A failure is not cached: still a bcrypt's to tell. */
	assert_int_equal(auth_check(a, ONCALL_WRONG, NULL), ERR_AUTH);
	assert_int_equal(auth_check_cached(a, ONCALL_WRONG, NULL), ERR_RETRY);
	buf_release(&msg);
	auth_free(a);
}

/* AUTH_FAIL_BURST failures from one address, then it waits; other addresses do not. */
static void web_failed_logins_per_client(void **state)
{
	struct auth *a = web(HASH4, HASH4);
	struct auth *open = NULL;
	unsigned w;

	(void)state;
	for (int i = 0; i < AUTH_FAIL_BURST; i++) {
		assert_int_equal(auth_client_wait_s(a, "192.0.2.7"), 0);
		auth_client_failed(a, "192.0.2.7");
	}
	w = auth_client_wait_s(a, "192.0.2.7");
	assert_true(w >= 1 && w <= AUTH_FAIL_INTERVAL_S);
	assert_int_equal(auth_client_wait_s(a, "192.0.2.8"), 0);
	assert_int_equal(auth_client_wait_s(a, NULL), 0);
	/*
	 * The table is bounded: 300 other addresses, one failure each, take the
	 * least penalized slots, not the slot of the one that must wait.
	 */
	for (int i = 0; i < 300; i++) {
		char addr[32];
		snprintf(addr, sizeof(addr), "10.0.%d.%d", i / 200, i % 200);
		auth_client_failed(a, addr);
	}
	assert_true(auth_client_wait_s(a, "192.0.2.7") >= 1);
	auth_free(a);
	assert_int_equal(auth_new_web(NULL, &open, NULL), ERR_OK);
	auth_client_failed(open, "192.0.2.7");
	assert_int_equal(auth_client_wait_s(open, "192.0.2.7"), 0);
	auth_free(open);
}

/* The format check is libxcrypt's crypt_checksalt(3), plus bcrypt's prefix and length. */
static void web_hash_format(void **state)
{
	const char *bad[] = {
		"$2x$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6yG", /* legacy $2x$ */
		"$2y$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6y!", /* not base64 */
		"$2y$04$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq6y",  /* short */
		"$6$saltsalt$KsfkKg3KYv7M711Zh34x3OXldfa/YEZZ2dCpwrEHKvXEeEUVGq", /* sha512crypt */
	};

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct cfg_pair u = { (char *)"oncall", (char *)bad[i] };
		struct cfg_web_auth wa = { &u, 1 };
		struct auth *a = NULL;

		assert_int_equal(auth_new_web(&wa, &a, NULL), ERR_INVALID);
	}
}

UNIT_MAIN(
	cmocka_unit_test(headers_accepted_or_refused),
	cmocka_unit_test(bearer_too_long),
	cmocka_unit_test(open_when_nothing_configured),
	cmocka_unit_test(challenges),
	cmocka_unit_test(config_errors),
	cmocka_unit_test(web_users_bcrypt),
	cmocka_unit_test(web_open_without_users),
	cmocka_unit_test(web_rejects_bad_users),
	cmocka_unit_test(web_cache_skips_bcrypt),
	cmocka_unit_test(web_cached_check_never_bcrypts),
	cmocka_unit_test(web_failed_logins_per_client),
	cmocka_unit_test(web_hash_format))
