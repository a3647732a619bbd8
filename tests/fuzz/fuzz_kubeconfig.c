/*
 * fuzz_kubeconfig.c - libFuzzer harness for the kubeconfig loader:
 * kube_config_parse() on a fuzzed file written into a fresh temp dir (which
 * also holds a CA, a client certificate and key and a token), with the file's
 * current-context and with a named one.  Inputs with a scalar that could name
 * a file outside that dir (absolute, "~", "..") are skipped.  Exec plugins are
 * parsed, never run.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "janitor/kubeconfig.h"
#include "tests/fuzz/fuzz_yaml_guard.h"

#include "core/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

static const char *const files[] = { "ca.crt", "client.crt", "client.key", "token", "kubeconfig" };

/* The harness's temp dir and the kubeconfig in it (set once at start). */
static char dir[64];
static char path[128];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	/* The kubeconfig too: each input overwrites it before it is read. */
	fuzz_temp_dir(dir, sizeof(dir), "fuzz_kubeconfig", files, sizeof(files) / sizeof(files[0]),
		      "-----BEGIN X-----\nAAAA\n-----END X-----\n");
	snprintf(path, sizeof(path), "%s/kubeconfig", dir);
	return 0;
}

static void parse(const char *context)
{
	struct kube_config cfg = KUBE_CONFIG_INIT;
	struct buf err = BUF_INIT;

	if (kube_config_parse(path, context, &cfg, &err) != ERR_OK) {
		if (cfg.server || !err.len || strncmp(buf_str(&err), "kubeconfig ", 11))
			abort(); /* empty on error; the message names the file */
	} else if (!cfg.server || !cfg.namespace || !cfg.source) {
		abort();
	}
	kube_config_release(&cfg);
	buf_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f;

	if (fuzz_yaml_names_outside((const char *)data, size))
		return -1; /* not added to the corpus */
	f = fopen(path, "wb");
	if (!f || (size && fwrite(data, size, 1, f) != 1) || fclose(f))
		abort();
	parse(NULL);
	parse("fuzz");
	return 0;
}
