/*
 * auth.c - bearer and Basic authentication of webhook requests.
 *
 * Only SHA-256 digests of the configured secrets are kept; a presented
 * secret is hashed (SHA-256, nettle) and the digests are compared with
 * nettle's memeql_sec(), which
 * makes the comparison independent of the secret's length and of where the
 * first differing byte is (the hash time depends only on what the client sent).
 */
#include "auth.h"

#include <crypt.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "clock.h"
#include "codec.h"
#include "xalloc.h"

#include "banned.h"

#define DIGEST_LEN CODEC_SHA256_LEN

#define BCRYPT_LEN 60
#define CACHE_SLOTS 16
#define CLIENT_SLOTS 256
#define CLIENT_ADDR_MAX 46  /* INET6_ADDRSTRLEN */
#define NEEDS_BCRYPT 2  /* check_user(): a bcrypt would tell */

/* A web.auth user: the digest of its name and its bcrypt hash. */
struct web_user {
	unsigned char name[DIGEST_LEN];
	char hash[BCRYPT_LEN + 1];
};

/* A (user, password) bcrypt verified: the digest of "user:password" and until when. */
struct cache_slot {
	unsigned char key[DIGEST_LEN];
	int64_t until_us;  /* CLOCK_MONOTONIC; 0: empty */
};

/*
 * One client's failed web.auth logins, as GCRA (a token bucket kept as one
 * time): each failure moves tat AUTH_FAIL_INTERVAL_S later (from now at the
 * least); the client must wait while tat is more than the burst ahead.
 */
struct client_slot {
	char addr[CLIENT_ADDR_MAX];
	int64_t tat_us;  /* CLOCK_MONOTONIC; 0: empty */
};

struct auth {
	enum auth_mode mode;
	unsigned char secret[DIGEST_LEN];  /* bearer token, or basic password */
	unsigned char user[DIGEST_LEN];    /* basic username */
	struct web_user *users;            /* AUTH_BASIC_USERS */
	size_t n_users;
	pthread_mutex_t cache_mu;  /* the cache and the clients */
	struct cache_slot cache[CACHE_SLOTS];
	struct client_slot clients[CLIENT_SLOTS];
};

static void digest(const void *p, size_t n, unsigned char out[DIGEST_LEN])
{
	codec_sha256(p, n, out);
}

/* Non-zero when the digest of p[0..n) equals want; constant time in want. */
static int digest_equal(const void *p, size_t n, const unsigned char want[DIGEST_LEN])
{
	unsigned char got[DIGEST_LEN];
	int eq;

	digest(p, n, got);
	eq = codec_equal_secret(got, want, DIGEST_LEN);
	codec_wipe(got, sizeof(got));
	return eq;
}

/* *out = a when rc is ERR_OK, else a freed; rc. */
static enum err done(struct auth *a, enum err rc, struct auth **out)
{
	if (rc == ERR_OK)
		*out = a;
	else
		auth_free(a);
	return rc;
}

enum err auth_new(const struct cfg_webhook *wh, struct auth **out, struct buf *errmsg)
{
	struct auth *a = NULL;
	const struct cfg_basic_auth *ba;
	enum err rc = ERR_INVALID;

	*out = NULL;
	a = xcalloc(1, sizeof(*a));
	pthread_mutex_init(&a->cache_mu, NULL);
	if (!wh) {
		a->mode = AUTH_NONE;
		rc = ERR_OK;
		goto out;
	}
	ba = &wh->basic_auth;
	if (wh->bearer_token && ba->username) {
		buf_setf(errmsg, "webhook: bearer_token_file and basic_auth are exclusive");
		goto out;
	}
	if (wh->bearer_token) {
		if (!*wh->bearer_token) {
			buf_setf(errmsg, "webhook: bearer token is empty");
			goto out;
		}
		a->mode = AUTH_BEARER;
		digest(wh->bearer_token, strlen(wh->bearer_token), a->secret);
	} else if (ba->username) {
		if (!*ba->username) {
			buf_setf(errmsg, "webhook.basic_auth: username is empty");
			goto out;
		}
		if (strchr(ba->username, ':')) {
			buf_setf(errmsg, "webhook.basic_auth: username must not contain ':'");
			goto out;
		}
		if (!ba->password) {
			buf_setf(errmsg, "webhook.basic_auth: no password");
			goto out;
		}
		a->mode = AUTH_BASIC;
		digest(ba->username, strlen(ba->username), a->user);
		digest(ba->password, strlen(ba->password), a->secret);
	} else {
		a->mode = AUTH_NONE;
	}
	rc = ERR_OK;
out:
	return done(a, rc, out);
}

/*
 * A bcrypt hash as libxcrypt reads it (crypt_checksalt(3): the setting is
 * well-formed and its method enabled), of bcrypt's "$2a$", "$2b$" or "$2y$"
 * and its full length (config_fields.c checks the rest, with the line).
 */
static int is_bcrypt(const char *h)
{
	return crypt_checksalt(h) == CRYPT_SALT_OK && strlen(h) == BCRYPT_LEN &&
	       (!strncmp(h, "$2a$", 4) || !strncmp(h, "$2b$", 4) || !strncmp(h, "$2y$", 4));
}

enum err auth_new_web(const struct cfg_web_auth *wa, struct auth **out, struct buf *errmsg)
{
	struct auth *a = xcalloc(1, sizeof(*a));
	enum err rc = ERR_INVALID;

	*out = NULL;
	pthread_mutex_init(&a->cache_mu, NULL);
	a->mode = wa && wa->basic_auth_users_count ? AUTH_BASIC_USERS : AUTH_NONE;
	if (a->mode == AUTH_BASIC_USERS)
		a->users = xcalloc(wa->basic_auth_users_count, sizeof(*a->users));
	for (size_t i = 0; a->users && i < wa->basic_auth_users_count; i++) {
		const struct cfg_pair *u = &wa->basic_auth_users[i];

		if (!*u->key || strchr(u->key, ':')) {
			buf_setf(errmsg, "web.auth.basic_auth_users: a user name is empty or has ':'");
			goto out;
		}
		if (!is_bcrypt(u->value)) {
			buf_setf(errmsg, "web.auth.basic_auth_users.%s: not a bcrypt hash", u->key);
			goto out;
		}
		digest(u->key, strlen(u->key), a->users[i].name);
		memcpy(a->users[i].hash, u->value, BCRYPT_LEN + 1);
		a->n_users++;
	}
	rc = ERR_OK;
out:
	return done(a, rc, out);
}

void auth_free(struct auth *a)
{
	if (!a)
		return;
	if (a->users)
		codec_wipe(a->users, a->n_users * sizeof(*a->users));
	free(a->users);
	pthread_mutex_destroy(&a->cache_mu);
	codec_wipe(a, sizeof(*a));
	free(a);
}

enum auth_mode auth_mode(const struct auth *a)
{
	return a ? a->mode : AUTH_NONE;
}

const char *auth_challenge(const struct auth *a)
{
	switch (auth_mode(a)) {
	case AUTH_NONE:
		return NULL;
	case AUTH_BEARER:
		return "Bearer realm=\"alertbridge\"";
	case AUTH_BASIC:
	case AUTH_BASIC_USERS:
		return "Basic realm=\"alertbridge\", charset=\"UTF-8\"";
	}
	return NULL;
}

/*
 * 1 when key (a digest of "user:password") is in a slot not expired at now,
 * in constant time in key; the slot to reuse (the oldest, or an empty one)
 * in *oldest.  Caller holds cache_mu.
 */
static int scan(const struct auth *a, const unsigned char key[DIGEST_LEN], int64_t now,
		int *oldest)
{
	int hit = 0;

	*oldest = 0;
	for (int i = 0; i < CACHE_SLOTS; i++) {
		hit |= a->cache[i].until_us > now &&
		       codec_equal_secret(a->cache[i].key, key, DIGEST_LEN);
		if (a->cache[i].until_us < a->cache[*oldest].until_us)
			*oldest = i;
	}
	return hit;
}

/* Is key a verified pair, not expired? */
static int cached(struct auth *a, const unsigned char key[DIGEST_LEN])
{
	int hit, slot;

	pthread_mutex_lock(&a->cache_mu);
	hit = scan(a, key, clock_mono_us(), &slot);
	pthread_mutex_unlock(&a->cache_mu);
	return hit;
}

/* Remember key as verified for AUTH_CACHE_MS, in the empty or the oldest slot. */
static void remember(struct auth *a, const unsigned char key[DIGEST_LEN])
{
	int64_t now = clock_mono_us();
	int slot;

	pthread_mutex_lock(&a->cache_mu);
	(void)scan(a, key, now, &slot);
	memcpy(a->cache[slot].key, key, DIGEST_LEN);
	a->cache[slot].until_us = now + (int64_t)AUTH_CACHE_MS * 1000;
	pthread_mutex_unlock(&a->cache_mu);
}

/*
 * user[0..un) and password[0..pn) against the web.auth users: the user is
 * looked up by digest among all of them, then its hash checked by bcrypt
 * (crypt_r), or the cache.  An unknown user is checked against the first
 * user's hash, which it cannot match, so it costs the same.  Returns 1
 * (passes), 0, or NEEDS_BCRYPT when only a bcrypt can tell and !may_bcrypt.
 */
static int check_user(const struct auth *ca, const unsigned char *user, size_t un,
		      const unsigned char *password, size_t pn, int may_bcrypt)
{
	struct auth *a = (struct auth *)ca;  /* the cache is the only state that changes */
	unsigned char key[DIGEST_LEN];
	struct crypt_data *cd = NULL;
	char *pw = NULL;
	const char *got;
	size_t found = a->n_users;
	int ok = 0;

	for (size_t i = 0; i < a->n_users; i++)
		if (digest_equal(user, un, a->users[i].name))
			found = i;
	pw = xmalloc(un + pn + 2);
	memcpy(pw, user, un);
	pw[un] = ':';
	memcpy(pw + un + 1, password, pn);
	digest(pw, un + 1 + pn, key);
	if (found < a->n_users && cached(a, key)) {
		ok = 1;
		goto out;
	}
	if (!may_bcrypt) {
		ok = NEEDS_BCRYPT;
		goto out;
	}
	memmove(pw, password, pn);  /* crypt_r wants the password alone, NUL-terminated */
	pw[pn] = '\0';
	cd = xcalloc(1, sizeof(*cd));
	got = crypt_r(pw, a->users[found < a->n_users ? found : 0].hash, cd);
	ok = found < a->n_users && got && strlen(got) == BCRYPT_LEN && !memchr(pw, '\0', pn) &&
	     codec_equal_secret(got, a->users[found].hash, BCRYPT_LEN);
	if (ok)
		remember(a, key);
out:
	codec_wipe(pw, un + pn + 2);
	free(pw);
	if (cd)
		codec_wipe(cd, sizeof(*cd));
	free(cd);
	codec_wipe(key, sizeof(key));
	return ok;
}

static enum err check_basic(const struct auth *a, const char *cred, size_t n, int may_bcrypt,
			    struct buf *errmsg)
{
	unsigned char dec[CODEC_BASE64_DECODED_MAX(AUTH_MAX_CREDENTIALS_BYTES)];
	const unsigned char *colon;
	size_t len = 0;
	int ok;
	enum err rc = ERR_AUTH;

	/* The header's token68 has no whitespace inside (RFC 9110 11.2); nettle would skip it. */
	if (n == 0 || n % 4 != 0 || n > AUTH_MAX_CREDENTIALS_BYTES ||
	    strcspn(cred, " \t\r\n\f") < n || codec_base64_decode(cred, n, dec, &len) != ERR_OK) {
		buf_setf(errmsg, "malformed basic credentials: not valid base64");
		goto out;
	}
	colon = memchr(dec, ':', (size_t)len);
	if (!colon) {
		buf_setf(errmsg, "malformed basic credentials: no ':' between user and password");
		goto out;
	}
	if (a->mode == AUTH_BASIC_USERS) {
		ok = check_user(a, dec, (size_t)(colon - dec), colon + 1,
				(size_t)(dec + len - colon - 1), may_bcrypt);
	} else {
		/* Both halves are always compared: no hint which one was wrong. */
		ok = digest_equal(dec, (size_t)(colon - dec), a->user);
		ok &= digest_equal(colon + 1, (size_t)(dec + len - colon - 1), a->secret);
	}
	if (ok == NEEDS_BCRYPT) {
		rc = ERR_RETRY;
		goto out;
	}
	if (!ok) {
		buf_setf(errmsg, "invalid username or password");
		goto out;
	}
	rc = ERR_OK;
out:
	codec_wipe(dec, sizeof(dec));
	return rc;
}

/* auth_check(), or auth_check_cached() when !may_bcrypt. */
static enum err check(const struct auth *a, const char *authorization_header, int may_bcrypt,
		      struct buf *errmsg)
{
	const char *scheme, *cred, *h = authorization_header;
	size_t scheme_len, n;

	if (auth_mode(a) == AUTH_NONE)
		return ERR_OK;
	if (!h || !*h) {
		buf_setf(errmsg, "missing Authorization header");
		return ERR_AUTH;
	}
	scheme = a->mode == AUTH_BEARER ? "Bearer" : "Basic";
	scheme_len = strlen(scheme);
	if (strncasecmp(h, scheme, scheme_len) != 0 ||
	    (h[scheme_len] != ' ' && h[scheme_len] != '\0')) {
		buf_setf(errmsg, "authorization scheme is not %s", scheme);
		return ERR_AUTH;
	}
	cred = h + scheme_len;
	while (*cred == ' ')
		cred++;
	n = strlen(cred);
	while (n > 0 && (cred[n - 1] == ' ' || cred[n - 1] == '\t'))
		n--;
	if (n == 0) {
		buf_setf(errmsg, "missing credentials after the scheme");
		return ERR_AUTH;
	}
	if (n > AUTH_MAX_CREDENTIALS_BYTES) {
		buf_setf(errmsg, "credentials too long");
		return ERR_AUTH;
	}
	if (a->mode != AUTH_BEARER)
		return check_basic(a, cred, n, may_bcrypt, errmsg);
	if (!digest_equal(cred, n, a->secret)) {
		buf_setf(errmsg, "invalid bearer token");
		return ERR_AUTH;
	}
	return ERR_OK;
}

enum err auth_check(const struct auth *a, const char *authorization_header, struct buf *errmsg)
{
	return check(a, authorization_header, 1, errmsg);
}

enum err auth_check_cached(const struct auth *a, const char *authorization_header,
			   struct buf *errmsg)
{
	return check(a, authorization_header, 0, errmsg);
}

/* client's slot (under cache_mu): its own, else the least penalized one (take). */
static struct client_slot *client_slot(struct auth *a, const char *client, int take)
{
	struct client_slot *old = &a->clients[0];

	for (int i = 0; i < CLIENT_SLOTS; i++) {
		if (a->clients[i].tat_us && !strcmp(a->clients[i].addr, client))
			return &a->clients[i];
		if (a->clients[i].tat_us < old->tat_us)
			old = &a->clients[i];
	}
	if (!take)
		return NULL;
	snprintf(old->addr, sizeof(old->addr), "%s", client);
	old->tat_us = 0;
	return old;
}

unsigned auth_client_wait_s(const struct auth *ca, const char *client)
{
	struct auth *a = (struct auth *)ca;  /* the clients' table is state, like the cache */
	const struct client_slot *c;
	int64_t burst_us = (int64_t)(AUTH_FAIL_BURST - 1) * AUTH_FAIL_INTERVAL_S * 1000000;
	int64_t ahead = 0;

	if (auth_mode(a) != AUTH_BASIC_USERS || !client)
		return 0;
	pthread_mutex_lock(&a->cache_mu);
	c = client_slot(a, client, 0);
	if (c)
		ahead = c->tat_us - clock_mono_us() - burst_us;
	pthread_mutex_unlock(&a->cache_mu);
	return ahead > 0 ? (unsigned)((ahead + 999999) / 1000000) : 0;
}

int auth_client_failed(const struct auth *ca, const char *client)
{
	struct auth *a = (struct auth *)ca;
	struct client_slot *c;
	int64_t now = clock_mono_us();
	int64_t burst_us = (int64_t)(AUTH_FAIL_BURST - 1) * AUTH_FAIL_INTERVAL_S * 1000000;
	int was_free;

	if (auth_mode(a) != AUTH_BASIC_USERS || !client)
		return 0;
	pthread_mutex_lock(&a->cache_mu);
	c = client_slot(a, client, 1);
	was_free = c->tat_us - now <= burst_us;
	c->tat_us = (c->tat_us > now ? c->tat_us : now) + (int64_t)AUTH_FAIL_INTERVAL_S * 1000000;
	was_free &= c->tat_us - now > burst_us;
	pthread_mutex_unlock(&a->cache_mu);
	return was_free;
}
