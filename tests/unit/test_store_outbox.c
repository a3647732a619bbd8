/*
 * test_store_outbox.c - the janitor's Slack outbox in the store
 * (core/store_outbox.c): a notice's life cycle.
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

#include <pthread.h>
#include <stdatomic.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/log.h"
#include "store/store.h"
#include "store/store_outbox.h"
#include "tests/unit/helpers/store_fixture.h"

static void notices_outbox_life_cycle(void **state)
{
	struct store *st = sfx_store(state);
	struct store_notice n = { 0 }, got = { 0 }, reply = { 0 };
	struct buf msg = BUF_INIT;
	int64_t cancelled = -1;

	n.namespace = (char *)"ml-team";
	n.pod = (char *)"train-1";
	n.uid = (char *)"uid-1";
	n.kind = (char *)"notice";
	n.expires_ms = 1800000000000;
	n.notify = (char *)"U0ALICE";
	n.text = (char *)"hello";
	n.created_at_ms = 1000;
	assert_int_equal(store_notice_add(st, &n, &msg), ERR_OK);
	assert_true(n.id > 0);
	assert_int_equal(store_notice_pending_count(st), 1);
	assert_int_equal(store_notice_next(st, 0, &got), ERR_OK);
	assert_int_equal(got.state, STORE_NOTICE_PENDING);
	assert_string_equal(got.notify, "U0ALICE");
	assert_null(got.owner);
	assert_null(got.channel);
	assert_true(got.expires_ms == 1800000000000);
	store_notice_release(&got);

	assert_int_equal(store_notice_retry(st, n.id, 5000, "#c", "ratelimited"), ERR_OK);
	assert_int_equal(store_notice_next(st, 4999, &got), ERR_NOTFOUND);
	assert_int_equal(store_notice_next(st, 5000, &got), ERR_OK);
	assert_int_equal(got.attempts, 1);
	assert_string_equal(got.channel, "#c");
	assert_string_equal(got.last_error, "ratelimited");
	store_notice_release(&got);

	assert_int_equal(store_notice_sent(st, n.id, 6000, "#c", "C1", "1.2"), ERR_OK);
	assert_int_equal(store_notice_sent(st, n.id, 6000, "#c", "C1", "1.2"), ERR_NOTFOUND);
	assert_int_equal(store_notice_latest(st, "uid-1", "notice", &got), ERR_OK);
	assert_int_equal(got.state, STORE_NOTICE_SENT);
	assert_true(got.sent_at_ms == 6000);
	assert_string_equal(got.slack_ts, "1.2");
	store_notice_release(&got);
	assert_int_equal(store_notice_latest(st, "uid-1", "deleted", &got), ERR_NOTFOUND);

	reply = n;
	reply.kind = (char *)"cancelled";
	reply.thread_ts = (char *)"1.2";
	assert_int_equal(store_notice_add(st, &reply, &msg), ERR_OK);
	assert_int_equal(store_notice_cancel(st, "uid-1", "resolved", &cancelled), ERR_OK);
	assert_int_equal(cancelled, 1);
	assert_int_equal(store_notice_latest(st, "uid-1", "cancelled", &got), ERR_OK);
	assert_int_equal(got.state, STORE_NOTICE_DEAD);
	assert_string_equal(got.last_error, "resolved");
	store_notice_release(&got);
	assert_int_equal(store_notice_dead(st, reply.id, "x"), ERR_NOTFOUND);
	assert_int_equal(store_notice_pending_count(st), 0);

	reply.kind = (char *)"shout";
	assert_int_equal(store_notice_add(st, &reply, &msg), ERR_INVALID);
	assert_string_equal(buf_str(&msg), "store: notice: kind \"shout\" is not notice, "
					   "reminder, cancelled or deleted");
	reply.kind = (char *)"notice";
	reply.uid = (char *)"";
	assert_int_equal(store_notice_add(st, &reply, &msg), ERR_INVALID);
	assert_string_equal(buf_str(&msg), "store: notice: uid is empty");
	assert_int_equal(store_notice_latest(st, "", "notice", &got), ERR_INVALID);
	buf_release(&msg);
}

/* quiet "store migrated" on every fresh database */
UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	SFX_MEMORY_TEST(notices_outbox_life_cycle))
