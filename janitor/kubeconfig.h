/*
 * kubeconfig.h - where the Kubernetes client finds the API server and its
 * credentials: a kubeconfig file (clientcmd v1, read with libyaml), the
 * in-cluster service account, and exec credential plugins
 * (client.authentication.k8s.io/v1).  The configuration half of the kube_
 * module; janitor/kube.h turns a struct kube_config into a client.
 */
#ifndef AB_KUBECONFIG_H
#define AB_KUBECONFIG_H

#include <stddef.h>
#include <stdint.h>

#include "core/buf.h"
#include "core/err.h"

/* The in-cluster service account directory (token, ca.crt, namespace). */
#define KUBE_SA_DIR "/var/run/secrets/kubernetes.io/serviceaccount"

/* An exec credential plugin from a kubeconfig user's "exec" block. */
struct kube_exec {
	char *api_version;     /* client.authentication.k8s.io/v1 (or v1beta1) */
	char *command;         /* as written; relative paths with a '/' resolved against dir */
	char **argv;           /* NULL-terminated: command, then "args" */
	char **env;            /* NULL-terminated "NAME=value" from "env"; never NULL */
	char *install_hint;    /* "installHint" or NULL; added to "not found" errors */
	int provide_cluster_info;  /* "provideClusterInfo": pass server and CA to the plugin */
};

/*
 * A resolved configuration: one cluster and one user.  Every string is owned
 * (malloc'd) or NULL.  Relative file paths of a kubeconfig are already
 * resolved against the kubeconfig's directory, as kubectl does.
 */
struct kube_config {
	char *server;            /* "https://host:port" without trailing '/' */
	char *namespace;         /* the context's or service account's namespace; "default" */
	char *token;             /* static bearer token ("token") or NULL */
	char *token_file;        /* bearer token file, re-read as it rotates ("tokenFile",
				  * in-cluster token); wins over token */
	char *ca_file;           /* "certificate-authority" or in-cluster ca.crt; NULL: system */
	char *ca_pem;            /* decoded "certificate-authority-data"; wins over ca_file */
	char *ca_data_b64;       /* the same, base64 as written (for provideClusterInfo) */
	char *client_cert_file;  /* "client-certificate" */
	char *client_key_file;   /* "client-key" */
	char *client_cert_pem;   /* decoded "client-certificate-data" */
	char *client_key_pem;    /* decoded "client-key-data" */
	int insecure;            /* "insecure-skip-tls-verify: true" */
	struct kube_exec *exec;  /* exec plugin or NULL */
	char *source;            /* for messages: "FILE (context NAME)" or "in-cluster" */
};

#define KUBE_CONFIG_INIT { 0 }

/* Free everything cfg holds and zero it; cfg may be NULL. */
void kube_config_release(struct kube_config *cfg);

/*
 * Read the kubeconfig at path and resolve context (NULL or "": the file's
 * current-context) to its cluster and user, into *out (overwritten, owned by
 * the caller; empty on error).  Supported: cluster server,
 * certificate-authority(-data), insecure-skip-tls-verify; user token,
 * tokenFile, client-certificate(-data), client-key(-data), exec.  Errors name
 * the file, the line and the key (libyaml marks):
 *   ERR_IO       the file, or a file it names (tokenFile aside), cannot be read
 *   ERR_INVALID  not YAML, wrong types, a missing or unknown context, cluster
 *                or user, no server, bad base64, auth-provider or
 *                username/password users (not supported), exec without
 *                command or with interactiveMode Always
 */
enum err kube_config_parse(const char *path, const char *context, struct kube_config *out,
			   struct buf *errmsg) WARN_UNUSED;

/*
 * The in-cluster configuration (client-go's rest.InClusterConfig): server
 * https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT (IPv6 hosts in
 * brackets), token_file sa_dir/token, ca_file sa_dir/ca.crt when present,
 * namespace from sa_dir/namespace ("default" when absent).  sa_dir NULL means
 * KUBE_SA_DIR.  Errors: ERR_INVALID when the variables are unset (not in a
 * cluster); ERR_IO when the token cannot be read or is empty.
 */
enum err kube_config_incluster(const char *sa_dir, struct kube_config *out,
			       struct buf *errmsg) WARN_UNUSED;

/* What an exec plugin returned (ExecCredential status). */
struct kube_exec_credential {
	char *token;            /* "token" or NULL */
	char *client_cert_pem;  /* "clientCertificateData" or NULL */
	char *client_key_pem;   /* "clientKeyData" or NULL */
	int64_t expiry_ms;      /* "expirationTimestamp"; 0: none given (valid until a 401) */
};

/* Free what cred holds and zero it; cred may be NULL. */
void kube_exec_credential_release(struct kube_exec_credential *cred);

/*
 * Run cfg->exec as client-go does: stdin /dev/null, the process environment
 * plus the plugin's env plus KUBERNETES_EXEC_INFO (an ExecCredential with
 * spec.interactive false and, with provideClusterInfo, spec.cluster server,
 * certificate-authority-data and insecure-skip-tls-verify), stdout parsed as
 * an ExecCredential of the same apiVersion.  The plugin is killed after
 * timeout_ms (0 means 60 s).  *out is overwritten.  Errors, with the
 * plugin's stderr (first 1 KiB) in errmsg:
 *   ERR_AUTH     not found (with installHint), killed, timed out or exit
 *                status not 0
 *   ERR_INVALID  stdout is not such an ExecCredential, or has neither a
 *                token nor both certificate and key, or a bad timestamp
 */
enum err kube_exec_run(const struct kube_config *cfg, int64_t timeout_ms,
		       struct kube_exec_credential *out, struct buf *errmsg) WARN_UNUSED;

/*
 * Read a bearer token file (at most 64 KiB) into out, trailing blanks and
 * newlines removed.  ERR_IO when unreadable, too big or empty.
 */
enum err kube_token_read(const char *path, struct buf *out, struct buf *errmsg) WARN_UNUSED;

#endif
