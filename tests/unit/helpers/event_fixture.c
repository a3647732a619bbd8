/*
 * event_fixture.c - the hand-made bridge event of the queue users' unit tests.
 */
#include "event_fixture.h"

struct store_event efx_firing(const char *receiver, const char *key, int64_t starts_at_ms)
{
	struct store_event ev = { 0 };

	ev.kind = "bridge";
	ev.receiver = receiver;
	ev.key = key;
	ev.status = "firing";
	ev.starts_at_ms = starts_at_ms;
	ev.payload = "{}";
	return ev;
}
