/* ops/alltoall.c: how an alltoall runs. Each rank first tells every other
 * rank how many elements it will send it, then the blocks go pairwise:
 * in step s (1 to n-1) rank r sends to r+s and receives from r-s, both at
 * once, so every byte crosses the network once, straight to its
 * destination. On the GPU, the same counts, then grouped ncclSend and
 * ncclRecv (gpu.h). */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/reduce.h"

static int mod(int a, int n)
{
	return ((a % n) + n) % n;
}

/* recv[i] = what rank i will send this rank, for every i. */
static int exchange_counts(const struct hvd__comm *c, const uint64_t *send,
			   uint64_t *recv)
{
	int s, rc = HVD_OK;

	recv[c->rank] = send[c->rank];
	for (s = 1; s < c->size && rc == HVD_OK; s++) {
		int to = mod(c->rank + s, c->size),
		    from = mod(c->rank - s, c->size);

		rc = c->ops->sendrecv(c->t, to, &send[to], sizeof(*send), from,
				      &recv[from], sizeof(*recv), NULL, NULL);
	}
	return rc;
}

/* Over the transport (or the host's segment when the job is one host):
 * sb[p] bytes at send + soff[p] to each rank p, rb[p] bytes from it
 * into out + roff[p] (byte counts and offsets). */
static int cpu_alltoall(const struct hvd__engine *e, const char *send,
			const size_t *sb, const size_t *soff, const size_t *rb,
			const size_t *roff, char *out)
{
	const struct hvd__comm *c = &e->comm;
	int s, rc = HVD_OK;

	if (sb[c->rank] > 0)
		hvd__copy(out + roff[c->rank], send + soff[c->rank],
			  sb[c->rank]);
	if (e->hier.job)
		return hvd__shm_alltoallv(e->hier.shm, send, sb, soff, out, rb,
					  roff, hvd__transport_timeout_ms());
	for (s = 1; s < c->size && rc == HVD_OK; s++) {
		int to = mod(c->rank + s, c->size),
		    from = mod(c->rank - s, c->size);

		rc = c->ops->sendrecv(c->t, to, send + soff[to], sb[to], from,
				      out + roff[from], rb[from], NULL, NULL);
	}
	return rc;
}

int hvd__op_alltoall(struct hvd__engine *e, struct hvd__req *r)
{
	size_t n = (size_t)e->comm.size, es, i, total = 0;
	size_t *soff = calloc(n * 4, sizeof(*soff)), *roff, *sb, *rb;
	uint64_t *rcount = calloc(n, sizeof(*rcount));
	char *out = NULL;
	int rc = HVD_ENOMEM;

	es = hvd__dtype_size((enum hvd_dtype)r->m.dtype);
	if (soff == NULL || rcount == NULL)
		goto out;
	roff = soff + n;
	sb = roff + n;
	rb = sb + n;
	if (r->m.gpu && (rc = hvd__gpu_engine(e)) != HVD_OK)
		goto out;
	rc = exchange_counts(&e->comm, r->sendcounts, rcount);
	if (rc != HVD_OK)
		goto out;
	/* Byte counts and offsets; total in elements. */
	for (i = 0; i < n; i++) {
		sb[i] = (size_t)r->sendcounts[i] * es;
		rb[i] = (size_t)rcount[i] * es;
		soff[i] = i ? soff[i - 1] + sb[i - 1] : 0;
		roff[i] = total * es;
		total += (size_t)rcount[i];
	}
	if (r->m.gpu) {
		void *dev = NULL;

		rc = hvd__gpu_alltoall(e->gpu, r->sendbuf, sb, rb, r->ready,
				       &dev, e->gpu_why, sizeof(e->gpu_why));
		out = dev;
	} else {
		out = hvd__result_alloc(total * es);
		rc = out == NULL ? HVD_ENOMEM
				 : cpu_alltoall(e, r->sendbuf, sb, soff, rb,
						roff, out);
	}
	if (rc != HVD_OK)
		goto out;
	for (i = 0; i < n; i++)
		r->recvcounts[i] = (size_t)rcount[i];
	*r->gather_out = out;
	*r->gather_count = total;
	out = NULL;
out:
	if (!r->m.gpu)
		free(out);
	free(soff);
	free(rcount);
	return rc;
}
