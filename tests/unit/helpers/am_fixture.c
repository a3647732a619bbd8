#include "am_fixture.h"
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "core/err.h"
#include "core/xalloc.h"

char *afx_read_fixture(const char *name, size_t *len)
{
	const char *env = getenv("ALERTBRIDGE_FIXTURES");
	const char *src = getenv("ALERTBRIDGE_SRC");
	const char *dirs[] = { env, src, "." };
	const char *sub[] = { "", "/tests/fixtures/alertmanager", "/tests/fixtures/alertmanager" };
	char path[512];
	FILE *f = NULL;
	char *data;
	long n;

	for (size_t i = 0; i < 3 && !f; i++) {
		if (!dirs[i] || !*dirs[i])
			continue;
		snprintf(path, sizeof(path), "%s%s/%s", dirs[i], sub[i], name);
		f = fopen(path, "rb");
	}
	assert_non_null(f);
	assert_int_equal(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	assert_true(n > 0 && n < 1 << 20);
	rewind(f);
	data = xmalloc((size_t)n + 1);
	assert_int_equal(fread(data, 1, (size_t)n, f), (size_t)n);
	data[n] = '\0';
	fclose(f);
	*len = (size_t)n;
	return data;
}

struct am_payload *afx_parse(const char *body)
{
	struct am_payload *p = NULL;
	struct am_error e;

	assert_int_equal(am_parse(body, strlen(body), NULL, &p, &e), ERR_OK);
	assert_non_null(p);
	return p;
}

struct am_payload *afx_parse_fixture(const char *name)
{
	size_t len;
	char *body = afx_read_fixture(name, &len);
	struct am_payload *p = afx_parse(body);

	free(body);
	return p;
}
