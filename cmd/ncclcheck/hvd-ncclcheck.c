/* hvd-ncclcheck: the worker of `hvdrun check --nccl` (lib/check/
 * ncclcheck.h), one rank a GPU: libhvd's GPU allreduce over NCCL, first
 * a small one whose sum is checked, then a timed one of 64 MiB. It says
 * on stdout, a line each, prefixed "hvd-ncclcheck: ": each stage as it
 * starts ("stage init", "gpu", "nccl", "measure", "done"), its device,
 * "small ok", what failed ("fail TEXT"), and on rank 0 "result bytes=N
 * iters=K algbw=GB/s busbw=GB/s" (NCCL's bus bandwidth: the algorithm
 * bandwidth times 2(n-1)/n). NCCL's own lines (NCCL_DEBUG=INFO, set by
 * the check) go to stdout too. Exit 0 when every step worked. */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "hvd.h"

#define SAY(...) (printf("hvd-ncclcheck: " __VA_ARGS__), putchar('\n'))

enum { BIG = 64 << 20, SMALL = 1024, WARM = 2, ITERS = 5 };

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail_hvd(const char *what, int rc)
{
	const char *m = hvd_error_message();

	SAY("fail %s: %s%s%s", what, hvd_strerror(rc), m && *m ? ": " : "",
	    m ? m : "");
	return 1;
}

static int fail_cuda(const char *what, cudaError_t e)
{
	SAY("fail %s: %s (%s)", what, cudaGetErrorName(e),
	    cudaGetErrorString(e));
	return 1;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* The small allreduce: rank r gives r + 1 everywhere; the sum is
 * n(n+1)/2. */
static int small(int n, int rank, float *dev)
{
	float host[SMALL];
	float want = (float)n * (float)(n + 1) / 2.0f;
	cudaError_t e;
	int i, rc;

	for (i = 0; i < SMALL; i++)
		host[i] = (float)(rank + 1);
	e = cudaMemcpy(dev, host, sizeof(host), cudaMemcpyHostToDevice);
	if (e != cudaSuccess)
		return fail_cuda("cudaMemcpy", e);
	rc = hvd_allreduce_gpu("ncclcheck.small", dev, dev, SMALL, HVD_FLOAT32,
			       HVD_SUM);
	if (rc != HVD_OK)
		return fail_hvd("the first allreduce", rc);
	e = cudaMemcpy(host, dev, sizeof(host), cudaMemcpyDeviceToHost);
	if (e != cudaSuccess)
		return fail_cuda("cudaMemcpy", e);
	for (i = 0; i < SMALL; i++)
		if (host[i] != want) {
			SAY("fail the first allreduce gave %g at %d, not %g",
			    (double)host[i], i, (double)want);
			return 1;
		}
	SAY("small ok");
	return 0;
}

/* The timed allreduces of BIG bytes: the median of ITERS. */
static int measure(int n, int rank, float *dev)
{
	double t[ITERS], algbw;
	cudaError_t e;
	int i, rc;

	e = cudaMemset(dev, 0, BIG);
	if (e == cudaSuccess)
		e = cudaDeviceSynchronize();
	if (e != cudaSuccess)
		return fail_cuda("cudaMemset", e);
	for (i = 0; i < WARM + ITERS; i++) {
		double t0 = now_s();

		rc = hvd_allreduce_gpu("ncclcheck.big", dev, dev,
				       BIG / sizeof(float), HVD_FLOAT32,
				       HVD_SUM);
		if (rc != HVD_OK)
			return fail_hvd("the 64 MiB allreduce", rc);
		if (i >= WARM)
			t[i - WARM] = now_s() - t0;
	}
	qsort(t, ITERS, sizeof(*t), cmp);
	algbw = (double)BIG / t[ITERS / 2] / 1e9;
	if (rank == 0)
		SAY("result bytes=%d iters=%d algbw=%.3f busbw=%.3f", BIG,
		    ITERS, algbw, algbw * 2.0 * (n - 1) / n);
	return 0;
}

int main(void)
{
	char bus[32] = "?";
	float *dev = NULL;
	cudaError_t e;
	int rc, d, n, rank;

	setvbuf(stdout, NULL, _IOLBF, 0);
	SAY("stage init");
	rc = hvd_init();
	if (rc != HVD_OK)
		return fail_hvd("hvd_init", rc);
	n = hvd_size();
	rank = hvd_rank();
	SAY("stage gpu");
	d = hvd_gpu_device();
	if (d < 0) {
		fail_hvd("no GPU for this rank", d);
		hvd_shutdown();
		return 1;
	}
	e = cudaSetDevice(d);
	if (e == cudaSuccess)
		e = cudaDeviceGetPCIBusId(bus, sizeof(bus), d);
	if (e == cudaSuccess)
		e = cudaMalloc((void **)&dev, BIG);
	if (e != cudaSuccess) {
		fail_cuda("its GPU", e);
		hvd_shutdown();
		return 1;
	}
	SAY("device GPU %d (bus %s)", d, bus);
	SAY("stage nccl");
	rc = small(n, rank, dev);
	if (rc == 0) {
		SAY("stage measure");
		rc = measure(n, rank, dev);
	}
	cudaFree(dev);
	hvd_shutdown();
	if (rc == 0)
		SAY("stage done");
	return rc;
}
