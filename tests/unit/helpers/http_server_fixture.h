/*
 * http_server_fixture.h - fixtures of the routing server's unit tests
 * (test_http_server*.c): a server on 127.0.0.1:0 with the test routes (/hello,
 * /echo, /bad, /slow) whose handlers record what they saw in struct seen, and
 * clients (libcurl, raw sockets).  Failures end the test (cmocka).
 */
#ifndef AB_TEST_HTTP_SERVER_FIXTURE_H
#define AB_TEST_HTTP_SERVER_FIXTURE_H

#include <curl/curl.h>
#include <pthread.h>
#include <stddef.h>

#include "core/buf.h"
#include "core/http_server.h"

/* An answer as hfx_fetch() collects it; hfx_reply_release() it. */
struct reply {
	long status;
	struct buf body;
	struct buf headers;  /* raw header lines as received */
};

/* What the test handlers saw; guarded by lock. */
struct seen {
	pthread_mutex_t lock;
	int calls;
	char header[64];
	char query[64];
	char addr[64];
	size_t body_len;
	int started;      /* slow handler: entered */
	int finished;     /* slow handler: returned */
	char obs[256];    /* observer: last "METHOD path status" */
	int obs_calls;
};

/* curl write and header callback: append to the struct buf arg. */
size_t hfx_collect(char *p, size_t size, size_t n, void *arg);
/* Free what a fetch filled in r. */
void hfx_reply_release(struct reply *r);
/* One request on c; body NULL for none; extra is a NULL-terminated header list. */
CURLcode hfx_fetch_with(CURL *c, const char *method, const char *url, const char *body,
			const char *const *extra, struct reply *r);
/* hfx_fetch_with() on a fresh curl handle. */
CURLcode hfx_fetch(const char *method, const char *url, const char *body,
		   const char *const *extra, struct reply *r);
/* The http URL of path on s, into out (n bytes). */
void hfx_url_for(char *out, size_t n, const struct srv *s, const char *path);
/*
 * hfx_fetch() of method path (its query included, under 500 bytes) on s into r; the fetch
 * must succeed (CURLE_OK, else the test fails).  Returns r->status.
 */
long hfx_ask(const struct srv *s, const char *method, const char *path, const char *body,
	     const char *const *extra, struct reply *r);
/* Handler: counts the call, answers 200 "hello <method>". */
void hfx_hello(void *ctx, const struct srv_request *req, struct srv_response *res);
/* Handler: records header, query, address and body length, answers 202 with the body. */
void hfx_echo(void *ctx, const struct srv_request *req, struct srv_response *res);
/* A route of hfx_serve(): srv_route()'s arguments. */
struct hfx_route {
	const char *method;  /* NULL ends a list */
	const char *path;
	srv_handler fn;
	void *ctx;
};
/*
 * sn reset (its lock made), then a server on o (its listen_address 127.0.0.1:0 when unset,
 * timeout_s 5 when 0) with routes, each of routes[] up to the one whose method is NULL, and
 * observer (NULL: none) on sn, started.
 */
struct srv *hfx_serve(struct seen *sn, struct srv_options *o, const struct hfx_route *routes,
		      srv_observer observer);
/* A server on 127.0.0.1:0 with the test routes, started (sn is reset). */
struct srv *hfx_start_server(struct seen *sn, size_t max_body, unsigned threads);
/* How many calls the counting handlers saw. */
int hfx_calls(struct seen *sn);
/* Connect a raw socket to the server; -1 on failure. */
int hfx_raw_connect(const struct srv *s);
/*
 * Send req[0..len) (NUL bytes included) on fd, then append what comes back
 * to out until the server closes, or an answer with a JSON body ("}\n") is
 * in and 100 ms pass without more, or 3 s pass.
 */
void hfx_raw_exchange(int fd, const char *req, size_t len, struct buf *out);

#endif
