/*
 * config_int.h - what the parts of the configuration loader share: the walk's
 * context, the field table types, and the node and path helpers.  config.c
 * walks the YAML (and frees), config_dump.c writes it back, config_fields.c
 * holds the tables and checks, config_janitor.c those of the janitor's
 * section, config_reference.c the walks for defaults, reload.c's keys and the
 * reference.  A key is one row: its parse, default, dump, free, reload class
 * and documentation follow from it.  Not for other modules: they use config.h.
 */
#ifndef AB_CONFIG_INT_H
#define AB_CONFIG_INT_H

#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "config.h"

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
struct field;
struct emitter;

/* Writes a row of obj in the dump its own way (config_dump.c): the route's matchers. */
typedef void (*dump_fn)(struct emitter *y, const struct field *f, const char *obj);

/* How cfg_dump() writes a row (struct field's dump_flags). */
enum {
	D_OMIT = 1,  /* left out when unset: a NULL string, a 0 number, an empty list of
		      * records or pairs, a mapping whose first key is unset */
	D_QUOTE = 2, /* an enum written as a quoted string (else plain) */
};

/* A list of records' own rules (struct field's records; cfg_parse_records()). */
struct cfg_records {
	void (*init)(void *item);  /* an item's defaults before its keys are read; NULL: zeroed */
	const char *key;           /* NULL, or the key whose string value is unique per item */
	const char *what;          /* that key in errors: "duplicate <what> ..." */
	size_t key_off;            /* offset of that value (a char *) in an item */
	int (*cmp)(const char *a, const char *b); /* 0 when a and b are the same: strcmp */
};

typedef enum err (*parse_fn)(struct ctx *c, yaml_node_t *node, const char *path, void *field);
typedef enum err (*check_fn)(struct ctx *c, yaml_node_t *map, const char *path, void *obj);

/*
 * One row of a field table: a key, how it is parsed and where it goes, and
 * what the reference (cfg_reference(), config_reference.c) says of it.
 */
struct field {
	const char *key;
	enum ftype type;
	size_t off;
	size_t off2;
	uint64_t min, max;
	const struct fieldset *sub; /* F_MAP; F_FUNC records: the fields of one item */
	parse_fn fn;
	/*
	 * When a new value takes effect; on an F_MAP row CFG_RESTART holds for
	 * every key inside (github.app), else each key says its own.
	 */
	enum cfg_reload reload;
	const char *doc;  /* one line of documentation, for the reference */
	/*
	 * The default in words when it is not a value read from the defaults
	 * ("the host name"); on an F_MAP or record row it holds for every key
	 * inside that says none.  NULL: read from a default configuration.
	 */
	const char *dflt;
	/*
	 * The default cfg_set_defaults() sets, when the row has no .dflt: def for
	 * numbers, durations (ms), booleans and enums; def_str for strings, and a
	 * list of that one string.  Both 0: zero, NULL, no list.
	 */
	int64_t def;
	const char *def_str;
	const char *what;         /* F_FUNC: its type in words ("a list of receivers"; an
				   * enum's names as its error says them) */
	const char *const *names; /* F_FUNC enums (an int-sized enum): the names by value,
				   * NULL-terminated, for the reference and the restart list */
	size_t items_off;         /* F_FUNC records and pairs: offset of the items' pointer */
	size_t count_off;         /* ... and of their count (size_t) */
	size_t item_size;         /* F_FUNC records: the size of one item */
	const struct cfg_records *records; /* F_FUNC records: their defaults and key, or NULL */
	unsigned dump_flags;      /* D_OMIT, D_QUOTE */
	dump_fn dump;             /* NULL: by type */
	/*
	 * An ALIAS row: the top-level key this deprecated key is another name
	 * of.  Its mapping is read into that key's struct (off is its offset in
	 * struct config) with a warning, and is an error when both are given;
	 * it has no default, dump or reload class of its own, and the reference
	 * gives it one row and no section.
	 */
	const char *alias;
};

struct fieldset {
	const struct field *fields;
	size_t count;
	check_fn check; /* run after the mapping (also when it is absent or null) */
	void (*release)(void *obj); /* cfg_free(): what obj holds beside its rows, or NULL */
};
/*
 * Rows of a field table: FLD a plain field, NUM a number in [lo, hi], DUR a
 * duration (nonzero 1: not 0), SECRET a *_file path with its contents, MAP a
 * nested mapping by the fieldset set, ENUM an int-sized enum, one of names
 * by value (cfg_parse_enum(); want_ the expected names in its error), PAIRS a
 * mapping of string pairs at member f (count at f_count) by the parser fn_
 * (it gets the whole struct s), REC a list of records at member f (count at
 * f_count) by cfg_parse_records() with the rules rec_ (a struct cfg_records
 * *, or NULL), each item by the fieldset set; ALIAS a deprecated key k
 * for the top-level mapping target (member f of struct config, fieldset
 * set: parse_alias() in config.c); FIELDSET
 * a file's static fieldset of the table arr with the check chk (may be NULL).
 * Every row ends with its reload class r (enum cfg_reload) and its one line of
 * documentation, which may be followed by more designated initialisers
 * (.dflt = "the host name").
 */
#define FLD(s, k, t, f, r, ...) \
	{ .key = k, .type = t, .off = offsetof(s, f), .reload = r, .doc = __VA_ARGS__ }
#define NUM(s, k, t, f, lo, hi, r, ...) \
	{ .key = k, .type = t, .off = offsetof(s, f), .min = lo, .max = hi, .reload = r, \
	  .doc = __VA_ARGS__ }
#define DUR(s, k, f, nonzero, r, ...) \
	{ .key = k, .type = F_DURATION, .off = offsetof(s, f), .min = nonzero, .reload = r, \
	  .doc = __VA_ARGS__ }
#define SECRET(s, k, f, f2, r, ...) \
	{ .key = k, .type = F_SECRET, .off = offsetof(s, f), .off2 = offsetof(s, f2), \
	  .reload = r, .doc = __VA_ARGS__ }
#define MAP(s, k, f, set, r, ...) \
	{ .key = k, .type = F_MAP, .off = offsetof(s, f), .sub = &set, .reload = r, \
	  .doc = __VA_ARGS__ }
#define ENUM(s, k, f, want_, names_, r, ...) \
	{ .key = k, .type = F_FUNC, .off = offsetof(s, f), .what = want_, .names = names_, \
	  .reload = r, .doc = __VA_ARGS__ }
#define PAIRS(s, k, f, fn_, what_, r, ...) \
	{ .key = k, .type = F_FUNC, .off = 0, .fn = fn_, .what = what_, \
	  .items_off = offsetof(s, f), .count_off = offsetof(s, f##_count), .reload = r, \
	  .doc = __VA_ARGS__ }
#define REC(s, k, f, rec_, set, what_, r, ...) \
	{ .key = k, .type = F_FUNC, .off = 0, .records = rec_, .sub = &set, .what = what_, \
	  .items_off = offsetof(s, f), .count_off = offsetof(s, f##_count), \
	  .item_size = sizeof(((s *)0)->f[0]), .reload = r, .doc = __VA_ARGS__ }
#define ALIAS(k, f, set, target, r, ...) \
	{ .key = k, .type = F_MAP, .off = offsetof(struct config, f), .sub = &set, \
	  .alias = target, .reload = r, .doc = __VA_ARGS__ }
#define FIELDSET(name, arr, chk) \
	static const struct fieldset name = { arr, sizeof(arr) / sizeof(arr[0]), chk, NULL }
/* FIELDSET with rel, what cfg_free() frees beside the rows (a route's parsed matchers). */
#define FIELDSET_RELEASE(name, arr, chk, rel) \
	static const struct fieldset name = { arr, sizeof(arr) / sizeof(arr[0]), chk, rel }

/* Reload classes, short for the tables. */
#define LIVE CFG_LIVE
#define RESTART CFG_RESTART
#define PRESENCE CFG_RESTART_PRESENCE

/* The top-level mapping's fields and check (config_fields.c). */
extern const struct fieldset cfg_root_set;
/* The janitor's mapping: its fields, policies, slack, kubernetes (config_janitor.c). */
extern const struct fieldset cfg_janitor_set;
/* The top-level leader_election mapping, also read by its alias janitor.leader_election. */
extern const struct fieldset cfg_leader_set;
/* Writes a route's matchers as parsed, each formatted by matcher_format() (config_dump.c). */
void cfg_dump_matchers(struct emitter *y, const struct field *f, const char *obj);
/* Writes github.token_file, and a comment when the token came from GITHUB_TOKEN (config_dump.c). */
void cfg_dump_github_token(struct emitter *y, const struct field *f, const char *obj);
/* The names of enum cfg_owned, by value, NULL-terminated (config_janitor.c). */
extern const char *const cfg_owned_names[];

/*
 * The checks and parsers the tables of config_fields.c and config_janitor.c
 * share (config_fields.c).  Each returns ERR_OK or sets c->errmsg
 * ("name:line: path.key: ...") and returns ERR_INVALID.
 */
/* url at key of map is an http(s) URL (NULL is not); its trailing slashes removed in place. */
enum err cfg_check_url(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		       char *url);
/* key of map is required: value (the parsed field) not NULL. */
enum err cfg_need(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		  const void *value);
/* Keys a and b of map (values va, vb; NULL: absent) cannot both be given. */
enum err cfg_exclusive(struct ctx *c, yaml_node_t *map, const char *path, const char *a,
		       const void *va, const char *b, const void *vb);
/*
 * A mapping of non-empty unique string keys to string values into a new
 * array *pairs of *count (freed by cfg_free()); wk and wv name them in errors.
 * check (may be NULL) judges each pair: non-zero with why set fails it at the value.
 */
enum err cfg_parse_pairs(struct ctx *c, yaml_node_t *node, const char *path,
			 struct cfg_pair **pairs, size_t *count, const char *wk, const char *wv,
			 int (*check)(const char *k, const char *v, const char **why));
/* Number of items of a sequence node into *n, or an error naming want, what was expected. */
enum err cfg_sequence_len(struct ctx *c, yaml_node_t *node, const char *path, const char *want,
			  size_t *n);
/*
 * A record row's (REC) parse (config_fields.c): node, a sequence of
 * mappings, into a fresh array of f->item_size bytes an item (xcalloc'd, at
 * least one item) at f->items_off of obj, what was there (an empty array or
 * NULL) freed; each item parsed by f->sub at path[i] after f->records->init;
 * the count at f->count_off counts the items begun, so that cfg_free()
 * releases a list that failed half-way.  ERR_INVALID (c->errmsg) when node
 * is not a sequence, an item is wrong, or f->records->key repeats.
 */
enum err cfg_parse_records(struct ctx *c, yaml_node_t *node, const char *path,
			   const struct field *f, char *obj);
/*
 * An ENUM row: node, a scalar, one of f->names, stored as its index in the
 * int-sized enum at field; ERR_INVALID "expected <f->what>" otherwise.
 */
enum err cfg_parse_enum(struct ctx *c, yaml_node_t *node, const char *path,
			const struct field *f, void *field);

/* The 1-based line of node for messages; 1 for NULL. */
unsigned long cfg_line_of(const yaml_node_t *node);
/*
 * cfg_fail() at key of map: "name:line: path.key: message" with the line of
 * the key (of map when the key is absent); returns ERR_INVALID.
 */
enum err cfg_fail_key(struct ctx *c, yaml_node_t *map, const char *path, const char *key,
		      const char *fmt, ...) PRINTF_LIKE(5, 6);
/* Set c->errmsg to "name:line: path: message" and return code. */
enum err cfg_fail(struct ctx *c, const yaml_node_t *node, const char *path, enum err code,
		  const char *fmt, ...) PRINTF_LIKE(5, 6);
/* The node with document index index, or NULL. */
yaml_node_t *cfg_node_at(struct ctx *c, int index);
/* 1 when node is NULL or a plain scalar YAML reads as null. */
int cfg_is_null(const yaml_node_t *node);
/* ERR_INVALID: "expected want, got <what node is>". */
enum err cfg_type_error(struct ctx *c, const yaml_node_t *node, const char *path,
			const char *want);
/* The scalar's text in *out (lives with the document), or an error naming want. */
enum err cfg_get_scalar(struct ctx *c, yaml_node_t *node, const char *path, const char *want,
			const char **out);
/* Format a key path into out (PATH_MAX_LEN bytes); overlong paths are cut. */
void cfg_path_printf(char *out, const char *fmt, ...) PRINTF_LIKE(2, 3);
/* path.key into out (PATH_MAX_LEN bytes). */
void cfg_join_key(char *out, const char *path, const char *key);
/* The value node of key in mapping map, or NULL; its key node in *key_node if not NULL. */
yaml_node_t *cfg_find_value(struct ctx *c, yaml_node_t *map, const char *key,
			    yaml_node_t **key_node);
/* The key node of key in map, for errors about it; the map itself when absent. */
yaml_node_t *cfg_key_or_map(struct ctx *c, yaml_node_t *map, const char *key);
/* Wipe the string s (a secret) and free it; s may be NULL.  config.c. */
void cfg_wipe_free(char *s);
/* Parse decimal s into *out within [min, max]; 0 when it is not one. */
int cfg_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);
/*
 * The value of a number row f at v (its place in the struct): F_BOOL, an
 * ENUM (an int), F_UINT (unsigned), F_SIZE (size_t), F_INT64 or F_DURATION
 * (int64_t, ms), widened to int64_t; the rows' bounds keep every unsigned
 * and size_t far below INT64_MAX.  config.c.
 */
int64_t cfg_num_get(const struct field *f, const void *v);
/* Store n, within row f's bounds, at v as f's type (those of cfg_num_get()).  config.c. */
void cfg_num_set(const struct field *f, void *v, int64_t n);
/* Walk mapping node (NULL or null: absent) into obj by the fields of fs, then fs->check. */
enum err cfg_parse_map(struct ctx *c, yaml_node_t *node, const char *path,
		       const struct fieldset *fs, void *obj);
/*
 * Read the PEM private key at file into *pem (caller frees, wiping it),
 * checked with GnuTLS to be an unencrypted RSA private key (PKCS#1 or
 * PKCS#8); ERR_IO (unreadable) or ERR_INVALID with "name:line: path: ..."
 * naming node in c->errmsg.  config.c.
 */
enum err cfg_read_rsa_key(struct ctx *c, yaml_node_t *node, const char *path, const char *file,
			  char **pem);
/*
 * Check that the secret file at file can be read and holds one non-empty
 * line, as every *_file does; its contents are wiped and dropped (the caller
 * wants the path only).  ERR_IO (unreadable) or ERR_INVALID with
 * "name:line: path: ..." naming node in c->errmsg.  config.c.
 */
enum err cfg_check_secret_file(struct ctx *c, yaml_node_t *node, const char *path,
			       const char *file);
/*
 * The checks of the top-level database and database_password_file of cfg
 * (map: the top-level mapping, for lines): database is an sqlite path, or a
 * PostgreSQL URI (postgres:// or postgresql://) that libpq's
 * PQconninfoParse() accepts and that holds no password;
 * database_password_file is for PostgreSQL only and must be readable.
 * ERR_INVALID or ERR_IO with "name:line: key: ..." in c->errmsg; the message
 * never quotes a password.  config_database.c.
 */
enum err cfg_check_database(struct ctx *c, yaml_node_t *map, struct config *cfg);
/*
 * A receiver's alertmanager r after the file is read: without its own url it
 * takes top's whole (strings copied), else top's timeout and max_silence
 * where it set none (config_fields.c).
 */
void cfg_alertmanager_inherit(struct cfg_alertmanager *r, const struct cfg_alertmanager *top);
/* Set every default of a fresh cfg (config_fields.c). */
void cfg_defaults(struct config *cfg);
/*
 * Set the defaults of the rows of fs (.def, .def_str) in obj, a zeroed
 * struct, and those of the mappings inside; rows whose default is said in
 * words (.dflt) and lists of records are left to their struct's code
 * (cfg_defaults() and the records' defaults).  config_reference.c.
 */
void cfg_set_defaults(const struct fieldset *fs, void *obj);

#endif
