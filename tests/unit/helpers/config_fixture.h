/*
 * config_fixture.h - what the configuration's unit tests (test_config*.c) share: a
 * directory of secret files (tokens in each line-ending form, the test-only RSA, PKCS#8 and
 * EC keys of tests/unit/data/config/secrets) and cfg_parse() wrappers that end the test
 * (cmocka) when the result is not the expected one.
 */
#ifndef AB_TEST_CONFIG_FIXTURE_H
#define AB_TEST_CONFIG_FIXTURE_H

#include <stddef.h>

#include "core/buf.h"
#include "core/config.h"
#include "core/err.h"

/* Milliseconds, as struct config holds durations. */
#define S 1000LL
#define M (60 * S)
#define H (60 * M)
#define D (24 * H)

/* The smallest receivers list cfg_parse() accepts. */
#define RCV "receivers: [{name: default, repo: o/r}]\n"

/*
 * Group setup and teardown (cmocka_run_group_tests): make the directory cfx_dir() names
 * with the files token ("s3cret-token\n"), token-crlf, token-bare, token-2nl, empty, multi
 * and the links k.pem, k8.pem, ec.pem to the test keys, and unset GITHUB_TOKEN; remove them.
 */
int cfx_setup(void **state);
int cfx_teardown(void **state);

/* The directory cfx_setup() made (static storage; "" before it). */
const char *cfx_dir(void);

/* snprintf into out (n bytes) that fails the test instead of truncating. */
void cfx_fmt_into(char *out, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* $ALERTBRIDGE_SRC, or "." when unset or empty: the source tree the tests read. */
const char *cfx_src_dir(void);

/* The path of tests/unit/data/config/<name> into out (n bytes). */
void cfx_fixture_path(char *out, size_t n, const char *name);

/* Write content to cfx_dir()/<name>, failing the test when it cannot. */
void cfx_write_file(const char *name, const char *content);

/* cfg_parse() of yaml (file name "alertbridge.yml", relative paths against base_dir, which
 * may be NULL) that fails the test on an error; the caller frees the result (cfg_free). */
struct config *cfx_parse_in(const char *yaml, const char *base_dir);

/* cfx_parse_in(yaml, NULL). */
struct config *cfx_parse_ok(const char *yaml);

/* cfg_parse() of yaml must fail with want_rc and exactly the message want, and leave its
 * output pointer untouched. */
void cfx_expect_err_in(const char *yaml, const char *base_dir, enum err want_rc,
		       const char *want);

/* cfx_expect_err_in(yaml, NULL, ERR_INVALID, want). */
void cfx_expect_err(const char *yaml, const char *want);

/* cfg_parse() of yaml against cfx_dir() must fail with want_rc and a message that contains
 * each string of want (NULL-terminated). */
void cfx_expect_err_has(const char *yaml, enum err want_rc, const char *const *want);

/* text (a cfg_dump(), a message) holds each string of has and none of lacks (NULL-terminated
 * lists; either may be NULL); else the test fails naming the string and showing text. */
void cfx_text_has(const char *text, const char *const *has, const char *const *lacks);

/* cfg_parse() of yaml with the log at info into out (n bytes, NUL-terminated): what it
 * logged; the log is back at error on stderr afterwards. Returns cfg_parse()'s result. */
enum err cfx_parse_logging(const char *yaml, struct config **cfg, struct buf *msg, char *out,
			   size_t n);

#endif
