/*
 * test_bridge.c - the reconciler against a scripted GitHub (fake_http) and a
 * real sqlite store, in virtual time: each row of DESIGN.md's state table
 * produces exactly the calls it should, the map row follows, and failures
 * retry, resume or dead-letter as documented.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "bridge/issue.h"
#include "core/am.h"
#include "bridge/bridge.h"
#include "bridge/render.h"
#include "core/config.h"
#include "core/log.h"
#include "core/store.h"
#include "tests/unit/helpers/fake_http.h"

#define T0 INT64_C(1795000000000) /* 2026-11-18T... UTC, the virtual clock's start */
#define FP "43257ea8bc3d7780"

struct env {
	struct fake_http *gh;
	struct config *cfg;
	struct store *st;
	struct render *render;
	struct bridge *b;
	int64_t now;
	int leading;       /* what may_act answers */
	size_t lose_after; /* >0: may_act turns 0 once GitHub saw this many requests */
};

/* The leader-election hook (bridge_options.may_act), as main.c wires the Lease. */
static int env_may_act(void *ctx)
{
	struct env *e = ctx;

	if (e->lose_after && fake_http_count(e->gh) >= e->lose_after)
		e->leading = 0;
	return e->leading;
}

static int64_t clock_now(void *ctx)
{
	return ((struct env *)ctx)->now;
}

static void clock_sleep(void *ctx, int64_t ms)
{
	((struct env *)ctx)->now += ms;
}

/*
 * scanned: record the repository as already scanned for markers, so the
 * test sees only the calls of its events (the map rebuild has its own tests).
 */
static void env_start_scan(struct env *e, const char *extra_github, const char *receiver_extra,
			   int scanned)
{
	char yaml[2048];
	struct buf err = BUF_INIT;
	struct bridge_options bo = { 0 };

	memset(e, 0, sizeof(*e));
	e->now = T0;
	e->gh = fake_http_start();
	snprintf(yaml, sizeof(yaml),
		 "github:\n  api_url: %s\n  content_per_minute: 80\n%s"
		 "receivers:\n  - name: default\n    repo: my-org/alerts\n"
		 "    labels: [alert, \"severity:{{labels.severity}}\"]\n%s",
		 fake_http_url(e->gh), extra_github ? extra_github : "",
		 receiver_extra ? receiver_extra : "");
	setenv("GITHUB_TOKEN", "ghp_test_token", 1);
	assert_int_equal(cfg_parse(yaml, strlen(yaml), "test.yml", NULL, &e->cfg, &err), ERR_OK);
	assert_int_equal(store_open(":memory:", &e->st, &err), ERR_OK);
	assert_int_equal(render_new(e->cfg, &e->render, &err), ERR_OK);
	bo.cfg = e->cfg;
	bo.store = e->st;
	bo.render = e->render;
	bo.user_agent = "alertbridge/test";
	bo.now_ms = clock_now;
	bo.sleep_ms = clock_sleep;
	bo.clock_ctx = e;
	bo.gh_max_attempts = 2;
	bo.may_act = env_may_act;
	bo.may_act_ctx = e;
	e->leading = 1;
	e->b = bridge_new(&bo);
	if (scanned)
		assert_int_equal(store_scan_done(e->st, "default", "my-org/alerts", T0), ERR_OK);
	buf_release(&err);
}

static void env_start(struct env *e, const char *extra_github, const char *receiver_extra)
{
	env_start_scan(e, extra_github, receiver_extra, 1);
}

static void env_stop(struct env *e)
{
	bridge_free(e->b);
	render_free(e->render);
	store_close(e->st);
	cfg_free(e->cfg);
	fake_http_stop(e->gh);
}

/* Queue one alert event for FP with that severity label, as intake would. */
static void enqueue_sev(struct env *e, const char *status, const char *starts, const char *ends,
			const char *severity)
{
	char body[2048];
	struct am_payload *p = NULL;
	struct am_error aerr;
	struct buf ev = BUF_INIT, err = BUF_INIT;
	struct store_event se = { 0 };

	snprintf(body, sizeof(body),
		 "{\"version\":\"4\",\"status\":\"%s\",\"receiver\":\"default\",\"groupKey\":\"{}:{}\","
		 "\"externalURL\":\"http://am:9093\",\"alerts\":[{\"status\":\"%s\",\"labels\":"
		 "{\"alertname\":\"DiskFull\",\"namespace\":\"prod\",\"pod\":\"db-0\",\"severity\":"
		 "\"%s\"},\"annotations\":{\"summary\":\"DiskFull on db-0\"},\"startsAt\":"
		 "\"%s\",\"endsAt\":\"%s\",\"fingerprint\":\"" FP "\"}]}",
		 status, status, severity, starts, ends);
	assert_int_equal(am_parse(body, strlen(body), NULL, &p, &aerr), ERR_OK);
	assert_int_equal(am_event_json(p, 0, &ev), ERR_OK);
	se.kind = "bridge";
	se.receiver = "default";
	se.key = FP;
	se.status = (char *)status;
	se.starts_at_ms = p->alerts[0].starts_at_ms;
	se.ends_at_ms = p->alerts[0].ends_at_ms;
	se.payload = ev.data;
	se.received_at_ms = e->now;
	assert_int_equal(store_enqueue(e->st, &se, 1, &err), ERR_OK);
	am_payload_free(p);
	buf_release(&ev);
	buf_release(&err);
}

/* Queue one alert event for FP as intake would (severity critical). */
static void enqueue(struct env *e, const char *status, const char *starts, const char *ends)
{
	enqueue_sev(e, status, starts, ends, "critical");
}

#define ISSUE_JSON(n, state, reason, closed)                                              \
	"{\"number\":" #n ",\"state\":\"" state "\",\"state_reason\":" reason                  \
	",\"closed_at\":" closed ",\"html_url\":\"https://github.com/my-org/alerts/issues/" #n \
	"\",\"repository_url\":\"https://api.github.com/repos/my-org/alerts\"}"

static void assert_request(struct env *e, size_t i, const char *method, const char *uri,
			   const char *body_part)
{
	const struct fake_request *r = fake_http_request(e->gh, i);
	assert_non_null(r);
	assert_string_equal(r->method, method);
	assert_string_equal(r->uri, uri);
	if (body_part && !strstr(r->body, body_part))
		fail_msg("request %zu body lacks %s: %s", i, body_part, r->body);
	assert_string_equal(fake_request_header(r, "Authorization"), "Bearer ghp_test_token");
	assert_string_equal(fake_request_header(r, "X-GitHub-Api-Version"), "2022-11-28");
}

/*
 * The next step closes open issue n (GitHub answers the GET, the comment and
 * the PATCH, after `first` answers already pushed for calls before them).
 */
static void step_closes(struct env *e, int n, size_t first)
{
	char open[512], closed[512], path[64], comments[80];
	size_t before = fake_http_count(e->gh) + first;

	snprintf(open, sizeof(open), "{\"number\":%d,\"state\":\"open\",\"state_reason\":null,"
		 "\"repository_url\":\"https://api.github.com/repos/my-org/alerts\"}", n);
	snprintf(closed, sizeof(closed), "{\"number\":%d,\"state\":\"closed\",\"state_reason\":"
		 "\"completed\",\"closed_at\":\"2026-11-18T11:00:00Z\",\"repository_url\":"
		 "\"https://api.github.com/repos/my-org/alerts\"}", n);
	snprintf(path, sizeof(path), "/repos/my-org/alerts/issues/%d", n);
	snprintf(comments, sizeof(comments), "%s/comments", path);
	fake_http_push(e->gh, 200, NULL, open);
	fake_http_push(e->gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e->gh, 200, NULL, closed);
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), before + 3);  /* and nothing else */
	assert_request(e, before, "GET", path, NULL);
	assert_request(e, before + 1, "POST", comments, "resolved at");
	assert_request(e, before + 2, "PATCH", path, "\"state\":\"closed\"");
}

static void get_row(struct env *e, struct store_issue *row)
{
	assert_int_equal(store_issue_get(e->st, "default", FP, row), ERR_OK);
}

static void fire_resolve_refire_cycle(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, NULL);
	/* firing, no row: one create with title, labels and the marker. */
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 1);
	assert_request(&e, 0, "POST", "/repos/my-org/alerts/issues",
		       "\"title\":\"[critical] DiskFull: DiskFull on db-0\"");
	assert_non_null(strstr(fake_http_request(e.gh, 0)->body,
			       "<!-- alertbridge:key=" FP " -->\""));
	assert_non_null(strstr(fake_http_request(e.gh, 0)->body,
			       "\"labels\":[\"alert\",\"severity:critical\"]"));
	get_row(&e, &row);
	assert_int_equal(row.number, 7);
	assert_string_equal(row.state, "open");
	store_issue_release(&row);

	/* the same episode again (repeat_interval, HA twin): nothing. */
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 1);
	assert_int_equal(bridge_step(e.b), 0);

	/* resolved: refresh, comment, close as completed. */
	e.now += 60000;
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:49:48.539Z");
	fake_http_push(e.gh, 200, NULL, ISSUE_JSON(7, "open", "null", "null"));
	fake_http_push(e.gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(7, "closed", "\"completed\"", "\"2026-11-21T01:50:00Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 4);
	assert_request(&e, 1, "GET", "/repos/my-org/alerts/issues/7", NULL);
	assert_request(&e, 2, "POST", "/repos/my-org/alerts/issues/7/comments", "resolved at");
	assert_request(&e, 3, "PATCH", "/repos/my-org/alerts/issues/7",
		       "\"state_reason\":\"completed\"");
	get_row(&e, &row);
	assert_string_equal(row.state, "closed");
	store_issue_release(&row);

	/* a new episode within reopen_window: reopen, then comment. */
	e.now += 3600000;
	enqueue(&e, "firing", "2026-11-21T03:00:00Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(7, "closed", "\"completed\"", "\"2026-11-21T01:50:00Z\""));
	fake_http_push(e.gh, 200, NULL, ISSUE_JSON(7, "open", "\"reopened\"", "null"));
	fake_http_push(e.gh, 201, NULL, "{\"id\":2}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 7);
	assert_request(&e, 5, "PATCH", "/repos/my-org/alerts/issues/7",
		       "\"state_reason\":\"reopened\"");
	assert_request(&e, 6, "POST", "/repos/my-org/alerts/issues/7/comments", "Reopened");
	get_row(&e, &row);
	assert_string_equal(row.state, "open");
	assert_int_equal(row.number, 7);
	store_issue_release(&row);
	env_stop(&e);
}

/*
 * Leader election: a replica that does not hold the Lease drains nothing, and one that
 * loses it mid-event stops before its next GitHub call; the event stays queued, not
 * counted as a failed attempt, and the leader finishes it without a second comment.
 */
static void not_the_leader_drains_nothing(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, NULL);
	e.leading = 0;
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	assert_int_equal(bridge_step(e.b), 0);
	assert_int_equal(bridge_step(e.b), 0);
	assert_int_equal(fake_http_count(e.gh), 0);
	assert_int_equal(store_pending_count(e.st, "bridge"), 1);
	assert_int_equal(store_issue_get(e.st, "default", FP, &row), ERR_NOTFOUND);

	/* leading again: the event is handled as usual */
	e.leading = 1;
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 1);
	assert_request(&e, 0, "POST", "/repos/my-org/alerts/issues", NULL);
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);
	env_stop(&e);
}

static void lease_lost_mid_event_stops_before_the_next_call(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	struct store_event ev = { 0 };
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	/* resolved: the Lease is lost right after the refresh GET, before the comment */
	e.now += 60000;
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:49:48.539Z");
	fake_http_push(e.gh, 200, NULL, ISSUE_JSON(7, "open", "null", "null"));
	e.lose_after = 2;
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 2);
	assert_request(&e, 1, "GET", "/repos/my-org/alerts/issues/7", NULL);
	assert_int_equal(bridge_step(e.b), 0);
	assert_int_equal(fake_http_count(e.gh), 2);
	assert_int_equal(store_pending_count(e.st, "bridge"), 1);
	get_row(&e, &row);
	assert_string_equal(row.state, "open");
	store_issue_release(&row);

	/*
	 * The Lease again: not a failed attempt, so it is due at once.  The note said the
	 * comment may have been posted: its marker is looked for first, then one comment,
	 * one close.
	 */
	e.lose_after = 0;
	e.leading = 1;
	assert_int_equal(store_next_event(e.st, "bridge", e.now, &ev), ERR_OK);
	assert_int_equal(ev.attempts, 0);
	store_event_release(&ev);
	fake_http_push(e.gh, 200, NULL, "[]");
	fake_http_push(e.gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(7, "closed", "\"completed\"", "\"2026-11-21T01:50:00Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 5);
	assert_non_null(strstr(fake_http_request(e.gh, 2)->uri,
			       "/repos/my-org/alerts/issues/7/comments"));
	assert_request(&e, 3, "POST", "/repos/my-org/alerts/issues/7/comments", "resolved at");
	assert_request(&e, 4, "PATCH", "/repos/my-org/alerts/issues/7",
		       "\"state_reason\":\"completed\"");
	get_row(&e, &row);
	assert_string_equal(row.state, "closed");
	store_issue_release(&row);
	env_stop(&e);
}

/*
 * A new episode after reopen_window (0 here: every re-fire of a closed issue)
 * makes a new issue that links the old one; the row then points at the new
 * issue and remembers the old, and the next resolve closes the new one.
 */
static void refire_after_window_links_and_keeps_the_new_issue(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, "    reopen_window: 0s\n");
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	e.now += 60000;
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:49:48.539Z");
	step_closes(&e, 7, 0);
	e.now += 60000;
	enqueue(&e, "firing", "2026-11-21T03:00:00Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(7, "closed", "\"completed\"", "\"2026-11-18T11:00:00Z\""));
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(8, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 6);
	assert_request(&e, 5, "POST", "/repos/my-org/alerts/issues",
		       "Previous issue: [#7](");
	get_row(&e, &row);
	assert_int_equal(row.number, 8);
	assert_int_equal(row.previous_number, 7);
	assert_string_equal(row.state, "open");
	store_issue_release(&row);

	/* the resolve closes the new issue */
	e.now += 60000;
	enqueue(&e, "resolved", "2026-11-21T03:00:00Z", "2026-11-21T03:30:00Z");
	step_closes(&e, 8, 0);
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);
	env_stop(&e);
}

/*
 * A new episode on the open issue renders another severity: the label the
 * issue lacks is added (compared without case) before the comment; labels
 * GitHub rejects do not hold the comment back.
 */
#define LABELED_JSON(n, labels)                                                            \
	"{\"number\":" #n ",\"state\":\"open\",\"state_reason\":null,\"closed_at\":null,"     \
	"\"labels\":" labels ",\"repository_url\":\"https://api.github.com/repos/my-org/alerts\"}"

static void new_episode_adds_the_labels_the_issue_lacks(void **state)
{
	struct env e;
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue_sev(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z", "warning");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	enqueue_sev(&e, "firing", "2026-11-21T02:00:00Z", "0001-01-01T00:00:00Z", "critical");
	fake_http_push(e.gh, 200, NULL,
		       LABELED_JSON(7, "[{\"name\":\"ALERT\"},{\"name\":\"severity:warning\"},"
				    "{\"name\":\"team:db\"}]"));
	fake_http_push(e.gh, 200, NULL, "[]");
	fake_http_push(e.gh, 201, NULL, "{\"id\":1}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 4);
	assert_request(&e, 2, "POST", "/repos/my-org/alerts/issues/7/labels",
		       "{\"labels\":[\"severity:critical\"]}");
	assert_request(&e, 3, "POST", "/repos/my-org/alerts/issues/7/comments", "event=firing");

	/* nothing new to add: no label call; a 422 on labels still lets the comment go */
	enqueue_sev(&e, "firing", "2026-11-21T03:00:00Z", "0001-01-01T00:00:00Z", "critical");
	fake_http_push(e.gh, 200, NULL,
		       LABELED_JSON(7, "[\"alert\",\"severity:critical\"]"));
	fake_http_push(e.gh, 201, NULL, "{\"id\":2}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 6);
	assert_request(&e, 5, "POST", "/repos/my-org/alerts/issues/7/comments", "event=firing");
	enqueue_sev(&e, "firing", "2026-11-21T04:00:00Z", "0001-01-01T00:00:00Z", "page");
	fake_http_push(e.gh, 200, NULL, LABELED_JSON(7, "[]"));
	fake_http_push(e.gh, 422, NULL, "{\"message\":\"Validation Failed\"}");
	fake_http_push(e.gh, 201, NULL, "{\"id\":3}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 9);
	assert_request(&e, 7, "POST", "/repos/my-org/alerts/issues/7/labels",
		       "{\"labels\":[\"alert\",\"severity:page\"]}");
	assert_request(&e, 8, "POST", "/repos/my-org/alerts/issues/7/comments", "event=firing");
	assert_int_equal(store_dead_count(e.st), 0);
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);
	env_stop(&e);
}

static void close_resumes_after_failed_state_change(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	struct store_event ev;
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	fake_http_push(e.gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	fake_http_push(e.gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e.gh, 502, NULL, "{\"message\":\"Server Error\"}");
	fake_http_push(e.gh, 502, NULL, "{\"message\":\"Server Error\"}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 5);
	/* kept for retry, with the comment recorded as done */
	assert_int_equal(store_next_event(e.st, "bridge", e.now + 3600000, &ev), ERR_OK);
	assert_string_equal(ev.progress, "close:1");
	assert_int_equal(ev.attempts, 1);
	store_event_release(&ev);
	assert_int_equal(bridge_step(e.b), 0); /* not due yet */

	e.now += 3600000;
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(3, "closed", "\"completed\"", "\"2026-11-21T02:00:00Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 6);
	assert_request(&e, 5, "PATCH", "/repos/my-org/alerts/issues/3", "\"state\":\"closed\"");
	for (size_t i = 0; i < fake_http_count(e.gh); i++) /* one comment, not two */
		if (i != 2)
			assert_null(strstr(fake_http_request(e.gh, i)->uri, "/comments"));
	get_row(&e, &row);
	assert_string_equal(row.state, "closed");
	store_issue_release(&row);
	env_stop(&e);
}

/*
 * A crash between posting a comment and recording it: the note "close:0~"
 * written before the POST makes the retry look for the comment's marker
 * first, so the comment is not posted twice; without the comment on the
 * issue it is posted.
 */
#define RESOLVED_MARKER \
	"<!-- alertbridge:episode=2026-11-21T00:49:48.539Z event=resolved-1795222800000 -->"

static void comment_in_doubt_is_looked_for_first(void **state)
{
	struct env e;
	struct store_event ev;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);

	/* The comment's POST fails: the note written before it stays ("~": maybe posted). */
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	fake_http_push(e.gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	fake_http_push(e.gh, 404, NULL, "{\"message\":\"Not Found\"}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 3);
	assert_request(&e, 2, "POST", "/repos/my-org/alerts/issues/3/comments", RESOLVED_MARKER);
	assert_int_equal(store_next_event(e.st, "bridge", e.now + 3600000, &ev), ERR_OK);
	assert_string_equal(ev.progress, "close:0~");
	store_event_release(&ev);

	/* The retry finds the comment on the issue (the POST did land): no second one. */
	e.now += 3600000;
	fake_http_push(e.gh, 200, NULL,
		       "[{\"id\":1,\"body\":\"resolved.\\n\\n" RESOLVED_MARKER "\","
		       "\"created_at\":\"2026-11-21T01:00:01Z\"}]");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(3, "closed", "\"completed\"", "\"2026-11-21T02:00:00Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 5);
	assert_string_equal(fake_http_request(e.gh, 3)->method, "GET");
	assert_non_null(strstr(fake_http_request(e.gh, 3)->uri,
			       "/repos/my-org/alerts/issues/3/comments"));
	assert_request(&e, 4, "PATCH", "/repos/my-org/alerts/issues/3", "\"state\":\"closed\"");
	get_row(&e, &row);
	assert_string_equal(row.state, "closed");
	store_issue_release(&row);
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);
	env_stop(&e);
}

static void comment_in_doubt_but_absent_is_posted(void **state)
{
	struct env e;
	struct store_event ev;
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	/* As a process killed right after writing the note leaves it. */
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	assert_int_equal(store_next_event(e.st, "bridge", e.now, &ev), ERR_OK);
	assert_int_equal(store_event_progress(e.st, ev.id, "close:0~"), ERR_OK);
	store_event_release(&ev);
	fake_http_push(e.gh, 200, NULL, "[]");
	fake_http_push(e.gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(3, "closed", "\"completed\"", "\"2026-11-21T02:00:00Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 4);
	assert_non_null(strstr(fake_http_request(e.gh, 1)->uri,
			       "/repos/my-org/alerts/issues/3/comments"));
	assert_request(&e, 2, "POST", "/repos/my-org/alerts/issues/3/comments", RESOLVED_MARKER);
	assert_request(&e, 3, "PATCH", "/repos/my-org/alerts/issues/3", "\"state\":\"closed\"");
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);
	env_stop(&e);
}

static void invalid_request_is_dead_lettered(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 422, NULL,
		       "{\"message\":\"Validation Failed\",\"errors\":[{\"resource\":\"Issue\","
		       "\"code\":\"custom\",\"field\":\"title\"}]}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 1);
	assert_int_equal(store_dead_count(e.st), 1);
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);
	assert_int_equal(store_issue_get(e.st, "default", FP, &row), ERR_NOTFOUND);
	assert_int_equal(bridge_step(e.b), 0); /* never retried */
	env_stop(&e);
}

/*
 * A 404 confirmed by GET /repos/{o}/{r} dead-letters the event with its
 * reason; the repository's next event is dead-lettered without a call; a
 * reload's bridge_retry_dead() re-queues both and GitHub is asked again.
 */
static void missing_repository_is_dead_lettered_until_retried(void **state)
{
	struct env e;
	struct store_event ev;
	int64_t n = 0;
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 404, NULL, "{\"message\":\"Not Found\"}");
	fake_http_push(e.gh, 404, NULL, "{\"message\":\"Not Found\"}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 2);
	assert_request(&e, 0, "POST", "/repos/my-org/alerts/issues", NULL);
	assert_request(&e, 1, "GET", "/repos/my-org/alerts", NULL);
	assert_int_equal(store_dead_count(e.st), 1);
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);

	enqueue(&e, "firing", "2026-11-21T02:00:00Z", "0001-01-01T00:00:00Z");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 2);  /* known missing: no call */
	assert_int_equal(store_dead_count(e.st), 2);

	assert_int_equal(bridge_retry_dead(e.b, &n), ERR_OK);
	assert_int_equal(n, 2);
	assert_int_equal(store_dead_count(e.st), 0);
	assert_int_equal(store_next_event(e.st, "bridge", e.now, &ev), ERR_OK);
	assert_string_equal(ev.last_error,
			    STORE_REQUEUED "repository my-org/alerts not found or no access");
	store_event_release(&ev);
	/* Its create was attempted: its marker is looked for first, then the POST. */
	fake_http_push(e.gh, 200, NULL, "[]");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(4, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 4);
	assert_string_equal(fake_http_request(e.gh, 2)->method, "GET");
	assert_request(&e, 3, "POST", "/repos/my-org/alerts/issues", "alertbridge:key=" FP);
	assert_int_equal(store_pending_count(e.st, "bridge"), 1);
	env_stop(&e);
}

/* Only a 404 from the repository endpoint counts: a 5xx there keeps the event queued. */
static void missing_repository_needs_a_404_from_github(void **state)
{
	struct env e;
	struct store_event ev;
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 404, NULL, "{\"message\":\"Not Found\"}");
	fake_http_push(e.gh, 502, NULL, "{\"message\":\"Bad Gateway\"}");
	fake_http_push(e.gh, 502, NULL, "{\"message\":\"Bad Gateway\"}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 3);
	assert_int_equal(store_dead_count(e.st), 0);
	assert_int_equal(store_next_event(e.st, "bridge", e.now + 3600000, &ev), ERR_OK);
	assert_int_equal(ev.attempts, 1);
	assert_non_null(strstr(ev.last_error, "404"));
	assert_non_null(strstr(ev.last_error, "is the repository there? giving up after 2"));
	store_event_release(&ev);
	/* The repository is there (the 404 was about something in it): retried, not dead. */
	e.now += 3600000;
	fake_http_push(e.gh, 200, NULL, "[]");  /* the marker of the create attempted */
	fake_http_push(e.gh, 404, NULL, "{\"message\":\"Not Found\"}");
	fake_http_push(e.gh, 200, NULL, "{\"full_name\":\"my-org/alerts\"}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 6);
	assert_request(&e, 5, "GET", "/repos/my-org/alerts", NULL);
	assert_int_equal(store_dead_count(e.st), 0);
	assert_int_equal(store_pending_count(e.st, "bridge"), 1);
	env_stop(&e);
}

/*
 * GitHub cannot assign one of the rendered assignees: its 422 names the login,
 * and the create is made once more without it; the alert is not dead-lettered,
 * and one issue is made.
 */
static void unassignable_assignee_is_dropped(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, "    assignees: [oncall, ghost]\n");
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 422, NULL,
		       "{\"message\":\"Validation Failed\",\"errors\":[{\"value\":\"ghost\","
		       "\"resource\":\"Issue\",\"field\":\"assignees\",\"code\":\"invalid\"}]}");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(6, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 2);
	assert_request(&e, 0, "POST", "/repos/my-org/alerts/issues",
		       "\"assignees\":[\"oncall\",\"ghost\"]");
	assert_request(&e, 1, "POST", "/repos/my-org/alerts/issues", "\"assignees\":[\"oncall\"]");
	assert_int_equal(store_dead_count(e.st), 0);
	get_row(&e, &row);
	assert_int_equal(row.number, 6);
	store_issue_release(&row);

	/* an error that names no login: every assignee is left out */
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	assert_int_equal(store_issue_forget(e.st, "default", FP), ERR_OK);
	fake_http_push(e.gh, 422, NULL,
		       "{\"message\":\"Validation Failed\",\"errors\":[{\"resource\":\"Issue\","
		       "\"field\":\"assignees\",\"code\":\"invalid\"}]}");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 4);
	assert_request(&e, 3, "POST", "/repos/my-org/alerts/issues", "\"assignees\":[]");
	assert_int_equal(store_dead_count(e.st), 0);
	env_stop(&e);
}

static void bad_token_keeps_the_event(void **state)
{
	struct env e;
	struct store_event ev;
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 401, NULL, "{\"message\":\"Bad credentials\"}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(store_dead_count(e.st), 0);
	assert_int_equal(store_next_event(e.st, "bridge", e.now + 3600000, &ev), ERR_OK);
	assert_int_equal(ev.attempts, 1);
	assert_non_null(strstr(ev.last_error, "401"));
	assert_null(strstr(ev.last_error, "ghp_test_token"));
	store_event_release(&ev);
	env_stop(&e);
}

static void deleted_issue_is_recreated(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(4, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	enqueue(&e, "firing", "2026-11-21T02:00:00Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 410, NULL, "{\"message\":\"This issue was deleted\"}");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(9, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 3);
	assert_request(&e, 2, "POST", "/repos/my-org/alerts/issues", "alertbridge:key=" FP);
	get_row(&e, &row);
	assert_int_equal(row.number, 9);
	store_issue_release(&row);
	env_stop(&e);
}

static void not_planned_is_respected_within_window(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, NULL);
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(5, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	/* a person closed it as "won't fix"; the alert resolves, then fires again */
	e.now += 60000;
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(5, "closed", "\"not_planned\"", "\"2026-11-21T00:55:00Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	enqueue(&e, "firing", "2026-11-21T02:00:00Z", "0001-01-01T00:00:00Z");
	assert_int_equal(bridge_step(e.b), 1);
	/* create, GET on resolve; the refire plans nothing from the closed row */
	for (size_t i = 0; i < fake_http_count(e.gh); i++) {
		const struct fake_request *r = fake_http_request(e.gh, i);
		if (i > 0)
			assert_string_equal(r->method, "GET");
	}
	get_row(&e, &row);
	assert_string_equal(row.state, "closed");
	assert_string_equal(row.state_reason, "not_planned");
	store_issue_release(&row);
	env_stop(&e);
}

static void dry_run_keeps_the_map_and_calls_nothing(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, "  dry_run: true\n", NULL);
	assert_true(bridge_dry_run(e.b));
	enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 0);
	get_row(&e, &row);
	assert_int_equal(row.number, 0);
	assert_string_equal(row.state, "closed");
	store_issue_release(&row);
	env_stop(&e);
}

/*
 * A row written in dry-run (number 0) whose issue exists on GitHub all the
 * same: the first live event finds it by its marker and acts on it, never on
 * issue 0.
 */
/* FP's row as dry-run writes it (number 0), for the episode 2026-11-21T00:49:48.539Z. */
static void put_dry_run_row(struct env *e)
{
	struct store_issue row = { 0 };

	row.receiver = "default";
	row.key = FP;
	row.repo = "my-org/alerts";
	row.state = "open";
	row.episode_starts_ms = INT64_C(1795222188539);
	row.created_at_ms = T0 - 600000;
	row.updated_at_ms = T0 - 600000;
	assert_int_equal(store_issue_put(e->st, &row), ERR_OK);
}

static void dry_run_row_finds_its_issue_by_marker(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start(&e, NULL, NULL);
	put_dry_run_row(&e);
	enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:00:00Z");
	fake_http_push(e.gh, 200, NULL,
		       "[{\"number\":12,\"state\":\"open\",\"state_reason\":null,\"closed_at\":null,"
		       "\"created_at\":\"2026-11-18T11:00:00Z\",\"body\":\"x\\n\\n<!-- "
		       "alertbridge:key=" FP " -->\",\"repository_url\":"
		       "\"https://api.github.com/repos/my-org/alerts\"}]");
	step_closes(&e, 12, 1);  /* after the marker lookup */
	assert_string_equal(fake_http_request(e.gh, 0)->method, "GET");
	assert_non_null(strstr(fake_http_request(e.gh, 0)->uri,
			       "/repos/my-org/alerts/issues?state=all&sort=created"));
	get_row(&e, &row);
	assert_int_equal(row.number, 12);
	assert_string_equal(row.state, "closed");
	store_issue_release(&row);
	assert_int_equal(store_pending_count(e.st, "bridge"), 0);

	/* another receiver's issue of the key is not taken: a firing creates its own */
	put_dry_run_row(&e);
	enqueue(&e, "firing", "2026-11-21T02:00:00Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 200, NULL,
		       "[{\"number\":13,\"state\":\"open\",\"created_at\":\"2026-11-18T11:01:00Z\","
		       "\"body\":\"x\\n\\n<!-- alertbridge:receiver=other --> <!-- alertbridge:key="
		       FP " -->\",\"repository_url\":\"https://api.github.com/repos/my-org/alerts\"}]");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(14, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 6);
	assert_request(&e, 5, "POST", "/repos/my-org/alerts/issues",
		       "<!-- alertbridge:receiver=default --> <!-- alertbridge:key=" FP " -->");
	get_row(&e, &row);
	assert_int_equal(row.number, 14);
	store_issue_release(&row);
	env_stop(&e);
}

static void unconfigured_receiver_is_dead_lettered(void **state)
{
	struct env e;
	struct store_event se = { 0 };
	struct buf err = BUF_INIT;
	(void)state;

	env_start(&e, NULL, NULL);
	se.kind = "bridge";
	se.receiver = "removed-team";
	se.key = FP;
	se.status = "firing";
	se.starts_at_ms = T0;
	se.payload = "{}";
	se.received_at_ms = T0;
	assert_int_equal(store_enqueue(e.st, &se, 1, &err), ERR_OK);
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(store_dead_count(e.st), 1);
	assert_int_equal(fake_http_count(e.gh), 0);
	buf_release(&err);
	env_stop(&e);
}

/* An issue in a list page, with its body and comment count. */
#define LISTED(n, state, closed, comments, body)                                           \
	"{\"number\":" #n ",\"state\":\"" state "\",\"state_reason\":null,\"closed_at\":" closed  \
	",\"created_at\":\"2026-11-21T00:50:00Z\",\"comments\":" #comments ",\"body\":\"" body   \
	"\",\"repository_url\":\"https://api.github.com/repos/my-org/alerts\"}"

static void lost_database_is_rebuilt_from_markers_before_any_create(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start_scan(&e, NULL, NULL, 0);
	/* the same episode re-sent after the database was lost */
	enqueue(&e, "firing", "2026-11-21T01:30:00Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 200, NULL,
		       "[" LISTED(4, "open", "null", 0, "unrelated") ","
		       LISTED(5, "open", "null", 1, "x\\n\\n<!-- alertbridge:episode="
			      "2026-11-21T00:49:48.539Z -->\\n<!-- alertbridge:key=" FP " -->") "]");
	fake_http_push(e.gh, 200, NULL,
		       "[{\"body\":\"firing again <!-- alertbridge:episode=2026-11-21T01:30:00.000Z"
		       " event=firing -->\"}]");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 2); /* no create, no comment */
	assert_request(&e, 0, "GET",
		       "/repos/my-org/alerts/issues?state=all&sort=created&direction=asc"
		       "&per_page=100", NULL);
	assert_request(&e, 1, "GET", "/repos/my-org/alerts/issues/5/comments?per_page=100", NULL);
	get_row(&e, &row);
	assert_int_equal(row.number, 5);
	assert_string_equal(row.state, "open");
	assert_int_equal(row.episode_starts_ms, INT64_C(1795224600000)); /* the comment's */
	store_issue_release(&row);

	/* once per repository: the next event reads no list; a resolve closes #5 */
	enqueue(&e, "resolved", "2026-11-21T01:30:00Z", "2026-11-21T02:00:00Z");
	fake_http_push(e.gh, 200, NULL, ISSUE_JSON(5, "open", "null", "null"));
	fake_http_push(e.gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(5, "closed", "\"completed\"", "\"2026-11-21T02:00:05Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 5);
	assert_request(&e, 3, "POST", "/repos/my-org/alerts/issues/5/comments",
		       "event=resolved-");
	assert_request(&e, 4, "PATCH", "/repos/my-org/alerts/issues/5", "\"state\":\"closed\"");
	env_stop(&e);
}

/*
 * Receivers sharing a repository: the rebuild takes only issues whose marker
 * names this receiver, and an old marker without a receiver only when no
 * other receiver's marker claims the key.
 */
#define OTHER_MARKER "<!-- alertbridge:receiver=other --> <!-- alertbridge:key=" FP " -->"
#define OWN_MARKER "<!-- alertbridge:receiver=default --> <!-- alertbridge:key=" FP " -->"

static void rebuild_keeps_to_its_receiver(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	env_start_scan(&e, NULL, NULL, 0);
	enqueue(&e, "firing", "2026-11-21T01:30:00Z", "0001-01-01T00:00:00Z");
	/* an old marker (#3), then another receiver's issue of the same key (#4) */
	fake_http_push(e.gh, 200, NULL,
		       "[" LISTED(3, "open", "null", 0, "a\\n\\n<!-- alertbridge:key=" FP " -->") ","
		       LISTED(4, "open", "null", 0, "b\\n\\n" OTHER_MARKER) "]");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(9, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 2);
	assert_request(&e, 1, "POST", "/repos/my-org/alerts/issues", OWN_MARKER "\"");
	get_row(&e, &row);
	assert_int_equal(row.number, 9);
	store_issue_release(&row);
	env_stop(&e);

	/* its own marker wins over a newer one of another receiver; an old one counts when no
	 * other receiver claims the key */
	env_start_scan(&e, NULL, NULL, 0);
	enqueue(&e, "firing", "2026-11-21T01:30:00Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 200, NULL,
		       "[" LISTED(3, "open", "null", 0, "a\\n\\n<!-- alertbridge:key=0000000000000001 -->")
		       "," LISTED(5, "open", "null", 0, "c\\n\\n<!-- alertbridge:episode=2026-11-21T01:30:00Z"
				  " -->\\n" OWN_MARKER) ","
		       LISTED(6, "open", "null", 0, "d\\n\\n" OTHER_MARKER) "]");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 1); /* same episode on #5: nothing */
	get_row(&e, &row);
	assert_int_equal(row.number, 5);
	store_issue_release(&row);
	assert_int_equal(store_issue_get(e.st, "default", "0000000000000001", &row), ERR_OK);
	assert_int_equal(row.number, 3);
	store_issue_release(&row);
	env_stop(&e);
}

static void failed_rebuild_keeps_the_event(void **state)
{
	struct env e;
	struct store_event ev;
	(void)state;

	env_start_scan(&e, NULL, NULL, 0);
	enqueue(&e, "firing", "2026-11-21T01:30:00Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 200, NULL, "{\"not\":\"a list\"}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 1); /* no create without the rebuild */
	assert_int_equal(store_next_event(e.st, "bridge", e.now + 3600000, &ev), ERR_OK);
	assert_int_equal(ev.attempts, 1);
	assert_string_equal(ev.last_error, "issue list of my-org/alerts: answer is not a JSON array");
	store_event_release(&ev);
	env_stop(&e);
}

/* ---- issue_per: group ---- */

#define APP_STARTS "2026-11-21T00:40:00.000Z"  /* "app" started before the two others */

/* The fixture with "app" started first; drop_app: without it (Alertmanager dropped it). */
static char *group_fixture(const char *name, int drop_app)
{
	const char *src = getenv("ALERTBRIDGE_SRC");
	char path[512];
	json_t *doc, *alerts, *a;
	size_t i;
	char *out;

	snprintf(path, sizeof(path), "%s/tests/fixtures/alertmanager/%s", src ? src : ".", name);
	doc = json_load_file(path, 0, NULL);
	assert_non_null(doc);
	json_object_set_new(doc, "receiver", json_string("default"));
	alerts = json_object_get(doc, "alerts");
	json_array_foreach(alerts, i, a) {
		json_t *c = json_object_get(json_object_get(a, "labels"), "container");
		if (strcmp(json_string_value(c), "app"))
			continue;
		if (drop_app) {
			json_array_remove(alerts, i);
			break;
		}
		json_object_set_new(a, "startsAt", json_string(APP_STARTS));
	}
	out = json_dumps(doc, JSON_COMPACT);
	json_decref(doc);
	return out;
}

/* Queue the group event of body as intake does for issue_per: group. */
static void enqueue_group(struct env *e, char *body, char key[65])
{
	struct am_payload *p = NULL;
	struct am_error aerr;
	struct buf doc = BUF_INIT, err = BUF_INIT;
	struct store_event se = { 0 };

	assert_int_equal(am_parse(body, strlen(body), NULL, &p, &aerr), ERR_OK);
	assert_int_equal(am_group_event_json(p, &doc), ERR_OK);
	issue_group_key_hash(p->group_key, key);
	se.kind = "bridge";
	se.receiver = "default";
	se.key = key;
	se.status = (char *)p->status;
	se.starts_at_ms = p->alerts[0].starts_at_ms;
	for (size_t i = 0; i < p->n_alerts; i++)
		if (p->alerts[i].starts_at_ms < se.starts_at_ms)
			se.starts_at_ms = p->alerts[i].starts_at_ms;
	se.payload = doc.data;
	se.received_at_ms = e->now;
	assert_int_equal(store_enqueue(e->st, &se, 1, &err), ERR_OK);
	am_payload_free(p);
	buf_release(&doc);
	buf_release(&err);
	free(body);
}

static void assert_body_lists(struct env *e, size_t i, const char *app, const char *proxy)
{
	const struct fake_request *r = fake_http_request(e->gh, i);
	json_t *doc = json_loads(r->body, 0, NULL);
	const char *body = json_string_value(json_object_get(doc, "body"));
	char want[128];

	assert_non_null(body);
	snprintf(want, sizeof(want), "- [%s] **HighLatency** container=app ", app);
	if (!strstr(body, want))
		fail_msg("request %zu body lacks \"%s\": %s", i, want, body);
	snprintf(want, sizeof(want), "- [%s] **HighLatency** container=proxy ", proxy);
	if (!strstr(body, want))
		fail_msg("request %zu body lacks \"%s\": %s", i, want, body);
	assert_non_null(strstr(body, "<!-- alertbridge:key="));
	assert_int_equal(strlen(strstr(body, "<!-- alertbridge:key=")),
			 strlen("<!-- alertbridge:key= -->") + 64); /* the marker ends the body */
	json_decref(doc);
}

static void group_member_resolving_updates_the_body_paced(void **state)
{
	struct env e;
	struct store_issue row = { 0 };
	struct store_event ev;
	struct bridge_options bo = { 0 };
	char key[65];
	(void)state;

	env_start(&e, NULL, "    issue_per: group\n");
	enqueue_group(&e, group_fixture("03_group_of_3_firing.json", 0), key);
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 1);
	assert_request(&e, 0, "POST", "/repos/my-org/alerts/issues", NULL);
	assert_body_lists(&e, 0, " ", " ");

	/* app resolves, then leaves the notifications: no call at all (not "firing again") */
	e.now += 1000;
	enqueue_group(&e, group_fixture("04_group_partially_resolved.json", 0), key);
	enqueue_group(&e, group_fixture("04_group_partially_resolved.json", 1), key);
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(bridge_step(e.b), 0);  /* the body update waits for the interval */
	assert_int_equal(fake_http_count(e.gh), 1);
	assert_int_equal(store_issue_get(e.st, "default", key, &row), ERR_OK);
	assert_string_equal(row.state, "open");
	assert_int_equal(row.number, 7);
	store_issue_release(&row);

	/* a bridge restart loses no pending update: it is in the store */
	bridge_free(e.b);
	bo.cfg = e.cfg;
	bo.store = e.st;
	bo.render = e.render;
	bo.user_agent = "alertbridge/test";
	bo.now_ms = clock_now;
	bo.sleep_ms = clock_sleep;
	bo.clock_ctx = &e;
	bo.gh_max_attempts = 1;
	e.b = bridge_new(&bo);

	/* a minute after the create: one update, coalescing both webhooks; it fails, is kept */
	e.now += 59000;
	fake_http_push(e.gh, 500, NULL, "{\"message\":\"boom\"}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 2);
	assert_int_equal(bridge_step(e.b), 0);
	e.now += 30000;
	fake_http_push(e.gh, 200, NULL, ISSUE_JSON(7, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 3);
	assert_request(&e, 2, "PATCH", "/repos/my-org/alerts/issues/7", NULL);
	assert_null(strstr(fake_http_request(e.gh, 2)->body, "\"title\""));
	assert_body_lists(&e, 2, "x", " ");
	e.now += 3600000;
	assert_int_equal(bridge_step(e.b), 0);  /* done: no second update */
	assert_int_equal(bridge_step(e.b), 0);
	assert_int_equal(fake_http_count(e.gh), 3);

	/* all resolved: the resolved comment and the close; later the body, all checked */
	enqueue_group(&e, group_fixture("04b_group_all_resolved.json", 0), key);
	fake_http_push(e.gh, 200, NULL, ISSUE_JSON(7, "open", "null", "null"));
	fake_http_push(e.gh, 201, NULL, "{\"id\":1}");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(7, "closed", "\"completed\"", "\"2026-11-21T01:50:00Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 6);
	assert_request(&e, 4, "POST", "/repos/my-org/alerts/issues/7/comments", "resolved at");
	assert_request(&e, 5, "PATCH", "/repos/my-org/alerts/issues/7",
		       "\"state_reason\":\"completed\"");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(7, "closed", "\"completed\"", "\"2026-11-21T01:50:00Z\""));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 7);
	assert_body_lists(&e, 6, "x", "x");
	assert_int_equal(store_next_event(e.st, "bridge", e.now, &ev), ERR_NOTFOUND);
	env_stop(&e);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(fire_resolve_refire_cycle),
		cmocka_unit_test(refire_after_window_links_and_keeps_the_new_issue),
		cmocka_unit_test(new_episode_adds_the_labels_the_issue_lacks),
		cmocka_unit_test(close_resumes_after_failed_state_change),
		cmocka_unit_test(comment_in_doubt_is_looked_for_first),
		cmocka_unit_test(comment_in_doubt_but_absent_is_posted),
		cmocka_unit_test(invalid_request_is_dead_lettered),
		cmocka_unit_test(unassignable_assignee_is_dropped),
		cmocka_unit_test(missing_repository_is_dead_lettered_until_retried),
		cmocka_unit_test(missing_repository_needs_a_404_from_github),
		cmocka_unit_test(bad_token_keeps_the_event),
		cmocka_unit_test(deleted_issue_is_recreated),
		cmocka_unit_test(not_planned_is_respected_within_window),
		cmocka_unit_test(dry_run_keeps_the_map_and_calls_nothing),
		cmocka_unit_test(dry_run_row_finds_its_issue_by_marker),
		cmocka_unit_test(unconfigured_receiver_is_dead_lettered),
		cmocka_unit_test(lost_database_is_rebuilt_from_markers_before_any_create),
		cmocka_unit_test(rebuild_keeps_to_its_receiver),
		cmocka_unit_test(failed_rebuild_keeps_the_event),
		cmocka_unit_test(not_the_leader_drains_nothing),
		cmocka_unit_test(lease_lost_mid_event_stops_before_the_next_call),
		cmocka_unit_test(group_member_resolving_updates_the_body_paced),
	};
	log_setup(LOG_ERROR, LOG_LOGFMT);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
