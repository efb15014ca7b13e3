/* ops/reducescatter.c: how a reducescatter runs. On the CPU: the input is
 * copied (and prescaled) into a working buffer, the hosts' shared
 * segments (shm.h: the hierarchical allreduce, each rank copying out
 * only its rows; across hosts no rank's connection then carries more
 * than 1/L of the data, where the ring's would carry (N-1)/N of it also
 * between the ranks of one host), or the ring's reduce-scatter (ring.h)
 * leaves this rank's rows of the result in it, and they are averaged,
 * postscaled and copied out. On the GPU: ncclReduceScatter (gpu.h),
 * integers with scaling factors scaled in host memory. The split is
 * Horovod's: rows / size each, the first rows % size ranks one more. */
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
		hvd__copy(work, r->sendbuf, count * es);
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

		hvd__divide_scale(mine, len, t,
				  op == HVD_AVERAGE ? e->comm.size : 1,
				  r->m.postscale);
		hvd__copy(r->recvbuf, mine, len * es);
	}
	if (own)
		free(work);
	return rc;
}

/* bytes between this rank's GPU and host memory, waited for. */
static int gpu_copy(struct hvd__engine *e, void *dst, const void *src,
		    size_t bytes, bool to_host, void *ready)
{
	int rc = hvd__gpu_copy(e->gpu, dst, src, bytes, to_host, ready,
			       e->gpu_why, sizeof(e->gpu_why));

	return rc == HVD_OK ? hvd__gpu_wait_stream(e->gpu, e->gpu_why,
						   sizeof(e->gpu_why))
			    : rc;
}

/* Integers with scaling factors, as on the CPU (in float64, truncated,
 * saturated): NCCL scales floats only, so the input is prescaled in
 * host memory into the GPU engine's scratch buffer, reduce-scattered
 * from there, and this rank's rows divided and postscaled in host memory
 * on their way back. */
static int gpu_scaled_ints(struct hvd__engine *e, struct hvd__req *r,
			   const size_t *counts)
{
	enum hvd_dtype t = (enum hvd_dtype)r->m.dtype;
	enum hvd_op op = (enum hvd_op)r->m.op;
	size_t es = hvd__dtype_size(t), count = (size_t)r->m.count;
	size_t mine = counts[e->comm.rank];
	void *stage, *in;
	int rc = hvd__gpu_host_buffer(e->gpu, count * es + 1, &stage,
				      e->gpu_why, sizeof(e->gpu_why));

	if (rc == HVD_OK)
		rc = hvd__gpu_scratch(e->gpu, count * es, false, &in,
				      e->gpu_why, sizeof(e->gpu_why));
	if (rc == HVD_OK)
		rc = gpu_copy(e, stage, r->sendbuf, count * es, true, r->ready);
	if (rc == HVD_OK) {
		hvd__scale(stage, count, t, r->m.prescale);
		rc = gpu_copy(e, in, stage, count * es, false, NULL);
	}
	if (rc == HVD_OK)
		rc = hvd__gpu_reducescatter(e->gpu, in, r->recvbuf, counts, t,
					    op == HVD_AVERAGE ? HVD_SUM : op,
					    1.0, NULL, e->gpu_why,
					    sizeof(e->gpu_why));
	if (rc == HVD_OK && mine > 0)
		rc = gpu_copy(e, stage, r->recvbuf, mine * es, true, NULL);
	if (rc == HVD_OK && mine > 0) {
		hvd__divide_scale(stage, mine, t,
				  op == HVD_AVERAGE ? e->comm.size : 1,
				  r->m.postscale);
		rc = gpu_copy(e, r->recvbuf, stage, mine * es, false, NULL);
	}
	return rc;
}

static int gpu_reducescatter(struct hvd__engine *e, struct hvd__req *r)
{
	size_t *counts = calloc((size_t)e->comm.size, sizeof(*counts)), start;
	double scale = r->m.prescale * r->m.postscale;
	int i, rc = counts == NULL ? HVD_ENOMEM : hvd__gpu_engine(e);

	for (i = 0; rc == HVD_OK && i < e->comm.size; i++)
		hvd__ring_chunk((size_t)r->m.count, (size_t)r->m.block,
				e->comm.size, i, &start, &counts[i]);
	/* Integers scale each factor on its own: 0.5 then 2 is no 1. */
	if (rc == HVD_OK && (r->m.prescale != 1.0 || r->m.postscale != 1.0) &&
	    !hvd__dtype_float((enum hvd_dtype)r->m.dtype))
		rc = gpu_scaled_ints(e, r, counts);
	else if (rc == HVD_OK)
		rc = hvd__gpu_reducescatter(
			e->gpu, r->sendbuf, r->recvbuf, counts,
			(enum hvd_dtype)r->m.dtype, (enum hvd_op)r->m.op, scale,
			r->ready, e->gpu_why, sizeof(e->gpu_why));
	free(counts);
	return rc;
}

int hvd__op_reducescatter(struct hvd__engine *e, struct hvd__req *r)
{
	return r->m.gpu ? gpu_reducescatter(e, r) : cpu_reducescatter(e, r);
}
