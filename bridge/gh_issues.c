/*
 * gh_issues.c - the GitHub API calls: issues, comments, labels, listing and
 * finding markers (see gh.h), with their JSON and dry-run logging.  Every one
 * goes through gh_call() (gh.c); a write in doubt is tracked by gh_doubt.c;
 * the parts share gh_int.h.
 */
#include "gh_int.h"
#include "gh_assignees.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>
#include <jansson.h>

#include "core/http_client.h"
#include "core/log.h"
#include "core/rfc3339.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define MAX_PAGES 10               /* find_marker: at most 1000 issues */

/* ---- JSON ---- */

/* Set key to the string value; -1 when value is not valid UTF-8. */
static int set_str(json_t *obj, const char *key, const char *value)
{
	json_t *s = json_string(value);
	return s ? json_object_set_new(obj, key, s) : -1;
}

static int set_str_array(json_t *obj, const char *key, const char *const *values)
{
	json_t *arr = json_array();

	for (const char *const *v = values; v && *v; v++) {
		json_t *s = json_string(*v);
		if (!s || json_array_append_new(arr, s)) {
			json_decref(arr);
			return -1;
		}
	}
	return json_object_set_new(obj, key, arr);
}

/* Dump obj (consumed) to a malloc'd string; NULL when it could not be built. */
static char *dump(json_t *obj, int failed)
{
	char *s = failed ? NULL : json_dumps(obj, JSON_COMPACT);
	json_decref(obj);
	return s;
}

static char *dup_string(json_t *obj, const char *key)
{
	json_t *v = json_object_get(obj, key);
	return json_is_string(v) ? xstrdup(json_string_value(v)) : NULL;
}

/* The names of an issue's "labels" (objects with "name", or strings); NULL when absent. */
static char **label_names(json_t *labels)
{
	size_t i, n = 0;
	json_t *v;
	char **out;

	if (!json_is_array(labels))
		return NULL;
	out = xcalloc(json_array_size(labels) + 1, sizeof(*out));
	json_array_foreach(labels, i, v) {
		json_t *name = json_is_object(v) ? json_object_get(v, "name") : v;
		if (json_is_string(name))
			out[n++] = xstrdup(json_string_value(name));
	}
	return out;
}

/* Fill out from an issue object; repo from repository_url (".../repos/{o}/{r}"). */
static enum err parse_issue(json_t *j, const char *what, struct gh_issue *out,
			    struct buf *errmsg)
{
	json_t *num = json_object_get(j, "number");
	json_t *state = json_object_get(j, "state");
	json_t *rurl = json_object_get(j, "repository_url");
	const char *r, *p;

	if (!json_is_integer(num) || !json_is_string(state) || !json_is_string(rurl)) {
		buf_setf(errmsg, "%s: answer is not an issue (number, state, repository_url)",
			 what);
		return ERR_INVALID;
	}
	r = json_string_value(rurl);
	p = strstr(r, "/repos/");
	if (!p || !gh_valid_repo(p + 7)) {
		buf_setf(errmsg, "%s: unexpected repository_url \"%s\"", what, r);
		return ERR_INVALID;
	}
	gh_issue_release(out);
	out->repo = xstrdup(p + 7);
	out->number = (int64_t)json_integer_value(num);
	out->state = xstrdup(json_string_value(state));
	out->state_reason = dup_string(j, "state_reason");
	out->html_url = dup_string(j, "html_url");
	out->closed_at_ms = gh_parse_iso8601(json_string_value(json_object_get(j, "closed_at")));
	out->created_at_ms = gh_parse_iso8601(json_string_value(json_object_get(j, "created_at")));
	if (json_is_integer(json_object_get(j, "comments")))
		out->comments = (int64_t)json_integer_value(json_object_get(j, "comments"));
	out->labels = label_names(json_object_get(j, "labels"));
	return ERR_OK;
}

static enum err parse_issue_body(const struct http_response *res, const char *what,
				 struct gh_issue *out, struct buf *errmsg)
{
	json_error_t jerr;
	json_t *root = json_loadb(buf_str(&res->body), res->body.len, 0, &jerr);
	enum err rc;

	if (!root) {
		buf_setf(errmsg, "%s: answer is not JSON: %s", what, jerr.text);
		return ERR_INVALID;
	}
	rc = parse_issue(root, what, out, errmsg);
	json_decref(root);
	if (rc == ERR_OK) {
		const char *etag = http_response_header(res, "etag");
		out->etag = etag && *etag ? xstrdup(etag) : NULL;
	}
	return rc;
}

/* ---- dry run ---- */

static void log_dry_run(const char *method, const char *path, const char *title);

/*
 * A mutating call in dry-run is paced like a real one, so the log shows the
 * calls at the rate they would be made and a dry-run map fills up as a live
 * one would.
 */
static void dry_run_mutation(struct gh_client *c, const char *method, const char *path,
			     const char *title)
{
	gh_pace(c);
	log_dry_run(method, path, title);
	gh_note_mutation(c);
}

static void log_dry_run(const char *method, const char *path, const char *title)
{
	struct log_line *l = log_begin(LOG_INFO, "dry-run github call");
	log_str(l, "method", method);
	log_str(l, "path", path);
	if (title)
		log_str(l, "title", title);
	log_end(l);
}

static void fake_issue(struct gh_issue *out, const char *repo, int64_t number, const char *state,
		       const char *state_reason)
{
	gh_issue_release(out);
	out->repo = xstrdup(repo);
	out->number = number;
	out->state = xstrdup(state ? state : "open");
	out->state_reason = xstrdup(state_reason);
}

/* ---- the API ---- */

/*
 * GitHub answered a create with 2xx but a body we cannot read: the issue
 * exists, so find it by its marker rather than fail for good (which would
 * leave an issue no map row knows) or create it again.
 */
static enum err unreadable_create(struct gh_client *c, const struct call *k, int64_t sent_ms,
				  struct gh_issue *out, struct buf *errmsg)
{
	enum err rc;
	struct log_line *l = log_begin(LOG_WARN, "create answer unreadable, looking for marker");

	log_str(l, "repo", k->repo);
	log_str(l, "detail", buf_str(errmsg));
	log_end(l);
	rc = gh_resolve_ambiguous(c, k, sent_ms, out);
	if (rc == ERR_OK)
		return ERR_OK;
	gh_issue_release(out);
	(void)buf_printf(errmsg, "; the create may have succeeded: marker lookup: %s",
			 err_str(rc));
	return ERR_RETRY;
}

static enum err check_repo(const char *repo, struct buf *errmsg)
{
	if (gh_valid_repo(repo))
		return ERR_OK;
	buf_setf(errmsg, "invalid repository \"%s\": want owner/name", repo ? repo : "");
	return ERR_INVALID;
}

/* One POST /repos/{o}/{r}/issues (with its retries and marker lookups); res: the answer. */
static enum err post_create(struct gh_client *c, const char *repo, const char *path,
			    const char *title, const char *body, const char *marker,
			    const char *const *labels, const char *const *assignees,
			    struct http_response *res, struct gh_issue *out, struct buf *errmsg)
{
	json_t *o = json_object();
	int failed = 0;
	char *json;
	enum err rc;

	failed |= set_str(o, "title", title);
	failed |= set_str(o, "body", body);
	if (labels)
		failed |= set_str_array(o, "labels", labels);
	if (assignees)
		failed |= set_str_array(o, "assignees", assignees);
	json = dump(o, failed);
	if (!json) {
		buf_setf(errmsg, "issue create in %s: title, body, labels and assignees must be "
			 "valid UTF-8", repo);
		return ERR_INVALID;
	}
	{
		struct call k = { "POST", path, NULL, json, 1, repo, marker, 0, NULL };
		int64_t sent_ms = gh_now(c);
		rc = gh_call(c, &k, res, errmsg);
		if (rc == ERR_OK &&
		    parse_issue_body(res, "POST issue", out, errmsg) != ERR_OK)
			rc = unreadable_create(c, &k, sent_ms, out, errmsg);
	}
	free(json);
	return rc;
}

static void log_assignees_dropped(struct gh_client *c, const char *repo, const char *dropped,
				  const char *why)
{
	struct log_line *l = log_begin(LOG_WARN, "github cannot assign them: creating the issue "
				       "without those assignees");
	size_t n = 1;

	for (const char *p = dropped; *p; p++)
		n += *p == ',';
	c->stats.assignees_dropped += n;
	log_str(l, "repo", repo);
	log_str(l, "dropped", dropped);
	log_str(l, "detail", why);
	log_end(l);
}

enum err gh_issue_create(struct gh_client *c, const char *repo, const char *title,
			 const char *body, const char *marker, const char *const *labels,
			 const char *const *assignees, struct gh_issue *out,
			 struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT, dropped = BUF_INIT;
	const char **kept = NULL;
	enum err rc = check_repo(repo, errmsg);

	memset(out, 0, sizeof(*out));
	http_response_init(&res);
	if (rc)
		goto out;
	if (!title || !*title || !body || !marker || !*marker || !strstr(body, marker)) {
		buf_setf(errmsg, "issue create in %s: title, body and a marker inside the body "
			 "are required", repo);
		rc = ERR_INVALID;
		goto out;
	}
	(void)buf_printf(&path, "/repos/%s/issues", repo);
	if (c->dry_run) {
		dry_run_mutation(c, "POST", buf_str(&path), title);
		fake_issue(out, repo, 0, "open", NULL);
		goto out;
	}
	rc = post_create(c, repo, buf_str(&path), title, body, marker, labels, assignees, &res,
			 out, errmsg);
	if (rc == ERR_INVALID && assignees && *assignees &&
	    (kept = gh_assignees_kept(res.status, buf_str(&res.body), res.body.len, assignees,
				       &dropped)) != NULL) {
		/* Nothing was made (422): the same create once more, without them. */
		log_assignees_dropped(c, repo, buf_str(&dropped), buf_str(errmsg));
		rc = post_create(c, repo, buf_str(&path), title, body, marker, labels,
				 (const char *const *)kept, &res, out, errmsg);
	}
out:
	free(kept);
	buf_release(&dropped);
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

enum err gh_issue_get(struct gh_client *c, const char *repo, int64_t number,
		      struct gh_issue *out, struct buf *errmsg)
{
	int not_modified = 0;

	return gh_issue_get_if_changed(c, repo, number, NULL, &not_modified, out, errmsg);
}

enum err gh_issue_get_if_changed(struct gh_client *c, const char *repo, int64_t number,
				 const char *etag, int *not_modified, struct gh_issue *out,
				 struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	enum err rc = check_repo(repo, errmsg);

	memset(out, 0, sizeof(*out));
	*not_modified = 0;
	http_response_init(&res);
	if (rc)
		goto out;
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64, repo, number);
	if (c->dry_run) {
		log_dry_run("GET", buf_str(&path), NULL);
		fake_issue(out, repo, number, "open", NULL);
		goto out;
	}
	{
		struct call k = { "GET", buf_str(&path), NULL, NULL, 0, NULL, NULL, 0,
				  etag && *etag ? etag : NULL };
		rc = gh_call(c, &k, &res, errmsg);
	}
	if (rc == ERR_OK && res.status == 304)
		*not_modified = 1;
	else if (rc == ERR_OK)
		rc = parse_issue_body(&res, buf_str(&path), out, errmsg);
out:
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

enum err gh_repo_get(struct gh_client *c, const char *repo, struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	enum err rc = check_repo(repo, errmsg);

	http_response_init(&res);
	if (rc)
		goto out;
	(void)buf_printf(&path, "/repos/%s", repo);
	if (c->dry_run) {
		log_dry_run("GET", buf_str(&path), NULL);
		goto out;
	}
	{
		struct call k = { "GET", buf_str(&path), NULL, NULL, 0, NULL, NULL, 0, NULL };
		rc = gh_call(c, &k, &res, errmsg);
	}
out:
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

enum err gh_issue_set_state(struct gh_client *c, const char *repo, int64_t number,
			    const char *state, const char *state_reason,
			    struct gh_issue *out, struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	struct gh_issue tmp = { 0 };
	char *json = NULL;
	json_t *o;
	int failed = 0;
	enum err rc = check_repo(repo, errmsg);

	if (out)
		memset(out, 0, sizeof(*out));
	http_response_init(&res);
	if (rc)
		goto out;
	if (!state || (strcmp(state, "open") && strcmp(state, "closed"))) {
		buf_setf(errmsg, "issue state \"%s\": want open or closed", state ? state : "");
		rc = ERR_INVALID;
		goto out;
	}
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64, repo, number);
	if (c->dry_run) {
		dry_run_mutation(c, "PATCH", buf_str(&path), NULL);
		if (out)
			fake_issue(out, repo, number, state, state_reason);
		goto out;
	}
	o = json_object();
	failed |= set_str(o, "state", state);
	if (state_reason)
		failed |= set_str(o, "state_reason", state_reason);
	json = dump(o, failed);
	if (!json) {
		buf_setf(errmsg, "issue state_reason must be valid UTF-8");
		rc = ERR_INVALID;
		goto out;
	}
	{
		struct call k = { "PATCH", buf_str(&path), NULL, json, 1, repo, NULL, number, NULL };
		rc = gh_call(c, &k, &res, errmsg);
	}
	if (rc == ERR_OK)
		rc = parse_issue_body(&res, buf_str(&path), out ? out : &tmp, errmsg);
out:
	gh_issue_release(&tmp);
	free(json);
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

/*
 * POST {key: text} (text not NULL) or {key: list} to /repos/{repo}/issues/
 * {number}/{tail}; shared by comments and labels.  Dry-run: logged, no
 * call.  what names the value in messages; marker: a marked comment's (see
 * gh_comment_create_marked()), else NULL.
 */
static enum err post_to_issue(struct gh_client *c, const char *repo, int64_t number,
			      const char *tail, const char *key, const char *text,
			      const char *const *list, const char *what, const char *marker,
			      struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	struct http_response res;
	char *json = NULL;
	json_t *o;
	int failed;
	enum err rc = ERR_OK;

	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64 "/%s", repo, number, tail);
	if (c->dry_run) {
		dry_run_mutation(c, "POST", buf_str(&path), NULL);
		goto out;
	}
	if (marker) {
		rc = gh_comment_in_doubt(c, repo, number, marker, errmsg);
		if (rc != ERR_NOTFOUND)
			goto out;  /* made after all (ERR_OK), or not yet to be posted */
	}
	o = json_object();
	failed = text ? set_str(o, key, text) : set_str_array(o, key, list);
	json = dump(o, failed);
	if (!json) {
		buf_setf(errmsg, "%s must be valid UTF-8", what);
		rc = ERR_INVALID;
		goto out;
	}
	http_response_init(&res);
	{
		struct call k = { "POST", buf_str(&path), NULL, json, 1, repo, marker, number, NULL };
		rc = gh_call(c, &k, &res, errmsg);
	}
	http_response_release(&res);
out:
	free(json);
	buf_release(&path);
	return rc;
}

enum err gh_comment_create(struct gh_client *c, const char *repo, int64_t number,
			   const char *body, struct buf *errmsg)
{
	return gh_comment_create_marked(c, repo, number, body, NULL, errmsg);
}

enum err gh_comment_create_marked(struct gh_client *c, const char *repo, int64_t number,
				  const char *body, const char *marker, struct buf *errmsg)
{
	enum err rc = check_repo(repo, errmsg);

	if (rc)
		return rc;
	if (!body || !*body) {
		buf_setf(errmsg, "comment on %s#%" PRId64 ": empty body", repo, number);
		return ERR_INVALID;
	}
	if (marker && (!*marker || !strstr(body, marker))) {
		buf_setf(errmsg, "comment on %s#%" PRId64 ": the marker must be in the body", repo,
			 number);
		return ERR_INVALID;
	}
	return post_to_issue(c, repo, number, "comments", "body", body, NULL, "comment body",
			     marker, errmsg);
}

enum err gh_labels_add(struct gh_client *c, const char *repo, int64_t number,
		       const char *const *labels, struct buf *errmsg)
{
	enum err rc = check_repo(repo, errmsg);

	if (rc)
		return rc;
	if (!labels || !*labels)
		return ERR_OK; /* nothing to add: no call */
	return post_to_issue(c, repo, number, "labels", "labels", NULL, labels, "labels", NULL,
			     errmsg);
}

/* The URL of Link's rel="next" (RFC 8288), malloc'd; NULL when none. */
static char *link_next(const struct http_response *res)
{
	const char *link = http_response_header(res, "link");
	const char *p = link;

	while (p && *p) {
		const char *lt = strchr(p, '<');
		const char *gt = lt ? strchr(lt, '>') : NULL;
		const char *end;
		if (!gt)
			return NULL;
		end = strchr(gt, ',');
		if (!end)
			end = gt + strlen(gt);
		{
			const char *rel = strstr(gt, "rel=\"next\"");
			if (rel && rel < end)
				return xstrndup(lt + 1, (size_t)(gt - lt - 1));
		}
		p = *end ? end + 1 : end;
	}
	return NULL;
}

/*
 * GET path and its Link rel="next" pages (at most max_pages; 0: no limit)
 * and hand each page's JSON array to fn, which sets *stop to end the walk
 * early or returns an error (errmsg set) to fail it.  what names the list
 * in messages.
 */
static enum err list_pages(struct gh_client *c, const char *path, const char *what,
			   int max_pages,
			   enum err (*fn)(void *ctx, json_t *page, int *stop, struct buf *errmsg),
			   void *ctx, int *pages, struct buf *errmsg)
{
	struct http_response res;
	char *next = NULL;
	enum err rc = ERR_OK;

	http_response_init(&res);
	for (int page = 0; !max_pages || page < max_pages; page++) {
		struct call k = { "GET", path, next, NULL, 0, NULL, NULL, 0, NULL };
		json_error_t jerr;
		json_t *root;
		int stop = 0;

		rc = gh_call(c, &k, &res, errmsg);
		if (rc)
			goto out;
		if (pages)
			(*pages)++;
		root = json_loadb(buf_str(&res.body), res.body.len, 0, &jerr);
		if (!json_is_array(root)) {
			buf_setf(errmsg, "%s: answer is not a JSON array", what);
			json_decref(root);
			rc = ERR_INVALID;
			goto out;
		}
		rc = fn(ctx, root, &stop, errmsg);
		json_decref(root);
		if (rc || stop)
			goto out;
		free(next);
		next = link_next(&res);
		if (!next)
			goto out;
		/* Never send the token to a host the API did not name. */
		if (strncmp(next, c->api_url, strlen(c->api_url)) ||
		    (next[strlen(c->api_url)] != '/' && next[strlen(c->api_url)] != '?')) {
			buf_setf(errmsg, "%s: Link next points off the API: %s", what, next);
			rc = ERR_INVALID;
			goto out;
		}
		http_response_release(&res);
		http_response_init(&res);
	}
out:
	free(next);
	http_response_release(&res);
	return rc;
}

/* gh_find_marker()'s walk: the newest issue created since since_ms carrying marker. */
struct marker_walk {
	const char *marker;
	int64_t since_ms;
	struct gh_issue *out;
	int found;
};

/*
 * Scan one page, sorted newest first: stop at the first issue carrying the
 * marker, or once the page reached issues created before since_ms.  Those
 * older issues are never taken: an earlier issue of the same key (the one a
 * linked issue supersedes) carries the same marker.
 */
static enum err scan_marker_page(void *ctx, json_t *page, int *stop, struct buf *errmsg)
{
	struct marker_walk *w = ctx;
	json_t *it;
	size_t i;
	enum err rc;

	json_array_foreach(page, i, it) {
		const char *body = json_string_value(json_object_get(it, "body"));
		int64_t created = gh_parse_iso8601(json_string_value(json_object_get(it,
										    "created_at")));
		if (created && created < w->since_ms) {
			*stop = 1;
			continue;
		}
		if (json_object_get(it, "pull_request") || !body || !strstr(body, w->marker))
			continue;
		*stop = 1;
		w->found = 1;
		rc = parse_issue(it, "issue list", w->out, errmsg);
		if (!rc)
			w->out->body = xstrdup(body);
		return rc;
	}
	return ERR_OK;
}

enum err gh_find_marker(struct gh_client *c, const char *repo, const char *marker,
			int64_t since_ms, struct gh_issue *out, struct buf *errmsg)
{
	struct marker_walk w = { marker, since_ms, out, 0 };
	struct buf path = BUF_INIT, what = BUF_INIT;
	char since[32];
	enum err rc;

	rfc3339_format(since_ms, since);
	(void)buf_printf(&path, "/repos/%s/issues?state=all&sort=created&direction=desc"
			 "&since=%s&per_page=100", repo, since);
	(void)buf_printf(&what, "issue list of %s", repo);
	rc = list_pages(c, buf_str(&path), buf_str(&what), MAX_PAGES, scan_marker_page, &w,
			NULL, errmsg);
	if (rc == ERR_OK && !w.found) {
		buf_setf(errmsg, "no issue in %s created since %s carries the marker %s", repo,
			 since, marker);
		rc = ERR_NOTFOUND;
	}
	buf_release(&path);
	buf_release(&what);
	return rc;
}

enum err gh_issue_find_marker(struct gh_client *c, const char *repo, const char *marker,
			      int64_t since_ms, struct gh_issue *out, struct buf *errmsg)
{
	enum err rc = check_repo(repo, errmsg);

	memset(out, 0, sizeof(*out));
	if (rc)
		return rc;
	if (!marker || !*marker) {
		buf_setf(errmsg, "find marker in %s: empty marker", repo);
		return ERR_INVALID;
	}
	if (c->dry_run) {
		struct buf path = BUF_INIT;
		(void)buf_printf(&path, "/repos/%s/issues", repo);
		log_dry_run("GET", buf_str(&path), NULL);
		buf_release(&path);
		buf_setf(errmsg, "dry-run: no issue in %s carries the marker %s", repo, marker);
		return ERR_NOTFOUND;
	}
	return gh_find_marker(c, repo, marker, since_ms, out, errmsg);
}

/* ---- summary issues (bridge/storm.h) ---- */

enum err gh_issue_set_body(struct gh_client *c, const char *repo, int64_t number,
			   const char *title, const char *body, struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	char *json = NULL;
	json_t *o;
	int failed = 0;
	enum err rc = check_repo(repo, errmsg);

	http_response_init(&res);
	if (rc)
		goto out;
	if (!body || !*body || (title && !*title)) {
		if (body && *body)
			buf_setf(errmsg, "issue #%" PRId64 ": empty title", number);
		else
			buf_setf(errmsg, "issue #%" PRId64 ": empty body", number);
		rc = ERR_INVALID;
		goto out;
	}
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64, repo, number);
	if (c->dry_run) {
		dry_run_mutation(c, "PATCH", buf_str(&path), title);
		goto out;
	}
	o = json_object();
	if (title)
		failed |= set_str(o, "title", title);
	failed |= set_str(o, "body", body);
	json = dump(o, failed);
	if (!json) {
		buf_setf(errmsg, "issue #%" PRId64 ": title and body must be valid UTF-8", number);
		rc = ERR_INVALID;
		goto out;
	}
	{
		struct call k = { "PATCH", buf_str(&path), NULL, json, 1, repo, NULL, number, NULL };
		rc = gh_call(c, &k, &res, errmsg);
	}
out:
	free(json);
	buf_release(&path);
	http_response_release(&res);
	return rc;
}

/* gh_issue_list()'s walk. */
struct issue_walk {
	int (*fn)(void *ctx, const struct gh_issue *issue);
	void *ctx;
};

static enum err list_issue_page(void *ctx, json_t *page, int *stop, struct buf *errmsg)
{
	struct issue_walk *w = ctx;
	struct gh_issue is = { 0 };
	json_t *it;
	size_t i;
	enum err rc = ERR_OK;

	json_array_foreach(page, i, it) {
		if (json_object_get(it, "pull_request"))
			continue;
		rc = parse_issue(it, "issue list", &is, errmsg);
		if (rc)
			break;
		is.body = dup_string(it, "body");
		*stop = w->fn(w->ctx, &is) != 0;
		gh_issue_release(&is);
		if (*stop)
			break;
	}
	gh_issue_release(&is);
	return rc;
}

enum err gh_issue_list(struct gh_client *c, const char *repo,
		       int (*fn)(void *ctx, const struct gh_issue *issue), void *ctx,
		       struct buf *errmsg)
{
	return gh_issue_list_filtered(c, repo, NULL, fn, ctx, NULL, errmsg);
}

/* "&name=value" with value percent-encoded (libcurl), when value is not empty. */
static void add_param(struct buf *path, const char *name, const char *value)
{
	char *v;

	if (!value || !*value)
		return;
	v = curl_easy_escape(NULL, value, 0);
	if (v)
		(void)buf_printf(path, "&%s=%s", name, v);
	curl_free(v);
}

enum err gh_issue_list_filtered(struct gh_client *c, const char *repo,
				const struct gh_list_filter *filter,
				int (*fn)(void *ctx, const struct gh_issue *issue), void *ctx,
				int *pages, struct buf *errmsg)
{
	struct issue_walk w = { fn, ctx };
	struct buf path = BUF_INIT, what = BUF_INIT;
	enum err rc = check_repo(repo, errmsg);

	if (pages)
		*pages = 0;
	if (rc)
		return rc;
	(void)buf_printf(&path, "/repos/%s/issues?state=all&sort=created&direction=asc"
			 "&per_page=100", repo);
	if (filter) {
		add_param(&path, "creator", filter->creator);
		add_param(&path, "labels", filter->labels);
	}
	if (c->dry_run) {
		log_dry_run("GET", buf_str(&path), NULL);
		goto out;
	}
	(void)buf_printf(&what, "issue list of %s", repo);
	rc = list_pages(c, buf_str(&path), buf_str(&what), 0, list_issue_page, &w, pages,
			errmsg);
out:
	buf_release(&path);
	buf_release(&what);
	return rc;
}

/* gh_comment_list()'s walk. */
struct comment_walk {
	int (*fn)(void *ctx, const char *body, int64_t created_at_ms);
	void *ctx;
};

static enum err list_comment_page(void *ctx, json_t *page, int *stop, struct buf *errmsg)
{
	struct comment_walk *w = ctx;
	json_t *it;
	size_t i;

	(void)errmsg;
	json_array_foreach(page, i, it) {
		const char *body = json_string_value(json_object_get(it, "body"));
		int64_t t = gh_parse_iso8601(json_string_value(json_object_get(it, "created_at")));
		if (w->fn(w->ctx, body ? body : "", t)) {
			*stop = 1;
			break;
		}
	}
	return ERR_OK;
}

enum err gh_comment_list(struct gh_client *c, const char *repo, int64_t number,
			 int (*fn)(void *ctx, const char *body, int64_t created_at_ms), void *ctx,
			 struct buf *errmsg)
{
	struct comment_walk w = { fn, ctx };
	struct buf path = BUF_INIT, what = BUF_INIT;
	enum err rc = check_repo(repo, errmsg);

	if (rc)
		return rc;
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64 "/comments?per_page=100", repo,
			 number);
	if (c->dry_run) {
		log_dry_run("GET", buf_str(&path), NULL);
		goto out;
	}
	(void)buf_printf(&what, "comments of %s#%" PRId64, repo, number);
	rc = list_pages(c, buf_str(&path), buf_str(&what), 0, list_comment_page, &w, NULL, errmsg);
out:
	buf_release(&path);
	buf_release(&what);
	return rc;
}

/* gh_find_comment_marker()'s and gh_comment_marked()'s walk. */
struct comment_marker_walk {
	const char *marker;
	int found;
};

static int has_comment_marker(void *ctx, const char *body, int64_t created_at_ms)
{
	struct comment_marker_walk *w = ctx;

	(void)created_at_ms;
	if (strstr(body, w->marker))
		w->found = 1;
	return w->found;
}

enum err gh_comment_marked(struct gh_client *c, const char *repo, int64_t number,
			   const char *marker, struct buf *errmsg)
{
	struct comment_marker_walk m = { marker, 0 };
	enum err rc = gh_comment_list(c, repo, number, has_comment_marker, &m, errmsg);

	if (rc == ERR_OK && !m.found)
		rc = ERR_NOTFOUND;
	return rc;
}

/*
 * An ambiguous comment: look for its marker among the issue's comments
 * changed since since_ms (GET .../comments?since=...; oldest first).
 */
enum err gh_find_comment_marker(struct gh_client *c, const char *repo, int64_t number,
				const char *marker, int64_t since_ms, struct buf *errmsg)
{
	struct comment_marker_walk m = { marker, 0 };
	struct comment_walk w = { has_comment_marker, &m };
	struct buf path = BUF_INIT, what = BUF_INIT;
	char since[32];
	enum err rc;

	rfc3339_format(since_ms, since);
	(void)buf_printf(&path, "/repos/%s/issues/%" PRId64 "/comments?since=%s&per_page=100",
			 repo, number, since);
	(void)buf_printf(&what, "comments of %s#%" PRId64, repo, number);
	rc = list_pages(c, buf_str(&path), buf_str(&what), MAX_PAGES, list_comment_page, &w,
			NULL, errmsg);
	if (rc == ERR_OK && !m.found) {
		buf_setf(errmsg, "no comment on %s#%" PRId64 " since %s carries %s", repo, number,
			 since, marker);
		rc = ERR_NOTFOUND;
	}
	buf_release(&path);
	buf_release(&what);
	return rc;
}
