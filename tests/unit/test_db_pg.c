/*
 * test_db_pg.c - what only PostgreSQL's half of db.h does (core/db_pg.c): targets and
 * their errors without a server, and on the server AB_TEST_PG_URI names: the password
 * hidden, the session's defaults, a password file, reconnecting after a restart (on a
 * cluster of its own, tests/pg/pg.sh).  The test that logs in with a password needs the
 * cluster's directory too (AB_TEST_PG_DIR).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/buf.h"
#include "store/db.h"
#include "tests/unit/helpers/clock.h"
#include "tests/unit/helpers/db_fixture.h"
#include "tests/unit/helpers/tmpdir.h"

/* ---- PostgreSQL: targets, errors, a server restart ---- */

/* The server's URI with user (and :password) in place of its user, into out. */
static void uri_as(char *out, size_t n, const char *user, const char *password)
{
	const char *base = dbfx_pg_uri();
	const char *host = strstr(base, "://");
	const char *at = host ? strchr(host + 3, '@') : NULL;

	assert_non_null(at);
	snprintf(out, n, "postgres://%s%s%s%s", user, password ? ":" : "", password ? password : "",
		 at);
}

static void name_hides_the_password(void **state)
{
	char uri[1024], want[1024], user[64];
	const char *base = dbfx_pg_uri();
	const char *u = strstr(base, "://") + 3;
	struct db *db;

	(void)state;
	snprintf(user, sizeof(user), "%.*s", (int)strcspn(u, ":@"), u);
	uri_as(uri, sizeof(uri), user, "hunter2"); /* trust: the password is not checked */
	db = dbfx_open_ok(uri);
	uri_as(want, sizeof(want), user, "xxxxx");
	assert_string_equal(db_name(db), want);
	assert_int_equal(db_engine(db), DB_POSTGRES);
	db_close(db);
}

/* A session on target has these application_name, tcp_keepalives_idle and _count. */
static void expect_session(const char *target, const char *name, const char *idle,
			   const char *count)
{
	struct db *db = dbfx_open_ok(target);
	struct db_stmt *s = dbfx_prepare_ok(db, "SELECT current_setting('application_name'), "
						"current_setting('tcp_keepalives_idle'), "
						"current_setting('tcp_keepalives_count')");

	assert_int_equal(db_step(s), DB_ROW);
	assert_string_equal(db_col_text(s, 0), name);
	assert_string_equal(db_col_text(s, 1), idle);
	assert_string_equal(db_col_text(s, 2), count);
	db_finalize(s);
	db_close(db);
}

/* The session's defaults (db.h): a name, and keepalives; what the URI sets wins. */
static void session_defaults(void **state)
{
	char uri[1024];
	const char *base = dbfx_pg_uri();

	(void)state;
	expect_session(base, "alertbridge", "10", "3");
	snprintf(uri, sizeof(uri), "%s%sapplication_name=mine&options=-ctcp_keepalives_idle%%3D20",
		 base, strchr(base, '?') ? "&" : "?");
	expect_session(uri, "mine", "20", "3");
}

/* pg.sh's cluster checks the password of role pwuser. */
static void password_file(void **state)
{
	struct dbfx_env *e = *state;
	char dir[256], file[300], uri[1024], secret[64];
	struct buf msg = BUF_INIT;
	struct db *db = NULL;

	if (!getenv("AB_TEST_PG_DIR")) {
		print_message("password_file: skipped (AB_TEST_PG_DIR is unset: not pg.sh's cluster)\n");
		return;
	}
	snprintf(secret, sizeof(secret), "pw-%ld-%lld", (long)getpid(), (long long)tclock_mono_ms());
	{
		char sql[192];

		snprintf(sql, sizeof(sql), "DROP ROLE IF EXISTS pwuser; CREATE ROLE pwuser LOGIN "
			 "PASSWORD '%s'", secret);
		dbfx_exec_ok(e->admin, sql);
	}
	tfx_mkdtemp(dir, sizeof(dir), "test_db_pw");
	snprintf(file, sizeof(file), "%s/password", dir);
	uri_as(uri, sizeof(uri), "pwuser", NULL);

	tfx_write_file(NULL, file, "wrong\n");
	assert_int_equal(db_open(uri, file, &db, &msg), ERR_UNAVAILABLE);
	assert_null(db);
	dbfx_assert_contains(buf_str(&msg), "password authentication failed");
	dbfx_assert_contains(buf_str(&msg), uri);
	assert_null(strstr(buf_str(&msg), "wrong"));

	tfx_write_file(NULL, file, secret);
	buf_reset(&msg);
	assert_int_equal(db_open(uri, file, &db, &msg), ERR_OK);
	assert_int_equal(dbfx_one_int(db, "SELECT 41 + 1"), 42);
	db_close(db);
	db = NULL;
	{
		char line[128];

		snprintf(line, sizeof(line), "%s\r\nsecond line\n", secret); /* first line only */
		tfx_write_file(NULL, file, line);
	}
	assert_int_equal(db_open(uri, file, &db, &msg), ERR_OK);
	db_close(db);
	dbfx_exec_ok(e->admin, "DROP ROLE pwuser");
	buf_release(&msg);
	tfx_remove_tree(dir);
}

/*
 * tests/pg/pg.sh cmd dir (start: its URI into uri[0 .. n)); 0 on success.  The restart is
 * done on a cluster of the test's own: unit tests run beside the integration tests
 * (tests/run.sh), and a restart of the shared cluster cut their sessions (test_store_stalls
 * failed on it once its weight put it beside the units).
 */
static int pg_sh(const char *cmd, const char *dir, char *uri, size_t n)
{
	char line[1024];
	const char *src = getenv("ALERTBRIDGE_SRC");
	FILE *p;
	int rc;

	snprintf(line, sizeof(line), "sh '%s/tests/pg/pg.sh' %s '%s'", src ? src : ".", cmd, dir);
	p = popen(line, "r");
	if (!p)
		return -1;
	if (uri && (!fgets(uri, (int)n, p) || !*uri))
		uri = NULL;
	rc = pclose(p);
	if (uri)
		uri[strcspn(uri, "\n")] = '\0';
	return rc;
}

static void reconnects_after_a_restart(void **state)
{
	char dir[] = "/tmp/ab-pg-restart.XXXXXX", uri[512] = "";
	struct db *idle, *busy, *other;
	struct buf msg = BUF_INIT;
	int held = 0;
	const int64_t key = ((int64_t)getpid() << 8) + 3;

	(void)state;
	if (!mkdtemp(dir) || pg_sh("start", dir, uri, sizeof(uri)) != 0 || !*uri) {
		print_message("reconnects_after_a_restart: skipped (no cluster of its own: "
			      "tests/pg/pg.sh start failed)\n");
		rmdir(dir);
		return;
	}
	idle = dbfx_open_ok(uri);
	busy = dbfx_open_ok(uri);
	other = dbfx_open_ok(uri);
	dbfx_exec_ok(idle, "CREATE TABLE z (v BIGINT)");
	assert_int_equal(dbfx_one_int(idle, "SELECT COUNT(*) FROM z"), 0);
	assert_int_equal(db_try_lock(idle, key, &held, &msg), ERR_OK);
	assert_int_equal(held, 1);
	assert_int_equal(db_begin(busy, &msg), ERR_OK);
	dbfx_exec_ok(busy, "INSERT INTO z VALUES (1)");
	assert_int_equal(pg_sh("restart", dir, NULL, 0), 0);

	/* Idle: unavailable once, then reconnected; the lock went with the session. */
	buf_reset(&msg);
	assert_int_equal(db_exec(idle, "INSERT INTO z VALUES (2)", &msg), ERR_UNAVAILABLE);
	dbfx_assert_contains(buf_str(&msg), db_name(idle));
	assert_int_equal(db_exec(idle, "INSERT INTO z VALUES (3)", &msg), ERR_OK);
	assert_false(db_lock_held(idle, key));

	/* In a transaction: no reset until it is rolled back (its rest must not autocommit). */
	assert_int_equal(db_exec(busy, "INSERT INTO z VALUES (4)", &msg), ERR_UNAVAILABLE);
	assert_true(db_in_transaction(busy));
	buf_reset(&msg);
	assert_int_equal(db_exec(busy, "INSERT INTO z VALUES (5)", &msg), ERR_UNAVAILABLE);
	dbfx_assert_contains(buf_str(&msg), "roll it back");
	db_rollback(busy);
	assert_false(db_in_transaction(busy));
	assert_int_equal(dbfx_one_int(busy, "SELECT SUM(v) FROM z"), 3); /* only the idle one's */
	/* Prepared statements are made again on the new session, set up as the first. */
	assert_int_equal(dbfx_one_int(idle, "SELECT COUNT(*) FROM z"), 1);
	assert_int_equal(dbfx_one_int(idle, "SELECT current_setting('tcp_keepalives_count')::int"), 3);
	/* A connection not used across the restart finds it at its next use. */
	assert_int_equal(db_exec(other, "SELECT 1", &msg), ERR_UNAVAILABLE);
	buf_release(&msg);
	db_close(other);
	db_close(busy);
	db_close(idle);
	assert_int_equal(pg_sh("stop", dir, NULL, 0), 0);
}

/*
 * A server that stops answering with its TCP connection up (its backend stopped: SIGSTOP)
 * trips neither its statement_timeout nor keepalives.  The client's own bound (the
 * timeout + 1 s, store/db_pg.c) abandons the session: ERR_UNAVAILABLE naming it; inside a
 * transaction the caller must roll back first (nothing is sent on the abandoned session);
 * then the next calls make a new session.  On a cluster of its own, as it stops a backend.
 */
static void abandons_a_session_the_server_stops_answering(void **state)
{
	char dir[] = "/tmp/ab-pg-frozen.XXXXXX", uri[512] = "";
	struct buf msg = BUF_INIT;
	struct db *db;
	int64_t pid, t0;
	enum err rc = ERR_UNAVAILABLE;

	(void)state;
	if (!mkdtemp(dir) || pg_sh("start", dir, uri, sizeof(uri)) != 0 || !*uri) {
		print_message("abandons_a_session...: skipped (tests/pg/pg.sh start failed)\n");
		rmdir(dir);
		return;
	}
	db = dbfx_open_ok(uri);
	assert_int_equal(db_set_timeout(db, 300, &msg), ERR_OK);
	dbfx_exec_ok(db, "CREATE TABLE z (v BIGINT)");
	pid = dbfx_one_int(db, "SELECT pg_backend_pid()");
	assert_int_equal(db_begin(db, &msg), ERR_OK);
	dbfx_exec_ok(db, "INSERT INTO z VALUES (1)");
	if (kill((pid_t)pid, SIGSTOP) != 0) {
		print_message("abandons_a_session...: skipped (cannot stop the backend: %s)\n",
			      strerror(errno));
		db_rollback(db);
		goto out;
	}
	assert_int_equal(db_exec(db, "INSERT INTO z VALUES (2)", &msg), ERR_UNAVAILABLE);
	dbfx_assert_contains(buf_str(&msg), "session abandoned");
	dbfx_assert_contains(buf_str(&msg), db_name(db));
	/* Its transaction is not let go silently: the rest must not autocommit. */
	assert_true(db_in_transaction(db));
	buf_reset(&msg);
	assert_int_equal(db_exec(db, "INSERT INTO z VALUES (3)", &msg), ERR_UNAVAILABLE);
	dbfx_assert_contains(buf_str(&msg), "roll it back");
	db_rollback(db);  /* sends nothing on the abandoned session: returns at once */
	assert_false(db_in_transaction(db));
	/* A new session (after the 1 s pause, during which calls fail at once). */
	t0 = tclock_mono_ms();
	while (rc != ERR_OK && tclock_mono_ms() - t0 < 10000) {
		buf_reset(&msg);
		rc = db_exec(db, "INSERT INTO z VALUES (4)", &msg);
		if (rc != ERR_OK) {
			assert_int_equal(rc, ERR_UNAVAILABLE);
			(void)poll(NULL, 0, 50);
		}
	}
	assert_int_equal(rc, ERR_OK);
	assert_true(dbfx_one_int(db, "SELECT pg_backend_pid()") != pid);
	assert_int_equal(dbfx_one_int(db, "SELECT SUM(v) FROM z"), 4);  /* 1 and 2 rolled back */
out:
	(void)kill((pid_t)pid, SIGCONT);
	buf_release(&msg);
	db_close(db);
	assert_int_equal(pg_sh("stop", dir, NULL, 0), 0);
}

#ifdef AB_HAVE_LIBPQ
/* A port nothing listens on: bound, then closed. */
static int closed_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	assert_true(fd >= 0);
	assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof(a)), 0);
	assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
	close(fd);
	return ntohs(a.sin_port);
}

static void bad_targets(void **state)
{
	char uri[256];
	struct buf msg = BUF_INIT;
	struct db *db = (struct db *)&msg; /* must come back NULL */

	(void)state;
	assert_int_equal(db_open("postgres://u:s3cret@h/db?nosuch=1", NULL, &db, &msg),
			 ERR_INVALID);
	assert_null(db);
	dbfx_assert_contains(buf_str(&msg), "nosuch");
	assert_null(strstr(buf_str(&msg), "s3cret"));
	buf_reset(&msg);
	assert_int_equal(db_open("postgresql://[::1/db", NULL, &db, &msg), ERR_INVALID);
	dbfx_assert_contains(buf_str(&msg), "IPv6");

	/* Nothing listens: unavailable, said clearly, the password never shown. */
	snprintf(uri, sizeof(uri), "postgres://u:s3cret@127.0.0.1:%d/db?password=s3cret",
		 closed_port());
	buf_reset(&msg);
	assert_int_equal(db_open(uri, NULL, &db, &msg), ERR_UNAVAILABLE);
	assert_string_equal(err_str(ERR_UNAVAILABLE), "unavailable");
	assert_null(db);
	dbfx_assert_contains(buf_str(&msg), "Connection refused");
	dbfx_assert_contains(buf_str(&msg), "postgres://u:xxxxx@127.0.0.1:");
	dbfx_assert_contains(buf_str(&msg), "/db?password=xxxxx");
	assert_null(strstr(buf_str(&msg), "s3cret"));

	/* A password file that is not there, or empty, is named. */
	buf_reset(&msg);
	assert_int_equal(db_open(uri, "/nonexistent/pg-password", &db, &msg), ERR_IO);
	dbfx_assert_contains(buf_str(&msg), "\"/nonexistent/pg-password\"");
	dbfx_assert_contains(buf_str(&msg), "No such file");
	buf_reset(&msg);
	assert_int_equal(db_open(uri, "/dev/null", &db, &msg), ERR_INVALID);
	dbfx_assert_contains(buf_str(&msg), "\"/dev/null\" is empty");
	buf_release(&msg);
}
#endif

static void target_kinds(void **state)
{
	(void)state;
	assert_true(db_target_is_postgres("postgres://u@h/db"));
	assert_true(db_target_is_postgres("postgresql://h"));
	assert_false(db_target_is_postgres("alertbridge.db"));
	assert_false(db_target_is_postgres("/var/lib/postgres://x.db"));
}

/* Only on PostgreSQL. */
#define PG_ONLY(X) \
	X(name_hides_the_password) \
	X(session_defaults) \
	X(password_file) \
	X(reconnects_after_a_restart) \
	X(abandons_a_session_the_server_stops_answering)

#define ONE(f) +1

int main(void)
{
	/* the tests without a server, then those that need AB_TEST_PG_URI */
	static const struct CMUnitTest tests[] = {
		cmocka_unit_test(target_kinds),
#ifdef AB_HAVE_LIBPQ
		cmocka_unit_test(bad_targets),
#endif
		PG_ONLY(DBFX_PG_TEST)
	};

	return dbfx_run("test_db_pg", tests, sizeof(tests) / sizeof(tests[0]), 0 PG_ONLY(ONE));
}
