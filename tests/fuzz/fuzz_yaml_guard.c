/*
 * fuzz_yaml_guard.c - the path guard of the config and kubeconfig fuzz
 * harnesses (see fuzz_yaml_guard.h).  Built into each of those harnesses.
 */
#include <stdlib.h>
#include <string.h>

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
