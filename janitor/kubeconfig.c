/*
 * kubeconfig.c - kubeconfig files (libyaml document API, so every error can
 * name the line of the node at fault), the in-cluster service account, and
 * exec credential plugins run with posix_spawn (safe in a threaded process:
 * nothing runs between fork and exec that could take a lock).
 */
#include "janitor/kubeconfig.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <yaml.h>

#include "core/codec.h"
#include "core/rfc3339.h"
#include "core/xalloc.h"
#include "core/clock.h"
#include "core/banned.h"

extern char **environ;

#define MAX_CONFIG_BYTES (4u << 20)
#define MAX_TOKEN_BYTES (64u << 10)
#define MAX_PLUGIN_STDOUT (1u << 20)
#define MAX_PLUGIN_STDERR 1024u
#define DEFAULT_EXEC_TIMEOUT_MS 60000

/* ---- small helpers ---- */

enum err kube_token_read(const char *path, struct buf *out, struct buf *errmsg)
{
	enum err rc;

	buf_reset(out);
	rc = buf_read_file(out, path, MAX_TOKEN_BYTES);
	if (rc == ERR_IO) {
		buf_setf(errmsg, "reading token file %s: %s", path, strerror(errno));
		return ERR_IO;
	}
	if (rc == ERR_TOOBIG) {
		buf_setf(errmsg, "reading token file %s: over %u bytes", path, MAX_TOKEN_BYTES);
		return ERR_IO;
	}
	while (out->len && strchr(" \t\r\n", out->data[out->len - 1]))
		buf_truncate(out, out->len - 1);
	if (!out->len) {
		buf_setf(errmsg, "token file %s is empty", path);
		return ERR_IO;
	}
	return ERR_OK;
}

/* Whole file into out (capped); ERR_IO with the reason otherwise. */
static enum err slurp(const char *path, size_t max, struct buf *out, struct buf *errmsg)
{
	size_t before = out->len;
	enum err rc = buf_read_file(out, path, max);

	if (rc == ERR_IO && out->len == before)
		buf_setf(errmsg, "kubeconfig %s: %s", path, strerror(errno));
	else if (rc == ERR_IO)
		buf_setf(errmsg, "reading %s: %s", path, strerror(errno));
	else if (rc == ERR_TOOBIG)
		buf_setf(errmsg, "reading %s: over %zu bytes", path, max);
	return rc == ERR_OK ? ERR_OK : ERR_IO;
}

/* Standard base64 (RFC 4648 section 4, whitespace ignored) to a new string; NULL if malformed. */
static char *b64_decode(const char *s)
{
	size_t n = strlen(s), len = 0;
	unsigned char *out = xmalloc(CODEC_BASE64_DECODED_MAX(n) + 1);

	if (codec_base64_decode(s, n, out, &len) != ERR_OK) {
		free(out);
		return NULL;
	}
	out[len] = '\0';
	return (char *)out;
}

static void free_strv(char **v)
{
	for (size_t i = 0; v && v[i]; i++)
		free(v[i]);
	free(v);
}

static void exec_free(struct kube_exec *e)
{
	if (!e)
		return;
	free(e->api_version);
	free(e->command);
	free_strv(e->argv);
	free_strv(e->env);
	free(e->install_hint);
	free(e);
}

void kube_config_release(struct kube_config *cfg)
{
	if (!cfg)
		return;
	free(cfg->server);
	free(cfg->namespace);
	free(cfg->token);
	free(cfg->token_file);
	free(cfg->ca_file);
	free(cfg->ca_pem);
	free(cfg->ca_data_b64);
	free(cfg->client_cert_file);
	free(cfg->client_key_file);
	free(cfg->client_cert_pem);
	free(cfg->client_key_pem);
	exec_free(cfg->exec);
	free(cfg->source);
	memset(cfg, 0, sizeof(*cfg));
}

/* ---- kubeconfig ---- */

/* Parse state: the document and where it came from, for messages. */
struct kc {
	yaml_document_t doc;
	const char *path;
	char *dir;  /* directory of path, for relative file names */
	struct buf *errmsg;
};

static size_t line_of(const yaml_node_t *n)
{
	return n ? n->start_mark.line + 1 : 1;
}

static enum err bad(struct kc *k, const yaml_node_t *n, const char *key, const char *what)
{
	buf_setf(k->errmsg, "kubeconfig %s:%zu: %s%s%s%s", k->path, line_of(n),
		 key ? "key \"" : "", key ? key : "", key ? "\": " : "", what);
	return ERR_INVALID;
}

static const char *scalar(const yaml_node_t *n)
{
	return n && n->type == YAML_SCALAR_NODE ? (const char *)n->data.scalar.value : NULL;
}

/* The value of key in mapping m; NULL when absent or m is not a mapping. */
static yaml_node_t *map_get(struct kc *k, yaml_node_t *m, const char *key)
{
	yaml_node_pair_t *p;

	if (!m || m->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = m->data.mapping.pairs.start; p < m->data.mapping.pairs.top; p++) {
		const char *name = scalar(yaml_document_get_node(&k->doc, p->key));
		if (name && !strcmp(name, key))
			return yaml_document_get_node(&k->doc, p->value);
	}
	return NULL;
}

/*
 * String value of key in m into *out (NULL when absent or empty).
 * ERR_INVALID when present but not a scalar.
 */
static enum err get_str(struct kc *k, yaml_node_t *m, const char *key, const char **out)
{
	yaml_node_t *v = map_get(k, m, key);

	*out = NULL;
	if (!v)
		return ERR_OK;
	if (v->type != YAML_SCALAR_NODE)
		return bad(k, v, key, "expected a string");
	if (*scalar(v) && strcmp(scalar(v), "~") && strcmp(scalar(v), "null"))
		*out = scalar(v);
	return ERR_OK;
}

static enum err get_bool(struct kc *k, yaml_node_t *m, const char *key, int *out)
{
	yaml_node_t *v = map_get(k, m, key);
	const char *s = scalar(v);

	*out = 0;
	if (!v)
		return ERR_OK;
	if (s && (!strcmp(s, "true") || !strcmp(s, "True") || !strcmp(s, "TRUE")))
		*out = 1;
	else if (!s || (strcmp(s, "false") && strcmp(s, "False") && strcmp(s, "FALSE")))
		return bad(k, v, key, "expected true or false");
	return ERR_OK;
}

/* A path as written, made absolute against the kubeconfig's directory. */
static char *resolve(struct kc *k, const char *p)
{
	struct buf b = BUF_INIT;

	if (!p)
		return NULL;
	if (p[0] == '/')
		return xstrdup(p);
	(void)buf_printf(&b, "%s/%s", k->dir, p);
	return buf_detach(&b);
}

static enum err get_b64(struct kc *k, yaml_node_t *m, const char *key, char **out)
{
	const char *s;
	enum err rc = get_str(k, m, key, &s);

	*out = NULL;
	if (rc || !s)
		return rc;
	*out = b64_decode(s);
	if (!*out)
		return bad(k, map_get(k, m, key), key, "not valid base64");
	return ERR_OK;
}

/*
 * The "name: X" entry of the list under key in the root (clusters, users,
 * contexts) and its inner mapping under inner.  used_at names where X came
 * from, for the "not found" message.
 */
static enum err find_named(struct kc *k, const char *list_key, const char *inner,
			   const char *name, const char *what, const yaml_node_t *used_at,
			   yaml_node_t **out)
{
	yaml_node_t *root = yaml_document_get_root_node(&k->doc);
	yaml_node_t *list = map_get(k, root, list_key);
	yaml_node_item_t *it;

	*out = NULL;
	if (list && list->type != YAML_SEQUENCE_NODE)
		return bad(k, list, list_key, "expected a list");
	for (it = list ? list->data.sequence.items.start : NULL;
	     list && it < list->data.sequence.items.top; it++) {
		yaml_node_t *e = yaml_document_get_node(&k->doc, *it);
		const char *n = scalar(map_get(k, e, "name"));
		if (!e || e->type != YAML_MAPPING_NODE)
			return bad(k, e, list_key, "entries must be mappings with name");
		if (n && !strcmp(n, name)) {
			*out = map_get(k, e, inner);
			if (!*out || (*out)->type != YAML_MAPPING_NODE)
				return bad(k, *out ? *out : e, inner, "expected a mapping");
			return ERR_OK;
		}
	}
	buf_setf(k->errmsg, "kubeconfig %s:%zu: %s \"%s\" not found in %s%s", k->path,
		 line_of(used_at), what, name, list_key, list ? "" : " (no such list)");
	return ERR_INVALID;
}

static enum err parse_cluster(struct kc *k, yaml_node_t *cl, struct kube_config *out)
{
	const char *server, *ca;
	enum err rc;
	size_t n;

	rc = get_str(k, cl, "server", &server);
	if (!rc && !server)
		rc = bad(k, cl, "server", "missing");
	if (!rc && strncmp(server, "https://", 8) && strncmp(server, "http://", 7))
		rc = bad(k, map_get(k, cl, "server"), "server", "not an http(s):// URL");
	if (rc)
		return rc;
	n = strlen(server);
	while (n && server[n - 1] == '/')
		n--;
	out->server = xstrndup(server, n);
	rc = get_str(k, cl, "certificate-authority", &ca);
	if (!rc)
		out->ca_file = resolve(k, ca);
	if (!rc)
		rc = get_b64(k, cl, "certificate-authority-data", &out->ca_pem);
	if (!rc && out->ca_pem)
		out->ca_data_b64 = xstrdup(scalar(map_get(k, cl, "certificate-authority-data")));
	if (!rc)
		rc = get_bool(k, cl, "insecure-skip-tls-verify", &out->insecure);
	return rc;
}

/* A NULL-terminated copy of a list of strings (args). */
static enum err str_list(struct kc *k, yaml_node_t *m, const char *key, const char *first,
			 char ***out)
{
	yaml_node_t *l = map_get(k, m, key);
	size_t n = 0, i = 0;
	char **v;

	if (l && l->type != YAML_SEQUENCE_NODE)
		return bad(k, l, key, "expected a list of strings");
	if (l)
		n = (size_t)(l->data.sequence.items.top - l->data.sequence.items.start);
	v = xcalloc(n + 2, sizeof(*v));
	if (first)
		v[i++] = xstrdup(first);
	for (size_t j = 0; j < n; j++) {
		const char *s = scalar(yaml_document_get_node(&k->doc,
							      l->data.sequence.items.start[j]));
		if (!s) {
			free_strv(v);
			return bad(k, l, key, "expected a list of strings");
		}
		v[i++] = xstrdup(s);
	}
	*out = v;
	return ERR_OK;
}

static enum err parse_env(struct kc *k, yaml_node_t *ex, char ***out)
{
	yaml_node_t *l = map_get(k, ex, "env");
	size_t n = 0;
	char **v;

	if (l && l->type != YAML_SEQUENCE_NODE)
		return bad(k, l, "env", "expected a list of {name, value}");
	if (l)
		n = (size_t)(l->data.sequence.items.top - l->data.sequence.items.start);
	v = xcalloc(n + 1, sizeof(*v));
	for (size_t j = 0; j < n; j++) {
		yaml_node_t *e = yaml_document_get_node(&k->doc, l->data.sequence.items.start[j]);
		const char *name = scalar(map_get(k, e, "name"));
		const char *value = scalar(map_get(k, e, "value"));
		struct buf b = BUF_INIT;
		if (!name || !*name || strchr(name, '=') || !value) {
			free_strv(v);
			return bad(k, e, "env", "entries need a name and a string value");
		}
		(void)buf_printf(&b, "%s=%s", name, value);
		v[j] = buf_detach(&b);
	}
	*out = v;
	return ERR_OK;
}

static enum err parse_exec(struct kc *k, yaml_node_t *ex, struct kube_config *out)
{
	struct kube_exec *e = xcalloc(1, sizeof(*e));
	const char *api, *cmd, *hint, *mode;
	enum err rc;

	out->exec = e;
	if (ex->type != YAML_MAPPING_NODE)
		return bad(k, ex, "exec", "expected a mapping");
	rc = get_str(k, ex, "apiVersion", &api);
	if (!rc && (!api || (strcmp(api, "client.authentication.k8s.io/v1") &&
			     strcmp(api, "client.authentication.k8s.io/v1beta1"))))
		rc = bad(k, map_get(k, ex, "apiVersion") ? map_get(k, ex, "apiVersion") : ex,
			 "apiVersion", "expected client.authentication.k8s.io/v1 or v1beta1");
	if (!rc)
		rc = get_str(k, ex, "command", &cmd);
	if (!rc && !cmd)
		rc = bad(k, ex, "command", "missing");
	if (!rc)
		rc = get_str(k, ex, "installHint", &hint);
	if (!rc)
		rc = get_str(k, ex, "interactiveMode", &mode);
	if (!rc && mode && !strcmp(mode, "Always"))
		rc = bad(k, map_get(k, ex, "interactiveMode"), "interactiveMode",
			 "Always needs a terminal; alertbridge runs plugins without one");
	if (!rc)
		rc = get_bool(k, ex, "provideClusterInfo", &e->provide_cluster_info);
	if (rc)
		return rc;
	e->api_version = xstrdup(api);
	/* client-go: a command with a path separator is relative to the kubeconfig. */
	e->command = strchr(cmd, '/') ? resolve(k, cmd) : xstrdup(cmd);
	e->install_hint = xstrdup(hint);
	rc = str_list(k, ex, "args", e->command, &e->argv);
	if (!rc)
		rc = parse_env(k, ex, &e->env);
	return rc;
}

static enum err parse_user(struct kc *k, yaml_node_t *u, struct kube_config *out)
{
	const char *token, *token_file, *cert, *key;
	yaml_node_t *ex;
	enum err rc = ERR_OK;

	if (map_get(k, u, "auth-provider"))
		return bad(k, map_get(k, u, "auth-provider"), "auth-provider",
			   "not supported; use an exec plugin");
	if (map_get(k, u, "username") || map_get(k, u, "password"))
		return bad(k, map_get(k, u, "username") ? map_get(k, u, "username")
							: map_get(k, u, "password"),
			   map_get(k, u, "username") ? "username" : "password",
			   "basic authentication is not supported");
	rc = rc ? rc : get_str(k, u, "token", &token);
	rc = rc ? rc : get_str(k, u, "tokenFile", &token_file);
	rc = rc ? rc : get_str(k, u, "client-certificate", &cert);
	rc = rc ? rc : get_str(k, u, "client-key", &key);
	if (rc)
		return rc;
	out->token = xstrdup(token);
	out->token_file = resolve(k, token_file);
	out->client_cert_file = resolve(k, cert);
	out->client_key_file = resolve(k, key);
	rc = get_b64(k, u, "client-certificate-data", &out->client_cert_pem);
	rc = rc ? rc : get_b64(k, u, "client-key-data", &out->client_key_pem);
	ex = map_get(k, u, "exec");
	if (!rc && ex)
		rc = parse_exec(k, ex, out);
	return rc;
}

/* Check that every file the configuration names is readable now (fail at start). */
static enum err check_files(struct kc *k, const struct kube_config *c)
{
	const char *files[] = { c->ca_file, c->client_cert_file, c->client_key_file };

	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		if (files[i] && access(files[i], R_OK)) {
			buf_setf(k->errmsg, "kubeconfig %s: cannot read %s: %s", k->path, files[i],
				 strerror(errno));
			return ERR_IO;
		}
	}
	return ERR_OK;
}

static enum err load_yaml(struct kc *k, struct buf *text)
{
	yaml_parser_t parser;
	enum err rc = ERR_OK;

	if (!yaml_parser_initialize(&parser))
		abort();
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf_str(text), text->len);
	if (!yaml_parser_load(&parser, &k->doc)) {
		buf_setf(k->errmsg, "kubeconfig %s:%zu: %s", k->path, parser.problem_mark.line + 1,
			 parser.problem ? parser.problem : "malformed YAML");
		memset(&k->doc, 0, sizeof(k->doc));
		rc = ERR_INVALID;
	} else if (!yaml_document_get_root_node(&k->doc) ||
		   yaml_document_get_root_node(&k->doc)->type != YAML_MAPPING_NODE) {
		rc = bad(k, yaml_document_get_root_node(&k->doc), NULL, "expected a mapping");
	}
	yaml_parser_delete(&parser);
	return rc;
}

enum err kube_config_parse(const char *path, const char *context, struct kube_config *out,
			   struct buf *errmsg)
{
	struct kc k = { .path = path, .errmsg = errmsg };
	struct buf text = BUF_INIT;
	yaml_node_t *root, *ctx_node = NULL, *cl = NULL, *u = NULL, *at;
	const char *ctx_name = context, *cluster, *user, *ns;
	const char *slash = strrchr(path, '/');
	struct buf src = BUF_INIT;
	enum err rc;

	memset(out, 0, sizeof(*out));
	k.dir = slash ? xstrndup(path, (size_t)(slash - path) + (slash == path)) : xstrdup(".");
	rc = slurp(path, MAX_CONFIG_BYTES, &text, errmsg);
	if (rc)
		goto out;
	rc = load_yaml(&k, &text);
	if (rc)
		goto out;
	root = yaml_document_get_root_node(&k.doc);
	at = root;
	if (!ctx_name || !*ctx_name) {
		rc = get_str(&k, root, "current-context", &ctx_name);
		if (rc)
			goto out;
		at = map_get(&k, root, "current-context");
		if (!ctx_name) {
			rc = bad(&k, at ? at : root, "current-context",
				 "not set and no context was given");
			goto out;
		}
	}
	rc = find_named(&k, "contexts", "context", ctx_name, "context", at, &ctx_node);
	rc = rc ? rc : get_str(&k, ctx_node, "cluster", &cluster);
	rc = rc ? rc : get_str(&k, ctx_node, "user", &user);
	rc = rc ? rc : get_str(&k, ctx_node, "namespace", &ns);
	if (!rc && !cluster)
		rc = bad(&k, ctx_node, "cluster", "missing in the context");
	rc = rc ? rc : find_named(&k, "clusters", "cluster", cluster, "cluster",
				  map_get(&k, ctx_node, "cluster"), &cl);
	rc = rc ? rc : parse_cluster(&k, cl, out);
	if (!rc && user)
		rc = find_named(&k, "users", "user", user, "user", map_get(&k, ctx_node, "user"),
				&u);
	if (!rc && u)
		rc = parse_user(&k, u, out);
	rc = rc ? rc : check_files(&k, out);
	if (rc)
		goto out;
	out->namespace = xstrdup(ns ? ns : "default");
	(void)buf_printf(&src, "%s (context %s)", path, ctx_name);
	out->source = buf_detach(&src);
out:
	if (rc)
		kube_config_release(out);
	yaml_document_delete(&k.doc);
	buf_release(&text);
	buf_release(&src);
	free(k.dir);
	return rc;
}

/* ---- in-cluster ---- */

enum err kube_config_incluster(const char *sa_dir, struct kube_config *out, struct buf *errmsg)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST");
	const char *port = getenv("KUBERNETES_SERVICE_PORT");
	struct buf b = BUF_INIT, tok = BUF_INIT, ns = BUF_INIT, ignored = BUF_INIT;
	enum err rc = ERR_OK;

	memset(out, 0, sizeof(*out));
	if (!sa_dir)
		sa_dir = KUBE_SA_DIR;
	if (!host || !*host || !port || !*port) {
		buf_setf(errmsg, "in-cluster config: KUBERNETES_SERVICE_HOST and "
				 "KUBERNETES_SERVICE_PORT must be set (not running in a pod?)");
		return ERR_INVALID;
	}
	(void)buf_printf(&b, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
	out->server = buf_detach(&b);
	(void)buf_printf(&b, "%s/token", sa_dir);
	out->token_file = buf_detach(&b);
	rc = kube_token_read(out->token_file, &tok, errmsg);
	if (rc)
		goto out;
	(void)buf_printf(&b, "%s/ca.crt", sa_dir);
	out->ca_file = buf_detach(&b);
	if (access(out->ca_file, R_OK)) {
		free(out->ca_file);
		out->ca_file = NULL;
	}
	(void)buf_printf(&b, "%s/namespace", sa_dir);
	if (kube_token_read(buf_str(&b), &ns, &ignored) == ERR_OK)
		out->namespace = buf_detach(&ns);
	else
		out->namespace = xstrdup("default");
	out->source = xstrdup("in-cluster");
out:
	if (rc)
		kube_config_release(out);
	buf_release(&b);
	buf_release(&tok);
	buf_release(&ns);
	buf_release(&ignored);
	return rc;
}

/* ---- exec plugins ---- */

void kube_exec_credential_release(struct kube_exec_credential *cred)
{
	if (!cred)
		return;
	free(cred->token);
	free(cred->client_cert_pem);
	free(cred->client_key_pem);
	memset(cred, 0, sizeof(*cred));
}

/* KUBERNETES_EXEC_INFO: the ExecCredential the plugin reads (spec only). */
static char *exec_info(const struct kube_config *cfg)
{
	json_t *spec = json_pack("{s:b}", "interactive", 0);
	json_t *o;
	char *s;

	if (cfg->exec->provide_cluster_info) {
		json_t *cl = json_pack("{s:s}", "server", cfg->server);
		if (cfg->ca_data_b64)
			json_object_set_new(cl, "certificate-authority-data",
					    json_string(cfg->ca_data_b64));
		if (cfg->insecure)
			json_object_set_new(cl, "insecure-skip-tls-verify", json_true());
		json_object_set_new(spec, "cluster", cl);
	}
	o = json_pack("{s:s, s:s, s:o}", "apiVersion", cfg->exec->api_version, "kind",
		      "ExecCredential", "spec", spec);
	s = o ? json_dumps(o, JSON_COMPACT) : NULL;
	json_decref(o);
	if (!s)
		abort(); /* jansson fails only without memory */
	return s;
}

/* The process environment, then the plugin's, then KUBERNETES_EXEC_INFO; later wins. */
static char **exec_env(const struct kube_config *cfg)
{
	size_t n = 0, m = 0, k = 0;
	char **env;
	struct buf b = BUF_INIT;
	char *info = exec_info(cfg);

	while (environ[n])
		n++;
	while (cfg->exec->env[m])
		m++;
	env = xcalloc(n + m + 2, sizeof(*env));
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t len = eq ? (size_t)(eq - environ[i]) + 1 : strlen(environ[i]);
		int overridden = !strncmp(environ[i], "KUBERNETES_EXEC_INFO=", 21);
		for (size_t j = 0; j < m && !overridden; j++)
			overridden = !strncmp(environ[i], cfg->exec->env[j], len);
		if (!overridden)
			env[k++] = xstrdup(environ[i]);
	}
	for (size_t j = 0; j < m; j++)
		env[k++] = xstrdup(cfg->exec->env[j]);
	(void)buf_printf(&b, "KUBERNETES_EXEC_INFO=%s", info);
	env[k++] = buf_detach(&b);
	free(info);
	return env;
}

/*
 * Read the plugin's stdout and stderr until both close or the deadline;
 * returns 0 on time, -1 when the deadline passed.  Output past the caps is
 * read and dropped so the plugin never blocks on a full pipe.
 */
static int drain(int out_fd, int err_fd, struct buf *out, struct buf *err, int64_t deadline)
{
	struct pollfd p[2] = { { out_fd, POLLIN, 0 }, { err_fd, POLLIN, 0 } };
	struct buf *dst[2] = { out, err };
	char chunk[4096];

	while (p[0].fd >= 0 || p[1].fd >= 0) {
		int64_t left = deadline - (clock_mono_us() / 1000);
		if (left <= 0)
			return -1;
		if (poll(p, 2, (int)(left > 1000 ? 1000 : left)) < 0 && errno != EINTR)
			return -1;
		for (int i = 0; i < 2; i++) {
			ssize_t n;
			if (p[i].fd < 0 || !p[i].revents)
				continue;
			n = read(p[i].fd, chunk, sizeof(chunk));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0) {
				p[i].fd = -1;
				continue;
			}
			(void)buf_add(dst[i], chunk, (size_t)n); /* ERR_TOOBIG: dropped */
		}
	}
	return 0;
}

static void trim_end(struct buf *b)
{
	while (b->len && strchr(" \t\r\n", b->data[b->len - 1]))
		buf_truncate(b, b->len - 1);
}

static enum err spawn_plugin(const struct kube_config *cfg, int64_t timeout_ms, struct buf *out,
			     struct buf *err, struct buf *errmsg)
{
	const struct kube_exec *e = cfg->exec;
	int out_pipe[2] = { -1, -1 }, err_pipe[2] = { -1, -1 };
	posix_spawn_file_actions_t fa;
	char **env = exec_env(cfg);
	pid_t pid = -1;
	int status = 0, timed_out, sp;
	enum err rc = ERR_OK;

	if (pipe2(out_pipe, O_CLOEXEC) || pipe2(err_pipe, O_CLOEXEC)) {
		buf_setf(errmsg, "exec plugin %s: pipe: %s", e->command, strerror(errno));
		rc = ERR_AUTH;
		goto out;
	}
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_adddup2(&fa, out_pipe[1], 1);
	posix_spawn_file_actions_adddup2(&fa, err_pipe[1], 2);
	sp = posix_spawnp(&pid, e->command, &fa, NULL, e->argv, env);
	posix_spawn_file_actions_destroy(&fa);
	close(out_pipe[1]);
	close(err_pipe[1]);
	out_pipe[1] = err_pipe[1] = -1;
	if (sp) {
		buf_setf(errmsg, "exec plugin %s: %s%s%s", e->command, strerror(sp),
			 e->install_hint ? ": " : "", e->install_hint ? e->install_hint : "");
		rc = ERR_AUTH;
		goto out;
	}
	timed_out = drain(out_pipe[0], err_pipe[0], out, err, (clock_mono_us() / 1000) + timeout_ms);
	if (timed_out)
		kill(pid, SIGKILL);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	trim_end(err);
	if (timed_out) {
		buf_setf(errmsg, "exec plugin %s: killed after %lld ms: %s", e->command,
			 (long long)timeout_ms, buf_str(err));
		rc = ERR_AUTH;
	} else if (WIFSIGNALED(status)) {
		buf_setf(errmsg, "exec plugin %s: killed by signal %d: %s", e->command,
			 WTERMSIG(status), buf_str(err));
		rc = ERR_AUTH;
	} else if (WEXITSTATUS(status)) {
		buf_setf(errmsg, "exec plugin %s: exit status %d: %s", e->command,
			 WEXITSTATUS(status), buf_str(err));
		rc = ERR_AUTH;
	}
out:
	for (int i = 0; i < 2; i++) {
		if (out_pipe[i] >= 0)
			close(out_pipe[i]);
		if (err_pipe[i] >= 0)
			close(err_pipe[i]);
	}
	free_strv(env);
	return rc;
}

static char *opt_string(json_t *o, const char *key)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s && *s ? xstrdup(s) : NULL;
}

static enum err parse_credential(const struct kube_config *cfg, const struct buf *text,
				 struct kube_exec_credential *out, struct buf *errmsg)
{
	const char *cmd = cfg->exec->command;
	json_error_t jerr;
	json_t *o = json_loadb(buf_str(text), text->len, 0, &jerr);
	json_t *st = json_object_get(o, "status");
	const char *api = json_string_value(json_object_get(o, "apiVersion"));
	const char *kind = json_string_value(json_object_get(o, "kind"));
	const char *exp = json_string_value(json_object_get(st, "expirationTimestamp"));
	enum err rc = ERR_INVALID;

	if (!o) {
		buf_setf(errmsg, "exec plugin %s: output is not JSON: %s (line %d)", cmd, jerr.text,
			 jerr.line);
		goto out;
	}
	if (!kind || strcmp(kind, "ExecCredential") || !api ||
	    strcmp(api, cfg->exec->api_version)) {
		buf_setf(errmsg, "exec plugin %s: output is not an ExecCredential of %s", cmd,
			 cfg->exec->api_version);
		goto out;
	}
	out->token = opt_string(st, "token");
	out->client_cert_pem = opt_string(st, "clientCertificateData");
	out->client_key_pem = opt_string(st, "clientKeyData");
	if (!out->token && !(out->client_cert_pem && out->client_key_pem)) {
		buf_setf(errmsg, "exec plugin %s: status has neither token nor "
				 "clientCertificateData and clientKeyData", cmd);
		goto out;
	}
	if (!!out->client_cert_pem != !!out->client_key_pem) {
		buf_setf(errmsg, "exec plugin %s: clientCertificateData and clientKeyData "
				 "come together", cmd);
		goto out;
	}
	if (exp && (rfc3339_parse(exp, &out->expiry_ms) != ERR_OK || out->expiry_ms < 0)) {
		buf_setf(errmsg, "exec plugin %s: bad expirationTimestamp \"%s\"", cmd, exp);
		goto out;
	}
	rc = ERR_OK;
out:
	if (rc)
		kube_exec_credential_release(out);
	json_decref(o);
	return rc;
}

enum err kube_exec_run(const struct kube_config *cfg, int64_t timeout_ms,
		       struct kube_exec_credential *out, struct buf *errmsg)
{
	struct buf sout = BUF_INIT, serr = BUF_INIT;
	enum err rc;

	memset(out, 0, sizeof(*out));
	if (!cfg->exec) {
		buf_setf(errmsg, "no exec plugin configured");
		return ERR_INVALID;
	}
	buf_init(&sout, MAX_PLUGIN_STDOUT);
	buf_init(&serr, MAX_PLUGIN_STDERR);
	rc = spawn_plugin(cfg, timeout_ms > 0 ? timeout_ms : DEFAULT_EXEC_TIMEOUT_MS, &sout, &serr,
			  errmsg);
	if (!rc)
		rc = parse_credential(cfg, &sout, out, errmsg);
	buf_release(&sout);
	buf_release(&serr);
	return rc;
}
