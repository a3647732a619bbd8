/*
 * db_pg_wait.h - libpq's non-blocking calls waited for within a bound, for
 * the PostgreSQL engine (db_pg.c): a server that stops answering while its
 * host still acknowledges TCP (its processes stopped, storage frozen under
 * it) trips neither its own statement_timeout, which it runs itself, nor
 * TCP keepalives, so the client bounds each wait itself.  Waits are poll(2)
 * on PQsocket(), as libpq's documentation describes for its asynchronous
 * interface; times in ms, CLOCK_MONOTONIC.
 */
#ifndef AB_DB_PG_WAIT_H
#define AB_DB_PG_WAIT_H

#include <stdint.h>

#include <libpq-fe.h>

/*
 * The result of the command just sent on conn (sent: what PQsendQuery(),
 * PQsendQueryParams(), PQsendPrepare() or PQsendQueryPrepared() returned),
 * as PQexec() gives it: the last result, or the first that failed (the
 * caller PQclear()s it).  NULL when nothing was sent, or when the connection
 * failed with no result to read (PQerrorMessage() says why).  Waits at most
 * bound_ms; past that *timed_out is set to 1 and NULL returned: a command is
 * still in flight on conn, which must not be used again before a reset.
 */
PGresult *db_pg_await(PGconn *conn, int sent, int64_t bound_ms, int *timed_out);

/*
 * PQreset() of conn within bound_ms: PQresetStart() and PQresetPoll(), so a
 * server that accepts TCP and never answers costs bound_ms, not
 * connect_timeout.  1 with the session up; 0 when it failed
 * (PQerrorMessage() says why); -1 when bound_ms ran out (conn is left half
 * open: the next reset starts again).
 */
int db_pg_reset_within(PGconn *conn, int64_t bound_ms);

#endif
