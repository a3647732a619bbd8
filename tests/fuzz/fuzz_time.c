/*
 * fuzz_time.c - libFuzzer harness for the duration and time parsers:
 * duration_parse(), rfc3339_parse(), rfc3339_parse_go(), janitor_parse_time()
 * and janitor_parse_ttl() on the fuzzed string (cut at its first NUL, as a C
 * string).  What parses must format and parse back to the same value; what
 * does not must say why.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/buf.h"
#include "core/duration.h"
#include "core/rfc3339.h"
#include "core/xalloc.h"
#include "janitor/annotate.h"

#include "core/banned.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void duration(const char *s)
{
	struct buf err = BUF_INIT, text = BUF_INIT;
	int64_t ms = -7, back = -7;

	if (duration_parse(s, &ms, &err) != ERR_OK) {
		if (!err.len || ms != -7)
			abort();
		goto out;
	}
	if (ms < 0)
		abort();
	duration_format(ms, &text);
	if (duration_parse(buf_str(&text), &back, NULL) != ERR_OK || back != ms)
		abort(); /* String() reads back */
	buf_reset(&text);
	duration_human(ms, &text);
	if (!text.len)
		abort();
out:
	buf_release(&err);
	buf_release(&text);
}

static void rfc3339(const char *s)
{
	const int64_t lo = rfc3339_from_civil(1, 1, 1, 0, 0, 0);
	const int64_t hi = rfc3339_from_civil(10000, 1, 1, 0, 0, 0);
	int64_t ms = -7, go = -7, back = -7;
	char out[32], human[48];

	if (rfc3339_parse(s, &ms) != ERR_OK) {
		if (ms != -7 || rfc3339_parse_go(s, &go) == ERR_OK)
			abort(); /* the Go form is a subset */
		return;
	}
	if (rfc3339_parse_go(s, &go) == ERR_OK && go != ms)
		abort();
	if (ms == 0)
		return; /* Go's zero time and the epoch both read as 0 */
	rfc3339_human(ms, human);
	if (ms < lo || ms >= hi)
		return; /* outside what the format reads back */
	rfc3339_format_ms(ms, out);
	if (rfc3339_parse(out, &back) != ERR_OK || back != ms)
		abort();
}

static void janitor_time(const char *s)
{
	struct buf err = BUF_INIT;
	int64_t ms = -7, back = -7;
	char out[JANITOR_TIME_LEN];

	if (janitor_parse_time(s, &ms, &err) != ERR_OK) {
		if (!err.len || ms != -7)
			abort();
		goto out;
	}
	if (janitor_format_time(ms, out) != ERR_OK || janitor_parse_time(out, &back, NULL) ||
	    back != ms)
		abort();
out:
	buf_release(&err);
}

static void janitor_ttl(const char *s)
{
	struct buf err = BUF_INIT;
	int64_t ms = -7;

	if (janitor_parse_ttl(s, &ms, &err) != ERR_OK) {
		if (!err.len || ms != -7)
			abort();
	} else if (ms < 0 && ms != JANITOR_TTL_FOREVER) {
		abort();
	}
	buf_release(&err);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = xmalloc(size + 1);

	memcpy(s, data, size);
	s[size] = '\0';
	duration(s);
	rfc3339(s);
	janitor_time(s);
	janitor_ttl(s);
	free(s);
	return 0;
}
