/*
 * config_dump.c - cfg_dump(): the effective configuration as YAML, written by
 * libyaml's emitter (events in, text out) for `alertbridge check-config`,
 * by a walk of the loader's tables (config_int.h): each row by its type, a
 * D_OMIT row left out when unset, a row's own dump function where it has one.
 * Strings are double-quoted scalars, lists flow sequences; libyaml writes a
 * block sequence inside a mapping without indenting it ("receivers:\n- name:").
 * The emitter writes no comments, so a hidden secret is emitted as a key with
 * COMMENT_PREFIX and turned into "# key: <secret>" afterwards.
 */
#include "config_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "duration.h"
#include "matchers.h"
#include "banned.h"

/* A key no configuration has (not [a-z_]): only ours start a line with it. */
#define COMMENT_PREFIX "alertbridge-comment-"

struct emitter {
	yaml_emitter_t e;
	int failed;
};

static int write_out(void *data, unsigned char *p, size_t n)
{
	return buf_add(data, p, n) == ERR_OK;
}

static void emit(struct emitter *y, yaml_event_t *ev, int initialised)
{
	/* Event set-up fails only without memory; emitting only on a bad event order. */
	if (!initialised || y->failed || !yaml_emitter_emit(&y->e, ev))
		y->failed = 1;
}

static void scalar(struct emitter *y, const char *s, yaml_scalar_style_t style)
{
	yaml_event_t ev;

	if (!s) {
		s = "null";
		style = YAML_PLAIN_SCALAR_STYLE;
	}
	emit(y, &ev, yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s,
						  (int)strlen(s), 1, 1, style));
}

static void plain(struct emitter *y, const char *s)
{
	scalar(y, s, YAML_PLAIN_SCALAR_STYLE);
}

static void quoted(struct emitter *y, const char *s)
{
	scalar(y, s, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

enum node { MAPPING, SEQUENCE };

/* Open a mapping or a sequence, in flow style ({...}, [...]) when flow. */
static void start(struct emitter *y, enum node kind, int flow)
{
	yaml_event_t ev;

	if (kind == SEQUENCE)
		emit(y, &ev, yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1,
			flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE));
	else
		emit(y, &ev, yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1,
			flow ? YAML_FLOW_MAPPING_STYLE : YAML_BLOCK_MAPPING_STYLE));
}

/* Close what start() opened. */
static void end(struct emitter *y, enum node kind)
{
	yaml_event_t ev;

	emit(y, &ev, kind == SEQUENCE ? yaml_sequence_end_event_initialize(&ev) :
					yaml_mapping_end_event_initialize(&ev));
}

static void kv_str(struct emitter *y, const char *key, const char *value)
{
	plain(y, key);
	quoted(y, value);
}

/* key: file, then the comment "# secret_name: <secret>" when the secret was read. */
static void kv_secret(struct emitter *y, const char *key, const char *file,
		      const char *secret_name, const char *secret)
{
	char k[128];

	if (!file)
		return;
	kv_str(y, key, file);
	if (secret) {
		snprintf(k, sizeof(k), COMMENT_PREFIX "%s", secret_name);
		plain(y, k);
		plain(y, "<secret>");
	}
}

static void kv_dur(struct emitter *y, const char *key, int64_t ms)
{
	struct buf d = BUF_INIT;

	duration_format(ms, &d);
	plain(y, key);
	plain(y, buf_str(&d));
	buf_release(&d);
}

static void kv_num(struct emitter *y, const char *key, uint64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRIu64, v);
	plain(y, key);
	plain(y, s);
}

static void kv_bool(struct emitter *y, const char *key, int v)
{
	plain(y, key);
	plain(y, v ? "true" : "false");
}

/* key: a mapping of the n pairs (flow "{}" when empty), values quoted. */
static void kv_pairs(struct emitter *y, const char *key, const struct cfg_pair *p, size_t n)
{
	plain(y, key);
	start(y, MAPPING, n == 0);
	for (size_t i = 0; i < n; i++) {
		quoted(y, p[i].key);
		quoted(y, p[i].value);
	}
	end(y, MAPPING);
}

static void kv_list(struct emitter *y, const char *key, const struct cfg_list *l)
{
	plain(y, key);
	start(y, SEQUENCE, 1);
	for (size_t i = 0; i < l->count; i++)
		quoted(y, l->items[i]);
	end(y, SEQUENCE);
}

/* ---- the rows of the loader's tables, in their order ---- */

static void dump_map(struct emitter *y, const struct fieldset *fs, const char *obj);

static size_t count_at(const struct field *f, const char *obj)
{
	return *(const size_t *)(const void *)(obj + f->count_off);
}

static const void *items_at(const struct field *f, const char *obj)
{
	return *(const void *const *)(const void *)(obj + f->items_off);
}

/* 1 when row f of obj is unset: a NULL string, a 0 number, no records or pairs. */
static int unset(const struct field *f, const char *obj)
{
	const void *v = obj + f->off;

	switch (f->type) {
	case F_STR:
	case F_PATH:
	case F_SECRET:
		return !*(char *const *)v;
	case F_BOOL:
	case F_UINT:
	case F_SIZE:
	case F_INT64:
	case F_DURATION:
		return !cfg_num_get(f, v);
	case F_LIST:
		return !((const struct cfg_list *)v)->count;
	case F_MAP:
		return unset(&f->sub->fields[0], v);
	case F_FUNC:
		return f->names ? !cfg_num_get(f, v) : !count_at(f, obj);
	}
	return 0;
}

/* A *_file row: the file, and the comment naming its secret (the key without _file). */
static void dump_secret(struct emitter *y, const struct field *f, const char *obj)
{
	char name[64];
	size_t n = strlen(f->key) - strlen("_file");

	snprintf(name, sizeof(name), "%.*s", (int)n, f->key);
	kv_secret(y, f->key, *(char *const *)(const void *)(obj + f->off), name,
		  *(char *const *)(const void *)(obj + f->off2));
}

void cfg_dump_github_token(struct emitter *y, const struct field *f, const char *obj)
{
	const struct cfg_github *g = (const void *)obj;

	dump_secret(y, f, obj);
	if (g->token_from_env) {
		plain(y, COMMENT_PREFIX "token");
		plain(y, "<secret> (from GITHUB_TOKEN)");
	}
}

void cfg_dump_matchers(struct emitter *y, const struct field *f, const char *obj)
{
	const struct cfg_route *rt = (const void *)obj;
	struct buf m = BUF_INIT;

	plain(y, f->key);
	start(y, SEQUENCE, 1);
	for (size_t k = 0; k < rt->matchers_count; k++) {
		buf_reset(&m);
		matcher_format(&rt->matchers[k], &m);
		quoted(y, buf_str(&m));
	}
	end(y, SEQUENCE);
	buf_release(&m);
}

/* key: a list of records, each a mapping by f->sub (flow "[]" when empty). */
static void dump_records(struct emitter *y, const struct field *f, const char *obj)
{
	const char *item = items_at(f, obj);
	size_t n = count_at(f, obj);

	plain(y, f->key);
	start(y, SEQUENCE, n == 0);
	for (size_t i = 0; i < n; i++, item += f->item_size) {
		start(y, MAPPING, 0);
		dump_map(y, f->sub, item);
		end(y, MAPPING);
	}
	end(y, SEQUENCE);
}

/* An F_FUNC row: an enum by its name, a list of records, or a mapping of pairs. */
static void dump_func(struct emitter *y, const struct field *f, const char *obj)
{
	const int *v = (const void *)(obj + f->off);

	if (f->names && (f->dump_flags & D_QUOTE)) {
		kv_str(y, f->key, f->names[*v]);
	} else if (f->names) {
		plain(y, f->key);
		plain(y, f->names[*v]);
	} else if (f->sub) {
		dump_records(y, f, obj);
	} else {
		kv_pairs(y, f->key, items_at(f, obj), count_at(f, obj));
	}
}

static void dump_row(struct emitter *y, const struct field *f, const char *obj)
{
	const void *v = obj + f->off;

	if (f->alias || ((f->dump_flags & D_OMIT) && unset(f, obj)))
		return;  /* an alias is dumped as the key it stands for */
	if (f->dump) {
		f->dump(y, f, obj);
		return;
	}
	switch (f->type) {
	case F_STR:
	case F_PATH:
		kv_str(y, f->key, *(char *const *)v);
		return;
	case F_SECRET:
		dump_secret(y, f, obj);
		return;
	case F_BOOL:
		kv_bool(y, f->key, (int)cfg_num_get(f, v));
		return;
	case F_UINT:
	case F_SIZE:
	case F_INT64:
		kv_num(y, f->key, (uint64_t)cfg_num_get(f, v));
		return;
	case F_DURATION:
		kv_dur(y, f->key, cfg_num_get(f, v));
		return;
	case F_LIST:
		kv_list(y, f->key, v);
		return;
	case F_MAP:
		plain(y, f->key);
		start(y, MAPPING, 0);
		dump_map(y, f->sub, v);
		end(y, MAPPING);
		return;
	case F_FUNC:
		dump_func(y, f, obj);
		return;
	}
}

static void dump_map(struct emitter *y, const struct fieldset *fs, const char *obj)
{
	for (size_t i = 0; i < fs->count; i++)
		dump_row(y, &fs->fields[i], obj);
}

/*
 * The document: every row of the tables in their order, each as parsed (a
 * receiver's alertmanager is its effective block, its own or the top
 * level's; a route's fields its own or its receiver's).
 */
static void dump_document(struct emitter *y, const struct config *cfg)
{
	yaml_event_t ev;

	emit(y, &ev, yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING));
	emit(y, &ev, yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1));
	start(y, MAPPING, 0);
	dump_map(y, &cfg_root_set, (const char *)cfg);
	end(y, MAPPING);
	emit(y, &ev, yaml_document_end_event_initialize(&ev, 1));
	emit(y, &ev, yaml_stream_end_event_initialize(&ev));
}

/* Each line "<indent>COMMENT_PREFIXkey: value" of text becomes "<indent># key: value". */
static void comments_out(const char *text, struct buf *out)
{
	const char *line = text;

	while (*line) {
		const char *end = strchr(line, '\n');
		size_t indent = strspn(line, " ");
		size_t n = end ? (size_t)(end - line + 1) : strlen(line);

		if (!strncmp(line + indent, COMMENT_PREFIX, strlen(COMMENT_PREFIX))) {
			(void)buf_add(out, line, indent);
			(void)buf_adds(out, "# ");
			line += indent + strlen(COMMENT_PREFIX);
			n -= indent + strlen(COMMENT_PREFIX);
		}
		(void)buf_add(out, line, n);
		line += n;
	}
}

void cfg_dump(const struct config *cfg, struct buf *out)
{
	struct emitter y;
	struct buf text = BUF_INIT;

	memset(&y, 0, sizeof(y));
	if (!yaml_emitter_initialize(&y.e))
		abort();  /* only without memory, as xmalloc */
	yaml_emitter_set_output(&y.e, write_out, &text);
	yaml_emitter_set_unicode(&y.e, 1);
	yaml_emitter_set_width(&y.e, -1);  /* no folding of long strings */
	yaml_emitter_set_indent(&y.e, 2);
	dump_document(&y, cfg);
	if (!y.failed && !yaml_emitter_flush(&y.e))
		y.failed = 1;
	(void)buf_printf(out, "# effective configuration of %s\n", cfg->path);
	if (y.failed)
		(void)buf_printf(out, "# (not written: %s)\n",
				 y.e.problem ? y.e.problem : "the YAML emitter failed");
	else
		comments_out(buf_str(&text), out);
	yaml_emitter_delete(&y.e);
	buf_release(&text);
}
