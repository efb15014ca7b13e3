/* args.c: hvdrun's command line and its --help. The long options and
 * their help are generated from the option table of lib/opts.c, so the
 * command line, --help and the config file cannot drift apart; only the
 * options that are not settings (-x, --help, ...) and the short names are
 * listed here. Single-dash long options (-np) work as in horovodrun;
 * option parsing stops at the command. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hvdrun.h"

struct cmd_args cmd_args;

enum {
	OPT_KEY_BASE = 1000, /* + enum hl_key */
	OPT_CONFIG = 2000,
	OPT_DRY_RUN,
	OPT_VERSION,
	OPT_NP,
	OPT_JSON,
};

static const struct option extra_options[] = {
	{"np", required_argument, NULL, OPT_NP},
	{"config-file", required_argument, NULL, OPT_CONFIG},
	{"dry-run", no_argument, NULL, OPT_DRY_RUN},
	{"version", no_argument, NULL, OPT_VERSION},
	{"json", no_argument, NULL, OPT_JSON},
	{"help", no_argument, NULL, 'h'},
};

#define NEXTRA (sizeof(extra_options) / sizeof(extra_options[0]))

/* Short names of settings, as horovodrun and mpirun spell them. */
static const struct {
	const char *name;
	enum hl_key key;
} short_names[] = {
	{"-np", HL_K_NP},
	{"-H", HL_K_HOSTS},
	{"-p", HL_K_SSH_PORT},
	{"-i", HL_K_SSH_IDENTITY},
};

/* The options that are not settings, with their --help lines, shown
 * under their section. */
static const struct {
	const char *section;
	const char *left;
	const char *help;
} extra_help[] = {
	{"job", "--config-file FILE", "read options from an INI file"},
	{"job", "--dry-run", "print the rank plan, start nothing"},
	{"job", "--json", "hvdrun check: the report as JSON"},
	{"job", "-h, --help  --version", NULL},
	{"env", "-x VAR[=VALUE]", "set or forward a variable (repeatable)"},
};

#define HELP_COL 31

static void help_line(const char *left, const char *help, const char *def)
{
	int n = printf("  %s", left);

	if (help == NULL) {
		putchar('\n');
		return;
	}
	if (n > HELP_COL - 1) {
		putchar('\n');
		n = 0;
	}
	printf("%*s%s", HELP_COL - n, "", help);
	if (def != NULL)
		printf(" (default %s)", def);
	putchar('\n');
}

static void key_help(enum hl_key k)
{
	const struct hl_keyinfo *ki = &hl_keys[k];
	char left[96], argbuf[64], defbuf[64];
	const char *arg = hl_key_arg(k, argbuf, sizeof(argbuf));
	const char *def = hl_key_default(k, defbuf, sizeof(defbuf));
	size_t i;
	int off = 0;

	for (i = 0; i < sizeof(short_names) / sizeof(*short_names); i++)
		if (short_names[i].key == k)
			off = snprintf(left, sizeof(left), "%s, ",
				       short_names[i].name);
	snprintf(left + off, sizeof(left) - (size_t)off, "--%s%s%s",
		 ki->longopt, *arg ? " " : "", arg);
	/* A flag's default is its opposite. */
	help_line(left, ki->help, ki->flag != NULL ? NULL : def);
}

void cmd_usage(void)
{
	size_t s, i, k;

	fputs("Usage: hvdrun [options] command [args...]\n"
	      "       hvdrun check [options] [--json]\n"
	      "Run command as a data-parallel job, one worker per slot; or check the\n"
	      "hosts: SSH, the interfaces that route between them, GPUs.\n"
	      "Inside a Slurm allocation, the hosts and -np default to its nodes and tasks.\n"
	      "Each group is a section of the config file (hvdrun.ini(5)).\n",
	      stdout);
	for (s = 0; hl_sections[s].name != NULL; s++) {
		printf("%s [%s]:\n", hl_sections[s].title, hl_sections[s].name);
		for (i = 0; i < sizeof(extra_help) / sizeof(*extra_help); i++)
			if (strcmp(extra_help[i].section,
				   hl_sections[s].name) == 0)
				help_line(extra_help[i].left,
					  extra_help[i].help, NULL);
		for (k = 0; k < HL_K_COUNT; k++)
			if (hl_keys[k].longopt != NULL &&
			    strcmp(hl_keys[k].section, hl_sections[s].name) ==
				    0)
				key_help((enum hl_key)k);
	}
	fputs("Exit status: the first failing worker's code (128+N for signal N),\n"
	      "2 for bad usage, 125 if the job could not start (a host down, a key\n"
	      "refused), 126/127 if the command cannot be executed / was not found;\n"
	      "hvdrun check: 1 if a host is not usable. See hvdrun(1).\n",
	      stdout);
}

static int set_key(enum hl_key k, const char *value, char **cause)
{
	struct hl_value *v = &cmd_args.opts.v[k];
	struct hl_opts one;
	char *joined;
	int rc;

	/* --network-interface may be repeated: the names add up. */
	if (hl_keys[k].type == HL_T_IFACES && cmd_args.from_cli[k]) {
		hl_opts_init(&one);
		rc = hl_opts_set(&one, k, value, "", NULL, cause);
		hl_opts_close(&one);
		if (rc != HL_OK)
			return rc;
		joined = hl_asprintf("%s,%s", v->s, value);
		if (joined == NULL)
			return hl_fail(cause, HL_ENOMEM, "out of memory");
		free(v->s);
		v->s = joined;
		return HL_OK;
	}
	cmd_args.from_cli[k] = true;
	return hl_opts_set(&cmd_args.opts, k, value, "", NULL, cause);
}

int cmd_parse_args(int argc, char **argv, char **cause)
{
	struct option longopts[HL_K_COUNT + NEXTRA + 1];
	size_t n = 0, k;
	int c, rc = HL_OK;

	memset(longopts, 0, sizeof(longopts));
	for (k = 0; k < HL_K_COUNT; k++) {
		if (hl_keys[k].longopt == NULL)
			continue;
		longopts[n].name = hl_keys[k].longopt;
		longopts[n].has_arg =
			hl_keys[k].flag ? no_argument : required_argument;
		longopts[n].val = OPT_KEY_BASE + (int)k;
		n++;
	}
	memcpy(&longopts[n], extra_options, sizeof(extra_options));
	hl_opts_init(&cmd_args.opts);
	opterr = 0;
	optind = 0; /* glibc: start afresh, whatever an earlier parse left */
	while (rc == HL_OK && (c = getopt_long_only(argc, argv, "+:H:x:hp:i:",
						    longopts, NULL)) != -1) {
		const char *bad = argv[optind - 1];

		switch (c) {
		case 'H':
			rc = set_key(HL_K_HOSTS, optarg, cause);
			break;
		case 'p':
			rc = set_key(HL_K_SSH_PORT, optarg, cause);
			break;
		case 'i':
			rc = set_key(HL_K_SSH_IDENTITY, optarg, cause);
			break;
		case OPT_NP:
			rc = set_key(HL_K_NP, optarg, cause);
			break;
		case 'x':
			rc = hl_opts_add_env(&cmd_args.opts, optarg, "", cause);
			break;
		case 'h':
			cmd_args.help = true;
			break;
		case OPT_CONFIG:
			cmd_args.config_file = optarg;
			break;
		case OPT_DRY_RUN:
			cmd_args.dry_run = true;
			break;
		case OPT_VERSION:
			cmd_args.version = true;
			break;
		case OPT_JSON:
			if (!cmd_args.check)
				rc = hl_fail(
					cause, HL_EINVAL,
					"--json is an option of 'hvdrun check'");
			cmd_args.json = true;
			break;
		case ':':
			rc = hl_fail(cause, HL_EINVAL,
				     "option '%s' needs a value", bad);
			break;
		case '?':
			if (optopt != 0 && optopt < OPT_KEY_BASE)
				rc = hl_fail(cause, HL_EINVAL,
					     "unknown option '-%c'", optopt);
			else
				rc = hl_fail(cause, HL_EINVAL,
					     "unknown option '%s'", bad);
			break;
		default:
			k = (size_t)(c - OPT_KEY_BASE);
			if (k >= HL_K_COUNT) {
				rc = hl_fail(cause, HL_EINVAL,
					     "unknown option '%s'", bad);
				break;
			}
			if (hl_keys[k].type == HL_T_RANGE &&
			    strpbrk(optarg, " ,\t") == NULL &&
			    argv[optind] != NULL) {
				/* Two words: --blacklist-cooldown-range 10 100 */
				char *both = hl_asprintf("%s %s", optarg,
							 argv[optind++]);

				if (both == NULL)
					rc = hl_fail(cause, HL_ENOMEM,
						     "out of memory");
				else
					rc = set_key((enum hl_key)k, both,
						     cause);
				free(both);
				break;
			}
			rc = set_key((enum hl_key)k,
				     hl_keys[k].flag ? hl_keys[k].flag : optarg,
				     cause);
			break;
		}
	}
	if (rc == HL_OK && cmd_args.from_cli[HL_K_HOSTS] &&
	    cmd_args.from_cli[HL_K_HOSTFILE])
		rc = hl_fail(cause, HL_EINVAL,
			     "give -H or --hostfile, not both");
	cmd_args.command = &argv[optind];
	if (rc == HL_OK && cmd_args.check && argv[optind] != NULL)
		rc = hl_fail(cause, HL_EINVAL,
			     "'hvdrun check' runs no command: '%s'",
			     argv[optind]);
	return rc;
}
