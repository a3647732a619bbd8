/*
 * cmd/version.c - `alertbridge version` (and --version): the build's identity
 * and the linked libraries' versions (core/version.h).
 */
#include <stdio.h>

#include "cmd/cmd.h"
#include "core/buf.h"
#include "core/version.h"
#include "core/banned.h"

/* --help too prints the version: there is nothing else to say. */
int cmd_version(const struct flags *f)
{
	struct buf out = BUF_INIT;

	(void)f;
	version_text(&out);
	fputs(buf_str(&out), stdout);
	buf_release(&out);
	return 0;
}
