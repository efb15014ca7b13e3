/* agent.h: the remote end of an SSH start. hvdrun runs itself on each
 * remote host as `hvdrun --agent` (one per rank, over one exec channel),
 * and sends the working directory, environment and command on the
 * channel's stdin (records.h). The agent starts the worker in a process
 * group of its own, forwards signals, and when the channel closes (hvdrun
 * gone, connection lost) ends the worker and its children. It exits with
 * the worker's status, or dies of the worker's signal. */
#ifndef HL_AGENT_H
#define HL_AGENT_H

#include <sys/types.h>

/* Run the agent on stdin/stdout/stderr; returns the exit status. When
 * the agent itself fails (a bad start request, the folder, the command),
 * *cause says why in one line. */
int hl_agent_run(char **cause);

/* A worker's start from its records, before the fork (the SSH agent's
 * and the node agent's one way): into its folder cwd (NULL: stay), and
 * its command argv[0] found on env's PATH as execvp would (*path,
 * malloc'ed). 0, or the exit status that stands for the failure (125:
 * the folder or an empty command; 127: not found; 126: not executable)
 * with *cause saying why. */
struct hl_strvec;
int hl_agent_prepare(const char *cwd, const struct hl_strvec *argv,
		     const struct hl_strvec *env, char **path, char **cause);

/* Fork and exec a worker in a process group of its own: stdin from in
 * (-1: /dev/null), stdout and stderr to out and err (-1: inherited), signals
 * unblocked, the limit on open files as before hl_nofile_raise, bound to
 * its CPUs (bind.h). An exec failure comes back as its errno:
 * *exec_errno, 0 when the worker runs. -1, errno set, when its pipe or
 * the fork fails. */
pid_t hl_agent_exec(const char *path, char **argv, char **env, int in, int out,
		    int err, int *exec_errno);

/* The line (malloc'ed, with its newline) that says a worker (who: "rank 1
 * on node1") was stopped by sig (a debugger's, SIGSTOP): every other rank
 * waits for it. hvdrun says it of local workers, an agent of its own, in
 * the rank's stderr ("on node2: this rank"): hl_agent_stopped_text. */
char *hl_stopped_text(const char *who, int sig);
char *hl_agent_stopped_text(int sig);

/* `hvdrun --node-agent`, one a node in hvdrun's srun step (agent/node.c,
 * records.h): every rank of its node, their output as lines on stdout.
 * Returns the exit status (0, or 125 when hvdrun's request was
 * malformed or SLURM_PROCID is missing: *cause says why). */
int hl_node_agent_run(char **cause);

#endif
