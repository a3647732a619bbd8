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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(logfmt_quotes_what_needs_it),
		cmocka_unit_test(json_lines_are_objects),
		cmocka_unit_test(below_threshold_writes_nothing),
		cmocka_unit_test(levels_and_formats_parse),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
