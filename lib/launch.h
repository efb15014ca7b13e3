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

struct hl_launch {
	const struct hl_hostlist *hosts;
	const struct hl_plan *plan;
	char *const *argv; /* the command and its arguments */
	char *exec_path;   /* argv[0] resolved for local starts */
	const struct hl_envspec *env;
	const char *output_dir; /* NULL: no per-rank files */
	bool timestamps;
	bool verbose;
	int grace_ms; /* SIGTERM to SIGKILL */
};

struct hl_worker {
	int rank;
	pid_t pid; /* local: the worker, leader of its process group */
	int fd[2]; /* its stdout and stderr, -1 once at end of file */
	struct hl_outstream out[2];
	bool exited;
	int status; /* wait(2) status */
};

/* A way of starting workers (pdsh's rcmd modules): start fills the
 * worker's pid and output fds; signal reaches the worker and its
 * children. */
struct hl_spawner_ops {
	const char *name;
	int (*start)(const struct hl_launch *l, struct hl_worker *w,
		     char **cause);
	int (*signal)(struct hl_worker *w, int sig);
};

extern const struct hl_spawner_ops hl_spawn_local;

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
