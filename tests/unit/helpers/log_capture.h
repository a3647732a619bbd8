/*
 * log_capture.h - what the log says while a unit test runs: the log's lines go into a pipe
 * between lcap_start() and lcap_end(), which gives them back.  Failures end the test
 * (cmocka).  A pipe holds 64 KiB on Linux: enough for a test's few lines, not for a flood.
 */
#ifndef AB_TEST_LOG_CAPTURE_H
#define AB_TEST_LOG_CAPTURE_H

#include <stddef.h>

struct log_capture {
	int fds[2];  /* the pipe: read end, write end */
};

/* Send the log (log_set_fd()) into a new pipe. */
void lcap_start(struct log_capture *c);

/*
 * The log back on stderr; what it wrote since lcap_start() read into out (n bytes,
 * NUL-terminated; the caller zeroes it when a short read must leave it empty) and the pipe
 * closed.  Fails the test when nothing was logged.
 */
void lcap_end(struct log_capture *c, char *out, size_t n);

#endif
