/* netlinks.c: see netlinks.h. */
#include "check/netlinks.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check/linkplan.h"
#include "check/probe_msg.h"

static void take_trips(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_rate(t->g->nc, HL_NC_TRIPS, data, len);
}

static void take_rate(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_rate(t->g->nc, HL_NC_DATA, data, len);
}

static void take_retry(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_rate(t->g->nc, HL_NC_RETRY, data, len);
}

static void take_stats(struct nc_thread *t, const char *data, size_t len)
{
	hl_nc_take_stats(t->h, 1, data, len);
}

/* The stage's rounds: the round trips', the data's, the retries'. Under
 * the lock (the retries are known when the data's rounds are over). */
static size_t rounds_of(const struct hl_netcheck *nc)
{
	return 2 * nc->nrounds + nc->nretries;
}

/* Whether link l is measured in stage round r. */
static bool in_round(const struct hl_netcheck *nc, const struct hl_nc_link *l,
		     size_t r)
{
	if (r < nc->nrounds)
		return l->round == r && !l->done;
	if (r < 2 * nc->nrounds)
		return l->round == r - nc->nrounds && !l->done;
	return l->retried && l->ok && l->retry == r - 2 * nc->nrounds;
}

/* This host's transfer of stage round r, or NULL (none, or that link
 * failed already); one whose destination has no sink or has failed is
 * failed here (a retry is not made: the first reading stays). Under the
 * lock. */
static struct hl_nc_link *transfer_of(struct nc_thread *t, size_t r)
{
	struct hl_netcheck *nc = t->g->nc;
	size_t self = (size_t)(t->h - nc->h), i;

	for (i = 0; i < nc->nlinks; i++) {
		struct hl_nc_link *l = &nc->links[i];
		char *why;

		if (l->from != self || !in_round(nc, l, r))
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
 * round comes (the round trips' rounds, the data's, the retries'), then
 * its links' counters again. */
void hl_nch_links(struct nc_thread *t)
{
	struct nc_group *g = t->g;
	struct hl_netcheck *nc = g->nc;
	bool all = false;
	size_t r;
	struct hl_buf req;

	hl_buf_init(&req);
	for (r = 0;; r++) {
		enum hl_nc_take what = r < nc->nrounds	     ? HL_NC_TRIPS
				       : r < 2 * nc->nrounds ? HL_NC_DATA
							     : HL_NC_RETRY;
		struct hl_nc_link *l = NULL;
		long long deadline;
		bool on;

		pthread_mutex_lock(&g->lock);
		while (g->round < r && g->stage == ST_LINKS)
			pthread_cond_wait(&g->cond, &g->lock);
		deadline = g->round_deadline;
		on = g->stage == ST_LINKS;
		all = on && r == rounds_of(nc);
		if (on && !all)
			l = transfer_of(t, r);
		pthread_mutex_unlock(&g->lock);
		if (!on || all)
			break;
		if (l != NULL) {
			const struct hl_nc_host *to = &nc->h[l->to];
			struct hl_pm_transfer x = {
				.id = (long)(l - nc->links),
				.port = to->sink_port,
				.max_ms = what == HL_NC_TRIPS ? nc->timeout_ms
							      : nc->bw_ms,
				.max_bytes =
					what == HL_NC_TRIPS ? 0 : nc->bw_bytes,
				.timeout_ms = nc->timeout_ms};

			snprintf(x.addr, sizeof(x.addr), "%s",
				 to->addrs[l->addr].addr);
			snprintf(x.token, sizeof(x.token), "%s", to->token);
			req.len = 0;
			if (hl_pm_put_transfer(&req, &x) != HL_OK ||
			    !hl_nch_exchange(t, &req, deadline, 'Y', 'Y',
					     what == HL_NC_TRIPS  ? take_trips
					     : what == HL_NC_DATA ? take_rate
								  : take_retry))
				break;
		}
		pthread_mutex_lock(&g->lock);
		t->rounds_done = r + 1;
		pthread_cond_broadcast(&g->cond);
		pthread_mutex_unlock(&g->lock);
	}
	req.len = 0;
	if (all && hl_pm_put_text(&req, 'S', NULL) == HL_OK &&
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
		if (r < rounds_of(g->nc) ? t->rounds_done <= r : !t->links_done)
			return false;
	}
	return true;
}

/* The bandwidth stage's rounds, each bounded: a transfer's waits and its
 * time, and a margin for SSH. When the data's rounds are over, the slow
 * links' retries are planned (and their rounds added). */
int hl_nch_measure_links(struct nc_group *g, hl_nc_progress_fn progress,
			 void *arg)
{
	struct hl_netcheck *nc = g->nc;
	long long bound = nc->bw_ms + 3LL * nc->timeout_ms + 3000;
	size_t r, first = 2 * nc->nrounds;
	int rc = HL_OK;

	for (r = 0; r <= rounds_of(nc); r++) {
		pthread_mutex_lock(&g->lock);
		if (r == first)
			rc = hl_nc_plan_retries(nc);
		pthread_mutex_unlock(&g->lock);
		if (rc != HL_OK)
			break;
		if (progress != NULL && r < first)
			progress(arg, "measuring links", "rounds", r, first);
		else if (progress != NULL && r < rounds_of(nc))
			progress(arg, "measuring slow links again", "rounds",
				 r - first, nc->nretries);
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
	if (progress != NULL && rc == HL_OK)
		progress(arg, "measuring links", "rounds", first, first);
	return rc;
}
