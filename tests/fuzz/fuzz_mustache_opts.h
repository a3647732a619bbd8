/*
 * fuzz_mustache_opts.h - shared by the two Mustache fuzz harnesses
 * (fuzz_mustache.c, fuzz_mustache_view.c): the options they render with, a
 * fixed table of partials, an output cap and a step budget.  Header only: the
 * Makefile links one helper object into every harness, and these two need it.
 */
#ifndef AB_FUZZ_MUSTACHE_OPTS_H
#define AB_FUZZ_MUSTACHE_OPTS_H

#include <stddef.h>
#include <string.h>

#include "core/mustache.h"

/* Output cap per render: large enough for real templates, small enough to stay fast. */
#define FUZZ_MUSTACHE_OUT_MAX (256u * 1024)

/* One partial of a harness's table; a table ends with { NULL, NULL }. */
struct fuzz_partial {
	const char *name;
	const char *text;
};

/* mustache_options.partial over the table ctx (a const struct fuzz_partial *): the
 * text of the partial called name, NULL when the table has none. */
static inline const char *fuzz_partial(void *ctx, const char *name)
{
	for (const struct fuzz_partial *p = ctx; p->name; p++)
		if (!strcmp(p->name, name))
			return p->text;
	return NULL;
}

/*
 * Options for escape mode esc with the partials of table (static: it must outlive
 * every render), at most FUZZ_MUSTACHE_OUT_MAX bytes out per render and 1,000,000
 * steps (fast enough for the fuzzer; the default budget is unit-tested).
 */
static inline struct mustache_options fuzz_mustache_options(enum mustache_escape esc,
							    const struct fuzz_partial *table)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;

	opt.escape = esc;
	opt.partial = fuzz_partial;
	opt.partial_ctx = (void *)table;
	opt.max_out_bytes = FUZZ_MUSTACHE_OUT_MAX;
	opt.max_steps = 1000000;
	return opt;
}

#endif
