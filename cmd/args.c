/* args.c: hvdrun's command line and its --help. The long options and
 * their help are generated from the option table of lib/config/opts.c, so the
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
	OPT_KEY_BASE = 1000,   /* + enum hl_key */
	OPT_ALIAS_BASE = 3000, /* + index in horovodrun_flags */
	OPT_CONFIG = 2000,
	OPT_DRY_RUN,
	OPT_VERSION,
	OPT_NP,
	OPT_JSON,
	OPT_CHECK_BUILD,
};

static const struct option extra_options[] = {
	{"np", required_argument, NULL, OPT_NP},
	/* mpirun's spellings */
	{"n", required_argument, NULL, OPT_NP},
	{"host", required_argument, NULL, OPT_KEY_BASE + HL_K_HOSTS},
	{"machinefile", required_argument, NULL, OPT_KEY_BASE + HL_K_HOSTFILE},
	{"config-file", required_argument, NULL, OPT_CONFIG},
	{"dry-run", no_argument, NULL, OPT_DRY_RUN},
	{"version", no_argument, NULL, OPT_VERSION},
	{"v", no_argument, NULL, OPT_VERSION},
	{"json", no_argument, NULL, OPT_JSON},
	{"check-build", no_argument, NULL, OPT_CHECK_BUILD},
	{"cb", no_argument, NULL, OPT_CHECK_BUILD},
	{"help", no_argument, NULL, 'h'},
};

/* horovodrun's flags that are not hvdrun's own spellings: another name
 * for a setting (AL_SET: this value; AL_ARG: the option's), a flag whose
 * meaning is already hvdrun's behaviour (AL_NOTHING), or one hvdrun
 * refuses (AL_REFUSE), each with its reason. --help lists them all. */
enum alias_kind { AL_SET, AL_ARG, AL_NOTHING, AL_REFUSE };

static const struct {
	const char *name;
	enum alias_kind kind;
	bool has_arg;
	enum hl_key key;
	const char *value;
	const char *why; /* --help's words; AL_REFUSE: the error's, and
			    --help says "refused" */
} horovodrun_flags[] = {
	{"network-interfaces", AL_ARG, true, HL_K_NETWORK_INTERFACES, NULL,
	 "--network-interface"},
	{"prefix-timestamp", AL_SET, false, HL_K_PREFIX_TIMESTAMP, "true",
	 "--prefix-output-with-timestamp"},
	{"gloo", AL_SET, false, HL_K_MPI, "false",
	 "hvdrun's own engine (the default; not --mpi)"},
	{"no-hierarchical-allreduce", AL_SET, false,
	 HL_K_HIERARCHICAL_ALLREDUCE, "false", "the flat GPU allreduce"},
	{"no-hierarchical-allgather", AL_SET, false,
	 HL_K_HIERARCHICAL_ALLGATHER, "false",
	 "the CPU allgather across hosts in one flat ring"},
	{"no-timeline-mark-cycles", AL_SET, false, HL_K_TIMELINE_MARK_CYCLES,
	 "false", "no cycle marks in the timeline (the default)"},
	{"stall-check", AL_SET, false, HL_K_STALL_CHECK, "true",
	 "the stall check on (the default)"},
	{"log-without-timestamp", AL_SET, false, HL_K_LOG_TIMESTAMP, "false",
	 "libhvd's log lines without the time (the default)"},
	{"log-hide-timestamp", AL_SET, false, HL_K_LOG_TIMESTAMP, "false",
	 "--log-without-timestamp"},
	{"no-log-hide-timestamp", AL_SET, false, HL_K_LOG_TIMESTAMP, "true",
	 "--log-with-timestamp"},
	{"disable-cache", AL_NOTHING, false, HL_K_COUNT, NULL,
	 "nothing: hvdrun caches no start checks"},
	{"no-autotune", AL_SET, false, HL_K_AUTOTUNE, "false",
	 "no autotuning (the default)"},
	{"no-mpi-threads-disable", AL_SET, false, HL_K_MPI_THREADS_DISABLE,
	 "false", "MPI keeps its threads (the default)"},
	{"min-num-proc", AL_ARG, true, HL_K_MIN_NP, NULL, "--min-np"},
	{"max-num-proc", AL_ARG, true, HL_K_MAX_NP, NULL, "--max-np"},
	{"jsrun", AL_REFUSE, false, HL_K_COUNT, NULL,
	 "hvdrun does not start jobs through LSF's jsrun; inside an LSF job "
	 "leave it out (the job's hosts are taken, workers start over SSH), "
	 "or give the hosts with -H or --hostfile (or run mpirun with "
	 "--mpi)"},
};

#define NALIAS (sizeof(horovodrun_flags) / sizeof(horovodrun_flags[0]))

#define NEXTRA (sizeof(extra_options) / sizeof(extra_options[0]))

/* Short names of settings, as horovodrun and mpirun spell them. */
static const struct {
	const char *name;
	enum hl_key key;
} short_names[] = {
	{"-np, -n", HL_K_NP},
	{"-H, --host", HL_K_HOSTS},
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
	      "hosts: SSH, the interfaces that route between them, GPUs, each link's speed.\n"
	      "Inside a Slurm, PBS, Grid Engine or LSF job, the hosts and -np default to its.\n"
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
	fputs("horovodrun's other flags:\n"
	      "  -cb, --check-build           what this build has, horovodrun's format\n"
	      "  -v                           --version\n",
	      stdout);
	for (i = 0; i < NALIAS; i++) {
		char left[64];

		snprintf(left, sizeof(left), "--%s%s", horovodrun_flags[i].name,
			 horovodrun_flags[i].has_arg ? " ARG" : "");
		help_line(left,
			  horovodrun_flags[i].kind == AL_REFUSE
				  ? "refused, saying why (hvdrun(1))"
				  : horovodrun_flags[i].why,
			  NULL);
	}
	fputs("Exit status: the first failing worker's code (128+N: signal N), 2: bad usage,\n"
	      "124: past --timeout, 125: the job could not start (a host down, a key refused),\n"
	      "126/127: the command cannot be executed / was not found; hvdrun check: 1 if a\n"
	      "host is not usable or lacks the workers' folder, a link failed (or is slow,\n"
	      "with --fail-on-slow) or a host's NCCL did not join (--nccl). See hvdrun(1).\n",
	      stdout);
}

/* The option that first set each key on the command line, as typed, less
 * any "=value" ("--hosts=a" set it: "--hosts"). */
static char set_by[HL_K_COUNT][64];

static int set_key(enum hl_key k, const char *value, const char *name,
		   char **cause)
{
	struct hl_value *v = &cmd_args.opts.v[k];
	struct hl_opts one;
	char *joined;
	bool b;
	int rc;

	/* Two flags that say opposite things (--mpi --gloo): an error, not
	 * the first one silently. */
	if (hl_keys[k].type == HL_T_BOOL && cmd_args.from_cli[k] &&
	    hl_parse_bool(value, &b) && b != v->b)
		return hl_fail(cause, HL_EINVAL, "'%s' contradicts '%s'", name,
			       set_by[k]);
	if (!cmd_args.from_cli[k])
		snprintf(set_by[k], sizeof(set_by[k]), "%.*s",
			 (int)strcspn(name, "="), name);

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
	if (v->set) /* the first one given wins */
		return hl_opts_set(&cmd_args.opts, k, value, "", NULL, cause);
	rc = hl_opts_set(&cmd_args.opts, k, value, "", NULL, cause);
	if (rc == HL_OK &&
	    hl_opts_said_as(&cmd_args.opts, k, set_by[k],
			    hl_keys[k].type == HL_T_BOOL ? NULL : value) !=
		    HL_OK)
		rc = hl_fail(cause, HL_ENOMEM, "out of memory");
	return rc;
}

/* An option that is none of longopts ("--fusion-treshold-mb=4"): named,
 * as another launcher's (foreign.c), or with the nearest real one where
 * it looks like a typo of it (longopts NULL: a letter, none). */
static int unknown_option(const char *bad, const struct option *longopts,
			  char **cause)
{
	char word[80];
	struct hl_suggest s;
	const char *launcher = NULL, *instead;
	size_t i;

	snprintf(word, sizeof(word), "%s", bad + strspn(bad, "-"));
	word[strcspn(word, "=")] = '\0';
	instead = cmd_foreign_option(word, &launcher);
	if (instead != NULL)
		return hl_fail(cause, HL_EINVAL, "%s is %s's option: %s", bad,
			       launcher, instead);
	hl_suggest_init(&s, word);
	for (i = 0; longopts != NULL && longopts[i].name != NULL; i++)
		hl_suggest_try(&s, longopts[i].name);
	if (s.best != NULL)
		return hl_fail(cause, HL_EINVAL,
			       "unknown option '%s' (did you mean '--%s'?)",
			       bad, s.best);
	return hl_fail(cause, HL_EINVAL, "unknown option '%s'", bad);
}

/* Whether a word typed as an option's value is itself one of hvdrun's
 * options ("--output-filename -np 4 ./train": the value left out), as
 * getopt would take it alone: "-np", "--verbose", "-H", "--hosts=a", or
 * the start of a long one ("--verb"). */
static bool is_option(const char *w, const struct option *longopts)
{
	char name[80];
	size_t i, n;

	if (w[0] != '-' || w[1] == '\0')
		return false;
	if (w[2] == '\0' && strchr("Hxhpi", w[1]) != NULL)
		return true;
	snprintf(name, sizeof(name), "%s", w + (w[1] == '-' ? 2 : 1));
	name[strcspn(name, "=")] = '\0';
	n = strlen(name);
	for (i = 0; n > 0 && longopts[i].name != NULL; i++)
		if (strncmp(longopts[i].name, name, n) == 0)
			return true;
	return false;
}

/* One of horovodrun_flags, given as typed (arg: its value). */
static int horovodrun_flag(size_t i, const char *arg, const char *typed,
			   char **cause)
{
	switch (horovodrun_flags[i].kind) {
	case AL_SET:
		return set_key(horovodrun_flags[i].key,
			       horovodrun_flags[i].value, typed, cause);
	case AL_ARG:
		return set_key(horovodrun_flags[i].key, arg, typed, cause);
	case AL_NOTHING:
		return HL_OK;
	case AL_REFUSE:
	default:
		return hl_fail(cause, HL_EINVAL, "--%s: %s",
			       horovodrun_flags[i].name,
			       horovodrun_flags[i].why);
	}
}

int cmd_parse_args(int argc, char **argv, char **cause)
{
	struct option longopts[HL_K_COUNT + NEXTRA + NALIAS + 1];
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
	for (k = 0; k < NALIAS; k++, n++) {
		longopts[n].name = horovodrun_flags[k].name;
		longopts[n].has_arg = horovodrun_flags[k].has_arg
					      ? required_argument
					      : no_argument;
		longopts[n].val = OPT_ALIAS_BASE + (int)k;
	}
	memcpy(&longopts[n], extra_options, sizeof(extra_options));
	memset(set_by, 0, sizeof(set_by));
	hl_opts_init(&cmd_args.opts);
	opterr = 0;
	optind = 0; /* glibc: start afresh, whatever an earlier parse left */
	while (rc == HL_OK && (c = getopt_long_only(argc, argv, "+:H:x:hp:i:",
						    longopts, NULL)) != -1) {
		/* The option as typed: of "--opt VALUE", the word before. */
		const char *bad = optarg != NULL && optind >= 2 &&
						  optarg == argv[optind - 1]
					  ? argv[optind - 2]
					  : argv[optind - 1];

		/* A value given as the next word that is one of hvdrun's
		 * options: the value was left out. Not mpirun's own words
		 * (--mpi-args "-x", --binding-args "--bind-to"). */
		if (optarg != NULL && optarg == argv[optind - 1] &&
		    c != OPT_KEY_BASE + HL_K_MPI_ARGS &&
		    c != OPT_KEY_BASE + HL_K_BINDING_ARGS &&
		    is_option(optarg, longopts)) {
			rc = hl_fail(cause, HL_EINVAL,
				     "option '%s' needs a value, not the "
				     "option '%s'",
				     bad, optarg);
			break;
		}
		switch (c) {
		case 'H':
			rc = set_key(HL_K_HOSTS, optarg, "-H", cause);
			break;
		case 'p':
			rc = set_key(HL_K_SSH_PORT, optarg, "-p", cause);
			break;
		case 'i':
			rc = set_key(HL_K_SSH_IDENTITY, optarg, "-i", cause);
			break;
		case OPT_NP:
			rc = set_key(HL_K_NP, optarg, bad, cause); /* -n too */
			break;
		case OPT_CHECK_BUILD:
			cmd_args.check_build = true;
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
			if (optopt != 0 && optopt < OPT_KEY_BASE) {
				char letter[3] = {'-', (char)optopt, '\0'};

				rc = unknown_option(letter, NULL, cause);
			} else
				rc = unknown_option(bad, longopts, cause);
			break;
		default:
			if (c >= OPT_ALIAS_BASE &&
			    c < OPT_ALIAS_BASE + (int)NALIAS) {
				rc = horovodrun_flag(
					(size_t)(c - OPT_ALIAS_BASE), optarg,
					bad, cause);
				break;
			}
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
					rc = set_key((enum hl_key)k, both, bad,
						     cause);
				free(both);
				break;
			}
			rc = set_key((enum hl_key)k,
				     hl_keys[k].flag ? hl_keys[k].flag : optarg,
				     bad, cause);
			break;
		}
	}
	if (rc == HL_OK && cmd_args.from_cli[HL_K_HOSTS] &&
	    cmd_args.from_cli[HL_K_HOSTFILE])
		rc = hl_fail(cause, HL_EINVAL, "give %s or %s, not both",
			     set_by[HL_K_HOSTS], set_by[HL_K_HOSTFILE]);
	/* The check's own settings mean nothing to a job. */
	for (k = 0; rc == HL_OK && k < HL_K_COUNT; k++)
		if (!cmd_args.check && cmd_args.from_cli[k] &&
		    (k == HL_K_CHECK_BANDWIDTH || k == HL_K_BANDWIDTH_TIME ||
		     k == HL_K_BANDWIDTH_SIZE || k == HL_K_FAIL_ON_SLOW ||
		     k == HL_K_CHECK_NCCL || k == HL_K_NCCL_TIMEOUT))
			rc = hl_fail(cause, HL_EINVAL,
				     "%s is an option of 'hvdrun check'",
				     set_by[k]);
	cmd_args.command = &argv[optind];
	if (rc == HL_OK && cmd_args.check && argv[optind] != NULL)
		rc = hl_fail(cause, HL_EINVAL,
			     "'hvdrun check' runs no command: '%s'",
			     argv[optind]);
	return rc;
}
