/* slurm/srun.h: what the srun spawner's files share: the spawner's state
 * (spawn.c) and its srun steps (step.c). Nothing else includes it. */
#ifndef HL_SRUN_H
#define HL_SRUN_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "launch/launch.h"
#include "spawn/sessions.h"
#include "spawn/spawn.h"
#include "util/util.h"

struct srun_rank {
	struct hl_worker *w;
	/* Its exit note was written, or it was started again by a later
	 * step: this one says nothing more of it. */
	atomic_bool done;
};

struct srun;

/* One srun step: the job's first (an agent a remote node of the plan) or,
 * in an elastic job, one host's workers started again. */
struct step {
	struct srun *s;
	pid_t pid;
	int pidfd;
	int in_fd, out_fd; /* srun's stdin (ours to write), its stdout */
	size_t *hosts;	   /* task -> host index, in our order until hellos */
	size_t ntasks;
	long *task_of; /* host index -> task, -1 when none */
	bool *hello;   /* by host index */
	int *proto;    /* by host index: its agent's protocol (records.h) */
	long *files;   /* by host index: its agent's limit on open files, 0
			* when not said */
	size_t nhello;
	struct srun_rank *r;
	size_t nr;
	struct hl_buf *part; /* by task: a line srun cut, so far */
	pthread_t thread;
	bool thread_started;
	bool eof;	      /* srun's output ended */
	atomic_bool finished; /* and the reader has said all it will */
	pthread_mutex_t send; /* one writer of srun's stdin at a time */
	/* hvdrun's standard input to one of the step's ranks (input.c):
	 * the rank or -1, hvdrun's descriptor (or a pipe from it); under
	 * s->lock, what may be sent ahead of its agent's 'c' answers, and
	 * whether to send no more. */
	int in_rank, in_src;
	size_t in_credit;
	bool in_quit;
	pthread_t in_thread;
	bool in_thread_started;
};

struct srun {
	const struct hl_launch *l;
	int notify_fd;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* Its steps (struct step): the first, then restarts; ended ones
	 * freed. */
	struct hl_sessions ss;
	size_t nport; /* 'p' answers: 1 once rank 0's host answered */
	int port;
	char addr[64];
	char *error; /* the first failure a reader found */
};

/* ---- step.c ---- */

struct srun_rank *hl_srun_rank_of(struct step *st, long rank);
/* Wait until *counter reaches want, a reader fails or the step's srun
 * ends, or the deadline passes: true when it was reached. */
bool hl_srun_wait_for(struct step *st, const size_t *counter, size_t want,
		      long long deadline_ms);
/* Why the first step's agents did not all answer: a reader's error, or
 * the nodes that never said hello. */
int hl_srun_start_error(struct step *st, const char *what, char **cause);
void hl_srun_step_free(struct step *st);
/* A step of an agent on each of the hosts `hosts` (nh, in the job's
 * order) for the nw workers w (all theirs), the last of s->ss:
 * srun started and its output read by a thread of the step's own. */
int hl_srun_step_start(struct srun *s, const size_t *hosts, size_t nh,
		       struct hl_worker *const *w, size_t nw, char **cause);

/* ---- input.c ---- */

/* Write b to srun's stdin, whole, and empty it (any thread). */
int hl_srun_send_buf(struct step *st, struct hl_buf *b);

/* Rank w of step st reads hvdrun's standard input when w->in_fd is set
 * (launch/input.c): the step takes it. */
void hl_srun_input_take(struct step *st, struct hl_worker *w);
/* Before the jobs are sent, after the hellos: a rank whose node's agent
 * is older (HL_AGENT_PROTO 1) reads no input, and its stderr says so. */
void hl_srun_input_check(struct step *st);
/* Start sending it, once the rank's job ('W' among it) is sent. */
int hl_srun_input_start(struct step *st, char **cause);
/* The agent's answer (under s->lock): 'c' with the bytes taken, or 'n';
 * the rank's end stops it too ('n'). */
void hl_srun_input_answer(struct step *st, char kind, size_t taken);
/* Stop sending, and release it (before the step's stdin closes). */
void hl_srun_input_stop(struct step *st);

#endif
