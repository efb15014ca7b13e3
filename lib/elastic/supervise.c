/* elastic/supervise.c: an elastic job's hooks in the supervisor's loop
 * (supervise.h, launch.h's struct hl_sup_hooks): its state made and
 * freed, a worker's end and failure, the rendezvous's reports, the
 * discovery script's descriptors, and each turn's due steps. The steps
 * themselves are members.c's, shrink.c's and grow.c's. */
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "job/discovery.h"
#include "elastic/internal.h"
#include "elastic/supervise.h"
#include "launch/sup.h"
#include "launch/watchdog.h"
#include "rdv/server.h"

static int el_open(struct sup *s, char **cause)
{
	const struct hl_launch *l = s->l;
	struct hl_elastic *e = calloc(1, sizeof(*e));
	size_t h;
	int n;

	s->el = e;
	if (e == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	if (l->cooldown) /* hosts that fail together return apart */
		srandom((unsigned)hl_now_ms() ^ (unsigned)getpid());
	e->hs = calloc(l->hosts->n, sizeof(*e->hs));
	e->again = calloc((size_t)s->n, sizeof(struct hl_worker *));
	if (e->hs == NULL || e->again == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	for (h = 0; h < l->hosts->n; h++)
		e->hs[h].listed = true;
	e->pool_changed = true; /* slots the plan left free */
	/* The first generation is the plan. */
	if (hl_el_plan_generation(s, &n, GEN_RESET) < 0)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	return HL_OK;
}

static void el_close(struct sup *s)
{
	if (s->el != NULL) {
		free(s->el->hs);
		free(s->el->again);
		free(s->el->disc_error);
		free(s->el);
		s->el = NULL;
	}
	if (s->l->discovery != NULL)
		hl_discovery_close(s->l->discovery);
}

static void el_ended(struct sup *s, struct hl_worker *w, bool success)
{
	s->el->pool_changed = true;
	if (success) {
		if (!s->finishing) {
			hl_el_end_fresh(s);
			/* As horovodrun: a worker's success ends the job; the
			 * others finish, and those that wait for a world that
			 * will never form are stopped (on_idle). */
			s->el->finished_by = w->rank;
			hl_rdv_finish(s->l->rdv);
		}
		return;
	}
	if (w->leaving && !s->failed && s->signal == 0)
		hl_el_left_early(s, w);
}

static bool el_failed(struct sup *s, struct hl_worker *w, char *how,
		      size_t howlen)
{
	return !s->finishing && hl_el_shrink(s, w, how, howlen);
}

/* The rendezvous left worker w out of the generation that formed (its
 * host was dropped: it ends now), or w waits for a generation that will
 * never form (the job is finishing). Either end is no failure. */
static void on_idle(struct sup *s, struct hl_worker *w)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_RESET, w->rank, l->hosts->v[w->host].name,
			      NULL, 0};
	char text[160];

	if (w->exited || s->failed || s->signal != 0)
		return;
	if (w->leaving) {
		w->leaving = false;
		hl_el_remove_worker(s, w);
		return;
	}
	if (!s->finishing || w->removed)
		return;
	snprintf(
		text, sizeof(text),
		"waits for a new generation, but worker %d finished its work: the job is done, so it is stopped",
		s->el->finished_by);
	ev.text = text;
	hl_spawn_event(l, &ev);
	hl_el_remove_worker(s, w);
}

static void el_report(struct sup *s,
		      void (*lost)(struct sup *s, struct hl_worker *w))
{
	int ids[16];
	size_t k, got;

	while ((got = hl_rdv_take_lost(s->l->rdv, ids, 16)) > 0)
		for (k = 0; k < got; k++)
			if (ids[k] >= 0 && ids[k] < s->n &&
			    !s->w[ids[k]].exited)
				lost(s, &s->w[ids[k]]);
	while ((got = hl_rdv_take_idle(s->l->rdv, ids, 16)) > 0)
		for (k = 0; k < got; k++)
			if (ids[k] >= 0 && ids[k] < s->n)
				on_idle(s, &s->w[ids[k]]);
}

/* The discovery script's run is a child of hvdrun. */
static bool el_child(const struct sup *s, pid_t pid)
{
	return s->l->discovery != NULL && pid == s->l->discovery->pid;
}

static bool el_reaped(struct sup *s, pid_t pid, int status)
{
	return s->l->discovery != NULL &&
	       hl_discovery_reaped(s->l->discovery, pid, status);
}

/* The discovery script runs while the job does: NULL once it is over. */
static struct hl_discovery *discovery(struct sup *s)
{
	struct hl_elastic *e = s->el;

	if (s->l->discovery == NULL || e->disc_closed)
		return NULL;
	if (s->phase != PH_RUNNING || s->finishing || s->failed ||
	    s->signal != 0) {
		hl_discovery_close(s->l->discovery);
		e->disc_closed = true;
		return NULL;
	}
	return s->l->discovery;
}

static long long sooner(long long t, long long due)
{
	return due < t ? (due > 0 ? due : 0) : t;
}

static int el_timeout(struct sup *s, long long now)
{
	struct hl_discovery *disc = discovery(s);
	long long t = LLONG_MAX, back;

	if (s->el->removal_deadline != 0)
		t = 50; /* look for the removed workers' ends */
	if (disc != NULL)
		t = sooner(t, hl_discovery_tick(disc, now));
	if (s->el->below_until != 0)
		t = sooner(t, s->el->below_until - now);
	back = hl_el_next_return(s);
	if (back != LLONG_MAX)
		t = sooner(t, back - now);
	return t == LLONG_MAX ? -1 : (int)(t < INT_MAX ? t : INT_MAX);
}

static int el_fds(struct sup *s, struct pollfd *pf)
{
	struct hl_discovery *disc = discovery(s);
	int j;

	if (disc == NULL)
		return 0;
	for (j = 0; j < 2; j++)
		pf[j] = (struct pollfd){disc->fd[j], POLLIN, 0};
	return 2;
}

static void el_polled(struct sup *s, const struct pollfd *pf, int n)
{
	if (n == 2 && (pf[0].revents || pf[1].revents))
		hl_discovery_read(s->l->discovery);
}

static void el_tick(struct sup *s)
{
	hl_el_removals_due(s);
	hl_el_below_due(s);
	if (discovery(s) != NULL)
		hl_el_discovered(s);
	hl_el_regrow(s);
}

const struct hl_sup_hooks hl_elastic_hooks = {
	.open = el_open,
	.close = el_close,
	.ended = el_ended,
	.failed = el_failed,
	.report = el_report,
	.child = el_child,
	.reaped = el_reaped,
	.timeout = el_timeout,
	.fds = el_fds,
	.polled = el_polled,
	.tick = el_tick,
};
