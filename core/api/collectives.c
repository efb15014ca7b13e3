/* api/collectives.c: libhvd's public collectives, their _async forms
 * (the synchronous ones are sync.c's). Each checks its arguments on the
 * caller's thread (a bad one fails at once, with hvd_error_message()),
 * describes what every rank must agree on (struct hvd__meta), and queues
 * the request (queue.c); the background thread does the rest. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "engine/runtime.h"
#include "engine/sets.h"
#include "util/reduce.h"
#include "algo/ring.h"
#include "algo/adasum.h"

/* One call's arguments, as the request will carry them. */
struct call {
	const char *name;
	struct hvd__meta m;
	const void *sendbuf;
	void *recvbuf;
	void **gather_out;
	size_t *gather_count;
	uint64_t local_count;
	const size_t *sendcounts; /* alltoall */
	size_t *recvcounts;	  /* alltoall */
	int set, me, n;		  /* its process set, this rank's place and
				     the set's size */
};

/* The process set of this thread's next collective (hvd_next_process_set).
 */
static __thread int next_set;

HVD_EXPORT int hvd_next_process_set(int id)
{
	next_set = id;
	return id >= 0 ? HVD_OK : HVD_EINVAL;
}

/* The process set set for this call, once (the next call runs in the
 * job): c's place in it. */
static int take_set(struct call *c)
{
	int rc;

	c->set = next_set;
	next_set = 0;
	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	rc = c->set < 0 ? HVD_ENOSET
			: hvd__sets_query(hvd__runtime_sets(), c->set, &c->me,
					  &c->n);
	if (rc != HVD_OK) {
		hvd__set_error("there is no process set %d", c->set);
		return rc;
	}
	if (c->me < 0) {
		hvd__set_error("rank %d is not in process set %d", hvd__g.rank,
			       c->set);
		return HVD_ENOTINSET;
	}
	return HVD_OK;
}

/* The shape of this thread's next collective (hvd_next_shape). */
static __thread struct {
	uint32_t ndim;
	int64_t dims[HVD__SHAPE_MAX];
} next_shape;

HVD_EXPORT int hvd_next_shape(int ndim, const int64_t *dims)
{
	int d;

	next_shape.ndim = 0;
	if (ndim < 0 || (ndim > 0 && dims == NULL)) {
		hvd__set_error("a shape of %d dimensions%s", ndim,
			       dims == NULL ? " and no sizes" : "");
		return HVD_EINVAL;
	}
	for (d = 0; d < ndim; d++) {
		int k = d < HVD__SHAPE_MAX ? d : HVD__SHAPE_MAX - 1;

		if (dims[d] < 0) {
			hvd__set_error("dimension %d of a shape is %" PRId64, d,
				       dims[d]);
			next_shape.ndim = 0;
			return HVD_EINVAL;
		}
		/* Past the most kept, the last kept is their product. */
		next_shape.dims[k] =
			d == k ? dims[d] : next_shape.dims[k] * dims[d];
	}
	next_shape.ndim =
		(uint32_t)(ndim < HVD__SHAPE_MAX ? ndim : HVD__SHAPE_MAX);
	return HVD_OK;
}

/* The shape set for this call, once (the next call has none). */
static void take_shape(struct hvd__meta *m)
{
	m->ndim = next_shape.ndim;
	memcpy(m->dims, next_shape.dims, sizeof(m->dims));
	next_shape.ndim = 0;
}

/* A shape must hold the call's elements (and rows); an allgather's or
 * alltoall's first dimension is this rank's own, and may differ. */
static int check_shape(struct hvd__meta *m, uint64_t count)
{
	uint64_t n = 1, rest = 1;
	uint32_t d;

	if (m->ndim == 0)
		return HVD_OK;
	for (d = 0; d < m->ndim; d++) {
		n *= (uint64_t)m->dims[d];
		rest *= d > 0 ? (uint64_t)m->dims[d] : 1;
	}
	if (n != count ||
	    (m->block > 0 && m->ndim > 1 && count > 0 && rest != m->block)) {
		hvd__set_error(
			"a shape of %" PRIu64 " elements (rows of %" PRIu64
			") for a call of %" PRIu64 " (rows of %" PRIu64 ")",
			n, rest, count, m->block);
		return HVD_EINVAL;
	}
	if (m->type == HVD__REQ_ALLGATHER || m->type == HVD__REQ_ALLTOALL)
		m->dims[0] = -1;
	return HVD_OK;
}

static int check_name(const char *name)
{
	if (name == NULL || *name == '\0' || strlen(name) > HVD__NAME_MAX) {
		hvd__set_error("a tensor needs a name of 1 to %d bytes",
			       HVD__NAME_MAX);
		return HVD_EINVAL;
	}
	return HVD_OK;
}

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

/* A reduction's op, factors and dtype (allreduce, reducescatter). On the
 * GPU, integers with factors are scaled in host memory (ops/). */
static int check_reduction(enum hvd_dtype t, enum hvd_op op, double pre,
			   double post, bool gpu)
{
	if (!hvd__op_valid((int)op)) {
		hvd__set_error("unknown op %d", (int)op);
		return HVD_EINVAL;
	}
	if (t == HVD_BOOL && (op == HVD_AVERAGE || op == HVD_ADASUM ||
			      pre != 1.0 || post != 1.0)) {
		hvd__set_error(
			"bool tensors reduce by sum or max (a logical or), min or product (a logical and), without scaling factors");
		return HVD_EINVAL;
	}
	if (gpu && t == HVD_INT16) {
		hvd__set_error("NCCL cannot reduce int16 tensors");
		return HVD_ENOTSUP;
	}
	if (gpu && (pre != 1.0 || post != 1.0) && op != HVD_SUM &&
	    op != HVD_AVERAGE && op != HVD_ADASUM) {
		hvd__set_error(
			"on the GPU, scaling factors need op sum, average or adasum");
		return HVD_ENOTSUP;
	}
	return HVD_OK;
}

/* Adasum (adasum.h): of floats, over any number of ranks. Of GPU
 * tensors, each host's ranks average and the hosts combine: the engine
 * checks the hosts (ops/allreduce.c), which every rank knows alike only
 * there. */
static int check_adasum(enum hvd_dtype t)
{
	if (hvd__dtype_float(t))
		return HVD_OK;
	hvd__set_error(
		"Adasum needs a floating-point dtype (float16, bfloat16, float32, float64), not %s",
		hvd__dtype_name(t));
	return HVD_ENOTSUP;
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

/* Check the send (and, if apart, receive) buffer of a GPU call, then
 * make the request and queue it. */
static int queue_call(struct call *c, size_t sbytes, size_t rbytes,
		      hvd_handle **out)
{
	struct hvd__req *r;
	uint64_t *sc = NULL;
	void *ready = NULL;
	int rc = check_name(c->name);

	if (rc == HVD_OK)
		rc = check_shape(&c->m, c->local_count);
	*out = NULL;
	if (rc == HVD_OK && c->recvbuf != NULL && c->recvbuf != c->sendbuf)
		rc = gpu_buffer(c->m.gpu, c->recvbuf, rbytes, NULL);
	if (rc == HVD_OK)
		rc = gpu_buffer(c->m.gpu, c->sendbuf, sbytes, &ready);
	if (rc != HVD_OK)
		return rc;
	/* The caller's sendcounts may go once the call returns. */
	if (c->sendcounts != NULL) {
		size_t n = (size_t)c->n, i;

		sc = malloc(n * sizeof(*sc));
		for (i = 0; sc != NULL && i < n; i++)
			sc[i] = c->sendcounts[i];
	}
	if (c->sendcounts != NULL && sc == NULL) {
		hvd__gpu_release(ready);
		return HVD_ENOMEM;
	}
	r = hvd__req_new(c->name, &c->m, ready); /* it owns ready now */
	if (r == NULL) {
		free(sc);
		return HVD_ENOMEM;
	}
	r->sendbuf = c->sendbuf;
	r->recvbuf = c->recvbuf;
	r->gather_out = c->gather_out;
	r->gather_count = c->gather_count;
	r->local_count = c->local_count;
	r->recvcounts = c->recvcounts;
	r->sendcounts = sc;
	r->set = c->set;
	return hvd__enqueue(r, out);
}

static int allreduce_async(const char *name, const void *sendbuf, void *recvbuf,
			   size_t count, enum hvd_dtype dtype, enum hvd_op op,
			   double pre, double post, bool gpu, hvd_handle **out)
{
	struct call c = {
		.name = name,
		.m = {HVD__REQ_ALLREDUCE, (uint8_t)dtype, (uint8_t)op, gpu, 0,
		      count, 0, pre, post, 0, 0, 0},
		.sendbuf = sendbuf,
		.recvbuf = recvbuf,
		.local_count = count,
	};
	int rc = take_set(&c);

	*out = NULL;
	take_shape(&c.m);
	if (rc == HVD_OK)
		rc = check_args(sendbuf, count, dtype);
	if (rc == HVD_OK)
		rc = check_args(recvbuf, count, dtype);
	if (rc == HVD_OK)
		rc = check_reduction(dtype, op, pre, post, gpu);
	if (rc == HVD_OK && op == HVD_ADASUM)
		rc = check_adasum(dtype);
	if (rc != HVD_OK)
		return rc;
	return queue_call(&c, count * hvd__dtype_size(dtype),
			  count * hvd__dtype_size(dtype), out);
}

static int broadcast_async(const char *name, void *buf, size_t count,
			   enum hvd_dtype dtype, int root, bool gpu,
			   hvd_handle **out)
{
	struct call c = {
		.name = name,
		.m = {HVD__REQ_BROADCAST, (uint8_t)dtype, 0, gpu, root, count,
		      0, 1, 1, 0, 0, 0},
		.sendbuf = buf,
		.recvbuf = buf,
		.local_count = count,
	};
	int rc = take_set(&c);

	*out = NULL;
	take_shape(&c.m);
	if (rc == HVD_OK)
		rc = check_args(buf, count, dtype);
	if (rc == HVD_OK && (root < 0 || root >= hvd__g.size)) {
		hvd__set_error("root %d is not a rank of this job of %d", root,
			       hvd__g.size);
		rc = HVD_EINVAL;
	}
	/* The root is a rank of the job; the set's engine counts its own. */
	if (rc == HVD_OK && c.set != 0) {
		c.m.root = hvd__sets_place(hvd__runtime_sets(), c.set, root);
		if (c.m.root < 0) {
			hvd__set_error("root %d is not in process set %d", root,
				       c.set);
			rc = c.m.root == HVD_ENOSET ? HVD_ENOSET : HVD_EINVAL;
		}
	}
	return rc != HVD_OK
		       ? rc
		       : queue_call(&c, count * hvd__dtype_size(dtype), 0, out);
}

static int allgather_async(const char *name, const void *sendbuf, size_t count,
			   enum hvd_dtype dtype, void **recvbuf,
			   size_t *recvcount, bool gpu, hvd_handle **out)
{
	/* count differs per rank: the coordinator compares the rest. */
	struct call c = {
		.name = name,
		.m = {HVD__REQ_ALLGATHER, (uint8_t)dtype, 0, gpu, 0, 0, 0, 1, 1,
		      0, 0, 0},
		.sendbuf = sendbuf,
		.gather_out = recvbuf,
		.gather_count = recvcount,
		.local_count = count,
	};
	int rc = take_set(&c);

	*out = NULL;
	take_shape(&c.m);
	if (rc == HVD_OK)
		rc = check_args(sendbuf, count, dtype);
	if (rc == HVD_OK && (recvbuf == NULL || recvcount == NULL)) {
		hvd__set_error("allgather needs somewhere to put its result");
		rc = HVD_EINVAL;
	}
	if (rc != HVD_OK)
		return rc;
	*recvbuf = NULL;
	*recvcount = 0;
	return queue_call(&c, count * hvd__dtype_size(dtype), 0, out);
}

static int alltoall_async(const char *name, const void *sendbuf,
			  const size_t *sendcounts, size_t block,
			  enum hvd_dtype dtype, void **recvbuf,
			  size_t *recvcount, size_t *recvcounts, bool gpu,
			  hvd_handle **out)
{
	struct call c = {
		.name = name,
		.m = {HVD__REQ_ALLTOALL, (uint8_t)dtype, 0, gpu, 0, 0, block, 1,
		      1, 0, 0, 0},
		.sendbuf = sendbuf,
		.gather_out = recvbuf,
		.gather_count = recvcount,
		.sendcounts = sendcounts,
		.recvcounts = recvcounts,
	};
	size_t total = 0;
	int i, rc = take_set(&c);

	*out = NULL;
	take_shape(&c.m);
	if (rc == HVD_OK)
		rc = check_args(sendbuf, 0, dtype);
	if (rc == HVD_OK && (sendcounts == NULL || recvbuf == NULL ||
			     recvcount == NULL || recvcounts == NULL)) {
		hvd__set_error("alltoall needs sendcounts, recvbuf, recvcount "
			       "and recvcounts");
		rc = HVD_EINVAL;
	}
	if (rc == HVD_OK && block == 0) {
		hvd__set_error("alltoall: a row of 0 elements");
		rc = HVD_EINVAL;
	}
	for (i = 0; rc == HVD_OK && i < c.n; i++) {
		if (sendcounts[i] % block != 0) {
			hvd__set_error(
				"alltoall: %zu elements for rank %d are not whole rows of %zu",
				sendcounts[i], i, block);
			rc = HVD_EINVAL;
		}
		total += sendcounts[i];
	}
	if (rc == HVD_OK)
		rc = check_args(sendbuf, total, dtype);
	if (rc != HVD_OK)
		return rc;
	c.local_count = total;
	*recvbuf = NULL;
	*recvcount = 0;
	return queue_call(&c, total * hvd__dtype_size(dtype), 0, out);
}

/* Rank rank's part of a reducescatter of count elements (rows of block)
 * over size ranks. */
static size_t chunk(size_t count, size_t block, int rank, int size)
{
	size_t start, len;

	if (block == 0 || rank < 0 || size < 1 || rank >= size)
		return 0;
	hvd__ring_chunk(count, block, size, rank, &start, &len);
	return len;
}

static int reducescatter_async(const char *name, const void *sendbuf,
			       void *recvbuf, size_t count, size_t block,
			       enum hvd_dtype dtype, enum hvd_op op, double pre,
			       double post, bool gpu, hvd_handle **out)
{
	struct call c = {
		.name = name,
		.m = {HVD__REQ_REDUCESCATTER, (uint8_t)dtype, (uint8_t)op, gpu,
		      0, count, block, pre, post, 0, 0, 0},
		.sendbuf = sendbuf,
		.recvbuf = recvbuf,
		.local_count = count,
	};
	size_t mine = 0;
	int rc = take_set(&c);

	*out = NULL;
	take_shape(&c.m);
	if (rc == HVD_OK) {
		mine = chunk(count, block, c.me, c.n);
		rc = check_args(sendbuf, count, dtype);
	}
	if (rc == HVD_OK && (block == 0 || count % block != 0)) {
		hvd__set_error(
			"reducescatter: %zu elements are not whole rows of %zu",
			count, block);
		rc = HVD_EINVAL;
	}
	if (rc == HVD_OK)
		rc = check_args(recvbuf, mine, dtype);
	if (rc == HVD_OK)
		rc = check_reduction(dtype, op, pre, post, gpu);
	if (rc == HVD_OK && op == HVD_ADASUM) {
		hvd__set_error(
			"Adasum is an allreduce's op, not reducescatter's");
		rc = HVD_ENOTSUP;
	}
	if (rc != HVD_OK)
		return rc;
	return queue_call(&c, count * hvd__dtype_size(dtype),
			  mine * hvd__dtype_size(dtype), out);
}

HVD_EXPORT size_t hvd_reducescatter_count(size_t count, size_t block, int rank)
{
	int me, n = hvd__g.size;

	/* In the set of this thread's next collective, if one is set. */
	if (next_set != 0 &&
	    hvd__sets_query(hvd__runtime_sets(), next_set, &me, &n) != HVD_OK)
		return 0;
	return chunk(count, block, rank, n);
}

HVD_EXPORT int hvd_allreduce_async(const char *name, const void *sendbuf,
				   void *recvbuf, size_t count,
				   enum hvd_dtype dtype, enum hvd_op op,
				   hvd_handle **out)
{
	return allreduce_async(name, sendbuf, recvbuf, count, dtype, op, 1, 1,
			       false, out);
}

HVD_EXPORT int hvd_allreduce_scaled_async(const char *name, const void *sendbuf,
					  void *recvbuf, size_t count,
					  enum hvd_dtype dtype, enum hvd_op op,
					  double prescale, double postscale,
					  hvd_handle **out)
{
	return allreduce_async(name, sendbuf, recvbuf, count, dtype, op,
			       prescale, postscale, false, out);
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

HVD_EXPORT int hvd_alltoall_async(const char *name, const void *sendbuf,
				  const size_t *sendcounts, size_t block,
				  enum hvd_dtype dtype, void **recvbuf,
				  size_t *recvcount, size_t *recvcounts,
				  hvd_handle **out)
{
	return alltoall_async(name, sendbuf, sendcounts, block, dtype, recvbuf,
			      recvcount, recvcounts, false, out);
}

HVD_EXPORT int hvd_reducescatter_async(const char *name, const void *sendbuf,
				       void *recvbuf, size_t count,
				       size_t block, enum hvd_dtype dtype,
				       enum hvd_op op, double prescale,
				       double postscale, hvd_handle **out)
{
	return reducescatter_async(name, sendbuf, recvbuf, count, block, dtype,
				   op, prescale, postscale, false, out);
}

HVD_EXPORT int hvd_allreduce_gpu_async(const char *name, const void *sendbuf,
				       void *recvbuf, size_t count,
				       enum hvd_dtype dtype, enum hvd_op op,
				       hvd_handle **out)
{
	return allreduce_async(name, sendbuf, recvbuf, count, dtype, op, 1, 1,
			       true, out);
}

HVD_EXPORT int hvd_allreduce_scaled_gpu_async(
	const char *name, const void *sendbuf, void *recvbuf, size_t count,
	enum hvd_dtype dtype, enum hvd_op op, double prescale, double postscale,
	hvd_handle **out)
{
	return allreduce_async(name, sendbuf, recvbuf, count, dtype, op,
			       prescale, postscale, true, out);
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

HVD_EXPORT int hvd_alltoall_gpu_async(const char *name, const void *sendbuf,
				      const size_t *sendcounts, size_t block,
				      enum hvd_dtype dtype, void **recvbuf,
				      size_t *recvcount, size_t *recvcounts,
				      hvd_handle **out)
{
	return alltoall_async(name, sendbuf, sendcounts, block, dtype, recvbuf,
			      recvcount, recvcounts, true, out);
}

HVD_EXPORT int hvd_reducescatter_gpu_async(const char *name,
					   const void *sendbuf, void *recvbuf,
					   size_t count, size_t block,
					   enum hvd_dtype dtype, enum hvd_op op,
					   double prescale, double postscale,
					   hvd_handle **out)
{
	return reducescatter_async(name, sendbuf, recvbuf, count, block, dtype,
				   op, prescale, postscale, true, out);
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

/* The barrier and join have fixed names: one of each in flight. */
static int fixed(const char *name, enum hvd__req_type type)
{
	struct call c = {.name = name,
			 .m = {(uint8_t)type,
			       HVD_UINT8,
			       0,
			       0,
			       0,
			       0,
			       0,
			       1,
			       1,
			       0,
			       0,
			       0,
			       {0}}};
	hvd_handle *h = NULL;
	int rc = take_set(&c);

	next_shape.ndim = 0; /* a barrier has no shape: one set is dropped */
	if (rc == HVD_OK)
		rc = hvd__sync_start();
	if (rc == HVD_OK)
		rc = queue_call(&c, 0, 0, &h);
	return hvd__sync_finish(rc, h);
}

HVD_EXPORT int hvd_barrier(void)
{
	return fixed("hvd.barrier", HVD__REQ_BARRIER);
}

HVD_EXPORT int hvd_join(void)
{
	return fixed("hvd.join", HVD__REQ_JOIN);
}
