/*
 * db_pg_wait.c - libpq's non-blocking calls waited for within a bound
 * (db_pg_wait.h).
 */
#ifdef AB_HAVE_LIBPQ

#include "store/db_pg_wait.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>

#include "core/clock.h"
#include "core/banned.h"

/* Wait until conn's socket is ready for events or deadline_ms: poll(2)'s answer, 0 at the deadline. */
static int wait_socket(PGconn *conn, short events, int64_t deadline_ms)
{
	struct pollfd p = { PQsocket(conn), events, 0 };
	int64_t left = deadline_ms - clock_mono_us() / 1000;
	int n;

	if (left <= 0)
		return 0;
	n = poll(&p, 1, left > INT_MAX ? INT_MAX : (int)left);
	return n < 0 && errno == EINTR ? 1 : n;  /* interrupted: look again */
}

PGresult *db_pg_await(PGconn *conn, int sent, int64_t bound_ms, int *timed_out)
{
	int64_t deadline_ms = clock_mono_us() / 1000 + bound_ms;
	PGresult *res, *keep = NULL;

	*timed_out = 0;
	if (!sent)
		return NULL;
	for (;;) {
		while (PQisBusy(conn)) {
			int n = wait_socket(conn, POLLIN, deadline_ms);

			if (n == 0) {
				*timed_out = 1;
				PQclear(keep);
				return NULL;
			}
			if (n < 0 || !PQconsumeInput(conn))
				break;  /* the connection failed: PQgetResult() says why */
		}
		res = PQgetResult(conn);
		if (!res)
			break;
		if (keep && PQresultStatus(keep) == PGRES_FATAL_ERROR) {
			PQclear(res);  /* the first failure is the one to report, as PQexec() */
		} else {
			PQclear(keep);
			keep = res;
		}
	}
	return keep;
}

int db_pg_reset_within(PGconn *conn, int64_t bound_ms)
{
	int64_t deadline_ms = clock_mono_us() / 1000 + bound_ms;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;

	if (!PQresetStart(conn))
		return 0;
	while (st != PGRES_POLLING_OK && st != PGRES_POLLING_FAILED) {
		int n = wait_socket(conn, st == PGRES_POLLING_READING ? POLLIN : POLLOUT,
				    deadline_ms);

		if (n == 0)
			return -1;
		st = n < 0 ? PGRES_POLLING_FAILED : PQresetPoll(conn);
	}
	return st == PGRES_POLLING_OK && PQstatus(conn) == CONNECTION_OK;
}

#else

/* Built without libpq (AB_HAVE_LIBPQ unset): db_pg.c is not built either. */
typedef int db_pg_wait_not_built;

#endif
