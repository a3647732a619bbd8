/*
 * fuzz_config.c - libFuzzer harness for the configuration loader: cfg_parse()
 * on fuzzed YAML with base_dir a fresh temp dir holding a few secret files.
 * Inputs with a scalar that could name a file outside that dir (absolute,
 * "~", "..") are skipped, so the fuzzer never reads files of the machine.
 * Accepted configs are dumped with cfg_dump(), which must parse again and
 * never contain a secret.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/buf.h"
#include "core/config.h"
#include "tests/fuzz/fuzz_yaml_guard.h"

#include "core/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The secret every file in the temp dir holds: a dump that contains it leaks. */
#define SECRET "fuzzSecretValue0123456789"

/* The harness's temp dir (libFuzzer's process-wide state; set once at start). */
static char dir[64];

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const names[] = { "token", "password", "slack", "webhook", "key.pem",
					     "ca.pem" };

	(void)argc;
	(void)argv;
	unsetenv("GITHUB_TOKEN");
	fuzz_temp_dir(dir, sizeof(dir), "fuzz_config", names, sizeof(names) / sizeof(names[0]),
		      SECRET "\n");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct config *cfg = NULL, *again = NULL;
	struct buf err = BUF_INIT, dump = BUF_INIT;
	enum err rc;
	/* The fuzzer learns the secret from the checks below; when the input holds it, it is no
	 * secret of the config's any more. */
	int secret_in_input = memmem(data, size, SECRET, sizeof(SECRET) - 1) != NULL;

	if (fuzz_yaml_names_outside((const char *)data, size))
		return -1; /* not added to the corpus */
	rc = cfg_parse((const char *)data, size, "fuzz.yml", dir, &cfg, &err);
	if (rc != ERR_OK) {
		if (cfg || !err.len || strncmp(buf_str(&err), "fuzz.yml", 8))
			abort(); /* errors name the file */
		if (!secret_in_input && strstr(buf_str(&err), SECRET))
			abort();
		goto out;
	}
	cfg_dump(cfg, &dump);
	if (!secret_in_input && strstr(buf_str(&dump), SECRET))
		abort(); /* secrets never written */
	rc = cfg_parse(buf_str(&dump), dump.len, "dump.yml", dir, &again, &err);
	if (rc != ERR_OK) {
		fprintf(stderr, "dump does not parse: %s\n%s\n", buf_str(&err), buf_str(&dump));
		abort();
	}
out:
	cfg_free(cfg);
	cfg_free(again);
	buf_release(&err);
	buf_release(&dump);
	return 0;
}
