/*
 * test_storm.c - alert storms (bridge/storm.h): the fold decision, the
 * member episode rules, the summary text (counts, bounds, marker), and the
 * routing and summary life cycle against a real store (sqlite in memory, or
 * a fresh PostgreSQL database with AB_TEST_STORE=postgres: store_fixture.h)
 * and a dry-run GitHub client in virtual time; plus the store's and gh's
 * storm additions.
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

#include "bridge/gh.h"
#include "bridge/storm.h"
#include "core/config.h"
#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_groups.h"
#include "store/store_map.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/gh_fixture.h"
#include "tests/unit/helpers/store_fixture.h"

#define T0 INT64_C(1795000000000)

static void should_fold_follows_the_budget(void **state)
{
	(void)state;
	/* 10 creates at 60/min drain in exactly 10 s: not longer than storm_after */
	assert_int_equal(storm_should_fold(1, 10, 60, 10000), 0);
	assert_int_equal(storm_should_fold(1, 11, 60, 10000), 1);
	assert_int_equal(storm_should_fold(0, 100000, 60, 10000), 0);
	assert_int_equal(storm_should_fold(1, 0, 60, 0), 0);
	/* default 10m at 20/min: 200 creates drain in 10 min */
	assert_int_equal(storm_should_fold(1, 200, 20, 600000), 0);
	assert_int_equal(storm_should_fold(1, 201, 20, 600000), 1);
	/* 0 counts as 80 */
	assert_int_equal(storm_should_fold(1, 14, 0, 10000), 1);
	assert_int_equal(storm_should_fold(1, 13, 0, 10000), 0);
	/* the threshold is the least count that folds */
	{
		static const unsigned cpms[] = { 0, 1, 20, 60, 80 };
		static const int64_t afters[] = { 0, 1, 999, 10000, 600000, 86400000 };

		for (size_t i = 0; i < sizeof(cpms) / sizeof(cpms[0]); i++)
			for (size_t j = 0; j < sizeof(afters) / sizeof(afters[0]); j++) {
				int64_t t = storm_fold_threshold(cpms[i], afters[j]);

				assert_true(t >= 1);
				assert_int_equal(storm_should_fold(1, t, cpms[i], afters[j]), 1);
				assert_int_equal(storm_should_fold(1, t - 1, cpms[i], afters[j]), 0);
			}
	}
	assert_int_equal(storm_fold_threshold(60, 10000), 11);
	assert_int_equal(storm_fold_threshold(20, 600000), 201);
}

static void member_apply_follows_episodes(void **state)
{
	struct store_member m = { .firing = 1, .starts_at_ms = 1000 };
	struct issue_event fire_same = { 1, 1000, 0 }, fire_old = { 1, 500, 0 };
	struct issue_event resolve = { 0, 1000, 5000 }, resolve_again = { 0, 1000, 5000 };
	struct issue_event fire_late_copy = { 1, 4000, 0 }, fire_new = { 1, 6000, 0 };

	(void)state;
	assert_int_equal(storm_member_apply(&m, &fire_same), STORM_SAME);
	assert_int_equal(storm_member_apply(&m, &fire_old), STORM_STALE);
	assert_int_equal(storm_member_apply(&m, &resolve), STORM_CHANGED);
	assert_int_equal(m.firing, 0);
	assert_int_equal(m.ends_at_ms, 5000);
	assert_int_equal(storm_member_apply(&m, &resolve_again), STORM_SAME);
	assert_int_equal(storm_member_apply(&m, &fire_same), STORM_SAME);
	assert_int_equal(m.firing, 0);
	/* started before the applied resolve ended: Alertmanager's merge, stale */
	assert_int_equal(storm_member_apply(&m, &fire_late_copy), STORM_STALE);
	assert_int_equal(storm_member_apply(&m, &fire_new), STORM_CHANGED);
	assert_int_equal(m.firing, 1);
	assert_int_equal(m.starts_at_ms, 6000);
	assert_int_equal(m.ends_at_ms, 0);
}

static void count_human_groups_thousands(void **state)
{
	static const struct { int64_t n; const char *want; } cases[] = {
		{ 0, "0" }, { 999, "999" }, { 1000, "1,000" }, { 1234, "1,234" },
		{ 1234567, "1,234,567" }, { -5, "0" },
	};
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct buf b = BUF_INIT;
		storm_count_human(cases[i].n, &b);
		assert_string_equal(buf_str(&b), cases[i].want);
		buf_release(&b);
	}
}

static void member_line_and_alertname(void **state)
{
	struct buf line = BUF_INIT, name = BUF_INIT;
	char big[1200];

	(void)state;
	storm_member_line("{\"v\":1,\"labels\":{\"alertname\":\"X\",\"instance\":\"a|b\","
			  "\"job\":\"j\\nk\"}}", &line);
	assert_string_equal(buf_str(&line), "instance=a/b job=j k");
	storm_alertname("{\"v\":1,\"labels\":{\"alertname\":\"HighLatency\"}}", &name);
	assert_string_equal(buf_str(&name), "HighLatency");
	buf_reset(&line);
	buf_reset(&name);
	storm_member_line("not json", &line);
	storm_alertname("{\"labels\":{\"alertname\":3}}", &name);
	assert_string_equal(buf_str(&line), "");
	assert_string_equal(buf_str(&name), "");
	/* a huge label is cut to the bound, on a code point, with an ellipsis */
	snprintf(big, sizeof(big), "{\"labels\":{\"x\":\"");
	for (size_t i = strlen(big); i < 1000; i += 2)
		memcpy(big + i, "\xc3\xa9", 2);
	memcpy(big + 1000, "\"}}", 4);
	buf_reset(&line);
	storm_member_line(big, &line);
	assert_true(line.len <= STORM_LINE_MAX_BYTES);
	assert_true(line.len > STORM_LINE_MAX_BYTES - 8);
	assert_string_equal(buf_str(&line) + line.len - 3, "\xe2\x80\xa6");
	buf_release(&line);
	buf_release(&name);
}

static void marker_key_is_unique_per_summary(void **state)
{
	struct buf a = BUF_INIT, b = BUF_INIT, c = BUF_INIT;

	(void)state;
	storm_marker_key("r", "o/n", "X", 1000, &a);
	storm_marker_key("r", "o/n", "X", 2000, &b);
	storm_marker_key("r", "o/n", "Y", 1000, &c);
	assert_int_equal(a.len, strlen("storm-") + 16 + strlen("-1000"));
	assert_memory_equal(buf_str(&a), "storm-", 6);
	assert_string_not_equal(buf_str(&a), buf_str(&b));
	assert_string_not_equal(buf_str(&a), buf_str(&c));
	assert_memory_equal(buf_str(&a), buf_str(&b), 22);  /* same summary identity */
	/* the map rebuild tells summaries from alerts (fingerprints are hex only) */
	assert_true(storm_is_summary_key(buf_str(&a)));
	assert_false(storm_is_summary_key("43257ea8bc3d7780"));
	assert_false(storm_is_summary_key(NULL));
	buf_release(&a);
	buf_release(&b);
	buf_release(&c);
}

/* n members, the first firing ones firing, keys "%016x" of i. */
static struct store_member *members(size_t n, size_t firing)
{
	struct store_member *m = calloc(n, sizeof(*m));
	char key[17], line[64];

	for (size_t i = 0; i < n; i++) {
		snprintf(key, sizeof(key), "%016zx", i);
		snprintf(line, sizeof(line), "instance=node-%zu:9100 <b>", i);
		m[i].key = strdup(key);
		m[i].line = strdup(line);
		m[i].firing = i < firing;
		m[i].starts_at_ms = T0;
		m[i].ends_at_ms = i < firing ? 0 : T0 + 60000;
	}
	return m;
}

static void summary_text(size_t n, size_t firing, struct buf *title, struct buf *body)
{
	struct store_summary s = { .receiver = (char *)"r", .repo = (char *)"o/n",
				   .alertname = (char *)"HighLatency" };
	struct store_member *m = members(n, firing);
	struct buf err = BUF_INIT;
	json_t *view = storm_view(&s, m, n);

	assert_int_equal(storm_text(view, "storm-abc-1", title, body, &err), ERR_OK);
	json_decref(view);
	store_member_list_free(m, n);
	buf_release(&err);
}

static void summary_text_counts_and_lists(void **state)
{
	struct buf title = BUF_INIT, body = BUF_INIT;

	(void)state;
	summary_text(3, 2, &title, &body);
	assert_string_equal(buf_str(&title), "[storm] 2 × HighLatency firing");
	assert_non_null(strstr(buf_str(&body), "**2 firing**, 1 resolved, 3 in all"));
	assert_non_null(strstr(buf_str(&body), "| `0000000000000000` | instance=node-0:9100 "
					       "&lt;b&gt; | firing |"));
	assert_non_null(strstr(buf_str(&body), "0000000000000000 0000000000000001\n"));
	assert_null(strstr(buf_str(&body), "more_"));
	assert_null(strstr(buf_str(&body), "more, listed"));
	assert_string_equal(buf_str(&body) + body.len - strlen("<!-- alertbridge:key=storm-abc-1 -->"),
			    "<!-- alertbridge:key=storm-abc-1 -->");
	buf_reset(&title);
	buf_reset(&body);
	summary_text(3, 0, &title, &body);
	assert_string_equal(buf_str(&title), "[storm] 3 × HighLatency resolved");
	buf_release(&title);
	buf_release(&body);
}

static void summary_text_is_bounded(void **state)
{
	struct buf title = BUF_INIT, body = BUF_INIT;
	size_t listed = STORM_KEYS_BUDGET_BYTES / 17;

	(void)state;
	summary_text(5000, 3000, &title, &body);
	assert_string_equal(buf_str(&title), "[storm] 3,000 × HighLatency firing");
	assert_true(body.len <= 65536);
	assert_non_null(strstr(buf_str(&body), "**3,000 firing**, 2,000 resolved, 5,000 in all"));
	assert_non_null(strstr(buf_str(&body), "_…and 4,950 more, listed by fingerprint below._"));
	/* 2,352 fingerprints fit in the budget: the rest of the 3,000 firing are counted */
	{
		char want[64];
		snprintf(want, sizeof(want), "_…and %s more_", "648");
		assert_int_equal(listed, 2352);
		assert_non_null(strstr(buf_str(&body), want));
		snprintf(want, sizeof(want), "%016zx", listed - 1);
		assert_non_null(strstr(buf_str(&body), want));
		snprintf(want, sizeof(want), "%016zx", listed);
		assert_null(strstr(buf_str(&body), want));
	}
	assert_string_equal(buf_str(&body) + body.len - strlen("<!-- alertbridge:key=storm-abc-1 -->"),
			    "<!-- alertbridge:key=storm-abc-1 -->");
	buf_release(&title);
	buf_release(&body);
}

/* ---- routing and the summary life cycle: real store, dry-run GitHub, virtual time ---- */

struct env {
	void *target;           /* the store's struct fixture (store_fixture.h) */
	struct store *st;
	struct gh_client *gh;
	struct storm *storm;
	struct config cfg;
	struct cfg_receiver rcv;
	int64_t now;
	struct vclock clock;    /* gh's, on now */
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct gh_options go = { 0 };
	struct buf err = BUF_INIT;

	e->now = T0;
	if (sfx_setup_memory(&e->target) != 0)
		return -1;
	e->st = sfx_open_ok(((struct fixture *)e->target)->path);
	go.api_url = "http://127.0.0.1:9";
	go.dry_run = 1;
	e->gh = gfx_client_at(&go, &e->clock, &e->now);
	e->cfg.github.content_per_minute = 60;
	e->rcv.name = (char *)"default";
	e->rcv.repo = (char *)"my-org/alerts";
	e->rcv.storm.enabled = 1;
	e->rcv.storm.storm_after_ms = 10000;
	e->storm = storm_new(&(struct storm_options){ &e->cfg, e->st, e->gh, 0 });
	buf_release(&err);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;
	storm_free(e->storm);
	gh_client_free(e->gh);
	store_close(e->st);
	sfx_teardown(&e->target);
	free(e);
	return 0;
}

/* Queue n firing (or resolved) events of keys "%016x" of first..first+n-1. */
static void enqueue(struct env *e, int first, int n, const char *alertname, int firing,
		    int64_t starts_ms)
{
	struct buf err = BUF_INIT;

	for (int i = first; i < first + n; i++) {
		char key[17], payload[256];
		struct store_event ev = { 0 };

		snprintf(key, sizeof(key), "%016x", (unsigned)i);
		snprintf(payload, sizeof(payload),
			 "{\"v\":1,\"labels\":{\"alertname\":\"%s\",\"instance\":\"n%d\"}}",
			 alertname, i);
		ev.kind = (char *)"bridge";
		ev.receiver = (char *)"default";
		ev.key = key;
		ev.status = (char *)(firing ? "firing" : "resolved");
		ev.starts_at_ms = starts_ms;
		ev.ends_at_ms = firing ? 0 : starts_ms + 60000;
		ev.payload = payload;
		assert_int_equal(store_enqueue(e->st, &ev, 1, &err), ERR_OK);
	}
	buf_release(&err);
}

/* The count of pending creates stops at its bound (a storm asks only "past the threshold?"). */
static void pending_creates_counts_up_to_a_bound(void **state)
{
	struct env *e = *state;

	enqueue(e, 0, 5, "HighLatency", 1, T0 - 1000);
	enqueue(e, 0, 2, "HighLatency", 1, T0);  /* the same keys again: counted once */
	enqueue(e, 10, 2, "HighLatency", 0, T0);  /* resolves: no create */
	assert_int_equal(store_pending_creates(e->st, "default", 0), 5);
	assert_int_equal(store_pending_creates(e->st, "default", 10), 5);
	assert_int_equal(store_pending_creates(e->st, "default", 5), 5);
	assert_int_equal(store_pending_creates(e->st, "default", 3), 3);
	assert_int_equal(store_pending_creates(e->st, "default", 1), 1);
	assert_int_equal(store_pending_creates(e->st, "other", 3), 0);
}

/* Route the next event as the bridge does; returns the route. */
static enum storm_route route_next(struct env *e, enum err *rc)
{
	struct store_event ev = { 0 };
	struct store_issue row = { 0 };
	struct buf err = BUF_INIT;
	enum storm_route r;
	int have;

	assert_int_equal(store_next_event(e->st, "bridge", e->now, &ev), ERR_OK);
	have = store_issue_get(e->st, ev.receiver, ev.key, &row) == ERR_OK;
	r = storm_route(e->storm, &ev, &e->rcv, e->rcv.repo, have ? &row : NULL, e->now, rc,
			&err);
	if (r != STORM_DONE) {  /* what the bridge would do: finish it without a row */
		assert_int_equal(store_event_done(e->st, ev.id, NULL, &err), ERR_OK);
	}
	store_event_release(&ev);
	store_issue_release(&row);
	buf_release(&err);
	return r;
}

static void storm_folds_then_subsides(void **state)
{
	struct env *e = *state;
	struct store_summary sum = { 0 };
	struct store_issue row = { 0 };
	struct store_member m = { 0 };
	enum err rc;
	int folded = 0, passed = 0;

	enqueue(e, 0, 20, "HighLatency", 1, T0 - 1000);
	/* 20 creates at 60/min take 20 s > 10 s: fold until 10 are left */
	for (int i = 0; i < 20; i++) {
		enum storm_route r = route_next(e, &rc);
		assert_int_equal(rc, ERR_OK);
		if (r == STORM_DONE)
			folded++;
		else
			passed++;
	}
	assert_int_equal(folded, 10);
	assert_int_equal(passed, 10);
	assert_int_equal(store_summary_live(e->st, "default", "my-org/alerts", "HighLatency",
					    &sum), ERR_OK);
	assert_int_equal(sum.state, STORE_SUMMARY_CREATING);
	assert_int_equal(sum.total, 10);
	assert_int_equal(sum.firing, 10);
	/* the folded alert's map row points at the summary (number 0 until created) */
	assert_int_equal(store_issue_get(e->st, "default", "0000000000000000", &row), ERR_OK);
	assert_int_equal(row.state, STORE_ISSUE_OPEN);
	assert_int_equal(row.number, 0);
	assert_int_equal(store_member_get(e->st, "default", "0000000000000000", &m), ERR_OK);
	assert_int_equal(m.summary_id, sum.id);
	assert_int_equal(m.firing, 1);
	store_member_release(&m);
	assert_int_equal(store_member_get(e->st, "default", "0000000000000013", &m), ERR_NOTFOUND);
	store_member_release(&m);
	store_issue_release(&row);
	store_summary_release(&sum);
}

static void storm_disabled_passes(void **state)
{
	struct env *e = *state;
	enum err rc;

	e->rcv.storm.enabled = 0;
	enqueue(e, 0, 50, "X", 1, T0);
	assert_int_equal(route_next(e, &rc), STORM_PASS);
	assert_int_equal(rc, ERR_OK);
}

static void summary_life_cycle(void **state)
{
	struct env *e = *state;
	struct store_summary sum = { 0 };
	struct store_issue row = { 0 };
	enum err rc;

	enqueue(e, 0, 12, "HighLatency", 1, T0 - 1000);
	assert_int_equal(route_next(e, &rc), STORM_DONE);
	assert_int_equal(route_next(e, &rc), STORM_DONE);
	for (int i = 0; i < 10; i++)
		(void)route_next(e, &rc);
	/* the summary is created at once (dry-run: number 0), then it is quiet */
	assert_int_equal(storm_sync(e->storm, e->now), 1);
	assert_int_equal(store_summary_get(e->st, 1, &sum), ERR_OK);
	assert_int_equal(sum.state, STORE_SUMMARY_OPEN);
	assert_int_equal(sum.synced_at_ms, e->now);
	assert_int_equal(sum.dirty, 0);
	store_summary_release(&sum);
	assert_int_equal(storm_sync(e->storm, e->now), 0);
	/* one of its alerts resolves: dirty, but not written again within the interval */
	enqueue(e, 0, 1, "HighLatency", 0, T0 - 1000);
	assert_int_equal(route_next(e, &rc), STORM_DONE);
	assert_int_equal(rc, ERR_OK);
	assert_int_equal(store_summary_get(e->st, 1, &sum), ERR_OK);
	assert_int_equal(sum.dirty, 1);
	assert_int_equal(sum.firing, 1);
	store_summary_release(&sum);
	assert_int_equal(storm_sync(e->storm, e->now + STORM_SYNC_INTERVAL_MS - 1), 0);
	e->now += STORM_SYNC_INTERVAL_MS;
	assert_int_equal(storm_sync(e->storm, e->now), 1);
	assert_int_equal(storm_sync(e->storm, e->now), 0);
	/* the last one resolves: closed at once, map rows follow */
	enqueue(e, 1, 1, "HighLatency", 0, T0 - 1000);
	assert_int_equal(route_next(e, &rc), STORM_DONE);
	assert_int_equal(storm_sync(e->storm, e->now + 1), 1);
	assert_int_equal(store_summary_get(e->st, 1, &sum), ERR_OK);
	assert_int_equal(sum.state, STORE_SUMMARY_CLOSED);
	store_summary_release(&sum);
	assert_int_equal(store_issue_get(e->st, "default", "0000000000000001", &row), ERR_OK);
	assert_int_equal(row.state, STORE_ISSUE_CLOSED);
	assert_string_equal(row.state_reason, "completed");
	store_issue_release(&row);
	/* a re-fire after the close is unfolded: planned as a new alert */
	enqueue(e, 1, 1, "HighLatency", 1, T0 + 120000);
	assert_int_equal(route_next(e, &rc), STORM_PASS_NEW);
	assert_int_equal(rc, ERR_OK);
	assert_int_equal(store_issue_get(e->st, "default", "0000000000000001", &row),
			 ERR_NOTFOUND);
	/* a stale resolve of a closed summary's alert is just done */
	enqueue(e, 0, 1, "HighLatency", 0, T0 - 1000);
	assert_int_equal(route_next(e, &rc), STORM_DONE);
	assert_int_equal(rc, ERR_OK);
}

/* e's storm again, on a client of the fake GitHub gh (token, one attempt, timeout_ms: 0 for
 * the default) in e's time. */
static void storm_on(struct env *e, struct fake_http *gh, int64_t timeout_ms)
{
	struct gh_options go = { 0 };

	storm_free(e->storm);
	gh_client_free(e->gh);
	go.api_url = fake_http_url(gh);
	go.token = "tok";
	go.timeout_ms = timeout_ms;
	go.max_attempts = 1;
	e->gh = gfx_client_at(&go, &e->clock, &e->now);
	e->storm = storm_new(&(struct storm_options){ &e->cfg, e->st, e->gh, 0 });
}

/*
 * A summary rewrite GitHub refuses for good (403: the repository was
 * archived) is not sent again every STORM_RETRY_MS, only once the summary
 * changes; the refusal counts by reason.  (Before, it was retried forever.)
 */
static void refused_rewrite_waits_for_a_change(void **state)
{
	struct env *e = *state;
	struct fake_http *gh = fake_http_start();
	struct store_summary sum = { 0 };
	struct gh_stats st;
	enum err rc;

	storm_on(e, gh, 0);

	enqueue(e, 0, 12, "HighLatency", 1, T0 - 1000);
	for (int i = 0; i < 12; i++)
		(void)route_next(e, &rc);
	fake_http_push(gh, 201, NULL,
		       "{\"number\":5,\"state\":\"open\",\"repository_url\":"
		       "\"https://api.github.com/repos/my-org/alerts\"}");
	assert_int_equal(storm_sync(e->storm, e->now), 1);
	assert_int_equal(fake_http_count(gh), 1);

	/* one of its two alerts resolves: the rewrite is refused, 403 archived */
	enqueue(e, 0, 1, "HighLatency", 0, T0 - 1000);
	assert_int_equal(route_next(e, &rc), STORM_DONE);
	e->now += STORM_SYNC_INTERVAL_MS;
	assert_int_equal(storm_sync(e->storm, e->now), 0);  /* the queue's turn */
	fake_http_push(gh, 403, NULL, "{\"message\":\"Repository was archived so is read-only.\"}");
	assert_int_equal(storm_sync(e->storm, e->now), 1);
	assert_int_equal(fake_http_count(gh), 2);
	assert_string_equal(fake_http_request(gh, 1)->method, "PATCH");
	gh_stats(e->gh, &st);
	assert_int_equal(st.requests_forbidden[GH_FORBIDDEN_ARCHIVED], 1);

	/* not again after the retry time, nor an hour later */
	for (int i = 0; i < 4; i++) {
		e->now += STORM_RETRY_MS + STORM_SYNC_INTERVAL_MS;
		assert_int_equal(storm_sync(e->storm, e->now), 0);
		assert_int_equal(storm_sync(e->storm, e->now), 0);
	}
	e->now += 3600000;
	assert_int_equal(storm_sync(e->storm, e->now), 0);
	assert_int_equal(fake_http_count(gh), 2);
	assert_int_equal(store_summary_get(e->st, 1, &sum), ERR_OK);
	assert_int_equal(sum.state, STORE_SUMMARY_OPEN);
	store_summary_release(&sum);

	/* its other alert resolves: the summary changed, so it is written (and closed) */
	enqueue(e, 1, 1, "HighLatency", 0, T0 - 1000);
	assert_int_equal(route_next(e, &rc), STORM_DONE);
	fake_http_push(gh, 200, NULL,
		       "{\"number\":5,\"state\":\"open\",\"repository_url\":"
		       "\"https://api.github.com/repos/my-org/alerts\"}");
	fake_http_push(gh, 200, NULL,
		       "{\"number\":5,\"state\":\"closed\",\"repository_url\":"
		       "\"https://api.github.com/repos/my-org/alerts\"}");
	assert_int_equal(storm_sync(e->storm, e->now), 1);
	assert_int_equal(fake_http_count(gh), 4);
	assert_string_equal(fake_http_request(gh, 2)->method, "PATCH");
	assert_non_null(strstr(fake_http_request(gh, 3)->body, "\"state\":\"closed\""));
	fake_http_stop(gh);
}

/*
 * A summary create whose answer is lost (GitHub may still make it) is looked
 * for only once it can no longer land, and posted again only when absent:
 * before, the retry 30 s later looked at once and, with a slow GitHub,
 * made a second summary.
 */
static void create_in_doubt_is_looked_for_once_settled(void **state)
{
	struct env *e = *state;
	struct fake_http *gh = fake_http_start();
	struct store_summary sum = { 0 };
	char page[1024];
	int64_t sent;
	enum err rc;

	storm_on(e, gh, 60000);  /* settled 70 s after the send: after the 30 s retry */

	enqueue(e, 0, 12, "HighLatency", 1, T0 - 1000);
	for (int i = 0; i < 12; i++)
		(void)route_next(e, &rc);
	fake_http_push(gh, 504, NULL, "");
	sent = e->now;
	assert_int_equal(storm_sync(e->storm, e->now), 1);
	assert_int_equal(fake_http_count(gh), 1);
	assert_int_equal(store_summary_get(e->st, 1, &sum), ERR_OK);
	assert_int_equal(sum.state, STORE_SUMMARY_CREATING);
	snprintf(page, sizeof(page),
		 "[{\"number\":5,\"state\":\"open\",\"created_at\":\"2026-11-18T11:06:40Z\","
		 "\"body\":\"summary <!-- alertbridge:key=%s -->\",\"repository_url\":"
		 "\"https://api.github.com/repos/my-org/alerts\"}]", sum.marker_key);
	store_summary_release(&sum);

	/* due again after STORM_RETRY_MS: it may still land, nothing is sent */
	e->now = sent + STORM_RETRY_MS;
	assert_int_equal(storm_sync(e->storm, e->now), 0);  /* the queue's turn */
	assert_int_equal(storm_sync(e->storm, e->now), 1);
	assert_int_equal(fake_http_count(gh), 1);

	/* settled: looked for, found, adopted; no second POST */
	e->now = sent + 70000 + STORM_RETRY_MS;
	fake_http_push(gh, 200, NULL, page);
	assert_int_equal(storm_sync(e->storm, e->now), 0);
	assert_int_equal(storm_sync(e->storm, e->now), 1);
	assert_int_equal(fake_http_count(gh), 2);
	assert_string_equal(fake_http_request(gh, 1)->method, "GET");
	assert_int_equal(store_summary_get(e->st, 1, &sum), ERR_OK);
	assert_int_equal(sum.state, STORE_SUMMARY_OPEN);
	assert_int_equal(sum.number, 5);
	store_summary_release(&sum);
	fake_http_stop(gh);
}

static void store_storm_errors(void **state)
{
	struct env *e = *state;
	struct store_summary s = { 0 };
	struct store_member m = { .key = (char *)"aaaa", .summary_id = 1 };
	struct store_issue row = { .receiver = (char *)"default", .key = (char *)"bbbb",
				   .repo = (char *)"o/n", .state = STORE_ISSUE_OPEN };
	struct buf err = BUF_INIT;

	assert_int_equal(store_summary_add(e->st, &s, &err), ERR_INVALID);
	assert_string_equal(buf_str(&err),
			    "store: summary: receiver, repo, alertname and marker_key needed");
	assert_int_equal(store_member_fold(e->st, 1, &row, &m, 1, &err), ERR_INVALID);
	assert_string_equal(buf_str(&err), "store: member key \"aaaa\" is not the row's \"bbbb\"");
	m.key = (char *)"bbbb";
	assert_int_equal(store_member_fold(e->st, 999, &row, &m, 1, &err), ERR_NOTFOUND);
	assert_string_equal(buf_str(&err), "store: event 999 does not exist");
	s.id = 42;
	s.repo = (char *)"o/n";
	s.state = STORE_SUMMARY_OPEN;
	assert_int_equal(store_summary_save(e->st, &s, &err), ERR_NOTFOUND);
	assert_string_equal(buf_str(&err), "store: summary 42 does not exist");
	s.state = (enum store_summary_state)9;  /* none of the three */
	assert_int_equal(store_summary_save(e->st, &s, &err), ERR_INVALID);
	assert_string_equal(buf_str(&err),
			    "store: summary: repo and state (creating, open or closed) needed");
	assert_int_equal(store_pending_creates(e->st, NULL, 0), -1);
	buf_release(&err);
}

static void gh_set_body_rejects_empty(void **state)
{
	struct env *e = *state;
	struct buf err = BUF_INIT;

	assert_int_equal(gh_issue_set_body(e->gh, "o/n", 3, "t", "", &err), ERR_INVALID);
	assert_string_equal(buf_str(&err), "issue #3: empty body");
	assert_int_equal(gh_issue_set_body(e->gh, "o/n", 3, "", "b", &err), ERR_INVALID);
	assert_string_equal(buf_str(&err), "issue #3: empty title");
	assert_int_equal(gh_issue_set_body(e->gh, "o/n", 3, NULL, "b", &err), ERR_OK);
	buf_release(&err);
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	cmocka_unit_test(should_fold_follows_the_budget),
	cmocka_unit_test(member_apply_follows_episodes),
	cmocka_unit_test(count_human_groups_thousands),
	cmocka_unit_test(member_line_and_alertname),
	cmocka_unit_test(marker_key_is_unique_per_summary),
	cmocka_unit_test(summary_text_counts_and_lists),
	cmocka_unit_test(summary_text_is_bounded),
	T(storm_folds_then_subsides),
	T(pending_creates_counts_up_to_a_bound),
	T(storm_disabled_passes),
	T(summary_life_cycle),
	T(refused_rewrite_waits_for_a_change),
	T(create_in_doubt_is_looked_for_once_settled),
	T(store_storm_errors),
	T(gh_set_body_rejects_empty))
