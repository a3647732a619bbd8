/* test_embed.c - the default templates are compiled into the binary byte for byte. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/embed.h"

static void every_template_file_is_embedded_verbatim(void **state)
{
	const char *src = getenv("ALERTBRIDGE_SRC");
	size_t i;
	(void)state;
	for (i = 0; embed_name(i); i++) {
		char path[512];
		char disk[65536];
		size_t len = 0, n;
		const char *data = embed_get(embed_name(i), &len);
		FILE *f;

		assert_non_null(data);
		snprintf(path, sizeof(path), "%s/templates/%s", src ? src : ".", embed_name(i));
		f = fopen(path, "rb");
		assert_non_null(f);
		n = fread(disk, 1, sizeof(disk), f);
		fclose(f);
		assert_int_equal(n, len);
		assert_memory_equal(disk, data, len);
		assert_int_equal(data[len], '\0');
	}
	assert_null(embed_get("no-such-template.mustache", NULL));
}

UNIT_MAIN(
	cmocka_unit_test(every_template_file_is_embedded_verbatim))
