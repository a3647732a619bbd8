/*
 * store_copy.c - `alertbridge store copy`: every row of one store into
 * another, new one, e.g. an sqlite file into PostgreSQL when a
 * single-replica install moves to several replicas, so that no issue is
 * made again and nothing queued is lost.
 *
 * Both stores are opened (and so migrated) to this build's schema; the
 * copy is table by table in one transaction on each side, ids kept, so the
 * references between rows (a notice's digest, a storm member's summary)
 * hold.  On PostgreSQL the identity sequences then start after the copied
 * ids.  The column lists below are the schema's (store_schema.c);
 * test_store_copy.c checks them against the tables, so a migration that
 * adds a column fails that test until it is added here.
 */
#include "store/store_copy.h"
#include "store/store_int.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/log.h"
#include "store/serve_lock.h"
#include "core/xalloc.h"
#include "store/store_events.h"
#include "core/banned.h"

/*
 * Each table and its columns, a type letter after each name: 'i' an
 * integer, 't' text.  serial: the table's id is an identity on PostgreSQL.
 */
static const struct copy_table {
	const char *name;
	const char *cols;
	int serial;
} tables[] = {
	{ "issues", "receiver t key t repo t number i state t state_reason t "
		    "episode_starts_ms i resolved_ends_ms i closed_at_ms i previous_number i "
		    "created_at_ms i updated_at_ms i dead_reason t alertname t title t etag t "
		    "labels t previous_url t", 0 },
	{ "events", "id i kind t receiver t key t status t starts_at_ms i ends_at_ms i "
		    "payload t received_at_ms i attempts i next_attempt_at_ms i last_error t "
		    "progress t state t done_at_ms i repeat_state t", 1 },
	{ "digests", "id i kind t channel t thread_ts t part i parts i text t state t "
		     "attempts i next_attempt_at_ms i created_at_ms i sent_at_ms i "
		     "slack_channel_id t slack_ts t last_error t", 1 },
	{ "notices", "id i namespace t pod t uid t kind t expires_ms i notify t owner t "
		     "channel t thread_ts t text t state t attempts i next_attempt_at_ms i "
		     "created_at_ms i sent_at_ms i slack_channel_id t slack_ts t last_error t "
		     "digest_id i line t", 1 },
	{ "storm_summaries", "id i receiver t repo t alertname t marker_key t number i state t "
			     "created_at_ms i synced_at_ms i next_sync_ms i dirty i", 1 },
	{ "storm_members", "receiver t key t summary_id i firing i starts_at_ms i ends_at_ms i "
			   "line t", 0 },
	{ "repo_scans", "receiver t repo t done_at_ms i", 0 },
	{ "group_states", "receiver t key t members t payload t dirty i synced_at_ms i "
			  "next_sync_ms i", 0 },
	{ "gh_deliveries", "id t received_at_ms i", 0 },
	{ "silences", "receiver t key t silence_id t created_by t ends_at_ms i created_at_ms i "
		      "expired_at_ms i", 0 },
	{ "gh_budget", "owner t sent_at_ms i", 0 },
};

#define N_TABLES (sizeof(tables) / sizeof(tables[0]))
_Static_assert(N_TABLES == STORE_COPY_TABLES, "store_copy.h's STORE_COPY_TABLES");

/* A table's columns parsed: names "a, b, c", placeholders "?1, ?2, ?3", types "tii". */
struct cols {
	struct buf names;
	struct buf params;
	char types[64];
	int n;
};

static void parse_cols(const struct copy_table *t, struct cols *c)
{
	const char *p = t->cols;

	c->names = (struct buf)BUF_INIT;
	c->params = (struct buf)BUF_INIT;
	c->n = 0;
	while (*p && c->n < (int)sizeof(c->types) - 1) {
		const char *sp = strchr(p, ' ');
		size_t len = (size_t)(sp - p);

		(void)buf_printf(&c->names, "%s%.*s", c->n ? ", " : "", (int)len, p);
		(void)buf_printf(&c->params, "%s?%d", c->n ? ", " : "", c->n + 1);
		c->types[c->n++] = sp[1];
		p = sp + 2;
		while (*p == ' ')
			p++;
	}
	c->types[c->n] = '\0';
}

const char *store_copy_columns(size_t i, const char **table)
{
	if (i >= N_TABLES)
		return NULL;
	*table = tables[i].name;
	return tables[i].cols;
}

/* Rows in table (the caller holds db_mu of st); -1 after an error in errmsg. */
static int64_t count_rows(struct store *st, const char *table, struct buf *errmsg)
{
	struct buf sql = BUF_INIT;
	struct db_stmt *s = NULL;
	int64_t n = -1;

	(void)buf_printf(&sql, "SELECT count(*) FROM %s", table);
	if (store_sq(st, buf_str(&sql), "count", errmsg, &s, "") == ERR_OK) {
		if (db_step(s) == DB_ROW)
			n = db_col_int(s, 0);
		else
			store_db_fail(st, buf_str(&sql), errmsg);
	}
	db_finalize(s);
	buf_release(&sql);
	return n;
}

/* Copy the rows of table t from src to dst; *copied counts them. */
static enum err copy_table(struct store *src, struct store *dst, const struct copy_table *t,
			   int64_t *copied, struct buf *errmsg)
{
	struct cols c;
	struct buf sel = BUF_INIT, ins = BUF_INIT;
	struct db_stmt *r = NULL, *w = NULL;
	enum err rc;
	enum db_step step;

	parse_cols(t, &c);
	(void)buf_printf(&sel, "SELECT %s FROM %s", buf_str(&c.names), t->name);
	(void)buf_printf(&ins, "INSERT INTO %s (%s) VALUES (%s)", t->name, buf_str(&c.names),
			 buf_str(&c.params));
	rc = store_sq(src, buf_str(&sel), t->name, errmsg, &r, "");
	if (rc == ERR_OK && db_prepare(dst->db, buf_str(&ins), &w, errmsg) != ERR_OK)
		rc = ERR_DB;
	*copied = 0;
	while (rc == ERR_OK && (step = db_step(r)) == DB_ROW) {
		for (int i = 0; i < c.n; i++) {
			if (db_col_is_null(r, i))
				db_bind_null(w, i + 1);
			else if (c.types[i] == 'i')
				db_bind_int(w, i + 1, db_col_int(r, i));
			else
				db_bind_text(w, i + 1, db_col_text(r, i));
		}
		if (db_step(w) != DB_DONE)
			rc = store_db_fail(dst, buf_str(&ins), errmsg);
		db_reset(w);
		if (rc == ERR_OK)
			++*copied;
	}
	if (rc == ERR_OK && step != DB_DONE)
		rc = store_db_fail(src, buf_str(&sel), errmsg);
	db_finalize(r);
	db_finalize(w);
	/* PostgreSQL: the identity goes on after the copied ids, not from 1. */
	if (rc == ERR_OK && t->serial && db_engine(dst->db) == DB_POSTGRES) {
		buf_reset(&sel);
		(void)buf_printf(&sel, "SELECT setval(pg_get_serial_sequence('%s', 'id'), "
			      "coalesce(max(id), 0) + 1, false) FROM %s", t->name, t->name);
		rc = store_sq(dst, buf_str(&sel), "identity", errmsg, &r, "");
		if (rc == ERR_OK && db_step(r) != DB_ROW)
			rc = store_db_fail(dst, "identity", errmsg);
		db_finalize(r);
	}
	buf_release(&sel);
	buf_release(&ins);
	buf_release(&c.names);
	buf_release(&c.params);
	return rc;
}

enum err store_copy(struct store *src, struct store *dst, struct store_copy_counts *out,
		    struct buf *errmsg)
{
	enum err rc = ERR_OK;

	memset(out, 0, sizeof(*out));
	if (src == dst) {
		buf_setf(errmsg, "store copy: the source and the target are the same store");
		return ERR_INVALID;
	}
	pthread_mutex_lock(&src->db_mu);
	pthread_mutex_lock(&dst->db_mu);
	for (size_t i = 0; rc == ERR_OK && i < N_TABLES; i++) {
		int64_t n = count_rows(dst, tables[i].name, errmsg);
		if (n < 0) {
			rc = ERR_DB;
		} else if (n > 0) {
			buf_setf(errmsg, "store copy: the target %s already holds %" PRId64
				 " row(s) in table %s: copy only into a new, empty database",
				 db_name(dst->db), n, tables[i].name);
			rc = ERR_CONFLICT;
		}
	}
	if (rc == ERR_OK)
		rc = store_begin(src, errmsg);  /* one snapshot, and no writer meanwhile */
	if (rc == ERR_OK && (rc = store_begin(dst, errmsg)) != ERR_OK)
		store_rollback(src);
	for (size_t i = 0; rc == ERR_OK && i < N_TABLES; i++) {
		rc = copy_table(src, dst, &tables[i], &out->rows[i], errmsg);
		out->tables[i] = tables[i].name;
	}
	if (rc == ERR_OK)
		rc = store_commit(dst, errmsg);
	if (rc != ERR_OK) {
		store_rollback(dst);
		memset(out, 0, sizeof(*out));
	}
	store_rollback(src);  /* it only read */
	pthread_mutex_unlock(&dst->db_mu);
	pthread_mutex_unlock(&src->db_mu);
	return rc;
}

/* ---- the command ---- */

static const char usage_store[] =
	"usage: alertbridge store copy --from=SOURCE --to=TARGET\n"
	"                              [--from-password-file=FILE] [--to-password-file=FILE]\n"
	"\n"
	"Copies every row of the store SOURCE into TARGET, a new, empty store: the map of\n"
	"alerts to issues, the pending, dead-lettered and done events, the janitor's\n"
	"notices and digests, storm summaries, group states and repository scans.  Each\n"
	"is an sqlite file or a PostgreSQL URI (postgres://user@host:5432/db?sslmode=...);\n"
	"a password comes from the password file, else libpq's PGPASSWORD or PGPASSFILE.\n"
	"Stop the service first (a copy taken while it runs would miss what comes after):\n"
	"an sqlite file a service holds is refused.\n"
	"Exit status: 0 copied, 1 a store failed or TARGET is not empty, 2 usage.\n";

/* "--name=value" or "--name value" at argv[*i]: the value, else NULL. */
static const char *flag_value(const char *name, int *i, int argc, char **argv)
{
	size_t n = strlen(name);

	if (strncmp(argv[*i], name, n))
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

int store_copy_command(int argc, char **argv)
{
	const char *from = NULL, *to = NULL, *from_pw = NULL, *to_pw = NULL, *v;
	struct store *src = NULL, *dst = NULL;
	struct serve_lock *from_lock = NULL, *to_lock = NULL;  /* no service writes meanwhile */
	struct store_copy_counts counts;
	struct buf err = BUF_INIT;
	int rc = 1;

	if (argc < 1 || strcmp(argv[0], "copy")) {
		int help = argc >= 1 && (!strcmp(argv[0], "-h") || !strcmp(argv[0], "--help"));
		fputs(usage_store, help ? stdout : stderr);
		return help ? 0 : 2;
	}
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			fputs(usage_store, stdout);
			return 0;
		} else if ((v = flag_value("--from-password-file", &i, argc, argv))) {
			from_pw = v;
		} else if ((v = flag_value("--to-password-file", &i, argc, argv))) {
			to_pw = v;
		} else if ((v = flag_value("--from", &i, argc, argv))) {
			from = v;
		} else if ((v = flag_value("--to", &i, argc, argv))) {
			to = v;
		} else {
			fprintf(stderr, "alertbridge: store copy: unknown argument \"%s\"\n\n%s",
				argv[i], usage_store);
			return 2;
		}
	}
	if (!from || !to || !*from || !*to) {
		fprintf(stderr, "alertbridge: store copy needs --from and --to\n\n%s", usage_store);
		return 2;
	}
	if (!db_target_is_postgres(from) && access(from, F_OK)) {
		fprintf(stderr, "alertbridge: store copy: %s: no database here (%s)\n", from,
			strerror(errno));
		return 1;
	}
	if (serve_lock_take(from, &from_lock, NULL, &err) ||
	    serve_lock_take(to, &to_lock, NULL, &err) ||
	    store_open_target(from, from_pw, &src, &err) ||
	    store_open_target(to, to_pw, &dst, &err) ||
	    store_copy(src, dst, &counts, &err)) {
		fprintf(stderr, "alertbridge: store copy: %s\n", buf_str(&err));
		goto out;
	}
	printf("copied %s to %s:\n", from, db_name(dst->db));
	for (size_t i = 0; i < N_TABLES; i++)
		printf("  %-16s %" PRId64 "\n", counts.tables[i], counts.rows[i]);
	printf("  pending events: %" PRId64 " (bridge), %" PRId64 " (janitor); dead letters: %"
	       PRId64 "\n", store_pending_count(dst, "bridge"), store_pending_count(dst, "janitor"),
	       store_dead_count(dst));
	rc = 0;
out:
	store_close(dst);
	store_close(src);
	serve_lock_free(to_lock);
	serve_lock_free(from_lock);
	buf_release(&err);
	return rc;
}
