/* ops/join.c: hvd_join(). A rank that runs out of data submits a join;
 * the coordinator tells every rank, in the ordered responses, which rank
 * joined, so every rank agrees on the joined set at the same point. From
 * then on the joined rank takes part in the others' collectives with
 * stand-ins (fusion.c), and an average divides by the ranks that have not
 * joined (ops/allreduce.c). When the last rank joins, every rank's join
 * completes with that rank's number, and the set starts empty again. */
#include <string.h>

#include "engine/engine.h"

/* Take this rank's join request out of the pending list. */
static struct hvd__req *take_join(struct hvd__engine *e)
{
	struct hvd__req **pp, *r;

	for (pp = &e->pending_local; (r = *pp) != NULL; pp = &r->next)
		if (r->m.type == HVD__REQ_JOIN) {
			*pp = r->next;
			r->next = NULL;
			return r;
		}
	return NULL;
}

struct hvd__req *hvd__op_join(struct hvd__engine *e, const struct hvd__resp *x)
{
	int rank = x->m.root;

	if (rank < 0 || rank >= e->comm.size || e->joined[rank])
		return NULL;
	e->joined[rank] = 1;
	e->njoined++;
	hvd__debug("rank %d joined (%d of %d)", hvd__job_rank(e, rank),
		   e->njoined, e->comm.size);
	if (e->njoined < e->comm.size)
		return NULL;
	memset(e->joined, 0, (size_t)e->comm.size);
	e->njoined = 0;
	return take_join(e);
}
