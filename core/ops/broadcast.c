/* ops/broadcast.c: how a broadcast runs: the root's buffer to every rank,
 * through the hosts' shared segments and across hosts by slices (hier.h),
 * by the ring's pipelined chain (ring.h), or over NCCL (gpu.h). */
#include "engine/engine.h"
#include "algo/hier.h"
#include "util/reduce.h"
#include "algo/ring.h"

int hvd__op_broadcast(struct hvd__engine *e, struct hvd__req *r)
{
	size_t bytes = (size_t)r->m.count *
		       hvd__dtype_size((enum hvd_dtype)r->m.dtype);
	int rc;

	if (!r->m.gpu && e->hier.shm != NULL)
		rc = hvd__hier_broadcast(&e->hier, r->recvbuf, bytes,
					 r->m.root);
	else if (!r->m.gpu)
		rc = hvd__ring_broadcast(&e->comm, r->recvbuf, bytes,
					 r->m.root);
	else if ((rc = hvd__gpu_engine(e)) == HVD_OK)
		rc = hvd__gpu_broadcast(e->gpu, r->recvbuf, bytes, r->m.root,
					r->ready, e->gpu_why,
					sizeof(e->gpu_why));
	return rc;
}
