/*
 * http_server_fixture.c - what the routing server's unit tests
 * (test_http_server*.c) share: a server on loopback with test handlers that
 * record what they saw, and libcurl and raw-socket clients.
 */
#include "http_server_fixture.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <cmocka.h>

size_t hfx_collect(char *p, size_t size, size_t n, void *arg)
{
	return buf_add(arg, p, size * n) ? 0 : size * n;
}

void hfx_reply_release(struct reply *r)
{
	buf_release(&r->body);
	buf_release(&r->headers);
}

/* One request; body NULL for none; extra is a NULL-terminated header list. */
CURLcode hfx_fetch_with(CURL *c, const char *method, const char *url, const char *body,
			const char *const *extra, struct reply *r)
{
	struct curl_slist *hl = NULL;
	CURLcode cc;

	memset(r, 0, sizeof(*r));
	buf_init(&r->body, 1 << 20);
	buf_init(&r->headers, 1 << 16);
	for (; extra && *extra; extra++)
		hl = curl_slist_append(hl, *extra);
	curl_easy_setopt(c, CURLOPT_URL, url);
	curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	curl_easy_setopt(c, CURLOPT_NOBODY, !strcmp(method, "HEAD") ? 1L : 0L);
	if (body) {
		curl_easy_setopt(c, CURLOPT_POSTFIELDS, body);
		curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, (long)strlen(body));
	} else if (strcmp(method, "HEAD")) {
		curl_easy_setopt(c, CURLOPT_HTTPGET, 1L);
		curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method);
	}
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, hfx_collect);
	curl_easy_setopt(c, CURLOPT_WRITEDATA, &r->body);
	curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, hfx_collect);
	curl_easy_setopt(c, CURLOPT_HEADERDATA, &r->headers);
	curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 5000L);
	cc = curl_easy_perform(c);
	curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r->status);
	curl_easy_setopt(c, CURLOPT_HTTPHEADER, NULL);
	curl_slist_free_all(hl);
	return cc;
}

CURLcode hfx_fetch(const char *method, const char *url, const char *body,
		   const char *const *extra, struct reply *r)
{
	CURL *c = curl_easy_init();
	CURLcode cc = hfx_fetch_with(c, method, url, body, extra, r);

	curl_easy_cleanup(c);
	return cc;
}

void hfx_url_for(char *out, size_t n, const struct srv *s, const char *path)
{
	snprintf(out, n, "http://127.0.0.1:%d%s", srv_port(s), path);
}

long hfx_ask(const struct srv *s, const char *method, const char *path, const char *body,
	     const char *const *extra, struct reply *r)
{
	char url[512];

	hfx_url_for(url, sizeof(url), s, path);
	assert_int_equal(hfx_fetch(method, url, body, extra, r), CURLE_OK);
	return r->status;
}

void hfx_hello(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct seen *sn = ctx;

	pthread_mutex_lock(&sn->lock);
	sn->calls++;
	pthread_mutex_unlock(&sn->lock);
	res->content_type = "text/plain";
	(void)buf_printf(&res->body, "hello %s", req->method);
}

void hfx_echo(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct seen *sn = ctx;
	const char *h = srv_header(req, "x-TEST");
	const char *q = srv_query(req, "q");

	pthread_mutex_lock(&sn->lock);
	sn->calls++;
	snprintf(sn->header, sizeof(sn->header), "%s", h ? h : "(null)");
	snprintf(sn->query, sizeof(sn->query), "%s", q ? q : "(null)");
	snprintf(sn->addr, sizeof(sn->addr), "%s", srv_remote_addr(req));
	sn->body_len = req->body_len;
	pthread_mutex_unlock(&sn->lock);
	res->status = 202;
	res->content_type = "application/json";
	assert_int_equal(srv_response_header(res, "Retry-After", "120"), ERR_OK);
	assert_int_equal(srv_response_header(res, "X-Bad", "a\r\nInjected: 1"), ERR_INVALID);
	assert_int_equal(srv_response_header(res, "Bad Name", "v"), ERR_INVALID);
	assert_int_equal(srv_response_header(res, "", "v"), ERR_INVALID);
	(void)buf_add(&res->body, req->body, req->body_len);
}

static void bad_status(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	(void)ctx;
	(void)req;
	res->status = 42;
	(void)buf_adds(&res->body, "secret detail");
}

static void slow(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct seen *sn = ctx;
	struct timespec ts = {0, 300 * 1000 * 1000};

	(void)req;
	pthread_mutex_lock(&sn->lock);
	sn->started = 1;
	pthread_mutex_unlock(&sn->lock);
	nanosleep(&ts, NULL);
	(void)buf_adds(&res->body, "done");
	pthread_mutex_lock(&sn->lock);
	sn->finished = 1;
	pthread_mutex_unlock(&sn->lock);
}

static void observe(void *ctx, const char *method, const char *path, int status,
		    int64_t duration_us)
{
	struct seen *sn = ctx;

	pthread_mutex_lock(&sn->lock);
	snprintf(sn->obs, sizeof(sn->obs), "%s %s %d", method, path, status);
	sn->obs_calls++;
	pthread_mutex_unlock(&sn->lock);
	assert_true(duration_us >= 0 && duration_us < 10 * 1000 * 1000);
}

struct srv *hfx_serve(struct seen *sn, struct srv_options *o, const struct hfx_route *routes,
		      srv_observer observer)
{
	struct buf err = BUF_INIT;
	struct srv *s = NULL;

	memset(sn, 0, sizeof(*sn));
	pthread_mutex_init(&sn->lock, NULL);
	if (!o->listen_address)
		o->listen_address = "127.0.0.1:0";
	if (!o->timeout_s)
		o->timeout_s = 5;
	assert_int_equal(srv_new(o, &s, &err), ERR_OK);
	for (; routes->method; routes++)
		assert_int_equal(srv_route(s, routes->method, routes->path, routes->fn, routes->ctx),
				 ERR_OK);
	if (observer)
		srv_set_observer(s, observer, sn);
	assert_int_equal(srv_start(s, &err), ERR_OK);
	assert_true(srv_port(s) > 0);
	buf_release(&err);
	return s;
}

/* A server on 127.0.0.1:0 with the test routes, started. */
struct srv *hfx_start_server(struct seen *sn, size_t max_body, unsigned threads)
{
	struct srv_options o = {0};
	const struct hfx_route routes[] = {
		{ "GET", "/hello", hfx_hello, sn },
		{ "POST", "/hello", hfx_hello, sn },
		{ "*", "/echo", hfx_echo, sn },
		{ "GET", "/bad", bad_status, sn },
		{ "GET", "/slow", slow, sn },
		{ NULL, NULL, NULL, NULL },
	};

	o.threads = threads;
	o.max_body_bytes = max_body;
	return hfx_serve(sn, &o, routes, observe);
}

int hfx_calls(struct seen *sn)
{
	int n;

	pthread_mutex_lock(&sn->lock);
	n = sn->calls;
	pthread_mutex_unlock(&sn->lock);
	return n;
}

/* Connect a raw socket to the server; -1 on failure. */
int hfx_raw_connect(const struct srv *s)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&a, 0, sizeof(a));
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)srv_port(s));
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

void hfx_raw_exchange(int fd, const char *req, size_t len, struct buf *out)
{
	char chunk[1024];
	int64_t waited_ms = 0;
	ssize_t n;

	assert_int_equal(send(fd, req, len, MSG_NOSIGNAL), (ssize_t)len);
	while (waited_ms < 3000) {
		struct pollfd p = {fd, POLLIN, 0};
		if (poll(&p, 1, 100) == 0) {
			waited_ms += 100;
			if (strstr(buf_str(out), "\r\n\r\n") && strstr(buf_str(out), "}\n"))
				break;
			continue;
		}
		n = recv(fd, chunk, sizeof(chunk), 0);
		if (n <= 0)
			break;
		assert_int_equal(buf_add(out, chunk, (size_t)n), ERR_OK);
	}
}
