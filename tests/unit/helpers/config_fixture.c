/*
 * config_fixture.c - the configuration tests' secret files and cfg_parse() wrappers
 * (config_fixture.h).
 */
#include "tests/unit/helpers/config_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/log.h"
#include "tests/unit/helpers/tmpdir.h"

static char tmpdir[256];

const char *cfx_dir(void)
{
	return tmpdir;
}

void cfx_fmt_into(char *out, size_t n, const char *fmt, ...)
{
	va_list ap;
	int len;

	va_start(ap, fmt);
	len = vsnprintf(out, n, fmt, ap);
	va_end(ap);
	assert_true(len >= 0 && (size_t)len < n);
}

const char *cfx_src_dir(void)
{
	const char *s = getenv("ALERTBRIDGE_SRC");

	return s && *s ? s : ".";
}

void cfx_fixture_path(char *out, size_t n, const char *name)
{
	cfx_fmt_into(out, n, "%s/tests/unit/data/config/%s", cfx_src_dir(), name);
}

void cfx_write_file(const char *name, const char *content)
{
	tfx_write_file(tmpdir, name, content);
}

static void link_key(const char *name, const char *fixture)
{
	char from[512], to[256];

	cfx_fixture_path(from, sizeof(from), "secrets/");
	cfx_fmt_into(from + strlen(from), sizeof(from) - strlen(from), "%s", fixture);
	if (from[0] != '/') {
		char cwd[256];
		assert_non_null(getcwd(cwd, sizeof(cwd)));
		memmove(from + strlen(cwd) + 1, from, strlen(from) + 1);
		memcpy(from, cwd, strlen(cwd));
		from[strlen(cwd)] = '/';
	}
	cfx_fmt_into(to, sizeof(to), "%s/%s", tmpdir, name);
	assert_int_equal(symlink(from, to), 0);
}

int cfx_setup(void **state)
{
	(void)state;
	tfx_mkdtemp(tmpdir, sizeof(tmpdir), "abcfg");
	cfx_write_file("token", "s3cret-token\n");
	cfx_write_file("token-crlf", "crlf-token\r\n");
	cfx_write_file("token-bare", "bare-token");
	cfx_write_file("token-2nl", "two\n\n");
	cfx_write_file("empty", "");
	cfx_write_file("multi", "line1\nline2\n");
	/* the test-only RSA, PKCS#8 and EC keys of tests/unit/data/config/secrets */
	link_key("k.pem", "app.pem");
	link_key("k8.pem", "app-pkcs8.pem");
	link_key("ec.pem", "app-ec.pem");
	unsetenv("GITHUB_TOKEN");
	return 0;
}

int cfx_teardown(void **state)
{
	static const char *const names[] = { "token", "token-crlf", "token-bare", "token-2nl",
					     "empty", "multi", "alertbridge.yml", "k.pem", "k8.pem",
					     "ec.pem" };
	char path[256];
	(void)state;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		cfx_fmt_into(path, sizeof(path), "%s/%s", tmpdir, names[i]);
		unlink(path);
	}
	rmdir(tmpdir);
	return 0;
}

struct config *cfx_parse_in(const char *yaml, const char *base_dir)
{
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;
	enum err rc = cfg_parse(yaml, strlen(yaml), "alertbridge.yml", base_dir, &cfg, &msg);

	if (rc != ERR_OK)
		fail_msg("cfg_parse: %s: %s", err_str(rc), buf_str(&msg));
	buf_release(&msg);
	assert_non_null(cfg);
	return cfg;
}

struct config *cfx_parse_ok(const char *yaml)
{
	return cfx_parse_in(yaml, NULL);
}

void cfx_expect_err_in(const char *yaml, const char *base_dir, enum err want_rc,
		       const char *want)
{
	struct buf msg = BUF_INIT;
	struct config *cfg = (struct config *)0x1;

	assert_int_equal(cfg_parse(yaml, strlen(yaml), "alertbridge.yml", base_dir, &cfg, &msg),
			 want_rc);
	assert_string_equal(buf_str(&msg), want);
	assert_ptr_equal(cfg, (struct config *)0x1); /* untouched on error */
	buf_release(&msg);
}

void cfx_expect_err(const char *yaml, const char *want)
{
	cfx_expect_err_in(yaml, NULL, ERR_INVALID, want);
}

void cfx_text_has(const char *text, const char *const *has, const char *const *lacks)
{
	for (; has && *has; has++)
		if (!strstr(text, *has))
			fail_msg("no \"%s\" in:\n%s", *has, text);
	for (; lacks && *lacks; lacks++)
		if (strstr(text, *lacks))
			fail_msg("\"%s\" in:\n%s", *lacks, text);
}

enum err cfx_parse_logging(const char *yaml, struct config **cfg, struct buf *msg, char *out,
			   size_t n)
{
	FILE *log = tmpfile();
	enum err rc;
	size_t got;

	assert_non_null(log);
	log_setup(LOG_INFO, LOG_LOGFMT);
	log_set_fd(fileno(log));
	rc = cfg_parse(yaml, strlen(yaml), "alertbridge.yml", NULL, cfg, msg);
	log_set_fd(2);
	log_setup(LOG_ERROR, LOG_LOGFMT);
	rewind(log);
	got = fread(out, 1, n - 1, log);
	out[got] = '\0';
	fclose(log);
	return rc;
}

void cfx_expect_err_has(const char *yaml, enum err want_rc, const char *const *want)
{
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;

	assert_int_equal(cfg_parse(yaml, strlen(yaml), "alertbridge.yml", tmpdir, &cfg, &msg),
			 want_rc);
	for (; *want; want++)
		if (!strstr(buf_str(&msg), *want))
			fail_msg("\"%s\" lacks \"%s\"", buf_str(&msg), *want);
	assert_null(cfg);
	buf_release(&msg);
}
