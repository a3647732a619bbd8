/*
 * codec.h - the byte encodings several modules need, each done once and by a
 * linked library rather than by hand: base64 decoding (nettle), JSON string
 * quoting (jansson) and SHA-256 (nettle).  Percent-encoding and HTTP dates
 * are libcurl's and live in the HTTP client (http_client.h).
 */
#ifndef AB_CODEC_H
#define AB_CODEC_H

#include <stddef.h>
#include <stdint.h>

#include "buf.h"
#include "err.h"

#define CODEC_SHA256_LEN 32

/* Bytes enough for the decoding of n characters of base64. */
#define CODEC_BASE64_DECODED_MAX(n) ((n) / 4 * 3 + 3)

/*
 * Decode the standard base64 (RFC 4648 section 4) text s[0..n) into out,
 * which holds CODEC_BASE64_DECODED_MAX(n) bytes (the caller's, so a decoded
 * secret can be wiped where it lies); *out_len gets the byte count (the bytes
 * may contain NUL).  Whitespace (space, tab, CR, LF, FF) is ignored, '='
 * padding is required and the unused bits of the last character must be zero
 * (nettle's base64_decode_*).  Returns ERR_OK, or ERR_INVALID when s is not
 * such base64 (out then holds a partial result to discard).
 */
enum err codec_base64_decode(const char *s, size_t n, unsigned char *out, size_t *out_len)
	__attribute__((warn_unused_result));

/*
 * Append s[0..n) to out as a JSON string, quotes included (RFC 8259 section
 * 7, as jansson's json_dumpb writes it: ", \\ and the control characters
 * U+0000-U+001F escaped, \u escapes in upper-case hex, nothing else).
 * Text that is not valid UTF-8 (a query parameter or a log value can be
 * anything) has each byte >= 0x80 written as \uFFFD, and then only ASCII is
 * written.  Buffer errors are ignored (out keeps what fitted); s may be NULL
 * when n is 0.
 */
void codec_json_string(struct buf *out, const char *s, size_t n);

/*
 * FNV-1a, 64 bits (the hash Alertmanager's fingerprints use, Go's
 * hash/fnv New64a): h folded with the bytes p[0..n); start from
 * CODEC_FNV64_OFFSET.  Not for anything an attacker may choose.
 */
#define CODEC_FNV64_OFFSET 14695981039346656037ULL
uint64_t codec_fnv64a(uint64_t h, const void *p, size_t n);

/* SHA-256 (FIPS 180-4, nettle) of p[0..n) into out. */
void codec_sha256(const void *p, size_t n, unsigned char out[CODEC_SHA256_LEN]);

/*
 * Non-zero when a[0..n) equals b[0..n); the time taken depends only on n
 * (nettle's memeql_sec), for comparing secrets' digests.
 */
int codec_equal_secret(const void *a, const void *b, size_t n);

/* Overwrite p[0..n) with zeros in a way the compiler does not elide. */
void codec_wipe(void *p, size_t n);

#endif
