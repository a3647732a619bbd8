/*
 * utf8.h - UTF-8 validation and boundary-safe truncation (RFC 3629).
 */
#ifndef AB_UTF8_H
#define AB_UTF8_H

#include <stddef.h>

/*
 * Non-zero when s[0..n) is well-formed UTF-8 (no overlongs, no surrogates,
 * nothing above U+10FFFF).  NUL bytes are valid UTF-8 and accepted here.
 */
int utf8_valid(const char *s, size_t n);

/*
 * The largest length <= max_bytes at which s[0..n) can be cut without
 * splitting a multi-byte sequence.  Returns n when n <= max_bytes.
 */
size_t utf8_cut(const char *s, size_t n, size_t max_bytes);

#endif
