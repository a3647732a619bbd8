/* test_buf.c - struct buf: growth, limits, detach, printf. */
#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/tmpdir.h"
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

/* Write n bytes of data to dir/name; its path into path (n_path bytes). */
static void write_file(const char *dir, const char *name, const char *data, size_t n,
		       char *path, size_t n_path)
{
	FILE *f;

	snprintf(path, n_path, "%s/%s", dir, name);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, n, f), n);
	assert_int_equal(fclose(f), 0);
}

/* buf_read_file(): the whole file appended, its bounds, its errors (errno kept). */
static void read_file_whole_bounded_and_errors(void **state)
{
	char dir[256], path[512], big[20000];
	struct buf b = BUF_INIT;
	(void)state;

	tfx_mkdtemp(dir, sizeof(dir), "test_buf");
	memset(big, 'x', sizeof(big));
	write_file(dir, "big", big, sizeof(big), path, sizeof(path));
	buf_adds(&b, "head:");
	assert_int_equal(buf_read_file(&b, path, 0), ERR_OK);
	assert_int_equal(b.len, 5 + sizeof(big));  /* appended, over several reads */
	assert_int_equal(b.data[b.len], '\0');
	buf_reset(&b);
	assert_int_equal(buf_read_file(&b, path, sizeof(big)), ERR_OK);  /* exactly the bound */
	buf_reset(&b);
	assert_int_equal(buf_read_file(&b, path, 9000), ERR_TOOBIG);
	assert_int_equal(b.len, 9000);  /* the part that fit */
	buf_release(&b);
	buf_init(&b, 100);
	buf_adds(&b, "12345");
	assert_int_equal(buf_read_file(&b, path, 0), ERR_TOOBIG);  /* b's own max */
	assert_int_equal(b.len, 100);
	buf_release(&b);

	write_file(dir, "empty", "", 0, path, sizeof(path));
	assert_int_equal(buf_read_file(&b, path, 0), ERR_OK);
	assert_non_null(b.data);  /* allocated even for an empty file */
	assert_string_equal(buf_str(&b), "");
	buf_release(&b);

	snprintf(path, sizeof(path), "%s/missing", dir);
	errno = 0;
	assert_int_equal(buf_read_file(&b, path, 0), ERR_IO);
	assert_int_equal(errno, ENOENT);
	assert_null(b.data);
	errno = 0;
	assert_int_equal(buf_read_file(&b, dir, 0), ERR_IO);  /* a directory opens, then read fails */
	assert_int_equal(errno, EISDIR);
	buf_release(&b);
	tfx_remove_tree(dir);
}

UNIT_MAIN(
	cmocka_unit_test(empty_buf_is_empty_string),
	cmocka_unit_test(appends_and_printf_grow),
	cmocka_unit_test(max_rejects_and_keeps_contents),
	cmocka_unit_test(setf_and_truncate),
	cmocka_unit_test(read_file_whole_bounded_and_errors))
