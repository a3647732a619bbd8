/* test_log.c - logfmt and JSON lines: escaping, levels, field order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/log.h"

/* Capture what the logger writes into a temporary file and return it. */
static char *capture(void (*emit)(void))
{
	FILE *f = tmpfile();
	static char out[4096];
	size_t n;

	assert_non_null(f);
	log_set_fd(fileno(f));
	emit();
	log_set_fd(2);
	rewind(f);
	n = fread(out, 1, sizeof(out) - 1, f);
	out[n] = '\0';
	fclose(f);
	return out;
}

static void emit_fields(void)
{
	struct log_line *l = log_begin(LOG_WARN, "github call failed");
	log_str(l, "repo", "my-org/alerts");
	log_int(l, "issue", 42);
	log_str(l, "detail", "said \"no\" = bad\n");
	log_err(l, ERR_RETRY);
	log_end(l);
}

static void emit_debug(void)
{
	struct log_line *l = log_begin(LOG_DEBUG, "hidden");
	assert_null(l);
	log_str(l, "k", "v"); /* NULL line: no-op */
	log_end(l);
}

static void logfmt_quotes_what_needs_it(void **state)
{
	char *out;
	(void)state;
	log_setup(LOG_INFO, LOG_LOGFMT);
	out = capture(emit_fields);
	assert_non_null(strstr(out, " level=warn msg=\"github call failed\" repo=my-org/alerts"
				    " issue=42 detail=\"said \\\"no\\\" = bad\\n\" err=retry\n"));
	assert_int_equal(strncmp(out, "ts=", 3), 0);
}

static void json_lines_are_objects(void **state)
{
	char *out;
	(void)state;
	log_setup(LOG_INFO, LOG_JSON);
	out = capture(emit_fields);
	assert_int_equal(out[0], '{');
	assert_non_null(strstr(out, "\"level\":\"warn\",\"msg\":\"github call failed\","
				    "\"repo\":\"my-org/alerts\",\"issue\":42,"
				    "\"detail\":\"said \\\"no\\\" = bad\\n\",\"err\":\"retry\"}\n"));
	log_setup(LOG_INFO, LOG_LOGFMT);
}

/*
 * Issue 19 item 10: characters a reader may take as a line break (U+2028, U+2029, NEL
 * U+0085), C1 controls (CSI U+009B), DEL and the bidi controls that reorder what a reader
 * sees (U+202A-202E, U+2066-2069, U+200E/F, U+061C) are written as \uXXXX in both formats,
 * so no value can forge a field or a line.
 */
static const char hostile[] = "a\xe2\x80\xa8msg=forged b\xe2\x80\xa9 c\xc2\x85 d\xc2\x9b"
			      " e\x7f f\xe2\x80\xae g\xe2\x81\xa6 h\xe2\x80\x8f i\xd8\x9c"
			      " caf\xc3\xa9";
static const char hostile_escaped[] = "\"a\\u2028msg=forged b\\u2029 c\\u0085 d\\u009b"
				      " e\\u007f f\\u202e g\\u2066 h\\u200f i\\u061c"
				      " caf\xc3\xa9\"";

static void emit_hostile(void)
{
	struct log_line *l = log_begin(LOG_WARN, "x");
	log_str(l, "v", hostile);
	log_str(l, "w", "plain\xe2\x80\xa8");
	log_end(l);
}

static void invisible_and_line_breaking_characters_are_escaped(void **state)
{
	enum log_format formats[] = { LOG_LOGFMT, LOG_JSON };
	char want[512];
	(void)state;
	for (size_t i = 0; i < 2; i++) {
		char *out;
		log_setup(LOG_INFO, formats[i]);
		out = capture(emit_hostile);
		snprintf(want, sizeof(want), formats[i] == LOG_JSON ? "\"v\":%s" : "v=%s",
			 hostile_escaped);
		assert_non_null(strstr(out, want));
		/* a value with no space is still quoted when it holds one of them */
		assert_non_null(strstr(out, formats[i] == LOG_JSON ? "\"w\":\"plain\\u2028\""
							 : "w=\"plain\\u2028\""));
		for (const char *p = out; *p; p++) {
			unsigned char c = (unsigned char)*p;
			assert_true(c != 0x7f && (c >= 0x20 || c == '\n'));
		}
		assert_null(strstr(out, "\xe2\x80\xa8"));
		assert_null(strstr(out, "\xc2\x85"));
		assert_null(strstr(out, "\xe2\x80\xae"));
	}
	log_setup(LOG_INFO, LOG_LOGFMT);
}

static void below_threshold_writes_nothing(void **state)
{
	(void)state;
	log_setup(LOG_INFO, LOG_LOGFMT);
	assert_string_equal(capture(emit_debug), "");
	assert_false(log_enabled(LOG_DEBUG));
	assert_true(log_enabled(LOG_ERROR));
}

static void levels_and_formats_parse(void **state)
{
	enum log_level lv;
	enum log_format fm;
	(void)state;
	assert_int_equal(log_level_parse("warn", &lv), ERR_OK);
	assert_int_equal(lv, LOG_WARN);
	assert_int_equal(log_level_parse("verbose", &lv), ERR_INVALID);
	assert_int_equal(log_format_parse("json", &fm), ERR_OK);
	assert_int_equal(fm, LOG_JSON);
	assert_int_equal(log_format_parse("text", &fm), ERR_INVALID);
}

UNIT_MAIN(
	cmocka_unit_test(logfmt_quotes_what_needs_it),
	cmocka_unit_test(json_lines_are_objects),
	cmocka_unit_test(invisible_and_line_breaking_characters_are_escaped),
	cmocka_unit_test(below_threshold_writes_nothing),
	cmocka_unit_test(levels_and_formats_parse))
