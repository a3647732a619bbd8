/*
 * test_group_sync.c - issue_per: group body updates (group_sync(),
 * bridge/group.h) against a real store and a GitHub on fake_http, in
 * virtual time: a body GitHub refuses for good (403: the repository was
 * archived, the issue locked) is not sent again every GROUP_RETRY_MS, only
 * once the group changes; a passing failure (5xx) is retried.
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
#include "bridge/group.h"
#include "store/store.h"
#include "store/store_groups.h"
#include "store/store_map.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/gh_fixture.h"
#include "tests/unit/helpers/store_fixture.h"

#define T0 INT64_C(1795000000000)
#define INTERVAL_MS 60000
#define ARCHIVED "{\"message\":\"Repository was archived so is read-only.\"}"
#define ISSUE_7                                                                      \
	"{\"number\":7,\"state\":\"open\",\"repository_url\":"                       \
	"\"https://api.github.com/repos/my-org/cluster-alerts\"}"

struct env {
	struct fixture *f;
	struct store *st;
	struct fake_http *http;
	struct gh_client *gh;
	struct group *group;
	int64_t now;
	struct vclock clock;  /* gh's, on now */
};

static enum err fixed_body(void *ctx, const struct store_group *g, const struct store_issue *row,
			   const struct group_members *gm, struct buf *body, struct buf *errmsg)
{
	(void)ctx;
	(void)g;
	(void)row;
	(void)gm;
	(void)errmsg;
	(void)buf_adds(body, "the members\n<!-- alertbridge:key=g1 -->");
	return ERR_OK;
}

/* Group g1 of receiver default, its issue #7, its body to be written (dirty). */
static void start(struct env *e, struct fixture *f)
{
	struct gh_options go = { 0 };
	struct store_issue row = sfx_mkrow("default", "g1", 7);

	memset(e, 0, sizeof(*e));
	e->f = f;
	e->now = T0;
	e->st = sfx_open_ok(f->path);
	assert_int_equal(store_issue_put(e->st, &row), ERR_OK);
	sfx_sql_exec(f->path, "INSERT INTO group_states (receiver, key, members, payload, dirty) "
			      "VALUES ('default', 'g1', '[]', '{}', 1)");
	e->http = fake_http_start();
	go.api_url = fake_http_url(e->http);
	go.token = "tok";
	go.max_attempts = 1;
	e->gh = gfx_client_at(&go, &e->clock, &e->now);
	e->group = group_new(&(struct group_options){ e->st, e->gh, INTERVAL_MS, fixed_body,
						      NULL });
}

static void stop(struct env *e)
{
	group_free(e->group);
	gh_client_free(e->gh);
	fake_http_stop(e->http);
	store_close(e->st);
}

/* One look for a due update (after a handled one the next call yields: call twice). */
static int sync_once(struct env *e)
{
	int r = group_sync(e->group, e->now);

	return r ? r : group_sync(e->group, e->now);
}

/* start(), then the first sync, an interval on, sends the body: GitHub answers status body. */
static void start_then_sync(struct env *e, struct fixture *f, int status, const char *body)
{
	start(e, f);
	e->now += INTERVAL_MS;
	fake_http_push(e->http, status, NULL, body);
	assert_int_equal(sync_once(e), 1);
}

/* Four retry periods go by (GROUP_RETRY_MS and a sync interval each): no sync sends. */
static void not_sent_again(struct env *e)
{
	for (int i = 0; i < 4; i++) {
		e->now += GROUP_RETRY_MS + INTERVAL_MS;
		assert_int_equal(sync_once(e), 0);
	}
}

static void refused_body_waits_for_a_change(void **state)
{
	struct env e;
	struct gh_stats st;

	start_then_sync(&e, *state, 403, ARCHIVED);
	assert_int_equal(fake_http_count(e.http), 1);
	assert_string_equal(fake_http_request(e.http, 0)->method, "PATCH");
	assert_string_equal(fake_http_request(e.http, 0)->uri,
			    "/repos/my-org/cluster-alerts/issues/7");
	gh_stats(e.gh, &st);
	assert_int_equal(st.requests_forbidden[GH_FORBIDDEN_ARCHIVED], 1);

	/* not sent again after GROUP_RETRY_MS, nor an hour later (before: every 30 s) */
	not_sent_again(&e);
	e.now += 3600000;
	assert_int_equal(sync_once(&e), 0);
	assert_int_equal(fake_http_count(e.http), 1);

	/* the group changes: its body is written again */
	sfx_sql_exec(e.f->path, "UPDATE group_states SET dirty = 1");
	fake_http_push(e.http, 200, NULL, ISSUE_7);
	assert_int_equal(sync_once(&e), 1);
	assert_int_equal(fake_http_count(e.http), 2);
	assert_int_equal(sync_once(&e), 0);
	stop(&e);
}

/*
 * A deleted issue (410) is not patched again every GROUP_RETRY_MS for good: the group's next
 * event finds it gone and makes a new issue (bridge_plan.c), which marks the group changed.
 */
static void deleted_issue_waits_for_a_change(void **state)
{
	struct env e;

	start_then_sync(&e, *state, 410, "{\"message\":\"This issue was deleted\"}");
	not_sent_again(&e);
	assert_int_equal(fake_http_count(e.http), 1);
	stop(&e);
}

static void server_error_is_retried(void **state)
{
	struct env e;

	start_then_sync(&e, *state, 502, "{\"message\":\"Server Error\"}");
	assert_int_equal(sync_once(&e), 0);
	e.now += GROUP_RETRY_MS;
	fake_http_push(e.http, 200, NULL, ISSUE_7);
	assert_int_equal(sync_once(&e), 1);
	assert_int_equal(fake_http_count(e.http), 2);
	stop(&e);
}

UNIT_MAIN(
	SFX_TEST(refused_body_waits_for_a_change),
	SFX_TEST(deleted_issue_waits_for_a_change),
	SFX_TEST(server_error_is_retried))
