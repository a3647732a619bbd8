/*
 * http_server_checks.c - what the routing server refuses in a request's
 * head before routing it (http_server_int.h): NUL bytes that a C string
 * would cut, and the ambiguous framings of RFC 9112 that a proxy in front
 * may read otherwise (request smuggling).  libmicrohttpd hands us every
 * header and query parameter with its length, which is what makes a NUL
 * visible here.
 */
#include <string.h>
#include <strings.h>

#include "http_server_int.h"

#include "banned.h"

/* What the iteration over one request's headers found. */
struct head_scan {
	int nul;             /* a NUL in a name or value */
	int hosts;           /* Host header lines */
	int content_lengths; /* Content-Length header lines */
	int transfer_encoding;
};

static int has_nul(const char *p, size_t n)
{
	return p && memchr(p, '\0', n) != NULL;
}

static enum MHD_Result scan_header(void *cls, enum MHD_ValueKind kind, const char *key,
				   size_t key_size, const char *value, size_t value_size)
{
	struct head_scan *h = cls;

	(void)kind;
	if (has_nul(key, key_size) || has_nul(value, value_size))
		h->nul = 1;
	if (key && !strcasecmp(key, MHD_HTTP_HEADER_HOST))
		h->hosts++;
	if (key && !strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH))
		h->content_lengths++;
	if (key && !strcasecmp(key, MHD_HTTP_HEADER_TRANSFER_ENCODING))
		h->transfer_encoding = 1;
	return MHD_YES;
}

static enum MHD_Result scan_argument(void *cls, enum MHD_ValueKind kind, const char *key,
				     size_t key_size, const char *value, size_t value_size)
{
	int *nul = cls;

	(void)kind;
	if (has_nul(key, key_size) || has_nul(value, value_size))
		*nul = 1;
	return MHD_YES;
}

const char *srv_check_head(struct MHD_Connection *conn, const char *version)
{
	struct head_scan h = { 0 };
	int arg_nul = 0;

	MHD_get_connection_values_n(conn, MHD_HEADER_KIND, scan_header, &h);
	MHD_get_connection_values_n(conn, MHD_GET_ARGUMENT_KIND, scan_argument, &arg_nul);
	if (h.nul)
		return "NUL byte in a header";
	if (arg_nul)
		return "NUL byte in a query parameter";
	if (version && !strcmp(version, MHD_HTTP_VERSION_1_1) && h.hosts != 1)
		return "HTTP/1.1 request without exactly one Host header";
	if (h.content_lengths && h.transfer_encoding)
		return "both Content-Length and Transfer-Encoding";
	if (h.content_lengths > 1)
		return "several Content-Length headers";
	return NULL;
}
