/*
 * render_fixture.h - the renderer's unit tests' env (test_render.c, test_group_large.c): a
 * dry-run config of one receiver "default" (repo my-org/alerts) and its templates built.
 * Failures end the test (cmocka).
 */
#ifndef AB_TEST_RENDER_FIXTURE_H
#define AB_TEST_RENDER_FIXTURE_H

#include "bridge/render.h"
#include "core/config.h"

struct render_env {
	struct config *cfg;
	struct render *r;
};

/*
 * Parse the config, receiver_extra (lines under the receiver; "" for none) added, and build
 * its templates into e; fails the test, with the error, when either is refused.
 */
void rfx_start(struct render_env *e, const char *receiver_extra);
/* Free what rfx_start() built. */
void rfx_stop(struct render_env *e);

#endif
