/* ssh/opts.h: how hvdrun reaches the hosts that are not this machine,
 * derived from the job's options (opts.h) in one place for every SSH user
 * (the job's spawner, the network check, mpirun's rsh agent). */
#ifndef HL_SSH_OPTS_H
#define HL_SSH_OPTS_H

#include <stdbool.h>

#include "config/opts.h"

enum hl_host_key_policy {
	HL_HOSTKEY_YES,	       /* known hosts only */
	HL_HOSTKEY_ACCEPT_NEW, /* record unknown hosts, refuse changed keys */
	HL_HOSTKEY_NO,	       /* do not check */
};

/* --launcher (opts_table.c's order). */
enum hl_launcher { HL_LAUNCH_AUTO, HL_LAUNCH_SSH, HL_LAUNCH_SRUN };

/* Unset fields (0, NULL) leave the choice to the SSH config files and
 * libssh's defaults. */
struct hl_ssh_opts {
	char *config_file; /* NULL: ~/.ssh/config */
	const char *identity;
	const char *user;
	int port;
	enum hl_host_key_policy host_key_checking;
	long connect_timeout_s; /* at most start_timeout_s */
	int start_timeout_s;
	int concurrency;	   /* sessions connecting at once */
	int channels_per_session;  /* ranks per session (sshd MaxSessions) */
	bool force;		   /* SSH even to this machine */
	enum hl_launcher launcher; /* as asked */
	bool srun; /* the hosts' workers through one srun step, not SSH */
	char *agent_path; /* this hvdrun, at the same path there */
	char *cwd;	  /* where remote workers start */
	bool wdir;	  /* cwd is --wdir's (absolute), not hvdrun's own */
	/* libssh's verbosity (SSH_LOG_NONE .. SSH_LOG_TRACE): from
	 * --verbose and --log-level, whatever the SSH config's LogLevel
	 * says (hl_ssh_log_level). */
	int log_level;
	/* Where libssh's messages go (cmd/ prints them as hvdrun's own
	 * lines); libssh keeps its callback and level per thread, so each
	 * thread that connects sets them. NULL: libssh's own. */
	void (*log)(int priority, const char *function, const char *buffer,
		    void *userdata);
};

/* libssh's verbosity for these options: none, but info with --verbose,
 * debug with --log-level debug, trace with trace. */
int hl_ssh_log_level(const struct hl_opts *o);

/* Fill so from the finished options o (which must outlive it): "~/" in
 * the config file's path is $HOME, the agent is this very binary, remote
 * workers start in this folder. HL_ESYS when hvdrun cannot find its own
 * path or folder. */
int hl_ssh_opts_from(struct hl_ssh_opts *so, const struct hl_opts *o,
		     char **cause);
void hl_ssh_opts_close(struct hl_ssh_opts *so);

/* Settle so->srun for a job on these hosts (slurm: they are the Slurm
 * allocation's): auto takes srun for the allocation's hosts when srun is
 * on the PATH; srun needs an allocation (SLURM_JOB_ID) and srun.
 * HL_EINVAL or HL_ENOENT with *cause naming what is missing. */
int hl_ssh_opts_launcher(struct hl_ssh_opts *so, bool slurm, char **cause);

#endif
