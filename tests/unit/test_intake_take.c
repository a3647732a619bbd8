/*
 * test_intake_take.c - intake_take_once() (core/intake.h), the step both
 * signed endpoints (POST /v1/github/webhook, POST /v1/slack/interactions)
 * share: a delivery taken once and queued; a redelivery queues nothing; a
 * queue that cannot commit forgets the delivery again, so the sender's retry
 * is taken and nothing is lost.  On both engines (tests/run.sh STORE_UNITS).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/intake.h"
#include "store/store.h"
#include "store/store_events.h"
#include "tests/unit/helpers/store_fixture.h"

static struct store_event click(const char *key)
{
	struct store_event ev = { 0 };

	ev.kind = (char *)"postpone";
	ev.receiver = (char *)"slack";
	ev.key = (char *)key;
	ev.payload = (char *)"{\"v\":1}";
	return ev;
}

static void delivery_is_queued_once(void **state)
{
	const struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct store_event ev = click("ns/pod");

	assert_int_equal(intake_take_once(st, "slack:1.5:U1", 5000, 60000, &ev, "slack click"), 1);
	assert_string_equal(ev.status, "firing");
	assert_int_equal(ev.starts_at_ms, 5000);
	assert_int_equal(ev.received_at_ms, 5000);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events WHERE kind = "
				     "'postpone' AND key = 'ns/pod' AND status = 'firing'"), 1);
	/* A redelivery (Slack's retry, GitHub's "Redeliver"): taken before, nothing queued. */
	ev = click("ns/pod");
	assert_int_equal(intake_take_once(st, "slack:1.5:U1", 6000, 60000, &ev, "slack click"), 0);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events"), 1);
	store_close(st);
}

static void queue_failure_forgets_the_delivery(void **state)
{
	const struct fixture *f = *state;
	struct store *st = sfx_open_ok(f->path);
	struct store_event ev = click("boom");

	sfx_inject(f->path, "events", "NEW.key = 'boom'", "injected insert failure");
	assert_int_equal(intake_take_once(st, "gh-delivery-1", 5000, 60000, &ev, "github command"),
			 -1);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events"), 0);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM gh_deliveries"), 0);
	/* The sender retries once the store can commit: taken, queued. */
	sfx_uninject(f->path, "events");
	ev = click("boom");
	assert_int_equal(intake_take_once(st, "gh-delivery-1", 7000, 60000, &ev, "github command"),
			 1);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events WHERE key = 'boom'"), 1);
	store_close(st);
}

UNIT_MAIN(SFX_TEST(delivery_is_queued_once), SFX_TEST(queue_failure_forgets_the_delivery))
