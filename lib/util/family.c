/* family.c: see family.h. */
#include "util/family.h"

#include <poll.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>

#include "util/util.h"

int hl_family_open(struct hl_family *f, int grace_ms, const sigset_t *mask,
		   sigset_t *old)
{
	*f = (struct hl_family){.grace_ms = grace_ms};
	if (sigprocmask(SIG_BLOCK, mask, old) != 0)
		return -1;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	return signalfd(-1, mask, SFD_NONBLOCK | SFD_CLOEXEC);
}

void hl_family_close(struct hl_family *f)
{
	free(f->termed.v);
	f->termed = (struct hl_pids){0};
}

void hl_family_signal_group(struct hl_family *f, pid_t pgid, int sig)
{
	if (pgid > 0 && (sig != SIGTERM || hl_pids_add(&f->termed, -pgid)))
		kill(-pgid, sig);
}

bool hl_signal_leader_only(int sig)
{
	return sig == SIGUSR1 || sig == SIGUSR2;
}

int hl_signal_worker(pid_t pid, int sig)
{
	return kill(hl_signal_leader_only(sig) ? pid : -pid, sig);
}

int hl_family_signal_children(struct hl_family *f, int sig,
			      bool (*ours)(void *arg, pid_t pid), void *arg)
{
	pid_t *kids;
	size_t n, k;
	int found = 0;

	if (hl_children(&kids, &n) != HL_OK)
		return 0;
	for (k = 0; k < n; k++) {
		if (ours != NULL && ours(arg, kids[k]))
			continue;
		found++;
		if (sig != 0 &&
		    (sig != SIGTERM || hl_pids_add(&f->termed, kids[k])))
			kill(kids[k], sig);
	}
	free(kids);
	return found;
}

int hl_family_end_signal(struct hl_family *f, long long now)
{
	if (f->kill_at == 0) {
		f->kill_at = now + f->grace_ms;
		return SIGTERM;
	}
	if (now < f->kill_at)
		return SIGTERM; /* reaches each once: only those adopted since */
	f->kill_at = now + f->grace_ms;
	return SIGKILL;
}

void hl_family_end(struct hl_family *f, const pid_t *pgids, size_t n,
		   int first_sig)
{
	int sig = hl_family_end_signal(f, hl_now_ms()), status;
	size_t i;

	if (first_sig == SIGKILL)
		sig = SIGKILL;
	for (;;) {
		for (i = 0; i < n; i++)
			hl_family_signal_group(f, pgids[i], sig);
		hl_family_signal_children(f, sig, NULL, NULL);
		while (waitpid(-1, &status, WNOHANG) > 0)
			;
		if (hl_family_signal_children(f, 0, NULL, NULL) == 0)
			break;
		poll(NULL, 0, 20);
		sig = hl_family_end_signal(f, hl_now_ms());
	}
}
