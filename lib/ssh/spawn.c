/* ssh/spawn.c: starts remote workers over SSH with libssh. One session per
 * host (or per `channels_per_session` ranks of a host: sshd's MaxSessions
 * bounds the channels of one session), opened to every host in parallel
 * (at most `concurrency` at once); one exec channel per rank, running
 * `hvdrun --agent` (agent.h). Each session has a thread (ssh/host.c); this
 * file drives them as a group: every host connected before any rank
 * starts, a failure anywhere ends them all. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "launch/launch.h"
#include "spawn/sessions.h"
#include "spawn/spawn.h"
#include "ssh/host.h"
#include "ssh/conn.h"

/* Wait until pred holds or the deadline passes. */
static bool wait_until(struct ssh_group *g, const size_t *counter, size_t want,
		       long long deadline_ms)
{
	bool ok;

	pthread_mutex_lock(&g->lock);
	while (*counter < want && g->nfailed == 0 && hl_now_ms() < deadline_ms)
		hl_cond_wait_ms(&g->cond, &g->lock, 50);
	ok = *counter >= want && g->nfailed == 0;
	pthread_mutex_unlock(&g->lock);
	return ok;
}

static int group_error(struct ssh_group *g, const char *phase, char **cause)
{
	size_t i;

	for (i = 0; i < g->ss.n; i++) {
		const struct ssh_host *h = g->ss.v[i];

		if (h->failed)
			return hl_fail(cause, HL_ESTART, "%s",
				       h->error ? h->error : "out of memory");
	}
	for (i = 0; i < g->ss.n; i++) {
		const struct ssh_host *h = g->ss.v[i];

		if ((!strcmp(phase, "connect") && !h->connected) ||
		    (!strcmp(phase, "start") && !h->started))
			return hl_fail(
				cause, HL_ESTART,
				"host '%s' did not answer within %d s (start timeout)",
				h->host.name, g->l->ssh->start_timeout_s);
	}
	return hl_fail(cause, HL_ESTART, "SSH start failed");
}

/* A new session of host hi, for up to `channels_per_session` ranks;
 * NULL when out of resources. */
static struct ssh_host *new_session(struct ssh_group *g, size_t hi)
{
	struct ssh_host *h;

	h = calloc(1, sizeof(*h));
	if (h == NULL)
		return NULL;
	if (hl_sessions_add(&g->ss, h) != HL_OK) {
		free(h);
		return NULL;
	}
	h->g = g;
	h->index = hi;
	h->host = g->l->hosts->v[hi];
	h->ctl[0] = h->ctl[1] = -1;
	h->ranks = calloc((size_t)g->l->ssh->channels_per_session,
			  sizeof(*h->ranks));
	if (h->ranks == NULL || pipe2(h->ctl, O_CLOEXEC) != 0)
		return NULL;
	fcntl(h->ctl[0], F_SETFL, O_NONBLOCK);
	return h;
}

/* Sessions for the n workers w of host hi, from the group's first new
 * one; more than one where the host has more ranks than sshd lets one
 * session hold (MaxSessions). */
static int add_sessions(struct ssh_group *g, size_t hi,
			struct hl_worker *const *w, int n, bool late,
			char **cause)
{
	struct ssh_host *h = NULL;
	int r;

	for (r = 0; r < n; r++) {
		if (h == NULL ||
		    h->nranks == (size_t)g->l->ssh->channels_per_session) {
			h = new_session(g, hi);
			if (h == NULL)
				return hl_fail(cause, HL_ESYS,
					       "out of resources");
			h->late = late;
			h->want_port = !late && r == 0 &&
				       g->l->plan->ranks[0].host == hi;
		}
		h->ranks[h->nranks].w = w[r];
		hl_strvec_init(&h->ranks[h->nranks].env);
		/* Its standard input is the session's now (the first
		 * start's only). */
		hl_ssh_input_init(&h->ranks[h->nranks], w[r]->in_fd);
		w[r]->in_fd = -1;
		if (late &&
		    hl_spawn_remote_env(g->l, w[r], &h->ranks[h->nranks].env) !=
			    HL_OK)
			return hl_fail(cause, HL_ENOMEM, "out of memory");
		h->nranks++;
		hl_sessions_started(&g->ss, w[r]->rank, h);
	}
	return HL_OK;
}

static int start_threads(struct ssh_group *g, size_t from, char **cause)
{
	size_t i;

	for (i = from; i < g->ss.n; i++) {
		struct ssh_host *h = g->ss.v[i];

		if (hl_thread_create(&h->thread, hl_ssh_host_main, h) != HL_OK)
			return hl_fail(cause, HL_ESYS, "cannot start a thread");
		h->thread_started = true;
	}
	return HL_OK;
}

static int ssh_open(void **ctx, const struct hl_launch *l, struct hl_worker *w,
		    int nw, int notify_fd, char **cause)
{
	struct ssh_group *g = calloc(1, sizeof(*g));
	struct hl_worker **mine =
		calloc((size_t)l->plan->size, sizeof(struct hl_worker *));
	size_t i, hi;
	int r, n, rc = HL_OK;

	*ctx = g;
	if (g == NULL) {
		free(mine);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	g->l = l;
	g->w = w;
	g->notify_fd = notify_fd;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	sem_init(&g->slots, 0, (unsigned)l->ssh->concurrency);
	if (mine == NULL || hl_sessions_init(&g->ss, (size_t)nw) != HL_OK) {
		free(mine);
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	}
	/* Sessions of every remote host that has ranks. */
	for (hi = 0; hi < l->hosts->n && rc == HL_OK; hi++) {
		if (!hl_worker_remote(l, hi))
			continue;
		for (r = n = 0; r < l->plan->size; r++)
			if (l->plan->ranks[r].host == hi)
				mine[n++] = &w[r];
		rc = add_sessions(g, hi, mine, n, false, cause);
	}
	free(mine);
	if (rc == HL_OK)
		rc = start_threads(g, 0, cause);
	if (rc != HL_OK)
		return rc;
	if (!wait_until(g, &g->nconnected, g->ss.n,
			hl_now_ms() + l->ssh->start_timeout_s * 1000LL))
		return group_error(g, "connect", cause);
	for (i = 0; i < g->ss.n; i++) {
		struct ssh_host *h = g->ss.v[i];

		if (h->want_port && h->port > 0) {
			l->env->master_port = h->port;
			if (h->addr[0] != '\0' &&
			    hl_master_addr(l->env, h->addr, cause) != HL_OK)
				return HL_ENOMEM;
		}
	}
	return HL_OK;
}

static int ssh_start(void *ctx, char **cause)
{
	struct ssh_group *g = ctx;

	pthread_mutex_lock(&g->lock);
	g->go = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	if (!wait_until(g, &g->nstarted, g->ss.n,
			hl_now_ms() + g->l->ssh->start_timeout_s * 1000LL))
		return group_error(g, "start", cause);
	return HL_OK;
}

/* Session h ends: its thread told to quit and joined, its channels
 * closed (each agent sees EOF and ends its worker), its connection
 * closed. */
static void session_free(struct ssh_host *h)
{
	size_t j;

	if (h->ctl[1] >= 0)
		close(h->ctl[1]); /* the pump's quit */
	if (h->thread_started)
		pthread_join(h->thread, NULL);
	for (j = 0; j < h->nranks; j++) {
		struct rank_ch *r = &h->ranks[j];

		if (r->ch != NULL) {
			ssh_channel_close(r->ch);
			ssh_channel_free(r->ch);
		}
	}
	if (h->s != NULL) {
		ssh_disconnect(h->s);
		ssh_free(h->s);
	}
	if (h->ctl[0] >= 0)
		close(h->ctl[0]);
	for (j = 0; j < h->nranks; j++) {
		hl_strvec_close(&h->ranks[j].env);
		hl_ssh_input_end(&h->ranks[j], NULL);
		hl_buf_close(&h->ranks[j].in_out);
	}
	free(h->ranks);
	free(h->error);
	free(h);
}

/* Elastic: a session whose thread has returned (its workers all ended,
 * or its host was lost) is freed at the next restart, so that a long
 * job's restarts keep no connection, descriptor or thread of it. */
static bool session_ended(void *h)
{
	return atomic_load(&((struct ssh_host *)h)->finished);
}

static void session_free_any(void *h)
{
	session_free(h);
}

/* Elastic: the n workers w of one host again, each in a new session
 * (the host's last ones may be gone with it). Its thread connects and
 * starts them in the background; the go was given long ago. */
static int ssh_restart(void *ctx, struct hl_worker *const *w, int n,
		       char **cause)
{
	struct ssh_group *g = ctx;
	size_t from, j;
	int k, rc;

	hl_sessions_sweep(&g->ss, session_ended, session_free_any);
	from = g->ss.n;
	for (k = 0; k < n; k++) {
		struct ssh_host *old = g->ss.at[w[k]->rank];

		for (j = 0; old != NULL && j < old->nranks; j++)
			if (old->ranks[j].w == w[k])
				atomic_store(&old->ranks[j].superseded, true);
	}
	rc = add_sessions(g, w[0]->host, w, n, true, cause);
	if (rc == HL_OK)
		rc = start_threads(g, from, cause);
	return rc;
}

static int ssh_signal(void *ctx, struct hl_worker *w, int sig)
{
	struct ssh_group *g = ctx;
	struct ssh_host *h = g->ss.at[w->rank];

	if (h != NULL && h->ctl[1] >= 0)
		hl_ssh_host_signal(h, w->rank, sig);
	return HL_OK;
}

static void ssh_close(void *ctx)
{
	struct ssh_group *g = ctx;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	g->abort = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	hl_sessions_close(&g->ss, session_free_any);
	sem_destroy(&g->slots);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

const struct hl_spawner_ops hl_spawn_ssh = {
	.name = "ssh",
	.open = ssh_open,
	.start = ssh_start,
	.restart = ssh_restart,
	.signal = ssh_signal,
	.close = ssh_close,
};
