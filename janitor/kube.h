/*
 * kube.h - Kubernetes REST client for the janitor: pods (get, paged list,
 * annotation merge patch, delete with a uid precondition), core/v1 Events,
 * Job delete, Deployment/StatefulSet scale, owner resolution, and
 * coordination.k8s.io/v1 Leases.  Raw REST over core/http_client (libcurl)
 * and jansson, following the Kubernetes API reference (kubernetes.io/docs/
 * reference/kubernetes-api/).  Callers see our structs, never JSON.
 *
 * A kube_client is used by one thread at a time (it holds one connection
 * cache and the credential cache).
 */
#ifndef AB_KUBE_H
#define AB_KUBE_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"
#include "janitor/kubeconfig.h"

struct kube_client;

/* kube_options.timeout_ms when 0: the longest one request may last. */
#define KUBE_DEFAULT_TIMEOUT_MS INT64_C(30000)

/* Knobs; every field may be left zero. */
struct kube_options {
	const char *user_agent;       /* NULL: "alertbridge" */
	int64_t timeout_ms;           /* per request; 0 means KUBE_DEFAULT_TIMEOUT_MS */
	int64_t max_retry_after_ms;   /* longest Retry-After honoured; 0 means 10 s */
	int64_t exec_timeout_ms;      /* exec plugin run; 0 means 60 s */
	/* Test hooks: clock and sleep in milliseconds; NULL for the real ones. */
	int64_t (*now_ms)(void *ctx);
	void (*sleep_ms)(void *ctx, int64_t ms);
	void *clock_ctx;
};

/*
 * Credentials, on every request:
 *   - token_file (in-cluster, kubeconfig tokenFile) is re-read when its
 *     mtime, inode or size changes, and at least every 60 s, so rotated
 *     service account tokens are picked up; a failed re-read keeps the
 *     previous token and logs a warning;
 *   - an exec plugin runs on first use and again once expirationTimestamp
 *     has passed; a credential with client certificate data re-creates the
 *     connection with that identity;
 *   - a 401 answer re-reads the token file or re-runs the plugin and repeats
 *     the request once.
 */

/*
 * Build a client from cfg, whose contents are moved into the client (on
 * return *cfg is zeroed, as by kube_config_release()).  opts may be NULL.
 * Never NULL.
 */
struct kube_client *kube_client_new(struct kube_config *cfg, const struct kube_options *opts);

/*
 * kube_config_parse(kubeconfig, context) or, with kubeconfig NULL or "",
 * kube_config_incluster(NULL), then kube_client_new(cfg, NULL).  *out is
 * the new client (caller frees) or NULL on error.  Errors as those two.
 */
enum err kube_config_load(const char *kubeconfig, const char *context,
			  struct kube_client **out, struct buf *errmsg) WARN_UNUSED;

/* Free; c may be NULL. */
void kube_client_free(struct kube_client *c);
/* The configuration's namespace (context or service account); never NULL. */
const char *kube_client_namespace(const struct kube_client *c);
/* "kubeconfig FILE (context NAME)" or "in-cluster"; never NULL. */
const char *kube_client_source(const struct kube_client *c);

/*
 * Errors every call below can return, errmsg naming the method and path and,
 * for answers, "<code> <Status.reason>: <Status.message>" from the Status
 * object the API server sent (or the start of the body):
 *   ERR_INVALID   400, 422, other 4xx; a namespace or name that is not a
 *                 DNS subdomain (checked before any request: nothing is
 *                 escaped into paths); a 2xx answer that is not the
 *                 documented JSON
 *   ERR_AUTH      401, 403; a token file or exec plugin that fails
 *   ERR_NOTFOUND  404
 *   ERR_CONFLICT  409 (a uid precondition or resourceVersion that failed)
 *   ERR_GONE      410
 *   ERR_RETRY     429, 5xx, timeouts and connection failures.  A 429 or 503
 *                 with Retry-After (delta-seconds or an HTTP-date, RFC 9110
 *                 10.2.3: http_retry_after_s()) of at most max_retry_after_ms
 *                 is waited out and the request repeated once.
 *   ERR_TOOBIG    an answer over 64 MiB
 */

/* A name/value pair, owned by the struct that holds it. */
struct kube_pair {
	char *name;
	char *value;
};

/* A controller reference; all NULL when there is none. */
struct kube_owner {
	char *api_version;  /* "apps/v1", "batch/v1", ... */
	char *kind;         /* "ReplicaSet", "StatefulSet", "Job", "Deployment", ... */
	char *name;
	char *uid;
};

/* A pod as the janitor needs it.  Strings are owned; NULL when absent. */
struct kube_pod {
	char *namespace;
	char *name;
	char *uid;
	char *resource_version;
	int64_t creation_ms;         /* metadata.creationTimestamp */
	int64_t deletion_ms;         /* metadata.deletionTimestamp; 0 when not being deleted */
	char *phase;                 /* status.phase; NULL in metadata-only listings */
	struct kube_pair *annotations;  /* sorted by name (strcmp) */
	size_t nannotations;
	struct kube_pair *labels;       /* sorted by name (strcmp) */
	size_t nlabels;
	struct kube_owner owner;     /* the ownerReference with controller: true */
	char *pod_scheduled_message; /* status.conditions[type=PodScheduled].message */
	char *node_name;             /* spec.nodeName; NULL when unscheduled or metadata-only */
};

/* Free what p holds and zero it; p may be NULL. */
void kube_pod_release(struct kube_pod *p);
/* Free what o holds and zero it; o may be NULL. */
void kube_owner_release(struct kube_owner *o);
/* The value of annotation / label name, or NULL; valid while p is. */
/*
 * Non-zero when s can name a pod (a DNS subdomain of RFC 1123 as Kubernetes
 * validates object names: lower-case alphanumerics, '-' and '.', starting
 * and ending alphanumeric, at most 253 bytes), so it is safe in an API path.
 * NULL gives 0.
 */
int kube_name_valid(const char *s);
/*
 * Non-zero when s can name a namespace (an RFC 1123 DNS label: lower-case
 * alphanumerics and '-', starting and ending alphanumeric, at most 63 bytes).
 * NULL gives 0.
 */
int kube_namespace_valid(const char *s);

const char *kube_pod_annotation(const struct kube_pod *p, const char *name);
const char *kube_pod_label(const struct kube_pod *p, const char *name);

/*
 * GET /api/v1/namespaces/{ns}/pods/{name} into *out (overwritten; the
 * caller releases it; zeroed on error).
 */
enum err kube_pod_get(struct kube_client *c, const char *ns, const char *name,
		      struct kube_pod *out, struct buf *errmsg) WARN_UNUSED;

/*
 * Called once per listed pod; the pod is valid during the call only.
 * A return other than ERR_OK stops the listing, which returns that code.
 */
typedef enum err (*kube_pod_fn)(void *ctx, const struct kube_pod *pod);

/*
 * List pods page by page: GET /api/v1/pods (ns NULL: all namespaces) or
 * /api/v1/namespaces/{ns}/pods, ?limit=500, then &continue=<token> until
 * metadata.continue is empty (at most 10000 pages).  metadata_only sends
 * Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1
 * (phase and node_name are then NULL).  One page is held at a time, so
 * memory is flat in the number of pods.  A 410 Expired continue token
 * restarts the listing from the first page, at most 3 times: fn then sees
 * some pods again.  Errors: the common ones, and fn's code
 * ("listing stopped by the callback at pod NS/NAME" in errmsg).
 */
enum err kube_pods_each(struct kube_client *c, const char *ns, int metadata_only, kube_pod_fn fn,
			void *ctx, struct buf *errmsg) WARN_UNUSED;

/* An annotation change: value NULL removes it (JSON null in the merge patch). */
struct kube_annotation {
	const char *name;
	const char *value;
};

/*
 * PATCH /api/v1/namespaces/{ns}/pods/{name}, Content-Type:
 * application/merge-patch+json (RFC 7386), body
 * {"metadata":{"annotations":{NAME: VALUE or null, ...}}}: only the listed
 * annotations change, nothing else of the pod.  n must be at least 1.  out
 * may be NULL; else it receives the patched pod.
 */
enum err kube_pod_annotate(struct kube_client *c, const char *ns, const char *name,
			   const struct kube_annotation *changes, size_t n, struct kube_pod *out,
			   struct buf *errmsg) WARN_UNUSED;

/*
 * kube_pod_annotate() on the pod instance uid only: the merge patch also
 * carries {"metadata":{"uid":UID}}, which the API server treats as a
 * precondition (as the kubelet's pod status patches do, kubernetes#86320):
 * ERR_CONFLICT (409 "Precondition failed: UID in precondition") when a pod of
 * another uid now has that name, so it is never patched.  uid NULL or "":
 * exactly kube_pod_annotate().
 */
enum err kube_pod_annotate_uid(struct kube_client *c, const char *ns, const char *name,
			       const char *uid, const struct kube_annotation *changes, size_t n,
			       struct kube_pod *out, struct buf *errmsg) WARN_UNUSED;
/*
 * As kube_pod_annotate_uid(), with resource_version (NULL or "": none) sent
 * as metadata.resourceVersion: the API server then applies the patch only
 * to that version of the pod, else 409 (ERR_CONFLICT) — for a change
 * computed from a read, so a late duplicate of an earlier attempt cannot
 * land over a newer one.
 */
enum err kube_pod_annotate_rv(struct kube_client *c, const char *ns, const char *name,
			      const char *uid, const char *resource_version,
			      const struct kube_annotation *changes, size_t n, struct kube_pod *out,
			      struct buf *errmsg) WARN_UNUSED;

/*
 * DELETE /api/v1/namespaces/{ns}/pods/{name} with DeleteOptions
 * {"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Background",
 * "preconditions":{"uid":UID}}: the pod's own grace period applies (never 0).
 * uid is required (ERR_INVALID when NULL or empty).  ERR_CONFLICT when the
 * pod now has another uid; ERR_NOTFOUND when gone.
 */
enum err kube_pod_delete(struct kube_client *c, const char *ns, const char *name,
			 const char *uid, struct buf *errmsg) WARN_UNUSED;

/* A core/v1 Event about a pod. */
struct kube_event {
	const char *namespace;          /* the pod's */
	const char *pod_name;
	const char *pod_uid;            /* involvedObject.uid; required */
	const char *pod_resource_version;  /* involvedObject.resourceVersion or NULL */
	const char *type;               /* "Normal" or "Warning" */
	const char *reason;             /* UpperCamelCase, e.g. "JanitorMarked"; required */
	const char *message;            /* cut to 1024 bytes at a UTF-8 boundary */
	int64_t time_ms;                /* first/lastTimestamp; 0: now */
};

/*
 * POST /api/v1/namespaces/{ns}/events: an Event named "{pod}.{hex ns}" (as
 * client-go's recorder names them) with involvedObject {apiVersion v1, kind
 * Pod, namespace, name, uid, resourceVersion}, reason, message, type,
 * source.component and reportingComponent "alertbridge", firstTimestamp =
 * lastTimestamp = time, count 1.  ERR_INVALID for a type other than Normal
 * or Warning, or a missing reason or uid.
 */
enum err kube_event_create(struct kube_client *c, const struct kube_event *ev,
			   struct buf *errmsg) WARN_UNUSED;

/*
 * DELETE /apis/batch/v1/namespaces/{ns}/jobs/{name} with propagationPolicy
 * Background (the Job's pods go too) and, when uid is not NULL,
 * preconditions.uid.
 */
enum err kube_job_delete(struct kube_client *c, const char *ns, const char *name,
			 const char *uid, struct buf *errmsg) WARN_UNUSED;

/* Workloads with a scale subresource the janitor may scale. */
enum kube_workload { KUBE_DEPLOYMENT, KUBE_STATEFULSET };

/*
 * PATCH /apis/apps/v1/namespaces/{ns}/{deployments|statefulsets}/{name}/scale,
 * application/merge-patch+json {"spec":{"replicas":N}}.  replicas >= 0.
 */
enum err kube_scale(struct kube_client *c, enum kube_workload kind, const char *ns,
		    const char *name, int replicas, struct buf *errmsg) WARN_UNUSED;

/*
 * The workload to act on for pod (whose controller reference is pod->owner):
 * a ReplicaSet is looked up (GET /apis/apps/v1/namespaces/{ns}/replicasets/
 * {name}) and replaced by its controlling Deployment when it has one; a Job,
 * StatefulSet or anything else is returned as is; a bare pod gives an owner
 * with all fields NULL.  *out is overwritten and owned by the caller.
 * ERR_CONFLICT when the ReplicaSet found has another uid than the reference.
 */
enum err kube_pod_controller(struct kube_client *c, const struct kube_pod *pod,
			     struct kube_owner *out, struct buf *errmsg) WARN_UNUSED;

/* A coordination.k8s.io/v1 Lease (leader election). */
struct kube_lease {
	char *namespace;
	char *name;
	char *resource_version;   /* from the server; required by kube_lease_update() */
	char *holder;             /* spec.holderIdentity or NULL */
	int64_t duration_s;       /* spec.leaseDurationSeconds */
	int64_t acquire_ms;       /* spec.acquireTime (MicroTime); 0 when unset */
	int64_t renew_ms;         /* spec.renewTime (MicroTime); 0 when unset */
	int64_t transitions;      /* spec.leaseTransitions */
};

/* Free what l holds and zero it; l may be NULL. */
void kube_lease_release(struct kube_lease *l);

/* GET /apis/coordination.k8s.io/v1/namespaces/{ns}/leases/{name} into *out. */
enum err kube_lease_get(struct kube_client *c, const char *ns, const char *name,
			struct kube_lease *out, struct buf *errmsg) WARN_UNUSED;
/*
 * POST /apis/coordination.k8s.io/v1/namespaces/{in->namespace}/leases with
 * in's spec (in is borrowed); *out receives the created lease.
 * ERR_CONFLICT when it already exists (409 AlreadyExists).
 */
enum err kube_lease_create(struct kube_client *c, const struct kube_lease *in,
			   struct kube_lease *out, struct buf *errmsg) WARN_UNUSED;
/*
 * PUT .../leases/{in->name} with metadata.resourceVersion =
 * in->resource_version (required: ERR_INVALID without), so a concurrent
 * writer makes it fail with ERR_CONFLICT; *out receives the stored lease.
 */
enum err kube_lease_update(struct kube_client *c, const struct kube_lease *in,
			   struct kube_lease *out, struct buf *errmsg) WARN_UNUSED;

#endif
