/*
 * cmd/check_config.c - `alertbridge check-config FILE`: load a configuration
 * as serve would (secret files, templates, a kubeconfig file), print SUCCESS
 * and the effective configuration, or the first error.  With --reference:
 * print the configuration reference (cfg_reference(), docs/configuration.md).
 */
#include <stdio.h>

#include "cmd/cmd.h"
#include "bridge/render.h"
#include "core/buf.h"
#include "core/clock.h"
#include "core/config.h"
#include "janitor/janitor.h"
#include "core/banned.h"

static const char usage_check[] =
	"usage: alertbridge check-config FILE\n"
	"       alertbridge check-config --reference\n"
	"\n"
	"Loads FILE as the service would (secret files included) and compiles every\n"
	"template.  Prints SUCCESS and the effective configuration (secrets hidden), or\n"
	"the first error with its line, and exits 1.\n"
	"\n"
	"  --reference  print the reference of every configuration key (type, default,\n"
	"               bounds, reload class, description) in Markdown and exit 0: the\n"
	"               text of docs/configuration.md (make docs writes it)\n";

int cmd_check_config(const struct flags *f)
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
	if (f->reference) {
		if (f->nargs) {
			fputs(usage_check, stderr);
			return 2;
		}
		cfg_reference(&dump);
		fputs(buf_str(&dump), stdout);
		buf_release(&dump);
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
