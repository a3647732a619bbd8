/*
 * http_server.c - routing HTTP server on libmicrohttpd (MHD 0.9.75).
 *
 * The MHD_Daemon never leaves this file.  We bind the listening socket
 * ourselves (http_server_listen.c: exact error messages, dual-stack ":port")
 * and hand it to MHD,
 * which runs a thread pool on poll().  One struct srv_request_impl per
 * request (http_server_int.h) carries the route, the body and the timing from
 * the first access-handler call to MHD's completion notice.
 */
#include "http_server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <gnutls/gnutls.h>
#include <limits.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "http_server_int.h"
#include "log.h"
#include "xalloc.h"

#include "clock.h"
#include "banned.h"

#define DEFAULT_MAX_BODY (1024 * 1024)
#define DEFAULT_TIMEOUT_S 30
#define DEFAULT_CONTENT_TYPE "text/plain; charset=utf-8"
#define JSON_TYPE "application/json"
#define DISCARD_MIN (1024 * 1024)
#define DEFAULT_HEADER_TIMEOUT_MS 10000

/* The observer's path for requests no route has (one object: compared by address). */
static const char not_routed[] = "other";

static enum err load_tls(struct srv *s, const struct srv_options *o, struct buf *errmsg)
{
	int have_cert = o->tls_cert_file && *o->tls_cert_file;
	int have_key = o->tls_key_file && *o->tls_key_file;
	int have_ca = o->tls_client_ca_file && *o->tls_client_ca_file;
	enum err rc;

	if (!have_cert && !have_key && !have_ca)
		return ERR_OK;
	if (have_cert != have_key || (have_ca && !have_cert)) {
		buf_setf(errmsg, "tls needs both a certificate and a key file%s",
			 have_ca ? " when a client CA is set" : "");
		return ERR_INVALID;
	}
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		buf_setf(errmsg, "tls requested but libmicrohttpd was built without it");
		return ERR_INVALID;
	}
	rc = srv_read_pem("tls certificate", o->tls_cert_file, &s->tls_cert, errmsg);
	if (!rc)
		rc = srv_read_pem("tls key", o->tls_key_file, &s->tls_key, errmsg);
	if (!rc && have_ca)
		rc = srv_read_pem("tls client CA", o->tls_client_ca_file, &s->tls_ca, errmsg);
	return rc;
}

enum err srv_new(const struct srv_options *opts, struct srv **out, struct buf *errmsg)
{
	struct srv *s = xcalloc(1, sizeof(*s));
	enum err rc;

	*out = NULL;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->idle, NULL);
	clock_cond_init_mono(&s->reaper_wake);
	pthread_mutex_init(&s->defer_mu, NULL);
	pthread_cond_init(&s->defer_wake, NULL);
	pthread_cond_init(&s->defer_idle, NULL);
	rc = srv_parse_listen(opts->listen_address, &s->host, &s->port, errmsg);
	if (rc)
		goto out;
	s->listen_address = xstrdup(opts->listen_address);
	s->threads = opts->threads;
	if (s->threads == 0) {
		long n = sysconf(_SC_NPROCESSORS_ONLN);
		s->threads = n > 0 && n < 1024 ? (unsigned)n : 1;
	}
	s->max_connections = opts->max_connections;
	s->reserve = s->max_connections / SRV_RESERVE_DIVISOR;
	s->max_per_ip = opts->max_connections_per_ip;
	s->timeout_s = opts->timeout_s ? opts->timeout_s : DEFAULT_TIMEOUT_S;
	s->read_timeout_us = (int64_t)s->timeout_s * 1000000;
	s->header_timeout_us = (int64_t)(opts->header_timeout_ms ? opts->header_timeout_ms :
						DEFAULT_HEADER_TIMEOUT_MS) * 1000;
	if (s->header_timeout_us > s->read_timeout_us)
		s->header_timeout_us = s->read_timeout_us;
	s->max_body = opts->max_body_bytes ? opts->max_body_bytes : DEFAULT_MAX_BODY;
	rc = load_tls(s, opts, errmsg);
	if (rc)
		goto out;
	*out = s;
	s = NULL;
out:
	srv_free(s);
	return rc;
}

enum err srv_route(struct srv *s, const char *method, const char *path, srv_handler fn, void *ctx)
{
	size_t i;

	if (!fn || !method || !*method || !path || path[0] != '/')
		return ERR_INVALID;
	if (s->started)
		return ERR_INVALID;
	for (i = 0; i < s->nroutes; i++)
		if (!strcmp(s->routes[i].method, method) && !strcmp(s->routes[i].path, path))
			return ERR_INVALID;
	s->routes = xreallocarray(s->routes, s->nroutes + 1, sizeof(*s->routes));
	s->routes[s->nroutes].method = xstrdup(method);
	s->routes[s->nroutes].path = xstrdup(path);
	s->routes[s->nroutes].fn = fn;
	s->routes[s->nroutes].ctx = ctx;
	s->routes[s->nroutes].rejected = NULL;
	s->routes[s->nroutes].rejected_ctx = NULL;
	s->nroutes++;
	return ERR_OK;
}

enum err srv_route_rejected(struct srv *s, const char *path, srv_rejected fn, void *ctx)
{
	int found = 0;

	if (!fn || !path || s->started)
		return ERR_INVALID;
	for (size_t i = 0; i < s->nroutes; i++) {
		if (strcmp(s->routes[i].path, path))
			continue;
		s->routes[i].rejected = fn;
		s->routes[i].rejected_ctx = ctx;
		found = 1;
	}
	return found ? ERR_OK : ERR_INVALID;
}

void srv_set_observer(struct srv *s, srv_observer fn, void *ctx)
{
	s->observer = fn;
	s->observer_ctx = ctx;
}

int srv_port(const struct srv *s)
{
	return s ? s->port_num : 0;
}

/* Set c's deadline (under lock); c may be NULL. */
static void set_deadline(struct srv *s, struct conn *c, int64_t deadline_us, const char *phase)
{
	if (!c)
		return;
	pthread_mutex_lock(&s->lock);
	c->deadline_us = deadline_us;
	if (phase)
		c->phase = phase;
	pthread_mutex_unlock(&s->lock);
}

/* Queue a response with body taken from b (b is left empty). */
static enum MHD_Result respond(struct srv_request_impl *x, int status, const char *content_type,
			       struct buf *b, const struct buf *headers, int close_conn)
{
	struct MHD_Response *r;
	enum MHD_Result ok;
	size_t len = b ? b->len : 0;

	if (len)
		r = MHD_create_response_from_buffer(len, buf_detach(b), MHD_RESPMEM_MUST_FREE);
	else
		r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
	if (!r)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE,
				content_type ? content_type : DEFAULT_CONTENT_TYPE);
	if (headers && headers->len) {
		/* name\0value\0 pairs, validated by srv_response_header(). */
		const char *p = headers->data, *end = headers->data + headers->len;
		while (p < end) {
			const char *v = p + strlen(p) + 1;
			MHD_add_response_header(r, p, v);
			p = v + strlen(v) + 1;
		}
	}
	if (close_conn)
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	ok = MHD_queue_response(x->conn, (unsigned)status, r);
	MHD_destroy_response(r);
	if (ok == MHD_YES) {
		x->status = status;
		/* Answered: sending is bounded by MHD's idle timeout, not by ours. */
		set_deadline(x->srv, x->tracked, 0, NULL);
	}
	return ok;
}

/* Answer with {"error": msg}; msg must not need JSON escaping. */
static enum MHD_Result respond_error(struct srv_request_impl *x, int status, const char *msg,
				     const char *hname, const char *hvalue, int close_conn)
{
	struct buf b = BUF_INIT, h = BUF_INIT;
	enum MHD_Result ok;

	if (buf_printf(&b, "{\"error\": \"%s\"}\n", msg))
		return MHD_NO;
	if (hname && (buf_add(&h, hname, strlen(hname) + 1) ||
		      buf_add(&h, hvalue, strlen(hvalue) + 1)))
		return MHD_NO;
	ok = respond(x, status, JSON_TYPE, &b, &h, close_conn);
	buf_release(&b);
	buf_release(&h);
	return ok;
}

static const char *method_label(const char *m)
{
	static const char *const known[] = {"GET", "HEAD", "POST", "PUT", "DELETE", "PATCH",
					    "OPTIONS"};
	size_t i;

	for (i = 0; i < sizeof(known) / sizeof(known[0]); i++)
		if (!strcmp(m, known[i]))
			return known[i];
	return "OTHER";
}

static int method_matches(const char *route_method, const char *method)
{
	if (!strcmp(route_method, "*") || !strcmp(route_method, method))
		return 1;
	return !strcmp(method, "HEAD") && !strcmp(route_method, "GET");
}

/*
 * Find the route.  *known_path is the registered path when some route has
 * it (405 rather than 404 when NULL is returned), else NULL.
 */
static const struct route *find_route(const struct srv *s, const char *method, const char *path,
				      const char **known_path)
{
	size_t i;

	*known_path = NULL;
	for (i = 0; i < s->nroutes; i++) {
		if (strcmp(s->routes[i].path, path))
			continue;
		*known_path = s->routes[i].path;
		if (method_matches(s->routes[i].method, method))
			return &s->routes[i];
	}
	return NULL;
}

/* The Allow header for path: its routes' methods, HEAD added for GET. */
static void allow_list(const struct srv *s, const char *path, struct buf *out)
{
	size_t i;
	int get = 0, head = 0;

	for (i = 0; i < s->nroutes; i++) {
		if (strcmp(s->routes[i].path, path))
			continue;
		get |= !strcmp(s->routes[i].method, "GET");
		head |= !strcmp(s->routes[i].method, "HEAD");
		(void)buf_printf(out, "%s%s", out->len ? ", " : "", s->routes[i].method);
	}
	if (get && !head)
		(void)buf_adds(out, ", HEAD");
}

/* With a client CA configured, the peer's certificate must verify against it. */
static int client_verified(struct srv_request_impl *x)
{
	const union MHD_ConnectionInfo *ci;
	unsigned status = 0;

	ci = MHD_get_connection_info(x->conn, MHD_CONNECTION_INFO_GNUTLS_SESSION);
	if (!ci || !ci->tls_session)
		return 0;
	if (gnutls_certificate_verify_peers2((gnutls_session_t)ci->tls_session, &status) < 0)
		return 0;
	return status == 0;
}

/* 404 for an unknown path, 405 (with Allow) for a known one. */
static enum MHD_Result reject_unrouted(struct srv_request_impl *x)
{
	struct buf allow = BUF_INIT;
	enum MHD_Result ok;
	int close_conn = x->has_body;

	if (x->route_label == not_routed)
		return respond_error(x, MHD_HTTP_NOT_FOUND, "not found", NULL, NULL, close_conn);
	allow_list(x->srv, x->req.path, &allow);
	ok = respond_error(x, MHD_HTTP_METHOD_NOT_ALLOWED, "method not allowed",
			   MHD_HTTP_HEADER_ALLOW, buf_str(&allow), close_conn);
	buf_release(&allow);
	return ok;
}

/* How much of an oversized body is read and dropped before hanging up. */
static size_t discard_limit(const struct srv *s)
{
	size_t n = s->max_body < SIZE_MAX / 4 ? s->max_body * 4 : SIZE_MAX;

	return n > DISCARD_MIN ? n : DISCARD_MIN;
}

/* Log a 413 (one line each: they are rare, and a client's size is worth knowing). */
static void log_too_large(struct srv_request_impl *x)
{
	struct log_line *l = log_begin(LOG_WARN, "request body too large");

	log_str(l, "remote_addr", srv_remote_addr(&x->req));
	log_str(l, "path", x->req.path);
	if (x->content_length >= 0)
		log_int(l, "content_length", x->content_length);
	log_int(l, "max_body_bytes", (int64_t)x->srv->max_body);
	log_int(l, "read", (int64_t)(x->body.len + x->discarded));
	log_end(l);
}

static enum MHD_Result respond_too_large(struct srv_request_impl *x)
{
	log_too_large(x);
	if (x->route && x->route->rejected)
		x->route->rejected(x->route->rejected_ctx, &x->req, MHD_HTTP_CONTENT_TOO_LARGE);
	return respond_error(x, MHD_HTTP_CONTENT_TOO_LARGE, "request body too large", NULL, NULL,
			     1);
}

/*
 * A Content-Length over max_body.  Answering before the body is read makes
 * the kernel reset the connection under a client that is still sending (and
 * many, like Python's urllib, read only once all is sent): the 413 is lost.
 * So the body is read and dropped, up to discard_limit(), and answered at
 * its end - unless the client asked "Expect: 100-continue" (it waits for an
 * answer before sending) or announced more than the bound: then at once.
 */
static int answer_too_large_now(struct srv_request_impl *x, unsigned long long n)
{
	const char *expect = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
							 MHD_HTTP_HEADER_EXPECT);

	return n > discard_limit(x->srv) || (expect && !strcasecmp(expect, "100-continue"));
}

/* A head srv_check_head() refused: 400, logged at warn, and the connection closed. */
static enum MHD_Result refuse_head(struct srv_request_impl *x, const char *why)
{
	struct log_line *l = log_begin(LOG_WARN, "request refused");

	log_str(l, "reason", why);
	log_str(l, "remote_addr", srv_remote_addr(&x->req));
	log_str(l, "path", x->route_label);
	log_end(l);
	return respond_error(x, MHD_HTTP_BAD_REQUEST, why, NULL, NULL, 1);
}

/* First callback: route, early rejections; MHD_YES to go on reading. */
static enum MHD_Result on_headers(struct srv_request_impl *x, const char *method,
				  const char *version)
{
	struct srv *s = x->srv;
	const char *cl, *known_path, *why;

	x->route = find_route(s, method, x->req.path, &known_path);
	x->route_label = known_path ? known_path : not_routed;
	x->content_length = -1;
	why = srv_check_head(x->conn, version);
	if (why)
		return refuse_head(x, why);
	if (s->tls_ca && !client_verified(x))
		return respond_error(x, MHD_HTTP_FORBIDDEN, "client certificate not verified",
				     NULL, NULL, 1);
	cl = MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
					 MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (cl) {
		char *end = NULL;
		unsigned long long n;
		errno = 0;
		n = strtoull(cl, &end, 10);
		if (errno || end == cl || n > (unsigned long long)LLONG_MAX)
			return respond_too_large(x);
		x->content_length = (long long)n;
		if (n > s->max_body && answer_too_large_now(x, n))
			return respond_too_large(x);
		if (n > s->max_body) {
			buf_release(&x->body);
			x->too_big = 1;  /* on_request() drops it, then answers */
			return MHD_YES;
		}
		x->has_body = n > 0;
	}
	x->has_body |= MHD_lookup_connection_value(x->conn, MHD_HEADER_KIND,
						   MHD_HTTP_HEADER_TRANSFER_ENCODING) != NULL;
	/*
	 * MHD 0.9.75 closes the connection after a response queued before the
	 * request was read, so answer bodiless requests at the last callback
	 * (keep-alive survives) and only those with a body right away.
	 */
	if (!x->route && x->has_body)
		return reject_unrouted(x);
	return MHD_YES;
}

/* Last callback: run the handler and queue what it answered. */
static enum MHD_Result dispatch(struct srv_request_impl *x)
{
	struct srv_response res;
	enum MHD_Result ok;
	int status;

	x->req.body = buf_str(&x->body);
	x->req.body_len = x->body.len;
	res.status = MHD_HTTP_OK;
	res.content_type = NULL;
	buf_init(&res.body, 0);
	buf_init(&res.headers, 0);
	set_deadline(x->srv, x->tracked, 0, NULL);  /* the request is in; handlers may block */
	x->deferring = 0;
	x->route->fn(x->route->ctx, &x->req, &res);
	if (x->deferring) {
		/* Suspended by srv_defer(): the handler runs again once the work is done. */
		buf_release(&res.body);
		buf_release(&res.headers);
		return MHD_YES;
	}
	status = res.status;
	if (status < 100 || status > 599) {
		struct log_line *l = log_begin(LOG_ERROR, "handler set an invalid http status");
		log_str(l, "path", x->req.path);
		log_int(l, "status", status);
		log_end(l);
		buf_reset(&res.body);
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
	}
	ok = respond(x, status, res.content_type, &res.body, &res.headers, 0);
	buf_release(&res.body);
	buf_release(&res.headers);
	return ok;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
				  const char *method, const char *version,
				  const char *upload_data, size_t *upload_data_size,
				  void **con_cls)
{
	struct srv *s = cls;
	struct srv_request_impl *x = *con_cls;
	const union MHD_ConnectionInfo *ci;

	if (!x) {
		x = xcalloc(1, sizeof(*x));
		x->srv = s;
		x->conn = conn;
		x->start_us = clock_mono_us();
		x->method_label = method_label(method);
		x->req.method = method;
		x->req.path = url;
		x->req.body = "";
		x->req.impl = x;
		buf_init(&x->body, s->max_body);
		*con_cls = x;
		ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		x->tracked = ci ? ci->socket_context : NULL;
		pthread_mutex_lock(&s->lock);
		s->inflight++;
		/* Headers in: the whole request must be in read_timeout after its start. */
		if (x->tracked && x->tracked->admitted) {
			x->tracked->deadline_us = x->tracked->start_us + s->read_timeout_us;
			x->tracked->phase = "body";
		}
		pthread_mutex_unlock(&s->lock);
		return on_headers(x, method, version);
	}
	if (x->status) {
		/* Already answered (an early rejection): drop whatever still comes. */
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (*upload_data_size) {
		size_t n = *upload_data_size;
		*upload_data_size = 0;
		if (!x->route)
			return MHD_YES;  /* cannot happen: answered at the first call */
		if (!x->too_big && buf_add(&x->body, upload_data, n) == ERR_OK)
			return MHD_YES;
		/*
		 * Over the limit (announced, or while streaming chunked).  MHD
		 * 0.9.75 cannot queue a response in the middle of a body, so
		 * drop the rest and answer 413 at the end; a client that keeps
		 * sending far more is cut off (and that is logged too).
		 */
		if (!x->too_big) {
			x->discarded = x->body.len;
			buf_release(&x->body);
		}
		x->too_big = 1;
		x->discarded += n;
		if (x->discarded <= discard_limit(x->srv))
			return MHD_YES;
		log_too_large(x);
		return MHD_NO;
	}
	if (x->too_big)
		return respond_too_large(x);
	if (!x->route)
		return reject_unrouted(x);
	return dispatch(x);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct srv *s = cls;
	struct srv_request_impl *x = *con_cls;
	const union MHD_ConnectionInfo *ci;
	struct conn *c;
	int trim;

	(void)toe;
	if (!x)
		return;
	*con_cls = NULL;
	trim = x->body.len >= SRV_TRIM_AFTER_BODY_BYTES;
	if (s->observer && x->status)
		s->observer(s->observer_ctx, x->method_label, x->route_label, x->status,
			    clock_mono_us() - x->start_us);
	/* A 2xx to a POST passed the route's credentials: the reserve is open to it. */
	if (x->route && x->status >= 200 && x->status < 300 && !strcmp(x->req.method, "POST"))
		srv_note_client(s, srv_remote_addr(&x->req));
	srv_defer_release(x);
	buf_release(&x->body);
	pthread_mutex_lock(&s->lock);
	/*
	 * Kept alive: the next request's headers are due like a new connection's.
	 * The connection is looked up again: MHD may have closed it already.
	 */
	ci = MHD_get_connection_info(conn, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
	c = ci ? ci->socket_context : NULL;
	if (c && c->admitted)
		srv_arm_for_headers(s, c, clock_mono_us(), 1);
	free(x);
	if (--s->inflight == 0)
		pthread_cond_broadcast(&s->idle);
	pthread_mutex_unlock(&s->lock);
#ifdef __GLIBC__
	/*
	 * A large body's handler built and freed a large tree in this thread's
	 * malloc arena, which glibc keeps for the thread: with several handler
	 * threads each would hold its peak for good.  malloc_trim(3) hands the
	 * free pages of every arena back (a few ms, only after such a request).
	 */
	if (trim)
		(void)malloc_trim(0);
#else
	(void)trim;
#endif
}

static void mhd_log(void *cls, const char *fmt, va_list ap) PRINTF_LIKE(2, 0);

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	struct buf b = BUF_INIT;
	struct log_line *l;

	(void)cls;
	l = log_begin(LOG_DEBUG, "libmicrohttpd");
	if (!l)
		return;
	(void)buf_vprintf(&b, fmt, ap);
	while (b.len && b.data[b.len - 1] == '\n')
		buf_truncate(&b, b.len - 1);
	log_str(l, "detail", buf_str(&b));
	log_end(l);
	buf_release(&b);
}

enum err srv_start(struct srv *s, struct buf *errmsg)
{
	struct MHD_OptionItem opts[16];
	/*
	 * poll(), not epoll: with a thread pool on epoll, MHD_quiesce_daemon()
	 * removes the listen socket from every worker's epoll set from the
	 * calling thread while a worker at its connection limit may remove it
	 * too; the loser's EPOLL_CTL_DEL fails and libmicrohttpd aborts the
	 * process ("Failed to remove listen FD from epoll set", seen in CI at
	 * srv_stop).  With poll() quiesce only signals each worker's ITC.
	 */
	unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_ALLOW_SUSPEND_RESUME |
			 MHD_USE_ERROR_LOG;
	size_t n = 0;
	enum err rc;
	int fd = -1;

	if (s->started) {
		buf_setf(errmsg, "server on %s already started", s->listen_address);
		return ERR_INVALID;
	}
	rc = srv_open_listener(s->host, s->port, s->listen_address, &fd, &s->port_num, errmsg);
	if (rc)
		return rc;
#define OPT(o, v, p) (opts[n++] = (struct MHD_OptionItem){(o), (intptr_t)(v), (p)})
	OPT(MHD_OPTION_LISTEN_SOCKET, fd, NULL);
	OPT(MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, s);
	OPT(MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)srv_on_connection, s);
	OPT(MHD_OPTION_CONNECTION_TIMEOUT, s->timeout_s, NULL);
	OPT(MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL);
	if (s->threads > 1)
		OPT(MHD_OPTION_THREAD_POOL_SIZE, s->threads, NULL);
	/*
	 * MHD splits its limit among the worker threads and a full worker stops
	 * accepting, so at MHD's limit new connections would wait unseen in the
	 * backlog.  Give MHD room above ours: srv_on_connection() closes the excess.
	 */
	if (s->max_connections)
		OPT(MHD_OPTION_CONNECTION_LIMIT, s->max_connections + s->threads + 16, NULL);
	if (s->tls_cert) {
		flags |= MHD_USE_TLS;
		OPT(MHD_OPTION_HTTPS_MEM_CERT, 0, s->tls_cert);
		OPT(MHD_OPTION_HTTPS_MEM_KEY, 0, s->tls_key);
		if (s->tls_ca)
			OPT(MHD_OPTION_HTTPS_MEM_TRUST, 0, s->tls_ca);
	}
	OPT(MHD_OPTION_END, 0, NULL);
#undef OPT
	if (srv_defer_start(s)) {
		srv_defer_stop(s);
		close(fd);
		s->port_num = 0;
		buf_setf(errmsg, "cannot start http server on %s: no thread for slow work",
			 s->listen_address);
		return ERR_IO;
	}
	s->daemon = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s, MHD_OPTION_ARRAY, opts,
				     MHD_OPTION_END);
	if (!s->daemon) {
		srv_defer_stop(s);
		close(fd);
		s->port_num = 0;
		buf_setf(errmsg, "cannot start http server on %s%s", s->listen_address,
			 s->tls_cert ? " (check the tls certificate and key)" : "");
		return ERR_IO;
	}
	if (pthread_create(&s->reaper, NULL, srv_reap, s)) {
		MHD_stop_daemon(s->daemon);
		srv_defer_stop(s);
		s->daemon = NULL;
		s->port_num = 0;
		buf_setf(errmsg, "cannot start http server on %s: no thread for timeouts",
			 s->listen_address);
		return ERR_IO;
	}
	s->reaper_running = 1;
	s->started = 1;
	return ERR_OK;
}

void srv_stop(struct srv *s)
{
	struct timespec deadline;
	MHD_socket fd;

	if (!s || !s->daemon)
		return;
	/*
	 * The listen socket quiesce hands back is closed only after
	 * MHD_stop_daemon(): until then a pool thread may still use it (the
	 * libmicrohttpd manual, MHD_quiesce_daemon).  Closed earlier, a thread
	 * reaching its connection limit failed to remove it from its epoll set
	 * and libmicrohttpd aborted the process ("Failed to remove listen FD
	 * from epoll set").
	 */
	fd = MHD_quiesce_daemon(s->daemon);
	clock_gettime(CLOCK_REALTIME, &deadline);
	/* A stalled upload must not hold shutdown for the whole read timeout. */
	deadline.tv_sec += s->timeout_s < SRV_DRAIN_MAX_S ? s->timeout_s : SRV_DRAIN_MAX_S;
	pthread_mutex_lock(&s->lock);
	while (s->inflight > 0)
		if (pthread_cond_timedwait(&s->idle, &s->lock, &deadline) == ETIMEDOUT)
			break;
	pthread_mutex_unlock(&s->lock);
	/* No request may stay suspended at MHD_stop_daemon() (the manual). */
	srv_defer_drain(s);
	MHD_stop_daemon(s->daemon);
	s->daemon = NULL;
	srv_defer_stop(s);
	if (fd != MHD_INVALID_SOCKET)
		close(fd);
	if (s->reaper_running) {
		pthread_mutex_lock(&s->lock);
		s->reaper_stop = 1;
		pthread_cond_signal(&s->reaper_wake);
		pthread_mutex_unlock(&s->lock);
		pthread_join(s->reaper, NULL);
		s->reaper_running = 0;
	}
}

void srv_free(struct srv *s)
{
	size_t i;

	if (!s)
		return;
	srv_stop(s);
	for (i = 0; i < s->nroutes; i++) {
		free(s->routes[i].method);
		free(s->routes[i].path);
	}
	free(s->routes);
	free(s->listen_address);
	free(s->host);
	free(s->port);
	free(s->tls_cert);
	free(s->tls_key);
	free(s->tls_ca);
	pthread_cond_destroy(&s->idle);
	pthread_cond_destroy(&s->reaper_wake);
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->defer_wake);
	pthread_cond_destroy(&s->defer_idle);
	pthread_mutex_destroy(&s->defer_mu);
	free(s);
}

const char *srv_header(const struct srv_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->impl->conn, MHD_HEADER_KIND, name);
}

const char *srv_query(const struct srv_request *req, const char *name)
{
	return MHD_lookup_connection_value(req->impl->conn, MHD_GET_ARGUMENT_KIND, name);
}

const char *srv_remote_addr(const struct srv_request *req)
{
	struct srv_request_impl *x = req->impl;
	const union MHD_ConnectionInfo *ci;

	if (x->addr[0])
		return x->addr;
	ci = MHD_get_connection_info(x->conn, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
	srv_format_addr(ci ? ci->client_addr : NULL, x->addr);
	return x->addr;
}

/* RFC 9110 5.6.2 token characters. */
static int is_token(const char *s)
{
	if (!*s)
		return 0;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c <= 32 || c >= 127 || strchr("\"(),/:;<=>?@[\\]{}", c))
			return 0;
	}
	return 1;
}

enum err srv_response_header(struct srv_response *res, const char *name, const char *value)
{
	size_t mark = res->headers.len;

	if (!name || !value || !is_token(name) || strpbrk(value, "\r\n"))
		return ERR_INVALID;
	if (buf_add(&res->headers, name, strlen(name) + 1) ||
	    buf_add(&res->headers, value, strlen(value) + 1)) {
		buf_truncate(&res->headers, mark);
		return ERR_INVALID;
	}
	return ERR_OK;
}
