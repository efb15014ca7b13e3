/* api.c: libhvd's public collectives. Each checks its arguments on the
 * caller's thread (a bad one fails at once, with hvd_error_message()),
 * describes what every rank must agree on, and queues the request
 * (queue.c); the background thread does the rest. */
#include "engine.h"
#include "reduce.h"

static int check_args(const void *buf, size_t count, enum hvd_dtype t)
{
	if (!hvd__dtype_valid((int)t)) {
		hvd__set_error("unknown dtype %d", (int)t);
		return HVD_EINVAL;
	}
	if (buf == NULL && count > 0) {
		hvd__set_error("a NULL buffer for %zu elements", count);
		return HVD_EINVAL;
	}
	return HVD_OK;
}

/* A GPU collective's buffer: in this rank's GPU's memory. The send
 * buffer's check also records the event the collective waits for. */
static int gpu_buffer(bool gpu, const void *buf, size_t bytes, void **ready)
{
	char why[512];
	int rc;

	if (!gpu)
		return HVD_OK;
	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	rc = hvd__gpu_prepare(buf, bytes, ready, why, sizeof(why));
	if (rc != HVD_OK)
		hvd__set_error("%s", why);
	return rc;
}

static int allreduce_async(const char *name, const void *sendbuf, void *recvbuf,
			   size_t count, enum hvd_dtype dtype, enum hvd_op op,
			   bool gpu, hvd_handle **out)
{
	struct hvd__meta m = {
		HVD__REQ_ALLREDUCE, (uint8_t)dtype, (uint8_t)op, gpu, 0, count};
	void *ready = NULL;
	int rc = check_args(sendbuf, count, dtype);

	*out = NULL;
	if (rc == HVD_OK && (recvbuf == NULL && count > 0))
		rc = check_args(NULL, count, dtype);
	if (rc == HVD_OK && !hvd__op_valid((int)op)) {
		hvd__set_error("unknown op %d", (int)op);
		rc = HVD_EINVAL;
	}
	if (rc != HVD_OK)
		return rc;
	rc = gpu_buffer(gpu, recvbuf, count * hvd__dtype_size(dtype), NULL);
	if (rc == HVD_OK)
		rc = gpu_buffer(gpu, sendbuf, count * hvd__dtype_size(dtype),
				&ready);
	return rc != HVD_OK ? rc
			    : hvd__enqueue(name, &m, sendbuf, recvbuf, NULL,
					   NULL, count, ready, out);
}

static int broadcast_async(const char *name, void *buf, size_t count,
			   enum hvd_dtype dtype, int root, bool gpu,
			   hvd_handle **out)
{
	struct hvd__meta m = {
		HVD__REQ_BROADCAST, (uint8_t)dtype, 0, gpu, root, count};
	void *ready = NULL;
	int rc = check_args(buf, count, dtype);

	*out = NULL;
	if (rc == HVD_OK && (root < 0 || root >= hvd__g.size)) {
		hvd__set_error("root %d is not a rank of this job of %d", root,
			       hvd__g.size);
		rc = HVD_EINVAL;
	}
	if (rc == HVD_OK)
		rc = gpu_buffer(gpu, buf, count * hvd__dtype_size(dtype),
				&ready);
	return rc != HVD_OK ? rc
			    : hvd__enqueue(name, &m, buf, buf, NULL, NULL,
					   count, ready, out);
}

static int allgather_async(const char *name, const void *sendbuf, size_t count,
			   enum hvd_dtype dtype, void **recvbuf,
			   size_t *recvcount, bool gpu, hvd_handle **out)
{
	/* count differs per rank: the coordinator compares the rest. */
	struct hvd__meta m = {HVD__REQ_ALLGATHER, (uint8_t)dtype, 0, gpu, 0, 0};
	void *ready = NULL;
	int rc = check_args(sendbuf, count, dtype);

	*out = NULL;
	if (rc == HVD_OK && (recvbuf == NULL || recvcount == NULL)) {
		hvd__set_error("allgather needs somewhere to put its result");
		rc = HVD_EINVAL;
	}
	if (rc == HVD_OK)
		rc = gpu_buffer(gpu, sendbuf, count * hvd__dtype_size(dtype),
				&ready);
	if (rc != HVD_OK)
		return rc;
	*recvbuf = NULL;
	*recvcount = 0;
	return hvd__enqueue(name, &m, sendbuf, NULL, recvbuf, recvcount, count,
			    ready, out);
}

HVD_EXPORT int hvd_allreduce_async(const char *name, const void *sendbuf,
				   void *recvbuf, size_t count,
				   enum hvd_dtype dtype, enum hvd_op op,
				   hvd_handle **out)
{
	return allreduce_async(name, sendbuf, recvbuf, count, dtype, op, false,
			       out);
}

HVD_EXPORT int hvd_broadcast_async(const char *name, void *buf, size_t count,
				   enum hvd_dtype dtype, int root,
				   hvd_handle **out)
{
	return broadcast_async(name, buf, count, dtype, root, false, out);
}

HVD_EXPORT int hvd_allgather_async(const char *name, const void *sendbuf,
				   size_t count, enum hvd_dtype dtype,
				   void **recvbuf, size_t *recvcount,
				   hvd_handle **out)
{
	return allgather_async(name, sendbuf, count, dtype, recvbuf, recvcount,
			       false, out);
}

HVD_EXPORT int hvd_allreduce_gpu_async(const char *name, const void *sendbuf,
				       void *recvbuf, size_t count,
				       enum hvd_dtype dtype, enum hvd_op op,
				       hvd_handle **out)
{
	return allreduce_async(name, sendbuf, recvbuf, count, dtype, op, true,
			       out);
}

HVD_EXPORT int hvd_broadcast_gpu_async(const char *name, void *buf,
				       size_t count, enum hvd_dtype dtype,
				       int root, hvd_handle **out)
{
	return broadcast_async(name, buf, count, dtype, root, true, out);
}

HVD_EXPORT int hvd_allgather_gpu_async(const char *name, const void *sendbuf,
				       size_t count, enum hvd_dtype dtype,
				       void **recvbuf, size_t *recvcount,
				       hvd_handle **out)
{
	return allgather_async(name, sendbuf, count, dtype, recvbuf, recvcount,
			       true, out);
}

HVD_EXPORT int hvd_gpu_device(void)
{
	char why[512];
	int rc;

	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	rc = hvd__gpu_device(why, sizeof(why));
	if (rc < 0)
		hvd__set_error("%s", why);
	return rc;
}

HVD_EXPORT int hvd_allreduce(const char *name, const void *sendbuf,
			     void *recvbuf, size_t count, enum hvd_dtype dtype,
			     enum hvd_op op)
{
	hvd_handle *h;
	int rc = hvd_allreduce_async(name, sendbuf, recvbuf, count, dtype, op,
				     &h);

	return rc != HVD_OK ? rc : hvd_wait(h);
}

HVD_EXPORT int hvd_broadcast(const char *name, void *buf, size_t count,
			     enum hvd_dtype dtype, int root)
{
	hvd_handle *h;
	int rc = hvd_broadcast_async(name, buf, count, dtype, root, &h);

	return rc != HVD_OK ? rc : hvd_wait(h);
}

HVD_EXPORT int hvd_allgather(const char *name, const void *sendbuf,
			     size_t count, enum hvd_dtype dtype, void **recvbuf,
			     size_t *recvcount)
{
	hvd_handle *h;
	int rc = hvd_allgather_async(name, sendbuf, count, dtype, recvbuf,
				     recvcount, &h);

	return rc != HVD_OK ? rc : hvd_wait(h);
}

HVD_EXPORT int hvd_allreduce_gpu(const char *name, const void *sendbuf,
				 void *recvbuf, size_t count,
				 enum hvd_dtype dtype, enum hvd_op op)
{
	hvd_handle *h;
	int rc = hvd_allreduce_gpu_async(name, sendbuf, recvbuf, count, dtype,
					 op, &h);

	return rc != HVD_OK ? rc : hvd_wait(h);
}

HVD_EXPORT int hvd_broadcast_gpu(const char *name, void *buf, size_t count,
				 enum hvd_dtype dtype, int root)
{
	hvd_handle *h;
	int rc = hvd_broadcast_gpu_async(name, buf, count, dtype, root, &h);

	return rc != HVD_OK ? rc : hvd_wait(h);
}

HVD_EXPORT int hvd_allgather_gpu(const char *name, const void *sendbuf,
				 size_t count, enum hvd_dtype dtype,
				 void **recvbuf, size_t *recvcount)
{
	hvd_handle *h;
	int rc = hvd_allgather_gpu_async(name, sendbuf, count, dtype, recvbuf,
					 recvcount, &h);

	return rc != HVD_OK ? rc : hvd_wait(h);
}

HVD_EXPORT int hvd_barrier(void)
{
	struct hvd__meta m = {HVD__REQ_BARRIER, HVD_UINT8, 0, 0, 0, 0};
	hvd_handle *h;
	int rc = hvd__enqueue("hvd.barrier", &m, NULL, NULL, NULL, NULL, 0,
			      NULL, &h);

	return rc != HVD_OK ? rc : hvd_wait(h);
}
