/*
 * kube_int.h - what the parts of the Kubernetes client share: the client
 * itself, one request, and the calls kube.c makes into kube_request.c.  Not
 * for other modules: they use janitor/kube.h.
 */
#ifndef AB_KUBE_INT_H
#define AB_KUBE_INT_H

#include <stdint.h>
#include <sys/stat.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/err.h"
#include "core/http_client.h"
#include "janitor/kube.h"

struct kube_client {
	struct http_client *http;
	struct kube_config cfg;
	struct kube_options opts;
	char *user_agent;
	/* token_file cache: the token and the file's identity when read */
	struct buf token;
	int have_token;
	struct stat token_st;
	int64_t token_read_ms;
	/* exec plugin cache */
	struct kube_exec_credential cred;
	int have_cred;
	uint64_t event_seq;  /* makes Event names unique within a millisecond */
};

/* One request: path includes the query; body NULL for none. */
struct call {
	const char *method;
	const char *path;
	const char *accept;        /* NULL: application/json */
	const char *content_type;  /* NULL: none */
	const char *body;
};

/* The client's clock (opts.now_ms), in ms since the epoch. */
int64_t kube_now(const struct kube_client *c);
/*
 * (Re)create c->http, the connection, with the identity the configuration
 * and the exec plugin give (the plugin's certificate wins); the old one is
 * freed.
 */
void kube_make_http(struct kube_client *c);
/*
 * Perform k on c and, on 2xx, parse the answer into *out when out is not
 * NULL (a JSON object; the caller decrefs it; NULL on any error).  See
 * kube.h for the retry and refresh rules.  Errors, with errmsg: the
 * credentials' refresh's (ERR_AUTH when they cannot be read); ERR_AUTH
 * (401, 403), ERR_NOTFOUND (404), ERR_CONFLICT (409),
 * ERR_GONE (410), ERR_RETRY (429, 5xx, or no answer), ERR_TOOBIG (past the
 * body cap), ERR_INVALID (another status, or a 2xx answer that is not a
 * JSON object).
 */
enum err kube_call(struct kube_client *c, const struct call *k, json_t **out,
		   struct buf *errmsg);

#endif
