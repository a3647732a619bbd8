/*
 * janitor_digest.c - one Slack message per owner, not per pod: the notices
 * of one owner due together (a sweep's, or a burst of alerts within
 * janitor.notice_batch_window) go out as a digest listing the pods, and the
 * replies due together in one thread (a sweep's deletions) as one reply.
 * A digest longer than Slack allows is split into parts of at most
 * JANITOR_DIGEST_MAX_PODS pods and 40,000 bytes; each part is its own
 * thread, and what happens to a pod later is replied under its part.
 *
 * The parts and their members are written to the outbox in one transaction
 * before the first is posted (store_digest_add()); a member is sent only with
 * its part, so the notice lead of every pod counts from the delivered part,
 * and a pod whose part was not delivered is never acted on.
 */
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/xalloc.h"
#include "store/store_digest.h"
#include "store/store_outbox.h"
#include "janitor/janitor_int.h"
#include "core/banned.h"

/* Pending notices read per digest; more wait for the next one. */
#define BATCH_MAX 1000
/* Slack's limit of a message's text (bytes here: never more characters). */
#define TEXT_MAX_BYTES 40000

static int same_channel(const char *a, const char *b)
{
	if (!a || !*a)
		return !b || !*b;
	return b && !strcmp(a, b);
}

static int is_notice(const struct store_notice *n)
{
	return !strcmp(n->kind, "notice") && !n->thread_ts;
}

/*
 * Render the part of the k members m[0..k) into out: the digest table of
 * notices, or the replies one after the other.  ERR_TOOBIG past Slack's limit.
 */
static enum err render_part(struct janitor *j, const struct store_notice *m, size_t k, int part,
			    int parts, size_t total, int64_t now_ms, struct buf *out,
			    struct buf *err)
{
	const char **lines;
	enum err rc = ERR_OK;

	buf_reset(out);
	if (!is_notice(m)) {
		for (size_t i = 0; i < k && rc == ERR_OK; i++) {
			if (i)
				rc = buf_adds(out, "\n");
			if (rc == ERR_OK)
				rc = buf_adds(out, m[i].text);
		}
		if (rc == ERR_OK && out->len > TEXT_MAX_BYTES)
			rc = ERR_TOOBIG;
		return rc;
	}
	lines = xcalloc(k, sizeof(*lines));
	for (size_t i = 0; i < k; i++)
		lines[i] = m[i].line;
	rc = janitor_render_digest(j, lines, k, part, parts, total, now_ms, out, err);
	free(lines);
	return rc;
}

/*
 * Split m[0..n) into parts of at most JANITOR_DIGEST_MAX_PODS members whose
 * text fits Slack's limit; sizes[] gets each part's members.  Returns the
 * number of parts.  A member too long even alone is a part of its own.
 */
static size_t split(struct janitor *j, const struct store_notice *m, size_t n, int64_t now_ms,
		    size_t *sizes)
{
	struct buf text = BUF_INIT, err = BUF_INIT;
	size_t parts = 0;

	for (size_t i = 0; i < n;) {
		size_t k = n - i < JANITOR_DIGEST_MAX_PODS ? n - i : JANITOR_DIGEST_MAX_PODS;

		/* n is the largest part number there can be: the final text is no longer. */
		while (k > 1 && render_part(j, m + i, k, (int)n, (int)n, n, now_ms, &text, &err))
			k--;
		sizes[parts++] = k;
		i += k;
	}
	buf_release(&text);
	buf_release(&err);
	return parts;
}

/* Keep in m[0..*n) the members that may go with head (m[0] is head); returns how many. */
static size_t members(struct janitor *j, const struct store_notice *head, struct store_notice *m,
		      size_t n)
{
	const char *ch = janitor_namespace_channel(j, head->namespace);
	size_t kept = 0;

	for (size_t i = 0; i < n; i++) {
		int ok = !is_notice(head) ||
			 (m[i].line && same_channel(janitor_namespace_channel(j, m[i].namespace), ch));

		if (!ok) {
			store_notice_release(&m[i]);
			continue;
		}
		if (kept != i)
			m[kept] = m[i];
		kept++;
	}
	return kept;
}

/* Render the parts (sizes[0..parts)) of m and add them with their members. */
static int add_parts(struct janitor *j, const struct store_notice *m, size_t n,
		     const size_t *sizes, size_t parts, const char *channel, int64_t now_ms)
{
	struct store_digest *d = xcalloc(parts, sizeof(*d));
	struct buf *texts = xcalloc(parts, sizeof(*texts));
	int64_t *ids = xcalloc(n, sizeof(*ids));
	size_t *first = xcalloc(parts + 1, sizeof(*first));
	struct buf err = BUF_INIT;
	struct log_line *l;
	enum err rc = ERR_OK;
	int r = 1;

	for (size_t i = 0; i < n; i++)
		ids[i] = m[i].id;
	for (size_t p = 0; p < parts && rc == ERR_OK; p++) {
		first[p + 1] = first[p] + sizes[p];
		buf_init(&texts[p], 0);
		rc = render_part(j, m + first[p], sizes[p], (int)p + 1, (int)parts, n, now_ms,
				 &texts[p], &err);
		if (rc && sizes[p] == 1) {  /* too long even alone: its own text */
			buf_reset(&texts[p]);
			rc = buf_adds(&texts[p], m[first[p]].text) ? ERR_TOOBIG : ERR_OK;
		}
		d[p].kind = m[0].kind;
		d[p].channel = channel;
		d[p].thread_ts = m[0].thread_ts;
		d[p].part = (int)p + 1;
		d[p].parts = (int)parts;
		d[p].text = buf_str(&texts[p]);
		d[p].created_at_ms = now_ms;
	}
	if (rc == ERR_OK)
		rc = store_digest_add(j->opts.store, d, parts, ids, first, &err);
	l = log_begin(rc ? LOG_ERROR : LOG_INFO, rc ? "cannot queue a slack digest"
						    : "slack digest queued");
	if (rc)
		log_err(l, rc);
	log_str(l, "kind", m[0].kind);
	log_str(l, "channel", channel);
	log_int(l, "pods", (int64_t)n);
	log_int(l, "parts", (int64_t)parts);
	log_int(l, "first_digest", d[0].id);
	if (rc)
		log_str(l, "error", buf_str(&err));
	log_end(l);
	/* A text that cannot be rendered: the notices go alone, as they did before digests. */
	if (rc == ERR_DB)
		r = -1;
	else if (rc)
		r = 0;
	for (size_t p = 0; p < parts; p++)
		buf_release(&texts[p]);
	free(texts);
	free(d);
	free(ids);
	free(first);
	buf_release(&err);
	return r;
}

int janitor_digest_form(struct janitor *j, const struct store_notice *head, const char *channel)
{
	int64_t now = janitor_now(j);
	int64_t due_by = now + (is_notice(head) ? j->cfg->notice_batch_window_ms : 0);
	struct store_notice *m = NULL;
	size_t n = 0, parts, *sizes;
	int r;

	if (is_notice(head) && !head->line)
		return 0;  /* queued before digests: it goes alone */
	if (store_notice_batch(j->opts.store, head, due_by, BATCH_MAX, &m, &n))
		return -1;
	/* head first: the batch is oldest first and head is the oldest due */
	if (!n || m[0].id != head->id) {
		store_notices_free(m, n);
		return 0;
	}
	n = members(j, head, m, n);
	if (n < 2) {
		store_notices_free(m, n);
		return 0;
	}
	sizes = xcalloc(n, sizeof(*sizes));
	parts = split(j, m, n, now, sizes);
	r = add_parts(j, m, n, sizes, parts, channel, now);
	free(sizes);
	store_notices_free(m, n);
	return r;
}

/* After a notice digest was delivered: stamp each member's pod janitor/notified-at. */
static void stamp_members(struct janitor *j, int64_t id, int64_t sent_at_ms)
{
	struct store_notice *m = NULL;
	size_t n = 0;

	if (store_digest_members(j->opts.store, id, &m, &n))
		return;  /* logged; the sweeper stamps from the outbox */
	for (size_t i = 0; i < n; i++)
		if (m[i].state == STORE_NOTICE_SENT)
			janitor_stamp_notified(j, m[i].namespace, m[i].pod, m[i].uid, sent_at_ms);
	store_notices_free(m, n);
}

int janitor_digest_step(struct janitor *j)
{
	struct store_digest d = { 0 };
	struct store_notice *m = NULL;
	struct slack_posted posted;
	struct buf err = BUF_INIT;
	struct jmsg msg = { 0 };
	char *blocks;
	size_t n = 0;
	int64_t now;
	enum err rc;

	rc = store_digest_next(j->opts.store, janitor_now(j), &d);
	if (rc == ERR_NOTFOUND)
		return 0;
	if (rc || store_digest_members(j->opts.store, d.id, &m, &n)) {
		store_digest_release(&d);
		return -1;
	}
	msg.id = d.id;
	msg.digest = 1;
	msg.kind = d.kind;
	msg.namespace = n ? m[0].namespace : NULL;
	msg.pod = n ? m[0].pod : NULL;
	msg.attempts = d.attempts;
	msg.thread_ts = d.thread_ts;
	msg.pods = n;
	blocks = d.thread_ts ? NULL : janitor_keep_blocks(j, d.text, m, n);
	rc = slack_post_blocks(j->opts.slack, d.channel, d.text, blocks, d.thread_ts, &posted,
			       &err);
	free(blocks);
	now = janitor_now(j);
	if (rc == ERR_OK) {
		if (store_digest_sent(j->opts.store, d.id, now, posted.channel, posted.ts)) {
			/* Slack has it; without the record a retry would post it twice. */
			log_msg(LOG_ERROR, "cannot record a delivered slack digest", "channel",
				d.channel);
		} else {
			janitor_log_sent(j, &msg, d.channel, &posted);
			if (!strcmp(d.kind, "notice") && !d.thread_ts)
				stamp_members(j, d.id, now);
		}
	} else {
		janitor_post_failed(j, &msg, d.channel, rc, buf_str(&err));
	}
	store_notices_free(m, n);
	store_digest_release(&d);
	buf_release(&err);
	return 1;
}
