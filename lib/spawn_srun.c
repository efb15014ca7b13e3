/* spawn_srun.c: starts the workers of the remote hosts inside a Slurm
 * allocation through one srun step: `hvdrun --node-agent` as one task a
 * node (node_agent.c), so that Slurm's own launch carries the start. What
 * hvdrun writes to srun's standard input reaches every agent (--input=all):
 * the environment common to all ranks once, then each node's ranks,
 * addressed by step task (records.h). The agents answer in lines that
 * srun labels with the task (--label); a thread reads them, maps each
 * task to its host by the node name of its hello, and passes output and
 * exit statuses to the supervisor as notes (notes.c), as the SSH spawner
 * does. Closing srun's standard input ends every
 * agent and its workers; so does hvdrun's death, even by SIGKILL. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch.h"
#include "proc.h"
#include "records.h"
#include "spawn.h"

struct srun_rank {
	struct hl_worker *w;
	bool done; /* its exit note was written */
};

struct srun {
	const struct hl_launch *l;
	int notify_fd;
	pid_t pid;
	int pidfd;
	int in_fd, out_fd; /* srun's stdin (ours to write), its stdout */
	size_t *hosts;	   /* task -> host index, in our order until hellos */
	size_t ntasks;
	long *task_of; /* host index -> task, -1 when none */
	struct srun_rank *r;
	size_t nr;
	pthread_t thread;
	bool thread_started;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	size_t nhello;
	bool *hello;  /* by host index */
	size_t nport; /* 'p' answers: 1 once rank 0's host answered */
	int port;
	char addr[64];
	char *error;	     /* the first failure the reader found */
	bool eof;	     /* srun's output ended */
	struct hl_buf *part; /* by task: a line srun cut, so far */
};

static void fail_locked(struct srun *s, char *msg)
{
	if (s->error == NULL)
		s->error = msg;
	else
		free(msg);
	pthread_cond_broadcast(&s->cond);
}

static struct srun_rank *rank_of(struct srun *s, long rank)
{
	size_t i;

	for (i = 0; i < s->nr; i++)
		if (s->r[i].w->rank == rank)
			return &s->r[i];
	return NULL;
}

static void rank_done(struct srun *s, struct srun_rank *r, int status,
		      bool lost)
{
	if (r->done)
		return;
	r->done = true;
	hl_note_write(s->notify_fd, r->w->rank, status, lost);
}

/* One whole line of the agent of step task `task` (records.h). */
static void on_line(struct srun *s, long task, char *line, size_t len)
{
	struct hl_agent_line m;
	struct srun_rank *r;
	size_t hi;

	if (hl_agent_line_parse(line, len, &m) != HL_OK)
		return;
	switch (m.kind) {
	case 'h':
		pthread_mutex_lock(&s->lock);
		for (hi = 0; hi < s->l->hosts->n; hi++)
			if (s->task_of[hi] >= 0 &&
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
		} else if (!s->hello[hi]) { /* task < ntasks: hl_srun_line */
			s->hello[hi] = true;
			s->hosts[task] = hi;
			s->nhello++;
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
		r = rank_of(s, m.num);
		if (r == NULL || r->done)
			return;
		if (m.kind == 'x')
			rank_done(s, r, m.status, false);
		else if (m.len > 0)
			hl_note_output(s->notify_fd, (int)m.num, m.kind == 'e',
				       m.text, m.len);
		return;
	}
}

static void *reader(void *arg)
{
	struct srun *s = arg;
	struct hl_buf b;
	char chunk[65536];
	size_t i;

	hl_buf_init(&b);
	for (;;) {
		ssize_t n = read(s->out_fd, chunk, sizeof(chunk));
		char *nl;

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || hl_buf_append(&b, chunk, (size_t)n) != 0)
			break;
		while ((nl = memchr(b.p, '\n', b.len)) != NULL) {
			size_t len = (size_t)(nl - b.p), got;
			char *line;
			long task;

			if (hl_srun_line(b.p, len, s->part, s->ntasks, &task,
					 &line, &got) == 1)
				on_line(s, task, line, got);
			hl_buf_consume(&b, len + 1);
		}
	}
	hl_buf_close(&b);
	/* srun has ended: a rank not reported is lost with its node. */
	pthread_mutex_lock(&s->lock);
	s->eof = true;
	pthread_cond_broadcast(&s->cond);
	pthread_mutex_unlock(&s->lock);
	for (i = 0; i < s->nr; i++)
		rank_done(s, &s->r[i], W_EXITCODE(255, 0), true);
	return NULL;
}

/* Wait until *counter reaches want, the reader fails or srun ends, or
 * the deadline passes: true when it was reached. */
static bool wait_for(struct srun *s, const size_t *counter, size_t want,
		     long long deadline_ms)
{
	bool ok;

	pthread_mutex_lock(&s->lock);
	while (*counter < want && s->error == NULL && !s->eof &&
	       hl_now_ms() < deadline_ms)
		hl_cond_wait_ms(&s->cond, &s->lock, 50);
	ok = *counter >= want;
	pthread_mutex_unlock(&s->lock);
	return ok;
}

/* Why the agents did not all answer: the reader's error, or the nodes
 * that never said hello. */
static int start_error(struct srun *s, const char *what, char **cause)
{
	struct hl_strvec missing;
	char *names;
	size_t hi;

	if (s->error != NULL)
		return hl_fail(cause, HL_ESTART, "%s", s->error);
	hl_strvec_init(&missing);
	for (hi = 0; hi < s->l->hosts->n; hi++)
		if (s->task_of[hi] >= 0 && !s->hello[hi])
			hl_strvec_pushf(&missing, "'%s'",
					s->l->hosts->v[hi].name);
	names = hl_strvec_join(&missing, ", ");
	if (s->eof)
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

/* srun's command line: one task a node of the job's remote hosts, every
 * CPU of the allocation on them (the workers' own), sharing them with
 * other steps; stdin to every task, output labelled with the task. */
static int srun_argv(const struct srun *s, struct hl_strvec *av)
{
	const struct hl_launch *l = s->l;
	struct hl_strvec names;
	char *nodes;
	size_t t;
	int rc = HL_OK;

	hl_strvec_init(&names);
	for (t = 0; t < s->ntasks && rc == HL_OK; t++)
		rc = hl_strvec_push(&names, l->hosts->v[s->hosts[t]].name);
	nodes = rc == HL_OK ? hl_strvec_join(&names, ",") : NULL;
	hl_strvec_close(&names);
	if (nodes == NULL)
		return HL_ENOMEM;
	hl_strvec_init(av);
	rc = hl_strvec_push(av, "srun");
	if (rc == HL_OK)
		rc = hl_strvec_pushf(av, "--nodes=%zu", s->ntasks);
	if (rc == HL_OK)
		rc = hl_strvec_pushf(av, "--ntasks=%zu", s->ntasks);
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

static int send_buf(struct srun *s, struct hl_buf *b)
{
	int rc = hl_write_all(s->in_fd, b->p, b->len) == 0 ? HL_OK : HL_ESYS;

	b->len = 0;
	return rc;
}

static int srun_open(void **ctx, const struct hl_launch *l, struct hl_worker *w,
		     int n, int notify_fd, char **cause)
{
	struct srun *s = calloc(1, sizeof(*s));
	struct hl_strvec av;
	size_t hi, i;
	int in[2], out[2], ep[2], rc, exec_errno, r0;

	(void)n; /* only the plan's ranks: srun starts nobody again */
	*ctx = s;
	if (s == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	s->l = l;
	s->notify_fd = notify_fd;
	s->pidfd = s->in_fd = s->out_fd = -1;
	pthread_mutex_init(&s->lock, NULL);
	pthread_cond_init(&s->cond, NULL);
	s->hosts = calloc(l->hosts->n, sizeof(*s->hosts));
	s->task_of = calloc(l->hosts->n, sizeof(*s->task_of));
	s->hello = calloc(l->hosts->n, sizeof(*s->hello));
	s->r = calloc((size_t)l->plan->size, sizeof(*s->r));
	s->part = calloc(l->hosts->n, sizeof(*s->part)); /* empty buffers */
	if (!s->hosts || !s->task_of || !s->hello || !s->r || !s->part)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	/* The remote hosts with ranks, in the job's order. */
	for (hi = 0; hi < l->hosts->n; hi++) {
		s->task_of[hi] = -1;
		if (!hl_worker_remote(l, hi))
			continue;
		for (r0 = 0; r0 < l->plan->size; r0++)
			if (l->plan->ranks[r0].host == hi)
				break;
		if (r0 == l->plan->size)
			continue;
		s->task_of[hi] = (long)s->ntasks;
		s->hosts[s->ntasks++] = hi;
	}
	for (r0 = 0; r0 < l->plan->size; r0++)
		if (s->task_of[l->plan->ranks[r0].host] >= 0)
			s->r[s->nr++].w = &w[r0];
	rc = srun_argv(s, &av);
	if (rc != HL_OK)
		return hl_fail(cause, rc, "out of memory");
	if (pipe2(in, O_CLOEXEC) != 0 || pipe2(out, O_CLOEXEC) != 0 ||
	    pipe2(ep, O_CLOEXEC) != 0) {
		hl_strvec_close(&av);
		return hl_fail(cause, HL_ESYS, "pipe: %s", strerror(errno));
	}
	s->pid = fork();
	if (s->pid == 0) {
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
	s->in_fd = in[1];
	s->out_fd = out[0];
	/* A signal to every rank is a record a rank: room for them all. */
	(void)fcntl(s->in_fd, F_SETPIPE_SZ, 1 << 20);
	exec_errno = s->pid > 0 ? hl_exec_result(ep[0]) : errno;
	close(ep[0]);
	hl_strvec_close(&av);
	if (s->pid < 0)
		return hl_fail(cause, HL_ESYS, "fork: %s",
			       strerror(exec_errno));
	s->pidfd = (int)syscall(SYS_pidfd_open, s->pid, 0);
	if (exec_errno != 0)
		return hl_fail(cause, HL_ESTART,
			       "cannot run srun (--launcher srun): %s",
			       strerror(exec_errno));
	if (hl_thread_create(&s->thread, reader, s) != HL_OK)
		return hl_fail(cause, HL_ESYS, "cannot start a thread");
	s->thread_started = true;
	if (!wait_for(s, &s->nhello, s->ntasks,
		      hl_now_ms() + l->ssh->start_timeout_s * 1000LL))
		return start_error(s, "start the agent", cause);
	/* MASTER_PORT free on rank 0's host, when srun starts it. */
	hi = l->plan->ranks[0].host;
	if (s->task_of[hi] >= 0) {
		struct hl_buf b;
		char **ifs = l->env->host_ifaces;
		const char *names = ifs && ifs[hi] ? ifs[hi] : "";

		for (i = 0; i < s->ntasks && s->hosts[i] != hi; i++)
			;
		hl_buf_init(&b);
		rc = hl_node_req_put(&b, 'T', (uint32_t)i, 0);
		if (rc == HL_OK)
			rc = hl_proto_put(&b, 'P', names, strlen(names));
		if (rc == HL_OK)
			rc = send_buf(s, &b);
		hl_buf_close(&b);
		if (rc != HL_OK ||
		    !wait_for(s, &s->nport, 1,
			      hl_now_ms() + l->ssh->start_timeout_s * 1000LL))
			return start_error(s, "answer", cause);
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
	return bsearch(&e, sorted, n, sizeof(*sorted), cmp_str) != NULL;
}

/* Every rank's job, once: the entries every rank has alike go first as
 * 'C' records, and each rank gets only its own. */
static int srun_start(void *ctx, char **cause)
{
	struct srun *s = ctx;
	const struct hl_launch *l = s->l;
	struct hl_strvec *env = calloc(s->nr ? s->nr : 1, sizeof(*env));
	bool *common = NULL;
	char **sorted = NULL;
	struct hl_buf b;
	size_t i, j, t, k, nc = 0;
	int rc = env ? HL_OK : HL_ENOMEM;

	hl_buf_init(&b);
	for (i = 0; i < s->nr && rc == HL_OK; i++)
		rc = hl_launch_remote_env(l, s->r[i].w, &env[i]);
	if (rc == HL_OK && s->nr > 0) {
		common = calloc(env[0].n + 1, sizeof(*common));
		rc = common ? HL_OK : HL_ENOMEM;
	}
	if (rc == HL_OK && s->nr > 0) {
		for (j = 0; j < env[0].n; j++)
			common[j] = true;
		for (i = 1; i < s->nr; i++) {
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
	if (rc == HL_OK && s->nr > 0) {
		sorted = malloc((env[0].n + 1) * sizeof(char *));
		rc = sorted ? HL_OK : HL_ENOMEM;
		for (j = 0; rc == HL_OK && j < env[0].n; j++)
			if (common[j])
				sorted[nc++] = env[0].v[j];
		if (rc == HL_OK)
			qsort(sorted, nc, sizeof(char *), cmp_str);
	}
	for (t = 0; t < s->ntasks && rc == HL_OK; t++) {
		rc = hl_node_req_put(&b, 'T', (uint32_t)t, 0);
		for (i = 0; i < s->nr && rc == HL_OK; i++) {
			const struct srun_rank *r = &s->r[i];

			if (l->plan->ranks[r->w->rank].host != s->hosts[t])
				continue;
			rc = hl_node_req_put(&b, 'R', (uint32_t)r->w->rank, 0);
			if (rc == HL_OK)
				rc = hl_proto_put(&b, 'D', l->ssh->cwd,
						  strlen(l->ssh->cwd));
			for (k = 0; k < env[i].n && rc == HL_OK; k++)
				if (!has(sorted, nc, env[i].v[k]))
					rc = hl_proto_put(&b, 'E', env[i].v[k],
							  strlen(env[i].v[k]));
			for (k = 0; l->argv[k] != NULL && rc == HL_OK; k++)
				rc = hl_proto_put(&b, 'A', l->argv[k],
						  strlen(l->argv[k]));
			if (rc == HL_OK)
				rc = hl_proto_put(&b, 'G', NULL, 0);
			/* Sent as it grows: srun reads while we write. */
			if (rc == HL_OK && b.len > (1u << 20))
				rc = send_buf(s, &b);
		}
	}
	if (rc == HL_OK)
		rc = hl_proto_put(&b, 'Z', NULL, 0);
	if (rc == HL_OK)
		rc = send_buf(s, &b);
	for (i = 0; env != NULL && i < s->nr; i++)
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

static int srun_signal(void *ctx, struct hl_worker *w, int sig)
{
	struct srun *s = ctx;
	struct hl_buf b;
	int rc;

	if (s->in_fd < 0)
		return HL_OK;
	hl_buf_init(&b);
	rc = hl_node_req_put(&b, 'K', (uint32_t)w->rank, sig);
	if (rc == HL_OK)
		rc = send_buf(s, &b);
	hl_buf_close(&b);
	return rc;
}

static pid_t srun_helper(void *ctx)
{
	struct srun *s = ctx;

	return s != NULL && s->pid > 0 ? s->pid : 0;
}

static void srun_close(void *ctx)
{
	struct srun *s = ctx;
	size_t i;

	if (s == NULL)
		return;
	/* End of input: every agent ends its workers, then srun ends. */
	if (s->in_fd >= 0)
		close(s->in_fd);
	s->in_fd = -1;
	if (s->pidfd >= 0) {
		struct pollfd pf = {s->pidfd, POLLIN, 0};

		if (poll(&pf, 1, s->l->grace_ms + 5000) == 0) {
			syscall(SYS_pidfd_send_signal, s->pidfd, SIGTERM, NULL,
				0);
			if (poll(&pf, 1, 3000) == 0)
				syscall(SYS_pidfd_send_signal, s->pidfd,
					SIGKILL, NULL, 0);
		}
	}
	if (s->thread_started)
		pthread_join(s->thread, NULL);
	if (s->pid > 0)
		waitpid(s->pid, NULL, WNOHANG);
	if (s->pidfd >= 0)
		close(s->pidfd);
	if (s->out_fd >= 0)
		close(s->out_fd);
	free(s->hosts);
	free(s->task_of);
	free(s->hello);
	for (i = 0; s->part != NULL && i < s->ntasks; i++)
		hl_buf_close(&s->part[i]);
	free(s->part);
	free(s->r);
	free(s->error);
	pthread_cond_destroy(&s->cond);
	pthread_mutex_destroy(&s->lock);
	free(s);
}

const struct hl_spawner_ops hl_spawn_srun = {
	.name = "srun",
	.open = srun_open,
	.start = srun_start,
	.signal = srun_signal,
	.close = srun_close,
	.helper = srun_helper,
};
