/* args.c: hvdrun's command line. The long options are generated from the
 * option table of lib/opts.c, so the command line and the config file
 * cannot drift apart; only the options that are not settings (-x, --help,
 * ...) are listed here. Single-dash long options (-np) work as in
 * horovodrun; option parsing stops at the command. */
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
	optind = 1;
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
