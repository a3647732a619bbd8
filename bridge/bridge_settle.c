/*
 * bridge_settle.c - the settle holds of the reconciler (bridge_options
 * settle_at_start, settle_on_gain, pending_note): no GitHub write while
 * writes another process (or replica) sent may still land, so that a late
 * one cannot overtake ours (issue 19).  Part of the reconciler (bridge.c);
 * the parts share bridge_int.h.
 */
#include "bridge/bridge_int.h"

#include <stdint.h>

#include "core/log.h"
#include "core/banned.h"

void bridge_pending_writes(void *ctx, const char *text)
{
	struct bridge *b = ctx;

	if (b->opts.note_pending)
		b->opts.note_pending(b->opts.note_ctx, text);
}

/*
 * bridge_options.pending_note: the previous process's writes that may
 * still land become writes in doubt of the client (gh_pending_restore()).
 * Returns 0, or -1 when the note cannot be read.
 */
static int restore_pending(struct bridge *b)
{
	int64_t latest = 0, now = bridge_now_ms(b);
	int n = gh_pending_restore(b->gh, b->opts.pending_note, &latest);
	struct log_line *l;

	if (n <= 0)
		return n;
	b->restored_until = latest;
	metric_set(b->m_held, NULL, 1);
	l = log_begin(LOG_WARN, "holding github writes to the issues the previous process may "
				"still change");
	log_int(l, "issues", n);
	log_int(l, "hold_ms", latest - now);
	log_str(l, "webhooks", "still taken and queued");
	log_end(l);
	return 0;
}

/* The writes restore_pending() held back have all settled at now_ms: say so once. */
static void restored_settled(struct bridge *b, int64_t now_ms)
{
	if (!b->restored_until || now_ms < b->restored_until)
		return;
	b->restored_until = 0;
	if (!__atomic_load_n(&b->settle_until, __ATOMIC_ACQUIRE))
		metric_set(b->m_held, NULL, 0);
	log_msg(LOG_INFO, "the previous process's writes settled", NULL, NULL);
}

/*
 * Start a settle hold (bridge_options.settle_at_start, settle_on_gain) at
 * now_ms, why its reason for the log: nothing is sent before until (ms, the
 * bridge's clock; none when that is past already).
 */
static void settle_hold(struct bridge *b, int64_t now_ms, int64_t until, const char *why)
{
	struct log_line *l;

	if (until <= now_ms || until <= __atomic_load_n(&b->settle_until, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&b->settle_until, until, __ATOMIC_RELEASE);
	metric_set(b->m_held, NULL, 1);
	l = log_begin(LOG_WARN, "holding github writes until those in flight settle");
	log_str(l, "reason", why);
	log_int(l, "hold_ms", until - now_ms);
	log_str(l, "webhooks", "still taken and queued");
	log_end(l);
}

/* Non-zero while the settle hold lasts at now_ms; its end is logged once. */
static int settle_held(struct bridge *b, int64_t now_ms)
{
	int64_t until = __atomic_load_n(&b->settle_until, __ATOMIC_ACQUIRE);

	if (!until)
		return 0;
	if (now_ms < until)
		return 1;
	__atomic_store_n(&b->settle_until, 0, __ATOMIC_RELEASE);
	if (!b->restored_until)
		metric_set(b->m_held, NULL, 0);
	if (b->start_hold) {  /* what the last process sent settled: only ours can be pending */
		b->start_hold = 0;
		bridge_pending_writes(b, gh_pending_text(b->gh));
	}
	log_msg(LOG_INFO, "settle hold over: github calls resume", NULL, NULL);
	return 0;
}

int64_t bridge_settle_until(struct bridge *b)
{
	int64_t until = __atomic_load_n(&b->settle_until, __ATOMIC_ACQUIRE);

	return until > bridge_now_ms(b) ? until : 0;
}

void bridge_settle_start(struct bridge *b)
{
	if (b->opts.pending_note && restore_pending(b) < 0)
		settle_hold(b, bridge_now_ms(b), gh_write_settled_at(b->gh, bridge_now_ms(b)),
			    "the previous process's note of its writes cannot be read");
	if (b->opts.settle_at_start)
		settle_hold(b, bridge_now_ms(b), gh_write_settled_at(b->gh, bridge_now_ms(b)),
			    "the previous process stopped uncleanly");
	b->start_hold = !!__atomic_load_n(&b->settle_until, __ATOMIC_ACQUIRE);
	if (!b->start_hold)  /* nothing of ours pending: say so (none said means "any") */
		bridge_pending_writes(b, gh_pending_text(b->gh));
}

int bridge_settle_step(struct bridge *b, int64_t now_ms)
{
	if (!b->acting) {
		b->acting = 1;
		b->budget_loaded = 0;  /* whoever acted before spent from the same budget */
		if (b->opts.settle_on_gain)
			settle_hold(b, now_ms,
				    gh_write_settled_at(b->gh, now_ms) - b->opts.settle_gain_waited_ms,
				    "took the lease or the worker lock");
	}
	if (settle_held(b, now_ms))
		return 1;
	restored_settled(b, now_ms);
	return 0;
}
