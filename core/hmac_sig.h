/*
 * hmac_sig.h - the check of a signed request: a header carrying a prefix
 * and the lower-case hex HMAC-SHA256 (nettle) of what was signed, keyed with
 * a shared secret.  GitHub signs the body ("sha256=", X-Hub-Signature-256,
 * GitHub Docs "Validating webhook deliveries"); Slack signs "v0:" timestamp
 * ":" body ("v0=", X-Slack-Signature, Slack's "Verifying requests from
 * Slack").
 */
#ifndef AB_HMAC_SIG_H
#define AB_HMAC_SIG_H

#include <stddef.h>

/* One piece of the signed text: len bytes at data (not NUL-terminated). */
struct hmac_sig_part {
	const char *data;
	size_t len;
};

/*
 * 1 when sig is prefix followed by the 64 lower-case hex digits of the
 * HMAC-SHA256 keyed with secret of parts[0..n) one after the other, the
 * digits compared in constant time (memeql_sec); else 0.  A NULL or empty
 * secret, a NULL sig, or a sig of another prefix or length: 0.  Nothing is
 * kept and nothing is allocated.
 */
int hmac_sig_ok(const char *secret, const char *prefix, const char *sig,
		const struct hmac_sig_part *parts, size_t n);

#endif
