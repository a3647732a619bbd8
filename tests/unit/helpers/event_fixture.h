/*
 * event_fixture.h - a bridge event as the unit tests of the queue's users (test_repos.c,
 * test_webhook_cache.c, bridge_fixture.c) build it by hand, without a webhook.
 */
#ifndef AB_TEST_EVENT_FIXTURE_H
#define AB_TEST_EVENT_FIXTURE_H

#include <stdint.h>

#include "store/store_events.h"

/*
 * A "bridge" event of receiver and key, firing since starts_at_ms (ms UTC), payload "{}",
 * nothing else set.  The strings are borrowed: they must outlive the event's use.
 */
struct store_event efx_firing(const char *receiver, const char *key, int64_t starts_at_ms);

#endif
