/* hvdrun.h: what the files of cmd/ share: the commands of the table in
 * main.c, the parsed command line, and the exit codes hvdrun documents
 * (man hvdrun(1), EXIT STATUS). Only cmd/ prints; lib/ returns. */
#ifndef HVDRUN_H
#define HVDRUN_H

#include <stdbool.h>

#include "config/opts.h"

enum {
	EXIT_USAGE = 2,	     /* bad options, host list, hostfile or config */
	EXIT_START = 125,    /* the job could not be started */
	EXIT_NOEXEC = 126,   /* the command cannot be executed */
	EXIT_NOTFOUND = 127, /* the command was not found */
};

/* foreign.c: what hvdrun takes instead of mpirun's or torchrun's option
 * name (without its dashes and "=value"; *launcher: whose it is), or NULL
 * where it is none of theirs that hvdrun knows. */
const char *cmd_foreign_option(const char *name, const char **launcher);

/* The options struct of cmd/: the one mutable global of hvdrun. */
struct cmd_args {
	struct hl_opts opts;
	bool from_cli[HL_K_COUNT];
	const char *config_file;
	bool dry_run;
	bool help;
	bool version;
	bool check_build; /* -cb: what this build has, horovodrun's way */
	bool check;	  /* `hvdrun check`: the preflight, no command */
	bool json;	  /* its report as JSON */
	char **command;	  /* argv of the workers, NULL-terminated */
};

extern struct cmd_args cmd_args;

/* The commands (main.c's table). Each gets argv from its own name on and
 * returns hvdrun's exit status. */
int cmd_run_main(int argc, char **argv);	/* run.c: the job */
int cmd_check_main(int argc, char **argv);	/* check.c: the preflight */
int cmd_agent_main(int argc, char **argv);	/* agent.c: --agent */
int cmd_node_agent_main(int argc, char **argv); /* agent.c: --node-agent */
int cmd_free_port_main(int argc, char **argv);	/* free_port.c */
int cmd_probe_main(int argc, char **argv);	/* probe.c: --probe */

struct hl_hostlist;
/* run.c: the job of command on hosts as `hvdrun` runs one, its workers'
 * environment with env's NAME=VALUE entries added (check --nccl's job). */
int cmd_run_job(struct hl_hostlist *hosts, char **command,
		const struct hl_strvec *env, int *code, char **cause);

/* ---- options.c ---- */

/* Parse the command line, then the config file, then the defaults into
 * cmd_args; print --help or --version. True: go on; false: hvdrun exits
 * with *code. */
bool cmd_options(int argc, char **argv, bool check, int *code);
/* The end of a command: frees the options, and on an error prints cause
 * and returns the exit code that stands for rc. */
int cmd_finish(int rc, char *cause, int code);
/* (agent.c) A host's own error, on a host hvdrun started a hidden mode on:
 * "hvdrun: on HOST: cause"; the channel carries it back. */
void cmd_remote_error(const char *cause);
/* libssh's log callback (hl_ssh_opts.log): its messages as hvdrun's own
 * lines, at the verbosity the options ask for. */
void cmd_log_ssh(int priority, const char *function, const char *buffer,
		 void *userdata);
/* Print a lib/ warning list. */
struct hl_strvec;
void cmd_warnings(const struct hl_strvec *w);

/* Parse argv into cmd_args. 0, or HL_EINVAL with *cause set. */
int cmd_parse_args(int argc, char **argv, char **cause);
void cmd_usage(void);
/* -cb, --check-build: what this build has, in horovodrun's format
 * (build.c). */
void cmd_check_build(void);

#endif
