/* spawn_ssh.c: starts remote workers over SSH with libssh. One session per
 * host (or per `channels_per_session` ranks of a host: sshd's MaxSessions
 * bounds the channels of one session), opened to every host in parallel
 * (at most `concurrency` at once); one exec channel per rank, running
 * `hvdrun --agent` (agent.h). Each session has a thread (ssh_host.c); this
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

#include "launch.h"
#include "spawn.h"
#include "ssh_host.h"
#include "sshconn.h"

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

	for (i = 0; i < g->nhosts; i++)
		if (g->hosts[i].failed)
			return hl_fail(cause, HL_ESTART, "%s",
				       g->hosts[i].error ? g->hosts[i].error
							 : "out of memory");
	for (i = 0; i < g->nhosts; i++) {
		struct ssh_host *h = &g->hosts[i];

		if ((!strcmp(phase, "connect") && !h->connected) ||
		    (!strcmp(phase, "start") && !h->started))
			return hl_fail(
				cause, HL_ESTART,
				"host '%s' did not answer within %d s (start timeout)",
				g->l->hosts->v[h->index].name,
				g->l->ssh->start_timeout_s);
	}
	return hl_fail(cause, HL_ESTART, "SSH start failed");
}

static int ssh_open(void **ctx, const struct hl_launch *l, struct hl_worker *w,
		    int notify_fd, char **cause)
{
	struct ssh_group *g = calloc(1, sizeof(*g));
	int cps = l->ssh->channels_per_session;
	size_t i, hi;
	int r;

	*ctx = g;
	if (g == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	g->l = l;
	g->w = w;
	g->notify_fd = notify_fd;
	pthread_mutex_init(&g->lock, NULL);
	pthread_cond_init(&g->cond, NULL);
	sem_init(&g->slots, 0, (unsigned)l->ssh->concurrency);
	/* At most one session per rank: the upper bound. */
	g->hosts = calloc((size_t)l->plan->size, sizeof(*g->hosts));
	if (g->hosts == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	/* One session per remote host that has ranks; more where the host
	 * has more ranks than sshd lets one session hold (MaxSessions). */
	for (hi = 0; hi < l->hosts->n; hi++) {
		struct ssh_host *h = NULL;
		bool first = true;

		if (!hl_worker_remote(l, hi))
			continue;
		for (r = 0; r < l->plan->size; r++) {
			if (l->plan->ranks[r].host != hi)
				continue;
			if (h == NULL || h->nranks == (size_t)cps) {
				h = &g->hosts[g->nhosts++];
				h->g = g;
				h->index = hi;
				h->ctl[0] = h->ctl[1] = -1;
				h->ranks =
					calloc((size_t)cps, sizeof(*h->ranks));
				if (h->ranks == NULL ||
				    pipe2(h->ctl, O_CLOEXEC) != 0)
					return hl_fail(cause, HL_ESYS,
						       "out of resources");
				fcntl(h->ctl[0], F_SETFL, O_NONBLOCK);
				h->want_port =
					first && l->plan->ranks[0].host == hi;
				first = false;
			}
			h->ranks[h->nranks++].w = &w[r];
		}
	}
	for (i = 0; i < g->nhosts; i++) {
		if (hl_thread_create(&g->hosts[i].thread, hl_ssh_host_main,
				     &g->hosts[i]) != HL_OK)
			return hl_fail(cause, HL_ESYS, "cannot start a thread");
		g->hosts[i].thread_started = true;
	}
	if (!wait_until(g, &g->nconnected, g->nhosts,
			hl_now_ms() + l->ssh->start_timeout_s * 1000LL))
		return group_error(g, "connect", cause);
	for (i = 0; i < g->nhosts; i++)
		if (g->hosts[i].want_port && g->hosts[i].port > 0) {
			l->env->master_port = g->hosts[i].port;
			if (g->hosts[i].addr[0] != '\0' &&
			    hl_master_addr(l->env, g->hosts[i].addr, cause) !=
				    HL_OK)
				return HL_ENOMEM;
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
	if (!wait_until(g, &g->nstarted, g->nhosts,
			hl_now_ms() + g->l->ssh->start_timeout_s * 1000LL))
		return group_error(g, "start", cause);
	return HL_OK;
}

static int ssh_signal(void *ctx, struct hl_worker *w, int sig)
{
	struct ssh_group *g = ctx;
	size_t i;

	for (i = 0; i < g->nhosts; i++)
		if (g->l->plan->ranks[w->rank].host == g->hosts[i].index &&
		    g->hosts[i].ctl[1] >= 0)
			hl_ssh_host_signal(&g->hosts[i], w->rank, sig);
	return HL_OK;
}

static void ssh_close(void *ctx)
{
	struct ssh_group *g = ctx;
	size_t i, j;

	if (g == NULL)
		return;
	pthread_mutex_lock(&g->lock);
	g->abort = true;
	pthread_cond_broadcast(&g->cond);
	pthread_mutex_unlock(&g->lock);
	for (i = 0; i < g->nhosts; i++) {
		struct ssh_host *h = &g->hosts[i];

		if (h->ctl[1] >= 0)
			close(h->ctl[1]); /* the pump's quit */
		if (h->thread_started)
			pthread_join(h->thread, NULL);
		for (j = 0; j < h->nranks; j++) {
			struct rank_ch *r = &h->ranks[j];

			if (r->ch != NULL) {
				/* The agent sees EOF and ends the worker. */
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
		free(h->ranks);
		free(h->error);
	}
	free(g->hosts);
	sem_destroy(&g->slots);
	pthread_cond_destroy(&g->cond);
	pthread_mutex_destroy(&g->lock);
	free(g);
}

const struct hl_spawner_ops hl_spawn_ssh = {
	.name = "ssh",
	.open = ssh_open,
	.start = ssh_start,
	.signal = ssh_signal,
	.close = ssh_close,
};
