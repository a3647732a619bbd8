/* test_codec.c - base64 (nettle), JSON strings (jansson), SHA-256 and the secret compare. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/codec.h"

static void b64(const char *in, enum err want_rc, const char *want)
{
	unsigned char out[CODEC_BASE64_DECODED_MAX(64)];
	size_t len = 99;

	assert_true(strlen(in) <= 64);
	assert_int_equal(codec_base64_decode(in, strlen(in), out, &len), want_rc);
	if (want_rc == ERR_OK) {
		assert_int_equal(len, strlen(want));
		assert_memory_equal(out, want, len);
	}
}

static void base64_decodes_rfc4648(void **state)
{
	(void)state;
	/* RFC 4648 section 10 test vectors */
	b64("", ERR_OK, "");
	b64("Zg==", ERR_OK, "f");
	b64("Zm8=", ERR_OK, "fo");
	b64("Zm9v", ERR_OK, "foo");
	b64("Zm9vYmFy", ERR_OK, "foobar");
	b64("Zm9v\nYmE=\r\n", ERR_OK, "fooba");  /* whitespace (a PEM in a kubeconfig) skipped */
	b64("Zg", ERR_INVALID, NULL);            /* padding required */
	b64("Zm9v!", ERR_INVALID, NULL);
	b64("Zg==Zg==", ERR_INVALID, NULL);      /* data after the padding */
	b64("Zh==", ERR_INVALID, NULL);          /* unused bits not zero */
	b64("Z===", ERR_INVALID, NULL);
}

static void json(const char *in, size_t n, const char *want)
{
	struct buf out = BUF_INIT;

	codec_json_string(&out, in, n);
	assert_string_equal(buf_str(&out), want);
	buf_release(&out);
}

static void json_strings_as_jansson_writes_them(void **state)
{
	(void)state;
	json("plain text", 10, "\"plain text\"");
	json(NULL, 0, "\"\"");
	json("q\"b\\s/", 6, "\"q\\\"b\\\\s/\"");
	json("\b\f\n\r\t\x01\x1b\x7f", 8, "\"\\b\\f\\n\\r\\t\\u0001\\u001B\x7f\"");
	json("a\0b", 3, "\"a\\u0000b\"");
	json("gr\xc3\xbc\xc3\x9f", 6, "\"gr\xc3\xbc\xc3\x9f\"");      /* UTF-8 kept */
	json("bad\xff\xc3 \"", 7, "\"bad\\uFFFD\\uFFFD \\\"\"");     /* not UTF-8 */
	json("\xc3\xbc\xff", 3, "\"\\uFFFD\\uFFFD\\uFFFD\"");        /* then ASCII only */
}

/* The FNV-1a 64 test vectors of the FNV reference (draft-eastlake-fnv, "foobar" among them). */
static void fnv64a_vectors(void **state)
{
	(void)state;
	assert_true(codec_fnv64a(CODEC_FNV64_OFFSET, "", 0) == 0xcbf29ce484222325ULL);
	assert_true(codec_fnv64a(CODEC_FNV64_OFFSET, "a", 1) == 0xaf63dc4c8601ec8cULL);
	assert_true(codec_fnv64a(CODEC_FNV64_OFFSET, "foobar", 6) == 0x85944171f73967e8ULL);
	/* folding in parts is folding the whole */
	assert_true(codec_fnv64a(codec_fnv64a(CODEC_FNV64_OFFSET, "foo", 3), "bar", 3) ==
		    0x85944171f73967e8ULL);
}

static void sha256_and_secret_compare(void **state)
{
	static const unsigned char abc[CODEC_SHA256_LEN] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae,
		0x22, 0x23, 0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61,
		0xf2, 0x00, 0x15, 0xad,
	};
	unsigned char md[CODEC_SHA256_LEN];
	(void)state;
	codec_sha256("abc", 3, md);  /* FIPS 180-4 example */
	assert_memory_equal(md, abc, sizeof(md));
	assert_true(codec_equal_secret(md, abc, sizeof(md)));
	md[31] ^= 1;
	assert_false(codec_equal_secret(md, abc, sizeof(md)));
	codec_wipe(md, sizeof(md));
	for (size_t i = 0; i < sizeof(md); i++)
		assert_int_equal(md[i], 0);
}

UNIT_MAIN(
	cmocka_unit_test(base64_decodes_rfc4648),
	cmocka_unit_test(json_strings_as_jansson_writes_them),
	cmocka_unit_test(fnv64a_vectors),
	cmocka_unit_test(sha256_and_secret_compare))
