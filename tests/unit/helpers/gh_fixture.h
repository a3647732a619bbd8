/*
 * gh_fixture.h - the GitHub client's unit tests' fixture (test_gh.c, test_gh_doubt.c): a
 * gh_client on a fake_http GitHub, in virtual time from GFX_T0, its sleeps recorded.
 */
#ifndef AB_TEST_GH_FIXTURE_H
#define AB_TEST_GH_FIXTURE_H

#include <stdint.h>

#include "bridge/gh.h"
#include "core/buf.h"
#include "tests/unit/helpers/fake_http.h"
#include "tests/unit/helpers/vclock.h"

#define GFX_T0 1700000000000LL /* 2023-11-14T22:13:20Z */

struct gh_fixture {
	struct fake_http *fake;
	struct gh_client *gh;
	struct gh_options opts;
	int64_t now;
	int64_t sleeps[32]; /* each sleep, in ms (each > 0) */
	int nsleeps;
	struct buf err;
	struct gh_issue is;
};

/* cmocka setup: *state a gh_fixture whose client has token tok-SECRET-123, timeout 1 s and
 * 3 attempts, its clock and sleeps virtual. */
int gfx_setup(void **state);
/* cmocka teardown of gfx_setup(). */
int gfx_teardown(void **state);
/* A new client of fx->opts in place of fx->gh (after a change of the options). */
void gfx_reopen(struct gh_fixture *fx);
/*
 * gh_issue_create() in o/r, title "t", of body holding marker, no labels or assignees, fails
 * with rc and exactly the message msg, and gives no issue number.
 */
void gfx_create_fails(struct gh_fixture *fx, const char *body, const char *marker, enum err rc,
		      const char *msg);
/* All fx slept, in ms. */
int64_t gfx_slept(const struct gh_fixture *fx);
/* gh_client_new(o) in virtual time: o's clock hooks set to a vclock on *now_ms (the test's
 * ms since the epoch), sleeps adding to it.  *clock is overwritten and must live as long as
 * the client. */
struct gh_client *gfx_client_at(struct gh_options *o, struct vclock *clock, int64_t *now_ms);

#endif
