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

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "codec.h"
#include "xalloc.h"

#include "banned.h"

#define DIGEST_LEN CODEC_SHA256_LEN

struct auth {
	enum auth_mode mode;
	unsigned char secret[DIGEST_LEN];  /* bearer token, or basic password */
	unsigned char user[DIGEST_LEN];    /* basic username */
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

enum err auth_new(const struct cfg_webhook *wh, struct auth **out, struct buf *errmsg)
{
	struct auth *a = NULL;
	const struct cfg_basic_auth *ba;
	enum err rc = ERR_INVALID;

	*out = NULL;
	a = xcalloc(1, sizeof(*a));
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
	if (rc == ERR_OK)
		*out = a;
	else
		auth_free(a);
	return rc;
}

void auth_free(struct auth *a)
{
	if (!a)
		return;
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
		return "Basic realm=\"alertbridge\", charset=\"UTF-8\"";
	}
	return NULL;
}

static enum err check_basic(const struct auth *a, const char *cred, size_t n,
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
	/* Both halves are always compared: no hint which one was wrong. */
	ok = digest_equal(dec, (size_t)(colon - dec), a->user);
	ok &= digest_equal(colon + 1, (size_t)(dec + len - colon - 1), a->secret);
	if (!ok) {
		buf_setf(errmsg, "invalid username or password");
		goto out;
	}
	rc = ERR_OK;
out:
	codec_wipe(dec, sizeof(dec));
	return rc;
}

enum err auth_check(const struct auth *a, const char *authorization_header, struct buf *errmsg)
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
	if (a->mode == AUTH_BASIC)
		return check_basic(a, cred, n, errmsg);
	if (!digest_equal(cred, n, a->secret)) {
		buf_setf(errmsg, "invalid bearer token");
		return ERR_AUTH;
	}
	return ERR_OK;
}
