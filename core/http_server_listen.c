/*
 * http_server_listen.c - the routing server's listening socket and TLS files
 * (http_server_int.h): the listen address split as Prometheus writes it, the
 * socket bound by us (exact error messages, one dual-stack socket for
 * ":port") before libmicrohttpd takes it, and the PEM files read whole.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "http_server_int.h"
#include "xalloc.h"

#include "banned.h"

#define MAX_PEM_BYTES (1024 * 1024)

enum err srv_parse_listen(const char *addr, char **host, char **port, struct buf *errmsg)
{
	const char *colon, *p;
	char *end = NULL;
	long n;

	*host = NULL;
	*port = NULL;
	if (!addr || !*addr) {
		buf_setf(errmsg, "listen address is empty");
		return ERR_INVALID;
	}
	if (addr[0] == '[') {
		const char *close = strchr(addr, ']');
		if (!close || close[1] != ':' || close == addr + 1) {
			buf_setf(errmsg, "invalid listen address \"%s\": want [ipv6]:port", addr);
			return ERR_INVALID;
		}
		colon = close + 1;
		*host = xstrndup(addr + 1, (size_t)(close - addr - 1));
	} else {
		colon = strrchr(addr, ':');
		if (!colon) {
			buf_setf(errmsg, "invalid listen address \"%s\": missing port", addr);
			return ERR_INVALID;
		}
		if (memchr(addr, ':', (size_t)(colon - addr))) {
			buf_setf(errmsg, "invalid listen address \"%s\": put IPv6 addresses in []",
				 addr);
			return ERR_INVALID;
		}
		*host = xstrndup(addr, (size_t)(colon - addr));
	}
	p = colon + 1;
	errno = 0;
	n = strtol(p, &end, 10);
	if (!*p || *end || errno || n < 0 || n > 65535 || *p == '-' || *p == '+') {
		buf_setf(errmsg, "invalid listen address \"%s\": port must be 0-65535", addr);
		free(*host);
		*host = NULL;
		return ERR_INVALID;
	}
	*port = xstrdup(p);
	return ERR_OK;
}

enum err srv_read_pem(const char *what, const char *path, char **out, struct buf *errmsg)
{
	struct buf b;
	enum err rc;

	buf_init(&b, MAX_PEM_BYTES);
	*out = NULL;
	rc = buf_read_file(&b, path, 0);
	if (rc == ERR_IO && b.len == 0) {
		buf_setf(errmsg, "cannot open %s \"%s\": %s", what, path, strerror(errno));
	} else if (rc == ERR_IO) {
		buf_setf(errmsg, "cannot read %s \"%s\": %s", what, path, strerror(errno));
	} else if (rc == ERR_TOOBIG) {
		buf_setf(errmsg, "%s \"%s\" is over %d bytes", what, path, MAX_PEM_BYTES);
		rc = ERR_IO;
	} else if (b.len == 0) {
		buf_setf(errmsg, "%s \"%s\" is empty", what, path);
		rc = ERR_IO;
	} else {
		*out = buf_detach(&b);
	}
	buf_release(&b);
	return rc;
}

/* socket + SO_REUSEADDR + bind + listen; -1 with errno set on failure. */
static int bind_one(int family, const struct sockaddr *sa, socklen_t salen, int v6only)
{
	int one = 1, fd, saved;

	fd = socket(family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -1;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) < 0)
		goto fail;
	if (family == AF_INET6 &&
	    setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof(v6only)) < 0)
		goto fail;
	if (bind(fd, sa, salen) < 0 || listen(fd, SOMAXCONN) < 0)
		goto fail;
	return fd;
fail:
	saved = errno;
	close(fd);
	errno = saved;
	return -1;
}

enum err srv_open_listener(const char *host, const char *port, const char *listen_address,
			   int *fd_out, int *port_out, struct buf *errmsg)
{
	struct addrinfo hints, *res = NULL, *ai;
	struct sockaddr_storage ss;
	socklen_t sslen = sizeof(ss);
	int fd = -1, gai, err = 0;

	if (!*host) {
		/* ":port": one dual-stack socket, or IPv4 only where IPv6 is off. */
		struct sockaddr_in6 a6;
		struct sockaddr_in a4;
		memset(&a6, 0, sizeof(a6));
		a6.sin6_family = AF_INET6;
		a6.sin6_addr = in6addr_any;
		a6.sin6_port = htons((uint16_t)strtol(port, NULL, 10));
		fd = bind_one(AF_INET6, (struct sockaddr *)&a6, sizeof(a6), 0);
		if (fd < 0 && (errno == EAFNOSUPPORT || errno == EADDRNOTAVAIL)) {
			memset(&a4, 0, sizeof(a4));
			a4.sin_family = AF_INET;
			a4.sin_addr.s_addr = htonl(INADDR_ANY);
			a4.sin_port = a6.sin6_port;
			fd = bind_one(AF_INET, (struct sockaddr *)&a4, sizeof(a4), 0);
		}
		err = errno;
	} else {
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
		gai = getaddrinfo(host, port, &hints, &res);
		if (gai) {
			buf_setf(errmsg, "cannot listen on %s: %s", listen_address,
				 gai_strerror(gai));
			return ERR_IO;
		}
		for (ai = res; ai && fd < 0; ai = ai->ai_next) {
			fd = bind_one(ai->ai_family, ai->ai_addr, ai->ai_addrlen, 1);
			if (fd < 0)
				err = errno;
		}
		freeaddrinfo(res);
	}
	if (fd < 0) {
		buf_setf(errmsg, "cannot listen on %s: %s", listen_address, strerror(err));
		return ERR_IO;
	}
	if (getsockname(fd, (struct sockaddr *)&ss, &sslen) == 0)
		*port_out = ss.ss_family == AF_INET6 ?
				    ntohs(((struct sockaddr_in6 *)&ss)->sin6_port) :
				    ntohs(((struct sockaddr_in *)&ss)->sin_port);
	*fd_out = fd;
	return ERR_OK;
}

