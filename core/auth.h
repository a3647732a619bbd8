/*
 * auth.h - authentication of HTTP requests: for the webhooks a bearer token
 * (RFC 6750) or HTTP Basic credentials (RFC 7617) from the config's webhook
 * section, checked in constant time; for the on-call page and /metrics the
 * Basic users of web.auth with bcrypt hashes (auth_new_web()).  With nothing
 * configured the endpoint is open; the caller logs that once at start
 * (auth_mode() == AUTH_NONE).  Secrets never appear in an errmsg or a log line.
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
	AUTH_BASIC_USERS, /* the same, against web.auth.basic_auth_users' bcrypt hashes */
};

/* How long a verified (user, password) of AUTH_BASIC_USERS is taken without bcrypt, in ms. */
#define AUTH_CACHE_MS (5 * 60 * 1000)

/*
 * Failed web.auth logins allowed per client address: AUTH_FAIL_BURST at
 * once, then one every AUTH_FAIL_INTERVAL_S (auth_client_wait_s()).
 */
#define AUTH_FAIL_BURST 10
#define AUTH_FAIL_INTERVAL_S 6

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

/*
 * Build the checker of web.auth (Prometheus' web-config basic_auth_users):
 * AUTH_BASIC_USERS over wa->basic_auth_users (user -> bcrypt hash, checked
 * by crypt_r(3) of libxcrypt), or AUTH_NONE when there is none (wa NULL
 * too).  The hashes are copied.  A (user, password) bcrypt verified is
 * remembered, as a SHA-256 digest, for AUTH_CACHE_MS (16 at most, the
 * oldest replaced): bcrypt at cost 10 takes tens of ms of CPU, and a
 * Prometheus scraping /metrics every 15 s would pay it each time.  A failed
 * check is never remembered; an unknown user costs one bcrypt all the same,
 * so the time taken does not tell which users exist.
 * Errors: ERR_INVALID with errmsg: a user name empty or with ':', a hash
 * that is not bcrypt ("$2a$", "$2b$", "$2y$", 60 characters, a setting
 * libxcrypt's crypt_checksalt(3) takes; config validation says so first,
 * with the line).
 */
enum err auth_new_web(const struct cfg_web_auth *wa, struct auth **out,
		      struct buf *errmsg) WARN_UNUSED;

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
 * AUTH_BASIC_USERS: the user's bcrypt hash is checked with crypt_r() (or
 * the cache, above) and the result compared in constant time.
 * a NULL or AUTH_NONE: ERR_OK for any header.  Thread-safe.
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
 * auth_check() without the bcrypt: the same answers, except ERR_RETRY (and
 * errmsg untouched) when only a bcrypt could tell - AUTH_BASIC_USERS, a
 * well-formed Basic header whose (user, password) is not in the cache.
 * Then auth_check() gives the answer, on a thread that may spend tens of
 * ms (srv_defer()).  Never slow; thread-safe.
 */
enum err auth_check_cached(const struct auth *a, const char *authorization_header,
			   struct buf *errmsg) WARN_UNUSED;

/*
 * A limit on guessing web.auth passwords, per client address (client: the
 * text of srv_remote_addr(); NULL: none).  auth_client_failed() records a
 * failed bcrypt check by client and returns 1 when that failure made it
 * wait (0 else: under its allowance, or waiting already, so a caller can
 * log the moment once); auth_client_wait_s() says how many seconds
 * client must wait before its next password is checked: 0 while it has
 * failed fewer than AUTH_FAIL_BURST times, then one more failure allowed
 * every AUTH_FAIL_INTERVAL_S (GCRA, a token bucket).  256 addresses are
 * remembered; a new one takes the slot of the least penalized (so spraying
 * new addresses does not free one that must wait).  Both do nothing (0) unless a is
 * AUTH_BASIC_USERS.  Thread-safe.
 */
unsigned auth_client_wait_s(const struct auth *a, const char *client);
int auth_client_failed(const struct auth *a, const char *client);

/*
 * The WWW-Authenticate value for a 401 (RFC 9110 11.6.1): for AUTH_BEARER
 * `Bearer realm="alertbridge"`, for AUTH_BASIC and AUTH_BASIC_USERS
 * `Basic realm="alertbridge", charset="UTF-8"` (RFC 7617 2.1), NULL for
 * AUTH_NONE or a NULL a.  A static string.
 */
const char *auth_challenge(const struct auth *a);

#endif
