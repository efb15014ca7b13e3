/* gpu_bench.c: libhvd's NCCL path against bare NCCL on the same device
 * buffers, for tests/bench/gpu. Started by hvdrun, one rank a GPU.
 *   gpu_bench probe   exit 77 after "skip: REASON" where there is no GPU
 *   gpu_bench sizes   float32 sum, 4 KiB to 256 MiB:
 *                     "bytes hvd_s nccl_s stream_s launch_s"
 *                     (hvd_allreduce_gpu against ncclAllReduce on a
 *                     communicator of the bench's own; then the path
 *                     of hvd.torch's synchronize(): the async call, the
 *                     bench's stream made to wait for it, hvd_wait_stream,
 *                     which returns once the batch is launched, launch_s,
 *                     and that stream synchronized, stream_s, up to
 *                     STREAM_MAX, else 0; hvd_s less stream_s is the
 *                     host's wait for a finished batch)
 *   gpu_bench resnet  the 161 ResNet-50 gradient tensors on the GPU:
 *                     "resnet50 hvd_s nccl_total_s nccl_group_s" (libhvd
 *                     fused; one ncclAllReduce of the total, no copies;
 *                     one per tensor in a group), then "memcpy bytes s":
 *                     a device-to-device copy of the total, the GPU's
 *                     copy bandwidth the fusion copies are held against
 * Each figure is the median of the repetitions, the slowest rank's. */
#include <cuda_runtime.h>
#include <hvd.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "resnet50.h"

/* The stream path is timed up to this size, where libhvd's own time is
 * a share of the whole that matters (0 above it). */
#define STREAM_MAX (4u << 20)

static ncclComm_t comm;
static cudaStream_t stream, user; /* bare NCCL's; the caller's own */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* The median of the slowest rank. */
static double slowest(double *t, int n)
{
	double m = bench_median(t, n);

	hvd_allreduce("bench.t", &m, &m, 1, HVD_FLOAT64, HVD_MAX);
	return m;
}

/* The bench's own NCCL communicator: rank 0's id, sent by libhvd. */
static int bare_nccl(void)
{
	ncclUniqueId id;

	if (hvd_rank() == 0 && ncclGetUniqueId(&id) != ncclSuccess)
		return 1;
	if (hvd_broadcast("bench.id", &id, sizeof(id), HVD_UINT8, 0) != 0)
		return 1;
	if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) !=
		    cudaSuccess ||
	    cudaStreamCreateWithFlags(&user, cudaStreamNonBlocking) !=
		    cudaSuccess)
		return 1;
	return ncclCommInitRank(&comm, hvd_size(), id, hvd_rank()) !=
	       ncclSuccess;
}

/* One allreduce the way hvd.torch's synchronize() takes a GPU result:
 * the bench's stream waits for it on the GPU, the host only for its
 * launch (*launch), then for that stream (*done). NULL: not timed. */
static int stream_path(float *buf, size_t count, double *done,
		       double *launch)
{
	hvd_handle *h;
	double t0;

	hvd_barrier();
	t0 = now();
	if (hvd_allreduce_gpu_async("bench", buf, buf, count, HVD_FLOAT32,
				    HVD_SUM, &h) != 0 ||
	    hvd_wait_stream(h, user) != 0)
		return 1;
	if (launch != NULL)
		*launch = now() - t0;
	if (cudaStreamSynchronize(user) != cudaSuccess)
		return 1;
	if (done != NULL)
		*done = now() - t0;
	return 0;
}

static int run_sizes(void)
{
	size_t bytes, max = (size_t)256 << 20;
	float *buf;

	if (cudaMalloc((void **)&buf, max) != cudaSuccess)
		return 1;
	cudaMemset(buf, 0, max);
	cudaDeviceSynchronize();
	for (bytes = 4096; bytes <= max; bytes *= 4) {
		double th[21], tn[21], ts[21], tl[21];
		int reps = bytes >= (16u << 20) ? 9 : 21, i;

		for (i = -3; i < reps; i++) { /* three to warm up */
			double t0;

			hvd_barrier();
			t0 = now();
			if (hvd_allreduce_gpu("bench", buf, buf, bytes / 4,
					      HVD_FLOAT32, HVD_SUM) != 0)
				return 1;
			if (i >= 0)
				th[i] = now() - t0;
			hvd_barrier();
			t0 = now();
			if (ncclAllReduce(buf, buf, bytes / 4, ncclFloat32,
					  ncclSum, comm, stream) != ncclSuccess ||
			    cudaStreamSynchronize(stream) != cudaSuccess)
				return 1;
			if (i >= 0)
				tn[i] = now() - t0;
			if (bytes <= STREAM_MAX &&
			    stream_path(buf, bytes / 4, i >= 0 ? &ts[i] : NULL,
					i >= 0 ? &tl[i] : NULL) != 0)
				return 1;
		}
		{
			double h = slowest(th, reps), n = slowest(tn, reps);
			double st = 0, l = 0;

			if (bytes <= STREAM_MAX) {
				st = slowest(ts, reps);
				l = slowest(tl, reps);
			}

			if (hvd_rank() == 0)
				printf("%zu %.9f %.9f %.9f %.9f\n", bytes, h, n,
				       st, l);
		}
	}
	cudaFree(buf);
	return 0;
}

static int run_resnet(void)
{
	size_t sizes[RESNET50_TENSORS], total = 0, off;
	size_t n = resnet50_sizes(sizes), k;
	double th[11], tt[11], tg[11], tc[11];
	hvd_handle *h[RESNET50_TENSORS];
	float *grads, *copy;
	int i;

	for (k = 0; k < n; k++)
		total += sizes[k];
	if (cudaMalloc((void **)&grads, total * 4) != cudaSuccess ||
	    cudaMalloc((void **)&copy, total * 4) != cudaSuccess)
		return 1;
	cudaMemset(grads, 0, total * 4);
	cudaDeviceSynchronize();
	for (i = -2; i < 11; i++) {
		double t0;

		hvd_barrier();
		t0 = now();
		for (k = 0, off = 0; k < n; k++) {
			char name[32];

			snprintf(name, sizeof(name), "resnet.%zu", k);
			if (hvd_allreduce_gpu_async(name, grads + off,
						    grads + off, sizes[k],
						    HVD_FLOAT32, HVD_AVERAGE,
						    &h[k]) != 0)
				return 1;
			off += sizes[k];
		}
		for (k = 0; k < n; k++)
			if (hvd_wait(h[k]) != 0)
				return 1;
		if (i >= 0)
			th[i] = now() - t0;
		hvd_barrier();
		t0 = now();
		if (ncclAllReduce(grads, grads, total, ncclFloat32, ncclAvg,
				  comm, stream) != ncclSuccess ||
		    cudaStreamSynchronize(stream) != cudaSuccess)
			return 1;
		if (i >= 0)
			tt[i] = now() - t0;
		hvd_barrier();
		t0 = now();
		ncclGroupStart();
		for (k = 0, off = 0; k < n; k++) {
			ncclAllReduce(grads + off, grads + off, sizes[k],
				      ncclFloat32, ncclAvg, comm, stream);
			off += sizes[k];
		}
		if (ncclGroupEnd() != ncclSuccess ||
		    cudaStreamSynchronize(stream) != cudaSuccess)
			return 1;
		if (i >= 0)
			tg[i] = now() - t0;
		t0 = now();
		cudaMemcpyAsync(copy, grads, total * 4,
				cudaMemcpyDeviceToDevice, stream);
		cudaStreamSynchronize(stream);
		if (i >= 0)
			tc[i] = now() - t0;
	}
	{
		double a = slowest(th, 11), b = slowest(tt, 11),
		       c = slowest(tg, 11), d = slowest(tc, 11);

		if (hvd_rank() == 0)
			printf("resnet50 %.9f %.9f %.9f\nmemcpy %zu %.9f\n", a,
			       b, c, total * 4, d);
	}
	cudaFree(grads);
	cudaFree(copy);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "sizes";
	int dev, rc;

	if (hvd_init() != 0)
		return 1;
	dev = hvd_gpu_device();
	if (dev < 0) {
		if (hvd_rank() == 0)
			printf("skip: %s\n", hvd_error_message());
		hvd_shutdown();
		return 77;
	}
	cudaSetDevice(dev);
	rc = strcmp(mode, "probe") == 0 ? 0 : bare_nccl();
	if (rc == 0 && strcmp(mode, "sizes") == 0)
		rc = run_sizes();
	else if (rc == 0 && strcmp(mode, "resnet") == 0)
		rc = run_resnet();
	if (comm != NULL)
		ncclCommDestroy(comm);
	hvd_shutdown();
	return rc;
}
