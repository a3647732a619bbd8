/*
 * webhook_cache.c - recent webhook bodies and the events they queued
 * (webhook_cache.h).
 */
#include "bridge/webhook_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include <nettle/umac.h>

#include "core/xalloc.h"
#include "store/store_events.h"

#include "core/banned.h"

/* A slot: the request as it came, and its entry (n_evs 0: empty). */
struct slot {
	uint64_t generation;
	char *query_receiver;
	char *query_repo;
	char *body;
	size_t body_len;
	struct webhook_cache_entry e;
};

struct webhook_cache {
	pthread_mutex_t mu;
	struct umac64_ctx hash;  /* keyed once; copied for each request */
	struct slot *slots;
	size_t n_slots;
};

struct webhook_cache *webhook_cache_new(size_t slots)
{
	struct webhook_cache *c = xcalloc(1, sizeof(*c));

	uint8_t key[UMAC_KEY_SIZE] = { 0 };

	c->n_slots = slots ? slots : 1;
	c->slots = xcalloc(c->n_slots, sizeof(*c->slots));
	pthread_mutex_init(&c->mu, NULL);
	/* The key only spreads bodies over slots (they are compared exactly): a
	 * short read leaves zeros, which spreads them as well. */
	(void)getrandom(key, sizeof(key), 0);
	umac64_set_key(&c->hash, key);
	return c;
}

void webhook_cache_entry_release(struct webhook_cache_entry *e)
{
	if (!e)
		return;
	free(e->evs);  /* the strings too: copy_entry() */
	memset(e, 0, sizeof(*e));
}

static void slot_release(struct slot *s)
{
	free(s->query_receiver);
	free(s->query_repo);
	free(s->body);
	webhook_cache_entry_release(&s->e);
	memset(s, 0, sizeof(*s));
}

void webhook_cache_clear(struct webhook_cache *c)
{
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->n_slots; i++)
		slot_release(&c->slots[i]);
	pthread_mutex_unlock(&c->mu);
}

void webhook_cache_free(struct webhook_cache *c)
{
	if (!c)
		return;
	webhook_cache_clear(c);
	pthread_mutex_destroy(&c->mu);
	free(c->slots);
	free(c);
}

/* A parameter as hashed: a presence byte, then its bytes and a NUL. */
static void hash_param(struct umac64_ctx *h, const char *v)
{
	uint8_t present = v != NULL;

	umac64_update(h, 1, &present);
	if (v)
		umac64_update(h, strlen(v) + 1, (const uint8_t *)v);
}

static struct slot *slot_of(struct webhook_cache *c, const struct webhook_cache_request *rq)
{
	static const uint8_t nonce[1] = { 0 };  /* fixed: the same request, the same slot */
	struct umac64_ctx h = c->hash;
	uint64_t tag;

	umac64_set_nonce(&h, sizeof(nonce), nonce);
	hash_param(&h, rq->query_receiver);
	hash_param(&h, rq->query_repo);
	umac64_update(&h, rq->body_len, (const uint8_t *)rq->body);
	umac64_digest(&h, sizeof(tag), (uint8_t *)&tag);
	return &c->slots[tag % c->n_slots];
}

static int same_param(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Whether slot s holds the request rq. */
static int holds(const struct slot *s, const struct webhook_cache_request *rq)
{
	return s->e.n_evs > 0 && s->generation == rq->generation && s->body_len == rq->body_len &&
	       same_param(s->query_receiver, rq->query_receiver) &&
	       same_param(s->query_repo, rq->query_repo) &&
	       !memcmp(s->body, rq->body, rq->body_len);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* Bytes of s with its NUL in copy_entry()'s block; 0 for NULL. */
static size_t str_bytes(const char *s)
{
	return s ? strlen(s) + 1 : 0;
}

/* s (NULL stays NULL) copied to *at, which moves past it. */
static char *put_str(char **at, const char *s)
{
	char *out = *at;
	size_t n = str_bytes(s);

	if (!n)
		return NULL;
	memcpy(out, s, n);
	*at += n;
	return out;
}

/*
 * A deep copy of e into *out (which holds nothing), in one allocation: the
 * events, then their strings and the receiver's (one malloc and one free
 * per lookup, not one per string: webhook_cache_entry_release() frees evs).
 */
static void copy_entry(struct webhook_cache_entry *out, const struct webhook_cache_entry *e)
{
	static const char no_payload[] = "-";  /* the store requires one; never stored from here */
	size_t bytes = e->n_evs * sizeof(*out->evs) + str_bytes(e->receiver);
	char *at;

	for (size_t i = 0; i < e->n_evs; i++) {
		const struct store_event *s = &e->evs[i];

		bytes += str_bytes(s->kind) + str_bytes(s->receiver) + str_bytes(s->key) +
			 str_bytes(s->status) + sizeof(no_payload) + str_bytes(s->repeat_state);
	}
	*out = *e;
	out->evs = xcalloc(1, bytes);
	at = (char *)(out->evs + e->n_evs);
	out->receiver = put_str(&at, e->receiver);
	for (size_t i = 0; i < e->n_evs; i++) {
		const struct store_event *s = &e->evs[i];
		struct store_event *d = &out->evs[i];

		d->kind = put_str(&at, s->kind);
		d->receiver = put_str(&at, s->receiver);
		d->key = put_str(&at, s->key);
		d->status = put_str(&at, s->status);
		d->starts_at_ms = s->starts_at_ms;
		d->ends_at_ms = s->ends_at_ms;
		d->payload = put_str(&at, no_payload);
		d->repeat_state = put_str(&at, s->repeat_state);
	}
}

int webhook_cache_get(struct webhook_cache *c, const struct webhook_cache_request *rq,
		      struct webhook_cache_entry *out)
{
	struct slot *s = slot_of(c, rq);
	int found;

	memset(out, 0, sizeof(*out));
	if (rq->body_len > WEBHOOK_CACHE_MAX_BODY)
		return 0;
	pthread_mutex_lock(&c->mu);
	found = holds(s, rq);
	if (found)
		copy_entry(out, &s->e);
	pthread_mutex_unlock(&c->mu);
	return found;
}

void webhook_cache_set_repeats_version(struct webhook_cache *c,
				       const struct webhook_cache_request *rq, uint64_t version)
{
	struct slot *s = slot_of(c, rq);

	pthread_mutex_lock(&c->mu);
	if (holds(s, rq))
		s->e.repeats_version = version;
	pthread_mutex_unlock(&c->mu);
}

void webhook_cache_put(struct webhook_cache *c, const struct webhook_cache_request *rq,
		       const struct webhook_cache_entry *e)
{
	struct slot fresh = { 0 }, *s;

	if (!e->n_evs || rq->body_len > WEBHOOK_CACHE_MAX_BODY)
		return;
	for (size_t i = 0; i < e->n_evs; i++) {
		if (!store_event_may_repeat(&e->evs[i]))
			return;
	}
	fresh.generation = rq->generation;
	fresh.query_receiver = dup_or_null(rq->query_receiver);
	fresh.query_repo = dup_or_null(rq->query_repo);
	fresh.body = xmalloc(rq->body_len + 1);
	memcpy(fresh.body, rq->body, rq->body_len);
	fresh.body_len = rq->body_len;
	copy_entry(&fresh.e, e);
	s = slot_of(c, rq);
	pthread_mutex_lock(&c->mu);
	slot_release(s);
	*s = fresh;
	pthread_mutex_unlock(&c->mu);
}
