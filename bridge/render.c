/*
 * render.c - compiled templates per receiver.  Everything is read and
 * compiled in render_new() so that rendering on the reconciler's path does
 * no I/O and cannot hit a syntax error.
 */
#include "bridge/render.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/embed.h"
#include "core/mustache.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define RENDER_MAX_OUT (1u << 20)
#define RENDER_MAX_FILE (1u << 20)
#define GH_LABEL_MAX_CHARS 50

struct receiver_templates {
	const char *name;  /* borrowed from the config */
	struct mustache *text[RENDER_TEXT_COUNT];
	struct mustache **labels;
	size_t n_labels;
	struct mustache **assignees;
	size_t n_assignees;
};

struct render {
	struct receiver_templates *rcv;
	size_t n;
};

static const char *const default_names[RENDER_TEXT_COUNT] = {
	"issue_title.mustache",   "issue_body.mustache",    "comment_refire.mustache",
	"comment_resolve.mustache", "comment_reopen.mustache",
};

static const char *const config_keys[RENDER_TEXT_COUNT] = {
	"title", "body", "refire", "resolve", "reopen",
};

const char *render_default_name(enum render_text which)
{
	return default_names[which];
}

enum err render_read_file(const char *path, struct buf *out, struct buf *errmsg)
{
	FILE *f = fopen(path, "rb");
	char chunk[8192];
	size_t n;
	enum err rc = ERR_OK;

	if (!f) {
		buf_setf(errmsg, "cannot read %s: %s", path, strerror(errno));
		return ERR_IO;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) {
		if (out->len + n > RENDER_MAX_FILE) {
			buf_setf(errmsg, "%s: larger than %u bytes", path, RENDER_MAX_FILE);
			rc = ERR_TOOBIG;
			goto out;
		}
		buf_add(out, chunk, n);
	}
	if (ferror(f)) {
		buf_setf(errmsg, "cannot read %s: %s", path, strerror(errno));
		rc = ERR_IO;
	}
out:
	fclose(f);
	return rc;
}

static const char *template_path(const struct cfg_templates *t, enum render_text which)
{
	switch (which) {
	case RENDER_TITLE: return t->title;
	case RENDER_BODY: return t->body;
	case RENDER_REFIRE: return t->refire;
	case RENDER_RESOLVE: return t->resolve;
	case RENDER_REOPEN: return t->reopen;
	case RENDER_TEXT_COUNT: break;
	}
	return NULL;
}

/* Compile one receiver text from its file or the embedded default. */
static enum err compile_text(const struct cfg_receiver *rc, size_t idx, enum render_text which,
			     struct mustache **out, struct buf *errmsg)
{
	const char *path = template_path(&rc->templates, which);
	struct buf src = BUF_INIT, why = BUF_INIT;
	enum err rc_err;

	if (path) {
		rc_err = render_read_file(path, &src, &why);
		if (rc_err) {
			buf_setf(errmsg, "receivers[%zu].templates.%s: %s", idx,
				 config_keys[which], buf_str(&why));
			goto out;
		}
	} else {
		size_t len = 0;
		const char *data = embed_get(default_names[which], &len);
		if (!data) {
			buf_setf(errmsg, "built-in template %s is missing from this build",
				 default_names[which]);
			rc_err = ERR_NOTFOUND;
			goto out;
		}
		buf_add(&src, data, len);
	}
	rc_err = mustache_compile(buf_str(&src), src.len, out, &why);
	if (rc_err)
		buf_setf(errmsg, "receivers[%zu].templates.%s (%s): %s", idx, config_keys[which],
			 path ? path : default_names[which], buf_str(&why));
out:
	buf_release(&src);
	buf_release(&why);
	return rc_err;
}

static enum err compile_list(const struct cfg_list *list, size_t idx, const char *key,
			     struct mustache ***out, size_t *n_out, struct buf *errmsg)
{
	struct buf why = BUF_INIT;
	enum err rc = ERR_OK;

	*out = xcalloc(list->count ? list->count : 1, sizeof(**out));
	*n_out = list->count;
	for (size_t i = 0; i < list->count; i++) {
		const char *s = list->items[i];
		rc = mustache_compile(s, strlen(s), &(*out)[i], &why);
		if (rc) {
			buf_setf(errmsg, "receivers[%zu].%s[%zu]: %s", idx, key, i, buf_str(&why));
			break;
		}
	}
	buf_release(&why);
	return rc;
}

enum err render_new(const struct config *cfg, struct render **out, struct buf *errmsg)
{
	struct render *r = xcalloc(1, sizeof(*r));
	enum err rc = ERR_OK;

	*out = NULL;
	r->n = cfg->receivers_count;
	r->rcv = xcalloc(r->n ? r->n : 1, sizeof(*r->rcv));
	for (size_t i = 0; i < r->n && !rc; i++) {
		const struct cfg_receiver *c = &cfg->receivers[i];
		struct receiver_templates *t = &r->rcv[i];

		t->name = c->name;
		for (int w = 0; w < RENDER_TEXT_COUNT && !rc; w++)
			rc = compile_text(c, i, (enum render_text)w, &t->text[w], errmsg);
		if (!rc)
			rc = compile_list(&c->labels, i, "labels", &t->labels, &t->n_labels, errmsg);
		if (!rc)
			rc = compile_list(&c->assignees, i, "assignees", &t->assignees,
					  &t->n_assignees, errmsg);
	}
	if (rc) {
		render_free(r);
		return rc;
	}
	*out = r;
	return ERR_OK;
}

enum err render_reload_prepare(void *ctx, const struct config *cfg, void **ext,
			       struct buf *errmsg)
{
	struct render *r = NULL;
	enum err rc = render_new(cfg, &r, errmsg);

	(void)ctx;
	*ext = r;
	return rc;
}

void render_reload_free(void *ext)
{
	render_free(ext);
}

void render_free(struct render *r)
{
	if (!r)
		return;
	for (size_t i = 0; i < r->n; i++) {
		struct receiver_templates *t = &r->rcv[i];
		for (int w = 0; w < RENDER_TEXT_COUNT; w++)
			mustache_free(t->text[w]);
		for (size_t j = 0; j < t->n_labels; j++)
			mustache_free(t->labels[j]);
		for (size_t j = 0; j < t->n_assignees; j++)
			mustache_free(t->assignees[j]);
		free(t->labels);
		free(t->assignees);
	}
	free(r->rcv);
	free(r);
}

static const struct receiver_templates *find(const struct render *r, const char *receiver)
{
	for (size_t i = 0; i < r->n; i++)
		if (!strcmp(r->rcv[i].name, receiver))
			return &r->rcv[i];
	return NULL;
}

enum err render_text(const struct render *r, const char *receiver, enum render_text which,
		     const json_t *view, struct buf *out, struct buf *errmsg)
{
	const struct receiver_templates *t = find(r, receiver);
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;

	if (!t) {
		buf_setf(errmsg, "unknown receiver \"%s\"", receiver);
		return ERR_NOTFOUND;
	}
	opt.escape = which == RENDER_TITLE ? MUSTACHE_ESCAPE_NONE : MUSTACHE_ESCAPE_HTML;
	opt.max_out_bytes = RENDER_MAX_OUT;
	return mustache_render_compiled(t->text[which], view, &opt, out, errmsg);
}

/* Trim ASCII white space in place; returns s. */
static char *trim(char *s)
{
	size_t n = strlen(s);
	char *p = s;

	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
		s[--n] = '\0';
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
		p++;
	memmove(s, p, strlen(p) + 1);
	return s;
}

/* Cut s to max code points on a UTF-8 boundary. */
static void cut_chars(char *s, size_t max)
{
	size_t chars = 0;
	for (size_t i = 0; s[i]; i++) {
		if (((unsigned char)s[i] & 0xc0) != 0x80) {
			if (chars == max) {
				s[i] = '\0';
				return;
			}
			chars++;
		}
	}
}

enum err render_list(const struct render *r, const char *receiver, int assignees,
		     const json_t *view, char ***out, struct buf *errmsg)
{
	const struct receiver_templates *t = find(r, receiver);
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	struct mustache **tmpl;
	size_t n, kept = 0;
	char **list;
	enum err rc = ERR_OK;

	*out = NULL;
	if (!t) {
		buf_setf(errmsg, "unknown receiver \"%s\"", receiver);
		return ERR_NOTFOUND;
	}
	tmpl = assignees ? t->assignees : t->labels;
	n = assignees ? t->n_assignees : t->n_labels;
	list = xcalloc(n + 1, sizeof(*list));
	opt.escape = MUSTACHE_ESCAPE_NONE;
	opt.max_out_bytes = 4096;
	for (size_t i = 0; i < n; i++) {
		struct buf b = BUF_INIT;
		const char *colon;
		char *s;
		int dup = 0;

		rc = mustache_render_compiled(tmpl[i], view, &opt, &b, errmsg);
		if (rc) {
			buf_release(&b);
			break;
		}
		s = trim(buf_detach(&b));
		colon = strchr(s, ':');
		cut_chars(s, GH_LABEL_MAX_CHARS);
		for (size_t j = 0; j < kept; j++)
			dup |= !strcmp(list[j], s);
		if (!*s || (colon && colon[1] == '\0') || dup) {
			free(s);
			continue;
		}
		list[kept++] = s;
	}
	if (rc) {
		render_list_free(list);
		return rc;
	}
	*out = list;
	return ERR_OK;
}

void render_list_free(char **list)
{
	if (!list)
		return;
	for (size_t i = 0; list[i]; i++)
		free(list[i]);
	free(list);
}

enum err render_once(const char *tmpl, size_t len, int html_escape, const json_t *view,
		     struct buf *out, struct buf *errmsg)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;

	opt.escape = html_escape ? MUSTACHE_ESCAPE_HTML : MUSTACHE_ESCAPE_NONE;
	opt.max_out_bytes = RENDER_MAX_OUT;
	return mustache_render(tmpl, len, view, &opt, out, errmsg);
}
