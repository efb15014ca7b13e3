/* elastic/grow.c: an elastic job growing: hosts back after their
 * cool-down, hosts with free slots, and the discovery script's list as
 * the pool of hosts (new ones join, unlisted ones leave). */
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
#include "util/proc.h"

/* up to want records for workers on host h, into s->el->again: its
 * own earlier ones first (a host that returns keeps its ids), then any
 * free one (the first pass took every free one of h's, or enough). */
static int pick_records(struct sup *s, size_t h, int want)
{
	int i, n = 0, pass;

	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < s->n && n < want; i++)
			if (s->w[i].exited &&
			    (s->w[i].host == h) == (pass == 0))
				s->el->again[n++] = &s->w[i];
	return n;
}

/* start the n workers of s->el->again on host h. Returns how many
 * started; on a failure none, and the host is out as a failed host is
 * (for its cool-down, or for good), those of its workers that started
 * ended. */
static int start_on(struct sup *s, size_t h, int n, char *text, size_t len)
{
	const struct hl_launch *l = s->l;
	struct hl_worker **again = s->el->again;
	bool remote = hl_worker_remote(l, h);
	struct hl_event ev = {HL_EV_GROW, -1, l->hosts->v[h].name, text, 0};
	char *cause = NULL;
	int i, started = 0, rc = HL_OK, wait_s;
	size_t at;

	for (i = 0; i < n; i++) {
		struct hl_worker *w = again[i];

		w->exited = w->removed = false;
		w->status = 0;
		w->pid = 0;
		w->fresh = true;
		w->host = h;
		w->remote = remote;
		if (rc == HL_OK && l->output_dir != NULL &&
		    w->out[0].tee_fd < 0)
			rc = hl_out_open_files(w->out, l->output_dir, w->rank,
					       l->max_np, &cause);
	}
	if (rc == HL_OK)
		rc = hl_el_place_starting(s, again, n);
	/* A worker may register before the generation with it is
	 * announced (hl_el_regrow, after the starts): it waits for it. */
	for (i = 0; rc == HL_OK && i < n; i++)
		hl_rdv_expect(l->rdv, again[i]->rank);
	if (rc == HL_OK)
		rc = s->ops[remote]->restart(s->ctx[remote], again, n, &cause);
	if (rc != HL_OK) {
		/* What would not start, or start again on and on (a folder
		 * or program missing there), is a failed host's case. */
		s->el->hs[h].back = hl_el_cooldown_end(s, &wait_s);
		for (i = 0; i < n; i++)
			if (again[i]->remote || again[i]->pid <= 0)
				again[i]->exited = true;
			else
				hl_el_remove_worker(s, again[i]);
		at = (size_t)snprintf(text, len, "could not start workers: %s",
				      cause ? cause : "out of memory");
		if (at < len && wait_s >= 0)
			snprintf(text + at, len - at, "; it may return in %d s",
				 wait_s);
		else if (at < len)
			snprintf(
				text + at, len - at,
				"; it stays out (no --blacklist-cooldown-range)");
		free(cause);
		hl_spawn_event(l, &ev);
	}
	for (i = 0; i < n; i++) {
		if (again[i]->exited)
			continue;
		if (!again[i]->remote)
			hl_watchdog_add(&s->wd, again[i]->pid);
		started += !again[i]->removed;
	}
	return started;
}

/* how many workers host h may start now, with live workers
 * running: its free slots, while fewer than --max-np run and hvdrun's
 * limit on open files has room for them (*cut: the slots it has no room
 * for); 0 while it is unlisted, in its cool-down, or its last workers
 * still end, and, with a discovery script, until a list that came after
 * its cool-down names it (a list changed during the cool-down is seen
 * first, however late its run). */
static int room_on(const struct sup *s, size_t h, long long now, int live,
		   int *cut)
{
	const struct hl_launch *l = s->l;
	long used = HL_FDS_BASE, fit;
	int i, here = 0, want;

	*cut = 0;
	if (!s->el->hs[h].listed || s->el->hs[h].back > now)
		return 0;
	if (l->discovery != NULL && s->el->hs[h].back != 0 &&
	    s->el->disc_at < s->el->hs[h].back)
		return 0;
	for (i = 0; i < s->n; i++) {
		if (s->w[i].exited)
			continue;
		here += s->w[i].host == h;
		used += hl_worker_fds(l, s->w[i].host);
	}
	if (s->el->hs[h].back != 0 && here > 0)
		return 0; /* its last workers are still ending */
	want = l->hosts->v[h].slots - here;
	if (want > l->max_np - live)
		want = l->max_np - live;
	fit = (hl_nofile_limit() - used) / hl_worker_fds(l, h);
	if (want > 0 && fit < want) {
		*cut = want - (fit > 0 ? (int)fit : 0);
		want -= *cut;
	}
	return want > 0 ? want : 0;
}

/* Says once, while it lasts, that hvdrun's limit on open files keeps
 * cut of host h's free slots empty. */
static void tell_cut(struct sup *s, size_t h, int want, int cut)
{
	char text[256];
	struct hl_event ev = {HL_EV_GROW, -1, s->l->hosts->v[h].name, text, 0};

	if (cut == 0 || s->el->hs[h].cut_told == cut) {
		s->el->hs[h].cut_told = cut;
		return;
	}
	s->el->hs[h].cut_told = cut;
	snprintf(
		text, sizeof(text),
		"has %d free slots; hvdrun may open %ld files (its hard limit on open files, ulimit -Hn), room for %d workers more: raise it to use the others",
		want + cut, hl_nofile_limit(), want);
	hl_spawn_event(s->l, &ev);
}

/* hosts with room start workers. Normally the running ones
 * take them in at their next commit; below --min-np (waiting for hosts)
 * they start only once enough can, and the waiting workers and they form
 * the next generation at once. */
void hl_el_regrow(struct sup *s)
{
	const struct hl_launch *l = s->l;
	long long now = hl_now_ms();
	bool below = s->el->below_until != 0;
	size_t h;
	int i, live = 0, started = 0, gen, could, cut;
	char text[256];

	if (s->finishing || s->failed || s->signal != 0 ||
	    (!s->el->pool_changed && hl_el_next_return(s) > now))
		return;
	s->el->pool_changed = false;
	for (i = 0; i < s->n; i++)
		live += !s->w[i].exited;
	for (h = 0, could = live; below && h < l->hosts->n; h++)
		could += room_on(s, h, now, could, &cut);
	if (below && could < l->min_np)
		return; /* not yet enough: wait on */
	for (h = 0; h < l->hosts->n && live < l->max_np; h++) {
		struct hl_event ev = {HL_EV_GROW, -1, l->hosts->v[h].name, text,
				      0};
		bool back = s->el->hs[h].back != 0;
		int n, want = room_on(s, h, now, live, &cut);

		tell_cut(s, h, want, cut);
		if (want == 0)
			continue;
		if (started == 0 &&
		    hl_el_past_reset_limit(s,
					   back ? "is back after its cool-down"
						: "has free slots",
					   h))
			return;
		s->el->hs[h].back = 0;
		n = start_on(s, h, pick_records(s, h, want), text,
			     sizeof(text));
		live += n;
		started += n;
		if (n == 0)
			continue;
		snprintf(text, sizeof(text), "%s: %d workers start there",
			 back ? "is back after its cool-down"
			      : "has free slots",
			 n);
		hl_spawn_event(l, &ev);
	}
	if (started == 0)
		return;
	gen = hl_el_plan_generation(s, &live, below ? GEN_RESET : GEN_ADDED);
	if (gen > 0 && (below || hl_rdv_growing(l->rdv)))
		s->el->resets++; /* a generation after the first formed */
	if (gen > 0) {
		struct hl_event ev = {HL_EV_GROW, -1, NULL, text, 0};

		if (below) {
			s->el->below_until = 0;
			hl_el_clear_fresh(s);
		}
		snprintf(
			text, sizeof(text),
			below ? "%d workers form generation %d, --min-np met again"
			      : "%d workers form generation %d once the running ones reach their next commit",
			live, gen);
		hl_spawn_event(l, &ev);
	}
}

/* the index of host f (found by the discovery script) in the
 * host list, its slots updated; a new host is moved there from f. Returns
 * SIZE_MAX when out of memory. */
static size_t pool_host(struct sup *s, struct hl_host *f)
{
	struct hl_hostlist *hl = s->l->hosts;
	struct host_state *hs;
	struct hl_host *v;
	size_t h;

	for (h = 0; h < hl->n; h++)
		if (strcmp(hl->v[h].name, f->name) == 0) {
			hl->v[h].slots = f->slots;
			return h;
		}
	v = realloc(hl->v, (hl->n + 1) * sizeof(*v));
	if (v == NULL)
		return SIZE_MAX;
	hl->v = v;
	hs = realloc(s->el->hs, (hl->n + 1) * sizeof(*hs));
	if (hs == NULL)
		return SIZE_MAX;
	s->el->hs = hs;
	hs[hl->n] = (struct host_state){0, false, false, 0};
	v[hl->n] = *f;
	memset(f, 0, sizeof(*f));
	return hl->n++;
}

/* the discovery script no longer lists host h. Its workers end
 * and the others reset without them, unless fewer than --min-np would
 * remain: then they stay (said once). */
static void unlisted(struct sup *s, size_t h)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_HOSTS, -1, l->hosts->v[h].name, NULL, 0};
	char text[256];
	int i, on = 0, left = 0, gen;

	for (i = 0; i < s->n; i++)
		if (hl_el_member(s, &s->w[i])) {
			on += s->w[i].host == h;
			left += s->w[i].host != h;
		}
	if (on == 0)
		return;
	ev.text = text;
	if (left < l->min_np) {
		if (!s->el->hs[h].kept) {
			snprintf(
				text, sizeof(text),
				"is no longer listed by the discovery script, but without it %d workers would go on, fewer than --min-np %d: its workers stay",
				left, l->min_np);
			hl_spawn_event(l, &ev);
		}
		s->el->hs[h].kept = true;
		return;
	}
	s->el->hs[h].kept = false;
	if (hl_el_past_reset_limit(
		    s, "is no longer listed by the discovery script", h))
		return;
	/* As horovodrun: the others re-join without it at their next
	 * commit, losing no step; its workers end when they come back for
	 * a generation that no longer has them (on_idle), or, if one ends
	 * first, the others reset without them (worker_exited). */
	for (i = 0; i < s->n; i++)
		if (!s->w[i].exited && s->w[i].host == h)
			s->w[i].removed = s->w[i].leaving = true;
	gen = hl_el_plan_generation(s, &left, GEN_REMOVED);
	if (gen < 0)
		return;
	if (hl_rdv_growing(l->rdv))
		s->el->resets++; /* a generation after the first formed */
	snprintf(
		text, sizeof(text),
		"is no longer listed by the discovery script: %d workers go on without it from their next commit (generation %d)",
		left, gen);
	hl_spawn_event(l, &ev);
}

/* a run of the discovery script has ended: its list is the
 * pool now, or its failure is told (once while it stays the same) and
 * the last good list kept. */
void hl_el_discovered(struct sup *s)
{
	const struct hl_launch *l = s->l;
	struct hl_event ev = {HL_EV_HOSTS, -1, NULL, NULL, 0};
	struct hl_hostlist found;
	char *why = NULL, text[1024];
	size_t f, h;
	int rc;

	hl_hostlist_init(&found);
	if (!hl_discovery_done(l->discovery, &found, &rc, &why)) {
		hl_hostlist_close(&found);
		return;
	}
	ev.text = text;
	if (rc != HL_OK) {
		if (s->el->disc_error == NULL ||
		    strcmp(s->el->disc_error, why) != 0) {
			snprintf(
				text, sizeof(text),
				"host discovery script '%s' %s; the last good list stays",
				l->discovery->script, why);
			hl_spawn_event(l, &ev);
			free(s->el->disc_error);
			s->el->disc_error = why;
			why = NULL;
		}
		free(why);
		hl_hostlist_close(&found);
		return;
	}
	if (s->el->disc_error != NULL) {
		snprintf(text, sizeof(text),
			 "host discovery script '%s' works again",
			 l->discovery->script);
		hl_spawn_event(l, &ev);
		free(s->el->disc_error);
		s->el->disc_error = NULL;
	}
	s->el->disc_at = hl_now_ms();
	for (h = 0; h < l->hosts->n; h++)
		s->el->hs[h].listed = false;
	for (f = 0; f < found.n; f++) {
		h = pool_host(s, &found.v[f]);
		if (h == SIZE_MAX) { /* out of memory: change nothing */
			for (h = 0; h < l->hosts->n; h++)
				s->el->hs[h].listed = true;
			break;
		}
		s->el->hs[h].listed = true;
		s->el->hs[h].kept = false;
	}
	hl_hostlist_close(&found);
	for (h = 0; h < l->hosts->n; h++)
		if (!s->el->hs[h].listed)
			unlisted(s, h);
	s->el->pool_changed = true;
}
