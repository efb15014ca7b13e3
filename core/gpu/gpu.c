/* gpu.c: see gpu.h. The GPU engine over CUDA and NCCL; the Makefile builds
 * gpu/none.c in its place when they are not there. */
#include "gpu/gpu.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "proto/wire.h"
#include "algo/reduce.h"
#include "algo/ring.h"
#include "util/wait.h"

/* The CUDA events that time a collective: start, after the copies in,
 * after the reduction, after the copies out (the one waited for). */
enum { EV_START, EV_IN, EV_REDUCED, EV_DONE, EV_N };

struct hvd__gpu {
	int dev;
	const struct hvd__comm *ctrl;
	cudaStream_t stream;
	ncclComm_t world;
	ncclComm_t local, cross; /* hierarchical allreduce only */
	int local_rank, local_size;
	bool aborted;
	char *fusion;
	size_t fusion_cap;
	cudaEvent_t ev[EV_N];
	bool batch_copies; /* cudaMemcpyBatchAsync works here */
	bool one_rank_bug; /* a scaled op on one rank needs whole blocks */
	void **dsts;
	const void **srcs;
	size_t *sizes, copies_cap;
};

/* ---- errors ---- */

static int cuda_fail(cudaError_t e, const char *what, char *why, size_t len)
{
	snprintf(why, len, "%s: %s (%s)", what, cudaGetErrorName(e),
		 cudaGetErrorString(e));
	cudaGetLastError(); /* clear it, so later calls do not report it */
	return HVD_ESYS;
}

static void abort_comms(struct hvd__gpu *g)
{
	if (g->aborted)
		return;
	g->aborted = true;
	if (g->cross != NULL)
		ncclCommAbort(g->cross);
	if (g->local != NULL)
		ncclCommAbort(g->local);
	if (g->world != NULL)
		ncclCommAbort(g->world);
	g->cross = g->local = g->world = NULL;
}

static int nccl_fail(struct hvd__gpu *g, ncclComm_t c, ncclResult_t r,
		     const char *what, char *why, size_t len)
{
	const char *last = ncclGetLastError(c);

	snprintf(why, len, "%s: %s%s%s", what, ncclGetErrorString(r),
		 last != NULL && *last ? ": " : "", last != NULL ? last : "");
	abort_comms(g);
	return r == ncclRemoteError || r == ncclSystemError ? HVD_ECONN
							    : HVD_ESYS;
}

static void pause_us(long us)
{
	struct timespec ts = {0, us * 1000};

	nanosleep(&ts, NULL);
}

/* A peer that died shows on the control plane. A job of one rank has
 * no peer, and no transport to ask. */
static int peers_alive(struct hvd__gpu *g, const char *what, char *why,
		       size_t len)
{
	const struct hvd__comm *c = g->ctrl;

	if (c->size <= 1 || c->t == NULL || c->ops->check == NULL ||
	    c->ops->check(c->t) == HVD_OK)
		return HVD_OK;
	snprintf(why, len, "%s: a peer closed its connection", what);
	abort_comms(g);
	return HVD_ECONN;
}

/* The communicators are non-blocking: a call may return ncclInProgress,
 * and then the communicator is polled until it is done, while the
 * control plane is watched for a peer that died. */
static int settle(struct hvd__gpu *g, ncclComm_t c, ncclResult_t r,
		  const char *what, char *why, size_t len)
{
	long long checked = hvd__now_us();

	while (r == ncclInProgress) {
		if (hvd__now_us() - checked > 10000) {
			int rc = peers_alive(g, what, why, len);

			if (rc != HVD_OK)
				return rc;
			checked = hvd__now_us();
		}
		pause_us(50);
		if (ncclCommGetAsyncError(c, &r) != ncclSuccess)
			r = ncclInternalError;
	}
	return r == ncclSuccess ? HVD_OK : nccl_fail(g, c, r, what, why, len);
}

/* A communicator just made (init or split): poll it until it is ready.
 * A non-blocking split may hand its child over only when the parent's
 * part is done (NCCL 2.28 does): then the parent is polled first. */
static int settle_new(struct hvd__gpu *g, ncclComm_t parent, ncclComm_t *cp,
		      ncclResult_t r, const char *what, char *why, size_t len)
{
	ncclComm_t c = __atomic_load_n(cp, __ATOMIC_ACQUIRE);

	if (r != ncclSuccess && r != ncclInProgress)
		return nccl_fail(g, c, r, what, why, len);
	if (c == NULL && parent != NULL) {
		int rc = settle(g, parent, ncclInProgress, what, why, len);

		if (rc != HVD_OK)
			return rc;
		c = __atomic_load_n(cp, __ATOMIC_ACQUIRE);
	}
	if (c == NULL) {
		snprintf(why, len, "%s gave no communicator", what);
		return HVD_ESYS;
	}
	return settle(g, c, ncclInProgress, what, why, len);
}

/* Wait for everything queued on the stream: spin while spinning pays
 * (wait.h: a sleep costs more than most collectives take, unless the
 * CPU is wanted), then poll; an asynchronous NCCL error or a dead peer
 * aborts the communicators. */
static int wait_stream(struct hvd__gpu *g, char *why, size_t len)
{
	ncclComm_t comms[3] = {g->world, g->local, g->cross};
	long long checked = hvd__now_us();
	cudaError_t e = cudaEventRecord(g->ev[EV_DONE], g->stream);
	struct hvd__wait w;

	if (e != cudaSuccess)
		return cuda_fail(e, "cudaEventRecord", why, len);
	hvd__wait_begin(&w, HVD__WAIT_GPU);
	for (;;) {
		long long now;
		int i;

		e = cudaEventQuery(g->ev[EV_DONE]);
		if (e == cudaSuccess) {
			hvd__wait_end(&w);
			return HVD_OK;
		}
		if (e != cudaErrorNotReady)
			return cuda_fail(e, "waiting for the GPU", why, len);
		for (i = 0; i < 3; i++) {
			ncclResult_t r = ncclSuccess;

			if (comms[i] != NULL &&
			    ncclCommGetAsyncError(comms[i], &r) ==
				    ncclSuccess &&
			    r != ncclSuccess && r != ncclInProgress)
				return nccl_fail(g, comms[i], r, "NCCL", why,
						 len);
		}
		now = hvd__now_us();
		if (now - checked > 10000) {
			int rc = peers_alive(g, "a NCCL collective", why, len);

			if (rc != HVD_OK)
				return rc;
			checked = now;
		}
		if (!hvd__wait_spin(&w))
			pause_us(50);
	}
}

static long long elapsed_us(cudaEvent_t a, cudaEvent_t b)
{
	float ms = 0;

	return cudaEventElapsedTime(&ms, a, b) == cudaSuccess
		       ? (long long)(ms * 1000.0f)
		       : 0;
}

/* ---- the device (user threads) ---- */

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
		cuda_fail(e, "cudaPointerGetAttributes", why, len);
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
		return cuda_fail(e, "cudaEventRecord", why, len);
	*ready = ev;
	return HVD_OK;
}

void hvd__gpu_release(void *ready)
{
	if (ready != NULL)
		cudaEventDestroy((cudaEvent_t)ready);
}

/* ---- setting up (background thread) ---- */

/* Every rank learns which ranks could use a GPU; a rank that could not
 * fails the set-up on every rank, named. */
static int agree(const struct hvd__comm *c, uint8_t mine, const char *own,
		 char *why, size_t len)
{
	uint8_t *ok = calloc((size_t)c->size, 1);
	size_t *one = calloc((size_t)c->size, sizeof(*one));
	int r, rc = HVD_ENOMEM;

	if (ok != NULL && one != NULL) {
		for (r = 0; r < c->size; r++)
			one[r] = 1;
		ok[c->rank] = mine;
		rc = hvd__ring_allgatherv(c, ok, one);
	}
	if (rc == HVD_OK) {
		size_t off = 0;

		for (r = 0; r < c->size && off + 16 < len; r++)
			if (!ok[r]) {
				if (off == 0)
					off += (size_t)snprintf(
						why, len,
						"GPU set-up failed on rank");
				off += (size_t)snprintf(why + off, len - off,
							" %d", r);
				rc = HVD_ENOTSUP;
			}
		if (rc != HVD_OK && !mine && off < len)
			snprintf(why + off, len - off, " (here: %s)", own);
	}
	free(ok);
	free(one);
	return rc;
}

/* HOROVOD_HIERARCHICAL_ALLREDUCE=1 on every rank, and every host with the
 * same number of ranks: split the world into hosts and across hosts. */
static int start_hierarchical(struct hvd__gpu *g, char *why, size_t len)
{
	const struct hvd__comm *c = g->ctrl;
	uint8_t mine[8], *all;
	struct wire_w w;
	struct wire_r rd;
	size_t *eight;
	long want = 0;
	bool use = true;
	ncclResult_t r;
	int i, rc;

	/* Each rank's u32 wish and u32 local size. */
	if (hvd__env_long(WENV_HIERARCHICAL_ALLREDUCE, &want) != HVD_OK)
		want = 0;
	wire_w_fixed(&w, mine, sizeof(mine));
	wire_put_u32(&w, want ? 1 : 0);
	wire_put_u32(&w, (uint32_t)hvd__g.local_size);
	all = calloc((size_t)c->size, sizeof(mine));
	eight = calloc((size_t)c->size, sizeof(*eight));
	if (all == NULL || eight == NULL) {
		free(all);
		free(eight);
		return HVD_ENOMEM;
	}
	for (i = 0; i < c->size; i++)
		eight[i] = sizeof(mine);
	memcpy(all + sizeof(mine) * (size_t)c->rank, mine, sizeof(mine));
	rc = hvd__ring_allgatherv(c, all, eight);
	wire_r_init(&rd, all, sizeof(mine) * (size_t)c->size);
	for (i = 0; rc == HVD_OK && i < c->size; i++) {
		uint32_t wish = wire_get_u32(&rd), local = wire_get_u32(&rd);

		if (!wish || local != (uint32_t)hvd__g.local_size)
			use = false;
	}
	free(all);
	free(eight);
	if (rc != HVD_OK || !want)
		return rc;
	if (!use || hvd__g.local_size * hvd__g.cross_size != c->size) {
		if (c->rank == 0)
			hvd__warn(
				"HOROVOD_HIERARCHICAL_ALLREDUCE: not every rank asks for it, or the hosts run different numbers of ranks; the allreduce stays flat");
		return HVD_OK;
	}
	g->local_rank = hvd__g.local_rank;
	g->local_size = hvd__g.local_size;
	r = ncclCommSplit(g->world, hvd__g.cross_rank, hvd__g.local_rank,
			  &g->local, NULL);
	rc = settle_new(g, g->world, &g->local, r,
			"ncclCommSplit (the ranks of a host)", why, len);
	if (rc == HVD_OK) {
		r = ncclCommSplit(g->world, hvd__g.local_rank,
				  hvd__g.cross_rank, &g->cross, NULL);
		rc = settle_new(g, g->world, &g->cross, r,
				"ncclCommSplit (across hosts)", why, len);
	}
	if (rc == HVD_OK)
		hvd__debug("hierarchical allreduce: %d ranks a host, %d hosts",
			   g->local_size, hvd__g.cross_size);
	return rc;
}

int hvd__gpu_start(struct hvd__gpu **out, const struct hvd__comm *ctrl,
		   char *why, size_t len)
{
	struct hvd__gpu *g = calloc(1, sizeof(*g));
	struct {
		int32_t ok;
		ncclUniqueId id;
	} uid;
	ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
	char own[256] = "out of memory";
	cudaError_t e = cudaSuccess;
	ncclResult_t r;
	long streams;
	int i, rc;

	*out = NULL;
	/* Horovod's knob, set by a user's environment (hvdrun refuses it). */
	if (hvd__env_long(WENV_NUM_NCCL_STREAMS, &streams) == HVD_OK &&
	    streams > 1)
		hvd__warn(
			"HOROVOD_NUM_NCCL_STREAMS=%ld: libhvd runs NCCL on one stream per GPU",
			streams);
	if (g != NULL) {
		int v = 0;

		g->ctrl = ctrl;
		g->batch_copies = true;
		/* NVIDIA/nccl#1950, fixed in 2.29.7 (version code 22907). */
		g->one_rank_bug =
			ncclGetVersion(&v) != ncclSuccess || v < 22907;
		g->dev = hvd__gpu_device(own, sizeof(own));
		if (g->dev < 0)
			e = cudaErrorNoDevice;
		else
			e = cudaSetDevice(g->dev);
		if (e == cudaSuccess)
			e = cudaStreamCreateWithFlags(&g->stream,
						      cudaStreamNonBlocking);
		for (i = 0; i < EV_N && e == cudaSuccess; i++)
			e = cudaEventCreate(&g->ev[i]);
		if (e != cudaSuccess && g->dev >= 0)
			cuda_fail(e, "CUDA set-up", own, sizeof(own));
	}
	rc = agree(ctrl, g != NULL && e == cudaSuccess, own, why, len);
	if (rc != HVD_OK || g == NULL) /* every rank agreed: g is set */
		goto fail;
	/* Rank 0's unique id, over the control plane. */
	memset(&uid, 0, sizeof(uid));
	if (ctrl->rank == 0)
		uid.ok = ncclGetUniqueId(&uid.id) == ncclSuccess;
	rc = hvd__ring_broadcast(ctrl, &uid, sizeof(uid), 0);
	if (rc == HVD_OK && !uid.ok) {
		snprintf(why, len, "ncclGetUniqueId failed on rank 0");
		rc = HVD_ESYS;
	}
	if (rc != HVD_OK)
		goto fail;
	/* Non-blocking: no NCCL call can hang libhvd's thread (settle). */
	config.blocking = 0;
	r = ncclCommInitRankConfig(&g->world, ctrl->size, uid.id, ctrl->rank,
				   &config);
	rc = settle_new(g, NULL, &g->world, r, "ncclCommInitRank", why, len);
	if (rc == HVD_OK)
		rc = start_hierarchical(g, why, len);
	if (rc != HVD_OK)
		goto fail;
	hvd__debug("NCCL on GPU %d, %d ranks", g->dev, ctrl->size);
	*out = g;
	return HVD_OK;
fail:
	hvd__gpu_free(g, true);
	return rc;
}

/* ---- collectives ---- */

static ncclDataType_t nccl_type(enum hvd_dtype t)
{
	static const ncclDataType_t map[] = {
		[HVD_UINT8] = ncclUint8,     [HVD_INT8] = ncclInt8,
		[HVD_INT32] = ncclInt32,     [HVD_INT64] = ncclInt64,
		[HVD_FLOAT16] = ncclFloat16, [HVD_BFLOAT16] = ncclBfloat16,
		[HVD_FLOAT32] = ncclFloat32, [HVD_FLOAT64] = ncclFloat64,
	};

	return map[t];
}

static ncclRedOp_t nccl_op(enum hvd_op op)
{
	static const ncclRedOp_t map[] = {
		[HVD_SUM] = ncclSum,	  [HVD_AVERAGE] = ncclAvg,
		[HVD_MIN] = ncclMin,	  [HVD_MAX] = ncclMax,
		[HVD_PRODUCT] = ncclProd,
	};

	return map[op];
}

static int usable(struct hvd__gpu *g, char *why, size_t len)
{
	cudaError_t e;

	if (g == NULL || g->aborted) {
		snprintf(why, len, "NCCL was aborted after an earlier error");
		return HVD_ECONN;
	}
	e = cudaSetDevice(g->dev);
	return e == cudaSuccess ? HVD_OK
				: cuda_fail(e, "cudaSetDevice", why, len);
}

/* The stream waits for the work queued before the tensor's submission. */
static int wait_ready(struct hvd__gpu *g, void *ready, char *why, size_t len)
{
	cudaError_t e;

	if (ready == NULL)
		return HVD_OK;
	e = cudaStreamWaitEvent(g->stream, (cudaEvent_t)ready, 0);
	return e == cudaSuccess ? HVD_OK
				: cuda_fail(e, "cudaStreamWaitEvent", why, len);
}

static int fusion_reserve(struct hvd__gpu *g, size_t bytes, char *why,
			  size_t len)
{
	size_t cap = g->fusion_cap;
	cudaError_t e;

	if (bytes <= cap)
		return HVD_OK;
	while (cap < bytes)
		cap = cap ? cap * 2 : (size_t)1 << 20;
	/* The stream is idle between collectives: the old buffer can go. */
	cudaFree(g->fusion);
	g->fusion = NULL;
	g->fusion_cap = 0;
	e = cudaMalloc((void **)&g->fusion, cap);
	if (e != cudaSuccess)
		return cuda_fail(e, "cudaMalloc of the fusion buffer", why,
				 len);
	g->fusion_cap = cap;
	return HVD_OK;
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
			return cuda_fail(e, "cudaMemcpyAsync", why, len);
	}
	return HVD_OK;
}

/* An allreduce on the world communicator. NCCL before 2.29.7 leaves the
 * last elements of a scaled op (a pre-multiplied sum) on one rank
 * unwritten, unless the count fills its blocks (NVIDIA/nccl#1950: a
 * grid of min(32, bytes / 16 KiB) blocks of floor(count / blocks)
 * elements). There a scaled op of one rank runs as whole multiples of
 * 512 KiB (32 full blocks), then pieces of at most 16 KiB (one block). */
static int world_allreduce(struct hvd__gpu *g, const void *send, void *recv,
			   size_t count, enum hvd_dtype t, ncclRedOp_t rop,
			   bool custom, char *why, size_t len)
{
	const size_t full = (size_t)512 << 10, block = (size_t)16 << 10;
	size_t es = hvd__dtype_size(t), bytes = count * es, off = 0, piece;
	int rc = HVD_OK;

	if (!custom || !g->one_rank_bug || g->ctrl->size != 1)
		return settle(g, g->world,
			      ncclAllReduce(send, recv, count, nccl_type(t),
					    rop, g->world, g->stream),
			      "ncclAllReduce", why, len);
	while (off < bytes && rc == HVD_OK) {
		piece = bytes - off;
		if (piece >= full)
			piece -= piece % full;
		else if (piece > block)
			piece = block;
		rc = settle(g, g->world,
			    ncclAllReduce((const char *)send + off,
					  (char *)recv + off, piece / es,
					  nccl_type(t), rop, g->world,
					  g->stream),
			    "ncclAllReduce", why, len);
		off += piece;
	}
	return rc;
}

/* buf (count elements, padded to a multiple of the host's ranks) in
 * place: reduce-scatter in the host, allreduce across hosts, allgather
 * in the host. */
static int hierarchical(struct hvd__gpu *g, char *buf, size_t count,
			enum hvd_dtype t, enum hvd_op op, char *why, size_t len)
{
	size_t per = count / (size_t)g->local_size;
	char *mine = buf + per * hvd__dtype_size(t) * (size_t)g->local_rank;
	ncclDataType_t nt = nccl_type(t);
	int rc;

	rc = settle(g, g->local,
		    ncclReduceScatter(buf, mine, per, nt, nccl_op(op), g->local,
				      g->stream),
		    "ncclReduceScatter", why, len);
	if (rc == HVD_OK)
		rc = settle(g, g->cross,
			    ncclAllReduce(mine, mine, per, nt, nccl_op(op),
					  g->cross, g->stream),
			    "ncclAllReduce (across hosts)", why, len);
	if (rc == HVD_OK)
		rc = settle(
			g, g->local,
			ncclAllGather(mine, buf, per, nt, g->local, g->stream),
			"ncclAllGather", why, len);
	return rc;
}

/* The allreduce with NCCL op rop, on a usable g; flat: never the
 * hierarchical path (a scaled op belongs to the world communicator). */
static int allreduce_op(struct hvd__gpu *g, struct hvd__gpu_tensor *t, size_t n,
			enum hvd_dtype dtype, enum hvd_op op, ncclRedOp_t rop,
			bool flat, struct hvd__gpu_times *times, char *why,
			size_t len)
{
	size_t es = hvd__dtype_size(dtype), total = 0, padded, i, at, k;
	/* The average of the hosts' averages is the average for floats;
	 * integers divide once, so they take the flat path. */
	bool hier = !flat && g->local != NULL &&
		    (op != HVD_AVERAGE || hvd__dtype_float(dtype));
	int rc = HVD_OK; /* the caller found g usable */

	for (i = 0; i < n && rc == HVD_OK; i++) {
		total += t[i].count;
		rc = wait_ready(g, t[i].ready, why, len);
	}
	if (rc != HVD_OK)
		return rc;
	memset(times, 0, sizeof(*times));
	if (total == 0)
		return HVD_OK;
	cudaEventRecord(g->ev[EV_START], g->stream);
	if (n == 1 && !hier) {
		/* One tensor: from its send buffer into its receive buffer. */
		cudaEventRecord(g->ev[EV_IN], g->stream);
		rc = world_allreduce(g, t[0].send, t[0].recv, t[0].count, dtype,
				     rop, flat, why, len);
		cudaEventRecord(g->ev[EV_REDUCED], g->stream);
		if (rc == HVD_OK)
			rc = wait_stream(g, why, len);
		if (rc == HVD_OK)
			times->reduce_us =
				elapsed_us(g->ev[EV_IN], g->ev[EV_REDUCED]);
		return rc;
	}
	padded = total;
	if (hier && padded % (size_t)g->local_size)
		padded +=
			(size_t)g->local_size - padded % (size_t)g->local_size;
	rc = fusion_reserve(g, padded * es, why, len);
	if (rc == HVD_OK)
		rc = copies_reserve(g, n);
	if (rc != HVD_OK)
		return rc;
	for (i = 0, at = 0, k = 0; i < n; i++) {
		if (t[i].count == 0)
			continue;
		g->dsts[k] = g->fusion + at;
		g->srcs[k] = t[i].send;
		g->sizes[k++] = t[i].count * es;
		at += t[i].count * es;
	}
	rc = copy_batch(g, k, why, len);
	cudaEventRecord(g->ev[EV_IN], g->stream);
	if (rc == HVD_OK && hier)
		rc = hierarchical(g, g->fusion, padded, dtype, op, why, len);
	else if (rc == HVD_OK)
		rc = world_allreduce(g, g->fusion, g->fusion, total, dtype, rop,
				     flat, why, len);
	cudaEventRecord(g->ev[EV_REDUCED], g->stream);
	for (i = 0, at = 0, k = 0; rc == HVD_OK && i < n; i++) {
		if (t[i].count == 0)
			continue;
		g->dsts[k] = t[i].recv;
		g->srcs[k] = g->fusion + at;
		g->sizes[k++] = t[i].count * es;
		at += t[i].count * es;
	}
	if (rc == HVD_OK)
		rc = copy_batch(g, k, why, len);
	if (rc == HVD_OK)
		rc = wait_stream(g, why, len);
	if (rc != HVD_OK)
		return rc;
	times->copy_in_us = elapsed_us(g->ev[EV_START], g->ev[EV_IN]);
	times->reduce_us = elapsed_us(g->ev[EV_IN], g->ev[EV_REDUCED]);
	times->copy_out_us = elapsed_us(g->ev[EV_REDUCED], g->ev[EV_DONE]);
	times->fused_bytes = total * es;
	return HVD_OK;
}

/* The NCCL op for op scaled by scale: a sum pre-multiplied by scale
 * (an average folds in 1/size), when scale is not 1; *custom says
 * whether it must be destroyed. */
static int scaled_op(struct hvd__gpu *g, enum hvd_dtype t, enum hvd_op op,
		     double scale, ncclRedOp_t *out, bool *custom, char *why,
		     size_t len)
{
	union {
		float f;
		double d;
		uint16_t h;
	} v;

	/* The average of one rank is its value: a copy, never NCCL's
	 * one-rank scaling kernel (see world_allreduce). */
	if (op == HVD_AVERAGE && g->ctrl->size == 1)
		op = HVD_SUM;
	*out = nccl_op(op);
	*custom = false;
	if (scale == 1.0)
		return HVD_OK;
	if (op == HVD_AVERAGE)
		scale /= g->ctrl->size;
	if (t == HVD_FLOAT64)
		v.d = scale;
	else if (t == HVD_FLOAT32)
		v.f = (float)scale;
	else if (t == HVD_FLOAT16)
		v.h = hvd__float_to_half((float)scale);
	else
		v.h = hvd__float_to_bf16((float)scale);
	*custom = true;
	return settle(g, g->world,
		      ncclRedOpCreatePreMulSum(out, &v, nccl_type(t),
					       ncclScalarHostImmediate,
					       g->world),
		      "ncclRedOpCreatePreMulSum", why, len);
}

int hvd__gpu_allreduce(struct hvd__gpu *g, struct hvd__gpu_tensor *t, size_t n,
		       enum hvd_dtype dtype, enum hvd_op op, double scale,
		       struct hvd__gpu_times *times, char *why, size_t len)
{
	ncclRedOp_t rop;
	bool custom;
	int rc = usable(g, why, len);

	if (rc == HVD_OK)
		rc = scaled_op(g, dtype, op, scale, &rop, &custom, why, len);
	if (rc != HVD_OK)
		return rc;
	rc = allreduce_op(g, t, n, dtype, op, rop, custom, times, why, len);
	if (custom)
		ncclRedOpDestroy(rop, g->world);
	return rc;
}

int hvd__gpu_reducescatter(struct hvd__gpu *g, const void *send, void *recv,
			   const size_t *counts, enum hvd_dtype dtype,
			   enum hvd_op op, double scale, void *ready, char *why,
			   size_t len)
{
	size_t es = hvd__dtype_size(dtype), off = 0;
	ncclRedOp_t rop;
	bool custom = false, even = true;
	int r, rc = usable(g, why, len);

	if (rc == HVD_OK)
		rc = wait_ready(g, ready, why, len);
	if (rc == HVD_OK)
		rc = scaled_op(g, dtype, op, scale, &rop, &custom, why, len);
	if (rc != HVD_OK)
		return rc;
	for (r = 1; r < g->ctrl->size; r++)
		even = even && counts[r] == counts[0];
	if (g->ctrl->size == 1) {
		rc = world_allreduce(g, send, recv, counts[0], dtype, rop,
				     custom, why, len);
	} else if (even) {
		if (counts[0] > 0)
			rc = settle(g, g->world,
				    ncclReduceScatter(send, recv, counts[0],
						      nccl_type(dtype), rop,
						      g->world, g->stream),
				    "ncclReduceScatter", why, len);
	} else {
		/* Uneven rows: one reduce to each rank, in one group. */
		rc = settle(g, g->world, ncclGroupStart(), "ncclGroupStart",
			    why, len);
		for (r = 0; r < g->ctrl->size && rc == HVD_OK; r++) {
			if (counts[r] > 0)
				rc = settle(g, g->world,
					    ncclReduce((const char *)send + off,
						       recv, counts[r],
						       nccl_type(dtype), rop, r,
						       g->world, g->stream),
					    "ncclReduce", why, len);
			off += counts[r] * es;
		}
		if (rc == HVD_OK)
			rc = settle(g, g->world, ncclGroupEnd(), "ncclGroupEnd",
				    why, len);
	}
	if (rc == HVD_OK)
		rc = wait_stream(g, why, len);
	if (custom)
		ncclRedOpDestroy(rop, g->world);
	return rc;
}

/* The start of a collective whose result libhvd allocates: the device
 * is usable, the stream waits for the input, and *buf is a cudaMalloc'ed
 * result of the sum of bytes[] (at least one byte: the caller always gets
 * a buffer to free). */
static int result_buffer(struct hvd__gpu *g, void *ready, const size_t *bytes,
			 char **buf, const char *what, char *why, size_t len)
{
	size_t total = 0;
	cudaError_t e;
	int r, rc = usable(g, why, len);

	*buf = NULL;
	if (rc == HVD_OK)
		rc = wait_ready(g, ready, why, len);
	if (rc != HVD_OK)
		return rc;
	for (r = 0; r < g->ctrl->size; r++)
		total += bytes[r];
	e = cudaMalloc((void **)buf, total ? total : 1);
	return e == cudaSuccess ? HVD_OK : cuda_fail(e, what, why, len);
}

/* End the group of calls that fill buf (rc: how its start went), wait
 * for it, and hand buf to *out; on failure buf is freed. */
static int group_result(struct hvd__gpu *g, int rc, char *buf, void **out,
			char *why, size_t len)
{
	if (rc == HVD_OK)
		rc = settle(g, g->world, ncclGroupEnd(), "ncclGroupEnd", why,
			    len);
	if (rc == HVD_OK)
		rc = wait_stream(g, why, len);
	if (rc != HVD_OK) {
		cudaFree(buf);
		return rc;
	}
	*out = buf;
	return HVD_OK;
}

int hvd__gpu_alltoall(struct hvd__gpu *g, const void *send,
		      const size_t *sbytes, const size_t *rbytes, void *ready,
		      void **out, char *why, size_t len)
{
	size_t soff = 0, roff = 0;
	char *buf;
	int r, rc = result_buffer(g, ready, rbytes, &buf,
				  "cudaMalloc of the alltoall result", why,
				  len);

	*out = NULL;
	if (rc != HVD_OK)
		return rc;
	rc = settle(g, g->world, ncclGroupStart(), "ncclGroupStart", why, len);
	for (r = 0; r < g->ctrl->size && rc == HVD_OK; r++) {
		if (sbytes[r] > 0)
			rc = settle(g, g->world,
				    ncclSend((const char *)send + soff,
					     sbytes[r], ncclUint8, r, g->world,
					     g->stream),
				    "ncclSend", why, len);
		if (rc == HVD_OK && rbytes[r] > 0)
			rc = settle(g, g->world,
				    ncclRecv(buf + roff, rbytes[r], ncclUint8,
					     r, g->world, g->stream),
				    "ncclRecv", why, len);
		soff += sbytes[r];
		roff += rbytes[r];
	}
	return group_result(g, rc, buf, out, why, len);
}

int hvd__gpu_broadcast(struct hvd__gpu *g, void *buf, size_t bytes, int root,
		       void *ready, char *why, size_t len)
{
	int rc = usable(g, why, len);

	if (rc == HVD_OK)
		rc = wait_ready(g, ready, why, len);
	if (rc != HVD_OK || bytes == 0)
		return rc;
	rc = settle(g, g->world,
		    ncclBroadcast(buf, buf, bytes, ncclUint8, root, g->world,
				  g->stream),
		    "ncclBroadcast", why, len);
	return rc == HVD_OK ? wait_stream(g, why, len) : rc;
}

int hvd__gpu_allgather(struct hvd__gpu *g, const void *send,
		       const size_t *bytes, void *ready, void **out, char *why,
		       size_t len)
{
	size_t off = 0;
	char *buf;
	int r, rc = result_buffer(g, ready, bytes, &buf,
				  "cudaMalloc of the allgather result", why,
				  len);

	*out = NULL;
	if (rc != HVD_OK)
		return rc;
	/* Blocks may differ in size: one broadcast from each rank, in one
	 * group. */
	rc = settle(g, g->world, ncclGroupStart(), "ncclGroupStart", why, len);
	for (r = 0; r < g->ctrl->size && rc == HVD_OK; r++) {
		if (bytes[r] > 0)
			rc = settle(
				g, g->world,
				ncclBroadcast(r == g->ctrl->rank ? send
								 : buf + off,
					      buf + off, bytes[r], ncclUint8, r,
					      g->world, g->stream),
				"ncclBroadcast", why, len);
		off += bytes[r];
	}
	return group_result(g, rc, buf, out, why, len);
}

void hvd__gpu_free(struct hvd__gpu *g, bool broken)
{
	int i, old = -1;

	if (g == NULL)
		return;
	/* hvd_shutdown() runs this in the user's thread: its device is
	 * put back after. */
	if (cudaGetDevice(&old) != cudaSuccess)
		old = -1;
	if (g->dev >= 0)
		cudaSetDevice(g->dev);
	if (broken) {
		abort_comms(g);
	} else {
		if (g->cross != NULL)
			ncclCommDestroy(g->cross);
		if (g->local != NULL)
			ncclCommDestroy(g->local);
		if (g->world != NULL)
			ncclCommDestroy(g->world);
	}
	cudaFree(g->fusion);
	for (i = 0; i < EV_N; i++)
		if (g->ev[i] != NULL)
			cudaEventDestroy(g->ev[i]);
	if (g->stream != NULL)
		cudaStreamDestroy(g->stream);
	free(g->dsts);
	free(g->srcs);
	free(g->sizes);
	free(g);
	if (old >= 0)
		cudaSetDevice(old);
}

HVD_EXPORT int hvd_nccl_built(void)
{
	return NCCL_VERSION_CODE; /* as Horovod's: 22809 for 2.28.9 */
}
