/*
 * auth.h - authentication of webhook requests: a bearer token (RFC 6750) or
 * HTTP Basic credentials (RFC 7617), taken from the config's webhook section,
 * checked in constant time.  With neither configured the endpoint is open;
 * the caller logs that once at start (auth_mode() == AUTH_NONE).
 * Secrets never appear in an errmsg or a log line.
 */
#ifndef AB_AUTH_H
#define AB_AUTH_H

#include "buf.h"
#include "config.h"
#include "err.h"

struct auth;

enum auth_mode {
	AUTH_NONE = 0,  /* no credentials configured: every request passes */
	AUTH_BEARER,    /* "Authorization: Bearer <token>" */
	AUTH_BASIC,     /* "Authorization: Basic base64(user:password)" */
};

/* Longest Authorization credentials (after the scheme) looked at, in bytes. */
#define AUTH_MAX_CREDENTIALS_BYTES 4096

/*
 * Build the checker from wh: wh->bearer_token (AUTH_BEARER), or
 * wh->basic_auth.username with wh->basic_auth.password (AUTH_BASIC), or
 * neither (AUTH_NONE).  wh NULL is AUTH_NONE.  Only digests of the secrets
 * are kept (SHA-256), so wh may be freed afterwards.  On success *out is a
 * new checker (free with auth_free()); on error *out is NULL.
 * Errors: ERR_INVALID with errmsg (may be NULL) saying which rule broke,
 * never quoting a secret: both a bearer token and basic auth set; an empty
 * bearer token; basic auth with an empty username, a username containing
 * ':' (RFC 7617 forbids it) or no password.
 */
enum err auth_new(const struct cfg_webhook *wh, struct auth **out, struct buf *errmsg) WARN_UNUSED;

/* Free a; a may be NULL. */
void auth_free(struct auth *a);

/* Which credentials a wants; AUTH_NONE for a NULL a. */
enum auth_mode auth_mode(const struct auth *a);

/*
 * Check the value of a request's Authorization header (NULL when it had
 * none) against a.  The scheme is matched case-insensitively (RFC 9110
 * 11.1), followed by one or more spaces and the credentials; trailing spaces
 * and tabs are ignored.  Secrets are compared through their SHA-256 digests
 * with nettle's memeql_sec(), so the time taken depends neither on where the first
 * difference is nor on the length of the configured secret.  For Basic, the
 * base64 (RFC 4648 section 4, padding required) is decoded, split at the
 * first ':', and both user and password are always compared.
 * a NULL or AUTH_NONE: ERR_OK for any header.
 * Errors: ERR_AUTH, with errmsg (may be NULL) set to a reason that never
 * contains any part of the header or the secret:
 *   "missing Authorization header", "authorization scheme is not Bearer"
 *   (or Basic), "missing credentials after the scheme", "credentials too
 *   long", "invalid bearer token", "malformed basic credentials: not valid
 *   base64", "malformed basic credentials: no ':' between user and
 *   password", "invalid username or password".
 */
enum err auth_check(const struct auth *a, const char *authorization_header,
		    struct buf *errmsg) WARN_UNUSED;

/*
 * The WWW-Authenticate value for a 401 (RFC 9110 11.6.1): for AUTH_BEARER
 * `Bearer realm="alertbridge"`, for AUTH_BASIC
 * `Basic realm="alertbridge", charset="UTF-8"` (RFC 7617 2.1), NULL for
 * AUTH_NONE or a NULL a.  A static string.
 */
const char *auth_challenge(const struct auth *a);

#endif
