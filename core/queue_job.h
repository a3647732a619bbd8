/*
 * queue_job.h - what the two jobs that drain a store queue, the bridge's
 * (bridge/bridge.c) and the janitor's (janitor/janitor.c), do alike around
 * one event: take a newer config generation between two events, and end the
 * log line of a failed event once its outcome is recorded.
 */
#ifndef AB_QUEUE_JOB_H
#define AB_QUEUE_JOB_H

#include "err.h"
#include "log.h"
#include "reload.h"
#include "store/store_events.h"

/*
 * Between two events: r's current generation when it is not *held, else
 * NULL.  A newer one is now held in *held (the one held before, which may
 * be NULL, released); the caller switches to its cfg.  NULL when r is NULL
 * or has no generation: *held is left as it is.
 */
const struct reload_gen *queue_job_newer_gen(struct reload *r, const struct reload_gen **held);

/*
 * End l, the log line of failed event ev that the caller began (its level,
 * message and own fields), with attempts (ev->attempts + 1) and detail why,
 * then log_end(l).  src is the store's answer to recording the failure
 * (store_event_dead() or store_event_retry()): when not ERR_OK, "cannot
 * record event outcome" is logged with its err_str() and 1 returned (the
 * step's store fault); else 0.
 */
int queue_job_failed(struct log_line *l, const struct store_event *ev, const char *why,
		     enum err src);

#endif
