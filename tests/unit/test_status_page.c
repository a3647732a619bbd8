/*
 * test_status_page.c - the on-call page's rendering (web/status_page.c):
 * escaping of every value, the filters, the caps, the issue link, the last
 * event, the dead letters' retry command and the queue's age, over an
 * in-memory store at a fixed clock.
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
#include "store/store_events.h"
#include "store/store_map.h"
#include "store/store_silences.h"
#include "tests/unit/helpers/bridge_fixture.h"
#include "tests/unit/helpers/store_fixture.h"
#include "web/status_page.h"

#define NOW INT64_C(1700000600000) /* 10 minutes after sfx_mkrow()'s episode start */

static int64_t fixed_now(void *ctx)
{
	return ctx ? *(int64_t *)ctx : NOW;
}

/* Render st's page (no bridge, no janitor) with filter f and at most max_rows per section. */
static char *render(struct store *st, const struct status_filter *f, int max_rows)
{
	struct status_page_options o = { 0 };
	struct status_page *p;
	struct buf out = BUF_INIT;

	o.store = st;
	o.max_rows = max_rows;
	o.now_ms = fixed_now;
	p = status_page_new(&o);
	status_page_render(p, f, &out);
	status_page_free(p);
	return buf_detach(&out);
}

static int count(const char *s, const char *needle)
{
	int n = 0;

	for (s = strstr(s, needle); s; s = strstr(s + 1, needle))
		n++;
	return n;
}

static void put(struct store *st, const char *receiver, const char *key, int64_t number,
		const char *alertname, const char *title, int resolved, const char *dead)
{
	struct store_issue row = sfx_mkrow(receiver, key, number);

	row.alertname = (char *)alertname;
	row.title = (char *)title;
	row.dead_reason = (char *)dead;
	if (resolved)
		row.resolved_ends_ms = row.episode_starts_ms + 1000;
	assert_int_equal(store_issue_put(st, &row), ERR_OK);
}

static void escapes_every_value(void **state)
{
	struct store *st = sfx_open_ok(":memory:");
	struct status_filter f = { NULL, NULL, "<x\"" };
	char *html;

	(void)state;
	put(st, "a&b", "k1", 1, "<script>alert(1)</script>",
	    "\"><img src=x onerror=alert(2)>", 0, "bad <b>repo</b>");
	html = render(st, NULL, 0);
	assert_null(strstr(html, "<script>alert"));
	assert_null(strstr(html, "<img"));
	assert_null(strstr(html, "<b>repo"));
	sfx_assert_contains(html, "&lt;script&gt;alert(1)&lt;/script&gt;");
	sfx_assert_contains(html, "&quot;&gt;&lt;img src=x onerror=alert(2)&gt;");
	sfx_assert_contains(html, "a&amp;b");
	sfx_assert_contains(html, "Dead letter: bad &lt;b&gt;repo&lt;/b&gt;");
	sfx_assert_contains(html, "<meta name=\"viewport\" content=\"width=device-width");
	assert_null(strstr(html, "<script"));
	free(html);
	/* The filter's own value is echoed into the form's value attribute, escaped. */
	html = render(st, &f, 0);
	sfx_assert_contains(html, "value=\"&lt;x&quot;\"");
	free(html);
	store_close(st);
}

/*
 * One filter of filters_by_state_receiver_and_alertname(): the page shows cards cards in
 * all, state_cards of them of class "alert <f.state>" (-1: not counted), has has in it and
 * lacks lacks (NULL: not checked).
 */
struct filter_case {
	struct status_filter f;
	int cards, state_cards;
	const char *has, *lacks;
};

static const char *or_none(const char *s)
{
	return s ? s : "-";
}

static const struct filter_case filter_cases[] = {
	/* no filter: k1 firing, k2 resolved, k3 dead, k4 dry-run */
	{ { NULL, NULL, NULL }, 4, -1, "<b>1</b>alerts firing", NULL },
	{ { NULL, "firing", NULL }, 1, 1, "t1", NULL },
	{ { NULL, "resolved", NULL }, 1, 1, NULL, NULL },
	{ { NULL, "dead-lettered", NULL }, -1, 1,
	  "alertbridge map retry k3 <span class=\"nw\">--receiver=oncall</span>", NULL },
	{ { NULL, "dry-run", NULL }, -1, 1, "CertExpiry", NULL },
	{ { NULL, "burning", NULL }, 0, -1, "Unknown state filter \"burning\"", NULL },
	{ { "platform", NULL, NULL }, 1, -1, "CertExpiry", NULL },
	{ { NULL, NULL, "diskf" }, 2, -1, NULL, "TargetDown" }, /* case-insensitive substring */
};

static void filters_by_state_receiver_and_alertname(void **state)
{
	struct store *st = sfx_open_ok(":memory:");

	(void)state;
	put(st, "oncall", "k1", 1, "DiskFull", "t1", 0, NULL);
	put(st, "oncall", "k2", 2, "TargetDown", "t2", 1, NULL);
	put(st, "oncall", "k3", 3, "DiskFull", "t3", 0, "GitHub said 422");
	put(st, "platform", "k4", 0, "CertExpiry", "t4", 0, NULL);
	for (size_t i = 0; i < sizeof(filter_cases) / sizeof(filter_cases[0]); i++) {
		const struct filter_case *c = &filter_cases[i];
		char *html = render(st, &c->f, 0), class[64];
		int state_cards = -1;

		if (c->state_cards >= 0) {
			snprintf(class, sizeof(class), "<article class=\"card alert %s\"",
				 c->f.state);
			state_cards = count(html, class);
		}
		if ((c->cards >= 0 && count(html, "<article class=\"card alert ") != c->cards) ||
		    state_cards != c->state_cards || (c->has && !strstr(html, c->has)) ||
		    (c->lacks && strstr(html, c->lacks)))
			fail_msg("filter %zu (receiver %s, state %s, alertname %s): %d cards, %d "
				 "of the state; want %d, %d, \"%s\" in, \"%s\" out: %s", i,
				 or_none(c->f.receiver), or_none(c->f.state),
				 or_none(c->f.alertname),
				 count(html, "<article class=\"card alert "), state_cards, c->cards,
				 c->state_cards, or_none(c->has), or_none(c->lacks), html);
		free(html);
	}
	store_close(st);
}

static void caps_rows_and_says_how_many_more(void **state)
{
	struct store *st = sfx_open_ok(":memory:");
	char key[16], *html;

	(void)state;
	for (int i = 0; i < 7; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put(st, "oncall", key, i + 1, "DiskFull", "t", 0, NULL);
	}
	html = render(st, NULL, 3);
	assert_int_equal(count(html, "<article class=\"card alert "), 3);
	sfx_assert_contains(html, "4 more not shown");
	free(html);
	html = render(st, NULL, 0);
	assert_int_equal(count(html, "<article class=\"card alert "), 7);
	assert_null(strstr(html, "more not shown"));
	free(html);
	store_close(st);

	/* Firing ones first: the cap never hides one behind resolved alerts (keys sort first). */
	st = sfx_open_ok(":memory:");
	for (int i = 0; i < 3; i++) {
		snprintf(key, sizeof(key), "a%d", i);
		put(st, "oncall", key, i + 1, "Old", "t", 1, NULL);
	}
	put(st, "oncall", "z1", 8, "New", "t", 0, NULL);
	put(st, "oncall", "z2", 9, "New", "t", 0, NULL);
	html = render(st, NULL, 2);
	assert_int_equal(count(html, "<article class=\"card alert firing\""), 2);
	assert_int_equal(count(html, "<article class=\"card alert "), 2);
	sfx_assert_contains(html, "<h2>Alerts <small>2 firing, 3 resolved</small></h2>");
	sfx_assert_contains(html, "3 more not shown");
	free(html);
	html = render(st, NULL, 3);
	assert_int_equal(count(html, "<article class=\"card alert "), 3);
	assert_true(strstr(html, "alert resolved") > strstr(html, "alert firing"));
	free(html);
	store_close(st);
}

static void last_event_since_and_queue_age(void **state)
{
	struct store *st = sfx_open_ok(":memory:");
	struct store_event ev = sfx_mkev("bridge", "oncall", "k1", "firing");
	char *html;

	(void)state;
	put(st, "oncall", "k1", 1, "DiskFull", "t1", 0, NULL);
	ev.repeat_state = (char *)"my-org/cluster-alerts";
	ev.received_at_ms = NOW - 125000;
	assert_int_equal(store_enqueue(st, &ev, 1, NULL), ERR_OK);
	html = render(st, NULL, 0);
	sfx_assert_contains(html, "Since <time datetime=\"2023-11-14T22:13:20Z\">"
				  "2023-11-14T22:13:20Z</time> (10m ago)");
	sfx_assert_contains(html, "Last event: firing <time datetime=\"2023-11-14T22:21:15Z\">"
				  "2023-11-14T22:21:15Z</time> (2m ago), queued (0 failed attempts)");
	sfx_assert_contains(html, "<div class=\"tile\"><b>1</b>GitHub queue<br>oldest 2m");
	sfx_assert_contains(html, "<meta http-equiv=\"refresh\" content=\"60\">");
	free(html);
	/* Past 15 minutes the queue's tile turns red. */
	ev.received_at_ms = NOW - 16 * 60 * 1000;
	ev.status = (char *)"resolved";
	ev.ends_at_ms = NOW - 17 * 60 * 1000;
	assert_int_equal(store_enqueue(st, &ev, 1, NULL), ERR_OK);
	html = render(st, NULL, 0);
	sfx_assert_contains(html, "<div class=\"tile bad\"><b>2</b>GitHub queue<br>oldest 16m");
	free(html);
	store_close(st);
}

static void active_silence_until_and_by_whom(void **state)
{
	struct store *st = sfx_open_ok(":memory:");
	struct store_silence s = { "oncall", "k1", "8d1c-silence", "octocat", NOW + 7200000,
				   NOW - 60000, 0 };
	char *html;

	(void)state;
	put(st, "oncall", "k1", 1, "DiskFull", "t1", 0, NULL);
	put(st, "oncall", "k2", 2, "DiskFull", "t2", 0, NULL);
	assert_int_equal(store_silence_put(st, &s), ERR_OK);
	s.silence_id = "ended";
	s.ends_at_ms = NOW - 1;
	assert_int_equal(store_silence_put(st, &s), ERR_OK);
	html = render(st, NULL, 0);
	sfx_assert_contains(html, "Silenced until <time datetime=\"2023-11-15T00:23:20Z\">"
				  "2023-11-15T00:23:20Z</time> (in 2h0m) by octocat · silence "
				  "<code>8d1c-silence</code>");
	assert_int_equal(count(html, "Silenced until"), 1);  /* not the ended one, not k2 */
	free(html);
	/* /unsilence expired it: no longer shown. */
	assert_int_equal(store_silence_expired(st, "oncall", "k1", "8d1c-silence", NOW), ERR_OK);
	html = render(st, NULL, 0);
	assert_int_equal(count(html, "Silenced until"), 0);
	free(html);
	store_close(st);
}

static void dead_letters_with_reason_and_retry(void **state)
{
	struct store *st = sfx_open_ok(":memory:");
	struct store_event ev = sfx_mkev("bridge", "team a", "fp'1", "firing");
	struct status_filter f = { "oncall", NULL, NULL };
	char *html;

	(void)state;
	ev.dead_reason = (char *)"repository o/r not found or no access";
	ev.payload = (char *)"{\"labels\":{\"alertname\":\"CertExpiry\"}}";
	assert_int_equal(store_enqueue(st, &ev, 1, NULL), ERR_OK);
	html = render(st, NULL, 0);
	assert_int_equal(count(html, "<article class=\"card dead-lettered deadletter\""), 1);
	sfx_assert_contains(html, "CertExpiry");
	sfx_assert_contains(html, "Reason: repository o/r not found or no access");
	/* Quoted for a shell, then escaped for HTML. */
	sfx_assert_contains(html, "alertbridge map retry 'fp'\\''1' <span class=\"nw\">--receiver='team a'</span>");
	sfx_assert_contains(html, "<b>1</b>dead letters");
	free(html);
	html = render(st, &f, 0);  /* another receiver's */
	assert_int_equal(count(html, "deadletter\""), 0);
	free(html);
	f.receiver = NULL;
	f.state = "firing";  /* dead letters are not firing */
	html = render(st, &f, 0);
	assert_null(strstr(html, "id=\"dead\""));
	free(html);
	store_close(st);
}

static void links_the_issue_on_github(void **state)
{
	struct env e;
	struct status_page_options o = { 0 };
	struct status_page *p;
	struct buf out = BUF_INIT, want = BUF_INIT;
	struct store_issue row;

	(void)state;
	bfx_env_start(&e, NULL, NULL);
	row = sfx_mkrow("default", FP, 12);
	row.repo = (char *)"my-org/alerts";
	row.title = (char *)"Disk full";
	assert_int_equal(store_issue_put(e.st, &row), ERR_OK);
	o.store = e.st;
	o.bridge = e.b;
	o.cfg = e.cfg;
	o.now_ms = fixed_now;
	p = status_page_new(&o);
	status_page_render(p, NULL, &out);
	bridge_issue_url(e.b, "my-org/alerts", 12, &want);
	assert_string_equal(buf_str(&want) + strlen(buf_str(&want)) - strlen("/my-org/alerts/issues/12"),
			    "/my-org/alerts/issues/12");
	buf_printf(&want, "\">Disk full</a>");
	sfx_assert_contains(buf_str(&out), buf_str(&want));
	sfx_assert_contains(buf_str(&out), "<option value=\"default\">default</option>");
	sfx_assert_contains(buf_str(&out), "GitHub API calls left");
	status_page_free(p);
	buf_release(&out);
	buf_release(&want);
	bfx_env_stop(&e);
}

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	cmocka_unit_test(escapes_every_value),
	cmocka_unit_test(filters_by_state_receiver_and_alertname),
	cmocka_unit_test(caps_rows_and_says_how_many_more),
	cmocka_unit_test(last_event_since_and_queue_age),
	cmocka_unit_test(active_silence_until_and_by_whom),
	cmocka_unit_test(dead_letters_with_reason_and_retry),
	cmocka_unit_test(links_the_issue_on_github))
