/*
 * test_store_digest.c - digests of the janitor's Slack outbox in the store
 * (core/store_digest.c): a batch of one owner's notices, the digest and its
 * members written in one transaction, durable across a restart, sent or
 * dead together.
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

#include "core/log.h"
#include "store/store.h"
#include "store/store_digest.h"
#include "store/store_outbox.h"
#include "tests/unit/helpers/store_fixture.h"

#define T 1800000000000LL

/* Queue a pending notice of pod podN for owner (notify), due at due_ms; returns its id. */
static int64_t add(struct store *st, int i, const char *notify, int64_t due_ms)
{
	struct store_notice n = { 0 };
	char pod[32], uid[32];

	snprintf(pod, sizeof(pod), "pod%d", i);
	snprintf(uid, sizeof(uid), "uid-%d", i);
	n.namespace = (char *)"ml";
	n.pod = pod;
	n.uid = uid;
	n.kind = (char *)"notice";
	n.expires_ms = T + i;
	n.notify = (char *)notify;
	n.text = (char *)"alone";
	n.line = (char *)"{}";
	n.created_at_ms = T;
	n.next_attempt_at_ms = due_ms;
	assert_int_equal(store_notice_add(st, &n, NULL), ERR_OK);
	return n.id;
}

static void batch_is_one_owners_due_notices(void **state)
{
	struct store *st = sfx_store(state);
	struct store_notice head = { 0 }, *m = NULL;
	size_t n = 0;

	add(st, 0, "#a", T);
	add(st, 1, "#b", T);          /* another owner */
	add(st, 2, "#a", T + 5000);   /* in the window */
	add(st, 3, "#a", T + 9000);   /* after it */
	add(st, 4, "#a", T);
	assert_int_equal(store_notice_next(st, T, &head), ERR_OK);
	assert_string_equal(head.pod, "pod0");
	assert_string_equal(head.line, "{}");
	assert_int_equal(store_notice_batch(st, &head, T + 5000, 100, &m, &n), ERR_OK);
	assert_int_equal(n, 3);
	assert_string_equal(m[0].pod, "pod0");
	assert_string_equal(m[1].pod, "pod2");
	assert_string_equal(m[2].pod, "pod4");
	store_notices_free(m, n);
	assert_int_equal(store_notice_batch(st, &head, T + 5000, 2, &m, &n), ERR_OK);
	assert_int_equal(n, 2);  /* at most max */
	store_notices_free(m, n);
	store_notice_release(&head);
}

/* A digest of two parts over ids[0..3): part 1 {0, 1}, part 2 {2}. */
static void add_two_parts(struct store *st, const int64_t *ids, struct store_digest *d)
{
	size_t first[] = { 0, 2, 3 };
	struct buf err = BUF_INIT;

	memset(d, 0, 2 * sizeof(*d));
	for (int i = 0; i < 2; i++) {
		d[i].kind = (char *)"notice";
		d[i].channel = (char *)"#a";
		d[i].part = i + 1;
		d[i].parts = 2;
		d[i].text = (char *)(i ? "part 2" : "part 1");
		d[i].created_at_ms = T;
	}
	assert_int_equal(store_digest_add(st, d, 2, ids, first, &err), ERR_OK);
	assert_true(d[0].id > 0 && d[1].id > d[0].id);
	buf_release(&err);
}

static void digest_durable_across_a_restart_then_sent_with_its_members(void **state)
{
	struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct store_digest d[2], again, got = { 0 };
	struct store_notice n = { 0 }, *m = NULL;
	struct buf err = BUF_INIT;
	int64_t ids[3];
	size_t cnt = 0, first[] = { 0, 1 };

	for (int i = 0; i < 3; i++)
		ids[i] = add(st, i, "#a", T);
	add_two_parts(st, ids, d);
	/* A member of a digest is in no other: nothing of a second digest is written. */
	again = d[0];
	assert_int_equal(store_digest_add(st, &again, 1, &ids[1], first, &err), ERR_CONFLICT);
	assert_int_equal(again.id, 0);
	assert_int_equal(store_digest_pending_count(st), 2);
	buf_release(&err);
	store_close(st);

	/* The restart: the digest and its members are there, the members do not go alone. */
	st = sfx_open_ok(f->path);
	assert_int_equal(store_notice_next(st, T, &n), ERR_NOTFOUND);
	assert_int_equal(store_digest_next(st, T, &got), ERR_OK);
	assert_int_equal(got.id, d[0].id);
	assert_string_equal(got.text, "part 1");
	assert_string_equal(got.channel, "#a");
	assert_int_equal(got.part, 1);
	assert_int_equal(got.parts, 2);
	assert_int_equal(got.state, STORE_NOTICE_PENDING);
	assert_int_equal(store_digest_members(st, got.id, &m, &cnt), ERR_OK);
	assert_int_equal(cnt, 2);
	assert_int_equal(m[0].id, ids[0]);
	assert_int_equal(m[1].digest_id, got.id);
	assert_string_equal(m[1].channel, "#a");
	store_notices_free(m, cnt);

	/* A failed attempt: the digest waits, its members with it. */
	assert_int_equal(store_digest_retry(st, got.id, T + 60000, NULL, "HTTP 503"), ERR_OK);
	store_digest_release(&got);
	assert_int_equal(store_digest_next(st, T, &got), ERR_OK);
	assert_int_equal(got.id, d[1].id);  /* part 2 is due, part 1 is not */
	store_digest_release(&got);
	assert_int_equal(store_notice_latest(st, "uid-0", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_PENDING);
	assert_string_equal(n.last_error, "HTTP 503");
	store_notice_release(&n);

	assert_int_equal(store_digest_next(st, T + 60000, &got), ERR_OK);
	assert_int_equal(got.id, d[0].id);
	assert_int_equal(got.attempts, 1);
	assert_int_equal(store_digest_sent(st, got.id, T + 61000, "C0A", "1.000100"), ERR_OK);
	assert_int_equal(store_digest_sent(st, got.id, T + 61000, "C0A", "1.000100"),
			 ERR_NOTFOUND);
	store_digest_release(&got);
	for (int i = 0; i < 2; i++) {
		char uid[32];

		snprintf(uid, sizeof(uid), "uid-%d", i);
		assert_int_equal(store_notice_latest(st, uid, "notice", &n), ERR_OK);
		assert_int_equal(n.state, STORE_NOTICE_SENT);
		assert_int_equal(n.sent_at_ms, T + 61000);
		assert_string_equal(n.slack_ts, "1.000100");
		assert_string_equal(n.slack_channel_id, "C0A");
		store_notice_release(&n);
	}
	/* Part 2 given up: its member with it. */
	assert_int_equal(store_digest_dead(st, d[1].id, "not_in_channel"), ERR_OK);
	assert_int_equal(store_notice_latest(st, "uid-2", "notice", &n), ERR_OK);
	assert_int_equal(n.state, STORE_NOTICE_DEAD);
	assert_string_equal(n.last_error, "not_in_channel");
	store_notice_release(&n);
	assert_int_equal(store_digest_pending_count(st), 0);
	assert_int_equal(store_notice_pending_count(st), 0);
	store_close(st);
}

static void bad_digests_are_refused(void **state)
{
	struct store *st = sfx_store(state);
	struct store_digest d = { 0 };
	struct buf err = BUF_INIT;
	int64_t id = add(st, 0, "#a", T);
	size_t first[] = { 0, 1 }, empty[] = { 0, 0 };

	d.kind = (char *)"notice";
	d.channel = (char *)"#a";
	assert_int_equal(store_digest_add(st, &d, 1, &id, first, &err), ERR_INVALID);
	assert_non_null(strstr(buf_str(&err), "no kind, text, channel or members"));
	d.text = (char *)"x";
	assert_int_equal(store_digest_add(st, &d, 1, &id, empty, &err), ERR_INVALID);
	assert_int_equal(store_digest_pending_count(st), 0);
	buf_release(&err);
}

/* quiet "store migrated" on every fresh database */
UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	SFX_MEMORY_TEST(batch_is_one_owners_due_notices),
	cmocka_unit_test_setup_teardown(
		digest_durable_across_a_restart_then_sent_with_its_members, sfx_setup,
		sfx_teardown),
	SFX_MEMORY_TEST(bad_digests_are_refused))
