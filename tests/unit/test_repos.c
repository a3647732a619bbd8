/*
 * test_repos.c - the cache of repositories GitHub says are missing, against
 * fake_http: only a 404 on GET /repos/{o}/{r} counts, it is kept ttl_ms and
 * then asked again, a 200 drops it, a 5xx is no answer, and forget empties it.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/event_fixture.h"
#include "tests/unit/helpers/unit_main.h"

#include "bridge/gh.h"
#include "bridge/repos.h"
#include "core/log.h"
#include "store/store.h"
#include "store/store_events.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/gh_fixture.h"
#include "tests/unit/helpers/store_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

#define T0 1700000000000LL

struct repos_fx {
	struct fake_http *fake;
	struct gh_client *gh;
	struct store *st;
	int64_t now;
	struct vclock clock;  /* gh's, on now */
};

static int setup(void **state)
{
	struct repos_fx *fx = calloc(1, sizeof(*fx));
	struct gh_options o = { 0 };

	fx->fake = fake_http_start();
	fx->now = T0;
	o.api_url = fake_http_url(fx->fake);
	o.token = "tok";
	o.max_attempts = 2;
	fx->gh = gfx_client_at(&o, &fx->clock, &fx->now);
	if (store_open(":memory:", &fx->st, NULL) != ERR_OK)
		return -1;
	*state = fx;
	return 0;
}

static int teardown(void **state)
{
	struct repos_fx *fx = *state;

	gh_client_free(fx->gh);
	store_close(fx->st);
	fake_http_stop(fx->fake);
	free(fx);
	return 0;
}

static void missing_is_kept_for_the_ttl(void **state)
{
	struct repos_fx *fx = *state;
	struct repos *r = repos_new(fx->gh, fx->st, 60000);
	struct buf err = BUF_INIT;

	fake_http_push(fx->fake, 404, NULL, "{\"message\":\"Not Found\"}");
	assert_false(repos_known_missing(r, "o/gone", fx->now));
	assert_int_equal(repos_check(r, "o/gone", fx->now, &err), ERR_NOTFOUND);
	assert_string_equal(fake_http_request(fx->fake, 0)->uri, "/repos/o/gone");
	assert_true(repos_known_missing(r, "o/gone", fx->now + 59999));
	assert_true(repos_known_missing(r, "O/Gone", fx->now));  /* GitHub ignores case */
	assert_false(repos_known_missing(r, "o/other", fx->now));
	assert_false(repos_known_missing(r, "o/gone", fx->now + 60000));  /* ask again */

	/* It appeared: a 200 drops the answer. */
	fake_http_push(fx->fake, 200, NULL, "{\"full_name\":\"o/gone\"}");
	assert_int_equal(repos_check(r, "o/gone", fx->now, &err), ERR_OK);
	assert_false(repos_known_missing(r, "o/gone", fx->now));

	/* A 5xx is no answer: nothing kept, the caller retries. */
	fake_http_push(fx->fake, 503, NULL, "{}");
	fake_http_push(fx->fake, 503, NULL, "{}");
	assert_int_equal(repos_check(r, "o/flaky", fx->now, &err), ERR_RETRY);
	assert_false(repos_known_missing(r, "o/flaky", fx->now));
	assert_int_equal(fake_http_count(fx->fake), 4);

	fake_http_push(fx->fake, 404, NULL, "{}");
	assert_int_equal(repos_check(r, "o/gone", fx->now, &err), ERR_NOTFOUND);
	repos_forget(r);
	assert_false(repos_known_missing(r, "o/gone", fx->now));
	buf_release(&err);
	repos_free(r);
	repos_free(NULL);
}

/* More missing repositories than slots: the oldest answer goes first. */
static void the_oldest_answer_is_replaced(void **state)
{
	struct repos_fx *fx = *state;
	struct repos *r = repos_new(fx->gh, fx->st, 0);  /* 10 minutes */
	struct buf err = BUF_INIT;
	char name[32];

	for (int i = 0; i < 65; i++) {
		fake_http_push(fx->fake, 404, NULL, "{}");
		snprintf(name, sizeof(name), "o/r%d", i);
		assert_int_equal(repos_check(r, name, fx->now + i, &err), ERR_NOTFOUND);
	}
	assert_false(repos_known_missing(r, "o/r0", fx->now + 100));
	assert_true(repos_known_missing(r, "o/r1", fx->now + 100));
	assert_true(repos_known_missing(r, "o/r64", fx->now + 599999));
	assert_false(repos_known_missing(r, "o/r64", fx->now + 64 + 600000));
	buf_release(&err);
	repos_free(r);
}

static struct store_event queued(struct repos_fx *fx, const char *key)
{
	struct store_event ev = efx_firing("default", key, T0);

	assert_int_equal(store_enqueue(fx->st, &ev, 1, NULL), ERR_OK);
	assert_int_equal(store_next_event(fx->st, "bridge", INT64_MAX, &ev), ERR_OK);
	return ev;
}

/* The dead letters: the reason, no call when known, re-queued events ask again. */
static void events_are_dead_lettered_and_retried(void **state)
{
	struct repos_fx *fx = *state;
	struct repos *r = repos_new(fx->gh, fx->st, 0);
	struct buf err = BUF_INIT;
	struct store_event ev = queued(fx, "k1");
	int64_t n = 0;
	FILE *log = tmpfile();
	char text[4096];

	assert_non_null(log);
	buf_setf(&err, "POST /repos/o/gone/issues: 404 not found");
	fake_http_push(fx->fake, 404, NULL, "{}");
	assert_int_equal(repos_dead_if_known(r, &ev, "o/gone", fx->now), 0);
	assert_int_equal(repos_dead_if_missing(r, &ev, "o/gone", fx->now, &err), 1);
	store_event_release(&ev);
	assert_int_equal(store_dead_count(fx->st), 1);
	ev = queued(fx, "k2");
	assert_int_equal(repos_dead_if_known(r, &ev, "o/gone", fx->now + 1000), 1);
	store_event_release(&ev);
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_int_equal(store_dead_count(fx->st), 2);

	/* A re-queued event is not dead-lettered from the kept answer. */
	log_setup(LOG_INFO, LOG_LOGFMT);
	log_set_fd(fileno(log));
	assert_int_equal(repos_retry_dead(r, &n), ERR_OK);
	log_set_fd(2);
	log_setup(LOG_ERROR, LOG_LOGFMT);
	assert_int_equal(n, 2);
	/* The log gives the reason as people read it, not as an SQL LIKE pattern. */
	rewind(log);
	text[fread(text, 1, sizeof(text) - 1, log)] = '\0';
	fclose(log);
	assert_non_null(strstr(text, "msg=\"dead letters re-queued\" events=2 "
				     "reason=\"repository not found or no access\""));
	assert_null(strstr(text, "%"));
	assert_int_equal(store_next_event(fx->st, "bridge", INT64_MAX, &ev), ERR_OK);
	assert_string_equal(ev.last_error,
			    STORE_REQUEUED "repository o/gone not found or no access");
	fake_http_push(fx->fake, 404, NULL, "{}");
	assert_int_equal(repos_dead_if_missing(r, &ev, "o/gone", fx->now, &err), 1);
	assert_int_equal(repos_dead_if_known(r, &ev, "o/gone", fx->now), 0);
	store_event_release(&ev);

	/* GitHub cannot tell: no dead letter, the detail added. */
	assert_int_equal(store_next_event(fx->st, "bridge", INT64_MAX, &ev), ERR_OK);
	assert_string_equal(ev.key, "k2");  /* the other one re-queued */
	buf_setf(&err, "first");
	fake_http_push(fx->fake, 500, NULL, "{}");
	fake_http_push(fx->fake, 500, NULL, "{}");
	assert_int_equal(repos_dead_if_missing(r, &ev, "o/other", fx->now, &err), 0);
	assert_non_null(strstr(buf_str(&err), "first; is the repository there? giving up"));
	store_event_release(&ev);
	assert_int_equal(store_dead_count(fx->st), 1);
	buf_release(&err);
	repos_free(r);
}

/*
 * The dead letter cannot be written (a full disk): -1, so the bridge backs off before it asks
 * GitHub again (campaign seed 9: 4,862 calls in a 2.8 s full disk, each "cannot dead-letter").
 */
static void a_dead_letter_the_store_refuses_is_said(void **state)
{
	struct repos_fx *fx = *state;
	struct repos *r;
	struct store_event ev;
	struct buf err = BUF_INIT;
	char dir[256], path[512];

	store_close(fx->st);
	tfx_mkdtemp(dir, sizeof(dir), "repos");
	snprintf(path, sizeof(path), "%s/ab.db", dir);
	assert_int_equal(store_open(path, &fx->st, NULL), ERR_OK);
	r = repos_new(fx->gh, fx->st, 60000);
	ev = queued(fx, "k1");
	sfx_sql_exec(path, "CREATE TRIGGER full BEFORE UPDATE ON events "
			   "BEGIN SELECT RAISE(ABORT, 'database or disk is full'); END");
	fake_http_push(fx->fake, 404, NULL, "{}");
	assert_int_equal(repos_dead_if_missing(r, &ev, "o/gone", fx->now, &err), -1);
	assert_int_equal(repos_dead_if_known(r, &ev, "o/gone", fx->now), -1);
	assert_int_equal(fake_http_count(fx->fake), 1);
	assert_int_equal(store_dead_count(fx->st), 0);
	store_event_release(&ev);
	buf_release(&err);
	repos_free(r);
	tfx_remove_tree(dir);
}

UNIT_MAIN_WITH(log_setup(LOG_ERROR, LOG_LOGFMT), (void)0,
	cmocka_unit_test_setup_teardown(a_dead_letter_the_store_refuses_is_said, setup, teardown),
	cmocka_unit_test_setup_teardown(missing_is_kept_for_the_ttl, setup, teardown),
	cmocka_unit_test_setup_teardown(the_oldest_answer_is_replaced, setup, teardown),
	cmocka_unit_test_setup_teardown(events_are_dead_lettered_and_retried, setup, teardown))
