/*
 * gh_budget.c - the GitHub client's content budget beyond one process and
 * one credential set: each mutating request told to gh_options.note_spend
 * before it is sent, the budget restored from what was told before
 * (gh_budget_restore()), and carried over when a reload hands over new
 * credentials.  The windows themselves are gh.c's (gh_pace()).  Part of the
 * GitHub client; the parts share gh_int.h.
 */
#include "gh_int.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/xalloc.h"
#include "core/banned.h"

#define MINUTE_MS 60000

int64_t gh_budget_span_ms(const struct gh_client *c)
{
	return 60 * (c->window_ms > 0 ? c->window_ms : MINUTE_MS);
}

enum err gh_budget_spend(struct gh_client *c, const struct gh_cred *cred, int64_t sent_ms,
			 const struct call *k, int attempt, struct buf *errmsg)
{
	struct buf why = BUF_INIT;

	if (!c->note_spend || c->note_spend(c->clock_ctx, cred ? cred->owner : NULL, sent_ms,
					    &why) == ERR_OK) {
		buf_release(&why);
		return ERR_OK;
	}
	if (attempt > 1)
		(void)buf_adds(errmsg, "; ");
	else
		buf_reset(errmsg);
	(void)buf_printf(errmsg, "%s %s: not sent: its time could not be recorded: %s",
			 k->method, k->path, buf_str(&why));
	buf_release(&why);
	return ERR_RETRY;
}

/* NULL and "" are the default credential; owners compare ignoring case, as GitHub's. */
static int same_owner(const char *a, const char *b)
{
	return !strcasecmp(a ? a : "", b ? b : "");
}

/* Forget what w counted. */
static void window_clear(struct window *w)
{
	w->len = 0;
	w->pos = 0;
}

/* Note what from counted in to, oldest first (to is empty or older). */
static void window_copy(const struct window *from, struct window *to)
{
	int oldest = from->len < from->cap ? 0 : from->pos;

	for (int i = 0; i < from->len; i++)
		gh_window_note(to, from->t[(oldest + i) % from->cap]);
}

void gh_budget_carry(const struct gh_creds *from, struct gh_creds *to)
{
	for (size_t i = 0; from && i < to->n; i++) {
		struct gh_budget *b = &to->v[i].budget;

		for (size_t j = 0; j < from->n; j++) {
			const struct gh_budget *old = &from->v[j].budget;

			if (!same_owner(from->v[j].owner, to->v[i].owner))
				continue;
			window_clear(&b->minute);
			window_clear(&b->hour);
			window_copy(&old->minute, &b->minute);
			window_copy(&old->hour, &b->hour);
			b->last_mutation_ms = old->last_mutation_ms;
			break;
		}
	}
}

static int by_time(const void *a, const void *b)
{
	int64_t x = (*(const struct gh_spent *const *)a)->sent_ms;
	int64_t y = (*(const struct gh_spent *const *)b)->sent_ms;

	return (x > y) - (x < y);
}

void gh_budget_restore(struct gh_client *c, const struct gh_spent *v, size_t n)
{
	const struct gh_spent **sorted = xcalloc(n ? n : 1, sizeof(*sorted));

	/* The windows are rings of the newest times: note them in order. */
	for (size_t i = 0; i < n; i++)
		sorted[i] = &v[i];
	qsort(sorted, n, sizeof(*sorted), by_time);
	for (size_t i = 0; i < c->creds->n; i++) {
		struct gh_cred *cr = &c->creds->v[i];

		window_clear(&cr->budget.minute);
		window_clear(&cr->budget.hour);
		for (size_t j = 0; j < n; j++) {
			if (!same_owner(sorted[j]->owner, cr->owner))
				continue;
			gh_window_note(&cr->budget.minute, sorted[j]->sent_ms);
			gh_window_note(&cr->budget.hour, sorted[j]->sent_ms);
			if (sorted[j]->sent_ms > cr->budget.last_mutation_ms)
				cr->budget.last_mutation_ms = sorted[j]->sent_ms;
		}
	}
	free(sorted);
}
