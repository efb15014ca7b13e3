/* elastic/generations.c: an elastic job's generations at the rendezvous
 * (rdv/server.h's hl_rdv_generation and what follows it): which workers
 * form the next world, growth announced at a commit, hosts lost, workers
 * left out, and the notices the running workers get. The rendezvous
 * thread calls them through hl_elastic_generations (rdv/server.h), progress
 * each turn of its loop. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "elastic/supervise.h"
#include "rdv/internal.h"

static int next_generation(struct hl_rdv *r, const int *ids,
			   const struct hl_rank *places, int n);

/* Elastic: worker id's host stopped answering (keepalive). */
static void host_lost(struct hl_rdv *r, uint32_t id)
{
	hl_rdv__tell(r, &r->lost, &r->nlost, &r->caplost, id);
}

/* Elastic: worker id waits for a generation after the running one, which
 * a finishing job never forms. */
static void idle(struct hl_rdv *r, uint32_t id)
{
	hl_rdv__tell(r, &r->idle, &r->nidle, &r->capidle, id);
}

/* Elastic: worker id registered on connection i; an earlier connection
 * of the same id is an incarnation that is gone (a worker started again
 * on a host that returned, while the old one's connection still waits
 * to be read closed), or the same process before its hvd_shutdown: the
 * newest speaks for the id, and the others go, before a generation
 * could seat one of them. */
static void supersede(struct hl_rdv *r, size_t i)
{
	size_t k;

	for (k = 0; k < r->nconns; k++)
		if (k != i && r->conns[k].fd >= 0 && r->conns[k].registered &&
		    r->conns[k].reg.rank == r->conns[i].reg.rank)
			hl_rdv__drop(r, k);
}

/* Elastic: the member index of worker id in the generation, or -1. */
static int member(const struct hl_rdv *r, uint32_t id)
{
	int m;

	for (m = 0; m < r->size; m++)
		if (r->ids[m] == (int)id)
			return m;
	return -1;
}

/* Under lock. The running generation ends: its workers are told, their
 * connections closed, and nobody holds a place in the next (gen + 1). */
static void end_generation(struct hl_rdv *r)
{
	size_t i;

	r->gen++;
	for (i = 0; i < r->nconns; i++) {
		struct conn *c = &r->conns[i];

		if (c->fd >= 0 && c->in_world) {
			uint8_t msg[RDV_NOTICE_LEN];

			rdv_notice_encode(RDV_NOTICE_RESET, r->gen, r->secret,
					  c->reg.nonce, msg);
			(void)!send(c->fd, msg, sizeof(msg),
				    MSG_NOSIGNAL | MSG_DONTWAIT);
			hl_rdv__drop(r, i);
		}
		c->slot = -1;
	}
	r->nregistered = 0;
	r->formed = false;
	r->deadline = 0;
}

/* Same members at the same places: the running generation's next. */
static void same_again(struct hl_rdv *r)
{
	int m;

	end_generation(r);
	for (m = 0; m < r->size; m++) {
		r->places[m].gen = r->gen;
		r->by_rank[m] = -1;
	}
}

/* Whether worker id is in the generation growth announced. */
static bool grow_member(const struct hl_rdv *r, uint32_t id)
{
	int m;

	for (m = 0; r->grow_ids != NULL && m < r->grow_n; m++)
		if (r->grow_ids[m] == (int)id)
			return true;
	return false;
}

/* Whether the supervisor is starting worker id for a generation it has
 * yet to announce. */
static bool expected(const struct hl_rdv *r, uint32_t id)
{
	size_t k;

	for (k = 0; k < r->nexpect; k++)
		if (r->expect[k] == (int)id)
			return true;
	return false;
}

void hl_rdv_expect(struct hl_rdv *r, int id)
{
	pthread_mutex_lock(&r->lock);
	/* Out of memory, the worker is left out if it registers first. */
	(void)hl_rdv__push(&r->expect, &r->nexpect, &r->capexpect,
			   (uint32_t)id);
	pthread_mutex_unlock(&r->lock);
}

static void forget_growth(struct hl_rdv *r)
{
	free(r->grow_ids);
	free(r->grow_places);
	r->grow_ids = NULL;
	r->grow_places = NULL;
	r->grow_n = 0;
}

/* Elastic: seat the workers waiting for a later generation than theirs,
 * turn away those it leaves out, and send the world once it is whole.
 * When every member of a running generation has come back on its own
 * (each called hvd_shutdown and hvd_init), the next one has the same
 * members. */
static void progress(struct hl_rdv *r)
{
	int pass;

	for (pass = 0; pass < 2; pass++) {
		size_t i;
		int back = 0;

		for (i = 0; i < r->nconns; i++) {
			struct conn *c = &r->conns[i];
			int m;

			if (c->fd < 0 || !c->registered || c->in_world ||
			    c->slot >= 0)
				continue;
			if (c->reg.size >= r->gen) {
				back += r->formed && c->reg.size == r->gen &&
					member(r, c->reg.rank) >= 0;
				continue; /* waits for the next generation */
			}
			m = member(r, c->reg.rank);
			if (m < 0 && (grow_member(r, c->reg.rank) ||
				      expected(r, c->reg.rank)))
				continue; /* a new worker: waits for growth */
			if (m < 0 || r->by_rank[m] >= 0) {
				/* Left out: hvd_init fails, and the
				 * supervisor ends a worker it let go. */
				if (m < 0)
					idle(r, c->reg.rank);
				hl_rdv__drop(r, i);
			} else {
				hl_rdv__take_slot(r, i, m);
			}
		}
		if (!r->formed || back != r->size || r->size == 0)
			break;
		/* Every member came back: with the new workers if growth
		 * was announced, else as they were; then seat them. */
		if (r->grow_ids != NULL)
			(void)next_generation(r, r->grow_ids, r->grow_places,
					      r->grow_n);
		else
			same_again(r);
	}
	if (!r->formed && r->size > 0 && r->nregistered == r->size)
		hl_rdv__send_peers(r);
}

/* Under lock. The world of ids (in rank order) at places replaces the
 * running one. Returns its number. */
static int next_generation(struct hl_rdv *r, const int *ids,
			   const struct hl_rank *places, int n)
{
	size_t len = (size_t)(n > 0 ? n : 1);
	int *nids = malloc(len * sizeof(*nids));
	int *nby = malloc(len * sizeof(*nby));
	struct rdv_world *np = calloc(len, sizeof(*np));
	int m;

	if (nids == NULL || nby == NULL || np == NULL) {
		free(nids);
		free(nby);
		free(np);
		return HL_ENOMEM;
	}
	end_generation(r);
	for (m = 0; m < n; m++) {
		nids[m] = ids[m];
		nby[m] = -1;
		np[m] = (struct rdv_world){r->gen,
					   (uint32_t)m,
					   (uint32_t)n,
					   (uint32_t)places[m].local_rank,
					   (uint32_t)places[m].local_size,
					   (uint32_t)places[m].cross_rank,
					   (uint32_t)places[m].cross_size};
	}
	free(r->ids);
	free(r->by_rank);
	free(r->places);
	forget_growth(r); /* ids may have been its own: copied above */
	r->ids = nids;
	r->by_rank = nby;
	r->places = np;
	r->size = n;
	return (int)r->gen;
}

int hl_rdv_generation(struct hl_rdv *r, const int *ids,
		      const struct hl_rank *places, int n)
{
	int gen;

	pthread_mutex_lock(&r->lock);
	gen = next_generation(r, ids, places, n);
	r->nexpect = 0; /* announced */
	pthread_mutex_unlock(&r->lock);
	(void)!write(r->stop[1], "w", 1);
	return gen;
}

/* Under lock: tell every worker of the running generation what (a
 * hosts notice) about generation gen. */
static void notify(struct hl_rdv *r, char what, uint32_t gen)
{
	size_t i;

	for (i = 0; i < r->nconns; i++) {
		struct conn *c = &r->conns[i];
		uint8_t msg[RDV_NOTICE_LEN];

		if (c->fd < 0 || !c->in_world)
			continue;
		rdv_notice_encode(what, gen, r->secret, c->reg.nonce, msg);
		(void)!send(c->fd, msg, sizeof(msg),
			    MSG_NOSIGNAL | MSG_DONTWAIT);
	}
}

void hl_rdv_hosts_removed(struct hl_rdv *r)
{
	pthread_mutex_lock(&r->lock);
	notify(r, RDV_NOTICE_REMOVED, r->gen + 1);
	pthread_mutex_unlock(&r->lock);
}

int hl_rdv_at_commit(struct hl_rdv *r, const int *ids,
		     const struct hl_rank *places, int n, bool removed)
{
	int gen = HL_ENOMEM;

	pthread_mutex_lock(&r->lock);
	r->nexpect = 0; /* announced now */
	if (!r->formed) {
		/* Nothing runs yet: the forming generation gets them. */
		gen = next_generation(r, ids, places, n);
		goto out;
	}
	forget_growth(r);
	r->grow_ids = malloc((size_t)n * sizeof(*r->grow_ids));
	r->grow_places = malloc((size_t)n * sizeof(*r->grow_places));
	if (r->grow_ids == NULL || r->grow_places == NULL) {
		forget_growth(r);
		goto out;
	}
	memcpy(r->grow_ids, ids, (size_t)n * sizeof(*ids));
	memcpy(r->grow_places, places, (size_t)n * sizeof(*places));
	r->grow_n = n;
	gen = (int)r->gen + 1;
	notify(r, removed ? RDV_NOTICE_REMOVED : RDV_NOTICE_HOSTS,
	       (uint32_t)gen);
out:
	pthread_mutex_unlock(&r->lock);
	(void)!write(r->stop[1], "w", 1);
	return gen;
}

/* Under lock: take up to cap of the n ids at v. */
static size_t take(int *v, size_t *n, int *ids, size_t cap)
{
	size_t k = *n < cap ? *n : cap;

	if (k == 0)
		return 0; /* v may be NULL: nothing was ever told */
	memcpy(ids, v, k * sizeof(*ids));
	memmove(v, v + k, (*n - k) * sizeof(*ids));
	*n -= k;
	return k;
}

size_t hl_rdv_take_lost(struct hl_rdv *r, int *ids, size_t cap)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = take(r->lost, &r->nlost, ids, cap);
	pthread_mutex_unlock(&r->lock);
	return n;
}

void hl_rdv_finish(struct hl_rdv *r)
{
	size_t i;

	pthread_mutex_lock(&r->lock);
	if (!r->finishing) {
		r->finishing = true;
		for (i = 0; i < r->nconns; i++) {
			const struct conn *c = &r->conns[i];

			if (c->fd >= 0 && c->registered && !c->in_world)
				idle(r, c->reg.rank);
		}
	}
	pthread_mutex_unlock(&r->lock);
}

size_t hl_rdv_take_idle(struct hl_rdv *r, int *ids, size_t cap)
{
	size_t n;

	pthread_mutex_lock(&r->lock);
	n = take(r->idle, &r->nidle, ids, cap);
	pthread_mutex_unlock(&r->lock);
	return n;
}

bool hl_rdv_growing(struct hl_rdv *r)
{
	bool growing;

	pthread_mutex_lock(&r->lock);
	growing = r->grow_ids != NULL;
	pthread_mutex_unlock(&r->lock);
	return growing;
}

bool hl_rdv_joined(struct hl_rdv *r, int id)
{
	bool joined;

	pthread_mutex_lock(&r->lock);
	joined = r->formed && member(r, (uint32_t)id) >= 0;
	pthread_mutex_unlock(&r->lock);
	return joined;
}

const struct hl_rdv_generations hl_elastic_generations = {
	.host_lost = host_lost,
	.idle = idle,
	.supersede = supersede,
	.progress = progress,
	.forget_growth = forget_growth,
};
