/*
 * queue_job.c - the bridge's and the janitor's queue jobs' common steps
 * around one event (queue_job.h).  Runs on the job's worker thread.
 */
#include "queue_job.h"

#include "banned.h"

const struct reload_gen *queue_job_newer_gen(struct reload *r, const struct reload_gen **held)
{
	const struct reload_gen *g = reload_acquire(r);

	if (!g)
		return NULL;
	if (g == *held) {
		reload_release(r, g);
		return NULL;
	}
	reload_release(r, *held);
	*held = g;
	return g;
}

int queue_job_failed(struct log_line *l, const struct store_event *ev, const char *why,
		     enum err src)
{
	log_int(l, "attempts", ev->attempts + 1);
	log_str(l, "detail", why);
	log_end(l);
	if (!src)
		return 0;
	log_msg(LOG_ERROR, "cannot record event outcome", "err", err_str(src));
	return 1;
}
