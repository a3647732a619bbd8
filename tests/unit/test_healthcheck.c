/*
 * test_healthcheck.c - the /-/healthy URL made of a listen address; the probe
 * of a closed port; the serve flags read from a process directory laid out
 * as /proc/PID is (exe, cmdline, cwd), for the image's HEALTHCHECK.
 */
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

#include "core/healthcheck.h"
#include "core/http_client.h"
#include "tests/unit/helpers/tmpdir.h"

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

/* A process directory in dir: exe -> exe_target, cmdline = the n bytes of args. */
static void fake_proc(const char *dir, const char *exe_target, const char *args, size_t n)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/exe", dir);
	unlink(path);
	assert_int_equal(symlink(exe_target, path), 0);
	snprintf(path, sizeof(path), "%s/cmdline", dir);
	f = fopen(path, "wb");
	assert_non_null(f);
	assert_int_equal(fwrite(args, 1, n, f), n);
	fclose(f);
}

#define ARGS(lit) lit, sizeof(lit) - 1  /* a cmdline literal with its NULs */

/*
 * Issue 18 item 12: the image's HEALTHCHECK read only the config, so a serve
 * given --web.listen-address was found unhealthy.  PID 1's flags fill in.
 */
static void serve_flags_of_the_main_process(void **state)
{
	char dir[64], want[128], *addr = NULL, *conf = NULL;
	char self[4096];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)state;
	assert_true(n > 0);
	self[n] = '\0';
	tfx_mkdtemp(dir, sizeof(dir), "ab-hc");
	fake_proc(dir, self, ARGS("/usr/local/bin/alertbridge\0serve\0"
				  "--config.file=/etc/alertbridge/alertbridge.yml\0"
				  "--web.listen-address=:8080\0"));
	assert_int_equal(healthcheck_serve_flags(dir, &addr, &conf), 1);
	assert_string_equal(addr, ":8080");
	assert_string_equal(conf, "/etc/alertbridge/alertbridge.yml");
	free(addr);
	free(conf);
	/* "--flag V", a relative config (resolved in serve's cwd), flags before the command */
	fake_proc(dir, self, ARGS("alertbridge\0--log.level=debug\0serve\0--web.listen-address\0"
				  "127.0.0.1:9\0--config.file\0etc/ab.yml\0"));
	assert_int_equal(healthcheck_serve_flags(dir, &addr, &conf), 1);
	assert_string_equal(addr, "127.0.0.1:9");
	snprintf(want, sizeof(want), "%s/cwd/etc/ab.yml", dir);
	assert_string_equal(conf, want);
	free(addr);
	free(conf);
	/* serve without them: found, both NULL (the caller's defaults apply) */
	fake_proc(dir, self, ARGS("alertbridge\0serve\0"));
	assert_int_equal(healthcheck_serve_flags(dir, &addr, &conf), 1);
	assert_null(addr);
	assert_null(conf);
	tfx_remove_tree(dir);
}

static void other_processes_give_nothing(void **state)
{
	char dir[64], self[4096], *addr = (char *)"x", *conf = (char *)"x";
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	(void)state;
	assert_true(n > 0);
	self[n] = '\0';
	tfx_mkdtemp(dir, sizeof(dir), "ab-hc");
	/* another command of this binary (a `map list` as PID 1 is not the service) */
	fake_proc(dir, self, ARGS("alertbridge\0map\0list\0--web.listen-address=:1\0"));
	assert_int_equal(healthcheck_serve_flags(dir, &addr, &conf), 0);
	assert_null(addr);
	assert_null(conf);
	/* another program with the same arguments (tini, a shell) */
	fake_proc(dir, "/bin/sh", ARGS("alertbridge\0serve\0--web.listen-address=:1\0"));
	assert_int_equal(healthcheck_serve_flags(dir, &addr, &conf), 0);
	/* no such process */
	assert_int_equal(healthcheck_serve_flags("/nonexistent/proc/1", &addr, &conf), 0);
	tfx_remove_tree(dir);
}

UNIT_MAIN_WITH(if (http_global_init() != ERR_OK) return 1, http_global_cleanup(),
	cmocka_unit_test(urls_ask_the_loopback_for_a_wildcard),
	cmocka_unit_test(address_without_port_is_invalid),
	cmocka_unit_test(closed_port_is_unhealthy),
	cmocka_unit_test(serve_flags_of_the_main_process),
	cmocka_unit_test(other_processes_give_nothing))
