/*
 * http_client.c - libcurl easy-handle wrapper: one handle per client, reset
 * and configured afresh for each request so that no option leaks from one
 * request to the next while connections stay cached.  Response headers of
 * the last hop are kept for lookup; the body is capped.
 */
#include "http_client.h"

#include <ctype.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <unistd.h>

#include <curl/curl.h>

#include "xalloc.h"
#include "banned.h"

#define DEFAULT_MAX_BODY (8u << 20)
#define MAX_HEADER_BYTES (64u << 10)
#define MAX_REDIRECTS 5L

struct http_client {
	CURL *easy;
	char *ca_file;
	char *cert_file;
	char *key_file;
	int pem_fd[3];  /* memfds holding the PEM texts (CA, cert, key), -1 when none */
	int pem_failed; /* a memfd could not be made: every https request fails */
	int insecure;
	size_t max_body;
};

/* State shared with the curl callbacks during one transfer. */
struct transfer {
	struct http_response *res;
	int body_too_big;
};

enum err http_global_init(void)
{
	return curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK ? ERR_OK : ERR_IO;
}

void http_global_cleanup(void)
{
	curl_global_cleanup();
}

/*
 * Libcurl's GnuTLS backend takes no certificate or key as a blob
 * (CURLOPT_SSLCERT_BLOB and friends are OpenSSL's): a PEM text given inline
 * (kubeconfig's *-data) is put in an anonymous memory file, never on disk,
 * and curl is given its /proc/self/fd path: *file is replaced by it.
 * Returns -1 when pem is not NULL and no memfd could be made.
 */
static int pem_to_memfd(const char *pem, char **file, int *fd_out)
{
	char path[64];
	size_t n, off = 0;
	int fd;

	*fd_out = -1;
	if (!pem)
		return 0;
	fd = memfd_create("alertbridge-pem", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	n = strlen(pem);
	while (off < n) {
		ssize_t w = write(fd, pem + off, n - off);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		off += (size_t)w;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	free(*file);
	*file = xstrdup(path);
	*fd_out = fd;
	return 0;
}

/*
 * Where distributions keep the system's CA bundle, as Go's crypto/x509
 * (root_linux.go) looks for it: Debian/Ubuntu/Alpine's first.
 */
static const char *const system_bundles[] = {
	"/etc/ssl/certs/ca-certificates.crt",                /* Debian, Ubuntu, Gentoo, Alpine */
	"/etc/pki/tls/certs/ca-bundle.crt",                  /* Fedora, RHEL 6 */
	"/etc/ssl/ca-bundle.pem",                            /* openSUSE */
	"/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem", /* CentOS, RHEL 7 */
	"/etc/ssl/cert.pem",                                 /* Alpine, macOS */
};

const char *http_system_ca_bundle(void)
{
	CURL *e = curl_easy_init();
	char *builtin = NULL;
	const char *found = NULL;

	if (!e)
		abort(); /* only fails when out of memory, as xmalloc does */
	/* A libcurl built with a bundle (CURLINFO_CAINFO, 7.84) reads one file already. */
	if (curl_easy_getinfo(e, CURLINFO_CAINFO, &builtin) != CURLE_OK)
		builtin = NULL;
	for (size_t i = 0; !builtin && !found && i < sizeof(system_bundles) / sizeof(*system_bundles);
	     i++)
		if (access(system_bundles[i], R_OK) == 0)
			found = system_bundles[i];
	curl_easy_cleanup(e);
	return found;
}

struct http_client *http_client_new(const struct http_client_options *opts)
{
	struct http_client *c = xcalloc(1, sizeof(*c));

	c->easy = curl_easy_init();
	if (!c->easy)
		abort(); /* only fails when out of memory, as xmalloc does */
	if (opts) {
		c->ca_file = xstrdup(opts->ca_file);
		c->cert_file = xstrdup(opts->client_cert_file);
		c->key_file = xstrdup(opts->client_key_file);
		c->insecure = opts->insecure;
		c->max_body = opts->max_body_bytes;
	}
	c->pem_failed |= pem_to_memfd(opts ? opts->ca_pem : NULL, &c->ca_file, &c->pem_fd[0]);
	if (!c->ca_file && !c->insecure)
		c->ca_file = xstrdup(http_system_ca_bundle());
	c->pem_failed |= pem_to_memfd(opts ? opts->client_cert_pem : NULL, &c->cert_file,
				      &c->pem_fd[1]);
	c->pem_failed |= pem_to_memfd(opts ? opts->client_key_pem : NULL, &c->key_file,
				      &c->pem_fd[2]);
	if (!c->max_body)
		c->max_body = DEFAULT_MAX_BODY;
	return c;
}

void http_client_free(struct http_client *c)
{
	if (!c)
		return;
	curl_easy_cleanup(c->easy);
	free(c->ca_file);
	free(c->cert_file);
	free(c->key_file);
	for (int i = 0; i < 3; i++)
		if (c->pem_fd[i] >= 0)
			close(c->pem_fd[i]);
	free(c);
}

void http_response_init(struct http_response *res)
{
	memset(res, 0, sizeof(*res));
	buf_init(&res->body, 0);
	buf_init(&res->headers, MAX_HEADER_BYTES);
}

void http_response_release(struct http_response *res)
{
	if (!res)
		return;
	buf_release(&res->body);
	buf_release(&res->headers);
	free(res->effective_url);
	res->effective_url = NULL;
	res->status = 0;
	res->sent = 0;
}

const char *http_response_header(const struct http_response *res, const char *name)
{
	const char *p, *end;

	if (!res || !res->headers.data)
		return NULL;
	p = res->headers.data;
	end = p + res->headers.len;
	while (p < end) {
		const char *value = p + strlen(p) + 1;
		if (!strcasecmp(p, name))
			return value;
		p = value + strlen(value) + 1;
	}
	return NULL;
}

int64_t http_retry_after_s(const struct http_response *res, int64_t now_ms)
{
	const char *s = http_response_header(res, "retry-after");
	char *end = NULL;
	long long v;
	time_t at;

	if (!s || !*s)
		return -1;
	if (isdigit((unsigned char)*s)) {
		v = strtoll(s, &end, 10);
		return *end || v < 0 ? -1 : v;
	}
	at = curl_getdate(s, NULL);
	if (at < 0)
		return -1;
	if ((int64_t)at * 1000 <= now_ms)
		return 0;
	return ((int64_t)at * 1000 - now_ms + 999) / 1000;
}

void http_url_escape(const char *s, struct buf *out)
{
	char *e;

	if (!s || !*s)
		return;
	/* The handle is unused since libcurl 7.82; only allocation makes it fail. */
	e = curl_easy_escape(NULL, s, 0);
	if (!e)
		abort();
	(void)buf_adds(out, e);
	curl_free(e);
}

enum err http_url_unescape(const char *s, size_t n, struct buf *out)
{
	char *d;
	int len = 0;
	enum err rc = ERR_INVALID;

	/* curl leaves a malformed escape as it is: refuse it instead. */
	for (size_t i = 0; i < n; i++)
		if (s[i] == '%' && (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) ||
				    !isxdigit((unsigned char)s[i + 2])))
			return ERR_INVALID;
	if (n > INT_MAX)
		return ERR_INVALID;
	d = curl_easy_unescape(NULL, s, (int)n, &len);
	if (!d)
		abort();
	if (!memchr(d, '\0', (size_t)len))
		rc = buf_add(out, d, (size_t)len);
	curl_free(d);
	return rc;
}

static size_t on_body(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct transfer *t = userdata;
	size_t n = size * nmemb;

	if (buf_add(&t->res->body, ptr, n) != ERR_OK) {
		t->body_too_big = 1;
		return 0; /* makes curl fail with CURLE_WRITE_ERROR */
	}
	return n;
}

/* Trim blanks and CR/LF at both ends of [*p, *p + *n). */
static void trim(const char **p, size_t *n)
{
	while (*n && isspace((unsigned char)**p)) {
		(*p)++;
		(*n)--;
	}
	while (*n && isspace((unsigned char)(*p)[*n - 1]))
		(*n)--;
}

/*
 * Header lines arrive one by one, for every hop of a redirect and for
 * interim 1xx answers; a status line starts a new set, so only the final
 * response's headers remain.  Headers past the cap are dropped silently:
 * the ones callers need (rate limits, Link, Location) come early.
 */
static size_t on_header(char *ptr, size_t size, size_t nmemb, void *userdata)
{
	struct transfer *t = userdata;
	size_t n = size * nmemb;
	const char *colon, *name = ptr, *value;
	size_t name_len, value_len;
	size_t mark = t->res->headers.len;
	int failed = 0;

	if (n >= 5 && !memcmp(ptr, "HTTP/", 5)) {
		buf_reset(&t->res->headers);
		return n;
	}
	colon = memchr(ptr, ':', n);
	if (!colon)
		return n;
	name_len = (size_t)(colon - ptr);
	value = colon + 1;
	value_len = n - name_len - 1;
	trim(&name, &name_len);
	trim(&value, &value_len);
	if (!name_len)
		return n;
	failed |= buf_add(&t->res->headers, name, name_len) != ERR_OK;
	failed |= buf_addch(&t->res->headers, '\0') != ERR_OK;
	failed |= buf_add(&t->res->headers, value, value_len) != ERR_OK;
	failed |= buf_addch(&t->res->headers, '\0') != ERR_OK;
	if (failed)
		buf_truncate(&t->res->headers, mark);
	return n;
}

static void reset_response(struct http_response *res, size_t max_body)
{
	buf_release(&res->body);
	buf_init(&res->body, max_body);
	buf_reset(&res->headers);
	free(res->effective_url);
	res->effective_url = NULL;
	res->status = 0;
	res->sent = 0;
}

/*
 * Whether the request may have reached the server.  Resolve, connect and
 * TLS handshake failures certainly did not send it; otherwise the transfer
 * got past the connect phase when curl recorded a pre-transfer time.
 */
static int possibly_sent(CURL *easy, CURLcode cc)
{
	curl_off_t pretransfer_us = 0;

	switch (cc) {
	case CURLE_OK:
		return 1;
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_COULDNT_RESOLVE_PROXY:
	case CURLE_COULDNT_CONNECT:
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
		return 0;
	default:
		break;
	}
	if (curl_easy_getinfo(easy, CURLINFO_PRETRANSFER_TIME_T, &pretransfer_us) != CURLE_OK)
		return 1; /* unknown: assume the worst */
	return pretransfer_us > 0;
}

static enum err classify(CURLcode cc, int body_too_big)
{
	switch (cc) {
	case CURLE_OK:
		return ERR_OK;
	case CURLE_OPERATION_TIMEDOUT:
		return ERR_RETRY;
	case CURLE_UNSUPPORTED_PROTOCOL:
	case CURLE_URL_MALFORMAT:
	case CURLE_TOO_MANY_REDIRECTS:
		return ERR_INVALID;
	case CURLE_WRITE_ERROR:
		return body_too_big ? ERR_TOOBIG : ERR_IO;
	default:
		return ERR_IO;
	}
}

/* Set the method and body; curl's POSTFIELDS keeps a pointer to body. */
static CURLcode set_method(CURL *easy, const struct http_request *req)
{
	CURLcode cc = CURLE_OK;
	int is_get = !strcmp(req->method, "GET");
	int is_post = !strcmp(req->method, "POST");

	if (is_get && !req->body)
		return curl_easy_setopt(easy, CURLOPT_HTTPGET, 1L);
	if (!strcmp(req->method, "HEAD"))
		return curl_easy_setopt(easy, CURLOPT_NOBODY, 1L);
	if (req->body || is_post) {
		cc = curl_easy_setopt(easy, CURLOPT_POSTFIELDSIZE_LARGE,
				      (curl_off_t)(req->body ? req->body_len : 0));
		if (!cc)
			cc = curl_easy_setopt(easy, CURLOPT_POSTFIELDS, req->body ? req->body : "");
	}
	if (!cc && !is_post)
		cc = curl_easy_setopt(easy, CURLOPT_CUSTOMREQUEST, req->method);
	return cc;
}

/* Client certificate, key and in-memory CA; the PEM text wins over a file. */
static CURLcode set_tls_identity(struct http_client *c)
{
	CURL *e = c->easy;
	CURLcode cc = CURLE_OK;

	if (c->pem_failed)
		return CURLE_SSL_CERTPROBLEM;
	if (c->cert_file)
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_SSLCERT, c->cert_file);
	if (c->key_file)
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_SSLKEY, c->key_file);
	if (c->cert_file)
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_SSLCERTTYPE, "PEM");
	if (c->key_file)
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_SSLKEYTYPE, "PEM");
	return cc;
}

static CURLcode configure(struct http_client *c, const struct http_request *req,
			  struct curl_slist *headers, struct transfer *t, char *errbuf)
{
	CURL *e = c->easy;
	CURLcode cc = CURLE_OK;
	long timeout_ms = req->timeout_ms > 0 ? (long)req->timeout_ms : 30000L;
	long connect_ms = req->connect_timeout_ms > 0 ? (long)req->connect_timeout_ms : 10000L;

	/* Each setopt only fails on out-of-memory or a bad argument; stop at the first. */
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_URL, req->url);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_PROTOCOLS_STR, "http,https");
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, timeout_ms);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, connect_ms);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_HTTPHEADER, headers);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_HEADERDATA, t);
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
	cc = cc ? cc : curl_easy_setopt(e, CURLOPT_FRESH_CONNECT, req->fresh_connect ? 1L : 0L);
	if (req->follow_redirects) {
		/* Keep POST a POST on 301/302 (GitHub's transferred issues). */
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 1L);
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_MAXREDIRS, MAX_REDIRECTS);
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_POSTREDIR,
						(long)(CURL_REDIR_POST_301 | CURL_REDIR_POST_302));
	}
	if (c->ca_file) {
		/*
		 * Trust exactly the named file.  libcurl's default CA directory
		 * (Debian: /etc/ssl/certs) stays set beside CAINFO, and its
		 * GnuTLS backend reads every file in it on each new connection
		 * (about 290 files: 30-40 ms of CPU each time).  Without one
		 * configured, the system's bundle (http_system_ca_bundle()) is
		 * the same trust in one file: 8 ms a connection instead of 25.
		 */
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_CAINFO, c->ca_file);
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_CAPATH, NULL);
	}
	cc = cc ? cc : set_tls_identity(c);
	if (c->insecure) {
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L);
		cc = cc ? cc : curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L);
	}
	cc = cc ? cc : set_method(e, req);
	return cc;
}

/* GnuTLS' messages name no file: append the TLS files tried, if any. */
static void name_tls_files(const struct http_client *c, struct buf *errmsg)
{
	static const char *const role[3] = { "CA certificate", "client certificate",
					     "client key" };
	const char *file[3] = { c->ca_file, c->cert_file, c->key_file };
	const char *sep = " (";

	for (int i = 0; i < 3; i++) {
		if (!file[i])
			continue;
		(void)buf_printf(errmsg, "%s%s %s", sep, role[i],
				 c->pem_fd[i] >= 0 ? "given inline" : file[i]);
		sep = ", ";
	}
	if (strcmp(sep, " (") != 0)
		(void)buf_addch(errmsg, ')');
}

enum err http_do(struct http_client *c, const struct http_request *req,
		 struct http_response *res, struct buf *errmsg)
{
	struct curl_slist *headers = NULL;
	struct transfer t = { res, 0 };
	char errbuf[CURL_ERROR_SIZE] = "";
	const char *method = req->method ? req->method : "?";
	const char *url = req->url ? req->url : "?";
	const char *eff = NULL;
	long status = 0;
	CURLcode cc;
	enum err rc = ERR_OK;

	reset_response(res, c->max_body);
	if (!req->method || !*req->method || !req->url || !*req->url) {
		buf_setf(errmsg, "http request without method or url");
		return ERR_INVALID;
	}
	for (const char *const *h = req->headers; h && *h; h++) {
		struct curl_slist *n = curl_slist_append(headers, *h);
		if (!n)
			abort();
		headers = n;
	}
	/* curl adds "Expect: 100-continue" to big bodies; the APIs we call do not need it. */
	headers = curl_slist_append(headers, "Expect:");
	if (!headers)
		abort();

	curl_easy_reset(c->easy);
	cc = configure(c, req, headers, &t, errbuf);
	if (cc == CURLE_OK)
		cc = curl_easy_perform(c->easy);
	curl_easy_getinfo(c->easy, CURLINFO_RESPONSE_CODE, &status);
	res->status = (int)status;
	if (curl_easy_getinfo(c->easy, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff)
		res->effective_url = xstrdup(eff);
	res->sent = possibly_sent(c->easy, cc);
	rc = classify(cc, t.body_too_big);
	if (rc == ERR_TOOBIG)
		buf_setf(errmsg, "%s %s: response body over %zu bytes", method, url, c->max_body);
	else if (rc)
		buf_setf(errmsg, "%s %s: %s", method, url,
			 errbuf[0] ? errbuf : curl_easy_strerror(cc));
	if (cc == CURLE_SSL_CERTPROBLEM || cc == CURLE_SSL_CONNECT_ERROR ||
	    cc == CURLE_SSL_CACERT_BADFILE)
		name_tls_files(c, errmsg);
	/* Drop the handle's pointers into this call's memory. */
	curl_easy_setopt(c->easy, CURLOPT_HTTPHEADER, NULL);
	curl_easy_setopt(c->easy, CURLOPT_ERRORBUFFER, NULL);
	curl_slist_free_all(headers);
	return rc;
}

enum err http_do_local(const struct http_request *req, struct http_response *res,
		       struct buf *errmsg)
{
	struct http_client_options opts = { 0 };
	struct http_client *c;
	enum err rc;

	opts.insecure = 1;
	opts.max_body_bytes = 4096;
	c = http_client_new(&opts);
	rc = http_do(c, req, res, errmsg);
	http_client_free(c);
	return rc;
}
