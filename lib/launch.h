/* launch.h: one job's launch: what to start where, the spawner interface
 * (local fork/exec now; SSH behind the same operations), and the
 * supervisor that multiplexes output and ends the whole job when one
 * worker fails. */
#ifndef HL_LAUNCH_H
#define HL_LAUNCH_H

#include <stdbool.h>
#include <sys/types.h>

#include "env.h"
#include "hosts.h"
#include "output.h"
#include "plan.h"

enum hl_host_key_policy {
	HL_HOSTKEY_YES,	       /* known hosts only */
	HL_HOSTKEY_ACCEPT_NEW, /* record unknown hosts, refuse changed keys */
	HL_HOSTKEY_NO,	       /* do not check */
};

/* How to reach remote hosts. Unset fields (0, NULL) leave the choice to
 * the SSH config files and libssh's defaults. */
struct hl_ssh_opts {
	const char *config_file; /* NULL: ~/.ssh/config */
	const char *identity;
	const char *user;
	int port;
	enum hl_host_key_policy host_key_checking;
	long connect_timeout_s;
	int start_timeout_s;
	int concurrency;	  /* sessions connecting at once */
	int channels_per_session; /* ranks per session (sshd MaxSessions) */
	bool force;		  /* SSH even to this machine */
	const char *agent_path;	  /* this hvdrun, at the same path there */
	const char *cwd;	  /* where remote workers start */
};

struct hl_launch {
	const struct hl_hostlist *hosts;
	const struct hl_plan *plan;
	char *const *argv;	/* the command and its arguments */
	char *exec_path;	/* argv[0] resolved for local starts */
	struct hl_envspec *env; /* MASTER_PORT may be set at start */
	const struct hl_ssh_opts *ssh;
	const char *output_dir; /* NULL: no per-rank files */
	bool timestamps;
	bool verbose;
	int grace_ms;  /* SIGTERM to SIGKILL */
	int report_fd; /* failures of the rendezvous, or -1 */
};

struct hl_worker {
	int rank;
	bool remote; /* started by the SSH spawner */
	pid_t pid;   /* local: the worker, leader of its process group */
	int fd[2];   /* its stdout and stderr, -1 once at end of file */
	struct hl_outstream out[2];
	bool exited;
	int status; /* wait(2) status */
};

/* A way of starting workers (pdsh's rcmd modules). open gets ready to
 * start the ranks the spawner owns (SSH: connect and authenticate every
 * host), start starts them and fills each worker's output fds, signal
 * reaches a worker and its children, close releases everything. A local
 * worker's exit arrives as SIGCHLD; a remote one's as a note on the
 * notify fd (hl_ssh_read_note). */
struct hl_spawner_ops {
	const char *name;
	int (*open)(void **ctx, const struct hl_launch *l, struct hl_worker *w,
		    int notify_fd, char **cause);
	int (*start)(void *ctx, char **cause);
	int (*signal)(void *ctx, struct hl_worker *w, int sig);
	void (*close)(void *ctx);
};

extern const struct hl_spawner_ops hl_spawn_local;
extern const struct hl_spawner_ops hl_spawn_ssh;

/* Whether host hi of the launch is started over SSH. */
bool hl_worker_remote(const struct hl_launch *l, size_t hi);
/* Read one exit note of the SSH spawner. */
int hl_ssh_read_note(int fd, int *rank, int *status, bool *lost);

/* Find cmd like execvp would, in path (a PATH value). HL_ENOENT when it is
 * not found, HL_ENOEXEC when it is found but cannot be executed. */
int hl_resolve_command(const char *cmd, const char *path, char **resolved,
		       char **cause);

/* Start every worker and supervise the job until it ends. *exit_code is
 * hvdrun's exit status: 0, the first failing worker's code, 128+N for a
 * signal N. Returns an error only if the job could not be started; then
 * nothing is left running. */
int hl_launch_run(const struct hl_launch *l, int *exit_code, char **cause);

#endif
