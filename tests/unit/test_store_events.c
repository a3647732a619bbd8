/*
 * test_store_events.c - the event inbox (core/store_events.c): FIFO, kinds,
 * retry, dead letters, per-key order, pruning.  Repeats are
 * test_store_events_repeats.c's, commits and waits test_store_events_commit.c's.
 * Each test gets a fresh store on the engine of AB_TEST_STORE (store_fixture.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include <sys/stat.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "tests/unit/helpers/clock.h"
#include "tests/unit/helpers/store_fixture.h"

/* ---- the inbox ---- */

static void enqueue_next_done_round_trip(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event evs[2] = { sfx_mkev("bridge", "default", "k1", "firing"),
				      sfx_mkev("bridge", "default", "k2", "resolved") };
	struct store_event got;
	struct buf msg = BUF_INIT;
	char payload[] = "{\"x\":1}";

	evs[1].ends_at_ms = 1700000009000;
	evs[1].payload = payload;
	assert_int_equal(store_enqueue(st, evs, 2, &msg), ERR_OK);
	payload[0] = 'X'; /* the store kept its own copy */
	assert_true(evs[0].id > 0);
	assert_true(evs[1].id > evs[0].id);
	assert_int_equal(store_pending_count(st, "bridge"), 2);

	assert_int_equal(store_next_event(st, "bridge", clock_wall_ms(), &got), ERR_OK);
	assert_int_equal(got.id, evs[0].id);
	assert_string_equal(got.kind, "bridge");
	assert_string_equal(got.receiver, "default");
	assert_string_equal(got.key, "k1");
	assert_string_equal(got.status, "firing");
	assert_int_equal(got.starts_at_ms, 1700000000000);
	assert_int_equal(got.ends_at_ms, 0);
	assert_string_equal(got.payload, "{\"alertname\":\"GPUIdle\"}");
	assert_int_equal(got.received_at_ms, 1700000001000);
	assert_int_equal(got.attempts, 0);
	assert_null(got.last_error);
	store_event_release(&got);
	store_event_release(&got); /* released fields are NULL: safe twice */
	store_event_release(NULL);

	assert_int_equal(store_event_done(st, evs[0].id, NULL, &msg), ERR_OK);
	assert_int_equal(store_next_event(st, "bridge", clock_wall_ms(), &got), ERR_OK);
	assert_int_equal(got.id, evs[1].id);
	assert_string_equal(got.status, "resolved");
	assert_int_equal(got.ends_at_ms, 1700000009000);
	assert_string_equal(got.payload, "{\"x\":1}");
	store_event_release(&got);
	assert_int_equal(store_pending_count(st, "bridge"), 1);

	/* Done twice, or an unknown id. */
	assert_int_equal(store_event_done(st, evs[0].id, NULL, &msg), ERR_CONFLICT);
	sfx_assert_contains(buf_str(&msg), "is already done");
	assert_int_equal(store_event_done(st, 9999, NULL, &msg), ERR_NOTFOUND);
	sfx_assert_contains(buf_str(&msg), "event 9999 does not exist");
	assert_int_equal(store_enqueue(st, NULL, 0, &msg), ERR_OK);
	buf_release(&msg);
}

/* The age of the queue: the oldest pending event's receipt, kept while it waits for retries. */
static void oldest_pending_is_the_first_received(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event evs[3] = { sfx_mkev("bridge", "default", "k1", "firing"),
				      sfx_mkev("bridge", "default", "k2", "firing"),
				      sfx_mkev("janitor", "default", "k3", "firing") };
	struct store_event got;
	struct buf msg = BUF_INIT;

	assert_int_equal(store_oldest_pending_ms(st, "bridge"), INT64_MAX);
	evs[0].received_at_ms = 1700000010000;
	evs[1].received_at_ms = 1700000020000;
	evs[2].received_at_ms = 1700000005000;
	assert_int_equal(store_enqueue(st, evs, 3, &msg), ERR_OK);
	assert_int_equal(store_oldest_pending_ms(st, "bridge"), 1700000010000);
	assert_int_equal(store_oldest_pending_ms(st, "janitor"), 1700000005000);
	/* A retry keeps the receipt time: the event is as old as when it came. */
	assert_int_equal(store_event_retry(st, evs[0].id, clock_wall_ms() + 60000, "GitHub down"),
			 ERR_OK);
	assert_int_equal(store_oldest_pending_ms(st, "bridge"), 1700000010000);
	assert_int_equal(store_event_dead(st, evs[0].id, "invalid"), ERR_OK);
	assert_int_equal(store_oldest_pending_ms(st, "bridge"), 1700000020000);
	assert_int_equal(store_next_event(st, "bridge", clock_wall_ms(), &got), ERR_OK);
	assert_int_equal(store_event_done(st, got.id, NULL, &msg), ERR_OK);
	store_event_release(&got);
	assert_int_equal(store_oldest_pending_ms(st, "bridge"), INT64_MAX);
	assert_int_equal(store_oldest_pending_ms(st, ""), -1);
	assert_int_equal(store_oldest_pending_ms(NULL, "bridge"), -1);
	buf_release(&msg);
}

static void fifo_within_kind_and_kinds_apart(void **state)
{
	struct store *st = sfx_store(state);
	int64_t b[5], j[3];
	const char *keys[] = { "k0", "k1", "k2", "k3", "k4" };

	for (int i = 0; i < 5; i++) {
		b[i] = sfx_enq1(st, "bridge", keys[i]);
		if (i < 3)
			j[i] = sfx_enq1(st, "janitor", keys[i]);
	}
	assert_int_equal(store_pending_count(st, "bridge"), 5);
	assert_int_equal(store_pending_count(st, "janitor"), 3);
	assert_int_equal(store_pending_count(st, "other"), 0);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(sfx_next_id(st, "janitor", 0), j[i]);
		assert_int_equal(store_event_done(st, j[i], NULL, NULL), ERR_OK);
	}
	assert_int_equal(sfx_next_id(st, "janitor", 0), 0);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(sfx_next_id(st, "bridge", 0), b[i]);
		assert_int_equal(store_event_done(st, b[i], NULL, NULL), ERR_OK);
	}
	assert_int_equal(sfx_next_id(st, "bridge", 0), 0);
}

static void retry_waits_for_next_attempt(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event got;
	int64_t a = sfx_enq1(st, "bridge", "ka");
	int64_t b = sfx_enq1(st, "bridge", "kb");
	const int64_t t = 1800000000000;

	assert_int_equal(store_event_retry(st, a, t + 5000, "github: 502 bad gateway"), ERR_OK);
	/* a is not due: b (another key) goes first. */
	assert_int_equal(sfx_next_id(st, "bridge", t), b);
	assert_int_equal(store_event_done(st, b, NULL, NULL), ERR_OK);
	assert_int_equal(sfx_next_id(st, "bridge", t + 4999), 0);
	assert_int_equal(store_next_event(st, "bridge", t + 5000, &got), ERR_OK);
	assert_int_equal(got.id, a);
	assert_int_equal(got.attempts, 1);
	assert_string_equal(got.last_error, "github: 502 bad gateway");
	store_event_release(&got);

	assert_int_equal(store_event_retry(st, a, t + 9000, NULL), ERR_OK);
	assert_int_equal(store_next_event(st, "bridge", t + 9000, &got), ERR_OK);
	assert_int_equal(got.attempts, 2);
	assert_null(got.last_error);
	store_event_release(&got);

	assert_int_equal(store_event_retry(st, b, t, "x"), ERR_CONFLICT);
	assert_int_equal(store_event_retry(st, 4242, t, "x"), ERR_NOTFOUND);
}

static void progress_note_survives_retry(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event got;
	int64_t a = sfx_enq1(st, "bridge", "ka");
	const int64_t t = 1800000000000;

	assert_int_equal(store_next_event(st, "bridge", t, &got), ERR_OK);
	assert_null(got.progress);
	store_event_release(&got);
	assert_int_equal(store_event_progress(st, a, "close:1"), ERR_OK);
	assert_int_equal(store_event_retry(st, a, t, "github: 502"), ERR_OK);
	assert_int_equal(store_next_event(st, "bridge", t, &got), ERR_OK);
	assert_string_equal(got.progress, "close:1");
	store_event_release(&got);
	assert_int_equal(store_event_progress(st, a, ""), ERR_INVALID);
	assert_int_equal(store_event_progress(st, 4242, "x:1"), ERR_NOTFOUND);
	assert_int_equal(store_event_done(st, a, NULL, NULL), ERR_OK);
	assert_int_equal(store_event_progress(st, a, "close:2"), ERR_CONFLICT);
}

static void later_event_of_same_key_waits_for_older(void **state)
{
	struct store *st = sfx_store(state);
	int64_t firing = sfx_enq1(st, "bridge", "k");
	int64_t resolved = sfx_enq1(st, "bridge", "k");
	int64_t other = sfx_enq1(st, "bridge", "other");
	int64_t janitor = sfx_enq1(st, "janitor", "k");
	const int64_t t = 1800000000000;

	assert_int_equal(store_event_retry(st, firing, t + 1000, "timeout"), ERR_OK);
	/* resolved for k must not overtake firing for k; other keys and kinds go on. */
	assert_int_equal(sfx_next_id(st, "bridge", t), other);
	assert_int_equal(store_event_done(st, other, NULL, NULL), ERR_OK);
	assert_int_equal(sfx_next_id(st, "bridge", t), 0);
	assert_int_equal(sfx_next_id(st, "janitor", t), janitor);
	assert_int_equal(sfx_next_id(st, "bridge", t + 1000), firing);
	assert_int_equal(store_event_done(st, firing, NULL, NULL), ERR_OK);
	assert_int_equal(sfx_next_id(st, "bridge", t), resolved);
	/* A dead-lettered head no longer holds its key back. */
	int64_t again = sfx_enq1(st, "bridge", "k");
	assert_int_equal(store_event_dead(st, resolved, "bad payload"), ERR_OK);
	assert_int_equal(sfx_next_id(st, "bridge", t), again);
}

static void dead_letter_marks_event_and_row(void **state)
{
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("default", "kd", 7), got;
	int64_t id = sfx_enq1(st, "bridge", "kd");
	int64_t id2 = sfx_enq1(st, "bridge", "no-row");
	struct buf msg = BUF_INIT;

	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_dead_count(st), 0);
	assert_int_equal(store_event_dead(st, id, ""), ERR_INVALID);
	assert_int_equal(store_event_dead(st, id, NULL), ERR_INVALID);
	assert_int_equal(store_event_dead(st, id, "github: 422 validation failed"), ERR_OK);
	assert_int_equal(store_event_dead(st, id2, "github: 404 repo not found"), ERR_OK);
	assert_int_equal(store_dead_count(st), 2);
	assert_int_equal(store_pending_count(st, "bridge"), 0);
	assert_int_equal(sfx_next_id(st, "bridge", INT64_MAX), 0);
	assert_int_equal(store_issue_get(st, "default", "kd", &got), ERR_OK);
	assert_string_equal(got.dead_reason, "github: 422 validation failed");
	store_issue_release(&got);
	assert_int_equal(store_issue_get(st, "default", "no-row", &got), ERR_NOTFOUND);

	assert_int_equal(store_event_dead(st, id, "again"), ERR_CONFLICT);
	assert_int_equal(store_event_dead(st, 777, "x"), ERR_NOTFOUND);
	assert_int_equal(store_event_retry(st, id, 0, "x"), ERR_CONFLICT);
	assert_int_equal(store_event_done(st, id, NULL, &msg), ERR_CONFLICT);
	sfx_assert_contains(buf_str(&msg), "is already dead");
	buf_release(&msg);
}

/* Dead letters re-queued by key or by reason; the rest stay dead; order is kept. */
static void dead_letters_are_requeued_by_filter(void **state)
{
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("default", "a", 7), got;
	int64_t a1 = sfx_enq1(st, "bridge", "a"), b = sfx_enq1(st, "bridge", "b");
	int64_t c = sfx_enq1(st, "bridge", "c"), j = sfx_enq1(st, "janitor", "a"), n = -1;
	struct store_event ev;

	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_event_progress(st, a1, "create@1700000000000"), ERR_OK);
	assert_int_equal(store_event_dead(st, a1, "repository o/x not found or no access"),
			 ERR_OK);
	assert_int_equal(store_event_dead(st, b, "repository o/y not found or no access"), ERR_OK);
	assert_int_equal(store_event_dead(st, c, "422 validation failed"), ERR_OK);
	assert_int_equal(store_event_dead(st, j, "repository o/x not found or no access"), ERR_OK);
	int64_t a2 = sfx_enq1(st, "bridge", "a");  /* a newer event of a, pending */

	assert_int_equal(store_dead_requeue(st, "bridge", "default", "zz", NULL, &n), ERR_OK);
	assert_int_equal(n, 0);
	assert_int_equal(store_dead_requeue(st, "bridge", "default", "a", NULL, &n), ERR_OK);
	assert_int_equal(n, 1);
	assert_int_equal(store_dead_count(st), 3);
	assert_int_equal(store_issue_get(st, "default", "a", &got), ERR_OK);
	assert_null(got.dead_reason);
	store_issue_release(&got);
	/* the re-queued one goes first (id order), with its note and the old reason */
	assert_int_equal(store_next_event(st, "bridge", INT64_MAX, &ev), ERR_OK);
	assert_int_equal(ev.id, a1);
	assert_int_equal(ev.attempts, 0);
	assert_string_equal(ev.progress, "create@1700000000000");
	assert_string_equal(ev.last_error,
			    STORE_REQUEUED "repository o/x not found or no access");
	store_event_release(&ev);
	assert_int_equal(store_event_done(st, a1, NULL, NULL), ERR_OK);
	assert_int_equal(sfx_next_id(st, "bridge", INT64_MAX), a2);

	/* by reason, every receiver and key of the kind; the janitor's stays */
	assert_int_equal(store_dead_requeue(st, "bridge", NULL, NULL,
					    "repository % not found or no access", &n), ERR_OK);
	assert_int_equal(n, 1);
	assert_int_equal(store_dead_count(st), 2);  /* c (422) and the janitor's */
	assert_int_equal(store_pending_count(st, "bridge"), 2);
	assert_int_equal(store_dead_requeue(st, "", NULL, NULL, NULL, &n), ERR_INVALID);
	assert_int_equal(store_dead_requeue(NULL, "bridge", NULL, NULL, NULL, &n), ERR_INVALID);
}

static int dead_fn(void *ctx, const struct store_event *ev)
{
	struct buf *out = ctx;
	(void)buf_printf(out, "%s/%s:%s;", ev->receiver, ev->key, ev->last_error);
	return 0;
}

/*
 * An event with dead_reason is enqueued already dead-lettered, in the same
 * commit as the pending ones beside it: never handed to a worker, listed and
 * counted as a dead letter, its map row marked.
 */
static void enqueue_dead_letters_invalid_events(void **state)
{
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("default", "kd", 7), got;
	struct store_event evs[3] = { sfx_mkev("bridge", "default", "k0", "firing"),
				      sfx_mkev("bridge", "default", "k1", "firing"),
				      sfx_mkev("bridge", "default", "kd", "resolved") };
	struct store_event ev;
	struct buf out = BUF_INIT, msg = BUF_INIT;

	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	evs[1].dead_reason = (char *)"invalid alert: alerts[1].startsAt: missing";
	evs[2].dead_reason = (char *)"invalid alert: alerts[2].labels.alertbridge_repo: bad";
	if (store_enqueue(st, evs, 3, &msg) != ERR_OK)
		fail_msg("enqueue: %s", buf_str(&msg));
	assert_true(evs[1].id > evs[0].id && evs[2].id > evs[1].id);
	assert_int_equal(store_pending_count(st, "bridge"), 1);
	assert_int_equal(store_dead_count(st), 2);
	memset(&ev, 0, sizeof(ev));
	assert_int_equal(store_next_event(st, "bridge", INT64_MAX, &ev), ERR_OK);
	assert_string_equal(ev.key, "k0");
	assert_null(ev.dead_reason);
	store_event_release(&ev);
	assert_int_equal(store_dead_unmapped(st, "bridge", 10, dead_fn, &out), ERR_OK);
	assert_string_equal(buf_str(&out), "default/k1:invalid alert: alerts[1].startsAt: missing;");
	assert_int_equal(store_issue_get(st, "default", "kd", &got), ERR_OK);
	assert_string_equal(got.dead_reason, "invalid alert: alerts[2].labels.alertbridge_repo: bad");
	store_issue_release(&got);
	assert_int_equal(store_event_done(st, evs[1].id, NULL, &msg), ERR_CONFLICT);
	/* An empty reason is no reason: the event is pending. */
	evs[0].dead_reason = (char *)"";
	assert_int_equal(store_enqueue(st, evs, 1, &msg), ERR_OK);
	assert_int_equal(store_pending_count(st, "bridge"), 2);
	buf_release(&out);
	buf_release(&msg);
}

/*
 * Alertmanager re-sends a notification every repeat_interval: a dead letter
 * that repeats an older one (same alert state and reason) replaces it, so
 * dead letters do not pile up; another state or reason is another letter.
 */
static void repeated_dead_letters_are_one(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event ev = sfx_mkev("bridge", "default", "kr", "firing");
	struct buf out = BUF_INIT, msg = BUF_INIT;
	int64_t last = 0;

	ev.dead_reason = (char *)"invalid alert: alerts[0].labels.alertbridge_repo: bad";
	for (int i = 0; i < 5; i++) {  /* the same bad alert, five repeats */
		ev.id = 0;
		if (store_enqueue(st, &ev, 1, &msg) != ERR_OK)
			fail_msg("enqueue: %s", buf_str(&msg));
		last = ev.id;
	}
	assert_int_equal(store_dead_count(st), 1);
	/* The worker's dead letters too: the same firing, dead for the same reason. */
	ev.dead_reason = NULL;
	ev.key = (char *)"kw";
	for (int i = 0; i < 3; i++) {
		ev.id = 0;
		assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
		assert_int_equal(store_event_dead(st, ev.id, "repository o/r not found"), ERR_OK);
	}
	assert_int_equal(store_dead_count(st), 2);
	/* Another reason, or another episode, is another dead letter. */
	ev.id = 0;
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_int_equal(store_event_dead(st, ev.id, "github: 422 validation failed"), ERR_OK);
	ev.id = 0;
	ev.starts_at_ms += 1000;
	assert_int_equal(store_enqueue(st, &ev, 1, &msg), ERR_OK);
	assert_int_equal(store_event_dead(st, ev.id, "github: 422 validation failed"), ERR_OK);
	assert_int_equal(store_dead_count(st), 4);
	/* The newest copy is the one kept. */
	assert_int_equal(store_dead_unmapped(st, "bridge", 10, dead_fn, &out), ERR_OK);
	sfx_assert_contains(buf_str(&out), "default/kr:invalid alert");
	assert_int_equal(store_event_done(st, last, NULL, &msg), ERR_CONFLICT);
	sfx_assert_contains(buf_str(&msg), "is already dead");
	buf_release(&out);
	buf_release(&msg);
}

static void repo_scans_and_unmapped_dead_letters(void **state)
{
	struct store *st = sfx_store(state);
	struct store_issue row = sfx_mkrow("default", "kd", 7);
	struct buf out = BUF_INIT;
	int64_t t = 0;

	assert_int_equal(store_scan_get(st, "default", "o/r", &t), ERR_NOTFOUND);
	assert_int_equal(store_scan_done(st, "default", "o/r", 1700000000000), ERR_OK);
	assert_int_equal(store_scan_get(st, "default", "o/r", &t), ERR_OK);
	assert_int_equal(t, 1700000000000);
	assert_int_equal(store_scan_get(st, "other", "o/r", NULL), ERR_NOTFOUND);
	assert_int_equal(store_scan_done(st, "default", "o/r", 1700000005000), ERR_OK);
	assert_int_equal(store_scan_get(st, "default", "o/r", &t), ERR_OK);
	assert_int_equal(t, 1700000005000);
	assert_int_equal(store_scan_get(st, "", "o/r", &t), ERR_INVALID);
	assert_int_equal(store_scan_done(st, "default", NULL, 1), ERR_INVALID);
	/* map rescan: forgetting one receiver's scans keeps the others' */
	assert_int_equal(store_scan_done(st, "other", "o/r", 1700000006000), ERR_OK);
	assert_int_equal(store_scan_done(st, "other", "o/s", 1700000006000), ERR_OK);
	assert_int_equal(store_scan_forget(st, "default", &t), ERR_OK);
	assert_int_equal(t, 1);
	assert_int_equal(store_scan_get(st, "default", "o/r", NULL), ERR_NOTFOUND);
	assert_int_equal(store_scan_get(st, "other", "o/r", NULL), ERR_OK);
	assert_int_equal(store_scan_forget(st, NULL, &t), ERR_OK);
	assert_int_equal(t, 2);
	assert_int_equal(store_scan_get(st, "other", "o/s", NULL), ERR_NOTFOUND);
	assert_int_equal(store_scan_forget(st, "", NULL), ERR_INVALID);

	assert_int_equal(store_issue_put(st, &row), ERR_OK);
	assert_int_equal(store_event_dead(st, sfx_enq1(st, "bridge", "kd"), "mapped"), ERR_OK);
	assert_int_equal(store_event_dead(st, sfx_enq1(st, "bridge", "k1"), "422 one"), ERR_OK);
	(void)sfx_enq1(st, "bridge", "k2"); /* pending: not listed */
	assert_int_equal(store_event_dead(st, sfx_enq1(st, "janitor", "k3"), "other kind"), ERR_OK);
	assert_int_equal(store_dead_unmapped(st, "bridge", 10, dead_fn, &out), ERR_OK);
	assert_string_equal(buf_str(&out), "default/k1:422 one;");
	assert_int_equal(store_dead_unmapped(st, "bridge", 0, dead_fn, &out), ERR_INVALID);
	buf_release(&out);
}

static void prune_drops_old_done_events_only(void **state)
{
	struct store *st = sfx_store(state);
	int64_t a = sfx_enq1(st, "bridge", "a"), b = sfx_enq1(st, "bridge", "b");
	int64_t deleted = -1;

	sfx_enq1(st, "bridge", "c");
	assert_int_equal(store_event_done(st, a, NULL, NULL), ERR_OK);
	assert_int_equal(store_event_dead(st, b, "x"), ERR_OK);
	assert_int_equal(store_prune_done(st, clock_wall_ms() - 60000, &deleted), ERR_OK);
	assert_int_equal(deleted, 0);
	assert_int_equal(store_prune_done(st, clock_wall_ms() + 1000, &deleted), ERR_OK);
	assert_int_equal(deleted, 1);
	assert_int_equal(store_dead_count(st), 1);
	assert_int_equal(store_pending_count(st, "bridge"), 1);
	assert_int_equal(store_event_done(st, a, NULL, NULL), ERR_NOTFOUND);
}

/* Bytes of the database file and its WAL. */
static int64_t db_bytes(const char *path)
{
	char wal[200];
	struct stat sb;
	int64_t n = 0;

	if (stat(path, &sb) == 0)
		n += (int64_t)sb.st_size;
	snprintf(wal, sizeof(wal), "%s-wal", path);
	if (stat(wal, &sb) == 0)
		n += (int64_t)sb.st_size;
	return n;
}

/* n firing events of 2 KiB payload each, in one commit, then all marked done at done_ms. */
static void add_done_events(const char *path, struct store *st, int n, int64_t done_ms)
{
	static char payload[2048];
	struct store_event *evs = calloc((size_t)n, sizeof(*evs));
	struct buf msg = BUF_INIT;
	char sql[160], (*keys)[24] = calloc((size_t)n, sizeof(*keys));

	memset(payload, 'x', sizeof(payload) - 1);
	payload[0] = '"';
	payload[sizeof(payload) - 2] = '"';
	for (int i = 0; i < n; i++) {
		snprintf(keys[i], sizeof(keys[i]), "k%d", i);
		evs[i] = sfx_mkev("bridge", "default", keys[i], "firing");
		evs[i].payload = payload;
	}
	if (store_enqueue(st, evs, (size_t)n, &msg) != ERR_OK)
		fail_msg("enqueue: %s", buf_str(&msg));
	snprintf(sql, sizeof(sql), "UPDATE events SET state = 'done', done_at_ms = %lld "
		 "WHERE state = 'pending' AND key LIKE 'k%%'", (long long)done_ms);
	sfx_sql_exec(path, sql);
	buf_release(&msg);
	free(keys);
	free(evs);
}

/*
 * Retention: repeated rounds of many done events pruned leave the file the
 * size of what is live (incremental vacuum after the prune), dead letters
 * and pending events stay, and a database made before incremental vacuum
 * is switched on open.  On PostgreSQL the rows only (space is autovacuum's).
 */
static void prune_keeps_the_file_small_and_dead_letters(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	int64_t dead = sfx_enq1(st, "bridge", "dead");
	int64_t deleted = 0, empty_bytes, first = 0;

	assert_true(sfx_enq1(st, "janitor", "pending") > 0);

	if (!f->postgres)
		assert_int_equal(sfx_sql_int(f->path, "PRAGMA auto_vacuum"), 2);  /* incremental */
	assert_int_equal(store_event_dead(st, dead, "repository o/r not found or no access"),
			 ERR_OK);
	empty_bytes = db_bytes(f->path);
	for (int round = 0; round < 4; round++) {
		int64_t full;
		add_done_events(f->path, st, 2000, clock_wall_ms() - 10000);
		full = db_bytes(f->path);  /* 0 on PostgreSQL: no file */
		assert_true(f->postgres || full > 2000 * 2048);
		assert_int_equal(store_prune_done(st, clock_wall_ms() - 5000, &deleted), ERR_OK);
		assert_int_equal(deleted, 2000);
		assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events"), 2);
		if (f->postgres)
			continue;  /* the file's bytes are sqlite's; PostgreSQL's autovacuum's */
		/* the pages of the deleted rows go back to the file system */
		if (db_bytes(f->path) > full / 4)
			fail_msg("round %d: %lld bytes after the prune, %lld before (empty: %lld)",
				 round, (long long)db_bytes(f->path), (long long)full,
				 (long long)empty_bytes);
		if (round == 0)
			first = db_bytes(f->path);
		else
			assert_true(db_bytes(f->path) <= first + 65536);
	}
	assert_int_equal(store_dead_count(st), 1);
	assert_int_equal(store_pending_count(st, "janitor"), 1);
	store_close(st);
	if (f->postgres)
		return;

	/* A database made without incremental vacuum (before it was switched on). */
	sfx_sql_exec(f->path, "PRAGMA journal_mode = DELETE; PRAGMA auto_vacuum = NONE; VACUUM");
	assert_int_equal(sfx_sql_int(f->path, "PRAGMA auto_vacuum"), 0);
	st = sfx_open_ok(f->path);
	assert_int_equal(sfx_sql_int(f->path, "PRAGMA auto_vacuum"), 2);
	assert_int_equal(store_dead_count(st), 1);
	assert_int_equal(store_pending_count(st, "janitor"), 1);
	store_close(st);
}

static void enqueue_rejects_bad_input_and_stores_nothing(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event evs[2];
	struct buf msg = BUF_INIT;
	static const struct {
		int field;
		const char *value;
		const char *want;
	} cases[] = {
		{ 0, NULL, "store: event 1: kind is empty" },
		{ 0, "", "store: event 1: kind is empty" },
		{ 1, NULL, "store: event 1: receiver is empty" },
		{ 2, "", "store: event 1: key is empty" },
		{ 3, NULL, "store: event 1: status is empty" },
		{ 3, "pending", "store: event 1: status \"pending\" is not firing or resolved" },
		{ 4, NULL, "store: event 1: payload is empty" },
		{ 4, "", "store: event 1: payload is empty" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		evs[0] = sfx_mkev("bridge", "default", "good", "firing");
		evs[1] = sfx_mkev("bridge", "default", "bad", "firing");
		const char **field[] = { &evs[1].kind, &evs[1].receiver, &evs[1].key, &evs[1].status,
				   &evs[1].payload };
		*field[cases[i].field] = cases[i].value;
		buf_reset(&msg);
		assert_int_equal(store_enqueue(st, evs, 2, &msg), ERR_INVALID);
		assert_string_equal(buf_str(&msg), cases[i].want);
		assert_int_equal(evs[0].id, 0);
	}
	assert_int_equal(store_enqueue(st, NULL, 1, &msg), ERR_INVALID);
	sfx_assert_contains(buf_str(&msg), "no events");
	assert_int_equal(store_enqueue(NULL, evs, 1, &msg), ERR_INVALID);
	assert_int_equal(store_pending_count(st, "bridge"), 0);
	struct store_stats stats;
	store_stats(st, &stats);
	assert_int_equal(stats.commits, 0);
	assert_int_equal(stats.batches, 0);
	buf_release(&msg);
}

/* store_event_latest(): the newest compared event of a key, with its state; and the queue's age. */
static void latest_event_and_oldest_pending(void **state)
{
	struct store *st = sfx_store(state);
	struct store_event evs[3], got;
	enum store_event_state stt;

	assert_int_equal(store_oldest_pending_ms(st, "bridge"), INT64_MAX);
	assert_int_equal(store_oldest_pending_ms(st, ""), -1);
	evs[0] = sfx_mkev("bridge", "oncall", "k1", "firing");
	evs[1] = sfx_mkev("bridge", "oncall", "k1", "resolved");
	evs[2] = sfx_mkev("bridge", "oncall", "k2", "firing");
	for (int i = 0; i < 3; i++) {
		evs[i].repeat_state = (char *)"o/r";
		evs[i].received_at_ms = 1700000001000 + i * 1000;
	}
	evs[1].ends_at_ms = 1700000001500;
	assert_int_equal(store_enqueue(st, evs, 3, NULL), ERR_OK);
	assert_int_equal(store_oldest_pending_ms(st, "bridge"), 1700000001000);
	assert_int_equal(store_oldest_pending_ms(st, "janitor"), INT64_MAX);
	assert_int_equal(store_event_latest(st, "bridge", "oncall", "k1", &got, &stt), ERR_OK);
	assert_int_equal(got.id, evs[1].id);
	assert_string_equal(got.status, "resolved");
	assert_int_equal(got.received_at_ms, 1700000002000);
	assert_int_equal(stt, STORE_EVENT_PENDING);
	assert_string_equal(store_event_state_str(stt), "pending");
	store_event_release(&got);
	assert_int_equal(store_event_done(st, evs[0].id, NULL, NULL), ERR_OK);
	assert_int_equal(store_event_dead(st, evs[1].id, "GitHub said 422"), ERR_OK);
	assert_int_equal(store_event_latest(st, "bridge", "oncall", "k1", &got, &stt), ERR_OK);
	assert_int_equal(stt, STORE_EVENT_DEAD);
	assert_string_equal(store_event_state_str(stt), "dead");
	assert_string_equal(got.last_error, "GitHub said 422");
	store_event_release(&got);
	assert_int_equal(store_oldest_pending_ms(st, "bridge"), 1700000003000);
	assert_int_equal(store_event_latest(st, "bridge", "oncall", "k9", &got, &stt), ERR_NOTFOUND);
	assert_int_equal(store_event_latest(st, "janitor", "oncall", "k1", &got, &stt), ERR_NOTFOUND);
	assert_int_equal(store_event_latest(st, "bridge", "", "k1", &got, &stt), ERR_INVALID);
}

/* quiet "store migrated" on every fresh database */
UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	SFX_MEMORY_TEST(enqueue_next_done_round_trip),
	SFX_MEMORY_TEST(oldest_pending_is_the_first_received),
	SFX_MEMORY_TEST(latest_event_and_oldest_pending),
	SFX_MEMORY_TEST(fifo_within_kind_and_kinds_apart),
	SFX_MEMORY_TEST(retry_waits_for_next_attempt),
	SFX_MEMORY_TEST(progress_note_survives_retry),
	SFX_MEMORY_TEST(later_event_of_same_key_waits_for_older),
	SFX_MEMORY_TEST(dead_letter_marks_event_and_row),
	SFX_MEMORY_TEST(dead_letters_are_requeued_by_filter),
	SFX_MEMORY_TEST(repo_scans_and_unmapped_dead_letters),
	SFX_MEMORY_TEST(enqueue_dead_letters_invalid_events),
	SFX_MEMORY_TEST(repeated_dead_letters_are_one),
	SFX_MEMORY_TEST(prune_drops_old_done_events_only),
	SFX_TEST(prune_keeps_the_file_small_and_dead_letters),
	SFX_MEMORY_TEST(enqueue_rejects_bad_input_and_stores_nothing))
