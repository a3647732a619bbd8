/*
 * am.c - Alertmanager webhook payload (version 4): validation on the intake
 * path, fingerprints, and the per-alert event document.
 *
 * The parsed jansson document is kept inside the payload and every string of
 * the payload points into it, so parsing copies nothing but the label arrays.
 */
#include "am.h"

#include <assert.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec.h"
#include "rfc3339.h"
#include "utf8.h"
#include "xalloc.h"

#include "banned.h"

/* Copy src into dst[size], cut at a UTF-8 boundary. */
static void copy_cut(char *dst, size_t size, const char *src)
{
	size_t n = utf8_cut(src, strlen(src), size - 1);
	memcpy(dst, src, n);
	dst[n] = '\0';
}

/* Fill err (may be NULL) with the path and a formatted message; returns ERR_INVALID. */
static enum err PRINTF_LIKE(3, 4) fail(struct am_error *err, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (!err)
		return ERR_INVALID;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	copy_cut(err->field, sizeof(err->field), field);
	copy_cut(err->message, sizeof(err->message), msg);
	return ERR_INVALID;
}

/* snprintf into path[size] (silently cut; only used for error paths). */
static void PRINTF_LIKE(3, 4) mkpath(char *path, size_t size, const char *fmt, ...)
{
	char tmp[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(tmp, sizeof(tmp), fmt, ap);
	va_end(ap);
	copy_cut(path, size, tmp);
}

const char *const am_invalid_members[] = { "status", "labels", "annotations", "startsAt",
					   "endsAt", "generatorURL", "fingerprint", NULL };

/* ---- label sets ---- */

static int label_cmp(const void *a, const void *b)
{
	return strcmp(((const struct am_label *)a)->name, ((const struct am_label *)b)->name);
}

const char *am_labels_get(const struct am_labels *set, const char *name)
{
	struct am_label key = { name, NULL };
	const struct am_label *hit;

	if (!set || !set->n)
		return NULL;
	hit = bsearch(&key, set->v, set->n, sizeof(*set->v), label_cmp);
	return hit ? hit->value : NULL;
}

/*
 * Note entry field of a derived set as left out (see am_payload.n_dropped):
 * counted, and the first one's field and why kept.
 */
static void PRINTF_LIKE(3, 4) drop(struct am_payload *p, const char *field, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	if (p->n_dropped++)
		return;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	copy_cut(p->dropped.field, sizeof(p->dropped.field), field);
	copy_cut(p->dropped.message, sizeof(p->dropped.message), msg);
}

/*
 * Fill out from obj, an object of strings at path (NULL obj: empty set).
 * max_value: byte limit of a value.  nonempty: reject an empty object.
 * derived NULL: an entry over a limit (max_labels, max_name, max_value)
 * fails the parse.  derived set (a set Alertmanager derives from the alerts:
 * groupLabels, commonLabels, commonAnnotations): such entries are left out
 * and noted in derived (drop()), entries past max_labels in name order.
 */
static enum err parse_labels(const json_t *obj, const char *path, int nonempty, size_t max_labels,
			     size_t max_name, size_t max_value, struct am_payload *derived,
			     struct am_labels *out, struct am_error *err)
{
	const char *key;
	json_t *val;
	char field[128];
	size_t n = 0;

	out->v = NULL;
	out->n = 0;
	if (!obj)
		return nonempty ? fail(err, path, "missing") : ERR_OK;
	if (!json_is_object(obj))
		return fail(err, path, "must be an object of strings");
	if (nonempty && json_object_size(obj) == 0)
		return fail(err, path, "must have at least one label");
	if (!derived && json_object_size(obj) > max_labels)
		return fail(err, path, "more than %zu entries", max_labels);
	json_object_foreach((json_t *)obj, key, val) {
		size_t klen = strlen(key);
		int too_long = klen > max_name || (json_is_string(val) &&
						   json_string_length(val) > max_value);

		if (klen == 0)
			return fail(err, path, "empty name");
		/* The path is only formatted on failure: this loop is on the intake path. */
		if (too_long || !json_is_string(val))
			mkpath(field, sizeof(field), "%s.%s", path, key);
		if (!json_is_string(val))
			return fail(err, field, "must be a string");
		if (too_long && !derived && klen > max_name)
			return fail(err, field, "name longer than %zu bytes", max_name);
		if (too_long && !derived)
			return fail(err, field, "longer than %zu bytes", max_value);
		if (too_long && klen > max_name)
			drop(derived, field, "name longer than %zu bytes: left out", max_name);
		else if (too_long)
			drop(derived, field, "longer than %zu bytes: left out", max_value);
	}
	if (!json_object_size(obj))
		return ERR_OK;
	out->v = xcalloc(json_object_size(obj), sizeof(*out->v));
	json_object_foreach((json_t *)obj, key, val) {
		if (strlen(key) > max_name || json_string_length(val) > max_value)
			continue;  /* derived: dropped above */
		out->v[n].name = key;
		out->v[n].value = json_string_value(val);
		n++;
	}
	out->n = n;
	qsort(out->v, out->n, sizeof(*out->v), label_cmp);
	if (out->n > max_labels) {
		drop(derived, path, "more than %zu entries: %zu left out", max_labels,
		     out->n - max_labels);
		derived->n_dropped += out->n - max_labels - 1;
		out->n = max_labels;
	}
	return ERR_OK;
}

/* ---- fingerprint and QuoteMeta ---- */

void am_fingerprint(const struct am_labels *labels, char out[17])
{
	static const unsigned char sep = 0xff;
	uint64_t h = CODEC_FNV64_OFFSET;

	for (size_t i = 0; labels && i < labels->n; i++) {
		h = codec_fnv64a(h, labels->v[i].name, strlen(labels->v[i].name));
		h = codec_fnv64a(h, &sep, 1);
		h = codec_fnv64a(h, labels->v[i].value, strlen(labels->v[i].value));
		h = codec_fnv64a(h, &sep, 1);
	}
	snprintf(out, 17, "%016llx", (unsigned long long)h);
}

void am_unquote_meta(const char *s, struct buf *out)
{
	static const char meta[] = "\\.+*?()|[]{}^$";

	if (!s)
		return;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] && strchr(meta, s[1]))
			s++;
		(void)buf_addch(out, *s);
	}
}

/* ---- payload ---- */

static int is_fingerprint(const char *s, size_t len)
{
	if (len != 16)
		return 0;
	for (size_t i = 0; i < len; i++) {
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return 0;
	}
	return 1;
}

/*
 * Member key of obj as a string ("" when absent and not required); *out
 * points into obj.  Error paths are prefix + key, formatted only on failure
 * (prefix is "" or e.g. "alerts[3]."), to keep the intake path lean.
 */
static enum err get_string(const json_t *obj, const char *prefix, const char *key, int required,
			   const char **out, struct am_error *err)
{
	const json_t *v = json_object_get(obj, key);
	char path[128];

	*out = "";
	if (v && json_is_string(v)) {
		*out = json_string_value(v);
		return ERR_OK;
	}
	if (!v && !required)
		return ERR_OK;
	mkpath(path, sizeof(path), "%s%s", prefix, key);
	return fail(err, path, v ? "must be a string" : "missing");
}

/* status must be "firing" or "resolved". */
static enum err get_status(const json_t *obj, const char *prefix, const char **out,
			   struct am_error *err)
{
	enum err rc = get_string(obj, prefix, "status", 1, out, err);
	char path[128];

	if (rc || !strcmp(*out, "firing") || !strcmp(*out, "resolved"))
		return rc;
	mkpath(path, sizeof(path), "%sstatus", prefix);
	return fail(err, path, "must be \"firing\" or \"resolved\"");
}

/* An RFC 3339 time; the zero time is refused when !zero_ok. */
static enum err get_time(const json_t *obj, const char *prefix, const char *key, int zero_ok,
			 const char **str, int64_t *ms, struct am_error *err)
{
	enum err rc = get_string(obj, prefix, key, 1, str, err);
	char path[128];

	if (rc)
		return rc;
	rc = rfc3339_parse_go(*str, ms);
	if (rc == ERR_OK && (zero_ok || *ms != 0))
		return ERR_OK;
	mkpath(path, sizeof(path), "%s%s", prefix, key);
	if (rc == ERR_OK)
		return fail(err, path, "must not be the zero time");
	return fail(err, path, "not an RFC 3339 time");
}

/*
 * Parse alert idx (obj, an object) into a; on error *member is the alert's
 * member that failed (a static name).
 */
static enum err parse_alert(const json_t *obj, size_t idx, const struct am_options *o,
			    struct am_alert *a, const char **member, struct am_error *err)
{
	char prefix[64], path[128];
	const char *fp;
	enum err rc;

	mkpath(prefix, sizeof(prefix), "alerts[%zu].", idx);
	*member = "status";
	rc = get_status(obj, prefix, &a->status, err);
	if (rc)
		return rc;
	a->firing = !strcmp(a->status, "firing");
	*member = "labels";
	mkpath(path, sizeof(path), "%slabels", prefix);
	rc = parse_labels(json_object_get(obj, "labels"), path, 1, o->max_labels,
			  o->max_label_bytes, o->max_label_bytes, NULL, &a->labels, err);
	if (rc)
		return rc;
	*member = "annotations";
	mkpath(path, sizeof(path), "%sannotations", prefix);
	rc = parse_labels(json_object_get(obj, "annotations"), path, 0, o->max_labels,
			  o->max_label_bytes, o->max_annotation_bytes, NULL, &a->annotations, err);
	if (rc)
		return rc;
	*member = "startsAt";
	rc = get_time(obj, prefix, "startsAt", 0, &a->starts_at, &a->starts_at_ms, err);
	if (rc)
		return rc;
	*member = "endsAt";
	rc = get_time(obj, prefix, "endsAt", 1, &a->ends_at, &a->ends_at_ms, err);
	if (rc)
		return rc;
	*member = "generatorURL";
	rc = get_string(obj, prefix, "generatorURL", 0, &a->generator_url, err);
	if (rc)
		return rc;
	*member = "fingerprint";
	rc = get_string(obj, prefix, "fingerprint", 0, &fp, err);
	if (rc)
		return rc;
	if (!json_object_get(obj, "fingerprint")) {
		am_fingerprint(&a->labels, a->fingerprint);
		a->fingerprint_computed = 1;
		return ERR_OK;
	}
	if (!is_fingerprint(fp, strlen(fp))) {
		mkpath(path, sizeof(path), "%sfingerprint", prefix);
		return fail(err, path, "must be 16 lowercase hex digits");
	}
	memcpy(a->fingerprint, fp, 17);
	return ERR_OK;
}

/*
 * What can be read of an invalid alert (see am_options.keep_invalid_alerts):
 * a status for its event and a stable key.  group_status is the payload's.
 */
static void salvage(const json_t *obj, const char *group_status, struct am_alert *a)
{
	const json_t *fp = json_object_get(obj, "fingerprint");
	const json_t *labels = json_object_get(obj, "labels");
	struct am_labels set = { NULL, 0 };
	const char *key;
	json_t *val;

	if (!a->status || (strcmp(a->status, "firing") && strcmp(a->status, "resolved")))
		a->status = group_status;
	a->firing = !strcmp(a->status, "firing");
	if (!a->starts_at)
		a->starts_at = "";
	if (!a->ends_at)
		a->ends_at = "";
	if (!a->generator_url)
		a->generator_url = "";
	if (json_is_string(fp) && is_fingerprint(json_string_value(fp), json_string_length(fp))) {
		memcpy(a->fingerprint, json_string_value(fp), 17);
		return;
	}
	/* Alertmanager's fingerprint of what the labels hold, whatever their sizes. */
	if (json_is_object(labels) && json_object_size(labels) > 0) {
		set.v = xcalloc(json_object_size(labels), sizeof(*set.v));
		json_object_foreach((json_t *)labels, key, val) {
			if (!json_is_string(val))
				continue;
			set.v[set.n].name = key;
			set.v[set.n++].value = json_string_value(val);
		}
		qsort(set.v, set.n, sizeof(*set.v), label_cmp);
	}
	am_fingerprint(&set, a->fingerprint);
	a->fingerprint_computed = 1;
	free(set.v);
}

static void set_invalid(struct am_alert *a, const char *reason, const char *field,
			const char *message)
{
	if (!a->invalid)
		a->invalid = xcalloc(1, sizeof(*a->invalid));
	copy_cut(a->invalid->field, sizeof(a->invalid->field), field);
	copy_cut(a->invalid->message, sizeof(a->invalid->message), message);
	a->invalid_reason = reason;
}

static enum err parse_group(const json_t *root, const struct am_options *o, struct am_payload *p,
			    struct am_error *err)
{
	const json_t *v;
	enum err rc;

	rc = get_string(root, "", "version", 1, &p->version, err);
	if (rc)
		return rc;
	if (strcmp(p->version, "4"))
		return fail(err, "version", "unsupported version, want \"4\"");
	rc = get_status(root, "", &p->status, err);
	if (rc)
		return rc;
	rc = get_string(root, "", "receiver", 1, &p->receiver, err);
	if (rc)
		return rc;
	if (!*p->receiver)
		return fail(err, "receiver", "must not be empty");
	rc = get_string(root, "", "groupKey", 1, &p->group_key, err);
	if (rc)
		return rc;
	v = json_object_get(root, "truncatedAlerts");
	if (v && !json_is_integer(v))
		return fail(err, "truncatedAlerts", "must be an integer");
	if (v && json_integer_value(v) < 0)
		return fail(err, "truncatedAlerts", "must not be negative");
	p->truncated_alerts = v ? json_integer_value(v) : 0;
	/* Derived from the alerts: never a reason to refuse them (see am.h). */
	rc = parse_labels(json_object_get(root, "groupLabels"), "groupLabels", 0, o->max_labels,
			  o->max_label_bytes, o->max_label_bytes, p, &p->group_labels, err);
	if (rc)
		return rc;
	rc = parse_labels(json_object_get(root, "commonLabels"), "commonLabels", 0, o->max_labels,
			  o->max_label_bytes, o->max_label_bytes, p, &p->common_labels, err);
	if (rc)
		return rc;
	rc = parse_labels(json_object_get(root, "commonAnnotations"), "commonAnnotations", 0,
			  o->max_labels, o->max_label_bytes, o->max_annotation_bytes, p,
			  &p->common_annotations, err);
	if (rc)
		return rc;
	return get_string(root, "", "externalURL", 0, &p->external_url, err);
}

static enum err parse_alerts(const json_t *root, const struct am_options *o, struct am_payload *p,
			     struct am_error *err)
{
	const json_t *arr = json_object_get(root, "alerts");
	char path[64];
	enum err rc;

	if (!arr)
		return fail(err, "alerts", "missing");
	if (!json_is_array(arr))
		return fail(err, "alerts", "must be an array");
	if (json_array_size(arr) == 0)
		return fail(err, "alerts", "must not be empty");
	if (json_array_size(arr) > o->max_alerts)
		return fail(err, "alerts", "more than %zu alerts", o->max_alerts);
	p->alerts = xcalloc(json_array_size(arr), sizeof(*p->alerts));
	for (size_t i = 0; i < json_array_size(arr); i++) {
		const json_t *obj = json_array_get(arr, i);
		struct am_alert *a = &p->alerts[i];
		const char *member = "";
		struct am_error e;

		/* Count as we go so that am_payload_free() releases what was filled. */
		p->n_alerts = i + 1;
		a->index = i;
		a->json = obj;
		if (!json_is_object(obj)) {  /* the envelope's type: "alerts" holds objects */
			mkpath(path, sizeof(path), "alerts[%zu]", i);
			return fail(err, path, "must be an object");
		}
		rc = parse_alert(obj, i, o, a, &member, &e);
		if (rc && !o->keep_invalid_alerts) {
			if (err)
				*err = e;
			return rc;
		}
		if (rc) {
			set_invalid(a, member, e.field, e.message);
			salvage(obj, p->status, a);
		}
	}
	am_payload_sort_invalid(p);
	return ERR_OK;
}

static int index_cmp(const void *a, const void *b)
{
	size_t x = ((const struct am_alert *)a)->index, y = ((const struct am_alert *)b)->index;

	return x < y ? -1 : x > y;
}

void am_alert_invalidate(struct am_payload *p, size_t i, const char *reason, const char *field,
			 const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	assert(i < p->n_alerts);
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	set_invalid(&p->alerts[i], reason, field, msg);
}

void am_alert_release(struct am_payload *p, size_t i)
{
	struct am_alert *a;

	assert(i < p->n_alerts);
	a = &p->alerts[i];
	a->status = a->firing ? "firing" : "resolved";
	a->starts_at = a->ends_at = a->generator_url = "";
	free(a->labels.v);
	free(a->annotations.v);
	a->labels.v = a->annotations.v = NULL;
	a->labels.n = a->annotations.n = 0;
	/* The array's reference is the object's last one: this frees it. */
	json_array_set_new(json_object_get(p->doc, "alerts"), a->index, json_null());
	a->json = NULL;
}

void am_payload_sort_invalid(struct am_payload *p)
{
	size_t total = p->n_alerts + p->n_invalid, valid = 0, bad = 0;
	struct am_alert *tmp;

	for (size_t i = 0; i < total; i++)
		valid += p->alerts[i].invalid == NULL;
	if (valid == p->n_alerts)
		return;
	tmp = xcalloc(total, sizeof(*tmp));
	for (size_t i = 0; i < total; i++) {
		if (p->alerts[i].invalid)
			tmp[valid + bad++] = p->alerts[i];
		else
			tmp[i - bad] = p->alerts[i];
	}
	free(p->alerts);
	p->alerts = tmp;
	p->n_alerts = valid;
	p->n_invalid = bad;
	/* Those invalid before this call were behind the newly marked ones. */
	qsort(p->alerts + valid, bad, sizeof(*p->alerts), index_cmp);
}

enum err am_alert_raw_json(const struct am_alert *a, struct buf *out)
{
	char *s = json_dumps(a->json, JSON_COMPACT | JSON_SORT_KEYS);
	enum err rc;

	if (!s)
		abort();  /* out of memory: as xmalloc does */
	rc = buf_adds(out, s);
	free(s);
	return rc;
}

static void options_fill(const struct am_options *in, struct am_options *o)
{
	if (in)
		*o = *in;
	else
		memset(o, 0, sizeof(*o));
	if (!o->max_alerts)
		o->max_alerts = AM_DEFAULT_MAX_ALERTS;
	if (!o->max_labels)
		o->max_labels = AM_DEFAULT_MAX_LABELS;
	if (!o->max_label_bytes)
		o->max_label_bytes = AM_DEFAULT_MAX_LABEL_BYTES;
	if (!o->max_annotation_bytes)
		o->max_annotation_bytes = AM_DEFAULT_MAX_ANNOTATION_BYTES;
}

/* am_error.receiver of a payload that failed (root an object); err may be NULL. */
static void receiver_of_rejected(const json_t *root, struct am_error *err)
{
	const json_t *v = json_object_get(root, "receiver");
	struct buf name = BUF_INIT;

	if (!err)
		return;
	err->receiver[0] = '\0';  /* err may hold an alert's copy: set it whole */
	if (!json_is_string(v) || json_string_length(v) >= sizeof(err->receiver))
		return;
	am_unquote_meta(json_string_value(v), &name);
	memcpy(err->receiver, buf_str(&name), name.len + 1);
	buf_release(&name);
}

enum err am_parse(const char *body, size_t len, const struct am_options *opts,
		  struct am_payload **out, struct am_error *err)
{
	struct am_options o;
	struct am_payload *p = NULL;
	struct buf name = BUF_INIT;
	json_error_t jerr;
	json_t *root;
	enum err rc;

	*out = NULL;
	if (err)
		err->receiver[0] = '\0';
	options_fill(opts, &o);
	/* No JSON_ALLOW_NUL: \u0000 is an error; jansson also rejects invalid UTF-8. */
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		rc = fail(err, "", "invalid JSON at line %d column %d: %s", jerr.line,
			  jerr.column, jerr.text);
		goto out;
	}
	p = xcalloc(1, sizeof(*p));
	p->doc = root;
	if (!json_is_object(root)) {
		rc = fail(err, "", "payload must be a JSON object");
		goto out;
	}
	rc = parse_group(root, &o, p, err);
	if (rc == ERR_OK)
		rc = parse_alerts(root, &o, p, err);
	if (rc) {
		receiver_of_rejected(root, err);
		goto out;
	}
	am_unquote_meta(p->receiver, &name);
	p->receiver_name = buf_detach(&name);
	*out = p;
	p = NULL;
out:
	buf_release(&name);
	am_payload_free(p);
	return rc;
}

void am_payload_free(struct am_payload *p)
{
	if (!p)
		return;
	for (size_t i = 0; i < p->n_alerts + p->n_invalid; i++) {
		free(p->alerts[i].labels.v);
		free(p->alerts[i].annotations.v);
		free(p->alerts[i].invalid);
	}
	free(p->alerts);
	free(p->group_labels.v);
	free(p->common_labels.v);
	free(p->common_annotations.v);
	free(p->receiver_name);
	json_decref(p->doc);
	free(p);
}

/* ---- event document ---- */

/*
 * The event document is written directly rather than built as a json_t and
 * dumped: it is made three times per webhook of three alerts on the intake's
 * hot path, and its shape is fixed.  Strings come from am_parse(), so they are
 * valid UTF-8 without NUL; codec_json_string() escapes them as jansson does.
 */
static void add_json_string(struct buf *out, const char *s)
{
	codec_json_string(out, s, strlen(s));
}

/* ,"key":"value" (or without the comma for the first member). */
static void add_member(struct buf *out, const char *key, const char *value)
{
	buf_addch(out, ',');
	add_json_string(out, key);
	buf_addch(out, ':');
	add_json_string(out, value);
}

static void add_labels(struct buf *out, const char *key, const struct am_labels *set)
{
	buf_addch(out, ',');
	add_json_string(out, key);
	buf_adds(out, ":{");
	for (size_t i = 0; i < set->n; i++) {
		if (i)
			buf_addch(out, ',');
		add_json_string(out, set->v[i].name);
		buf_addch(out, ':');
		add_json_string(out, set->v[i].value);
	}
	buf_addch(out, '}');
}

enum err am_event_json(const struct am_payload *p, size_t i, struct buf *out)
{
	const struct am_alert *a;
	struct buf doc = BUF_INIT;
	enum err rc;

	assert(i < p->n_alerts);
	a = &p->alerts[i];
	buf_adds(&doc, "{\"v\":1");
	add_member(&doc, "receiver", p->receiver_name);
	add_member(&doc, "groupStatus", p->status);
	add_member(&doc, "status", a->status);
	add_labels(&doc, "labels", &a->labels);
	add_labels(&doc, "annotations", &a->annotations);
	add_member(&doc, "startsAt", a->starts_at);
	add_member(&doc, "endsAt", a->ends_at);
	add_member(&doc, "generatorURL", a->generator_url);
	add_member(&doc, "fingerprint", a->fingerprint);
	add_member(&doc, "groupKey", p->group_key);
	add_labels(&doc, "groupLabels", &p->group_labels);
	add_labels(&doc, "commonLabels", &p->common_labels);
	add_labels(&doc, "commonAnnotations", &p->common_annotations);
	add_member(&doc, "externalURL", p->external_url);
	buf_printf(&doc, ",\"truncatedAlerts\":%lld}", (long long)p->truncated_alerts);
	/* One append: out (which may carry a max) is changed whole or not at all. */
	rc = buf_add(out, doc.data, doc.len);
	buf_release(&doc);
	return rc;
}

enum err am_group_event_json(const struct am_payload *p, struct buf *out)
{
	struct buf doc = BUF_INIT;
	enum err rc;

	assert(p->n_alerts > 0);
	rc = am_event_json(p, 0, &doc);
	assert(rc == ERR_OK);  /* doc has no max */
	buf_truncate(&doc, doc.len - 1);  /* its closing brace */
	buf_adds(&doc, ",\"members\":[");
	for (size_t i = 0; i < p->n_alerts; i++) {
		const struct am_alert *a = &p->alerts[i];

		buf_adds(&doc, i ? ",{\"v\":1" : "{\"v\":1");
		add_member(&doc, "fingerprint", a->fingerprint);
		add_member(&doc, "status", a->status);
		add_member(&doc, "startsAt", a->starts_at);
		add_member(&doc, "endsAt", a->ends_at);
		add_labels(&doc, "labels", &a->labels);
		buf_addch(&doc, '}');
	}
	buf_adds(&doc, "]}");
	rc = buf_add(out, doc.data, doc.len);
	buf_release(&doc);
	return rc;
}
