/*
 * test_http_client.c - http_client against the loopback fake: requests,
 * redirects, errors, and which trust store a TLS connection reads.
 */
#include <dirent.h>
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"
#include <curl/curl.h>

#include "core/http_client.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/tmpdir.h"

struct fixture {
	struct fake_http *fake;
	struct http_client *client;
	struct http_response res;
	struct buf err;
	char url[256];
	const void *c;  /* the table case (UNIT_CASE_WITH()), else NULL */
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));
	fx->c = *state;
	fx->fake = fake_http_start();
	fx->client = http_client_new(NULL);
	http_response_init(&fx->res);
	buf_init(&fx->err, 0);
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	http_response_release(&fx->res);
	buf_release(&fx->err);
	http_client_free(fx->client);
	fake_http_stop(fx->fake);
	free(fx);
	return 0;
}

static const char *url(struct fixture *fx, const char *path)
{
	snprintf(fx->url, sizeof(fx->url), "%s%s", fake_http_url(fx->fake), path);
	return fx->url;
}

/* req (its other fields set) as method on the fake's path, by fx->client into fx->res. */
static enum err send_to(struct fixture *fx, struct http_request *req, const char *method,
			const char *path)
{
	req->method = method;
	req->url = url(fx, path);
	return http_do(fx->client, req, &fx->res, &fx->err);
}

static void get_returns_status_body_and_headers(void **state)
{
	struct fixture *fx = *state;
	const char *hdrs[] = { "Accept: application/json", "X-Test: 1", NULL };
	struct http_request req = HTTP_REQUEST_INIT;
	const struct fake_request *r;

	fake_http_push(fx->fake, 200, "X-RateLimit-Remaining:  42 \nLink: <x>; rel=\"next\"",
		       "{\"ok\":true}");
	req.headers = hdrs;
	req.timeout_ms = 1000;
	assert_int_equal(send_to(fx, &req, "GET", "/a/b?x=1&y=two"), ERR_OK);
	assert_int_equal(fx->res.status, 200);
	assert_string_equal(buf_str(&fx->res.body), "{\"ok\":true}");
	assert_string_equal(http_response_header(&fx->res, "x-ratelimit-remaining"), "42");
	assert_string_equal(http_response_header(&fx->res, "LINK"), "<x>; rel=\"next\"");
	assert_null(http_response_header(&fx->res, "retry-after"));
	assert_string_equal(fx->res.effective_url, url(fx, "/a/b?x=1&y=two"));
	assert_true(fx->res.sent);

	assert_int_equal(fake_http_count(fx->fake), 1);
	r = fake_http_request(fx->fake, 0);
	assert_string_equal(r->method, "GET");
	assert_string_equal(r->uri, "/a/b?x=1&y=two");
	assert_string_equal(fake_request_header(r, "accept"), "application/json");
	assert_string_equal(fake_request_header(r, "x-test"), "1");
	assert_null(fake_request_header(r, "expect"));
	assert_int_equal(r->body_len, 0);
}

static void post_and_patch_send_body(void **state)
{
	struct fixture *fx = *state;
	const char *hdrs[] = { "Content-Type: application/json", NULL };
	struct http_request req = HTTP_REQUEST_INIT;
	const struct fake_request *r;

	fake_http_push(fx->fake, 201, NULL, "created");
	fake_http_push(fx->fake, 200, NULL, "patched");
	req.headers = hdrs;
	req.body = "{\"a\":1}";
	req.body_len = 7;
	assert_int_equal(send_to(fx, &req, "POST", "/items"), ERR_OK);
	assert_int_equal(fx->res.status, 201);
	assert_string_equal(buf_str(&fx->res.body), "created");

	req.body = "{\"b\":2}";
	assert_int_equal(send_to(fx, &req, "PATCH", "/items/1"), ERR_OK);
	assert_int_equal(fx->res.status, 200);
	assert_string_equal(buf_str(&fx->res.body), "patched");

	r = fake_http_request(fx->fake, 0);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->body, "{\"a\":1}");
	assert_string_equal(fake_request_header(r, "content-type"), "application/json");
	r = fake_http_request(fx->fake, 1);
	assert_string_equal(r->method, "PATCH");
	assert_string_equal(r->uri, "/items/1");
	assert_string_equal(r->body, "{\"b\":2}");
}

/*
 * An answer passed on as it is, no error: an error status (the caller's to judge), a
 * redirect when following was not asked for.
 */
struct as_is_case {
	const char *name;
	int status;
	const char *header, *body;  /* the answer's header line and body */
	const char *method, *path;
	const char *key, *value;  /* the header as http_response_header() gives it */
};

static const struct as_is_case as_is_cases[] = {
	{ "error_status_is_not_an_error", 503, "Retry-After: 7", "busy", "DELETE", "/x",
	  "retry-after", "7" },
	{ "redirect_not_followed_by_default", 301, "Location: /elsewhere", "", "GET", "/old",
	  "location", "/elsewhere" },
};

static void run_as_is_case(void **state)
{
	struct fixture *fx = *state;
	const struct as_is_case *c = fx->c;
	struct http_request req = HTTP_REQUEST_INIT;
	const char *v;

	fake_http_push(fx->fake, c->status, c->header, c->body);
	assert_int_equal(send_to(fx, &req, c->method, c->path), ERR_OK);
	v = http_response_header(&fx->res, c->key);
	if (fx->res.status != c->status || !v || strcmp(v, c->value))
		fail_msg("%s: status %d, %s: %s", c->name, fx->res.status, c->key,
			 v ? v : "(none)");
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_string_equal(fake_http_request(fx->fake, 0)->method, c->method);
}

/* The value of one Retry-After answer, at now_ms. */
static int64_t retry_after(struct fixture *fx, const char *value, int64_t now_ms)
{
	struct http_request req = HTTP_REQUEST_INIT;
	char h[128];

	snprintf(h, sizeof(h), "Retry-After: %s", value ? value : "");
	fake_http_push(fx->fake, 429, value ? h : NULL, "");
	assert_int_equal(send_to(fx, &req, "GET", "/r"), ERR_OK);
	return http_retry_after_s(&fx->res, now_ms);
}

static void retry_after_seconds_or_http_date(void **state)
{
	struct fixture *fx = *state;
	const int64_t t0 = INT64_C(1700000000000);  /* Tue, 14 Nov 2023 22:13:20 GMT */

	assert_int_equal(retry_after(fx, "7", t0), 7);
	assert_int_equal(retry_after(fx, "Tue, 14 Nov 2023 22:13:50 GMT", t0), 30);
	assert_int_equal(retry_after(fx, "Tue, 14 Nov 2023 22:13:50 GMT", t0 + 500), 30);  /* up */
	assert_int_equal(retry_after(fx, "Tuesday, 14-Nov-23 22:13:50 GMT", t0), 30);  /* RFC 850 */
	assert_int_equal(retry_after(fx, "Tue Nov 14 22:13:50 2023", t0), 30);         /* asctime */
	assert_int_equal(retry_after(fx, "Tue, 14 Nov 2023 22:00:00 GMT", t0), 0);  /* past */
	assert_int_equal(retry_after(fx, "-1", t0), -1);
	assert_int_equal(retry_after(fx, "7s", t0), -1);
	assert_int_equal(retry_after(fx, "soon", t0), -1);
	assert_int_equal(retry_after(fx, NULL, t0), -1);
}

static void url_escape_and_unescape(void **state)
{
	struct buf out = BUF_INIT;
	(void)state;
	http_url_escape("a b/c%d~e_f.g-h\xc3\xa9", &out);
	assert_string_equal(buf_str(&out), "a%20b%2Fc%25d~e_f.g-h%C3%A9");
	http_url_escape(NULL, &out);
	http_url_escape("", &out);
	assert_string_equal(buf_str(&out), "a%20b%2Fc%25d~e_f.g-h%C3%A9");
	buf_reset(&out);
	assert_int_equal(http_url_unescape("a%20b%2fc+d", 11, &out), ERR_OK);
	assert_string_equal(buf_str(&out), "a b/c+d");
	buf_reset(&out);
	assert_int_equal(http_url_unescape("a%2", 3, &out), ERR_INVALID);
	assert_int_equal(http_url_unescape("a%zz", 4, &out), ERR_INVALID);
	assert_int_equal(http_url_unescape("a%00", 4, &out), ERR_INVALID);
	assert_int_equal(out.len, 0);
	buf_release(&out);
}

static void redirect_followed_keeps_method_and_last_headers(void **state)
{
	struct fixture *fx = *state;
	struct http_request req = HTTP_REQUEST_INIT;
	char loc[300];

	snprintf(loc, sizeof(loc), "Location: %s/new/place\nX-First: yes", fake_http_url(fx->fake));
	fake_http_push(fx->fake, 301, loc, "moved");
	fake_http_push(fx->fake, 200, "X-Second: yes", "here");
	req.body = "{}";
	req.body_len = 2;
	req.follow_redirects = 1;
	assert_int_equal(send_to(fx, &req, "PATCH", "/old"), ERR_OK);
	assert_int_equal(fx->res.status, 200);
	assert_string_equal(buf_str(&fx->res.body), "here");
	assert_string_equal(fx->res.effective_url, url(fx, "/new/place"));
	assert_null(http_response_header(&fx->res, "x-first"));
	assert_string_equal(http_response_header(&fx->res, "x-second"), "yes");
	assert_int_equal(fake_http_count(fx->fake), 2);
	assert_string_equal(fake_http_request(fx->fake, 1)->method, "PATCH");
	assert_string_equal(fake_http_request(fx->fake, 1)->uri, "/new/place");
	assert_string_equal(fake_http_request(fx->fake, 1)->body, "{}");
}

static void too_many_redirects_is_invalid(void **state)
{
	struct fixture *fx = *state;
	struct http_request req = HTTP_REQUEST_INIT;

	for (int i = 0; i < 7; i++)
		fake_http_push(fx->fake, 302, "Location: /loop", "");
	req.follow_redirects = 1;
	assert_int_equal(send_to(fx, &req, "GET", "/loop"), ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err), "GET "));
	assert_non_null(strstr(buf_str(&fx->err), "edirect"));
	assert_int_equal(fake_http_count(fx->fake), 6);
}

static void body_over_cap_is_toobig(void **state)
{
	struct fixture *fx = *state;
	struct http_client_options opts = { .max_body_bytes = 16 };
	struct http_client *small = http_client_new(&opts);
	struct http_request req = HTTP_REQUEST_INIT;

	fake_http_push(fx->fake, 200, NULL, "0123456789abcdefXYZ");
	req.method = "GET";
	req.url = url(fx, "/big");
	assert_int_equal(http_do(small, &req, &fx->res, &fx->err), ERR_TOOBIG);
	assert_int_equal(fx->res.status, 200);
	{
		char want[300];
		snprintf(want, sizeof(want), "GET %s: response body over 16 bytes", fx->url);
		assert_string_equal(buf_str(&fx->err), want);
	}
	http_client_free(small);
}

/*
 * The fake speaks plain HTTP, so an https:// URL to it never completes a
 * handshake; curl loads the client identity before the handshake, so a
 * broken certificate or key is reported as such, proving the options reach
 * curl.  Over http:// the same options change nothing.
 */
static void client_cert_options_reach_curl(void **state)
{
	struct fixture *fx = *state;
	struct http_client_options opts = { 0 };
	struct http_client *mtls;
	struct http_request req = HTTP_REQUEST_INIT;
	char https[300];

	opts.client_cert_file = "/nonexistent/client.crt";
	opts.client_key_file = "/nonexistent/client.key";
	mtls = http_client_new(&opts);
	snprintf(https, sizeof(https), "https%s/x", fake_http_url(fx->fake) + 4);
	req.method = "GET";
	req.url = https;
	req.timeout_ms = 2000;
	assert_int_equal(http_do(mtls, &req, &fx->res, &fx->err), ERR_IO);
	assert_non_null(strstr(buf_str(&fx->err), "/nonexistent/client.crt"));
	assert_false(fx->res.sent);
	http_client_free(mtls);

	memset(&opts, 0, sizeof(opts));
	opts.client_cert_pem = "-----BEGIN CERTIFICATE-----\nnot base64\n"
			       "-----END CERTIFICATE-----\n";
	opts.client_key_pem = "-----BEGIN PRIVATE KEY-----\nnope\n-----END PRIVATE KEY-----\n";
	opts.ca_pem = "-----BEGIN CERTIFICATE-----\nbad\n-----END CERTIFICATE-----\n";
	mtls = http_client_new(&opts);
	assert_int_equal(http_do(mtls, &req, &fx->res, &fx->err), ERR_IO);
	assert_non_null(strstr(buf_str(&fx->err), "GET https://127.0.0.1:"));
	assert_non_null(strstr(buf_str(&fx->err), "certificate"));

	fake_http_push(fx->fake, 200, NULL, "plain");
	req.url = url(fx, "/plain");
	assert_int_equal(http_do(mtls, &req, &fx->res, &fx->err), ERR_OK);
	assert_string_equal(buf_str(&fx->res.body), "plain");
	http_client_free(mtls);
}

static void timeout_is_retry_sent_and_hides_headers(void **state)
{
	struct fixture *fx = *state;
	const char *hdrs[] = { "Authorization: Bearer s3cr3t-token", NULL };
	struct http_request req = HTTP_REQUEST_INIT;

	fake_http_push_delayed(fx->fake, 400, 200, NULL, "late");
	req.headers = hdrs;
	req.body = "x";
	req.body_len = 1;
	req.timeout_ms = 100;
	assert_int_equal(send_to(fx, &req, "POST", "/slow?q=1"), ERR_RETRY);
	assert_true(fx->res.sent);
	assert_int_equal(fx->res.status, 0);
	assert_non_null(strstr(buf_str(&fx->err), "POST "));
	assert_non_null(strstr(buf_str(&fx->err), "/slow?q=1"));
	assert_non_null(strstr(buf_str(&fx->err), "timed out"));
	assert_null(strstr(buf_str(&fx->err), "s3cr3t"));
}

static void refused_connect_is_io_not_sent(void **state)
{
	struct fixture *fx = *state;
	struct fake_http *gone = fake_http_start();
	char u[128];
	struct http_request req = HTTP_REQUEST_INIT;

	snprintf(u, sizeof(u), "%s/x", fake_http_url(gone));
	fake_http_stop(gone);
	req.method = "POST";
	req.url = u;
	req.timeout_ms = 1000;
	assert_int_equal(http_do(fx->client, &req, &fx->res, &fx->err), ERR_IO);
	assert_false(fx->res.sent);
	assert_non_null(strstr(buf_str(&fx->err), u));
	assert_non_null(strstr(buf_str(&fx->err), "onnect"));
}

static void dropped_connection_is_io_sent(void **state)
{
	struct fixture *fx = *state;
	struct http_request req = HTTP_REQUEST_INIT;

	fake_http_push_drop(fx->fake);
	req.body = "{}";
	req.body_len = 2;
	req.timeout_ms = 1000;
	assert_int_equal(send_to(fx, &req, "POST", "/drop"), ERR_IO);
	assert_true(fx->res.sent);
	assert_non_null(strstr(buf_str(&fx->err), "POST "));
	assert_int_equal(fake_http_count(fx->fake), 1);
}

static void bad_requests_are_invalid(void **state)
{
	struct fixture *fx = *state;
	struct http_request req = HTTP_REQUEST_INIT;

	req.url = url(fx, "/x");
	assert_int_equal(http_do(fx->client, &req, &fx->res, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "http request without method or url");

	req.method = "GET";
	req.url = "ftp://127.0.0.1/file";
	assert_int_equal(http_do(fx->client, &req, &fx->res, &fx->err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&fx->err), "GET ftp://127.0.0.1/file: "));
	assert_false(fx->res.sent);
	assert_int_equal(fake_http_count(fx->fake), 0);
}

static void reuse_after_error_works(void **state)
{
	struct fixture *fx = *state;
	struct http_request req = HTTP_REQUEST_INIT;

	fake_http_push_drop(fx->fake);
	fake_http_push(fx->fake, 204, NULL, NULL);
	req.timeout_ms = 1000;
	assert_int_equal(send_to(fx, &req, "GET", "/one"), ERR_IO);
	assert_int_equal(http_do(fx->client, &req, &fx->res, &fx->err), ERR_OK);
	assert_int_equal(fx->res.status, 204);
	assert_string_equal(buf_str(&fx->res.body), "");
	http_response_release(NULL);
	http_client_free(NULL);
}

/* libcurl's built-in CA directory (CURLINFO_CAPATH, libcurl 7.84); NULL when it has none. */
static const char *default_capath(void)
{
	CURL *e = curl_easy_init();
	char *path = NULL;
	static char out[4096];  /* PATH_MAX */

	assert_non_null(e);
	if (curl_easy_getinfo(e, CURLINFO_CAPATH, &path) != CURLE_OK || !path)
		path = NULL;
	else
		snprintf(out, sizeof(out), "%s", path);
	curl_easy_cleanup(e);
	return path ? out : NULL;
}

/*
 * How many times the directory dir (or a file in it) was opened while a
 * request of c to an https:// URL on the plain fake ran: curl reads its
 * trust store before the handshake, which then fails (inotify(7) IN_OPEN).
 * *self (may be NULL) is set to how many of those opened dir itself (read
 * as a CA directory), *bundle to how many opened the file called bundle.
 */
static int opens_during_request_of(struct fixture *fx, struct http_client *c, const char *dir,
				   const char *bundle, int *self, int *in_bundle)
{
	struct http_request req = HTTP_REQUEST_INIT;
	char https[300], ev[64 * 1024];
	int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC), opens = 0;
	ssize_t n;

	assert_true(fd >= 0);
	assert_true(inotify_add_watch(fd, dir, IN_OPEN) >= 0);
	snprintf(https, sizeof(https), "https%s/x", fake_http_url(fx->fake) + 4);
	req.method = "GET";
	req.url = https;
	req.timeout_ms = 2000;
	assert_int_equal(http_do(c, &req, &fx->res, &fx->err), ERR_IO);
	while ((n = read(fd, ev, sizeof(ev))) > 0)
		for (char *p = ev; p < ev + n;) {
			const struct inotify_event *e = (const void *)p;

			opens += (e->mask & IN_OPEN) != 0;
			if (self && (e->mask & IN_OPEN) && (!e->len || !e->name[0]))
				++*self;
			if (in_bundle && (e->mask & IN_OPEN) && e->len && bundle &&
			    !strcmp(e->name, bundle))
				++*in_bundle;
			p += sizeof(*e) + e->len;
		}
	assert_true(n < 0 && errno == EAGAIN);
	close(fd);
	return opens;
}

static int opens_during_request(struct fixture *fx, struct http_client *c, const char *dir)
{
	return opens_during_request_of(fx, c, dir, NULL, NULL, NULL);
}

/* Copy the file src to dst. */
static void copy_file(const char *src, const char *dst)
{
	FILE *in = fopen(src, "rb"), *out = fopen(dst, "wb");
	char chunk[8192];
	size_t n;

	assert_non_null(in);
	assert_non_null(out);
	while ((n = fread(chunk, 1, sizeof(chunk), in)) > 0)
		assert_int_equal(fwrite(chunk, 1, n, out), n);
	fclose(in);
	fclose(out);
}

/*
 * Issue 18 item 12: libcurl's GnuTLS build read the whole CA directory
 * (/etc/ssl/certs) on every new connection, also when a CA file was given
 * (43 ms and 3.8 MiB each).  With a CA file only that file is read.  Without
 * one the directory is the system's trust (Debian's libcurl3-gnutls has a
 * CA path and no bundle), and is read: which also shows the watch sees it.
 */
static void ca_file_means_no_ca_directory(void **state)
{
	struct fixture *fx = *state;
	struct http_client_options opts = { 0 };
	struct http_client *c;
	const char *capath = default_capath();
	char dir[64], ca[128], one[4096 + 256 + 2];
	DIR *d;
	struct dirent *de;

	if (!capath) {
		skip();  /* a libcurl without a CA directory cannot read one */
		return;
	}
	/* A valid CA file outside the watched directory: a copy of one of its certificates. */
	d = opendir(capath);
	assert_non_null(d);
	one[0] = '\0';
	while (!one[0] && (de = readdir(d)))
		if (strstr(de->d_name, ".pem"))
			snprintf(one, sizeof(one), "%s/%s", capath, de->d_name);
	closedir(d);
	assert_true(one[0]);
	tfx_mkdtemp(dir, sizeof(dir), "ab-ca");
	snprintf(ca, sizeof(ca), "%s/ca.pem", dir);
	copy_file(one, ca);

	opts.ca_file = ca;
	c = http_client_new(&opts);
	assert_int_equal(opens_during_request(fx, c, capath), 0);
	http_client_free(c);
	tfx_remove_tree(dir);
}

/*
 * Without a CA file, the system's trust is read as its one bundle file, not
 * as libcurl's CA directory (Debian: 290 files, 25 ms of CPU each new
 * connection; the bundle 8 ms).  The directory itself was opened before.
 */
static void system_trust_is_read_as_one_bundle(void **state)
{
	struct fixture *fx = *state;
	const char *capath = default_capath();
	const char *bundle = http_system_ca_bundle();
	struct http_client *c;
	char bundle_dir[4096];
	int self = 0, in_bundle = 0;
	const char *slash;

	if (!capath || !bundle) {
		skip();  /* libcurl reads one file already, or the system has no bundle */
		return;
	}
	slash = strrchr(bundle, '/');
	snprintf(bundle_dir, sizeof(bundle_dir), "%.*s", (int)(slash - bundle), bundle);
	c = http_client_new(NULL);
	(void)opens_during_request_of(fx, c, capath, slash + 1, &self, &in_bundle);
	assert_int_equal(self, 0);
	if (!strcmp(bundle_dir, capath))
		assert_true(in_bundle > 0);
	http_client_free(c);
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN_WITH(if (http_global_init() != ERR_OK) return 1, http_global_cleanup(),
	T(get_returns_status_body_and_headers),
	T(post_and_patch_send_body),
	UNIT_CASE_WITH(run_as_is_case, as_is_cases[0], setup, teardown),
	T(redirect_followed_keeps_method_and_last_headers),
	UNIT_CASE_WITH(run_as_is_case, as_is_cases[1], setup, teardown),
	T(too_many_redirects_is_invalid),
	T(body_over_cap_is_toobig),
	T(timeout_is_retry_sent_and_hides_headers),
	T(refused_connect_is_io_not_sent),
	T(dropped_connection_is_io_sent),
	T(bad_requests_are_invalid),
	T(reuse_after_error_works),
	T(ca_file_means_no_ca_directory),
	T(system_trust_is_read_as_one_bundle),
	T(client_cert_options_reach_curl),
	T(retry_after_seconds_or_http_date),
	cmocka_unit_test(url_escape_and_unescape))
