/*
 * am_api.h - the client of Alertmanager's API v2 for silences: create one,
 * find one by a marker in its comment, read its state, expire it.  Follows
 * Alertmanager's OpenAPI spec (prometheus/alertmanager api/v2/openapi.yaml:
 * POST /api/v2/silences, GET /api/v2/silences?filter=, GET and DELETE
 * /api/v2/silence/{silenceID}).  Used by the bridge's silence worker
 * (bridge/silence.h); a leaf of core/, on the HTTP client (http_client.h).
 * One struct am_api per thread.
 */
#ifndef AB_AM_API_H
#define AB_AM_API_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

struct am_api;

/* Where to reach an Alertmanager and how to authenticate (cfg_alertmanager). */
struct am_api_target {
	const char *url;           /* http(s)://host:port[/prefix], no trailing '/' */
	const char *bearer_token;  /* Authorization: Bearer; NULL: none */
	const char *username;      /* basic auth (RFC 7617) when set ... */
	const char *password;      /* ... with this password */
	int64_t timeout_ms;        /* whole request; 0: 10 s */
};

/* One equality matcher of a silence: {"name", "value", "isRegex": false, "isEqual": true}. */
struct am_api_matcher {
	const char *name;
	const char *value;
};

/* A silence to create (the spec's postableSilence). */
struct am_api_silence {
	const struct am_api_matcher *matchers;
	size_t n_matchers;          /* at least 1: Alertmanager refuses a silence without */
	int64_t starts_at_ms;       /* ms since the epoch, UTC */
	int64_t ends_at_ms;         /* after starts_at_ms */
	const char *created_by;
	const char *comment;        /* non-empty (Alertmanager requires one) */
};

/* A new client; user_agent (copied) is sent with every request.  Never NULL. */
struct am_api *am_api_new(const char *user_agent);
/* Free; a may be NULL. */
void am_api_free(struct am_api *a);

/*
 * Errors of every call, with detail in errmsg (never a credential):
 *   ERR_INVALID  400 (Alertmanager refused the request: its text is in errmsg;
 *                do not send it again) or a 2xx answer not as documented
 *   ERR_AUTH     401 or 403 (a proxy's: Alertmanager itself has no auth)
 *   ERR_NOTFOUND 404 (silence ID unknown)
 *   ERR_RETRY    5xx, a timeout, or a connection failure; errmsg starts
 *                "ambiguous: " when the request may have been acted on
 */

/*
 * POST /api/v2/silences with s; the new silence's ID (the answer's
 * "silenceID") in *id (malloc'd, caller frees; NULL on error).  *ambiguous
 * is set to 1 when the call failed after the request may have reached
 * Alertmanager (a timeout, reset or 5xx after sending): then look for the
 * silence (am_api_silence_find()) before posting again.
 */
enum err am_api_silence_create(struct am_api *a, const struct am_api_target *t,
			       const struct am_api_silence *s, char **id, int *ambiguous,
			       struct buf *errmsg) WARN_UNUSED;

/*
 * GET /api/v2/silences?filter=NAME="VALUE"&filter=... with one filter per
 * matcher of s (Alertmanager matches the filters against each silence's
 * matchers, not against createdBy): the ID (in *id, malloc'd) of a silence
 * that is not expired, whose createdBy is s->created_by and whose comment
 * contains marker.  ERR_NOTFOUND when none.
 */
enum err am_api_silence_find(struct am_api *a, const struct am_api_target *t,
			     const struct am_api_silence *s, const char *marker, char **id,
			     struct buf *errmsg) WARN_UNUSED;

/*
 * GET /api/v2/silence/{id}, then, unless its status.state is "expired",
 * DELETE /api/v2/silence/{id} (Alertmanager answers 500 "already expired"
 * to a second DELETE, so the state is read first).  *was_active (may be
 * NULL) is 1 when this call expired it, 0 when it was already expired.
 * ERR_NOTFOUND when Alertmanager does not know id (garbage-collected after
 * its retention).
 */
enum err am_api_silence_expire(struct am_api *a, const struct am_api_target *t, const char *id,
			       int *was_active, struct buf *errmsg) WARN_UNUSED;

#endif
