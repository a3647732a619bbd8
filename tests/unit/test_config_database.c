/*
 * test_config_database.c - core/config_database.c: `database` as an sqlite
 * path or a PostgreSQL URI (issue 10), database_password_file, and each
 * error with its line and key; no message or dump ever holds a password.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <cmocka.h>
#include "tests/unit/helpers/unit_main.h"

#include "core/config.h"
#include "tests/unit/helpers/tmpdir.h"

#define RCV "receivers: [{name: default, repo: o/r}]\n"
#define URI "postgres://alertbridge@db.example:5432/alertbridge?sslmode=verify-full"
#define PASSWORD_IN_URI "the URI holds a password: put it in a file named by " \
	"database_password_file (or libpq's PGPASSFILE) instead"

static char tmpdir[256];

static int setup(void **state)
{
	(void)state;
	tfx_mkdtemp(tmpdir, sizeof(tmpdir), "test_config_database");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	tfx_remove_tree(tmpdir);
	return 0;
}

static void write_file(const char *name, const char *content, mode_t mode)
{
	char path[512];

	assert_true((size_t)snprintf(path, sizeof(path), "%s/%s", tmpdir, name) < sizeof(path));
	tfx_write_file(NULL, path, content);
	assert_int_equal(chmod(path, mode), 0);
}

/* Parse yaml (base directory tmpdir) and return its dump; fails the test on an error. */
static char *parse_and_dump(const char *yaml)
{
	struct buf msg = BUF_INIT, out = BUF_INIT;
	struct config *cfg = NULL;
	enum err rc = cfg_parse(yaml, strlen(yaml), "alertbridge.yml", tmpdir, &cfg, &msg);

	if (rc != ERR_OK)
		fail_msg("cfg_parse: %s: %s", err_str(rc), buf_str(&msg));
	buf_release(&msg);
	cfg_dump(cfg, &out);
	cfg_free(cfg);
	return buf_detach(&out);
}

/* The error of yaml must be want exactly, and must not hold secret. */
static void expect_err(const char *yaml, enum err want_rc, const char *want, const char *secret)
{
	struct buf msg = BUF_INIT;
	struct config *cfg = NULL;

	assert_int_equal(cfg_parse(yaml, strlen(yaml), "alertbridge.yml", tmpdir, &cfg, &msg),
			 want_rc);
	assert_null(cfg);
	assert_string_equal(buf_str(&msg), want);
	if (secret)
		assert_null(strstr(buf_str(&msg), secret));
	buf_release(&msg);
}

static void assert_has(const char *text, const char *part)
{
	if (!strstr(text, part))
		fail_msg("\"%s\" lacks \"%s\"", text, part);
}

/* An sqlite path (the default or given) and PostgreSQL URIs in both schemes load. */
static void accepted_forms(void **state)
{
	char *dump;

	(void)state;
	dump = parse_and_dump(RCV);
	assert_has(dump, "database: \"alertbridge.db\"\n");
	assert_null(strstr(dump, "database_password_file"));
	free(dump);
	dump = parse_and_dump("database: /var/lib/alertbridge/state.db\n" RCV);
	assert_has(dump, "database: \"/var/lib/alertbridge/state.db\"\n");
	free(dump);
	dump = parse_and_dump("database: " URI "\n" RCV);
	assert_has(dump, "database: \"" URI "\"\n");
	free(dump);
	dump = parse_and_dump("database: postgresql://db.example/alertbridge\n" RCV);
	assert_has(dump, "database: \"postgresql://db.example/alertbridge\"\n");
	free(dump);
	/* Ports and IPv6 hosts are not passwords; nor is a list of hosts (libpq tries each). */
	dump = parse_and_dump("database: postgres://ab@[::1]:5432/alertbridge\n" RCV);
	free(dump);
	dump = parse_and_dump("database: \"postgres://ab@db1:5432,db2:5432/alertbridge"
			      "?target_session_attrs=read-write\"\n" RCV);
	assert_has(dump, "db1:5432,db2:5432");
	free(dump);
	/* An empty password (u:@) is none: libpq then asks PGPASSFILE. */
	dump = parse_and_dump("database: postgres://u:@db.example/alertbridge\n" RCV);
	free(dump);
}

/*
 * database_password_file: resolved against the config's directory, shown
 * in the dump as a path, never its contents.
 */
static void password_file_resolved_and_dumped(void **state)
{
	char want[600];
	char *dump;

	(void)state;
	write_file("pg-password", "s3cr3t-pg\n", 0600);
	dump = parse_and_dump("database: " URI "\ndatabase_password_file: pg-password\n" RCV);
	assert_true((size_t)snprintf(want, sizeof(want), "database_password_file: \"%s/pg-password\"\n",
				     tmpdir) < sizeof(want));
	assert_has(dump, want);
	assert_null(strstr(dump, "s3cr3t-pg"));
	free(dump);
}

/* A password in the URI is refused without echoing it, wherever libpq would find it. */
static void password_in_uri_refused(void **state)
{
	(void)state;
	expect_err(RCV "database: postgres://u:s3cr3t@db.example/alertbridge\n", ERR_INVALID,
		   "alertbridge.yml:2: database: " PASSWORD_IN_URI, "s3cr3t");
	expect_err("database: postgresql://db.example/alertbridge?sslmode=require&password=s3cr3t\n"
		   RCV, ERR_INVALID, "alertbridge.yml:1: database: " PASSWORD_IN_URI, "s3cr3t");
	/* Malformed too: libpq's message would quote the whole URI. */
	expect_err("database: postgres://u:s3cr3t@[::1/alertbridge\n" RCV, ERR_INVALID,
		   "alertbridge.yml:1: database: " PASSWORD_IN_URI, "s3cr3t");
	/* Percent-encoded key: only libpq's parse finds it. */
	expect_err("database: postgres://db.example/alertbridge?pass%77ord=s3cr3t\n" RCV,
		   ERR_INVALID, "alertbridge.yml:1: database: " PASSWORD_IN_URI, "s3cr3t");
}

/* A URI libpq cannot parse is refused with libpq's reason. */
static void malformed_uri_refused(void **state)
{
	(void)state;
	expect_err("database: postgres://db.example/alertbridge?sslmod=require\n" RCV, ERR_INVALID,
		   "alertbridge.yml:1: database: not a valid PostgreSQL URI: invalid URI query "
		   "parameter: \"sslmod\"", NULL);
	expect_err("database: postgres://db.example/alert%zzbridge\n" RCV, ERR_INVALID,
		   "alertbridge.yml:1: database: not a valid PostgreSQL URI: invalid percent-encoded "
		   "token: \"alert%zzbridge\"", NULL);
}

/* database_password_file: PostgreSQL only, readable, one non-empty line. */
static void password_file_errors(void **state)
{
	char want[700];

	(void)state;
	write_file("pg-password", "s3cr3t-pg\n", 0600);
	expect_err(RCV "database: state.db\ndatabase_password_file: pg-password\n", ERR_INVALID,
		   "alertbridge.yml:3: database_password_file: only for a PostgreSQL database "
		   "(database: postgres://...); database is the sqlite file \"state.db\"", NULL);
	expect_err(RCV "database_password_file: pg-password\n", ERR_INVALID,
		   "alertbridge.yml:2: database_password_file: only for a PostgreSQL database "
		   "(database: postgres://...); database is the sqlite file \"alertbridge.db\"",
		   NULL);
	assert_true((size_t)snprintf(want, sizeof(want),
				     "alertbridge.yml:3: database_password_file: cannot read "
				     "\"%s/missing\": No such file or directory", tmpdir) <
		    sizeof(want));
	expect_err("database: " URI "\n" RCV "database_password_file: missing\n", ERR_IO, want,
		   NULL);
	write_file("empty", "", 0600);
	assert_true((size_t)snprintf(want, sizeof(want),
				     "alertbridge.yml:1: database_password_file: \"%s/empty\" is "
				     "empty", tmpdir) < sizeof(want));
	expect_err("database_password_file: empty\ndatabase: " URI "\n" RCV, ERR_INVALID, want,
		   NULL);
	write_file("two-lines", "s3cr3t-pg\nmore\n", 0600);
	assert_true((size_t)snprintf(want, sizeof(want),
				     "alertbridge.yml:1: database_password_file: \"%s/two-lines\" "
				     "must hold one line (a newline or NUL byte inside)", tmpdir) <
		    sizeof(want));
	expect_err("database_password_file: two-lines\ndatabase: " URI "\n" RCV, ERR_INVALID,
		   want, "s3cr3t-pg");
}

/* A test of this file, between setup() and teardown(). */
#define T(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

UNIT_MAIN(
	T(accepted_forms),
	T(password_file_resolved_and_dumped),
	T(password_in_uri_refused),
	T(malformed_uri_refused),
	T(password_file_errors))
