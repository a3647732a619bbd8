/*
 * webhook_cache.h - what recent webhook bodies queued, so a body seen again
 * (Alertmanager's retry, a repeat at repeat_interval, the same group from a
 * second route) is answered without parsing it again.
 *
 * An entry maps a request's routing inputs (?receiver=, ?repo=) and body,
 * kept byte for byte and compared exactly, to the events that body queued - their repeat
 * identity only: kind, receiver, key, status, starts_at_ms, ends_at_ms,
 * repeat_state, not their documents - and to what the answer and the
 * metrics need.  The body's meaning is a function of those bytes and the
 * config, so an entry stays true until the config changes
 * (webhook_cache_clear()).  Whether the events are still repeats is NOT
 * cached: the webhook asks the store every time (store_repeats()), so the
 * store's rule decides, exactly as for a parsed body (bridge/webhook.h).
 * What the entry keeps is the store's version at the last "all repeats"
 * (repeats_version): with nothing written since, the store answers from it
 * without a query.
 *
 * A fixed number of slots, each holding one entry, chosen by a keyed hash of
 * the request (nettle's UMAC-64 under a random key, about a byte per
 * instruction: SHA-256 cost 40% of a repeat's handling): a newer body takes
 * the slot of an older one (bounded memory: at most slots x
 * WEBHOOK_CACHE_MAX_BODY bytes of bodies, no LRU bookkeeping).  Thread-safe
 * (one mutex; lookups copy the entry out).
 */
#ifndef AB_WEBHOOK_CACHE_H
#define AB_WEBHOOK_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "store/store_events.h"

/* The largest body kept (bytes); larger ones always go the whole way. */
#define WEBHOOK_CACHE_MAX_BODY ((size_t)64 << 10)

struct webhook_cache;

/*
 * What a request is known by: the config it is read under, its routing
 * query parameters and its body.
 */
struct webhook_cache_request {
	uint64_t generation;          /* the config's reload generation (core/reload.h) */
	const char *query_receiver;   /* ?receiver=, NULL when absent (distinct from "") */
	const char *query_repo;       /* ?repo=, likewise */
	const char *body;
	size_t body_len;
};

/* One body's worth: what webhook_cache_put() stores and _get() hands back. */
struct webhook_cache_entry {
	char *receiver;               /* the configured receiver's name */
	size_t n_alerts;              /* alerts of the payload (all valid) */
	size_t n_firing;              /* of them firing */
	size_t n_repeated;            /* alerts a repeat stands for: n_alerts, or 1 per event */
	int64_t truncated;            /* the payload's truncatedAlerts */
	struct store_event *evs;      /* n_evs events: identity fields only, payload "-" */
	size_t n_evs;
	uint64_t repeats_version;     /* store_repeats()'s version at its last "all
				       * repeats" for evs; 0 when not known */
};

/* A cache of slots entries (at least 1); never NULL. */
struct webhook_cache *webhook_cache_new(size_t slots);

/* Free c and its entries; c may be NULL. */
void webhook_cache_free(struct webhook_cache *c);

/*
 * Copy the entry of the request equal to rq (same parameters, same body
 * bytes) into *out (the caller's: release with webhook_cache_entry_release());
 * 1 when found, 0 when not (*out zeroed).
 */
int webhook_cache_get(struct webhook_cache *c, const struct webhook_cache_request *rq,
		      struct webhook_cache_entry *out);

/*
 * Store copies of rq and e in rq's slot, replacing what was there.  Not
 * stored: a body over WEBHOOK_CACHE_MAX_BODY, no events, an event without
 * repeat_state or with a dead_reason (such a body is always queued in full).
 */
void webhook_cache_put(struct webhook_cache *c, const struct webhook_cache_request *rq,
		       const struct webhook_cache_entry *e);

/*
 * Set the repeats_version of rq's entry, if its slot still holds rq (a
 * newer body may have taken it; then nothing is set).
 */
void webhook_cache_set_repeats_version(struct webhook_cache *c,
				       const struct webhook_cache_request *rq, uint64_t version);

/* Drop every entry. */
void webhook_cache_clear(struct webhook_cache *c);

/* Free what e holds and zero it; e may be NULL. */
void webhook_cache_entry_release(struct webhook_cache_entry *e);

#endif
