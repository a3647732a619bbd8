/*
 * http_client.h - blocking HTTP/1.1 client over libcurl for the GitHub,
 * Kubernetes and Slack clients.
 *
 * CURL handles never leave this module.  One struct http_client per worker
 * thread: it keeps one easy handle, so connections (HTTP/1.1 keep-alive),
 * TLS sessions and DNS answers are reused between requests; the trust store
 * is read only when a new connection is made.  Retries are the caller's business;
 * this module reports what happened precisely enough to decide (status,
 * headers, and whether the request may have reached the server).
 */
#ifndef AB_HTTP_CLIENT_H
#define AB_HTTP_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

struct http_client;

/* Options of a client; every field may be left zero. */
struct http_client_options {
	/*
	 * PEM bundle to verify servers with, and the only one (libcurl's CA
	 * directory is then not read); NULL: the system's trust, as the file
	 * http_system_ca_bundle() names when there is one (libcurl's CA
	 * directory then unread, too), else libcurl's built-in CA bundle and
	 * directory.  The trust store is read on each new connection (libcurl
	 * 7.88's GnuTLS backend caches none): Debian's /etc/ssl/certs as a
	 * directory costs about 25 ms of CPU a connection, its bundle 8 ms.
	 */
	const char *ca_file;
	int insecure;           /* non-zero: skip TLS peer and host verification (tests, healthcheck) */
	size_t max_body_bytes;  /* response body cap; 0 means 8 MiB */
	/*
	 * Mutual TLS and in-memory trust (Kubernetes kubeconfigs carry both as
	 * files or as *-data).  All are copied by http_client_new().  A PEM
	 * string wins over the file of the same role; libcurl's GnuTLS backend
	 * reads no blobs, so a PEM string is handed to it as an anonymous memory
	 * file (memfd_create, /proc/self/fd/N), never written to disk.  A
	 * certificate or key that cannot be loaded fails each https request with
	 * ERR_IO, curl's text and the files tried ("given inline" for a PEM).
	 */
	const char *client_cert_file;  /* PEM client certificate (CURLOPT_SSLCERT); NULL: none */
	const char *client_key_file;   /* its PEM key (CURLOPT_SSLKEY); NULL: in the cert file */
	const char *client_cert_pem;   /* PEM certificate text (as a memory file); NULL: none */
	const char *client_key_pem;    /* PEM private key text (as a memory file); NULL: none */
	const char *ca_pem;            /* PEM CA bundle text (as a memory file); NULL: none */
};

/* One request.  Strings are borrowed for the duration of http_do(). */
struct http_request {
	const char *method;            /* "GET", "POST", "PATCH", "PUT", "DELETE", ... */
	const char *url;               /* absolute http:// or https:// URL */
	const char *const *headers;    /* NULL-terminated "Name: value" strings, or NULL */
	const char *body;              /* request body or NULL */
	size_t body_len;               /* bytes of body */
	int64_t timeout_ms;            /* whole request, redirects included; 0 means 30 s */
	int64_t connect_timeout_ms;    /* TCP + TLS connect; 0 means 10 s */
	int follow_redirects;          /* non-zero: follow 301/302/303/307/308, at most 5 hops */
	/*
	 * Non-zero: send on a new connection (CURLOPT_FRESH_CONNECT).  libcurl
	 * silently sends a request again when the reused connection it chose
	 * turns out closed before any answer; for a request that is not
	 * idempotent (creating an issue) the first copy may have been acted on,
	 * so such requests ask for a fresh connection, where it never replays.
	 */
	int fresh_connect;
};

#define HTTP_REQUEST_INIT { NULL, NULL, NULL, NULL, 0, 0, 0, 0, 0 }

/*
 * A response.  Initialise with http_response_init(), reuse for several
 * requests (http_do() resets it), free with http_response_release().
 */
struct http_response {
	int status;           /* final HTTP status (after redirects); 0 when none arrived */
	struct buf body;      /* final response body, capped at max_body_bytes */
	char *effective_url;  /* URL of the last hop (after redirects); owned; NULL before */
	int sent;             /* non-zero: the request may have reached the server */
	struct buf headers;   /* private: final response's headers as "name\0value\0" pairs */
};

/*
 * Initialise curl's global state (curl_global_init).  Call once from main()
 * before any thread starts.  ERR_IO when libcurl cannot initialise.
 */
enum err http_global_init(void) WARN_UNUSED;
/* Undo http_global_init(); call once from main() after all threads ended. */
void http_global_cleanup(void);

/*
 * The system's CA bundle, one PEM file, for clients without a CA of their
 * own: NULL when libcurl was built with a bundle (CURLINFO_CAINFO: it reads
 * one file already) or none of the distributions' usual paths is readable
 * (Go's crypto/x509 list: /etc/ssl/certs/ca-certificates.crt first, as
 * Debian's update-ca-certificates writes it from the same certificates as
 * the directory).  A static string.
 */
const char *http_system_ca_bundle(void);

/* New client; never NULL.  opts may be NULL (defaults); ca_file is copied. */
struct http_client *http_client_new(const struct http_client_options *opts);
/* Free the client and close its connections; c may be NULL. */
void http_client_free(struct http_client *c);

/* Initialise res empty. */
void http_response_init(struct http_response *res);
/* Free what res holds and leave it empty; res may be NULL. */
void http_response_release(struct http_response *res);
/*
 * Value of the response header name (case-insensitive, e.g. "retry-after"),
 * with surrounding blanks removed; NULL when absent.  The first of repeated
 * headers wins.  Valid until res changes.
 */
const char *http_response_header(const struct http_response *res, const char *name);
/*
 * The wait res's Retry-After header asks for, in whole seconds (RFC 9110
 * 10.2.3): delta-seconds as sent, or an HTTP-date (IMF-fixdate, or the
 * obsolete RFC 850 and asctime forms; libcurl's curl_getdate) less now_ms
 * (ms since the epoch, UTC), rounded up and 0 for a date already past.
 * -1 when the header is absent, negative or neither form.
 */
int64_t http_retry_after_s(const struct http_response *res, int64_t now_ms);
/*
 * Append s percent-encoded to out: every byte but RFC 3986's unreserved
 * characters (A-Z a-z 0-9 - . _ ~) as %XX, upper-case hex (curl_easy_escape).
 * For a query value or a path segment.  s NULL appends nothing; buffer errors
 * are ignored (out keeps what fitted).
 */
void http_url_escape(const char *s, struct buf *out);
/*
 * Append s[0..n) with each %XX decoded to out (curl_easy_unescape); nothing
 * else is changed ('+' stays '+').  A '%' not followed by two hex digits is
 * ERR_INVALID (out unchanged), as is a decoded NUL.
 */
enum err http_url_unescape(const char *s, size_t n, struct buf *out)
	__attribute__((warn_unused_result));

/*
 * Perform req and fill res (reset first).  Any HTTP status, 4xx and 5xx
 * included, is ERR_OK: the caller judges res->status.  res->sent tells an
 * ambiguous failure (the request may have been processed) from a clean one.
 * Errors, with detail in errmsg (curl's error text, the method and URL; never
 * header values, which may carry credentials):
 *   ERR_IO       DNS, connect or TLS failure (sent == 0), or the connection
 *                broke after sending (sent != 0: reset, empty reply)
 *   ERR_RETRY    the timeout expired (sent tells whether it was before sending)
 *   ERR_TOOBIG   the response body passed max_body_bytes (res->status is set)
 *   ERR_INVALID  bad request: missing method/URL, an unsupported scheme,
 *                a malformed URL, or more than 5 redirects
 */
enum err http_do(struct http_client *c, const struct http_request *req,
		 struct http_response *res, struct buf *errmsg) WARN_UNUSED;

/*
 * One request to alertbridge's own listener (the healthcheck, the map
 * commands): http_do() of req on a client of its own, freed before it
 * returns, that checks no certificate (insecure: the listener's own, often
 * self-signed) and takes answers up to 4 KiB.  Same res and errors.
 */
enum err http_do_local(const struct http_request *req, struct http_response *res,
		       struct buf *errmsg) WARN_UNUSED;

#endif
