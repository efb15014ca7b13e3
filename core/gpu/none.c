/* gpu/none.c: the GPU engine (gpu.h) of a libhvd built without CUDA and
 * NCCL (NCCL=0, or none found at build time): the Makefile builds it in
 * the NCCL engine's place (fail.c, device.c, setup.c, fusion.c,
 * collectives.c), and every entry says the GPU path was left out. */
#include "gpu/gpu.h"

#include <stdio.h>
#include <string.h>

#define LEFT_OUT                                                               \
	"libhvd was built without CUDA and NCCL (NCCL=0, or none found at build time)"

int hvd__gpu_device(char *why, size_t len)
{
	snprintf(why, len, LEFT_OUT);
	return HVD_ENOTSUP;
}

int hvd__gpu_prepare(const void *buf, size_t bytes, void **ready, char *why,
		     size_t len)
{
	(void)buf;
	(void)bytes;
	if (ready != NULL)
		*ready = NULL;
	return hvd__gpu_device(why, len);
}

void hvd__gpu_release(void *ready)
{
	(void)ready;
}

int hvd__gpu_start(struct hvd__gpu **out, const struct hvd__comm *ctrl,
		   size_t fusion_limit, enum hvd__gpu_hier hier,
		   bool batch_copies, char *why, size_t len)
{
	(void)ctrl;
	(void)fusion_limit;
	(void)batch_copies;
	(void)hier;
	*out = NULL;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_allreduce(struct hvd__gpu *g, struct hvd__gpu_tensor *t, size_t n,
		       enum hvd_dtype dtype, enum hvd_op op, double scale,
		       bool hier, bool timed, struct hvd__gpu_flight **out,
		       char *why, size_t len)
{
	(void)g;
	(void)t;
	(void)n;
	(void)dtype;
	(void)op;
	(void)scale;
	(void)hier;
	(void)timed;
	*out = NULL;
	return hvd__gpu_device(why, len);
}

bool hvd__gpu_split(const struct hvd__gpu *g)
{
	(void)g;
	return false;
}

int hvd__gpu_unsplit(struct hvd__gpu *g, char *why, size_t len)
{
	(void)g;
	(void)why;
	(void)len;
	return HVD_OK;
}

/* No flight is ever launched here: nothing to poll, wait on or free. */
int hvd__gpu_flight_poll(struct hvd__gpu *g, struct hvd__gpu_flight *f,
			 struct hvd__gpu_times *times, char *why, size_t len)
{
	(void)g;
	(void)f;
	memset(times, 0, sizeof(*times));
	return hvd__gpu_device(why, len);
}

void hvd__gpu_grace(struct hvd__gpu *g, long long us)
{
	(void)g;
	(void)us;
}

void *hvd__gpu_flight_event(const struct hvd__gpu_flight *f)
{
	(void)f;
	return NULL;
}

void hvd__gpu_flight_free(struct hvd__gpu *g, struct hvd__gpu_flight *f)
{
	(void)g;
	(void)f;
}

int hvd__gpu_host_buffer(struct hvd__gpu *g, size_t bytes, void **out,
			 char *why, size_t len)
{
	(void)g;
	(void)bytes;
	*out = NULL;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_scratch(struct hvd__gpu *g, size_t bytes, bool zero, void **out,
		     char *why, size_t len)
{
	(void)g;
	(void)bytes;
	(void)zero;
	*out = NULL;
	return hvd__gpu_device(why, len);
}

void hvd__gpu_free_result(void *p)
{
	(void)p;
}

int hvd__gpu_wait_stream(struct hvd__gpu *g, char *why, size_t len)
{
	(void)g;
	return hvd__gpu_device(why, len);
}

void hvd__gpu_abort_comms(struct hvd__gpu *g)
{
	(void)g;
}

bool hvd__gpu_ready(void *ready)
{
	(void)ready;
	return true;
}

int hvd__gpu_stream_wait(void *stream, void *event, char *why, size_t len)
{
	(void)stream;
	(void)event;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_adasum_hosts(struct hvd__gpu *g, struct hvd__gpu_tensor *t,
			  size_t n, enum hvd_dtype dtype, double scale,
			  hvd__gpu_slice_fn across, void *arg, char *why,
			  size_t len)
{
	(void)g;
	(void)t;
	(void)n;
	(void)dtype;
	(void)scale;
	(void)across;
	(void)arg;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_host_sum(struct hvd__gpu *g, double *v, size_t count, char *why,
		      size_t len)
{
	(void)g;
	(void)v;
	(void)count;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_reducescatter(struct hvd__gpu *g, const void *send, void *recv,
			   const size_t *counts, enum hvd_dtype dtype,
			   enum hvd_op op, double scale, void *ready, char *why,
			   size_t len)
{
	(void)g;
	(void)send;
	(void)recv;
	(void)counts;
	(void)dtype;
	(void)op;
	(void)scale;
	(void)ready;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_alltoall(struct hvd__gpu *g, const void *send,
		      const size_t *sbytes, const size_t *rbytes, void *ready,
		      void **out, char *why, size_t len)
{
	(void)g;
	(void)send;
	(void)sbytes;
	(void)rbytes;
	(void)ready;
	*out = NULL;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_copy(struct hvd__gpu *g, void *dst, const void *src, size_t bytes,
		  bool to_host, void *ready, char *why, size_t len)
{
	(void)g;
	(void)dst;
	(void)src;
	(void)bytes;
	(void)to_host;
	(void)ready;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_broadcast(struct hvd__gpu *g, void *buf, size_t bytes, int root,
		       void *ready, char *why, size_t len)
{
	(void)g;
	(void)buf;
	(void)bytes;
	(void)root;
	(void)ready;
	return hvd__gpu_device(why, len);
}

int hvd__gpu_allgather(struct hvd__gpu *g, const void *send,
		       const size_t *bytes, void *ready, void **out, char *why,
		       size_t len)
{
	(void)g;
	(void)send;
	(void)bytes;
	(void)ready;
	*out = NULL;
	return hvd__gpu_device(why, len);
}

void hvd__gpu_free(struct hvd__gpu *g, bool broken)
{
	(void)g;
	(void)broken;
}

HVD_EXPORT int hvd_nccl_built(void)
{
	return 0;
}
