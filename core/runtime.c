/* runtime.c: libhvd's engine, Horovod's model. User threads enqueue named
 * requests; one background thread owns the transport and, every cycle
 * (HOROVOD_CYCLE_TIME, woken early by new work):
 *
 * 1. agrees with every rank, in one small ring allreduce (MIN over bytes),
 *    on three things: whether a rank wants to shut down, whether a rank
 *    has requests the coordinator has not seen, and, for each entry of the
 *    response cache, whether it is ready on every rank (the bit-vector
 *    fast path: a tensor negotiated once needs no coordinator again);
 * 2. if some rank has new requests: every rank sends them to rank 0, the
 *    coordinator, which counts submissions per name, checks that the
 *    ranks agree (type, dtype, op, count, root), orders the tensors that
 *    every rank has submitted, gives them cache entries, and sends the
 *    responses to every rank;
 * 3. runs the responses in that order, fusing consecutive allreduces of
 *    one dtype and op into one buffer up to HOROVOD_FUSION_THRESHOLD.
 *
 * A transport error aborts the mesh (so every rank fails within a moment,
 * not only the dead one's neighbours) and fails every pending and later
 * operation. Rank 0 reports stalls: tensors some ranks submitted and
 * others not. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gpu.h"
#include "internal.h"
#include "reduce.h"
#include "ring.h"
#include "mpi.h"
#include "runtime.h"
#include "tcp.h"
#include "timeline.h"

#define NAME_MAX_LEN 4096

enum req_type { REQ_ALLREDUCE, REQ_BROADCAST, REQ_ALLGATHER, REQ_BARRIER };

static const char *const type_names[] = {"allreduce", "broadcast", "allgather",
					 "barrier"};

struct meta {
	uint8_t type, dtype, op;
	uint8_t gpu; /* 1: the buffers are in GPU memory (NCCL) */
	int32_t root;
	uint64_t count;
};

struct hvd_handle {
	int status;
	bool done;
	char *msg; /* why it failed, for the waiting thread */
};

struct req {
	char *name;
	struct meta m;
	uint64_t local_count; /* allgather: this rank's count (m.count is 0:
				 counts may differ between ranks) */
	const void *sendbuf;
	void *recvbuf;
	void **gather_out;
	size_t *gather_count;
	struct hvd_handle *h;
	void *ready; /* GPU: the event the collective waits for */
	long long enqueued_us;
	bool reported; /* sent to the coordinator */
	int cache;     /* cache entry this request matches, -1 none */
	struct req *next;
	struct req *inflight_next;
};

struct cache_entry {
	char *name; /* NULL: free */
	struct meta m;
};

/* What the coordinator knows of one name. */
struct pending {
	char *name;
	struct meta m;
	uint8_t *submitted; /* per rank */
	int nsubmitted;
	char *error; /* first disagreement, or NULL */
	long long first_us;
	bool warned;
	struct pending *next;
};

/* One response, the same on every rank. */
struct resp {
	char *name;
	struct meta m;
	int32_t cache; /* entry to record it in, -1 none; for an
			       error, its HVD_E* code */
	char *error;   /* NULL: run it */
};

/* The engine's state. lock protects: incoming, shutdown_req, broken,
 * every handle's done and status, next_cycle_now. Everything else belongs
 * to the background thread alone. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the background thread waits here */
	pthread_cond_t done; /* hvd_wait waits here */
	struct req *incoming;
	struct req **incoming_tail;
	bool shutdown_req;
	int broken; /* 0, or the error that stopped the engine */
	bool running;
	pthread_t thread;

	/* Background thread only. */
	struct hvd__comm comm;
	struct hvd__tcp *tcp;
	void *mpi;	      /* the MPI transport, when MPI runs the job */
	struct hvd__gpu *gpu; /* NCCL, from the first GPU collective on */
	char gpu_why[512];    /* why the last GPU collective failed */
	struct req *pending_local;
	struct cache_entry *cache;
	long cache_cap;
	struct pending *coord; /* rank 0 */
	long fusion_threshold;
	double cycle_ms;
	long stall_warn_s, stall_shutdown_s;
	bool stall_check;
	struct hvd__timeline *tl;
	bool mark_cycles;
	char *fusion;
	size_t fusion_cap;
	uint64_t fused_batches; /* batches of more than one tensor */
	size_t segment;		/* bytes reduced at a time (cache-sized) */
	int spin_us;		/* HVD_SPIN_US */
	long long decided_us;	/* when this cycle's responses were known */
	long long last_stall_us;
	struct req *inflight; /* lock: every request not yet completed, by
				 its inflight_next link */
} E = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
};

static __thread char last_error[512];

static void set_error(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

static void set_error(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(last_error, sizeof(last_error), fmt, ap);
	va_end(ap);
}

/* ---- wire helpers: framed messages between rank 0 and the others ---- */

struct wbuf {
	uint8_t *p;
	size_t len, cap;
};

static void wput(struct wbuf *b, const void *d, size_t n)
{
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 256;
		uint8_t *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (p == NULL)
			return; /* the length check at the end catches it */
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, d, n);
	b->len += n;
}

/* Host byte order and struct layout: every rank of a job runs the same
 * build on the same machine type. */
static void wput_u32(struct wbuf *b, uint32_t v)
{
	wput(b, &v, 4);
}

static void wput_str(struct wbuf *b, const char *s)
{
	uint32_t n = s ? (uint32_t)strlen(s) : UINT32_MAX;

	wput_u32(b, n);
	if (s)
		wput(b, s, n);
}

static void wput_meta(struct wbuf *b, const struct meta *m)
{
	wput(b, m, sizeof(*m));
}

struct rbuf {
	const uint8_t *p;
	size_t len, off;
	bool bad;
};

static void rget(struct rbuf *r, void *d, size_t n)
{
	if (r->bad || r->len - r->off < n) {
		r->bad = true;
		memset(d, 0, n);
		return;
	}
	memcpy(d, r->p + r->off, n);
	r->off += n;
}

static uint32_t rget_u32(struct rbuf *r)
{
	uint32_t v;

	rget(r, &v, 4);
	return v;
}

static char *rget_str(struct rbuf *r)
{
	uint32_t n = rget_u32(r);
	char *s;

	if (n == UINT32_MAX || r->bad)
		return NULL;
	if (n > NAME_MAX_LEN * 4 || r->len - r->off < n) {
		r->bad = true;
		return NULL;
	}
	s = malloc(n + 1);
	if (s == NULL) {
		r->bad = true;
		return NULL;
	}
	memcpy(s, r->p + r->off, n);
	s[n] = '\0';
	r->off += n;
	return s;
}

static int send_msg(int to, const struct wbuf *b)
{
	uint64_t n = b->len;
	int rc = E.comm.ops->sendrecv(E.comm.t, to, &n, sizeof(n), 0, NULL, 0,
				      NULL, NULL);

	if (rc == HVD_OK && n > 0)
		rc = E.comm.ops->sendrecv(E.comm.t, to, b->p, b->len, 0, NULL,
					  0, NULL, NULL);
	return rc;
}

static int recv_msg(int from, uint8_t **out, size_t *len)
{
	uint64_t n = 0;
	int rc = E.comm.ops->sendrecv(E.comm.t, 0, NULL, 0, from, &n, sizeof(n),
				      NULL, NULL);

	*out = NULL;
	*len = 0;
	if (rc != HVD_OK)
		return rc;
	if (n > (1ull << 32))
		return HVD_EPROTO;
	*out = malloc(n + 1);
	if (*out == NULL)
		return HVD_ENOMEM;
	*len = (size_t)n;
	if (n > 0)
		rc = E.comm.ops->sendrecv(E.comm.t, 0, NULL, 0, from, *out,
					  (size_t)n, NULL, NULL);
	return rc;
}

/* ---- completion ---- */

/* Complete r; msg (may be NULL) tells the waiting thread why it failed. */
static void complete_msg(struct req *r, int status, const char *msg)
{
	struct req **pp;
	char *copy = msg ? strdup(msg) : NULL;

	pthread_mutex_lock(&E.lock);
	for (pp = &E.inflight; *pp != NULL; pp = &(*pp)->inflight_next)
		if (*pp == r) {
			*pp = r->inflight_next;
			break;
		}
	r->h->status = status;
	r->h->msg = copy;
	r->h->done = true;
	pthread_cond_broadcast(&E.done);
	pthread_mutex_unlock(&E.lock);
	hvd__gpu_release(r->ready);
	free(r->name);
	free(r);
}

static void complete(struct req *r, int status)
{
	char msg[768];

	if (status == HVD_OK) {
		complete_msg(r, status, NULL);
		return;
	}
	if (r->m.gpu && E.gpu_why[0] != '\0')
		snprintf(msg, sizeof(msg), "%s '%.200s' failed: %s",
			 type_names[r->m.type], r->name, E.gpu_why);
	else
		snprintf(msg, sizeof(msg), "%s '%.200s' failed: %s",
			 type_names[r->m.type], r->name, hvd_strerror(status));
	complete_msg(r, status, msg);
}

static bool meta_equal(const struct meta *a, const struct meta *b)
{
	return a->type == b->type && a->dtype == b->dtype && a->op == b->op &&
	       a->gpu == b->gpu && a->root == b->root && a->count == b->count;
}

static int cache_find(const char *name, const struct meta *m)
{
	long i;

	for (i = 0; i < E.cache_cap; i++)
		if (E.cache[i].name != NULL &&
		    strcmp(E.cache[i].name, name) == 0 &&
		    (m == NULL || meta_equal(&E.cache[i].m, m)))
			return (int)i;
	return -1;
}

/* ---- the coordinator (rank 0) ---- */

static void describe_meta(const struct meta *m, char *buf, size_t len)
{
	snprintf(buf, len, "%s of %" PRIu64 " %s%s%s", type_names[m->type],
		 m->count, hvd__dtype_name((enum hvd_dtype)m->dtype),
		 m->type == REQ_ALLREDUCE ? " op " : "",
		 m->type == REQ_ALLREDUCE
			 ? (const char *[]){"sum", "average", "min", "max",
					    "product"}[m->op]
			 : "");
	if (m->type == REQ_BROADCAST) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, " from root %d", m->root);
	}
	if (m->gpu) {
		size_t n = strlen(buf);

		snprintf(buf + n, len - n, " in GPU memory");
	}
}

static void coord_submit(const char *name, const struct meta *m, int rank,
			 struct resp **out, size_t *nout)
{
	struct pending *p, **pp;

	for (p = E.coord; p != NULL; p = p->next)
		if (strcmp(p->name, name) == 0)
			break;
	if (p == NULL) {
		p = calloc(1, sizeof(*p));
		if (p == NULL)
			return;
		p->name = strdup(name);
		p->m = *m;
		p->submitted = calloc((size_t)E.comm.size, 1);
		p->first_us = hvd__now_us();
		p->next = E.coord;
		E.coord = p;
	}
	if (p->submitted[rank])
		return; /* a stall re-send */
	p->submitted[rank] = 1;
	p->nsubmitted++;
	if (!meta_equal(&p->m, m) && p->error == NULL) {
		char a[128], b[128], msg[1024];
		int first;

		for (first = 0; first < E.comm.size; first++)
			if (p->submitted[first] && first != rank)
				break;
		describe_meta(&p->m, a, sizeof(a));
		describe_meta(m, b, sizeof(b));
		snprintf(
			msg, sizeof(msg),
			"ranks disagree on tensor '%s': rank %d asked for %s, rank %d for %s",
			name, first, a, rank, b);
		p->error = strdup(msg);
	}
	if (p->nsubmitted < E.comm.size)
		return;
	/* Every rank has it: respond, and forget it. */
	{
		struct resp *v = realloc(*out, (*nout + 1) * sizeof(*v));

		if (v != NULL) {
			*out = v;
			v[*nout].name = p->name;
			v[*nout].m = p->m;
			v[*nout].error = p->error;
			/* For an error, the entry field carries its code. */
			v[*nout].cache = p->error ? HVD_EMISMATCH : -1;
			(*nout)++;
			p->name = NULL;
			p->error = NULL;
		}
	}
	for (pp = &E.coord; *pp != p; pp = &(*pp)->next)
		;
	*pp = p->next;
	free(p->name);
	free(p->error);
	free(p->submitted);
	free(p);
}

/* Stalls: warn once after the warning time; fail after the shutdown
 * time, if set. */
static void coord_stalls(struct resp **out, size_t *nout)
{
	long long now = hvd__now_us();
	struct pending *p, **pp = &E.coord;

	while ((p = *pp) != NULL) {
		long long waited_s = (now - p->first_us) / 1000000;
		char missing[256] = "";
		size_t off = 0;
		int r;

		for (r = 0; r < E.comm.size && off < sizeof(missing) - 12; r++)
			if (!p->submitted[r])
				off += (size_t)snprintf(
					missing + off, sizeof(missing) - off,
					"%s%d", off ? ", " : "", r);
		if (!p->warned && waited_s >= E.stall_warn_s) {
			hvd__warn(
				"stall: tensor '%s' was submitted by %d of %d ranks %lld s ago; missing: ranks %s",
				p->name, p->nsubmitted, E.comm.size, waited_s,
				missing);
			p->warned = true;
		}
		if (E.stall_shutdown_s > 0 && waited_s >= E.stall_shutdown_s) {
			struct resp *v =
				realloc(*out, (*nout + 1) * sizeof(*v));
			char msg[512];

			snprintf(
				msg, sizeof(msg),
				"stalled: tensor '%s' was never submitted by ranks %s",
				p->name, missing);
			if (v != NULL) {
				*out = v;
				v[*nout].name = p->name;
				v[*nout].m = p->m;
				v[*nout].error = strdup(msg);
				v[*nout].cache = HVD_ESTALL;
				(*nout)++;
				p->name = NULL;
			}
			*pp = p->next;
			free(p->name);
			free(p->error);
			free(p->submitted);
			free(p);
			continue;
		}
		pp = &p->next;
	}
}

/* ---- one cycle ---- */

static void encode_requests(struct wbuf *b)
{
	struct req *r;
	uint32_t n = 0;
	size_t at = b->len;

	wput_u32(b, 0);
	for (r = E.pending_local; r != NULL; r = r->next) {
		if (r->reported)
			continue;
		wput_str(b, r->name);
		wput_meta(b, &r->m);
		r->reported = true;
		n++;
	}
	if (b->p != NULL && b->len >= at + 4)
		memcpy(b->p + at, &n, 4);
}

static void decode_requests(const uint8_t *p, size_t len, int rank,
			    struct resp **out, size_t *nout)
{
	struct rbuf r = {p, len, 0, false};
	uint32_t n = rget_u32(&r), i;

	for (i = 0; i < n && !r.bad; i++) {
		char *name = rget_str(&r);
		struct meta m;

		rget(&r, &m, sizeof(m));
		if (name != NULL && !r.bad)
			coord_submit(name, &m, rank, out, nout);
		free(name);
	}
}

/* The coordinator round: requests go to rank 0, responses come back. */
static int coordinate(struct resp **out, size_t *nout)
{
	struct wbuf b = {0};
	int rc = HVD_OK, r;

	*out = NULL;
	*nout = 0;
	encode_requests(&b);
	if (E.comm.rank != 0) {
		uint8_t *msg = NULL;
		size_t len;

		rc = send_msg(0, &b);
		if (rc == HVD_OK)
			rc = recv_msg(0, &msg, &len);
		if (rc == HVD_OK) {
			struct rbuf rb = {msg, len, 0, false};
			uint32_t n = rget_u32(&rb), i;

			*out = calloc(n + 1, sizeof(**out));
			for (i = 0; i < n && *out != NULL && !rb.bad; i++) {
				struct resp *x = &(*out)[i];

				x->name = rget_str(&rb);
				rget(&rb, &x->m, sizeof(x->m));
				rget(&rb, &x->cache, sizeof(x->cache));
				x->error = rget_str(&rb);
				(*nout)++;
			}
			if (rb.bad || *out == NULL)
				rc = HVD_EPROTO;
		}
		free(msg);
		free(b.p);
		return rc;
	}
	decode_requests(b.p, b.len, 0, out, nout);
	free(b.p);
	for (r = 1; r < E.comm.size && rc == HVD_OK; r++) {
		uint8_t *msg;
		size_t len;

		rc = recv_msg(r, &msg, &len);
		if (rc == HVD_OK)
			decode_requests(msg, len, r, out, nout);
		free(msg);
	}
	if (E.stall_check)
		coord_stalls(out, nout);
	if (rc != HVD_OK)
		return rc;
	{
		struct wbuf rb = {0};
		size_t i;

		/* New tensors get a cache entry (the same one for a name
		 * seen before), while there is room. */
		for (i = 0; i < *nout; i++) {
			struct resp *x = &(*out)[i];
			long e;

			if (x->error != NULL || E.cache_cap == 0)
				continue;
			x->cache = cache_find(x->name, NULL);
			for (e = 0; x->cache < 0 && e < E.cache_cap; e++)
				if (E.cache[e].name == NULL)
					x->cache = (int32_t)e;
			/* Two responses in one cycle must not share an entry. */
			{
				size_t j;

				for (j = 0; j < i; j++)
					if ((*out)[j].cache == x->cache)
						x->cache = -1;
			}
		}
		wput_u32(&rb, (uint32_t)*nout);
		for (i = 0; i < *nout; i++) {
			wput_str(&rb, (*out)[i].name);
			wput_meta(&rb, &(*out)[i].m);
			wput(&rb, &(*out)[i].cache, sizeof((*out)[i].cache));
			wput_str(&rb, (*out)[i].error);
		}
		for (r = 1; r < E.comm.size && rc == HVD_OK; r++)
			rc = send_msg(r, &rb);
		free(rb.p);
	}
	return rc;
}

/* Take the local request for a response out of the pending list. */
static struct req *take_local(const char *name)
{
	struct req **pp, *r;

	for (pp = &E.pending_local; (r = *pp) != NULL; pp = &r->next)
		if (strcmp(r->name, name) == 0) {
			*pp = r->next;
			r->next = NULL;
			return r;
		}
	return NULL;
}

static void timeline_span(const char *name, const char *what, long long t0)
{
	if (E.tl != NULL)
		hvd__timeline_span(E.tl, name, what, t0, hvd__now_us() - t0);
}

/* One allreduce of buf in place: the transport's own when it has one
 * for this dtype and op (MPI_Allreduce), else the ring. */
static int allreduce(void *buf, size_t count, enum hvd_dtype t, enum hvd_op op,
		     struct hvd__ring_times *times)
{
	if (E.comm.ops->allreduce != NULL && E.comm.size > 1) {
		long long t0 = hvd__now_us();
		int rc = E.comm.ops->allreduce(E.comm.t, buf, count, t, op);

		if (rc != HVD_ENOTSUP) {
			if (times != NULL)
				times->reduce_scatter_us += hvd__now_us() - t0;
			return rc;
		}
	}
	return hvd__ring_allreduce_timed(&E.comm, buf, count, t, op, times);
}

/* The tensors of one batch, laid end to end, are reduced one segment of
 * E.segment bytes at a time, so that each segment's ring passes,
 * reductions and copies run while it is still in cache. Where the
 * transport can gather and scatter (TCP), the ring works on the tensors
 * where they lie: no fusion buffer, no copies but an out-of-place
 * tensor's send buffer into its receive buffer. Where the transport's own
 * allreduce wants one buffer (MPI), each segment is copied into the
 * fusion buffer, reduced, and copied out. */
static int run_allreduce_batch(struct req **batch, size_t n)
{
	enum hvd_dtype t = (enum hvd_dtype)batch[0]->m.dtype;
	enum hvd_op op = (enum hvd_op)batch[0]->m.op;
	size_t es = hvd__dtype_size(t), total = 0, seg, pos, i;
	long long t0, t_in = 0, t_out = 0, t1;
	struct hvd__ring_times rt = {0, 0};
	bool direct = n == 1 || (E.comm.ops->sendrecv_v != NULL &&
				 E.comm.ops->allreduce == NULL);
	struct iovec *v;
	int k, rc = HVD_OK;

	for (i = 0; i < n; i++)
		total += (size_t)batch[i]->m.count * es;
	seg = E.segment - E.segment % es;
	if (seg == 0)
		seg = es;
	if (!direct && E.fusion_cap < seg) {
		char *f = realloc(E.fusion, seg);

		if (f == NULL)
			return HVD_ENOMEM;
		E.fusion = f;
		E.fusion_cap = seg;
	}
	v = malloc(n * sizeof(*v));
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
					     : E.fusion + (at + lo - pos);
				if (dst != src)
					memcpy(dst, src, hi - lo);
				v[k++] = (struct iovec){dst, hi - lo};
			}
			at += b;
		}
		t_in += hvd__now_us() - t1;
		if (!direct || k == 1)
			rc = allreduce(direct ? v[0].iov_base : E.fusion,
				       len / es, t, op, &rt);
		else
			rc = hvd__ring_allreduce_v(&E.comm, v, k, t, op, &rt);
		if (rc != HVD_OK || direct)
			continue;
		t1 = hvd__now_us();
		for (i = 0, at = 0; i < n && at < pos + len; i++) {
			size_t b = (size_t)batch[i]->m.count * es, lo, hi;

			if (b > 0 && at + b > pos) {
				lo = pos > at ? pos - at : 0;
				hi = pos + len - at < b ? pos + len - at : b;
				memcpy((char *)batch[i]->recvbuf + lo,
				       E.fusion + (at + lo - pos), hi - lo);
			}
			at += b;
		}
		t_out += hvd__now_us() - t1;
	}
	free(v);
	if (E.tl != NULL)
		for (i = 0; i < n; i++) {
			/* One row per tensor: the time the batch spent in each
			 * phase, laid out in order. Tensors of one batch share
			 * their REDUCE_SCATTER and ALLGATHER spans. */
			long long at = t0;

			if (!direct || t_in > 0)
				hvd__timeline_span(
					E.tl, batch[i]->name,
					direct ? "MEMCPY_IN_RECV_BUFFER"
					       : "MEMCPY_IN_FUSION_BUFFER",
					at, t_in);
			at += t_in;
			hvd__timeline_span(E.tl, batch[i]->name,
					   "REDUCE_SCATTER", at,
					   rt.reduce_scatter_us);
			at += rt.reduce_scatter_us;
			hvd__timeline_span(E.tl, batch[i]->name, "ALLGATHER",
					   at, rt.allgather_us);
			at += rt.allgather_us;
			if (!direct)
				hvd__timeline_span(E.tl, batch[i]->name,
						   "MEMCPY_OUT_FUSION_BUFFER",
						   at, t_out);
		}
	if (rc == HVD_OK && n > 1)
		E.fused_batches++;
	return rc;
}

/* NCCL, set up at the first GPU collective: every rank runs the same
 * responses in the same order, so every rank gets here together. */
static int gpu_engine(void)
{
	int rc;

	E.gpu_why[0] = '\0';
	if (E.gpu != NULL)
		return HVD_OK;
	rc = hvd__gpu_start(&E.gpu, &E.comm, E.gpu_why, sizeof(E.gpu_why));
	if (rc != HVD_OK)
		hvd__error("%s", E.gpu_why);
	return rc;
}

/* A batch of GPU allreduces: fused on the GPU, reduced by NCCL. */
static int run_gpu_allreduce(struct req **batch, size_t n)
{
	struct hvd__gpu_tensor *t = calloc(n, sizeof(*t));
	struct hvd__gpu_times gt = {0, 0, 0, 0};
	long long t0 = hvd__now_us();
	size_t i;
	int rc = t == NULL ? HVD_ENOMEM : gpu_engine();

	for (i = 0; rc == HVD_OK && i < n; i++) {
		t[i].send = batch[i]->sendbuf;
		t[i].recv = batch[i]->recvbuf;
		t[i].count = (size_t)batch[i]->m.count;
		t[i].ready = batch[i]->ready;
	}
	if (rc == HVD_OK)
		rc = hvd__gpu_allreduce(E.gpu, t, n,
					(enum hvd_dtype)batch[0]->m.dtype,
					(enum hvd_op)batch[0]->m.op, &gt,
					E.gpu_why, sizeof(E.gpu_why));
	free(t);
	if (rc != HVD_OK)
		return rc;
	for (i = 0; E.tl != NULL && i < n; i++) {
		/* GPU time of each part, laid out from the start. */
		long long at = t0;

		if (n > 1)
			hvd__timeline_span(E.tl, batch[i]->name,
					   "MEMCPY_IN_FUSION_BUFFER", at,
					   gt.copy_in_us);
		at += gt.copy_in_us;
		hvd__timeline_span(E.tl, batch[i]->name, "NCCL_ALLREDUCE", at,
				   gt.reduce_us);
		at += gt.reduce_us;
		if (n > 1)
			hvd__timeline_span(E.tl, batch[i]->name,
					   "MEMCPY_OUT_FUSION_BUFFER", at,
					   gt.copy_out_us);
	}
	if (n > 1)
		E.fused_batches++;
	return HVD_OK;
}

static int run_allgather(struct req *r)
{
	size_t es = hvd__dtype_size((enum hvd_dtype)r->m.dtype), total = 0;
	size_t *bytes = calloc((size_t)E.comm.size, sizeof(*bytes));
	uint64_t *counts = calloc((size_t)E.comm.size, sizeof(*counts));
	size_t *eight = calloc((size_t)E.comm.size, sizeof(*eight));
	char *out = NULL;
	int i, rc = HVD_ENOMEM;
	size_t off = 0;

	if (bytes == NULL || counts == NULL || eight == NULL)
		goto out;
	if (r->m.gpu) {
		rc = gpu_engine();
		if (rc != HVD_OK)
			goto out;
	}
	/* Everyone's count first, then the blocks. */
	for (i = 0; i < E.comm.size; i++)
		eight[i] = sizeof(uint64_t);
	counts[E.comm.rank] = r->local_count;
	rc = hvd__ring_allgatherv(&E.comm, counts, eight);
	if (rc != HVD_OK)
		goto out;
	for (i = 0; i < E.comm.size; i++) {
		bytes[i] = (size_t)counts[i] * es;
		total += bytes[i];
		if (i < E.comm.rank)
			off += bytes[i];
	}
	if (r->m.gpu) {
		void *dev = NULL;

		rc = hvd__gpu_allgather(E.gpu, r->sendbuf, bytes, r->ready,
					&dev, E.gpu_why, sizeof(E.gpu_why));
		if (rc == HVD_OK) {
			*r->gather_out = dev;
			*r->gather_count = total / es;
		}
		goto out;
	}
	out = malloc(total + 1);
	rc = HVD_ENOMEM;
	if (out == NULL)
		goto out;
	if (bytes[E.comm.rank])
		memcpy(out + off, r->sendbuf, bytes[E.comm.rank]);
	rc = hvd__ring_allgatherv(&E.comm, out, bytes);
	if (rc == HVD_OK) {
		*r->gather_out = out;
		*r->gather_count = total / es;
		out = NULL;
	}
out:
	free(out);
	free(bytes);
	free(counts);
	free(eight);
	return rc;
}

static int run_one(struct req *r)
{
	size_t es = hvd__dtype_size((enum hvd_dtype)r->m.dtype);
	long long t0 = hvd__now_us();
	int rc = HVD_OK;

	switch (r->m.type) {
	case REQ_BROADCAST:
		if (!r->m.gpu)
			rc = hvd__ring_broadcast(&E.comm, r->recvbuf,
						 (size_t)r->m.count * es,
						 r->m.root);
		else if ((rc = gpu_engine()) == HVD_OK)
			rc = hvd__gpu_broadcast(E.gpu, r->recvbuf,
						(size_t)r->m.count * es,
						r->m.root, r->ready, E.gpu_why,
						sizeof(E.gpu_why));
		timeline_span(r->name,
			      r->m.gpu ? "NCCL_BROADCAST" : "BROADCAST", t0);
		break;
	case REQ_ALLGATHER:
		rc = run_allgather(r);
		timeline_span(r->name, "ALLGATHER", t0);
		break;
	case REQ_BARRIER:
		rc = hvd__ring_barrier(&E.comm);
		break;
	}
	return rc;
}

/* Run the ready responses in order. Returns a transport error, if any;
 * the requests it touched are completed either way. */
/* Whether an operation's failure stops the engine: every failure but a
 * GPU set-up that every rank agreed had failed (the CPU collectives go
 * on; a GPU collective that failed half-way leaves the peers waiting). */
static bool engine_error(int status)
{
	return status != HVD_OK && status != HVD_ENOTSUP;
}

static int execute(struct resp *v, size_t n)
{
	struct req **batch = calloc(n + 1, sizeof(*batch));
	size_t i = 0, nb;
	int rc = HVD_OK;

	if (batch == NULL)
		return HVD_ENOMEM;
	while (i < n) {
		struct req *r;

		if (v[i].error != NULL) {
			r = take_local(v[i].name);
			if (r != NULL) {
				hvd__error("%s", v[i].error);
				complete_msg(r,
					     v[i].cache < 0 ? v[i].cache
							    : HVD_EMISMATCH,
					     v[i].error);
			}
			i++;
			continue;
		}
		r = take_local(v[i].name);
		if (r == NULL) { /* cannot happen: every rank submitted it */
			i++;
			continue;
		}
		if (E.tl != NULL) {
			long long now = hvd__now_us();

			/* Negotiation until the cycle decided; then the wait
			 * behind the operations run before it. */
			hvd__timeline_span(E.tl, r->name, "NEGOTIATE",
					   r->enqueued_us,
					   E.decided_us - r->enqueued_us);
			hvd__timeline_span(E.tl, r->name, "QUEUE", E.decided_us,
					   now - E.decided_us);
		}
		if (r->m.type != REQ_ALLREDUCE) {
			int s = rc == HVD_OK ? run_one(r) : rc;

			if (engine_error(s) && rc == HVD_OK)
				rc = s;
			complete(r, s);
			i++;
			continue;
		}
		/* Fuse the allreduces that follow with the same dtype and op,
		 * up to the threshold. */
		{
			size_t bytes =
				(size_t)r->m.count *
				hvd__dtype_size((enum hvd_dtype)r->m.dtype);
			size_t k;
			int s;

			nb = 0;
			batch[nb++] = r;
			i++;
			while (i < n && v[i].error == NULL &&
			       v[i].m.type == REQ_ALLREDUCE &&
			       v[i].m.dtype == r->m.dtype &&
			       v[i].m.op == r->m.op && v[i].m.gpu == r->m.gpu) {
				size_t more =
					(size_t)v[i].m.count *
					hvd__dtype_size(
						(enum hvd_dtype)r->m.dtype);
				struct req *q;

				if (bytes + more > (size_t)E.fusion_threshold)
					break;
				q = take_local(v[i].name);
				i++;
				if (q == NULL)
					continue;
				batch[nb++] = q;
				bytes += more;
			}
			s = rc != HVD_OK ? rc
			    : r->m.gpu	 ? run_gpu_allreduce(batch, nb)
					 : run_allreduce_batch(batch, nb);
			if (engine_error(s) && rc == HVD_OK)
				rc = s;
			for (k = 0; k < nb; k++)
				complete(batch[k], s);
		}
	}
	free(batch);
	return rc;
}

static void free_resps(struct resp *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		free(v[i].name);
		free(v[i].error);
	}
	free(v);
}

/* Record new cache entries, the same on every rank. */
static void cache_record(const struct resp *v, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct resp *x = &v[i];

		if (x->error != NULL || x->cache < 0 || x->cache >= E.cache_cap)
			continue;
		free(E.cache[x->cache].name);
		E.cache[x->cache].name = strdup(x->name);
		E.cache[x->cache].m = x->m;
	}
}

/* One cycle. Returns a transport error, or HVD_ESHUTDOWN when the job is
 * shutting down, or HVD_OK. */
static int cycle(bool shutdown_local)
{
	size_t vlen = 2 + (size_t)E.cache_cap, i, ncached = 0, nresp = 0;
	uint8_t *vec = calloc(vlen, 1);
	struct resp *cached = NULL, *resp = NULL;
	long long now = hvd__now_us();
	struct req *r;
	bool news = false;
	int rc;

	if (vec == NULL)
		return HVD_ENOMEM;
	if (E.mark_cycles && E.tl != NULL)
		hvd__timeline_mark(E.tl, "CYCLE_START", now);
	for (r = E.pending_local; r != NULL; r = r->next) {
		if (r->cache < 0)
			r->cache = cache_find(r->name, &r->m);
		/* A cached request waiting long goes to the coordinator,
		 * so that rank 0 can name the missing ranks. */
		if (r->cache >= 0 && !r->reported &&
		    (now - r->enqueued_us) / 1000000 >= E.stall_warn_s)
			r->cache = -1;
		if (r->cache >= 0)
			vec[2 + r->cache] = 1;
		else if (!r->reported)
			news = true;
	}
	/* Rank 0 asks for a coordinator round about once a second while
	 * tensors wait there, so that stalls are seen without new work. */
	if (E.comm.rank == 0 && E.coord != NULL && E.stall_check &&
	    now - E.last_stall_us >= 1000000) {
		news = true;
		E.last_stall_us = now;
	}
	vec[0] = !shutdown_local;
	vec[1] = !news;
	/* MIN over bytes: AND of the ready bits, OR of the flags. */
	rc = hvd__ring_allreduce(&E.comm, vec, vlen, HVD_UINT8, HVD_MIN);
	if (rc != HVD_OK)
		goto out;
	if (vec[0] == 0) {
		rc = HVD_ESHUTDOWN;
		goto out;
	}
	/* The cached tensors ready everywhere, in entry order. */
	cached = calloc(vlen, sizeof(*cached));
	if (cached == NULL) {
		rc = HVD_ENOMEM;
		goto out;
	}
	for (i = 0; i < (size_t)E.cache_cap; i++)
		if (vec[2 + i]) {
			cached[ncached].name = strdup(E.cache[i].name);
			cached[ncached].m = E.cache[i].m;
			cached[ncached].cache = (int32_t)i;
			ncached++;
		}
	if (vec[1] == 0) {
		rc = coordinate(&resp, &nresp);
		if (rc != HVD_OK)
			goto out;
		cache_record(resp, nresp);
	}
	E.decided_us = hvd__now_us();
	rc = execute(cached, ncached);
	if (rc == HVD_OK)
		rc = execute(resp, nresp);
out:
	free_resps(cached, ncached);
	free_resps(resp, nresp);
	free(vec);
	return rc;
}

/* Fail every request that is waiting, with status. */
static void fail_all(int status)
{
	struct req *r, *next;

	pthread_mutex_lock(&E.lock);
	E.broken = status;
	r = E.incoming;
	E.incoming = NULL;
	E.incoming_tail = &E.incoming;
	pthread_mutex_unlock(&E.lock);
	for (; r != NULL; r = next) {
		next = r->next;
		complete(r, status);
	}
	for (r = E.pending_local; r != NULL; r = next) {
		next = r->next;
		complete(r, status);
	}
	E.pending_local = NULL;
}

static void *background(void *arg)
{
	long long cycle_ns = (long long)(E.cycle_ms * 1e6);

	(void)arg;
	for (;;) {
		struct timespec ts;
		struct req *in, **tail;
		bool shutdown_local;
		int rc;

		pthread_mutex_lock(&E.lock);
		if (E.incoming == NULL && !E.shutdown_req && cycle_ns > 0) {
			clock_gettime(CLOCK_REALTIME, &ts);
			ts.tv_nsec += cycle_ns % 1000000000;
			ts.tv_sec +=
				cycle_ns / 1000000000 + ts.tv_nsec / 1000000000;
			ts.tv_nsec %= 1000000000;
			pthread_cond_timedwait(&E.wake, &E.lock, &ts);
		}
		in = E.incoming;
		E.incoming = NULL;
		E.incoming_tail = &E.incoming;
		shutdown_local = E.shutdown_req;
		pthread_mutex_unlock(&E.lock);
		for (tail = &E.pending_local; *tail != NULL;
		     tail = &(*tail)->next)
			;
		*tail = in;
		rc = cycle(shutdown_local);
		if (rc == HVD_ESHUTDOWN) {
			fail_all(HVD_ESHUTDOWN);
			break;
		}
		if (rc != HVD_OK) {
			hvd__error(
				"the job's connections failed (%s): every pending and later operation fails",
				hvd_strerror(rc));
			if (E.tcp != NULL)
				hvd__tcp_abort(E.tcp);
			hvd__gpu_free(E.gpu, true);
			E.gpu = NULL;
			fail_all(rc);
			break;
		}
	}
	return NULL;
}

/* ---- start and stop ---- */

static int read_knobs(void)
{
	long fusion, cache, warn, shut, disable, mark;
	const char *cycle = getenv("HOROVOD_CYCLE_TIME");
	int rc;

	rc = hvd__env_int("HOROVOD_FUSION_THRESHOLD", 128L << 20, 0, 1L << 40,
			  &fusion);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_CACHE_CAPACITY", 1024, 0, 1 << 20,
				  &cache);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_STALL_CHECK_TIME_SECONDS", 60, 1,
				  1L << 30, &warn);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", 0, 0,
				  1L << 30, &shut);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_STALL_CHECK_DISABLE", 0, 0, 1,
				  &disable);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_TIMELINE_MARK_CYCLES", 0, 0, 1,
				  &mark);
	if (rc != HVD_OK)
		return rc;
	E.cycle_ms = 1.0;
	if (cycle != NULL && *cycle != '\0') {
		char *end;
		double v = strtod(cycle, &end);

		if (*end != '\0' || v < 0 || v > 10000) {
			hvd__error(
				"HOROVOD_CYCLE_TIME='%s' is not a number of milliseconds from 0 to 10000",
				cycle);
			return HVD_EINVAL;
		}
		E.cycle_ms = v;
	}
	E.fusion_threshold = fusion;
	E.cache_cap = cache;
	E.stall_warn_s = warn;
	E.stall_shutdown_s = shut;
	E.stall_check = !disable;
	E.mark_cycles = mark != 0;
	{
		long seg;

		/* Each ring chunk of a segment about 512 KiB: in cache, yet
		 * large enough that a step is not all latency. */
		rc = hvd__env_int("HVD_SEGMENT_BYTES",
				  (512L << 10) *
					  (hvd__g.size > 1 ? hvd__g.size : 2),
				  4096, 1L << 30, &seg);
		if (rc != HVD_OK)
			return rc;
		E.segment = (size_t)seg;
	}
	{
		long spin;

		/* A wait on a peer retries this long, yielding, before it
		 * sleeps: a sleeping CPU is slow to wake. */
		rc = hvd__env_int("HVD_SPIN_US", 200, 0, 1000000, &spin);
		if (rc != HVD_OK)
			return rc;
		E.spin_us = (int)spin;
	}
	return HVD_OK;
}

int hvd__runtime_start(int rank, int size, bool joined, void *mpi)
{
	const char *tl = getenv("HOROVOD_TIMELINE");
	sigset_t all, old;
	int rc;

	memset(&E.comm, 0, sizeof(E.comm));
	E.incoming = NULL;
	E.incoming_tail = &E.incoming;
	E.shutdown_req = false;
	E.broken = 0;
	E.pending_local = NULL;
	E.coord = NULL;
	E.inflight = NULL;
	E.fused_batches = 0;
	E.last_stall_us = 0;
	rc = read_knobs();
	if (rc != HVD_OK)
		return rc;
	E.tcp = NULL;
	E.gpu = NULL;
	E.mpi = mpi;
	if (mpi != NULL)
		joined = false;
	if (!joined && size > 1 && mpi == NULL) {
		hvd__error(
			"rank %d of %d, but no rendezvous (HVD_RENDEZVOUS): start the job with hvdrun",
			rank, size);
		return HVD_EINVAL;
	}
	if (joined && size > 1) {
		rc = hvd__join(rank, size, &E.tcp);
		if (rc != HVD_OK)
			return rc;
		hvd__tcp_set_timeout(E.tcp, hvd__transport_timeout_ms());
		hvd__tcp_set_spin(E.tcp, E.spin_us);
	}
	E.comm.rank = rank;
	E.comm.size = size;
	E.comm.ops = mpi != NULL ? &hvd__mpi_ops : &hvd__tcp_ops;
	E.comm.t = mpi != NULL ? mpi : (void *)E.tcp;
	E.cache = calloc((size_t)E.cache_cap + 1, sizeof(*E.cache));
	if (E.cache == NULL) {
		hvd__tcp_free(E.tcp);
		return HVD_ENOMEM;
	}
	E.tl = (tl != NULL && *tl != '\0' && rank == 0)
		       ? hvd__timeline_open(tl, rank)
		       : NULL;
	/* The background thread takes no signal of the program's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&E.thread, NULL, background, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		hvd__runtime_stop();
		return HVD_ESYS;
	}
	E.running = true;
	return HVD_OK;
}

void hvd__runtime_stop(void)
{
	long i;

	if (E.running) {
		pthread_mutex_lock(&E.lock);
		E.shutdown_req = true;
		pthread_cond_broadcast(&E.wake);
		pthread_mutex_unlock(&E.lock);
		pthread_join(E.thread, NULL);
		E.running = false;
	}
	hvd__gpu_free(E.gpu, E.broken != 0 && E.broken != HVD_ESHUTDOWN);
	E.gpu = NULL;
	hvd__tcp_free(E.tcp);
	E.tcp = NULL;
	hvd__mpi_finalize(E.mpi);
	E.mpi = NULL;
	for (i = 0; E.cache != NULL && i < E.cache_cap; i++)
		free(E.cache[i].name);
	free(E.cache);
	E.cache = NULL;
	while (E.coord != NULL) {
		struct pending *p = E.coord;

		E.coord = p->next;
		free(p->name);
		free(p->error);
		free(p->submitted);
		free(p);
	}
	free(E.fusion);
	E.fusion = NULL;
	E.fusion_cap = 0;
	hvd__timeline_close(E.tl);
	E.tl = NULL;
}

/* ---- the public calls ---- */

/* Queue a request for the background thread. It owns `ready` (a GPU
 * request's event) from here on, also when it refuses the request. */
static int enqueue(const char *name, const struct meta *m, const void *sendbuf,
		   void *recvbuf, void **gout, size_t *gcount,
		   uint64_t local_count, void *ready, hvd_handle **out)
{
	struct req *r, *p;
	struct hvd_handle *h;
	int rc = HVD_OK;

	*out = NULL;
	if (!hvd__g.initialized) {
		hvd__gpu_release(ready);
		return HVD_ENOTINIT;
	}
	if (name == NULL || *name == '\0' || strlen(name) > NAME_MAX_LEN) {
		set_error("a tensor needs a name of 1 to %d bytes",
			  NAME_MAX_LEN);
		hvd__gpu_release(ready);
		return HVD_EINVAL;
	}
	r = calloc(1, sizeof(*r));
	h = calloc(1, sizeof(*h));
	if (r == NULL || h == NULL || (r->name = strdup(name)) == NULL) {
		free(r);
		free(h);
		hvd__gpu_release(ready);
		return HVD_ENOMEM;
	}
	r->ready = ready;
	r->m = *m;
	r->local_count = local_count;
	r->sendbuf = sendbuf;
	r->recvbuf = recvbuf;
	r->gather_out = gout;
	r->gather_count = gcount;
	r->h = h;
	r->cache = -1;
	r->enqueued_us = hvd__now_us();
	pthread_mutex_lock(&E.lock);
	if (E.broken != 0) {
		rc = E.broken;
	} else if (E.shutdown_req) {
		rc = HVD_ESHUTDOWN;
	} else {
		/* A name in flight on this rank cannot be used again yet. */
		for (p = E.inflight; p != NULL; p = p->inflight_next)
			if (strcmp(p->name, name) == 0)
				rc = HVD_EINVAL;
		if (rc == HVD_OK) {
			r->inflight_next = E.inflight;
			E.inflight = r;
			*E.incoming_tail = r;
			E.incoming_tail = &r->next;
			pthread_cond_signal(&E.wake);
		}
	}
	pthread_mutex_unlock(&E.lock);
	if (rc != HVD_OK) {
		if (rc == HVD_EINVAL)
			set_error(
				"tensor '%s' is already in flight on this rank",
				name);
		hvd__gpu_release(r->ready);
		free(r->name);
		free(r);
		free(h);
		return rc;
	}
	*out = h;
	return HVD_OK;
}

static int check_args(const void *buf, size_t count, enum hvd_dtype t)
{
	if (!hvd__dtype_valid((int)t)) {
		set_error("unknown dtype %d", (int)t);
		return HVD_EINVAL;
	}
	if (buf == NULL && count > 0) {
		set_error("a NULL buffer for %zu elements", count);
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
		set_error("%s", why);
	return rc;
}

static int allreduce_async(const char *name, const void *sendbuf, void *recvbuf,
			   size_t count, enum hvd_dtype dtype, enum hvd_op op,
			   bool gpu, hvd_handle **out)
{
	struct meta m = {REQ_ALLREDUCE, (uint8_t)dtype, (uint8_t)op, gpu, 0,
			 count};
	void *ready = NULL;
	int rc = check_args(sendbuf, count, dtype);

	*out = NULL;
	if (rc == HVD_OK && (recvbuf == NULL && count > 0))
		rc = check_args(NULL, count, dtype);
	if (rc == HVD_OK && !hvd__op_valid((int)op)) {
		set_error("unknown op %d", (int)op);
		rc = HVD_EINVAL;
	}
	if (rc != HVD_OK)
		return rc;
	rc = gpu_buffer(gpu, recvbuf, count * hvd__dtype_size(dtype), NULL);
	if (rc == HVD_OK)
		rc = gpu_buffer(gpu, sendbuf, count * hvd__dtype_size(dtype),
				&ready);
	return rc != HVD_OK ? rc
			    : enqueue(name, &m, sendbuf, recvbuf, NULL, NULL,
				      count, ready, out);
}

static int broadcast_async(const char *name, void *buf, size_t count,
			   enum hvd_dtype dtype, int root, bool gpu,
			   hvd_handle **out)
{
	struct meta m = {REQ_BROADCAST, (uint8_t)dtype, 0, gpu, root, count};
	void *ready = NULL;
	int rc = check_args(buf, count, dtype);

	*out = NULL;
	if (rc == HVD_OK && (root < 0 || root >= hvd__g.size)) {
		set_error("root %d is not a rank of this job of %d", root,
			  hvd__g.size);
		rc = HVD_EINVAL;
	}
	if (rc == HVD_OK)
		rc = gpu_buffer(gpu, buf, count * hvd__dtype_size(dtype),
				&ready);
	return rc != HVD_OK ? rc
			    : enqueue(name, &m, buf, buf, NULL, NULL, count,
				      ready, out);
}

static int allgather_async(const char *name, const void *sendbuf, size_t count,
			   enum hvd_dtype dtype, void **recvbuf,
			   size_t *recvcount, bool gpu, hvd_handle **out)
{
	/* count differs per rank: the coordinator compares the rest. */
	struct meta m = {REQ_ALLGATHER, (uint8_t)dtype, 0, gpu, 0, 0};
	void *ready = NULL;
	int rc = check_args(sendbuf, count, dtype);

	*out = NULL;
	if (rc == HVD_OK && (recvbuf == NULL || recvcount == NULL)) {
		set_error("allgather needs somewhere to put its result");
		rc = HVD_EINVAL;
	}
	if (rc == HVD_OK)
		rc = gpu_buffer(gpu, sendbuf, count * hvd__dtype_size(dtype),
				&ready);
	if (rc != HVD_OK)
		return rc;
	*recvbuf = NULL;
	*recvcount = 0;
	return enqueue(name, &m, sendbuf, NULL, recvbuf, recvcount, count,
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
		set_error("%s", why);
	return rc;
}

HVD_EXPORT int hvd_wait(hvd_handle *h)
{
	int status;

	if (h == NULL)
		return HVD_EINVAL;
	pthread_mutex_lock(&E.lock);
	while (!h->done)
		pthread_cond_wait(&E.done, &E.lock);
	status = h->status;
	pthread_mutex_unlock(&E.lock);
	if (h->msg != NULL)
		set_error("%s", h->msg);
	free(h->msg);
	free(h);
	return status;
}

HVD_EXPORT int hvd_poll(hvd_handle *h)
{
	int done;

	if (h == NULL)
		return HVD_EINVAL;
	pthread_mutex_lock(&E.lock);
	done = h->done;
	pthread_mutex_unlock(&E.lock);
	return done;
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
	struct meta m = {REQ_BARRIER, HVD_UINT8, 0, 0, 0, 0};
	hvd_handle *h;
	int rc =
		enqueue("hvd.barrier", &m, NULL, NULL, NULL, NULL, 0, NULL, &h);

	return rc != HVD_OK ? rc : hvd_wait(h);
}

HVD_EXPORT const char *hvd_error_message(void)
{
	return last_error;
}

uint64_t hvd__fused_batches(void)
{
	return E.fused_batches;
}
