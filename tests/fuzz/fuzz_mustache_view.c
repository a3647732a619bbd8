/*
 * fuzz_mustache_view.c - libFuzzer harness for the Mustache renderer with a
 * fuzzed JSON view: the input is read as JSON (jansson) and every template
 * shipped in templates/ (embedded) plus one that uses every tag kind is
 * rendered against it, in every escape mode.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/buf.h"
#include "core/embed.h"
#include "core/mustache.h"
#include "tests/fuzz/fuzz_mustache_opts.h"

#include "core/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char ALL_TAGS[] =
	"{{! comment }}{{a}} {{{a}}} {{&a}} {{a.b.c}} {{.}}\n"
	"{{#a}}[{{.}}|{{b}}|{{#c}}{{.}}{{/c}}]{{/a}}{{^a}}no a{{/a}}\n"
	"  {{>p}}\n"
	"{{>*a}}{{=<% %>=}}<% x %><%={{ }}=%>{{#list}}{{name}}={{value}}{{/list}}\n";

static const struct fuzz_partial PARTIALS[] = {
	{ "p", "{{#x}}{{y}}{{/x}}\n" },
	{ NULL, NULL },
};

static void render(const char *tmpl, size_t len, const json_t *view)
{
	static const enum mustache_escape modes[] = { MUSTACHE_ESCAPE_HTML, MUSTACHE_ESCAPE_NONE,
						      MUSTACHE_ESCAPE_SLACK };
	struct mustache *m = NULL;
	struct buf out = BUF_INIT, err = BUF_INIT;

	if (mustache_compile(tmpl, len, &m, &err) != ERR_OK)
		abort(); /* the fixed templates are valid */
	for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
		struct mustache_options opt = fuzz_mustache_options(modes[i], PARTIALS);
		enum err rc;

		buf_reset(&out);
		rc = mustache_render_compiled(m, view, &opt, &out, &err);
		if (rc != ERR_OK && rc != ERR_TOOBIG)
			abort(); /* a view cannot make a valid template invalid */
		if (rc == ERR_TOOBIG && out.len)
			abort();
	}
	mustache_free(m);
	buf_release(&out);
	buf_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *view = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL,
				  NULL);
	const char *name;
	size_t len;

	if (!view)
		return 0;
	for (size_t i = 0; (name = embed_name(i)); i++) {
		const char *t = embed_get(name, &len);

		if (t && strstr(name, ".mustache"))
			render(t, len, view);
	}
	render(ALL_TAGS, sizeof(ALL_TAGS) - 1, view);
	json_decref(view);
	return 0;
}
