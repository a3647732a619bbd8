/*
 * test_retention.c - the retention thread against a real sqlite file: done
 * events older than the retention go at start and on every round after,
 * pending and dead-lettered ones stay, and a stop cuts a long pause short.
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

#include <time.h>
#include <unistd.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/retention.h"
#include "store/store.h"
#include "store/store_events.h"

static int64_t add_done(struct store *st, const char *key, const char *kind)
{
	struct store_event ev;
	struct buf msg = BUF_INIT;

	memset(&ev, 0, sizeof(ev));
	ev.kind = (char *)kind;
	ev.receiver = (char *)"default";
	ev.key = (char *)key;
	ev.status = (char *)"firing";
	ev.starts_at_ms = 1700000000000;
	ev.payload = (char *)"{}";
	if (store_enqueue(st, &ev, 1, &msg) != ERR_OK)
		fail_msg("enqueue: %s", buf_str(&msg));
	buf_release(&msg);
	return ev.id;
}

/* Wait (at most 5 s) until no event is left but the pending and dead ones. */
static int64_t wait_pruned(struct store *st, int64_t ids[], int n)
{
	int64_t t0 = clock_mono_us();

	while (clock_mono_us() - t0 < 5000000) {
		int gone = 0;
		for (int i = 0; i < n; i++)
			gone += store_event_done(st, ids[i], NULL, NULL) == ERR_NOTFOUND;
		if (gone == n)
			return (clock_mono_us() - t0) / 1000;
		usleep(20000);
	}
	fail_msg("done events were not pruned within 5 s");
	return -1;
}

static void interval_is_a_quarter_within_bounds(void **state)
{
	(void)state;
	assert_int_equal(retention_interval_ms(7 * 86400000LL), 3600000);
	assert_int_equal(retention_interval_ms(2 * 3600000LL), 1800000);
	assert_int_equal(retention_interval_ms(2000), 1000);
	assert_int_equal(retention_interval_ms(0), 1000);
}

static void prunes_at_start_and_every_round(void **state)
{
	char dir[] = "/tmp/test_retention.XXXXXX", path[64];
	struct store *st = NULL;
	struct retention *r = NULL;
	struct buf msg = BUF_INIT;
	int64_t ids[3], dead, t0;

	(void)state;
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/ab.db", dir);
	assert_int_equal(store_open(path, &st, &msg), ERR_OK);
	ids[0] = add_done(st, "a", "bridge");
	ids[1] = add_done(st, "b", "janitor");
	assert_true(add_done(st, "p", "bridge") > 0);
	dead = add_done(st, "d", "bridge");
	assert_int_equal(store_event_done(st, ids[0], NULL, NULL), ERR_OK);
	assert_int_equal(store_event_done(st, ids[1], NULL, NULL), ERR_OK);
	assert_int_equal(store_event_dead(st, dead, "reason"), ERR_OK);
	usleep(300000);  /* older than the 200 ms retention */

	assert_int_equal(retention_start(st, 200, 100, &r, &msg), ERR_OK);
	wait_pruned(st, ids, 2);
	ids[2] = add_done(st, "c", "bridge");  /* done now: gone within 200 ms + a round */
	assert_int_equal(store_event_done(st, ids[2], NULL, NULL), ERR_OK);
	assert_true(wait_pruned(st, ids + 2, 1) >= 100);
	assert_int_equal(store_pending_count(st, "bridge"), 1);
	assert_int_equal(store_dead_count(st), 1);
	retention_stop(r);

	/* A stop ends a pause of an hour at once. */
	assert_int_equal(retention_start(st, 1000, 3600000, &r, &msg), ERR_OK);
	usleep(50000);
	t0 = clock_mono_us();
	retention_stop(r);
	assert_true(clock_mono_us() - t0 < 1000000);
	retention_stop(NULL);

	assert_int_equal(retention_start(st, 0, 0, &r, &msg), ERR_INVALID);
	assert_null(r);
	assert_int_equal(retention_start(NULL, 1000, 0, &r, &msg), ERR_INVALID);
	store_close(st);
	for (int i = 0; i < 3; i++) {
		static const char *const sfx[] = { "", "-wal", "-shm" };
		char p[80];
		snprintf(p, sizeof(p), "%s%s", path, sfx[i]);
		unlink(p);
	}
	rmdir(dir);
	buf_release(&msg);
}

UNIT_MAIN_WITH(log_setup(LOG_WARN, LOG_LOGFMT), (void)0,
	cmocka_unit_test(interval_is_a_quarter_within_bounds),
	cmocka_unit_test(prunes_at_start_and_every_round))
