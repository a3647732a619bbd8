/*
 * kube.c - the Kubernetes REST calls of the janitor: the client, the pods
 * (get, list, annotate, delete), Jobs, Events, scale, owners and Leases.
 * Every request goes through kube_call() (kube_request.c: credentials,
 * retries, the answer judged by its Status object).  Parsers turn JSON into
 * our structs here, so json_t never leaves the kube module.
 */
#include "janitor/kube_int.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "core/http_client.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/utf8.h"
#include "core/xalloc.h"
#include "core/clock.h"
#include "core/banned.h"

#define DEFAULT_UA "alertbridge"
#define DEFAULT_MAX_RETRY_AFTER_MS 10000
#define PAGE_LIMIT 500
#define MAX_PAGES 10000
#define MAX_LIST_RESTARTS 3
#define MAX_EVENT_MESSAGE 1024
#define META_ACCEPT "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
#define MERGE_PATCH "application/merge-patch+json"

/* ---- client ---- */

struct kube_client *kube_client_new(struct kube_config *cfg, const struct kube_options *opts)
{
	struct kube_client *c = xcalloc(1, sizeof(*c));

	c->cfg = *cfg;
	memset(cfg, 0, sizeof(*cfg));
	if (!c->cfg.namespace)
		c->cfg.namespace = xstrdup("default");
	if (!c->cfg.source)
		c->cfg.source = xstrdup("configuration");
	if (opts)
		c->opts = *opts;
	c->user_agent = xstrdup(c->opts.user_agent ? c->opts.user_agent : DEFAULT_UA);
	c->opts.user_agent = NULL;
	if (!c->opts.now_ms)
		c->opts.now_ms = clock_hook_now_ms;
	if (!c->opts.sleep_ms)
		c->opts.sleep_ms = clock_hook_sleep_ms;
	if (c->opts.timeout_ms <= 0)
		c->opts.timeout_ms = KUBE_DEFAULT_TIMEOUT_MS;
	if (c->opts.max_retry_after_ms <= 0)
		c->opts.max_retry_after_ms = DEFAULT_MAX_RETRY_AFTER_MS;
	buf_init(&c->token, 0);
	kube_make_http(c);
	return c;
}

enum err kube_config_load(const char *kubeconfig, const char *context,
			  struct kube_client **out, struct buf *errmsg)
{
	struct kube_config cfg = KUBE_CONFIG_INIT;
	enum err rc;

	*out = NULL;
	if (kubeconfig && *kubeconfig)
		rc = kube_config_parse(kubeconfig, context, &cfg, errmsg);
	else
		rc = kube_config_incluster(NULL, &cfg, errmsg);
	if (!rc)
		*out = kube_client_new(&cfg, NULL);
	kube_config_release(&cfg);
	return rc;
}

void kube_client_free(struct kube_client *c)
{
	if (!c)
		return;
	http_client_free(c->http);
	kube_config_release(&c->cfg);
	free(c->user_agent);
	buf_release(&c->token);
	kube_exec_credential_release(&c->cred);
	free(c);
}

const char *kube_client_namespace(const struct kube_client *c)
{
	return c->cfg.namespace;
}

const char *kube_client_source(const struct kube_client *c)
{
	return c->cfg.source;
}

/* ---- names, paths, bodies ---- */

/* RFC 1123 subdomain, as Kubernetes names and namespaces are: safe in a path unescaped. */
static int dns_subdomain(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (!n || n > 253)
		return 0;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		int alnum = (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9');
		if (!alnum && ((ch != '-' && ch != '.') || i == 0 || i == n - 1))
			return 0;
	}
	return 1;
}

int kube_name_valid(const char *s)
{
	return dns_subdomain(s);
}

int kube_namespace_valid(const char *s)
{
	return dns_subdomain(s) && strlen(s) <= 63 && !strchr(s, '.');
}

static enum err check_names(const char *ns, const char *name, struct buf *errmsg)
{
	if (!kube_namespace_valid(ns)) {
		buf_setf(errmsg, "invalid namespace \"%s\"", ns ? ns : "");
		return ERR_INVALID;
	}
	if (!dns_subdomain(name)) {
		buf_setf(errmsg, "invalid name \"%s\" in namespace %s", name ? name : "", ns);
		return ERR_INVALID;
	}
	return ERR_OK;
}

/* Compact JSON of o (consumed); aborts only when jansson is out of memory. */
static char *dump(json_t *o)
{
	char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;

	json_decref(o);
	if (!s)
		abort();
	return s;
}

static json_t *delete_options(const char *uid)
{
	json_t *o = json_pack("{s:s, s:s, s:s}", "kind", "DeleteOptions", "apiVersion", "v1",
			      "propagationPolicy", "Background");

	if (uid)
		json_object_set_new(o, "preconditions", json_pack("{s:s}", "uid", uid));
	return o;
}

/* ---- parsing ---- */

static char *dup_str(json_t *o, const char *key)
{
	return xstrdup(json_string_value(json_object_get(o, key)));
}

static int pair_cmp(const void *a, const void *b)
{
	return strcmp(((const struct kube_pair *)a)->name, ((const struct kube_pair *)b)->name);
}

/* A map of strings (labels, annotations) as a sorted array. */
static enum err parse_pairs(json_t *o, const char *what, struct kube_pair **out, size_t *n,
			    struct buf *errmsg)
{
	const char *key;
	json_t *v;
	size_t i = 0;

	*out = NULL;
	*n = 0;
	if (!o || json_is_null(o))
		return ERR_OK;
	if (!json_is_object(o)) {
		buf_setf(errmsg, "metadata.%s is not an object", what);
		return ERR_INVALID;
	}
	*out = xcalloc(json_object_size(o) + 1, sizeof(**out));
	json_object_foreach(o, key, v) {
		if (!json_is_string(v)) {
			buf_setf(errmsg, "metadata.%s[\"%s\"] is not a string", what, key);
			return ERR_INVALID; /* the caller releases what was filled */
		}
		(*out)[i].name = xstrdup(key);
		(*out)[i].value = xstrdup(json_string_value(v));
		*n = ++i;
	}
	qsort(*out, *n, sizeof(**out), pair_cmp);
	return ERR_OK;
}

static const char *find_pair(const struct kube_pair *v, size_t n, const char *name)
{
	struct kube_pair key = { (char *)name, NULL };
	const struct kube_pair *p;

	if (!v || !name)
		return NULL;
	p = bsearch(&key, v, n, sizeof(*v), pair_cmp);
	return p ? p->value : NULL;
}

/* The controller among ownerReferences. */
static void parse_controller(json_t *refs, struct kube_owner *out)
{
	size_t i;
	json_t *r;

	json_array_foreach(refs, i, r) {
		if (!json_is_true(json_object_get(r, "controller")))
			continue;
		out->api_version = dup_str(r, "apiVersion");
		out->kind = dup_str(r, "kind");
		out->name = dup_str(r, "name");
		out->uid = dup_str(r, "uid");
		return;
	}
}

/* A timestamp field: 0 when absent or null, -1 (an error) when malformed. */
static int64_t parse_time_field(json_t *o, const char *key, struct buf *errmsg)
{
	json_t *v = json_object_get(o, key);
	int64_t t;

	if (!v || json_is_null(v))
		return 0;
	if (rfc3339_parse(json_string_value(v), &t) != ERR_OK || t < 0) {
		buf_setf(errmsg, "%s is not an RFC 3339 time", key);
		return -1;
	}
	return t;
}

static enum err parse_pod(json_t *o, struct kube_pod *out, struct buf *errmsg)
{
	json_t *md = json_object_get(o, "metadata");
	json_t *spec = json_object_get(o, "spec"), *status = json_object_get(o, "status");
	json_t *cond;
	size_t i;
	enum err rc;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(md) || !json_is_string(json_object_get(md, "name")) ||
	    !json_is_string(json_object_get(md, "uid"))) {
		buf_setf(errmsg, "pod without metadata.name and metadata.uid");
		return ERR_INVALID;
	}
	out->namespace = dup_str(md, "namespace");
	out->name = dup_str(md, "name");
	out->uid = dup_str(md, "uid");
	out->resource_version = dup_str(md, "resourceVersion");
	out->creation_ms = parse_time_field(md, "creationTimestamp", errmsg);
	out->deletion_ms = parse_time_field(md, "deletionTimestamp", errmsg);
	if (out->creation_ms < 0 || out->deletion_ms < 0) {
		rc = ERR_INVALID;
		goto out;
	}
	rc = parse_pairs(json_object_get(md, "annotations"), "annotations", &out->annotations,
			 &out->nannotations, errmsg);
	if (!rc)
		rc = parse_pairs(json_object_get(md, "labels"), "labels", &out->labels,
				 &out->nlabels, errmsg);
	if (rc)
		goto out;
	parse_controller(json_object_get(md, "ownerReferences"), &out->owner);
	out->phase = dup_str(status, "phase");
	out->node_name = dup_str(spec, "nodeName");
	json_array_foreach(json_object_get(status, "conditions"), i, cond) {
		const char *type = json_string_value(json_object_get(cond, "type"));
		if (type && !strcmp(type, "PodScheduled"))
			out->pod_scheduled_message = dup_str(cond, "message");
	}
out:
	if (rc) {
		struct buf tmp = BUF_INIT;
		(void)buf_printf(&tmp, "pod %s/%s: %s", out->namespace ? out->namespace : "",
				 out->name, buf_str(errmsg));
		buf_setf(errmsg, "%s", buf_str(&tmp));
		buf_release(&tmp);
		kube_pod_release(out);
	}
	return rc;
}

static void free_pairs(struct kube_pair *v, size_t n)
{
	for (size_t i = 0; v && i < n; i++) {
		free(v[i].name);
		free(v[i].value);
	}
	free(v);
}

void kube_owner_release(struct kube_owner *o)
{
	if (!o)
		return;
	free(o->api_version);
	free(o->kind);
	free(o->name);
	free(o->uid);
	memset(o, 0, sizeof(*o));
}

void kube_pod_release(struct kube_pod *p)
{
	if (!p)
		return;
	free(p->namespace);
	free(p->name);
	free(p->uid);
	free(p->resource_version);
	free(p->phase);
	free_pairs(p->annotations, p->nannotations);
	free_pairs(p->labels, p->nlabels);
	kube_owner_release(&p->owner);
	free(p->pod_scheduled_message);
	free(p->node_name);
	memset(p, 0, sizeof(*p));
}

const char *kube_pod_annotation(const struct kube_pod *p, const char *name)
{
	return find_pair(p->annotations, p->nannotations, name);
}

const char *kube_pod_label(const struct kube_pod *p, const char *name)
{
	return find_pair(p->labels, p->nlabels, name);
}

/* Parse an answer that is one pod, prefixing errors with the request. */
static enum err answer_pod(const struct call *k, json_t *o, struct kube_pod *out,
			   struct buf *errmsg)
{
	struct buf why = BUF_INIT;
	enum err rc = parse_pod(o, out, &why);

	if (rc)
		buf_setf(errmsg, "%s %s: invalid answer: %s", k->method, k->path, buf_str(&why));
	buf_release(&why);
	return rc;
}

/* ---- pods ---- */

enum err kube_pod_get(struct kube_client *c, const char *ns, const char *name,
		      struct kube_pod *out, struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	struct call k = { "GET", NULL, NULL, NULL, NULL };
	json_t *o = NULL;
	enum err rc;

	memset(out, 0, sizeof(*out));
	rc = check_names(ns, name, errmsg);
	if (rc)
		return rc;
	(void)buf_printf(&path, "/api/v1/namespaces/%s/pods/%s", ns, name);
	k.path = buf_str(&path);
	rc = kube_call(c, &k, &o, errmsg);
	if (!rc)
		rc = answer_pod(&k, o, out, errmsg);
	json_decref(o);
	buf_release(&path);
	return rc;
}

/* Call fn for every item of one page; *next receives metadata.continue (or NULL). */
static enum err each_item(const struct call *k, json_t *page, kube_pod_fn fn, void *ctx,
			  char **next, struct buf *errmsg)
{
	json_t *items = json_object_get(page, "items"), *item;
	const char *cont = json_string_value(json_object_get(json_object_get(page, "metadata"),
							     "continue"));
	size_t i;
	enum err rc = ERR_OK;

	*next = NULL;
	if (!json_is_array(items) && !json_is_null(items) && items) {
		buf_setf(errmsg, "%s %s: invalid answer: items is not a list", k->method, k->path);
		return ERR_INVALID;
	}
	json_array_foreach(items, i, item) {
		struct kube_pod pod;
		rc = answer_pod(k, item, &pod, errmsg);
		if (rc)
			return rc;
		rc = fn(ctx, &pod);
		if (rc)
			buf_setf(errmsg, "listing stopped by the callback at pod %s/%s: %s",
				 pod.namespace ? pod.namespace : "", pod.name, err_str(rc));
		kube_pod_release(&pod);
		if (rc)
			return rc;
	}
	if (cont && *cont)
		*next = xstrdup(cont);
	return ERR_OK;
}

enum err kube_pods_each(struct kube_client *c, const char *ns, int metadata_only, kube_pod_fn fn,
			void *ctx, struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	struct call k = { "GET", NULL, metadata_only ? META_ACCEPT : NULL, NULL, NULL };
	char *cont = NULL;
	int restarts = 0, pages = 0;
	enum err rc = ERR_OK;

	if (ns && !dns_subdomain(ns)) {
		buf_setf(errmsg, "invalid namespace \"%s\"", ns);
		return ERR_INVALID;
	}
	for (;;) {
		json_t *page = NULL;
		char *next = NULL;

		buf_reset(&path);
		if (ns)
			(void)buf_printf(&path, "/api/v1/namespaces/%s/pods?limit=%d", ns,
					 PAGE_LIMIT);
		else
			(void)buf_printf(&path, "/api/v1/pods?limit=%d", PAGE_LIMIT);
		if (cont) {
			(void)buf_adds(&path, "&continue=");
			http_url_escape(cont, &path);
		}
		k.path = buf_str(&path);
		rc = kube_call(c, &k, &page, errmsg);
		if (rc == ERR_GONE && cont && restarts < MAX_LIST_RESTARTS) {
			/* The continue token expired (etcd compacted): start over. */
			struct log_line *l = log_begin(LOG_WARN, "pod listing expired, restarting");
			log_str(l, "error", buf_str(errmsg));
			log_int(l, "restart", restarts + 1);
			log_end(l);
			restarts++;
			free(cont);
			cont = NULL;
			continue;
		}
		if (!rc)
			rc = each_item(&k, page, fn, ctx, &next, errmsg);
		json_decref(page);
		free(cont);
		cont = next;
		if (rc || !cont)
			break;
		if (++pages >= MAX_PAGES) {
			buf_setf(errmsg, "GET %s: more than %d pages", k.path, MAX_PAGES);
			rc = ERR_INVALID;
			break;
		}
	}
	free(cont);
	buf_release(&path);
	return rc;
}

enum err kube_pod_annotate(struct kube_client *c, const char *ns, const char *name,
			   const struct kube_annotation *changes, size_t n, struct kube_pod *out,
			   struct buf *errmsg)
{
	return kube_pod_annotate_uid(c, ns, name, NULL, changes, n, out, errmsg);
}

enum err kube_pod_annotate_uid(struct kube_client *c, const char *ns, const char *name,
			       const char *uid, const struct kube_annotation *changes, size_t n,
			       struct kube_pod *out, struct buf *errmsg)
{
	return kube_pod_annotate_rv(c, ns, name, uid, NULL, changes, n, out, errmsg);
}

enum err kube_pod_annotate_rv(struct kube_client *c, const char *ns, const char *name,
			      const char *uid, const char *resource_version,
			      const struct kube_annotation *changes, size_t n, struct kube_pod *out,
			      struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	struct call k = { "PATCH", NULL, NULL, MERGE_PATCH, NULL };
	json_t *ann, *o = NULL;
	char *body = NULL;
	enum err rc;

	if (out)
		memset(out, 0, sizeof(*out));
	rc = check_names(ns, name, errmsg);
	if (rc)
		return rc;
	if (!changes || !n) {
		buf_setf(errmsg, "annotate %s/%s: no annotations to change", ns, name);
		return ERR_INVALID;
	}
	ann = json_object();
	for (size_t i = 0; i < n; i++) {
		if (!changes[i].name || !*changes[i].name) {
			json_decref(ann);
			buf_setf(errmsg, "annotate %s/%s: annotation without a name", ns, name);
			return ERR_INVALID;
		}
		json_object_set_new(ann, changes[i].name,
				    changes[i].value ? json_string(changes[i].value) : json_null());
	}
	/*
	 * metadata.uid in the patch is a precondition: another pod under this
	 * name is not patched.  metadata.resourceVersion is optimistic
	 * concurrency: a patch based on a stale read (a late retry) gets 409.
	 */
	{
		json_t *md = json_pack("{s:o}", "annotations", ann);
		if (uid && *uid)
			json_object_set_new(md, "uid", json_string(uid));
		if (resource_version && *resource_version)
			json_object_set_new(md, "resourceVersion", json_string(resource_version));
		body = dump(json_pack("{s:o}", "metadata", md));
	}
	(void)buf_printf(&path, "/api/v1/namespaces/%s/pods/%s", ns, name);
	k.path = buf_str(&path);
	k.body = body;
	rc = kube_call(c, &k, out ? &o : NULL, errmsg);
	if (!rc && out)
		rc = answer_pod(&k, o, out, errmsg);
	json_decref(o);
	free(body);
	buf_release(&path);
	return rc;
}

/* kube_call() of k, no answer read, at path with body (NULL, or freed here); path released. */
static enum err call_path(struct kube_client *c, struct call *k, struct buf *path, char *body,
			  struct buf *errmsg)
{
	enum err rc;

	k->path = buf_str(path);
	k->body = body;
	rc = kube_call(c, k, NULL, errmsg);
	free(body);
	buf_release(path);
	return rc;
}

/*
 * DELETE api/namespaces/ns/plural/name with DeleteOptions (Background, the
 * uid precondition when uid is not empty).
 */
static enum err delete_named(struct kube_client *c, const char *api, const char *plural,
			     const char *ns, const char *name, const char *uid, struct buf *errmsg)
{
	struct call k = { "DELETE", NULL, NULL, "application/json", NULL };
	struct buf path = BUF_INIT;
	char *body;
	enum err rc = check_names(ns, name, errmsg);

	if (rc)
		return rc;
	(void)buf_printf(&path, "%s/namespaces/%s/%s/%s", api, ns, plural, name);
	body = dump(delete_options(uid && *uid ? uid : NULL));
	return call_path(c, &k, &path, body, errmsg);
}

enum err kube_pod_delete(struct kube_client *c, const char *ns, const char *name,
			 const char *uid, struct buf *errmsg)
{
	enum err rc = check_names(ns, name, errmsg);

	if (rc == ERR_OK && (!uid || !*uid)) {
		buf_setf(errmsg, "delete pod %s/%s: no uid precondition", ns, name);
		rc = ERR_INVALID;
	}
	return rc ? rc : delete_named(c, "/api/v1", "pods", ns, name, uid, errmsg);
}

enum err kube_job_delete(struct kube_client *c, const char *ns, const char *name,
			 const char *uid, struct buf *errmsg)
{
	return delete_named(c, "/apis/batch/v1", "jobs", ns, name, uid, errmsg);
}

/* ---- events ---- */

static json_t *event_json(struct kube_client *c, const struct kube_event *ev)
{
	char ts[48];
	int64_t t = ev->time_ms ? ev->time_ms : kube_now(c);
	const char *msg = ev->message ? ev->message : "";
	size_t msg_len = utf8_cut(msg, strlen(msg), MAX_EVENT_MESSAGE);
	struct buf name = BUF_INIT;
	json_t *inv, *o;

	/* client-go's recorder: "{object}.{UnixNano in hex}"; seq keeps names unique. */
	(void)buf_printf(&name, "%s.%llx", ev->pod_name,
			 (unsigned long long)t * 1000000ULL + (c->event_seq++ % 1000000ULL));
	rfc3339_format(t, ts);
	inv = json_pack("{s:s, s:s, s:s, s:s, s:s}", "apiVersion", "v1", "kind", "Pod",
			"namespace", ev->namespace, "name", ev->pod_name, "uid", ev->pod_uid);
	if (ev->pod_resource_version)
		json_object_set_new(inv, "resourceVersion", json_string(ev->pod_resource_version));
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:o, s:s, s:s%, s:s, s:{s:s}, s:s, s:s, s:s, s:i}",
		      "apiVersion", "v1", "kind", "Event", "metadata", "name", buf_str(&name),
		      "namespace", ev->namespace, "involvedObject", inv, "reason", ev->reason,
		      "message", msg, msg_len, "type", ev->type, "source", "component", DEFAULT_UA,
		      "reportingComponent", DEFAULT_UA, "firstTimestamp", ts, "lastTimestamp", ts,
		      "count", 1);
	buf_release(&name);
	return o;
}

enum err kube_event_create(struct kube_client *c, const struct kube_event *ev,
			   struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	struct call k = { "POST", NULL, NULL, "application/json", NULL };
	char *body;
	enum err rc = check_names(ev->namespace, ev->pod_name, errmsg);

	if (rc)
		return rc;
	if (!ev->type || (strcmp(ev->type, "Normal") && strcmp(ev->type, "Warning"))) {
		buf_setf(errmsg, "event on %s/%s: type must be Normal or Warning, not \"%s\"",
			 ev->namespace, ev->pod_name, ev->type ? ev->type : "");
		return ERR_INVALID;
	}
	if (!ev->reason || !*ev->reason || !ev->pod_uid || !*ev->pod_uid) {
		buf_setf(errmsg, "event on %s/%s: reason and pod uid are required", ev->namespace,
			 ev->pod_name);
		return ERR_INVALID;
	}
	if (!utf8_valid(ev->message ? ev->message : "", ev->message ? strlen(ev->message) : 0)) {
		buf_setf(errmsg, "event on %s/%s: message is not UTF-8", ev->namespace,
			 ev->pod_name);
		return ERR_INVALID;
	}
	body = dump(event_json(c, ev));
	(void)buf_printf(&path, "/api/v1/namespaces/%s/events", ev->namespace);
	return call_path(c, &k, &path, body, errmsg);
}

/* ---- scale and owners ---- */

enum err kube_scale(struct kube_client *c, enum kube_workload kind, const char *ns,
		    const char *name, int replicas, struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	struct call k = { "PATCH", NULL, NULL, MERGE_PATCH, NULL };
	char *body;
	enum err rc = check_names(ns, name, errmsg);

	if (rc)
		return rc;
	if (replicas < 0) {
		buf_setf(errmsg, "scale %s/%s: replicas %d < 0", ns, name, replicas);
		return ERR_INVALID;
	}
	(void)buf_printf(&path, "/apis/apps/v1/namespaces/%s/%s/%s/scale", ns,
			 kind == KUBE_STATEFULSET ? "statefulsets" : "deployments", name);
	body = dump(json_pack("{s:{s:i}}", "spec", "replicas", replicas));
	return call_path(c, &k, &path, body, errmsg);
}

static void copy_owner(const struct kube_owner *in, struct kube_owner *out)
{
	out->api_version = xstrdup(in->api_version);
	out->kind = xstrdup(in->kind);
	out->name = xstrdup(in->name);
	out->uid = xstrdup(in->uid);
}

enum err kube_pod_controller(struct kube_client *c, const struct kube_pod *pod,
			     struct kube_owner *out, struct buf *errmsg)
{
	const struct kube_owner *o = &pod->owner;
	struct buf path = BUF_INIT;
	struct call k = { "GET", NULL, NULL, NULL, NULL };
	json_t *rs = NULL, *md;
	const char *uid;
	enum err rc = ERR_OK;

	memset(out, 0, sizeof(*out));
	if (!o->kind || strcmp(o->kind, "ReplicaSet") || !o->api_version ||
	    strcmp(o->api_version, "apps/v1")) {
		copy_owner(o, out);
		return ERR_OK;
	}
	rc = check_names(pod->namespace, o->name, errmsg);
	if (rc)
		return rc;
	(void)buf_printf(&path, "/apis/apps/v1/namespaces/%s/replicasets/%s", pod->namespace,
			 o->name);
	k.path = buf_str(&path);
	rc = kube_call(c, &k, &rs, errmsg);
	if (rc)
		goto out;
	md = json_object_get(rs, "metadata");
	uid = json_string_value(json_object_get(md, "uid"));
	if (!uid || (o->uid && strcmp(uid, o->uid))) {
		buf_setf(errmsg, "GET %s: replicaset uid %s, the pod's reference says %s", k.path,
			 uid ? uid : "(none)", o->uid ? o->uid : "(none)");
		rc = ERR_CONFLICT;
		goto out;
	}
	parse_controller(json_object_get(md, "ownerReferences"), out);
	if (!out->kind || strcmp(out->kind, "Deployment")) {
		kube_owner_release(out);
		copy_owner(o, out);
	}
out:
	json_decref(rs);
	buf_release(&path);
	return rc;
}

/* ---- leases ---- */

void kube_lease_release(struct kube_lease *l)
{
	if (!l)
		return;
	free(l->namespace);
	free(l->name);
	free(l->resource_version);
	free(l->holder);
	memset(l, 0, sizeof(*l));
}

static enum err parse_lease(const struct call *k, json_t *o, struct kube_lease *out,
			    struct buf *errmsg)
{
	json_t *md = json_object_get(o, "metadata"), *spec = json_object_get(o, "spec");
	struct buf why = BUF_INIT;
	enum err rc = ERR_OK;

	memset(out, 0, sizeof(*out));
	out->namespace = dup_str(md, "namespace");
	out->name = dup_str(md, "name");
	out->resource_version = dup_str(md, "resourceVersion");
	out->holder = dup_str(spec, "holderIdentity");
	out->duration_s = json_integer_value(json_object_get(spec, "leaseDurationSeconds"));
	out->transitions = json_integer_value(json_object_get(spec, "leaseTransitions"));
	out->acquire_ms = parse_time_field(spec, "acquireTime", &why);
	out->renew_ms = parse_time_field(spec, "renewTime", &why);
	if (!out->name || !out->resource_version || out->acquire_ms < 0 || out->renew_ms < 0) {
		buf_setf(errmsg, "%s %s: invalid lease: %s", k->method, k->path,
			 why.len ? buf_str(&why) : "no metadata.name or resourceVersion");
		kube_lease_release(out);
		rc = ERR_INVALID;
	}
	buf_release(&why);
	return rc;
}

static json_t *lease_json(const struct kube_lease *in)
{
	char ts[48];
	json_t *spec = json_object();
	json_t *md = json_pack("{s:s, s:s}", "name", in->name, "namespace", in->namespace);

	if (in->holder)
		json_object_set_new(spec, "holderIdentity", json_string(in->holder));
	json_object_set_new(spec, "leaseDurationSeconds", json_integer(in->duration_s));
	if (in->acquire_ms) {
		rfc3339_format_us(in->acquire_ms, ts);
		json_object_set_new(spec, "acquireTime", json_string(ts));
	}
	if (in->renew_ms) {
		rfc3339_format_us(in->renew_ms, ts);
		json_object_set_new(spec, "renewTime", json_string(ts));
	}
	json_object_set_new(spec, "leaseTransitions", json_integer(in->transitions));
	if (in->resource_version)
		json_object_set_new(md, "resourceVersion", json_string(in->resource_version));
	return json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", "coordination.k8s.io/v1", "kind",
			 "Lease", "metadata", md, "spec", spec);
}

static enum err lease_call(struct kube_client *c, struct call *k, const char *ns,
			   const char *name, const struct kube_lease *in, struct kube_lease *out,
			   struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	char *body = NULL;
	json_t *o = NULL;
	enum err rc;

	memset(out, 0, sizeof(*out));
	rc = check_names(ns, name, errmsg);
	if (rc)
		return rc;
	(void)buf_printf(&path, "/apis/coordination.k8s.io/v1/namespaces/%s/leases", ns);
	if (strcmp(k->method, "POST"))
		(void)buf_printf(&path, "/%s", name);
	if (in)
		body = dump(lease_json(in));
	k->path = buf_str(&path);
	k->body = body;
	rc = kube_call(c, k, &o, errmsg);
	if (!rc)
		rc = parse_lease(k, o, out, errmsg);
	json_decref(o);
	free(body);
	buf_release(&path);
	return rc;
}

enum err kube_lease_get(struct kube_client *c, const char *ns, const char *name,
			struct kube_lease *out, struct buf *errmsg)
{
	struct call k = { "GET", NULL, NULL, NULL, NULL };

	return lease_call(c, &k, ns, name, NULL, out, errmsg);
}

enum err kube_lease_create(struct kube_client *c, const struct kube_lease *in,
			   struct kube_lease *out, struct buf *errmsg)
{
	struct call k = { "POST", NULL, NULL, "application/json", NULL };

	return lease_call(c, &k, in->namespace, in->name, in, out, errmsg);
}

enum err kube_lease_update(struct kube_client *c, const struct kube_lease *in,
			   struct kube_lease *out, struct buf *errmsg)
{
	struct call k = { "PUT", NULL, NULL, "application/json", NULL };

	if (!in->resource_version || !*in->resource_version) {
		memset(out, 0, sizeof(*out));
		buf_setf(errmsg, "update lease %s/%s: no resourceVersion",
			 in->namespace ? in->namespace : "", in->name ? in->name : "");
		return ERR_INVALID;
	}
	return lease_call(c, &k, in->namespace, in->name, in, out, errmsg);
}
