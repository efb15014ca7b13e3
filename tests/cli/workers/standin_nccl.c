/* standin_nccl.c: a stand-in for NCCL on the CPU, beside the CUDA one
 * (standin_cudart.c), so that libhvd's GPU engine runs in tests on
 * machines without a GPU (tests/cli/gpu_standin.bats). Built with NCCL's
 * soname, found first through LD_LIBRARY_PATH; compiled against NCCL's
 * own header.
 *
 * A communicator's ranks are processes of one host (one network
 * namespace), joined by Unix sockets (abstract names made of the unique
 * id): one mesh for the
 * collectives, which run on the caller's stream (cudaLaunchHostFunc),
 * and one for the host's calls (ncclCommSplit). Every collective moves
 * every rank's data to every rank that needs it and reduces in rank
 * order, so that every rank has the same bits. What it keeps of NCCL's
 * semantics, which the engine relies on:
 *  - collectives are queued on a stream and run there, in order; a
 *    group (ncclGroupStart/End) runs as one, its sends and receives
 *    together;
 *  - a peer that dies fails the collective with ncclRemoteError, seen by
 *    ncclCommGetAsyncError, and the stream stays stuck (as a kernel
 *    waiting for a dead peer does) until ncclCommAbort;
 *  - ncclCommSplit, pre-multiplied sums (host or device scalars), every
 *    built-in op and the types libhvd uses (float16 and bfloat16 reduced
 *    in float).
 * Non-blocking communicators are ready when their call returns. */
#include <cuda_runtime_api.h>
#include <errno.h>
#include <nccl.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define API __attribute__((visibility("default")))
#define ID_LEN 100
#define PREMUL_MAX 64
#define JOIN_MS 60000	/* a communicator's ranks all join within this */
#define STUCK_MS 120000 /* a failed collective waits this long for the abort */

struct premul {
	bool used;
	ncclDataType_t dt;
	ncclScalarResidence_t where;
	unsigned char value[8]; /* host immediate */
	const void *ptr;	/* device */
};

/* The collectives (struct coll's). */
enum kind {
	K_ALLREDUCE,
	K_BCAST,
	K_REDUCE,
	K_ALLGATHER,
	K_REDSCAT,
	K_SEND,
	K_RECV,
	K_N
};

struct ncclComm {
	int rank, size;
	int *fd;  /* the collectives' sockets, by peer (-1: own) */
	int *bfd; /* the host calls' sockets */
	char id[ID_LEN];
	unsigned splits;
	_Atomic int async; /* ncclResult_t */
	_Atomic bool aborted;
	_Atomic int refs;
	pthread_mutex_t mu; /* last, premul */
	char last[256];
	struct premul premul[PREMUL_MAX];
	_Atomic unsigned calls[K_N]; /* collectives queued, by kind */
	/* A reduction's room for every rank's data, kept for the next (a
	 * fresh one each call costs a page fault a page where malloc maps
	 * large blocks anew, as AddressSanitizer's does): taken while in use. */
	struct scratch *_Atomic scratch;
};

struct scratch {
	size_t cap;
	char data[];
};

static __thread char last_global[256];

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void nap_ms(long ms)
{
	struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

static void say(struct ncclComm *c, const char *what)
{
	if (c == NULL) {
		snprintf(last_global, sizeof(last_global), "%s", what);
		return;
	}
	pthread_mutex_lock(&c->mu);
	snprintf(c->last, sizeof(c->last), "%s", what);
	pthread_mutex_unlock(&c->mu);
}

static void comm_unref(struct ncclComm *c)
{
	int i;

	if (atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	/* STANDIN_NCCL_CALLS set: what the communicator ran, on stderr, so
	 * that a test sees which way an allreduce went (flat, or within
	 * hosts and across). */
	if (getenv("STANDIN_NCCL_CALLS") != NULL)
		fprintf(stderr,
			"standin nccl: a communicator of %d ranks ran %u allreduce, %u broadcast, %u allgather, %u reduce-scatter\n",
			c->size, atomic_load(&c->calls[K_ALLREDUCE]),
			atomic_load(&c->calls[K_BCAST]),
			atomic_load(&c->calls[K_ALLGATHER]),
			atomic_load(&c->calls[K_REDSCAT]));
	for (i = 0; c->fd != NULL && c->bfd != NULL && i < c->size; i++) {
		if (c->fd[i] >= 0)
			close(c->fd[i]);
		if (c->bfd[i] >= 0)
			close(c->bfd[i]);
	}
	free(c->fd);
	free(c->bfd);
	free(atomic_load(&c->scratch));
	pthread_mutex_destroy(&c->mu);
	free(c);
}

/* ---- moving bytes: every transfer of a step at once ---- */

struct xfer {
	int fd;
	bool out;
	char *buf;
	size_t len, done;
};

/* Whether x waits for an earlier transfer on its socket and direction. */
static bool behind(const struct xfer *x, int i)
{
	int j;

	for (j = 0; j < i; j++)
		if (x[j].fd == x[i].fd && x[j].out == x[i].out &&
		    x[j].done < x[j].len)
			return true;
	return false;
}

/* Runs the n transfers to their ends (a rank's own, fd -1, are copied
 * before: flush_p2p); false (and c's error set) when a peer closed its
 * end or c was aborted. */
static bool move(struct ncclComm *c, struct xfer *x, int n)
{
	struct pollfd *p = calloc((size_t)n + 1, sizeof(*p));
	int *which = calloc((size_t)n + 1, sizeof(*which));
	bool ok = p != NULL && which != NULL;

	while (ok) {
		int k = 0, i, r;

		if (atomic_load(&c->aborted)) {
			ok = false;
			break;
		}
		for (i = 0; i < n; i++)
			if (x[i].fd >= 0 && x[i].done < x[i].len &&
			    !behind(x, i)) {
				p[k].fd = x[i].fd;
				p[k].events = x[i].out ? POLLOUT : POLLIN;
				p[k].revents = 0;
				which[k++] = i;
			}
		if (k == 0)
			break;
		r = poll(p, (nfds_t)k, 100);
		if (r < 0 && errno != EINTR)
			ok = false;
		for (i = 0; ok && r > 0 && i < k; i++) {
			struct xfer *t = &x[which[i]];
			ssize_t got;

			if (p[i].revents == 0)
				continue;
			if (t->out)
				got = send(t->fd, t->buf + t->done,
					   t->len - t->done,
					   MSG_NOSIGNAL | MSG_DONTWAIT);
			else
				got = recv(t->fd, t->buf + t->done,
					   t->len - t->done, MSG_DONTWAIT);
			if (got > 0)
				t->done += (size_t)got;
			else if (got == 0 ||
				 (errno != EAGAIN && errno != EINTR))
				ok = false;
		}
	}
	free(p);
	free(which);
	if (!ok && !atomic_load(&c->aborted)) {
		char why[160];

		snprintf(
			why, sizeof(why),
			"the CPU stand-in for NCCL: a peer of rank %d of %d closed its connection",
			c->rank, c->size);
		say(c, why);
		atomic_store(&c->async, ncclRemoteError);
	}
	return ok;
}

/* ---- arithmetic ---- */

static float half_to_float(uint16_t h)
{
	uint32_t s = (uint32_t)(h >> 15) << 31, e = (h >> 10) & 31,
		 m = h & 1023, b;
	float f;

	if (e == 0 && m == 0) {
		b = s;
	} else if (e == 0) { /* subnormal */
		f = (float)m / 16777216.0f;
		return s ? -f : f;
	} else if (e == 31) {
		b = s | 0x7f800000u | (m << 13);
	} else {
		b = s | ((e + 112) << 23) | (m << 13);
	}
	memcpy(&f, &b, 4);
	return f;
}

static uint16_t float_to_half(float f)
{
	uint32_t b, s, m;
	int e;

	memcpy(&b, &f, 4);
	s = (b >> 16) & 0x8000u;
	e = (int)((b >> 23) & 255) - 112;
	m = b & 0x7fffffu;
	if (((b >> 23) & 255) == 255)
		return (uint16_t)(s | 0x7c00u | (m ? 0x200u : 0));
	if (e >= 31)
		return (uint16_t)(s | 0x7c00u);
	if (e <= 0) { /* subnormal or zero, rounded to nearest even */
		float a = f < 0 ? -f : f;
		uint32_t q = (uint32_t)(a * 16777216.0f + 0.5f);

		if ((a * 16777216.0f + 0.5f) == (float)q && (q & 1))
			q--;
		return (uint16_t)(s | q);
	}
	{
		uint32_t v = ((uint32_t)e << 10) | (m >> 13),
			 rest = m & 0x1fffu;

		if (rest > 0x1000u || (rest == 0x1000u && (v & 1)))
			v++;
		return (uint16_t)(s | v);
	}
}

static float bf16_to_float(uint16_t h)
{
	uint32_t b = (uint32_t)h << 16;
	float f;

	memcpy(&f, &b, 4);
	return f;
}

static uint16_t float_to_bf16(float f)
{
	uint32_t b;

	memcpy(&b, &f, 4);
	if ((b & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((b >> 16) | 0x40);
	b += 0x7fffu + ((b >> 16) & 1);
	return (uint16_t)(b >> 16);
}

/* NCCL's types that C has, each with the type its sums and products are
 * done in (unsigned for integers: they wrap, as on the GPU). */
#define NATIVE_TYPES(X)                                                        \
	X(ncclInt8, int8_t, uint8_t)                                           \
	X(ncclUint8, uint8_t, uint8_t)                                         \
	X(ncclInt32, int32_t, uint32_t)                                        \
	X(ncclUint32, uint32_t, uint32_t)                                      \
	X(ncclInt64, int64_t, uint64_t)                                        \
	X(ncclUint64, uint64_t, uint64_t)                                      \
	X(ncclFloat32, float, float)                                           \
	X(ncclFloat64, double, double)

#define OP(T, U, op, a, b)                                                     \
	((op) == ncclSum    ? (T)((U)(a) + (U)(b))                             \
	 : (op) == ncclProd ? (T)((U)(a) * (U)(b))                             \
	 : (op) == ncclMax  ? ((a) > (b) ? (a) : (b))                          \
			    : ((a) < (b) ? (a) : (b)))

static float half_get(const uint16_t *p, bool h)
{
	return h ? half_to_float(*p) : bf16_to_float(*p);
}

static void half_put(uint16_t *p, bool h, float x)
{
	*p = h ? float_to_half(x) : float_to_bf16(x);
}

static size_t type_size(ncclDataType_t t)
{
	switch (t) {
#define SIZE(E, T, U)                                                          \
	case E:                                                                \
		return sizeof(T);
		NATIVE_TYPES(SIZE)
#undef SIZE
	case ncclFloat16:
	case ncclBfloat16:
		return 2;
	default:
		return 0;
	}
}

/* acc = acc op in, elementwise; op: sum, prod, max or min. */
static void combine(void *acc, const void *in, size_t n, ncclDataType_t t,
		    ncclRedOp_t op)
{
	uint16_t *ha = acc;
	const uint16_t *hb = in;
	size_t i;

	switch (t) {
#define COMBINE(E, T, U)                                                       \
	case E:                                                                \
		for (i = 0; i < n; i++)                                        \
			((T *)acc)[i] = OP(T, U, op, ((T *)acc)[i],            \
					   ((const T *)in)[i]);                \
		break;
		NATIVE_TYPES(COMBINE)
#undef COMBINE
	case ncclFloat16:
	case ncclBfloat16:
		for (i = 0; i < n; i++) {
			float x = half_get(&ha[i], t == ncclFloat16);
			float y = half_get(&hb[i], t == ncclFloat16);

			half_put(&ha[i], t == ncclFloat16,
				 OP(float, float, op, x, y));
		}
		break;
	default:
		break;
	}
}

/* buf = buf * s (mul) or buf / s, elementwise; integers: whole numbers. */
static void scale(void *buf, size_t n, ncclDataType_t t, double s, bool mul)
{
	uint16_t *h = buf;
	size_t i;

	switch (t) {
#define SCALE(E, T, U)                                                         \
	case E:                                                                \
		for (i = 0; i < n; i++)                                        \
			((T *)buf)[i] = mul ? (T)(((T *)buf)[i] * (T)s)        \
					    : (T)(((T *)buf)[i] / (T)s);       \
		break;
		NATIVE_TYPES(SCALE)
#undef SCALE
	case ncclFloat16:
	case ncclBfloat16:
		for (i = 0; i < n; i++) {
			float x = half_get(&h[i], t == ncclFloat16);

			half_put(&h[i], t == ncclFloat16,
				 mul ? x * (float)s : x / (float)s);
		}
		break;
	default:
		break;
	}
}

static double scalar_value(const void *p, ncclDataType_t t)
{
	uint16_t h;

	switch (t) {
#define VALUE(E, T, U)                                                         \
	case E: {                                                              \
		T v;                                                           \
		memcpy(&v, p, sizeof(v));                                      \
		return (double)v;                                              \
	}
		NATIVE_TYPES(VALUE)
#undef VALUE
	default:
		memcpy(&h, p, sizeof(h));
		return half_get(&h, t == ncclFloat16);
	}
}

/* ---- collectives, on the stream ---- */

struct coll {
	enum kind k;
	const void *send;
	void *recv;
	size_t count;
	ncclDataType_t dt;
	ncclRedOp_t op;	  /* built-in (a pre-multiplied sum: ncclSum) */
	struct premul pm; /* used: the sum pre-multiplies by its scalar */
	int root;	  /* or peer */
	struct ncclComm *comm;
};

struct job {
	int n, cap;
	struct coll *c;
};

/* in[p] for every rank p, reduced in rank order into out. */
static void reduce_all(struct coll *o, char *tmp, void *out, size_t bytes)
{
	int p, n = o->comm->size;

	if (o->pm.used) {
		double s = o->pm.where == ncclScalarHostImmediate
				   ? scalar_value(o->pm.value, o->pm.dt)
				   : scalar_value(o->pm.ptr, o->pm.dt);

		for (p = 0; p < n; p++)
			scale(tmp + (size_t)p * bytes, o->count, o->dt, s,
			      true);
	}
	for (p = 1; p < n; p++)
		combine(tmp, tmp + (size_t)p * bytes, o->count, o->dt,
			o->op == ncclAvg ? ncclSum : o->op);
	if (o->op == ncclAvg)
		scale(tmp, o->count, o->dt, n, false);
	memmove(out, tmp, bytes);
}

/* Appends the transfer between this rank and peer p of a collective. */
static void pair(struct xfer *x, int *k, int fd, const void *out, void *in,
		 size_t bytes)
{
	if (out != NULL)
		x[(*k)++] = (struct xfer){fd, true, (char *)out, bytes, 0};
	if (in != NULL)
		x[(*k)++] = (struct xfer){fd, false, in, bytes, 0};
}

/* Room for len bytes: the communicator's kept one where it is free and
 * large enough; given back by scratch_put. */
static struct scratch *scratch_take(struct ncclComm *c, size_t len)
{
	struct scratch *s = atomic_exchange(&c->scratch, NULL);

	if (s != NULL && s->cap >= len)
		return s;
	free(s);
	s = malloc(sizeof(*s) + len);
	if (s != NULL)
		s->cap = len;
	return s;
}

static void scratch_put(struct ncclComm *c, struct scratch *s)
{
	struct scratch *none = NULL;

	if (s != NULL && !atomic_compare_exchange_strong(&c->scratch, &none, s))
		free(s);
}

/* One collective (not a send or receive); false on a failure. */
static bool run_coll(struct coll *o)
{
	struct ncclComm *c = o->comm;
	size_t es = type_size(o->dt), bytes = o->count * es;
	int p, me = c->rank, n = c->size, k = 0;
	bool root = me == o->root, ok = true;
	/* Every rank's data here, then reduced (reduce: at the root). */
	bool reduces = o->k == K_ALLREDUCE || o->k == K_REDSCAT ||
		       (o->k == K_REDUCE && root);
	struct scratch *room =
		reduces ? scratch_take(c, (size_t)n * bytes + 1) : NULL;
	char *tmp = room != NULL ? room->data : NULL;
	char *all = o->recv;
	struct xfer *x = calloc(2 * (size_t)n, sizeof(*x));

	if (x == NULL || (reduces && tmp == NULL)) {
		free(x);
		scratch_put(c, room);
		return false;
	}
	if (o->k == K_ALLGATHER) /* in place: send may be recv's own part */
		memmove(all + (size_t)me * bytes, o->send, bytes);
	if (o->k == K_BCAST && root && o->send != o->recv)
		memmove(o->recv, o->send, bytes);
	for (p = 0; p < n; p++) {
		char *from_p = tmp + (size_t)p * bytes;
		const char *send = o->send;

		if (p == me) {
			if (o->k == K_ALLREDUCE || (o->k == K_REDUCE && root))
				memcpy(from_p, send, bytes);
			else if (o->k == K_REDSCAT)
				memcpy(from_p, send + (size_t)p * bytes, bytes);
			continue;
		}
		switch (o->k) {
		case K_ALLREDUCE:
			pair(x, &k, c->fd[p], send, from_p, bytes);
			break;
		case K_REDSCAT:
			pair(x, &k, c->fd[p], send + (size_t)p * bytes, from_p,
			     bytes);
			break;
		case K_REDUCE:
			if (root)
				pair(x, &k, c->fd[p], NULL, from_p, bytes);
			else if (p == o->root)
				pair(x, &k, c->fd[p], send, NULL, bytes);
			break;
		case K_BCAST:
			if (root)
				pair(x, &k, c->fd[p], send, NULL, bytes);
			else if (p == o->root)
				pair(x, &k, c->fd[p], NULL, o->recv, bytes);
			break;
		case K_ALLGATHER:
			pair(x, &k, c->fd[p], all + (size_t)me * bytes,
			     all + (size_t)p * bytes, bytes);
			break;
		default:
			break;
		}
	}
	if (bytes > 0)
		ok = move(c, x, k);
	if (ok && tmp != NULL)
		reduce_all(o, tmp, o->recv, bytes);
	scratch_put(c, room);
	free(x);
	return ok;
}

/* A failed collective holds its stream, as a kernel that waits for a dead
 * peer does, until the communicator is aborted. */
static void stuck(struct ncclComm *c)
{
	long long end = now_ms() + STUCK_MS;

	while (!atomic_load(&c->aborted) && now_ms() < end)
		nap_ms(1);
}

/* The sends and receives gathered so far, all at once. */
static void flush_p2p(struct ncclComm *c, struct xfer *x, int *nx)
{
	int i, j = 0;

	/* A rank's sends to itself, to its receives from itself in order. */
	for (i = 0; i < *nx; i++) {
		if (x[i].fd >= 0 || !x[i].out)
			continue;
		while (j < *nx && (x[j].fd >= 0 || x[j].out))
			j++;
		if (j == *nx)
			break;
		memcpy(x[j].buf, x[i].buf,
		       x[i].len < x[j].len ? x[i].len : x[j].len);
		x[i].done = x[i].len;
		x[j].done = x[j].len;
		j++;
	}
	if (*nx > 0 && !move(c, x, *nx))
		stuck(c);
	*nx = 0;
}

/* A job on its stream: its collectives in order; consecutive sends and
 * receives (a group's) together. */
static void run_job(void *arg)
{
	struct job *j = arg;
	struct xfer *x = calloc((size_t)j->n + 1, sizeof(*x));
	struct ncclComm *p2p = NULL;
	const char *slow_redscat = getenv("STANDIN_NCCL_SLOW_REDUCESCATTER_MS");
	int i, nx = 0;

	for (i = 0; x != NULL && i < j->n; i++) {
		struct coll *o = &j->c[i];
		struct ncclComm *c = o->comm;

		if (o->k != K_SEND && o->k != K_RECV && p2p != NULL)
			flush_p2p(p2p, x, &nx);
		if (atomic_load(&c->aborted) ||
		    atomic_load(&c->async) != ncclSuccess)
			continue;
		/* STANDIN_NCCL_SLOW_REDUCESCATTER_MS: each reduce-scatter
		 * takes that much longer (a test makes the hierarchical
		 * allreduce the slower way). */
		if (o->k == K_REDSCAT && slow_redscat != NULL)
			nap_ms(atol(slow_redscat));
		if (o->k == K_SEND || o->k == K_RECV) {
			x[nx++] = (struct xfer){c->fd[o->root], o->k == K_SEND,
						o->k == K_SEND ? (char *)o->send
							       : o->recv,
						o->count * type_size(o->dt), 0};
			p2p = c;
		} else if (!run_coll(o)) {
			stuck(c);
		}
	}
	if (p2p != NULL)
		flush_p2p(p2p, x, &nx);
	free(x);
	for (i = 0; i < j->n; i++)
		comm_unref(j->c[i].comm);
	free(j->c);
	free(j);
}

static __thread int group_depth;
static __thread struct job *group;
static __thread cudaStream_t group_stream;

static ncclResult_t submit(struct coll *o, cudaStream_t s)
{
	struct job *j = group;

	if (o->comm == NULL)
		return ncclInvalidArgument;
	if (atomic_load(&o->comm->aborted))
		return ncclInvalidUsage;
	atomic_fetch_add(&o->comm->calls[o->k], 1);
	if (type_size(o->dt) == 0) {
		say(o->comm,
		    "the CPU stand-in for NCCL: a type it does not reduce");
		return ncclInvalidArgument;
	}
	if (o->op >= ncclNumOps) { /* a pre-multiplied sum */
		int i = (int)o->op - ncclNumOps;

		if (i >= PREMUL_MAX)
			return ncclInvalidArgument;
		pthread_mutex_lock(&o->comm->mu);
		o->pm = o->comm->premul[i];
		pthread_mutex_unlock(&o->comm->mu);
		if (!o->pm.used)
			return ncclInvalidArgument;
		o->op = ncclSum;
	}
	if (j == NULL && (j = calloc(1, sizeof(*j))) == NULL)
		return ncclSystemError;
	if (j->n == j->cap) {
		int cap = j->cap ? 2 * j->cap : 4;
		struct coll *c = realloc(j->c, (size_t)cap * sizeof(*c));

		if (c == NULL) {
			if (j != group)
				free(j);
			return ncclSystemError;
		}
		j->c = c;
		j->cap = cap;
	}
	atomic_fetch_add(&o->comm->refs, 1);
	j->c[j->n++] = *o;
	if (group_depth > 0) {
		if (group == NULL)
			group_stream = s;
		group = j;
		return ncclSuccess;
	}
	return cudaLaunchHostFunc(s, run_job, j) == cudaSuccess
		       ? ncclSuccess
		       : ncclUnhandledCudaError;
}

/* A collective of the API's, queued (or added to the thread's group). */
static ncclResult_t queue(enum kind k, const void *send, void *recv,
			  size_t count, ncclDataType_t dt, ncclRedOp_t op,
			  int root, ncclComm_t comm, cudaStream_t s)
{
	struct coll o = {.k = k,
			 .send = send,
			 .recv = recv,
			 .count = count,
			 .dt = dt,
			 .op = op,
			 .root = root,
			 .comm = comm};

	return submit(&o, s);
}

API ncclResult_t ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}

API ncclResult_t ncclGroupEnd(void)
{
	struct job *j = group;

	if (group_depth <= 0)
		return ncclInvalidUsage;
	if (--group_depth > 0 || j == NULL)
		return ncclSuccess;
	group = NULL;
	return cudaLaunchHostFunc(group_stream, run_job, j) == cudaSuccess
		       ? ncclSuccess
		       : ncclUnhandledCudaError;
}

API ncclResult_t ncclAllReduce(const void *send, void *recv, size_t count,
			       ncclDataType_t dt, ncclRedOp_t op,
			       ncclComm_t comm, cudaStream_t s)
{
	return queue(K_ALLREDUCE, send, recv, count, dt, op, 0, comm, s);
}

API ncclResult_t ncclReduceScatter(const void *send, void *recv,
				   size_t recvcount, ncclDataType_t dt,
				   ncclRedOp_t op, ncclComm_t comm,
				   cudaStream_t s)
{
	return queue(K_REDSCAT, send, recv, recvcount, dt, op, 0, comm, s);
}

API ncclResult_t ncclReduce(const void *send, void *recv, size_t count,
			    ncclDataType_t dt, ncclRedOp_t op, int root,
			    ncclComm_t comm, cudaStream_t s)
{
	return queue(K_REDUCE, send, recv, count, dt, op, root, comm, s);
}

API ncclResult_t ncclBroadcast(const void *send, void *recv, size_t count,
			       ncclDataType_t dt, int root, ncclComm_t comm,
			       cudaStream_t s)
{
	return queue(K_BCAST, send, recv, count, dt, ncclSum, root, comm, s);
}

API ncclResult_t ncclAllGather(const void *send, void *recv, size_t sendcount,
			       ncclDataType_t dt, ncclComm_t comm,
			       cudaStream_t s)
{
	return queue(K_ALLGATHER, send, recv, sendcount, dt, ncclSum, 0, comm,
		     s);
}

API ncclResult_t ncclSend(const void *send, size_t count, ncclDataType_t dt,
			  int peer, ncclComm_t comm, cudaStream_t s)
{
	if (comm == NULL || peer < 0 || peer >= comm->size)
		return ncclInvalidArgument;
	return queue(K_SEND, send, NULL, count, dt, ncclSum, peer, comm, s);
}

API ncclResult_t ncclRecv(void *recv, size_t count, ncclDataType_t dt, int peer,
			  ncclComm_t comm, cudaStream_t s)
{
	if (comm == NULL || peer < 0 || peer >= comm->size)
		return ncclInvalidArgument;
	return queue(K_RECV, NULL, recv, count, dt, ncclSum, peer, comm, s);
}

API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar,
					  ncclDataType_t dt,
					  ncclScalarResidence_t where,
					  ncclComm_t comm)
{
	int i;

	if (comm == NULL || type_size(dt) == 0)
		return ncclInvalidArgument;
	pthread_mutex_lock(&comm->mu);
	for (i = 0; i < PREMUL_MAX && comm->premul[i].used; i++)
		;
	if (i < PREMUL_MAX) {
		struct premul *m = &comm->premul[i];

		m->used = true;
		m->dt = dt;
		m->where = where;
		m->ptr = scalar;
		if (where == ncclScalarHostImmediate)
			memcpy(m->value, scalar, type_size(dt));
	}
	pthread_mutex_unlock(&comm->mu);
	if (i == PREMUL_MAX)
		return ncclInvalidUsage;
	*op = (ncclRedOp_t)(ncclNumOps + i);
	return ncclSuccess;
}

API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
	int i = (int)op - ncclNumOps;

	if (comm == NULL || i < 0 || i >= PREMUL_MAX)
		return ncclInvalidArgument;
	pthread_mutex_lock(&comm->mu);
	comm->premul[i].used = false;
	pthread_mutex_unlock(&comm->mu);
	return ncclSuccess;
}

/* ---- communicators ---- */

API ncclResult_t ncclGetVersion(int *version)
{
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	static _Atomic unsigned n;
	unsigned long long r = 0;
	struct timespec ts;

	/* Unique among the jobs of a network namespace (where the abstract
	 * names live), whatever PID namespaces they run in. */
	if (getrandom(&r, sizeof(r), 0) != (ssize_t)sizeof(r))
		return ncclSystemError;
	clock_gettime(CLOCK_REALTIME, &ts);
	memset(id, 0, sizeof(*id));
	snprintf(id->internal, sizeof(id->internal), "%d.%ld.%u.%llx",
		 (int)getpid(), ts.tv_nsec, atomic_fetch_add(&n, 1), r);
	return ncclSuccess;
}

static socklen_t address(struct sockaddr_un *a, const char *id, int rank)
{
	int n;

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	/* sun_path[0] = 0: an abstract name, gone with its socket */
	n = snprintf(a->sun_path + 1, sizeof(a->sun_path) - 1,
		     "hvd-standin-nccl/%s/%d", id, rank);
	return (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			   (size_t)n);
}

static bool io_all(int fd, void *buf, size_t len, bool out)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = out ? send(fd, (char *)buf + done, len - done,
				       MSG_NOSIGNAL)
				: recv(fd, (char *)buf + done, len - done, 0);

		if (r <= 0 && !(r < 0 && errno == EINTR))
			return false;
		if (r > 0)
			done += (size_t)r;
	}
	return true;
}

/* The ranks of id join: each connects to every lower rank twice (the
 * collectives' socket, the host calls'), saying who it is, and accepts
 * the higher ranks'. */
static ncclResult_t join(const char *id, int size, int rank,
			 struct ncclComm **out)
{
	struct ncclComm *c = calloc(1, sizeof(*c));
	long long end = now_ms() + JOIN_MS;
	struct sockaddr_un a;
	int lfd = -1, p, ch, i, got = 0;
	bool ok;

	if (c == NULL)
		return ncclSystemError;
	pthread_mutex_init(&c->mu, NULL);
	atomic_store(&c->refs, 1);
	atomic_store(&c->async, ncclSuccess);
	c->rank = rank;
	c->size = size;
	snprintf(c->id, sizeof(c->id), "%s", id);
	c->fd = malloc((size_t)size * sizeof(int));
	c->bfd = malloc((size_t)size * sizeof(int));
	ok = c->fd != NULL && c->bfd != NULL;
	for (i = 0; ok && i < size; i++)
		c->fd[i] = c->bfd[i] = -1;
	if (ok && rank < size - 1) {
		socklen_t len = address(&a, id, rank);

		lfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ok = lfd >= 0 && bind(lfd, (struct sockaddr *)&a, len) == 0 &&
		     listen(lfd, 2 * size) == 0;
	}
	for (p = 0; ok && p < rank; p++)
		for (ch = 0; ok && ch < 2; ch++) {
			socklen_t len = address(&a, id, p);
			int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
			int hello[2] = {rank, ch};

			while (fd >= 0 &&
			       connect(fd, (struct sockaddr *)&a, len) != 0 &&
			       now_ms() < end)
				nap_ms(2);
			ok = fd >= 0 && io_all(fd, hello, sizeof(hello), true);
			if (ch == 0)
				c->fd[p] = fd;
			else
				c->bfd[p] = fd;
		}
	while (ok && got < 2 * (size - 1 - rank)) {
		struct pollfd pf = {lfd, POLLIN, 0};
		int hello[2], fd;

		if (poll(&pf, 1, 100) <= 0) {
			ok = now_ms() < end;
			continue;
		}
		fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
		ok = fd >= 0 && io_all(fd, hello, sizeof(hello), false) &&
		     hello[0] > rank && hello[0] < size &&
		     (hello[1] == 0 || hello[1] == 1);
		if (ok)
			(hello[1] == 0 ? c->fd : c->bfd)[hello[0]] = fd;
		else if (fd >= 0)
			close(fd);
		got++;
	}
	if (lfd >= 0)
		close(lfd);
	if (!ok) {
		char why[160];

		snprintf(
			why, sizeof(why),
			"the CPU stand-in for NCCL: rank %d of %d could not join its peers within %d s",
			rank, size, JOIN_MS / 1000);
		say(NULL, why);
		comm_unref(c);
		return ncclSystemError;
	}
	*out = c;
	return ncclSuccess;
}

API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks,
					ncclUniqueId id, int rank,
					ncclConfig_t *config)
{
	char name[ID_LEN];

	(void)config;
	if (nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	snprintf(name, sizeof(name), "%.60s", id.internal);
	return join(name, nranks, rank, comm);
}

API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id,
				  int rank)
{
	return ncclCommInitRankConfig(comm, nranks, id, rank, NULL);
}

/* Every rank's color and key, over the host calls' sockets. */
API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key,
			       ncclComm_t *newcomm, ncclConfig_t *config)
{
	int n, p, mine[2] = {color, key}, *all, me = 0, size = 0;
	struct xfer *x;
	char id[ID_LEN];
	bool ok;

	(void)config;
	if (comm == NULL || atomic_load(&comm->aborted))
		return ncclInvalidArgument;
	n = comm->size;
	all = calloc(2 * (size_t)n, sizeof(int));
	x = calloc(2 * (size_t)n, sizeof(*x));
	ok = all != NULL && x != NULL;
	for (p = 0, n = 0; ok && p < comm->size; p++) {
		if (p == comm->rank) {
			memcpy(all + 2 * p, mine, sizeof(mine));
			continue;
		}
		x[n++] = (struct xfer){comm->bfd[p], true, (char *)mine,
				       sizeof(mine), 0};
		x[n++] = (struct xfer){comm->bfd[p], false,
				       (char *)(all + 2 * p), sizeof(mine), 0};
	}
	ok = ok && move(comm, x, n);
	free(x);
	/* The new rank: by key, then by the old rank. */
	for (p = 0; ok && p < comm->size; p++) {
		if (all[2 * p] != color)
			continue;
		size++;
		if (all[2 * p + 1] < key ||
		    (all[2 * p + 1] == key && p < comm->rank))
			me++;
	}
	free(all);
	if (!ok)
		return ncclSystemError;
	snprintf(id, sizeof(id), "%.60s.%u.%d", comm->id, comm->splits++,
		 color);
	if (color == NCCL_SPLIT_NOCOLOR) {
		*newcomm = NULL;
		return ncclSuccess;
	}
	return join(id, size, me, newcomm);
}

API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	if (comm != NULL)
		comm_unref(comm);
	return ncclSuccess;
}

/* Its sockets shut, so that every transfer on them ends (here and at the
 * peers), and a stuck stream goes on. */
API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	int i;

	if (comm == NULL)
		return ncclSuccess;
	atomic_store(&comm->aborted, true);
	for (i = 0; i < comm->size; i++) {
		if (comm->fd[i] >= 0)
			shutdown(comm->fd[i], SHUT_RDWR);
		if (comm->bfd[i] >= 0)
			shutdown(comm->bfd[i], SHUT_RDWR);
	}
	comm_unref(comm);
	return ncclSuccess;
}

API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *r)
{
	if (comm == NULL)
		return ncclInvalidArgument;
	*r = (ncclResult_t)atomic_load(&comm->async);
	return ncclSuccess;
}

API const char *ncclGetLastError(ncclComm_t comm)
{
	return comm != NULL ? comm->last : last_global;
}

API const char *ncclGetErrorString(ncclResult_t r)
{
	switch (r) {
	case ncclSuccess:
		return "no error";
	case ncclUnhandledCudaError:
		return "unhandled cuda error";
	case ncclSystemError:
		return "unhandled system error";
	case ncclInternalError:
		return "internal error";
	case ncclInvalidArgument:
		return "invalid argument";
	case ncclInvalidUsage:
		return "invalid usage";
	case ncclRemoteError:
		return "remote process exited or there was a network error";
	case ncclInProgress:
		return "NCCL operation in progress";
	default:
		return "unknown result code";
	}
}
