/*
 * tmpdir.h - a fresh directory for one unit test, under $TMPDIR (default
 * /tmp), files written in it, and its removal.  Failures end the test (cmocka).
 */
#ifndef AB_TEST_TMPDIR_H
#define AB_TEST_TMPDIR_H

#include <stddef.h>

/*
 * Create a directory named $TMPDIR/<prefix>.<six random characters> with
 * mkdtemp(3) and write its path into out (n bytes, the caller's).  Fails the
 * test when the path does not fit or the directory cannot be made.
 */
void tfx_mkdtemp(char *out, size_t n, const char *prefix);

/*
 * Write text to dir/name (to name alone when dir is NULL), replacing what was there.  Fails
 * the test when the path does not fit 512 bytes or the file cannot be written and closed.
 */
void tfx_write_file(const char *dir, const char *name, const char *text);

/* Remove dir and everything under it (nftw(3), depth first, links not followed). */
void tfx_remove_tree(const char *dir);

#endif
