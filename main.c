/*
 * main.c - alertbridge: Alertmanager webhooks to GitHub issues, and a janitor
 * for idle Kubernetes pods.  This file is the table of contents: the usage, the
 * command table and the dispatch.  Each command is one file under cmd/
 * (cmd/cmd.h); the mechanisms they drive live in core/, store/, bridge/,
 * janitor/, web/.
 */
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "store/store_copy.h"
#include "core/banned.h"

static const char usage_main[] =
	"usage: alertbridge [COMMAND] [FLAGS]\n"
	"\n"
	"Receives Alertmanager webhooks and keeps one GitHub issue per alert; with the\n"
	"janitor enabled, marks idle pods, tells their owners on Slack and cleans them up.\n"
	"\n"
	"Commands:\n"
	"  serve                      run the service (the default)\n"
	"  check-config FILE          validate a configuration file and its templates\n"
	"  render --template=F --payload=P\n"
	"                             render a template over an Alertmanager payload\n"
	"  map list|show KEY|forget KEY|retry KEY\n"
	"                             inspect or edit the alert-to-issue map\n"
	"  store copy --from=SOURCE --to=TARGET\n"
	"                             copy a store into a new one (sqlite to PostgreSQL)\n"
	"  janitor sweep --once [--dry-run]\n"
	"                             run one janitor sweep now and print its plan\n"
	"  version, --version         print the version, revision, build date, compiler and\n"
	"                             the linked libraries' versions\n"
	"  healthcheck                GET /-/healthy of the running service (--web.listen-address,\n"
	"                             else the config's listen_address); exit 0 when it answers 200\n"
	"\n"
	"Flags:\n"
	"  --config.file=FILE         configuration file (default alertbridge.yml)\n"
	"  --web.listen-address=ADDR  overrides listen_address, e.g. :9095 or 127.0.0.1:9095\n"
	"  --web.public-listen-address=ADDR\n"
	"                             overrides web.public_listen_address: GitHub's and Slack's\n"
	"                             endpoints alone on a listener of their own\n"
	"  --database.path=FILE       overrides database\n"
	"  --log.level=LEVEL          debug, info, warn, error (overrides log.level)\n"
	"  --log.format=FORMAT        logfmt or json (overrides log.format)\n"
	"  --config.auto-reload-interval=DURATION\n"
	"                             reload when the config or a file it names changes\n"
	"  --web.enable-lifecycle     serve POST /-/reload\n"
	"  -h, --help                 help for alertbridge or a command\n"
	"\n"
	"Environment: GITHUB_TOKEN is the GitHub token when github.token_file is not set.\n"
	"Run 'alertbridge COMMAND --help' for a command's details.\n";

static int cmd_help(const struct flags *f)
{
	(void)f;
	fputs(usage_main, stdout);
	return 0;
}

/*
 * The commands, git's git.c style: a command reads the shared flags (cmd/flags.c),
 * or, with run_args, parses its own: those after the command's name.
 */
static const struct command {
	const char *name;
	int (*run)(const struct flags *f);
	int (*run_args)(int argc, char **argv);
} commands[] = {
	{ "serve", cmd_serve, NULL },
	{ "check-config", cmd_check_config, NULL },
	{ "render", cmd_render, NULL },
	{ "map", cmd_map, NULL },
	{ "store", NULL, store_copy_command },  /* store/store_copy.c */
	{ "janitor", cmd_janitor, NULL },
	{ "healthcheck", cmd_healthcheck, NULL },
	{ "version", cmd_version, NULL },
	{ "help", cmd_help, NULL },
};

static const struct command *find_command(const char *name)
{
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(commands[i].name, name))
			return &commands[i];
	return NULL;
}

int main(int argc, char **argv)
{
	struct flags f;
	const struct command *c;
	const char *name = "serve";  /* the default: no command, or only flags */
	int first = 1;
	int rc;

	memset(&f, 0, sizeof(f));
	if (argc > 1 && argv[1][0] != '-') {
		name = argv[1];
		first = 2;
	} else if (argc > 1 && !strcmp(argv[1], "--version")) {
		name = "version";
		first = 2;
	}
	c = find_command(name);
	if (c && c->run_args)
		return c->run_args(argc - first, argv + first);
	rc = parse_flags(argc, argv, first, &f);
	if (rc)
		return rc;
	if (first == 1 && f.help)  /* alertbridge --help: every command */
		return cmd_help(&f);
	if (!c) {
		fprintf(stderr, "alertbridge: unknown command \"%s\"\n\n%s", name, usage_main);
		return 2;
	}
	return c->run(&f);
}
