/* ops/allgather.c: how an allgather runs. Counts may differ per rank, so
 * every rank's count goes round first; then the blocks, through the
 * host's shared segment when the job is one host (shm.h), through the
 * segments and across hosts (hier.h), around the ring (ring.h), or over
 * NCCL (gpu.h), into a buffer of the right size. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "algo/hier.h"
#include "util/reduce.h"
#include "algo/ring.h"

/* len[r] bytes of each rank r, laid end to end in out, this rank's
 * already in place. */
static int allgatherv(struct hvd__engine *e, void *out, const size_t *len)
{
	if (e->hier.job)
		return hvd__shm_allgatherv(e->hier.shm, out, len,
					   hvd__transport_timeout_ms());
	/* Across hosts: through each host's segment, then between hosts,
	 * unless HOROVOD_HIERARCHICAL_ALLGATHER=0 asks for one flat ring. */
	if (e->hier.shm != NULL && e->k.hier_allgather)
		return hvd__hier_allgatherv(&e->hier, &e->buf, e->comm.rank,
					    e->comm.size, out, len);
	return hvd__ring_allgatherv(&e->comm, out, len);
}

/* counts[r] = rank r's local count, for every r. */
static int exchange_counts(struct hvd__engine *e, uint64_t mine,
			   uint64_t *counts)
{
	size_t *eight = calloc((size_t)e->comm.size, sizeof(*eight));
	int i, rc;

	if (eight == NULL)
		return HVD_ENOMEM;
	for (i = 0; i < e->comm.size; i++)
		eight[i] = sizeof(uint64_t);
	counts[e->comm.rank] = mine;
	rc = allgatherv(e, counts, eight);
	free(eight);
	return rc;
}

int hvd__op_allgather(struct hvd__engine *e, struct hvd__req *r)
{
	size_t es = hvd__dtype_size((enum hvd_dtype)r->m.dtype), total = 0;
	size_t *bytes = calloc((size_t)e->comm.size, sizeof(*bytes));
	uint64_t *counts = calloc((size_t)e->comm.size, sizeof(*counts));
	char *out = NULL;
	int i, rc = HVD_ENOMEM;
	size_t off = 0;

	if (bytes == NULL || counts == NULL)
		goto out;
	if (r->m.gpu && (rc = hvd__gpu_engine(e)) != HVD_OK)
		goto out;
	rc = exchange_counts(e, r->local_count, counts);
	if (rc != HVD_OK)
		goto out;
	for (i = 0; i < e->comm.size; i++) {
		bytes[i] = (size_t)counts[i] * es;
		total += bytes[i];
		if (i < e->comm.rank)
			off += bytes[i];
	}
	if (r->m.gpu) {
		void *dev = NULL;

		rc = hvd__gpu_allgather(e->gpu, r->sendbuf, bytes, r->ready,
					&dev, e->gpu_why, sizeof(e->gpu_why));
		if (rc == HVD_OK) {
			*r->gather_out = dev;
			*r->gather_count = total / es;
		}
		goto out;
	}
	out = hvd__result_alloc(total);
	rc = HVD_ENOMEM;
	if (out == NULL)
		goto out;
	if (bytes[e->comm.rank])
		hvd__copy(out + off, r->sendbuf, bytes[e->comm.rank]);
	rc = allgatherv(e, out, bytes);
	if (rc == HVD_OK) {
		*r->gather_out = out;
		*r->gather_count = total / es;
		out = NULL;
	}
out:
	free(out);
	free(bytes);
	free(counts);
	return rc;
}
