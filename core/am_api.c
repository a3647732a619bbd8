/*
 * am_api.c - Alertmanager API v2 silences over the HTTP client: the JSON of
 * a postableSilence, the answers' shapes (gettableSilence: id, status.state,
 * comment, createdBy), and the mapping of statuses to enum err.  The
 * bridge's silence worker (bridge/silence.c) is the caller.
 */
#include "am_api.h"

#include <jansson.h>
#include <nettle/base64.h>
#include <stdlib.h>
#include <string.h>

#include "http_client.h"
#include "rfc3339.h"
#include "xalloc.h"
#include "banned.h"

struct am_api {
	struct http_client *http;
	char *user_agent;
};

struct am_api *am_api_new(const char *user_agent)
{
	struct am_api *a = xcalloc(1, sizeof(*a));
	struct http_client_options o = { 0 };

	o.max_body_bytes = 4u << 20;  /* a list of silences filtered by creator */
	a->http = http_client_new(&o);
	a->user_agent = xstrdup(user_agent ? user_agent : "alertbridge");
	return a;
}

void am_api_free(struct am_api *a)
{
	if (!a)
		return;
	http_client_free(a->http);
	free(a->user_agent);
	free(a);
}

/* "Authorization: ..." for t into out (empty when t has no credentials). */
static void auth_header(const struct am_api_target *t, struct buf *out)
{
	struct buf pair = BUF_INIT;
	char *enc;

	if (t->bearer_token && *t->bearer_token) {
		(void)buf_printf(out, "Authorization: Bearer %s", t->bearer_token);
		return;
	}
	if (!t->username || !*t->username)
		return;
	(void)buf_printf(&pair, "%s:%s", t->username, t->password ? t->password : "");
	enc = xcalloc(1, BASE64_ENCODE_RAW_LENGTH(pair.len) + 1);
	base64_encode_raw(enc, pair.len, (const uint8_t *)pair.data);
	(void)buf_printf(out, "Authorization: Basic %s", enc);
	memset(enc, 0, strlen(enc));
	free(enc);
	memset(pair.data, 0, pair.len);
	buf_release(&pair);
}

/*
 * One request: method on t->url + path (body: JSON or NULL).  ERR_OK with
 * res->status 2xx; else the error of the status (see am_api.h), with
 * *ambiguous set when the request may have been acted on.
 */
static enum err call(struct am_api *a, const struct am_api_target *t, const char *method,
		     const char *path, const char *body, struct http_response *res,
		     int *ambiguous, struct buf *errmsg)
{
	struct buf url = BUF_INIT, auth = BUF_INIT, ua = BUF_INIT, detail = BUF_INIT;
	const char *headers[5];
	struct http_request req = HTTP_REQUEST_INIT;
	size_t h = 0;
	enum err rc;

	*ambiguous = 0;
	(void)buf_printf(&url, "%s%s", t->url, path);
	(void)buf_printf(&ua, "User-Agent: %s", a->user_agent);
	auth_header(t, &auth);
	headers[h++] = buf_str(&ua);
	headers[h++] = "Accept: application/json";
	if (body)
		headers[h++] = "Content-Type: application/json";
	if (auth.len)
		headers[h++] = buf_str(&auth);
	headers[h] = NULL;
	req.method = method;
	req.url = buf_str(&url);
	req.headers = headers;
	req.body = body;
	req.body_len = body ? strlen(body) : 0;
	req.timeout_ms = t->timeout_ms > 0 ? t->timeout_ms : 10000;
	req.fresh_connect = strcmp(method, "GET") != 0;  /* never replayed by libcurl */
	rc = http_do(a->http, &req, res, &detail);
	if (rc != ERR_OK) {
		*ambiguous = res->sent != 0;
		buf_setf(errmsg, "%salertmanager %s %s: %s", *ambiguous ? "ambiguous: " : "",
			 method, path, buf_str(&detail));
		rc = ERR_RETRY;
		goto out;
	}
	if (res->status >= 200 && res->status < 300)
		goto out;
	buf_setf(errmsg, "%salertmanager %s %s: %d %.300s", res->status >= 500 ? "ambiguous: " : "",
		 method, path, res->status, buf_str(&res->body));
	if (res->status == 400 || res->status == 422)
		rc = ERR_INVALID;
	else if (res->status == 401 || res->status == 403)
		rc = ERR_AUTH;
	else if (res->status == 404)
		rc = ERR_NOTFOUND;
	else {
		*ambiguous = res->status >= 500;
		rc = ERR_RETRY;
	}
out:
	if (auth.data)
		memset(auth.data, 0, auth.len);
	buf_release(&auth);
	buf_release(&url);
	buf_release(&ua);
	buf_release(&detail);
	return rc;
}

static char *silence_json(const struct am_api_silence *s)
{
	json_t *doc = json_object(), *ms = json_array();
	char start[32], end[32];
	char *text;

	for (size_t i = 0; i < s->n_matchers; i++)
		json_array_append_new(ms, json_pack("{s:s, s:s, s:b, s:b}", "name",
						    s->matchers[i].name, "value",
						    s->matchers[i].value, "isRegex", 0, "isEqual", 1));
	rfc3339_format_ms(s->starts_at_ms, start);
	rfc3339_format_ms(s->ends_at_ms, end);
	json_object_set_new(doc, "matchers", ms);
	json_object_set_new(doc, "startsAt", json_string(start));
	json_object_set_new(doc, "endsAt", json_string(end));
	json_object_set_new(doc, "createdBy", json_string(s->created_by));
	json_object_set_new(doc, "comment", json_string(s->comment));
	text = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	if (!text)
		abort();  /* out of memory: as xmalloc does */
	return text;
}

enum err am_api_silence_create(struct am_api *a, const struct am_api_target *t,
			       const struct am_api_silence *s, char **id, int *ambiguous,
			       struct buf *errmsg)
{
	struct http_response res;
	json_t *doc = NULL;
	const char *sid;
	char *body = NULL;
	enum err rc;

	*id = NULL;
	*ambiguous = 0;
	if (!s->n_matchers || !s->created_by || !*s->created_by || !s->comment || !*s->comment ||
	    s->ends_at_ms <= s->starts_at_ms) {
		buf_setf(errmsg, "a silence needs matchers, createdBy, a comment and endsAt after startsAt");
		return ERR_INVALID;
	}
	body = silence_json(s);
	http_response_init(&res);
	rc = call(a, t, "POST", "/api/v2/silences", body, &res, ambiguous, errmsg);
	if (rc != ERR_OK)
		goto out;
	doc = json_loadb(res.body.data ? res.body.data : "", res.body.len, 0, NULL);
	sid = json_string_value(json_object_get(doc, "silenceID"));
	if (!sid || !*sid) {
		/* Alertmanager made it, but we cannot tell its ID: look it up. */
		buf_setf(errmsg, "ambiguous: alertmanager POST /api/v2/silences: no silenceID in the answer");
		*ambiguous = 1;
		rc = ERR_RETRY;
		goto out;
	}
	*id = xstrdup(sid);
out:
	json_decref(doc);
	free(body);
	http_response_release(&res);
	return rc;
}

/* NAME="VALUE" with '\\' and '"' escaped, as Alertmanager's matcher grammar reads it. */
static void filter_of(const struct am_api_matcher *m, struct buf *out)
{
	(void)buf_printf(out, "%s=\"", m->name);
	for (const char *p = m->value; *p; p++) {
		if (*p == '"' || *p == '\\')
			(void)buf_addch(out, '\\');
		(void)buf_addch(out, *p);
	}
	(void)buf_addch(out, '"');
}

enum err am_api_silence_find(struct am_api *a, const struct am_api_target *t,
			     const struct am_api_silence *s, const char *marker, char **id,
			     struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT, filter = BUF_INIT;
	json_t *doc = NULL, *sil;
	size_t i;
	int ambiguous;
	enum err rc;

	*id = NULL;
	http_response_init(&res);
	(void)buf_adds(&path, "/api/v2/silences");
	for (size_t k = 0; k < s->n_matchers; k++) {
		buf_reset(&filter);
		filter_of(&s->matchers[k], &filter);
		(void)buf_adds(&path, k ? "&filter=" : "?filter=");
		http_url_escape(buf_str(&filter), &path);
	}
	rc = call(a, t, "GET", buf_str(&path), NULL, &res, &ambiguous, errmsg);
	if (rc != ERR_OK)
		goto out;
	doc = json_loadb(res.body.data ? res.body.data : "", res.body.len, 0, NULL);
	if (!json_is_array(doc)) {
		buf_setf(errmsg, "alertmanager GET /api/v2/silences: the answer is not a JSON array");
		rc = ERR_INVALID;
		goto out;
	}
	rc = ERR_NOTFOUND;
	json_array_foreach(doc, i, sil) {
		const char *comment = json_string_value(json_object_get(sil, "comment"));
		const char *by = json_string_value(json_object_get(sil, "createdBy"));
		const char *sid = json_string_value(json_object_get(sil, "id"));
		const char *state = json_string_value(
			json_object_get(json_object_get(sil, "status"), "state"));

		if (!comment || !sid || !by || strcmp(by, s->created_by) || !strstr(comment, marker) ||
		    (state && !strcmp(state, "expired")))
			continue;
		*id = xstrdup(sid);
		rc = ERR_OK;
		break;
	}
out:
	json_decref(doc);
	buf_release(&path);
	buf_release(&filter);
	http_response_release(&res);
	return rc;
}

enum err am_api_silence_expire(struct am_api *a, const struct am_api_target *t, const char *id,
			       int *was_active, struct buf *errmsg)
{
	struct http_response res;
	struct buf path = BUF_INIT;
	json_t *doc = NULL;
	const char *state;
	int ambiguous;
	enum err rc;

	if (was_active)
		*was_active = 0;
	http_response_init(&res);
	(void)buf_adds(&path, "/api/v2/silence/");
	http_url_escape(id, &path);
	rc = call(a, t, "GET", buf_str(&path), NULL, &res, &ambiguous, errmsg);
	if (rc != ERR_OK)
		goto out;
	doc = json_loadb(res.body.data ? res.body.data : "", res.body.len, 0, NULL);
	state = json_string_value(json_object_get(json_object_get(doc, "status"), "state"));
	if (!state) {
		buf_setf(errmsg, "alertmanager GET %s: no status.state in the answer", buf_str(&path));
		rc = ERR_INVALID;
		goto out;
	}
	if (!strcmp(state, "expired"))
		goto out;
	rc = call(a, t, "DELETE", buf_str(&path), NULL, &res, &ambiguous, errmsg);
	if (rc == ERR_OK && was_active)
		*was_active = 1;
out:
	json_decref(doc);
	buf_release(&path);
	http_response_release(&res);
	return rc;
}
