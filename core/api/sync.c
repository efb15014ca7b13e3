/* api/sync.c: the synchronous forms of the collectives: each submits
 * its _async form and waits for it (hvd_wait), in the calling thread,
 * which may run the engine's cycles itself meanwhile (queue.c). */
#include "engine/engine.h"

HVD_EXPORT int hvd_allreduce(const char *name, const void *sendbuf,
			     void *recvbuf, size_t count, enum hvd_dtype dtype,
			     enum hvd_op op)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_allreduce_async(name, sendbuf, recvbuf, count, dtype,
					 op, &h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_allreduce_scaled(const char *name, const void *sendbuf,
				    void *recvbuf, size_t count,
				    enum hvd_dtype dtype, enum hvd_op op,
				    double prescale, double postscale)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_allreduce_scaled_async(name, sendbuf, recvbuf, count,
						dtype, op, prescale, postscale,
						&h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_broadcast(const char *name, void *buf, size_t count,
			     enum hvd_dtype dtype, int root)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_broadcast_async(name, buf, count, dtype, root, &h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_allgather(const char *name, const void *sendbuf,
			     size_t count, enum hvd_dtype dtype, void **recvbuf,
			     size_t *recvcount)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_allgather_async(name, sendbuf, count, dtype, recvbuf,
					 recvcount, &h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_alltoall(const char *name, const void *sendbuf,
			    const size_t *sendcounts, size_t block,
			    enum hvd_dtype dtype, void **recvbuf,
			    size_t *recvcount, size_t *recvcounts)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_alltoall_async(name, sendbuf, sendcounts, block, dtype,
					recvbuf, recvcount, recvcounts, &h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_reducescatter(const char *name, const void *sendbuf,
				 void *recvbuf, size_t count, size_t block,
				 enum hvd_dtype dtype, enum hvd_op op,
				 double prescale, double postscale)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_reducescatter_async(name, sendbuf, recvbuf, count,
					     block, dtype, op, prescale,
					     postscale, &h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_allreduce_gpu(const char *name, const void *sendbuf,
				 void *recvbuf, size_t count,
				 enum hvd_dtype dtype, enum hvd_op op)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_allreduce_gpu_async(name, sendbuf, recvbuf, count,
					     dtype, op, &h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_broadcast_gpu(const char *name, void *buf, size_t count,
				 enum hvd_dtype dtype, int root)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_broadcast_gpu_async(name, buf, count, dtype, root, &h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_allgather_gpu(const char *name, const void *sendbuf,
				 size_t count, enum hvd_dtype dtype,
				 void **recvbuf, size_t *recvcount)
{
	hvd_handle *h = NULL;
	int rc = hvd__sync_start();

	if (rc == HVD_OK)
		rc = hvd_allgather_gpu_async(name, sendbuf, count, dtype,
					     recvbuf, recvcount, &h);
	return hvd__sync_finish(rc, h);
}
