/*
 * main.c - alertbridge: Alertmanager webhooks to GitHub issues, and a janitor
 * for idle Kubernetes pods.  This file is the wiring: flags, config, store,
 * server, workers, signals.  Each subcommand is one function; see usage().
 */
#include <errno.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/am.h"
#include "bridge/bridge.h"
#include "bridge/render.h"
#include "bridge/view.h"
#include "bridge/gh_webhook.h"
#include "bridge/webhook.h"
#include "core/active.h"
#include "core/auth.h"
#include "core/config.h"
#include "core/db.h"
#include "core/clock.h"
#include "core/duration.h"
#include "core/http_client.h"
#include "core/http_server.h"
#include "core/log.h"
#include "core/healthcheck.h"
#include "core/map_admin.h"
#include "core/metrics.h"
#include "core/reload.h"
#include "core/retention.h"
#include "core/rfc3339.h"
#include "core/serve_lock.h"
#include "core/store.h"
#include "core/version.h"
#include "janitor/janitor.h"
#include "janitor/kubeconfig.h"
#include "janitor/leader.h"
#include "janitor/slack_interact.h"
#include "web/guard.h"
#include "web/status_page.h"
#include "core/banned.h"


#define DEFAULT_CONFIG "alertbridge.yml"

/* Flags shared by the subcommands, Prometheus style (--name=value or --name value). */
struct flags {
	const char *config_file;
	const char *listen_address;
	const char *public_listen_address;  /* serve: --web.public-listen-address */
	const char *database_path;
	const char *log_level;
	const char *log_format;
	const char *template_file;
	const char *payload_file;
	const char *receiver;
	int alert_index;   /* render: -1 = every alert */
	const char *render_as; /* render: --as=title|body|comment (--html: body) */
	int once;          /* janitor sweep: --once */
	int dry_run;       /* janitor sweep: --dry-run */
	int64_t auto_reload_ms;  /* serve: --config.auto-reload-interval, 0: off */
	int enable_lifecycle;    /* serve: --web.enable-lifecycle (POST /-/reload) */
	int help;
	const char *args[4];  /* positional arguments after the subcommand */
	int nargs;
};

static const char usage_main[] =
	"usage: alertbridge [COMMAND] [FLAGS]\n"
	"\n"
	"Receives Alertmanager webhooks and keeps one GitHub issue per alert; with the\n"
	"janitor enabled, marks idle pods, tells their owners on Slack and cleans them up.\n"
	"\n"
	"Commands:\n"
	"  serve                      run the service (the default)\n"
	"  check-config FILE          validate a configuration file and its templates\n"
	"  render --template=F --payload=P\n"
	"                             render a template over an Alertmanager payload\n"
	"  map list|show KEY|forget KEY|retry KEY\n"
	"                             inspect or edit the alert-to-issue map\n"
	"  store copy --from=SOURCE --to=TARGET\n"
	"                             copy a store into a new one (sqlite to PostgreSQL)\n"
	"  janitor sweep --once [--dry-run]\n"
	"                             run one janitor sweep now and print its plan\n"
	"  version, --version         print the version, revision, build date, compiler and\n"
	"                             the linked libraries' versions\n"
	"  healthcheck                GET /-/healthy of the running service (--web.listen-address,\n"
	"                             else the config's listen_address); exit 0 when it answers 200\n"
	"\n"
	"Flags:\n"
	"  --config.file=FILE         configuration file (default alertbridge.yml)\n"
	"  --web.listen-address=ADDR  overrides listen_address, e.g. :9095 or 127.0.0.1:9095\n"
	"  --web.public-listen-address=ADDR\n"
	"                             overrides web.public_listen_address: GitHub's and Slack's\n"
	"                             endpoints alone on a listener of their own\n"
	"  --database.path=FILE       overrides database\n"
	"  --log.level=LEVEL          debug, info, warn, error (overrides log.level)\n"
	"  --log.format=FORMAT        logfmt or json (overrides log.format)\n"
	"  --config.auto-reload-interval=DURATION\n"
	"                             reload when the config or a file it names changes\n"
	"  --web.enable-lifecycle     serve POST /-/reload\n"
	"  -h, --help                 help for alertbridge or a command\n"
	"\n"
	"Environment: GITHUB_TOKEN is the GitHub token when github.token_file is not set.\n"
	"Run 'alertbridge COMMAND --help' for a command's details.\n";

static const char usage_serve[] =
	"usage: alertbridge serve [--config.file=FILE] [--web.listen-address=ADDR]\n"
	"                         [--web.public-listen-address=ADDR]\n"
	"                         [--database.path=FILE] [--log.level=L] [--log.format=F]\n"
	"                         [--config.auto-reload-interval=DURATION] [--web.enable-lifecycle]\n"
	"\n"
	"Serves POST /v1/webhook (Alertmanager), GET /metrics, GET /-/healthy, GET /-/ready\n"
	"and a status page at /.  Without GitHub credentials, or with github.dry_run: true,\n"
	"every GitHub call is logged instead of made, and the map is still kept.\n"
	"With janitor.enabled: true it also serves POST /v1/janitor/webhook and runs the\n"
	"janitor (dry-run until janitor.dry_run: false).\n"
	"SIGTERM or SIGINT: stop accepting, finish the call in flight, exit 0.\n"
	"SIGHUP, POST /-/reload (--web.enable-lifecycle), or a change of the files\n"
	"(--config.auto-reload-interval): reload config, templates and secrets; a broken\n"
	"file keeps the running config; listen address, TLS, database need a restart.\n"
	"Each also re-queues the events dead-lettered for a missing repository.\n";

static const char usage_check[] =
	"usage: alertbridge check-config FILE\n"
	"\n"
	"Loads FILE as the service would (secret files included) and compiles every\n"
	"template.  Prints SUCCESS and the effective configuration (secrets hidden), or\n"
	"the first error with its line, and exits 1.\n";

static const char usage_healthcheck[] =
	"usage: alertbridge healthcheck [--web.listen-address=ADDR] [--config.file=FILE]\n"
	"\n"
	"GETs /-/healthy of the alertbridge listening on ADDR (default: the listen_address\n"
	"of the configuration, https when webhook.tls is set; a wildcard host is asked on\n"
	"the loopback), for a container HEALTHCHECK.  A flag not given is taken from the\n"
	"serve command of PID 1 when that is alertbridge (the container's main process).\n"
	"Exit status: 0 healthy (200 within 5 s), 1 anything else.\n";

static const char usage_render[] =
	"usage: alertbridge render --template=FILE --payload=FILE [--alert=N]\n"
	"                          [--as=title|body|comment] [--receiver=NAME]\n"
	"\n"
	"Renders the Mustache template FILE over the view model of each alert of the\n"
	"Alertmanager webhook payload FILE (or only alert N, counting from 0), as the\n"
	"bridge would, and prints exactly the text it sends to GitHub, but for the hidden\n"
	"markers it appends to bodies and comments.  --as=title (the default): one line\n"
	"of plain text, cut to 256 characters; --as=body or comment (--html is body):\n"
	"GitHub Markdown in which {{x}} reads as text ({{{x}}} is not escaped).\n"
	"The view model is in templates/VIEW_MODEL.md.\n";

static const char usage_map[] =
	"usage: alertbridge map list [--receiver=NAME]\n"
	"       alertbridge map show KEY [--receiver=NAME]\n"
	"       alertbridge map forget KEY --receiver=NAME\n"
	"       alertbridge map retry KEY --receiver=NAME\n"
	"       alertbridge map rescan [--receiver=NAME]\n"
	"\n"
	"Reads the database named by --database.path, else the configuration's 'database'\n"
	"(--config.file, default alertbridge.yml), else ./alertbridge.db.\n"
	"list: one line per alert: receiver, key, repo#number, state, episode start.\n"
	"show: every field of the row.  forget: delete the row, so the next firing\n"
	"creates a new issue.  retry: re-queue the dead-lettered events of KEY (e.g. once\n"
	"the repository exists), its refused /silence commands too; a running service\n"
	"picks them up within a second.\n"
	"rescan: after restoring an older backup, read each repository's issues again\n"
	"(before its next event) and take in the issues the backup does not know.\n"
	"forget, retry and rescan are asked of the service when one holds the sqlite file\n"
	"(POST /-/map/..., with the config's webhook credentials), else done here.\n"
	"KEY is the alert fingerprint (or the group hash).\n";

static const char usage_janitor[] =
	"usage: alertbridge janitor sweep --once [--dry-run] [--config.file=FILE]\n"
	"                                 [--database.path=FILE]\n"
	"\n"
	"Runs one janitor sweep now, as the service does every janitor.sweep_interval,\n"
	"then delivers the Slack messages it queued.  Prints one line per pod that has\n"
	"janitor/expires or janitor/ttl: namespace, pod, owner, reason, expires, notified,\n"
	"action (wait, notify, delete-pod, delete-job, scale-to-zero, notify-only,\n"
	"deferred, skip:<why>, error ...).  --dry-run (or janitor.dry_run: true, the\n"
	"default) changes nothing: the actions are what a live sweep would do.\n"
	"Uses the Kubernetes access and the database of the configuration.\n"
	"Exit status: 0 swept, 1 the configuration, the cluster or a pod failed, 2 usage.\n";

static int parse_flag(const char *arg, const char *name, const char **val, int *i, int argc,
		      char **argv)
{
	size_t n = strlen(name);

	if (strncmp(arg, name, n))
		return 0;
	if (arg[n] == '=') {
		*val = arg + n + 1;
		return 1;
	}
	if (arg[n] == '\0' && *i + 1 < argc) {
		*val = argv[++*i];
		return 1;
	}
	return 0;
}

/* Returns 0, or 2 after printing a usage error. */
static int parse_flags(int argc, char **argv, int first, struct flags *f)
{
	f->alert_index = -1;
	for (int i = first; i < argc; i++) {
		const char *a = argv[i];
		const char *v = NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			f->help = 1;
		} else if (parse_flag(a, "--config.file", &f->config_file, &i, argc, argv) ||
			   parse_flag(a, "--web.listen-address", &f->listen_address, &i, argc, argv) ||
			   parse_flag(a, "--web.public-listen-address", &f->public_listen_address, &i,
				      argc, argv) ||
			   parse_flag(a, "--database.path", &f->database_path, &i, argc, argv) ||
			   parse_flag(a, "--log.level", &f->log_level, &i, argc, argv) ||
			   parse_flag(a, "--log.format", &f->log_format, &i, argc, argv) ||
			   parse_flag(a, "--template", &f->template_file, &i, argc, argv) ||
			   parse_flag(a, "--payload", &f->payload_file, &i, argc, argv) ||
			   parse_flag(a, "--receiver", &f->receiver, &i, argc, argv) ||
			   parse_flag(a, "--as", &f->render_as, &i, argc, argv)) {
			continue;
		} else if (parse_flag(a, "--alert", &v, &i, argc, argv)) {
			char *end;
			long n = strtol(v, &end, 10);
			if (*v == '\0' || *end || n < 0 || n > 100000) {
				fprintf(stderr, "alertbridge: --alert: not an alert index: \"%s\"\n", v);
				return 2;
			}
			f->alert_index = (int)n;
		} else if (parse_flag(a, "--config.auto-reload-interval", &v, &i, argc, argv)) {
			if (duration_parse(v, &f->auto_reload_ms, NULL) || f->auto_reload_ms < 1) {
				fprintf(stderr, "alertbridge: --config.auto-reload-interval: not a "
					"positive duration: \"%s\"\n", v);
				return 2;
			}
		} else if (!strcmp(a, "--web.enable-lifecycle")) {
			f->enable_lifecycle = 1;
		} else if (!strcmp(a, "--html")) {
			f->render_as = "body";
		} else if (!strcmp(a, "--once")) {
			f->once = 1;
		} else if (!strcmp(a, "--dry-run")) {
			f->dry_run = 1;
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "alertbridge: unknown flag \"%s\" (see --help)\n", a);
			return 2;
		} else if (f->nargs < (int)(sizeof(f->args) / sizeof(f->args[0]))) {
			f->args[f->nargs++] = a;
		} else {
			fprintf(stderr, "alertbridge: unexpected argument \"%s\"\n", a);
			return 2;
		}
	}
	return 0;
}

static int setup_logging(const struct config *cfg, const struct flags *f)
{
	enum log_level level = cfg ? cfg->log.level : LOG_INFO;
	enum log_format format = cfg ? cfg->log.format : LOG_LOGFMT;

	if (f->log_level && log_level_parse(f->log_level, &level)) {
		fprintf(stderr, "alertbridge: --log.level: expected debug, info, warn or error, got \"%s\"\n",
			f->log_level);
		return 2;
	}
	if (f->log_format && log_format_parse(f->log_format, &format)) {
		fprintf(stderr, "alertbridge: --log.format: expected logfmt or json, got \"%s\"\n",
			f->log_format);
		return 2;
	}
	log_setup(level, format);
	return 0;
}

static struct config *load_config(const char *path)
{
	struct buf err = BUF_INIT;
	struct config *cfg = NULL;

	if (cfg_load(path, &cfg, &err)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
		cfg = NULL;
	}
	buf_release(&err);
	return cfg;
}

/* ---- serve ---- */

struct service {
	struct config *cfg;
	struct store *store;
	struct metrics *metrics;
	struct render *render;
	struct auth *auth;
	struct webhook *webhook;
	struct gh_webhook *gh_webhook;  /* POST /v1/github/webhook: bridge/gh_webhook.h */
	struct slack_interact *slack_interact;  /* POST /v1/slack/interactions */
	struct bridge *bridge;
	struct kube_client *kube;
	struct slack_client *slack;
	struct janitor_webhook *janitor_webhook;
	struct janitor *janitor;
	struct kube_client *leader_kube;  /* the leader's own client: one thread each */
	struct janitor_leader *leader;
	struct srv *srv;
	struct srv *public_srv;  /* web.public_listen_address: GitHub's and Slack's alone */
	struct retention *retention;  /* prunes done events after database_retention */
	struct reload *reload;  /* owns cfg and render once set: core/reload.h */
	struct auth *web_auth;        /* web.auth: the page and /metrics */
	struct status_page *page;
	struct guard page_guard, metrics_guard;
	struct guard_admin admin_guard, map_guard;  /* every state-changing route: web/guard.h */
	struct serve_lock *lock;      /* the sqlite file's: one serving process (serve_lock.h) */
	int ready;
	/*
	 * Leader election (janitor/leader.h, when janitor.leader_election.enabled):
	 * NULL means this replica always leads.
	 */
	int (*is_leader)(void *ctx);
	void *leader_ctx;
	/* May this replica act (the Lease, the worker lock, or sqlite)?  core/active.h */
	struct active *active;
};

static void handle_health(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	(void)ctx;
	(void)req;
	res->status = 200;
	res->content_type = "text/plain; charset=utf-8";
	buf_adds(&res->body, "Healthy.\n");
}

static void handle_ready(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct service *s = ctx;
	struct buf why = BUF_INIT;
	(void)req;
	res->content_type = "text/plain; charset=utf-8";
	if ((s->active && !active_ready(s->active, &why)) || !store_ready(s->store, &why)) {
		res->status = 503;
		buf_printf(&res->body, "Not ready: %s.\n", buf_str(&why));
	} else if (__atomic_load_n(&s->ready, __ATOMIC_ACQUIRE)) {
		res->status = 200;
		buf_adds(&res->body, "Ready.\n");
	} else {
		res->status = 503;
		buf_adds(&res->body, "Not ready.\n");
	}
	buf_release(&why);
}

static void handle_metrics(void *ctx, const struct srv_request *req, struct srv_response *res)
{
	struct service *s = ctx;
	(void)req;
	metrics_process_collect(s->metrics);
	res->status = 200;
	res->content_type = "text/plain; version=0.0.4; charset=utf-8";
	metrics_render(s->metrics, &res->body);
}

static void observe_request(void *ctx, const char *method, const char *path, int status,
			    int64_t duration_us)
{
	static const char *const names[] = { "method", "path", "code", NULL };
	struct service *s = ctx;
	char code[8];
	const char *labels[3];

	snprintf(code, sizeof(code), "%d", status);
	labels[0] = method;
	labels[1] = path;
	labels[2] = code;
	metric_add(metrics_counter(s->metrics, "alertbridge_http_requests_total",
				   "HTTP requests served, by route and status code.", names),
		   labels, 1);
	(void)duration_us;
}

static void log_store_stats(struct store *st)
{
	struct store_stats ss;
	struct log_line *l;

	if (!st)
		return;
	store_stats(st, &ss);
	l = log_begin(LOG_INFO, "intake totals");
	log_int(l, "commits", (int64_t)ss.commits);
	log_int(l, "requests", (int64_t)ss.batches);
	log_int(l, "events", (int64_t)ss.events);
	log_int(l, "failed_commits", (int64_t)ss.failed_commits);
	log_end(l);
}

static void service_release(struct service *s)
{
	reload_watch_stop(s->reload);  /* its reloads call into the bridge */
	log_store_stats(s->store);
	retention_stop(s->retention);
	srv_free(s->public_srv);
	srv_free(s->srv);
	status_page_free(s->page);
	auth_free(s->web_auth);
	janitor_free(s->janitor);
	janitor_leader_free(s->leader);
	kube_client_free(s->leader_kube);
	janitor_webhook_free(s->janitor_webhook);
	kube_client_free(s->kube);
	slack_client_free(s->slack);
	bridge_free(s->bridge);
	active_free(s->active);  /* after both workers: releases the worker lock */
	webhook_free(s->webhook);
	gh_webhook_free(s->gh_webhook);
	slack_interact_free(s->slack_interact);
	auth_free(s->auth);
	if (s->reload) {
		reload_free(s->reload);  /* after every holder of a generation */
	} else {
		render_free(s->render);
		cfg_free(s->cfg);
	}
	store_close(s->store);
	serve_lock_free(s->lock);
	metrics_free(s->metrics);
}

/*
 * A reload stands for "something outside changed" (a repository created, a
 * token given access): re-queue the events dead-lettered as "repository not
 * found or no access" (bridge/repos.c logs how many), whether or not the new
 * config loaded, so GitHub is asked again.
 */
static void after_reload(void *ctx, int ok)
{
	struct service *s = ctx;

	(void)ok;
	(void)!bridge_retry_dead(s->bridge, NULL);  /* the store logs a failure */
}

/* The reload (core/reload.h); from here on it owns s->cfg and s->render. */
static int setup_reload(struct service *s, const struct flags *f, struct buf *err)
{
	struct reload_options ro = {
		.config_file = f->config_file ? f->config_file : DEFAULT_CONFIG, .metrics = s->metrics,
		.prepare = render_reload_prepare, .ext_free = render_reload_free,
		.after = after_reload, .ctx = s, .enable_lifecycle = f->enable_lifecycle };

	if (reload_new(&ro, s->cfg, s->render, &s->reload, err)) {
		log_msg(LOG_ERROR, "cannot set up the config reload", "detail", buf_str(err));
		return 1;
	}
	return 0;
}

static int leader_is_leader(void *ctx)
{
	return janitor_leader_is_leader(ctx);
}

/*
 * Leader election on the Lease janitor.leader_election names, with a client
 * of its own whose timeouts stay under the retry period, so a slow API
 * server cannot keep a stale leader acting (janitor/leader.h).
 */
static int setup_leader(struct service *s, struct buf *err)
{
	const struct cfg_janitor *jc = &s->cfg->janitor;
	const struct cfg_leader_election *le = &jc->leader_election;
	struct kube_config kc;
	struct kube_options ko = { 0 };
	struct janitor_leader_options lo = { 0 };
	int64_t lease_ms = le->lease_duration_ms ? le->lease_duration_ms
						 : JANITOR_LEADER_DEFAULT_LEASE_MS;
	enum err rc;

	memset(&kc, 0, sizeof(kc));
	rc = jc->kubernetes.kubeconfig && *jc->kubernetes.kubeconfig
		     ? kube_config_parse(jc->kubernetes.kubeconfig, jc->kubernetes.context, &kc, err)
		     : kube_config_incluster(NULL, &kc, err);
	if (rc) {
		kube_config_release(&kc);
		log_msg(LOG_ERROR, "cannot set up the leader election client", "detail",
			buf_str(err));
		return 1;
	}
	ko.user_agent = version_user_agent();
	ko.timeout_ms = lease_ms * 2 / 15;  /* the retry period */
	ko.max_retry_after_ms = ko.timeout_ms;
	s->leader_kube = kube_client_new(&kc, &ko);
	lo.kube = s->leader_kube;
	lo.namespace = le->namespace;
	lo.lease_name = le->lease_name;
	lo.identity = le->identity;
	lo.lease_duration_ms = lease_ms;
	lo.metrics = s->metrics;
	s->leader = janitor_leader_new(&lo);
	s->is_leader = leader_is_leader;
	s->leader_ctx = s->leader;
	return 0;
}

/*
 * Who acts (core/active.h): the Lease when leader election is on, else the
 * store's worker lock on PostgreSQL, else always.  The grace after taking the
 * lock is the longest one request of a worker may last: GitHub's timeout, or
 * the Kubernetes client's 30 s with the janitor.
 */
static void setup_active(struct service *s)
{
	struct active_options ao = { 0 };

	ao.store = s->store;
	ao.lease = s->is_leader;
	ao.lease_ctx = s->leader_ctx;
	ao.metrics = s->metrics;
	ao.grace_ms = s->cfg->github.timeout_ms;
	if (s->cfg->janitor.enabled && ao.grace_ms < KUBE_DEFAULT_TIMEOUT_MS)
		ao.grace_ms = KUBE_DEFAULT_TIMEOUT_MS;
	s->active = active_new(&ao);
}

/* The janitor's clients, intake and worker (janitor.enabled). */
static void setup_janitor(struct service *s)
{
	struct janitor_webhook_options jw = { 0 };
	struct janitor_options jo = { 0 };

	jw.store = s->store;
	jw.metrics = s->metrics;
	jw.auth = s->auth;
	jw.reload = s->reload;
	jw.limits.max_alerts = s->cfg->webhook.max_alerts;
	s->janitor_webhook = janitor_webhook_new(&jw);
	jo.cfg = s->cfg;
	jo.reload = s->reload;
	jo.store = s->store;
	jo.kube = s->kube;
	jo.slack = s->slack;
	jo.metrics = s->metrics;
	jo.is_leader = active_may_act;
	jo.leader_ctx = s->active;
	s->janitor = janitor_new(&jo);
}

/*
 * Test hook (tests/model): ALERTBRIDGE_TEST_SECOND_MS=N (1..1000) makes one second of the
 * bridge's own pacing and backoff last N ms: mutating GitHub calls N ms apart, the content
 * budget's window 60 N ms, the client's backoff from N ms, the event retry schedule from 5 N ms
 * up to 600 N ms.  Waits GitHub asks for (retry-after, x-ratelimit-reset) are not scaled.
 */
static void test_second(struct bridge_options *bo)
{
	const char *v = getenv("ALERTBRIDGE_TEST_SECOND_MS");
	long n = v ? strtol(v, NULL, 10) : 0;

	if (n < 1 || n > 1000)
		return;
	log_msg(LOG_WARN, "test hook: pacing and backoff scaled", "second_ms", v);
	bo->gh_min_interval_ms = n;
	bo->gh_backoff_base_ms = n;
	bo->gh_window_ms = 60 * n;
	bo->retry_base_ms = 5 * n;
	bo->retry_max_ms = 600 * n;
}

/*
 * The endpoints the internet must reach (issue 21), one row each: on a
 * listener of their own, alone, when web.public_listen_address (or
 * --web.public-listen-address) is set, the main listener then answering 404
 * for them; else on the main listener.  That listener takes the main one's
 * limits and timeouts, its own TLS (web.public_tls) and, as its body bound,
 * the largest of its routes'.  Call after the main routes, before srv_start().
 */
static int route_public(struct service *s, const struct srv_options *main_so,
			const struct flags *f, struct buf *err)
{
	const struct public_route {
		const char *method, *path;
		srv_handler fn;
		void *ctx;
		srv_rejected rejected;  /* the route's hook for the server's own 413, or NULL */
		size_t max_body_bytes;  /* the largest body the route reads */
	} routes[] = {
		{ "POST", "/v1/github/webhook", gh_webhook_handle, s->gh_webhook, gh_webhook_rejected,
		  GH_WEBHOOK_MAX_BODY },
		{ "POST", "/v1/slack/interactions", slack_interact_handle, s->slack_interact, NULL,
		  SLACK_INTERACT_MAX_BODY },
	};
	const size_t n = sizeof(routes) / sizeof(routes[0]);
	const char *addr = f->public_listen_address ? f->public_listen_address :
						      s->cfg->web.public_listen_address;
	struct srv_options so = *main_so;
	struct srv *on = s->srv;

	if (addr) {
		so.listen_address = addr;
		so.tls_cert_file = s->cfg->web.public_tls.cert_file;
		so.tls_key_file = s->cfg->web.public_tls.key_file;
		so.tls_client_ca_file = s->cfg->web.public_tls.client_ca_file;
		so.max_body_bytes = 0;
		for (size_t i = 0; i < n; i++)
			if (routes[i].max_body_bytes > so.max_body_bytes)
				so.max_body_bytes = routes[i].max_body_bytes;
		if (srv_new(&so, &s->public_srv, err))
			return -1;
		srv_set_observer(s->public_srv, observe_request, s);
		on = s->public_srv;
	}
	for (size_t i = 0; i < n; i++) {
		if (srv_route(on, routes[i].method, routes[i].path, routes[i].fn, routes[i].ctx) ||
		    (routes[i].rejected && srv_route_rejected(on, routes[i].path,
							       routes[i].rejected, routes[i].ctx))) {
			buf_setf(err, "cannot route %s %s", routes[i].method, routes[i].path);
			return -1;
		}
	}
	return 0;
}

static int start_service(struct service *s, const struct flags *f)
{
	struct buf err = BUF_INIT;
	struct srv_options so = { 0 };
	struct webhook_options wo = { 0 };
	struct bridge_options bo = { 0 };
	const char *db = f->database_path ? f->database_path : s->cfg->database;
	int rc = 1;

	/* Everything the config names is loaded before the database is opened, so a
	 * bad template or kubeconfig neither creates nor migrates it. */
	if (render_new(s->cfg, &s->render, &err)) {
		log_msg(LOG_ERROR, "cannot load templates", "detail", buf_str(&err));
		goto out;
	}
	if (s->cfg->janitor.enabled && janitor_clients_new(s->cfg, &s->kube, &s->slack, &err)) {
		log_msg(LOG_ERROR, "cannot set up the kubernetes client", "detail", buf_str(&err));
		goto out;
	}
	if (serve_lock_take(db, &s->lock, NULL, &err) ||
	    store_open_target(db, s->cfg->database_password_file, &s->store, &err) ||
	    store_set_timeout(s->store, s->cfg->database_statement_timeout_ms, &err)) {
		log_msg(LOG_ERROR, "cannot open the database", "detail", buf_str(&err));
		goto out;
	}
	if (auth_new(&s->cfg->webhook, &s->auth, &err)) {
		log_msg(LOG_ERROR, "cannot set up webhook authentication", "detail", buf_str(&err));
		goto out;
	}
	if (auth_mode(s->auth) == AUTH_NONE)
		log_msg(LOG_WARN, "webhook authentication is off: anyone who reaches the port can post alerts",
			"hint", "set webhook.bearer_token_file or webhook.basic_auth");
	s->metrics = metrics_new();
	version_register_metric(s->metrics, NULL);
	if (setup_reload(s, f, &err))
		goto out;
	wo.cfg = s->cfg;
	wo.store = s->store;
	wo.metrics = s->metrics;
	wo.auth = s->auth;
	wo.reload = s->reload;
	wo.limits.max_alerts = s->cfg->webhook.max_alerts;
	s->webhook = webhook_new(&wo);
	s->gh_webhook = gh_webhook_new(&(struct gh_webhook_options){
		.cfg = s->cfg, .reload = s->reload, .store = s->store, .metrics = s->metrics });
	s->slack_interact = slack_interact_new(&(struct slack_interact_options){
		.cfg = s->cfg, .reload = s->reload, .store = s->store, .metrics = s->metrics });
	bo.cfg = s->cfg;
	bo.store = s->store;
	bo.render = s->render;
	bo.reload = s->reload;
	bo.metrics = s->metrics;
	bo.user_agent = version_user_agent();
	/* One Lease for both workers: only the leader drains the bridge queue too. */
	if (s->cfg->janitor.enabled && s->cfg->janitor.leader_election.enabled &&
	    setup_leader(s, &err))
		goto out;
	setup_active(s);
	bo.may_act = active_may_act;
	bo.may_act_ctx = s->active;
	test_second(&bo);
	s->bridge = bridge_new(&bo);
	if (!bridge_dry_run(s->bridge) && store_dry_rows_go_live(s->store, NULL))
		goto out;  /* logged */
	if (s->cfg->janitor.enabled)
		setup_janitor(s);

	so.listen_address = f->listen_address ? f->listen_address : s->cfg->listen_address;
	so.threads = s->cfg->webhook.threads;
	so.max_connections = s->cfg->webhook.max_connections;
	so.timeout_s = (unsigned)(s->cfg->webhook.read_timeout_ms / 1000);
	so.header_timeout_ms = (unsigned)s->cfg->webhook.read_header_timeout_ms;
	so.max_connections_per_ip = s->cfg->webhook.max_connections_per_ip;
	so.max_body_bytes = s->cfg->webhook.max_body_bytes;
	so.tls_cert_file = s->cfg->webhook.tls.cert_file;
	so.tls_key_file = s->cfg->webhook.tls.key_file;
	so.tls_client_ca_file = s->cfg->webhook.tls.client_ca_file;
	if (srv_new(&so, &s->srv, &err)) {
		log_msg(LOG_ERROR, "cannot create the HTTP server", "detail", buf_str(&err));
		goto out;
	}
	if (auth_new_web(&s->cfg->web.auth, &s->web_auth, &err)) {
		log_msg(LOG_ERROR, "cannot set up web authentication", "detail", buf_str(&err));
		goto out;
	}
	s->page = status_page_new(&(struct status_page_options){
		.cfg = s->cfg, .store = s->store, .bridge = s->bridge, .janitor = s->janitor,
		.version = version_get()->version });
	s->page_guard = (struct guard){ s->web_auth, status_page_handle, s->page };
	s->metrics_guard = (struct guard){ s->web_auth, handle_metrics, s };
	s->admin_guard = (struct guard_admin){ s->reload, s->web_auth, reload_handle, s->reload };
	s->map_guard = (struct guard_admin){ s->reload, s->web_auth, map_admin_handle, s->store };
	if (srv_route(s->srv, "POST", "/v1/webhook", webhook_handle, s->webhook) ||
	    srv_route(s->srv, "GET", "/metrics", guard_handle, &s->metrics_guard) ||
	    srv_route(s->srv, "GET", "/-/healthy", handle_health, s) ||
	    srv_route(s->srv, "GET", "/-/ready", handle_ready, s) ||
	    srv_route(s->srv, "POST", "/-/reload", guard_admin_handle, &s->admin_guard) ||
	    srv_route(s->srv, "PUT", "/-/reload", guard_admin_handle, &s->admin_guard) ||
	    map_admin_routes(s->srv, guard_admin_handle, &s->map_guard) ||
	    srv_route(s->srv, "GET", "/", guard_handle, &s->page_guard) ||
	    srv_route_rejected(s->srv, "/v1/webhook", webhook_rejected, s->webhook)) {
		log_msg(LOG_ERROR, "cannot register routes", NULL, NULL);
		goto out;
	}
	if (s->janitor_webhook && srv_route(s->srv, "POST", "/v1/janitor/webhook",
					    janitor_webhook_handle, s->janitor_webhook)) {
		log_msg(LOG_ERROR, "cannot register routes", NULL, NULL);
		goto out;
	}
	srv_set_observer(s->srv, observe_request, s);
	if (route_public(s, &so, f, &err)) {
		log_msg(LOG_ERROR, "cannot set up the public endpoints", "detail", buf_str(&err));
		goto out;
	}
	if (bridge_start(s->bridge, &err)) {
		log_msg(LOG_ERROR, "cannot start the bridge", "detail", buf_str(&err));
		goto out;
	}
	if (retention_start(s->store, s->cfg->database_retention_ms, 0, &s->retention, &err)) {
		log_msg(LOG_ERROR, "cannot start the retention", "detail", buf_str(&err));
		goto out;
	}
	if (active_start(s->active, &err)) {
		log_msg(LOG_ERROR, "cannot start the worker lock", "detail", buf_str(&err));
		goto out;
	}
	if (s->leader && janitor_leader_start(s->leader)) {
		log_msg(LOG_ERROR, "cannot start leader election", NULL, NULL);
		goto out;
	}
	if (s->janitor && janitor_start(s->janitor, &err)) {
		log_msg(LOG_ERROR, "cannot start the janitor", "detail", buf_str(&err));
		goto out;
	}
	if (srv_start(s->srv, &err) ||
	    serve_lock_set_address(s->lock, so.listen_address, srv_port(s->srv), !!so.tls_cert_file,
				   &err)) {
		log_msg(LOG_ERROR, "cannot start the HTTP server", "detail", buf_str(&err));
		goto out;
	}
	if (s->public_srv && srv_start(s->public_srv, &err)) {
		log_msg(LOG_ERROR, "cannot start the public HTTP server", "detail", buf_str(&err));
		goto out;
	}
	if (reload_watch_start(s->reload, f->auto_reload_ms, &err)) {
		log_msg(LOG_ERROR, "cannot start the config auto-reload", "detail", buf_str(&err));
		goto out;
	}
	{
		struct log_line *l = log_begin(LOG_INFO, "alertbridge started");
		log_str(l, "version", version_get()->version);
		log_str(l, "config", s->cfg->path);
		log_str(l, "listen_address", so.listen_address);
		log_int(l, "port", srv_port(s->srv));
		if (s->public_srv)
			log_int(l, "public_port", srv_port(s->public_srv));
		log_str(l, "database", db);
		log_end(l);
	}
	__atomic_store_n(&s->ready, 1, __ATOMIC_RELEASE);
	rc = 0;
out:
	buf_release(&err);
	return rc;
}

static int cmd_serve(const struct flags *f)
{
	struct service s;
	sigset_t set;
	int sig = 0, rc;

	memset(&s, 0, sizeof(s));
	if (f->help) {
		fputs(usage_serve, stdout);
		return 0;
	}
	s.cfg = load_config(f->config_file ? f->config_file : DEFAULT_CONFIG);
	if (!s.cfg)
		return 1;
	if (setup_logging(s.cfg, f)) {
		cfg_free(s.cfg);
		return 2;
	}
	/*
	 * Block the stop signals and SIGHUP in every thread; the main thread
	 * waits for them.  SIGHUP's default action would end the process.
	 */
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (http_global_init()) {
		log_msg(LOG_ERROR, "cannot initialise libcurl", NULL, NULL);
		cfg_free(s.cfg);
		return 1;
	}
	rc = start_service(&s, f);
	if (rc == 0) {
		for (;;) {
			sigwait(&set, &sig);
			if (sig != SIGHUP)
				break;
			(void)!reload_run(s.reload, "SIGHUP", NULL);  /* logged */
		}
		log_msg(LOG_INFO, "shutting down", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT");
		__atomic_store_n(&s.ready, 0, __ATOMIC_RELEASE);
		bridge_request_stop(s.bridge);  /* its call in flight ends while the server drains */
		srv_stop(s.srv);
		srv_stop(s.public_srv);
		janitor_stop(s.janitor);
		janitor_leader_stop(s.leader);  /* releases the Lease for the standby */
		bridge_stop(s.bridge);
		active_stop(s.active);  /* the workers' last calls ended: the standby may take over */
	}
	service_release(&s);
	http_global_cleanup();
	if (rc == 0)
		log_msg(LOG_INFO, "stopped", NULL, NULL);
	return rc;
}

/* ---- check-config ---- */

static int cmd_check_config(const struct flags *f)
{
	const char *path = f->nargs ? f->args[0] : f->config_file;
	struct buf err = BUF_INIT, dump = BUF_INIT;
	struct render *r = NULL;
	struct kube_client *kube = NULL;
	struct slack_client *slack = NULL;
	struct config *cfg;
	int rc = 1;

	if (f->help) {
		fputs(usage_check, stdout);
		return 0;
	}
	if (!path) {
		fputs(usage_check, stderr);
		return 2;
	}
	cfg = load_config(path);
	if (!cfg)
		goto out;
	if (render_new(cfg, &r, &err)) {
		fprintf(stderr, "alertbridge: %s: %s\n", path, buf_str(&err));
		goto out;
	}
	/* A kubeconfig file is checked here too; in-cluster credentials only exist in a pod. */
	if (cfg->janitor.enabled && cfg->janitor.kubernetes.kubeconfig &&
	    cfg->janitor.kubernetes.kubeconfig[0] &&
	    janitor_clients_new(cfg, &kube, &slack, &err)) {
		fprintf(stderr, "alertbridge: %s: janitor.kubernetes.kubeconfig: %s\n", path,
			buf_str(&err));
		goto out;
	}
	(void)render_sample_repos(cfg, r, clock_wall_ms(), &err);  /* what each route files into */
	cfg_dump(cfg, &dump);
	printf("SUCCESS: %s is valid (%zu receivers, janitor %s, github %s)\n\n%s\n%s", path,
	       cfg->receivers_count, cfg->janitor.enabled ? "enabled" : "disabled",
	       cfg->github.dry_run || (!cfg->github.token && !cfg->github.app.app_id &&
				       !cfg->github.credentials_count) ? "dry-run" : "live", buf_str(&err),
	       buf_str(&dump));
	rc = 0;
out:
	render_free(r);
	kube_client_free(kube);
	slack_client_free(slack);
	cfg_free(cfg);
	buf_release(&err);
	buf_release(&dump);
	return rc;
}

/* ---- render ---- */

static int cmd_render(const struct flags *f)
{
	struct buf tmpl = BUF_INIT, body = BUF_INIT, err = BUF_INIT, ev = BUF_INIT;
	struct buf out = BUF_INIT;
	struct am_payload *p = NULL;
	struct am_error aerr;
	enum render_text which;
	int rc = 1;

	if (f->help) {
		fputs(usage_render, stdout);
		return 0;
	}
	if (!f->template_file || !f->payload_file) {
		fputs(usage_render, stderr);
		return 2;
	}
	if (!f->render_as || !strcmp(f->render_as, "title")) {
		which = RENDER_TITLE;
	} else if (!strcmp(f->render_as, "body")) {
		which = RENDER_BODY;
	} else if (!strcmp(f->render_as, "comment")) {
		which = RENDER_REFIRE;  /* every comment is escaped alike */
	} else {
		fprintf(stderr, "alertbridge: --as: want title, body or comment, not \"%s\"\n",
			f->render_as);
		return 2;
	}
	if (render_read_file(f->template_file, &tmpl, &err) ||
	    render_read_file(f->payload_file, &body, &err)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
		goto out;
	}
	if (am_parse(body.data ? body.data : "", body.len, NULL, &p, &aerr)) {
		fprintf(stderr, "alertbridge: %s: %s%s%s\n", f->payload_file,
			aerr.field[0] ? aerr.field : "", aerr.field[0] ? ": " : "", aerr.message);
		goto out;
	}
	if (f->alert_index >= 0 && (size_t)f->alert_index >= p->n_alerts) {
		fprintf(stderr, "alertbridge: --alert=%d: the payload has %zu alerts\n",
			f->alert_index, p->n_alerts);
		goto out;
	}
	for (size_t i = 0; i < p->n_alerts; i++) {
		struct view_context ctx = { 0 };
		json_t *view = NULL;

		if (f->alert_index >= 0 && (size_t)f->alert_index != i)
			continue;
		buf_reset(&ev);
		buf_reset(&out);
		ctx.now_ms = (int64_t)time(NULL) * 1000;
		ctx.receiver = f->receiver;
		if (am_event_json(p, i, &ev) || view_build(buf_str(&ev), &ctx, &view, &err)) {
			fprintf(stderr, "alertbridge: alerts[%zu]: %s\n", i, buf_str(&err));
			goto out;
		}
		if (render_once(buf_str(&tmpl), tmpl.len, which, view, &out, &err)) {
			json_decref(view);
			fprintf(stderr, "alertbridge: %s: %s\n", f->template_file, buf_str(&err));
			goto out;
		}
		json_decref(view);
		fwrite(out.data ? out.data : "", 1, out.len, stdout);
		if (out.len && out.data[out.len - 1] != '\n')
			putchar('\n');
	}
	rc = 0;
out:
	am_payload_free(p);
	buf_release(&tmpl);
	buf_release(&body);
	buf_release(&err);
	buf_release(&ev);
	buf_release(&out);
	return rc;
}

/* ---- map ---- */

/* "%.0lld" prints nothing for 0: a row without an issue reads "repo (no issue)". */
static int print_row_line(void *ctx, const struct store_issue *row)
{
	char when[32] = "-";
	(void)ctx;
	if (row->episode_starts_ms)
		rfc3339_format(row->episode_starts_ms, when);
	printf("%-20s %-16s %s%s%.0lld %s%s%s %s%s%s\n", row->receiver, row->key, row->repo,
	       row->number ? "#" : " (no issue)", (long long)row->number, row->state, row->state_reason ? "/" : "",
	       row->state_reason ? row->state_reason : "", when,
	       row->dead_reason ? " dead: " : "", row->dead_reason ? row->dead_reason : "");
	return 0;
}

/*
 * A dead letter with no map row (a create GitHub rejected, an alert invalid
 * at intake, a janitor alert): receiver, key, reason.
 */
static int print_dead_line(void *ctx, const struct store_event *ev)
{
	const char *receiver = ctx;

	if (receiver && strcmp(receiver, ev->receiver))
		return 0;
	printf("%-20s %-16s %s (no issue) dead: %s\n", ev->receiver, ev->key,
	       ev->status, ev->last_error ? ev->last_error : "-");
	return 0;
}

static void print_row_full(const struct store_issue *row)
{
	char t[32];

	printf("receiver:          %s\nkey:               %s\nrepo:              %s\n",
	       row->receiver, row->key, row->repo);
	printf("issue:             %lld%s\n", (long long)row->number,
	       row->number ? "" : " (no issue on GitHub)");
	printf("state:             %s\nstate_reason:      %s\n", row->state,
	       row->state_reason ? row->state_reason : "-");
	rfc3339_format(row->episode_starts_ms, t);
	printf("episode_starts_at: %s\n", row->episode_starts_ms ? t : "-");
	rfc3339_format(row->resolved_ends_ms, t);
	printf("resolved_ends_at:  %s\n", row->resolved_ends_ms ? t : "-");
	rfc3339_format(row->closed_at_ms, t);
	printf("closed_at:         %s\n", row->closed_at_ms ? t : "-");
	printf("previous_issue:    %lld\n", (long long)row->previous_number);
	rfc3339_format(row->created_at_ms, t);
	printf("created_at:        %s\n", t);
	rfc3339_format(row->updated_at_ms, t);
	printf("updated_at:        %s\n", t);
	printf("dead_letter:       %s\n", row->dead_reason ? row->dead_reason : "-");
}

struct find_key {
	const char *key;
	const char *receiver;
	struct store_issue *found;
	int matches;
};

static int match_key(void *ctx, const struct store_issue *row)
{
	struct find_key *fk = ctx;
	if (strcmp(row->key, fk->key))
		return 0;
	if (fk->matches++ == 0)
		print_row_full(row);
	else
		printf("\n"), print_row_full(row);
	return 0;
}

static int cmd_map(const struct flags *f)
{
	struct buf err = BUF_INIT;
	struct config *cfg = NULL;
	struct store *st = NULL;
	const char *db = f->database_path;
	const char *sub = f->nargs ? f->args[0] : NULL;
	enum map_admin_op op;
	int rc = 1;

	if (f->help || !sub) {
		fputs(usage_map, f->help ? stdout : stderr);
		return f->help ? 0 : 2;
	}
	if (strcmp(sub, "list") && strcmp(sub, "rescan") && f->nargs < 2) {
		fputs(usage_map, stderr);
		return 2;
	}
	if (f->config_file || (!db && !access(DEFAULT_CONFIG, F_OK))) {  /* also credentials */
		cfg = load_config(f->config_file ? f->config_file : DEFAULT_CONFIG);
		if (!cfg)
			return 1;
	}
	if (!db)  /* else the default database, as serve would use it */
		db = cfg ? cfg->database : "alertbridge.db";
	if (map_admin_op_parse(sub, &op)) {  /* changes the map: where the file may be written */
		rc = map_admin_command(op, db, cfg, f->receiver, f->nargs > 1 ? f->args[1] : NULL);
		goto out;
	}
	if (!db_target_is_postgres(db) && access(db, F_OK)) {
		fprintf(stderr, "alertbridge: %s: no database here (%s)\n", db, strerror(errno));
		goto out;
	}
	/* Read-only: a newer CLI must not migrate a file an older serve is using. */
	if (store_open_read_only(db, cfg ? cfg->database_password_file : NULL, &st, &err)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
		goto out;
	}
	if (!strcmp(sub, "list")) {
		rc = store_issue_each(st, f->receiver, print_row_line, NULL) ||
		     store_dead_unmapped(st, "bridge", 1000, print_dead_line,
					 (void *)f->receiver) ||
		     store_dead_unmapped(st, "janitor", 1000, print_dead_line,
					 (void *)f->receiver) ? 1 : 0;
	} else if (!strcmp(sub, "show")) {
		struct find_key fk = { f->args[1], f->receiver, NULL, 0 };
		if (store_issue_each(st, f->receiver, match_key, &fk))
			goto out;
		if (!fk.matches) {
			fprintf(stderr, "alertbridge: no map row with key \"%s\"\n", f->args[1]);
			goto out;
		}
		rc = 0;
	} else {
		fprintf(stderr, "alertbridge: map: unknown subcommand \"%s\"\n", sub);
		rc = 2;
	}
out:
	store_close(st);
	cfg_free(cfg);
	buf_release(&err);
	return rc;
}

/* ---- janitor sweep ---- */

static void print_time(int64_t ms, char out[JANITOR_TIME_LEN])
{
	if (ms == JANITOR_NO_TIME || janitor_format_time(ms, out) != ERR_OK)
		snprintf(out, JANITOR_TIME_LEN, "-");
}

static void print_plan_row(void *ctx, const struct janitor_plan_row *row)
{
	char expires[JANITOR_TIME_LEN], notified[JANITOR_TIME_LEN];

	(void)ctx;
	print_time(row->expires_ms, expires);
	print_time(row->notified_ms, notified);
	printf("%-20s %-40s %-20s %-24s %-20s %-20s %s\n", row->namespace, row->pod, row->owner,
	       row->reason, expires, notified, row->action);
	fflush(stdout);
}

static int cmd_janitor(const struct flags *f)
{
	struct buf err = BUF_INIT;
	struct config *cfg = NULL;
	struct store *st = NULL;
	struct kube_client *kube = NULL;
	struct slack_client *slack = NULL;
	struct janitor *j = NULL;
	struct janitor_options jo = { 0 };
	struct janitor_sweep_stats stats = { 0 };
	struct serve_lock *lock = NULL;  /* a sweep that acts writes the file (dry-run: nothing) */
	const char *sub = f->nargs ? f->args[0] : NULL;
	int rc = 1, sent = 0;

	if (f->help) {
		fputs(usage_janitor, stdout);
		return 0;
	}
	if (!sub || strcmp(sub, "sweep") || f->nargs > 1 || !f->once) {
		fputs(usage_janitor, stderr);
		return 2;
	}
	cfg = load_config(f->config_file ? f->config_file : DEFAULT_CONFIG);
	if (!cfg)
		return 1;
	if (setup_logging(cfg, f)) {
		rc = 2;
		goto out;
	}
	signal(SIGPIPE, SIG_IGN);
	if (http_global_init()) {
		fprintf(stderr, "alertbridge: cannot initialise libcurl\n");
		goto out;
	}
	if ((!f->dry_run && !cfg->janitor.dry_run &&
	     serve_lock_take(f->database_path ? f->database_path : cfg->database, &lock, NULL,
			     &err)) ||
	    store_open_target(f->database_path ? f->database_path : cfg->database,
			      cfg->database_password_file, &st, &err) ||
	    janitor_clients_new(cfg, &kube, &slack, &err)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
		goto cleanup;
	}
	jo.cfg = cfg;
	jo.store = st;
	jo.kube = kube;
	jo.slack = slack;
	jo.force_dry_run = f->dry_run;
	j = janitor_new(&jo);
	printf("%-20s %-40s %-20s %-24s %-20s %-20s %s\n", "NAMESPACE", "POD", "OWNER", "REASON",
	       "EXPIRES", "NOTIFIED", "ACTION");
	if (janitor_sweep(j, print_plan_row, NULL, &stats, &err)) {
		fprintf(stderr, "alertbridge: janitor sweep: %s\n", buf_str(&err));
		goto cleanup;
	}
	/* Deliver what the sweep queued (bounded: one sweep's worth). */
	while (sent < 10000 && janitor_notice_step(j) == 1)
		sent++;
	fprintf(stderr, "%s%lld pods, %lld with janitor annotations, %lld notices, %lld acted, "
		"%lld errors\n", janitor_dry_run(j) ? "dry-run: " : "", (long long)stats.pods,
		(long long)stats.annotated, (long long)stats.notified, (long long)stats.acted,
		(long long)stats.errors);
	rc = stats.errors ? 1 : 0;
cleanup:
	janitor_free(j);
	kube_client_free(kube);
	slack_client_free(slack);
	store_close(st);
	serve_lock_free(lock);
	http_global_cleanup();
out:
	cfg_free(cfg);
	buf_release(&err);
	return rc;
}

int main(int argc, char **argv)
{
	struct flags f;
	const char *cmd = "serve";
	int first = 1;
	int rc;

	memset(&f, 0, sizeof(f));
	if (argc > 1 && argv[1][0] != '-') {
		cmd = argv[1];
		first = 2;
	}
	if (first == 1 && argc > 1 && !strcmp(argv[1], "--version")) {
		cmd = "version";
		first = 2;
	}
	if (!strcmp(cmd, "store"))  /* flags of its own (store_copy.c) */
		return store_copy_command(argc - first, argv + first);
	rc = parse_flags(argc, argv, first, &f);
	if (rc)
		return rc;
	if (f.database_path && db_target_is_postgres(f.database_path)) {
		struct buf why = BUF_INIT;
		if (cfg_database_uri_check(f.database_path, &why)) {
			fprintf(stderr, "alertbridge: --database.path: %s\n", buf_str(&why));
			buf_release(&why);
			return 2;
		}
	}
	if (!strcmp(cmd, "version")) {
		struct buf out = BUF_INIT;
		version_text(&out);
		fputs(buf_str(&out), stdout);
		buf_release(&out);
		return 0;
	}
	if (!strcmp(cmd, "healthcheck") && f.help)
		return fputs(usage_healthcheck, stdout) < 0;
	if (!strcmp(cmd, "healthcheck"))
		return healthcheck_command(f.listen_address, f.config_file, DEFAULT_CONFIG);
	if (!strcmp(cmd, "serve")) {
		if (f.help && first == 1) {
			fputs(usage_main, stdout);
			return 0;
		}
		return cmd_serve(&f);
	}
	if (!strcmp(cmd, "check-config"))
		return cmd_check_config(&f);
	if (!strcmp(cmd, "render"))
		return cmd_render(&f);
	if (!strcmp(cmd, "map"))
		return cmd_map(&f);
	if (!strcmp(cmd, "janitor"))
		return cmd_janitor(&f);
	if (!strcmp(cmd, "help")) {
		fputs(usage_main, stdout);
		return 0;
	}
	fprintf(stderr, "alertbridge: unknown command \"%s\"\n\n%s", cmd, usage_main);
	return 2;
}
