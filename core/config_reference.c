/*
 * config_reference.c - walks of the loader's field tables that are not a
 * parse: cfg_each_key() (the keys of struct config, with their reload
 * class, for reload.c), cfg_set_defaults() (the rows' defaults, for
 * cfg_defaults() and the records') and cfg_reference() (the configuration
 * reference in Markdown, for `check-config --reference` and
 * docs/configuration.md).
 * Defaults are read from a configuration parsed from a file that sets only
 * the required keys, so they come from the one place defaults are set
 * (cfg_defaults() and the records' defaults in config_fields.c and
 * config_janitor.c).  Part of the loader; shares config_int.h.
 */
#include "config_int.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "duration.h"
#include "xalloc.h"
#include "banned.h"

/* The enums a FUNC row names are read as int (ENUM rows, the restart list). */
_Static_assert(sizeof(enum log_level) == sizeof(int), "enum log_level is an int");
_Static_assert(sizeof(enum cfg_owned) == sizeof(int), "enum cfg_owned is an int");
_Static_assert(sizeof(enum cfg_issue_per) == sizeof(int), "enum cfg_issue_per is an int");

/* A record row (receivers, routes, policies, credentials): a list of mappings. */
static int is_record(const struct field *f)
{
	return f->type == F_FUNC && f->sub;
}

/* The class of row f inside a mapping of class outer: a restart mapping holds for all. */
static enum cfg_reload class_in(enum cfg_reload outer, const struct field *f)
{
	return outer == CFG_RESTART ? CFG_RESTART : f->reload;
}

static enum cfg_kind kind_of(const struct field *f)
{
	switch (f->type) {
	case F_STR:
	case F_PATH:
	case F_SECRET:
		return CFG_KIND_STR;
	case F_BOOL:
		return CFG_KIND_INT;
	case F_UINT:
		return CFG_KIND_UNSIGNED;
	case F_SIZE:
		return CFG_KIND_SIZE;
	case F_INT64:
	case F_DURATION:
		return CFG_KIND_I64;
	case F_FUNC:
		return f->names ? CFG_KIND_INT : CFG_KIND_OTHER;
	case F_LIST:
	case F_MAP:
		break;
	}
	return CFG_KIND_OTHER;
}

static void each_key(const struct fieldset *fs, const char *path, size_t base,
		     enum cfg_reload outer, void (*fn)(const struct cfg_key *key, void *arg),
		     void *arg)
{
	for (size_t i = 0; i < fs->count; i++) {
		const struct field *f = &fs->fields[i];
		char sub[PATH_MAX_LEN];
		struct cfg_key k;

		if (f->alias)
			continue;  /* a name of a key listed under its own */
		cfg_join_key(sub, path, f->key);
		k.reload = class_in(outer, f);
		if (f->type == F_MAP) {
			each_key(f->sub, sub, base + f->off, k.reload, fn, arg);
			continue;
		}
		if (is_record(f))
			continue;
		k.path = sub;
		k.kind = kind_of(f);
		k.off = base + (k.reload == CFG_RESTART_PRESENCE ? f->off2 : f->off);
		fn(&k, arg);
	}
}

void cfg_each_key(void (*fn)(const struct cfg_key *key, void *arg), void *arg)
{
	each_key(&cfg_root_set, "", 0, CFG_LIVE, fn, arg);
}

/* ---- defaults ---- */

void cfg_set_defaults(const struct fieldset *fs, void *obj)
{
	for (size_t i = 0; i < fs->count; i++) {
		const struct field *f = &fs->fields[i];
		void *v = (char *)obj + f->off;

		if (f->dflt || f->alias)
			continue;
		switch (f->type) {
		case F_STR:
		case F_PATH:
			if (f->def_str)
				*(char **)v = xstrdup(f->def_str);
			break;
		case F_LIST:
			if (f->def_str) {
				struct cfg_list *l = v;

				l->items = xcalloc(2, sizeof(char *));
				l->items[0] = xstrdup(f->def_str);
				l->count = 1;
			}
			break;
		case F_BOOL:
		case F_UINT:
		case F_SIZE:
		case F_INT64:
		case F_DURATION:
			cfg_num_set(f, v, f->def);
			break;
		case F_MAP:
			cfg_set_defaults(f->sub, v);
			break;
		case F_FUNC:
			if (f->names)
				cfg_num_set(f, v, f->def);
			break;
		case F_SECRET:
			break;
		}
	}
}

/* ---- the reference ---- */

/* Every required key, so that each record has one item to read defaults from. */
static const char minimal_yaml[] =
	"receivers:\n"
	"- name: x\n"
	"  repo: owner/name\n"
	"  routes:\n"
	"  - {}\n"
	"janitor:\n"
	"  policies:\n"
	"  - alertname: x\n";

/* The defaults of a record whose list the minimal configuration leaves empty. */
static const union {
	max_align_t align;
	char bytes[512];
} zeroes;

_Static_assert(sizeof(struct cfg_github_cred) <= sizeof(zeroes), "zeroes holds a credential");

/* Append s with the characters Markdown's tables read ('|') escaped. */
static void add_cell(struct buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			(void)buf_addch(out, '\\');
		(void)buf_addch(out, *s);
	}
}

static void add_quoted(struct buf *out, const char *s)
{
	if (!s) {
		(void)buf_adds(out, "`null`");
		return;
	}
	(void)buf_adds(out, "`\"");
	add_cell(out, s);
	(void)buf_adds(out, "\"`");
}

/* The default of row f read from obj (NULL: none known), as cfg_dump() writes it. */
static void add_default(struct buf *out, const struct field *f, const char *obj)
{
	const void *v = obj ? obj + f->off : NULL;
	struct buf d = BUF_INIT;

	if (f->type == F_MAP)
		return;
	if (f->type == F_FUNC && !f->names) {
		(void)buf_adds(out, is_record(f) ? "`[]`" : "`{}`");
		return;
	}
	if (!v) {
		(void)buf_adds(out, "`null`");
		return;
	}
	switch (f->type) {
	case F_STR:
	case F_PATH:
	case F_SECRET:
		add_quoted(out, *(char *const *)v);
		return;
	case F_BOOL:
		(void)buf_adds(out, cfg_num_get(f, v) ? "`true`" : "`false`");
		return;
	case F_UINT:
	case F_SIZE:
	case F_INT64:
		(void)buf_printf(out, "`%" PRId64 "`", cfg_num_get(f, v));
		return;
	case F_DURATION:
		duration_format(cfg_num_get(f, v), &d);
		(void)buf_printf(out, "`%s`", buf_str(&d));
		buf_release(&d);
		return;
	case F_LIST: {
		const struct cfg_list *l = v;

		(void)buf_adds(out, "`[");
		for (size_t i = 0; i < l->count; i++)
			(void)buf_printf(out, "%s\"%s\"", i ? ", " : "", l->items[i]);
		(void)buf_adds(out, "]`");
		return;
	}
	case F_FUNC:
		(void)buf_printf(out, "`%s`", f->names[cfg_num_get(f, v)]);
		return;
	case F_MAP:
		break;
	}
}

static void add_type(struct buf *out, const struct field *f)
{
	static const char *const types[] = {
		[F_STR] = "string", [F_PATH] = "path", [F_SECRET] = "path (secret file)",
		[F_BOOL] = "boolean", [F_UINT] = "integer", [F_SIZE] = "integer",
		[F_INT64] = "integer", [F_DURATION] = "duration", [F_LIST] = "list of strings",
		[F_MAP] = "mapping",
	};

	if (f->type != F_FUNC) {
		(void)buf_adds(out, types[f->type]);
		return;
	}
	if (!f->names) {
		(void)buf_adds(out, f->what);
		return;
	}
	(void)buf_adds(out, "one of ");
	for (size_t i = 0; f->names[i]; i++)
		(void)buf_printf(out, "%s`%s`", i ? ", " : "", f->names[i]);
}

static void add_bounds(struct buf *out, const struct field *f)
{
	if (f->type == F_UINT || f->type == F_SIZE || f->type == F_INT64) {
		if (f->max == INT64_MAX)
			(void)buf_printf(out, ">= %" PRIu64, f->min);
		else
			(void)buf_printf(out, "%" PRIu64 " to %" PRIu64, f->min, f->max);
	} else if (f->type == F_DURATION && f->min) {
		(void)buf_adds(out, "> 0s");
	}
}

static const char *class_name(enum cfg_reload r)
{
	return r == CFG_RESTART ? "restart" : r == CFG_RESTART_PRESENCE ?
	       "restart to add or remove" : "live";
}

/*
 * One mapping's section: heading path (fs at obj in the defaults, NULL:
 * none), its doc, a row per key, then the sections of its mappings and
 * records.  dflt: the default in words of every key that says none.
 */
static void section(struct buf *out, const struct fieldset *fs, const char *path,
		    const char *doc, const char *obj, enum cfg_reload outer, const char *dflt)
{
	if (*path)
		(void)buf_printf(out, "\n## `%s`\n\n", path);
	else
		(void)buf_adds(out, "\n## Top level\n\n");
	if (doc)
		(void)buf_printf(out, "%s\n\n", doc);
	(void)buf_adds(out, "| Key | Type | Default | Bounds | Reload | Description |\n"
		       "|---|---|---|---|---|---|\n");
	for (size_t i = 0; i < fs->count; i++) {
		const struct field *f = &fs->fields[i];
		char sub[PATH_MAX_LEN];
		const char *d = f->dflt ? f->dflt : dflt;

		cfg_join_key(sub, path, f->key);
		(void)buf_printf(out, "| `%s%s` | ", sub, is_record(f) ? "[]" : "");
		add_type(out, f);
		(void)buf_adds(out, " | ");
		if (d && f->type != F_MAP)
			add_cell(out, d);
		else
			add_default(out, f, obj);
		(void)buf_adds(out, " | ");
		add_bounds(out, f);
		/* A mapping's own class only when it holds for every key inside. */
		(void)buf_printf(out, " | %s | ", f->type == F_MAP &&
				 class_in(outer, f) != CFG_RESTART ? "per key" :
				 class_name(class_in(outer, f)));
		add_cell(out, f->doc);
		if ((f->type == F_MAP && !f->alias) || is_record(f))
			(void)buf_adds(out, " See below.");
		(void)buf_adds(out, " |\n");
	}
	for (size_t i = 0; i < fs->count; i++) {
		const struct field *f = &fs->fields[i];
		char sub[PATH_MAX_LEN];
		const char *d = f->dflt ? f->dflt : dflt;

		cfg_join_key(sub, path, f->key);
		if (f->type == F_MAP && !f->alias) {
			section(out, f->sub, sub, f->doc, obj ? obj + f->off : NULL,
				class_in(outer, f), d);
		} else if (is_record(f)) {
			const char *item = NULL;
			char items[PATH_MAX_LEN];

			if (obj)
				item = *(char *const *)(const void *)(obj + f->items_off);
			cfg_path_printf(items, "%s[]", sub);
			section(out, f->sub, items, f->doc, item ? item : zeroes.bytes,
				class_in(outer, f), d);
		}
	}
}

static const char intro[] =
	"# Configuration reference\n"
	"\n"
	"<!-- Generated by `alertbridge check-config --reference` from the loader's tables\n"
	"     (core/config_fields.c, core/config_janitor.c): edit those, then `make docs`. -->\n"
	"\n"
	"Every key of the YAML file the loader accepts, one section per mapping and per\n"
	"list of records (`receivers[]` is one item of `receivers`).  Every key is optional\n"
	"unless its default says \"required\"; a plain null (`~`, `null` or nothing) keeps the\n"
	"default.  Relative paths are resolved against the directory of the configuration\n"
	"file (`database` is not: it is relative to the working directory).  Durations are\n"
	"written as Prometheus writes them (`90s`, `1h30m`, `7d`); booleans as YAML 1.1\n"
	"(`true`/`false`, `yes`/`no`, `on`/`off`).  A `*_file` key names a file that holds\n"
	"a secret on one line.  `alertbridge check-config FILE` prints the effective\n"
	"configuration with the defaults filled in (secrets hidden).\n"
	"\n"
	"Reload (SIGHUP, `POST /-/reload` with `--web.enable-lifecycle`, or\n"
	"`--config.auto-reload-interval`): a **live** key takes its new value at once; a\n"
	"**restart** key keeps its running value until the process restarts and the reload\n"
	"logs \"config change needs a restart, the running value stays\" with the key; for a\n"
	"key marked **restart to add or remove**, adding or removing the file needs a\n"
	"restart while a new content of the file is read on reload.\n";

void cfg_reference(struct buf *out)
{
	struct config *dflt = NULL;
	struct buf err = BUF_INIT;

	/* Cannot fail (a test parses it); without it every default reads as null. */
	if (cfg_parse(minimal_yaml, sizeof(minimal_yaml) - 1, "defaults", NULL, &dflt,
		      &err) != ERR_OK)
		dflt = NULL;
	buf_release(&err);
	(void)buf_adds(out, intro);
	section(out, &cfg_root_set, "", NULL, (const char *)dflt, CFG_LIVE, NULL);
	cfg_free(dflt);
}
