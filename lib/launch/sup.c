/* launch/sup.c: the supervisor's hands (sup.h): signalling the job's
 * workers and the orphans of its workers, the TERM then KILL of its end,
 * and how a worker's end is said. Used by launch.c's loop and by an
 * elastic job's policy (elastic/supervise.c). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "util/family.h"
#include "util/proc.h"
#include "launch/sup.h"

/* Signal every direct child that is not a live worker: a worker's
 * children that were re-parented to us. SIGTERM reaches each one once.
 * Returns how many were found. */
/* The children of hvdrun that are no orphans of a worker: the watchdog,
 * the hooks' own (the discovery script), a live local worker, and a
 * spawner's own process (srun), which its spawner ends, but for a
 * SIGKILL. */
struct orphan_ctx {
	const struct sup *s;
	int sig;
};

static bool not_orphan(void *arg, pid_t pid)
{
	const struct orphan_ctx *c = arg;
	const struct sup *s = c->s;
	int i;

	if (pid == s->wd.pid ||
	    (s->l->hooks != NULL && s->l->hooks->child(s, pid)) ||
	    (c->sig != SIGKILL && s->ctx[1] != NULL &&
	     s->ops[1]->helper != NULL && s->ops[1]->helper(s->ctx[1], pid)))
		return true;
	for (i = 0; i < s->n; i++)
		if (!s->w[i].remote && s->w[i].pid == pid && !s->w[i].exited)
			return true;
	return false;
}

int hl_sup_signal_orphans(struct sup *s, int sig)
{
	struct orphan_ctx c = {s, sig};

	return hl_family_signal_children(&s->fam, sig, not_orphan, &c);
}

void hl_sup_signal_all(struct sup *s, int sig)
{
	int i;

	for (i = 0; i < s->n; i++) {
		struct hl_worker *w = &s->w[i];

		/* A local group may outlive its leader; a remote worker
		 * that has exited has taken its group along. */
		if (s->ctx[w->remote] != NULL && (!w->remote || !w->exited))
			s->ops[w->remote]->signal(s->ctx[w->remote], w, sig);
	}
	hl_sup_signal_orphans(s, sig);
}

void hl_sup_terminate(struct sup *s, int sig)
{
	if (s->phase != PH_RUNNING)
		return;
	hl_sup_signal_all(s, sig);
	/* A stopped worker (SIGSTOP, a debugger's) acts on it only once
	 * continued; left stopped, it would wait out the grace period. */
	hl_sup_signal_all(s, SIGCONT);
	s->phase = PH_TERMINATING;
	s->deadline = hl_now_ms() + s->l->grace_ms;
}

void hl_sup_forward(struct sup *s, int sig)
{
	struct hl_event ev = {HL_EV_SIGNAL, -1, NULL, NULL, sig};
	int i;

	hl_spawn_event(s->l, &ev);
	for (i = 0; i < s->n; i++) {
		struct hl_worker *w = &s->w[i];

		if (!w->exited && s->ctx[w->remote] != NULL)
			s->ops[w->remote]->signal(s->ctx[w->remote], w, sig);
	}
}

void hl_sup_kill_now(struct sup *s)
{
	hl_sup_signal_all(s, SIGKILL);
	s->phase = PH_KILLED;
	s->deadline = hl_now_ms() + 2000;
}

void hl_sup_describe_status(int status, char *buf, size_t len)
{
	if (WIFSIGNALED(status))
		snprintf(buf, len, "was killed by signal %d (%s)",
			 WTERMSIG(status), strsignal(WTERMSIG(status)));
	else
		snprintf(buf, len, "exited with code %d", WEXITSTATUS(status));
}

void hl_sup_deadline(struct sup *s, long long now, int *timeout)
{
	long long end = s->l->deadline_ms;
	struct hl_event ev = {HL_EV_TIMEOUT, -1, NULL, NULL, 0};
	int i;

	/* A worker's failure, or a signal, that came first is the cause. */
	if (end <= 0 || s->phase != PH_RUNNING || s->failed || s->signal != 0 ||
	    s->held != NULL)
		return;
	if (now < end) {
		if (*timeout < 0 || end - now < *timeout)
			*timeout = (int)(end - now);
		return;
	}
	for (i = 0; i < s->n; i++)
		ev.sig += !s->w[i].exited;
	hl_spawn_event(s->l, &ev);
	s->failed = true;
	s->exit_code = HL_TIMEOUT_EXIT;
	hl_sup_terminate(s, SIGTERM);
}
