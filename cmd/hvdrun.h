/* hvdrun.h: what the files of cmd/ share: the parsed command line and the
 * exit codes hvdrun documents (man hvdrun(1), EXIT STATUS). */
#ifndef HVDRUN_H
#define HVDRUN_H

#include <stdbool.h>

#include "opts.h"

enum {
	EXIT_USAGE = 2,	     /* bad options, host list, hostfile or config */
	EXIT_START = 125,    /* the job could not be started */
	EXIT_NOEXEC = 126,   /* the command cannot be executed */
	EXIT_NOTFOUND = 127, /* the command was not found */
};

/* The options struct of cmd/: the one mutable global of hvdrun. */
struct cmd_args {
	struct hl_opts opts;
	bool from_cli[HL_K_COUNT];
	const char *config_file;
	bool dry_run;
	bool help;
	bool version;
	bool check;	/* `hvdrun check`: the preflight, no command */
	bool json;	/* its report as JSON */
	char **command; /* argv of the workers, NULL-terminated */
};

extern struct cmd_args cmd_args;

/* Parse argv into cmd_args. 0, or HL_EINVAL with *cause set. */
int cmd_parse_args(int argc, char **argv, char **cause);
void cmd_usage(void);

struct hl_hostlist;
struct hl_ssh_opts;
/* The host list: -H or --hostfile, else the config file's, else
 * localhost with -np slots. */
int cmd_load_hosts(struct hl_hostlist *hosts, char **cause);
/* The SSH side of the options; the agent is this very binary. Free
 * so->config_file after use. */
int cmd_ssh_opts(struct hl_ssh_opts *so, char **cause);
/* `hvdrun check`: sets *code (0: every host usable, 1: not). */
int cmd_check(int *code, char **cause);
/* Print a check's report for people (stdout) or as JSON. */
struct hl_netcheck;
void cmd_check_print(const struct hl_netcheck *nc, bool json);

#endif
