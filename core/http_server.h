/*
 * http_server.h - the small routing HTTP server that the webhook intake,
 * /metrics and the health endpoints run on (libmicrohttpd underneath).
 *
 * Routes are exact (method, path) matches registered before srv_start().
 * Handlers see a complete request (body accumulated up to max_body_bytes) and
 * fill in a struct srv_response.  The server answers by itself, with a JSON
 * body {"error": "..."}:
 *   404 unknown path; 405 known path, wrong method (with Allow);
 *   413 a body over max_body_bytes, then the connection is closed.  The body
 *       is read and dropped (never buffered) before the answer, so that a
 *       client still sending sees the 413 and not a connection reset: up to
 *       max(4 x max_body_bytes, 1 MiB) read in all; a streamed (chunked) body
 *       still coming past that bound is cut off without an answer.  A
 *       Content-Length over that bound, or sent with "Expect: 100-continue",
 *       is answered at once, the body unread (a client still sending it may
 *       then see a reset).  Every 413 (and every cut-off) is logged at warn:
 *       "request body too large" with remote_addr, path, content_length (when
 *       sent), max_body_bytes and read (the body bytes read);
 *   403 no valid client certificate, when a client CA is configured;
 *   400 malformed requests (libmicrohttpd itself), and heads that a C
 *       string or a proxy could read otherwise, then the connection is
 *       closed (logged at warn, "request refused" with the reason): a NUL
 *       byte in a header or a decoded query parameter, an HTTP/1.1 request
 *       without exactly one Host (RFC 9112 3.2), Content-Length together
 *       with Transfer-Encoding or several Content-Lengths (RFC 9112
 *       6.3).
 * Answers to requests that still had a body to send close the connection;
 * everything else keeps it alive (HTTP/1.1 keep-alive).  Slow and surplus
 * connections are closed without an answer (see srv_options: timeout_s,
 * header_timeout_ms, max_connections, max_connections_per_ip).
 */
#ifndef AB_HTTP_SERVER_H
#define AB_HTTP_SERVER_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

struct srv;
struct srv_request_impl;

struct srv_options {
	/*
	 * Where to listen, as Prometheus' --web.listen-address: ":9095" (all
	 * interfaces, IPv6 and IPv4), "127.0.0.1:9095", "[::1]:9095",
	 * "localhost:9095".  Port 0 asks for an ephemeral port (see srv_port()).
	 */
	const char *listen_address;
	/*
	 * Worker threads (libmicrohttpd's thread pool, each on poll(): see srv_start()).
	 * Handlers run on these threads and may block, so this is also the
	 * number of handlers that can run at once.  0: one per online CPU.
	 */
	unsigned threads;
	/*
	 * Open connections at most; 0: no cap of ours (libmicrohttpd's default,
	 * about 1000).  A connection past the cap is closed at once, before
	 * anything is read: the client sees its connection closed, not a status.
	 * The last quarter (max_connections / 4) is reserved for known clients:
	 * addresses that were answered 2xx to a POST (a webhook, or a guarded
	 * admin endpoint, so past their credentials) in the last 30 minutes
	 * (the 64 most recent).  A flood from addresses that never passed
	 * leaves the Alertmanager room; logged at warn at most every 10 s
	 * ("connection limit reached: ...", with refused_total).  At either
	 * limit a new connection takes the place of an idle one (waiting for
	 * a request's headers, a first or the next) of the address holding
	 * the most, when that address holds more than 4 and at least 2 more
	 * than the newcomer's, rather than being closed: idle connections from
	 * a few addresses cannot keep out a client the reserve does not know
	 * yet (every one, right after a start).  A request in progress is
	 * never cut.  Logged at warn at most every 10 s ("connection limit
	 * reached: closed an idle connection of the address holding the
	 * most", with its remote_addr, held and evicted_total).
	 */
	unsigned max_connections;
	/*
	 * The read timeout, in seconds; 0: 30 s.  A connection idle this long (no
	 * byte in either direction) is closed, and a request's headers and body
	 * must all arrive within it, counted from the connection's accept (or
	 * from the end of the previous response on a kept-alive connection).
	 */
	unsigned timeout_s;
	/*
	 * A request's headers (request line included) must arrive within this,
	 * counted as for timeout_s; 0: 10 s; capped at timeout_s.  It is also how
	 * long a kept-alive connection may wait for its next request.  Slow
	 * clients (slowloris) are closed without an answer when either limit
	 * passes (checked every 100 ms), and logged at info ("closed a slow
	 * connection", with their address and what was awaited).
	 */
	unsigned header_timeout_ms;
	size_t max_body_bytes;     /* larger request bodies get 413; 0: 1 MiB */
	/*
	 * PEM files.  With cert and key set the server speaks only HTTPS (MHD's
	 * gnutls).  With a client CA as well, every request must come with a
	 * client certificate that this CA signed, or it gets 403.
	 */
	const char *tls_cert_file, *tls_key_file, *tls_client_ca_file;
	/*
	 * Open connections per client at most: an IPv4 address, or an IPv6
	 * client's /64 (srv_on_connection() closes the excess at accept,
	 * unlogged); 0: no per-IP limit.
	 */
	unsigned max_connections_per_ip;
};

/* What a handler sees.  Strings live until the handler returns. */
struct srv_request {
	const char *method;  /* as sent, e.g. "POST" */
	const char *path;    /* the path without the query string, e.g. "/v1/webhook" */
	const char *body;    /* NUL-terminated request body ("" when none) */
	size_t body_len;     /* bytes in body, not counting the NUL */
	struct srv_request_impl *impl;  /* private */
};

/*
 * What a handler fills in.  It starts as status 200, content_type NULL
 * (sent as "text/plain; charset=utf-8") and an empty body without limit; the
 * server owns and frees the body.  Content-Length is always sent.
 */
struct srv_response {
	int status;                /* 100..599; anything else is sent as 500 */
	const char *content_type;  /* must outlive the handler (a literal, usually) */
	struct buf body;
	struct buf headers;        /* private: use srv_response_header() */
};

/*
 * A route's handler.  Handlers run concurrently on the worker threads
 * (srv_options.threads bounds how many at once) and may block; ctx is the
 * pointer given to srv_route().
 */
typedef void (*srv_handler)(void *ctx, const struct srv_request *req, struct srv_response *res);

/*
 * Called once per answered request, after the response was sent (or the
 * connection failed while sending it), on a worker thread: method is one of
 * GET HEAD POST PUT DELETE PATCH OPTIONS or "OTHER", path the matched route's
 * path or "other" (so metric labels stay bounded), status the one sent, and
 * duration_us the time from the request's headers to the end of the response.
 * Requests that the client abandoned before an answer was queued, and those
 * libmicrohttpd rejects itself (400 for malformed requests), are not seen.
 */
typedef void (*srv_observer)(void *ctx, const char *method, const char *path, int status,
			     int64_t duration_us);

/*
 * Check opts and build a server that is not yet listening; the strings in
 * opts are copied and the TLS files are read now.  On error *out is NULL.
 * Errors: ERR_INVALID (listen address malformed, only one of cert and key,
 * client CA without them, TLS not built into libmicrohttpd), ERR_IO (a TLS
 * file cannot be read).
 */
enum err srv_new(const struct srv_options *opts, struct srv **out, struct buf *errmsg) WARN_UNUSED;

/*
 * Route requests for exactly path (no query string; "/metrics") and method
 * ("GET", "POST" ...; "*" for any method) to fn.  HEAD is served by a GET
 * route (without the body).  Call before srv_start().  Errors: ERR_INVALID
 * (path not starting with '/', empty method, the same method and path twice,
 * server already started).
 */
enum err srv_route(struct srv *s, const char *method, const char *path, srv_handler fn,
		   void *ctx) WARN_UNUSED;

/*
 * A route's rejection hook: called when the server answers a request for
 * the route itself, without running its handler - today a body over
 * max_body_bytes (413).  req is the request as far as it was read (method,
 * path, query parameters through srv_query(); no body), status the one
 * answered.  Runs on a worker thread before the answer is queued; must not
 * block.  Lets a route count what never reached it (e.g. the webhook's
 * requests by receiver).
 */
typedef void (*srv_rejected)(void *ctx, const struct srv_request *req, int status);

/*
 * Set fn (with ctx) as the rejection hook of every route of path, each
 * method; call after srv_route() and before srv_start().  Errors:
 * ERR_INVALID (fn NULL, no route of path, server already started).
 */
enum err srv_route_rejected(struct srv *s, const char *path, srv_rejected fn,
			    void *ctx) WARN_UNUSED;

/* Set the request observer (see srv_observer); call before srv_start(). */
void srv_set_observer(struct srv *s, srv_observer fn, void *ctx);

/*
 * Bind, listen and start the worker threads.  Errors: ERR_IO with a message
 * naming the address (cannot resolve, bind or listen, e.g. address in use;
 * libmicrohttpd would not start, e.g. the TLS key does not match), ERR_INVALID
 * (already started).
 */
enum err srv_start(struct srv *s, struct buf *errmsg) WARN_UNUSED;

/* The port the server listens on (useful with port 0); 0 before srv_start(). */
int srv_port(const struct srv *s);

/*
 * The connections counted against max_connections now.  A connection leaves the count when
 * libmicrohttpd reports it closed (MHD_CONNECTION_NOTIFY_CLOSED), which may come a little
 * after its client sees the close: a test that opens a connection in the place another one
 * left waits for this count first.
 */
unsigned srv_connections(struct srv *s);

/* The longest srv_stop() waits for requests still being received or answered. */
#define SRV_DRAIN_MAX_S 5

/*
 * Stop accepting connections (the listening socket is closed at once), let
 * in-flight requests finish (their handlers return and their responses go
 * out; for at most timeout_s or SRV_DRAIN_MAX_S, whichever is shorter, after
 * which connections are closed: a client stalled mid-body gets no answer and
 * nothing of its request is kept), then close everything.  Running handlers
 * are always waited for.  Idempotent; s may be NULL.
 */
void srv_stop(struct srv *s);

/* srv_stop() then free everything; s may be NULL. */
void srv_free(struct srv *s);

/*
 * Slow work off the worker threads.  A handler that must spend long on the
 * CPU before it can answer (a bcrypt: tens of ms) calls srv_defer() and
 * returns at once: nothing is sent, the request is suspended
 * (MHD_suspend_connection: it holds no worker thread), fn(arg) runs on the
 * server's slow-work thread (one; the queue holds 16), then the request is
 * resumed and the route's handler runs again, on a worker thread, where
 * srv_deferred(req) returns arg: it answers then.  arg is the server's from
 * srv_defer() until the request ends, when release(arg) is called (release
 * may be NULL), whether or not the handler ran again (the client may have
 * gone).  fn must not block on the network, nor touch req.  Call at most
 * once per request, from its handler.  srv_stop() waits for queued work.
 * Errors: ERR_RETRY: the queue is full; nothing was deferred (answer 503
 * with Retry-After, say) and arg is still the caller's; ERR_INVALID: called
 * twice for one request, or fn NULL.
 */
enum err srv_defer(const struct srv_request *req, void (*fn)(void *arg),
		   void (*release)(void *arg), void *arg) WARN_UNUSED;

/* In a handler run again after srv_defer(): its arg; NULL in the first run. */
void *srv_deferred(const struct srv_request *req);

/*
 * Request accessors; they are valid only inside the handler and return
 * pointers valid until it returns.
 * srv_header: the first header called name (case-insensitive), or NULL.
 * srv_query: the first query argument called name, URL-decoded, or NULL
 *	("?a" gives "" for a).
 * srv_remote_addr: the client's IP address as text ("127.0.0.1", "::1").
 */
const char *srv_header(const struct srv_request *req, const char *name);
const char *srv_query(const struct srv_request *req, const char *name);
const char *srv_remote_addr(const struct srv_request *req);

/*
 * Add a response header (e.g. "Retry-After", "WWW-Authenticate"); both
 * strings are copied.  Content-Type and Content-Length are set by the
 * server: use res->content_type.  Errors: ERR_INVALID (empty name, name not
 * an RFC 9110 token, or a CR, LF or NUL in value; nothing added).
 */
enum err srv_response_header(struct srv_response *res, const char *name,
			     const char *value) WARN_UNUSED;

#endif
