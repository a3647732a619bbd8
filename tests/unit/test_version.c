/* test_version.c - build identity: the alertbridge_build_info series and its label escaping,
 * the version text's lines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/metrics.h"
#include "core/version.h"

static void build_info_escapes_its_labels(void **state)
{
	/* Text format 0.0.4: \ " and line feed escaped in label values. */
	const struct version_info vi = { "1.2.3", "abc\"def", "2026-11-25T15:44:12Z",
					 "gcc 12 \\ \"x\"\nnext" };
	struct metrics *m = metrics_new();
	struct buf out = BUF_INIT;
	(void)state;
	version_register_metric(m, &vi);
	metrics_render(m, &out);
	assert_non_null(strstr(buf_str(&out), "# TYPE alertbridge_build_info gauge\n"));
	assert_non_null(strstr(buf_str(&out),
			       "alertbridge_build_info{version=\"1.2.3\",revision=\"abc\\\"def\","
			       "build_date=\"2026-11-25T15:44:12Z\","
			       "compiler=\"gcc 12 \\\\ \\\"x\\\"\\nnext\"} 1\n"));
	buf_release(&out);
	metrics_free(m);
}

static void build_info_defaults_to_this_binary(void **state)
{
	const struct version_info *vi = version_get();
	struct metrics *m = metrics_new();
	struct buf out = BUF_INIT, want = BUF_INIT;
	(void)state;
	assert_non_null(vi->version);
	assert_non_null(vi->revision);
	assert_non_null(vi->build_date);
	assert_true(strncmp(vi->compiler, "gcc ", 4) == 0 || strncmp(vi->compiler, "clang ", 6) == 0);
	version_register_metric(m, NULL);
	metrics_render(m, &out);
	(void)buf_printf(&want, "alertbridge_build_info{version=\"%s\",revision=\"%s\","
			 "build_date=\"%s\",compiler=\"%s\"} 1\n", vi->version, vi->revision,
			 vi->build_date, vi->compiler);
	assert_non_null(strstr(buf_str(&out), buf_str(&want)));
	buf_release(&want);
	buf_release(&out);
	metrics_free(m);
}

static void text_names_every_library(void **state)
{
	static const char *const lines[] = { "alertbridge version ", "  build date:", "  compiler:",
		"  libmicrohttpd:", "  libcurl:", "  jansson:", "  sqlite:", "  libyaml:", "  gnutls:",
		"  nettle:" };
	struct buf out = BUF_INIT;
	const char *p;
	(void)state;
	version_text(&out);
	p = buf_str(&out);
	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		assert_true(strncmp(p, lines[i], strlen(lines[i])) == 0);
		p = strchr(p, '\n');
		assert_non_null(p);
		p++;
	}
	assert_string_equal(p, "");
	assert_string_equal(version_user_agent() + strlen("alertbridge/"), version_get()->version);
	buf_release(&out);
}

UNIT_MAIN(
	cmocka_unit_test(build_info_escapes_its_labels),
	cmocka_unit_test(build_info_defaults_to_this_binary),
	cmocka_unit_test(text_names_every_library))
