/*
 * log_capture.c - the log into a pipe during a unit test, and what it said (log_capture.h).
 */
#include "tests/unit/helpers/log_capture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>
#include <cmocka.h>

#include "core/log.h"

void lcap_start(struct log_capture *c)
{
	assert_int_equal(pipe(c->fds), 0);
	log_set_fd(c->fds[1]);
}

void lcap_end(struct log_capture *c, char *out, size_t n)
{
	ssize_t got;

	log_set_fd(2);
	close(c->fds[1]);
	got = read(c->fds[0], out, n - 1);
	close(c->fds[0]);
	assert_true(got > 0);
}
