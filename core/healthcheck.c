/*
 * healthcheck.c - GET /-/healthy of the local alertbridge over libcurl
 * (healthcheck.h), and the `alertbridge healthcheck` command around it,
 * which asks the address serve chose (its flags read from /proc/1 in a
 * container, where the HEALTHCHECK cannot see them).
 */
#include "healthcheck.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "config.h"
#include "http_client.h"
#include "version.h"
#include "xalloc.h"

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
	struct http_request req = HTTP_REQUEST_INIT;
	struct http_response res;
	struct buf url = BUF_INIT;
	char ua[128];
	const char *headers[2] = { ua, NULL };
	enum err rc;

	http_response_init(&res);
	rc = healthcheck_url(listen_address, tls, &url, errmsg);
	if (rc)
		goto out;
	snprintf(ua, sizeof(ua), "User-Agent: %s (healthcheck)", version_user_agent());
	req.method = "GET";
	req.url = buf_str(&url);
	req.headers = headers;
	req.timeout_ms = timeout_ms;
	req.connect_timeout_ms = timeout_ms;
	rc = http_do_local(&req, &res, errmsg);
	if (rc)
		goto out;
	if (res.status != 200) {
		buf_setf(errmsg, "GET %s: HTTP %d", buf_str(&url), res.status);
		rc = ERR_IO;
	}
out:
	http_response_release(&res);
	buf_release(&url);
	return rc;
}

/* Largest /proc/PID/cmdline looked at, in bytes (Linux caps argv far above real ones). */
#define CMDLINE_MAX_BYTES (64 * 1024)

/* The value of flag in argv[0..argc) ("--flag=V" or "--flag V"); NULL when absent. */
static const char *flag_value(int argc, char *const *argv, const char *flag)
{
	size_t n = strlen(flag);

	for (int i = 0; i < argc; i++) {
		if (strncmp(argv[i], flag, n))
			continue;
		if (argv[i][n] == '=')
			return argv[i] + n + 1;
		if (argv[i][n] == '\0' && i + 1 < argc)
			return argv[i + 1];
	}
	return NULL;
}

/* Non-zero when a and b name the same file (stat(2) follows /proc's exe links). */
static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/* proc_dir/cmdline split at its NULs into argv (pointing into *text); argc, or -1. */
static int read_cmdline(const char *proc_dir, struct buf *text, char ***argv)
{
	char path[PATH_MAX];
	int argc = 0;

	snprintf(path, sizeof(path), "%s/cmdline", proc_dir);
	if (buf_read_file(text, path, 0) != ERR_OK)
		return -1;
	for (size_t i = 0; i < text->len; i++)
		argc += text->data[i] == '\0';
	*argv = xcalloc((size_t)argc + 1, sizeof(**argv));
	for (size_t i = 0, k = 0; i < text->len && k < (size_t)argc; k++) {
		(*argv)[k] = text->data + i;
		i += strlen(text->data + i) + 1;
	}
	return argc;
}

int healthcheck_serve_flags(const char *proc_dir, char **listen_address, char **config_file)
{
	struct buf text = BUF_INIT;
	char **argv = NULL;
	char exe[PATH_MAX];
	const char *addr, *conf;
	int argc, serve = 0;

	*listen_address = NULL;
	*config_file = NULL;
	snprintf(exe, sizeof(exe), "%s/exe", proc_dir);
	if (!same_file(exe, "/proc/self/exe"))
		return 0;
	buf_init(&text, CMDLINE_MAX_BYTES);
	argc = read_cmdline(proc_dir, &text, &argv);
	/* The command is the first argument that is not a flag, as main() reads it. */
	for (int i = 1; i < argc && !serve; i++)
		if (argv[i][0] != '-')
			serve = !strcmp(argv[i], "serve") ? 1 : -1;
	if (serve == 1) {
		addr = flag_value(argc, argv, "--web.listen-address");
		conf = flag_value(argc, argv, "--config.file");
		*listen_address = addr ? xstrdup(addr) : NULL;
		if (conf && conf[0] == '/')
			*config_file = xstrdup(conf);
		else if (conf) {
			struct buf p = BUF_INIT;

			(void)buf_printf(&p, "%s/cwd/%s", proc_dir, conf);
			*config_file = buf_detach(&p);
		}
	}
	free(argv);
	buf_release(&text);
	return serve == 1;
}

int healthcheck_command(const char *listen_address, const char *config_file,
			const char *default_config)
{
	struct buf err = BUF_INIT, cfg_err = BUF_INIT;
	struct config *cfg = NULL;
	char *serve_addr = NULL, *serve_conf = NULL;
	const char *addr = listen_address, *path = config_file;
	int tls = 0, rc = 1;

	if ((!addr || !path) && healthcheck_serve_flags("/proc/1", &serve_addr, &serve_conf)) {
		addr = addr ? addr : serve_addr;
		path = path ? path : serve_conf;
	}
	path = path ? path : default_config;
	if (cfg_load(path, &cfg, &cfg_err) == ERR_OK) {
		tls = cfg->webhook.tls.cert_file != NULL;
		addr = addr ? addr : cfg->listen_address;
	} else if (!addr) {
		fprintf(stderr, "alertbridge: healthcheck: %s\n", buf_str(&cfg_err));
		goto out;
	}
	if (http_global_init() != ERR_OK) {
		fprintf(stderr, "alertbridge: healthcheck: libcurl cannot initialise\n");
		goto out;
	}
	if (healthcheck_probe(addr, tls, 5000, &err) == ERR_OK)
		rc = 0;
	else if (cfg)
		fprintf(stderr, "alertbridge: healthcheck: %s\n", buf_str(&err));
	else  /* http assumed: say why, a TLS listener would explain the failure */
		fprintf(stderr, "alertbridge: healthcheck: %s (config not loaded, http assumed: %s)\n",
			buf_str(&err), buf_str(&cfg_err));
	http_global_cleanup();
out:
	cfg_free(cfg);
	free(serve_addr);
	free(serve_conf);
	buf_release(&err);
	buf_release(&cfg_err);
	return rc;
}
