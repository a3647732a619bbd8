/*
 * test_bridge_links.c - the links the reconciler renders to issues (issue 18
 * item 12): a superseded issue is linked as GitHub gave its html_url and
 * where it lives, also after a reroute moved the alert to another
 * repository; before, later views built the link from the current
 * repository and api_url, so it pointed into the wrong repository.
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

#include "bridge/bridge.h"
#include "store/store.h"
#include "store/store_map.h"
#include "tests/unit/helpers/bridge_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

/* Issue 3 of my-org/alerts as GitHub has it: its html_url is GitHub's, not api_url's. */
#define OLD_URL "https://github.com/my-org/alerts/issues/3"
/* ... as a page shows it (a value's ':' escaped: no autolink), in a JSON body. */
#define OLD_URL_SHOWN "https\\\\://github.com/my-org/alerts/issues/3"
/* Issue 1 of other-org/moved, where the route sends the alert now. */
#define MOVED_1(state)                                                                     \
	"{\"number\":1,\"state\":\"" state "\",\"state_reason\":null,\"closed_at\":null,"  \
	"\"html_url\":\"https://github.com/other-org/moved/issues/1\",\"repository_url\":" \
	"\"https://api.github.com/repos/other-org/moved\"}"

static void reroute_links_the_previous_issue_where_it_lives(void **state)
{
	char dir[256], tmpl[320], extra[1024];
	struct env e;
	struct store_issue row = { 0 };
	(void)state;

	tfx_mkdtemp(dir, sizeof(dir), "ab-links");
	snprintf(tmpl, sizeof(tmpl), "%s/refire.mustache", dir);
	tfx_write_file(dir, "refire.mustache",
		       "firing again; previous: {{#previous}}{{url}}{{/previous}}\n");
	/* warnings go to another repository; a re-fire after 1 h makes a new issue */
	snprintf(extra, sizeof(extra),
		 "    reopen_window: 1h\n"
		 "    templates: {refire: %s}\n"
		 "    routes:\n"
		 "      - matchers: ['severity=\"warning\"']\n"
		 "        repo: other-org/moved\n", tmpl);
	bfx_env_start(&e, NULL, extra);
	assert_int_equal(store_scan_done(e.st, "default", "other-org/moved", T0), ERR_OK);

	bfx_enqueue(&e, "firing", "2026-11-21T00:49:48.539Z", "0001-01-01T00:00:00Z");
	fake_http_push(e.gh, 201, NULL, ISSUE_JSON(3, "open", "null", "null"));
	assert_int_equal(bridge_step(e.b), 1);
	e.now += 60000;
	bfx_enqueue(&e, "resolved", "2026-11-21T00:49:48.539Z", "2026-11-21T01:49:48.539Z");
	bfx_step_closes(&e, 3, 0);

	/* past reopen_window, now a warning: a new issue in other-org/moved links #3 */
	e.now += 2 * 3600000;
	bfx_enqueue_sev(&e, "firing", "2026-11-21T03:00:00Z", "0001-01-01T00:00:00Z", "warning");
	fake_http_push(e.gh, 200, NULL,
		       ISSUE_JSON(3, "closed", "\"completed\"", "\"2026-11-18T11:00:00Z\""));
	fake_http_push(e.gh, 201, NULL, MOVED_1("open"));
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 6);
	bfx_assert_request(&e, 5, "POST", "/repos/other-org/moved/issues",
			   "Previous issue: [#3](" OLD_URL_SHOWN ")");
	bfx_get_row(&e, &row);
	assert_string_equal(row.repo, "other-org/moved");
	assert_int_equal(row.number, 1);
	assert_int_equal(row.previous_number, 3);
	assert_string_equal(row.previous_url, OLD_URL);
	store_issue_release(&row);

	/* a later view of the new issue (its re-fire comment) links #3 where it lives */
	e.now += 60000;
	bfx_enqueue_sev(&e, "firing", "2026-11-21T04:00:00Z", "0001-01-01T00:00:00Z", "warning");
	fake_http_push(e.gh, 200, NULL, MOVED_1("open"));
	fake_http_push(e.gh, 201, NULL, "{\"id\":9}");
	assert_int_equal(bridge_step(e.b), 1);
	assert_int_equal(fake_http_count(e.gh), 8);
	bfx_assert_request(&e, 7, "POST", "/repos/other-org/moved/issues/1/comments",
			   "firing again; previous: " OLD_URL_SHOWN);
	bfx_env_stop(&e);
	tfx_remove_tree(dir);
}

UNIT_MAIN(
	cmocka_unit_test(reroute_links_the_previous_issue_where_it_lives))
