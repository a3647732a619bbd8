/*
 * http_server_int.h - the parts of the routing server (http_server.c) kept
 * in their own files: the listening socket and TLS files
 * (http_server_listen.c), the checks of a request's head
 * (http_server_checks.c), the connection table with its caps and deadlines
 * (http_server_conns.c) and the slow-work threads of srv_defer()
 * (http_server_defer.c).  Private to the module: only http_server*.c and
 * their unit tests include it.
 */
#ifndef AB_HTTP_SERVER_INT_H
#define AB_HTTP_SERVER_INT_H

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>

#include "buf.h"
#include "err.h"
#include "http_server.h"

/* Threads that run srv_defer()'s work, and how many requests may wait for them. */
#define SRV_DEFER_THREADS 1
#define SRV_DEFER_QUEUE 16

/* max_connections / this: the connections only known clients may open. */
#define SRV_RESERVE_DIVISOR 4

/*
 * At the cap, a new connection may take the place of an idle one (waiting
 * for a request's headers) from the address holding the most connections,
 * when that address holds more than SRV_FAIR_CONNS and at least two more
 * than the newcomer's (srv_on_connection()).  A client's usual pool is a
 * few connections (Go's http client keeps 2 idle per host, browsers open 6):
 * an address within this is never cut for another.
 */
#define SRV_FAIR_CONNS 4
/* Buckets of the table of connections per address (struct peer). */
#define SRV_PEER_BUCKETS 64
/* The size of a peer key (srv_peer_key()): an IPv6 address and "/64". */
#define SRV_PEER_KEY_LEN (INET6_ADDRSTRLEN + 4)

/* Addresses remembered as known clients (srv_note_client()), and for how long, in us. */
#define SRV_KNOWN_SLOTS 64
#define SRV_KNOWN_TTL_US (30LL * 60 * 1000000)
/*
 * After a request whose body had at least this many bytes, free memory is
 * handed back to the system (malloc_trim(3)): a 10,000-alert webhook is
 * about 10 MB and its JSON tree 4.4 times that.
 */
#define SRV_TRIM_AFTER_BODY_BYTES (1024 * 1024)
/* The phase of a connection kept alive, waiting for its next request. */
#define SRV_PHASE_NEXT_REQUEST "next_request"

/* A client whose POST was answered 2xx: it may use the reserved connections. */
struct known_client {
	char addr[INET6_ADDRSTRLEN];
	int64_t until_us;  /* CLOCK_MONOTONIC; 0: empty slot */
};


/*
 * A client (srv_peer_key()) with admitted connections: how many (srv.peers,
 * under srv.lock).
 */
struct peer {
	struct peer *next;  /* in its bucket */
	unsigned conns;     /* admitted connections from key, > 0 while listed */
	char key[SRV_PEER_KEY_LEN];
};

/*
 * Split a listen address as Prometheus' --web.listen-address writes it:
 * "host:port", "[v6]:port" or ":port" (*host "" then).  *host and *port are
 * new strings (free()) on success, NULL on error.  Errors: ERR_INVALID with
 * errmsg: empty, no port, an unbracketed IPv6 address, a port outside 0-65535.
 */
enum err srv_parse_listen(const char *addr, char **host, char **port,
			  struct buf *errmsg) WARN_UNUSED;

/*
 * Read the whole PEM file at path (at most 1 MiB) into *out, a new string
 * (free()); what names it in errors ("tls key").  Errors: ERR_IO with
 * errmsg: cannot open or read, over 1 MiB, empty.
 */
enum err srv_read_pem(const char *what, const char *path, char **out,
		      struct buf *errmsg) WARN_UNUSED;

/*
 * Bind and listen (SO_REUSEADDR, backlog SOMAXCONN, non-blocking,
 * close-on-exec) on host:port as srv_parse_listen() split them: host ""
 * is one dual-stack IPv6 socket (IPv4 alone where IPv6 is off), a name is
 * resolved and its first address that binds is taken.  On success *fd_out
 * is the socket (the caller's) and *port_out the port bound (the ephemeral
 * one for "0").  Errors: ERR_IO with errmsg "cannot listen on
 * <listen_address>: <reason>".
 */
enum err srv_open_listener(const char *host, const char *port, const char *listen_address,
			   int *fd_out, int *port_out, struct buf *errmsg) WARN_UNUSED;

/*
 * The checks of a request's head that libmicrohttpd 0.9.75 leaves to us,
 * made before any body is read; conn is the request's connection and
 * version its "HTTP/1.x".  Returns NULL when the head is acceptable, else
 * the reason for a 400 (a static string, safe in a JSON body), after which
 * the connection must be closed (its framing cannot be trusted):
 *   "NUL byte in a header" - in a header's name or value: a C string would
 *	cut it ("Bearer <token>\0junk"), so what is checked would differ from
 *	what was sent (RFC 9110 5.5: a field value never contains NUL);
 *   "NUL byte in a query parameter" - "%00" decoded into a name or value
 *	("?receiver=default%00x" must not mean "default");
 *   "HTTP/1.1 request without exactly one Host header" - RFC 9112 3.2: a
 *	server MUST answer 400 to an HTTP/1.1 request with none or several;
 *   "both Content-Length and Transfer-Encoding" - RFC 9112 6.3 item 3: a
 *	request smuggling attempt, to be handled as an error;
 *   "several Content-Length headers" - RFC 9112 6.3 item 5 allows refusing
 *	them (even equal ones); one that is not a number is libmicrohttpd's
 *	own 400.
 */
const char *srv_check_head(struct MHD_Connection *conn, const char *version);

struct route {
	char *method;
	char *path;
	srv_handler fn;
	void *ctx;
	srv_rejected rejected;  /* NULL: none (srv_route_rejected()) */
	void *rejected_ctx;
};

/*
 * One TCP connection, from MHD's "started" notice to its "closed" notice (MHD
 * sends that before it closes the socket, so fd stays ours while listed).
 * deadline_us is when the reaper shuts the socket down: the connection is
 * waiting for a request's headers or body; 0 while a handler runs or a
 * response goes out.
 */
struct conn {
	struct conn *prev, *next;
	int fd;
	int64_t start_us;     /* accept, or the end of the previous response */
	int64_t deadline_us;  /* 0: none */
	const char *phase;    /* "headers", "body" or SRV_PHASE_NEXT_REQUEST: what the deadline waits for */
	int admitted;         /* counted in srv.nconns (not closed at once for the cap) */
	struct peer *peer;    /* its client's count while admitted, else NULL */
	char addr[INET6_ADDRSTRLEN];
	char peer_key[SRV_PEER_KEY_LEN];  /* srv_peer_key() of addr */
};

struct srv {
	char *listen_address;
	char *host;  /* "" for all interfaces */
	char *port;
	unsigned threads, max_connections, max_per_ip, timeout_s;
	int64_t header_timeout_us, read_timeout_us;
	size_t max_body;
	char *tls_cert, *tls_key, *tls_ca;  /* PEM contents, or NULL */

	struct route *routes;
	size_t nroutes;
	srv_observer observer;
	void *observer_ctx;

	struct MHD_Daemon *daemon;
	int port_num;
	int started;

	/* Requests between their first access-handler call and completion. */
	pthread_mutex_t lock;
	pthread_cond_t idle;
	unsigned inflight;

	/* Open connections (under lock) and the reaper that enforces their deadlines. */
	struct conn *conns;
	unsigned nconns;
	unsigned reserve;      /* of max_connections, only for known clients */
	struct known_client known[SRV_KNOWN_SLOTS];
	struct peer *peers[SRV_PEER_BUCKETS];  /* admitted connections per address */
	uint64_t refused;      /* closed at once: over max_connections */
	uint64_t evicted;      /* idle, closed for a newcomer at the cap */
	uint64_t timed_out;    /* closed by the reaper */
	int64_t last_limit_warn_us, last_evict_warn_us;
	pthread_t reaper;
	int reaper_running, reaper_stop;
	pthread_cond_t reaper_wake;

	/* srv_defer(): suspended requests queued for, or run by, the slow-work threads. */
	pthread_mutex_t defer_mu;
	pthread_cond_t defer_wake, defer_idle;
	struct srv_request_impl *defer_head, *defer_tail;
	unsigned defer_queued;   /* waiting in the queue */
	unsigned defer_pending;  /* suspended and not resumed yet (queued or running) */
	pthread_t defer_thread[SRV_DEFER_THREADS];
	unsigned defer_threads;  /* started */
	int defer_stop;
};

/* One request: created on MHD's first callback, freed in request_completed(). */
struct srv_request_impl {
	struct srv *srv;
	struct MHD_Connection *conn;
	struct conn *tracked;  /* NULL if MHD gave no socket context */
	const struct route *route;  /* NULL: answered by the server itself */
	const char *route_label;
	const char *method_label;
	struct srv_request req;
	struct buf body;
	int64_t start_us;
	int status;     /* status queued; 0 while none */
	int has_body;   /* Content-Length > 0 or Transfer-Encoding sent */
	int too_big;    /* the body passes max_body: read and dropped, then 413 */
	size_t discarded;  /* bytes of the body read since (all of them, once too_big) */
	long long content_length;  /* the header's value; -1 when absent (chunked) */
	char addr[INET6_ADDRSTRLEN];
	/* srv_defer(): the work, its argument (released at completion) and the queue link. */
	void (*defer_fn)(void *arg);
	void (*defer_release)(void *arg);
	void *defer_arg;
	int deferring;  /* srv_defer() called in this handler run: answer nothing now */
	int deferred;   /* the work ran: the handler's next run sees srv_deferred() */
	struct srv_request_impl *defer_next;
};

/* The IP address of sa as text ("127.0.0.1" also for v4-mapped IPv6); "" if unknown. */
void srv_format_addr(const struct sockaddr *sa, char out[INET6_ADDRSTRLEN]);
/*
 * The client sa counts as for max_connections_per_ip and the fair share of
 * the connection table: an IPv4 address (also v4-mapped) as itself, an IPv6
 * address as its /64 network ("2001:db8:1:2::/64"): one host is given a /64
 * (RFC 6177, RFC 7934) and can use any address in it, so a cap per full
 * address would bound nothing.  "" if unknown.
 */
void srv_peer_key(const struct sockaddr *sa, char out[SRV_PEER_KEY_LEN]);

/*
 * The connection table (http_server_conns.c).  srv_on_connection() is MHD's
 * MHD_OPTION_NOTIFY_CONNECTION callback (cls: the struct srv): it tracks a
 * new connection, gives it its header deadline, and shuts down at once one
 * past max_connections, or past max_connections - reserve from an address
 * that is not a known client - unless an idle connection of a hoarder can
 * make room: one waiting for a request's headers (a first one, or the next
 * on a kept-alive connection), from the address holding the most
 * connections, when that address holds more than SRV_FAIR_CONNS and at
 * least two more than the newcomer's; the oldest such is shut down instead
 * and the newcomer admitted (logged at warn at most every 10 s,
 * "connection limit reached: closed an idle connection of the address
 * holding the most", with its remote_addr and evicted_total).  srv_reap() is the reaper thread's body: it
 * shuts down connections past their deadline every 100 ms until
 * s->reaper_stop; a connection closed waiting for its first request's
 * headers (or a body) is logged at info as slow, one kept alive after an
 * answer (kept_alive 1: its phase is SRV_PHASE_NEXT_REQUEST) at debug as idle.
 * srv_arm_for_headers() sets c's header deadline from now (under s->lock).  srv_note_client() remembers addr as a known client for
 * SRV_KNOWN_TTL_US (takes s->lock).
 */
void srv_on_connection(void *cls, struct MHD_Connection *mc, void **socket_context,
		       enum MHD_ConnectionNotificationCode code);
void *srv_reap(void *arg);
void srv_arm_for_headers(struct srv *s, struct conn *c, int64_t now_us, int kept_alive);
void srv_note_client(struct srv *s, const char *addr);

/*
 * The slow-work threads (http_server_defer.c).  srv_defer_start() starts
 * them at srv_start() (ERR_IO: no thread); srv_defer_drain() refuses new
 * deferrals and waits until no request is suspended (every queued work has
 * run and its request was resumed), before MHD_stop_daemon(), which must not find one suspended
 * (libmicrohttpd manual, MHD_suspend_connection); srv_defer_stop() ends the
 * threads.  srv_defer_release() frees a request's deferred argument at its
 * completion.
 */
enum err srv_defer_start(struct srv *s) WARN_UNUSED;
void srv_defer_drain(struct srv *s);
void srv_defer_stop(struct srv *s);
void srv_defer_release(struct srv_request_impl *x);

#endif
