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
#include "util/proc.h"
#include "agent/records.h"
#include "slurm/srun.h"
#include "spawn/spawn.h"

/* A node's agent holds two pipes a worker (records.h), under the node's
 * hard limit on open files, which its hello says: a node without room
 * for its workers is refused in one line, before anything starts. */
static int nodes_room(const struct step *st, char **cause)
{
	size_t t, i;

	for (t = 0; t < st->ntasks; t++) {
		size_t hi = st->hosts[t], n = 0;
		long need;

		for (i = 0; i < st->nr; i++)
			n += st->r[i].w->host == hi;
		need = HL_NODE_FDS_BASE + HL_NODE_FDS_RANK * (long)n;
		if (st->files[hi] > 0 && st->files[hi] < need)
			return hl_fail(
				cause, HL_ESTART,
				"node '%s': %zu workers need about %ld open "
				"files of hvdrun's agent there (two each); it "
				"may open %ld (the hard limit on open files "
				"that slurmd sets there): raise LimitNOFILE "
				"in slurmd's service, or start fewer workers "
				"there",
				st->s->l->hosts->v[hi].name, n, need,
				st->files[hi]);
	}
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
	rc = hl_sessions_init(&s->ss, (size_t)n);
	hosts = calloc(l->hosts->n, sizeof(*hosts));
	mine = calloc((size_t)l->plan->size, sizeof(struct hl_worker *));
	if (rc != HL_OK || hosts == NULL || mine == NULL) {
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
	rc = nh > 0 ? hl_srun_step_start(s, hosts, nh, mine, nw, cause) : HL_OK;
	free(hosts);
	free(mine);
	if (rc != HL_OK || nh == 0)
		return rc;
	st = s->ss.v[0];
	for (i = 0; i < st->nr; i++)
		hl_srun_input_take(st, st->r[i].w);
	if (!hl_srun_wait_for(st, &st->nhello, st->ntasks,
			      hl_now_ms() + l->ssh->start_timeout_s * 1000LL))
		return hl_srun_start_error(st, "start the agent", cause);
	if (nodes_room(st, cause) != HL_OK)
		return HL_ESTART;
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
			rc = hl_rec_put(&b, 'P', names, strlen(names));
		if (rc == HL_OK)
			rc = hl_srun_send_buf(st, &b);
		hl_buf_close(&b);
		if (rc != HL_OK ||
		    !hl_srun_wait_for(st, &s->nport, 1,
				      hl_now_ms() +
					      l->ssh->start_timeout_s * 1000LL))
			return hl_srun_start_error(st, "answer", cause);
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
		   char **sorted, size_t nc, bool input)
{
	size_t k;
	int rc = hl_node_req_put(b, 'R', (uint32_t)w->rank, 0);

	if (rc == HL_OK)
		rc = hl_rec_put(b, 'D', l->ssh->cwd, strlen(l->ssh->cwd));
	for (k = 0; k < env->n && rc == HL_OK; k++)
		if (!has(sorted, nc, env->v[k]))
			rc = hl_rec_put(b, 'E', env->v[k], strlen(env->v[k]));
	for (k = 0; l->argv[k] != NULL && rc == HL_OK; k++)
		rc = hl_rec_put(b, 'A', l->argv[k], strlen(l->argv[k]));
	if (rc == HL_OK && input)
		rc = hl_rec_put(b, 'W', NULL, 0);
	if (rc == HL_OK)
		rc = hl_rec_put(b, 'G', NULL, 0);
	return rc;
}

/* Every rank's job, once: the entries every rank has alike go first as
 * 'C' records, and each rank gets only its own. */
static int srun_start(void *ctx, char **cause)
{
	struct srun *s = ctx;
	const struct hl_launch *l = s->l;
	struct step *st = s->ss.n > 0 ? s->ss.v[0] : NULL;
	struct hl_strvec *env;
	bool *common = NULL;
	char **sorted = NULL;
	struct hl_buf b;
	size_t i, j, t, nc = 0;
	int rc;

	if (st == NULL)
		return HL_OK; /* nobody to start yet */
	hl_srun_input_check(st);
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
				rc = hl_rec_put(&b, 'C', env[0].v[j],
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
			rc = put_job(&b, l, st->r[i].w, &env[i], sorted, nc,
				     st->r[i].w->rank == st->in_rank);
			/* Sent as it grows: srun reads while we write. */
			if (rc == HL_OK && b.len > (1u << 20))
				rc = hl_srun_send_buf(st, &b);
		}
	}
	if (rc == HL_OK)
		rc = hl_rec_put(&b, 'Z', NULL, 0);
	if (rc == HL_OK)
		rc = hl_srun_send_buf(st, &b);
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
	return hl_srun_input_start(st, cause);
}

/* Elastic: a step that has ended (srun, and so its workers) is freed at
 * the next restart, so that a long job's restarts keep no descriptor,
 * thread or memory of it. Its reader is done: joining it waits for
 * nothing. */
static bool step_ended(void *st)
{
	return atomic_load(&((struct step *)st)->finished);
}

static void step_free_any(void *st)
{
	hl_srun_step_free(st);
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
		struct step *was = s->ss.at[w[k]->rank];
		struct srun_rank *old =
			was ? hl_srun_rank_of(was, w[k]->rank) : NULL;

		if (old != NULL)
			atomic_store(&old->done, true);
	}
	hl_sessions_sweep(&s->ss, step_ended, step_free_any);
	rc = hl_srun_step_start(s, &host, 1, w, (size_t)n, cause);
	if (rc != HL_OK)
		return rc;
	st = s->ss.v[s->ss.n - 1];
	hl_buf_init(&b);
	rc = hl_node_req_put(&b, 'T', 0, 0);
	for (k = 0; k < n && rc == HL_OK; k++) {
		hl_strvec_init(&env);
		rc = hl_spawn_remote_env(l, w[k], &env);
		if (rc == HL_OK)
			rc = put_job(&b, l, w[k], &env, NULL, 0, false);
		hl_strvec_close(&env);
	}
	if (rc == HL_OK)
		rc = hl_rec_put(&b, 'Z', NULL, 0);
	if (rc == HL_OK)
		rc = hl_srun_send_buf(st, &b);
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
	struct step *st = s->ss.at[w->rank];
	struct hl_buf b;
	int rc;

	if (st == NULL || st->in_fd < 0)
		return HL_OK;
	hl_buf_init(&b);
	rc = hl_node_req_put(&b, 'K', (uint32_t)w->rank, sig);
	if (rc == HL_OK)
		rc = hl_srun_send_buf(st, &b);
	hl_buf_close(&b);
	return rc;
}

static bool srun_helper(void *ctx, pid_t pid)
{
	struct srun *s = ctx;
	size_t i;

	for (i = 0; s != NULL && i < s->ss.n; i++) {
		const struct step *st = s->ss.v[i];

		if (st->pid > 0 && st->pid == pid)
			return true;
	}
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
	for (i = 0; i < s->ss.n; i++) {
		struct step *st = s->ss.v[i];

		hl_srun_input_stop(st); /* its writes to in_fd first */
		if (st->in_fd >= 0) {
			close(st->in_fd);
			st->in_fd = -1;
		}
	}
	deadline = hl_now_ms() + s->l->grace_ms + 5000;
	for (i = 0; i < s->ss.n; i++) {
		const struct step *st = s->ss.v[i];
		struct pollfd pf = {st->pidfd, POLLIN, 0};
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
	hl_sessions_close(&s->ss, step_free_any);
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
