/* test_utf8.c - UTF-8 validation and truncation on sequence boundaries. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/utf8.h"

static void valid_and_invalid_sequences(void **state)
{
	(void)state;
	assert_true(utf8_valid("plain", 5));
	assert_true(utf8_valid("\xc3\xa9t\xc3\xa9", 6));          /* été */
	assert_true(utf8_valid("\xf0\x9f\x94\xa5", 4));           /* U+1F525 */
	assert_false(utf8_valid("\xc3", 1));                      /* truncated */
	assert_false(utf8_valid("\xc0\xaf", 2));                  /* overlong '/' */
	assert_false(utf8_valid("\xed\xa0\x80", 3));              /* surrogate */
	assert_false(utf8_valid("\xf4\x90\x80\x80", 4));          /* > U+10FFFF */
	assert_false(utf8_valid("\xff", 1));
	assert_false(utf8_valid("a\x80", 2));                     /* lone continuation */
}

static void cut_never_splits_a_sequence(void **state)
{
	const char *s = "ab\xe2\x82\xac" "cd"; /* ab€cd: 7 bytes */
	(void)state;
	assert_int_equal(utf8_cut(s, 7, 10), 7);
	assert_int_equal(utf8_cut(s, 7, 5), 5);  /* after € */
	assert_int_equal(utf8_cut(s, 7, 4), 2);  /* inside €: back to before it */
	assert_int_equal(utf8_cut(s, 7, 3), 2);
	assert_int_equal(utf8_cut(s, 7, 2), 2);
	assert_int_equal(utf8_cut(s, 7, 0), 0);
	for (size_t m = 0; m <= 7; m++)
		assert_true(utf8_valid(s, utf8_cut(s, 7, m)));
}

static void decode_gives_code_point_and_length(void **state)
{
	uint32_t cp = 7;
	(void)state;
	assert_int_equal(utf8_decode("A", 1, &cp), 1);
	assert_int_equal(cp, 0x41);
	assert_int_equal(utf8_decode("\xc3\xa9", 2, &cp), 2);
	assert_int_equal(cp, 0xe9);
	assert_int_equal(utf8_decode("\xe2\x80\xae", 3, &cp), 3); /* U+202E */
	assert_int_equal(cp, 0x202e);
	assert_int_equal(utf8_decode("\xf0\x9f\x94\xa5", 4, &cp), 4);
	assert_int_equal(cp, 0x1f525);
	cp = 7;
	assert_int_equal(utf8_decode("\xff", 1, &cp), 0);           /* never a lead byte */
	assert_int_equal(utf8_decode("\xe2\x80", 2, &cp), 0);       /* cut short */
	assert_int_equal(utf8_decode("\xc0\xaf", 2, &cp), 0);       /* overlong "/" */
	assert_int_equal(utf8_decode("\xed\xa0\x80", 3, &cp), 0);   /* surrogate */
	assert_int_equal(utf8_decode("", 0, &cp), 0);
	assert_int_equal(cp, 7);                                    /* untouched */
}

UNIT_MAIN(
	cmocka_unit_test(valid_and_invalid_sequences),
	cmocka_unit_test(cut_never_splits_a_sequence),
	cmocka_unit_test(decode_gives_code_point_and_length))
