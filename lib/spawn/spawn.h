/* spawn.h: the ways of starting workers, as pdsh's rcmd modules: on this
 * machine with fork and exec (spawn/local.c), over SSH through an agent
 * on the host (ssh/spawn.c), or through srun steps inside a Slurm
 * allocation, an agent a node (slurm/spawn.c). The supervisor (launch.c) drives both through
 * the same operations. */
#ifndef HL_SPAWN_H
#define HL_SPAWN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "job/env.h"
#include "launch/output.h"

struct hl_launch;

struct hl_worker {
	int rank;	       /* its id: the index in the supervisor's array */
	size_t host;	       /* its host's index in the launch's host list */
	struct hl_place place; /* where it (last) started */
	bool remote;	       /* started by the SSH spawner */
	pid_t pid; /* local: the worker, leader of its process group */
	/* Its standard input at its next start (hvdrun's own, or a pipe
	 * from it: launch/input.c), then -1: /dev/null. The local spawner
	 * gives it to the worker; the remote ones take it and read it. */
	int in_fd;
	int fd[2]; /* a local one's stdout and stderr, -1 at end of file */
	struct hl_outstream out[2];
	bool exited;
	int status;   /* wait(2) status */
	bool removed; /* elastic: ended by hvdrun with its host */
	bool leaving; /* elastic: its host was dropped; it ends once the
			 others re-join without it at their next commit */
	bool fresh;   /* elastic: started again, not yet in a generation */
};

/* open gets ready to start the ranks the spawner owns (SSH: connect and
 * authenticate every host) among the supervisor's n workers w (the first
 * plan->size are the plan's ranks; an elastic job's others start later,
 * through restart), start starts them (the local spawner fills
 * each worker's output fds), signal reaches a worker and its children, close releases
 * everything. A local worker's output comes through its fds and its exit
 * as SIGCHLD; a remote one's both as notes on the notify fd (below). */
struct hl_spawner_ops {
	const char *name;
	int (*open)(void **ctx, const struct hl_launch *l, struct hl_worker *w,
		    int n, int notify_fd, char **cause);
	int (*start)(void *ctx, char **cause);
	/* Elastic: start the n workers w, all of one host, again (each has
	 * exited). The SSH and srun spawners connect in the background: a
	 * host they cannot reach reports each worker lost, as a host lost
	 * later would. */
	int (*restart)(void *ctx, struct hl_worker *const *w, int n,
		       char **cause);
	int (*signal)(void *ctx, struct hl_worker *w, int sig);
	void (*close)(void *ctx);
	/* Whether pid, one of hvdrun's children, is the spawner's own (an
	 * srun): the supervisor leaves it to the spawner, but for SIGKILL. */
	bool (*helper)(void *ctx, pid_t pid);
};

extern const struct hl_spawner_ops hl_spawn_local;
extern const struct hl_spawner_ops hl_spawn_ssh;
extern const struct hl_spawner_ops hl_spawn_srun;

/* What the spawners share with the supervisor (common.c). Tell the
 * launch's caller of event ev (launch.h's on_event); the environment of
 * worker w, started on another host at w->place: hvdrun's own but for
 * its host's and session's (hl_env_exported), then the job's (env.h),
 * over which the agent there lays its host's own. */
struct hl_event;
struct hl_strvec;
void hl_spawn_event(const struct hl_launch *l, const struct hl_event *ev);
int hl_spawn_remote_env(const struct hl_launch *l, const struct hl_worker *w,
			struct hl_strvec *env);

/* Whether host hi of the launch is started over SSH. */
bool hl_worker_remote(const struct hl_launch *l, size_t hi);
/* Where workers of this machine will start (local.c), before any does:
 * --wdir's folder must be one here, and the command is resolved as they
 * will look for it (the PATH they get, a relative path from that
 * folder); *path: malloc'ed, NULL where no worker starts here (a host
 * found later may: then it is tried quietly). */
int hl_local_command(const struct hl_launch *l, char **path, char **cause);
/* About how many descriptors hvdrun holds for one worker of host hi
 * (local.c): a local worker's two output pipes and its rendezvous
 * connection; a remote one's rendezvous connection and its share of the
 * host's sessions, or under srun its rendezvous connection alone (every
 * node's output comes through srun's one pipe); two more each for
 * --output-filename's files. Beside them hvdrun holds about HL_FDS_BASE
 * of its own. */
#define HL_FDS_BASE 32
int hl_worker_fds(const struct hl_launch *l, size_t hi);
/* The notes of the remote spawners (SSH and srun) to the supervisor, on
 * its notify fd (notes.c): a worker's output, in pieces, and its exit
 * (kind 'x' with its wait(2) status, 'l' its host lost, 's' its host
 * silent), each note one write(2) of at most
 * PIPE_BUF bytes. hl_note_next decodes the first note of p: its length
 * with *note (data points into p), 0 when p holds no whole note yet, or
 * HL_EPROTO. */
struct hl_note {
	int rank;
	char kind; /* 'o', 'e': output; 'x', 'l', 's': its end */
	int status;
	const char *data;
	size_t len;
};
void hl_note_write(int fd, int rank, int status, char kind);
void hl_note_output(int fd, int rank, int stream, const char *data, size_t n);
/* On rank's stderr: the hvdrun on host is older, and does not pass it
 * hvdrun's standard input (--stdin). */
void hl_note_no_input(int fd, int rank, const char *host);
int hl_note_next(const char *p, size_t len, struct hl_note *note);

#endif
