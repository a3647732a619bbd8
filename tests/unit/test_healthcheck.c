/* test_healthcheck.c - the /-/healthy URL made of a listen address; the probe of a closed port. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "core/healthcheck.h"
#include "core/http_client.h"

static void url_of(const char *addr, int tls, const char *want)
{
	struct buf out = BUF_INIT, err = BUF_INIT;

	assert_int_equal(healthcheck_url(addr, tls, &out, &err), ERR_OK);
	assert_string_equal(buf_str(&out), want);
	buf_release(&out);
	buf_release(&err);
}

static void urls_ask_the_loopback_for_a_wildcard(void **state)
{
	(void)state;
	url_of(":9095", 0, "http://127.0.0.1:9095/-/healthy");
	url_of("0.0.0.0:9095", 0, "http://127.0.0.1:9095/-/healthy");
	url_of("[::]:9095", 1, "https://[::1]:9095/-/healthy");
	url_of("127.0.0.2:80", 0, "http://127.0.0.2:80/-/healthy");
	url_of("[::1]:9095", 0, "http://[::1]:9095/-/healthy");
	url_of("alertbridge.local:9095", 1, "https://alertbridge.local:9095/-/healthy");
}

static void address_without_port_is_invalid(void **state)
{
	static const char *const bad[] = { "", "9095x", "host", "host:", "host:9a", NULL };
	struct buf out = BUF_INIT, err = BUF_INIT;
	(void)state;
	for (int i = 0; bad[i]; i++) {
		buf_reset(&err);
		assert_int_equal(healthcheck_url(bad[i], 0, &out, &err), ERR_INVALID);
		assert_non_null(strstr(buf_str(&err), "want HOST:PORT or :PORT"));
	}
	assert_int_equal(healthcheck_probe(NULL, 0, 1000, &err), ERR_INVALID);
	buf_release(&out);
	buf_release(&err);
}

static void closed_port_is_unhealthy(void **state)
{
	struct buf err = BUF_INIT;
	(void)state;
	/* Port 1 on the loopback: nothing listens there in a test sandbox. */
	assert_int_not_equal(healthcheck_probe("127.0.0.1:1", 0, 2000, &err), ERR_OK);
	assert_non_null(strstr(buf_str(&err), "GET http://127.0.0.1:1/-/healthy"));
	buf_release(&err);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(urls_ask_the_loopback_for_a_wildcard),
		cmocka_unit_test(address_without_port_is_invalid),
		cmocka_unit_test(closed_port_is_unhealthy),
	};
	int rc;

	if (http_global_init() != ERR_OK)
		return 1;
	rc = cmocka_run_group_tests(tests, NULL, NULL);
	http_global_cleanup();
	return rc;
}
