/*
 * codec.c - base64, JSON string quoting and SHA-256 over nettle and jansson
 * (codec.h).  nettle comes with GnuTLS, which libmicrohttpd and libcurl-gnutls
 * already link: no second crypto library.
 */
#include "codec.h"

#include <string.h>

#include <jansson.h>
#include <nettle/base64.h>
#include <nettle/memops.h>
#include <nettle/sha2.h>

#include "utf8.h"
#include "xalloc.h"

#include "banned.h"

enum err codec_base64_decode(const char *s, size_t n, unsigned char *out, size_t *out_len)
{
	struct base64_decode_ctx ctx;

	*out_len = 0;
	base64_decode_init(&ctx);
	if (!base64_decode_update(&ctx, out_len, out, n, s) || !base64_decode_final(&ctx))
		return ERR_INVALID;
	return ERR_OK;
}

/* Dump j compactly into out; flags as json_dumpb's. */
static void dump(struct buf *out, const json_t *j, size_t flags)
{
	char stack[256];
	size_t need = json_dumpb(j, stack, sizeof(stack), flags | JSON_ENCODE_ANY | JSON_COMPACT);
	char *heap;

	if (need == 0)  /* only when jansson cannot allocate: as xmalloc */
		abort();
	if (need <= sizeof(stack)) {
		(void)buf_add(out, stack, need);
		return;
	}
	heap = xmalloc(need);
	if (json_dumpb(j, heap, need, flags | JSON_ENCODE_ANY | JSON_COMPACT) != need)
		abort();
	(void)buf_add(out, heap, need);
	free(heap);
}

/*
 * Whether s[0..n) is printable ASCII without '"' or '\\': what jansson
 * writes unchanged.  Most labels and log values are; they skip the json_t
 * and its allocation (the event documents are on the intake's hot path).
 */
static int plain_ascii(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c < 0x20 || c >= 0x7f || c == '"' || c == '\\')
			return 0;
	}
	return 1;
}

void codec_json_string(struct buf *out, const char *s, size_t n)
{
	static const char replacement[] = "\xef\xbf\xbd";  /* U+FFFD */
	struct buf fixed = BUF_INIT;
	size_t flags = 0;
	json_t *j;

	if (!s)
		s = "";
	if (plain_ascii(s, n)) {
		(void)buf_addch(out, '"');
		(void)buf_add(out, s, n);
		(void)buf_addch(out, '"');
		return;
	}
	if (!utf8_valid(s, n)) {
		for (size_t i = 0; i < n; i++) {
			if ((unsigned char)s[i] >= 0x80)
				(void)buf_adds(&fixed, replacement);
			else
				(void)buf_addch(&fixed, s[i]);
		}
		s = fixed.data ? fixed.data : "";
		n = fixed.len;
		flags = JSON_ENSURE_ASCII;
	}
	/* Checked above: jansson need not check the UTF-8 again. */
	j = json_stringn_nocheck(s, n);
	if (!j)
		abort();
	dump(out, j, flags);
	json_decref(j);
	buf_release(&fixed);
}

void codec_sha256(const void *p, size_t n, unsigned char out[CODEC_SHA256_LEN])
{
	struct sha256_ctx ctx;

	sha256_init(&ctx);
	sha256_update(&ctx, n, p);
	sha256_digest(&ctx, CODEC_SHA256_LEN, out);
}

int codec_equal_secret(const void *a, const void *b, size_t n)
{
	return memeql_sec(a, b, n);
}

void codec_wipe(void *p, size_t n)
{
	explicit_bzero(p, n);
}

uint64_t codec_fnv64a(uint64_t h, const void *p, size_t n)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ULL;  /* the FNV-64 prime */
	return h;
}
