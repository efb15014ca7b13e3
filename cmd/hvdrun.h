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
	char **command; /* argv of the workers, NULL-terminated */
};

extern struct cmd_args cmd_args;

/* Parse argv into cmd_args. 0, or HL_EINVAL with *cause set. */
int cmd_parse_args(int argc, char **argv, char **cause);
void cmd_usage(void);

#endif
