/*
 * gh_auth.c - the GitHub client's credentials (see gh.h): the credential set
 * per owner, GitHub App JWTs (libjwt, RS256) and installation tokens
 * (GitHub REST: POST /app/installations/{id}/access_tokens and
 * GET /repos/{owner}/{repo}/installation), cached and renewed, and the login
 * each credential acts as (GET /user, or GET /app for an App).
 */
#include "gh_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <jansson.h>
#include <jwt.h>

#include "core/config.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "core/banned.h"

#define JWT_BACKDATE_S 60          /* GitHub: iat 60 s in the past against clock drift */
#define JWT_LIFETIME_S 540         /* exp: at most 10 min after iat (GitHub's limit) */
#define RENEW_BEFORE_MS 300000     /* renew an installation token 5 min before expires_at */

static void wipe_free(char *s)
{
	if (s)
		explicit_bzero(s, strlen(s));
	free(s);
}

static char *bearer(const char *token)
{
	struct buf b = BUF_INIT;

	(void)buf_printf(&b, "Authorization: Bearer %s", token);
	return buf_detach(&b);
}

static void cred_set(struct gh_cred *cr, const char *owner, const char *token,
		     const struct cfg_github_app *app)
{
	cr->owner = owner ? xstrdup(owner) : NULL;
	if (app && app->app_id) {
		cr->app_id = app->app_id;
		cr->installation_id = app->installation_id;
		cr->key_pem = xstrdup(app->private_key ? app->private_key : "");
	} else if (token && *token) {
		cr->auth_header = bearer(token);
	}
}

struct gh_creds *gh_creds_new(const struct cfg_github *g)
{
	struct gh_creds *s = xcalloc(1, sizeof(*s));

	s->n = 1 + g->credentials_count;
	s->v = xcalloc(s->n, sizeof(*s->v));
	cred_set(&s->v[0], NULL, g->token, &g->app);
	for (size_t i = 0; i < g->credentials_count; i++)
		cred_set(&s->v[1 + i], g->credentials[i].owner, g->credentials[i].token,
			 &g->credentials[i].app);
	return s;
}

struct gh_creds *gh_creds_token(const char *token)
{
	struct gh_creds *s = xcalloc(1, sizeof(*s));

	s->n = 1;
	s->v = xcalloc(1, sizeof(*s->v));
	cred_set(&s->v[0], NULL, token, NULL);
	return s;
}

int gh_creds_none(const struct gh_creds *s)
{
	return s->n == 1 && !s->v[0].auth_header && !s->v[0].app_id;
}

void gh_creds_free(struct gh_creds *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->n; i++) {
		struct gh_cred *cr = &s->v[i];

		free(cr->owner);
		free(cr->login);
		wipe_free(cr->auth_header);
		wipe_free(cr->key_pem);
		for (size_t j = 0; j < cr->ninst; j++) {
			free(cr->inst[j].owner);
			wipe_free(cr->inst[j].auth_header);
		}
		free(cr->inst);
		free(cr->budget.minute.t);
		free(cr->budget.hour.t);
	}
	free(s->v);
	free(s);
}

enum err gh_app_jwt(int64_t app_id, const char *pem, int64_t now_s, char **out,
		    struct buf *errmsg)
{
	jwt_t *jwt = NULL;
	char iss[24];
	char *enc = NULL;
	int e;

	*out = NULL;
	snprintf(iss, sizeof(iss), "%" PRId64, app_id);
	e = jwt_new(&jwt);
	if (!e)
		e = jwt_add_grant_int(jwt, "iat", (long)(now_s - JWT_BACKDATE_S));
	if (!e)
		e = jwt_add_grant_int(jwt, "exp", (long)(now_s + JWT_LIFETIME_S));
	if (!e)
		e = jwt_add_grant(jwt, "iss", iss);
	if (!e)
		e = jwt_set_alg(jwt, JWT_ALG_RS256, (const unsigned char *)pem, (int)strlen(pem));
	if (!e) {
		enc = jwt_encode_str(jwt);
		if (!enc)
			e = -1;
	}
	jwt_free(jwt);
	if (e) {
		buf_setf(errmsg, "GitHub App %" PRId64 ": cannot sign a JWT (RS256) with the "
			 "private key", app_id);
		return ERR_INVALID;
	}
	*out = xstrdup(enc);
	free(enc);
	return ERR_OK;
}

/* "/repos/{owner}/{repo}..." → owner and "owner/repo" into the buffers; 0 when not one. */
static int path_repo(const char *path, struct buf *owner, struct buf *repo)
{
	const char *o, *slash, *end;

	if (!path || strncmp(path, "/repos/", 7))
		return 0;
	o = path + 7;
	slash = strchr(o, '/');
	if (!slash || slash == o)
		return 0;
	end = slash + 1 + strcspn(slash + 1, "/?");
	if (end == slash + 1)
		return 0;
	buf_reset(owner);
	(void)buf_add(owner, o, (size_t)(slash - o));
	buf_reset(repo);
	(void)buf_add(repo, o, (size_t)(end - o));
	return 1;
}

struct gh_cred *gh_cred_for_path(struct gh_client *c, const char *path, struct buf *errmsg)
{
	struct buf owner = BUF_INIT, repo = BUF_INIT;
	struct gh_cred *found = NULL;

	if (path_repo(path, &owner, &repo))
		for (size_t i = 1; i < c->creds->n && !found; i++)
			if (!strcasecmp(c->creds->v[i].owner, buf_str(&owner)))
				found = &c->creds->v[i];
	if (!found && (c->creds->v[0].auth_header || c->creds->v[0].app_id))
		found = &c->creds->v[0];
	if (!found)
		buf_setf(errmsg, "no GitHub credential for owner \"%s\" (github.credentials has "
			 "none and there is no default)", buf_str(&owner));
	buf_release(&owner);
	buf_release(&repo);
	return found;
}

/* The cache entry of owner ("" for a configured installation), made when absent. */
static struct gh_install *install_of(struct gh_cred *cr, const char *owner)
{
	char *key = xstrdup(cr->installation_id ? "" : owner);

	for (char *p = key; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	for (size_t i = 0; i < cr->ninst; i++)
		if (!strcmp(cr->inst[i].owner, key)) {
			free(key);
			return &cr->inst[i];
		}
	cr->inst = xreallocarray(cr->inst, cr->ninst + 1, sizeof(*cr->inst));
	memset(&cr->inst[cr->ninst], 0, sizeof(*cr->inst));
	cr->inst[cr->ninst].owner = key;
	cr->inst[cr->ninst].id = cr->installation_id;
	return &cr->inst[cr->ninst++];
}

/* A JWT-authenticated call; the answer's JSON object into *root. */
static enum err app_call(struct gh_client *c, const char *method, const char *path,
			 const char *jwt, json_t **root, struct buf *errmsg)
{
	struct http_response res;
	struct buf auth = BUF_INIT;
	struct call k = { method, path, NULL, NULL, 0, NULL, NULL, 0, NULL };
	enum err rc;

	http_response_init(&res);
	(void)buf_printf(&auth, "Authorization: Bearer %s", jwt);
	c->next_auth = buf_str(&auth);
	rc = gh_call(c, &k, &res, errmsg);
	*root = NULL;
	if (rc == ERR_OK) {
		*root = json_loadb(res.body.data ? res.body.data : "", res.body.len, 0, NULL);
		if (!json_is_object(*root)) {
			buf_setf(errmsg, "%s %s: answer is not a JSON object", method, path);
			json_decref(*root);
			*root = NULL;
			rc = ERR_INVALID;
		}
	}
	explicit_bzero(auth.data, auth.cap);
	buf_release(&auth);
	http_response_release(&res);
	return rc;
}

/* GET /repos/{owner}/{repo}/installation → in->id. */
static enum err find_installation(struct gh_client *c, struct gh_cred *cr, const char *repo,
				  const char *jwt, struct gh_install *in, struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	json_t *root = NULL;
	enum err rc;

	(void)buf_printf(&path, "/repos/%s/installation", repo);
	rc = app_call(c, "GET", buf_str(&path), jwt, &root, errmsg);
	if (rc == ERR_OK && json_integer_value(json_object_get(root, "id")) <= 0) {
		buf_setf(errmsg, "GET %s: answer has no installation id", buf_str(&path));
		rc = ERR_INVALID;
	}
	if (rc == ERR_OK) {
		struct log_line *l = log_begin(LOG_INFO, "github app installation found");
		in->id = json_integer_value(json_object_get(root, "id"));
		log_int(l, "app_id", cr->app_id);
		log_str(l, "owner", in->owner);
		log_int(l, "installation_id", in->id);
		log_end(l);
	} else if (rc == ERR_NOTFOUND) {
		(void)buf_printf(errmsg, " (GitHub App %" PRId64 " is not installed on %s)",
				 cr->app_id, repo);
		c->stats.requests_unauthorized++;  /* the credential cannot act there */
		rc = ERR_AUTH;
	}
	json_decref(root);
	buf_release(&path);
	return rc;
}

/* POST /app/installations/{id}/access_tokens → in's token and expiry. */
static enum err new_token(struct gh_client *c, struct gh_cred *cr, const char *jwt,
			  struct gh_install *in, struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	json_t *root = NULL;
	enum err rc;
	const char *token;
	int64_t expires_ms;

	(void)buf_printf(&path, "/app/installations/%" PRId64 "/access_tokens", in->id);
	rc = app_call(c, "POST", buf_str(&path), jwt, &root, errmsg);
	token = json_string_value(json_object_get(root, "token"));
	expires_ms = gh_parse_iso8601(json_string_value(json_object_get(root, "expires_at")));
	if (rc == ERR_OK && (!token || !*token || strchr(token, '\n') || !expires_ms)) {
		buf_setf(errmsg, "POST %s: answer lacks token or expires_at", buf_str(&path));
		rc = ERR_INVALID;
	}
	if (rc == ERR_OK) {
		struct log_line *l = log_begin(LOG_INFO, "github app installation token renewed");
		wipe_free(in->auth_header);
		in->auth_header = bearer(token);
		in->expires_ms = expires_ms;
		c->stats.app_token_renewals++;
		log_int(l, "app_id", cr->app_id);
		log_int(l, "installation_id", in->id);
		log_int(l, "expires_in_s", (expires_ms - gh_now(c)) / 1000);
		log_end(l);
	} else if (rc == ERR_NOTFOUND) {
		/* GitHub answers 404 for an installation the App does not have (a wrong
		 * installation_id): credentials rejected, as a 401 is. */
		(void)buf_printf(errmsg, " (GitHub App %" PRId64 " has no installation %" PRId64 ")",
				 cr->app_id, in->id);
		c->stats.requests_unauthorized++;
		rc = ERR_AUTH;
		if (!cr->installation_id)
			in->id = 0; /* found, then uninstalled: look it up again next time */
	}
	json_decref(root);
	buf_release(&path);
	return rc;
}

enum err gh_cred_auth(struct gh_client *c, struct gh_cred *cred, const char *path, int force,
		      const char **header, struct buf *errmsg)
{
	struct buf owner = BUF_INIT, repo = BUF_INIT;
	struct gh_install *in;
	char *jwt = NULL;
	enum err rc;

	if (!cred->app_id) {
		*header = cred->auth_header;
		return ERR_OK;
	}
	if (!path_repo(path, &owner, &repo) && !cred->installation_id) {
		buf_setf(errmsg, "%s: no repository to find the GitHub App installation of", path);
		return ERR_INVALID;
	}
	in = install_of(cred, buf_str(&owner));
	if (!force && in->auth_header && gh_now(c) < in->expires_ms - RENEW_BEFORE_MS) {
		*header = in->auth_header;
		rc = ERR_OK;
		goto out;
	}
	rc = gh_app_jwt(cred->app_id, cred->key_pem, gh_now(c) / 1000, &jwt, errmsg);
	if (rc == ERR_OK && !in->id)
		rc = find_installation(c, cred, buf_str(&repo), jwt, in, errmsg);
	if (rc == ERR_OK)
		rc = new_token(c, cred, jwt, in, errmsg);
	if (rc == ERR_OK) {
		*header = in->auth_header;
	} else {
		/* Counted here; logged once, by the caller, with the event it held up.  No token
		 * is never the event's fault: ERR_AUTH keeps it queued (never dead-lettered). */
		c->stats.app_token_failures++;
		if (rc != ERR_RETRY)
			rc = ERR_AUTH;
	}
	wipe_free(jwt);
out:
	buf_release(&owner);
	buf_release(&repo);
	return rc;
}

/* GET /user with the token of cr: its "login". */
static enum err token_login(struct gh_client *c, struct gh_cred *cr, struct buf *errmsg)
{
	struct http_response res;
	struct call k = { "GET", "/user", NULL, NULL, 0, NULL, NULL, 0, NULL };
	json_t *root = NULL;
	const char *login;
	enum err rc;

	http_response_init(&res);
	c->next_auth = cr->auth_header;
	rc = gh_call(c, &k, &res, errmsg);
	if (rc == ERR_OK) {
		root = json_loadb(buf_str(&res.body), res.body.len, 0, NULL);
		login = json_string_value(json_object_get(root, "login"));
		if (login && *login) {
			cr->login = xstrdup(login);
		} else {
			buf_setf(errmsg, "GET /user: answer has no login");
			rc = ERR_INVALID;
		}
	}
	json_decref(root);
	http_response_release(&res);
	return rc;
}

/* GET /app with the App's JWT: "<slug>[bot]". */
static enum err app_login(struct gh_client *c, struct gh_cred *cr, struct buf *errmsg)
{
	char *jwt = NULL;
	json_t *root = NULL;
	const char *slug;
	enum err rc = gh_app_jwt(cr->app_id, cr->key_pem, gh_now(c) / 1000, &jwt, errmsg);

	if (rc == ERR_OK)
		rc = app_call(c, "GET", "/app", jwt, &root, errmsg);
	slug = json_string_value(json_object_get(root, "slug"));
	if (rc == ERR_OK && (!slug || !*slug)) {
		buf_setf(errmsg, "GET /app: answer has no slug");
		rc = ERR_INVALID;
	}
	if (rc == ERR_OK) {
		struct buf b = BUF_INIT;
		(void)buf_printf(&b, "%s[bot]", slug);
		cr->login = buf_detach(&b);
	}
	json_decref(root);
	wipe_free(jwt);
	return rc;
}

enum err gh_login(struct gh_client *c, const char *repo, char **login, struct buf *errmsg)
{
	struct buf path = BUF_INIT;
	struct gh_cred *cr;
	enum err rc = ERR_OK;

	*login = NULL;
	if (!gh_valid_repo(repo)) {
		buf_setf(errmsg, "invalid repository \"%s\": want owner/name", repo ? repo : "");
		return ERR_INVALID;
	}
	if (c->dry_run) {
		buf_setf(errmsg, "dry-run: the login is not read");
		return ERR_NOTFOUND;
	}
	if (c->depth == 0)
		gh_adopt_pending(c);
	c->depth++;  /* no set is adopted inside: cr stays valid */
	(void)buf_printf(&path, "/repos/%s/issues", repo);
	cr = gh_cred_for_path(c, buf_str(&path), errmsg);
	if (!cr)
		rc = ERR_AUTH;
	if (cr && !cr->login) {
		c->budget = &cr->budget;  /* GitHub counts the call against this credential */
		rc = cr->app_id ? app_login(c, cr, errmsg) : token_login(c, cr, errmsg);
		if (rc == ERR_OK) {
			struct log_line *l = log_begin(LOG_INFO, "github login learned");
			log_str(l, "owner", cr->owner ? cr->owner : "(default)");
			log_str(l, "login", cr->login);
			log_end(l);
		}
	}
	if (rc == ERR_OK)
		*login = xstrdup(cr->login);
	c->depth--;
	buf_release(&path);
	return rc;
}
