/*
 * test_gh_auth.c - the GitHub client's credentials against fake_http, in
 * virtual time: the App JWT (header, claims, RS256 signature checked with
 * the public key), installation tokens got, cached, renewed 5 minutes before
 * expires_at and once after a 401, installations found per owner, owners
 * matched ignoring case, rate-limit state kept per credential, and a new
 * credential set swapped in.
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

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>
#include <jansson.h>

#include "bridge/gh.h"
#include "core/config.h"
#include "core/http_client.h"
#include "core/log.h"
#include "tests/unit/helpers/fake_http.h"

#define T0 1700000000000LL /* 2023-11-14T22:13:20Z */
#define ISSUE "{\"number\":1,\"state\":\"open\",\"repository_url\":\"https://api.github.com/repos/o/r\"}"

struct fixture {
	struct fake_http *fake;
	struct gh_client *gh;
	struct cfg_github g;
	struct cfg_github_cred creds[2];
	char *pem;
	int64_t now;
	int64_t slept;
	struct buf err;
	struct gh_issue is;
};

static int64_t v_now(void *ctx)
{
	return ((struct fixture *)ctx)->now;
}

static void v_sleep(void *ctx, int64_t ms)
{
	struct fixture *fx = ctx;
	fx->slept += ms;
	fx->now += ms;
}

static char *read_key(void)
{
	const char *src = getenv("ALERTBRIDGE_SRC");
	char path[512];
	FILE *f;
	char *s = calloc(1, 65536);
	size_t n;

	snprintf(path, sizeof(path), "%s/tests/unit/data/config/secrets/app.pem",
		 src && *src ? src : ".");
	f = fopen(path, "r");
	assert_non_null(f);
	n = fread(s, 1, 65535, f);
	fclose(f);
	assert_true(n > 0);
	return s;
}

static void open_client(struct fixture *fx)
{
	struct gh_options o = { 0 };

	gh_client_free(fx->gh);
	o.api_url = fake_http_url(fx->fake);
	o.user_agent = "alertbridge-test/1";
	o.timeout_ms = 1000;
	o.max_attempts = 3;
	o.now_ms = v_now;
	o.sleep_ms = v_sleep;
	o.clock_ctx = fx;
	o.creds = gh_creds_new(&fx->g);
	fx->gh = gh_client_new(&o);
}

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	fx->fake = fake_http_start();
	fx->now = T0;
	fx->pem = read_key();
	buf_init(&fx->err, 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	gh_issue_release(&fx->is);
	gh_client_free(fx->gh);
	fake_http_stop(fx->fake);
	buf_release(&fx->err);
	free(fx->pem);
	free(fx);
	return 0;
}

static const char *auth_of(struct fixture *fx, size_t i)
{
	const struct fake_request *r = fake_http_request(fx->fake, i);
	assert_non_null(r);
	return fake_request_header(r, "authorization");
}

static void expect_uri(struct fixture *fx, size_t i, const char *method, const char *uri)
{
	const struct fake_request *r = fake_http_request(fx->fake, i);
	assert_non_null(r);
	assert_string_equal(r->method, method);
	assert_string_equal(r->uri, uri);
}

static void get_issue(struct fixture *fx, const char *repo, enum err want)
{
	gh_issue_release(&fx->is);
	enum err rc = gh_issue_get(fx->gh, repo, 1, &fx->is, &fx->err);

	if (rc != want)
		fail_msg("%s: %s", err_str(rc), buf_str(&fx->err));
}

/* A token answer expiring at T0 + expires_in_s. */
static void push_token(struct fixture *fx, const char *token, int64_t at_ms)
{
	char body[256];
	time_t t = (time_t)(at_ms / 1000);
	struct tm tm;
	char when[32];

	gmtime_r(&t, &tm);
	strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
	snprintf(body, sizeof(body), "{\"token\":\"%s\",\"expires_at\":\"%s\"}", token, when);
	fake_http_push(fx->fake, 201, NULL, body);
}

static json_t *b64url_json(const char *s, size_t n)
{
	gnutls_datum_t in, out = { 0 };
	char *std = calloc(1, n + 4);
	json_t *j;

	for (size_t i = 0; i < n; i++)
		std[i] = s[i] == '-' ? '+' : s[i] == '_' ? '/' : s[i];
	while (n % 4)
		std[n++] = '=';
	in.data = (unsigned char *)std;
	in.size = (unsigned int)n;
	assert_int_equal(gnutls_base64_decode2(&in, &out), 0);
	j = json_loadb((const char *)out.data, out.size, 0, NULL);
	gnutls_free(out.data);
	free(std);
	assert_non_null(j);
	return j;
}

/* Header and claims as GitHub documents them; the signature verifies with the public key. */
static void jwt_header_claims_signature(void **state)
{
	struct fixture *fx = *state;
	char *jwt = NULL;
	const char *dot1, *dot2;
	json_t *h, *p;
	gnutls_x509_privkey_t xk;
	gnutls_privkey_t pk;
	gnutls_pubkey_t pub;
	gnutls_datum_t keyd = { (unsigned char *)fx->pem, (unsigned int)strlen(fx->pem) };
	gnutls_datum_t data, sig = { 0 }, sig64;

	assert_int_equal(gh_app_jwt(12345, fx->pem, T0 / 1000, &jwt, &fx->err), ERR_OK);
	dot1 = strchr(jwt, '.');
	assert_non_null(dot1);
	dot2 = strchr(dot1 + 1, '.');
	assert_non_null(dot2);
	h = b64url_json(jwt, (size_t)(dot1 - jwt));
	assert_string_equal(json_string_value(json_object_get(h, "alg")), "RS256");
	assert_string_equal(json_string_value(json_object_get(h, "typ")), "JWT");
	p = b64url_json(dot1 + 1, (size_t)(dot2 - dot1 - 1));
	assert_int_equal(json_integer_value(json_object_get(p, "iat")), T0 / 1000 - 60);
	assert_int_equal(json_integer_value(json_object_get(p, "exp")), T0 / 1000 + 540);
	assert_string_equal(json_string_value(json_object_get(p, "iss")), "12345");
	assert_int_equal(json_object_size(p), 3);

	/* RS256 = RSASSA-PKCS1-v1_5 with SHA-256 over "header.payload" */
	{
		size_t n = strlen(dot2 + 1);
		char *std = calloc(1, n + 4);
		for (size_t i = 0; i < n; i++)
			std[i] = dot2[1 + i] == '-' ? '+' : dot2[1 + i] == '_' ? '/' : dot2[1 + i];
		while (n % 4)
			std[n++] = '=';
		sig64.data = (unsigned char *)std;
		sig64.size = (unsigned int)n;
		assert_int_equal(gnutls_base64_decode2(&sig64, &sig), 0);
		free(std);
	}
	assert_int_equal(gnutls_x509_privkey_init(&xk), 0);
	assert_int_equal(gnutls_x509_privkey_import(xk, &keyd, GNUTLS_X509_FMT_PEM), 0);
	assert_int_equal(gnutls_privkey_init(&pk), 0);
	assert_int_equal(gnutls_privkey_import_x509(pk, xk, 0), 0);
	assert_int_equal(gnutls_pubkey_init(&pub), 0);
	assert_int_equal(gnutls_pubkey_import_privkey(pub, pk, 0, 0), 0);
	data.data = (unsigned char *)jwt;
	data.size = (unsigned int)(dot2 - jwt);
	assert_true(gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &sig) >= 0);
	jwt[0] ^= 1; /* a changed header no longer verifies */
	assert_true(gnutls_pubkey_verify_data2(pub, GNUTLS_SIGN_RSA_SHA256, 0, &data, &sig) < 0);
	gnutls_free(sig.data);
	gnutls_pubkey_deinit(pub);
	gnutls_privkey_deinit(pk);
	gnutls_x509_privkey_deinit(xk);
	json_decref(h);
	json_decref(p);
	free(jwt);

	assert_int_equal(gh_app_jwt(1, "not a key", T0 / 1000, &jwt, &fx->err), ERR_INVALID);
	assert_null(jwt);
	assert_null(strstr(buf_str(&fx->err), "not a key"));
}

/* The token is got once, reused, renewed 5 min before expires_at. */
static void app_token_cached_and_renewed(void **state)
{
	struct fixture *fx = *state;
	const char *a;

	fx->g.app = (struct cfg_github_app){ 12345, 3, NULL, fx->pem };
	open_client(fx);
	push_token(fx, "inst-1", T0 + 3600000);
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "o/r", ERR_OK);
	expect_uri(fx, 0, "POST", "/app/installations/3/access_tokens");
	a = auth_of(fx, 0);
	assert_true(!strncmp(a, "Bearer ey", 9)); /* the JWT */
	assert_string_equal(auth_of(fx, 1), "Bearer inst-1");

	fx->now = T0 + 3600000 - 300000 - 1; /* just before the renewal point */
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "o/r", ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_string_equal(auth_of(fx, 2), "Bearer inst-1");

	fx->now = T0 + 3600000 - 300000; /* 5 min before expires_at: renewed first */
	push_token(fx, "inst-2", T0 + 7200000);
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "o/r", ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 5);
	expect_uri(fx, 3, "POST", "/app/installations/3/access_tokens");
	assert_string_equal(auth_of(fx, 4), "Bearer inst-2");
	{
		struct gh_stats s;
		gh_stats(fx->gh, &s);
		assert_int_equal(s.app_token_renewals, 2);
		assert_int_equal(s.app_token_failures, 0);
	}
}

/* A 401 on an installation token renews it once and repeats the call; twice is ERR_AUTH. */
static void app_token_renewed_after_401(void **state)
{
	struct fixture *fx = *state;
	struct gh_stats s;

	fx->g.app = (struct cfg_github_app){ 12345, 3, NULL, fx->pem };
	open_client(fx);
	push_token(fx, "inst-1", T0 + 3600000);
	fake_http_push(fx->fake, 401, NULL, "{\"message\":\"Bad credentials\"}");
	push_token(fx, "inst-2", T0 + 3600000);
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "o/r", ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 4);
	assert_string_equal(auth_of(fx, 1), "Bearer inst-1");
	expect_uri(fx, 2, "POST", "/app/installations/3/access_tokens");
	assert_string_equal(auth_of(fx, 3), "Bearer inst-2");

	fake_http_push(fx->fake, 401, NULL, "{\"message\":\"Bad credentials\"}");
	push_token(fx, "inst-3", T0 + 3600000);
	fake_http_push(fx->fake, 401, NULL, "{\"message\":\"Bad credentials\"}");
	get_issue(fx, "o/r", ERR_AUTH);
	assert_int_equal(fake_http_count(fx->fake), 7);
	gh_stats(fx->gh, &s);
	assert_int_equal(s.app_token_renewals, 3);

	/* the token endpoint refusing the JWT is a failure, counted */
	fake_http_push(fx->fake, 401, NULL, "{\"message\":\"A JSON web token could not be decoded\"}");
	fx->now += 3600000;
	get_issue(fx, "o/r", ERR_AUTH);
	gh_stats(fx->gh, &s);
	assert_int_equal(s.app_token_failures, 1);
	assert_int_equal(fake_http_count(fx->fake), 8);
}

/* Without installation_id: GET /repos/{o}/{r}/installation once per owner (any case). */
static void app_installation_found_per_owner(void **state)
{
	struct fixture *fx = *state;

	fx->g.app = (struct cfg_github_app){ 12345, 0, NULL, fx->pem };
	open_client(fx);
	fake_http_push(fx->fake, 200, NULL, "{\"id\":5,\"account\":{\"login\":\"acme\"}}");
	push_token(fx, "acme-1", T0 + 3600000);
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "acme/r", ERR_OK);
	expect_uri(fx, 0, "GET", "/repos/acme/r/installation");
	assert_true(!strncmp(auth_of(fx, 0), "Bearer ey", 9));
	expect_uri(fx, 1, "POST", "/app/installations/5/access_tokens");
	assert_string_equal(auth_of(fx, 2), "Bearer acme-1");

	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "ACME/other", ERR_OK);
	assert_int_equal(fake_http_count(fx->fake), 4);
	assert_string_equal(auth_of(fx, 3), "Bearer acme-1");

	fake_http_push(fx->fake, 200, NULL, "{\"id\":6}");
	push_token(fx, "beta-1", T0 + 3600000);
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "beta/x", ERR_OK);
	expect_uri(fx, 4, "GET", "/repos/beta/x/installation");
	expect_uri(fx, 5, "POST", "/app/installations/6/access_tokens");
	assert_string_equal(auth_of(fx, 6), "Bearer beta-1");

	fake_http_push(fx->fake, 404, NULL, "{\"message\":\"Not Found\"}");
	get_issue(fx, "gamma/x", ERR_AUTH);
	assert_non_null(strstr(buf_str(&fx->err), "GitHub App 12345 is not installed on gamma/x"));

	/* an answer without a token keeps the event (ERR_AUTH), never dead-letters it */
	fake_http_push(fx->fake, 200, NULL, "{\"id\":9}");
	fake_http_push(fx->fake, 201, NULL, "{}");
	get_issue(fx, "delta/x", ERR_AUTH);
	assert_non_null(strstr(buf_str(&fx->err), "answer lacks token or expires_at"));
}

/* Owners matched ignoring case; the default elsewhere; none: ERR_AUTH before any request. */
static void owner_matching(void **state)
{
	struct fixture *fx = *state;

	fx->g.token = "tok-default";
	fx->creds[0] = (struct cfg_github_cred){ "Acme", NULL, "tok-acme", { 0 } };
	fx->g.credentials = fx->creds;
	fx->g.credentials_count = 1;
	open_client(fx);
	assert_false(gh_dry_run(fx->gh));
	for (int i = 0; i < 3; i++)
		fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "acme/r", ERR_OK);
	get_issue(fx, "ACME/r", ERR_OK);
	get_issue(fx, "acme-two/r", ERR_OK);
	assert_string_equal(auth_of(fx, 0), "Bearer tok-acme");
	assert_string_equal(auth_of(fx, 1), "Bearer tok-acme");
	assert_string_equal(auth_of(fx, 2), "Bearer tok-default");

	fx->g.token = NULL;
	open_client(fx);
	assert_false(gh_dry_run(fx->gh));
	get_issue(fx, "zeta/r", ERR_AUTH);
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_non_null(strstr(buf_str(&fx->err), "no GitHub credential for owner \"zeta\""));

	fx->g.credentials_count = 0;
	open_client(fx);
	assert_true(gh_dry_run(fx->gh));
}

/* An exhausted rate limit of one credential does not hold another's calls. */
static void budget_per_credential(void **state)
{
	struct fixture *fx = *state;
	char hdr[128];

	fx->g.token = "tok-default";
	fx->creds[0] = (struct cfg_github_cred){ "acme", NULL, "tok-acme", { 0 } };
	fx->g.credentials = fx->creds;
	fx->g.credentials_count = 1;
	open_client(fx);
	snprintf(hdr, sizeof(hdr), "x-ratelimit-remaining: 0\nx-ratelimit-reset: %lld",
		 T0 / 1000 + 600);
	fake_http_push(fx->fake, 200, hdr, ISSUE);
	get_issue(fx, "acme/r", ERR_OK);
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "other/r", ERR_OK);
	assert_int_equal(fx->slept, 0);
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "acme/r", ERR_OK);
	assert_int_equal(fx->slept, 600000);
}

/* A set handed over with gh_client_set_creds() is used from the next call. */
static void creds_swapped(void **state)
{
	struct fixture *fx = *state;
	struct cfg_github g2 = { 0 };

	fx->g.token = "tok-old";
	open_client(fx);
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "o/r", ERR_OK);
	g2.token = "tok-new";
	gh_client_set_creds(fx->gh, gh_creds_new(&g2));
	gh_client_set_creds(fx->gh, gh_creds_new(&g2)); /* a second before any call: freed */
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "o/r", ERR_OK);
	assert_string_equal(auth_of(fx, 0), "Bearer tok-old");
	assert_string_equal(auth_of(fx, 1), "Bearer tok-new");
}

/* The text logged to f since it was opened; the caller frees it. */
static char *read_log(FILE *f)
{
	char *text = calloc(1, 65536);
	size_t n;

	assert_non_null(text);
	fflush(f);
	rewind(f);
	n = fread(text, 1, 65535, f);
	text[n] = '\0';
	return text;
}

/*
 * Hand fx's client the credentials of token (gh_creds_new()), then read an issue; returns
 * what log holds by then (free() it).
 */
static char *creds_then_get(struct fixture *fx, FILE *log, const char *token)
{
	struct cfg_github g = { 0 };

	g.token = (char *)token;
	gh_client_set_creds(fx->gh, gh_creds_new(&g));
	fake_http_push(fx->fake, 200, NULL, ISSUE);
	get_issue(fx, "o/r", ERR_OK);
	return read_log(log);
}

/*
 * "github credentials replaced" is said when they change (a reload with a
 * new token), not when a reload hands over the same ones (every start).
 */
static void creds_replaced_logged_only_on_change(void **state)
{
	struct fixture *fx = *state;
	FILE *log = tmpfile();
	char *text;

	assert_non_null(log);
	log_set_fd(fileno(log));
	fx->g.token = "tok-old";
	open_client(fx);
	text = creds_then_get(fx, log, "tok-old");
	assert_null(strstr(text, "credentials replaced"));
	free(text);
	text = creds_then_get(fx, log, "tok-new");
	assert_non_null(strstr(text, "msg=\"github credentials replaced\""));
	free(text);
	assert_string_equal(auth_of(fx, 1), "Bearer tok-new");
	log_set_fd(2);
	fclose(log);
}

static void expect_login(struct fixture *fx, const char *repo, const char *want)
{
	char *login = NULL;
	enum err rc = gh_login(fx->gh, repo, &login, &fx->err);

	if (rc != ERR_OK)
		fail_msg("gh_login(%s): %s: %s", repo, err_str(rc), buf_str(&fx->err));
	assert_string_equal(login, want);
	free(login);
}

/*
 * Each credential's own login (GET /user with its token), read once and
 * kept with it; a set handed over on reload learns its logins again (issue
 * 18 item 1: the rebuild listed creator= the default's login in another
 * organisation).
 */
static void login_per_credential_relearned_on_new_set(void **state)
{
	struct fixture *fx = *state;
	struct cfg_github g2 = { 0 };
	struct cfg_github_cred c2 = { "beta", NULL, "tok-beta-2", { 0 } };

	fx->g.token = "tok-default";
	fx->creds[0] = (struct cfg_github_cred){ "beta", NULL, "tok-beta", { 0 } };
	fx->g.credentials = fx->creds;
	fx->g.credentials_count = 1;
	open_client(fx);
	fake_http_push(fx->fake, 200, NULL, "{\"login\":\"alice\",\"id\":1}");
	fake_http_push(fx->fake, 200, NULL, "{\"login\":\"bob\",\"id\":2}");
	expect_login(fx, "acme/alerts", "alice");
	expect_login(fx, "Beta/alerts", "bob");
	expect_login(fx, "acme/other", "alice");  /* kept: no request */
	expect_login(fx, "beta/alerts", "bob");
	assert_int_equal(fake_http_count(fx->fake), 2);
	expect_uri(fx, 0, "GET", "/user");
	assert_string_equal(auth_of(fx, 0), "Bearer tok-default");
	expect_uri(fx, 1, "GET", "/user");
	assert_string_equal(auth_of(fx, 1), "Bearer tok-beta");

	g2.token = "tok-default";
	g2.credentials = &c2;
	g2.credentials_count = 1;
	gh_client_set_creds(fx->gh, gh_creds_new(&g2));
	fake_http_push(fx->fake, 200, NULL, "{\"login\":\"carol\",\"id\":3}");
	expect_login(fx, "beta/alerts", "carol");
	assert_int_equal(fake_http_count(fx->fake), 3);
	assert_string_equal(auth_of(fx, 2), "Bearer tok-beta-2");
}

/*
 * A GitHub App's login is "<slug>[bot]", the slug from GET /app with the
 * App's JWT (an installation token is refused on GET /user: issue 18 item
 * 2); no installation token is needed for it.
 */
static void app_login_is_slug_bot_from_get_app(void **state)
{
	struct fixture *fx = *state;
	char *login = NULL;

	fx->g.app = (struct cfg_github_app){ 12345, 3, NULL, fx->pem };
	open_client(fx);
	fake_http_push(fx->fake, 200, NULL, "{\"id\":12345,\"slug\":\"octo-alerts\"}");
	expect_login(fx, "acme/alerts", "octo-alerts[bot]");
	expect_login(fx, "other/alerts", "octo-alerts[bot]");
	assert_int_equal(fake_http_count(fx->fake), 1);
	expect_uri(fx, 0, "GET", "/app");
	assert_true(!strncmp(auth_of(fx, 0), "Bearer ey", 9)); /* the JWT */

	/* an answer without a slug is no login */
	open_client(fx);
	fake_http_push(fx->fake, 200, NULL, "{\"id\":12345}");
	assert_int_equal(gh_login(fx->gh, "acme/alerts", &login, &fx->err), ERR_INVALID);
	assert_null(login);
	assert_string_equal(buf_str(&fx->err), "GET /app: answer has no slug");
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN(
	T(jwt_header_claims_signature),
	T(app_token_cached_and_renewed),
	T(app_token_renewed_after_401),
	T(app_installation_found_per_owner),
	T(owner_matching),
	T(budget_per_credential),
	T(creds_replaced_logged_only_on_change),
	T(creds_swapped),
	T(login_per_credential_relearned_on_new_set),
	T(app_login_is_slug_bot_from_get_app))
