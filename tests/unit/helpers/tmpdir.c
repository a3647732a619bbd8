/*
 * tmpdir.c - a fresh directory for one unit test, and its removal (tmpdir.h).
 */
#define _XOPEN_SOURCE 700
#include "tests/unit/helpers/tmpdir.h"

#include <ftw.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

void tfx_mkdtemp(char *out, size_t n, const char *prefix)
{
	const char *base = getenv("TMPDIR");
	/* mkdtemp(3) replaces the last six characters, which must be "XXXXXX". */
	int len = snprintf(out, n, "%s/%s.XXXXXX", base && *base ? base : "/tmp", prefix);

	assert_true(len > 0 && (size_t)len < n);
	assert_non_null(mkdtemp(out));
}

void tfx_write_file(const char *dir, const char *name, const char *text)
{
	char path[512];
	int len = dir ? snprintf(path, sizeof(path), "%s/%s", dir, name)
		      : snprintf(path, sizeof(path), "%s", name);
	FILE *f;

	assert_true(len > 0 && (size_t)len < sizeof(path));
	f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

void tfx_remove_tree(const char *dir)
{
	assert_int_equal(nftw(dir, remove_one, 16, FTW_DEPTH | FTW_PHYS), 0);
}
