/* options.c: the options every job command reads (command line, then
 * config file, then defaults), libssh's messages as hvdrun's, and the
 * mapping of lib/ results to the exit codes of hvdrun(1). */
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <stdio.h>
#include <stdlib.h>

#include "agent/records.h"
#include "config/config.h"
#include "hvdrun.h"
#include "proto/rendezvous.h"
#include "ssh/opts.h"

static int exit_for(int rc)
{
	switch (rc) {
	case HL_ENOENT:
		return EXIT_NOTFOUND;
	case HL_ENOEXEC:
		return EXIT_NOEXEC;
	case HL_EINVAL:
		return EXIT_USAGE;
	default:
		return EXIT_START;
	}
}

/* One line of hvdrun's on stderr, after head, with the bad text it
 * quotes as typed but for what a terminal would not show or would act
 * on: a control byte (an escape sequence, a tab, a carriage return) and
 * the invisible byte-order mark are written as \xHH. */
static void put_line(const char *head, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	fputs(head, stderr);
	for (; *p != '\0'; p++) {
		if (p[0] == 0xef && p[1] == 0xbb && p[2] == 0xbf) {
			fputs("\\xef\\xbb\\xbf", stderr);
			p += 2;
		} else if (*p < 0x20 || *p == 0x7f) {
			fprintf(stderr, "\\x%02x", *p);
		} else {
			fputc(*p, stderr);
		}
	}
	fputc('\n', stderr);
}

void cmd_warnings(const struct hl_strvec *w)
{
	size_t i;

	for (i = 0; i < w->n; i++)
		put_line("hvdrun: warning: ", w->v[i]);
}

int cmd_finish(int rc, char *cause, int code)
{
	if (rc != HL_OK) {
		put_line("hvdrun: ", cause ? cause : "out of memory");
		if (rc == HL_EINVAL)
			fprintf(stderr,
				"Try 'hvdrun --help' for more information.\n");
		code = exit_for(rc);
	}
	free(cause);
	hl_opts_close(&cmd_args.opts);
	return code;
}

/* libssh's messages, as hvdrun's own lines, up to the verbosity the
 * options ask for (hl_ssh_log_level): never on the terminal otherwise,
 * whatever an SSH config's LogLevel says. Set here for this thread, and
 * by each thread that connects (hl_ssh_opts.log). */
static int ssh_log_max;

void cmd_log_ssh(int priority, const char *function, const char *buffer,
		 void *userdata)
{
	(void)function;
	(void)userdata;
	if (priority <= ssh_log_max)
		fprintf(stderr, "hvdrun: ssh: %s\n", buffer);
}

static void ssh_logging(void)
{
	ssh_log_max = hl_ssh_log_level(&cmd_args.opts);
	ssh_set_log_callback(cmd_log_ssh);
	ssh_set_log_level(ssh_log_max);
}

/* horovodrun's: HOROVOD_START_TIMEOUT and (in an elastic job)
 * HOROVOD_ELASTIC_TIMEOUT in hvdrun's own environment, where neither the
 * command line nor the config file gave the option; and mpirun's
 * MPIEXEC_TIMEOUT, its --timeout. */
static int horovod_env(struct hl_opts *o, char **cause)
{
	static const struct {
		enum hl_key k;
		const char *var;
	} vars[] = {{HL_K_START_TIMEOUT, "HOROVOD_START_TIMEOUT"},
		    {HL_K_ELASTIC_TIMEOUT, "HOROVOD_ELASTIC_TIMEOUT"},
		    {HL_K_TIMEOUT, "MPIEXEC_TIMEOUT"}};
	size_t i;
	int rc = HL_OK;

	for (i = 0; rc == HL_OK && i < sizeof(vars) / sizeof(*vars); i++) {
		const char *v = getenv(vars[i].var);
		char where[64];

		if (v == NULL || *v == '\0' || o->v[vars[i].k].set ||
		    (vars[i].k == HL_K_ELASTIC_TIMEOUT &&
		     !o->v[HL_K_MIN_NP].set))
			continue;
		snprintf(where, sizeof(where),
			 "%s in the environment: ", vars[i].var);
		rc = hl_opts_set(o, vars[i].k, v, where, NULL, cause);
	}
	return rc;
}

bool cmd_options(int argc, char **argv, bool check, int *code)
{
	char *cause = NULL;
	int rc;

	cmd_args.check = check;
	rc = cmd_parse_args(argc, argv, &cause);
	if (rc == HL_OK &&
	    (cmd_args.help || cmd_args.version || cmd_args.check_build)) {
		if (cmd_args.help)
			cmd_usage();
		else if (cmd_args.check_build)
			cmd_check_build();
		else
			printf("hvdrun %s\nagent protocol %d, rendezvous "
			       "protocol %d\n",
			       HVD_VERSION, HL_AGENT_PROTO, RDV_VERSION);
		*code = cmd_finish(HL_OK, cause, 0);
		return false;
	}
	if (rc == HL_OK && cmd_args.config_file != NULL)
		rc = hl_config_load(cmd_args.config_file, &cmd_args.opts,
				    &cause);
	if (rc == HL_OK)
		rc = horovod_env(&cmd_args.opts, &cause);
	if (rc == HL_OK)
		rc = hl_opts_finish(&cmd_args.opts, &cause);
	if (rc != HL_OK) {
		*code = cmd_finish(rc, cause, 0);
		return false;
	}
	ssh_logging();
	return true;
}
