/* gpu/device.c: the GPU as the user's threads see it: this rank's
 * device, and a collective's buffer checked and its readiness recorded
 * (a CUDA event on the default stream) before it is queued. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu/internal.h"
#include "proto/wire.h"
#include "util/reduce.h"
#include "algo/ring.h"
#include "util/wait.h"

static pthread_once_t count_once = PTHREAD_ONCE_INIT;
static int device_count;
static char count_why[256];

static void count_devices(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);

	/* Without a driver the runtime says so in its return code and
	 * leaves the count alone: the code decides, never the count. */
	if (e != cudaSuccess) {
		snprintf(count_why, sizeof(count_why),
			 "no GPU: the CUDA runtime says %s (%s)",
			 cudaGetErrorName(e), cudaGetErrorString(e));
		cudaGetLastError();
		return;
	}
	if (n <= 0) {
		snprintf(count_why, sizeof(count_why),
			 "no GPU: CUDA sees no device");
		return;
	}
	device_count = n;
}

int hvd__gpu_device(char *why, size_t len)
{
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	int lr = hvd__g.local_rank < 0 ? 0 : hvd__g.local_rank;

	pthread_once(&count_once, count_devices);
	if (device_count <= 0) {
		snprintf(why, len, "%s", count_why);
		return HVD_ENOTSUP;
	}
	/* A scheduler that gives each rank its own GPU shows it alone. */
	if (vis != NULL && *vis != '\0' && device_count == 1)
		return 0;
	if (lr >= device_count) {
		snprintf(
			why, len,
			"local rank %d uses GPU %d, but CUDA sees %d GPU%s on this host",
			lr, lr, device_count, device_count == 1 ? "" : "s");
		return HVD_ENOTSUP;
	}
	return lr;
}

int hvd__gpu_prepare(const void *buf, size_t bytes, void **ready, char *why,
		     size_t len)
{
	struct cudaPointerAttributes a;
	cudaEvent_t ev;
	cudaError_t e;
	int dev = hvd__gpu_device(why, len), old = -1;

	if (ready != NULL)
		*ready = NULL;
	if (dev < 0)
		return dev;
	if (bytes == 0)
		return HVD_OK;
	e = cudaPointerGetAttributes(&a, buf);
	if (e != cudaSuccess) {
		hvd__gpu_cuda_fail(e, "cudaPointerGetAttributes", why, len);
		return HVD_EINVAL;
	}
	if (a.type != cudaMemoryTypeDevice && a.type != cudaMemoryTypeManaged) {
		snprintf(
			why, len,
			"buffer %p is host memory, not GPU memory: pass it to the CPU collectives",
			buf);
		return HVD_EINVAL;
	}
	if (a.type == cudaMemoryTypeDevice && a.device != dev) {
		snprintf(
			why, len,
			"buffer %p is memory of GPU %d, but this rank uses GPU %d (hvd_gpu_device)",
			buf, a.device, dev);
		return HVD_EINVAL;
	}
	if (ready == NULL)
		return HVD_OK;
	/* The event goes on the legacy default stream of this rank's GPU,
	 * which follows the work of every blocking stream before it. */
	if (cudaGetDevice(&old) != cudaSuccess || old != dev)
		e = cudaSetDevice(dev);
	if (e == cudaSuccess)
		e = cudaEventCreateWithFlags(&ev, cudaEventDisableTiming);
	if (e == cudaSuccess) {
		e = cudaEventRecord(ev, cudaStreamLegacy);
		if (e != cudaSuccess)
			cudaEventDestroy(ev);
	}
	if (old >= 0 && old != dev)
		cudaSetDevice(old);
	if (e != cudaSuccess)
		return hvd__gpu_cuda_fail(e, "cudaEventRecord", why, len);
	*ready = ev;
	return HVD_OK;
}

void hvd__gpu_release(void *ready)
{
	if (ready != NULL)
		cudaEventDestroy((cudaEvent_t)ready);
}

bool hvd__gpu_ready(void *ready)
{
	return ready == NULL ||
	       cudaEventQuery((cudaEvent_t)ready) != cudaErrorNotReady;
}

int hvd__gpu_stream_wait(void *stream, void *event, char *why, size_t len)
{
	cudaError_t e = cudaStreamWaitEvent(
		stream != NULL ? (cudaStream_t)stream : cudaStreamLegacy,
		(cudaEvent_t)event, 0);

	return e == cudaSuccess
		       ? HVD_OK
		       : hvd__gpu_cuda_fail(e, "cudaStreamWaitEvent", why, len);
}
