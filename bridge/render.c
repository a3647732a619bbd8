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

#include "bridge/issue.h"
#include "bridge/view.h"
#include "core/am.h"
#include "core/embed.h"
#include "core/matchers.h"
#include "core/mustache.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define RENDER_MAX_OUT (1u << 20)
#define RENDER_MAX_FILE (1u << 20)
#define GH_LABEL_MAX_CHARS 50

/* The texts of a receiver, or of one of its routes. */
struct template_set {
	struct mustache *text[RENDER_TEXT_COUNT];
	struct mustache **labels;
	size_t n_labels;
	struct mustache **assignees;
	size_t n_assignees;
	struct mustache *repo;
};

struct receiver_templates {
	const char *name;  /* borrowed from the config */
	struct template_set *sets;  /* [0]: the receiver's; [1 + i]: route i's */
	size_t n_sets;
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
	enum err rc = buf_read_file(out, path, RENDER_MAX_FILE);

	if (rc == ERR_IO)
		buf_setf(errmsg, "cannot read %s: %s", path, strerror(errno));
	else if (rc == ERR_TOOBIG)
		buf_setf(errmsg, "%s: larger than %u bytes", path, RENDER_MAX_FILE);
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

/* Compile one text from its file or the embedded default; where names it in messages. */
static enum err compile_text(const struct cfg_templates *t, const char *where,
			     enum render_text which, struct mustache **out, struct buf *errmsg)
{
	const char *path = template_path(t, which);
	struct buf src = BUF_INIT, why = BUF_INIT;
	enum err rc_err;

	if (path) {
		rc_err = render_read_file(path, &src, &why);
		if (rc_err) {
			buf_setf(errmsg, "%s.templates.%s: %s", where, config_keys[which],
				 buf_str(&why));
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
		buf_setf(errmsg, "%s.templates.%s (%s): %s", where, config_keys[which],
			 path ? path : default_names[which], buf_str(&why));
out:
	buf_release(&src);
	buf_release(&why);
	return rc_err;
}

static enum err compile_list(const struct cfg_list *list, const char *where, const char *key,
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
			buf_setf(errmsg, "%s.%s[%zu]: %s", where, key, i, buf_str(&why));
			break;
		}
	}
	buf_release(&why);
	return rc;
}

/* Compile the texts, lists and repo of one receiver or route into set. */
static enum err compile_set(const struct cfg_templates *t, const struct cfg_list *labels,
			    const struct cfg_list *assignees, const char *repo, const char *where,
			    struct template_set *set, struct buf *errmsg)
{
	struct buf why = BUF_INIT;
	enum err rc = ERR_OK;

	for (int w = 0; w < RENDER_TEXT_COUNT && !rc; w++)
		rc = compile_text(t, where, (enum render_text)w, &set->text[w], errmsg);
	if (!rc)
		rc = compile_list(labels, where, "labels", &set->labels, &set->n_labels, errmsg);
	if (!rc)
		rc = compile_list(assignees, where, "assignees", &set->assignees, &set->n_assignees,
				  errmsg);
	if (!rc && (rc = mustache_compile(repo, strlen(repo), &set->repo, &why)))
		buf_setf(errmsg, "%s.repo: %s", where, buf_str(&why));
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
		char where[96];

		t->name = c->name;
		t->sets = xcalloc(1 + c->routes_count, sizeof(*t->sets));
		t->n_sets = 1 + c->routes_count;
		snprintf(where, sizeof(where), "receivers[%zu]", i);
		rc = compile_set(&c->templates, &c->labels, &c->assignees, c->repo, where,
				 &t->sets[0], errmsg);
		for (size_t k = 0; k < c->routes_count && !rc; k++) {
			const struct cfg_route *rt = &c->routes[k];

			snprintf(where, sizeof(where), "receivers[%zu].routes[%zu]", i, k);
			rc = compile_set(&rt->templates, &rt->labels, &rt->assignees, rt->repo,
					 where, &t->sets[1 + k], errmsg);
		}
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
		for (size_t k = 0; t->sets && k < t->n_sets; k++) {
			struct template_set *set = &t->sets[k];
			for (int w = 0; w < RENDER_TEXT_COUNT; w++)
				mustache_free(set->text[w]);
			for (size_t j = 0; j < set->n_labels; j++)
				mustache_free(set->labels[j]);
			for (size_t j = 0; j < set->n_assignees; j++)
				mustache_free(set->assignees[j]);
			free(set->labels);
			free(set->assignees);
			mustache_free(set->repo);
		}
		free(t->sets);
	}
	free(r->rcv);
	free(r);
}

static char *trim(char *s);

/* The set of receiver's route (-1: the receiver's own), or NULL with errmsg. */
static const struct template_set *find(const struct render *r, const char *receiver, int route,
				       struct buf *errmsg)
{
	for (size_t i = 0; i < r->n; i++) {
		const struct receiver_templates *t = &r->rcv[i];

		if (strcmp(t->name, receiver))
			continue;
		if (route >= -1 && (size_t)(route + 1) < t->n_sets)
			return &t->sets[route + 1];
		buf_setf(errmsg, "receiver \"%s\" has no route %d", receiver, route);
		return NULL;
	}
	buf_setf(errmsg, "unknown receiver \"%s\"", receiver);
	return NULL;
}

/*
 * Render m over view as which is sent (render_text()): the escaping of its
 * kind, and a title made one GitHub title.  The one path of the live texts
 * and `alertbridge render`.
 */
static enum err render_as(const struct mustache *m, enum render_text which, const json_t *view,
			  struct buf *out, struct buf *errmsg)
{
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	struct buf raw = BUF_INIT;
	enum err rc;

	opt.escape = which == RENDER_TITLE ? MUSTACHE_ESCAPE_LINE : MUSTACHE_ESCAPE_MARKDOWN;
	opt.max_out_bytes = RENDER_MAX_OUT;
	if (which != RENDER_TITLE)
		return mustache_render_compiled(m, view, &opt, out, errmsg);
	rc = mustache_render_compiled(m, view, &opt, &raw, errmsg);
	if (!rc)
		issue_title_clean(buf_str(&raw), out);
	buf_release(&raw);
	return rc;
}

enum err render_text(const struct render *r, const char *receiver, int route,
		     enum render_text which, const json_t *view, struct buf *out,
		     struct buf *errmsg)
{
	const struct template_set *t = find(r, receiver, route, errmsg);

	struct buf why = BUF_INIT;
	enum err rc;

	if (!t)
		return ERR_NOTFOUND;
	rc = render_as(t->text[which], which, view, out, &why);
	if (rc && route >= 0)
		buf_setf(errmsg, "template %s of receiver \"%s\" route %d: %s", config_keys[which],
			 receiver, route, buf_str(&why));
	else if (rc)
		buf_setf(errmsg, "template %s of receiver \"%s\": %s", config_keys[which], receiver,
			 buf_str(&why));
	buf_release(&why);
	return rc;
}

enum err render_repo(const struct render *r, const char *receiver, int route,
		     const json_t *view, struct buf *out, struct buf *errmsg)
{
	const struct template_set *t = find(r, receiver, route, errmsg);
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	struct buf raw = BUF_INIT;
	enum err rc;

	if (!t)
		return ERR_NOTFOUND;
	opt.escape = MUSTACHE_ESCAPE_NONE;
	opt.max_out_bytes = 4096;
	rc = mustache_render_compiled(t->repo, view, &opt, &raw, errmsg);
	if (!rc) {
		char *s = buf_detach(&raw);
		(void)buf_adds(out, trim(s));
		free(s);
	}
	buf_release(&raw);
	return rc;
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

enum err render_list(const struct render *r, const char *receiver, int route, int assignees,
		     const json_t *view, char ***out, struct buf *errmsg)
{
	const struct template_set *t = find(r, receiver, route, errmsg);
	struct mustache_options opt = MUSTACHE_OPTIONS_INIT;
	struct mustache **tmpl;
	size_t n, kept = 0;
	char **list;
	enum err rc = ERR_OK;

	*out = NULL;
	if (!t)
		return ERR_NOTFOUND;
	tmpl = assignees ? t->assignees : t->labels;
	n = assignees ? t->n_assignees : t->n_labels;
	list = xcalloc(n + 1, sizeof(*list));
	opt.escape = MUSTACHE_ESCAPE_LINE;
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

enum err render_once(const char *tmpl, size_t len, enum render_text which, const json_t *view,
		     struct buf *out, struct buf *errmsg)
{
	struct mustache *m = NULL;
	enum err rc = mustache_compile(tmpl, len, &m, errmsg);

	if (!rc)
		rc = render_as(m, which, view, out, errmsg);
	mustache_free(m);
	return rc;
}

/* The sample alert of render_sample_repos() for route rt (NULL: the receiver's), as a payload. */
static void sample_payload(const char *receiver, const struct cfg_route *rt, struct buf *out)
{
	json_t *labels = json_pack("{s:s, s:s, s:s, s:s, s:s}", "alertname", "SampleAlert",
				   "severity", "critical", "team", "sample", "namespace", "default",
				   "instance", "sample:9100");
	json_t *alert, *payload;
	char *s;

	for (size_t i = 0; rt && i < rt->matchers_count; i++)
		if (rt->matchers[i].op == CFG_MATCH_EQ)
			json_object_set_new(labels, rt->matchers[i].name,
					    json_string(rt->matchers[i].value));
	alert = json_pack("{s:s, s:O, s:{}, s:s, s:s, s:s}", "status", "firing", "labels", labels,
			  "annotations", "startsAt", "2026-01-01T00:00:00Z", "endsAt",
			  "0001-01-01T00:00:00Z", "generatorURL", "");
	payload = json_pack("{s:s, s:s, s:s, s:s, s:{}, s:O, s:{}, s:s, s:i, s:[o]}", "version",
			    "4", "status", "firing", "receiver", receiver, "groupKey", "{}:{}",
			    "groupLabels", "commonLabels", labels, "commonAnnotations",
			    "externalURL", "", "truncatedAlerts", 0, "alerts", alert);
	s = json_dumps(payload, JSON_COMPACT);
	(void)buf_adds(out, s ? s : "");
	free(s);
	json_decref(payload);
	json_decref(labels);
}

/* The repo of receiver i (route k, -1: its own) for the sample alert, into out; 1 if invalid. */
static int sample_repo(const struct config *cfg, const struct render *r, size_t i, int k,
		       int64_t now_ms, struct buf *out)
{
	const struct cfg_receiver *c = &cfg->receivers[i];
	const struct cfg_route *rt = k >= 0 ? &c->routes[k] : NULL;
	struct buf body = BUF_INIT, doc = BUF_INIT, repo = BUF_INIT, why = BUF_INIT;
	struct view_context ctx = { 0 };
	struct am_payload *p = NULL;
	struct am_error e;
	json_t *view = NULL;
	int bad = 1;

	sample_payload(c->name, rt, &body);
	ctx.now_ms = now_ms;
	ctx.receiver = c->name;
	if (am_parse(buf_str(&body), body.len, NULL, &p, &e) == ERR_OK &&
	    am_event_json(p, 0, &doc) == ERR_OK &&
	    view_build(buf_str(&doc), &ctx, &view, &why) == ERR_OK &&
	    render_repo(r, c->name, k, view, &repo, &why) == ERR_OK)
		bad = issue_repo_valid(buf_str(&repo), &why) != ERR_OK;
	(void)buf_printf(out, "# receivers[%zu] \"%s\": ", i, c->name);
	if (rt) {
		(void)buf_printf(out, "route %d [", k);
		for (size_t m = 0; m < rt->matchers_count; m++) {
			if (m)
				(void)buf_adds(out, ", ");
			matcher_format(&rt->matchers[m], out);
		}
		(void)buf_adds(out, "]: ");
	} else if (c->routes_count) {
		(void)buf_adds(out, "no route matches: ");
	}
	(void)buf_printf(out, "repo for the sample alert: %s", buf_str(&repo));
	if (bad)
		(void)buf_printf(out, "  WARNING: not a valid repository: %s", buf_str(&why));
	(void)buf_addch(out, '\n');
	json_decref(view);
	am_payload_free(p);
	buf_release(&body);
	buf_release(&doc);
	buf_release(&repo);
	buf_release(&why);
	return bad;
}

int render_sample_repos(const struct config *cfg, const struct render *r, int64_t now_ms,
			struct buf *out)
{
	int bad = 0;

	for (size_t i = 0; i < cfg->receivers_count; i++) {
		for (size_t k = 0; k < cfg->receivers[i].routes_count; k++)
			bad += sample_repo(cfg, r, i, (int)k, now_ms, out);
		bad += sample_repo(cfg, r, i, -1, now_ms, out);
	}
	return bad;
}
