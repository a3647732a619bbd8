/*
 * cmd/flags.c - the one flag parser of the alertbridge binary, and the two
 * steps most commands take first: load the configuration, set up logging.
 * cmd/cmd.h documents the flags.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd.h"
#include "core/buf.h"
#include "core/config.h"
#include "store/db.h"
#include "core/duration.h"
#include "core/log.h"
#include "core/banned.h"

static int parse_flag(const char *arg, const char *name, const char **val, int *i, int argc,
		      char **argv)
{
	size_t n = strlen(name);

	if (strncmp(arg, name, n))
		return 0;
	if (arg[n] == '=') {
		*val = arg + n + 1;
		return 1;
	}
	if (arg[n] == '\0' && *i + 1 < argc) {
		*val = argv[++*i];
		return 1;
	}
	return 0;
}

/* --test.second-ms=N: 1..1000 (cmd.h). */
static int parse_test_second(const char *v, int64_t *second_ms)
{
	char *end;
	long n = strtol(v, &end, 10);

	if (*v == '\0' || *end || n < 1 || n > 1000) {
		fprintf(stderr, "alertbridge: --test.second-ms: want 1 to 1000, not \"%s\"\n", v);
		return 2;
	}
	*second_ms = n;
	return 0;
}

/* A postgres:// --database.path is checked before any command runs. */
static int check_database_path(const struct flags *f)
{
	struct buf why = BUF_INIT;
	int rc = 0;

	if (f->database_path && db_target_is_postgres(f->database_path) &&
	    cfg_database_uri_check(f->database_path, &why)) {
		fprintf(stderr, "alertbridge: --database.path: %s\n", buf_str(&why));
		rc = 2;
	}
	buf_release(&why);
	return rc;
}

int parse_flags(int argc, char **argv, int first, struct flags *f)
{
	f->alert_index = -1;
	for (int i = first; i < argc; i++) {
		const char *a = argv[i];
		const char *v = NULL;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			f->help = 1;
		} else if (parse_flag(a, "--config.file", &f->config_file, &i, argc, argv) ||
			   parse_flag(a, "--web.listen-address", &f->listen_address, &i, argc, argv) ||
			   parse_flag(a, "--web.public-listen-address", &f->public_listen_address, &i,
				      argc, argv) ||
			   parse_flag(a, "--database.path", &f->database_path, &i, argc, argv) ||
			   parse_flag(a, "--log.level", &f->log_level, &i, argc, argv) ||
			   parse_flag(a, "--log.format", &f->log_format, &i, argc, argv) ||
			   parse_flag(a, "--template", &f->template_file, &i, argc, argv) ||
			   parse_flag(a, "--payload", &f->payload_file, &i, argc, argv) ||
			   parse_flag(a, "--receiver", &f->receiver, &i, argc, argv) ||
			   parse_flag(a, "--as", &f->render_as, &i, argc, argv)) {
			continue;
		} else if (parse_flag(a, "--alert", &v, &i, argc, argv)) {
			char *end;
			long n = strtol(v, &end, 10);
			if (*v == '\0' || *end || n < 0 || n > 100000) {
				fprintf(stderr, "alertbridge: --alert: not an alert index: \"%s\"\n", v);
				return 2;
			}
			f->alert_index = (int)n;
		} else if (parse_flag(a, "--config.auto-reload-interval", &v, &i, argc, argv)) {
			if (duration_parse(v, &f->auto_reload_ms, NULL) || f->auto_reload_ms < 1) {
				fprintf(stderr, "alertbridge: --config.auto-reload-interval: not a "
					"positive duration: \"%s\"\n", v);
				return 2;
			}
		} else if (parse_flag(a, "--test.second-ms", &v, &i, argc, argv)) {
			if (parse_test_second(v, &f->test_second_ms))
				return 2;
		} else if (!strcmp(a, "--web.enable-lifecycle")) {
			f->enable_lifecycle = 1;
		} else if (!strcmp(a, "--html")) {
			f->render_as = "body";
		} else if (!strcmp(a, "--once")) {
			f->once = 1;
		} else if (!strcmp(a, "--dry-run")) {
			f->dry_run = 1;
		} else if (!strcmp(a, "--reference")) {
			f->reference = 1;
		} else if (a[0] == '-' && a[1] != '\0') {
			fprintf(stderr, "alertbridge: unknown flag \"%s\" (see --help)\n", a);
			return 2;
		} else if (f->nargs < (int)(sizeof(f->args) / sizeof(f->args[0]))) {
			f->args[f->nargs++] = a;
		} else {
			fprintf(stderr, "alertbridge: unexpected argument \"%s\"\n", a);
			return 2;
		}
	}
	return check_database_path(f);
}

int setup_logging(const struct config *cfg, const struct flags *f)
{
	enum log_level level = cfg ? cfg->log.level : LOG_INFO;
	enum log_format format = cfg ? cfg->log.format : LOG_LOGFMT;

	if (f->log_level && log_level_parse(f->log_level, &level)) {
		fprintf(stderr, "alertbridge: --log.level: expected debug, info, warn or error, got \"%s\"\n",
			f->log_level);
		return 2;
	}
	if (f->log_format && log_format_parse(f->log_format, &format)) {
		fprintf(stderr, "alertbridge: --log.format: expected logfmt or json, got \"%s\"\n",
			f->log_format);
		return 2;
	}
	log_setup(level, format);
	return 0;
}

struct config *load_config(const char *path)
{
	struct buf err = BUF_INIT;
	struct config *cfg = NULL;

	if (cfg_load(path, &cfg, &err)) {
		fprintf(stderr, "alertbridge: %s\n", buf_str(&err));
		cfg = NULL;
	}
	buf_release(&err);
	return cfg;
}
