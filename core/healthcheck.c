/*
 * healthcheck.c - GET /-/healthy of the local alertbridge over libcurl
 * (healthcheck.h), and the `alertbridge healthcheck` command around it.
 */
#include "healthcheck.h"

#include <stdio.h>
#include <string.h>

#include "config.h"
#include "http_client.h"
#include "version.h"

#include "banned.h"

enum err healthcheck_url(const char *listen_address, int tls, struct buf *out,
			 struct buf *errmsg)
{
	const char *a = listen_address ? listen_address : "";
	const char *colon = strrchr(a, ':');
	size_t host_len;

	if (!colon || !colon[1] || strspn(colon + 1, "0123456789") != strlen(colon + 1)) {
		buf_setf(errmsg, "listen address \"%s\": want HOST:PORT or :PORT", a);
		return ERR_INVALID;
	}
	host_len = (size_t)(colon - a);
	(void)buf_adds(out, tls ? "https://" : "http://");
	if (host_len == 0 || (host_len == 7 && !strncmp(a, "0.0.0.0", 7)))
		(void)buf_adds(out, "127.0.0.1");
	else if (host_len == 4 && !strncmp(a, "[::]", 4))
		(void)buf_adds(out, "[::1]");
	else
		(void)buf_add(out, a, host_len);
	(void)buf_printf(out, "%s/-/healthy", colon);
	return ERR_OK;
}

enum err healthcheck_probe(const char *listen_address, int tls, int64_t timeout_ms,
			   struct buf *errmsg)
{
	struct http_client_options opts = { 0 };
	struct http_request req = HTTP_REQUEST_INIT;
	struct http_response res;
	struct http_client *c = NULL;
	struct buf url = BUF_INIT;
	char ua[128];
	const char *headers[2] = { ua, NULL };
	enum err rc;

	http_response_init(&res);
	rc = healthcheck_url(listen_address, tls, &url, errmsg);
	if (rc)
		goto out;
	snprintf(ua, sizeof(ua), "User-Agent: %s (healthcheck)", version_user_agent());
	opts.insecure = tls;
	opts.max_body_bytes = 4096;
	c = http_client_new(&opts);
	req.method = "GET";
	req.url = buf_str(&url);
	req.headers = headers;
	req.timeout_ms = timeout_ms;
	req.connect_timeout_ms = timeout_ms;
	rc = http_do(c, &req, &res, errmsg);
	if (rc)
		goto out;
	if (res.status != 200) {
		buf_setf(errmsg, "GET %s: HTTP %d", buf_str(&url), res.status);
		rc = ERR_IO;
	}
out:
	http_response_release(&res);
	http_client_free(c);
	buf_release(&url);
	return rc;
}

int healthcheck_command(const char *listen_address, const char *config_path)
{
	struct buf err = BUF_INIT;
	struct config *cfg = NULL;
	const char *addr = listen_address;
	int tls = 0, rc = 1;

	if (!addr) {
		if (cfg_load(config_path, &cfg, &err)) {
			fprintf(stderr, "alertbridge: healthcheck: %s\n", buf_str(&err));
			goto out;
		}
		addr = cfg->listen_address;
		tls = cfg->webhook.tls.cert_file != NULL;
	}
	if (http_global_init() != ERR_OK) {
		fprintf(stderr, "alertbridge: healthcheck: libcurl cannot initialise\n");
		goto out;
	}
	if (healthcheck_probe(addr, tls, 5000, &err) == ERR_OK)
		rc = 0;
	else
		fprintf(stderr, "alertbridge: healthcheck: %s\n", buf_str(&err));
	http_global_cleanup();
out:
	cfg_free(cfg);
	buf_release(&err);
	return rc;
}
