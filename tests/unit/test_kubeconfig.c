/*
 * test_kubeconfig.c - kubeconfig variants (token, client certificates as
 * files and *-data, named and current contexts, errors with lines), the
 * in-cluster configuration and exec credential plugins (small shell
 * scripts).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/log.h"
#include "janitor/kube.h"
#include "janitor/kubeconfig.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/tmpdir.h"

#define T0 1714564800000LL /* 2024-05-01T12:00:00Z */
/* base64 of "CA PEM\n", "CERT PEM\n", "KEY PEM\n" */
#define CA_B64 "Q0EgUEVNCg=="
#define CERT_B64 "Q0VSVCBQRU0K"
#define KEY_B64 "S0VZIFBFTQo="

struct fixture {
	char dir[64];
	char path[128];
	char text[8192];
	struct kube_config cfg;
	struct buf err;
	int64_t now;
};

static int setup(void **state)
{
	struct fixture *fx = calloc(1, sizeof(*fx));

	log_setup(LOG_ERROR, LOG_LOGFMT);
	snprintf(fx->dir, sizeof(fx->dir), "/tmp/test_kubeconfig.XXXXXX");
	assert_non_null(mkdtemp(fx->dir));
	snprintf(fx->path, sizeof(fx->path), "%s/config", fx->dir);
	buf_init(&fx->err, 0);
	fx->now = T0;
	*state = fx;
	return 0;
}

static void put(struct fixture *fx, const char *name, const char *text, int mode)
{
	char p[160];

	snprintf(p, sizeof(p), "%s/%s", fx->dir, name);
	tfx_write_file(NULL, p, text);
	assert_int_equal(chmod(p, (mode_t)mode), 0);
}

static int teardown(void **state)
{
	struct fixture *fx = *state;
	const char *names[] = { "config", "ca.crt", "client.crt", "client.key", "plugin.sh",
				"runs", "token", "namespace" };
	char p[160];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		snprintf(p, sizeof(p), "%s/%s", fx->dir, names[i]);
		unlink(p);
	}
	rmdir(fx->dir);
	kube_config_release(&fx->cfg);
	buf_release(&fx->err);
	free(fx);
	return 0;
}

static const char *const BASE =
	"apiVersion: v1\n"
	"kind: Config\n"
	"current-context: dev\n"
	"clusters:\n"
	"- name: dev-cluster\n"
	"  cluster:\n"
	"    server: https://dev.example:6443/\n"
	"    certificate-authority-data: " CA_B64 "\n"
	"- name: prod-cluster\n"
	"  cluster:\n"
	"    server: https://prod.example\n"
	"    insecure-skip-tls-verify: true\n"
	"contexts:\n"
	"- name: dev\n"
	"  context: {cluster: dev-cluster, user: dev-user, namespace: ml-team}\n"
	"- name: prod\n"
	"  context:\n"
	"    cluster: prod-cluster\n"
	"    user: prod-user\n"
	"users:\n"
	"- name: dev-user\n"
	"  user:\n"
	"    token: dev-token\n"
	"- name: prod-user\n"
	"  user:\n"
	"    client-certificate: client.crt\n"
	"    client-key: /DIR/client.key\n";

/* BASE with /DIR replaced by the temp dir, written as the kubeconfig. */
static void write_config(struct fixture *fx, const char *text)
{
	const char *at = strstr(text, "/DIR/");
	char out[8192];

	if (at)
		snprintf(out, sizeof(out), "%.*s%s%s", (int)(at - text), text, fx->dir, at + 4);
	else
		snprintf(out, sizeof(out), "%s", text);
	put(fx, "config", out, 0600);
}

static void current_context_with_token(void **state)
{
	struct fixture *fx = *state;

	write_config(fx, BASE);
	assert_int_equal(kube_config_parse(fx->path, NULL, &fx->cfg, &fx->err), ERR_OK);
	assert_string_equal(fx->cfg.server, "https://dev.example:6443");
	assert_string_equal(fx->cfg.token, "dev-token");
	assert_null(fx->cfg.token_file);
	assert_string_equal(fx->cfg.namespace, "ml-team");
	assert_string_equal(fx->cfg.ca_pem, "CA PEM\n");
	assert_string_equal(fx->cfg.ca_data_b64, CA_B64);
	assert_false(fx->cfg.insecure);
	assert_null(fx->cfg.exec);
	assert_null(fx->cfg.client_cert_file);
}

static void named_context_with_client_cert_files(void **state)
{
	struct fixture *fx = *state;
	char want[160];

	write_config(fx, BASE);
	put(fx, "client.crt", "CERT", 0600);
	put(fx, "client.key", "KEY", 0600);
	assert_int_equal(kube_config_parse(fx->path, "prod", &fx->cfg, &fx->err), ERR_OK);
	assert_string_equal(fx->cfg.server, "https://prod.example");
	assert_true(fx->cfg.insecure);
	assert_string_equal(fx->cfg.namespace, "default");
	assert_null(fx->cfg.token);
	assert_null(fx->cfg.ca_pem);
	snprintf(want, sizeof(want), "%s/client.crt", fx->dir); /* relative to the kubeconfig */
	assert_string_equal(fx->cfg.client_cert_file, want);
	snprintf(want, sizeof(want), "%s/client.key", fx->dir);
	assert_string_equal(fx->cfg.client_key_file, want);
	snprintf(want, sizeof(want), "%s (context prod)", fx->path);
	assert_string_equal(fx->cfg.source, want);
}

static void missing_client_cert_file_is_io(void **state)
{
	struct fixture *fx = *state;
	char want[256];

	write_config(fx, BASE);
	put(fx, "client.key", "KEY", 0600);
	assert_int_equal(kube_config_parse(fx->path, "prod", &fx->cfg, &fx->err), ERR_IO);
	snprintf(want, sizeof(want), "kubeconfig %s: cannot read %s/client.crt: "
		 "No such file or directory", fx->path, fx->dir);
	assert_string_equal(buf_str(&fx->err), want);
	assert_null(fx->cfg.server);
}

static void cert_and_key_data_token_file(void **state)
{
	struct fixture *fx = *state;
	char want[160];

	write_config(fx, "current-context: c\n"
			 "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
			 "clusters: [{name: k, cluster: {server: 'https://10.0.0.1',\n"
			 "  certificate-authority: ca.crt}}]\n"
			 "users:\n"
			 "- name: u\n"
			 "  user:\n"
			 "    client-certificate-data: " CERT_B64 "\n"
			 "    client-key-data: " KEY_B64 "\n"
			 "    tokenFile: token\n");
	put(fx, "ca.crt", "CA", 0600);
	assert_int_equal(kube_config_parse(fx->path, "", &fx->cfg, &fx->err), ERR_OK);
	assert_string_equal(fx->cfg.client_cert_pem, "CERT PEM\n");
	assert_string_equal(fx->cfg.client_key_pem, "KEY PEM\n");
	snprintf(want, sizeof(want), "%s/ca.crt", fx->dir);
	assert_string_equal(fx->cfg.ca_file, want);
	snprintf(want, sizeof(want), "%s/token", fx->dir);
	assert_string_equal(fx->cfg.token_file, want);
}

static void expect_error(struct fixture *fx, const char *config, const char *context,
			 enum err code, const char *msg_after_path)
{
	char want[512];

	write_config(fx, config);
	assert_int_equal(kube_config_parse(fx->path, context, &fx->cfg, &fx->err), code);
	snprintf(want, sizeof(want), "kubeconfig %s%s", fx->path, msg_after_path);
	assert_string_equal(buf_str(&fx->err), want);
	assert_null(fx->cfg.server);
}

static void missing_context_names_the_line(void **state)
{
	struct fixture *fx = *state;

	expect_error(fx, BASE, "staging", ERR_INVALID,
		     ":1: context \"staging\" not found in contexts");
	expect_error(fx, "clusters: []\ncurrent-context: gone\ncontexts:\n- name: x\n"
			 "  context: {cluster: y}\n",
		     NULL, ERR_INVALID, ":2: context \"gone\" not found in contexts");
	expect_error(fx, "contexts:\n- name: x\n  context: {cluster: y}\n", NULL, ERR_INVALID,
		     ":1: key \"current-context\": not set and no context was given");
	expect_error(fx, "current-context: x\ncontexts:\n- name: x\n  context: {cluster: y}\n",
		     NULL, ERR_INVALID,
		     ":4: cluster \"y\" not found in clusters (no such list)");
	expect_error(fx, "current-context: x\ncontexts:\n- name: x\n  context: {cluster: y,\n"
			 "    user: nobody}\nclusters:\n- name: y\n  cluster: {server: "
			 "'https://a'}\nusers: []\n",
		     NULL, ERR_INVALID, ":5: user \"nobody\" not found in users");
}

static void malformed_values_name_key_and_line(void **state)
{
	struct fixture *fx = *state;
	const char *head = "current-context: x\n"
			   "contexts: [{name: x, context: {cluster: y, user: u}}]\n"
			   "users: [{name: u, user: {}}]\n"
			   "clusters:\n"
			   "- name: y\n"
			   "  cluster:\n";
	char cfg[1024];

	snprintf(cfg, sizeof(cfg), "%s    server: https://a\n"
		 "    certificate-authority-data: '%%%%not base64'\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID,
		     ":8: key \"certificate-authority-data\": not valid base64");
	snprintf(cfg, sizeof(cfg), "%s    server: https://a\n"
		 "    insecure-skip-tls-verify: maybe\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID,
		     ":8: key \"insecure-skip-tls-verify\": expected true or false");
	snprintf(cfg, sizeof(cfg), "%s    server: [a, b]\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID, ":7: key \"server\": expected a string");
	snprintf(cfg, sizeof(cfg), "%s    server: ftp://a\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID, ":7: key \"server\": not an http(s):// URL");
	snprintf(cfg, sizeof(cfg), "%s    insecure-skip-tls-verify: false\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID, ":7: key \"server\": missing");
	expect_error(fx, "a: [1, 2\nb: c\n", NULL, ERR_INVALID,
		     ":2: did not find expected ',' or ']'");
	expect_error(fx, "- just\n- a list\n", NULL, ERR_INVALID, ":1: expected a mapping");
}

static void unsupported_users_are_rejected(void **state)
{
	struct fixture *fx = *state;
	const char *head = "current-context: x\n"
			   "contexts: [{name: x, context: {cluster: y, user: u}}]\n"
			   "clusters: [{name: y, cluster: {server: 'https://a'}}]\n"
			   "users:\n"
			   "- name: u\n"
			   "  user:\n";
	char cfg[1024];

	snprintf(cfg, sizeof(cfg), "%s    auth-provider:\n      name: gcp\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID,
		     ":8: key \"auth-provider\": not supported; use an exec plugin");
	snprintf(cfg, sizeof(cfg), "%s    username: admin\n    password: secret\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID,
		     ":7: key \"username\": basic authentication is not supported");
	snprintf(cfg, sizeof(cfg), "%s    exec:\n      apiVersion: "
		 "client.authentication.k8s.io/v1\n      interactiveMode: Always\n"
		 "      command: x\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID,
		     ":9: key \"interactiveMode\": Always needs a terminal; alertbridge runs "
		     "plugins without one");
	snprintf(cfg, sizeof(cfg), "%s    exec:\n      apiVersion: "
		 "client.authentication.k8s.io/v1alpha1\n      command: x\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID,
		     ":8: key \"apiVersion\": expected client.authentication.k8s.io/v1 or "
		     "v1beta1");
	snprintf(cfg, sizeof(cfg), "%s    exec:\n      apiVersion: "
		 "client.authentication.k8s.io/v1\n", head);
	expect_error(fx, cfg, NULL, ERR_INVALID, ":8: key \"command\": missing");
}

static void unreadable_kubeconfig_is_io(void **state)
{
	struct fixture *fx = *state;
	char want[256];

	assert_int_equal(kube_config_parse(fx->path, NULL, &fx->cfg, &fx->err), ERR_IO);
	snprintf(want, sizeof(want), "kubeconfig %s: No such file or directory", fx->path);
	assert_string_equal(buf_str(&fx->err), want);
}

/* ---- exec plugins ---- */

static const char *const PLUGIN =
	"#!/bin/sh\n"
	"echo run >> \"$PLUGIN_DIR/runs\"\n"
	"case \"$KUBERNETES_EXEC_INFO\" in\n"
	"*'\"kind\":\"ExecCredential\"'*'\"interactive\":false'*) ;;\n"
	"*) echo \"bad exec info: $KUBERNETES_EXEC_INFO\" >&2; exit 2;;\n"
	"esac\n"
	"case \"$MODE\" in\n"
	"fail) echo 'error: you must be logged in to the server' >&2; exit 3;;\n"
	"garbage) echo 'not json'; exit 0;;\n"
	"cert) printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
	"\"ExecCredential\",\"status\":{\"clientCertificateData\":\"CERT\","
	"\"clientKeyData\":\"KEY\"}}';;\n"
	"*) printf '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":"
	"\"ExecCredential\",\"status\":{\"token\":\"%s-%s-%s\",\"expirationTimestamp\":"
	"\"2024-05-01T13:00:00Z\"}}' \"$MODE\" \"$1\" \"$(wc -l < \"$PLUGIN_DIR/runs\" | "
	"tr -d ' ')\";;\n"
	"esac\n";

static void write_exec_config(struct fixture *fx, const char *server, const char *mode)
{
	char cfg[2048];

	put(fx, "plugin.sh", PLUGIN, 0700);
	snprintf(cfg, sizeof(cfg),
		 "current-context: x\n"
		 "contexts: [{name: x, context: {cluster: y, user: u}}]\n"
		 "clusters: [{name: y, cluster: {server: '%s'}}]\n"
		 "users:\n"
		 "- name: u\n"
		 "  user:\n"
		 "    exec:\n"
		 "      apiVersion: client.authentication.k8s.io/v1\n"
		 "      command: ./plugin.sh\n"
		 "      args: [arg1]\n"
		 "      env:\n"
		 "      - {name: MODE, value: %s}\n"
		 "      - {name: PLUGIN_DIR, value: '%s'}\n"
		 "      installHint: install the plugin\n"
		 "      interactiveMode: Never\n",
		 server, mode, fx->dir);
	write_config(fx, cfg);
}

/* write_exec_config(), then the kubeconfig parses into fx->cfg. */
static void parse_exec_config(struct fixture *fx, const char *server, const char *mode)
{
	write_exec_config(fx, server, mode);
	assert_int_equal(kube_config_parse(fx->path, NULL, &fx->cfg, &fx->err), ERR_OK);
}

/* GET of pod n/p through kc succeeds. */
static void get_pod_ok(struct fixture *fx, struct kube_client *kc)
{
	struct kube_pod p;

	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_OK);
	kube_pod_release(&p);
}

/* The i-th request to fake carried "Authorization: <want>". */
static void bearer_is(struct fake_http *fake, size_t i, const char *want)
{
	assert_string_equal(fake_request_header(fake_http_request(fake, i), "authorization"),
			    want);
}

static int64_t v_now(void *ctx)
{
	return ((struct fixture *)ctx)->now;
}

static void exec_plugin_token_is_cached_until_expiry(void **state)
{
	struct fixture *fx = *state;
	struct fake_http *fake = fake_http_start();
	struct kube_options o = { 0 };
	struct kube_client *kc;
	const char *pod = "{\"metadata\":{\"name\":\"p\",\"namespace\":\"n\",\"uid\":\"u\"}}";

	parse_exec_config(fx, fake_http_url(fake), "exec");
	assert_non_null(fx->cfg.exec);
	assert_string_equal(fx->cfg.exec->argv[1], "arg1");
	o.now_ms = v_now;
	o.clock_ctx = fx;
	kc = kube_client_new(&fx->cfg, &o);
	for (int i = 0; i < 3; i++)
		fake_http_push(fake, 200, NULL, pod);
	get_pod_ok(fx, kc);
	get_pod_ok(fx, kc);
	bearer_is(fake, 0, "Bearer exec-arg1-1");
	bearer_is(fake, 1, "Bearer exec-arg1-1");
	fx->now = T0 + 3600000; /* expirationTimestamp reached */
	get_pod_ok(fx, kc);
	bearer_is(fake, 2, "Bearer exec-arg1-2");
	kube_client_free(kc);
	fake_http_stop(fake);
}

static void exec_plugin_reruns_once_on_401(void **state)
{
	struct fixture *fx = *state;
	struct fake_http *fake = fake_http_start();
	struct kube_client *kc;
	struct kube_pod p;
	const char *unauth = "{\"kind\":\"Status\",\"reason\":\"Unauthorized\",\"code\":401}";

	parse_exec_config(fx, fake_http_url(fake), "exec");
	kc = kube_client_new(&fx->cfg, NULL);
	fake_http_push(fake, 401, NULL, unauth);
	fake_http_push(fake, 200, NULL, "{\"metadata\":{\"name\":\"p\",\"uid\":\"u\"}}");
	get_pod_ok(fx, kc);
	bearer_is(fake, 0, "Bearer exec-arg1-1");
	bearer_is(fake, 1, "Bearer exec-arg1-2");
	fake_http_push(fake, 401, NULL, unauth);
	fake_http_push(fake, 401, NULL, unauth);
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_AUTH);
	assert_string_equal(buf_str(&fx->err),
			    "GET /api/v1/namespaces/n/pods/p: 401 Unauthorized: (no message)");
	assert_int_equal(fake_http_count(fake), 4);
	kube_client_free(kc);
	fake_http_stop(fake);
}

static void exec_plugin_failure_carries_stderr(void **state)
{
	struct fixture *fx = *state;
	struct fake_http *fake = fake_http_start();
	struct kube_client *kc;
	struct kube_pod p;
	char want[256];

	parse_exec_config(fx, fake_http_url(fake), "fail");
	kc = kube_client_new(&fx->cfg, NULL);
	assert_int_equal(kube_pod_get(kc, "n", "p", &p, &fx->err), ERR_AUTH);
	snprintf(want, sizeof(want), "exec plugin %s/./plugin.sh: exit status 3: error: you must "
		 "be logged in to the server", fx->dir);
	assert_string_equal(buf_str(&fx->err), want);
	assert_int_equal(fake_http_count(fake), 0);
	kube_client_free(kc);
	fake_http_stop(fake);
}

static void exec_plugin_bad_output_and_cert_data(void **state)
{
	struct fixture *fx = *state;
	struct kube_exec_credential cred;
	char want[256];

	parse_exec_config(fx, "https://a", "garbage");
	assert_int_equal(kube_exec_run(&fx->cfg, 5000, &cred, &fx->err), ERR_INVALID);
	snprintf(want, sizeof(want), "exec plugin %s/./plugin.sh: output is not JSON: "
		 "'[' or '{' expected near 'not' (line 1)", fx->dir);
	assert_string_equal(buf_str(&fx->err), want);
	kube_config_release(&fx->cfg);

	parse_exec_config(fx, "https://a", "cert");
	assert_int_equal(kube_exec_run(&fx->cfg, 5000, &cred, &fx->err), ERR_OK);
	assert_null(cred.token);
	assert_string_equal(cred.client_cert_pem, "CERT");
	assert_string_equal(cred.client_key_pem, "KEY");
	assert_int_equal(cred.expiry_ms, 0);
	kube_exec_credential_release(&cred);
}

static void exec_plugin_not_found_gives_install_hint(void **state)
{
	struct fixture *fx = *state;
	struct kube_exec_credential cred;
	char want[256];

	parse_exec_config(fx, "https://a", "exec");
	snprintf(want, sizeof(want), "%s/plugin.sh", fx->dir);
	unlink(want);
	assert_int_equal(kube_exec_run(&fx->cfg, 5000, &cred, &fx->err), ERR_AUTH);
	snprintf(want, sizeof(want), "exec plugin %s/./plugin.sh: No such file or directory: "
		 "install the plugin", fx->dir);
	assert_string_equal(buf_str(&fx->err), want);
}

/* ---- in-cluster ---- */

static void incluster_needs_env_and_token(void **state)
{
	struct fixture *fx = *state;

	unsetenv("KUBERNETES_SERVICE_HOST");
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	assert_int_equal(kube_config_incluster(fx->dir, &fx->cfg, &fx->err), ERR_INVALID);
	assert_string_equal(buf_str(&fx->err), "in-cluster config: KUBERNETES_SERVICE_HOST and "
					       "KUBERNETES_SERVICE_PORT must be set (not running "
					       "in a pod?)");
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	assert_int_equal(kube_config_incluster(fx->dir, &fx->cfg, &fx->err), ERR_IO);
	assert_non_null(strstr(buf_str(&fx->err), "/token: No such file or directory"));
	put(fx, "token", "\n", 0600);
	assert_int_equal(kube_config_incluster(fx->dir, &fx->cfg, &fx->err), ERR_IO);
	assert_non_null(strstr(buf_str(&fx->err), "/token is empty"));

	put(fx, "token", "abc\n", 0600);
	put(fx, "ca.crt", "CA", 0600);
	assert_int_equal(kube_config_incluster(fx->dir, &fx->cfg, &fx->err), ERR_OK);
	assert_string_equal(fx->cfg.server, "https://[fd00::1]:443");
	assert_non_null(strstr(fx->cfg.ca_file, "/ca.crt"));
	assert_string_equal(fx->cfg.namespace, "default");
	assert_null(fx->cfg.token);
}

static void load_wraps_parse_and_incluster(void **state)
{
	struct fixture *fx = *state;
	struct kube_client *kc = (struct kube_client *)1;

	write_config(fx, BASE);
	assert_int_equal(kube_config_load(fx->path, "dev", &kc, &fx->err), ERR_OK);
	assert_string_equal(kube_client_namespace(kc), "ml-team");
	kube_client_free(kc);
	unsetenv("KUBERNETES_SERVICE_HOST");
	assert_int_equal(kube_config_load(NULL, NULL, &kc, &fx->err), ERR_INVALID);
	assert_null(kc);
	assert_non_null(strstr(buf_str(&fx->err), "KUBERNETES_SERVICE_HOST"));
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN(
	T(current_context_with_token),
	T(named_context_with_client_cert_files),
	T(missing_client_cert_file_is_io),
	T(cert_and_key_data_token_file),
	T(missing_context_names_the_line),
	T(malformed_values_name_key_and_line),
	T(unsupported_users_are_rejected),
	T(unreadable_kubeconfig_is_io),
	T(exec_plugin_token_is_cached_until_expiry),
	T(exec_plugin_reruns_once_on_401),
	T(exec_plugin_failure_carries_stderr),
	T(exec_plugin_bad_output_and_cert_data),
	T(exec_plugin_not_found_gives_install_hint),
	T(incluster_needs_env_and_token),
	T(load_wraps_parse_and_incluster))
