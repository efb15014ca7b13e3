/* gpu/collectives.c: the collectives over NCCL on the engine's own
 * stream: allreduce (fused through the GPU fusion buffer, scaled,
 * hierarchical), reducescatter, alltoall, broadcast and allgather. */
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

static ncclDataType_t nccl_type(enum hvd_dtype t)
{
	static const ncclDataType_t map[] = {
		[HVD_UINT8] = ncclUint8,     [HVD_INT8] = ncclInt8,
		[HVD_INT32] = ncclInt32,     [HVD_INT64] = ncclInt64,
		[HVD_FLOAT16] = ncclFloat16, [HVD_BFLOAT16] = ncclBfloat16,
		[HVD_FLOAT32] = ncclFloat32, [HVD_FLOAT64] = ncclFloat64,
		[HVD_BOOL] = ncclUint8, /* reduced as bytes (nccl_op) */
	};

	return map[t];
}

static ncclRedOp_t nccl_op(enum hvd_dtype t, enum hvd_op op)
{
	static const ncclRedOp_t map[] = {
		[HVD_SUM] = ncclSum,	  [HVD_AVERAGE] = ncclAvg,
		[HVD_MIN] = ncclMin,	  [HVD_MAX] = ncclMax,
		[HVD_PRODUCT] = ncclProd,
	};

	return map[hvd__op_as(t, op)];
}

static int usable(struct hvd__gpu *g, char *why, size_t len)
{
	cudaError_t e;

	if (g == NULL || g->aborted) {
		snprintf(why, len, "NCCL was aborted after an earlier error");
		return HVD_ECONN;
	}
	e = cudaSetDevice(g->dev);
	return e == cudaSuccess
		       ? HVD_OK
		       : hvd__gpu_cuda_fail(e, "cudaSetDevice", why, len);
}

/* The stream waits for the work queued before the tensor's submission. */
static int wait_ready(struct hvd__gpu *g, void *ready, char *why, size_t len)
{
	cudaError_t e;

	if (ready == NULL)
		return HVD_OK;
	e = cudaStreamWaitEvent(g->stream, (cudaEvent_t)ready, 0);
	return e == cudaSuccess
		       ? HVD_OK
		       : hvd__gpu_cuda_fail(e, "cudaStreamWaitEvent", why, len);
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
		return hvd__gpu_settle(g, g->world,
				       ncclAllReduce(send, recv, count,
						     nccl_type(t), rop,
						     g->world, g->stream),
				       "ncclAllReduce", why, len);
	while (off < bytes && rc == HVD_OK) {
		piece = bytes - off;
		if (piece >= full)
			piece -= piece % full;
		else if (piece > block)
			piece = block;
		rc = hvd__gpu_settle(g, g->world,
				     ncclAllReduce((const char *)send + off,
						   (char *)recv + off,
						   piece / es, nccl_type(t),
						   rop, g->world, g->stream),
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

	rc = hvd__gpu_settle(g, g->local,
			     ncclReduceScatter(buf, mine, per, nt,
					       nccl_op(t, op), g->local,
					       g->stream),
			     "ncclReduceScatter", why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_settle(g, g->cross,
				     ncclAllReduce(mine, mine, per, nt,
						   nccl_op(t, op), g->cross,
						   g->stream),
				     "ncclAllReduce (across hosts)", why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_settle(
			g, g->local,
			ncclAllGather(mine, buf, per, nt, g->local, g->stream),
			"ncclAllGather", why, len);
	return rc;
}

/* Event i of f recorded on the stream: each of a timed flight's, an
 * untimed one's EV_DONE alone. */
static void mark(struct hvd__gpu *g, struct hvd__gpu_flight *f, int i)
{
	if (f->timed || i == EV_DONE)
		cudaEventRecord(f->ev[i], g->stream);
}

/* The allreduce with NCCL op rop, on a usable g, launched on the stream
 * with f's events around its parts; hier_on: within hosts then across,
 * where g is split (the setting in force); flat: never the hierarchical
 * path (a scaled op belongs to the world communicator). */
static int allreduce_op(struct hvd__gpu *g, struct hvd__gpu_tensor *t, size_t n,
			enum hvd_dtype dtype, enum hvd_op op, ncclRedOp_t rop,
			bool hier_on, bool flat, struct hvd__gpu_flight *f,
			char *why, size_t len)
{
	size_t es = hvd__dtype_size(dtype), total = 0, padded, i;
	/* The average of the hosts' averages is the average for floats;
	 * integers divide once, so they take the flat path. */
	bool hier = hier_on && !flat && g->local != NULL &&
		    (op != HVD_AVERAGE || hvd__dtype_float(dtype));
	int rc = HVD_OK; /* the caller found g usable */

	for (i = 0; i < n && rc == HVD_OK; i++) {
		total += t[i].count;
		rc = wait_ready(g, t[i].ready, why, len);
	}
	f->fused_bytes = 0;
	if (rc != HVD_OK)
		return rc;
	mark(g, f, EV_START);
	if (total == 0 || (n == 1 && !hier)) {
		/* One tensor: from its send buffer into its receive buffer. */
		mark(g, f, EV_IN);
		if (total > 0)
			rc = world_allreduce(g, t[0].send, t[0].recv,
					     t[0].count, dtype, rop, flat, why,
					     len);
		mark(g, f, EV_REDUCED);
		mark(g, f, EV_DONE);
		return rc;
	}
	padded = total;
	if (hier && padded % (size_t)g->local_size)
		padded +=
			(size_t)g->local_size - padded % (size_t)g->local_size;
	rc = hvd__gpu_fusion_reserve(g, padded * es, why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_fuse(g, t, n, es, true, why, len);
	mark(g, f, EV_IN);
	if (rc == HVD_OK && hier)
		rc = hierarchical(g, g->fusion, padded, dtype, op, why, len);
	else if (rc == HVD_OK)
		rc = world_allreduce(g, g->fusion, g->fusion, total, dtype, rop,
				     flat, why, len);
	mark(g, f, EV_REDUCED);
	if (rc == HVD_OK)
		rc = hvd__gpu_fuse(g, t, n, es, false, why, len);
	mark(g, f, EV_DONE);
	f->fused_bytes = total * es;
	return rc;
}

/* A flight of g's spares, timed or not, or a new one. */
static int flight_get(struct hvd__gpu *g, bool timed,
		      struct hvd__gpu_flight **out, char *why, size_t len)
{
	struct hvd__gpu_flight *f = g->spare[timed];
	cudaError_t e = cudaSuccess;
	int made;

	*out = NULL;
	if (f != NULL) {
		g->spare[timed] = f->next;
		f->next = NULL;
		*out = f;
		return HVD_OK;
	}
	f = calloc(1, sizeof(*f));
	if (f == NULL)
		return HVD_ENOMEM;
	f->timed = timed;
	if (!timed)
		e = cudaEventCreateWithFlags(&f->ev[EV_DONE],
					     cudaEventDisableTiming);
	for (made = 0; timed && made < EV_N && e == cudaSuccess; made++)
		e = cudaEventCreate(&f->ev[made]);
	if (e != cudaSuccess) {
		hvd__gpu_flight_destroy(f);
		hvd__gpu_cuda_fail(e, "cudaEventCreate", why, len);
		return HVD_ESYS;
	}
	*out = f;
	return HVD_OK;
}

void hvd__gpu_flight_free(struct hvd__gpu *g, struct hvd__gpu_flight *f)
{
	if (f == NULL)
		return;
	f->next = g->spare[f->timed];
	g->spare[f->timed] = f;
}

void hvd__gpu_grace(struct hvd__gpu *g, long long us)
{
	if (g != NULL)
		g->checked_us = hvd__now_us() + us;
}

void *hvd__gpu_flight_event(const struct hvd__gpu_flight *f)
{
	/* cppcheck-suppress CastIntegerToAddressAtReturn ; cudaEvent_t is a pointer */
	return (void *)f->ev[EV_DONE];
}

int hvd__gpu_flight_poll(struct hvd__gpu *g, struct hvd__gpu_flight *f,
			 struct hvd__gpu_times *times, char *why, size_t len)
{
	int rc;

	if (g->aborted) {
		snprintf(why, len, "NCCL was aborted after an earlier error");
		return HVD_ECONN;
	}
	rc = hvd__gpu_poll_event(g, f->ev[EV_DONE], &g->checked_us, why, len);
	if (rc != 1)
		return rc;
	memset(times, 0, sizeof(*times));
	times->fused_bytes = f->fused_bytes;
	if (!f->timed)
		return 1;
	times->timed = true;
	times->copy_in_us = hvd__gpu_elapsed_us(f->ev[EV_START], f->ev[EV_IN]);
	times->reduce_us = hvd__gpu_elapsed_us(f->ev[EV_IN], f->ev[EV_REDUCED]);
	times->copy_out_us =
		hvd__gpu_elapsed_us(f->ev[EV_REDUCED], f->ev[EV_DONE]);
	return 1;
}

/* The NCCL op for op scaled by scale on communicator c of size ranks: a
 * sum pre-multiplied by scale (an average folds in 1/size), when scale
 * is not 1; *custom says whether it must be destroyed (on c). */
static int scaled_op(struct hvd__gpu *g, ncclComm_t c, int size,
		     enum hvd_dtype t, enum hvd_op op, double scale,
		     ncclRedOp_t *out, bool *custom, char *why, size_t len)
{
	union {
		float f;
		double d;
		uint16_t h;
	} v;

	/* The average of one rank is its value: a copy, never NCCL's
	 * one-rank scaling kernel (see world_allreduce). */
	if (op == HVD_AVERAGE && size == 1)
		op = HVD_SUM;
	*out = nccl_op(t, op);
	*custom = false;
	if (scale == 1.0)
		return HVD_OK;
	if (op == HVD_AVERAGE)
		scale /= size;
	if (t == HVD_FLOAT64)
		v.d = scale;
	else if (t == HVD_FLOAT32)
		v.f = (float)scale;
	else if (t == HVD_FLOAT16)
		v.h = hvd__float_to_half((float)scale);
	else
		v.h = hvd__float_to_bf16((float)scale);
	*custom = true;
	return hvd__gpu_settle(g, c,
			       ncclRedOpCreatePreMulSum(out, &v, nccl_type(t),
							ncclScalarHostImmediate,
							c),
			       "ncclRedOpCreatePreMulSum", why, len);
}

int hvd__gpu_allreduce(struct hvd__gpu *g, struct hvd__gpu_tensor *t, size_t n,
		       enum hvd_dtype dtype, enum hvd_op op, double scale,
		       bool hier, bool timed, struct hvd__gpu_flight **out,
		       char *why, size_t len)
{
	struct hvd__gpu_flight *f = NULL;
	ncclRedOp_t rop;
	bool custom = false;
	int rc = usable(g, why, len);

	*out = NULL;
	if (rc == HVD_OK)
		rc = flight_get(g, timed, &f, why, len);
	if (rc == HVD_OK)
		rc = scaled_op(g, g->world, g->ctrl->size, dtype, op, scale,
			       &rop, &custom, why, len);
	if (rc == HVD_OK)
		rc = allreduce_op(g, t, n, dtype, op, rop, hier, custom, f, why,
				  len);
	/* NCCL lets an op go once the calls given it have returned. */
	if (custom && g->world != NULL)
		ncclRedOpDestroy(rop, g->world);
	if (rc != HVD_OK) {
		hvd__gpu_flight_free(g, f);
		return rc;
	}
	*out = f;
	return HVD_OK;
}

int hvd__gpu_adasum_hosts(struct hvd__gpu *g, struct hvd__gpu_tensor *t,
			  size_t n, enum hvd_dtype dtype, double scale,
			  hvd__gpu_slice_fn across, void *arg, char *why,
			  size_t len)
{
	size_t es = hvd__dtype_size(dtype), total = 0, per, lo, count, i;
	ncclDataType_t nt = nccl_type(dtype);
	ncclComm_t c = NULL;
	ncclRedOp_t rop;
	bool custom = false;
	char *mine;
	int L = 1, me = 0, rc = usable(g, why, len);

	if (rc == HVD_OK)
		rc = hvd__gpu_host_comm(g, &c, &me, &L, why, len);
	for (i = 0; i < n && rc == HVD_OK; i++) {
		total += t[i].count;
		rc = wait_ready(g, t[i].ready, why, len);
	}
	per = (total + (size_t)L - 1) / (size_t)L;
	lo = per * (size_t)me;
	count = lo < total ? (total - lo < per ? total - lo : per) : 0;
	if (rc == HVD_OK && total > 0)
		rc = hvd__gpu_fusion_reserve(g, per * (size_t)L * es, why, len);
	if (rc != HVD_OK || total == 0)
		return rc;
	mine = g->fusion + lo * es;
	rc = hvd__gpu_fuse(g, t, n, es, true, why, len);
	if (rc == HVD_OK)
		rc = scaled_op(g, c, L, dtype, HVD_AVERAGE, scale, &rop,
			       &custom, why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_settle(g, c,
				     ncclReduceScatter(g->fusion, mine, per, nt,
						       rop, c, g->stream),
				     "ncclReduceScatter (the host's average)",
				     why, len);
	if (custom)
		ncclRedOpDestroy(rop, c);
	/* This rank's part through pinned host memory, across the hosts. */
	if (rc == HVD_OK && count > 0) {
		rc = hvd__gpu_stage_reserve(g, count * es, why, len);
		if (rc == HVD_OK)
			rc = hvd__gpu_copy(g, g->stage, mine, count * es, true,
					   NULL, why, len);
		if (rc == HVD_OK)
			rc = hvd__gpu_wait_stream(g, why, len);
	}
	if (rc == HVD_OK)
		rc = across(arg, count > 0 ? g->stage : NULL, lo, count);
	if (rc == HVD_OK && count > 0)
		rc = hvd__gpu_copy(g, mine, g->stage, count * es, false, NULL,
				   why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_settle(
			g, c,
			ncclAllGather(mine, g->fusion, per, nt, c, g->stream),
			"ncclAllGather (within the host)", why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_fuse(g, t, n, es, false, why, len);
	return rc == HVD_OK ? hvd__gpu_wait_stream(g, why, len) : rc;
}

int hvd__gpu_host_sum(struct hvd__gpu *g, double *v, size_t count, char *why,
		      size_t len)
{
	size_t bytes = count * sizeof(*v);
	ncclComm_t c = NULL;
	int me, L, rc = usable(g, why, len);

	if (rc == HVD_OK)
		rc = hvd__gpu_host_comm(g, &c, &me, &L, why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_dots_reserve(g, bytes, why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_copy(g, g->dots, v, bytes, false, NULL, why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_settle(
			g, c,
			ncclAllReduce(g->dots, g->dots, count, ncclFloat64,
				      ncclSum, c, g->stream),
			"ncclAllReduce (Adasum's sums in the host)", why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_copy(g, v, g->dots, bytes, true, NULL, why, len);
	return rc == HVD_OK ? hvd__gpu_wait_stream(g, why, len) : rc;
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
		rc = scaled_op(g, g->world, g->ctrl->size, dtype, op, scale,
			       &rop, &custom, why, len);
	if (rc != HVD_OK)
		return rc;
	for (r = 1; r < g->ctrl->size; r++)
		even = even && counts[r] == counts[0];
	if (g->ctrl->size == 1) {
		rc = world_allreduce(g, send, recv, counts[0], dtype, rop,
				     custom, why, len);
	} else if (even) {
		if (counts[0] > 0)
			rc = hvd__gpu_settle(
				g, g->world,
				ncclReduceScatter(send, recv, counts[0],
						  nccl_type(dtype), rop,
						  g->world, g->stream),
				"ncclReduceScatter", why, len);
	} else {
		/* Uneven rows: one reduce to each rank, in one group. */
		rc = hvd__gpu_settle(g, g->world, ncclGroupStart(),
				     "ncclGroupStart", why, len);
		for (r = 0; r < g->ctrl->size && rc == HVD_OK; r++) {
			if (counts[r] > 0)
				rc = hvd__gpu_settle(
					g, g->world,
					ncclReduce((const char *)send + off,
						   recv, counts[r],
						   nccl_type(dtype), rop, r,
						   g->world, g->stream),
					"ncclReduce", why, len);
			off += counts[r] * es;
		}
		if (rc == HVD_OK)
			rc = hvd__gpu_settle(g, g->world, ncclGroupEnd(),
					     "ncclGroupEnd", why, len);
	}
	if (rc == HVD_OK)
		rc = hvd__gpu_wait_stream(g, why, len);
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
	return e == cudaSuccess ? HVD_OK
				: hvd__gpu_cuda_fail(e, what, why, len);
}

/* End the group of calls that fill buf (rc: how its start went), wait
 * for it, and hand buf to *out. On failure buf is freed once the calls
 * already queued, which may still write it, have ended. */
static int group_result(struct hvd__gpu *g, int rc, char *buf, void **out,
			char *why, size_t len)
{
	if (rc == HVD_OK)
		rc = hvd__gpu_settle(g, g->world, ncclGroupEnd(),
				     "ncclGroupEnd", why, len);
	if (rc == HVD_OK)
		rc = hvd__gpu_wait_stream(g, why, len);
	if (rc != HVD_OK) {
		hvd__gpu_drain_broken(g);
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
	rc = hvd__gpu_settle(g, g->world, ncclGroupStart(), "ncclGroupStart",
			     why, len);
	for (r = 0; r < g->ctrl->size && rc == HVD_OK; r++) {
		if (sbytes[r] > 0)
			rc = hvd__gpu_settle(g, g->world,
					     ncclSend((const char *)send + soff,
						      sbytes[r], ncclUint8, r,
						      g->world, g->stream),
					     "ncclSend", why, len);
		if (rc == HVD_OK && rbytes[r] > 0)
			rc = hvd__gpu_settle(g, g->world,
					     ncclRecv(buf + roff, rbytes[r],
						      ncclUint8, r, g->world,
						      g->stream),
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
	rc = hvd__gpu_settle(g, g->world,
			     ncclBroadcast(buf, buf, bytes, ncclUint8, root,
					   g->world, g->stream),
			     "ncclBroadcast", why, len);
	return rc == HVD_OK ? hvd__gpu_wait_stream(g, why, len) : rc;
}

int hvd__gpu_copy(struct hvd__gpu *g, void *dst, const void *src, size_t bytes,
		  bool to_host, void *ready, char *why, size_t len)
{
	int rc = usable(g, why, len);
	cudaError_t e;

	if (rc == HVD_OK)
		rc = wait_ready(g, ready, why, len);
	if (rc != HVD_OK || bytes == 0)
		return rc;
	e = cudaMemcpyAsync(dst, src, bytes,
			    to_host ? cudaMemcpyDeviceToHost
				    : cudaMemcpyHostToDevice,
			    g->stream);
	return e == cudaSuccess
		       ? HVD_OK
		       : hvd__gpu_cuda_fail(e, "cudaMemcpyAsync", why, len);
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
	rc = hvd__gpu_settle(g, g->world, ncclGroupStart(), "ncclGroupStart",
			     why, len);
	for (r = 0; r < g->ctrl->size && rc == HVD_OK; r++) {
		if (bytes[r] > 0)
			rc = hvd__gpu_settle(
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
