/* test_buf.c - struct buf: growth, limits, detach, printf. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/buf.h"

static void empty_buf_is_empty_string(void **state)
{
	struct buf b = BUF_INIT;
	(void)state;
	assert_string_equal(buf_str(&b), "");
	assert_int_equal(b.len, 0);
	char *s = buf_detach(&b);
	assert_string_equal(s, "");
	free(s);
}

static void appends_and_printf_grow(void **state)
{
	struct buf b = BUF_INIT;
	(void)state;
	for (int i = 0; i < 1000; i++)
		assert_int_equal(buf_printf(&b, "%d,", i % 10), ERR_OK);
	assert_int_equal(b.len, 2000);
	assert_memory_equal(b.data, "0,1,2,", 6);
	assert_int_equal(b.data[b.len], '\0');
	buf_release(&b);
}

static void max_rejects_and_keeps_contents(void **state)
{
	struct buf b;
	(void)state;
	buf_init(&b, 8);
	assert_int_equal(buf_adds(&b, "12345"), ERR_OK);
	assert_int_equal(buf_adds(&b, "6789"), ERR_TOOBIG);
	assert_string_equal(buf_str(&b), "12345");
	assert_int_equal(buf_printf(&b, "%s", "abcd"), ERR_TOOBIG);
	assert_string_equal(buf_str(&b), "12345");
	assert_int_equal(buf_adds(&b, "678"), ERR_OK);
	assert_string_equal(buf_str(&b), "12345678");
	buf_release(&b);
}

static void setf_and_truncate(void **state)
{
	struct buf b = BUF_INIT;
	(void)state;
	buf_adds(&b, "old");
	buf_setf(&b, "new %s", "value");
	assert_string_equal(buf_str(&b), "new value");
	buf_truncate(&b, 3);
	assert_string_equal(buf_str(&b), "new");
	buf_truncate(&b, 10);
	assert_string_equal(buf_str(&b), "new");
	buf_setf(NULL, "ignored");
	buf_release(&b);
	buf_release(NULL);
}

UNIT_MAIN(
	cmocka_unit_test(empty_buf_is_empty_string),
	cmocka_unit_test(appends_and_printf_grow),
	cmocka_unit_test(max_rejects_and_keeps_contents),
	cmocka_unit_test(setf_and_truncate))
