/* spawn.h: the ways of starting workers, as pdsh's rcmd modules: on this
 * machine with fork and exec (spawn_local.c), over SSH through an agent
 * on the host (spawn_ssh.c), or through one srun step inside a Slurm
 * allocation, an agent a node (spawn_srun.c). The supervisor (launch.c) drives both through
 * the same operations. */
#ifndef HL_SPAWN_H
#define HL_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "output.h"

struct hl_launch;

struct hl_worker {
	int rank;
	bool remote; /* started by the SSH spawner */
	pid_t pid;   /* local: the worker, leader of its process group */
	int fd[2];   /* its stdout and stderr, -1 once at end of file */
	struct hl_outstream out[2];
	bool exited;
	int status; /* wait(2) status */
};

/* open gets ready to start the ranks the spawner owns (SSH: connect and
 * authenticate every host), start starts them and fills each worker's
 * output fds, signal reaches a worker and its children, close releases
 * everything. A local worker's exit arrives as SIGCHLD; a remote one's as
 * a note on the notify fd (hl_ssh_read_note). */
struct hl_spawner_ops {
	const char *name;
	int (*open)(void **ctx, const struct hl_launch *l, struct hl_worker *w,
		    int notify_fd, char **cause);
	int (*start)(void *ctx, char **cause);
	int (*signal)(void *ctx, struct hl_worker *w, int sig);
	void (*close)(void *ctx);
	/* A process of the spawner's own among hvdrun's children (srun), or
	 * 0: the supervisor leaves it to the spawner, but for SIGKILL. */
	pid_t (*helper)(void *ctx);
};

extern const struct hl_spawner_ops hl_spawn_local;
extern const struct hl_spawner_ops hl_spawn_ssh;
extern const struct hl_spawner_ops hl_spawn_srun;

/* Whether host hi of the launch is started over SSH. */
bool hl_worker_remote(const struct hl_launch *l, size_t hi);
/* One exit note of a remote worker (SSH or srun spawner) on the notify
 * fd: its rank, wait(2) status, and whether its host was lost instead.
 * Written in one write(2) shorter than PIPE_BUF. Read one: 0, or
 * HL_EAGAIN when none is waiting. */
void hl_note_write(int fd, int rank, int status, bool lost);
int hl_ssh_read_note(int fd, int *rank, int *status, bool *lost);

#endif
