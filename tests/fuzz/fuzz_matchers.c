/*
 * fuzz_matchers.c - libFuzzer harness for route matchers (core/matchers.h):
 * the fuzzed text (cut at its first NUL) read by each of Alertmanager's
 * grammars, and as the regex of a =~ matcher.  An error says why and adds
 * nothing; every matcher read writes (matcher_format) a text that reads back
 * to the same matcher, and matches a few label values without failing.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/matchers.h"
#include "core/xalloc.h"

#include "core/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const subjects[] = { "", "a", "critical", "café", "a\nb", "123", "\xff" };

static void release(struct cfg_matcher *ms, size_t n)
{
	for (size_t i = 0; i < n; i++)
		matcher_release(&ms[i]);
	free(ms);
}

/* m's text reads back to m, under the default grammar (what a config dump reloads with). */
static void reads_back(const struct cfg_matcher *m)
{
	struct buf text = BUF_INIT, err = BUF_INIT;
	struct cfg_matcher *back = NULL;
	size_t n = 0;

	matcher_format(m, &text);
	if (matcher_parse_list(buf_str(&text), MATCHER_FALLBACK, &back, &n, NULL, &err) != ERR_OK ||
	    n != 1 || back[0].op != m->op || strcmp(back[0].name, m->name) ||
	    strcmp(back[0].value, m->value))
		abort();
	for (size_t i = 0; i < sizeof(subjects) / sizeof(subjects[0]); i++)
		if (matcher_matches(m, subjects[i]) != matcher_matches(&back[0], subjects[i]))
			abort();
	release(back, n);
	buf_release(&text);
	buf_release(&err);
}

static void grammar(const char *text, enum matcher_grammar g)
{
	struct buf err = BUF_INIT, warning = BUF_INIT;
	struct cfg_matcher *ms = NULL;
	size_t n = 0;

	if (matcher_parse_list(text, g, &ms, &n, &warning, &err) != ERR_OK) {
		if (!err.len || n)
			abort();
	} else {
		if (g != MATCHER_FALLBACK && warning.len)
			abort();
		for (size_t i = 0; i < n; i++)
			reads_back(&ms[i]);
	}
	release(ms, n);
	buf_release(&err);
	buf_release(&warning);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = xstrndup((const char *)data, size);
	struct cfg_matcher re = { .name = (char *)"x", .op = CFG_MATCH_RE, .value = text };
	struct buf as_text = BUF_INIT;

	grammar(text, MATCHER_FALLBACK);
	grammar(text, MATCHER_UTF8);
	grammar(text, MATCHER_CLASSIC);
	matcher_format(&re, &as_text);  /* the input as a regex */
	grammar(buf_str(&as_text), MATCHER_UTF8);
	buf_release(&as_text);
	free(text);
	return 0;
}
