/*
 * map_admin.c - `map forget|retry|rescan` run where the database may be
 * written (map_admin.h): in the service behind its admin endpoint, or in
 * the command when no service holds the sqlite file's lock.  The store
 * calls and the lines they answer with are written once, here, for both.
 */
#include "map_admin.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <nettle/base64.h>

#include "store/db.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "http_client.h"
#include "store/serve_lock.h"
#include "version.h"
#include "banned.h"

#define REMOTE_TIMEOUT_MS 10000
#define PATH_PREFIX "/-/map/"

static const char *const op_names[] = { "forget", "retry", "rescan" };

int map_admin_op_parse(const char *name, enum map_admin_op *op)
{
	for (size_t i = 0; name && i < sizeof(op_names) / sizeof(op_names[0]); i++) {
		if (!strcmp(name, op_names[i])) {
			*op = (enum map_admin_op)i;
			return 1;
		}
	}
	return 0;
}

static int empty(const char *s)
{
	return !s || !*s;
}

/* 400 when op lacks what it needs (out says which), else 0. */
static int usage(enum map_admin_op op, const char *receiver, const char *key, struct buf *out)
{
	if (op != MAP_ADMIN_RESCAN && empty(receiver)) {
		buf_setf(out, "map %s needs --receiver=NAME", op_names[op]);
		return 400;
	}
	if (op != MAP_ADMIN_RESCAN && empty(key)) {
		buf_setf(out, "map %s needs KEY", op_names[op]);
		return 400;
	}
	return 0;
}

/*
 * The dead letters of one key, re-queued: its issue's transitions
 * ("bridge"), then its silence commands ("silence", bridge/silence.h: a
 * command Alertmanager refused runs again, its silence then starting when it
 * is made).  *n gets how many in all.
 */
static enum err retry_key(struct store *st, const char *receiver, const char *key, int64_t *n)
{
	int64_t more = 0;
	enum err rc = store_dead_requeue(st, "bridge", receiver, key, NULL, n);

	if (rc == ERR_OK)
		rc = store_dead_requeue(st, "silence", receiver, key, NULL, &more);
	*n += more;
	return rc;
}

int map_admin_run(struct store *st, enum map_admin_op op, const char *receiver, const char *key,
		  struct buf *out)
{
	int64_t n = 0;
	int status = usage(op, receiver, key, out);
	enum err rc = ERR_OK;

	if (status)
		return status;
	if (empty(receiver))
		receiver = NULL;
	switch (op) {
	case MAP_ADMIN_FORGET:
		rc = store_issue_forget(st, receiver, key);
		if (rc == ERR_OK)
			buf_setf(out, "forgot %s/%s: the next firing creates a new issue", receiver,
				 key);
		else if (rc == ERR_NOTFOUND)
			buf_setf(out, "no map row for receiver \"%s\" key \"%s\"", receiver, key);
		break;
	case MAP_ADMIN_RETRY:
		rc = retry_key(st, receiver, key, &n);
		if (rc == ERR_OK && n == 0)
			rc = ERR_NOTFOUND;
		if (rc == ERR_OK)
			buf_setf(out, "re-queued %lld dead-lettered event(s) of %s/%s", (long long)n,
				 receiver, key);
		else if (rc == ERR_NOTFOUND)
			buf_setf(out, "no dead-lettered event for receiver \"%s\" key \"%s\"",
				 receiver, key);
		break;
	case MAP_ADMIN_RESCAN:
		rc = store_scan_forget(st, receiver, &n);
		if (rc == ERR_OK)
			buf_setf(out, "forgot %lld repository scan(s): each repository is read again "
				 "before its next event", (long long)n);
		break;
	}
	if (rc == ERR_OK)
		return 200;
	if (rc == ERR_NOTFOUND)
		return 404;
	buf_setf(out, "map %s: the store failed (%s), see the log", op_names[op], err_str(rc));
	return 500;
}

void map_admin_handle(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct buf line = BUF_INIT;
	enum map_admin_op op;
	const char *name = req->path;

	res->content_type = "text/plain; charset=utf-8";
	if (!strncmp(name, PATH_PREFIX, strlen(PATH_PREFIX)) &&
	    map_admin_op_parse(name + strlen(PATH_PREFIX), &op)) {
		res->status = map_admin_run(ctx, op, srv_query(req, "receiver"),
					    srv_query(req, "key"), &line);
	} else {
		res->status = 404;
		buf_setf(&line, "no such map command");
	}
	(void)buf_printf(&res->body, "%s\n", buf_str(&line));
	buf_release(&line);
}

enum err map_admin_routes(struct srv *srv, srv_handler handler, void *handler_ctx)
{
	char path[32];
	enum err rc = ERR_OK;

	for (size_t i = 0; i < sizeof(op_names) / sizeof(op_names[0]) && rc == ERR_OK; i++) {
		snprintf(path, sizeof(path), PATH_PREFIX "%s", op_names[i]);
		rc = srv_route(srv, "POST", path, handler, handler_ctx);
	}
	return rc;
}

/*
 * "Authorization: ..." for cfg's webhook credentials, which the admin guard
 * takes (RFC 6750 Bearer; RFC 7617 Basic, base64 by nettle); "" for none.
 */
static void authorization(const struct config *cfg, struct buf *out)
{
	const struct cfg_basic_auth *ba = cfg ? &cfg->webhook.basic_auth : NULL;
	struct buf plain = BUF_INIT;
	char *enc;

	if (cfg && cfg->webhook.bearer_token) {
		(void)buf_printf(out, "Authorization: Bearer %s", cfg->webhook.bearer_token);
	} else if (ba && ba->username && ba->password) {
		(void)buf_printf(&plain, "%s:%s", ba->username, ba->password);
		enc = calloc(1, BASE64_ENCODE_RAW_LENGTH(plain.len) + 1);
		if (enc) {
			base64_encode_raw(enc, plain.len, (const uint8_t *)plain.data);
			(void)buf_printf(out, "Authorization: Basic %s", enc);
			free(enc);
		}
	}
	buf_release(&plain);
}

/* URL-encode v into out (RFC 3986 unreserved characters kept). */
static void query_value(struct buf *out, const char *v)
{
	for (const unsigned char *p = (const unsigned char *)v; *p; p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
		    (*p >= '0' && *p <= '9') || strchr("-._~", *p))
			(void)buf_addch(out, (char)*p);
		else
			(void)buf_printf(out, "%%%02X", *p);
	}
}

/*
 * POST the op to the service at h->url.  The TLS certificate is not
 * checked (as `healthcheck`): the URL is the one the serving process wrote
 * beside the database, on this host.  Returns the exit status.
 */
static int run_remote(const struct serve_lock_holder *h, enum map_admin_op op,
		      const struct config *cfg, const char *receiver, const char *key)
{
	struct http_request req = HTTP_REQUEST_INIT;
	struct http_response res;
	struct buf url = BUF_INIT, auth = BUF_INIT, err = BUF_INIT;
	char ua[128];
	const char *headers[3] = { ua, NULL, NULL };
	int status = 1;

	http_response_init(&res);
	if (!h->url[0]) {
		fprintf(stderr, "alertbridge: the service holding the database (process %ld) is "
			"not listening yet; try again\n", h->pid);
		goto out;
	}
	(void)buf_printf(&url, "%s" PATH_PREFIX "%s", h->url, op_names[op]);
	if (!empty(receiver)) {
		(void)buf_adds(&url, "?receiver=");
		query_value(&url, receiver);
	}
	if (!empty(key)) {
		(void)buf_adds(&url, empty(receiver) ? "?key=" : "&key=");
		query_value(&url, key);
	}
	snprintf(ua, sizeof(ua), "User-Agent: %s (map %s)", version_user_agent(), op_names[op]);
	authorization(cfg, &auth);
	if (auth.len)
		headers[1] = buf_str(&auth);
	req.method = "POST";
	req.url = buf_str(&url);
	req.headers = headers;
	req.timeout_ms = REMOTE_TIMEOUT_MS;
	if (http_do_local(&req, &res, &err)) {
		fprintf(stderr, "alertbridge: the service holding the database (process %ld): %s\n",
			h->pid, buf_str(&err));
		goto out;
	}
	while (res.body.len && res.body.data[res.body.len - 1] == '\n')
		buf_truncate(&res.body, res.body.len - 1);
	if (res.status == 200) {
		printf("%s\n", buf_str(&res.body));
		status = 0;
	} else if (res.status == 401) {
		fprintf(stderr, "alertbridge: the service (process %ld) refused the credentials: "
			"map commands send the config's webhook credentials\n", h->pid);
	} else {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&res.body));
		status = res.status == 400 ? 2 : 1;
	}
out:
	http_response_release(&res);
	buf_release(&url);
	buf_release(&auth);
	buf_release(&err);
	return status;
}

/* Open target and run op here: the caller holds target's lock (none on PostgreSQL). */
static int run_here(enum map_admin_op op, const char *target, const struct config *cfg,
		    const char *receiver, const char *key)
{
	struct buf err = BUF_INIT, line = BUF_INIT;
	struct store *st = NULL;
	int status = 1, http;

	if (store_open_target(target, cfg ? cfg->database_password_file : NULL, &st, &err)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
		goto out;
	}
	http = map_admin_run(st, op, receiver, key, &line);
	if (http == 200)
		printf("%s\n", buf_str(&line));
	else
		fprintf(stderr, "alertbridge: %s\n", buf_str(&line));
	status = http == 200 ? 0 : http == 400 ? 2 : 1;
out:
	store_close(st);
	buf_release(&err);
	buf_release(&line);
	return status;
}

int map_admin_command(enum map_admin_op op, const char *target, const struct config *cfg,
		      const char *receiver, const char *key)
{
	struct serve_lock_holder h;
	struct serve_lock *lock = NULL;
	struct buf err = BUF_INIT, line = BUF_INIT;
	int status = 1;
	enum err rc = ERR_OK;

	if (usage(op, receiver, key, &line)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&line));
		status = 2;
		goto out;
	}
	if (!db_target_is_postgres(target) && access(target, F_OK)) {  /* before its lock file */
		fprintf(stderr, "alertbridge: %s: no database here (%s)\n", target, strerror(errno));
		goto out;
	}
	rc = serve_lock_take(target, &lock, &h, &err);
	if (rc == ERR_CONFLICT)
		status = run_remote(&h, op, cfg, receiver, key);
	else if (rc)
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
	else
		status = run_here(op, target, cfg, receiver, key);
out:
	serve_lock_free(lock);
	buf_release(&err);
	buf_release(&line);
	return status;
}
