/*
 * fake_http.h - a scriptable HTTP server for unit tests (libmicrohttpd on
 * 127.0.0.1, an ephemeral port), standing in for GitHub, Kubernetes or Slack.
 *
 * Tests queue canned responses (FIFO, one per request: status, headers, body,
 * an optional delay or a dropped connection) and afterwards assert every
 * request the client made: method, path+query exactly as sent, headers, body.
 */
#ifndef AB_TEST_FAKE_HTTP_H
#define AB_TEST_FAKE_HTTP_H

#include <stddef.h>

struct fake_http;

/* One recorded request; strings owned by the fake, valid until fake_http_stop(). */
struct fake_request {
	char *method;
	char *uri;     /* path and query exactly as received, e.g. "/repos/o/r/issues?state=all" */
	char *body;    /* "" when none */
	size_t body_len;
	char **header_names;   /* as received */
	char **header_values;
	size_t nheaders;
};

/* Start on 127.0.0.1:0; aborts the test process when it cannot. */
struct fake_http *fake_http_start(void);
/* Stop the server and free everything; f may be NULL. */
void fake_http_stop(struct fake_http *f);
/* Base URL without trailing slash, e.g. "http://127.0.0.1:40123". */
const char *fake_http_url(const struct fake_http *f);

/*
 * Queue a response.  headers: "Name: value" lines separated by '\n', or NULL.
 * body may be NULL (empty).  Strings are copied.  When the queue is empty the
 * fake answers 599 with body "fake_http: no canned response".
 */
void fake_http_push(struct fake_http *f, int status, const char *headers, const char *body);
/* Queue a response sent only after delay_ms milliseconds. */
void fake_http_push_delayed(struct fake_http *f, int delay_ms, int status, const char *headers,
			    const char *body);
/* Queue a dropped connection: the request is read and recorded, no answer is sent. */
void fake_http_push_drop(struct fake_http *f);

/* Number of requests received so far. */
size_t fake_http_count(struct fake_http *f);
/* The i-th request (0-based); NULL when i >= count. */
const struct fake_request *fake_http_request(struct fake_http *f, size_t i);
/* Header value of r by case-insensitive name; NULL when absent. */
const char *fake_request_header(const struct fake_request *r, const char *name);

#endif
