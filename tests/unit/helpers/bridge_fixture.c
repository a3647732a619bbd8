/*
 * bridge_fixture.c - what the reconciler's unit tests (test_bridge*.c) share:
 * a bridge wired to a fake_http GitHub and an in-memory store in virtual
 * time, alert events queued as the intake would, and request checks.
 */
#include "bridge_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/am.h"
#include "core/buf.h"
#include "core/metrics.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "tests/unit/helpers/event_fixture.h"

/* The leader-election hook (bridge_options.may_act), as main.c wires the Lease. */
static int env_may_act(void *ctx)
{
	struct env *e = ctx;

	if (e->lose_after && fake_http_count(e->gh) >= e->lose_after)
		e->leading = 0;
	return e->leading;
}

int64_t bfx_v_now(void *ctx)
{
	return ((struct env *)ctx)->now;
}

void bfx_v_sleep(void *ctx, int64_t ms)
{
	((struct env *)ctx)->now += ms;
}

static void start(struct env *e, const char *extra_github, const char *receiver_extra,
		  int scanned, const char *store_target)
{
	char yaml[2048];
	struct buf err = BUF_INIT;
	struct bridge_options *bo = &e->bo;

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
	assert_int_equal(store_open(store_target, &e->st, &err), ERR_OK);
	assert_int_equal(render_new(e->cfg, &e->render, &err), ERR_OK);
	bo->cfg = e->cfg;
	bo->store = e->st;
	bo->render = e->render;
	bo->user_agent = "alertbridge/test";
	bo->now_ms = bfx_v_now;
	bo->sleep_ms = bfx_v_sleep;
	bo->clock_ctx = e;
	bo->gh_max_attempts = 2;
	bo->may_act = env_may_act;
	bo->may_act_ctx = e;
	e->leading = 1;
	e->b = bridge_new(bo);
	if (scanned)
		assert_int_equal(store_scan_done(e->st, "default", "my-org/alerts", T0), ERR_OK);
	buf_release(&err);
}

void bfx_env_start_scan(struct env *e, const char *extra_github, const char *receiver_extra,
			int scanned)
{
	start(e, extra_github, receiver_extra, scanned, ":memory:");
}

void bfx_env_start_store(struct env *e, const char *store_target)
{
	start(e, NULL, NULL, 1, store_target);
}

void bfx_env_start(struct env *e, const char *extra_github, const char *receiver_extra)
{
	bfx_env_start_scan(e, extra_github, receiver_extra, 1);
}

void bfx_bridge_restart(struct env *e, int dry_run)
{
	bridge_free(e->b);
	e->cfg->github.dry_run = dry_run;
	e->b = bridge_new(&e->bo);
}

void bfx_env_stop(struct env *e)
{
	if (!e->gh)
		return;
	bridge_free(e->b);
	render_free(e->render);
	store_close(e->st);
	cfg_free(e->cfg);
	fake_http_stop(e->gh);
	memset(e, 0, sizeof(*e));
}

int bfx_setup(void **state)
{
	const struct bfx_setup *s = *state;
	struct env *e = calloc(1, sizeof(*e));

	if (!e)
		return -1;
	if (!s) {
		bfx_env_start(e, NULL, NULL);
	} else {
		bfx_env_start_scan(e, s->extra_github, s->receiver_extra, !s->unscanned);
		if (s->with_metrics) {
			e->metrics = metrics_new();
			e->bo.metrics = e->metrics;
			bfx_bridge_restart(e, 0);
		}
	}
	*state = e;
	return 0;
}

int bfx_teardown(void **state)
{
	struct env *e = *state;
	struct metrics *m = e->metrics;

	bfx_env_stop(e); /* the bridge first: it counts into m */
	metrics_free(m);
	free(e);
	return 0;
}

void bfx_enqueue_sev(struct env *e, const char *status, const char *starts, const char *ends,
			    const char *severity)
{
	bfx_enqueue_fp(e, FP, status, starts, ends, severity);
}

void bfx_enqueue_fp(struct env *e, const char *fp, const char *status, const char *starts,
		    const char *ends, const char *severity)
{
	char body[2048];
	struct am_payload *p = NULL;
	struct am_error aerr;
	struct buf ev = BUF_INIT;

	snprintf(body, sizeof(body),
		 "{\"version\":\"4\",\"status\":\"%s\",\"receiver\":\"default\",\"groupKey\":\"{}:{}\","
		 "\"externalURL\":\"http://am:9093\",\"alerts\":[{\"status\":\"%s\",\"labels\":"
		 "{\"alertname\":\"DiskFull\",\"namespace\":\"prod\",\"pod\":\"db-0\",\"severity\":"
		 "\"%s\"},\"annotations\":{\"summary\":\"DiskFull on db-0\"},\"startsAt\":"
		 "\"%s\",\"endsAt\":\"%s\",\"fingerprint\":\"%s\"}]}",
		 status, status, severity, starts, ends, fp);
	assert_int_equal(am_parse(body, strlen(body), NULL, &p, &aerr), ERR_OK);
	assert_int_equal(am_event_json(p, 0, &ev), ERR_OK);
	bfx_enqueue_doc(e, fp, status, p->alerts[0].starts_at_ms, p->alerts[0].ends_at_ms,
			ev.data);
	am_payload_free(p);
	buf_release(&ev);
}

void bfx_enqueue_doc(struct env *e, const char *key, const char *status, int64_t starts_at_ms,
		     int64_t ends_at_ms, const char *payload)
{
	struct buf err = BUF_INIT;
	struct store_event se = efx_firing("default", key, starts_at_ms);

	se.status = status;
	se.ends_at_ms = ends_at_ms;
	se.payload = payload;
	se.received_at_ms = e->now;
	assert_int_equal(store_enqueue(e->st, &se, 1, &err), ERR_OK);
	buf_release(&err);
}

void bfx_enqueue(struct env *e, const char *status, const char *starts, const char *ends)
{
	bfx_enqueue_sev(e, status, starts, ends, "critical");
}

void bfx_assert_request(struct env *e, size_t i, const char *method, const char *uri,
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

void bfx_step_closes(struct env *e, int n, size_t first)
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
	bfx_assert_request(e, before, "GET", path, NULL);
	bfx_assert_request(e, before + 1, "POST", comments, "resolved at");
	bfx_assert_request(e, before + 2, "PATCH", path, "\"state\":\"closed\"");
}

void bfx_step_finds_the_comment_and_closes(struct env *e)
{
	size_t before = fake_http_count(e->gh);

	fake_http_push(e->gh, 200, NULL, ISSUE_JSON(3, "open", "null", "null"));
	fake_http_push(e->gh, 200, NULL,
		       "[{\"id\":1,\"body\":\"resolved.\\n\\n" RESOLVED_MARKER "\","
		       "\"created_at\":\"2026-11-21T01:00:01Z\"}]");
	fake_http_push(e->gh, 200, NULL,
		       ISSUE_JSON(3, "closed", "\"completed\"", "\"2026-11-21T02:00:00Z\""));
	assert_int_equal(bridge_step(e->b), 1);
	assert_int_equal(fake_http_count(e->gh), before + 3);
	bfx_assert_request(e, before, "GET", "/repos/my-org/alerts/issues/3", NULL);
	assert_string_equal(fake_http_request(e->gh, before + 1)->method, "GET");
	assert_non_null(strstr(fake_http_request(e->gh, before + 1)->uri,
			       "/repos/my-org/alerts/issues/3/comments"));
	bfx_assert_request(e, before + 2, "PATCH", "/repos/my-org/alerts/issues/3",
			   "\"state\":\"closed\"");
	bfx_assert_row(e, -1, "closed");
	assert_int_equal(store_pending_count(e->st, "bridge"), 0);
}

void bfx_note_progress(struct env *e, const char *progress)
{
	struct store_event ev = { 0 };

	assert_int_equal(store_next_event(e->st, "bridge", e->now, &ev), ERR_OK);
	assert_int_equal(store_event_progress(e->st, ev.id, progress), ERR_OK);
	store_event_release(&ev);
}

void bfx_get_row(struct env *e, struct store_issue *row)
{
	assert_int_equal(store_issue_get(e->st, "default", FP, row), ERR_OK);
}

void bfx_assert_row(struct env *e, int64_t number, const char *state)
{
	struct store_issue row = { 0 };

	bfx_get_row(e, &row);
	if (number >= 0)
		assert_int_equal(row.number, number);
	if (state)
		assert_string_equal(store_issue_state_str(row.state), state);
	store_issue_release(&row);
}

void bfx_put_dry_run_row(struct env *e)
{
	struct store_issue row = { 0 };

	row.receiver = "default";
	row.key = FP;
	row.repo = "my-org/alerts";
	row.state = STORE_ISSUE_OPEN;
	row.episode_starts_ms = INT64_C(1795222188539);
	row.created_at_ms = T0 - 600000;
	row.updated_at_ms = T0 - 600000;
	assert_int_equal(store_issue_put(e->st, &row), ERR_OK);
}

void bfx_run(struct env *e, const struct bfx_step *steps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		const struct bfx_step *s = &steps[i];
		int64_t got = 0;

		switch (s->op) {
		case BFX_FIRE:
			bfx_enqueue_sev(e, "firing", s->a, NO_END, s->c ? s->c : "critical");
			continue;
		case BFX_RESOLVE:
			bfx_enqueue(e, "resolved", s->a, s->b);
			continue;
		case BFX_ANSWER:
			fake_http_push(e->gh, (int)s->n, NULL, s->a);
			continue;
		case BFX_DROP:
			fake_http_push_drop(e->gh);
			continue;
		case BFX_LATER:
			e->now += s->n;
			continue;
		case BFX_SAW:
			bfx_assert_request(e, (size_t)s->n, s->b, s->a, s->c);
			continue;
		case BFX_CLOSES:
			bfx_step_closes(e, (int)s->n, 0);
			continue;
		case BFX_STEP:
			got = bridge_step(e->b);
			break;
		case BFX_CALLS:
			got = (int64_t)fake_http_count(e->gh);
			break;
		}
		if (got != s->n)
			fail_msg("step %zu: %s %lld, want %lld", i,
				 s->op == BFX_STEP ? "bridge_step()" : "requests",
				 (long long)got, (long long)s->n);
	}
}
