/*
 * config.c - YAML configuration loader.  libyaml's document API gives a node
 * tree with line numbers; a table of fields per mapping (key, type, offset)
 * walks it, so unknown keys, wrong types and duplicates are caught in one
 * place and every error names file, line and key path.  This part walks the
 * tree, loads, and frees by the same tables; config_dump.c writes the
 * effective configuration back (cfg_dump), config_fields.c and
 * config_janitor.c hold the tables themselves, config_reference.c the other
 * walks (defaults, keys, the reference).
 */
#include "config_int.h"

#include <assert.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <gnutls/x509.h>

#include "duration.h"
#include "log.h"
#include "matchers.h"
#include "xalloc.h"
#include "banned.h"

/* ---- errors and node helpers ---- */

unsigned long cfg_line_of(const yaml_node_t *node)
{
	return node ? (unsigned long)node->start_mark.line + 1 : 1;
}

static enum err vfail(struct ctx *c, const yaml_node_t *node, const char *path, enum err code,
		      const char *fmt, va_list ap) PRINTF_LIKE(5, 0);

static enum err vfail(struct ctx *c, const yaml_node_t *node, const char *path, enum err code,
		      const char *fmt, va_list ap)
{
	if (!c->errmsg)
		return code;
	buf_reset(c->errmsg);
	(void)buf_printf(c->errmsg, "%s:%lu: ", c->name, cfg_line_of(node));
	if (path && *path)
		(void)buf_printf(c->errmsg, "%s: ", path);
	(void)buf_vprintf(c->errmsg, fmt, ap);
	return code;
}

enum err cfg_fail(struct ctx *c, const yaml_node_t *node, const char *path, enum err code,
		  const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	code = vfail(c, node, path, code, fmt, ap);
	va_end(ap);
	return code;
}

enum err cfg_fail_key(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		      const char *fmt, ...)
{
	char sub[PATH_MAX_LEN];
	enum err rc;
	va_list ap;

	cfg_join_key(sub, path, key);
	va_start(ap, fmt);
	rc = vfail(c, cfg_key_or_map(c, map, key), sub, ERR_INVALID, fmt, ap);
	va_end(ap);
	return rc;
}

yaml_node_t *cfg_node_at(struct ctx *c, int index)
{
	return yaml_document_get_node(c->doc, index);
}

static const char *sval(const yaml_node_t *node)
{
	return (const char *)node->data.scalar.value;
}

/* A plain scalar that YAML reads as null: "", "~", "null". */
int cfg_is_null(const yaml_node_t *node)
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

enum err cfg_type_error(struct ctx *c, const yaml_node_t *node, const char *path,
			const char *want)
{
	char got[80];

	describe(node, got, sizeof(got));
	return cfg_fail(c, node, path, ERR_INVALID, "expected %s, got %s", want, got);
}

/* The scalar's text in *out, or an error naming want. */
enum err cfg_get_scalar(struct ctx *c, yaml_node_t *node, const char *path, const char *want,
			const char **out)
{
	if (node->type != YAML_SCALAR_NODE)
		return cfg_type_error(c, node, path, want);
	if (strlen(sval(node)) != node->data.scalar.length)
		return cfg_fail(c, node, path, ERR_INVALID, "contains a NUL byte");
	*out = sval(node);
	return ERR_OK;
}

/* Format a key path into out (PATH_MAX_LEN bytes); overlong paths are cut. */
void cfg_path_printf(char *out, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(out, PATH_MAX_LEN, fmt, ap);
	va_end(ap);
}

void cfg_join_key(char *out, const char *path, const char *key)
{
	cfg_path_printf(out, "%s%s%s", path, *path ? "." : "", key);
}

/* The value node of key in mapping map, or NULL. */
yaml_node_t *cfg_find_value(struct ctx *c, yaml_node_t *map, const char *key,
			    yaml_node_t **key_node)
{
	yaml_node_pair_t *p;

	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = cfg_node_at(c, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp(sval(k), key)) {
			if (key_node)
				*key_node = k;
			return cfg_node_at(c, p->value);
		}
	}
	return NULL;
}

/* Line of key in map for errors about it; the map itself when absent. */
yaml_node_t *cfg_key_or_map(struct ctx *c, yaml_node_t *map, const char *key)
{
	yaml_node_t *k = NULL;

	cfg_find_value(c, map, key, &k);
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
	enum err rc;

	buf_init(out, max);
	rc = buf_read_file(out, path, 0);
	if (rc == ERR_IO)
		*why = strerror(errno);
	if (rc != ERR_OK)
		buf_release(out);
	return rc;
}

void cfg_wipe_free(char *s)
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
		return cfg_fail(c, node, path, ERR_IO, "cannot read \"%s\": %s", file, why);
	if (rc == ERR_TOOBIG)
		return cfg_fail(c, node, path, ERR_INVALID, "\"%s\" is larger than %u bytes", file,
				CFG_MAX_SECRET_BYTES);
	if (b.len && b.data[b.len - 1] == '\n')
		b.len--;
	if (b.len && b.data[b.len - 1] == '\r')
		b.len--;
	b.data[b.len] = '\0';
	if (b.len == 0)
		rc = cfg_fail(c, node, path, ERR_INVALID, "\"%s\" is empty", file);
	else if (memchr(b.data, '\n', b.len) || memchr(b.data, '\r', b.len) ||
		 strlen(b.data) != b.len)
		rc = cfg_fail(c, node, path, ERR_INVALID,
			      "\"%s\" must hold one line (a newline or NUL byte inside)", file);
	if (rc != ERR_OK) {
		explicit_bzero(b.data, b.cap);
		buf_release(&b);
		return rc;
	}
	*out = buf_detach(&b);
	return ERR_OK;
}

enum err cfg_check_secret_file(struct ctx *c, yaml_node_t *node, const char *path,
			       const char *file)
{
	char *secret = NULL;
	enum err rc = read_secret(c, node, path, file, &secret);

	cfg_wipe_free(secret);
	return rc;
}

/*
 * The PEM private key at file into *pem, after checking with GnuTLS that it
 * is an unencrypted RSA private key (PKCS#1 "RSA PRIVATE KEY" or PKCS#8
 * "PRIVATE KEY").  Errors name node's line and path.
 */
enum err cfg_read_rsa_key(struct ctx *c, yaml_node_t *node, const char *path, const char *file,
			  char **pem)
{
	struct buf b = BUF_INIT;
	const char *why = "";
	enum err rc = read_file(file, CFG_MAX_KEY_BYTES, &b, &why);
	gnutls_x509_privkey_t key = NULL;
	gnutls_datum_t d;
	int grc;

	if (rc == ERR_IO)
		return cfg_fail(c, node, path, ERR_IO, "cannot read \"%s\": %s", file, why);
	if (rc == ERR_TOOBIG) {
		buf_release(&b);
		return cfg_fail(c, node, path, ERR_INVALID, "\"%s\" is larger than %u bytes", file,
				CFG_MAX_KEY_BYTES);
	}
	d.data = (unsigned char *)b.data;
	d.size = (unsigned int)b.len;
	grc = gnutls_x509_privkey_init(&key);
	if (grc == GNUTLS_E_SUCCESS)
		grc = gnutls_x509_privkey_import2(key, &d, GNUTLS_X509_FMT_PEM, NULL,
						  GNUTLS_PKCS_PLAIN);
	if (grc != GNUTLS_E_SUCCESS)
		rc = cfg_fail(c, node, path, ERR_INVALID,
			      "\"%s\" is not a PEM private key (PKCS#1 or PKCS#8, unencrypted): %s",
			      file, gnutls_strerror(grc));
	else if (gnutls_x509_privkey_get_pk_algorithm(key) != GNUTLS_PK_RSA)
		rc = cfg_fail(c, node, path, ERR_INVALID,
			      "\"%s\" is a %s key, not an RSA private key (GitHub Apps sign with "
			      "RS256)", file,
			      gnutls_pk_algorithm_get_name(
				      (gnutls_pk_algorithm_t)gnutls_x509_privkey_get_pk_algorithm(key)));
	if (key)
		gnutls_x509_privkey_deinit(key);
	if (rc != ERR_OK) {
		explicit_bzero(b.data, b.cap);
		buf_release(&b);
		return rc;
	}
	*pem = buf_detach(&b);
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
int cfg_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
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
		return cfg_type_error(c, node, path, "a list of strings");
	n = (size_t)(node->data.sequence.items.top - node->data.sequence.items.start);
	for (it = node->data.sequence.items.start; it < node->data.sequence.items.top; it++) {
		yaml_node_t *item = cfg_node_at(c, *it);
		char sub[PATH_MAX_LEN];
		const char *s = "";

		cfg_path_printf(sub, "%s[%zu]", path, (size_t)(it - node->data.sequence.items.start));
		if (cfg_is_null(item))
			return cfg_fail(c, item, sub, ERR_INVALID, "expected a string, got null");
		if (cfg_get_scalar(c, item, sub, "a string", &s) != ERR_OK)
			return ERR_INVALID;
	}
	for (i = 0; i < list->count; i++)
		free(list->items[i]);
	free(list->items);
	list->items = xcalloc(n + 1, sizeof(char *));
	list->count = n;
	for (i = 0; i < n; i++)
		list->items[i] = xstrdup(sval(cfg_node_at(c, node->data.sequence.items.start[i])));
	return ERR_OK;
}

int64_t cfg_num_get(const struct field *f, const void *v)
{
	switch (f->type) {
	case F_UINT:
		return *(const unsigned *)v;
	case F_SIZE:
		return (int64_t)*(const size_t *)v;
	case F_INT64:
	case F_DURATION:
		return *(const int64_t *)v;
	default:  /* F_BOOL, an ENUM */
		return *(const int *)v;
	}
}

void cfg_num_set(const struct field *f, void *v, int64_t n)
{
	switch (f->type) {
	case F_UINT:
		*(unsigned *)v = (unsigned)n;
		break;
	case F_SIZE:
		*(size_t *)v = (size_t)n;
		break;
	case F_INT64:
	case F_DURATION:
		*(int64_t *)v = n;
		break;
	default:  /* F_BOOL, an ENUM */
		*(int *)v = (int)n;
		break;
	}
}

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
		return cfg_parse_map(c, v, path, f->sub, dst);
	if (cfg_is_null(v))
		return ERR_OK; /* keep the default */
	switch (f->type) {
	case F_STR:
	case F_PATH:
	case F_SECRET:
		if (cfg_get_scalar(c, v, path, "a string", &s) != ERR_OK)
			return ERR_INVALID;
		set_str(dst, s, f->type == F_STR ? NULL : resolve, c);
		if (f->type != F_SECRET || !*(char **)dst)
			return ERR_OK;
		cfg_wipe_free(*(char **)(base + f->off2));
		*(char **)(base + f->off2) = NULL;
		return read_secret(c, v, path, *(char **)dst, (char **)(base + f->off2));
	case F_BOOL:
		if (cfg_get_scalar(c, v, path, "a boolean (true or false)", &s) != ERR_OK)
			return ERR_INVALID;
		if (!parse_bool(s, &b))
			return cfg_type_error(c, v, path, "a boolean (true or false)");
		cfg_num_set(f, dst, b);
		return ERR_OK;
	case F_UINT:
	case F_SIZE:
	case F_INT64:
		if (f->max == INT64_MAX && f->min == 1)
			snprintf(range, sizeof(range), "a positive integer");
		else
			snprintf(range, sizeof(range), "an integer from %" PRIu64 " to %" PRIu64,
				 f->min, f->max);
		if (cfg_get_scalar(c, v, path, range, &s) != ERR_OK)
			return ERR_INVALID;
		if (!cfg_parse_u64(s, f->min, f->max, &u))
			return cfg_type_error(c, v, path, range);
		cfg_num_set(f, dst, (int64_t)u);
		return ERR_OK;
	case F_DURATION:
		if (cfg_get_scalar(c, v, path, "a duration", &s) != ERR_OK)
			return ERR_INVALID;
		rc = duration_parse(s, &ms, &why);
		if (rc != ERR_OK) {
			cfg_fail(c, v, path, rc, "%s", buf_str(&why));
			buf_release(&why);
			return rc;
		}
		if (f->min && ms == 0)
			return cfg_fail(c, v, path, ERR_INVALID, "must be greater than 0s");
		cfg_num_set(f, dst, ms);
		return ERR_OK;
	case F_LIST:
		return parse_list(c, v, path, dst);
	case F_FUNC:
		if (f->names)
			return cfg_parse_enum(c, v, path, f, dst);
		if (!f->fn)
			return cfg_parse_records(c, v, path, f, dst);
		return f->fn(c, v, path, dst);
	case F_MAP:
		break;
	}
	return ERR_OK;
}

/*
 * An ALIAS row f at key k (value v, path path): an error when the top-level
 * key it stands for is given too (either before or after it), else a warning
 * naming both, and v read into that key's struct.
 */
static enum err parse_alias(struct ctx *c, const struct field *f, yaml_node_t *k, yaml_node_t *v,
			    const char *path)
{
	yaml_node_t *top = NULL;
	struct log_line *l;
	char msg[2 * PATH_MAX_LEN];

	(void)cfg_find_value(c, yaml_document_get_root_node(c->doc), f->alias, &top);
	if (top)
		return cfg_fail(c, k, path, ERR_INVALID, "cannot be used together with %s (line %lu)",
				f->alias, cfg_line_of(top));
	snprintf(msg, sizeof(msg), "%s is deprecated: use %s", path, f->alias);
	l = log_begin(LOG_WARN, msg);
	log_str(l, "file", c->name);
	log_int(l, "line", (int64_t)cfg_line_of(k));
	log_end(l);
	return cfg_parse_map(c, v, path, f->sub, (char *)c->cfg + f->off);
}

enum err cfg_parse_map(struct ctx *c, yaml_node_t *node, const char *path,
		       const struct fieldset *fs, void *obj)
{
	uint64_t seen = 0;
	yaml_node_pair_t *p;
	enum err rc;

	assert(fs->count <= 64);
	if (node && !cfg_is_null(node)) {
		if (node->type != YAML_MAPPING_NODE)
			return cfg_type_error(c, node, path, "a mapping");
		for (p = node->data.mapping.pairs.start; p < node->data.mapping.pairs.top; p++) {
			yaml_node_t *k = cfg_node_at(c, p->key), *v = cfg_node_at(c, p->value);
			char sub[PATH_MAX_LEN];
			const char *key = "";
			size_t i;

			if (cfg_get_scalar(c, k, path, "a string key", &key) != ERR_OK)
				return ERR_INVALID;
			cfg_join_key(sub, path, key);
			for (i = 0; i < fs->count && strcmp(fs->fields[i].key, key); i++)
				;
			if (i == fs->count)
				return cfg_fail(c, k, sub, ERR_INVALID, "unknown key");
			if (seen & (UINT64_C(1) << i))
				return cfg_fail(c, k, sub, ERR_INVALID, "duplicate key");
			seen |= UINT64_C(1) << i;
			if (fs->fields[i].alias)
				rc = parse_alias(c, &fs->fields[i], k, v, sub);
			else
				rc = parse_field(c, &fs->fields[i], v, sub, obj);
			if (rc != ERR_OK)
				return rc;
		}
	}
	return fs->check ? fs->check(c, node, path, obj) : ERR_OK;
}

/* ---- free ---- */

static void list_free(struct cfg_list *l)
{
	for (size_t i = 0; l->items && i < l->count; i++)
		free(l->items[i]);
	free(l->items);
}

static void free_map(const struct fieldset *fs, char *obj);

/* What row f of obj holds; a pair's value is wiped (web.auth's hashes). */
static void free_row(const struct field *f, char *obj)
{
	void *v = obj + f->off;
	char *items = f->type == F_FUNC && !f->names ? *(char **)(void *)(obj + f->items_off) :
		NULL;
	size_t n = items ? *(size_t *)(void *)(obj + f->count_off) : 0;

	if (f->alias)
		return;  /* its key's row frees it */
	switch (f->type) {
	case F_STR:
	case F_PATH:
		free(*(char **)v);
		return;
	case F_SECRET:
		free(*(char **)v);
		cfg_wipe_free(*(char **)(void *)(obj + f->off2));
		return;
	case F_LIST:
		list_free(v);
		return;
	case F_MAP:
		free_map(f->sub, v);
		return;
	case F_FUNC:
		for (size_t i = 0; i < n && f->sub; i++)
			free_map(f->sub, items + i * f->item_size);
		for (size_t i = 0; i < n && !f->sub; i++) {
			free(((struct cfg_pair *)(void *)items)[i].key);
			cfg_wipe_free(((struct cfg_pair *)(void *)items)[i].value);
		}
		free(items);
		return;
	case F_BOOL:
	case F_UINT:
	case F_SIZE:
	case F_INT64:
	case F_DURATION:
		break;
	}
}

static void free_map(const struct fieldset *fs, char *obj)
{
	for (size_t i = 0; i < fs->count; i++)
		free_row(&fs->fields[i], obj);
	if (fs->release)
		fs->release(obj);
}

/* Every row of the tables, the records' items too, then what no row holds. */
void cfg_free(struct config *cfg)
{
	if (!cfg)
		return;
	free(cfg->path);
	free(cfg->base_dir);
	free_map(&cfg_root_set, (char *)cfg);
	free(cfg);
}

/* ---- entry points ---- */

static enum err yaml_error(struct ctx *c, yaml_parser_t *parser)
{
	yaml_mark_t mark = parser->problem_mark;

	/* libyaml reports the reader's problems by offset only, with a zero mark. */
	if (parser->error == YAML_READER_ERROR)
		return cfg_fail(c, NULL, "yaml", ERR_INVALID, "%s at byte %zu",
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

	cfg_defaults(cfg);
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
	if (root && !cfg_is_null(root) && root->type != YAML_MAPPING_NODE) {
		rc = cfg_type_error(&c, root, "", "a mapping at the top level");
		goto out;
	}
	rc = cfg_parse_map(&c, root, "", &cfg_root_set, cfg);
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

