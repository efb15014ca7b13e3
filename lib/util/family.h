/* family.h: a family of processes that this process ends as one: the
 * process groups it started and the children of theirs it adopted (it is
 * their child subreaper). The one way hvdrun's supervisor, the SSH agent
 * and the node agent end what they started: SIGTERM once to each, then
 * SIGKILL once the grace period is over, again each grace period, until
 * nothing is left. */
#ifndef HL_FAMILY_H
#define HL_FAMILY_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "util/proc.h"

struct hl_family {
	struct hl_pids termed; /* sent SIGTERM already (a pid, or -group) */
	int grace_ms;
	long long kill_at; /* when SIGKILL is due; 0: the end has not begun */
};

/* Become the child subreaper of what this process starts, block mask's
 * signals (the old mask into *old, if not NULL) and take them on a
 * non-blocking descriptor: the signalfd, or -1 with errno. */
int hl_family_open(struct hl_family *f, int grace_ms, const sigset_t *mask,
		   sigset_t *old);
void hl_family_close(struct hl_family *f);

/* Signal process group pgid (a leader's pid), SIGTERM only once. */
void hl_family_signal_group(struct hl_family *f, pid_t pgid, int sig);
/* SIGUSR1 and SIGUSR2, forwarded as mpirun forwards them, go to a
 * worker's own process alone, for its handler (a checkpoint before the
 * allocation ends: Slurm's --signal): its children (DataLoader workers,
 * a shell's commands) have none and would die of it. Every other signal
 * goes to the worker's whole group. */
bool hl_signal_leader_only(int sig);
/* sig to worker pid (its group's leader): to it alone or to its group,
 * as hl_signal_leader_only says. kill's result. */
int hl_signal_worker(pid_t pid, int sig);
/* Signal every child of this process for which ours(arg, pid) is false
 * (NULL: every child): the adopted ones. SIGTERM reaches each once.
 * Returns how many it found, whatever sig (0 only asks). */
int hl_family_signal_children(struct hl_family *f, int sig,
			      bool (*ours)(void *arg, pid_t pid), void *arg);
/* The family's end: the signal due now. SIGTERM until the grace period
 * (which the first call starts) is over, then SIGKILL, and again each
 * grace period after; SIGTERM in between, which reaches each process
 * once (hl_family_signal_*): those adopted since get theirs. */
int hl_family_end_signal(struct hl_family *f, long long now);
/* End the groups pgids[0..n) and every adopted child, blocking until no
 * child is left (reaping them): first_sig first (SIGTERM, or SIGKILL for
 * no grace), then as hl_family_end_signal says. */
void hl_family_end(struct hl_family *f, const pid_t *pgids, size_t n,
		   int first_sig);

#endif
