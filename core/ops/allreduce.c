/* ops/allreduce.c: how a batch of allreduces (one tensor, or several
 * fused) runs: on the CPU over the transport, by the ring (ring.h) or
 * the transport's own allreduce; on the GPU over NCCL (gpu.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "util/reduce.h"
#include "algo/ring.h"
#include "algo/adasum.h"

/* A batch's time, laid out on the timeline after its copies in: the
 * transport's own allreduce or the hosts' segments (own), then the two
 * phases of the ring or of Adasum, each under its name. */
struct phases {
	const char *own, *scatter, *gather;
	long long own_us;
	struct hvd__ring_times rt;
};

#define RING_PHASES(own)                                                       \
	{                                                                      \
		own, "RING_REDUCE_SCATTER", "RING_ALLGATHER", 0,               \
		{                                                              \
			0, 0                                                   \
		}                                                              \
	}
#define ADASUM_PHASES                                                          \
	{                                                                      \
		NULL, "ADASUM_REDUCE_SCATTER", "ADASUM_ALLGATHER", 0,          \
		{                                                              \
			0, 0                                                   \
		}                                                              \
	}

/* One allreduce of buf in place: the transport's own when it has one
 * for this dtype and op (MPI_Allreduce), else the ring. */
static int allreduce(struct hvd__engine *e, void *buf, size_t count,
		     enum hvd_dtype t, enum hvd_op op, struct phases *ph)
{
	if (e->k.transport_allreduce && e->comm.ops->allreduce != NULL &&
	    e->comm.size > 1) {
		long long t0 = hvd__now_us();
		int rc = e->comm.ops->allreduce(e->comm.t, buf, count, t, op);

		if (rc != HVD_ENOTSUP) {
			ph->own_us += hvd__now_us() - t0;
			return rc;
		}
	}
	return hvd__ring_allreduce_timed(&e->comm, buf, count, t, op, &ph->rt);
}

static long long phase(const struct hvd__engine *e, const char *name,
		       const char *what, long long at, long long dur)
{
	hvd__timeline_span(e->tl, name, what, at, dur);
	return at + dur;
}

/* One row per tensor: the time the batch spent in each phase, laid out
 * in order. Tensors of one batch share their phases' spans. */
static void timeline_batch(const struct hvd__engine *e, struct hvd__req **batch,
			   size_t n, bool direct, long long t0, long long t_in,
			   const struct phases *ph, long long t_out)
{
	const struct hvd__ring_times *rt = &ph->rt;
	/* The ring's phases, unless only the transport's own ran. */
	bool ring =
		rt->reduce_scatter_us + rt->allgather_us > 0 || ph->own_us == 0;
	size_t i;

	for (i = 0; e->tl != NULL && i < n; i++) {
		const char *name = batch[i]->name;
		long long at = t0;

		if (!direct || t_in > 0)
			phase(e, name,
			      direct ? "MEMCPY_IN_RECV_BUFFER"
				     : "MEMCPY_IN_FUSION_BUFFER",
			      at, t_in);
		at += t_in;
		if (ph->own_us > 0)
			at = phase(e, name, ph->own, at, ph->own_us);
		if (ring) {
			at = phase(e, name, ph->scatter, at,
				   rt->reduce_scatter_us);
			at = phase(e, name, ph->gather, at, rt->allgather_us);
		}
		if (!direct)
			phase(e, name, "MEMCPY_OUT_FUSION_BUFFER", at, t_out);
	}
}

/* Scale the pieces by factor, after dividing them by divisor (> 1: an
 * average over the ranks that have not joined). */
static void scale_pieces(const struct iovec *v, int k, enum hvd_dtype t,
			 int divisor, double factor)
{
	size_t es = hvd__dtype_size(t);
	int j;

	for (j = 0; j < k; j++)
		hvd__divide_scale(v[j].iov_base, v[j].iov_len / es, t, divisor,
				  factor);
}

/* The tensors of one batch, laid end to end, are reduced one segment of
 * k.segment bytes at a time, so that each segment's ring passes,
 * reductions and copies run while it is still in cache. Where the
 * transport can gather and scatter (TCP), the ring works on the tensors
 * where they lie: no fusion buffer, no copies but an out-of-place
 * tensor's send buffer into its receive buffer. Where the transport's own
 * allreduce wants one buffer (MPI), each segment is copied into the
 * fusion buffer, reduced, and copied out. */
static int cpu_allreduce(struct hvd__engine *e, struct hvd__req **batch,
			 size_t n)
{
	enum hvd_dtype t = (enum hvd_dtype)batch[0]->m.dtype;
	enum hvd_op op = (enum hvd_op)batch[0]->m.op;
	double pre = batch[0]->m.prescale, post = batch[0]->m.postscale;
	/* While ranks have joined, an average sums and divides by the ranks
	 * that gave data. */
	bool rejoin = op == HVD_AVERAGE && e->njoined > 0;
	int divisor = rejoin ? e->comm.size - e->njoined : 1;
	enum hvd_op run = rejoin ? HVD_SUM : op;
	size_t es = hvd__dtype_size(t), total = 0, seg, pos, i;
	long long t0, t_in = 0, t_out = 0, t1;
	struct phases ph = RING_PHASES(e->hier.shm != NULL ? "SHM_ALLREDUCE"
							   : "MPI_ALLREDUCE");
	bool shm = e->hier.shm != NULL && e->k.shm_allreduce;
	bool direct =
		n == 1 || shm ||
		(e->comm.ops->sendrecv_v != NULL &&
		 (e->comm.ops->allreduce == NULL || !e->k.transport_allreduce));
	struct iovec *v;
	int k, rc = HVD_OK;

	for (i = 0; i < n; i++)
		total += (size_t)batch[i]->m.count * es;
	seg = e->k.segment - e->k.segment % es;
	if (seg == 0)
		seg = es;
	if (!direct && hvd__fusion_reserve(&e->buf, seg) != HVD_OK)
		return HVD_ENOMEM;
	v = malloc((n > 0 ? n : 1) * sizeof(*v));
	if (v == NULL)
		return HVD_ENOMEM;
	t0 = hvd__now_us();
	for (pos = 0; pos < total && rc == HVD_OK; pos += seg) {
		size_t len = total - pos < seg ? total - pos : seg, at;

		/* Every tensor's part of [pos, pos + len): its send buffer
		 * into its receive buffer (direct) or the fusion buffer. */
		t1 = hvd__now_us();
		for (i = 0, at = 0, k = 0; i < n && at < pos + len; i++) {
			size_t b = (size_t)batch[i]->m.count * es, lo, hi;

			if (b > 0 && at + b > pos) {
				const char *src;
				char *dst;

				lo = pos > at ? pos - at : 0;
				hi = pos + len - at < b ? pos + len - at : b;
				src = (const char *)batch[i]->sendbuf + lo;
				dst = direct ? (char *)batch[i]->recvbuf + lo
					     : e->buf.fusion + (at + lo - pos);
				if (dst != src)
					hvd__copy(dst, src, hi - lo);
				v[k++] = (struct iovec){dst, hi - lo};
			}
			at += b;
		}
		if (!direct) { /* the segment, in the fusion buffer */
			v[0] = (struct iovec){e->buf.fusion, len};
			k = 1;
		}
		scale_pieces(v, k, t, 1, pre);
		t_in += hvd__now_us() - t1;
		if (e->hier.shm != NULL) {
			t1 = hvd__now_us();
			rc = hvd__shm_allreduce_v(e->hier.shm, &e->hier.across,
						  v, k, t, run,
						  hvd__transport_timeout_ms());
			ph.own_us += hvd__now_us() - t1;
		} else if (k == 1)
			rc = allreduce(e, v[0].iov_base, len / es, t, run, &ph);
		else
			rc = hvd__ring_allreduce_v(&e->comm, v, k, t, run,
						   &ph.rt);
		if (rc == HVD_OK)
			scale_pieces(v, k, t, divisor, post);
		if (rc != HVD_OK || direct)
			continue;
		t1 = hvd__now_us();
		for (i = 0, at = 0; i < n && at < pos + len; i++) {
			size_t b = (size_t)batch[i]->m.count * es, lo, hi;

			if (b > 0 && at + b > pos) {
				lo = pos > at ? pos - at : 0;
				hi = pos + len - at < b ? pos + len - at : b;
				hvd__copy((char *)batch[i]->recvbuf + lo,
					  e->buf.fusion + (at + lo - pos),
					  hi - lo);
			}
			at += b;
		}
		t_out += hvd__now_us() - t1;
	}
	free(v);
	timeline_batch(e, batch, n, direct, t0, t_in, &ph, t_out);
	return rc;
}

/* How a batch of Adasum allreduces combines (adasum.h): through the
 * hosts' segments (*shm), else over the transport. A GPU batch does it
 * as Horovod's NCCL build does: each host's ranks average (by NCCL, their
 * dot products summed through the segment, or where there is none by
 * NCCL: gpu_adasum), and only the hosts combine by Adasum (one rank a
 * host: every rank by Adasum, through host memory; on one host, the
 * average: hvd__op_allreduce). Else HVD_ENOTSUP, with why in
 * e->gpu_why. */
static int adasum_way(struct hvd__engine *e, bool gpu, bool *shm)
{
	int L = 0, H = 0, rc;

	/* On the CPU, through the segments only where their tree is the
	 * job's: else the result would depend on shared memory (and on
	 * --autotune's choice of it). */
	*shm = e->hier.shm != NULL && e->hier.in_order &&
	       (gpu ||
		(e->k.shm_allreduce &&
		 hvd__adasum_hosts_first(e->hier.lsize, e->hier.nhosts)));
	if (!gpu || e->comm.size == 1)
		return HVD_OK;
	if (e->set != 0) {
		snprintf(
			e->gpu_why, sizeof(e->gpu_why),
			"Adasum of GPU tensors runs in the global process set only, as Horovod's: allreduce it there, or allreduce a copy in host memory within the set");
		return HVD_ENOTSUP;
	}
	/* No segment (--mpi, --no-shared-memory): the hosts' layout, once;
	 * hosts of different sizes are refused below without it. */
	if (!*shm && !e->hier.one_a_host && e->ada_lsize == 0 &&
	    hvd__g.homogeneous) {
		rc = hvd__hier_cross(&e->comm, &e->ada_cross, &L, &H);
		if (rc != HVD_OK)
			return rc;
		e->ada_lsize = L > 0 ? L : -1;
	}
	if (*shm || e->hier.one_a_host || e->ada_lsize > 0)
		return HVD_OK;
	snprintf(
		e->gpu_why, sizeof(e->gpu_why),
		"Adasum of GPU tensors across hosts averages within each host: it needs hosts that run the same number of ranks: give every host the same slots (-H host1:4,host2:4)");
	return HVD_ENOTSUP;
}

/* Each tensor's bytes between the batch and work, where they lie end to
 * end: in from the send buffers, or out to the receive buffers; a GPU
 * tensor's on the GPU engine's stream (in: once its data is there), all
 * waited for at the end. */
static int move(struct hvd__engine *e, struct hvd__req **batch, size_t n,
		char *work, const size_t *counts, size_t es, bool in)
{
	size_t i, at;
	int rc = HVD_OK;

	for (i = 0, at = 0; rc == HVD_OK && i < n; at += counts[i++] * es) {
		struct hvd__req *r = batch[i];
		char *dst = in ? work + at : r->recvbuf;
		const char *src = in ? r->sendbuf : work + at;

		if (r->m.gpu)
			rc = hvd__gpu_copy(e->gpu, dst, src, counts[i] * es, in,
					   in ? r->ready : NULL, e->gpu_why,
					   sizeof(e->gpu_why));
		else if (dst != src)
			hvd__copy(dst, src, counts[i] * es);
	}
	if (rc == HVD_OK && batch[0]->m.gpu)
		rc = hvd__gpu_wait_stream(e->gpu, e->gpu_why,
					  sizeof(e->gpu_why));
	return rc;
}

/* The batch's tensors as the GPU engine takes them, or NULL. */
static struct hvd__gpu_tensor *gpu_tensors(struct hvd__req **batch, size_t n)
{
	struct hvd__gpu_tensor *t = calloc(n, sizeof(*t));
	size_t i;

	for (i = 0; t != NULL && i < n; i++) {
		t[i].send = batch[i]->sendbuf;
		t[i].recv = batch[i]->recvbuf;
		t[i].count = (size_t)batch[i]->m.count;
		t[i].ready = batch[i]->ready;
	}
	return t;
}

/* GPU Adasum's part across hosts (hvd__gpu_adasum_hosts' across): this
 * rank's slice of its host's average, in host memory, combined with the
 * same slice of the other hosts' (hvd__adasum_hosts). */
struct over_hosts {
	struct hvd__engine *e;
	const size_t *counts;
	size_t n;
	enum hvd_dtype t;
	bool shm; /* the host's sums through its segment, else by NCCL */
	struct hvd__ring_times rt;
	long long from, to; /* when it started and ended */
};

/* Adasum's sums over the host's ranks by NCCL (no segment). */
static int nccl_sum(void *arg, double *v, size_t count)
{
	struct hvd__engine *e = arg;

	return hvd__gpu_host_sum(e->gpu, v, count, e->gpu_why,
				 sizeof(e->gpu_why));
}

static int over_hosts(void *arg, void *slice, size_t lo, size_t count)
{
	struct over_hosts *o = arg;
	struct hvd__engine *e = o->e;
	bool shm = o->shm, own = false;
	struct hvd__adasum_host host = {.shm = shm ? e->hier.shm : NULL,
					.timeout_ms =
						hvd__transport_timeout_ms(),
					.sum = nccl_sum,
					.arg = e};
	char *scratch = hvd__scratch(
		&e->buf, ((count + 1) / 2) * hvd__dtype_size(o->t), &own);
	int rc = scratch == NULL ? HVD_ENOMEM : HVD_OK;

	o->from = hvd__now_us();
	if (rc == HVD_OK)
		rc = hvd__adasum_hosts(
			&host, shm ? &e->hier.cross : &e->ada_cross, slice,
			scratch, lo, count, o->counts, o->n, o->t, &o->rt);
	if (own)
		free(scratch);
	o->to = hvd__now_us();
	return rc;
}

/* A GPU batch across hosts of several ranks, as Horovod's NCCL build runs
 * it: each host's average taken by NCCL on the GPU, and only this rank's
 * part of it (1/L) through host memory to combine across the hosts, the
 * host's sums through its segment (shm: e->hier's), else by NCCL on the
 * host's communicator (e->ada_cross across the hosts). On the timeline,
 * the copies in include the host's average, and the copies out its
 * gathering. */
static int gpu_adasum(struct hvd__engine *e, struct hvd__req **batch, size_t n,
		      bool shm)
{
	struct hvd__gpu_tensor *t = gpu_tensors(batch, n);
	size_t *counts = malloc(n * sizeof(*counts)), i;
	struct over_hosts o = {.e = e,
			       .counts = counts,
			       .n = n,
			       .t = (enum hvd_dtype)batch[0]->m.dtype,
			       .shm = shm};
	struct phases ph = ADASUM_PHASES;
	long long t0 = hvd__now_us(), t1;
	int rc = t == NULL || counts == NULL ? HVD_ENOMEM : HVD_OK;

	for (i = 0; rc == HVD_OK && i < n; i++)
		counts[i] = t[i].count;
	if (rc == HVD_OK)
		rc = hvd__gpu_adasum_hosts(
			e->gpu, t, n, o.t,
			batch[0]->m.prescale * batch[0]->m.postscale,
			over_hosts, &o, e->gpu_why, sizeof(e->gpu_why));
	t1 = hvd__now_us();
	if (o.to == 0)
		o.from = o.to = t1;
	ph.rt = o.rt;
	timeline_batch(e, batch, n, false, t0, o.from - t0, &ph, t1 - o.to);
	free(t);
	free(counts);
	return rc;
}

/* A batch of Adasum allreduces, in place in its receive buffer when it
 * is one tensor in host memory, else the tensors end to end in a working
 * buffer in host memory (GPU tensors on hosts of one rank): scaled,
 * combined (adasum_way), scaled; GPU tensors on hosts of several ranks:
 * gpu_adasum. A rank that joined gives zeros, which Adasum adds as
 * nothing. */
static int adasum(struct hvd__engine *e, struct hvd__req **batch, size_t n)
{
	enum hvd_dtype t = (enum hvd_dtype)batch[0]->m.dtype;
	size_t es = hvd__dtype_size(t), total = 0, room, i;
	size_t *counts = malloc(n * sizeof(*counts));
	struct phases ph = ADASUM_PHASES;
	long long t0 = hvd__now_us(), t_in, t1;
	bool gpu = batch[0]->m.gpu, one = n == 1 && !gpu, own = false, shm;
	char *mem = NULL, *work, *half;
	void *pinned = NULL;
	int rc = gpu ? hvd__gpu_engine(e) : HVD_OK;

	if (rc == HVD_OK)
		rc = adasum_way(e, gpu, &shm);
	if (rc == HVD_OK && gpu && (shm || e->ada_lsize > 1)) {
		free(counts);
		return gpu_adasum(e, batch, n, shm);
	}
	if (rc != HVD_OK || counts == NULL) {
		free(counts);
		return rc != HVD_OK ? rc : HVD_ENOMEM;
	}
	for (i = 0; i < n; i++) {
		counts[i] = (size_t)batch[i]->m.count;
		total += counts[i];
	}
	/* Room for the half received (the slices, through the segment),
	 * after the tensors when they are copied in. */
	room = shm ? hvd__adasum_shm_scratch(e->hier.shm, total)
		   : (total + 1) / 2;
	/* A GPU batch's working buffer: the GPU engine's pinned memory. */
	if (gpu)
		rc = hvd__gpu_host_buffer(e->gpu, (total + room) * es, &pinned,
					  e->gpu_why, sizeof(e->gpu_why));
	mem = gpu ? pinned
		  : hvd__scratch(&e->buf, (one ? 0 : total * es) + room * es,
				 &own);
	if (rc != HVD_OK || mem == NULL) {
		free(counts);
		return rc != HVD_OK ? rc : HVD_ENOMEM;
	}
	work = one ? batch[0]->recvbuf : mem;
	half = one ? mem : mem + total * es;
	rc = move(e, batch, n, work, counts, es, true);
	if (rc == HVD_OK)
		hvd__scale(work, total, t, batch[0]->m.prescale);
	t_in = hvd__now_us() - t0;
	if (rc == HVD_OK && shm)
		rc = hvd__adasum_shm(e->hier.shm,
				     e->hier.nhosts > 1 ? &e->hier.cross : NULL,
				     work, half, counts, n, t,
				     hvd__transport_timeout_ms(), &ph.rt);
	else if (rc == HVD_OK)
		rc = hvd__adasum(&e->comm, work, half, counts, n, t, &ph.rt);
	t1 = hvd__now_us();
	if (rc == HVD_OK) {
		hvd__scale(work, total, t, batch[0]->m.postscale);
		rc = move(e, batch, n, work, counts, es, false);
	}
	timeline_batch(e, batch, n, one, t0, t_in, &ph, hvd__now_us() - t1);
	if (own)
		free(mem);
	free(counts);
	return rc;
}

/* A batch of GPU allreduces of integers with scaling factors, or an
 * average while ranks have joined (of the ranks that gave data), as
 * Horovod's and as on the CPU: in float64, truncated toward zero and
 * saturated. NCCL scales floats only, so each scaling is done in host
 * memory: the tensors copied out, prescaled, copied into their receive
 * buffers and reduced there by NCCL, then copied out again, divided and
 * postscaled, and copied back; all waited for. */
static int gpu_scaled_ints(struct hvd__engine *e, struct hvd__req **batch,
			   size_t n, enum hvd_op op, int divisor)
{
	enum hvd_dtype t = (enum hvd_dtype)batch[0]->m.dtype;
	double pre = batch[0]->m.prescale, post = batch[0]->m.postscale;
	size_t es = hvd__dtype_size(t), total = 0, i;
	size_t *counts = calloc(n, sizeof(*counts));
	struct hvd__gpu_tensor *v = gpu_tensors(batch, n);
	struct hvd__gpu_flight *f = NULL;
	void *stage = NULL;
	int rc = counts == NULL || v == NULL ? HVD_ENOMEM : hvd__gpu_engine(e);

	for (i = 0; rc == HVD_OK && i < n; i++) {
		counts[i] = (size_t)batch[i]->m.count;
		total += counts[i];
		v[i].send = v[i].recv; /* reduced in place */
		v[i].ready = NULL;
	}
	if (rc == HVD_OK)
		rc = hvd__gpu_host_buffer(e->gpu, total * es + 1, &stage,
					  e->gpu_why, sizeof(e->gpu_why));
	if (rc == HVD_OK)
		rc = move(e, batch, n, stage, counts, es, true);
	if (rc == HVD_OK) {
		hvd__scale(stage, total, t, pre);
		rc = move(e, batch, n, stage, counts, es, false);
	}
	if (rc == HVD_OK)
		rc = hvd__gpu_allreduce(e->gpu, v, n, t, op, 1.0,
					e->k.hier_allreduce, false, &f,
					e->gpu_why, sizeof(e->gpu_why));
	if (rc == HVD_OK) { /* the copies out follow the sum on the stream */
		for (i = 0; i < n; i++)
			batch[i]->sendbuf = batch[i]->recvbuf;
		rc = move(e, batch, n, stage, counts, es, true);
	}
	if (rc == HVD_OK) {
		hvd__divide_scale(stage, total, t, divisor, post);
		rc = move(e, batch, n, stage, counts, es, false);
	}
	if (f != NULL)
		hvd__gpu_flight_free(e->gpu, f);
	free(counts);
	free(v);
	return rc;
}

/* A batch of GPU allreduces: fused on the GPU, reduced by NCCL, launched
 * and left to run (engine/flights.c: its flight completes it, and lays
 * its parts out on the timeline). */
static int gpu_allreduce(struct hvd__engine *e, struct hvd__req **batch,
			 size_t n, enum hvd_op op)
{
	struct hvd__gpu_tensor *t;
	struct hvd__gpu_flight *f = NULL;
	double scale = batch[0]->m.prescale * batch[0]->m.postscale;
	bool avg_joined = op == HVD_AVERAGE && e->njoined > 0;
	int givers = e->comm.size - e->njoined, rc;

	/* While ranks have joined (their zeros in the sum), an average is a
	 * sum divided by the ranks that gave data: of floats, a sum scaled
	 * by NCCL. Integers scale each factor on its own (0.5 then 2 is not
	 * 1: 7 gives 6). */
	if (!hvd__dtype_float((enum hvd_dtype)batch[0]->m.dtype) &&
	    (batch[0]->m.prescale != 1.0 || batch[0]->m.postscale != 1.0 ||
	     avg_joined))
		return gpu_scaled_ints(e, batch, n,
				       op == HVD_AVERAGE ? HVD_SUM : op,
				       op == HVD_AVERAGE ? givers : 1);
	if (avg_joined) {
		op = HVD_SUM;
		scale /= givers;
	}
	t = gpu_tensors(batch, n);
	rc = t == NULL ? HVD_ENOMEM : hvd__gpu_engine(e);
	if (rc == HVD_OK)
		rc = hvd__gpu_allreduce(
			e->gpu, t, n, (enum hvd_dtype)batch[0]->m.dtype, op,
			scale, e->k.hier_allreduce, e->tl != NULL, &f,
			e->gpu_why, sizeof(e->gpu_why));
	free(t);
	if (rc != HVD_OK)
		return rc;
	e->launched = f;
	return HVD__LAUNCHED;
}

int hvd__op_allreduce(struct hvd__engine *e, struct hvd__req **batch, size_t n)
{
	enum hvd_op op = (enum hvd_op)batch[0]->m.op;

	/* Adasum of GPU tensors averages each host's ranks, and where the
	 * job runs on one host that is all: the GPU's average allreduce,
	 * launched as any other (any transport, with or without shared
	 * memory). Every rank decides alike: a rank's own cross size is 1
	 * also where its local rank is on one host of several. */
	if (op == HVD_ADASUM && batch[0]->m.gpu && e->set == 0 &&
	    hvd__g.local_size == hvd__g.size)
		op = HVD_AVERAGE;
	if (op == HVD_ADASUM)
		return adasum(e, batch, n);
	return batch[0]->m.gpu ? gpu_allreduce(e, batch, n, op)
			       : cpu_allreduce(e, batch, n);
}
