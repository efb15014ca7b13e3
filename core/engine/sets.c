/* engine/sets.c: see sets.h. */
#include "engine/sets.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "algo/group.h"

void hvd__sets_init(struct hvd__sets *s, bool dynamic)
{
	s->list = NULL;
	s->next_id = 1;
	s->count = 0;
	s->dynamic = dynamic;
	atomic_store(&s->changes, 0);
}

/* The requests still pending in e complete with status, and why; returns
 * how many. */
static int fail_pending(struct hvd__engine *e, int status, const char *why)
{
	struct hvd__req *r, *next;
	int n = 0;

	for (r = e->pending_local; r != NULL; r = next, n++) {
		next = r->next;
		r->next = NULL;
		hvd__req_complete(r, status, why);
	}
	e->pending_local = NULL;
	return n;
}

int hvd__sets_fail(struct hvd__sets *s, int status)
{
	struct hvd__set *set;
	int n = 0;

	for (set = s->list; set != NULL; set = set->next)
		if (set->e != NULL)
			n += fail_pending(set->e, status, NULL);
	return n;
}

static void set_free(struct hvd__set *set, int status, const char *why)
{
	struct hvd__engine *e = set->e;

	if (e != NULL) {
		fail_pending(e, status, why);
		/* Its NCCL communicator: closed with the peers when the set
		 * is removed or the job ends, aborted when the job failed. */
		hvd__gpu_free(e->gpu, status != HVD_OK &&
					      status != HVD_ENOSET &&
					      status != HVD_ESHUTDOWN);
		e->gpu = NULL;
		hvd__bell_close(e->bell);
		hvd__hier_stop(&e->hier);
		if (e->comm.ops != NULL)
			e->comm.ops->close(e->comm.t);
		hvd__engine_close(e);
		free(e);
	}
	free(set->ranks);
	free(set);
}

void hvd__sets_free(struct hvd__sets *s, int status)
{
	struct hvd__set *set, *next;

	pthread_mutex_lock(&s->lock);
	set = s->list;
	s->list = NULL;
	s->count = 0;
	s->next_id = 1;
	pthread_mutex_unlock(&s->lock);
	for (; set != NULL; set = next) {
		next = set->next;
		set_free(set, status, NULL);
	}
}

struct hvd__engine *hvd__sets_engine(struct hvd__sets *s, int id)
{
	struct hvd__set *set;

	for (set = s->list; set != NULL; set = set->next)
		if (set->id == id)
			return set->e;
	return NULL;
}

uint64_t hvd__sets_hash(const int *ranks, int n)
{
	uint64_t h = 14695981039346656037ull;
	int i, b;

	for (i = 0; i < n; i++)
		for (b = 0; b < 4; b++)
			h = (h ^ (uint8_t)((unsigned)ranks[i] >> (8 * b))) *
			    1099511628211ull;
	return h | 1;
}

/* The engine of a set that this rank belongs to: a group of the job's
 * comm, the job's settings, and, where the job's ranks share memory, a
 * segment of the set's ranks on each host when it has as many on each. */
static int set_engine(struct hvd__engine *job, struct hvd__set *set)
{
	struct hvd__engine *e = calloc(1, sizeof(*e));
	int rc;

	if (e == NULL)
		return HVD_ENOMEM;
	e->k = job->k;
	if (!e->k.segment_given)
		e->k.segment = hvd__knobs_segment(set->n);
	e->set = set->id;
	e->members = set->ranks;
	e->tl = job->tl;
	e->spin_now = job->spin_now;
	rc = hvd__group_new(&job->comm, set->ranks, set->n, set->me, &e->comm);
	if (rc == HVD_OK)
		rc = hvd__engine_open(e, set->n);
	if (rc == HVD_OK && job->hier.shm != NULL)
		rc = hvd__hier_subset(&e->hier, &job->hier, &e->comm,
				      set->ranks, set->id);
	if (rc != HVD_OK) {
		hvd__hier_stop(&e->hier);
		if (e->comm.ops != NULL)
			e->comm.ops->close(e->comm.t);
		hvd__engine_close(e);
		free(e);
		return rc;
	}
	/* Its ranks' next agreement of the set's wakes a driver that waits
	 * for a late one (bell.c). */
	e->bell = hvd__bell_open(hvd__bell_net(e), e->hier.shm);
	set->e = e;
	return HVD_OK;
}

static struct hvd__set *find_ranks(struct hvd__sets *s, const int *ranks, int n)
{
	struct hvd__set *set;

	for (set = s->list; set != NULL; set = set->next)
		if (set->n == n &&
		    memcmp(set->ranks, ranks, (size_t)n * sizeof(int)) == 0)
			return set;
	return NULL;
}

static int add(struct hvd__engine *job, struct hvd__req *r)
{
	struct hvd__sets *s = job->sets;
	const int *ranks = r->sendbuf;
	int n = (int)r->m.count, i, rc;
	struct hvd__set *set, **tail, *dup = find_ranks(s, ranks, n);
	char msg[160];

	if (dup != NULL || n == job->comm.size) {
		snprintf(msg, sizeof(msg),
			 "a process set of these %d ranks exists already "
			 "(id %d)",
			 n, dup != NULL ? dup->id : 0);
		hvd__req_finish(r, HVD_EINVAL, msg);
		return HVD_OK;
	}
	set = calloc(1, sizeof(*set));
	if (set == NULL ||
	    (set->ranks = malloc((size_t)n * sizeof(int))) == NULL) {
		free(set);
		hvd__req_finish(r, HVD_ENOMEM, NULL);
		return HVD_ENOMEM; /* the ranks' tables would differ */
	}
	memcpy(set->ranks, ranks, (size_t)n * sizeof(int));
	set->n = n;
	set->me = -1;
	for (i = 0; i < n; i++)
		if (ranks[i] == job->comm.rank)
			set->me = i;
	set->id = s->next_id;
	rc = set->me >= 0 ? set_engine(job, set) : HVD_OK;
	if (rc != HVD_OK) {
		set_free(set, rc, NULL);
		hvd__req_finish(r, rc, NULL);
		return rc;
	}
	pthread_mutex_lock(&s->lock);
	for (tail = &s->list; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = set;
	s->next_id++;
	s->count++;
	pthread_mutex_unlock(&s->lock);
	*(int *)r->recvbuf = set->id;
	hvd__req_finish(r, HVD_OK, NULL);
	return HVD_OK;
}

static int removal(struct hvd__engine *job, struct hvd__req *r)
{
	struct hvd__sets *s = job->sets;
	struct hvd__set **pp, *set;
	int id = r->m.root;
	char msg[96];

	pthread_mutex_lock(&s->lock);
	for (pp = &s->list; *pp != NULL && (*pp)->id != id; pp = &(*pp)->next)
		;
	set = *pp;
	if (set != NULL) {
		*pp = set->next;
		s->count--;
	}
	pthread_mutex_unlock(&s->lock);
	if (set == NULL) {
		snprintf(msg, sizeof(msg), "there is no process set %d", id);
		hvd__req_finish(r, HVD_ENOSET, msg);
		return HVD_OK;
	}
	snprintf(msg, sizeof(msg), "process set %d was removed", id);
	/* The background thread may wait on its bell (a driver removes). */
	if (set->e != NULL)
		hvd__queue_bell_gone(&job->wait_bell, set->e->bell);
	set_free(set, HVD_ENOSET, msg);
	hvd__req_finish(r, HVD_OK, NULL);
	return HVD_OK;
}

int hvd__sets_apply(struct hvd__engine *job, struct hvd__req *r)
{
	if (job->sets == NULL) {
		hvd__req_finish(r, HVD_ENOTSUP, "no process sets here");
		return HVD_OK;
	}
	return r->m.op == HVD__SET_ADD ? add(job, r) : removal(job, r);
}

/* Set id, s->lock held (NULL: none). */
static struct hvd__set *lookup(struct hvd__sets *s, int id)
{
	struct hvd__set *set;

	for (set = s->list; set != NULL && set->id != id; set = set->next)
		;
	return set;
}

int hvd__sets_query(struct hvd__sets *s, int id, int *me, int *n)
{
	struct hvd__set *set;

	if (id == 0) {
		*me = hvd__g.rank;
		*n = hvd__g.size;
		return HVD_OK;
	}
	pthread_mutex_lock(&s->lock);
	set = lookup(s, id);
	if (set != NULL) {
		*me = set->me;
		*n = set->n;
	}
	pthread_mutex_unlock(&s->lock);
	return set != NULL ? HVD_OK : HVD_ENOSET;
}

int hvd__sets_place(struct hvd__sets *s, int id, int rank)
{
	struct hvd__set *set;
	int i, at = -1;

	if (id == 0)
		return rank >= 0 && rank < hvd__g.size ? rank : -1;
	pthread_mutex_lock(&s->lock);
	set = lookup(s, id);
	for (i = 0; set != NULL && i < set->n; i++)
		if (set->ranks[i] == rank)
			at = i;
	pthread_mutex_unlock(&s->lock);
	return set != NULL ? at : HVD_ENOSET;
}

int hvd__sets_ranks(struct hvd__sets *s, int id, int *ranks, int cap)
{
	struct hvd__set *set;
	int i, n;

	if (id == 0) {
		for (i = 0; i < hvd__g.size && i < cap; i++)
			ranks[i] = i;
		return hvd__g.size;
	}
	pthread_mutex_lock(&s->lock);
	set = lookup(s, id);
	n = set != NULL ? set->n : HVD_ENOSET;
	for (i = 0; set != NULL && i < set->n && i < cap; i++)
		ranks[i] = set->ranks[i];
	pthread_mutex_unlock(&s->lock);
	return n;
}

int hvd__sets_ids(struct hvd__sets *s, int *ids, int cap)
{
	struct hvd__set *set;
	int n = 1;

	if (cap > 0)
		ids[0] = 0;
	pthread_mutex_lock(&s->lock);
	for (set = s->list; set != NULL; set = set->next, n++)
		if (n < cap)
			ids[n] = set->id;
	pthread_mutex_unlock(&s->lock);
	return n;
}
