/*
 * cmd/janitor.c - `alertbridge janitor sweep --once [--dry-run]`: one janitor
 * sweep now, its plan printed one line per annotated pod, then the Slack
 * notices it queued delivered.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/buf.h"
#include "core/config.h"
#include "core/http_client.h"
#include "store/serve_lock.h"
#include "store/store.h"
#include "janitor/janitor.h"
#include "core/banned.h"

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

int cmd_janitor(const struct flags *f)
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
