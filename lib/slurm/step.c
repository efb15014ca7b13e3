/* slurm/step.c: one srun step of the srun spawner (srun.h): srun started
 * with `hvdrun --node-agent` as one task a node, the records written to
 * its standard input, and a reader thread that maps each labelled line
 * of the agents to its host and passes output and exit statuses to the
 * supervisor as notes. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/launch.h"
#include "util/proc.h"
#include "agent/records.h"
#include "slurm/srun.h"
#include "spawn/spawn.h"

static void fail_locked(struct srun *s, char *msg)
{
	if (s->error == NULL)
		s->error = msg;
	else
		free(msg);
	pthread_cond_broadcast(&s->cond);
}

struct srun_rank *hl_srun_rank_of(struct step *st, long rank)
{
	size_t i;

	for (i = 0; i < st->nr; i++)
		if (st->r[i].w->rank == rank)
			return &st->r[i];
	return NULL;
}

static void rank_done(struct step *st, struct srun_rank *r, int status,
		      bool lost)
{
	if (r->w->rank == st->in_rank) { /* nobody reads its input now */
		pthread_mutex_lock(&st->s->lock);
		hl_srun_input_answer(st, 'n', 0);
		pthread_mutex_unlock(&st->s->lock);
	}
	if (!atomic_exchange(&r->done, true))
		hl_note_write(st->s->notify_fd, r->w->rank, status,
			      lost ? 'l' : 'x');
}

/* One whole line of the agent of step task `task` (records.h). */
static void on_line(struct step *st, long task, char *line, size_t len)
{
	struct srun *s = st->s;
	struct hl_agent_line m;
	struct srun_rank *r;
	size_t hi;

	if (hl_agent_line_parse(line, len, &m) != HL_OK)
		return;
	switch (m.kind) {
	case 'h':
		pthread_mutex_lock(&s->lock);
		for (hi = 0; hi < s->l->hosts->n; hi++)
			if (st->task_of[hi] >= 0 &&
			    !strcmp(s->l->hosts->v[hi].name, m.text))
				break;
		if (hi == s->l->hosts->n) {
			fail_locked(
				s, hl_asprintf("srun started an agent on node "
					       "'%s', which is not one of the "
					       "job's hosts: name the hosts as "
					       "Slurm names its nodes, or use "
					       "--launcher ssh",
					       m.text));
		} else if (m.status > HL_AGENT_PROTO) {
			fail_locked(
				s,
				hl_asprintf(
					"node '%s': its hvdrun (%s, agent protocol %d) is newer than this one (%s, agent protocol %d), which cannot start ranks through it: install the same hvdrun on every node",
					m.text, m.version, m.status,
					HVD_VERSION, HL_AGENT_PROTO));
		} else if (!st->hello[hi]) { /* task < ntasks: hl_srun_line */
			st->hello[hi] = true;
			st->files[hi] = m.num;
			st->proto[hi] = m.status;
			st->hosts[task] = hi;
			st->nhello++;
			pthread_cond_broadcast(&s->cond);
		}
		pthread_mutex_unlock(&s->lock);
		return;
	case 'p':
		pthread_mutex_lock(&s->lock);
		s->port = (int)m.num;
		if (m.text != NULL)
			snprintf(s->addr, sizeof(s->addr), "%s", m.text);
		s->nport++;
		pthread_cond_broadcast(&s->cond);
		pthread_mutex_unlock(&s->lock);
		return;
	case 'c':
	case 'n':
		pthread_mutex_lock(&s->lock);
		if (m.num == st->in_rank)
			hl_srun_input_answer(st, m.kind, m.len);
		pthread_mutex_unlock(&s->lock);
		return;
	default: /* 'o', 'e', 'x' */
		r = hl_srun_rank_of(st, m.num);
		if (r == NULL || atomic_load(&r->done))
			return;
		if (m.kind == 'x')
			rank_done(st, r, m.status, false);
		else if (m.len > 0)
			hl_note_output(s->notify_fd, (int)m.num, m.kind == 'e',
				       m.text, m.len);
		return;
	}
}

static void *reader(void *arg)
{
	struct step *st = arg;
	struct srun *s = st->s;
	struct hl_buf b;
	char chunk[65536];
	size_t i;

	hl_buf_init(&b);
	for (;;) {
		ssize_t n = read(st->out_fd, chunk, sizeof(chunk));
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || hl_buf_append(&b, chunk, (size_t)n) != 0)
			break;
		while ((nl = memchr(b.p, '\n', b.len)) != NULL) {
			size_t len = (size_t)(nl - b.p), got;
			char *line;
			long task;

			if (hl_srun_line(b.p, len, st->part, st->ntasks, &task,
					 &line, &got) == 1)
				on_line(st, task, line, got);
			hl_buf_consume(&b, len + 1);
		}
	}
	hl_buf_close(&b);
	/* srun has ended: a rank not reported is lost with its node. */
	pthread_mutex_lock(&s->lock);
	st->eof = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < st->nr; i++)
		rank_done(st, &st->r[i], W_EXITCODE(255, 0), true);
	atomic_store(&st->finished, true);
	return NULL;
}

/* Wait until *counter reaches want, a reader fails or the step's srun
 * ends, or the deadline passes: true when it was reached. */
bool hl_srun_wait_for(struct step *st, const size_t *counter, size_t want,
		      long long deadline_ms)
{
	struct srun *s = st->s;
	bool ok;

	pthread_mutex_lock(&s->lock);
	while (*counter < want && s->error == NULL && !st->eof &&
	       hl_now_ms() < deadline_ms)
		hl_cond_wait_ms(&s->cond, &s->lock, 50);
	ok = *counter >= want;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* Why the first step's agents did not all answer: a reader's error, or
 * the nodes that never said hello. */
int hl_srun_start_error(struct step *st, const char *what, char **cause)
{
	struct srun *s = st->s;
	struct hl_strvec missing;
	char *names;
	size_t hi;

	if (s->error != NULL)
		return hl_fail(cause, HL_ESTART, "%s", s->error);
	hl_strvec_init(&missing);
	for (hi = 0; hi < s->l->hosts->n; hi++)
		if (st->task_of[hi] >= 0 && !st->hello[hi])
			hl_strvec_pushf(&missing, "'%s'",
					s->l->hosts->v[hi].name);
	names = hl_strvec_join(&missing, ", ");
	if (st->eof)
		hl_fail(cause, HL_ESTART,
			"srun ended before %s answered (its own message is "
			"above)",
			missing.n > 0 && names ? names : "every node");
	else
		hl_fail(cause, HL_ESTART,
			"srun: node%s %s did not %s within %d s (start timeout)",
			missing.n > 1 ? "s" : "", names ? names : "?", what,
			s->l->ssh->start_timeout_s);
	free(names);
	hl_strvec_close(&missing);
	return HL_ESTART;
}

/* srun's command line: one task a node of the step's hosts, every CPU
 * of the allocation on them (the workers' own), sharing them with other
 * steps; stdin to every task, output labelled with the task. */
static int srun_argv(const struct step *st, struct hl_strvec *av)
{
	const struct hl_launch *l = st->s->l;
	struct hl_strvec names;
	char *nodes;
	size_t t;
	int rc = HL_OK;

	hl_strvec_init(&names);
	for (t = 0; t < st->ntasks && rc == HL_OK; t++)
		rc = hl_strvec_push(&names, l->hosts->v[st->hosts[t]].name);
	nodes = rc == HL_OK ? hl_strvec_join(&names, ",") : NULL;
	hl_strvec_close(&names);
	if (nodes == NULL)
		return HL_ENOMEM;
	hl_strvec_init(av);
	rc = hl_strvec_push(av, "srun");
	if (rc == HL_OK)
		rc = hl_strvec_pushf(av, "--nodes=%zu", st->ntasks);
	if (rc == HL_OK)
		rc = hl_strvec_pushf(av, "--ntasks=%zu", st->ntasks);
	if (rc == HL_OK)
		rc = hl_strvec_pushf(av, "--nodelist=%s", nodes);
	{
		static const char *const fixed[] = {"--ntasks-per-node=1",
						    "--overlap",
						    "--whole",
						    "--input=all",
						    "--label",
						    "--cpu-bind=none",
						    "--kill-on-bad-exit=0",
						    "--job-name=hvdrun",
						    "--quiet",
						    NULL};
		size_t i;

		for (i = 0; fixed[i] != NULL && rc == HL_OK; i++)
			rc = hl_strvec_push(av, fixed[i]);
	}
	if (rc == HL_OK)
		rc = hl_strvec_push(av, l->ssh->agent_path);
	if (rc == HL_OK)
		rc = hl_strvec_push(av, "--node-agent");
	free(nodes);
	return rc;
}

void hl_srun_step_free(struct step *st)
{
	size_t i;

	if (st == NULL)
		return;
	hl_srun_input_stop(st);
	if (st->in_fd >= 0)
		close(st->in_fd);
	if (st->thread_started)
		pthread_join(st->thread, NULL);
	if (st->pid > 0)
		waitpid(st->pid, NULL, WNOHANG);
	if (st->pidfd >= 0)
		close(st->pidfd);
	if (st->out_fd >= 0)
		close(st->out_fd);
	free(st->hosts);
	free(st->task_of);
	free(st->hello);
	free(st->files);
	free(st->proto);
	for (i = 0; st->part != NULL && i < st->ntasks; i++)
		hl_buf_close(&st->part[i]);
	free(st->part);
	free(st->r);
	pthread_mutex_destroy(&st->send);
	free(st);
}

/* A step of an agent on each of the hosts `hosts` (nh, in the job's
 * order) for the nw workers w (all theirs), the last of s->ss:
 * srun started and its output read by a thread of the step's own. */
int hl_srun_step_start(struct srun *s, const size_t *hosts, size_t nh,
		       struct hl_worker *const *w, size_t nw, char **cause)
{
	const struct hl_launch *l = s->l;
	struct step *st = calloc(1, sizeof(*st));
	struct hl_strvec av;
	int in[2], out[2], ep[2], rc, exec_errno;
	size_t i;

	if (st == NULL || hl_sessions_add(&s->ss, st) != HL_OK) {
		free(st);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	st->s = s;
	st->pidfd = st->in_fd = st->out_fd = -1;
	st->in_rank = st->in_src = -1;
	pthread_mutex_init(&st->send, NULL);
	atomic_init(&st->finished, false);
	st->hosts = calloc(nh, sizeof(*st->hosts));
	st->task_of = malloc(l->hosts->n * sizeof(*st->task_of));
	st->hello = calloc(l->hosts->n, sizeof(*st->hello));
	st->files = calloc(l->hosts->n, sizeof(*st->files));
	st->proto = calloc(l->hosts->n, sizeof(*st->proto));
	st->r = calloc(nw ? nw : 1, sizeof(*st->r));
	st->part = calloc(nh, sizeof(*st->part)); /* empty buffers */
	if (!st->hosts || !st->task_of || !st->hello || !st->files ||
	    !st->proto || !st->r || !st->part)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	for (i = 0; i < l->hosts->n; i++)
		st->task_of[i] = -1;
	for (i = 0; i < nh; i++) {
		st->task_of[hosts[i]] = (long)i;
		st->hosts[i] = hosts[i];
	}
	st->ntasks = nh;
	for (i = 0; i < nw; i++) {
		st->r[i].w = w[i];
		atomic_init(&st->r[i].done, false);
		hl_sessions_started(&s->ss, w[i]->rank, st);
	}
	st->nr = nw;
	rc = srun_argv(st, &av);
	if (rc != HL_OK)
		return hl_fail(cause, rc, "out of memory");
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
	    pipe2(ep, O_CLOEXEC) != 0) {
		hl_strvec_close(&av);
		return hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
	}
	st->pid = fork();
	if (st->pid == 0) {
		sigset_t none;

		/* Its own process group: a Ctrl-C at the terminal reaches
		 * hvdrun, which decides; srun would cancel the step. */
		setpgid(0, 0);
		/* srun hands its limits on to the step (Slurm's
		 * PropagateResourceLimits): hvdrun's own, not its raised. */
		hl_nofile_restore();
		dup2(in[0], 0);
		dup2(out[1], 1);
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		execvp(av.v[0], av.v);
		hl_exec_failed(ep[1]);
	}
	close(in[0]);
	close(out[1]);
	close(ep[1]);
	st->in_fd = in[1];
	st->out_fd = out[0];
	/* A signal to every rank is a record a rank: room for them all. */
	(void)fcntl(st->in_fd, F_SETPIPE_SZ, 1 << 20);
	exec_errno = st->pid > 0 ? hl_exec_result(ep[0]) : errno;
	close(ep[0]);
	hl_strvec_close(&av);
	if (st->pid < 0)
		return hl_fail(cause, HL_ESYS, "fork: %s",
			       strerror(exec_errno));
	st->pidfd = (int)syscall(SYS_pidfd_open, st->pid, 0);
	if (exec_errno != 0)
		return hl_fail(cause, HL_ESTART,
			       "cannot run srun (--launcher srun): %s",
			       strerror(exec_errno));
	if (hl_thread_create(&st->thread, reader, st) != HL_OK)
		return hl_fail(cause, HL_ESYS, "cannot start a thread");
	st->thread_started = true;
	return HL_OK;
}
