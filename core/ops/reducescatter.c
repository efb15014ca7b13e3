/* ops/reducescatter.c: how a reducescatter runs. On the CPU: the input is
 * copied (and prescaled) into a working buffer, the hosts' shared
 * segments (shm.h: the hierarchical allreduce, each rank copying out
 * only its rows; across hosts no rank's connection then carries more
 * than 1/L of the data, where the ring's would carry (N-1)/N of it also
 * between the ranks of one host), or the ring's reduce-scatter (ring.h)
 * leaves this rank's rows of the result in it, and they are averaged,
 * postscaled and copied out. On the GPU: ncclReduceScatter
 * (gpu.h). The split is Horovod's: rows / size each, the first
 * rows % size ranks one more. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/reduce.h"
#include "algo/ring.h"

static int cpu_reducescatter(struct hvd__engine *e, struct hvd__req *r)
{
	enum hvd_dtype t = (enum hvd_dtype)r->m.dtype;
	enum hvd_op op = (enum hvd_op)r->m.op;
	size_t es = hvd__dtype_size(t), count = (size_t)r->m.count, start, len;
	bool own;
	char *work = hvd__scratch(&e->buf, count * es, &own);
	int rc;

	if (work == NULL)
		return HVD_ENOMEM;
	if (count > 0)
		memcpy(work, r->sendbuf, count * es);
	hvd__scale(work, count, t, r->m.prescale);
	hvd__ring_chunk(count, (size_t)r->m.block, e->comm.size, e->comm.rank,
			&start, &len);
	if (e->hier.shm != NULL && e->k.shm_allreduce)
		rc = hvd__shm_reduce_keep(e->hier.shm, &e->hier.across, work,
					  count * es, start * es,
					  (start + len) * es, t,
					  op == HVD_AVERAGE ? HVD_SUM : op,
					  hvd__transport_timeout_ms());
	else
		rc = hvd__ring_reducescatter(&e->comm, work, count,
					     (size_t)r->m.block, t,
					     op == HVD_AVERAGE ? HVD_SUM : op);
	if (rc == HVD_OK && len > 0) {
		char *mine = work + start * es;

		if (op == HVD_AVERAGE)
			hvd__divide(mine, len, t, e->comm.size);
		hvd__scale(mine, len, t, r->m.postscale);
		memcpy(r->recvbuf, mine, len * es);
	}
	if (own)
		free(work);
	return rc;
}

static int gpu_reducescatter(struct hvd__engine *e, struct hvd__req *r)
{
	size_t *counts = calloc((size_t)e->comm.size, sizeof(*counts)), start;
	int i, rc = counts == NULL ? HVD_ENOMEM : hvd__gpu_engine(e);

	for (i = 0; rc == HVD_OK && i < e->comm.size; i++)
		hvd__ring_chunk((size_t)r->m.count, (size_t)r->m.block,
				e->comm.size, i, &start, &counts[i]);
	if (rc == HVD_OK)
		rc = hvd__gpu_reducescatter(
			e->gpu, r->sendbuf, r->recvbuf, counts,
			(enum hvd_dtype)r->m.dtype, (enum hvd_op)r->m.op,
			r->m.prescale * r->m.postscale, r->ready, e->gpu_why,
			sizeof(e->gpu_why));
	free(counts);
	return rc;
}

int hvd__op_reducescatter(struct hvd__engine *e, struct hvd__req *r)
{
	return r->m.gpu ? gpu_reducescatter(e, r) : cpu_reducescatter(e, r);
}
