/* test_ring.c: the ring algorithms over the TCP transport, ranks as
 * threads of this process on 127.0.0.1 (gloo's way): every dtype and op
 * against a serial reference, counts 0, 1, primes and several MiB,
 * broadcast from every root, allgather of uneven blocks, and a
 * peer that dies; Adasum against a serial reference and its two
 * defining cases. Also the float16/bfloat16 conversions, whom each
 * rank of an allreduce receives from (hvd__ring_sources), and a burst of
 * connections larger than the old listen backlog. */
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "algo/group.h"
#include "util/internal.h"
#include "util/reduce.h"
#include "ref_reduce.h"
#include "algo/ring.h"
#include "algo/adasum.h"
#include "tap.h"
#include "transport/tcp.h"

#define MAXN 4
/* Adasum's tests run up to 8 ranks. */
#define WORLD_MAX 8
/* More than ring.c's largest allreduce by recursive doubling. */
#define SMALL_PLUS (64 * 1024 + 1)

struct world {
	int n;
	char addr[WORLD_MAX][64];
	char *addrs[WORLD_MAX];
	pthread_barrier_t ready;
	void (*body)(const struct hvd__comm *c, void *arg);
	void *arg;
	int dead_rank; /* -1: none; else this rank leaves at once */
};

struct thr {
	struct world *w;
	int rank;
	int failures;
};

static const uint8_t token[HVD__TOKEN_LEN] = "a token for the ring tests....";

static void *rank_main(void *p)
{
	struct thr *th = p;
	struct world *w = th->w;
	struct hvd__tcp *t = NULL;
	struct hvd__comm c;

	if (hvd__tcp_new(&t, "127.0.0.1", w->addr[th->rank],
			 sizeof(w->addr[0])) != HVD_OK)
		th->failures++;
	pthread_barrier_wait(&w->ready);
	if (t == NULL)
		return NULL;
	if (hvd__tcp_connect(t, th->rank, w->n, w->addrs, token, 10000) !=
	    HVD_OK) {
		th->failures++;
		hvd__tcp_free(t);
		return NULL;
	}
	if (th->rank == w->dead_rank) {
		hvd__tcp_free(t); /* a peer that dies */
		return NULL;
	}
	hvd__tcp_set_timeout(t, 5000);
	c.rank = th->rank;
	c.size = w->n;
	c.ops = &hvd__tcp_ops;
	c.t = t;
	w->body(&c, w->arg);
	hvd__tcp_free(t);
	return NULL;
}

/* Run body on n ranks. */
static void run_world(int n, void (*body)(const struct hvd__comm *, void *),
		      void *arg, int dead_rank)
{
	struct world w;
	struct thr th[WORLD_MAX];
	pthread_t tid[WORLD_MAX];
	int r;

	memset(&w, 0, sizeof(w));
	w.n = n;
	w.body = body;
	w.arg = arg;
	w.dead_rank = dead_rank;
	for (r = 0; r < n; r++)
		w.addrs[r] = w.addr[r];
	pthread_barrier_init(&w.ready, NULL, (unsigned)n);
	for (r = 0; r < n; r++) {
		th[r].w = &w;
		th[r].rank = r;
		th[r].failures = 0;
		pthread_create(&tid[r], NULL, rank_main, &th[r]);
	}
	for (r = 0; r < n; r++) {
		pthread_join(tid[r], NULL);
		CHECK(th[r].failures == 0);
	}
	pthread_barrier_destroy(&w.ready);
}

static bool is_int(enum hvd_dtype t)
{
	return t <= HVD_INT64 || t == HVD_INT16 || t == HVD_BOOL;
}

/* The value rank r contributes at i: small, so that sums and products of
 * up to 4 ranks are exact in every dtype. */
static double value(int r, size_t i, enum hvd_dtype t, enum hvd_op op)
{
	static const double prod_vals[] = {1, 2, -1, -2, 1, 1, 2};
	size_t k = i * 7 + (size_t)r * 13;

	if (t == HVD_BOOL) /* or and and both come out either way */
		return (double)(k % 5 != 0);
	if (op == HVD_PRODUCT)
		return t == HVD_UINT8 ? (double)(1 + k % 2) : prod_vals[k % 7];
	if (t == HVD_UINT8)
		return (double)(k % 9);
	return (double)((long)(k % 17) - 8);
}

static void store(void *buf, size_t i, enum hvd_dtype t, double v)
{
	switch (t) {
	case HVD_UINT8:
	case HVD_BOOL:
		((uint8_t *)buf)[i] = (uint8_t)v;
		break;
	case HVD_INT8:
		((int8_t *)buf)[i] = (int8_t)v;
		break;
	case HVD_INT16:
		((int16_t *)buf)[i] = (int16_t)v;
		break;
	case HVD_INT32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case HVD_INT64:
		((int64_t *)buf)[i] = (int64_t)v;
		break;
	case HVD_FLOAT16:
		((uint16_t *)buf)[i] = hvd__float_to_half((float)v);
		break;
	case HVD_BFLOAT16:
		((uint16_t *)buf)[i] = hvd__float_to_bf16((float)v);
		break;
	case HVD_FLOAT32:
		((float *)buf)[i] = (float)v;
		break;
	case HVD_FLOAT64:
		((double *)buf)[i] = v;
		break;
	}
}

static double load(const void *buf, size_t i, enum hvd_dtype t)
{
	switch (t) {
	case HVD_UINT8:
	case HVD_BOOL:
		return ((const uint8_t *)buf)[i];
	case HVD_INT8:
		return ((const int8_t *)buf)[i];
	case HVD_INT16:
		return ((const int16_t *)buf)[i];
	case HVD_INT32:
		return ((const int32_t *)buf)[i];
	case HVD_INT64:
		return (double)((const int64_t *)buf)[i];
	case HVD_FLOAT16:
		return hvd__half_to_float(((const uint16_t *)buf)[i]);
	case HVD_BFLOAT16:
		return hvd__bf16_to_float(((const uint16_t *)buf)[i]);
	case HVD_FLOAT32:
		return ((const float *)buf)[i];
	case HVD_FLOAT64:
		return ((const double *)buf)[i];
	}
	return 0;
}

/* Rank r's element i: arg is {dtype, op}. */
static double ref_value(int r, size_t i, const void *arg)
{
	const int *to = arg;

	return value(r, i, (enum hvd_dtype)to[0], (enum hvd_op)to[1]);
}

static double reference(int n, size_t i, enum hvd_dtype t, enum hvd_op op)
{
	int to[2] = {(int)t, (int)op};
	double v =
		ref_reduce(n, i, op, t != HVD_BOOL && is_int(t), ref_value, to);

	/* A bool's values are 0 and 1: a sum above 0 is their or, a
	 * product their and. */
	return t == HVD_BOOL ? (double)(v != 0) : v;
}

struct ar_case {
	enum hvd_dtype t;
	enum hvd_op op;
	size_t count;
	int bad[MAXN]; /* per rank: wrong elements, or -1 for an error */
	bool pieces;   /* in separate pieces of uneven sizes, some empty */
	uint64_t hash[MAXN]; /* per rank: FNV-1a of the result's bytes */
};

static uint64_t fnv(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 14695981039346656037ull;
	size_t i;

	for (i = 0; i < n; i++)
		h = (h ^ b[i]) * 1099511628211ull;
	return h;
}

/* Piece sizes in elements, used in turn until the count is covered. */
static const size_t piece_len[] = {3, 0, 1, 1000, 17, 0, 4096, 2, 250};
#define NPIECE_LEN (sizeof(piece_len) / sizeof(piece_len[0]))

/* Cut buf (count elements) into separately allocated pieces: v gets
 * them, each one a copy of its part of buf. */
static int cut(const char *buf, size_t count, size_t es, struct iovec *v,
	       int max)
{
	size_t at = 0;
	int n = 0;

	while ((at < count || n == 0) && n < max) {
		size_t len = piece_len[(size_t)n % NPIECE_LEN];

		if (len > count - at)
			len = count - at;
		v[n].iov_base = malloc(len * es + 1);
		v[n].iov_len = len * es;
		memcpy(v[n].iov_base, buf + at * es, len * es);
		at += len;
		n++;
	}
	return n;
}

/* Put the pieces back into buf, and free them. */
static void join(char *buf, struct iovec *v, int n)
{
	size_t at = 0;
	int i;

	for (i = 0; i < n; i++) {
		memcpy(buf + at, v[i].iov_base, v[i].iov_len);
		at += v[i].iov_len;
		free(v[i].iov_base);
	}
}

static void ar_body(const struct hvd__comm *c, void *arg)
{
	struct ar_case *k = arg;
	size_t es = hvd__dtype_size(k->t), i;
	char *buf = malloc(k->count * es + 1);
	int rc;

	for (i = 0; i < k->count; i++)
		store(buf, i, k->t, value(c->rank, i, k->t, k->op));
	if (k->pieces) {
		struct iovec v[4096];
		int nv = cut(buf, k->count, es, v, 4096);

		rc = hvd__ring_allreduce_v(c, v, nv, k->t, k->op, NULL);
		join(buf, v, nv);
	} else {
		rc = hvd__ring_allreduce(c, buf, k->count, k->t, k->op);
	}
	k->hash[c->rank] = fnv(buf, k->count * es);
	if (rc != HVD_OK) {
		k->bad[c->rank] = -1;
	} else {
		double tol = k->t == HVD_FLOAT16    ? 2e-3
			     : k->t == HVD_BFLOAT16 ? 1e-2
			     : k->t == HVD_FLOAT32  ? 1e-6
						    : 1e-12;

		for (i = 0; i < k->count; i++) {
			double want = reference(c->size, i, k->t, k->op);
			double got = load(buf, i, k->t);
			bool exact = is_int(k->t) || k->op != HVD_AVERAGE;

			if (exact ? got != want
				  : fabs(got - want) >
					    tol * fmax(1, fabs(want)))
				k->bad[c->rank]++;
		}
	}
	free(buf);
}

/* Every dtype and op on 1 to MAXN ranks, for each of the counts (the last
 * one only for float32 on 3 ranks or more: it is large), in one buffer or
 * in pieces. */
static void allreduce_every_case(const size_t *counts, size_t ncounts,
				 bool pieces)
{
	int n, t, op, r;
	size_t ci;

	for (n = 1; n <= MAXN; n++)
		for (t = HVD_UINT8; t <= HVD_BOOL; t++)
			for (op = HVD_SUM; op <= HVD_PRODUCT; op++)
				for (ci = 0; ci < ncounts; ci++) {
					struct ar_case k = {
						.t = (enum hvd_dtype)t,
						.op = (enum hvd_op)op,
						.count = counts[ci],
						.pieces = pieces};

					if ((ci == ncounts - 1 &&
					     (t != HVD_FLOAT32 || n < 3)) ||
					    (t == HVD_BOOL &&
					     op == HVD_AVERAGE)) /* refused */
						continue;
					run_world(n, ar_body, &k, -1);
					/* Every rank gets the same bits. */
					for (r = 1; r < n; r++)
						CHECK(k.hash[r] == k.hash[0]);
					for (r = 0; r < n; r++)
						if (k.bad[r] != 0) {
							printf("# %s n=%d %s op=%d count=%zu rank %d: %d wrong\n",
							       pieces ? "pieces"
								      : "whole",
							       n,
							       hvd__dtype_name(
								       k.t),
							       op, k.count, r,
							       k.bad[r]);
							CHECK(0);
						}
				}
}

static void test_allreduce_every_dtype_and_op(void)
{
	static const size_t counts[] = {0, 1, 2, 7, 10007, 300007};

	allreduce_every_case(counts, 6, false);
}

static void test_allreduce_several_mib(void)
{
	static const enum hvd_dtype types[] = {HVD_FLOAT32, HVD_INT32,
					       HVD_FLOAT16, HVD_FLOAT64};
	size_t i;
	int r;

	for (i = 0; i < 4; i++) {
		/* 1.5 M elements: 6 MiB of float32, not a multiple of 4. */
		struct ar_case k = {
			.t = types[i], .op = HVD_SUM, .count = 1536 * 1024 + 3};

		run_world(4, ar_body, &k, -1);
		for (r = 0; r < 4; r++)
			CHECK(k.bad[r] == 0);
	}
	{
		struct ar_case k = {
			.t = HVD_FLOAT32, .op = HVD_AVERAGE, .count = 1048573};

		run_world(3, ar_body, &k, -1);
		for (r = 0; r < 3; r++)
			CHECK(k.bad[r] == 0);
	}
}

/* A fused batch reduced where its tensors lie: the same results as one
 * buffer, whatever the pieces' sizes, empty ones too. */
static void test_allreduce_in_pieces(void)
{
	static const size_t counts[] = {1, 7, 5000, 300007};

	allreduce_every_case(counts, 4, true);
}

struct bc_case {
	size_t len;
	int root;
	int bad[MAXN];
};

static void bc_body(const struct hvd__comm *c, void *arg)
{
	struct bc_case *k = arg;
	unsigned char *buf = malloc(k->len + 1);
	size_t i;

	for (i = 0; i < k->len; i++)
		buf[i] = c->rank == k->root ? (unsigned char)(i * 31 + 7) : 0;
	if (hvd__ring_broadcast(c, buf, k->len, k->root) != HVD_OK)
		k->bad[c->rank] = -1;
	for (i = 0; i < k->len; i++)
		if (buf[i] != (unsigned char)(i * 31 + 7))
			k->bad[c->rank]++;
	free(buf);
}

static void test_broadcast_every_root(void)
{
	static const size_t lens[] = {0, 1, 1000003, 3 * 1024 * 1024};
	int n, root, r;
	size_t li;

	for (n = 1; n <= MAXN; n++)
		for (root = 0; root < n; root++)
			for (li = 0; li < 4; li++) {
				struct bc_case k = {lens[li], root, {0}};

				run_world(n, bc_body, &k, -1);
				for (r = 0; r < n; r++)
					CHECK(k.bad[r] == 0);
			}
}

struct ag_case {
	size_t len[MAXN];
	int bad[MAXN];
};

static void ag_body(const struct hvd__comm *c, void *arg)
{
	struct ag_case *k = arg;
	size_t total = 0, off = 0, i;
	unsigned char *out;
	int r;

	for (r = 0; r < c->size; r++)
		total += k->len[r];
	out = calloc(total + 1, 1);
	for (r = 0; r < c->rank; r++)
		off += k->len[r];
	for (i = 0; i < k->len[c->rank]; i++)
		out[off + i] = (unsigned char)(c->rank * 50 + i);
	if (hvd__ring_allgatherv(c, out, k->len) != HVD_OK)
		k->bad[c->rank] = -1;
	off = 0;
	for (r = 0; r < c->size; r++) {
		for (i = 0; i < k->len[r]; i++)
			if (out[off + i] != (unsigned char)(r * 50 + i))
				k->bad[c->rank]++;
		off += k->len[r];
	}
	free(out);
}

static void test_allgather_uneven(void)
{
	struct ag_case k1 = {{3, 0, 70001, 1}, {0}};
	struct ag_case k2 = {{0, 0, 0, 0}, {0}};
	struct ag_case k3 = {{2000000, 5, 0, 0}, {0}};
	int r;

	run_world(4, ag_body, &k1, -1);
	run_world(4, ag_body, &k2, -1);
	run_world(2, ag_body, &k3, -1);
	for (r = 0; r < 4; r++)
		CHECK(k1.bad[r] == 0 && k2.bad[r] == 0);
	CHECK(k3.bad[0] == 0 && k3.bad[1] == 0);
}

/* Two groups of a world of four (group.h): the even ranks, and the odd
 * ones in reverse order. Each allreduces and allgathers within itself;
 * results[rank] says what it got. */
static void group_body(const struct hvd__comm *c, void *arg)
{
	static const int even[] = {0, 2}, odd[] = {3, 1};
	const int *members = c->rank % 2 ? odd : even;
	int *results = arg,
	    me = c->rank % 2 ? (c->rank == 3 ? 0 : 1) : c->rank / 2;
	struct hvd__comm g;
	float buf[1000];
	int32_t ranks[2];
	size_t len[2] = {sizeof(int32_t), sizeof(int32_t)}, i;
	bool ok;

	if (hvd__group_new(c, members, 2, me, &g) != HVD_OK)
		return;
	for (i = 0; i < 1000; i++)
		buf[i] = (float)(c->rank + 1) * (float)i;
	ranks[me] = c->rank;
	ok = hvd__ring_allreduce(&g, buf, 1000, HVD_FLOAT32, HVD_SUM) ==
		     HVD_OK &&
	     hvd__ring_allgatherv(&g, ranks, len) == HVD_OK;
	/* Evens: (1 + 3) i; odds: (2 + 4) i; members in group order. */
	for (i = 0; ok && i < 1000; i++)
		ok = buf[i] == (float)(c->rank % 2 ? 6 : 4) * (float)i;
	ok = ok && ranks[0] == members[0] && ranks[1] == members[1];
	results[c->rank] = ok ? 1 : -1;
	g.ops->close(g.t);
}

static void test_groups(void)
{
	int results[MAXN] = {0}, r;

	run_world(4, group_body, results, -1);
	for (r = 0; r < 4; r++)
		CHECK(results[r] == 1);
}

static void test_peer_dies(void)
{
	struct ar_case k = {.t = HVD_FLOAT32, .op = HVD_SUM, .count = 100000};
	long long t0;
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	t0 = ts.tv_sec;
	/* Rank 2 leaves right after connecting: the others get an error,
	 * not a hang. */
	run_world(3, ar_body, &k, 2);
	CHECK(k.bad[0] == -1 && k.bad[1] == -1);
	clock_gettime(CLOCK_MONOTONIC, &ts);
	CHECK(ts.tv_sec - t0 < 6);
}

/* Connections that come at once, before the rank may have begun to
 * accept: each of BURST must complete its handshake at once, where one
 * that finds the accept queue full is dropped and tries again a second
 * later (with a backlog of 1,024, 1,025 of 1,500 completed, the others
 * after 1 s). The kernel holds the backlog to net.core.somaxconn
 * (libhvd.bats lowers it). */
#define BURST 1500
static void test_listen_burst(void)
{
	struct hvd__tcp *t = NULL;
	char addr[64];
	struct sockaddr_in sa;
	struct rlimit rl;
	static struct pollfd pf[BURST];
	int i, made = 0, done = 0;
	long long end;
	long max = 0;
	FILE *f;

	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 ||
	    rl.rlim_max < 2 * BURST + 64) {
		printf("# skipped: a hard limit on open files under %d\n",
		       2 * BURST + 64);
		return;
	}
	f = fopen("/proc/sys/net/core/somaxconn", "r");
	if (f == NULL || fscanf(f, "%ld", &max) != 1 || max < BURST) {
		printf("# skipped: net.core.somaxconn under %d\n", BURST);
		if (f != NULL)
			fclose(f);
		return;
	}
	fclose(f);
	rl.rlim_cur = rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	CHECK(hvd__tcp_new(&t, "127.0.0.1", addr, sizeof(addr)) == HVD_OK);
	if (t == NULL)
		return;
	CHECK(hvd__parse_addr(addr, &sa) == HVD_OK);
	for (i = 0; i < BURST; i++) {
		pf[i].fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
		pf[i].events = POLLOUT;
		if (pf[i].fd >= 0 && (connect(pf[i].fd, (struct sockaddr *)&sa,
					      sizeof(sa)) == 0 ||
				      errno == EINPROGRESS))
			made++;
	}
	CHECK(made == BURST);
	/* Well under the 1 s a dropped handshake waits to be tried again. */
	end = hvd__now_ms() + 500;
	for (;;) {
		done = 0;
		for (i = 0; i < BURST; i++)
			done += pf[i].revents & POLLOUT ? 1 : 0;
		if (done == BURST || hvd__now_ms() >= end)
			break;
		poll(pf, BURST, 50);
	}
	if (done != BURST)
		printf("#   %d of %d connections completed within 500 ms\n",
		       done, BURST);
	CHECK(done == BURST);
	for (i = 0; i < BURST; i++)
		if (pf[i].fd >= 0)
			close(pf[i].fd);
	hvd__tcp_free(t);
}

static void test_half_conversions(void)
{
	uint32_t h;
	int bad = 0;

	/* Every finite half survives a round trip through float. */
	for (h = 0; h < 0x10000; h++) {
		uint16_t x = (uint16_t)h;
		float f = hvd__half_to_float(x);

		if ((x & 0x7c00) == 0x7c00 && (x & 0x3ff))
			continue; /* nan */
		if (hvd__float_to_half(f) != x)
			bad++;
	}
	CHECK(bad == 0);
	CHECK(hvd__half_to_float(0x3c00) == 1.0f);
	CHECK(hvd__half_to_float(0xc000) == -2.0f);
	CHECK(hvd__half_to_float(0x0001) == 0x1p-24f);
	CHECK(hvd__float_to_half(65504.0f) == 0x7bff);
	CHECK(hvd__float_to_half(65520.0f) == 0x7c00); /* rounds to inf */
	CHECK(hvd__float_to_half(1.0f + 0x1p-11f) == 0x3c00); /* tie: even */
	CHECK(hvd__float_to_half(1.0f + 0x1p-11f + 0x1p-20f) == 0x3c01);
	CHECK(isnan(hvd__half_to_float(hvd__float_to_half(NAN))));
	CHECK(hvd__float_to_bf16(1.0f) == 0x3f80);
	CHECK(hvd__bf16_to_float(0x3f80) == 1.0f);
	CHECK(hvd__float_to_bf16(1.0f + 0x1p-8f) == 0x3f80); /* tie: even */
	CHECK(hvd__float_to_bf16(1.0f + 0x1p-8f + 0x1p-12f) == 0x3f81);
	CHECK(isnan(hvd__bf16_to_float(hvd__float_to_bf16(NAN))));
}

/* One float16 result as the scalar conversions give it: the op in
 * float32, rounded once (reduce.c's KERNEL16). */
static uint16_t half_op(uint16_t a, uint16_t b, enum hvd_op op)
{
	float x = hvd__half_to_float(a), y = hvd__half_to_float(b), r;

	r = op == HVD_SUM	? x + y
	    : op == HVD_PRODUCT ? x * y
	    : op == HVD_MIN	? (y < x ? y : x)
				: (y > x ? y : x);
	return hvd__float_to_half(r);
}

static bool half_nan(uint16_t h)
{
	return (h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0;
}

/* Whether float16 got is want's bits; of two NaN operands, which one's
 * payload a sum or product keeps is the compiler's choice (it may swap
 * them), in the scalar loop as in the vector one: any NaN for a NaN. */
static bool half_same(uint16_t got, uint16_t want)
{
	return got == want || (half_nan(got) && half_nan(want));
}

/* The float16 kernels and scaling (the CPU's F16C conversions, where it
 * has them) give the scalar conversions' bits: random bits (infinities,
 * NaNs, subnormals among them), every op, a length with a tail after the
 * last 8, aligned and not. */
static void test_half_kernels(void)
{
	enum { N = 4099 };
	static const enum hvd_op ops[] = {HVD_SUM, HVD_PRODUCT, HVD_MIN,
					  HVD_MAX};
	static uint16_t a[N + 1], b[N + 1], d[N + 1];
	uint32_t seed = 12345;
	size_t i, k, off;
	int bad = 0;

	for (i = 0; i <= N; i++) {
		seed = seed * 1103515245u + 12345u;
		a[i] = (uint16_t)(seed >> 9);
		seed = seed * 1103515245u + 12345u;
		b[i] = (uint16_t)(seed >> 9);
	}
	a[0] = 0x7c00; /* inf + -inf: NaN */
	b[0] = 0xfc00;
	a[1] = 0x7bff; /* 65504 + 65504: overflow to inf */
	b[1] = 0x7bff;
	a[2] = 0x0001; /* the least subnormals */
	b[2] = 0x8002;
	for (off = 0; off < 2; off++)
		for (k = 0; k < sizeof(ops) / sizeof(ops[0]); k++) {
			memcpy(d, a, sizeof(d));
			hvd__reduce(d + off, b + off, N, HVD_FLOAT16, ops[k]);
			for (i = off; i < N + off; i++)
				bad += !half_same(d[i],
						  half_op(a[i], b[i], ops[k]));
		}
	CHECK(bad == 0);
	memcpy(d, a, sizeof(d));
	hvd__scale(d + 1, N, HVD_FLOAT16, 0.1);
	for (i = 1; i <= N; i++)
		bad += !half_same(d[i],
				  hvd__float_to_half(hvd__half_to_float(a[i]) *
						     (float)0.1));
	CHECK(bad == 0);
}

/* Adasum's float16 kernels (F16C's, where the CPU has it) give what the
 * float32 kernels give for the same values (float16 to float32 is
 * exact): the same dot products to the bit, and the same combination
 * rounded to float16. Finite values, lengths with tails, unaligned. */
static void test_half_adasum_kernels(void)
{
	enum { N = 4103 };
	static uint16_t x16[N + 1], y16[N + 1];
	static float x32[N + 1], y32[N + 1];
	uint32_t seed = 99;
	size_t i, off, n;
	int bad = 0;

	for (i = 0; i <= N; i++) {
		seed = seed * 1103515245u + 12345u;
		x16[i] = (uint16_t)((seed >> 9) & 0xbbff); /* finite */
		seed = seed * 1103515245u + 12345u;
		y16[i] = (uint16_t)((seed >> 9) & 0xbbff);
	}
	for (off = 0; off < 2; off++)
		for (n = N - 7; n <= N; n += 3) {
			double d16[3] = {0}, d32[3] = {0};

			for (i = 0; i <= N; i++) {
				x32[i] = hvd__half_to_float(x16[i]);
				y32[i] = hvd__half_to_float(y16[i]);
			}
			hvd__dots(x16 + off, y16 + off, n, HVD_FLOAT16, d16);
			hvd__dots(x32 + off, y32 + off, n, HVD_FLOAT32, d32);
			bad += memcmp(d16, d32, sizeof(d16)) != 0;
		}
	CHECK(bad == 0);
	for (i = 0; i <= N; i++) {
		x32[i] = hvd__half_to_float(x16[i]);
		y32[i] = hvd__half_to_float(y16[i]);
	}
	hvd__axpby(x16 + 1, y16 + 1, N, HVD_FLOAT16, 0.7, -1.3);
	hvd__axpby(x32 + 1, y32 + 1, N, HVD_FLOAT32, 0.7, -1.3);
	for (i = 1; i <= N; i++)
		bad += !half_same(x16[i], hvd__float_to_half(x32[i]));
	CHECK(bad == 0);
}

/* bfloat16's scaling (its own vectorized loop) as the conversions give
 * it, for every bfloat16 value; a NaN for a NaN. */
static void test_bf16_scaling(void)
{
	static uint16_t v[1 << 16];
	uint32_t i;
	int bad = 0;

	for (i = 0; i < 1u << 16; i++)
		v[i] = (uint16_t)i;
	hvd__scale(v, 1u << 16, HVD_BFLOAT16, 1.0 / 3.0);
	for (i = 0; i < 1u << 16; i++) {
		uint16_t want = hvd__float_to_bf16(
			hvd__bf16_to_float((uint16_t)i) * (float)(1.0 / 3.0));

		bad += v[i] != want && !(isnan(hvd__bf16_to_float(v[i])) &&
					 isnan(hvd__bf16_to_float(want)));
	}
	CHECK(bad == 0);
}

/* An integer average's division is C's, truncated toward zero, whatever
 * way it is computed (reduce.c: through float or double): every 8- and
 * 16-bit value, int32's edges and random ones, by divisors from 2 to
 * 2^24 - 1. */
static void test_integer_division(void)
{
	static const int divisors[] = {2,    3,	    5,	     7,
				       10,   64,    100,     1000,
				       4096, 65535, 1 << 20, (1 << 24) - 1};
	enum { N = 1 << 16 };
	static int16_t i16[N];
	static int32_t i32[N];
	static int8_t i8[256];
	static uint8_t u8[256];
	uint32_t seed;
	size_t k, i;
	int bad = 0;

	for (k = 0; k < sizeof(divisors) / sizeof(divisors[0]); k++) {
		int d = divisors[k];

		for (i = 0; i < 256; i++) {
			i8[i] = (int8_t)(i - 128);
			u8[i] = (uint8_t)i;
		}
		hvd__divide(i8, 256, HVD_INT8, d);
		hvd__divide(u8, 256, HVD_UINT8, d);
		for (i = 0; i < 256; i++)
			bad += i8[i] != (int)(i - 128) / d ||
			       u8[i] != (int)i / d;
		for (i = 0; i < N; i++)
			i16[i] = (int16_t)((int)i - 32768);
		hvd__divide(i16, N, HVD_INT16, d);
		for (i = 0; i < N; i++)
			bad += i16[i] != ((int)i - 32768) / d;
		seed = 7;
		for (i = 0; i < N; i++) {
			seed = seed * 1103515245u + 12345u;
			i32[i] = i < 4 ? (int32_t[]){INT32_MIN, INT32_MAX,
						     INT32_MIN + 1, -1}[i]
				       : (int32_t)seed;
		}
		hvd__divide(i32, N, HVD_INT32, d);
		seed = 7;
		for (i = 0; i < N; i++) {
			int32_t v;

			seed = seed * 1103515245u + 12345u;
			v = i < 4 ? (int32_t[]){INT32_MIN, INT32_MAX,
						INT32_MIN + 1, -1}[i]
				  : (int32_t)seed;
			bad += i32[i] != v / d;
		}
	}
	CHECK(bad == 0);
}

/* Integers scale in float64, truncated toward zero and saturated. */
static void test_integer_scaling(void)
{
	int8_t i8[4] = {100, -100, 7, -7};
	uint8_t u8[3] = {200, 3, 0};
	int32_t i32[3] = {INT32_MAX, -5, 5};
	int64_t i64[2] = {INT64_MAX, 3};

	hvd__scale(i8, 4, HVD_INT8, 0.5);
	CHECK(i8[0] == 50 && i8[1] == -50 && i8[2] == 3 && i8[3] == -3);
	hvd__scale(i8, 4, HVD_INT8, 10.0);
	CHECK(i8[0] == 127 && i8[1] == -128 && i8[2] == 30 && i8[3] == -30);
	hvd__scale(u8, 3, HVD_UINT8, 1.5);
	CHECK(u8[0] == 255 && u8[1] == 4 && u8[2] == 0);
	hvd__scale(u8, 3, HVD_UINT8, -1.0);
	CHECK(u8[0] == 0 && u8[1] == 0);
	hvd__scale(i32, 3, HVD_INT32, 2.0);
	CHECK(i32[0] == INT32_MAX && i32[1] == -10 && i32[2] == 10);
	hvd__scale(i32, 3, HVD_INT32, NAN);
	CHECK(i32[0] == 0 && i32[1] == 0);
	hvd__scale(i64, 2, HVD_INT64, 2.0);
	CHECK(i64[0] == INT64_MAX && i64[1] == 6);
}

/* A bool reduces as a logical or (sum, max) or and (min, product): any
 * byte but 0 is true, and bytes of 0 and 1 stay 0 and 1. Engines
 * without a bool (MPI, NCCL) reduce it as bytes by hvd__op_as's op. */
static void test_bool(void)
{
	uint8_t a[4] = {0, 1, 0, 2}, b[4] = {0, 0, 1, 1}, c[4];

	CHECK(hvd__dtype_size(HVD_BOOL) == 1 && hvd__dtype_valid(HVD_BOOL) &&
	      !hvd__dtype_valid(HVD_BOOL + 1) && !hvd__dtype_float(HVD_BOOL) &&
	      strcmp(hvd__dtype_name(HVD_BOOL), "bool") == 0);
	memcpy(c, a, 4);
	hvd__reduce(c, b, 4, HVD_BOOL, HVD_SUM);
	CHECK(c[0] == 0 && c[1] == 1 && c[2] == 1 && c[3] != 0);
	memcpy(c, a, 4);
	hvd__reduce(c, b, 4, HVD_BOOL, HVD_PRODUCT);
	CHECK(c[0] == 0 && c[1] == 0 && c[2] == 0 && c[3] != 0);
	CHECK(hvd__op_as(HVD_BOOL, HVD_SUM) == HVD_MAX &&
	      hvd__op_as(HVD_BOOL, HVD_PRODUCT) == HVD_MIN &&
	      hvd__op_as(HVD_BOOL, HVD_MIN) == HVD_MIN &&
	      hvd__op_as(HVD_BOOL, HVD_MAX) == HVD_MAX &&
	      hvd__op_as(HVD_UINT8, HVD_SUM) == HVD_SUM &&
	      hvd__op_as(HVD_INT32, HVD_PRODUCT) == HVD_PRODUCT);
}

/* A float32 average is the quotient rounded once, as Horovod's postscale
 * (1/n in float64) gives it: 42 / 7 is 6, where a float factor of 1/7
 * gives the float above; a float32 scaling factor applies in float64, as
 * Horovod's does. */
static void test_float_average_rounds_once(void)
{
	int n, sum, bad = 0;
	float v[3] = {42, 0.1f, 3};

	for (n = 1; n <= 16; n++)
		for (sum = -1000; sum <= 3000; sum++) {
			float x = (float)sum;

			hvd__divide(&x, 1, HVD_FLOAT32, n);
			bad += x != (float)((double)sum / n) ||
			       x != (float)((double)sum * (1.0 / n));
		}
	CHECK(bad == 0);
	hvd__scale(v, 3, HVD_FLOAT32, 1.0 / 7);
	CHECK(v[0] == 6 && v[1] == (float)(0.1f * (1.0 / 7)) &&
	      v[2] == (float)(3 * (1.0 / 7)));
}

/* A transport that moves nothing and notes whom its rank receives from:
 * each rank's steps of an allreduce alone, without its peers. */
#define SOURCES_N 40
static bool heard[SOURCES_N];

static int note_sendrecv(void *t, int to, const void *sbuf, size_t slen,
			 int from, void *rbuf, size_t rlen,
			 hvd__recv_progress progress, void *arg)
{
	(void)t, (void)to, (void)sbuf, (void)slen;
	if (rlen > 0) {
		heard[from] = true;
		memset(rbuf, 0, rlen);
		if (progress != NULL)
			progress(arg, rlen);
	}
	return HVD_OK;
}

/* hvd__ring_sources names exactly the ranks an allreduce receives from,
 * small (recursive doubling) and large (the ring), on every rank of 2 to
 * 40. */
static void test_sources(void)
{
	static const struct hvd__transport_ops ops = {
		.name = "note", .sendrecv = note_sendrecv};
	static uint8_t buf[SMALL_PLUS];
	int src[HVD__RING_SOURCES_MAX], n, r, k, i, bad = 0;

	for (n = 2; n <= SOURCES_N; n++)
		for (r = 0; r < n; r++) {
			struct hvd__comm c = {r, n, &ops, NULL};
			bool want[SOURCES_N] = {false};

			memset(heard, 0, sizeof(heard));
			if (hvd__ring_allreduce(&c, buf, 16, HVD_UINT8,
						HVD_MIN) != HVD_OK ||
			    hvd__ring_allreduce(&c, buf, sizeof(buf), HVD_UINT8,
						HVD_MIN) != HVD_OK)
				bad++;
			k = hvd__ring_sources(r, n, src);
			for (i = 0; i < k; i++)
				want[src[i]] = true;
			for (i = 0; i < n; i++)
				bad += want[i] != heard[i];
		}
	CHECK(bad == 0);
	CHECK(hvd__ring_sources(0, 1, src) == 0);
}

/* Adasum: each rank's tensors, the result every rank got, its hash. */
struct ada_case {
	enum hvd_dtype t;
	const size_t *counts;
	size_t n;
	int kind;	       /* ADA_MIXED, ADA_ORTHOGONAL, ADA_PARALLEL */
	size_t slot;	       /* 0: over the comm; else through a segment of
				  slots of this many bytes */
	int hosts;	       /* with slot: the ranks as this many hosts, host
				  h's ranks h * L ... h * L + L - 1 (0: 1) */
	bool average;	       /* with slot: each host's ranks averaged, the
				  hosts combined (GPU Adasum's way: the
				  average of local rank l's part of the
				  fused tensors, the hosts' Adasum of it by
				  hvd__adasum_hosts, the parts gathered) */
	bool apart;	       /* with average: the host's sums over a group
				  of its ranks, not the segment (GPU Adasum
				  without one: NCCL's, played by the ring) */
	char name[64];	       /* the segment's */
	double err[WORLD_MAX]; /* per rank: worst error, relative to the
				  tensor's largest element */
	uint64_t hash[WORLD_MAX];
	int rc[WORLD_MAX];
};

enum { ADA_MIXED, ADA_ORTHOGONAL, ADA_PARALLEL };

/* Rank r's element i of tensor j, of n ranks: values in [-1, 1] that
 * 16-bit floats hold exactly; orthogonal: each rank's elements apart;
 * parallel: every rank a multiple of one vector (some negative, and no
 * block's average 0: Adasum adds a zero vector as nothing). */
static double ada_value(int kind, int r, int n, size_t j, size_t i)
{
	size_t h = (i * 2654435761u + j * 40503u + (size_t)r * 97u) % 257;
	double u = ((double)((i * 7 + j * 3) % 33) - 16) / 16;

	if (kind == ADA_ORTHOGONAL)
		return (int)(i % (size_t)n) == r ? u + 0.0625 : 0;
	if (kind == ADA_PARALLEL)
		return u * (r % 3 == 2 ? -1 : 1) * (r + 1);
	return ((double)h - 128) / 128;
}

/* The serial reference in float64, tensor by tensor (ref_adasum; with
 * average, of each host's average; through segments of several hosts,
 * each host's tree, then the hosts'); the result into out. */
static void ada_reference(const struct ada_case *k, int n, size_t j,
			  double *out)
{
	size_t m = k->counts[j], i;
	double *v = calloc((m > 0 ? m : 1) * (size_t)n, sizeof(*v));
	int H = k->hosts > 1 ? k->hosts : 1, L = k->average ? n / H : 1, r, h;

	for (r = 0; r < n; r++)
		for (i = 0; i < m; i++)
			v[(size_t)(r / L) * m + i] +=
				ada_value(k->kind, r, n, j, i) / L;
	if (k->slot > 0 && !k->average && H > 1) {
		for (h = 0; h < H; h++) {
			ref_adasum(n / H, m, v + (size_t)(h * (n / H)) * m);
			memmove(v + (size_t)h * m,
				v + (size_t)(h * (n / H)) * m, m * sizeof(*v));
		}
		n = H;
	}
	ref_adasum(n / L, m, v);
	memcpy(out, v, m * sizeof(*v));
	free(v);
}

/* The ring over a group of a host's ranks, summing Adasum's sums. */
static int ada_group_sum(void *arg, double *v, size_t count)
{
	return hvd__ring_allreduce(arg, v, count, HVD_FLOAT64, HVD_SUM);
}

/* hvd__adasum_hosts, the host's sums through segment s or (k->apart)
 * over a group of the host's ranks. */
static int ada_over_hosts(const struct hvd__comm *c, const struct ada_case *k,
			  struct hvd__shm *s, const struct hvd__comm *cross,
			  char *slice, char *scratch, size_t lo, size_t count)
{
	int L = hvd__shm_size(s), l = hvd__shm_rank(s), members[WORLD_MAX], p;
	struct hvd__comm host = {0};
	struct hvd__adasum_host how = {.shm = s, .timeout_ms = 5000};
	int rc = HVD_OK;

	if (k->apart) {
		for (p = 0; p < L; p++)
			members[p] = c->rank - l + p;
		rc = hvd__group_new(c, members, L, l, &host);
		how = (struct hvd__adasum_host){.sum = ada_group_sum,
						.arg = &host};
	}
	if (rc == HVD_OK)
		rc = hvd__adasum_hosts(&how, cross, slice, scratch, lo, count,
				       k->counts, k->n, k->t, NULL);
	if (host.ops != NULL)
		host.ops->close(host.t);
	return rc;
}

/* GPU Adasum's way, the GPU's part played here: local rank l takes
 * elements [l * P, l * P + P) of its host's average (P: the total
 * rounded up to a multiple of the L local ranks, divided by L), as NCCL's
 * reduce-scatter leaves them, into its buffer; the hosts combine them
 * (hvd__adasum_hosts), and the segment gathers the parts, as NCCL's
 * allgather does. */
static int ada_gpu_way(const struct hvd__comm *c, const struct ada_case *k,
		       struct hvd__shm *s, const struct hvd__comm *cross,
		       char *buf, size_t total, char *scratch)
{
	int L = hvd__shm_size(s), l = hvd__shm_rank(s), base = c->rank - l, p;
	size_t per = (total + (size_t)L - 1) / (size_t)L, lo, count, i, j, at;
	size_t len[WORLD_MAX], es = hvd__dtype_size(k->t);
	int rc = HVD_OK;

	for (p = 0; p < L; p++) {
		lo = per * (size_t)p;
		len[p] = (lo < total ? (total - lo < per ? total - lo : per)
				     : 0);
	}
	lo = per * (size_t)l;
	count = len[l];
	for (j = 0, at = 0; j < k->n; at += k->counts[j++])
		for (i = 0; i < k->counts[j]; i++) {
			double v = 0;

			if (at + i < lo || at + i >= lo + count)
				continue;
			for (p = 0; p < L; p++)
				v += ada_value(k->kind, base + p, c->size, j,
					       i);
			store(buf, at + i, k->t, v / L);
		}
	if (cross != NULL)
		rc = ada_over_hosts(c, k, s, cross, buf + lo * es, scratch, lo,
				    count);
	for (p = 0; p < L; p++)
		len[p] *= es;
	return rc == HVD_OK ? hvd__shm_allgatherv(s, buf, len, 5000) : rc;
}

/* ada_body's Adasum through segments: one a host, of k->hosts, and each
 * local rank's group across the hosts. */
static int ada_shm(const struct hvd__comm *c, const struct ada_case *k,
		   char *buf, size_t total, char **scratch)
{
	int H = k->hosts > 1 ? k->hosts : 1, L = c->size / H;
	int h = c->rank / L, l = c->rank % L, peers[WORLD_MAX], i, rc;
	struct hvd__comm cross = {0};
	struct hvd__shm *s = NULL;
	char name[96];

	snprintf(name, sizeof(name), "%s-%d", k->name, h);
	for (i = 0; i < H; i++)
		peers[i] = i * L + l;
	rc = hvd__shm_open(&s, l, L, name, k->slot, 5000);
	if (rc == HVD_OK && H > 1)
		rc = hvd__group_new(c, peers, H, h, &cross);
	*scratch =
		malloc((rc == HVD_OK ? hvd__adasum_shm_scratch(s, total) : 0) *
			       hvd__dtype_size(k->t) +
		       1);
	if (rc == HVD_OK && k->average)
		rc = ada_gpu_way(c, k, s, H > 1 ? &cross : NULL, buf, total,
				 *scratch);
	else if (rc == HVD_OK)
		rc = hvd__adasum_shm(s, H > 1 ? &cross : NULL, buf, *scratch,
				     k->counts, k->n, k->t, 5000, NULL);
	if (cross.ops != NULL)
		cross.ops->close(cross.t);
	hvd__shm_close(s);
	return rc;
}

static void ada_body(const struct hvd__comm *c, void *arg)
{
	struct ada_case *k = arg;
	size_t es = hvd__dtype_size(k->t), total = 0, at, i, j;
	char *buf, *scratch;
	double worst = 0;

	for (j = 0; j < k->n; j++)
		total += k->counts[j];
	buf = malloc(total * es + 1);
	for (j = 0, at = 0; j < k->n; at += k->counts[j++])
		for (i = 0; i < k->counts[j]; i++)
			store(buf, at + i, k->t,
			      ada_value(k->kind, c->rank, c->size, j, i));
	if (k->slot > 0) {
		k->rc[c->rank] = ada_shm(c, k, buf, total, &scratch);
	} else {
		scratch = malloc((total + 1) / 2 * es + 1);
		k->rc[c->rank] = hvd__adasum(c, buf, scratch, k->counts, k->n,
					     k->t, NULL);
	}
	k->hash[c->rank] = fnv(buf, total * es);
	/* A refused case has no reference. */
	for (j = 0, at = 0; k->rc[c->rank] == HVD_OK && j < k->n;
	     at += k->counts[j++]) {
		double *want = malloc((k->counts[j] + 1) * sizeof(*want));
		double top = 0, diff = 0;

		ada_reference(k, c->size, j, want);
		for (i = 0; i < k->counts[j]; i++) {
			top = fmax(top, fabs(want[i]));
			diff = fmax(diff,
				    fabs(load(buf, at + i, k->t) - want[i]));
		}
		if (top > 0)
			worst = fmax(worst, diff / top);
		free(want);
	}
	k->err[c->rank] = worst;
	free(scratch);
	free(buf);
}

/* The worst error of any rank, after checking every rank's status and
 * that every rank got the same bits. */
static double ada_run(int n, struct ada_case *k)
{
	static int runs;
	double worst = 0;
	int r;

	snprintf(k->name, sizeof(k->name), "hvd-test-ada-%d-%d", (int)getpid(),
		 runs++);
	run_world(n, ada_body, k, -1);
	for (r = 0; r < n; r++) {
		CHECK(k->rc[r] == HVD_OK);
		CHECK(k->hash[r] == k->hash[0]);
		worst = fmax(worst, k->err[r]);
	}
	return worst;
}

/* On 1, 2, 4 and 8 ranks, every float dtype, tensors of every size
 * (empty ones, one element, more than the ranks, fewer): within a few
 * roundings of the float64 reference, over the comm and through a
 * segment whose slots are far smaller than the buffer (at 512 bytes,
 * 8 ranks' sums of a level take two rounds), on one host and as 2 or 4
 * hosts (down to one rank a host). */
static void test_adasum_reference(void)
{
	static const size_t counts[] = {0, 1, 3, 1000, 7, 0, 100003, 2};
	static const enum hvd_dtype types[] = {HVD_FLOAT32, HVD_FLOAT64,
					       HVD_FLOAT16, HVD_BFLOAT16};
	static const double tol[] = {1e-6, 1e-13, 4e-3, 3e-2};
	static const struct {
		size_t slot;
		int hosts;
	} ways[] = {{0, 1},	{512, 1}, {65536, 1},
		    {65536, 2}, {512, 2}, {4096, 4}};
	size_t z;
	int n, t;

	for (z = 0; z < sizeof(ways) / sizeof(*ways); z++)
		for (n = ways[z].hosts; n <= WORLD_MAX; n *= 2)
			for (t = 0; t < 4; t++) {
				struct ada_case k = {.t = types[t],
						     .counts = counts,
						     .n = 8,
						     .slot = ways[z].slot,
						     .hosts = ways[z].hosts};
				double e = ada_run(n, &k);

				if (e > tol[t]) {
					printf("# n=%d %s slot %zu, %d hosts: off by %g of the largest\n",
					       n, hvd__dtype_name(types[t]),
					       ways[z].slot, ways[z].hosts, e);
					CHECK(0);
				}
			}
}

/* GPU Adasum's way (Horovod's): each host's ranks averaged, any number
 * of them (3 too), and only the hosts combined by Adasum, each host's
 * sums through its segment or over a group of its ranks; one host: the
 * average. */
static void test_adasum_host_average(void)
{
	static const size_t counts[] = {1, 1000, 7, 30011, 0};
	static const struct {
		int n, hosts;
	} ways[] = {{2, 1}, {3, 1}, {2, 2}, {4, 2}, {6, 2}, {8, 4}, {8, 2}};
	static const enum hvd_dtype types[] = {HVD_FLOAT32, HVD_FLOAT16};
	static const double tol[] = {1e-6, 4e-3};
	size_t z;
	int t, a;

	for (z = 0; z < sizeof(ways) / sizeof(*ways); z++)
		for (t = 0; t < 2; t++) {
			for (a = 0; a < 2; a++) {
				struct ada_case k = {.t = types[t],
						     .counts = counts,
						     .n = 5,
						     .slot = 4096,
						     .hosts = ways[z].hosts,
						     .average = true,
						     .apart = a == 1};
				double e = ada_run(ways[z].n, &k);

				if (e > tol[t]) {
					printf("# n=%d %s, %d hosts, averaged, sums %s: off by %g of the largest\n",
					       ways[z].n,
					       hvd__dtype_name(types[t]),
					       ways[z].hosts,
					       a ? "apart" : "by segment", e);
					CHECK(0);
				}
			}
		}
}

/* What makes Adasum: orthogonal gradients add up (the sum, exactly: every
 * dot product is 0), parallel ones average. */
static void test_adasum_orthogonal_and_parallel(void)
{
	static const size_t counts[] = {40, 5, 4099};
	int n;

	for (n = 2; n <= WORLD_MAX; n *= 2) {
		struct ada_case o = {.t = HVD_FLOAT64,
				     .counts = counts,
				     .n = 3,
				     .kind = ADA_ORTHOGONAL};
		struct ada_case p = {.t = HVD_FLOAT64,
				     .counts = counts,
				     .n = 3,
				     .kind = ADA_PARALLEL};
		/* And through a segment of 512-byte slots, on one host and
		 * as two. */
		struct ada_case os = o, ps = p, oh, ph;
		double *sum, *avg, *ref, err = 0;
		size_t j, i;
		int r;

		os.slot = ps.slot = 512;
		oh = os;
		ph = ps;
		oh.hosts = ph.hosts = 2;
		CHECK(ada_run(n, &o) == 0);
		CHECK(ada_run(n, &p) < 1e-13);
		CHECK(ada_run(n, &os) == 0);
		CHECK(ada_run(n, &ps) < 1e-13);
		CHECK(ada_run(n, &oh) == 0);
		CHECK(ada_run(n, &ph) < 1e-13);
		/* The reference itself is the sum and the average. */
		sum = calloc(4099, sizeof(*sum));
		avg = calloc(4099, sizeof(*avg));
		ref = malloc(4099 * sizeof(*ref));
		for (j = 0; j < 3; j++) {
			memset(sum, 0, 4099 * sizeof(*sum));
			memset(avg, 0, 4099 * sizeof(*avg));
			for (r = 0; r < n; r++)
				for (i = 0; i < counts[j]; i++) {
					sum[i] += ada_value(ADA_ORTHOGONAL, r,
							    n, j, i);
					avg[i] += ada_value(ADA_PARALLEL, r, n,
							    j, i) /
						  n;
				}
			ada_reference(&o, n, j, ref);
			for (i = 0; i < counts[j]; i++)
				err = fmax(err, fabs(ref[i] - sum[i]));
			ada_reference(&p, n, j, ref);
			for (i = 0; i < counts[j]; i++)
				err = fmax(err, fabs(ref[i] - avg[i]));
		}
		CHECK(err < 1e-12);
		free(sum);
		free(avg);
		free(ref);
	}
}

/* Any number of ranks (Horovod refuses those that are not a power of
 * two): the ranks past the largest power of two fold in first; over the
 * comm, through a segment on one host, as hosts of several ranks (each
 * host's tree, then the hosts'), hosts of one rank, and GPU Adasum's way
 * over 3 hosts. Orthogonal gradients still add up exactly. Slots too
 * small for the segment's alltoall: refused on every rank. */
static void test_adasum_any_number_of_ranks(void)
{
	static const size_t counts[] = {0, 1, 3, 1000, 7, 0, 100003, 2};
	static const size_t few[] = {40, 5, 4099};
	static const enum hvd_dtype types[] = {HVD_FLOAT32, HVD_FLOAT16};
	static const double tol[] = {1e-6, 4e-3};
	static const struct {
		int n, hosts;
		size_t slot;
		bool average;
	} ways[] = {
		{3, 1, 0, false},    {5, 1, 0, false},	  {6, 1, 0, false},
		{7, 1, 0, false},    {3, 1, 512, false},  {5, 1, 65536, false},
		{6, 1, 4096, false}, {7, 1, 512, false},  {6, 2, 4096, false},
		{6, 3, 512, false},  {3, 3, 4096, false}, {5, 5, 65536, false},
		{6, 3, 4096, true},  {3, 3, 4096, true}};
	static const size_t ten[] = {10};
	struct ada_case k = {.t = HVD_FLOAT32, .counts = ten, .n = 1};
	size_t z;
	int t, r;

	for (z = 0; z < sizeof(ways) / sizeof(*ways); z++) {
		struct ada_case o = {.t = HVD_FLOAT64,
				     .counts = few,
				     .n = 3,
				     .kind = ADA_ORTHOGONAL,
				     .slot = ways[z].slot,
				     .hosts = ways[z].hosts};

		for (t = 0; t < 2; t++) {
			struct ada_case c = {.t = types[t],
					     .counts = counts,
					     .n = 8,
					     .slot = ways[z].slot,
					     .hosts = ways[z].hosts,
					     .average = ways[z].average};
			double e = ada_run(ways[z].n, &c);

			if (e > tol[t]) {
				printf("# n=%d %s slot %zu, %d hosts%s: off by %g of the largest\n",
				       ways[z].n, hvd__dtype_name(types[t]),
				       ways[z].slot, ways[z].hosts,
				       ways[z].average ? ", averaged" : "", e);
				CHECK(0);
			}
		}
		if (!ways[z].average)
			CHECK(ada_run(ways[z].n, &o) == 0);
	}
	k.slot = 128;
	snprintf(k.name, sizeof(k.name), "hvd-test-ada-%d-4", (int)getpid());
	run_world(4, ada_body, &k, -1);
	for (r = 0; r < 4; r++)
		CHECK(k.rc[r] == HVD_EINVAL);
}

int main(void)
{
	setenv("HOROVOD_LOG_LEVEL", "fatal", 1);
	RUN(test_sources);
	RUN(test_half_conversions);
	RUN(test_half_kernels);
	RUN(test_bf16_scaling);
	RUN(test_half_adasum_kernels);
	RUN(test_integer_division);
	RUN(test_integer_scaling);
	RUN(test_bool);
	RUN(test_float_average_rounds_once);
	RUN(test_allreduce_every_dtype_and_op);
	RUN(test_allreduce_several_mib);
	RUN(test_allreduce_in_pieces);
	RUN(test_broadcast_every_root);
	RUN(test_allgather_uneven);
	RUN(test_groups);
	RUN(test_adasum_reference);
	RUN(test_adasum_orthogonal_and_parallel);
	RUN(test_adasum_host_average);
	RUN(test_adasum_any_number_of_ranks);
	RUN(test_peer_dies);
	RUN(test_listen_burst);
	return tap_done();
}
