/* launch.c: starts the workers and watches them until the job ends.
 * One poll loop over a signalfd (SIGCHLD and the signals hvdrun forwards)
 * and every worker's output. The first worker to fail decides the exit
 * status; the others get SIGTERM, then SIGKILL after a grace period.
 * hvdrun is a child subreaper, so a worker's children that outlive it
 * become hvdrun's and are ended too: nothing of the job outlives hvdrun. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/launch.h"
#include "util/proc.h"
#include "spawn/spawn.h"
#include "launch/sup.h"
#include "launch/watchdog.h"

/* How a worker's end is known: its exit status, its SSH session lost, or
 * its host silent to the rendezvous' keepalive (elastic). */
enum { EXITED, LOST_SESSION, LOST_SILENT };

/* How long a failure by exit code waits for its cause: a rank killed by
 * a signal, or lost, leaves its peers' collectives broken, and they exit
 * with a code of their own, often before hvdrun has seen the death that
 * caused it (its exit comes by another way, or in another turn). */
#define CAUSE_MS 200

static void fail_job(struct sup *s, struct hl_worker *w, int status, int lost);

static void worker_exited(struct sup *s, struct hl_worker *w, int status,
			  int lost)
{
	const struct hl_launch *l = s->l;
	bool success = WIFEXITED(status) && WEXITSTATUS(status) == 0;

	w->exited = true;
	w->status = status;
	if (l->hooks != NULL)
		l->hooks->ended(s, w, success);
	if (success) {
		s->finishing = true;
		return;
	}
	if (s->failed || s->signal != 0 || w->removed)
		return; /* ended by us, or after the job had already failed */
	if (l->hooks == NULL && lost == EXITED && WIFEXITED(status)) {
		if (s->held == NULL) {
			s->held = w;
			s->held_status = status;
			s->fail_at = hl_now_ms() + CAUSE_MS;
		}
		return;
	}
	fail_job(s, w, status, lost);
}

/* The job fails for w: say why, and end the others. */
static void fail_job(struct sup *s, struct hl_worker *w, int status, int lost)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_FAILED, w->rank, l->hosts->v[w->host].name,
			      NULL, 0};
	char how[256];

	s->held = NULL;
	if (lost == LOST_SESSION)
		snprintf(how, sizeof(how), "lost its connection to the host");
	else if (lost == LOST_SILENT)
		snprintf(how, sizeof(how),
			 "stopped answering: its host is unreachable");
	else
		hl_sup_describe_status(status, how, sizeof(how));
	if (l->hooks != NULL && l->hooks->failed(s, w, how, sizeof(how)))
		return;
	s->failed = true;
	s->exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status)
					   : WEXITSTATUS(status);
	ev.text = how;
	hl_spawn_event(l, &ev);
	hl_sup_terminate(s, SIGTERM);
}

static void reap(struct sup *s)
{
	int status, i;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG | WUNTRACED)) > 0) {
		if (s->l->hooks != NULL && s->l->hooks->reaped(s, pid, status))
			continue;
		for (i = 0; i < s->n; i++) {
			struct hl_worker *w = &s->w[i];

			if (w->remote || w->pid != pid || w->exited)
				continue;
			if (WIFSTOPPED(status)) {
				/* It holds up every other rank: say so. */
				struct hl_event ev = {
					HL_EV_STOPPED, w->rank,
					s->l->hosts->v[w->host].name, NULL,
					WSTOPSIG(status)};

				hl_spawn_event(s->l, &ev);
			} else {
				worker_exited(s, w, status, EXITED);
			}
			break;
		}
	}
}

static void on_signal(struct sup *s)
{
	struct signalfd_siginfo si;

	while (read(s->sfd, &si, sizeof(si)) == (ssize_t)sizeof(si)) {
		int sig = (int)si.ssi_signo;

		if (sig == SIGCHLD) {
			reap(s);
			continue;
		}
		if (hl_signal_leader_only(sig)) { /* for the workers alone */
			hl_sup_forward(s, sig);
			continue;
		}
		if (s->signal == 0 && !s->failed) {
			struct hl_event ev = {HL_EV_SIGNAL, -1, NULL, NULL,
					      sig};

			s->signal = sig;
			hl_spawn_event(s->l, &ev);
			hl_sup_terminate(s, sig);
			continue;
		}
		if (s->signal == 0)
			s->signal = sig;
		/* A second signal: no more waiting. */
		hl_sup_kill_now(s);
	}
}

/* A worker whose host stopped answering the rendezvous (elastic). */
static void lost_silent(struct sup *s, struct hl_worker *w)
{
	worker_exited(s, w, 255 << 8, LOST_SILENT);
}

/* Reports of the rendezvous (rdv/server.h), NUL-terminated: a failure
 * ends the job (it could not start); an empty one says that workers'
 * hosts stopped answering (elastic), and each such worker is lost. */
static void on_report(struct sup *s)
{
	char msg[1024];
	ssize_t n = read(s->l->report_fd, msg, sizeof(msg) - 1);
	size_t at = 0;

	if (n <= 0)
		return;
	msg[n] = '\0';
	while (at < (size_t)n) {
		const char *text = msg + at;
		struct hl_event ev = {HL_EV_NOT_READY, -1, NULL, text, 0};

		at += strlen(text) + 1;
		if (text[0] != '\0') {
			if (s->failed || s->signal != 0)
				continue;
			hl_spawn_event(s->l, &ev);
			s->failed = true;
			s->exit_code = 125;
			hl_sup_terminate(s, SIGTERM);
			continue;
		}
		if (s->l->hooks != NULL)
			s->l->hooks->report(s, lost_silent);
	}
}

/* Output and exits of remote workers, from the SSH and srun spawners. A
 * bounded number of reads a call, so that a flood of output cannot keep
 * signals and local workers waiting. */
#define NOTES_CAP (64 * 1024)

static void on_notes(struct sup *s)
{
	int rounds;

	for (rounds = 0; rounds < 16; rounds++) {
		ssize_t n = read(s->notify[0], s->notes + s->nnotes,
				 NOTES_CAP - s->nnotes);
		struct hl_note note;
		size_t at = 0;
		int used;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		s->nnotes += (size_t)n;
		while ((used = hl_note_next(s->notes + at, s->nnotes - at,
					    &note)) > 0) {
			struct hl_worker *w;

			at += (size_t)used;
			if (note.rank < 0 || note.rank >= s->n)
				continue;
			w = &s->w[note.rank];
			if (note.kind == 'o' || note.kind == 'e') {
				hl_out_feed(&w->out[note.kind == 'e'],
					    note.data, note.len);
			} else if (!w->exited) {
				/* Its output came first: end its last line. */
				hl_out_flush(&w->out[0]);
				hl_out_flush(&w->out[1]);
				worker_exited(s, w, note.status,
					      note.kind == 'l'	 ? LOST_SESSION
					      : note.kind == 's' ? LOST_SILENT
								 : EXITED);
			}
		}
		/* Only our own threads write here: a bad note is a bug. */
		if (used < 0)
			at = s->nnotes;
		memmove(s->notes, s->notes + at, s->nnotes - at);
		s->nnotes -= at;
	}
}

static bool all_exited(const struct sup *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		if (!s->w[i].exited)
			return false;
	return true;
}

static void supervise(struct sup *s)
{
	struct pollfd *pf =
		calloc((size_t)s->n * 2 + 4 + HL_SUP_HOOK_FDS, sizeof(*pf));
	const struct hl_sup_hooks *hooks = s->l->hooks;
	int i, j, nhook, nin;

	if (pf == NULL) {
		hl_sup_kill_now(s);
		return;
	}
	for (;;) {
		long long now = hl_now_ms();
		int nfds = 0, timeout = -1;

		/* The job failed meanwhile for its cause (ranks that never
		 * joined), or was interrupted: the held exit was its effect. */
		if (s->held != NULL && (s->failed || s->signal != 0))
			s->held = NULL;
		if (s->held != NULL && (now >= s->fail_at || all_exited(s)))
			fail_job(s, s->held, s->held_status, EXITED);
		hl_sup_deadline(s, now, &timeout);
		if (all_exited(s)) {
			/* A worker's last writes are in its pipes before it
			 * exits: read them now. A stream still open after
			 * that is held by a child of the worker. */
			for (i = 0; i < s->n; i++)
				for (j = 0; j < 2; j++)
					if (s->w[i].fd[j] >= 0)
						hl_sup_drain(&s->w[i], j);
			/* Children not yet reaped count too: they are gone
			 * only once reap() has collected them. */
			if (!hl_sup_any_stream_open(s) &&
			    hl_sup_signal_orphans(s, 0) == 0)
				break;
			hl_sup_terminate(s, SIGTERM);
		}
		if (s->phase == PH_TERMINATING && now >= s->deadline)
			hl_sup_kill_now(s);
		else if (s->phase == PH_KILLED && now >= s->deadline)
			break;
		/* Children adopted since the last look: a worker that died
		 * after the first signal leaves its children to us. */
		if (s->phase == PH_TERMINATING)
			hl_sup_signal_orphans(s, SIGTERM);
		else if (s->phase == PH_KILLED)
			hl_sup_signal_orphans(s, SIGKILL);
		if (s->phase != PH_RUNNING)
			timeout = (int)(s->deadline > now ? s->deadline - now
							  : 0);
		if ((all_exited(s) || s->phase != PH_RUNNING) &&
		    (timeout < 0 || timeout > 50))
			timeout = 50; /* look for adopted children */
		if (s->held != NULL &&
		    (timeout < 0 || s->fail_at - now < timeout))
			timeout =
				(int)(s->fail_at > now ? s->fail_at - now : 0);
		if (hooks != NULL) {
			int t = hooks->timeout(s, now);

			if (t >= 0 && (timeout < 0 || t < timeout))
				timeout = t;
		}
		pf[nfds].fd = s->sfd;
		pf[nfds++].events = POLLIN;
		pf[nfds].fd = s->notify[0];
		pf[nfds++].events = POLLIN;
		pf[nfds].fd = s->l->report_fd;
		pf[nfds++].events = POLLIN;
		nhook = hooks != NULL ? hooks->fds(s, pf + nfds) : 0;
		nfds += nhook;
		nin = hl_sup_input_fds(s, pf + nfds, &timeout);
		nfds += nin;
		for (i = 0; i < s->n; i++)
			for (j = 0; j < 2; j++)
				if (s->w[i].fd[j] >= 0) {
					pf[nfds].fd = s->w[i].fd[j];
					pf[nfds++].events = POLLIN;
				}
		if (poll(pf, (nfds_t)nfds, timeout) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			on_signal(s);
		if (pf[1].revents)
			on_notes(s);
		if (pf[2].revents)
			on_report(s);
		if (nhook > 0)
			hooks->polled(s, pf + 3, nhook);
		if (nin > 0)
			hl_sup_input_polled(s, pf + 3 + nhook);
		for (i = 0; i < s->n; i++)
			for (j = 0; j < 2; j++)
				if (s->w[i].fd[j] >= 0)
					hl_sup_drain(&s->w[i], j);
		hl_sup_output_lost(s);
		reap(s);
		if (hooks != NULL)
			hooks->tick(s);
	}
	free(pf);
}

int hl_launch_run(const struct hl_launch *l, int *exit_code, char **cause)
{
	struct sup s;
	sigset_t mask, old;
	int i, j, rc = HL_OK;

	memset(&s, 0, sizeof(s));
	s.l = l;
	/* Elastic: room for --max-np workers; those beyond the plan start
	 * later, on hosts with free slots. */
	s.n = l->plan->size;
	if (l->hooks != NULL && l->max_np > s.n)
		s.n = l->max_np;
	s.w = calloc((size_t)s.n, sizeof(*s.w));
	if (s.w == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	for (i = 0; i < s.n; i++) {
		s.w[i].rank = i;
		s.w[i].exited = i >= l->plan->size; /* not started yet */
		s.w[i].in_fd = -1;
		s.w[i].host = i < l->plan->size ? l->plan->ranks[i].host : 0;
		if (i < l->plan->size)
			hl_place_of(&s.w[i].place, l->plan, l->hosts, i);
		for (j = 0; j < 2; j++) {
			s.w[i].fd[j] = -1;
			hl_out_init(&s.w[i].out[j], i, j + 1, j + 1,
				    l->timestamps);
		}
	}
	/* Per-rank files first: a bad directory starts nothing. */
	for (i = 0; i < l->plan->size && l->output_dir != NULL && rc == HL_OK;
	     i++)
		rc = hl_out_open_files(s.w[i].out, l->output_dir, i, s.n,
				       cause);
	/* MASTER_ADDR: rank 0's host, unless an address was found. */
	if (rc == HL_OK && l->env->master_addr == NULL)
		rc = hl_master_addr(l->env, s.w[0].place.host, cause);
	if (rc == HL_OK && l->hooks != NULL)
		rc = l->hooks->open(&s, cause);
	if (rc != HL_OK)
		goto out_free;

	sigemptyset(&mask);
	sigaddset(&mask, SIGCHLD);
	for (i = 0; i < 5; i++) {
		static const int fwd[5] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1,
					   SIGUSR2};
		struct sigaction sa;

		/* A signal ignored when hvdrun started (nohup, a background
		 * job of a script) stays ignored, for hvdrun and workers. */
		if (sigaction(fwd[i], NULL, &sa) == 0 &&
		    sa.sa_handler != SIG_IGN)
			sigaddset(&mask, fwd[i]);
	}
	s.sfd = hl_family_open(&s.fam, l->grace_ms, &mask, &old);
	if (s.sfd < 0) {
		rc = hl_fail(cause, HL_ESYS, "signalfd: %s", strerror(errno));
		goto out_mask;
	}
	rc = hl_watchdog_start(&s.wd, l->grace_ms, cause);
	if (rc != HL_OK)
		goto out_sfd;
	signal(SIGPIPE, SIG_IGN);
	/* The spawners' threads block on a full pipe (their output waits
	 * for us); a large one lets them run ahead. */
	s.notes = malloc(NOTES_CAP);
	if (s.notes == NULL || pipe2(s.notify, O_CLOEXEC) != 0) {
		rc = hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
		goto out_watchdog;
	}
	fcntl(s.notify[0], F_SETFL, O_NONBLOCK);
	(void)fcntl(s.notify[0], F_SETPIPE_SZ, 1 << 20);
	for (i = 0; i < l->plan->size; i++)
		s.w[i].remote = hl_worker_remote(l, s.w[i].host);
	rc = hl_sup_input_open(&s, cause);

	/* Connect to every remote host before anything starts: a host that
	 * cannot be reached starts nothing anywhere. */
	s.ops[0] = &hl_spawn_local;
	s.ops[1] = l->ssh->srun ? &hl_spawn_srun : &hl_spawn_ssh;
	for (j = 0; j < 2 && rc == HL_OK; j++) {
		/* Elastic: either may start workers later. */
		bool later = l->hooks != NULL;

		for (i = 0; i < l->plan->size && s.w[i].remote != j; i++)
			;
		if (i < l->plan->size || later)
			rc = s.ops[j]->open(&s.ctx[j], l, s.w, s.n, s.notify[1],
					    cause);
	}
	for (j = 0; j < 2 && rc == HL_OK; j++)
		if (s.ctx[j] != NULL)
			rc = s.ops[j]->start(s.ctx[j], cause);
	for (i = 0; i < s.n; i++)
		if (!s.w[i].remote && s.w[i].pid > 0)
			hl_watchdog_add(&s.wd, s.w[i].pid);
	if (rc != HL_OK) {
		/* Take down what was started; report the start failure. */
		s.failed = true;
		hl_sup_kill_now(&s);
		for (i = 0; i < s.n; i++)
			if (s.w[i].remote)
				s.w[i].exited = true;
	}
	for (i = 0; i < s.n; i++)
		if (!s.w[i].remote && s.w[i].pid <= 0)
			s.w[i].exited = true; /* never started */
	supervise(&s);
	*exit_code = s.failed ? s.exit_code : s.signal ? 128 + s.signal : 0;
	/* Nobody reads the output any more: a pump blocked on a full pipe
	 * must see EPIPE, not wait for us. */
	for (i = 0; i < s.n; i++)
		for (j = 0; j < 2; j++)
			if (s.w[i].fd[j] >= 0)
				hl_sup_close_stream(&s.w[i], j);
	hl_sup_input_close(&s);
	close(s.notify[0]);
	for (j = 0; j < 2; j++)
		if (s.ctx[j] != NULL)
			s.ops[j]->close(s.ctx[j]);
	close(s.notify[1]);
out_watchdog:
	hl_watchdog_done(&s.wd);
out_sfd:
	close(s.sfd);
out_mask:
	sigprocmask(SIG_SETMASK, &old, NULL);
out_free:
	free(s.notes);
	hl_family_close(&s.fam);
	if (l->hooks != NULL)
		l->hooks->close(&s);
	hl_sup_workers_close(s.w, s.n);
	return rc;
}
