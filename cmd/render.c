/*
 * cmd/render.c - `alertbridge render`: a template rendered over each alert of
 * an Alertmanager payload exactly as the bridge sends it to GitHub.
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "cmd/cmd.h"
#include "bridge/render.h"
#include "bridge/view.h"
#include "core/am.h"
#include "core/buf.h"
#include "core/banned.h"

static const char usage_render[] =
	"usage: alertbridge render --template=FILE --payload=FILE [--alert=N]\n"
	"                          [--as=title|body|comment] [--receiver=NAME]\n"
	"\n"
	"Renders the Mustache template FILE over the view model of each alert of the\n"
	"Alertmanager webhook payload FILE (or only alert N, counting from 0), as the\n"
	"bridge would, and prints exactly the text it sends to GitHub, but for the hidden\n"
	"markers it appends to bodies and comments.  --as=title (the default): one line\n"
	"of plain text, cut to 256 characters; --as=body or comment (--html is body):\n"
	"GitHub Markdown in which {{x}} reads as text ({{{x}}} is not escaped).\n"
	"The view model is in templates/VIEW_MODEL.md.\n";

int cmd_render(const struct flags *f)
{
	struct buf tmpl = BUF_INIT, body = BUF_INIT, err = BUF_INIT, ev = BUF_INIT;
	struct buf out = BUF_INIT;
	struct am_payload *p = NULL;
	struct am_error aerr;
	enum render_text which;
	int rc = 1;

	if (f->help) {
		fputs(usage_render, stdout);
		return 0;
	}
	if (!f->template_file || !f->payload_file) {
		fputs(usage_render, stderr);
		return 2;
	}
	if (!f->render_as || !strcmp(f->render_as, "title")) {
		which = RENDER_TITLE;
	} else if (!strcmp(f->render_as, "body")) {
		which = RENDER_BODY;
	} else if (!strcmp(f->render_as, "comment")) {
		which = RENDER_REFIRE;  /* every comment is escaped alike */
	} else {
		fprintf(stderr, "alertbridge: --as: want title, body or comment, not \"%s\"\n",
			f->render_as);
		return 2;
	}
	if (render_read_file(f->template_file, &tmpl, &err) ||
	    render_read_file(f->payload_file, &body, &err)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
		goto out;
	}
	if (am_parse(body.data ? body.data : "", body.len, NULL, &p, &aerr)) {
		fprintf(stderr, "alertbridge: %s: %s%s%s\n", f->payload_file,
			aerr.field[0] ? aerr.field : "", aerr.field[0] ? ": " : "", aerr.message);
		goto out;
	}
	if (f->alert_index >= 0 && (size_t)f->alert_index >= p->n_alerts) {
		fprintf(stderr, "alertbridge: --alert=%d: the payload has %zu alerts\n",
			f->alert_index, p->n_alerts);
		goto out;
	}
	for (size_t i = 0; i < p->n_alerts; i++) {
		struct view_context ctx = { 0 };
		json_t *view = NULL;

		if (f->alert_index >= 0 && (size_t)f->alert_index != i)
			continue;
		buf_reset(&ev);
		buf_reset(&out);
		ctx.now_ms = (int64_t)time(NULL) * 1000;
		ctx.receiver = f->receiver;
		if (am_event_json(p, i, &ev) || view_build(buf_str(&ev), &ctx, &view, &err)) {
			fprintf(stderr, "alertbridge: alerts[%zu]: %s\n", i, buf_str(&err));
			goto out;
		}
		if (render_once(buf_str(&tmpl), tmpl.len, which, view, &out, &err)) {
			json_decref(view);
			fprintf(stderr, "alertbridge: %s: %s\n", f->template_file, buf_str(&err));
			goto out;
		}
		json_decref(view);
		fwrite(out.data ? out.data : "", 1, out.len, stdout);
		if (out.len && out.data[out.len - 1] != '\n')
			putchar('\n');
	}
	rc = 0;
out:
	am_payload_free(p);
	buf_release(&tmpl);
	buf_release(&body);
	buf_release(&err);
	buf_release(&ev);
	buf_release(&out);
	return rc;
}
