/* slurm/spawn.c: starts the workers of the remote hosts inside a Slurm
 * allocation through one srun step: `hvdrun --node-agent` as one task a
 * node (agent/node.c), so that Slurm's own launch carries the start. What
 * hvdrun writes to srun's standard input reaches every agent (--input=all):
 * the environment common to all ranks once, then each node's ranks,
 * addressed by step task (records.h). The agents answer in lines that
 * srun labels with the task (--label); a thread a step reads them, maps
 * each task to its host by the node name of its hello, and passes output
 * and exit statuses to the supervisor as notes (notes.c), as the SSH
 * spawner does. An agent ends once its workers have; in an elastic job a
 * host's workers started again get a step of their own, of one node.
 * Closing a step's standard input ends every agent of it and its
 * workers; so does hvdrun's death, even by SIGKILL. */
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
#include "launch/proc.h"
#include "agent/records.h"
#include "spawn/spawn.h"

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
	size_t nhello;
	struct srun_rank *r;
	size_t nr;
	struct hl_buf *part; /* by task: a line srun cut, so far */
	pthread_t thread;
	bool thread_started;
	bool eof;	      /* srun's output ended */
	atomic_bool finished; /* and the reader has said all it will */
};

struct srun {
	const struct hl_launch *l;
	int notify_fd;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	struct step **steps; /* the first, then restarts; ended ones freed */
	size_t nsteps;
	struct step **at; /* by worker id: the step that started it last */
	size_t nport;	  /* 'p' answers: 1 once rank 0's host answered */
	int port;
	char addr[64];
	char *error; /* the first failure a reader found */
};

static void fail_locked(struct srun *s, char *msg)
{
	if (s->error == NULL)
		s->error = msg;
	else
		free(msg);
	pthread_cond_broadcast(&s->cond);
}

static struct srun_rank *rank_of(struct step *st, long rank)
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
		} else if (!st->hello[hi]) { /* task < ntasks: hl_srun_line */
			st->hello[hi] = true;
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
	default: /* 'o', 'e', 'x' */
		r = rank_of(st, m.num);
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
static bool wait_for(struct step *st, const size_t *counter, size_t want,
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
static int start_error(struct step *st, const char *what, char **cause)
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

static int send_buf(struct step *st, struct hl_buf *b)
{
	int rc = hl_write_all(st->in_fd, b->p, b->len) == 0 ? HL_OK : HL_ESYS;

	b->len = 0;
	return rc;
}

static void step_free(struct step *st)
{
	size_t i;

	if (st == NULL)
		return;
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
	for (i = 0; st->part != NULL && i < st->ntasks; i++)
		hl_buf_close(&st->part[i]);
	free(st->part);
	free(st->r);
	free(st);
}

/* A step of an agent on each of the hosts `hosts` (nh, in the job's
 * order) for the nw workers w (all theirs), the last of s->steps:
 * srun started and its output read by a thread of the step's own. */
static int step_start(struct srun *s, const size_t *hosts, size_t nh,
		      struct hl_worker *const *w, size_t nw, char **cause)
{
	const struct hl_launch *l = s->l;
	struct step *st = calloc(1, sizeof(*st)), **grown;
	struct hl_strvec av;
	int in[2], out[2], ep[2], rc, exec_errno;
	size_t i;

	grown = realloc(s->steps, (s->nsteps + 1) * sizeof(struct step *));
	if (grown != NULL)
		s->steps = grown;
	if (st == NULL || grown == NULL) {
		free(st);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	st->s = s;
	st->pidfd = st->in_fd = st->out_fd = -1;
	atomic_init(&st->finished, false);
	s->steps[s->nsteps++] = st;
	st->hosts = calloc(nh, sizeof(*st->hosts));
	st->task_of = malloc(l->hosts->n * sizeof(*st->task_of));
	st->hello = calloc(l->hosts->n, sizeof(*st->hello));
	st->r = calloc(nw ? nw : 1, sizeof(*st->r));
	st->part = calloc(nh, sizeof(*st->part)); /* empty buffers */
	if (!st->hosts || !st->task_of || !st->hello || !st->r || !st->part)
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
		s->at[w[i]->rank] = st;
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

/* The first step: an agent on each remote host with ranks of the plan,
 * all of them answering before anything starts. An elastic job may have
 * none yet (its remote hosts' workers start later, through restart). */
static int srun_open(void **ctx, const struct hl_launch *l, struct hl_worker *w,
		     int n, int notify_fd, char **cause)
{
	struct srun *s = calloc(1, sizeof(*s));
	struct hl_worker **mine = NULL;
	struct step *st;
	size_t *hosts = NULL, nh = 0, nw = 0, hi, i;
	int rc, r0;

	*ctx = s;
	if (s == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	s->l = l;
	s->notify_fd = notify_fd;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->at = calloc((size_t)n, sizeof(struct step *));
	hosts = calloc(l->hosts->n, sizeof(*hosts));
	mine = calloc((size_t)l->plan->size, sizeof(struct hl_worker *));
	if (s->at == NULL || hosts == NULL || mine == NULL) {
		free(hosts);
		free(mine);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	/* The remote hosts with ranks, in the job's order, and their
	 * ranks. */
	for (hi = 0; hi < l->hosts->n; hi++) {
		if (!hl_worker_remote(l, hi))
			continue;
		for (r0 = 0; r0 < l->plan->size; r0++)
			if (l->plan->ranks[r0].host == hi)
				break;
		if (r0 < l->plan->size)
			hosts[nh++] = hi;
	}
	for (r0 = 0; r0 < l->plan->size; r0++)
		if (hl_worker_remote(l, l->plan->ranks[r0].host))
			mine[nw++] = &w[r0];
	rc = nh > 0 ? step_start(s, hosts, nh, mine, nw, cause) : HL_OK;
	free(hosts);
	free(mine);
	if (rc != HL_OK || nh == 0)
		return rc;
	st = s->steps[0];
	if (!wait_for(st, &st->nhello, st->ntasks,
		      hl_now_ms() + l->ssh->start_timeout_s * 1000LL))
		return start_error(st, "start the agent", cause);
	/* MASTER_PORT free on rank 0's host, when srun starts it. */
	hi = l->plan->ranks[0].host;
	if (st->task_of[hi] >= 0) {
		struct hl_buf b;
		char **ifs = l->env->host_ifaces;
		const char *names = ifs && ifs[hi] ? ifs[hi] : "";

		for (i = 0; i < st->ntasks && st->hosts[i] != hi; i++)
			;
		hl_buf_init(&b);
		rc = hl_node_req_put(&b, 'T', (uint32_t)i, 0);
		if (rc == HL_OK)
			rc = hl_proto_put(&b, 'P', names, strlen(names));
		if (rc == HL_OK)
			rc = send_buf(st, &b);
		hl_buf_close(&b);
		if (rc != HL_OK ||
		    !wait_for(st, &s->nport, 1,
			      hl_now_ms() + l->ssh->start_timeout_s * 1000LL))
			return start_error(st, "answer", cause);
		if (s->port > 0) {
			l->env->master_port = s->port;
			if (s->addr[0] != '\0' &&
			    hl_master_addr(l->env, s->addr, cause) != HL_OK)
				return HL_ENOMEM;
		}
	}
	return HL_OK;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool has(char **sorted, size_t n, const char *e)
{
	return sorted != NULL &&
	       bsearch(&e, sorted, n, sizeof(*sorted), cmp_str) != NULL;
}

/* Rank w's job as records, its environment env but for the entries of
 * sorted (nc, the common ones sent before). */
static int put_job(struct hl_buf *b, const struct hl_launch *l,
		   const struct hl_worker *w, const struct hl_strvec *env,
		   char **sorted, size_t nc)
{
	size_t k;
	int rc = hl_node_req_put(b, 'R', (uint32_t)w->rank, 0);

	if (rc == HL_OK)
		rc = hl_proto_put(b, 'D', l->ssh->cwd, strlen(l->ssh->cwd));
	for (k = 0; k < env->n && rc == HL_OK; k++)
		if (!has(sorted, nc, env->v[k]))
			rc = hl_proto_put(b, 'E', env->v[k], strlen(env->v[k]));
	for (k = 0; l->argv[k] != NULL && rc == HL_OK; k++)
		rc = hl_proto_put(b, 'A', l->argv[k], strlen(l->argv[k]));
	if (rc == HL_OK)
		rc = hl_proto_put(b, 'G', NULL, 0);
	return rc;
}

/* Every rank's job, once: the entries every rank has alike go first as
 * 'C' records, and each rank gets only its own. */
static int srun_start(void *ctx, char **cause)
{
	struct srun *s = ctx;
	const struct hl_launch *l = s->l;
	struct step *st = s->nsteps > 0 ? s->steps[0] : NULL;
	struct hl_strvec *env;
	bool *common = NULL;
	char **sorted = NULL;
	struct hl_buf b;
	size_t i, j, t, nc = 0;
	int rc;

	if (st == NULL)
		return HL_OK; /* nobody to start yet */
	env = calloc(st->nr ? st->nr : 1, sizeof(*env));
	rc = env ? HL_OK : HL_ENOMEM;
	hl_buf_init(&b);
	for (i = 0; i < st->nr && rc == HL_OK; i++)
		rc = hl_spawn_remote_env(l, st->r[i].w, &env[i]);
	if (rc == HL_OK && st->nr > 0) {
		common = calloc(env[0].n + 1, sizeof(*common));
		rc = common ? HL_OK : HL_ENOMEM;
	}
	if (rc == HL_OK && st->nr > 0) {
		for (j = 0; j < env[0].n; j++)
			common[j] = true;
		for (i = 1; i < st->nr; i++) {
			char **mine = malloc((env[i].n + 1) * sizeof(*mine));

			if (mine == NULL) {
				rc = HL_ENOMEM;
				break;
			}
			memcpy(mine, env[i].v, env[i].n * sizeof(*mine));
			qsort(mine, env[i].n, sizeof(*mine), cmp_str);
			for (j = 0; j < env[0].n; j++)
				common[j] = common[j] &&
					    has(mine, env[i].n, env[0].v[j]);
			free(mine);
		}
		for (j = 0; j < env[0].n && rc == HL_OK; j++)
			if (common[j])
				rc = hl_proto_put(&b, 'C', env[0].v[j],
						  strlen(env[0].v[j]));
	}
	/* The common entries, sorted, to leave out of each rank's. */
	if (rc == HL_OK && st->nr > 0) {
		sorted = malloc((env[0].n + 1) * sizeof(char *));
		rc = sorted ? HL_OK : HL_ENOMEM;
		for (j = 0; rc == HL_OK && j < env[0].n; j++)
			if (common[j])
				sorted[nc++] = env[0].v[j];
		if (rc == HL_OK)
			qsort(sorted, nc, sizeof(char *), cmp_str);
	}
	for (t = 0; t < st->ntasks && rc == HL_OK; t++) {
		rc = hl_node_req_put(&b, 'T', (uint32_t)t, 0);
		for (i = 0; i < st->nr && rc == HL_OK; i++) {
			if (st->r[i].w->host != st->hosts[t])
				continue;
			rc = put_job(&b, l, st->r[i].w, &env[i], sorted, nc);
			/* Sent as it grows: srun reads while we write. */
			if (rc == HL_OK && b.len > (1u << 20))
				rc = send_buf(st, &b);
		}
	}
	if (rc == HL_OK)
		rc = hl_proto_put(&b, 'Z', NULL, 0);
	if (rc == HL_OK)
		rc = send_buf(st, &b);
	for (i = 0; env != NULL && i < st->nr; i++)
		hl_strvec_close(&env[i]);
	free(env);
	free(common);
	free(sorted);
	hl_buf_close(&b);
	if (rc == HL_ENOMEM)
		return hl_fail(cause, rc, "out of memory");
	if (rc != HL_OK)
		return hl_fail(cause, HL_ESTART,
			       "srun ended before it took the jobs");
	return HL_OK;
}

/* Elastic: the steps that have ended (srun, and so their workers) are
 * freed, so that a long job's restarts keep no descriptor, thread or
 * memory of them. Their readers are done: joining them waits for
 * nothing. */
static void free_ended(struct srun *s)
{
	size_t i, j, k = 0;

	for (i = 0; i < s->nsteps; i++) {
		struct step *st = s->steps[i];

		if (!atomic_load(&st->finished)) {
			s->steps[k++] = st;
			continue;
		}
		for (j = 0; j < st->nr; j++)
			if (s->at[st->r[j].w->rank] == st)
				s->at[st->r[j].w->rank] = NULL;
		step_free(st);
	}
	s->nsteps = k;
}

/* Elastic: the n workers w of one host again, in a step of their own
 * (the host's last agent ended with its workers, or with the node).
 * Nothing waits: a node that srun cannot reach ends the step, and each
 * worker is reported lost, as a node lost later would be. */
static int srun_restart(void *ctx, struct hl_worker *const *w, int n,
			char **cause)
{
	struct srun *s = ctx;
	const struct hl_launch *l = s->l;
	size_t host = w[0]->host;
	struct step *st;
	struct hl_strvec env;
	struct hl_buf b;
	int k, rc;

	for (k = 0; k < n; k++) {
		struct srun_rank *old =
			s->at[w[k]->rank]
				? rank_of(s->at[w[k]->rank], w[k]->rank)
				: NULL;

		if (old != NULL)
			atomic_store(&old->done, true);
	}
	free_ended(s);
	rc = step_start(s, &host, 1, w, (size_t)n, cause);
	if (rc != HL_OK)
		return rc;
	st = s->steps[s->nsteps - 1];
	hl_buf_init(&b);
	rc = hl_node_req_put(&b, 'T', 0, 0);
	for (k = 0; k < n && rc == HL_OK; k++) {
		hl_strvec_init(&env);
		rc = hl_spawn_remote_env(l, w[k], &env);
		if (rc == HL_OK)
			rc = put_job(&b, l, w[k], &env, NULL, 0);
		hl_strvec_close(&env);
	}
	if (rc == HL_OK)
		rc = hl_proto_put(&b, 'Z', NULL, 0);
	if (rc == HL_OK)
		rc = send_buf(st, &b);
	hl_buf_close(&b);
	if (rc == HL_OK)
		return HL_OK;
	/* The host waits again (launch.c): this step says nothing more,
	 * and its agent, its input closed, ends. */
	for (k = 0; k < n; k++)
		atomic_store(&st->r[k].done, true);
	close(st->in_fd);
	st->in_fd = -1;
	if (rc == HL_ENOMEM)
		return hl_fail(cause, rc, "out of memory");
	return hl_fail(cause, HL_ESTART, "srun ended before it took the jobs");
}

static int srun_signal(void *ctx, struct hl_worker *w, int sig)
{
	struct srun *s = ctx;
	struct step *st = s->at[w->rank];
	struct hl_buf b;
	int rc;

	if (st == NULL || st->in_fd < 0)
		return HL_OK;
	hl_buf_init(&b);
	rc = hl_node_req_put(&b, 'K', (uint32_t)w->rank, sig);
	if (rc == HL_OK)
		rc = send_buf(st, &b);
	hl_buf_close(&b);
	return rc;
}

static bool srun_helper(void *ctx, pid_t pid)
{
	struct srun *s = ctx;
	size_t i;

	for (i = 0; s != NULL && i < s->nsteps; i++)
		if (s->steps[i]->pid > 0 && s->steps[i]->pid == pid)
			return true;
	return false;
}

static void srun_close(void *ctx)
{
	struct srun *s = ctx;
	long long deadline;
	size_t i;

	if (s == NULL)
		return;
	/* End of input: every agent ends its workers, then srun ends. */
	for (i = 0; i < s->nsteps; i++)
		if (s->steps[i]->in_fd >= 0) {
			close(s->steps[i]->in_fd);
			s->steps[i]->in_fd = -1;
		}
	deadline = hl_now_ms() + s->l->grace_ms + 5000;
	for (i = 0; i < s->nsteps; i++) {
		struct pollfd pf = {s->steps[i]->pidfd, POLLIN, 0};
		long long left = deadline - hl_now_ms();

		if (pf.fd < 0)
			continue;
		if (poll(&pf, 1, left > 0 ? (int)left : 0) == 0) {
			syscall(SYS_pidfd_send_signal, pf.fd, SIGTERM, NULL, 0);
			if (poll(&pf, 1, 3000) == 0)
				syscall(SYS_pidfd_send_signal, pf.fd, SIGKILL,
					NULL, 0);
		}
	}
	for (i = 0; i < s->nsteps; i++)
		step_free(s->steps[i]);
	free(s->steps);
	free(s->at);
	free(s->error);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const struct hl_spawner_ops hl_spawn_srun = {
	.name = "srun",
	.open = srun_open,
	.start = srun_start,
	.restart = srun_restart,
	.signal = srun_signal,
	.close = srun_close,
	.helper = srun_helper,
};
