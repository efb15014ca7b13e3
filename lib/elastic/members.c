/* elastic/members.c: who is in an elastic job's next generation, and
 * setting it at the rendezvous; a host leaving (its workers ended, its
 * cool-down), and the --reset-limit. */
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

/* Per host: 0 while it may run workers, else when it may return
 * (LLONG_MAX: never); whether the discovery script's last good list has
 * it (without a script every host is listed); whether hvdrun said that
 * its workers stay although it is no longer listed. */
static bool host_out(const struct sup *s, size_t h)
{
	return s->el->hs[h].back != 0;
}

/* Whether w will be a member of the next generation: neither exited nor
 * out with its host. */
bool hl_el_member(const struct sup *s, const struct hl_worker *w)
{
	return !w->exited && !w->removed && !host_out(s, w->host);
}

/* the members of the next generation, every worker that is
 * neither exited nor out with its host: their ids in rank order (hosts in
 * the list's order, a host's workers by id) into ids (room for s->n), and
 * their places into plan. Returns how many, or HL_ENOMEM. */
static int plan_members(const struct sup *s, int *ids, struct hl_plan *plan)
{
	size_t nh = s->l->hosts->n, h;
	size_t *at = calloc(nh + 1, sizeof(*at));
	int *count = calloc(nh, sizeof(*count));
	int i, n = 0, rc = HL_ENOMEM;

	if (at != NULL && count != NULL) {
		for (i = 0; i < s->n; i++)
			if (hl_el_member(s, &s->w[i])) {
				count[s->w[i].host]++;
				n++;
			}
		for (h = 0; h < nh; h++)
			at[h + 1] = at[h] + (size_t)count[h];
		for (i = 0; i < s->n; i++)
			if (hl_el_member(s, &s->w[i]))
				ids[at[s->w[i].host]++] = i;
		rc = hl_plan_counts(plan, count, nh, NULL) == HL_OK ? n
								    : HL_ENOMEM;
	}
	free(at);
	free(count);
	return rc;
}

/* the places of the n workers w about to start (members
 * already): their rank variables, as the next generation will have them. */
int hl_el_place_starting(struct sup *s, struct hl_worker *const *w, int n)
{
	int *ids = calloc((size_t)s->n, sizeof(*ids));
	struct hl_plan plan = {0};
	int k, i, m = ids != NULL ? plan_members(s, ids, &plan) : HL_ENOMEM;

	for (k = 0; k < m; k++)
		for (i = 0; i < n; i++)
			if (ids[k] == w[i]->rank)
				w[i]->place = (struct hl_place){
					.r = plan.ranks[k],
					.size = m,
					.host = s->l->hosts->v[w[i]->host].name,
					.worker_id = w[i]->rank,
					.hosts = (int)plan.nhosts_used};
	hl_plan_close(&plan);
	free(ids);
	return m < 0 ? m : HL_OK;
}

int hl_el_plan_generation(struct sup *s, int *n, enum gen_how how)
{
	int *ids = calloc((size_t)s->n, sizeof(*ids));
	struct hl_plan plan = {0};
	int gen = HL_ENOMEM, i;

	/* Workers started again that have joined the generation now
	 * ending are members like the others: their failure is a loss. */
	for (i = 0; i < s->n; i++)
		if (s->w[i].fresh && hl_rdv_joined(s->l->rdv, s->w[i].rank))
			s->w[i].fresh = false;
	*n = ids != NULL ? plan_members(s, ids, &plan) : HL_ENOMEM;
	if (*n >= 0)
		gen = how == GEN_RESET
			      ? hl_rdv_generation(s->l->rdv, ids, plan.ranks,
						  *n)
			      : hl_rdv_at_commit(s->l->rdv, ids, plan.ranks, *n,
						 how == GEN_REMOVED);
	hl_plan_close(&plan);
	free(ids);
	return gen;
}

/* hvdrun ends worker o (its host left, or it can no longer
 * join); its end is no failure, and SIGKILL follows after the grace
 * period (removals_due). */
void hl_el_remove_worker(struct sup *s, struct hl_worker *o)
{
	o->removed = true;
	s->ops[o->remote]->signal(s->ctx[o->remote], o, SIGTERM);
	s->ops[o->remote]->signal(s->ctx[o->remote], o, SIGCONT);
	s->el->removal_deadline = hl_now_ms() + s->l->grace_ms;
	s->el->removal_killed = false;
}

void hl_el_clear_fresh(struct sup *s)
{
	int i;

	for (i = 0; i < s->n; i++)
		s->w[i].fresh = false;
}

/* host leaves the job, its workers ended, for its cool-down
 * (returned, in seconds) or for good (-1). */
long long hl_el_cooldown_end(const struct sup *s, int *wait_s)
{
	const struct hl_launch *l = s->l;
	int span;

	*wait_s = -1;
	if (!l->cooldown)
		return LLONG_MAX;
	span = l->cooldown_max_s - l->cooldown_min_s + 1;
	*wait_s = l->cooldown_min_s + (int)(random() % span);
	return hl_now_ms() + *wait_s * 1000LL;
}

int hl_el_host_leaves(struct sup *s, size_t host)
{
	int i, wait_s;

	s->el->hs[host].back = hl_el_cooldown_end(s, &wait_s);
	hl_rdv_hosts_removed(s->l->rdv);
	for (i = 0; i < s->n; i++) {
		struct hl_worker *o = &s->w[i];

		if (!o->exited && o->host == host)
			hl_el_remove_worker(s, o);
	}
	return wait_s;
}

/* whether one more generation (hosts added or removed; every
 * generation after the first counts, as horovodrun counts them) would
 * pass --reset-limit: then the job stops, with status 1, saying why
 * (host: the host whose change it was, what: what happened to it). */
bool hl_el_past_reset_limit(struct sup *s, const char *what, size_t host)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_NOT_READY, -1, NULL, NULL, 0};
	char text[384];

	if (l->reset_limit <= 0 || s->el->resets < l->reset_limit)
		return false;
	snprintf(
		text, sizeof(text),
		"host %s %s, but the job has changed %d times already (--reset-limit %d)",
		l->hosts->v[host].name, what, s->el->resets, l->reset_limit);
	ev.text = text;
	hl_spawn_event(l, &ev);
	s->failed = true;
	s->exit_code = 1;
	hl_sup_terminate(s, SIGTERM);
	return true;
}

/* when the first host waiting for the end of its cool-down
 * may return; LLONG_MAX when none waits. */
long long hl_el_next_return(const struct sup *s)
{
	long long next = LLONG_MAX;
	size_t h;

	for (h = 0; s->l->rdv != NULL && h < s->l->hosts->n; h++)
		if (s->el->hs[h].back != 0 && s->el->hs[h].back < next)
			next = s->el->hs[h].back;
	return next;
}
