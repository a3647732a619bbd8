/*
 * config.c - YAML configuration loader.  libyaml's document API gives a node
 * tree with line numbers; a table of fields per mapping (key, type, offset)
 * walks it, so unknown keys, wrong types and duplicates are caught in one
 * place and every error names file, line and key path.
 */
#include "config.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <yaml.h>

#include "duration.h"
#include "xalloc.h"
#include "banned.h"

#define PATH_MAX_LEN 256
#define MS_S INT64_C(1000)
#define MS_M (60 * MS_S)
#define MS_H (60 * MS_M)
#define MS_D (24 * MS_H)

struct ctx {
	yaml_document_t *doc;
	const char *name;
	const char *base_dir;
	struct buf *errmsg;
	struct config *cfg;
};

enum ftype {
	F_STR,      /* char *; empty or null keeps/sets NULL */
	F_PATH,     /* char *, resolved against base_dir */
	F_SECRET,   /* char * path at off, char * contents at off2 */
	F_BOOL,     /* int */
	F_UINT,     /* unsigned, in [min, max] */
	F_SIZE,     /* size_t, in [min, max] */
	F_INT64,    /* int64_t, in [min, max] */
	F_DURATION, /* int64_t ms; min 1 means "not 0" */
	F_LIST,     /* struct cfg_list */
	F_MAP,      /* nested struct, fields in sub */
	F_FUNC,     /* custom parser fn */
};

struct fieldset;

typedef enum err (*parse_fn)(struct ctx *c, yaml_node_t *node, const char *path, void *field);
typedef enum err (*check_fn)(struct ctx *c, yaml_node_t *map, const char *path, void *obj);

struct field {
	const char *key;
	enum ftype type;
	size_t off;
	size_t off2;
	uint64_t min, max;
	const struct fieldset *sub;
	parse_fn fn;
};

struct fieldset {
	const struct field *fields;
	size_t count;
	check_fn check; /* run after the mapping (also when it is absent or null) */
};

/* ---- errors and node helpers ---- */

static unsigned long line_of(const yaml_node_t *node)
{
	return node ? (unsigned long)node->start_mark.line + 1 : 1;
}

static enum err fail(struct ctx *c, const yaml_node_t *node, const char *path, enum err code,
		     const char *fmt, ...) PRINTF_LIKE(5, 6);

static enum err fail(struct ctx *c, const yaml_node_t *node, const char *path, enum err code,
		     const char *fmt, ...)
{
	va_list ap;

	if (!c->errmsg)
		return code;
	buf_reset(c->errmsg);
	(void)buf_printf(c->errmsg, "%s:%lu: ", c->name, line_of(node));
	if (path && *path)
		(void)buf_printf(c->errmsg, "%s: ", path);
	va_start(ap, fmt);
	(void)buf_vprintf(c->errmsg, fmt, ap);
	va_end(ap);
	return code;
}

static yaml_node_t *node_at(struct ctx *c, int index)
{
	return yaml_document_get_node(c->doc, index);
}

static const char *sval(const yaml_node_t *node)
{
	return (const char *)node->data.scalar.value;
}

/* A plain scalar that YAML reads as null: "", "~", "null". */
static int is_null(const yaml_node_t *node)
{
	const char *v;

	if (!node)
		return 1;
	if (node->type != YAML_SCALAR_NODE || node->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	v = sval(node);
	return !*v || !strcmp(v, "~") || !strcmp(v, "null") || !strcmp(v, "Null") ||
	       !strcmp(v, "NULL");
}

/* What a node is, for "got ..." in messages. */
static void describe(const yaml_node_t *node, char *out, size_t n)
{
	if (node->type == YAML_MAPPING_NODE)
		snprintf(out, n, "a mapping");
	else if (node->type == YAML_SEQUENCE_NODE)
		snprintf(out, n, "a list");
	else if (node->data.scalar.length > 64)
		snprintf(out, n, "\"%.61s...\"", sval(node));
	else
		snprintf(out, n, "\"%s\"", sval(node));
}

static enum err type_error(struct ctx *c, const yaml_node_t *node, const char *path,
			   const char *want)
{
	char got[80];

	describe(node, got, sizeof(got));
	return fail(c, node, path, ERR_INVALID, "expected %s, got %s", want, got);
}

/* The scalar's text in *out, or an error naming want. */
static enum err get_scalar(struct ctx *c, yaml_node_t *node, const char *path, const char *want,
			   const char **out)
{
	if (node->type != YAML_SCALAR_NODE)
		return type_error(c, node, path, want);
	if (strlen(sval(node)) != node->data.scalar.length)
		return fail(c, node, path, ERR_INVALID, "contains a NUL byte");
	*out = sval(node);
	return ERR_OK;
}

/* Format a key path into out (PATH_MAX_LEN bytes); overlong paths are cut. */
static void path_printf(char *out, const char *fmt, ...) PRINTF_LIKE(2, 3);

static void path_printf(char *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, PATH_MAX_LEN, fmt, ap);
	va_end(ap);
}

static void join_key(char *out, const char *path, const char *key)
{
	path_printf(out, "%s%s%s", path, *path ? "." : "", key);
}

/* The value node of key in mapping map, or NULL. */
static yaml_node_t *find_value(struct ctx *c, yaml_node_t *map, const char *key,
			       yaml_node_t **key_node)
{
	yaml_node_pair_t *p;

	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(c, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp(sval(k), key)) {
			if (key_node)
				*key_node = k;
			return node_at(c, p->value);
		}
	}
	return NULL;
}

/* Line of key in map for errors about it; the map itself when absent. */
static yaml_node_t *key_or_map(struct ctx *c, yaml_node_t *map, const char *key)
{
	yaml_node_t *k = NULL;

	find_value(c, map, key, &k);
	return k ? k : map;
}

/* ---- paths and files ---- */

static char *resolve(struct ctx *c, const char *p)
{
	const char *base = c->base_dir;
	struct buf b = BUF_INIT;

	if (p[0] == '/' || !base || !*base || !strcmp(base, "."))
		return xstrdup(p);
	(void)buf_adds(&b, base);
	if (base[strlen(base) - 1] != '/')
		(void)buf_addch(&b, '/');
	(void)buf_adds(&b, p);
	return buf_detach(&b);
}

/*
 * Read the file at path into out (at most max bytes).  ERR_IO with errno's
 * text in *why, or ERR_TOOBIG.
 */
static enum err read_file(const char *path, size_t max, struct buf *out, const char **why)
{
	char chunk[8192];
	enum err rc = ERR_OK;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0) {
		*why = strerror(errno);
		return ERR_IO;
	}
	buf_init(out, max);
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			*why = strerror(errno);
			rc = ERR_IO;
			goto out;
		}
		if (n == 0)
			break;
		if (buf_add(out, chunk, (size_t)n) != ERR_OK) {
			rc = ERR_TOOBIG;
			goto out;
		}
	}
	if (!out->data)
		(void)buf_adds(out, "");
out:
	close(fd);
	if (rc != ERR_OK)
		buf_release(out);
	return rc;
}

static void wipe_free(char *s)
{
	if (!s)
		return;
	explicit_bzero(s, strlen(s));
	free(s);
}

/* Read the secret at path: one trailing newline stripped, one line only. */
static enum err read_secret(struct ctx *c, yaml_node_t *node, const char *path, const char *file,
			    char **out)
{
	struct buf b = BUF_INIT;
	const char *why = "";
	enum err rc = read_file(file, CFG_MAX_SECRET_BYTES, &b, &why);

	if (rc == ERR_IO)
		return fail(c, node, path, ERR_IO, "cannot read \"%s\": %s", file, why);
	if (rc == ERR_TOOBIG)
		return fail(c, node, path, ERR_INVALID, "\"%s\" is larger than %u bytes", file,
			    CFG_MAX_SECRET_BYTES);
	if (b.len && b.data[b.len - 1] == '\n')
		b.len--;
	if (b.len && b.data[b.len - 1] == '\r')
		b.len--;
	b.data[b.len] = '\0';
	if (b.len == 0)
		rc = fail(c, node, path, ERR_INVALID, "\"%s\" is empty", file);
	else if (memchr(b.data, '\n', b.len) || memchr(b.data, '\r', b.len) ||
		 strlen(b.data) != b.len)
		rc = fail(c, node, path, ERR_INVALID,
			  "\"%s\" must hold one line (a newline or NUL byte inside)", file);
	if (rc != ERR_OK) {
		explicit_bzero(b.data, b.cap);
		buf_release(&b);
		return rc;
	}
	*out = buf_detach(&b);
	return ERR_OK;
}

/* ---- scalar conversions ---- */

static int parse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "true", "True", "TRUE", "yes", "Yes", "YES",
					   "on", "On", "ON" };
	static const char *const no[] = { "false", "False", "FALSE", "no", "No", "NO",
					  "off", "Off", "OFF" };

	for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
		if (!strcmp(s, yes[i])) {
			*out = 1;
			return 1;
		}
		if (!strcmp(s, no[i])) {
			*out = 0;
			return 1;
		}
	}
	return 0;
}

/* Decimal digits only, in [min, max]. */
static int parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!*s)
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return 0;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return 0;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	if (v < min || v > max)
		return 0;
	*out = v;
	return 1;
}

/* Replace *dst with s (converted by conv when given); "" leaves it NULL. */
static void set_str(char **dst, const char *s, char *(*conv)(struct ctx *, const char *),
		    struct ctx *c)
{
	free(*dst);
	*dst = NULL;
	if (*s)
		*dst = conv ? conv(c, s) : xstrdup(s);
}

static enum err parse_list(struct ctx *c, yaml_node_t *node, const char *path,
			   struct cfg_list *list)
{
	yaml_node_item_t *it;
	size_t n, i = 0;

	if (node->type != YAML_SEQUENCE_NODE)
		return type_error(c, node, path, "a list of strings");
	n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	for (it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
		yaml_node_t *item = node_at(c, *it);
		char sub[PATH_MAX_LEN];
		const char *s = "";

		path_printf(sub, "%s[%zu]", path, (size_t)(it - node->data.sequence.items.start));
		if (is_null(item))
			return fail(c, item, sub, ERR_INVALID, "expected a string, got null");
		if (get_scalar(c, item, sub, "a string", &s) != ERR_OK)
			return ERR_INVALID;
	}
	for (i = 0; i < list->count; i++)
		free(list->items[i]);
	free(list->items);
	list->items = xcalloc(n + 1, sizeof(char *));
	list->count = n;
	for (i = 0; i < n; i++)
		list->items[i] = xstrdup(sval(node_at(c, node->data.sequence.items.start[i])));
	return ERR_OK;
}

static enum err parse_map(struct ctx *c, yaml_node_t *node, const char *path,
			  const struct fieldset *fs, void *obj);

static enum err parse_field(struct ctx *c, const struct field *f, yaml_node_t *v,
			    const char *path, void *obj)
{
	char *base = obj;
	void *dst = base + f->off;
	const char *s = NULL;
	char range[96];
	uint64_t u;
	int64_t ms;
	int b;
	struct buf why = BUF_INIT;
	enum err rc;

	if (f->type == F_MAP)
		return parse_map(c, v, path, f->sub, dst);
	if (is_null(v))
		return ERR_OK; /* keep the default */
	switch (f->type) {
	case F_STR:
	case F_PATH:
	case F_SECRET:
		if (get_scalar(c, v, path, "a string", &s) != ERR_OK)
			return ERR_INVALID;
		set_str(dst, s, f->type == F_STR ? NULL : resolve, c);
		if (f->type != F_SECRET || !*(char **)dst)
			return ERR_OK;
		wipe_free(*(char **)(base + f->off2));
		*(char **)(base + f->off2) = NULL;
		return read_secret(c, v, path, *(char **)dst, (char **)(base + f->off2));
	case F_BOOL:
		if (get_scalar(c, v, path, "a boolean (true or false)", &s) != ERR_OK)
			return ERR_INVALID;
		if (!parse_bool(s, &b))
			return type_error(c, v, path, "a boolean (true or false)");
		*(int *)dst = b;
		return ERR_OK;
	case F_UINT:
	case F_SIZE:
	case F_INT64:
		if (f->max == INT64_MAX && f->min == 1)
			snprintf(range, sizeof(range), "a positive integer");
		else
			snprintf(range, sizeof(range), "an integer from %" PRIu64 " to %" PRIu64,
				 f->min, f->max);
		if (get_scalar(c, v, path, range, &s) != ERR_OK)
			return ERR_INVALID;
		if (!parse_u64(s, f->min, f->max, &u))
			return type_error(c, v, path, range);
		if (f->type == F_UINT)
			*(unsigned *)dst = (unsigned)u;
		else if (f->type == F_SIZE)
			*(size_t *)dst = (size_t)u;
		else
			*(int64_t *)dst = (int64_t)u;
		return ERR_OK;
	case F_DURATION:
		if (get_scalar(c, v, path, "a duration", &s) != ERR_OK)
			return ERR_INVALID;
		rc = duration_parse(s, &ms, &why);
		if (rc != ERR_OK) {
			fail(c, v, path, rc, "%s", buf_str(&why));
			buf_release(&why);
			return rc;
		}
		if (f->min && ms == 0)
			return fail(c, v, path, ERR_INVALID, "must be greater than 0s");
		*(int64_t *)dst = ms;
		return ERR_OK;
	case F_LIST:
		return parse_list(c, v, path, dst);
	case F_FUNC:
		return f->fn(c, v, path, dst);
	case F_MAP:
		break;
	}
	return ERR_OK;
}

static enum err parse_map(struct ctx *c, yaml_node_t *node, const char *path,
			  const struct fieldset *fs, void *obj)
{
	uint64_t seen = 0;
	yaml_node_pair_t *p;
	enum err rc;

	assert(fs->count <= 64);
	if (node && !is_null(node)) {
		if (node->type != YAML_MAPPING_NODE)
			return type_error(c, node, path, "a mapping");
		for (p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
			yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
			char sub[PATH_MAX_LEN];
			const char *key = "";
			size_t i;

			if (get_scalar(c, k, path, "a string key", &key) != ERR_OK)
				return ERR_INVALID;
			join_key(sub, path, key);
			for (i = 0; i < fs->count && strcmp(fs->fields[i].key, key); i++)
				;
			if (i == fs->count)
				return fail(c, k, sub, ERR_INVALID, "unknown key");
			if (seen & (UINT64_C(1) << i))
				return fail(c, k, sub, ERR_INVALID, "duplicate key");
			seen |= UINT64_C(1) << i;
			rc = parse_field(c, &fs->fields[i], v, sub, obj);
			if (rc != ERR_OK)
				return rc;
		}
	}
	return fs->check ? fs->check(c, node, path, obj) : ERR_OK;
}

/* ---- validation helpers ---- */

static int valid_url(const char *s)
{
	if (!strncmp(s, "https://", 8))
		return s[8] != '\0';
	if (!strncmp(s, "http://", 7))
		return s[7] != '\0';
	return 0;
}

/* An http(s) URL at key in map, trailing slashes removed. */
static enum err check_url(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
			  char *url)
{
	char sub[PATH_MAX_LEN];
	size_t n;

	join_key(sub, path, key);
	if (!url || !valid_url(url))
		return fail(c, key_or_map(c, map, key), sub, ERR_INVALID,
			    "expected an http:// or https:// URL, got \"%s\"", url ? url : "");
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		url[--n] = '\0';
	return ERR_OK;
}

static enum err need(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		     const void *value)
{
	char sub[PATH_MAX_LEN];

	if (value)
		return ERR_OK;
	if (find_value(c, map, key, NULL)) {
		join_key(sub, path, key);
		return fail(c, key_or_map(c, map, key), sub, ERR_INVALID, "must not be empty");
	}
	return fail(c, map, path, ERR_INVALID, "missing required key \"%s\"", key);
}

static enum err exclusive(struct ctx *c, yaml_node_t *map, const char *path, const char *a,
			  const void *va, const char *b, const void *vb)
{
	char sub[PATH_MAX_LEN];

	if (!va || !vb)
		return ERR_OK;
	join_key(sub, path, b);
	return fail(c, key_or_map(c, map, b), sub, ERR_INVALID, "cannot be used together with %s",
		    a);
}

/* host:port, [v6]:port or :port with a port from 0 to 65535. */
static int valid_listen(const char *s)
{
	const char *colon = strrchr(s, ':');
	uint64_t port;

	if (!colon || !parse_u64(colon + 1, 0, 65535, &port) || strlen(colon + 1) > 5)
		return 0;
	if (s[0] == '[')
		return colon > s + 1 && colon[-1] == ']' &&
		       !memchr(s + 1, ']', (size_t)(colon - s - 2));
	return !memchr(s, ':', (size_t)(colon - s)) && !memchr(s, ']', (size_t)(colon - s));
}

static int valid_repo(const char *s)
{
	const char *slash = strchr(s, '/');

	if (!slash || slash == s || !slash[1] || strchr(slash + 1, '/'))
		return 0;
	for (; *s; s++)
		if (*s == ' ' || *s == '\t' || *s == '\\' || *s == '?' || *s == '#' || *s == '%')
			return 0;
	return 1;
}

/* ---- custom fields ---- */

static enum err parse_log_level(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	const char *s = "";

	if (get_scalar(c, node, path, "debug, info, warn or error", &s) != ERR_OK)
		return ERR_INVALID;
	if (log_level_parse(s, field) != ERR_OK)
		return type_error(c, node, path, "debug, info, warn or error");
	return ERR_OK;
}

static enum err parse_log_format(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	const char *s = "";

	if (get_scalar(c, node, path, "logfmt or json", &s) != ERR_OK)
		return ERR_INVALID;
	if (log_format_parse(s, field) != ERR_OK)
		return type_error(c, node, path, "logfmt or json");
	return ERR_OK;
}

static enum err parse_issue_per(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	const char *want = "\"alert\" or \"group\"";
	const char *s = "";

	if (get_scalar(c, node, path, want, &s) != ERR_OK)
		return ERR_INVALID;
	if (!strcmp(s, "alert"))
		*(enum cfg_issue_per *)field = CFG_ISSUE_PER_ALERT;
	else if (!strcmp(s, "group"))
		*(enum cfg_issue_per *)field = CFG_ISSUE_PER_GROUP;
	else
		return type_error(c, node, path, want);
	return ERR_OK;
}

static const char *const owned_names[] = {
	[CFG_OWNED_NOTIFY_ONLY] = "notify-only",
	[CFG_OWNED_SCALE_TO_ZERO] = "scale-to-zero",
	[CFG_OWNED_DELETE_OWNER] = "delete-owner",
};

static enum err parse_owned(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	const char *want = "\"scale-to-zero\", \"delete-owner\" or \"notify-only\"";
	const char *s = "";

	if (get_scalar(c, node, path, want, &s) != ERR_OK)
		return ERR_INVALID;
	for (size_t i = 0; i < sizeof(owned_names) / sizeof(owned_names[0]); i++) {
		if (!strcmp(s, owned_names[i])) {
			*(enum cfg_owned *)field = (enum cfg_owned)i;
			return ERR_OK;
		}
	}
	return type_error(c, node, path, want);
}

static enum err parse_channels(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	struct cfg_slack *slack = field;
	yaml_node_pair_t *p;
	size_t n;

	if (node->type != YAML_MAPPING_NODE)
		return type_error(c, node, path, "a mapping of namespace to channel");
	n = (size_t)(node->data.mapping.pairs.top - node->data.mapping.pairs.start);
	free(slack->namespace_channels);
	slack->namespace_channels = xcalloc(n ? n : 1, sizeof(struct cfg_pair));
	for (p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node_at(c, p->key), *v = node_at(c, p->value);
		struct cfg_pair *pair;
		char sub[PATH_MAX_LEN];
		const char *ks = "", *vs = "";

		if (get_scalar(c, k, path, "a namespace", &ks) != ERR_OK)
			return ERR_INVALID;
		join_key(sub, path, ks);
		if (!*ks)
			return fail(c, k, path, ERR_INVALID, "empty namespace");
		for (size_t i = 0; i < slack->namespace_channels_count; i++)
			if (!strcmp(slack->namespace_channels[i].key, ks))
				return fail(c, k, sub, ERR_INVALID, "duplicate key");
		if (is_null(v))
			return fail(c, v, sub, ERR_INVALID, "expected a channel, got null");
		if (get_scalar(c, v, sub, "a channel", &vs) != ERR_OK)
			return ERR_INVALID;
		pair = &slack->namespace_channels[slack->namespace_channels_count++];
		pair->key = xstrdup(ks);
		pair->value = xstrdup(vs);
	}
	return ERR_OK;
}

/* ---- field tables ---- */

#define FLD(s, k, t, f) { .key = k, .type = t, .off = offsetof(s, f) }
#define NUM(s, k, t, f, lo, hi) { .key = k, .type = t, .off = offsetof(s, f), .min = lo, .max = hi }
#define DUR(s, k, f, nonzero) \
	{ .key = k, .type = F_DURATION, .off = offsetof(s, f), .min = nonzero }
#define SECRET(s, k, f, f2) \
	{ .key = k, .type = F_SECRET, .off = offsetof(s, f), .off2 = offsetof(s, f2) }
#define MAP(s, k, f, set) { .key = k, .type = F_MAP, .off = offsetof(s, f), .sub = &set }
#define FUNC(s, k, f, fn_) { .key = k, .type = F_FUNC, .off = offsetof(s, f), .fn = fn_ }
#define FIELDSET(name, arr, chk) \
	static const struct fieldset name = { arr, sizeof(arr) / sizeof(arr[0]), chk }

static const struct field log_fields[] = {
	FUNC(struct cfg_log, "level", level, parse_log_level),
	FUNC(struct cfg_log, "format", format, parse_log_format),
};
FIELDSET(log_set, log_fields, NULL);

static enum err check_basic_auth(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_basic_auth *a = obj;
	enum err rc = need(c, map, path, "username", a->username);
	char sub[PATH_MAX_LEN];

	if (rc == ERR_OK && strchr(a->username, ':')) {
		/* RFC 7617 2: the user-id cannot contain a colon (check-config says so too). */
		join_key(sub, path, "username");
		return fail(c, key_or_map(c, map, "username"), sub, ERR_INVALID,
			    "must not contain ':' (RFC 7617)");
	}
	return rc != ERR_OK ? rc : need(c, map, path, "password_file", a->password_file);
}

static const struct field basic_auth_fields[] = {
	FLD(struct cfg_basic_auth, "username", F_STR, username),
	SECRET(struct cfg_basic_auth, "password_file", password_file, password),
};
FIELDSET(basic_auth_set, basic_auth_fields, check_basic_auth);

static enum err check_tls(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_tls *t = obj;
	enum err rc = ERR_OK;

	if (t->cert_file || t->key_file || t->client_ca_file) {
		rc = need(c, map, path, "cert_file", t->cert_file);
		if (rc == ERR_OK)
			rc = need(c, map, path, "key_file", t->key_file);
	}
	return rc;
}

static const struct field tls_fields[] = {
	FLD(struct cfg_tls, "cert_file", F_PATH, cert_file),
	FLD(struct cfg_tls, "key_file", F_PATH, key_file),
	FLD(struct cfg_tls, "client_ca_file", F_PATH, client_ca_file),
};
FIELDSET(tls_set, tls_fields, check_tls);

static enum err check_webhook(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_webhook *w = obj;
	char sub[PATH_MAX_LEN];

	/* The server counts its idle timeout in whole seconds (libmicrohttpd). */
	if (w->read_timeout_ms < MS_S || w->read_timeout_ms > 24 * 3600 * MS_S) {
		join_key(sub, path, "read_timeout");
		return fail(c, key_or_map(c, map, "read_timeout"), sub, ERR_INVALID,
			    "must be from 1s to 24h");
	}
	if (w->read_header_timeout_ms > w->read_timeout_ms) {
		join_key(sub, path, "read_header_timeout");
		return fail(c, key_or_map(c, map, "read_header_timeout"), sub, ERR_INVALID,
			    "must not be longer than read_timeout");
	}
	return exclusive(c, map, path, "bearer_token_file", w->bearer_token_file, "basic_auth",
			 w->basic_auth.username);
}

static const struct field webhook_fields[] = {
	SECRET(struct cfg_webhook, "bearer_token_file", bearer_token_file, bearer_token),
	MAP(struct cfg_webhook, "basic_auth", basic_auth, basic_auth_set),
	MAP(struct cfg_webhook, "tls", tls, tls_set),
	NUM(struct cfg_webhook, "max_body_bytes", F_SIZE, max_body_bytes, 1, 1u << 30),
	NUM(struct cfg_webhook, "max_alerts", F_SIZE, max_alerts, 1, 1000000),
	NUM(struct cfg_webhook, "max_connections", F_UINT, max_connections, 1, 65536),
	DUR(struct cfg_webhook, "read_timeout", read_timeout_ms, 1),
	DUR(struct cfg_webhook, "read_header_timeout", read_header_timeout_ms, 1),
	NUM(struct cfg_webhook, "max_connections_per_ip", F_UINT, max_connections_per_ip, 0, 65536),
	NUM(struct cfg_webhook, "threads", F_UINT, threads, 1, 1024),
};
FIELDSET(webhook_set, webhook_fields, check_webhook);

static enum err check_app(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_github_app *a = obj;
	enum err rc = need(c, map, path, "app_id", a->app_id ? a : NULL);

	if (rc == ERR_OK)
		rc = need(c, map, path, "installation_id", a->installation_id ? a : NULL);
	if (rc == ERR_OK)
		rc = need(c, map, path, "private_key_file", a->private_key_file);
	return rc;
}

static const struct field app_fields[] = {
	NUM(struct cfg_github_app, "app_id", F_INT64, app_id, 1, INT64_MAX),
	NUM(struct cfg_github_app, "installation_id", F_INT64, installation_id, 1, INT64_MAX),
	FLD(struct cfg_github_app, "private_key_file", F_PATH, private_key_file),
};
FIELDSET(app_set, app_fields, check_app);

static enum err check_github(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_github *g = obj;
	enum err rc = exclusive(c, map, path, "token_file", g->token_file, "app",
				g->app.app_id ? g : NULL);

	return rc != ERR_OK ? rc : check_url(c, map, path, "api_url", g->api_url);
}

static const struct field github_fields[] = {
	FLD(struct cfg_github, "api_url", F_STR, api_url),
	SECRET(struct cfg_github, "token_file", token_file, token),
	MAP(struct cfg_github, "app", app, app_set),
	NUM(struct cfg_github, "content_per_minute", F_UINT, content_per_minute, 1, 80),
	NUM(struct cfg_github, "content_per_hour", F_UINT, content_per_hour, 1, 500),
	DUR(struct cfg_github, "timeout", timeout_ms, 1),
	FLD(struct cfg_github, "dry_run", F_BOOL, dry_run),
};
FIELDSET(github_set, github_fields, check_github);

static const struct field templates_fields[] = {
	FLD(struct cfg_templates, "title", F_PATH, title),
	FLD(struct cfg_templates, "body", F_PATH, body),
	FLD(struct cfg_templates, "refire", F_PATH, refire),
	FLD(struct cfg_templates, "resolve", F_PATH, resolve),
	FLD(struct cfg_templates, "reopen", F_PATH, reopen),
};
FIELDSET(templates_set, templates_fields, NULL);

static const struct field storm_fields[] = {
	FLD(struct cfg_storm, "enabled", F_BOOL, enabled),
	DUR(struct cfg_storm, "storm_after", storm_after_ms, 1),
};
FIELDSET(storm_set, storm_fields, NULL);

static enum err check_receiver(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_receiver *r = obj;
	enum err rc = need(c, map, path, "name", r->name);
	char sub[PATH_MAX_LEN];

	if (rc == ERR_OK)
		rc = need(c, map, path, "repo", r->repo);
	if (rc == ERR_OK && !valid_repo(r->repo)) {
		join_key(sub, path, "repo");
		rc = fail(c, find_value(c, map, "repo", NULL), sub, ERR_INVALID,
			  "expected \"owner/name\", got \"%s\"", r->repo);
	}
	return rc;
}

static const struct field receiver_fields[] = {
	FLD(struct cfg_receiver, "name", F_STR, name),
	FLD(struct cfg_receiver, "repo", F_STR, repo),
	FUNC(struct cfg_receiver, "issue_per", issue_per, parse_issue_per),
	FLD(struct cfg_receiver, "labels", F_LIST, labels),
	FLD(struct cfg_receiver, "assignees", F_LIST, assignees),
	FLD(struct cfg_receiver, "auto_close", F_BOOL, auto_close),
	DUR(struct cfg_receiver, "reopen_window", reopen_window_ms, 0),
	MAP(struct cfg_receiver, "templates", templates, templates_set),
	MAP(struct cfg_receiver, "storm", storm, storm_set),
};
FIELDSET(receiver_set, receiver_fields, check_receiver);

/* "KEY: <a> <what> <other key> (<b>)": a policy duration out of order with another. */
static enum err policy_order(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
			     int64_t a_ms, const char *what, const char *other, int64_t b_ms)
{
	struct buf a = BUF_INIT, b = BUF_INIT;
	char sub[PATH_MAX_LEN];
	enum err rc;

	duration_format(a_ms, &a);
	duration_format(b_ms, &b);
	join_key(sub, path, key);
	rc = fail(c, key_or_map(c, map, key), sub, ERR_INVALID, "%s %s %s (%s)", buf_str(&a),
		  what, other, buf_str(&b));
	buf_release(&a);
	buf_release(&b);
	return rc;
}

static enum err check_policy(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_policy *p = obj;
	enum err rc = need(c, map, path, "alertname", p->alertname);

	if (rc != ERR_OK)
		return rc;
	if (p->notice_lead_ms > p->grace_ms)
		return policy_order(c, map, path, "notice_lead", p->notice_lead_ms,
				    "is longer than", "grace", p->grace_ms);
	if (p->reminder_before_ms < 0)  /* not given */
		p->reminder_before_ms = p->notice_lead_ms / 2;
	else if (p->reminder_before_ms > 0 && p->reminder_before_ms >= p->notice_lead_ms)
		return policy_order(c, map, path, "reminder_before", p->reminder_before_ms,
				    "is not less than", "notice_lead", p->notice_lead_ms);
	return ERR_OK;
}

static const struct field policy_fields[] = {
	FLD(struct cfg_policy, "alertname", F_STR, alertname),
	DUR(struct cfg_policy, "grace", grace_ms, 0),
	DUR(struct cfg_policy, "notice_lead", notice_lead_ms, 0),
	DUR(struct cfg_policy, "reminder_before", reminder_before_ms, 0),
	FUNC(struct cfg_policy, "owned", owned, parse_owned),
	FLD(struct cfg_policy, "message", F_STR, message),
};
FIELDSET(policy_set, policy_fields, check_policy);

static enum err check_slack(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_slack *s = obj;
	enum err rc = exclusive(c, map, path, "bot_token_file", s->bot_token_file,
				"webhook_url_file", s->webhook_url_file);

	return rc != ERR_OK ? rc : check_url(c, map, path, "api_url", s->api_url);
}

static const struct field slack_fields[] = {
	FLD(struct cfg_slack, "api_url", F_STR, api_url),
	SECRET(struct cfg_slack, "bot_token_file", bot_token_file, bot_token),
	SECRET(struct cfg_slack, "webhook_url_file", webhook_url_file, webhook_url),
	FLD(struct cfg_slack, "default_channel", F_STR, default_channel),
	FLD(struct cfg_slack, "owner_label", F_STR, owner_label),
	/* parse_channels fills both namespace_channels and its count: it gets the struct. */
	{ .key = "namespace_channels", .type = F_FUNC, .off = 0, .fn = parse_channels },
};
FIELDSET(slack_set, slack_fields, check_slack);

static enum err check_leader(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct cfg_leader_election *l = obj;
	enum err rc = need(c, map, path, "namespace", l->namespace);

	return rc != ERR_OK ? rc : need(c, map, path, "lease_name", l->lease_name);
}

static const struct field leader_fields[] = {
	FLD(struct cfg_leader_election, "enabled", F_BOOL, enabled),
	FLD(struct cfg_leader_election, "namespace", F_STR, namespace),
	FLD(struct cfg_leader_election, "lease_name", F_STR, lease_name),
	DUR(struct cfg_leader_election, "lease_duration", lease_duration_ms, 1),
	FLD(struct cfg_leader_election, "identity", F_STR, identity),
};
FIELDSET(leader_set, leader_fields, check_leader);

static const struct field kubernetes_fields[] = {
	FLD(struct cfg_kubernetes, "kubeconfig", F_PATH, kubeconfig),
	FLD(struct cfg_kubernetes, "context", F_STR, context),
};
FIELDSET(kubernetes_set, kubernetes_fields, NULL);

static enum err parse_policies(struct ctx *c, yaml_node_t *node, const char *path, void *field);

static const struct field janitor_fields[] = {
	FLD(struct cfg_janitor, "enabled", F_BOOL, enabled),
	FLD(struct cfg_janitor, "dry_run", F_BOOL, dry_run),
	MAP(struct cfg_janitor, "kubernetes", kubernetes, kubernetes_set),
	FLD(struct cfg_janitor, "exclude_namespaces", F_LIST, exclude_namespaces),
	DUR(struct cfg_janitor, "sweep_interval", sweep_interval_ms, 1),
	NUM(struct cfg_janitor, "max_deletions_per_sweep", F_UINT, max_deletions_per_sweep, 0,
	    100000),
	{ .key = "policies", .type = F_FUNC, .off = 0, .fn = parse_policies },
	MAP(struct cfg_janitor, "slack", slack, slack_set),
	MAP(struct cfg_janitor, "leader_election", leader_election, leader_set),
};
FIELDSET(janitor_set, janitor_fields, NULL);

static enum err parse_receivers(struct ctx *c, yaml_node_t *node, const char *path, void *field);
static enum err check_root(struct ctx *c, yaml_node_t *map, const char *path, void *obj);

static const struct field root_fields[] = {
	FLD(struct config, "listen_address", F_STR, listen_address),
	FLD(struct config, "database", F_STR, database),
	DUR(struct config, "database_retention", database_retention_ms, 1),
	MAP(struct config, "log", log, log_set),
	MAP(struct config, "webhook", webhook, webhook_set),
	MAP(struct config, "github", github, github_set),
	{ .key = "receivers", .type = F_FUNC, .off = 0, .fn = parse_receivers },
	MAP(struct config, "janitor", janitor, janitor_set),
};
FIELDSET(root_set, root_fields, check_root);

/* ---- defaults and lists of records ---- */

static void receiver_defaults(struct cfg_receiver *r)
{
	memset(r, 0, sizeof(*r));
	r->issue_per = CFG_ISSUE_PER_ALERT;
	r->labels.items = xcalloc(1, sizeof(char *));
	r->assignees.items = xcalloc(1, sizeof(char *));
	r->auto_close = 1;
	r->reopen_window_ms = 7 * MS_D;
	r->storm.storm_after_ms = 10 * MS_M;
}

static void policy_defaults(struct cfg_policy *p)
{
	memset(p, 0, sizeof(*p));
	p->grace_ms = 24 * MS_H;
	p->notice_lead_ms = 2 * MS_H;
	p->reminder_before_ms = -1;  /* check_policy: notice_lead / 2 */
	p->owned = CFG_OWNED_NOTIFY_ONLY;
}

static char *hostname(void)
{
	char name[256];

	if (gethostname(name, sizeof(name)) != 0 || !name[0])
		return xstrdup("alertbridge");
	name[sizeof(name) - 1] = '\0';
	return xstrdup(name);
}

static void defaults(struct config *cfg)
{
	memset(cfg, 0, sizeof(*cfg));
	cfg->listen_address = xstrdup(CFG_DEFAULT_LISTEN_ADDRESS);
	cfg->database = xstrdup(CFG_DEFAULT_DATABASE);
	cfg->database_retention_ms = 7 * MS_D;
	cfg->log.level = LOG_INFO;
	cfg->log.format = LOG_LOGFMT;
	cfg->webhook.max_body_bytes = 1048576;
	cfg->webhook.max_alerts = 10000;
	cfg->webhook.max_connections = 256;
	cfg->webhook.read_timeout_ms = 30 * MS_S;
	cfg->webhook.read_header_timeout_ms = 10 * MS_S;
	cfg->webhook.threads = 4;
	cfg->github.api_url = xstrdup(CFG_DEFAULT_GITHUB_API_URL);
	cfg->github.content_per_minute = 20;
	cfg->github.content_per_hour = 500;
	cfg->github.timeout_ms = 10 * MS_S;
	cfg->receivers = xcalloc(1, sizeof(struct cfg_receiver));
	cfg->janitor.dry_run = 1;
	cfg->janitor.exclude_namespaces.items = xcalloc(2, sizeof(char *));
	cfg->janitor.exclude_namespaces.items[0] = xstrdup("kube-system");
	cfg->janitor.exclude_namespaces.count = 1;
	cfg->janitor.sweep_interval_ms = MS_M;
	cfg->janitor.max_deletions_per_sweep = 10;
	cfg->janitor.policies = xcalloc(1, sizeof(struct cfg_policy));
	cfg->janitor.slack.api_url = xstrdup(CFG_DEFAULT_SLACK_API_URL);
	cfg->janitor.slack.namespace_channels = xcalloc(1, sizeof(struct cfg_pair));
	cfg->janitor.leader_election.namespace = xstrdup("alertbridge");
	cfg->janitor.leader_election.lease_name = xstrdup("alertbridge");
	cfg->janitor.leader_election.lease_duration_ms = 15 * MS_S;
	cfg->janitor.leader_election.identity = hostname();
}

/* Number of items of a sequence node, or an error naming what was expected. */
static enum err sequence_len(struct ctx *c, yaml_node_t *node, const char *path, const char *want,
			     size_t *n)
{
	if (node->type != YAML_SEQUENCE_NODE)
		return type_error(c, node, path, want);
	*n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	return ERR_OK;
}

/* Error when the string at key of item i equals that of an earlier item. */
static enum err unique(struct ctx *c, yaml_node_t *seq, size_t i, const char *path,
		       const char *key, const char *what, const char *value, const char *earlier,
		       size_t j)
{
	yaml_node_t *item = node_at(c, seq->data.sequence.items.start[i]);
	yaml_node_t *first = node_at(c, seq->data.sequence.items.start[j]);
	char sub[PATH_MAX_LEN];

	if (strcmp(value, earlier))
		return ERR_OK;
	path_printf(sub, "%s[%zu].%s", path, i, key);
	return fail(c, find_value(c, item, key, NULL), sub, ERR_INVALID,
		    "duplicate %s \"%s\" (also at line %lu)", what, value,
		    line_of(find_value(c, first, key, NULL)));
}

static enum err parse_receivers(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	struct config *cfg = field;
	size_t n = 0;
	enum err rc = sequence_len(c, node, path, "a list of receivers", &n);

	if (rc != ERR_OK)
		return rc;
	free(cfg->receivers);
	cfg->receivers = xcalloc(n ? n : 1, sizeof(struct cfg_receiver));
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = node_at(c, node->data.sequence.items.start[i]);
		struct cfg_receiver *r = &cfg->receivers[i];
		char sub[PATH_MAX_LEN];

		receiver_defaults(r);
		cfg->receivers_count++;
		path_printf(sub, "%s[%zu]", path, i);
		rc = parse_map(c, item, sub, &receiver_set, r);
		if (rc != ERR_OK)
			return rc;
		for (size_t j = 0; j < i && rc == ERR_OK; j++)
			rc = unique(c, node, i, path, "name", "receiver name", r->name,
				    cfg->receivers[j].name, j);
		if (rc != ERR_OK)
			return rc;
	}
	return ERR_OK;
}

static enum err parse_policies(struct ctx *c, yaml_node_t *node, const char *path, void *field)
{
	struct cfg_janitor *j = field;
	size_t n = 0;
	enum err rc = sequence_len(c, node, path, "a list of policies", &n);

	if (rc != ERR_OK)
		return rc;
	free(j->policies);
	j->policies = xcalloc(n ? n : 1, sizeof(struct cfg_policy));
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *item = node_at(c, node->data.sequence.items.start[i]);
		struct cfg_policy *p = &j->policies[i];
		char sub[PATH_MAX_LEN];

		policy_defaults(p);
		j->policies_count++;
		path_printf(sub, "%s[%zu]", path, i);
		rc = parse_map(c, item, sub, &policy_set, p);
		if (rc != ERR_OK)
			return rc;
		for (size_t k = 0; k < i && rc == ERR_OK; k++)
			rc = unique(c, node, i, path, "alertname", "policy alertname",
				    p->alertname, j->policies[k].alertname, k);
		if (rc != ERR_OK)
			return rc;
	}
	return ERR_OK;
}

static enum err check_root(struct ctx *c, yaml_node_t *map, const char *path, void *obj)
{
	struct config *cfg = obj;
	struct cfg_leader_election *le = &cfg->janitor.leader_election;
	enum err rc = need(c, map, path, "listen_address", cfg->listen_address);
	const char *env;

	if (rc == ERR_OK && !valid_listen(cfg->listen_address))
		rc = fail(c, key_or_map(c, map, "listen_address"), "listen_address", ERR_INVALID,
			  "expected host:port or :port, got \"%s\"", cfg->listen_address);
	if (rc == ERR_OK)
		rc = need(c, map, path, "database", cfg->database);
	if (rc == ERR_OK && cfg->receivers_count == 0 && !cfg->janitor.enabled)
		rc = fail(c, key_or_map(c, map, "receivers"), "receivers", ERR_INVALID,
			  "at least one receiver is required unless the janitor is enabled");
	if (rc != ERR_OK)
		return rc;
	if (!le->identity)
		le->identity = hostname();
	/* GITHUB_TOKEN only when no file and no app names credentials. */
	env = getenv("GITHUB_TOKEN");
	if (!cfg->github.token_file && !cfg->github.app.app_id && env && *env) {
		cfg->github.token = xstrdup(env);
		cfg->github.token_from_env = 1;
	}
	return ERR_OK;
}

/* ---- free ---- */

static void list_free(struct cfg_list *l)
{
	for (size_t i = 0; l->items && i < l->count; i++)
		free(l->items[i]);
	free(l->items);
}

static void templates_free(struct cfg_templates *t)
{
	free(t->title);
	free(t->body);
	free(t->refire);
	free(t->resolve);
	free(t->reopen);
}

static void janitor_free(struct cfg_janitor *j)
{
	free(j->kubernetes.kubeconfig);
	free(j->kubernetes.context);
	list_free(&j->exclude_namespaces);
	for (size_t i = 0; j->policies && i < j->policies_count; i++) {
		free(j->policies[i].alertname);
		free(j->policies[i].message);
	}
	free(j->policies);
	free(j->slack.api_url);
	free(j->slack.bot_token_file);
	wipe_free(j->slack.bot_token);
	free(j->slack.webhook_url_file);
	wipe_free(j->slack.webhook_url);
	free(j->slack.default_channel);
	free(j->slack.owner_label);
	for (size_t i = 0; i < j->slack.namespace_channels_count; i++) {
		free(j->slack.namespace_channels[i].key);
		free(j->slack.namespace_channels[i].value);
	}
	free(j->slack.namespace_channels);
	free(j->leader_election.namespace);
	free(j->leader_election.lease_name);
	free(j->leader_election.identity);
}

void cfg_free(struct config *cfg)
{
	if (!cfg)
		return;
	free(cfg->path);
	free(cfg->base_dir);
	free(cfg->listen_address);
	free(cfg->database);
	free(cfg->webhook.bearer_token_file);
	wipe_free(cfg->webhook.bearer_token);
	free(cfg->webhook.basic_auth.username);
	free(cfg->webhook.basic_auth.password_file);
	wipe_free(cfg->webhook.basic_auth.password);
	free(cfg->webhook.tls.cert_file);
	free(cfg->webhook.tls.key_file);
	free(cfg->webhook.tls.client_ca_file);
	free(cfg->github.api_url);
	free(cfg->github.token_file);
	wipe_free(cfg->github.token);
	free(cfg->github.app.private_key_file);
	for (size_t i = 0; cfg->receivers && i < cfg->receivers_count; i++) {
		struct cfg_receiver *r = &cfg->receivers[i];

		free(r->name);
		free(r->repo);
		list_free(&r->labels);
		list_free(&r->assignees);
		templates_free(&r->templates);
	}
	free(cfg->receivers);
	janitor_free(&cfg->janitor);
	free(cfg);
}

/* ---- entry points ---- */

static enum err yaml_error(struct ctx *c, yaml_parser_t *parser)
{
	yaml_mark_t mark = parser->problem_mark;

	/* libyaml reports the reader's problems by offset only, with a zero mark. */
	if (parser->error == YAML_READER_ERROR)
		return fail(c, NULL, "yaml", ERR_INVALID, "%s at byte %zu",
			    parser->problem ? parser->problem : "cannot read input",
			    parser->problem_offset);
	if (!c->errmsg)
		return ERR_INVALID;
	buf_reset(c->errmsg);
	(void)buf_printf(c->errmsg, "%s:%lu: yaml: %s", c->name, (unsigned long)mark.line + 1,
			 parser->problem ? parser->problem : "syntax error");
	if (parser->context)
		(void)buf_printf(c->errmsg, " %s (line %lu)", parser->context,
				 (unsigned long)parser->context_mark.line + 1);
	return ERR_INVALID;
}

enum err cfg_parse(const char *yaml, size_t len, const char *name_for_errors,
		   const char *base_dir, struct config **out, struct buf *errmsg)
{
	yaml_parser_t parser;
	yaml_document_t doc;
	struct config *cfg = xmalloc(sizeof(*cfg));
	struct ctx c = { &doc, name_for_errors ? name_for_errors : "config", base_dir, errmsg,
			 cfg };
	int have_doc = 0;
	yaml_node_t *root;
	enum err rc = ERR_OK;

	defaults(cfg);
	cfg->path = xstrdup(c.name);
	cfg->base_dir = base_dir ? xstrdup(base_dir) : NULL;
	if (!yaml_parser_initialize(&parser))
		abort(); /* out of memory, as xmalloc */
	yaml_parser_set_input_string(&parser, (const unsigned char *)yaml, len);
	if (!yaml_parser_load(&parser, &doc)) {
		rc = yaml_error(&c, &parser);
		goto out;
	}
	have_doc = 1;
	root = yaml_document_get_root_node(&doc);
	if (root && !is_null(root) && root->type != YAML_MAPPING_NODE) {
		rc = type_error(&c, root, "", "a mapping at the top level");
		goto out;
	}
	rc = parse_map(&c, root, "", &root_set, cfg);
out:
	if (have_doc)
		yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	if (rc != ERR_OK) {
		cfg_free(cfg);
		return rc;
	}
	*out = cfg;
	return ERR_OK;
}

enum err cfg_load(const char *path, struct config **out, struct buf *errmsg)
{
	struct buf text = BUF_INIT;
	const char *why = "";
	const char *slash = strrchr(path, '/');
	char *dir = NULL;
	enum err rc = read_file(path, CFG_MAX_FILE_BYTES, &text, &why);

	if (rc == ERR_IO) {
		buf_setf(errmsg, "%s: cannot read: %s", path, why);
		return rc;
	}
	if (rc == ERR_TOOBIG) {
		buf_setf(errmsg, "%s: larger than %u bytes", path, CFG_MAX_FILE_BYTES);
		return rc;
	}
	if (!slash)
		dir = xstrdup(".");
	else if (slash == path)
		dir = xstrdup("/");
	else
		dir = xstrndup(path, (size_t)(slash - path));
	rc = cfg_parse(buf_str(&text), text.len, path, dir, out, errmsg);
	free(dir);
	buf_release(&text);
	return rc;
}

const struct cfg_receiver *cfg_receiver_find(const struct config *cfg, const char *name)
{
	if (!cfg || !name)
		return NULL;
	for (size_t i = 0; i < cfg->receivers_count; i++)
		if (!strcmp(cfg->receivers[i].name, name))
			return &cfg->receivers[i];
	return NULL;
}

const struct cfg_policy *cfg_policy_find(const struct config *cfg, const char *alertname)
{
	if (!cfg || !alertname)
		return NULL;
	for (size_t i = 0; i < cfg->janitor.policies_count; i++)
		if (!strcmp(cfg->janitor.policies[i].alertname, alertname))
			return &cfg->janitor.policies[i];
	return NULL;
}

/* ---- dump ---- */

/* A YAML double-quoted scalar (YAML 1.2 section 7.3.1 escapes). */
static void put_str(struct buf *out, const char *s)
{
	if (!s) {
		(void)buf_adds(out, "null");
		return;
	}
	(void)buf_addch(out, '"');
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		if (ch == '"' || ch == '\\')
			(void)buf_printf(out, "\\%c", ch);
		else if (ch == '\n')
			(void)buf_adds(out, "\\n");
		else if (ch == '\t')
			(void)buf_adds(out, "\\t");
		else if (ch < 0x20 || ch == 0x7f)
			(void)buf_printf(out, "\\x%02x", ch);
		else
			(void)buf_addch(out, (char)ch);
	}
	(void)buf_addch(out, '"');
}

static void kv_str(struct buf *out, int indent, const char *key, const char *value)
{
	(void)buf_printf(out, "%*s%s: ", indent, "", key);
	put_str(out, value);
	(void)buf_addch(out, '\n');
}

static void kv_secret(struct buf *out, int indent, const char *key, const char *file,
		      const char *secret_name, const char *secret)
{
	if (!file)
		return;
	kv_str(out, indent, key, file);
	if (secret)
		(void)buf_printf(out, "%*s# %s: <secret>\n", indent, "", secret_name);
}

static void kv_dur(struct buf *out, int indent, const char *key, int64_t ms)
{
	(void)buf_printf(out, "%*s%s: ", indent, "", key);
	duration_format(ms, out);
	(void)buf_addch(out, '\n');
}

static void kv_bool(struct buf *out, int indent, const char *key, int v)
{
	(void)buf_printf(out, "%*s%s: %s\n", indent, "", key, v ? "true" : "false");
}

static void kv_list(struct buf *out, int indent, const char *key, const struct cfg_list *l)
{
	(void)buf_printf(out, "%*s%s: [", indent, "", key);
	for (size_t i = 0; i < l->count; i++) {
		if (i)
			(void)buf_adds(out, ", ");
		put_str(out, l->items[i]);
	}
	(void)buf_adds(out, "]\n");
}

static void dump_receiver(struct buf *out, const struct cfg_receiver *r)
{
	const struct cfg_templates *t = &r->templates;

	(void)buf_adds(out, "  - ");
	kv_str(out, 0, "name", r->name);
	kv_str(out, 4, "repo", r->repo);
	kv_str(out, 4, "issue_per", r->issue_per == CFG_ISSUE_PER_GROUP ? "group" : "alert");
	kv_list(out, 4, "labels", &r->labels);
	kv_list(out, 4, "assignees", &r->assignees);
	kv_bool(out, 4, "auto_close", r->auto_close);
	kv_dur(out, 4, "reopen_window", r->reopen_window_ms);
	(void)buf_adds(out, "    templates:\n");
	kv_str(out, 6, "title", t->title);
	kv_str(out, 6, "body", t->body);
	kv_str(out, 6, "refire", t->refire);
	kv_str(out, 6, "resolve", t->resolve);
	kv_str(out, 6, "reopen", t->reopen);
	(void)buf_adds(out, "    storm:\n");
	kv_bool(out, 6, "enabled", r->storm.enabled);
	kv_dur(out, 6, "storm_after", r->storm.storm_after_ms);
}

static void dump_janitor(struct buf *out, const struct cfg_janitor *j)
{
	const struct cfg_slack *s = &j->slack;
	const struct cfg_leader_election *le = &j->leader_election;

	(void)buf_adds(out, "janitor:\n");
	kv_bool(out, 2, "enabled", j->enabled);
	kv_bool(out, 2, "dry_run", j->dry_run);
	(void)buf_adds(out, "  kubernetes:\n");
	kv_str(out, 4, "kubeconfig", j->kubernetes.kubeconfig);
	kv_str(out, 4, "context", j->kubernetes.context);
	kv_list(out, 2, "exclude_namespaces", &j->exclude_namespaces);
	kv_dur(out, 2, "sweep_interval", j->sweep_interval_ms);
	(void)buf_printf(out, "  max_deletions_per_sweep: %u\n", j->max_deletions_per_sweep);
	(void)buf_adds(out, j->policies_count ? "  policies:\n" : "  policies: []\n");
	for (size_t i = 0; i < j->policies_count; i++) {
		const struct cfg_policy *p = &j->policies[i];

		(void)buf_adds(out, "    - ");
		kv_str(out, 0, "alertname", p->alertname);
		kv_dur(out, 6, "grace", p->grace_ms);
		kv_dur(out, 6, "notice_lead", p->notice_lead_ms);
		kv_dur(out, 6, "reminder_before", p->reminder_before_ms);
		kv_str(out, 6, "owned", owned_names[p->owned]);
		kv_str(out, 6, "message", p->message);
	}
	(void)buf_adds(out, "  slack:\n");
	kv_str(out, 4, "api_url", s->api_url);
	kv_secret(out, 4, "bot_token_file", s->bot_token_file, "bot_token", s->bot_token);
	kv_secret(out, 4, "webhook_url_file", s->webhook_url_file, "webhook_url", s->webhook_url);
	kv_str(out, 4, "default_channel", s->default_channel);
	kv_str(out, 4, "owner_label", s->owner_label);
	(void)buf_adds(out, s->namespace_channels_count ? "    namespace_channels:\n" :
							  "    namespace_channels: {}\n");
	for (size_t i = 0; i < s->namespace_channels_count; i++) {
		(void)buf_adds(out, "      ");
		put_str(out, s->namespace_channels[i].key);
		(void)buf_adds(out, ": ");
		put_str(out, s->namespace_channels[i].value);
		(void)buf_addch(out, '\n');
	}
	(void)buf_adds(out, "  leader_election:\n");
	kv_bool(out, 4, "enabled", le->enabled);
	kv_str(out, 4, "namespace", le->namespace);
	kv_str(out, 4, "lease_name", le->lease_name);
	kv_dur(out, 4, "lease_duration", le->lease_duration_ms);
	kv_str(out, 4, "identity", le->identity);
}

void cfg_dump(const struct config *cfg, struct buf *out)
{
	const struct cfg_webhook *w = &cfg->webhook;
	const struct cfg_github *g = &cfg->github;
	static const char *const levels[] = { "debug", "info", "warn", "error" };

	(void)buf_printf(out, "# effective configuration of %s\n", cfg->path);
	kv_str(out, 0, "listen_address", cfg->listen_address);
	kv_str(out, 0, "database", cfg->database);
	kv_dur(out, 0, "database_retention", cfg->database_retention_ms);
	(void)buf_printf(out, "log:\n  level: %s\n  format: %s\n", levels[cfg->log.level],
			 cfg->log.format == LOG_JSON ? "json" : "logfmt");
	(void)buf_adds(out, "webhook:\n");
	kv_secret(out, 2, "bearer_token_file", w->bearer_token_file, "bearer_token",
		  w->bearer_token);
	if (w->basic_auth.username) {
		(void)buf_adds(out, "  basic_auth:\n");
		kv_str(out, 4, "username", w->basic_auth.username);
		kv_secret(out, 4, "password_file", w->basic_auth.password_file, "password",
			  w->basic_auth.password);
	}
	if (w->tls.cert_file) {
		(void)buf_adds(out, "  tls:\n");
		kv_str(out, 4, "cert_file", w->tls.cert_file);
		kv_str(out, 4, "key_file", w->tls.key_file);
		kv_str(out, 4, "client_ca_file", w->tls.client_ca_file);
	}
	(void)buf_printf(out, "  max_body_bytes: %zu\n  max_alerts: %zu\n  max_connections: %u\n",
			 w->max_body_bytes, w->max_alerts, w->max_connections);
	kv_dur(out, 2, "read_timeout", w->read_timeout_ms);
	kv_dur(out, 2, "read_header_timeout", w->read_header_timeout_ms);
	(void)buf_printf(out, "  max_connections_per_ip: %u\n", w->max_connections_per_ip);
	(void)buf_printf(out, "  threads: %u\n", w->threads);
	(void)buf_adds(out, "github:\n");
	kv_str(out, 2, "api_url", g->api_url);
	kv_secret(out, 2, "token_file", g->token_file, "token", g->token);
	if (g->token_from_env)
		(void)buf_adds(out, "  # token: <secret> (from GITHUB_TOKEN)\n");
	if (g->app.app_id) {
		(void)buf_printf(out, "  app:\n    app_id: %" PRId64 "\n", g->app.app_id);
		(void)buf_printf(out, "    installation_id: %" PRId64 "\n", g->app.installation_id);
		kv_str(out, 4, "private_key_file", g->app.private_key_file);
	}
	(void)buf_printf(out, "  content_per_minute: %u\n", g->content_per_minute);
	(void)buf_printf(out, "  content_per_hour: %u\n", g->content_per_hour);
	kv_dur(out, 2, "timeout", g->timeout_ms);
	kv_bool(out, 2, "dry_run", g->dry_run);
	(void)buf_adds(out, cfg->receivers_count ? "receivers:\n" : "receivers: []\n");
	for (size_t i = 0; i < cfg->receivers_count; i++)
		dump_receiver(out, &cfg->receivers[i]);
	dump_janitor(out, &cfg->janitor);
}
