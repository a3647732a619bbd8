/*
 * tmpdir.h - a fresh directory for one unit test, under $TMPDIR (default
 * /tmp), and its removal.  Failures end the test (cmocka).
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

/* Remove dir and everything under it (nftw(3), depth first, links not followed). */
void tfx_remove_tree(const char *dir);

#endif
