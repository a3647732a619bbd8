/*
 * retention.h - the store's retention: a small thread that deletes the done
 * events (of every queue) older than database_retention, at start and then
 * periodically, so the database stays the size of what is live (DESIGN:
 * "Done events are pruned after database_retention").  The deleting and the
 * vacuuming are store_prune_done()'s (store/store_events.h); this only schedules it.
 */
#ifndef AB_RETENTION_H
#define AB_RETENTION_H

#include <stdint.h>

#include "buf.h"
#include "err.h"
#include "store/store.h"

struct retention;

/*
 * The pause between two prunes for a retention: a quarter of it, at least
 * 1 s and at most 1 h.  So a done event is gone at most retention_ms plus
 * that after it was done.  retention_ms <= 0 gives 1 s.
 */
int64_t retention_interval_ms(int64_t retention_ms);

/*
 * Start the thread: it prunes at once, then every interval_ms (<= 0:
 * retention_interval_ms(retention_ms)), the events done before now minus
 * retention_ms (wall clock, ms).  A failed prune is logged by the store and
 * tried again next time.  st must outlive the thread (retention_stop()
 * before store_close()).  *out is NULL on error.
 * Errors: ERR_INVALID (st NULL or retention_ms <= 0), ERR_IO (no thread).
 */
enum err retention_start(struct store *st, int64_t retention_ms, int64_t interval_ms,
			 struct retention **out, struct buf *errmsg) WARN_UNUSED;

/*
 * Stop the thread (a prune in progress finishes first; a pause is cut
 * short), join it and free r; r may be NULL.
 */
void retention_stop(struct retention *r);

#endif
