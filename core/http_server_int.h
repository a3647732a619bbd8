/*
 * http_server_int.h - the parts of the routing server (http_server.c) kept
 * in their own files: the listening socket and TLS files
 * (http_server_listen.c) and the checks of a request's head
 * (http_server_checks.c).  Private to the module: only http_server*.c and
 * their unit tests include it.
 */
#ifndef AB_HTTP_SERVER_INT_H
#define AB_HTTP_SERVER_INT_H

#include <microhttpd.h>

#include "buf.h"
#include "err.h"

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

#endif
