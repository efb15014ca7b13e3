/* gpu/fusion.c: the GPU engine's buffers: the fusion buffer on the GPU
 * (grown to a batch's need, up to the fusion threshold unless one
 * collective needs more: util/grow.c), the batch's tensors copied in and
 * out in one call where the runtime can, the pinned host memory
 * through which a share of a batch goes to the CPU and back, the GPU
 * memory in which a host's ranks add up Adasum's sums, and a scratch
 * buffer (the zeros a joined rank gives). */
#include <stdlib.h>
#include <string.h>

#include "gpu/internal.h"

/* *buf (*cap bytes; on the GPU, or pinned host memory) grown to hold
 * bytes, once what runs on the stream has run: flights may still use
 * the old buffer. what: the buffer, for the error. */
static int grow(struct hvd__gpu *g, char **buf, size_t *cap, size_t bytes,
		bool host, const char *what, char *why, size_t len)
{
	size_t want = hvd__grow_size(*cap, bytes, g->fusion_limit);
	cudaError_t e;

	if (want == *cap)
		return HVD_OK;
	if (*buf != NULL) {
		int rc = hvd__gpu_wait_stream(g, why, len);

		if (rc != HVD_OK)
			return rc;
	}
	if (host)
		cudaFreeHost(*buf);
	else
		cudaFree(*buf);
	*buf = NULL;
	*cap = 0;
	e = host ? cudaMallocHost((void **)buf, want)
		 : cudaMalloc((void **)buf, want);
	if (e != cudaSuccess)
		return hvd__gpu_cuda_fail(e, what, why, len);
	*cap = want;
	return HVD_OK;
}

int hvd__gpu_fusion_reserve(struct hvd__gpu *g, size_t bytes, char *why,
			    size_t len)
{
	return grow(g, &g->fusion, &g->fusion_cap, bytes, false,
		    "cudaMalloc of the fusion buffer", why, len);
}

int hvd__gpu_stage_reserve(struct hvd__gpu *g, size_t bytes, char *why,
			   size_t len)
{
	return grow(g, &g->stage, &g->stage_cap, bytes, true,
		    "cudaMallocHost of the staging buffer", why, len);
}

int hvd__gpu_host_buffer(struct hvd__gpu *g, size_t bytes, void **out,
			 char *why, size_t len)
{
	int rc = hvd__gpu_stage_reserve(g, bytes, why, len);

	*out = rc == HVD_OK ? g->stage : NULL;
	return rc;
}

int hvd__gpu_scratch(struct hvd__gpu *g, size_t bytes, bool zero, void **out,
		     char *why, size_t len)
{
	int rc = grow(g, &g->scratch, &g->scratch_cap, bytes ? bytes : 1, false,
		      "cudaMalloc of the GPU scratch buffer", why, len);
	cudaError_t e = cudaSuccess;

	*out = NULL;
	if (rc != HVD_OK)
		return rc;
	if (zero)
		e = cudaMemsetAsync(g->scratch, 0, bytes, g->stream);
	if (e != cudaSuccess)
		return hvd__gpu_cuda_fail(e, "cudaMemsetAsync", why, len);
	*out = g->scratch;
	return HVD_OK;
}

void hvd__gpu_free_result(void *p)
{
	if (p != NULL)
		cudaFree(p);
}

static int copies_reserve(struct hvd__gpu *g, size_t n)
{
	void **d;
	const void **s;
	size_t *z;

	if (n <= g->copies_cap)
		return HVD_OK;
	d = realloc(g->dsts, n * sizeof(*d));
	if (d != NULL)
		g->dsts = d;
	s = realloc(g->srcs, n * sizeof(*s));
	if (s != NULL)
		g->srcs = s;
	z = realloc(g->sizes, n * sizeof(*z));
	if (z != NULL)
		g->sizes = z;
	if (d == NULL || s == NULL || z == NULL)
		return HVD_ENOMEM;
	g->copies_cap = n;
	return HVD_OK;
}

/* The n copies in g->dsts/srcs/sizes, on the stream: in one call where
 * the runtime has batched copies, else one at a time. */
static int copy_batch(struct hvd__gpu *g, size_t n, char *why, size_t len)
{
	cudaError_t e;
	size_t i;

#if CUDART_VERSION >= 12080
	if (g->batch_copies && n > 1) {
		struct cudaMemcpyAttributes a;
		size_t idx = 0;

		memset(&a, 0, sizeof(a));
		a.srcAccessOrder = cudaMemcpySrcAccessOrderStream;
		a.srcLocHint.type = cudaMemLocationTypeDevice;
		a.srcLocHint.id = g->dev;
		a.dstLocHint = a.srcLocHint;
		e = cudaMemcpyBatchAsync(g->dsts, g->srcs, g->sizes, n, &a,
					 &idx, 1, g->stream);
		if (e == cudaSuccess)
			return HVD_OK;
		hvd__debug("cudaMemcpyBatchAsync: %s; copying one at a time",
			   cudaGetErrorString(e));
		cudaGetLastError();
		g->batch_copies = false;
	}
#endif
	for (i = 0; i < n; i++) {
		e = cudaMemcpyAsync(g->dsts[i], g->srcs[i], g->sizes[i],
				    cudaMemcpyDeviceToDevice, g->stream);
		if (e != cudaSuccess)
			return hvd__gpu_cuda_fail(e, "cudaMemcpyAsync", why,
						  len);
	}
	return HVD_OK;
}

int hvd__gpu_fuse(struct hvd__gpu *g, const struct hvd__gpu_tensor *t, size_t n,
		  size_t es, bool in, char *why, size_t len)
{
	size_t i, at, k;
	int rc = copies_reserve(g, n);

	for (i = 0, at = 0, k = 0; rc == HVD_OK && i < n; i++) {
		if (t[i].count == 0)
			continue;
		g->dsts[k] = in ? g->fusion + at : t[i].recv;
		g->srcs[k] = in ? t[i].send : g->fusion + at;
		g->sizes[k++] = t[i].count * es;
		at += t[i].count * es;
	}
	return rc == HVD_OK ? copy_batch(g, k, why, len) : rc;
}

int hvd__gpu_dots_reserve(struct hvd__gpu *g, size_t bytes, char *why,
			  size_t len)
{
	return grow(g, &g->dots, &g->dots_cap, bytes, false,
		    "cudaMalloc of Adasum's sums", why, len);
}
