/*
 * cmd/cmd.h - the commands of the alertbridge binary, one file each under cmd/,
 * and the flag parser they share.  main.c's table maps a command's name to its
 * entry point here; the mechanisms the commands drive live in core/, bridge/,
 * janitor/ and web/ (git's builtin.h and builtin/).
 */
#ifndef AB_CMD_H
#define AB_CMD_H

#include <stdint.h>

struct config;

/* The configuration file read when --config.file is not given. */
#define DEFAULT_CONFIG "alertbridge.yml"

/*
 * Flags shared by the commands, Prometheus style (--name=value or --name value).
 * Every command accepts every flag; each reads those it documents.  The strings
 * point into argv: they live as long as the process.
 */
struct flags {
	const char *config_file;
	const char *listen_address;
	const char *public_listen_address;  /* serve: --web.public-listen-address */
	const char *database_path;
	const char *log_level;
	const char *log_format;
	const char *template_file;
	const char *payload_file;
	const char *receiver;
	int alert_index;   /* render: -1 = every alert */
	const char *render_as; /* render: --as=title|body|comment (--html: body) */
	int once;          /* janitor sweep: --once */
	int dry_run;       /* janitor sweep: --dry-run */
	int64_t auto_reload_ms;  /* serve: --config.auto-reload-interval, 0: off */
	int enable_lifecycle;    /* serve: --web.enable-lifecycle (POST /-/reload) */
	/*
	 * serve: --test.second-ms=N (1..1000), 0: off.  A test hook, left out of
	 * --help on purpose: one second of the bridge's own pacing and backoff lasts
	 * N ms (cmd/serve.c test_second()).  Never in production: GitHub asks for
	 * mutating calls at least 1 s apart.
	 */
	int64_t test_second_ms;
	int help;
	const char *args[4];  /* positional arguments after the command */
	int nargs;
	int reference;     /* check-config: --reference */
};

/*
 * Parses argv[first..argc) into *f (zeroed by the caller): flags anywhere,
 * positional arguments in order.  A postgres:// --database.path is checked here
 * (cfg_database_uri_check()).  Returns 0, or 2 after printing the usage error on
 * stderr (an unknown flag, a bad value, too many arguments).
 */
int parse_flags(int argc, char **argv, int first, struct flags *f);

/*
 * Sets the process's log level and format: --log.level/--log.format over the
 * config's log.level/log.format (cfg may be NULL: info, logfmt).  Returns 0, or
 * 2 after printing a bad flag value on stderr.
 */
int setup_logging(const struct config *cfg, const struct flags *f);

/*
 * Loads the configuration file at path (cfg_load()).  Returns it (the caller
 * frees it with cfg_free()), or NULL after printing the error on stderr.
 */
struct config *load_config(const char *path);

/*
 * The commands.  Each prints its usage on stdout for --help and returns 0; a
 * usage error prints the usage on stderr and returns 2.  Other return values
 * are the process's exit status, documented in each command's usage text.
 */

/* serve (the default): the service, until SIGTERM or SIGINT; 1 when it cannot start. */
int cmd_serve(const struct flags *f);

/* check-config FILE: 0 valid (prints SUCCESS and the effective config), 1 invalid. */
int cmd_check_config(const struct flags *f);

/* render --template=F --payload=P: prints what the bridge would send; 1 on bad input. */
int cmd_render(const struct flags *f);

/* map list|show|forget|retry|rescan: the alert-to-issue map; 1 on a store error. */
int cmd_map(const struct flags *f);

/* janitor sweep --once [--dry-run]: one sweep now; 1 when a pod or the cluster failed. */
int cmd_janitor(const struct flags *f);

/* healthcheck: GET /-/healthy of the running service (core/healthcheck.h); 0 healthy. */
int cmd_healthcheck(const struct flags *f);

/* version, --version: the build's identity and the linked libraries' versions; 0. */
int cmd_version(const struct flags *f);

#endif
