/*
 * cmd/healthcheck.c - `alertbridge healthcheck`: a container HEALTHCHECK; the
 * probe and the address it asks are core/healthcheck.h's.
 */
#include <stdio.h>

#include "cmd/cmd.h"
#include "core/healthcheck.h"
#include "core/banned.h"

static const char usage_healthcheck[] =
	"usage: alertbridge healthcheck [--web.listen-address=ADDR] [--config.file=FILE]\n"
	"\n"
	"GETs /-/healthy of the alertbridge listening on ADDR (default: the listen_address\n"
	"of the configuration, https when webhook.tls is set; a wildcard host is asked on\n"
	"the loopback), for a container HEALTHCHECK.  A flag not given is taken from the\n"
	"serve command of PID 1 when that is alertbridge (the container's main process).\n"
	"Exit status: 0 healthy (200 within 5 s), 1 anything else.\n";

int cmd_healthcheck(const struct flags *f)
{
	if (f->help)
		return fputs(usage_healthcheck, stdout) < 0;
	return healthcheck_command(f->listen_address, f->config_file, DEFAULT_CONFIG);
}
