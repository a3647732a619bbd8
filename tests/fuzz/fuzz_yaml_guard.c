/*
 * fuzz_yaml_guard.c - the path guard and the temp dir of the config and
 * kubeconfig fuzz harnesses (see fuzz_yaml_guard.h).  Built into each harness.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "tests/fuzz/fuzz_yaml_guard.h"

#include "core/banned.h"

static int unsafe_scalar(const unsigned char *v, size_t n)
{
	if (n > 0 && (v[0] == '/' || v[0] == '~'))
		return 1;
	for (size_t i = 0; i + 1 < n; i++)
		if (v[i] == '.' && v[i + 1] == '.')
			return 1;
	return 0;
}

int fuzz_yaml_names_outside(const char *data, size_t len)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	int unsafe = 0;

	if (!yaml_parser_initialize(&parser))
		abort();
	yaml_parser_set_input_string(&parser, (const unsigned char *)data, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_parser_delete(&parser);
		return 0;
	}
	for (yaml_node_t *n = doc.nodes.start; n < doc.nodes.top && !unsafe; n++)
		if (n->type == YAML_SCALAR_NODE)
			unsafe = unsafe_scalar(n->data.scalar.value, n->data.scalar.length);
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	return unsafe;
}

/* The temp dir fuzz_temp_dir() made, for remove_temp_dir() at exit. */
static const char *temp_dir;
static const char *const *temp_names;
static size_t temp_n;

static void temp_path(char *path, size_t size, size_t i)
{
	if ((size_t)snprintf(path, size, "%s/%s", temp_dir, temp_names[i]) >= size)
		abort();
}

static void remove_temp_dir(void)
{
	char path[256];

	for (size_t i = 0; i < temp_n; i++) {
		temp_path(path, sizeof(path), i);
		unlink(path);
	}
	rmdir(temp_dir);
}

void fuzz_temp_dir(char *dir, size_t dir_size, const char *prefix, const char *const *names,
		   size_t n, const char *text)
{
	char path[256];

	if ((size_t)snprintf(dir, dir_size, "/tmp/%s.XXXXXX", prefix) >= dir_size || !mkdtemp(dir))
		abort();
	temp_dir = dir;
	temp_names = names;
	temp_n = n;
	for (size_t i = 0; i < n; i++) {
		FILE *f;

		temp_path(path, sizeof(path), i);
		f = fopen(path, "w");
		if (!f || fputs(text, f) == EOF || fclose(f))
			abort();
	}
	atexit(remove_temp_dir);
}
