/* elastic/shrink.c: an elastic job going on without a failed worker's
 * host, waiting below --min-np for hosts (--elastic-timeout), and ending
 * the workers it removes. */
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "job/discovery.h"
#include "elastic/internal.h"
#include "launch/watchdog.h"
#include "rdv/server.h"

/* worker w failed (how) and fewer than --min-np would go on,
 * but hosts may return: its host leaves, and the others wait, in
 * hvd_init(), up to --elastic-timeout for enough hosts (regrow, then
 * below_due), as horovodrun's workers do. */
static void wait_below(struct sup *s, const struct hl_worker *w, size_t host,
		       int left, const char *how)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_RESET, w->rank, l->hosts->v[host].name,
			      NULL, 0};
	char text[512];

	hl_el_host_leaves(s, host);
	if (s->el->below_until == 0) {
		s->el->below_until =
			hl_now_ms() + l->elastic_timeout_s * 1000LL;
		s->el->below_code = WIFSIGNALED(w->status)
					    ? 128 + WTERMSIG(w->status)
					    : WEXITSTATUS(w->status);
		if (s->el->below_code == 0)
			s->el->below_code = 1;
		snprintf(s->el->below_why, sizeof(s->el->below_why),
			 "worker %d on %.200s %.256s", w->rank,
			 l->hosts->v[host].name, how);
	}
	snprintf(
		text, sizeof(text),
		"%s; %d workers remain, fewer than --min-np %d: they wait up to %d s (--elastic-timeout) for hosts",
		how, left, l->min_np, l->elastic_timeout_s);
	ev.text = text;
	hl_spawn_event(l, &ev);
}

/* below --min-np for --elastic-timeout: the job ends with the
 * code of the failure that brought it there. */
void hl_el_below_due(struct sup *s)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_NOT_READY, -1, NULL, NULL, 0};
	char text[640];

	if (s->el->below_until == 0 || hl_now_ms() < s->el->below_until ||
	    s->failed || s->signal != 0)
		return;
	snprintf(
		text, sizeof(text),
		"fewer than --min-np %d workers for %d s (--elastic-timeout) since %s",
		l->min_np, l->elastic_timeout_s, s->el->below_why);
	ev.text = text;
	hl_spawn_event(l, &ev);
	s->el->below_until = 0;
	s->failed = true;
	s->exit_code = s->el->below_code;
	hl_sup_terminate(s, SIGTERM);
}

/* worker w failed (how). Its host leaves the job (the host's
 * other workers are ended) and the rest reset without it; a worker
 * started again that fails before its generation formed only takes its
 * host out of the growth. Returns false when the job cannot go on: the
 * reset limit is reached, or fewer than --min-np workers would remain. */
bool hl_el_shrink(struct sup *s, struct hl_worker *w, char *how, size_t howlen)
{
	const struct hl_launch *l = s->l;
	size_t host = w->host;
	struct hl_event ev = {HL_EV_RESET, w->rank, l->hosts->v[host].name,
			      NULL, 0};
	char text[384];
	int i, left = 0, gen, wait_s;
	size_t at = strlen(how);
	/* Started again, it fails before it joined: while growth waits for
	 * the running workers' commit, or after they moved on to form it. */
	bool growth = w->fresh && !hl_rdv_joined(l->rdv, w->rank);

	if (!growth && l->reset_limit > 0 && s->el->resets >= l->reset_limit) {
		snprintf(how + at, howlen - at,
			 " after %d resets (--reset-limit)", s->el->resets);
		return false;
	}
	for (i = 0; i < s->n; i++)
		left += hl_el_member(s, &s->w[i]) && s->w[i].host != host;
	if (!growth && left < l->min_np && left > 0 &&
	    l->elastic_timeout_s > 0 && (l->cooldown || l->discovery)) {
		wait_below(s, w, host, left, how);
		return true;
	}
	if (!growth && left < l->min_np) {
		snprintf(how + at, howlen - at,
			 "; %d workers would go on, fewer than --min-np %d",
			 left, l->min_np);
		return false;
	}
	wait_s = hl_el_host_leaves(s, host);
	gen = hl_el_plan_generation(s, &left, growth ? GEN_ADDED : GEN_RESET);
	if (gen < 0)
		return false;
	if (!growth) {
		hl_el_clear_fresh(
			s); /* workers started again are members now */
		s->el->resets++;
	}
	at = (size_t)snprintf(
		text, sizeof(text),
		growth ? "%s before it joined; its host leaves again and %d workers form generation %d"
		       : "%s; its host leaves the job and %d workers go on (generation %d)",
		how, left, gen);
	if (wait_s >= 0 && at < sizeof(text))
		snprintf(text + at, sizeof(text) - at,
			 "; the host may return in %d s", wait_s);
	ev.text = text;
	hl_spawn_event(l, &ev);
	return true;
}

/* workers ended with their host that outlive the grace period
 * get SIGKILL; remote ones still not heard of 2 s later are given up
 * (their host is unreachable: nothing more will come from it). */
void hl_el_removals_due(struct sup *s)
{
	int i;

	if (s->el->removal_deadline == 0 ||
	    hl_now_ms() < s->el->removal_deadline)
		return;
	if (!s->el->removal_killed) {
		s->el->removal_killed = true;
		s->el->removal_deadline = hl_now_ms() + 2000;
		for (i = 0; i < s->n; i++)
			if (s->w[i].removed && !s->w[i].exited)
				s->ops[s->w[i].remote]->signal(
					s->ctx[s->w[i].remote], &s->w[i],
					SIGKILL);
		return;
	}
	s->el->removal_deadline = 0;
	s->el->removal_killed = false;
	for (i = 0; i < s->n; i++)
		if (s->w[i].removed && !s->w[i].exited && s->w[i].remote) {
			s->w[i].exited = true;
			s->w[i].status = 255 << 8;
			s->el->pool_changed = true;
		}
}

/* the job is finishing (a worker's work is done). Workers
 * started again that have yet to join will never: they end quietly.
 * Once they have joined they are members. */
void hl_el_end_fresh(struct sup *s)
{
	int i;

	for (i = 0; i < s->n; i++) {
		struct hl_worker *o = &s->w[i];

		if (o->fresh && !o->exited &&
		    !hl_rdv_joined(s->l->rdv, o->rank))
			hl_el_remove_worker(s, o);
		o->fresh = false;
	}
}

/* worker w, of a host the discovery script dropped, ended before
 * the others re-joined without it: the generation that waited for it
 * never forms, so the others reset without it now (and its host's other
 * workers end). */
void hl_el_left_early(struct sup *s, struct hl_worker *w)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_RESET, w->rank, l->hosts->v[w->host].name,
			      NULL, 0};
	char text[256];
	int i, left, gen;

	w->leaving = false;
	if (!hl_rdv_growing(l->rdv))
		return; /* the others re-joined already */
	for (i = 0; i < s->n; i++)
		if (s->w[i].leaving && !s->w[i].exited) {
			s->w[i].leaving = false;
			hl_el_remove_worker(s, &s->w[i]);
		}
	gen = hl_el_plan_generation(s, &left, GEN_RESET);
	if (gen < 0)
		return;
	snprintf(
		text, sizeof(text),
		"ended before the others' next commit; %d workers go on without its host (generation %d)",
		left, gen);
	ev.text = text;
	hl_spawn_event(l, &ev);
}
