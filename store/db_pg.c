/*
 * db_pg.c - the PostgreSQL engine of db.h, on libpq (issue 10).  SQL is
 * translated from ?N to $N once per statement and prepared once per
 * connection (a cache keyed by the SQL and its parameter types); a result is
 * fetched whole at the first db_step().  Writers serialise on a transaction
 * advisory lock; a lost connection is ERR_UNAVAILABLE and is reset by the
 * next call made outside a transaction.  db_pg_uri.c redacts the URI and
 * reads the password file.
 */
#ifdef AB_HAVE_LIBPQ

#include "store/db_int.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "core/clock.h"
#include "core/log.h"
#include "core/xalloc.h"
#include "store/db_pg_wait.h"
#include "core/banned.h"

/* Type OIDs of pg_type (src/include/catalog/pg_type.dat): stable across versions. */
#define BOOL_OID 16
#define INT8_OID 20
#define TEXT_OID 25

/* Server-side prepared statements kept per connection before DEALLOCATE ALL. */
#define CACHE_MAX 256
/* Longest password file line read. */
#define MAX_PASSWORD 1024
/* Default seconds to wait for a connection (a URI's connect_timeout wins). */
#define CONNECT_TIMEOUT_S "10"
/*
 * TCP keepalives on both ends, so that a dead peer (a host powered off, a
 * network cut) ends the connection: the client stops waiting for a result
 * that never comes (CLIENT_* below), and in 10 + 3 * 5 = 25 s the server ends the session,
 * which frees its advisory locks for another replica.  Without them the
 * kernel's defaults (2 hours) apply.
 */
#define KEEPALIVE_IDLE_S "10"
#define KEEPALIVE_INTERVAL_S "5"
#define KEEPALIVE_COUNT "3"
/* The server's side, where neither its configuration nor the URI's options set it. */
#define SERVER_KEEPALIVES                                                           \
	"SELECT set_config(name, v, false) FROM (VALUES"                              \
	" ('tcp_keepalives_idle', '" KEEPALIVE_IDLE_S "'),"                           \
	" ('tcp_keepalives_interval', '" KEEPALIVE_INTERVAL_S "'),"                   \
	" ('tcp_keepalives_count', '" KEEPALIVE_COUNT "'),"                           \
	" ('tcp_user_timeout', '25000')) AS k (name, v)"                              \
	" JOIN pg_settings USING (name) WHERE source = 'default'"
/*
 * The client notices first (the worker lock, store/store_lock.h store_worker_lock()):
 * its keepalives end a dead connection in 5 + 3 * 2 = 11 s, and its
 * tcp_user_timeout ends one whose query stays unacknowledged for 10 s (the
 * retransmissions would take ~15 min); the server gives up on a session
 * only 25 s after it last heard from it (its tcp_user_timeout bounds data it
 * sent that stays unacknowledged the same way).
 */
#define CLIENT_KEEPALIVE_IDLE_S "5"
#define CLIENT_KEEPALIVE_INTERVAL_S "2"
#define CLIENT_KEEPALIVE_COUNT "3"
#define CLIENT_TCP_USER_TIMEOUT_MS "10000"

/*
 * The client's own bound on one statement: the session's statement_timeout
 * (pg->timeout_ms) plus this.  A server that stops answering while its host's
 * kernel still acknowledges (the postgres process stopped, storage frozen
 * under it) trips neither its own statement_timeout, which it runs itself,
 * nor the keepalives above: without this bound a store call, and the webhook
 * or worker inside it, would wait for ever.  Past it the session is
 * abandoned (await_result()) and the next call starts a new one.
 */
#define CLIENT_GRACE_MS 1000
/*
 * After a statement abandoned or a reset that failed, the calls of the next
 * this many ms fail at once with that error instead of trying again: one
 * intake makes several calls (begin, statements, rollback), and each try
 * may wait its whole bound on a server that accepts TCP and never answers,
 * while the HTTP thread it runs on serves no other connection.
 */
#define RESET_PAUSE_MS 1000

/* One statement prepared on the server under name, for parameters of types. */
struct prepared {
	uint64_t hash;  /* of sql */
	char *sql;
	Oid *types;
	int n;
	char name[24];
};

struct pg {
	struct db base;
	PGconn *conn;
	struct buf err;     /* db_errmsg() */
	int64_t changes;    /* db_changes() */
	int in_tx;          /* a transaction is open, as last seen (kept once the connection is lost) */
	struct prepared *cache;
	size_t ncache;
	uint64_t next_name; /* prepared statement names ab_1, ab_2, ... of this connection */
	int64_t timeout_ms; /* db_set_timeout(): each session's statement_timeout, lock_timeout */
	int abandoned;      /* a statement outlived CLIENT_GRACE_MS: reset before the next */
	int64_t paused_ms;  /* CLOCK_MONOTONIC ms of the last abandon or failed reset; 0: none */
};

enum run_state { READY, RAN, FAILED };

struct pg_stmt {
	struct db_stmt base;
	char *sql;          /* translated: $N */
	uint64_t hash;
	int nparams;
	const char **values; /* text of each parameter, NULL for SQL NULL */
	Oid *types;          /* INT8_OID, TEXT_OID, 0 for NULL (the server infers it) */
	char (*nums)[24];    /* the text of integers bound */
	struct buf bind_err; /* the first bind failure, reported by the next step */
	PGresult *res;
	int row;             /* the current row; -1 before the first */
	enum run_state state;
};

static struct pg *pg_of(struct db *db)
{
	return (struct pg *)db;
}

static struct pg_stmt *stmt_of(struct db_stmt *s)
{
	return (struct pg_stmt *)s;
}

/* libpq's message on one line: newlines and tabs become spaces, trailing space cut. */
static void set_oneline(struct buf *b, const char *msg)
{
	size_t n;

	buf_reset(b);
	for (; msg && *msg; msg++) {
		if (*msg == '\n' || *msg == '\t') {
			if (b->len && b->data[b->len - 1] != ' ')
				(void)buf_addch(b, ' ');
		} else {
			(void)buf_addch(b, *msg);
		}
	}
	n = b->len;
	while (n && b->data[n - 1] == ' ')
		n--;
	buf_truncate(b, n);
}

static void set_err(struct pg *pg, struct buf *errmsg, const char *msg)
{
	set_oneline(&pg->err, msg);
	buf_setf(errmsg, "%s: %s", pg->base.name, buf_str(&pg->err));
}

/* PostgreSQL's notices (e.g. "relation ... already exists, skipping") go to the debug log. */
static void notice(void *arg, const char *message)
{
	struct pg *pg = arg;
	struct log_line *l = log_begin(LOG_DEBUG, "postgresql notice");
	struct buf b = BUF_INIT;

	if (!l)
		return;
	set_oneline(&b, message);
	log_str(l, "database", pg->base.name);
	log_str(l, "notice", buf_str(&b));
	log_end(l);
	buf_release(&b);
}

/*
 * db_pg_await() of the statement just sent within the client's bound
 * (pg->timeout_ms + CLIENT_GRACE_MS).  Past it the session is abandoned
 * (pg->abandoned: the next usable() resets it, pg_rollback() sends nothing
 * on it) and NULL returned with the reason in pg->err.
 */
static PGresult *await_result(struct pg *pg, int sent)
{
	int timed_out;
	PGresult *res = db_pg_await(pg->conn, sent, pg->timeout_ms + CLIENT_GRACE_MS, &timed_out);

	if (timed_out) {
		pg->abandoned = 1;
		pg->paused_ms = clock_mono_us() / 1000;
		buf_setf(&pg->err, "no answer from the server within %lld ms "
			 "(statement_timeout + %d ms): session abandoned",
			 (long long)pg->timeout_ms, CLIENT_GRACE_MS);
	}
	return res;
}

/* PQexec(pg->conn, sql) within the client's bound (await_result()). */
static PGresult *exec_bounded(struct pg *pg, const char *sql)
{
	return await_result(pg, PQsendQuery(pg->conn, sql));
}

/* Set the session's statement_timeout and lock_timeout to pg->timeout_ms. */
static PGresult *set_timeouts(struct pg *pg)
{
	char sql[160];

	snprintf(sql, sizeof(sql), "SELECT set_config('statement_timeout', '%lld', false), "
		 "set_config('lock_timeout', '%lld', false)", (long long)pg->timeout_ms,
		 (long long)pg->timeout_ms);
	return exec_bounded(pg, sql);
}

/* Log a failed session setting (the session still works without it). */
static void log_setup_failure(struct pg *pg, const char *msg, PGresult *res)
{
	struct log_line *l = log_begin(LOG_WARN, msg);
	struct buf b = BUF_INIT;

	set_oneline(&b, PQresultErrorMessage(res));
	log_str(l, "database", pg->base.name);
	log_str(l, "error", buf_str(&b));
	log_end(l);
	buf_release(&b);
}

/*
 * A new session: the statement bound (db_set_timeout()) and the server's
 * keepalives (a failure is logged; the session still works).
 */
static void session_setup(struct pg *pg)
{
	PGresult *res = set_timeouts(pg);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		log_setup_failure(pg, "cannot set the statement timeout", res);
	PQclear(res);
	res = exec_bounded(pg, SERVER_KEEPALIVES);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		log_setup_failure(pg, "cannot set the server's tcp keepalives", res);
	PQclear(res);
}

static void cache_clear(struct pg *pg)
{
	for (size_t i = 0; i < pg->ncache; i++) {
		free(pg->cache[i].sql);
		free(pg->cache[i].types);
	}
	pg->ncache = 0;
}

static void note_tx(struct pg *pg)
{
	PGTransactionStatusType t = PQtransactionStatus(pg->conn);

	if (t != PQTRANS_UNKNOWN)
		pg->in_tx = t != PQTRANS_IDLE;
}

/* db_pg_reset_within() the client's bound: ERR_OK, or ERR_UNAVAILABLE with pg->err. */
static enum err reset_bounded(struct pg *pg)
{
	int r = db_pg_reset_within(pg->conn, pg->timeout_ms + CLIENT_GRACE_MS);

	if (r > 0)
		return ERR_OK;
	if (r < 0)
		buf_setf(&pg->err, "cannot connect: no answer from the server within %lld ms",
			 (long long)(pg->timeout_ms + CLIENT_GRACE_MS));
	else
		set_oneline(&pg->err, PQerrorMessage(pg->conn));
	return ERR_UNAVAILABLE;
}

/*
 * Ready to send: a connection that was lost is reset here, once per call,
 * unless a transaction was open on it (its caller must roll back first, or
 * the rest of the transaction would run, and commit, statement by statement).
 */
static enum err usable(struct pg *pg, struct buf *errmsg)
{
	enum err rc;

	if (PQstatus(pg->conn) == CONNECTION_OK && !pg->abandoned)
		return ERR_OK;
	if (pg->in_tx) {
		set_err(pg, errmsg, "the connection was lost inside a transaction (roll it back)");
		return ERR_UNAVAILABLE;
	}
	if (pg->paused_ms && clock_mono_us() / 1000 - pg->paused_ms < RESET_PAUSE_MS) {
		buf_setf(errmsg, "%s: %s", pg->base.name, buf_str(&pg->err));  /* as it failed */
		return ERR_UNAVAILABLE;
	}
	rc = reset_bounded(pg);
	pg->abandoned = 0;
	cache_clear(pg); /* a new session has none of them */
	if (rc != ERR_OK) {
		pg->paused_ms = clock_mono_us() / 1000;
		buf_setf(errmsg, "%s: %s", pg->base.name, buf_str(&pg->err));
		return ERR_UNAVAILABLE;
	}
	pg->paused_ms = 0;
	session_setup(pg);
	log_msg(LOG_INFO, "reconnected to the database", "database", pg->base.name);
	return ERR_OK;
}

/* The connection is down: a class 08 error, a shutdown (57P01..57P03), or libpq says so. */
static int conn_lost(struct pg *pg, const char *sqlstate)
{
	if (PQstatus(pg->conn) == CONNECTION_BAD)
		return 1;
	if (!sqlstate)
		return 0;
	return strncmp(sqlstate, "08", 2) == 0 || strcmp(sqlstate, "57P01") == 0 ||
	       strcmp(sqlstate, "57P02") == 0 || strcmp(sqlstate, "57P03") == 0;
}

/* 1 when res is a success; else record why and classify it into *rc (res may be NULL). */
static int succeeded(struct pg *pg, const PGresult *res, enum err *rc, struct buf *errmsg)
{
	ExecStatusType st = res ? PQresultStatus(res) : PGRES_FATAL_ERROR;
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *msg = res ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;

	if (pg->abandoned) {  /* await_result() gave up (in_tx as before the statement) */
		*rc = ERR_UNAVAILABLE;
		buf_setf(errmsg, "%s: %s", pg->base.name, buf_str(&pg->err));
		return 0;
	}
	note_tx(pg);
	if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK) {
		*rc = ERR_OK;
		return 1;
	}
	if (!msg || !*msg)
		msg = res ? PQresultErrorMessage(res) : "";
	if (!*msg)
		msg = PQerrorMessage(pg->conn);
	*rc = conn_lost(pg, state) ? ERR_UNAVAILABLE : ERR_DB;
	set_oneline(&pg->err, msg);
	if (state && *rc == ERR_DB)
		(void)buf_printf(&pg->err, " (SQLSTATE %s)", state);
	buf_setf(errmsg, "%s: %s", pg->base.name, buf_str(&pg->err));
	return 0;
}

/*
 * db_changes(): rows of the last INSERT, UPDATE, DELETE or MERGE.  res is
 * not const: libpq's PQcmdStatus() and PQcmdTuples() take a PGresult *.
 */
static void note_changes(struct pg *pg, PGresult *res)
{
	const char *cmd = PQcmdStatus(res);

	if (strncmp(cmd, "INSERT", 6) == 0 || strncmp(cmd, "UPDATE", 6) == 0 ||
	    strncmp(cmd, "DELETE", 6) == 0 || strncmp(cmd, "MERGE", 5) == 0)
		pg->changes = strtoll(PQcmdTuples(res), NULL, 10);
}

/* Run sql (no parameters; may be several statements): ERR_OK with its last result in *out. */
static enum err exec_sql(struct pg *pg, const char *sql, PGresult **out, struct buf *errmsg)
{
	enum err rc = usable(pg, errmsg);
	PGresult *res;

	if (out)
		*out = NULL;
	if (rc != ERR_OK)
		return rc;
	res = exec_bounded(pg, sql);
	if (succeeded(pg, res, &rc, errmsg)) {
		note_changes(pg, res);
		if (out) {
			*out = res;
			res = NULL;
		}
	}
	PQclear(res);
	return rc;
}

/* Run sql with int8 parameters params[0..n) and read the first column of its one row. */
static enum err query_int(struct pg *pg, const char *sql, int n, const int64_t *params,
			  int64_t *out, struct buf *errmsg)
{
	char text[3][24];
	const char *values[3];
	Oid types[3];
	enum err rc = usable(pg, errmsg);
	PGresult *res;

	*out = 0;
	if (rc != ERR_OK)
		return rc;
	for (int i = 0; i < n && i < 3; i++) {
		snprintf(text[i], sizeof(text[i]), "%lld", (long long)params[i]);
		values[i] = text[i];
		types[i] = INT8_OID;
	}
	res = await_result(pg, PQsendQueryParams(pg->conn, sql, n, types, values, NULL, NULL, 0));
	if (succeeded(pg, res, &rc, errmsg) && PQntuples(res) == 1 && PQnfields(res) == 1) {
		const char *v = PQgetvalue(res, 0, 0);

		*out = PQftype(res, 0) == BOOL_OID ? v[0] == 't' : strtoll(v, NULL, 10);
	}
	PQclear(res);
	return rc;
}

/* FNV-1a of s. */
static uint64_t hash_str(const char *s)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * UINT64_C(1099511628211);
	return h;
}

/* A statement prepared for s's SQL whose types fit s's bindings (a NULL fits any). */
static const struct prepared *cache_find(const struct pg *pg, const struct pg_stmt *s)
{
	for (size_t i = 0; i < pg->ncache; i++) {
		const struct prepared *p = &pg->cache[i];
		int fits = p->hash == s->hash && p->n == s->nparams && strcmp(p->sql, s->sql) == 0;

		for (int j = 0; fits && j < s->nparams; j++)
			fits = s->types[j] == 0 || s->types[j] == p->types[j];
		if (fits)
			return p;
	}
	return NULL;
}

/* Prepare s on the server (PQprepare) and remember it; ERR_OK with it in *out. */
static enum err cache_add(struct pg *pg, const struct pg_stmt *s, const struct prepared **out,
			  struct buf *errmsg)
{
	struct prepared *p;
	PGresult *res;
	enum err rc;

	if (pg->ncache == CACHE_MAX) {
		/* SQL built at run time can make many: start over rather than grow without end. */
		rc = exec_sql(pg, "DEALLOCATE ALL", NULL, errmsg);
		if (rc != ERR_OK)
			return rc;
		cache_clear(pg);
	}
	if (!pg->cache)
		pg->cache = xcalloc(CACHE_MAX, sizeof(*pg->cache));
	p = &pg->cache[pg->ncache];
	snprintf(p->name, sizeof(p->name), "ab_%llu", (unsigned long long)++pg->next_name);
	res = await_result(pg, PQsendPrepare(pg->conn, p->name, s->sql, s->nparams, s->types));
	if (!succeeded(pg, res, &rc, errmsg)) {
		PQclear(res);
		return rc;
	}
	PQclear(res);
	p->hash = s->hash;
	p->sql = xstrdup(s->sql);
	p->n = s->nparams;
	p->types = xcalloc((size_t)(s->nparams ? s->nparams : 1), sizeof(Oid));
	if (s->nparams)
		memcpy(p->types, s->types, (size_t)s->nparams * sizeof(Oid));
	pg->ncache++;
	*out = p;
	return ERR_OK;
}

static enum err pg_prepare(struct db *db, const char *sql, struct db_stmt **out,
			   struct buf *errmsg)
{
	struct pg *pg = pg_of(db);
	struct buf t = BUF_INIT;
	struct pg_stmt *s;
	size_t n;
	int nparams;
	enum err rc = db_pg_translate(sql, &t, &nparams, &pg->err);

	*out = NULL;
	if (rc != ERR_OK) {
		buf_setf(errmsg, "%s: %s", db->name, buf_str(&pg->err));
		buf_release(&t);
		return rc;
	}
	n = (size_t)(nparams ? nparams : 1);
	s = xcalloc(1, sizeof(*s));
	s->base.db = db;
	s->sql = buf_detach(&t);
	s->hash = hash_str(s->sql);
	s->nparams = nparams;
	s->values = xcalloc(n, sizeof(*s->values));
	s->types = xcalloc(n, sizeof(*s->types));
	s->nums = xcalloc(n, sizeof(*s->nums));
	s->row = -1;
	*out = &s->base;
	return ERR_OK;
}

static void pg_reset(struct db_stmt *base)
{
	struct pg_stmt *s = stmt_of(base);

	PQclear(s->res);
	s->res = NULL;
	s->row = -1;
	s->state = READY;
	buf_reset(&s->bind_err);
	for (int i = 0; i < s->nparams; i++) {
		s->values[i] = NULL;
		s->types[i] = 0;
	}
}

static void pg_finalize(struct db_stmt *base)
{
	struct pg_stmt *s = stmt_of(base);

	/* Its server-side statement stays in the connection's cache for the next prepare. */
	PQclear(s->res);
	buf_release(&s->bind_err);
	free(s->sql);
	free(s->values);
	free(s->types);
	free(s->nums);
	free(s);
}

/* Parameter idx of s, or -1 with the first failure kept for db_step(). */
static int param(struct pg_stmt *s, int idx)
{
	if (idx >= 1 && idx <= s->nparams)
		return idx - 1;
	if (!s->bind_err.len)
		buf_setf(&s->bind_err, "parameter ?%d out of range (the statement has %d)", idx,
			 s->nparams);
	return -1;
}

static void pg_bind_text(struct db_stmt *base, int idx, const char *v)
{
	struct pg_stmt *s = stmt_of(base);
	int i = param(s, idx);

	if (i < 0)
		return;
	s->values[i] = v;
	s->types[i] = v ? TEXT_OID : 0;
}

static void pg_bind_int(struct db_stmt *base, int idx, int64_t v)
{
	struct pg_stmt *s = stmt_of(base);
	int i = param(s, idx);

	if (i < 0)
		return;
	snprintf(s->nums[i], sizeof(s->nums[i]), "%lld", (long long)v);
	s->values[i] = s->nums[i];
	s->types[i] = INT8_OID;
}

static void pg_bind_null(struct db_stmt *base, int idx)
{
	struct pg_stmt *s = stmt_of(base);
	int i = param(s, idx);

	if (i < 0)
		return;
	s->values[i] = NULL;
	s->types[i] = 0;
}

/* Run s: prepared once per connection and types, then executed with its bindings. */
static enum err run(struct pg_stmt *s)
{
	struct pg *pg = pg_of(s->base.db);
	const struct prepared *p;
	enum err rc;
	PGresult *res;

	if (s->bind_err.len) {
		set_oneline(&pg->err, buf_str(&s->bind_err));
		return ERR_DB;
	}
	rc = usable(pg, NULL);
	if (rc != ERR_OK)
		return rc;
	p = cache_find(pg, s);
	if (!p) {
		rc = cache_add(pg, s, &p, NULL);
		if (rc != ERR_OK)
			return rc;
	}
	res = await_result(pg, PQsendQueryPrepared(pg->conn, p->name, s->nparams, s->values, NULL,
						    NULL, 0));
	if (!succeeded(pg, res, &rc, NULL)) {
		PQclear(res);
		return rc;
	}
	note_changes(pg, res);
	s->res = res;
	return ERR_OK;
}

static enum db_step pg_step(struct db_stmt *base)
{
	struct pg_stmt *s = stmt_of(base);

	if (s->state == FAILED)
		return DB_ERROR;
	if (s->state == READY) {
		if (run(s) != ERR_OK) {
			s->state = FAILED;
			return DB_ERROR;
		}
		s->state = RAN;
	}
	if (s->row < PQntuples(s->res))
		s->row++;
	return s->row < PQntuples(s->res) ? DB_ROW : DB_DONE;
}

static const char *pg_col_text(struct db_stmt *base, int i)
{
	struct pg_stmt *s = stmt_of(base);

	if (!s->res || s->row < 0 || s->row >= PQntuples(s->res) || i < 0 ||
	    i >= PQnfields(s->res) || PQgetisnull(s->res, s->row, i))
		return NULL;
	/* A comparison reads as sqlite gives it: 1 or 0. */
	if (PQftype(s->res, i) == BOOL_OID)
		return PQgetvalue(s->res, s->row, i)[0] == 't' ? "1" : "0";
	return PQgetvalue(s->res, s->row, i);
}

static int64_t pg_col_int(struct db_stmt *s, int i)
{
	const char *v = pg_col_text(s, i);

	return v ? strtoll(v, NULL, 10) : 0;
}

static int pg_col_is_null(struct db_stmt *s, int i)
{
	return pg_col_text(s, i) == NULL;
}

static int64_t pg_changes(struct db *db)
{
	return pg_of(db)->changes;
}

static const char *pg_errmsg(struct db *db)
{
	return buf_str(&pg_of(db)->err);
}

static enum err pg_exec(struct db *db, const char *sql, struct buf *errmsg)
{
	return exec_sql(pg_of(db), sql, NULL, errmsg);
}

static void pg_rollback(struct db *db)
{
	struct pg *pg = pg_of(db);
	PGresult *res;

	/* An abandoned session is reset before its next use: its transaction ends with it. */
	if (PQstatus(pg->conn) == CONNECTION_OK && !pg->abandoned &&
	    PQtransactionStatus(pg->conn) != PQTRANS_IDLE) {
		res = exec_bounded(pg, "ROLLBACK");
		PQclear(res);
	}
	pg->in_tx = 0;
}

static enum err pg_begin(struct db *db, struct buf *errmsg)
{
	struct pg *pg = pg_of(db);
	char sql[96];
	enum err rc;

	if (pg->in_tx) {
		set_err(pg, errmsg, "cannot begin: a transaction is open already");
		return ERR_DB;
	}
	/* One round trip; the transaction stays open after it. */
	snprintf(sql, sizeof(sql), "BEGIN; SELECT pg_advisory_xact_lock(%lld)",
		 (long long)DB_WRITE_LOCK);
	rc = exec_sql(pg, sql, NULL, errmsg);
	if (rc != ERR_OK && rc != ERR_UNAVAILABLE)
		pg_rollback(db);
	return rc;
}

static enum err pg_commit(struct db *db, struct buf *errmsg)
{
	struct pg *pg = pg_of(db);
	PGresult *res = NULL;
	enum err rc;

	if (!pg->in_tx) {
		set_err(pg, errmsg, "cannot commit: no transaction is open");
		return ERR_DB;
	}
	rc = exec_sql(pg, "COMMIT", &res, errmsg);
	/* COMMIT of a transaction in which a statement failed answers ROLLBACK. */
	if (rc == ERR_OK && strcmp(PQcmdStatus(res), "ROLLBACK") == 0) {
		set_err(pg, errmsg, "the transaction was rolled back: a statement in it failed");
		rc = ERR_DB;
	}
	PQclear(res);
	pg->in_tx = 0; /* ended either way: on a lost connection nothing is left to roll back */
	return rc;
}

static int pg_in_transaction(struct db *db)
{
	struct pg *pg = pg_of(db);

	if (PQstatus(pg->conn) == CONNECTION_OK && !pg->abandoned)
		note_tx(pg);
	return pg->in_tx;
}

static enum err pg_schema_version(struct db *db, int *version, struct buf *errmsg)
{
	struct pg *pg = pg_of(db);
	PGresult *res = NULL;
	enum err rc;

	*version = 0;
	/*
	 * Under the caller's write lock, so two processes cannot create it at
	 * once; to_regclass() rather than IF NOT EXISTS, whose notice would be
	 * logged at every start.
	 */
	rc = exec_sql(pg,
		      "DO $$ BEGIN IF to_regclass('schema_version') IS NULL THEN"
		      " CREATE TABLE schema_version (version INTEGER NOT NULL); END IF; END $$;"
		      "INSERT INTO schema_version (version) SELECT 0"
		      " WHERE NOT EXISTS (SELECT 1 FROM schema_version);"
		      "SELECT version FROM schema_version",
		      &res, errmsg);
	if (rc == ERR_OK && PQntuples(res) != 1) {
		char why[80];

		snprintf(why, sizeof(why), "table schema_version has %d rows, want 1",
			 PQntuples(res));
		set_err(pg, errmsg, why);
		rc = ERR_DB;
	} else if (rc == ERR_OK) {
		*version = (int)strtol(PQgetvalue(res, 0, 0), NULL, 10);
	}
	PQclear(res);
	return rc;
}

static enum err pg_set_schema_version(struct db *db, int version, struct buf *errmsg)
{
	char sql[64];

	snprintf(sql, sizeof(sql), "UPDATE schema_version SET version = %d", version);
	return exec_sql(pg_of(db), sql, NULL, errmsg);
}

static enum err pg_reclaim(struct db *db, struct buf *errmsg)
{
	(void)db;
	(void)errmsg;
	return ERR_OK; /* autovacuum gives the space back */
}

/*
 * pg_locks shows a bigint advisory key as its high half in classid, its low
 * half in objid, and objsubid 1 (two int4 keys have objsubid 2); hi and lo
 * are the parameters of those halves.
 */
#define HELD_SQL(hi, lo)                                                            \
	"EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"    \
	" AND pid = pg_backend_pid() AND objsubid = 1 AND classid::int8 = " hi      \
	" AND objid::int8 = " lo ")"

/* key, then its high and low halves as pg_locks shows them. */
static void lock_params(int64_t key, int64_t p[3])
{
	p[0] = key;
	p[1] = (int64_t)((uint64_t)key >> 32);
	p[2] = (int64_t)((uint64_t)key & UINT32_MAX);
}

static enum err pg_try_lock(struct db *db, int64_t key, int *held, struct buf *errmsg)
{
	int64_t p[3], v = 0;
	enum err rc;

	lock_params(key, p);
	/* Taken once: pg_try_advisory_lock() again would stack a second hold. */
	rc = query_int(pg_of(db), "SELECT CASE WHEN " HELD_SQL("$2", "$3")
			" THEN true ELSE pg_try_advisory_lock($1) END", 3, p, &v, errmsg);
	*held = rc == ERR_OK && v == 1;
	return rc;
}

static int pg_lock_held(struct db *db, int64_t key)
{
	int64_t p[3], v = 0;

	lock_params(key, p);
	if (query_int(pg_of(db), "SELECT " HELD_SQL("$1", "$2"), 2, p + 1, &v, NULL) != ERR_OK)
		return 0;
	return v == 1;
}

static void pg_unlock(struct db *db, int64_t key)
{
	int64_t v = 0;

	(void)query_int(pg_of(db), "SELECT pg_advisory_unlock($1)", 1, &key, &v, NULL);
}

static void pg_close(struct db *db)
{
	struct pg *pg = pg_of(db);

	PQfinish(pg->conn);
	cache_clear(pg);
	free(pg->cache);
	buf_release(&pg->err);
	free(pg);
}

/* Other replicas write unseen: never a version that could match (db.h). */
static enum err pg_data_version(struct db *db, uint64_t *version, struct buf *errmsg)
{
	(void)db;
	(void)errmsg;
	*version = 0;
	return ERR_OK;
}

static int pg_data_version_unlocked(struct db *db, uint64_t *version)
{
	(void)db;
	*version = 0;
	return 1;
}

static enum err pg_set_timeout(struct db *db, int64_t timeout_ms, struct buf *errmsg)
{
	struct pg *pg = pg_of(db);
	int64_t was = pg->timeout_ms;
	enum err rc = usable(pg, errmsg);
	PGresult *res = NULL;

	if (rc != ERR_OK)
		return rc;
	pg->timeout_ms = timeout_ms;
	res = set_timeouts(pg);
	if (!succeeded(pg, res, &rc, errmsg))
		pg->timeout_ms = was;
	PQclear(res);
	return rc;
}

static int pg_file_lost(struct db *db, struct buf *why)
{
	(void)db;
	(void)why;
	return 0;
}

static const struct db_ops pg_ops = {
	.engine = DB_POSTGRES,
	.close = pg_close,
	.data_version = pg_data_version,
	.data_version_unlocked = pg_data_version_unlocked,
	.prepare = pg_prepare,
	.finalize = pg_finalize,
	.bind_text = pg_bind_text,
	.bind_int = pg_bind_int,
	.bind_null = pg_bind_null,
	.step = pg_step,
	.col_int = pg_col_int,
	.col_text = pg_col_text,
	.col_is_null = pg_col_is_null,
	.reset = pg_reset,
	.changes = pg_changes,
	.errmsg = pg_errmsg,
	.exec = pg_exec,
	.begin = pg_begin,
	.commit = pg_commit,
	.rollback = pg_rollback,
	.in_transaction = pg_in_transaction,
	.schema_version = pg_schema_version,
	.set_schema_version = pg_set_schema_version,
	.reclaim = pg_reclaim,
	.try_lock = pg_try_lock,
	.lock_held = pg_lock_held,
	.unlock = pg_unlock,
	.set_timeout = pg_set_timeout,
	.file_lost = pg_file_lost,
};

enum err db_pg_open(const char *uri, const char *password_file, struct db **out,
		    struct buf *errmsg)
{
	char password[MAX_PASSWORD + 2];
	char *perr = NULL;
	PQconninfoOption *opts = PQconninfoParse(uri, &perr);
	/* Keywords before dbname are defaults the URI's own parameters override. */
	const char *keys[] = { "fallback_application_name", "connect_timeout", "keepalives_idle",
			       "keepalives_interval", "keepalives_count", "tcp_user_timeout",
			       "dbname", "password", NULL };
	const char *values[] = { "alertbridge", CONNECT_TIMEOUT_S, CLIENT_KEEPALIVE_IDLE_S,
				 CLIENT_KEEPALIVE_INTERVAL_S, CLIENT_KEEPALIVE_COUNT,
				 CLIENT_TCP_USER_TIMEOUT_MS, uri, password, NULL };
	struct pg *pg;
	enum err rc;

	*out = NULL;
	if (!opts) {
		struct buf why = BUF_INIT;
		char *name = db_pg_redact(uri);

		set_oneline(&why, perr ? perr : "out of memory");
		buf_setf(errmsg, "invalid PostgreSQL URI \"%s\": %s", name, buf_str(&why));
		buf_release(&why);
		free(name);
		PQfreemem(perr);
		return ERR_INVALID;
	}
	PQconninfoFree(opts);
	if (password_file) {
		rc = db_pg_read_password(password_file, password, sizeof(password), errmsg);
		if (rc != ERR_OK)
			return rc;
	} else {
		keys[7] = NULL; /* libpq's PGPASSWORD / PGPASSFILE apply */
	}
	pg = xcalloc(1, sizeof(*pg));
	pg->base.ops = &pg_ops;
	pg->timeout_ms = DB_STATEMENT_TIMEOUT_MS;
	pg->base.name = db_pg_redact(uri);
	pg->conn = PQconnectdbParams(keys, values, 1);
	explicit_bzero(password, sizeof(password));
	if (!pg->conn) {
		buf_setf(errmsg, "%s: cannot connect: out of memory", pg->base.name);
		free(pg->base.name);
		free(pg);
		return ERR_UNAVAILABLE;
	}
	if (PQstatus(pg->conn) != CONNECTION_OK) {
		set_oneline(&pg->err, PQerrorMessage(pg->conn));
		buf_setf(errmsg, "cannot connect to %s: %s", pg->base.name, buf_str(&pg->err));
		free(pg->base.name);
		pg_close(&pg->base);
		return ERR_UNAVAILABLE;
	}
	PQsetNoticeProcessor(pg->conn, notice, pg);
	session_setup(pg);
	*out = &pg->base;
	return ERR_OK;
}

#else

/* Built without libpq (AB_HAVE_LIBPQ unset): db.c does not call db_pg_open(). */
typedef int db_pg_not_built;

#endif
