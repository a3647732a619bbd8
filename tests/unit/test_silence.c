/*
 * test_silence.c - the silence worker (bridge/silence.h) on a real store and a
 * fake Alertmanager (fake_http), with a dry-run GitHub client for the replies:
 * what a /silence of an issue_per: group issue matches, and what a silence
 * Alertmanager refuses leaves behind (the alert's map row untouched, `map
 * retry` re-queues it, the issue is told, `map list` and the card list it),
 * and what a /silence of a storm summary silences (every folded alert).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <jansson.h>

#include "bridge/gh.h"
#include "bridge/silence.h"
#include "core/config.h"
#include "core/http_client.h"
#include "core/map_admin.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_groups.h"
#include "store/store_map.h"
#include "store/store_silences.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/store_fixture.h"

#define NOW INT64_C(1795000000000)
#define KEY "9f2c4e1a7b3d5c60"

/* The latest bridge event of a group: its groupLabels, and one alert's own labels. */
static const char group_event[] =
	"{\"v\":1,\"receiver\":\"g\",\"status\":\"firing\","
	"\"labels\":{\"alertname\":\"GPUHot\",\"cluster\":\"a\",\"pod\":\"trainer-0\"},"
	"\"groupLabels\":{\"alertname\":\"GPUHot\",\"cluster\":\"a\"},"
	"\"commonLabels\":{\"alertname\":\"GPUHot\",\"cluster\":\"a\"}}";

/* A /silence 2h command on o/r#3, as gh_webhook.c queues it. */
static const char command[] =
	"{\"v\":1,\"cmd\":\"silence\",\"login\":\"octocat\",\"comment_id\":77,\"repo\":\"o/r\","
	"\"number\":3,\"issue_url\":\"https://github.com/o/r/issues/3\",\"duration_ms\":7200000,"
	"\"reason\":\"rollout\",\"word\":\"silence\",\"error\":null}";

struct env {
	struct fake_http *am;
	struct config *cfg;
	struct store *st;
	struct silencer *s;
	struct gh_client *gh;
};

static void env_start(struct env *e, struct fixture *f, const char *issue_per)
{
	struct buf msg = BUF_INIT, yaml = BUF_INIT;
	struct store_event ev;

	memset(e, 0, sizeof(*e));
	e->am = fake_http_start();
	(void)buf_printf(&yaml, "receivers:\n  - {name: g, repo: o/r, issue_per: %s, "
			 "alertmanager: {url: \"%s\"}}\n", issue_per, fake_http_url(e->am));
	if (cfg_parse(buf_str(&yaml), yaml.len, "t.yml", NULL, &e->cfg, &msg) != ERR_OK)
		fail_msg("config: %s", buf_str(&msg));
	e->st = sfx_open_ok(f->path);
	ev = sfx_mkev("bridge", "g", KEY, "firing");
	ev.payload = (char *)group_event;
	ev.repeat_state = (char *)"";  /* what store_event_latest() reads */
	if (store_enqueue(e->st, &ev, 1, &msg) != ERR_OK)
		fail_msg("enqueue: %s", buf_str(&msg));
	ev = sfx_mkev(SILENCE_QUEUE, "g", KEY, "firing");
	ev.payload = (char *)command;
	if (store_enqueue(e->st, &ev, 1, &msg) != ERR_OK)
		fail_msg("enqueue: %s", buf_str(&msg));
	e->s = silencer_new(&(struct silencer_options){ .store = e->st,
							.user_agent = "alertbridge/test" });
	e->gh = gh_client_new(&(struct gh_options){ .api_url = "http://127.0.0.1:9",
						    .user_agent = "alertbridge/test",
						    .dry_run = 1 });
	buf_release(&msg);
	buf_release(&yaml);
}

static void env_stop(struct env *e)
{
	gh_client_free(e->gh);
	silencer_free(e->s);
	store_close(e->st);
	cfg_free(e->cfg);
	fake_http_stop(e->am);
}

/* The matchers' names of the silence POSTed in request i, as sent, joined by ','. */
static void matcher_names(struct fake_http *am, size_t i, struct buf *out)
{
	const struct fake_request *r = fake_http_request(am, i);
	json_t *body, *m;
	size_t k;

	assert_non_null(r);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->uri, "/api/v2/silences");
	body = json_loads(r->body, 0, NULL);
	assert_non_null(body);
	buf_reset(out);
	json_array_foreach(json_object_get(body, "matchers"), k, m)
		(void)buf_printf(out, "%s%s", k ? "," : "",
				 json_string_value(json_object_get(m, "name")));
	json_decref(body);
}

/* The next step makes the silence queued, in one request, on matchers named names. */
static void silence_made_on(struct env *e, const char *names)
{
	struct buf got = BUF_INIT;

	fake_http_push(e->am, 200, "Content-Type: application/json", "{\"silenceID\":\"sil-1\"}");
	assert_int_equal(silence_step(e->s, e->cfg, e->gh, NOW), 1);
	assert_int_equal(fake_http_count(e->am), 1);
	matcher_names(e->am, 0, &got);
	assert_string_equal(buf_str(&got), names);
	buf_release(&got);
}

/* issue_per: group: the silence matches the group's groupLabels, not one alert's labels. */
static void group_silence_matches_the_group_labels(void **state)
{
	struct env e;

	env_start(&e, *state, "group");
	silence_made_on(&e, "alertname,cluster");
	assert_int_equal(sfx_sql_int(((struct fixture *)*state)->path,
				     "SELECT count(*) FROM events WHERE kind = 'silence' AND "
				     "state = 'done'"), 1);
	env_stop(&e);
}

/* issue_per: alert (the control): the alert's own labels. */
static void alert_silence_matches_the_alert_labels(void **state)
{
	struct env e;

	env_start(&e, *state, "alert");
	silence_made_on(&e, "alertname,cluster,pod");
	env_stop(&e);
}

/*
 * A silence Alertmanager refuses (400) is dead-lettered without marking the
 * alert's map row (its card would show a silence's failure as the issue's);
 * `map retry` re-queues it, and it runs again.
 */
static void refused_silence_leaves_the_row_and_map_retry_requeues_it(void **state)
{
	struct fixture *f = *state;
	struct env e;
	struct store_issue row, got;
	struct buf out = BUF_INIT;

	env_start(&e, f, "alert");
	row = sfx_mkrow("g", KEY, 3);
	if (store_issue_put(e.st, &row) != ERR_OK)
		fail_msg("put row");
	fake_http_push(e.am, 400, "Content-Type: application/json",
		       "\"silence invalid: refused by the test\"");
	assert_int_equal(silence_step(e.s, e.cfg, e.gh, NOW), 1);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events WHERE kind = "
					      "'silence' AND state = 'dead'"), 1);
	memset(&got, 0, sizeof(got));
	assert_int_equal(store_issue_get(e.st, "g", KEY, &got), ERR_OK);
	assert_null(got.dead_reason);
	store_issue_release(&got);

	assert_int_equal(map_admin_run(e.st, MAP_ADMIN_RETRY, "g", KEY, &out), 200);
	sfx_assert_contains(buf_str(&out), "re-queued 1 dead-lettered event(s)");
	/* Its note "post~" is kept: it looks for the silence first, then makes it. */
	fake_http_push(e.am, 200, "Content-Type: application/json", "[]");
	fake_http_push(e.am, 200, "Content-Type: application/json", "{\"silenceID\":\"sil-2\"}");
	assert_int_equal(silence_step(e.s, e.cfg, e.gh, NOW + 1000), 1);
	assert_int_equal(fake_http_count(e.am), 3);
	assert_string_equal(fake_http_request(e.am, 2)->method, "POST");
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events WHERE kind = "
					      "'silence' AND state = 'done'"), 1);
	buf_release(&out);
	env_stop(&e);
}

/* A GitHub client that posts to gh (a fake) on a clock of its own (no pacing waits). */
static int64_t test_gh_clock = NOW;

static int64_t test_gh_now(void *ctx)
{
	(void)ctx;
	return test_gh_clock;
}

static void test_gh_sleep(void *ctx, int64_t ms)
{
	(void)ctx;
	test_gh_clock += ms;
}

static void live_github(struct env *e, struct fake_http *gh)
{
	gh_client_free(e->gh);
	e->gh = gh_client_new(&(struct gh_options){ .api_url = fake_http_url(gh),
						    .token = "tok",
						    .user_agent = "alertbridge/test",
						    .max_attempts = 1,
						    .now_ms = test_gh_now,
						    .sleep_ms = test_gh_sleep });
}

/* The body of the comment POSTed in request i of gh, as JSON text. */
static const char *comment_body(struct fake_http *gh, size_t i)
{
	const struct fake_request *r = fake_http_request(gh, i);

	assert_non_null(r);
	assert_string_equal(r->method, "POST");
	assert_string_equal(r->uri, "/repos/o/r/issues/3/comments");
	return r->body;
}

static int count_dead(void *ctx, const struct store_event *ev)
{
	assert_string_equal(ev->kind, SILENCE_QUEUE);
	sfx_assert_contains(ev->last_error, "alertmanager refused the silence");
	(*(int *)ctx)++;
	return 0;
}

/*
 * A refused silence is answered on the issue (it failed, and how to retry),
 * and listed as a dead silence of its (receiver, key), which has a map row:
 * what `map list` and the alert's card on the status page show.
 */
static void refused_silence_is_answered_and_listed(void **state)
{
	struct fixture *f = *state;
	struct fake_http *gh = fake_http_start();
	struct env e;
	struct store_issue row;
	int n = 0;

	env_start(&e, f, "alert");
	live_github(&e, gh);
	row = sfx_mkrow("g", KEY, 3);
	if (store_issue_put(e.st, &row) != ERR_OK)
		fail_msg("put row");
	fake_http_push(e.am, 400, "Content-Type: application/json",
		       "\"silence invalid: refused by the test\"");
	fake_http_push(gh, 201, "Content-Type: application/json", "{\"id\": 501}");
	assert_int_equal(silence_step(e.s, e.cfg, e.gh, NOW), 1);
	assert_int_equal(fake_http_count(gh), 1);
	sfx_assert_contains(comment_body(gh, 0), "@octocat: no silence: alertmanager refused "
			    "the silence");
	sfx_assert_contains(comment_body(gh, 0), "refused by the test");
	sfx_assert_contains(comment_body(gh, 0), "alertbridge map retry " KEY " --receiver=g");
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events WHERE kind = "
					      "'silence' AND state = 'dead'"), 1);
	assert_int_equal(store_silence_dead_each(e.st, "g", KEY, 10, count_dead, &n), ERR_OK);
	assert_int_equal(n, 1);
	assert_int_equal(store_silence_dead_each(e.st, NULL, NULL, 10, count_dead, &n), ERR_OK);
	assert_int_equal(n, 2);
	assert_int_equal(store_silence_dead_each(e.st, "g", "0000000000000000", 10, count_dead,
						 &n), ERR_OK);
	assert_int_equal(n, 2);
	env_stop(&e);
	fake_http_stop(gh);
}

#define KEY2 "1a2b3c4d5e6f7081"

/* Fold (g, key) with labels into summary 1 (o/r#3), as the storm does. */
static void fold(struct env *e, const char *key, const char *labels)
{
	struct buf msg = BUF_INIT, doc = BUF_INIT;
	struct store_event ev = sfx_mkev("bridge", "g", key, "firing");
	struct store_issue row = sfx_mkrow("g", key, 3);
	struct store_member m = { .key = (char *)key, .summary_id = 1, .firing = 1,
				  .starts_at_ms = NOW - 60000, .line = (char *)"" };
	struct store_event latest = { 0 };
	enum store_event_state state;

	(void)buf_printf(&doc, "{\"v\":1,\"receiver\":\"g\",\"status\":\"firing\","
			 "\"labels\":%s}", labels);
	ev.payload = (char *)buf_str(&doc);
	ev.repeat_state = (char *)"";
	if (store_enqueue(e->st, &ev, 1, &msg) != ERR_OK)
		fail_msg("enqueue: %s", buf_str(&msg));
	assert_int_equal(store_event_latest(e->st, "bridge", "g", key, &latest, &state), ERR_OK);
	if (store_member_fold(e->st, latest.id, &row, &m, 1, &msg) != ERR_OK)
		fail_msg("fold: %s", buf_str(&msg));
	store_event_release(&latest);
	buf_release(&msg);
	buf_release(&doc);
}

/*
 * A /silence on a storm summary silences every alert folded into it: one
 * silence whose matchers are the labels they all share (here alertname and
 * cluster; pod tells them apart), kept for each alert, and the reply says
 * so.  /unsilence, queued on any of them, expires it once.
 */
static void storm_silence_covers_every_folded_alert(void **state)
{
	struct fixture *f = *state;
	struct fake_http *gh = fake_http_start();
	struct store_summary sum = { .receiver = (char *)"g", .repo = (char *)"o/r",
				     .alertname = (char *)"GPUHot",
				     .marker_key = (char *)"storm-0123456789abcdef-1",
				     .created_at_ms = NOW - 120000 };
	struct store_silence *v = NULL;
	struct store_event ev;
	struct buf names = BUF_INIT, msg = BUF_INIT;
	const char *body;
	size_t n = 0;
	struct env e;

	env_start(&e, f, "alert");
	live_github(&e, gh);
	assert_int_equal(store_summary_add(e.st, &sum, &msg), ERR_OK);
	sum.number = 3;
	sum.state = STORE_SUMMARY_OPEN;
	assert_int_equal(store_summary_save(e.st, &sum, &msg), ERR_OK);
	fold(&e, KEY, "{\"alertname\":\"GPUHot\",\"cluster\":\"a\",\"pod\":\"trainer-0\"}");
	fold(&e, KEY2, "{\"alertname\":\"GPUHot\",\"cluster\":\"a\",\"pod\":\"trainer-1\"}");

	fake_http_push(e.am, 200, "Content-Type: application/json", "{\"silenceID\":\"sil-1\"}");
	fake_http_push(gh, 201, "Content-Type: application/json", "{\"id\": 501}");
	assert_int_equal(silence_step(e.s, e.cfg, e.gh, NOW), 1);
	assert_int_equal(fake_http_count(e.am), 1);
	matcher_names(e.am, 0, &names);
	assert_string_equal(buf_str(&names), "alertname,cluster");
	body = comment_body(gh, 0);
	sfx_assert_contains(body, "silenced `{alertname=\\\"GPUHot\\\", cluster=\\\"a\\\"}`");
	sfx_assert_contains(body, "storm summary of 2 alerts");
	sfx_assert_contains(body, "every alert of the storm");
	assert_int_equal(store_silence_active(e.st, "g", KEY2, NOW + 1, &v, &n), ERR_OK);
	assert_int_equal(n, 1);
	assert_string_equal(v[0].silence_id, "sil-1");
	store_silences_free(v, n);

	/* /unsilence queued on the other alert's row: the one silence expired once. */
	ev = sfx_mkev(SILENCE_QUEUE, "g", KEY2, "firing");
	ev.payload = (char *)"{\"v\":1,\"cmd\":\"unsilence\",\"login\":\"octocat\","
			     "\"comment_id\":78,\"repo\":\"o/r\",\"number\":3,\"word\":\"unsilence\"}";
	assert_int_equal(store_enqueue(e.st, &ev, 1, &msg), ERR_OK);
	fake_http_push(e.am, 200, "Content-Type: application/json",
		       "{\"id\":\"sil-1\",\"status\":{\"state\":\"active\"}}");
	fake_http_push(e.am, 200, NULL, "");
	fake_http_push(gh, 201, "Content-Type: application/json", "{\"id\": 502}");
	assert_int_equal(silence_step(e.s, e.cfg, e.gh, NOW + 2000), 1);
	assert_int_equal(fake_http_count(e.am), 3);
	assert_string_equal(fake_http_request(e.am, 2)->method, "DELETE");
	sfx_assert_contains(comment_body(gh, 1), "expired the silence alertbridge made for this "
			    "issue: sil-1.");
	assert_int_equal(store_silence_active(e.st, "g", KEY, NOW + 3000, &v, &n), ERR_OK);
	assert_int_equal(n, 0);
	buf_release(&names);
	buf_release(&msg);
	env_stop(&e);
	fake_http_stop(gh);
}

/*
 * The same command body queued again (a captured delivery resent under a new
 * X-GitHub-Delivery, which the signature does not cover): handled once, the
 * second one done without a call to Alertmanager or a reply.
 */
static void replayed_command_is_done_without_acting(void **state)
{
	struct fixture *f = *state;
	struct env e;
	struct store_event ev;
	struct buf msg = BUF_INIT;
	int64_t now = INT64_C(1700000003000);

	env_start(&e, f, "alert");
	ev = sfx_mkev(SILENCE_QUEUE, "g", KEY, "firing");
	ev.payload = (char *)command;
	ev.received_at_ms += 1000;
	assert_int_equal(store_enqueue(e.st, &ev, 1, &msg), ERR_OK);
	fake_http_push(e.am, 200, "Content-Type: application/json", "{\"silenceID\":\"sil-1\"}");
	assert_int_equal(silence_step(e.s, e.cfg, e.gh, now), 1);
	assert_int_equal(silence_step(e.s, e.cfg, e.gh, now), 1);
	assert_int_equal(silence_step(e.s, e.cfg, e.gh, now), 0);
	assert_int_equal(fake_http_count(e.am), 1);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM events WHERE kind = "
					      "'silence' AND state = 'done'"), 2);
	assert_int_equal(sfx_sql_int(f->path, "SELECT count(*) FROM silences"), 1);
	buf_release(&msg);
	env_stop(&e);
}

static int setup_all(void **state)
{
	(void)state;
	return http_global_init() == ERR_OK ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		SFX_TEST(group_silence_matches_the_group_labels),
		SFX_TEST(alert_silence_matches_the_alert_labels),
		SFX_TEST(refused_silence_leaves_the_row_and_map_retry_requeues_it),
		SFX_TEST(refused_silence_is_answered_and_listed),
		SFX_TEST(storm_silence_covers_every_folded_alert),
		SFX_TEST(replayed_command_is_done_without_acting),
	};

	return cmocka_run_group_tests(tests, setup_all, NULL);
}
