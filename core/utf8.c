/* utf8.c - UTF-8 checks following RFC 3629's table of well-formed sequences. */
#include "utf8.h"

#include "banned.h"

/* Length of the well-formed sequence at s (n bytes left), 0 when ill-formed. */
static size_t seq_len(const unsigned char *s, size_t n)
{
	unsigned char c = s[0];
	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		return n >= 2 && (s[1] & 0xc0) == 0x80 ? 2 : 0;
	if (c >= 0xe0 && c <= 0xef) {
		unsigned char lo = c == 0xe0 ? 0xa0 : 0x80;
		unsigned char hi = c == 0xed ? 0x9f : 0xbf;
		if (n < 3 || s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80)
			return 0;
		return 3;
	}
	if (c >= 0xf0 && c <= 0xf4) {
		unsigned char lo = c == 0xf0 ? 0x90 : 0x80;
		unsigned char hi = c == 0xf4 ? 0x8f : 0xbf;
		if (n < 4 || s[1] < lo || s[1] > hi || (s[2] & 0xc0) != 0x80 ||
		    (s[3] & 0xc0) != 0x80)
			return 0;
		return 4;
	}
	return 0;
}

int utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;
	while (i < n) {
		size_t l = seq_len(p + i, n - i);
		if (!l)
			return 0;
		i += l;
	}
	return 1;
}

size_t utf8_cut(const char *s, size_t n, size_t max_bytes)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t cut;

	if (n <= max_bytes)
		return n;
	cut = max_bytes;
	/* Step back over continuation bytes to the start of the sequence. */
	while (cut > 0 && (p[cut] & 0xc0) == 0x80)
		cut--;
	return cut;
}

size_t utf8_decode(const char *s, size_t n, uint32_t *cp)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t len = n ? seq_len(p, n) : 0;
	uint32_t v;

	switch (len) {
	case 1:
		v = p[0];
		break;
	case 2:
		v = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
		break;
	case 3:
		v = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
		break;
	case 4:
		v = (uint32_t)(p[0] & 0x07) << 18 | (uint32_t)(p[1] & 0x3f) << 12 |
		    (uint32_t)(p[2] & 0x3f) << 6 | (p[3] & 0x3f);
		break;
	default:
		return 0;
	}
	*cp = v;
	return len;
}
