/* netlinks.c: see netlinks.h. */
#include "check/netlinks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/linkplan.h"
#include "check/probe_msg.h"

static void take_trips(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_rate(t->g->nc, true, data, len);
}

static void take_rate(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_rate(t->g->nc, false, data, len);
}

static void take_stats(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_stats(t->h, 1, data, len);
}

/* This host's transfer of round r, or NULL (none, or that link failed
 * already); one whose destination has no sink or has failed is failed
 * here. Under the lock. */
static struct hl_nc_link *transfer_of(struct nc_thread *t, size_t r)
{
	struct hl_netcheck *nc = t->g->nc;
	size_t self = (size_t)(t->h - nc->h), i;

	for (i = 0; i < nc->nlinks; i++) {
		struct hl_nc_link *l = &nc->links[i];
		char *why;

		if (l->from != self || l->round != r || l->done)
			continue;
		if (t->g->t[l->to].phase == PH_FAILED)
			why = hl_asprintf("not measured: host '%s' stopped "
					  "answering",
					  nc->h[l->to].host->name);
		else if (nc->h[l->to].sink_port == 0)
			why = hl_asprintf("not measured: the hvdrun on '%s' "
					  "measures no bandwidth (an older "
					  "version: install this one there)",
					  nc->h[l->to].host->name);
		else
			return l;
		hl_nc_link_fail(l, why ? why : "not measured");
		free(why);
	}
	return NULL;
}

/* The bandwidth stage: this host's transfer of each round as the group's
 * round comes (the round trips' rounds, then the data's), then its links'
 * counters again. */
void hl_nch_links(struct nc_thread *t)
{
	struct nc_group *g = t->g;
	struct hl_netcheck *nc = g->nc;
	size_t r, total = 2 * nc->nrounds;
	struct hl_buf req;

	hl_buf_init(&req);
	for (r = 0; r < total; r++) {
		bool trips = r < nc->nrounds, on;
		struct hl_nc_link *l = NULL;
		long long deadline;

		pthread_mutex_lock(&g->lock);
		while (g->round < r && g->stage == ST_LINKS)
			pthread_cond_wait(&g->cond, &g->lock);
		deadline = g->round_deadline;
		on = g->stage == ST_LINKS;
		if (on)
			l = transfer_of(t, trips ? r : r - nc->nrounds);
		pthread_mutex_unlock(&g->lock);
		if (!on)
			break;
		if (l != NULL) {
			const struct hl_nc_host *to = &nc->h[l->to];
			struct hl_pm_transfer x = {
				.id = (long)(l - nc->links),
				.port = to->sink_port,
				.max_ms = trips ? nc->timeout_ms : nc->bw_ms,
				.max_bytes = trips ? 0 : nc->bw_bytes,
				.timeout_ms = nc->timeout_ms};

			snprintf(x.addr, sizeof(x.addr), "%s",
				 to->addrs[l->addr].addr);
			snprintf(x.token, sizeof(x.token), "%s", to->token);
			req.len = 0;
			if (hl_pm_put_transfer(&req, &x) != HL_OK ||
			    !hl_nch_exchange(t, &req, deadline, 'Y', 'Y',
					     trips ? take_trips : take_rate))
				break;
		}
		pthread_mutex_lock(&g->lock);
		t->rounds_done = r + 1;
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
	}
	req.len = 0;
	if (r == total && hl_pm_put_text(&req, 'S', NULL) == HL_OK &&
	    hl_nch_exchange(t, &req, hl_now_ms() + 5000 + nc->timeout_ms, 'L',
			    'E', take_stats)) {
		pthread_mutex_lock(&g->lock);
		t->links_done = true;
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
	}
	hl_buf_close(&req);
}

/* Before the bandwidth stage: the hosts that failed or did not finish
 * their tests are out, and the others select their interfaces (under the
 * lock: a host still testing may yet take results). */
void hl_nch_select_early(struct nc_group *g)
{
	size_t i;

	pthread_mutex_lock(&g->lock);
	for (i = 0; i < g->n; i++) {
		struct hl_nc_host *h = g->t[i].h;

		if (g->t[i].phase == PH_TESTED)
			continue;
		h->probed = false;
		if (h->error == NULL && g->t[i].phase != PH_FAILED)
			h->error =
				hl_asprintf("host '%s' did not answer in time",
					    h->host->name);
	}
	hl_nc_select(g->nc);
	pthread_mutex_unlock(&g->lock);
}

/* Whether every host that measures has finished round r (the last: its
 * counters too). Under the lock. */
static bool round_over(const struct nc_group *g, size_t r)
{
	size_t i;

	for (i = 0; i < g->n; i++) {
		const struct nc_thread *t = &g->t[i];

		if (!t->h->usable || t->phase == PH_FAILED)
			continue;
		if (r < 2 * g->nc->nrounds ? t->rounds_done <= r
					   : !t->links_done)
			return false;
	}
	return true;
}

/* The bandwidth stage's rounds, each bounded: a transfer's waits and its
 * time, and a margin for SSH. */
void hl_nch_measure_links(struct nc_group *g, hl_nc_progress_fn progress,
			  void *arg)
{
	struct hl_netcheck *nc = g->nc;
	long long bound = nc->bw_ms + 3LL * nc->timeout_ms + 3000;
	size_t r, total = 2 * nc->nrounds;

	for (r = 0; r <= total; r++) {
		if (progress != NULL && r < total)
			progress(arg, "measuring links", "rounds", r, total);
		pthread_mutex_lock(&g->lock);
		g->round = r;
		g->round_deadline = hl_now_ms() + bound;
		/* The stage begins with round 0's deadline set. */
		g->stage = ST_LINKS;
		pthread_cond_broadcast(&g->cond);
		while (!round_over(g, r) && hl_now_ms() < g->round_deadline)
			hl_cond_wait_ms(&g->cond, &g->lock, 100);
		pthread_mutex_unlock(&g->lock);
	}
	if (progress != NULL)
		progress(arg, "measuring links", "rounds", total, total);
}
