/*
 * fake_http.c - libmicrohttpd-based scriptable server for unit tests.
 * One thread per connection (a delayed answer does not block the others);
 * a mutex guards the response queue and the request log.
 */
#include "fake_http.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "core/buf.h"
#include "core/xalloc.h"
#include "core/banned.h"

struct canned {
	int status;
	char *headers;
	char *body;
	int delay_ms;
	int drop;
	struct canned *next;
};

struct fake_http {
	struct MHD_Daemon *daemon;
	char url[64];
	pthread_mutex_t lock;
	struct canned *head, *tail;
	struct fake_request **reqs;
	size_t nreqs;
};

/* Per-request state, created by the URI log callback. */
struct pending {
	char *uri;
	struct buf body;
	int started;
};

static void *on_uri(void *cls, const char *uri, struct MHD_Connection *con)
{
	struct pending *p = xcalloc(1, sizeof(*p));
	(void)cls;
	(void)con;
	p->uri = xstrdup(uri);
	buf_init(&p->body, 0);
	return p;
}

static void on_completed(void *cls, struct MHD_Connection *con, void **req_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct pending *p = *req_cls;
	(void)cls;
	(void)con;
	(void)toe;
	if (!p)
		return;
	free(p->uri);
	buf_release(&p->body);
	free(p);
	*req_cls = NULL;
}

static enum MHD_Result collect_header(void *cls, enum MHD_ValueKind kind, const char *key,
				      const char *value)
{
	struct fake_request *r = cls;
	(void)kind;
	r->header_names = xreallocarray(r->header_names, r->nheaders + 1, sizeof(char *));
	r->header_values = xreallocarray(r->header_values, r->nheaders + 1, sizeof(char *));
	r->header_names[r->nheaders] = xstrdup(key);
	r->header_values[r->nheaders] = xstrdup(value ? value : "");
	r->nheaders++;
	return MHD_YES;
}

static struct canned *record_and_pop(struct fake_http *f, struct MHD_Connection *con,
				     const char *method, struct pending *p)
{
	struct fake_request *r = xcalloc(1, sizeof(*r));
	struct canned *c;

	r->method = xstrdup(method);
	r->uri = xstrdup(p->uri);
	r->body_len = p->body.len;
	r->body = buf_detach(&p->body);
	MHD_get_connection_values(con, MHD_HEADER_KIND, collect_header, r);

	pthread_mutex_lock(&f->lock);
	f->reqs = xreallocarray(f->reqs, f->nreqs + 1, sizeof(*f->reqs));
	f->reqs[f->nreqs++] = r;
	c = f->head;
	if (c) {
		f->head = c->next;
		if (!f->head)
			f->tail = NULL;
	}
	pthread_mutex_unlock(&f->lock);
	return c;
}

static void free_canned(struct canned *c)
{
	if (!c)
		return;
	free(c->headers);
	free(c->body);
	free(c);
}

static void add_headers(struct MHD_Response *resp, const char *headers)
{
	char *copy, *line, *save = NULL;

	if (!headers)
		return;
	copy = xstrdup(headers);
	for (line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *colon = strchr(line, ':');
		char *value;
		if (!colon)
			continue;
		*colon = '\0';
		value = colon + 1;
		while (*value == ' ')
			value++;
		MHD_add_response_header(resp, line, value);
	}
	free(copy);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *con, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct fake_http *f = cls;
	struct pending *p = *req_cls;
	struct canned *c;
	struct MHD_Response *resp;
	enum MHD_Result ret;
	static const char none[] = "fake_http: no canned response";
	(void)url;
	(void)version;

	if (!p->started) {
		p->started = 1;
		return MHD_YES;
	}
	if (*upload_data_size) {
		buf_add(&p->body, upload_data, *upload_data_size);
		*upload_data_size = 0;
		return MHD_YES;
	}
	c = record_and_pop(f, con, method, p);
	if (c && c->delay_ms > 0) {
		struct timespec ts = { c->delay_ms / 1000, (long)(c->delay_ms % 1000) * 1000000L };
		nanosleep(&ts, NULL);
	}
	if (c && c->drop) {
		free_canned(c);
		return MHD_NO;
	}
	if (c)
		resp = MHD_create_response_from_buffer(strlen(c->body), c->body,
						       MHD_RESPMEM_MUST_COPY);
	else
		resp = MHD_create_response_from_buffer(sizeof(none) - 1, (void *)none,
						       MHD_RESPMEM_PERSISTENT);
	add_headers(resp, c ? c->headers : NULL);
	ret = MHD_queue_response(con, c ? (unsigned)c->status : 599u, resp);
	MHD_destroy_response(resp);
	free_canned(c);
	return ret;
}

struct fake_http *fake_http_start(void)
{
	struct fake_http *f = xcalloc(1, sizeof(*f));
	struct sockaddr_in sa;
	const union MHD_DaemonInfo *info;

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = 0;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	pthread_mutex_init(&f->lock, NULL);
	f->daemon = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
					     MHD_USE_THREAD_PER_CONNECTION,
				     0, NULL, NULL, on_request, f,
				     MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				     MHD_OPTION_URI_LOG_CALLBACK, on_uri, f,
				     MHD_OPTION_NOTIFY_COMPLETED, on_completed, f,
				     MHD_OPTION_CONNECTION_TIMEOUT, 5u,
				     MHD_OPTION_END);
	if (!f->daemon) {
		fprintf(stderr, "fake_http: cannot start libmicrohttpd\n");
		abort();
	}
	info = MHD_get_daemon_info(f->daemon, MHD_DAEMON_INFO_BIND_PORT);
	if (!info || !info->port) {
		fprintf(stderr, "fake_http: no bound port\n");
		abort();
	}
	snprintf(f->url, sizeof(f->url), "http://127.0.0.1:%u", (unsigned)info->port);
	return f;
}

static void free_request(struct fake_request *r)
{
	for (size_t i = 0; i < r->nheaders; i++) {
		free(r->header_names[i]);
		free(r->header_values[i]);
	}
	free(r->header_names);
	free(r->header_values);
	free(r->method);
	free(r->uri);
	free(r->body);
	free(r);
}

void fake_http_stop(struct fake_http *f)
{
	struct canned *c, *next;

	if (!f)
		return;
	MHD_stop_daemon(f->daemon);
	for (c = f->head; c; c = next) {
		next = c->next;
		free_canned(c);
	}
	for (size_t i = 0; i < f->nreqs; i++)
		free_request(f->reqs[i]);
	free(f->reqs);
	pthread_mutex_destroy(&f->lock);
	free(f);
}

const char *fake_http_url(const struct fake_http *f)
{
	return f->url;
}

static void push(struct fake_http *f, struct canned *c)
{
	pthread_mutex_lock(&f->lock);
	if (f->tail)
		f->tail->next = c;
	else
		f->head = c;
	f->tail = c;
	pthread_mutex_unlock(&f->lock);
}

void fake_http_push_delayed(struct fake_http *f, int delay_ms, int status, const char *headers,
			    const char *body)
{
	struct canned *c = xcalloc(1, sizeof(*c));
	c->status = status;
	c->headers = headers ? xstrdup(headers) : NULL;
	c->body = xstrdup(body ? body : "");
	c->delay_ms = delay_ms;
	push(f, c);
}

void fake_http_push(struct fake_http *f, int status, const char *headers, const char *body)
{
	fake_http_push_delayed(f, 0, status, headers, body);
}

void fake_http_push_drop(struct fake_http *f)
{
	struct canned *c = xcalloc(1, sizeof(*c));
	c->drop = 1;
	push(f, c);
}

size_t fake_http_count(struct fake_http *f)
{
	size_t n;
	pthread_mutex_lock(&f->lock);
	n = f->nreqs;
	pthread_mutex_unlock(&f->lock);
	return n;
}

const struct fake_request *fake_http_request(struct fake_http *f, size_t i)
{
	const struct fake_request *r = NULL;
	pthread_mutex_lock(&f->lock);
	if (i < f->nreqs)
		r = f->reqs[i];
	pthread_mutex_unlock(&f->lock);
	return r;
}

const char *fake_request_header(const struct fake_request *r, const char *name)
{
	for (size_t i = 0; r && i < r->nheaders; i++)
		if (!strcasecmp(r->header_names[i], name))
			return r->header_values[i];
	return NULL;
}
