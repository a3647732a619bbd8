/*
 * webhook_cache.c - recent webhook bodies and the events they queued
 * (webhook_cache.h).
 */
#include "bridge/webhook_cache.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <nettle/sha2.h>

#include "core/xalloc.h"

#include "core/banned.h"

struct webhook_cache {
	pthread_mutex_t mu;
	struct webhook_cache_entry *slots;  /* an entry with n_evs 0 is empty */
	size_t n_slots;
};

struct webhook_cache *webhook_cache_new(size_t slots)
{
	struct webhook_cache *c = xcalloc(1, sizeof(*c));

	c->n_slots = slots ? slots : 1;
	c->slots = xcalloc(c->n_slots, sizeof(*c->slots));
	pthread_mutex_init(&c->mu, NULL);
	return c;
}

void webhook_cache_entry_release(struct webhook_cache_entry *e)
{
	if (!e)
		return;
	for (size_t i = 0; i < e->n_evs; i++) {
		free(e->evs[i].kind);
		free(e->evs[i].receiver);
		free(e->evs[i].key);
		free(e->evs[i].status);
		free(e->evs[i].payload);
		free(e->evs[i].repeat_state);
	}
	free(e->evs);
	free(e->receiver);
	memset(e, 0, sizeof(*e));
}

void webhook_cache_clear(struct webhook_cache *c)
{
	pthread_mutex_lock(&c->mu);
	for (size_t i = 0; i < c->n_slots; i++)
		webhook_cache_entry_release(&c->slots[i]);
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
static void digest_param(struct sha256_ctx *h, const char *v)
{
	uint8_t present = v != NULL;

	sha256_update(h, 1, &present);
	if (v)
		sha256_update(h, strlen(v) + 1, (const uint8_t *)v);
}

void webhook_cache_digest(const char *query_receiver, const char *query_repo,
			  const void *body, size_t body_len,
			  unsigned char out[CODEC_SHA256_LEN])
{
	struct sha256_ctx h;

	sha256_init(&h);
	digest_param(&h, query_receiver);
	digest_param(&h, query_repo);
	sha256_update(&h, body_len, body);
	sha256_digest(&h, CODEC_SHA256_LEN, out);
}

static char *dup_or_null(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* A deep copy of e into *out (which holds nothing). */
static void copy_entry(struct webhook_cache_entry *out, const struct webhook_cache_entry *e)
{
	*out = *e;
	out->receiver = dup_or_null(e->receiver);
	out->evs = xcalloc(e->n_evs, sizeof(*out->evs));
	for (size_t i = 0; i < e->n_evs; i++) {
		const struct store_event *s = &e->evs[i];
		struct store_event *d = &out->evs[i];

		d->kind = dup_or_null(s->kind);
		d->receiver = dup_or_null(s->receiver);
		d->key = dup_or_null(s->key);
		d->status = dup_or_null(s->status);
		d->starts_at_ms = s->starts_at_ms;
		d->ends_at_ms = s->ends_at_ms;
		d->payload = xstrdup("-");  /* the store requires one; never stored from here */
		d->repeat_state = dup_or_null(s->repeat_state);
	}
}

static struct webhook_cache_entry *slot_of(struct webhook_cache *c,
					   const unsigned char digest[CODEC_SHA256_LEN])
{
	uint64_t h;

	memcpy(&h, digest, sizeof(h));
	return &c->slots[h % c->n_slots];
}

int webhook_cache_get(struct webhook_cache *c, const unsigned char digest[CODEC_SHA256_LEN],
		      struct webhook_cache_entry *out)
{
	struct webhook_cache_entry *e;
	int found;

	memset(out, 0, sizeof(*out));
	pthread_mutex_lock(&c->mu);
	e = slot_of(c, digest);
	found = e->n_evs > 0 && !memcmp(e->digest, digest, CODEC_SHA256_LEN);
	if (found)
		copy_entry(out, e);
	pthread_mutex_unlock(&c->mu);
	return found;
}

void webhook_cache_put(struct webhook_cache *c, const struct webhook_cache_entry *e)
{
	struct webhook_cache_entry copy, *slot;

	if (!e->n_evs)
		return;
	for (size_t i = 0; i < e->n_evs; i++) {
		if (!e->evs[i].repeat_state || (e->evs[i].dead_reason && *e->evs[i].dead_reason))
			return;
	}
	copy_entry(&copy, e);
	pthread_mutex_lock(&c->mu);
	slot = slot_of(c, e->digest);
	webhook_cache_entry_release(slot);
	*slot = copy;
	pthread_mutex_unlock(&c->mu);
}
