/*
 * render_fixture.c - the config and templates the renderer's unit tests render with.
 */
#include "render_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "core/buf.h"

void rfx_start(struct render_env *e, const char *receiver_extra)
{
	char yaml[2048];
	struct buf err = BUF_INIT;

	snprintf(yaml, sizeof(yaml),
		 "github: {dry_run: true}\n"
		 "receivers:\n  - name: default\n    repo: my-org/alerts\n%s", receiver_extra);
	if (cfg_parse(yaml, strlen(yaml), "test.yml", NULL, &e->cfg, &err) != ERR_OK)
		fail_msg("cfg_parse: %s", buf_str(&err));
	if (render_new(e->cfg, &e->r, &err) != ERR_OK)
		fail_msg("render_new: %s", buf_str(&err));
	buf_release(&err);
}

void rfx_stop(struct render_env *e)
{
	render_free(e->r);
	cfg_free(e->cfg);
}
