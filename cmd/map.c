/*
 * cmd/map.c - `alertbridge map`: list and show the alert-to-issue map read-only;
 * forget, retry and rescan through core/map_admin.h (the running service's
 * POST /-/map/... when it holds the file).
 */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "core/buf.h"
#include "core/config.h"
#include "store/db.h"
#include "core/map_admin.h"
#include "core/rfc3339.h"
#include "store/store.h"
#include "store/store_events.h"
#include "store/store_map.h"
#include "store/store_silences.h"
#include "core/banned.h"

static const char usage_map[] =
	"usage: alertbridge map list [--receiver=NAME]\n"
	"       alertbridge map show KEY [--receiver=NAME]\n"
	"       alertbridge map forget KEY --receiver=NAME\n"
	"       alertbridge map retry KEY --receiver=NAME\n"
	"       alertbridge map rescan [--receiver=NAME]\n"
	"\n"
	"Reads the database named by --database.path, else the configuration's 'database'\n"
	"(--config.file, default alertbridge.yml), else ./alertbridge.db.\n"
	"list: one line per alert: receiver, key, repo#number, state, episode start;\n"
	"a dead letter without a row: receiver, key, -, (no issue), status, start, reason;\n"
	"a /silence Alertmanager refused: receiver, key, repo#number, silence, by LOGIN,\n"
	"received, reason.\n"
	"show: every field of the row.  forget: delete the row, so the next firing\n"
	"creates a new issue.  retry: re-queue the dead-lettered events of KEY (e.g. once\n"
	"the repository exists), its refused /silence commands too; a running service\n"
	"picks them up within a second.\n"
	"rescan: after restoring an older backup, read each repository's issues again\n"
	"(before its next event) and take in the issues the backup does not know.\n"
	"forget, retry and rescan are asked of the service when one holds the sqlite file\n"
	"(POST /-/map/..., with the config's webhook credentials), else done here.\n"
	"KEY is the alert fingerprint (or the group hash).\n";

/* "%.0lld" prints nothing for 0: a row without an issue reads "repo (no issue)". */
static int print_row_line(void *ctx, const struct store_issue *row)
{
	char when[32] = "-";
	(void)ctx;
	if (row->episode_starts_ms)
		rfc3339_format(row->episode_starts_ms, when);
	printf("%-20s %-16s %s%s%.0lld %s%s%s %s%s%s\n", row->receiver, row->key, row->repo,
	       row->number ? "#" : " (no issue)", (long long)row->number,
	       store_issue_state_str(row->state), row->state_reason ? "/" : "",
	       row->state_reason ? row->state_reason : "", when,
	       row->dead_reason ? " dead: " : "", row->dead_reason ? row->dead_reason : "");
	return 0;
}

/*
 * A dead letter with no map row (a create GitHub rejected, an alert invalid
 * at intake, a janitor alert), in print_row_line()'s columns: receiver, key,
 * "-" for the repository (no row says it), "(no issue)", the event's status
 * where a row's state is, its start, then the reason.
 */
static int print_dead_line(void *ctx, const struct store_event *ev)
{
	const char *receiver = ctx;
	char when[32] = "-";

	if (receiver && strcmp(receiver, ev->receiver))
		return 0;
	if (ev->starts_at_ms)
		rfc3339_format(ev->starts_at_ms, when);
	printf("%-20s %-16s - (no issue) %s %s dead: %s\n", ev->receiver, ev->key, ev->status,
	       when, ev->last_error ? ev->last_error : "-");
	return 0;
}

/*
 * A dead-lettered /silence (Alertmanager refused it; bridge/silence.h), in
 * print_row_line()'s columns: receiver, key, the issue it was asked on,
 * "silence" where a row's state is, who asked, when, then the reason.
 */
static int print_silence_line(void *ctx, const struct store_event *ev)
{
	json_t *cmd = json_loads(ev->payload ? ev->payload : "", 0, NULL);
	const char *repo = json_string_value(json_object_get(cmd, "repo"));
	const char *login = json_string_value(json_object_get(cmd, "login"));
	char when[32] = "-";

	(void)ctx;
	if (ev->received_at_ms)
		rfc3339_format(ev->received_at_ms, when);
	printf("%-20s %-16s %s#%lld silence by %s %s dead: %s\n", ev->receiver, ev->key,
	       repo ? repo : "-", (long long)json_integer_value(json_object_get(cmd, "number")),
	       login ? login : "-", when, ev->last_error ? ev->last_error : "-");
	json_decref(cmd);
	return 0;
}

static void print_row_full(const struct store_issue *row)
{
	char t[32];

	printf("receiver:          %s\nkey:               %s\nrepo:              %s\n",
	       row->receiver, row->key, row->repo);
	printf("issue:             %lld%s\n", (long long)row->number,
	       row->number ? "" : " (no issue on GitHub)");
	printf("state:             %s\nstate_reason:      %s\n", store_issue_state_str(row->state),
	       row->state_reason ? row->state_reason : "-");
	rfc3339_format(row->episode_starts_ms, t);
	printf("episode_starts_at: %s\n", row->episode_starts_ms ? t : "-");
	rfc3339_format(row->resolved_ends_ms, t);
	printf("resolved_ends_at:  %s\n", row->resolved_ends_ms ? t : "-");
	rfc3339_format(row->closed_at_ms, t);
	printf("closed_at:         %s\n", row->closed_at_ms ? t : "-");
	printf("previous_issue:    %lld\n", (long long)row->previous_number);
	rfc3339_format(row->created_at_ms, t);
	printf("created_at:        %s\n", t);
	rfc3339_format(row->updated_at_ms, t);
	printf("updated_at:        %s\n", t);
	printf("dead_letter:       %s\n", row->dead_reason ? row->dead_reason : "-");
}

struct find_key {
	const char *key;
	const char *receiver;
	struct store_issue *found;
	int matches;
};

static int match_key(void *ctx, const struct store_issue *row)
{
	struct find_key *fk = ctx;
	if (strcmp(row->key, fk->key))
		return 0;
	if (fk->matches++ == 0)
		print_row_full(row);
	else
		printf("\n"), print_row_full(row);
	return 0;
}

int cmd_map(const struct flags *f)
{
	struct buf err = BUF_INIT;
	struct config *cfg = NULL;
	struct store *st = NULL;
	const char *db = f->database_path;
	const char *sub = f->nargs ? f->args[0] : NULL;
	enum map_admin_op op;
	int rc = 1;

	if (f->help || !sub) {
		fputs(usage_map, f->help ? stdout : stderr);
		return f->help ? 0 : 2;
	}
	if (strcmp(sub, "list") && strcmp(sub, "rescan") && f->nargs < 2) {
		fputs(usage_map, stderr);
		return 2;
	}
	if (f->config_file || (!db && !access(DEFAULT_CONFIG, F_OK))) {  /* also credentials */
		cfg = load_config(f->config_file ? f->config_file : DEFAULT_CONFIG);
		if (!cfg)
			return 1;
	}
	if (!db)  /* else the default database, as serve would use it */
		db = cfg ? cfg->database : "alertbridge.db";
	if (map_admin_op_parse(sub, &op)) {  /* changes the map: where the file may be written */
		rc = map_admin_command(op, db, cfg, f->receiver, f->nargs > 1 ? f->args[1] : NULL);
		goto out;
	}
	if (!db_target_is_postgres(db) && access(db, F_OK)) {
		fprintf(stderr, "alertbridge: %s: no database here (%s)\n", db, strerror(errno));
		goto out;
	}
	/* Read-only: a newer CLI must not migrate a file an older serve is using. */
	if (store_open_read_only(db, cfg ? cfg->database_password_file : NULL, &st, &err)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
		goto out;
	}
	if (!strcmp(sub, "list")) {
		rc = store_issue_each(st, f->receiver, print_row_line, NULL) ||
		     store_dead_unmapped(st, "bridge", 1000, print_dead_line,
					 (void *)f->receiver) ||
		     store_dead_unmapped(st, "janitor", 1000, print_dead_line,
					 (void *)f->receiver) ||
		     store_silence_dead_each(st, f->receiver, NULL, 1000, print_silence_line,
					     NULL) ? 1 : 0;
	} else if (!strcmp(sub, "show")) {
		struct find_key fk = { f->args[1], f->receiver, NULL, 0 };
		if (store_issue_each(st, f->receiver, match_key, &fk))
			goto out;
		if (!fk.matches) {
			fprintf(stderr, "alertbridge: no map row with key \"%s\"\n", f->args[1]);
			goto out;
		}
		rc = 0;
	} else {
		fprintf(stderr, "alertbridge: map: unknown subcommand \"%s\"\n", sub);
		rc = 2;
	}
out:
	store_close(st);
	cfg_free(cfg);
	buf_release(&err);
	return rc;
}
