/*
 * test_http_server.c - the routing server (core/http_server.c) over loopback,
 * with libcurl as the client: routes, status, headers, bad options, listening
 * addresses and TLS with client certificates.
 */
#include <arpa/inet.h>
#include <curl/curl.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/http_server.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "tests/unit/helpers/http_server_fixture.h"
#include "tests/unit/helpers/log_capture.h"

/* Throw-away test credentials (EC P-256, valid until 2126): never used elsewhere. */
static const char SERVER_CRT[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBkDCCATagAwIBAgIUVi7VSd9+o7H9u55XqIV1zY2vjuYwCgYIKoZIzj0EAwIw\n"
	"FDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTEyMTAxNTM0M1oYDzIxMjYxMDI4\n"
	"MDE1MzQzWjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjO\n"
	"PQMBBwNCAARcgHjjkpy+dOcAS+2kGxr1k7WTg+Bn0Az+rKfHSpZ9tas/6R4/wS+n\n"
	"Q8FBBI7gz8QvdrpYI+Z0pqxgXzFRrmhbo2QwYjAdBgNVHQ4EFgQUA3PLCXaEYz3A\n"
	"/Ha2BAJndDbpjpMwHwYDVR0jBBgwFoAUA3PLCXaEYz3A/Ha2BAJndDbpjpMwDwYD\n"
	"VR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0gAMEUC\n"
	"IQCN5g5AoJtwWyqa3XOXHzakckoFYiZtHpHt8ZjSEfdEagIgLuN1O9TNYomCOX6A\n"
	"SGlUlRbiPNd0ZnToIAlTdL3gzbw=\n"
	"-----END CERTIFICATE-----\n"
	;
static const char SERVER_KEY[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgo3CQYz6QNnsq6QIj\n"
	"2zeuNNSkJHBIrquAMP6NMiegjymhRANCAARcgHjjkpy+dOcAS+2kGxr1k7WTg+Bn\n"
	"0Az+rKfHSpZ9tas/6R4/wS+nQ8FBBI7gz8QvdrpYI+Z0pqxgXzFRrmhb\n"
	"-----END PRIVATE KEY-----\n"
	;
static const char CA_CRT[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBezCCASGgAwIBAgIUGQ0ZP7iozBFViF650B0w/J8X0KIwCgYIKoZIzj0EAwIw\n"
	"EjEQMA4GA1UEAwwHdGVzdC1jYTAgFw0yNjExMjEwMTUzNDNaGA8yMTI2MTAyODAx\n"
	"NTM0M1owEjEQMA4GA1UEAwwHdGVzdC1jYTBZMBMGByqGSM49AgEGCCqGSM49AwEH\n"
	"A0IABOz8LnVJvpEosG2j61fFnAE/qyvn+ce28y1TTCcCklLsyylOg5jC89pa9ZpS\n"
	"g8DFL6XnK3S87AVvPlOFvcjLTP+jUzBRMB0GA1UdDgQWBBTUyxkatuGZ4waGQHbg\n"
	"TLzP6DwHXjAfBgNVHSMEGDAWgBTUyxkatuGZ4waGQHbgTLzP6DwHXjAPBgNVHRMB\n"
	"Af8EBTADAQH/MAoGCCqGSM49BAMCA0gAMEUCIQCYT62lTqhG+scOw5nktmlJS2qt\n"
	"8vcD2wHcqsID/qsa1wIgR6d50gVOTy1FgC5tdAgzdVX9VLkPv0O1gzCyZLP1Ts8=\n"
	"-----END CERTIFICATE-----\n"
	;
static const char CLIENT_CRT[] =
	"-----BEGIN CERTIFICATE-----\n"
	"MIIBHzCBxgIULn1ua9QltAVGUntV32cEkS1+4fYwCgYIKoZIzj0EAwIwEjEQMA4G\n"
	"A1UEAwwHdGVzdC1jYTAgFw0yNjExMjEwMTUzNDNaGA8yMTI2MTAyODAxNTM0M1ow\n"
	"ETEPMA0GA1UEAwwGY2xpZW50MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAE+/Cx\n"
	"Wys6x7naAwVgPmxRBQcFCzoU0YIxLVv7Jgq3nCsxeSh4dbzPHa+bj0r3Dov/V0qm\n"
	"ah90sFMXqMAv9maGvTAKBggqhkjOPQQDAgNIADBFAiEAw7GR2wyNB05DFYkQPIkE\n"
	"829EXA2D2e1zJgUc5c6XLLwCIHOkVTzkxqZCPH38fRBD37Ukk8EKdyXFlxgyoBTR\n"
	"vGy0\n"
	"-----END CERTIFICATE-----\n"
	;
static const char CLIENT_KEY[] =
	"-----BEGIN PRIVATE KEY-----\n"
	"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg5u9VoODfdaNkjANP\n"
	"SEJMym0h+PnQNgvRnhKokmaLRVWhRANCAAT78LFbKzrHudoDBWA+bFEFBwULOhTR\n"
	"gjEtW/smCrecKzF5KHh1vM8dr5uPSvcOi/9XSqZqH3SwUxeowC/2Zoa9\n"
	"-----END PRIVATE KEY-----\n"
	;

static void routes_to_handlers(void **state)
{
	struct seen sn;
	struct srv *s = hfx_start_server(&sn, 0, 2);
	struct reply r;

	(void)state;
	assert_int_equal(hfx_ask(s, "GET", "/hello", NULL, NULL, &r), 200);
	assert_string_equal(buf_str(&r.body), "hello GET");
	assert_non_null(strstr(buf_str(&r.headers), "Content-Type: text/plain\r\n"));
	assert_non_null(strstr(buf_str(&r.headers), "Content-Length: 9\r\n"));
	hfx_reply_release(&r);

	(void)hfx_ask(s, "POST", "/hello", "x", NULL, &r);
	assert_string_equal(buf_str(&r.body), "hello POST");
	hfx_reply_release(&r);

	/* HEAD is served by the GET route, without a body. */
	assert_int_equal(hfx_ask(s, "HEAD", "/hello", NULL, NULL, &r), 200);
	assert_string_equal(buf_str(&r.body), "");
	hfx_reply_release(&r);
	assert_int_equal(hfx_calls(&sn), 3);

	/* The query string is not part of the path. */
	assert_int_equal(hfx_ask(s, "GET", "/hello?x=1", NULL, NULL, &r), 200);
	hfx_reply_release(&r);
	srv_free(s);
}

/*
 * A fresh server refuses method path: status, the JSON body, the header line, no handler
 * called, and the observer saw obs.
 */
static void expect_refused(const char *method, const char *path, long status, const char *body,
			   const char *header, const char *obs)
{
	struct seen sn;
	struct srv *s = hfx_start_server(&sn, 0, 1);
	struct reply r;

	assert_int_equal(hfx_ask(s, method, path, NULL, NULL, &r), status);
	assert_string_equal(buf_str(&r.body), body);
	assert_non_null(strstr(buf_str(&r.headers), header));
	assert_int_equal(hfx_calls(&sn), 0);
	hfx_reply_release(&r);
	srv_free(s);
	assert_string_equal(sn.obs, obs);
}

static void unknown_path_is_404_json(void **state)
{
	(void)state;
	expect_refused("GET", "/hello/", 404, "{\"error\": \"not found\"}\n",
		       "Content-Type: application/json\r\n", "GET other 404");
}

static void wrong_method_is_405_with_allow(void **state)
{
	(void)state;
	expect_refused("DELETE", "/hello", 405, "{\"error\": \"method not allowed\"}\n",
		       "Allow: GET, POST, HEAD\r\n", "DELETE /hello 405");
}

static void headers_query_and_remote_addr(void **state)
{
	static const char *const hdrs[] = {"X-Test: v1", NULL};
	struct seen sn;
	struct srv *s = hfx_start_server(&sn, 0, 1);
	struct reply r;

	(void)state;
	assert_int_equal(hfx_ask(s, "PUT", "/echo?q=a%20b%26c&other=1", "{\"k\": 1}", hdrs, &r),
			 202);
	assert_string_equal(buf_str(&r.body), "{\"k\": 1}");
	assert_non_null(strstr(buf_str(&r.headers), "Retry-After: 120\r\n"));
	assert_null(strstr(buf_str(&r.headers), "Injected"));
	assert_string_equal(sn.header, "v1");
	assert_string_equal(sn.query, "a b&c");
	assert_string_equal(sn.addr, "127.0.0.1");
	assert_int_equal(sn.body_len, 8);
	hfx_reply_release(&r);

	(void)hfx_ask(s, "GET", "/echo", NULL, NULL, &r);
	assert_string_equal(sn.header, "(null)");
	assert_string_equal(sn.query, "(null)");
	assert_int_equal(sn.body_len, 0);
	hfx_reply_release(&r);
	srv_free(s);
	assert_string_equal(sn.obs, "GET /echo 202");
}

static void invalid_status_becomes_500(void **state)
{
	struct seen sn;
	struct srv *s = hfx_start_server(&sn, 0, 1);
	struct reply r;
	struct log_capture lc;
	char logged[512] = "";

	(void)state;
	lcap_start(&lc);
	assert_int_equal(hfx_ask(s, "GET", "/bad", NULL, NULL, &r), 500);
	assert_string_equal(buf_str(&r.body), "");
	hfx_reply_release(&r);
	srv_free(s);
	lcap_end(&lc, logged, sizeof(logged));
	assert_non_null(strstr(logged, "msg=\"handler set an invalid http status\" path=/bad "
				       "status=42"));
}

static void new_rejects_bad_options(void **state)
{
	static const struct {
		const char *addr;
		const char *msg;
	} bad[] = {
		{"", "listen address is empty"},
		{"9095", "invalid listen address \"9095\": missing port"},
		{"127.0.0.1:", "invalid listen address \"127.0.0.1:\": port must be 0-65535"},
		{"127.0.0.1:65536", "invalid listen address \"127.0.0.1:65536\": port must be 0-65535"},
		{":-1", "invalid listen address \":-1\": port must be 0-65535"},
		{"::1:9095", "invalid listen address \"::1:9095\": put IPv6 addresses in []"},
		{"[::1]9095", "invalid listen address \"[::1]9095\": want [ipv6]:port"},
	};
	struct srv_options o = {0};
	struct buf err = BUF_INIT;
	struct srv *s = (struct srv *)&o;
	size_t i;

	(void)state;
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		o.listen_address = bad[i].addr;
		assert_int_equal(srv_new(&o, &s, &err), ERR_INVALID);
		assert_null(s);
		assert_string_equal(buf_str(&err), bad[i].msg);
	}
	o.listen_address = "127.0.0.1:0";
	o.tls_cert_file = "/nonexistent/cert.pem";
	assert_int_equal(srv_new(&o, &s, &err), ERR_INVALID);
	assert_string_equal(buf_str(&err), "tls needs both a certificate and a key file");
	o.tls_key_file = "/nonexistent/key.pem";
	assert_int_equal(srv_new(&o, &s, &err), ERR_IO);
	assert_string_equal(buf_str(&err), "cannot open tls certificate \"/nonexistent/cert.pem\": "
					   "No such file or directory");
	o.tls_cert_file = NULL;
	o.tls_key_file = NULL;
	o.tls_client_ca_file = "/nonexistent/ca.pem";
	assert_int_equal(srv_new(&o, &s, &err), ERR_INVALID);
	assert_string_equal(buf_str(&err),
			    "tls needs both a certificate and a key file when a client CA is set");
	buf_release(&err);
	srv_free(NULL);
	srv_stop(NULL);
}

static void start_fails_on_port_in_use(void **state)
{
	struct seen sn;
	struct srv *a = hfx_start_server(&sn, 0, 1), *b = NULL;
	struct srv_options o = {0};
	struct buf err = BUF_INIT, want = BUF_INIT;
	char addr[64];

	(void)state;
	snprintf(addr, sizeof(addr), "127.0.0.1:%d", srv_port(a));
	o.listen_address = addr;
	assert_int_equal(srv_new(&o, &b, &err), ERR_OK);
	assert_int_equal(srv_start(b, &err), ERR_IO);
	(void)buf_printf(&want, "cannot listen on %s: Address already in use", addr);
	assert_string_equal(buf_str(&err), buf_str(&want));
	assert_int_equal(srv_port(b), 0);
	srv_free(b);

	o.listen_address = "no-such-host.invalid:0";
	assert_int_equal(srv_new(&o, &b, &err), ERR_OK);
	assert_int_equal(srv_start(b, &err), ERR_IO);
	assert_true(strncmp(buf_str(&err), "cannot listen on no-such-host.invalid:0: ", 41) == 0);
	srv_free(b);

	assert_int_equal(srv_start(a, &err), ERR_INVALID);
	assert_true(strstr(buf_str(&err), "already started") != NULL);
	buf_release(&err);
	buf_release(&want);
	srv_free(a);
}

static void route_rejects_bad_input(void **state)
{
	struct seen sn;
	struct srv_options o = {0};
	struct buf err = BUF_INIT;
	struct srv *s = NULL;

	(void)state;
	o.listen_address = "127.0.0.1:0";
	assert_int_equal(srv_new(&o, &s, &err), ERR_OK);
	assert_int_equal(srv_route(s, "GET", "/a", hfx_hello, &sn), ERR_OK);
	assert_int_equal(srv_route(s, "GET", "/a", hfx_hello, &sn), ERR_INVALID);
	assert_int_equal(srv_route(s, "GET", "a", hfx_hello, &sn), ERR_INVALID);
	assert_int_equal(srv_route(s, "", "/b", hfx_hello, &sn), ERR_INVALID);
	assert_int_equal(srv_route(s, "GET", "/b", NULL, &sn), ERR_INVALID);
	assert_int_equal(srv_start(s, &err), ERR_OK);
	assert_int_equal(srv_route(s, "GET", "/c", hfx_hello, &sn), ERR_INVALID);
	srv_free(s);
	buf_release(&err);
}

static void listens_on_ipv6_and_all_interfaces(void **state)
{
	static const char *const addrs[] = {"[::1]:0", ":0"};
	struct srv_options o = {0};
	struct buf err = BUF_INIT;
	struct seen sn;
	struct reply r;
	char url[128];
	size_t i;

	(void)state;
	memset(&sn, 0, sizeof(sn));
	pthread_mutex_init(&sn.lock, NULL);
	for (i = 0; i < 2; i++) {
		struct srv *s = NULL;
		o.listen_address = addrs[i];
		assert_int_equal(srv_new(&o, &s, &err), ERR_OK);
		assert_int_equal(srv_route(s, "GET", "/hello", hfx_hello, &sn), ERR_OK);
		if (srv_start(s, &err) != ERR_OK) {
			/* No IPv6 in this sandbox: only the message can be checked. */
			assert_true(strstr(buf_str(&err), addrs[i]) != NULL);
			srv_free(s);
			continue;
		}
		snprintf(url, sizeof(url), "http://%s:%d/hello", i == 0 ? "[::1]" : "127.0.0.1",
			 srv_port(s));
		assert_int_equal(hfx_fetch("GET", url, NULL, NULL, &r), CURLE_OK);
		assert_int_equal(r.status, 200);
		hfx_reply_release(&r);
		srv_free(s);
	}
	buf_release(&err);
}

/* Write PEM text to a fresh temporary file; path is filled in. */
static void write_temp(const char *pem, char *path, size_t n)
{
	int fd;

	snprintf(path, n, "/tmp/test_http_server_XXXXXX");
	fd = mkstemp(path);
	assert_true(fd >= 0);
	assert_int_equal(write(fd, pem, strlen(pem)), (ssize_t)strlen(pem));
	close(fd);
}

static long tls_get(const struct srv *s, const char *cert, const char *key)
{
	CURL *c = curl_easy_init();
	struct buf body = BUF_INIT;
	char url[128];
	long status = 0;

	snprintf(url, sizeof(url), "https://127.0.0.1:%d/hello", srv_port(s));
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
	curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, hfx_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &body);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	if (cert) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, cert);
		curl_easy_setopt(c, CURLOPT_SSLKEY, key);
	}
	if (curl_easy_perform(c) == CURLE_OK)
		curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
	if (status == 403)
		assert_string_equal(buf_str(&body),
				    "{\"error\": \"client certificate not verified\"}\n");
	curl_easy_cleanup(c);
	buf_release(&body);
	return status;
}

static void serves_tls_and_checks_client_certs(void **state)
{
	char cert[64], key[64], ca[64], ccert[64], ckey[64];
	struct srv_options o = {0};
	struct buf err = BUF_INIT;
	struct srv *s = NULL;
	struct seen sn;

	(void)state;
	memset(&sn, 0, sizeof(sn));
	pthread_mutex_init(&sn.lock, NULL);
	write_temp(SERVER_CRT, cert, sizeof(cert));
	write_temp(SERVER_KEY, key, sizeof(key));
	write_temp(CA_CRT, ca, sizeof(ca));
	write_temp(CLIENT_CRT, ccert, sizeof(ccert));
	write_temp(CLIENT_KEY, ckey, sizeof(ckey));
	o.listen_address = "127.0.0.1:0";
	o.tls_cert_file = cert;
	o.tls_key_file = key;
	assert_int_equal(srv_new(&o, &s, &err), ERR_OK);
	assert_int_equal(srv_route(s, "GET", "/hello", hfx_hello, &sn), ERR_OK);
	assert_int_equal(srv_start(s, &err), ERR_OK);
	assert_int_equal(tls_get(s, NULL, NULL), 200);
	srv_free(s);

	o.tls_client_ca_file = ca;
	assert_int_equal(srv_new(&o, &s, &err), ERR_OK);
	assert_int_equal(srv_route(s, "GET", "/hello", hfx_hello, &sn), ERR_OK);
	assert_int_equal(srv_start(s, &err), ERR_OK);
	assert_int_equal(tls_get(s, NULL, NULL), 403);
	assert_int_equal(tls_get(s, ccert, ckey), 200);
	/* A certificate the CA did not sign (the server's own) is refused. */
	assert_int_equal(tls_get(s, cert, key), 403);
	srv_free(s);

	/* A key that does not match the certificate fails at start. */
	o.tls_client_ca_file = NULL;
	o.tls_key_file = ckey;
	assert_int_equal(srv_new(&o, &s, &err), ERR_OK);
	assert_int_equal(srv_start(s, &err), ERR_IO);
	assert_string_equal(buf_str(&err), "cannot start http server on 127.0.0.1:0 "
					   "(check the tls certificate and key)");
	srv_free(s);
	assert_int_equal(hfx_calls(&sn), 2);
	unlink(cert);
	unlink(key);
	unlink(ca);
	unlink(ccert);
	unlink(ckey);
	buf_release(&err);
}

UNIT_MAIN_WITH(curl_global_init(CURL_GLOBAL_ALL), curl_global_cleanup(),
	cmocka_unit_test(routes_to_handlers),
	cmocka_unit_test(unknown_path_is_404_json),
	cmocka_unit_test(wrong_method_is_405_with_allow),
	cmocka_unit_test(headers_query_and_remote_addr),
	cmocka_unit_test(invalid_status_becomes_500),
	cmocka_unit_test(new_rejects_bad_options),
	cmocka_unit_test(start_fails_on_port_in_use),
	cmocka_unit_test(route_rejects_bad_input),
	cmocka_unit_test(listens_on_ipv6_and_all_interfaces),
	cmocka_unit_test(serves_tls_and_checks_client_certs))
