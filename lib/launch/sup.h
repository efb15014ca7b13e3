/* launch/sup.h: the supervisor's state (struct sup), shared by its loop
 * (launch.c), its hands (sup.c) and an elastic job's policy
 * (elastic/supervise.c, through the hooks of launch.h). Nothing else
 * includes it. */
#ifndef HL_SUP_H
#define HL_SUP_H

#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>

#include "launch/launch.h"
#include "util/family.h"
#include "util/proc.h"
#include "launch/watchdog.h"
#include "spawn/spawn.h"

enum phase {
	PH_RUNNING,	/* all is well */
	PH_TERMINATING, /* SIGTERM sent; SIGKILL at the deadline */
	PH_KILLED,	/* SIGKILL sent; give up waiting at the deadline */
};

/* hvdrun's standard input on its way to the worker that reads it
 * (input.c): through a pipe where it is a terminal, which hvdrun reads
 * while it is in the foreground; else that worker has the descriptor
 * itself, and nothing is here (from and to -1). */
struct sup_input {
	int rank;     /* the worker, or -1 */
	int from, to; /* hvdrun's standard input, the pipe's end, or -1 */
	char buf[4096];
	size_t len, off;	   /* read, not yet written: buf[off, len) */
	bool tty;		   /* a terminal: SIGTTIN ignored meanwhile */
	struct sigaction old_ttin; /* its disposition before */
};

struct sup {
	const struct hl_launch *l;
	const struct hl_spawner_ops *ops[2]; /* local, ssh */
	void *ctx[2];
	int notify[2]; /* remote workers' notes (notes.c) */
	char *notes;   /* what was read of them, a partial note last */
	size_t nnotes;
	struct hl_worker *w;
	int n;
	int sfd;
	enum phase phase;
	long long deadline;
	struct hl_watchdog wd;
	struct hl_family fam; /* what hvdrun started, ended as one */
	int exit_code;
	bool failed; /* a worker failed: exit_code is its code */
	/* A job that is not elastic: a worker that exited with a code, told
	 * only at fail_at (ms), unless a worker killed by a signal or lost
	 * comes first (launch.c: the cause, not its peers' reaction). */
	struct hl_worker *held;
	int held_status;
	long long fail_at;
	int signal; /* a signal hvdrun received, 0 if none */
	/* A worker has ended its work (exit 0): the job is finishing. */
	bool finishing;
	/* What the job's hooks keep (l->hooks: an elastic job's, whose
	 * state is elastic/supervise.c's own), else NULL. */
	struct hl_elastic *el;
	struct sup_input in;
};

/* ---- sup.c ---- */

/* Signal every direct child that is not a live worker: a worker's
 * children that were re-parented to us. SIGTERM reaches each one once.
 * Returns how many were found. */
int hl_sup_signal_orphans(struct sup *s, int sig);
void hl_sup_signal_all(struct sup *s, int sig);
void hl_sup_terminate(struct sup *s, int sig);
/* sig (hl_signal_leader_only's) to every worker that runs, as mpirun
 * forwards SIGUSR1 and SIGUSR2; the job goes on. */
void hl_sup_forward(struct sup *s, int sig);
void hl_sup_kill_now(struct sup *s);
void hl_sup_describe_status(int status, char *buf, size_t len);
/* The job's --timeout (l->deadline_ms), looked at now: past it, while
 * the job runs and has not failed, the job is ended (HL_EV_TIMEOUT, exit
 * status HL_TIMEOUT_EXIT). Before it, *timeout (the loop's poll, ms, -1:
 * none) is bounded by it. */
void hl_sup_deadline(struct sup *s, long long now, int *timeout);

/* ---- input.c ---- */

/* Give hvdrun's standard input to the worker l->stdin_rank (w->in_fd):
 * its descriptor, or where it is a terminal a pipe that the loop fills.
 * Before the workers start. */
int hl_sup_input_open(struct sup *s, char **cause);
/* The loop's descriptor for it (into pf: returns 0 or 1), and how long
 * the loop may sleep before it looks again (*timeout, ms, -1: no bound):
 * hvdrun in the background of its terminal reads nothing, and looks
 * again while it waits. */
int hl_sup_input_fds(struct sup *s, struct pollfd *pf, int *timeout);
void hl_sup_input_polled(struct sup *s, const struct pollfd *pf);
void hl_sup_input_close(struct sup *s);

/* ---- streams.c ---- */

void hl_sup_close_stream(struct hl_worker *w, int j);
/* Read what is there; close the stream at end of file. */
void hl_sup_drain(struct hl_worker *w, int j);
bool hl_sup_any_stream_open(const struct sup *s);
/* hvdrun's own stdout or stderr cannot be written (hvdrun | head, a
 * full disk): the job's output is being lost, so the job ends, as a
 * program writing to a closed pipe ends by SIGPIPE (exit 128+SIGPIPE). */
void hl_sup_output_lost(struct sup *s);
void hl_sup_workers_close(struct hl_worker *w, int n);

#endif
