/*
 * main.c - alertbridge: Alertmanager webhooks to GitHub issues, and a janitor
 * for idle Kubernetes pods.  This file is the wiring: flags, config, store,
 * server, workers, signals.
 */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "core/banned.h"

#ifndef AB_VERSION
#define AB_VERSION "0.1.0"
#endif

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "version")) {
		printf("alertbridge %s\n", AB_VERSION);
		return 0;
	}
	fprintf(stderr, "usage: alertbridge [serve|check-config|render|map|version]\n");
	return 2;
}
