/*
 * utf8.h - UTF-8 validation and boundary-safe truncation (RFC 3629).
 */
#ifndef AB_UTF8_H
#define AB_UTF8_H

#include <stddef.h>
#include <stdint.h>

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

/*
 * Decode the code point at the start of s[0..n) (n >= 1) into *cp.  Returns
 * the length of its well-formed sequence (1-4), or 0 when the bytes at s are
 * not one (RFC 3629's table; *cp is then untouched): the caller decides what
 * an ill-formed byte becomes (e.g. U+FFFD) and steps over one byte.
 */
size_t utf8_decode(const char *s, size_t n, uint32_t *cp);

#endif
