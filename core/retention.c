/*
 * retention.c - the thread that calls store_prune_done() at start and every
 * interval (see retention.h).  One thread, one loop: prune, log what went,
 * sleep until the next round or a stop.
 */
#include "retention.h"

#include <pthread.h>
#include <stdlib.h>

#include "clock.h"
#include "log.h"
#include "xalloc.h"
#include "store/store_events.h"
#include "banned.h"

#define MIN_INTERVAL_MS 1000
#define MAX_INTERVAL_MS 3600000

struct retention {
	struct store *st;
	int64_t retention_ms;
	int64_t interval_ms;
	pthread_t thread;
	struct clock_stop stop;
};

int64_t retention_interval_ms(int64_t retention_ms)
{
	int64_t d = retention_ms / 4;

	if (d < MIN_INTERVAL_MS)
		return MIN_INTERVAL_MS;
	return d > MAX_INTERVAL_MS ? MAX_INTERVAL_MS : d;
}

static void *loop(void *arg)
{
	struct retention *r = arg;

	while (!clock_stop_requested(&r->stop)) {
		int64_t deleted = 0;
		int64_t t0 = clock_mono_us();

		if (store_prune_done(r->st, clock_wall_ms() - r->retention_ms, &deleted) == ERR_OK &&
		    deleted > 0) {
			struct log_line *l = log_begin(LOG_INFO, "done events pruned");
			log_int(l, "events", deleted);
			log_int(l, "retention_ms", r->retention_ms);
			log_int(l, "took_ms", (clock_mono_us() - t0) / 1000);
			log_end(l);
		}
		clock_stop_sleep_ms(&r->stop, r->interval_ms);
	}
	return NULL;
}

enum err retention_start(struct store *st, int64_t retention_ms, int64_t interval_ms,
			 struct retention **out, struct buf *errmsg)
{
	struct retention *r;

	*out = NULL;
	if (!st || retention_ms <= 0) {
		buf_setf(errmsg, "retention: a store and a retention above 0 are required");
		return ERR_INVALID;
	}
	r = xcalloc(1, sizeof(*r));
	r->st = st;
	r->retention_ms = retention_ms;
	r->interval_ms = interval_ms > 0 ? interval_ms : retention_interval_ms(retention_ms);
	clock_stop_init(&r->stop);
	if (pthread_create(&r->thread, NULL, loop, r)) {
		buf_setf(errmsg, "retention: cannot start its thread");
		clock_stop_release(&r->stop);
		free(r);
		return ERR_IO;
	}
	*out = r;
	return ERR_OK;
}

void retention_stop(struct retention *r)
{
	if (!r)
		return;
	clock_stop_join(&r->stop, r->thread);
	clock_stop_release(&r->stop);
	free(r);
}
