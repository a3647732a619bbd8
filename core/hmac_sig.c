/*
 * hmac_sig.c - the HMAC-SHA256 check of a signed request (hmac_sig.h).
 */
#include "hmac_sig.h"

#include <stdint.h>
#include <string.h>

#include <nettle/base16.h>
#include <nettle/hmac.h>
#include <nettle/memops.h>

#include "banned.h"

int hmac_sig_ok(const char *secret, const char *prefix, const char *sig,
		const struct hmac_sig_part *parts, size_t n)
{
	struct hmac_sha256_ctx ctx;
	uint8_t digest[SHA256_DIGEST_SIZE];
	char hex[BASE16_ENCODE_LENGTH(SHA256_DIGEST_SIZE) + 1];
	size_t plen = strlen(prefix);

	if (!secret || !*secret || !sig || strncmp(sig, prefix, plen) ||
	    strlen(sig + plen) != sizeof(hex) - 1)
		return 0;
	hmac_sha256_set_key(&ctx, strlen(secret), (const uint8_t *)secret);
	for (size_t i = 0; i < n; i++)
		hmac_sha256_update(&ctx, parts[i].len, (const uint8_t *)parts[i].data);
	hmac_sha256_digest(&ctx, sizeof(digest), digest);
	base16_encode_update(hex, sizeof(digest), digest);
	hex[sizeof(hex) - 1] = '\0';
	return memeql_sec(hex, sig + plen, sizeof(hex) - 1);
}
