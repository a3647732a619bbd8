/*
 * test_serve_lock.c - one serving process per sqlite file (core/serve_lock.h):
 * a second taker is refused with the holder's PID, from another process as
 * from another open in this one; the lock goes with its holder (a file left
 * by a dead process blocks nobody); the URL the holder records; nothing to
 * lock for PostgreSQL and ":memory:"; a clean release told from a holder
 * that died (the PID it left), and that doubt passed on until settled.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include "core/buf.h"
#include "store/serve_lock.h"
#include "tests/unit/helpers/tmpdir.h"

struct fixture {
	char dir[512];
	char db[600];
	char lock[610];
};

static int setup(void **state)
{
	struct fixture *f = calloc(1, sizeof(*f));

	tfx_mkdtemp(f->dir, sizeof(f->dir), "test_serve_lock");
	snprintf(f->db, sizeof(f->db), "%s/ab.db", f->dir);
	snprintf(f->lock, sizeof(f->lock), "%s/ab.db.lock", f->dir);
	*state = f;
	return 0;
}

static int teardown(void **state)
{
	struct fixture *f = *state;

	tfx_remove_tree(f->dir);
	free(f);
	return 0;
}

static void file_text(const char *path, char *out, size_t n)
{
	FILE *fp = fopen(path, "r");
	size_t got;

	assert_non_null(fp);
	got = fread(out, 1, n - 1, fp);
	out[got] = '\0';
	fclose(fp);
}

/* A second take in this process is refused as one in another would be, then free lets it. */
static void second_taker_is_refused_with_the_pid(void **state)
{
	struct fixture *f = *state;
	struct serve_lock *l = NULL, *l2 = NULL;
	struct serve_lock_holder h;
	struct buf msg = BUF_INIT, want = BUF_INIT;
	char text[64], pid[32];

	assert_int_equal(serve_lock_held(f->db, &h, &msg), 0);  /* no file yet */
	assert_int_equal(serve_lock_take(f->db, &l, NULL, &msg), ERR_OK);
	assert_non_null(l);
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	file_text(f->lock, text, sizeof(text));
	assert_string_equal(text, pid);

	assert_int_equal(serve_lock_take(f->db, &l2, &h, &msg), ERR_CONFLICT);
	assert_null(l2);
	assert_int_equal(h.pid, (long)getpid());
	(void)buf_printf(&want, "database %s is in use by process %ld (lock file %s)", f->db,
			 (long)getpid(), f->lock);
	assert_string_equal(buf_str(&msg), buf_str(&want));
	assert_int_equal(serve_lock_held(f->db, &h, &msg), 1);
	assert_int_equal(h.pid, (long)getpid());
	assert_string_equal(h.url, "");  /* not listening yet */

	serve_lock_free(l);
	assert_int_equal(serve_lock_held(f->db, &h, &msg), 0);  /* the file stays, unlocked */
	assert_int_equal(serve_lock_take(f->db, &l, NULL, &msg), ERR_OK);
	serve_lock_free(l);
	serve_lock_free(NULL);
	buf_release(&msg);
	buf_release(&want);
}

/* A child process that took db's serve lock and holds it until killed; returns once it does. */
static pid_t child_holding(const char *db)
{
	int ready[2];
	char c = 0;
	pid_t child;

	assert_int_equal(pipe(ready), 0);
	child = fork();
	assert_true(child >= 0);
	if (child == 0) {
		struct serve_lock *mine = NULL;

		close(ready[0]);
		if (serve_lock_take(db, &mine, NULL, NULL) != ERR_OK)
			_exit(1);
		(void)!write(ready[1], "x", 1);
		pause();  /* until killed */
		_exit(0);
	}
	close(ready[1]);
	assert_int_equal(read(ready[0], &c, 1), 1);  /* the child holds it */
	close(ready[0]);
	return child;
}

/*
 * Another process holds it: refused with that PID; once it is killed
 * (SIGKILL: no cleanup of its own) the file it left blocks nobody.
 */
static void lock_dies_with_its_holder(void **state)
{
	struct fixture *f = *state;
	struct serve_lock *l = NULL;
	struct serve_lock_holder h;
	struct buf msg = BUF_INIT;
	int status;
	pid_t child;

	child = child_holding(f->db);
	assert_int_equal(serve_lock_take(f->db, &l, &h, &msg), ERR_CONFLICT);
	assert_int_equal(h.pid, (long)child);
	assert_int_equal(serve_lock_held(f->db, &h, &msg), 1);
	assert_int_equal(h.pid, (long)child);

	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, &status, 0), child);
	assert_int_equal(serve_lock_held(f->db, &h, &msg), 0);
	assert_int_equal(serve_lock_take(f->db, &l, NULL, &msg), ERR_OK);
	serve_lock_free(l);
	buf_release(&msg);
}

/* A file with a PID but no lock (its holder gone): taken, and our PID replaces it. */
static void stale_file_blocks_nobody(void **state)
{
	struct fixture *f = *state;
	struct serve_lock *l = NULL;
	FILE *fp = fopen(f->lock, "w");
	char text[64], pid[32];

	assert_non_null(fp);
	fputs("999999999\nhttp://127.0.0.1:1\n", fp);
	fclose(fp);
	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_int_equal(serve_lock_unclean(l), 999999999L);  /* never released */
	snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());
	file_text(f->lock, text, sizeof(text));
	assert_string_equal(text, pid);
	serve_lock_free(l);
}

/*
 * A clean release empties the file: the next taker finds no PID
 * (serve_lock_unclean() 0).  A holder killed with SIGKILL leaves its PID:
 * the next taker is told it.  Released without serve_lock_settled(), the
 * doubt is passed on (the file names the releaser); settled, it is gone.
 */
static void unclean_stop_is_told_apart(void **state)
{
	struct fixture *f = *state;
	struct serve_lock *l = NULL;
	int status;
	char text[64];
	pid_t child;

	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_int_equal(serve_lock_unclean(l), 0);  /* a new file */
	serve_lock_free(l);
	file_text(f->lock, text, sizeof(text));
	assert_string_equal(text, "");  /* released cleanly: no PID */
	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_int_equal(serve_lock_unclean(l), 0);
	serve_lock_free(l);

	child = child_holding(f->db);
	assert_int_equal(kill(child, SIGKILL), 0);
	assert_int_equal(waitpid(child, &status, 0), child);

	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_int_equal(serve_lock_unclean(l), (long)child);
	assert_null(serve_lock_unclean_note(l));  /* it noted nothing */
	serve_lock_free(l);  /* not settled: passed on */
	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_int_equal(serve_lock_unclean(l), (long)getpid());
	serve_lock_settled(l);
	serve_lock_free(l);
	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_int_equal(serve_lock_unclean(l), 0);
	serve_lock_free(l);
	assert_int_equal(serve_lock_unclean(NULL), 0);
	serve_lock_settled(NULL);
}

/*
 * The note of pending writes (serve_lock_note()) is read by the next taker
 * of a file left unclean, and passed on by a taker that notes nothing; the
 * PID and URL lines stay readable; a clean release with nothing pending
 * empties the file, with writes pending it keeps them (a clean stop does not
 * make a write in doubt land sooner).
 */
static void write_note_is_read_by_the_next_holder(void **state)
{
	struct fixture *f = *state;
	struct serve_lock *l = NULL;
	struct serve_lock_holder h;
	struct buf msg = BUF_INIT;
	const char *note = "write 1795000022000 acme/alerts#3\n";
	char text[NOTE_FILE_BYTES + 1], want[256];
	FILE *fp;

	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_null(serve_lock_unclean_note(l));
	serve_lock_note(l, "write 1795000011000 acme/alerts#1\n");
	assert_int_equal(serve_lock_set_address(l, ":0", 40123, 0, &msg), ERR_OK);
	serve_lock_note(l, "");
	serve_lock_note(l, note);
	file_text(f->lock, text, sizeof(text));
	assert_int_equal(strlen(text), NOTE_FILE_BYTES);  /* padded: rewritten in place */
	snprintf(want, sizeof(want), "%ld\nhttp://127.0.0.1:40123\nwrites:\n%s", (long)getpid(),
		 note);
	assert_memory_equal(text, want, strlen(want));
	assert_int_equal(serve_lock_held(f->db, &h, &msg), 1);
	assert_int_equal(h.pid, (long)getpid());
	assert_string_equal(h.url, "http://127.0.0.1:40123");
	serve_lock_free(l);  /* clean, but a write is pending: kept */

	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_int_equal(serve_lock_unclean(l), (long)getpid());
	assert_string_equal(serve_lock_unclean_note(l), note);
	serve_lock_free(l);  /* noted nothing of its own: passed on */
	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_string_equal(serve_lock_unclean_note(l), note);
	serve_lock_note(l, "");  /* its writes all answered: nothing pending */
	serve_lock_free(l);
	file_text(f->lock, text, sizeof(text));
	assert_string_equal(text, "");

	/* Killed with nothing pending: unclean, an empty note, nothing to hold. */
	fp = fopen(f->lock, "w");
	assert_non_null(fp);
	fputs("999999999\n\nwrites:\n     ", fp);
	fclose(fp);
	assert_int_equal(serve_lock_take(f->db, &l, NULL, NULL), ERR_OK);
	assert_int_equal(serve_lock_unclean(l), 999999999L);
	assert_string_equal(serve_lock_unclean_note(l), "");
	serve_lock_free(l);
	buf_release(&msg);
}

/* The holder's URL: a wildcard host asked on the loopback, the port it listens on. */
static void address_is_recorded(void **state)
{
	struct fixture *f = *state;
	struct serve_lock *l = NULL, *l2 = NULL;
	struct serve_lock_holder h;
	struct buf msg = BUF_INIT;

	assert_int_equal(serve_lock_take(f->db, &l, NULL, &msg), ERR_OK);
	assert_int_equal(serve_lock_set_address(l, ":0", 40123, 0, &msg), ERR_OK);
	assert_int_equal(serve_lock_held(f->db, &h, &msg), 1);
	assert_int_equal(h.pid, (long)getpid());
	assert_string_equal(h.url, "http://127.0.0.1:40123");
	assert_int_equal(serve_lock_set_address(l, "[::]:9095", 9095, 1, &msg), ERR_OK);
	assert_int_equal(serve_lock_take(f->db, &l2, &h, &msg), ERR_CONFLICT);
	assert_string_equal(h.url, "https://[::1]:9095");
	assert_int_equal(serve_lock_set_address(l, "no-port", 1, 0, &msg), ERR_INVALID);
	assert_int_equal(serve_lock_set_address(NULL, ":0", 1, 0, &msg), ERR_OK);
	serve_lock_free(l);
	buf_release(&msg);
}

/* PostgreSQL (many replicas by design) and an in-memory database: nothing to lock. */
static void nothing_to_lock_elsewhere(void **state)
{
	struct serve_lock *l = (struct serve_lock *)state;  /* any non-NULL value */
	struct serve_lock_holder h;

	assert_int_equal(serve_lock_take("postgres://u@h/db", &l, NULL, NULL), ERR_OK);
	assert_null(l);
	assert_int_equal(serve_lock_take(":memory:", &l, NULL, NULL), ERR_OK);
	assert_null(l);
	assert_int_equal(serve_lock_held("postgresql://h/db", &h, NULL), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(second_taker_is_refused_with_the_pid, setup,
						teardown),
		cmocka_unit_test_setup_teardown(lock_dies_with_its_holder, setup, teardown),
		cmocka_unit_test_setup_teardown(stale_file_blocks_nobody, setup, teardown),
		cmocka_unit_test_setup_teardown(address_is_recorded, setup, teardown),
		cmocka_unit_test_setup_teardown(unclean_stop_is_told_apart, setup, teardown),
		cmocka_unit_test_setup_teardown(write_note_is_read_by_the_next_holder, setup,
						teardown),
		cmocka_unit_test(nothing_to_lock_elsewhere),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
