/*
 * test_http_server_checks.c - what the routing server refuses in a request's
 * head (core/http_server_checks.c), on a real server on 127.0.0.1 with raw
 * sockets: a NUL byte decoded into a query parameter (issue 19 item 9), an
 * HTTP/1.1 request without exactly one Host, Content-Length with
 * Transfer-Encoding, and Content-Lengths that are not one number (issue 19
 * item 11; RFC 9112 3.2 and 6.3).  Each is a 400 that closes the
 * connection, and the route's handler never runs.
 */
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/http_server.h"
#include "core/log.h"
#include "tests/unit/helpers/http_server_fixture.h"

/* Send the n bytes of req on a new connection; the answer into got (reset first). */
static void exchange(const struct srv *s, const char *req, size_t n, struct buf *got)
{
	int fd = hfx_raw_connect(s);

	assert_true(fd >= 0);
	buf_reset(got);
	hfx_raw_exchange(fd, req, n, got);
	close(fd);
}

/*
 * req (n bytes) is answered 400 with reason (NULL: libmicrohttpd's own 400),
 * closes the connection, and no handler ran.
 */
static void refused(const char *req, size_t n, const char *reason)
{
	struct seen sn;
	struct srv *s = hfx_start_server(&sn, 0, 1);
	struct buf got = BUF_INIT, want = BUF_INIT;

	exchange(s, req, n, &got);
	if (strncmp(buf_str(&got), "HTTP/1.1 400 ", 13))
		fail_msg("want a 400 for %s, got: %s", reason, buf_str(&got));
	if (reason) {
		assert_int_equal(buf_printf(&want, "{\"error\": \"%s\"}\n", reason), ERR_OK);
		assert_non_null(strstr(buf_str(&got), buf_str(&want)));
	}
	assert_non_null(strstr(buf_str(&got), "Connection: close\r\n"));
	assert_int_equal(hfx_calls(&sn), 0);
	buf_release(&got);
	buf_release(&want);
	srv_free(s);
}

/* req (a string) reaches the echo route: 202. */
static void accepted(const char *req)
{
	struct seen sn;
	struct srv *s = hfx_start_server(&sn, 0, 1);
	struct buf got = BUF_INIT;

	exchange(s, req, strlen(req), &got);
	if (strncmp(buf_str(&got), "HTTP/1.1 202 ", 13))
		fail_msg("want a 202, got: %s", buf_str(&got));
	assert_int_equal(hfx_calls(&sn), 1);
	buf_release(&got);
	srv_free(s);
}

#define REFUSED(lit, reason) refused(lit, sizeof(lit) - 1, reason)

/* ?receiver=default%00x routed to "default" before (issue 19 item 9). */
static void nul_in_a_query_parameter_is_400(void **state)
{
	(void)state;
	REFUSED("GET /echo?q=default%00x HTTP/1.1\r\nHost: x\r\n\r\n",
		"NUL byte in a query parameter");
	REFUSED("GET /echo?q%00x=1 HTTP/1.1\r\nHost: x\r\n\r\n", "NUL byte in a query parameter");
	accepted("GET /echo?q=default%01x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
}

/* RFC 9112 3.2: an HTTP/1.1 request without Host, or with two, is a 400. */
static void http11_wants_exactly_one_host(void **state)
{
	(void)state;
	REFUSED("GET /echo HTTP/1.1\r\n\r\n", "HTTP/1.1 request without exactly one Host header");
	REFUSED("GET /echo HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n",
		"HTTP/1.1 request without exactly one Host header");
	/* HTTP/1.0 has no Host requirement */
	accepted("GET /echo HTTP/1.0\r\n\r\n");
}

/* RFC 9112 6.3 item 3: both framings at once is how requests are smuggled. */
static void content_length_with_transfer_encoding_is_400(void **state)
{
	(void)state;
	REFUSED("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n"
		"Transfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n",
		"both Content-Length and Transfer-Encoding");
	accepted("POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
		 "Connection: close\r\n\r\n3\r\nabc\r\n0\r\n\r\n");
}

/* RFC 9112 6.3 item 5: an invalid Content-Length is a 400 (two were taken before). */
static void content_length_must_be_one_number(void **state)
{
	(void)state;
	REFUSED("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nContent-Length: 3\r\n"
		"\r\nabc", "several Content-Length headers");
	REFUSED("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: +3\r\n\r\nabc", NULL);
	REFUSED("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\nabc", NULL);
	accepted("POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nConnection: close\r\n"
		 "\r\nabc");
}

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	cmocka_unit_test(nul_in_a_query_parameter_is_400),
	cmocka_unit_test(http11_wants_exactly_one_host),
	cmocka_unit_test(content_length_with_transfer_encoding_is_400),
	cmocka_unit_test(content_length_must_be_one_number))
