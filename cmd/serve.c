/*
 * cmd/serve.c - `alertbridge serve`, the service: load the config, open the
 * store, build the intake, the bridge, the janitor and the HTTP listeners
 * (their routes: cmd/serve_routes.c), run until SIGTERM or SIGINT (SIGHUP
 * reloads), tear down in order.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/serve.h"
#include "bridge/bridge.h"
#include "bridge/gh_webhook.h"
#include "bridge/render.h"
#include "bridge/webhook.h"
#include "core/active.h"
#include "core/auth.h"
#include "core/config.h"
#include "store/db.h"
#include "core/http_client.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/reload.h"
#include "core/retention.h"
#include "store/serve_lock.h"
#include "store/store.h"
#include "store/store_events.h"
#include "core/version.h"
#include "ha/leader.h"
#include "janitor/janitor.h"
#include "janitor/kubeconfig.h"
#include "janitor/slack_interact.h"
#include "web/status_page.h"
#include "core/banned.h"

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
	leader_free(s->leader);
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

/* bridge_options.note_pending: the lock file's note for the next start. */
static void note_pending(void *ctx, const char *text)
{
	serve_lock_note(ctx, text);
}

static int lease_held(void *ctx)
{
	return leader_is_leader(ctx);
}

/*
 * Leader election on the Lease leader_election names, reached with the
 * janitor's kubernetes settings by a client of its own whose timeouts stay
 * under the retry period, so a slow API server cannot keep a stale leader
 * acting (ha/leader.h).
 */
static int setup_leader(struct service *s, struct buf *err)
{
	const struct cfg_janitor *jc = &s->cfg->janitor;
	const struct cfg_leader_election *le = &s->cfg->leader_election;
	struct kube_config kc;
	struct kube_options ko = { 0 };
	struct leader_options lo = { 0 };
	int64_t lease_ms = le->lease_duration_ms ? le->lease_duration_ms
						 : LEADER_DEFAULT_LEASE_MS;
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
	s->leader = leader_new(&lo);
	s->is_leader = lease_held;
	s->leader_ctx = s->leader;
	return 0;
}

/*
 * Who acts (core/active.h): the Lease when leader election is on, else the
 * store's worker lock on PostgreSQL, else always.  The grace after taking the
 * lock is the longest one request of a worker may last: GitHub's timeout, or
 * the Kubernetes client's 30 s with the janitor.
 */
static int64_t active_grace_ms(const struct service *s)
{
	int64_t grace = s->cfg->github.timeout_ms;

	if (s->cfg->janitor.enabled && grace < KUBE_DEFAULT_TIMEOUT_MS)
		grace = KUBE_DEFAULT_TIMEOUT_MS;
	return grace;
}

static void setup_active(struct service *s)
{
	struct active_options ao = { 0 };

	ao.store = s->store;
	ao.lease = s->is_leader;
	ao.lease_ctx = s->leader_ctx;
	ao.metrics = s->metrics;
	ao.grace_ms = active_grace_ms(s);
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
 * Test hook (tests/model, tests/integration): --test.second-ms=N (1..1000, cmd/cmd.h) makes
 * one second of the bridge's own pacing and backoff last N ms: mutating GitHub calls N ms
 * apart, the content budget's window 60 N ms, the client's backoff from N ms, the event retry
 * schedule from 5 N ms up to 600 N ms.  Waits GitHub asks for (retry-after, x-ratelimit-reset)
 * are not scaled.
 */
static void test_second(struct bridge_options *bo, const struct flags *f)
{
	int64_t n = f->test_second_ms;
	char v[24];

	if (n < 1 || n > 1000)
		return;
	snprintf(v, sizeof(v), "%lld", (long long)n);
	log_msg(LOG_WARN, "test hook: pacing and backoff scaled", "second_ms", v);
	bo->gh_min_interval_ms = n;
	bo->gh_backoff_base_ms = n;
	bo->gh_window_ms = 60 * n;
	bo->retry_base_ms = 5 * n;
	bo->retry_max_ms = 600 * n;
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
	if (s->cfg->janitor.enabled && s->cfg->leader_election.enabled &&
	    setup_leader(s, &err))
		goto out;
	setup_active(s);
	bo.may_act = active_may_act;
	bo.may_act_ctx = s->active;
	/* A write the last process or replica sent may still land: wait it out (bridge.h). */
	bo.settle_at_start = serve_lock_unclean(s->lock) && !serve_lock_unclean_note(s->lock);
	bo.pending_note = serve_lock_unclean_note(s->lock);  /* also after a clean stop */
	bo.note_pending = note_pending;
	bo.note_ctx = s->lock;
	bo.settle_on_gain = s->leader != NULL || db_target_is_postgres(db);
	bo.settle_gain_waited_ms = s->leader ? 0 : active_grace_ms(s);  /* the worker lock's */
	if (serve_lock_unclean(s->lock)) {
		char pid[24];

		snprintf(pid, sizeof(pid), "%ld", serve_lock_unclean(s->lock));
		log_msg(LOG_WARN, "the previous serve did not stop cleanly", "pid", pid);
	}
	test_second(&bo, f);
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
	if (serve_routes(s, &so, f))
		goto out;  /* logged */
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
	if (s->leader && leader_start(s->leader)) {
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

int cmd_serve(const struct flags *f)
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
		leader_stop(s.leader);  /* releases the Lease for the standby */
		bridge_stop(s.bridge);
		if (!bridge_settle_until(s.bridge))  /* nothing sent is left in flight */
			serve_lock_settled(s.lock);
		active_stop(s.active);  /* the workers' last calls ended: the standby may take over */
	}
	service_release(&s);
	http_global_cleanup();
	if (rc == 0)
		log_msg(LOG_INFO, "stopped", NULL, NULL);
	return rc;
}
