/* hvd_selftest.c: libhvd's collectives checked from inside a job started
 * by hvdrun. `hvd_selftest MODE`:
 *   all       every dtype and op, counts 0, 1, a prime and several MiB,
 *             in place and not; broadcast from every root; allgather of
 *             uneven counts; a barrier
 *   threads   many tensors in flight at once from several threads
 *   fusion    many small tensors submitted at once (run with a timeline)
 *   mismatch  ranks that disagree on count, dtype, op, root or type
 *   kill      rank 1 kills itself mid-allreduce; the others report how
 *             long they took to see an error
 *   stall     only rank 0 submits a tensor
 *   quiet [S]  an allreduce, S seconds (4) of nothing, another
 *   gpu       the checks of `all` (and fusion, and a CPU/GPU
 *             disagreement) on buffers in GPU memory, over NCCL; exits
 *             77 after one line "skip: REASON" where there is no GPU
 *   nogpu     the GPU collectives refuse with HVD_ENOTSUP and say why;
 *             the CPU ones go on
 *   gpuadasum Adasum of GPU tensors alone (gpu checks it too): each
 *             host's ranks average, the hosts combine
 *   more      the newer collectives: alltoall (uneven counts, zeros),
 *             reducescatter (every dtype and op, counts below the ranks),
 *             scaled allreduce, int16, Adasum, checked against a serial
 *             reference
 *   groups    grouped allreduces, allgathers and reducescatters from
 *             several threads at once
 *   join      rank r runs r+2 steps then joins; the others' averages
 *             divide by the ranks that gave data; join returns the last
 *   gpujoin   join with GPU collectives: the joined ranks' zeros in
 *             GPU memory, averages over the ranks that gave data
 *   mismatch2 disagreements on the newer collectives (counts, rows,
 *             factors, group membership, a joined root): an error on
 *             every rank
 *   killa2a   rank 1 kills itself mid-alltoall
 *   killgpu [adasum]  rank 1 kills itself while GPU allreduces (op
 *             Adasum: each host's average by NCCL, the hosts' Adasum
 *             over TCP) are in flight
 *   resets [N [KIB]]  N times (100) hvd_shutdown() and hvd_init() and an
 *             allreduce after each: in an elastic job (hvdrun --min-np)
 *             into the next generation, else with the same rank and
 *             size; descriptors and threads the same after the 10th as
 *             after the last, memory (VmRSS) grown by at most KIB (0:
 *             not checked)
 *   gpuresets [N [KIB]]  the same, with an allreduce on the GPU after
 *             each hvd_init (the GPU engine set up and torn down each time)
 *   steps [N]  N steps (300) of 12 named allreduces of 1 KiB to 1 MiB
 *             and an allgather of uneven blocks, submitted at once and
 *             checked, as training steps are (run
 *             with --autotune: every setting the autotuner tries gives the
 *             same results)
 *   gpusteps [N]  the allreduces on the GPU, each tensor still being copied
 *             there (on the default stream) when it is submitted
 * Prints "rank R: ok" and exits 0, or names what went wrong and exits 1. */
#include <dirent.h>
#include <hvd.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>
#if HVD_NCCL
#include <cuda_runtime.h>
#endif

#include "../../unit/ref_reduce.h"

static int failures;

#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("rank %d: FAIL: ", hvd_rank());                 \
			printf(__VA_ARGS__);                                   \
			printf("\n");                                          \
			failures++;                                            \
		}                                                              \
	} while (0)

#define NDTYPE 10
static const size_t esize[NDTYPE] = {1, 1, 4, 8, 2, 2, 4, 8, 2, 1};
static const char *const dname[NDTYPE] = {
	"uint8",    "int8",    "int32",	  "int64", "float16",
	"bfloat16", "float32", "float64", "int16", "bool"};

/* Exact in every dtype for up to 4 ranks. */
static double value(int r, size_t i, int op)
{
	static const double pv[] = {1, 2, -1, -2, 1, 1, 2};
	size_t k = i * 7 + (size_t)r * 13;

	if (op == HVD_PRODUCT)
		return pv[k % 7];
	return (double)((long)(k % 17) - 8);
}

static double uvalue(int r, size_t i, int op, int t)
{
	double v = value(r, i, op);

	if (t == HVD_BOOL) /* or and and both come out either way */
		return (double)((i * 7 + (size_t)r * 13) % 5 != 0);
	if (t == HVD_UINT8)
		return op == HVD_PRODUCT ? (fabs(v) < 1.5 ? 1 : 2) : v + 8;
	return v;
}

static uint16_t to_half(float f)
{
	/* Values here are small integers and halves: exact in float16. */
	uint32_t b;
	int e;

	memcpy(&b, &f, 4);
	if ((b & 0x7fffffff) == 0)
		return (uint16_t)(b >> 16);
	e = (int)((b >> 23) & 0xff) - 112;
	return (uint16_t)(((b >> 16) & 0x8000) | ((uint32_t)e << 10) |
			  ((b & 0x7fffff) >> 13));
}

static float from_half(uint16_t h)
{
	uint32_t b;
	float f;
	int e = (h >> 10) & 0x1f;

	if ((h & 0x7fff) == 0)
		b = (uint32_t)(h & 0x8000) << 16;
	else
		b = ((uint32_t)(h & 0x8000) << 16) |
		    ((uint32_t)(e + 112) << 23) | ((uint32_t)(h & 0x3ff) << 13);
	memcpy(&f, &b, 4);
	return f;
}

static void put(void *buf, size_t i, int t, double v)
{
	float f = (float)v;
	uint32_t b;

	switch (t) {
	case HVD_UINT8:
	case HVD_BOOL:
		((uint8_t *)buf)[i] = (uint8_t)v;
		break;
	case HVD_INT8:
		((int8_t *)buf)[i] = (int8_t)v;
		break;
	case HVD_INT32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case HVD_INT64:
		((int64_t *)buf)[i] = (int64_t)v;
		break;
	case HVD_FLOAT16:
		((uint16_t *)buf)[i] = to_half(f);
		break;
	case HVD_BFLOAT16:
		memcpy(&b, &f, 4);
		((uint16_t *)buf)[i] = (uint16_t)(b >> 16);
		break;
	case HVD_FLOAT32:
		((float *)buf)[i] = f;
		break;
	case HVD_FLOAT64:
		((double *)buf)[i] = v;
		break;
	case HVD_INT16:
		((int16_t *)buf)[i] = (int16_t)v;
		break;
	}
}

static double get(const void *buf, size_t i, int t)
{
	uint32_t b;
	float f;

	switch (t) {
	case HVD_UINT8:
	case HVD_BOOL:
		return ((const uint8_t *)buf)[i];
	case HVD_INT8:
		return ((const int8_t *)buf)[i];
	case HVD_INT32:
		return ((const int32_t *)buf)[i];
	case HVD_INT64:
		return (double)((const int64_t *)buf)[i];
	case HVD_FLOAT16:
		return from_half(((const uint16_t *)buf)[i]);
	case HVD_BFLOAT16:
		b = (uint32_t)((const uint16_t *)buf)[i] << 16;
		memcpy(&f, &b, 4);
		return f;
	case HVD_FLOAT32:
		return ((const float *)buf)[i];
	case HVD_INT16:
		return ((const int16_t *)buf)[i];
	default:
		return ((const double *)buf)[i];
	}
}

static int is_int(int t)
{
	return t <= HVD_INT64 || t == HVD_INT16 || t == HVD_BOOL;
}

static double tolerance(int t, int op)
{
	return (is_int(t) || op != HVD_AVERAGE) ? 0
	       : t == HVD_BFLOAT16		? 1e-2
	       : t == HVD_FLOAT16		? 2e-3
						: 1e-6;
}

/* Rank r's element i of the reduction test: arg is {op, dtype}. */
static double ref_value(int r, size_t i, const void *arg)
{
	const int *ot = arg;

	return uvalue(r, i, ot[0], ot[1]);
}

static double expected(size_t i, int op, int t)
{
	int ot[2] = {op, t};
	double v = ref_reduce(hvd_size(), i, (enum hvd_op)op, is_int(t) != 0,
			      ref_value, ot);

	/* A bool's values are 0 and 1: a sum above 0 is their or, a
	 * product their and. */
	return t == HVD_BOOL ? (double)(v != 0) : v;
}

/* A bool has no average: its submission fails (HVD_EINVAL). */
static int refused_op(int t, int op)
{
	return t == HVD_BOOL && op == HVD_AVERAGE;
}

/* gpu: the same allreduce on copies in GPU memory (hvd_allreduce_gpu). */
static int gpu_allreduce(const char *name, const char *send, char *recv,
			 size_t count, int t, int op, int inplace)
{
#if HVD_NCCL
	size_t bytes = count * esize[t];
	char *dsend = NULL, *drecv = NULL;
	int rc;

	if (cudaMalloc((void **)&dsend, bytes + 1) != cudaSuccess ||
	    (!inplace && cudaMalloc((void **)&drecv, bytes + 1) != cudaSuccess))
		return HVD_ENOMEM;
	cudaMemcpy(dsend, send, bytes, cudaMemcpyHostToDevice);
	rc = hvd_allreduce_gpu(name, dsend, inplace ? dsend : drecv, count,
			       (enum hvd_dtype)t, (enum hvd_op)op);
	cudaMemcpy(recv, inplace ? dsend : drecv, bytes,
		   cudaMemcpyDeviceToHost);
	cudaFree(dsend);
	cudaFree(drecv);
	return rc;
#else
	(void)name, (void)send, (void)recv, (void)count, (void)t, (void)op;
	(void)inplace;
	return HVD_ENOTSUP;
#endif
}

static void check_allreduce_on(int t, int op, size_t count, int inplace,
			       int gpu)
{
	char name[128];
	char *send = malloc(count * esize[t] + 1);
	char *recv = inplace ? send : malloc(count * esize[t] + 1);
	size_t i, bad = 0, first = 0;
	double first_got = 0;
	int rc;

	for (i = 0; i < count; i++)
		put(send, i, t, uvalue(hvd_rank(), i, op, t));
	snprintf(name, sizeof(name), "ar.%s.%d.%zu.%d%s", dname[t], op, count,
		 inplace, gpu ? ".gpu" : "");
	rc = gpu ? gpu_allreduce(name, send, recv, count, t, op, inplace)
		 : hvd_allreduce(name, send, recv, count, (enum hvd_dtype)t,
				 (enum hvd_op)op);
	if (refused_op(t, op)) {
		EXPECT(rc == HVD_EINVAL, "%s: %s, not refused", name,
		       hvd_strerror(rc));
		rc = -1;
	} else {
		EXPECT(rc == 0, "%s: %s", name, hvd_strerror(rc));
	}
	for (i = 0; rc == 0 && i < count; i++) {
		double want = expected(i, op, t), got = get(recv, i, t);
		double tol = tolerance(t, op);

		if (fabs(got - want) > tol * fmax(1, fabs(want)) &&
		    bad++ == 0) {
			first = i;
			first_got = got;
		}
	}
	EXPECT(bad == 0,
	       "%s: %zu of %zu elements wrong (the first: [%zu] %g, want %g)",
	       name, bad, count, first, first_got, expected(first, op, t));
	free(send);
	if (!inplace)
		free(recv);
}

static void check_allreduce(int t, int op, size_t count, int inplace)
{
	check_allreduce_on(t, op, count, inplace, 0);
}

/* Names seen before (the response cache): on one host a small one rides
 * the cycle's agreement through the segment (negotiate.c). Every dtype
 * and op, below and above the ride's 16 KiB; then pairs submitted in
 * opposite orders by even and odd ranks, whose offers differ. */
static void check_cached(void)
{
	int t, op, round, r, n = hvd_size();

	for (round = 0; round < 3; round++)
		for (t = 0; t < NDTYPE; t++)
			for (op = 0; op < 5; op++) {
				check_allreduce(t, op, 3, round % 2);
				check_allreduce(t, op, 4099, 1);
			}
	/* An empty tensor has no buffer; once cached, it rides too. */
	for (round = 0; round < 20; round++) {
		r = hvd_allreduce("cached.empty", NULL, NULL, 0, HVD_FLOAT32,
				  HVD_SUM);
		EXPECT(r == 0, "cached.empty: %s", hvd_strerror(r));
	}
	for (round = 0; round < 50; round++) {
		float a[5], b[5];
		hvd_handle *ha = NULL, *hb = NULL;
		int i, ra, rb;

		for (i = 0; i < 5; i++) {
			a[i] = (float)(hvd_rank() + 1);
			b[i] = (float)(2 * hvd_rank() + i);
		}
		if (hvd_rank() % 2) {
			rb = hvd_allreduce_async("cached.b", b, b, 5,
						 HVD_FLOAT32, HVD_AVERAGE, &hb);
			ra = hvd_allreduce_async("cached.a", a, a, 5,
						 HVD_FLOAT32, HVD_SUM, &ha);
		} else {
			ra = hvd_allreduce_async("cached.a", a, a, 5,
						 HVD_FLOAT32, HVD_SUM, &ha);
			rb = hvd_allreduce_async("cached.b", b, b, 5,
						 HVD_FLOAT32, HVD_AVERAGE, &hb);
		}
		r = ra == 0 ? hvd_wait(ha) : ra;
		EXPECT(r == 0, "cached.a: %s", hvd_strerror(r));
		r = rb == 0 ? hvd_wait(hb) : rb;
		EXPECT(r == 0, "cached.b: %s", hvd_strerror(r));
		for (i = 0; i < 5; i++) {
			EXPECT(a[i] == (float)(n * (n + 1) / 2),
			       "cached.a round %d: [%d] %g", round, i, a[i]);
			EXPECT(b[i] == (float)(n - 1 + i),
			       "cached.b round %d: [%d] %g", round, i, b[i]);
		}
	}
}

/* No rank leaves a barrier before the last has entered: the last rank
 * enters 300 ms late, and the others must have waited for it. */
static void check_barrier(void)
{
	struct timespec a, b;
	double waited;
	int rc;

	clock_gettime(CLOCK_MONOTONIC, &a);
	if (hvd_rank() == hvd_size() - 1)
		usleep(300000);
	rc = hvd_barrier();
	clock_gettime(CLOCK_MONOTONIC, &b);
	waited = (double)(b.tv_sec - a.tv_sec) +
		 (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	EXPECT(rc == 0, "barrier: %s", hvd_strerror(rc));
	EXPECT(waited >= 0.25,
	       "left the barrier after %.3f s, before the "
	       "last rank entered it (0.3 s)",
	       waited);
}

/* hvd_is_homogeneous(): whether every rank's host runs as many ranks,
 * the job's answer on every rank. */
static void check_homogeneous(void)
{
	int32_t least = hvd_local_size(), most = least;
	int rc = hvd_allreduce("hosts.least", &least, &least, 1, HVD_INT32,
			       HVD_MIN);

	if (rc == 0)
		rc = hvd_allreduce("hosts.most", &most, &most, 1, HVD_INT32,
				   HVD_MAX);
	EXPECT(rc == 0 && hvd_is_homogeneous() == (least == most),
	       "hvd_is_homogeneous() %d, the hosts run %d to %d ranks: %s",
	       hvd_is_homogeneous(), least, most, hvd_strerror(rc));
}

static void mode_all(void)
{
	static const size_t counts[] = {0, 1, 7, 10007};
	size_t ci, i, got_n = 0;
	int t, op, root, r;
	unsigned char *buf;
	int32_t *mine, *all = NULL;

	check_homogeneous();
	for (t = 0; t < NDTYPE; t++)
		for (op = 0; op < 5; op++)
			for (ci = 0; ci < 4; ci++)
				check_allreduce(t, op, counts[ci], ci % 2);
	check_cached();
	check_barrier();
	/* Several MiB. */
	check_allreduce(HVD_FLOAT32, HVD_SUM, 1572869, 1);
	check_allreduce(HVD_FLOAT16, HVD_AVERAGE, 1048583, 0);
	check_allreduce(HVD_INT64, HVD_MAX, 524309, 0);
	/* Broadcast from every root. */
	buf = malloc(3 * 1048576 + 5);
	for (root = 0; root < hvd_size(); root++) {
		char name[64];
		size_t len = root % 2 ? 3 * 1048576 + 5 : 9;

		for (i = 0; i < len; i++)
			buf[i] = hvd_rank() == root
					 ? (unsigned char)(i * 7 + root)
					 : 0;
		snprintf(name, sizeof(name), "bc.%d", root);
		r = hvd_broadcast(name, buf, len, HVD_UINT8, root);
		EXPECT(r == 0, "%s: %s", name, hvd_strerror(r));
		for (i = 0; i < len; i++)
			if (buf[i] != (unsigned char)(i * 7 + root))
				break;
		EXPECT(i == len, "%s: byte %zu wrong", name, i);
	}
	free(buf);
	/* Allgather: rank r gives r*3 elements (rank 0 none). */
	mine = malloc(sizeof(*mine) * (size_t)(hvd_rank() * 3 + 1));
	for (i = 0; i < (size_t)hvd_rank() * 3; i++)
		mine[i] = hvd_rank() * 100 + (int)i;
	r = hvd_allgather("ag", mine, (size_t)hvd_rank() * 3, HVD_INT32,
			  (void **)&all, &got_n);
	EXPECT(r == 0, "allgather: %s", hvd_strerror(r));
	{
		size_t k = 0;
		int q;

		for (q = 0; q < hvd_size(); q++)
			for (i = 0; i < (size_t)q * 3; i++, k++)
				EXPECT(k < got_n && all[k] == q * 100 + (int)i,
				       "allgather element %zu", k);
		EXPECT(got_n == k, "allgather gave %zu elements, want %zu",
		       got_n, k);
	}
	free(all);
	free(mine);
	/* Uneven blocks of several slot-fulls of the shared segment. */
	{
		size_t n = (size_t)(hvd_rank() + 1) * 70001, k = 0;
		int q;

		mine = malloc(sizeof(*mine) * n);
		for (i = 0; i < n; i++)
			mine[i] = hvd_rank() * 1000003 + (int)i;
		r = hvd_allgather("ag.big", mine, n, HVD_INT32, (void **)&all,
				  &got_n);
		EXPECT(r == 0, "ag.big: %s", hvd_strerror(r));
		for (q = 0; r == 0 && q < hvd_size(); q++)
			for (i = 0; i < (size_t)(q + 1) * 70001; i++, k++)
				if (k >= got_n ||
				    all[k] != q * 1000003 + (int)i) {
					EXPECT(0, "ag.big: element %zu wrong",
					       k);
					q = hvd_size();
					break;
				}
		EXPECT(r != 0 || got_n == k,
		       "ag.big gave %zu elements, want %zu", got_n, k);
		free(all);
		free(mine);
	}
	r = hvd_barrier();
	EXPECT(r == 0, "barrier: %s", hvd_strerror(r));
	/* Bad arguments are refused on the spot. */
	{
		hvd_handle *h;
		float x = 1;

		EXPECT(hvd_allreduce_async("bad", &x, &x, 1, (enum hvd_dtype)42,
					   HVD_SUM, &h) == HVD_EINVAL,
		       "dtype 42 accepted");
		EXPECT(hvd_broadcast_async("bad", &x, 1, HVD_FLOAT32,
					   hvd_size(), &h) == HVD_EINVAL,
		       "root %d accepted", hvd_size());
		EXPECT(hvd_allreduce_async("", &x, &x, 1, HVD_FLOAT32, HVD_SUM,
					   &h) == HVD_EINVAL,
		       "an empty name accepted");
	}
}

#define NTHREADS 4
#define PER_THREAD 40

static void *thread_main(void *arg)
{
	long id = (long)arg;
	hvd_handle *h[PER_THREAD];
	float *buf[PER_THREAD];
	int i, j;

	for (i = 0; i < PER_THREAD; i++) {
		char name[64];
		size_t n = (size_t)(1 + (i * 37 + id * 11) % 3000);

		buf[i] = malloc(n * sizeof(float) + 4);
		for (j = 0; j < (int)n; j++)
			buf[i][j] = (float)(hvd_rank() + j % 5);
		snprintf(name, sizeof(name), "t%ld.%d", id, i);
		EXPECT(hvd_allreduce_async(name, buf[i], buf[i], n, HVD_FLOAT32,
					   HVD_SUM, &h[i]) == 0,
		       "submit %s", name);
	}
	for (i = 0; i < PER_THREAD; i++) {
		size_t n = (size_t)(1 + (i * 37 + id * 11) % 3000);
		int s = hvd_size(), rc = hvd_wait(h[i]);
		float want0 = (float)(s * (s - 1) / 2);

		EXPECT(rc == 0, "thread %ld tensor %d: %s", id, i,
		       hvd_strerror(rc));
		for (j = 0; j < (int)n; j++)
			if (buf[i][j] != want0 + (float)(s * (j % 5)))
				break;
		EXPECT(j == (int)n, "thread %ld tensor %d wrong at %d", id, i,
		       j);
		free(buf[i]);
	}
	return NULL;
}

static void mode_threads(void)
{
	pthread_t t[NTHREADS];
	long i;

	for (i = 0; i < NTHREADS; i++)
		pthread_create(&t[i], NULL, thread_main, (void *)i);
	for (i = 0; i < NTHREADS; i++)
		pthread_join(t[i], NULL);
	/* A name in flight cannot be submitted twice. Rank 0 submits its
	 * 'dup' only once every other rank has tried the second: until then
	 * the first cannot complete, however the threads are scheduled. */
	if (hvd_size() > 1) {
		hvd_handle *a = NULL, *b, *ready;
		float x[1000] = {0}, y[1] = {0};

		if (hvd_rank() != 0) {
			EXPECT(hvd_allreduce_async("dup", x, x, 1000,
						   HVD_FLOAT32, HVD_SUM,
						   &a) == 0,
			       "first dup");
			EXPECT(hvd_allreduce_async("dup", x, x, 1000,
						   HVD_FLOAT32, HVD_SUM,
						   &b) == HVD_EINVAL,
			       "a second 'dup' in flight was accepted");
		}
		EXPECT(hvd_allreduce_async("dup.tried", y, y, 1, HVD_FLOAT32,
					   HVD_SUM, &ready) == 0 &&
			       hvd_wait(ready) == 0,
		       "dup.tried");
		if (hvd_rank() == 0)
			EXPECT(hvd_allreduce_async("dup", x, x, 1000,
						   HVD_FLOAT32, HVD_SUM,
						   &a) == 0,
			       "first dup");
		EXPECT(a != NULL && hvd_wait(a) == 0, "dup wait");
	}
}

static void mode_fusion(void)
{
	hvd_handle *h[65];
	float buf[64][100], src[64][100];
	int i, j;

	/* Twice: the second round goes through the response cache. Odd
	 * tensors are out of place; an empty one sits among them. */
	for (j = 0; j < 2; j++) {
		for (i = 0; i < 64; i++) {
			char name[32];

			buf[i][0] = (float)(i % 2 ? -1 : i);
			src[i][0] = (float)i;
			snprintf(name, sizeof(name), "grad.%d", i);
			hvd_allreduce_async(name, i % 2 ? src[i] : buf[i],
					    buf[i], 100, HVD_FLOAT32,
					    HVD_AVERAGE, &h[i]);
			if (i == 31)
				hvd_allreduce_async("grad.empty", NULL, NULL, 0,
						    HVD_FLOAT32, HVD_AVERAGE,
						    &h[64]);
		}
		EXPECT(hvd_wait(h[64]) == 0, "grad.empty");
		for (i = 0; i < 64; i++) {
			EXPECT(hvd_wait(h[i]) == 0, "grad %d", i);
			EXPECT(buf[i][0] == (float)i, "grad %d value", i);
		}
	}
}

static void mode_mismatch(void)
{
	int r = hvd_rank(), rc;
	float x[16] = {0};
	double d[16] = {0};

	rc = hvd_allreduce("count", x, x, r == 0 ? 10 : 12, HVD_FLOAT32,
			   HVD_SUM);
	EXPECT(rc == HVD_EMISMATCH, "count: %s", hvd_strerror(rc));
	EXPECT(strstr(hvd_error_message(), "'count'") != NULL, "message: %s",
	       hvd_error_message());
	rc = hvd_allreduce("dtype", r == 0 ? (void *)x : (void *)d,
			   r == 0 ? (void *)x : (void *)d, 4,
			   r == 0 ? HVD_FLOAT32 : HVD_FLOAT64, HVD_SUM);
	EXPECT(rc == HVD_EMISMATCH, "dtype: %s", hvd_strerror(rc));
	/* A bool is a byte, yet no uint8. */
	rc = hvd_allreduce("bool", x, x, 4, r == 0 ? HVD_UINT8 : HVD_BOOL,
			   HVD_MAX);
	EXPECT(rc == HVD_EMISMATCH, "bool: %s", hvd_strerror(rc));
	EXPECT(strstr(hvd_error_message(), "bool") != NULL, "message: %s",
	       hvd_error_message());
	/* Refused before any rank is asked: a bool's factors and Adasum. */
	rc = hvd_allreduce_scaled("bool.scaled", x, x, 4, HVD_BOOL, HVD_SUM,
				  2.0, 1.0);
	EXPECT(rc == HVD_EINVAL, "bool.scaled: %s", hvd_strerror(rc));
	rc = hvd_allreduce("bool.adasum", x, x, 4, HVD_BOOL, HVD_ADASUM);
	EXPECT(rc == HVD_EINVAL, "bool.adasum: %s", hvd_strerror(rc));
	rc = hvd_allreduce("op", x, x, 4, HVD_FLOAT32,
			   r == 1 ? HVD_MAX : HVD_SUM);
	EXPECT(rc == HVD_EMISMATCH, "op: %s", hvd_strerror(rc));
	rc = hvd_broadcast("root", x, 4, HVD_FLOAT32, r == 0 ? 0 : 1);
	EXPECT(rc == HVD_EMISMATCH, "root: %s", hvd_strerror(rc));
	if (r == 0)
		rc = hvd_broadcast("type", x, 4, HVD_FLOAT32, 0);
	else
		rc = hvd_allreduce("type", x, x, 4, HVD_FLOAT32, HVD_SUM);
	EXPECT(rc == HVD_EMISMATCH, "type: %s", hvd_strerror(rc));
	/* The job goes on afterwards. */
	x[0] = 1;
	rc = hvd_allreduce("after", x, x, 1, HVD_FLOAT32, HVD_SUM);
	EXPECT(rc == 0 && x[0] == (float)hvd_size(), "after: %s",
	       hvd_strerror(rc));
}

static long long ms_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void mode_kill(void)
{
	size_t n = 4 << 20;
	float *buf = calloc(n, sizeof(float));
	long long t_kill = 0;
	int i, rc = 0;

	/* The survivors report before hvdrun's SIGTERM ends them. */
	signal(SIGTERM, SIG_IGN);
	for (i = 0; i < 1000 && rc == 0; i++) {
		char name[32];

		snprintf(name, sizeof(name), "big.%d", i);
		if (hvd_rank() == 1 && i == 3)
			raise(SIGKILL);
		if (i == 3)
			t_kill = ms_now();
		rc = hvd_allreduce(name, buf, buf, n, HVD_FLOAT32, HVD_SUM);
	}
	printf("rank %d: error after %lld ms: %s\n", hvd_rank(),
	       ms_now() - t_kill, hvd_strerror(rc));
	/* Every later operation fails at once. */
	rc = hvd_allreduce("later", buf, buf, 1, HVD_FLOAT32, HVD_SUM);
	printf("rank %d: later: %s\n", hvd_rank(), hvd_strerror(rc));
	fflush(stdout);
	free(buf);
	exit(3);
}

/* Every rank but the last waits in a barrier for IDLE_MS while the last
 * sleeps; each reports the CPU its whole process (the background thread
 * included) used meanwhile, in ms. */
#define IDLE_MS 5000
static void mode_idle(void)
{
	struct timespec a, b;
	long long t0;
	int rc;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &a);
	t0 = ms_now();
	if (hvd_rank() == hvd_size() - 1)
		usleep(IDLE_MS * 1000);
	rc = hvd_barrier();
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &b);
	if (rc != 0) {
		printf("rank %d: FAIL barrier: %s\n", hvd_rank(),
		       hvd_strerror(rc));
		failures++;
	}
	printf("rank %d: idle cpu %lld ms over %lld ms\n", hvd_rank(),
	       (long long)(b.tv_sec - a.tv_sec) * 1000 +
		       (b.tv_nsec - a.tv_nsec) / 1000000,
	       ms_now() - t0);
}

/* Allreduce n floats (4096) until an error; report how long after the
 * last success it came. A file in $PIDDIR says the loop runs (after 100
 * allreduces, or 1 s); once $PIDDIR/stop exists on any rank (told in the
 * allreduce), every rank ends well. */
static void mode_drop(int n)
{
	float *buf = calloc(n > 0 ? (size_t)n : 1, sizeof(*buf));
	long long t0 = ms_now(), last = t0;
	const char *dir = getenv("PIDDIR") ? getenv("PIDDIR") : "/tmp";
	char path[512], stop[512];
	bool marked = false;
	int i, rc = 0;
	FILE *f;

	if (buf == NULL || n < 1) {
		printf("rank %d: FAIL: drop %d\n", hvd_rank(), n);
		exit(1);
	}
	signal(SIGTERM, SIG_IGN);
	snprintf(path, sizeof(path), "%s/looping%d", dir, hvd_rank());
	snprintf(stop, sizeof(stop), "%s/stop", dir);
	for (i = 0; i < 300000 && rc == 0; i++) {
		char name[32];

		snprintf(name, sizeof(name), "drop.%d", i % 8);
		buf[0] = access(stop, F_OK) == 0;
		rc = hvd_allreduce(name, buf, buf, n, HVD_FLOAT32, HVD_SUM);
		if (rc == 0)
			last = ms_now();
		if (rc == 0 && buf[0] > 0) {
			printf("rank %d: ok\n", hvd_rank());
			free(buf);
			exit(0);
		}
		if (!marked && (i == 100 || last - t0 >= 1000)) {
			marked = true;
			if ((f = fopen(path, "w")) != NULL)
				fclose(f);
		}
	}
	printf("rank %d: error %lld ms after the last success: %s\n",
	       hvd_rank(), ms_now() - last, hvd_strerror(rc));
	fflush(stdout);
	free(buf);
	exit(3);
}

/* quiet: an allreduce, S seconds (4) without one, another: the job's
 * connections are quiet meanwhile. */
static void mode_quiet(int s)
{
	float x = 1;
	int rc = hvd_allreduce("quiet.a", &x, &x, 1, HVD_FLOAT32, HVD_SUM);

	sleep((unsigned)s);
	if (rc == 0)
		rc = hvd_allreduce("quiet.b", &x, &x, 1, HVD_FLOAT32, HVD_SUM);
	EXPECT(rc == 0 && x == (float)(hvd_size() * hvd_size()),
	       "quiet: %s, %g", hvd_strerror(rc), x);
}

static void mode_stall(void)
{
	float x = 1;
	int rc;

	if (hvd_rank() == 0) {
		rc = hvd_allreduce("lonely", &x, &x, 1, HVD_FLOAT32, HVD_SUM);
		EXPECT(rc == HVD_ESTALL, "lonely: %s", hvd_strerror(rc));
		printf("rank 0: %s\n", hvd_error_message());
	} else {
		sleep(4);
	}
	rc = hvd_barrier();
	EXPECT(rc == 0, "barrier after the stall: %s", hvd_strerror(rc));
}

static void mode_nogpu(void)
{
	float x = 1;
	int dev = hvd_gpu_device(), rc;

	EXPECT(dev == HVD_ENOTSUP, "hvd_gpu_device() gave %d", dev);
	EXPECT(*hvd_error_message() != '\0', "no reason given");
	printf("rank %d: %s\n", hvd_rank(), hvd_error_message());
	rc = hvd_allreduce_gpu("g", &x, &x, 1, HVD_FLOAT32, HVD_SUM);
	EXPECT(rc == HVD_ENOTSUP, "allreduce_gpu: %s", hvd_strerror(rc));
	rc = hvd_broadcast_gpu("g", &x, 1, HVD_FLOAT32, 0);
	EXPECT(rc == HVD_ENOTSUP, "broadcast_gpu: %s", hvd_strerror(rc));
	rc = hvd_allreduce("cpu", &x, &x, 1, HVD_FLOAT32, HVD_SUM);
	EXPECT(rc == 0 && x == (float)hvd_size(), "the CPU one after: %s",
	       hvd_strerror(rc));
}

/* v (count floats, what) has the same bits on every rank: its minimum
 * and its maximum over the ranks agree. */
static void check_same_bits_of(const char *what, const float *v, size_t count)
{
	float *lo = malloc(count * sizeof(float));
	float *hi = malloc(count * sizeof(float));
	size_t i, bad = 0;
	int rc;

	rc = hvd_allreduce("bits.min", v, lo, count, HVD_FLOAT32, HVD_MIN);
	if (rc == 0)
		rc = hvd_allreduce("bits.max", v, hi, count, HVD_FLOAT32,
				   HVD_MAX);
	for (i = 0; rc == 0 && i < count; i++)
		bad += memcmp(&lo[i], &hi[i], sizeof(float)) != 0;
	EXPECT(rc == 0 && bad == 0,
	       "%s of %zu floats: %zu elements differ between ranks (%s)", what,
	       count, bad, hvd_strerror(rc));
	free(lo);
	free(hi);
}

/* Rank r's element i of Adasum's tensor j: neither orthogonal nor
 * parallel to the other ranks'. */
static double ada_value(int r, int j, size_t i)
{
	return sin(0.37 * (double)i + 1.3 * r + j) + 0.25 * (r % 3) - 0.3;
}

/* Adasum's tree over every rank's tensor j in float64 (ref_adasum);
 * with L > 1, over the averages of each L ranks (a host's, GPU Adasum's
 * way). */
static void ada_reference(int j, size_t m, int L, double *out)
{
	int n = hvd_size(), r;
	double *v = calloc((size_t)n * m + 1, sizeof(*v));
	size_t i;

	for (r = 0; r < n; r++)
		for (i = 0; i < m; i++)
			v[(size_t)(r / L) * m + i] += ada_value(r, j, i) / L;
	ref_adasum(n / L, m, v);
	memcpy(out, v, m * sizeof(*v));
	free(v);
}

/* join and gpujoin: in step s the ranks r with r + 2 > s give data (the
 * value r + 1); how many, and the sum of their values in *sum. */
static int join_givers(int s, double *sum)
{
	int r, givers = 0;

	*sum = 0;
	for (r = 0; r < hvd_size(); r++)
		if (r + 2 > s) {
			givers++;
			*sum += r + 1;
		}
	return givers;
}

/* The GPU modes: this rank's GPU made the current device, or exit 77
 * after "skip: REASON" where there is none. */
static void use_gpu_or_skip(void)
{
	int dev = hvd_gpu_device();

#if HVD_NCCL
	if (dev >= 0) {
		cudaSetDevice(dev);
		return;
	}
	printf("skip: %s\n", hvd_error_message());
#else
	(void)dev;
	printf("skip: this self-test was built without CUDA and NCCL\n");
#endif
	hvd_shutdown();
	exit(77);
}

#if HVD_NCCL
static void mode_gpu_collectives(void)
{
	static const size_t counts[] = {0, 1, 7, 10007};
	int t, op, root, r, n = hvd_size(), me = hvd_rank();
	size_t ci, i, got_n = 0;
	unsigned char *host, *dev;
	int32_t *mine, *dmine, *all = NULL, *back;
	hvd_handle *h[48];
	float *fb[48];

	for (t = 0; t < NDTYPE; t++)
		for (op = 0; op < 5; op++)
			for (ci = 0; ci < 4 && t != HVD_INT16; ci++)
				check_allreduce_on(t, op, counts[ci], ci % 2,
						   1);
	check_allreduce_on(HVD_FLOAT32, HVD_SUM, 1572869, 1, 1);
	check_allreduce_on(HVD_FLOAT16, HVD_AVERAGE, 1048583, 0, 1);
	check_allreduce_on(HVD_INT64, HVD_MAX, 524309, 0, 1);
	/* Fusion: 48 tensors at once, all sizes, in flight together. */
	for (i = 0; i < 48; i++) {
		size_t c = 1 + i * 997 % 5000, k;
		float *v = malloc(c * sizeof(float));
		char name[32];

		for (k = 0; k < c; k++)
			v[k] = (float)(me + (int)(k % 7));
		cudaMalloc((void **)&fb[i], c * sizeof(float));
		cudaMemcpy(fb[i], v, c * sizeof(float), cudaMemcpyHostToDevice);
		free(v);
		snprintf(name, sizeof(name), "gfuse.%zu", i);
		r = hvd_allreduce_gpu_async(name, fb[i], fb[i], c, HVD_FLOAT32,
					    HVD_SUM, &h[i]);
		EXPECT(r == 0, "%s: %s", name, hvd_error_message());
	}
	for (i = 0; i < 48; i++) {
		size_t c = 1 + i * 997 % 5000, k;
		float *v = malloc(c * sizeof(float));

		r = hvd_wait(h[i]);
		EXPECT(r == 0, "gfuse.%zu: %s", i, hvd_error_message());
		cudaMemcpy(v, fb[i], c * sizeof(float), cudaMemcpyDeviceToHost);
		for (k = 0; k < c; k++)
			if (v[k] != (float)(n * (n - 1) / 2 + n * (int)(k % 7)))
				break;
		EXPECT(k == c, "gfuse.%zu: element %zu wrong", i, k);
		free(v);
		cudaFree(fb[i]);
	}
	/* Broadcast from every root. */
	host = malloc(3 * 1048576 + 5);
	cudaMalloc((void **)&dev, 3 * 1048576 + 5);
	for (root = 0; root < n; root++) {
		char name[64];
		size_t len = root % 2 ? 3 * 1048576 + 5 : 9;

		for (i = 0; i < len; i++)
			host[i] =
				me == root ? (unsigned char)(i * 7 + root) : 0;
		cudaMemcpy(dev, host, len, cudaMemcpyHostToDevice);
		snprintf(name, sizeof(name), "gbc.%d", root);
		r = hvd_broadcast_gpu(name, dev, len, HVD_UINT8, root);
		EXPECT(r == 0, "%s: %s", name, hvd_error_message());
		cudaMemcpy(host, dev, len, cudaMemcpyDeviceToHost);
		for (i = 0; i < len; i++)
			if (host[i] != (unsigned char)(i * 7 + root))
				break;
		EXPECT(i == len, "%s: byte %zu wrong", name, i);
	}
	cudaFree(dev);
	free(host);
	/* Allgather: rank r gives r*3 elements (rank 0 none). */
	mine = malloc(sizeof(*mine) * (size_t)(me * 3 + 1));
	for (i = 0; i < (size_t)me * 3; i++)
		mine[i] = me * 100 + (int)i;
	cudaMalloc((void **)&dmine, sizeof(*mine) * (size_t)(me * 3 + 1));
	cudaMemcpy(dmine, mine, sizeof(*mine) * (size_t)me * 3,
		   cudaMemcpyHostToDevice);
	r = hvd_allgather_gpu("gag", dmine, (size_t)me * 3, HVD_INT32,
			      (void **)&all, &got_n);
	EXPECT(r == 0, "gpu allgather: %s", hvd_error_message());
	back = malloc(sizeof(*back) * (got_n + 1));
	if (r == 0)
		cudaMemcpy(back, all, sizeof(*back) * got_n,
			   cudaMemcpyDeviceToHost);
	{
		size_t k = 0;
		int q;

		for (q = 0; r == 0 && q < n; q++)
			for (i = 0; i < (size_t)q * 3; i++, k++)
				EXPECT(k < got_n && back[k] == q * 100 + (int)i,
				       "gpu allgather element %zu", k);
		EXPECT(r != 0 || got_n == k,
		       "gpu allgather gave %zu elements, want %zu", got_n, k);
	}
	cudaFree(all);
	cudaFree(dmine);
	free(back);
	free(mine);
}

/* The newer collectives on device buffers: reducescatter (even and
 * uneven splits) and alltoall, against the same references. */
static void mode_gpu_more(void)
{
	int n = hvd_size(), me = hvd_rank(), r, q;
	size_t rows, i, start, mine, total, got = 0, *sc, *rc;
	float *h, *dh, *dout, *a2a = NULL;
	hvd_handle *hd;

	for (rows = (size_t)n * 3; rows <= (size_t)n * 3 + 1; rows++) {
		h = malloc(rows * 4 * sizeof(float));
		for (i = 0; i < rows * 4; i++)
			h[i] = (float)(me + (int)(i % 5));
		cudaMalloc((void **)&dh, rows * 4 * sizeof(float));
		cudaMalloc((void **)&dout, rows * 4 * sizeof(float));
		cudaMemcpy(dh, h, rows * 4 * sizeof(float),
			   cudaMemcpyHostToDevice);
		r = hvd_reducescatter_gpu_async("grs", dh, dout, rows * 4, 4,
						HVD_FLOAT32, HVD_SUM, 1, 1,
						&hd);
		r = r == 0 ? hvd_wait(hd) : r;
		EXPECT(r == 0, "gpu reducescatter: %s", hvd_error_message());
		for (q = 0, start = 0; q < me; q++)
			start += hvd_reducescatter_count(rows * 4, 4, q);
		mine = hvd_reducescatter_count(rows * 4, 4, me);
		cudaMemcpy(h, dout, mine * sizeof(float),
			   cudaMemcpyDeviceToHost);
		for (i = 0; r == 0 && i < mine; i++)
			if (h[i] != (float)(n * (n - 1) / 2 +
					    n * (int)((start + i) % 5)))
				break;
		EXPECT(r != 0 || i == mine, "gpu reducescatter element %zu", i);
		cudaFree(dh);
		cudaFree(dout);
		free(h);
	}
	sc = calloc((size_t)n, sizeof(*sc));
	rc = calloc((size_t)n, sizeof(*rc));
	for (q = 0, total = 0; q < n; q++)
		total += sc[q] = (size_t)((me + q) % 3);
	h = malloc((total + 1) * sizeof(float));
	for (q = 0, i = 0; q < n; q++)
		for (rows = 0; rows < sc[q]; rows++)
			h[i++] = (float)(me * 100 + q);
	cudaMalloc((void **)&dh, (total + 1) * sizeof(float));
	cudaMemcpy(dh, h, total * sizeof(float), cudaMemcpyHostToDevice);
	r = hvd_alltoall_gpu_async("ga2a", dh, sc, 1, HVD_FLOAT32,
				   (void **)&a2a, &got, rc, &hd);
	r = r == 0 ? hvd_wait(hd) : r;
	EXPECT(r == 0, "gpu alltoall: %s", hvd_error_message());
	free(h);
	h = malloc((got + 1) * sizeof(float));
	if (r == 0)
		cudaMemcpy(h, a2a, got * sizeof(float), cudaMemcpyDeviceToHost);
	for (q = 0, i = 0; r == 0 && q < n; q++) {
		EXPECT(rc[q] == (size_t)((q + me) % 3), "gpu alltoall count");
		for (rows = 0; rows < rc[q] && i < got; rows++, i++)
			EXPECT(h[i] == (float)(q * 100 + me),
			       "gpu alltoall element %zu", i);
	}
	cudaFree(a2a);
	cudaFree(dh);
	free(h);
	free(sc);
	free(rc);
}

/* A tensor whose data the GPU is still writing when it is submitted (a
 * copy queued on the default stream just before, as a backward pass
 * queues its kernels): the allreduce reduces what the copy wrote. */
static void check_gpu_ready(void)
{
	size_t n = 4 << 20, i, bad = 0;
	float *h = malloc(n * sizeof(float)), *d = NULL;
	float want = (float)(hvd_size() * (hvd_size() + 1) / 2);
	hvd_handle *hd = NULL;
	int r, k;

	for (i = 0; i < n; i++)
		h[i] = (float)(hvd_rank() + 1);
	cudaMalloc((void **)&d, n * sizeof(float));
	for (k = 0; k < 4; k++) /* the last one writes what counts */
		cudaMemcpyAsync(d, h, n * sizeof(float), cudaMemcpyHostToDevice,
				cudaStreamLegacy);
	r = hvd_allreduce_gpu_async("ready", d, d, n, HVD_FLOAT32, HVD_SUM,
				    &hd);
	if (r == 0)
		r = hvd_wait(hd);
	EXPECT(r == 0, "ready: %s", hvd_strerror(r));
	cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
	for (i = 0; r == 0 && i < n; i++)
		bad += h[i] != want;
	EXPECT(bad == 0, "ready: %zu of %zu elements not %g (the first: %g)",
	       bad, n, want, h[0]);
	cudaFree(d);
	free(h);
}

/* hvd_wait_stream: the caller's stream waits for the allreduce on the
 * GPU (the host does not), so that what is queued on it after the call
 * sees the result; the name is free at once for the next step's tensor. */
static void check_gpu_wait_stream(void)
{
	size_t n = 1 << 20, i;
	float *h = malloc(n * sizeof(float)), *d = NULL, want = 0;
	cudaStream_t s = NULL;
	int step, r = 0, k;

	cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);
	cudaMalloc((void **)&d, n * sizeof(float));
	for (step = 0; step < 3 && r == 0; step++) {
		hvd_handle *hd = NULL;
		size_t bad = 0;

		for (i = 0; i < n; i++)
			h[i] = (float)(hvd_rank() + 1 + step);
		cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
		r = hvd_allreduce_gpu_async("wstream", d, d, n, HVD_FLOAT32,
					    HVD_SUM, &hd);
		r = r ? r : hvd_wait_stream(hd, s);
		memset(h, 0, n * sizeof(float));
		cudaMemcpyAsync(h, d, n * sizeof(float), cudaMemcpyDeviceToHost,
				s);
		cudaStreamSynchronize(s);
		for (k = 0, want = 0; k < hvd_size(); k++)
			want += (float)(k + 1 + step);
		for (i = 0; r == 0 && i < n; i++)
			bad += h[i] != want;
		EXPECT(r == 0 && bad == 0,
		       "wait_stream step %d: %s; %zu of %zu not %g (the first: %g)",
		       step, hvd_strerror(r), bad, n, want, h[0]);
	}
	cudaFree(d);
	cudaStreamDestroy(s);
	free(h);
}

/* Integers with scaling factors on the GPU, as on the CPU (Horovod's
 * rule): in float64, truncated toward zero, saturated; an average
 * divides the sum before the postscale. Out of place: the send buffer
 * keeps its values. */
static int scaled_gpu(const char *name, const void *send, void *recv,
		      size_t count, enum hvd_dtype t, enum hvd_op op,
		      double pre, double post)
{
	hvd_handle *h;
	int rc = hvd_allreduce_scaled_gpu_async(name, send, recv, count, t, op,
						pre, post, &h);

	return rc == 0 ? hvd_wait(h) : rc;
}

/* A reducescatter of int32 with factors 0.5 and 3 (uneven rows): each
 * rank's rows, as the CPU's rule gives them. */
static void check_gpu_scaled_ints_scatter(void)
{
	int n = hvd_size(), me = hvd_rank(), r, q, rc;
	size_t count = (size_t)n * 2 + 1, start = 0, mine, i, bad = 0;
	int32_t *v = malloc(count * sizeof(*v)), *dv, *dout;
	hvd_handle *h;

	for (i = 0; i < count; i++)
		v[i] = 7 * (me + 1) + (int32_t)i;
	for (q = 0; q < me; q++)
		start += hvd_reducescatter_count(count, 1, q);
	mine = hvd_reducescatter_count(count, 1, me);
	cudaMalloc((void **)&dv, count * sizeof(*v));
	cudaMalloc((void **)&dout, count * sizeof(*v));
	cudaMemcpy(dv, v, count * sizeof(*v), cudaMemcpyHostToDevice);
	rc = hvd_reducescatter_gpu_async("gscaled.rs", dv, dout, count, 1,
					 HVD_INT32, HVD_SUM, 0.5, 3, &h);
	rc = rc == 0 ? hvd_wait(h) : rc;
	cudaMemcpy(v, dout, mine * sizeof(*v), cudaMemcpyDeviceToHost);
	for (i = 0; rc == 0 && i < mine; i++) {
		int32_t s = 0;

		for (r = 0; r < n; r++)
			s += (int32_t)((7 * (r + 1) + (int)(start + i)) * 0.5);
		bad += v[i] != (int32_t)(s * 3.0);
	}
	EXPECT(rc == 0 && bad == 0,
	       "GPU scaled int32 reducescatter: %zu of %zu rows wrong (%s)",
	       bad, mine, rc == 0 ? "" : hvd_error_message());
	cudaFree(dout);
	cudaFree(dv);
	free(v);
}

static void check_gpu_scaled_ints(void)
{
	int n = hvd_size(), me = hvd_rank(), r, rc;
	int32_t v[3] = {7 * (me + 1), -7 * (me + 1), 1}, out[3], want[3] = {0};
	int8_t b[2] = {10, -10}, *db;
	int64_t w = 5 * (me + 1), sum64 = 0, *dw;
	int32_t *dv, *dout;

	for (r = 0; r < n; r++) {
		want[0] += (int32_t)(7 * (r + 1) * 0.5);
		want[1] += (int32_t)(-7 * (r + 1) * 0.5);
		sum64 += (int64_t)(5 * (r + 1) * 3.0);
	}
	want[0] = (int32_t)(want[0] * 2.5);
	want[1] = (int32_t)(want[1] * 2.5);
	cudaMalloc((void **)&dv, sizeof(v));
	cudaMalloc((void **)&dout, sizeof(v));
	cudaMemcpy(dv, v, sizeof(v), cudaMemcpyHostToDevice);
	rc = scaled_gpu("gscaled.int32", dv, dout, 3, HVD_INT32, HVD_SUM, 0.5,
			2.5);
	cudaMemcpy(out, dout, sizeof(out), cudaMemcpyDeviceToHost);
	cudaMemcpy(v, dv, sizeof(v), cudaMemcpyDeviceToHost);
	EXPECT(rc == 0 && out[0] == want[0] && out[1] == want[1] &&
		       out[2] == 0 && v[0] == 7 * (me + 1),
	       "GPU scaled int32: %d %d %d, not %d %d 0 (%s)", out[0], out[1],
	       out[2], want[0], want[1], hvd_error_message());
	/* Saturated to int8's range after the sum. */
	cudaMalloc((void **)&db, sizeof(b));
	cudaMemcpy(db, b, sizeof(b), cudaMemcpyHostToDevice);
	rc = scaled_gpu("gscaled.int8", db, db, 2, HVD_INT8, HVD_SUM, 1, 20);
	cudaMemcpy(b, db, sizeof(b), cudaMemcpyDeviceToHost);
	EXPECT(rc == 0 && b[0] == 127 && b[1] == -128,
	       "GPU scaled int8: %d %d, not 127 -128 (%s)", b[0], b[1],
	       hvd_error_message());
	/* An average: prescaled, summed, divided, postscaled. */
	cudaMalloc((void **)&dw, sizeof(w));
	cudaMemcpy(dw, &w, sizeof(w), cudaMemcpyHostToDevice);
	rc = scaled_gpu("gscaled.int64", dw, dw, 1, HVD_INT64, HVD_AVERAGE, 3,
			0.5);
	cudaMemcpy(&w, dw, sizeof(w), cudaMemcpyDeviceToHost);
	EXPECT(rc == 0 && w == (int64_t)((double)(sum64 / n) * 0.5),
	       "GPU scaled int64 average: %lld, not %lld (%s)", (long long)w,
	       (long long)(int64_t)((double)(sum64 / n) * 0.5),
	       hvd_error_message());
	/* Each factor on its own: 0.5 then 2 is not 1 (7 gives 6). */
	v[0] = 7;
	cudaMemcpy(dv, v, sizeof(v), cudaMemcpyHostToDevice);
	rc = scaled_gpu("gscaled.half.twice", dv, dv, 1, HVD_INT32, HVD_SUM,
			0.5, 2);
	cudaMemcpy(v, dv, sizeof(v), cudaMemcpyDeviceToHost);
	EXPECT(rc == 0 && v[0] == 6 * n, "GPU int32 times 0.5 then 2: %d (%s)",
	       v[0], hvd_error_message());
	cudaFree(dw);
	cudaFree(db);
	cudaFree(dout);
	cudaFree(dv);
	check_gpu_scaled_ints_scatter();
}

/* GPU Adasum on hosts that run different numbers of ranks: each host's
 * ranks would average with different weights, so every rank refuses it,
 * naming the fix, and the job goes on. */
static void check_gpu_adasum_refused(void)
{
	float *d;
	int rc;

	cudaMalloc((void **)&d, 4 * sizeof(float));
	rc = hvd_allreduce_gpu("gpu.adasum.uneven", d, d, 4, HVD_FLOAT32,
			       HVD_ADASUM);
	EXPECT(rc == HVD_ENOTSUP &&
		       strstr(hvd_error_message(), "same number of ranks"),
	       "GPU Adasum on hosts of different sizes: %s (%s)",
	       hvd_strerror(rc), rc == 0 ? "" : hvd_error_message());
	rc = hvd_allreduce_gpu("gpu.adasum.after", d, d, 4, HVD_FLOAT32,
			       HVD_SUM);
	EXPECT(rc == 0, "a GPU allreduce after the refusal: %s",
	       hvd_error_message());
	cudaFree(d);
}

/* Adasum of GPU tensors, Horovod's way: each host's ranks average, the
 * hosts combine by Adasum (a fused batch of two float32 tensors, copied
 * out in place and not, and one with scaling factors, 0.5 and 3),
 * against the float64 reference, the same bits on every rank, under
 * any transport, with shared memory or without, on any number of hosts
 * (3: the third folds into the first). */
static void check_gpu_adasum(void)
{
	static const size_t m[3] = {5, 70001, 1000};
	int L = hvd_local_size(), H = hvd_cross_size(), j, rc[3];
	float *x[3], *dx[3], *dy[3];
	hvd_handle *h[3];
	size_t i;

	/* Hosts of different sizes (-H a:3,b:1,c:2): refused on every rank
	 * alike, also where a rank's local rank is on one host only. */
	if (hvd_is_homogeneous() == 0) {
		check_gpu_adasum_refused();
		return;
	}

	for (j = 0; j < 3; j++) {
		char name[32];

		x[j] = malloc(m[j] * sizeof(float));
		for (i = 0; i < m[j]; i++)
			x[j][i] = (float)ada_value(hvd_rank(), j, i);
		cudaMalloc((void **)&dx[j], m[j] * sizeof(float));
		cudaMemcpy(dx[j], x[j], m[j] * sizeof(float),
			   cudaMemcpyHostToDevice);
		dy[j] = j == 1 ? dx[j] : NULL;
		if (dy[j] == NULL)
			cudaMalloc((void **)&dy[j], m[j] * sizeof(float));
		snprintf(name, sizeof(name), "gpu.adasum.%d", j);
		/* The last with scaling factors: its own batch, scaled. */
		rc[j] = hvd_allreduce_scaled_gpu_async(
			name, dx[j], dy[j], m[j], HVD_FLOAT32, HVD_ADASUM,
			j == 2 ? 0.5 : 1, j == 2 ? 3 : 1, &h[j]);
	}
	for (j = 0; j < 3; j++)
		if (rc[j] == 0)
			rc[j] = hvd_wait(h[j]);
	for (j = 0; j < 3; j++) {
		double *want = malloc(m[j] * sizeof(*want)), top = 0, diff = 0;

		cudaMemcpy(x[j], dy[j], m[j] * sizeof(float),
			   cudaMemcpyDeviceToHost);
		ada_reference(j, m[j], L, want);
		for (i = 0; i < m[j]; i++) {
			want[i] *= j == 2 ? 1.5 : 1;
			top = fmax(top, fabs(want[i]));
			diff = fmax(diff, fabs(x[j][i] - want[i]));
		}
		EXPECT(rc[j] == 0 && diff <= 1e-5 * top,
		       "GPU Adasum of %zu floats, %d hosts of %d: %s, off by %g (largest %g)",
		       m[j], H, L, hvd_strerror(rc[j]), diff, top);
		if (rc[j] == 0)
			check_same_bits_of("a GPU Adasum", x[j], m[j]);
		free(want);
	}
	for (j = 0; j < 3; j++) {
		if (dy[j] != dx[j])
			cudaFree(dy[j]);
		cudaFree(dx[j]);
		free(x[j]);
	}
}

static void mode_gpu_adasum(void)
{
	use_gpu_or_skip();
	check_gpu_adasum();
}

static void mode_gpu(void)
{
	float x[4] = {0}, *dx;
	int r;

	use_gpu_or_skip();
	mode_gpu_collectives();
	mode_gpu_more();
	check_gpu_scaled_ints();
	check_gpu_ready();
	check_gpu_wait_stream();
	check_gpu_adasum();
	/* Host memory is refused on the spot, naming the buffer. */
	r = hvd_allreduce_gpu("host", x, x, 4, HVD_FLOAT32, HVD_SUM);
	EXPECT(r == HVD_EINVAL && strstr(hvd_error_message(), "host memory"),
	       "host memory accepted: %s", hvd_error_message());
	/* A name on the GPU on one rank and on the CPU on another. */
	cudaMalloc((void **)&dx, sizeof(x));
	if (hvd_size() > 1) {
		r = hvd_rank() == 0 ? hvd_allreduce_gpu("where", dx, dx, 4,
							HVD_FLOAT32, HVD_SUM)
				    : hvd_allreduce("where", x, x, 4,
						    HVD_FLOAT32, HVD_SUM);
		EXPECT(r == HVD_EMISMATCH &&
			       strstr(hvd_error_message(), "GPU memory"),
		       "CPU/GPU mix: %s", hvd_error_message());
	}
	cudaFree(dx);
}

/* gpujoin: join with GPU collectives. Rank r runs r + 2 steps, then
 * joins; in step s the ranks with r + 2 > s give data. Each step: an
 * average alone, 6 averages and a sum in flight together (fused), an
 * allgather, a broadcast from the last rank to join, an average of
 * integers, all in GPU memory; Adasum on one host (the average), refused
 * across hosts. */
static void gpu_join_step(int s)
{
	int n = hvd_size(), me = hvd_rank(), k, rc, givers;
	double sum, want, v[5], *dv, g[6][9], *dg[6];
	float big[1000], *dbig, mine = (float)me, *dmine, *dall = NULL;
	int32_t bc[3], *dbc, iv, *div;
	hvd_handle *h[7];
	size_t got = 0, i;
	char name[32];

	givers = join_givers(s, &sum);
	want = sum / givers;
	for (i = 0; i < 5; i++)
		v[i] = me + 1;
	cudaMalloc((void **)&dv, sizeof(v));
	cudaMemcpy(dv, v, sizeof(v), cudaMemcpyHostToDevice);
	snprintf(name, sizeof(name), "gstep.%d", s);
	rc = hvd_allreduce_gpu(name, dv, dv, 5, HVD_FLOAT64, HVD_AVERAGE);
	cudaMemcpy(v, dv, sizeof(v), cudaMemcpyDeviceToHost);
	EXPECT(rc == 0 && fabs(v[4] - want) < 1e-12, "%s: %g, want %g (%s)",
	       name, v[4], want, hvd_error_message());
	cudaFree(dv);
	/* A training step's gradients: fused, served by the cache. */
	for (k = 0; k < 6; k++) {
		for (i = 0; i < 9; i++)
			g[k][i] = me + 1;
		cudaMalloc((void **)&dg[k], sizeof(g[k]));
		cudaMemcpy(dg[k], g[k], sizeof(g[k]), cudaMemcpyHostToDevice);
		snprintf(name, sizeof(name), "ggrad.%d", k);
		rc = hvd_allreduce_gpu_async(name, dg[k], dg[k], (size_t)k + 4,
					     HVD_FLOAT64, HVD_AVERAGE, &h[k]);
		EXPECT(rc == 0, "%s: %s", name, hvd_error_message());
	}
	for (i = 0; i < 1000; i++)
		big[i] = (float)(me + 1);
	cudaMalloc((void **)&dbig, sizeof(big));
	cudaMemcpy(dbig, big, sizeof(big), cudaMemcpyHostToDevice);
	rc = hvd_allreduce_gpu_async("gbig", dbig, dbig, 1000, HVD_FLOAT32,
				     HVD_SUM, &h[6]);
	EXPECT(rc == 0, "gbig: %s", hvd_error_message());
	for (k = 0; k < 7; k++) {
		rc = hvd_wait(h[k]);
		EXPECT(rc == 0, "step %d, tensor %d: %s", s, k,
		       hvd_error_message());
	}
	for (k = 0; k < 6; k++) {
		cudaMemcpy(g[k], dg[k], sizeof(g[k]), cudaMemcpyDeviceToHost);
		EXPECT(fabs(g[k][k + 3] - want) < 1e-12 &&
			       (k + 4 == 9 || g[k][k + 4] == me + 1),
		       "step %d ggrad.%d: %g, want %g", s, k, g[k][k + 3],
		       want);
		cudaFree(dg[k]);
	}
	cudaMemcpy(big, dbig, sizeof(big), cudaMemcpyDeviceToHost);
	EXPECT(big[0] == (float)sum && big[999] == (float)sum,
	       "step %d gbig: %g and %g, want %g", s, big[0], big[999], sum);
	cudaFree(dbig);
	/* The joined ranks give nothing to an allgather. */
	cudaMalloc((void **)&dmine, sizeof(mine));
	cudaMemcpy(dmine, &mine, sizeof(mine), cudaMemcpyHostToDevice);
	snprintf(name, sizeof(name), "ggather.%d", s);
	rc = hvd_allgather_gpu(name, dmine, 1, HVD_FLOAT32, (void **)&dall,
			       &got);
	EXPECT(rc == 0 && got == (size_t)givers, "%s: %zu of %d (%s)", name,
	       got, givers, hvd_error_message());
	if (rc == 0) {
		float back[64];

		cudaMemcpy(back, dall, got * sizeof(float),
			   cudaMemcpyDeviceToHost);
		for (i = 0; i < got && i < 64; i++)
			EXPECT(back[i] == (float)(n - givers + i),
			       "%s: element %zu is %g", name, i, back[i]);
	}
	cudaFree(dall);
	cudaFree(dmine);
	/* The last rank to join still broadcasts from its root. */
	for (i = 0; i < 3; i++)
		bc[i] = me == n - 1 ? 7 + s : 0;
	cudaMalloc((void **)&dbc, sizeof(bc));
	cudaMemcpy(dbc, bc, sizeof(bc), cudaMemcpyHostToDevice);
	snprintf(name, sizeof(name), "gbcast.%d", s);
	rc = hvd_broadcast_gpu(name, dbc, 3, HVD_INT32, n - 1);
	cudaMemcpy(bc, dbc, sizeof(bc), cudaMemcpyDeviceToHost);
	EXPECT(rc == 0 && bc[2] == 7 + s, "%s: %d (%s)", name, bc[2],
	       hvd_error_message());
	cudaFree(dbc);
	/* GPU Adasum on one host is the average of the ranks that gave
	 * data; across hosts each host's average would count the joined
	 * ranks' zeros: refused. */
	if (givers < n) {
		bool one_host = hvd_local_size() == n;

		for (i = 0; i < 5; i++)
			v[i] = me + 1;
		cudaMalloc((void **)&dv, sizeof(v));
		cudaMemcpy(dv, v, sizeof(v), cudaMemcpyHostToDevice);
		snprintf(name, sizeof(name), "gada.%d", s);
		rc = hvd_allreduce_gpu(name, dv, dv, 5, HVD_FLOAT64,
				       HVD_ADASUM);
		cudaMemcpy(v, dv, sizeof(v), cudaMemcpyDeviceToHost);
		if (one_host)
			EXPECT(rc == 0 && fabs(v[2] - want) < 1e-12,
			       "%s: %g, want %g (%s)", name, v[2], want,
			       hvd_error_message());
		else
			EXPECT(rc == HVD_EINVAL &&
				       strstr(hvd_error_message(),
					      "Adasum across hosts") != NULL,
			       "%s across hosts: %s (%s)", name,
			       hvd_strerror(rc), hvd_error_message());
		cudaFree(dv);
	}
	/* An average of integers, truncated: over the ranks that gave data
	 * (through host memory while ranks have joined). */
	iv = me + 1;
	cudaMalloc((void **)&div, sizeof(iv));
	cudaMemcpy(div, &iv, sizeof(iv), cudaMemcpyHostToDevice);
	snprintf(name, sizeof(name), "gint.%d", s);
	rc = hvd_allreduce_gpu(name, div, div, 1, HVD_INT32, HVD_AVERAGE);
	cudaMemcpy(&iv, div, sizeof(iv), cudaMemcpyDeviceToHost);
	EXPECT(rc == 0 && iv == (int32_t)(sum / givers), "%s: %d, want %d (%s)",
	       name, iv, (int32_t)(sum / givers), hvd_error_message());
	cudaFree(div);
}

static void mode_gpu_join(void)
{
	int n = hvd_size(), me = hvd_rank(), s, last, rc;
	double x = me, *dx;

	use_gpu_or_skip();
	for (s = 0; s < me + 2; s++)
		gpu_join_step(s);
	last = hvd_join();
	EXPECT(last == n - 1, "join returned %d, want %d (%s)", last, n - 1,
	       last < 0 ? hvd_error_message() : "");
	/* After everyone joined, collectives are whole again. */
	cudaMalloc((void **)&dx, sizeof(x));
	cudaMemcpy(dx, &x, sizeof(x), cudaMemcpyHostToDevice);
	rc = hvd_allreduce_gpu("gafter.join", dx, dx, 1, HVD_FLOAT64,
			       HVD_AVERAGE);
	cudaMemcpy(&x, dx, sizeof(x), cudaMemcpyDeviceToHost);
	EXPECT(rc == 0 && x == (double)(n - 1) / 2, "after join: %g (%s)", x,
	       hvd_error_message());
	cudaFree(dx);
}

/* killgpu: as kill, with GPU buffers: 4 allreduces of 1 MiB (fused
 * batches on the engine's stream; op: HVD_SUM or HVD_ADASUM) and an
 * allgather of 1 MiB a rank (its result allocated by libhvd) in flight a
 * step when rank 1 dies. */
static void mode_killgpu(enum hvd_op op)
{
	size_t n = 1 << 18, got;
	float *d[5];
	void *all;
	hvd_handle *h[5];
	long long t_kill = 0;
	int i, k, rc = 0;

	use_gpu_or_skip();
	for (k = 0; k < 5; k++)
		cudaMalloc((void **)&d[k], n * sizeof(float));
	signal(SIGTERM, SIG_IGN);
	for (i = 0; i < 1000 && rc == 0; i++) {
		/* Every rank is done with the steps before. */
		if (i == 3 && (rc = hvd_barrier()) != 0)
			break;
		if (hvd_rank() == 1 && i == 3)
			raise(SIGKILL);
		if (i == 3)
			t_kill = ms_now();
		for (k = 0; k < 4; k++) {
			char name[32];

			snprintf(name, sizeof(name), "gbig.%d", k);
			h[k] = NULL;
			if (hvd_allreduce_gpu_async(name, d[k], d[k], n,
						    HVD_FLOAT32, op,
						    &h[k]) != 0)
				h[k] = NULL;
		}
		all = NULL;
		if (hvd_allgather_gpu_async("gbig.all", d[4], n, HVD_FLOAT32,
					    &all, &got, &h[4]) != 0)
			h[4] = NULL;
		for (k = 0; k < 5; k++) {
			int w = h[k] != NULL ? hvd_wait(h[k]) : HVD_EINVAL;

			if (rc == 0)
				rc = w;
		}
		cudaFree(all);
	}
	printf("rank %d: error after %lld ms: %s\n", hvd_rank(),
	       ms_now() - t_kill, hvd_strerror(rc));
	rc = hvd_allreduce_gpu("later", d[0], d[0], 1, HVD_FLOAT32, HVD_SUM);
	printf("rank %d: later: %s\n", hvd_rank(), hvd_strerror(rc));
	fflush(stdout);
	exit(3);
}
#else
static void mode_gpu(void)
{
	use_gpu_or_skip();
}

static void mode_gpu_adasum(void)
{
	use_gpu_or_skip();
}

static void mode_gpu_join(void)
{
	use_gpu_or_skip();
}

static void mode_killgpu(enum hvd_op op)
{
	(void)op;
	use_gpu_or_skip();
}
#endif

/* ---- the newer collectives ---- */

/* Alltoall: rank r sends (r + d) % 3 rows of `block` elements to rank d
 * (some counts 0); element k of the row for d is r*1000 + d*10 + k. */
static size_t a2a_rows(int r, int d)
{
	return (size_t)((r + d) % 3);
}

static void check_alltoall(int t, size_t block)
{
	int n = hvd_size(), me = hvd_rank(), d, q, rc;
	size_t *sc = calloc((size_t)n, sizeof(*sc));
	size_t *rcv = calloc((size_t)n, sizeof(*rcv));
	size_t total = 0, got = 0, at = 0, k, i;
	char name[64], *send, *out = NULL;

	for (d = 0; d < n; d++)
		total += sc[d] = a2a_rows(me, d) * block;
	send = malloc(total * esize[t] + 1);
	for (d = 0, at = 0; d < n; d++)
		for (k = 0; k < sc[d]; k++)
			put(send, at++, t, (double)((me * 7 + d * 3 + k) % 50));
	snprintf(name, sizeof(name), "a2a.%s.%zu", dname[t], block);
	rc = hvd_alltoall(name, send, sc, block, (enum hvd_dtype)t,
			  (void **)&out, &got, rcv);
	EXPECT(rc == 0, "%s: %s", name, hvd_error_message());
	for (q = 0, at = 0; rc == 0 && q < n; q++) {
		EXPECT(rcv[q] == a2a_rows(q, me) * block,
		       "%s: %zu elements from rank %d, want %zu", name, rcv[q],
		       q, a2a_rows(q, me) * block);
		for (i = 0; i < rcv[q] && at < got; i++, at++)
			if (get(out, at, t) !=
			    (double)((q * 7 + me * 3 + i) % 50))
				break;
		EXPECT(i == rcv[q], "%s: element %zu from rank %d wrong", name,
		       i, q);
	}
	EXPECT(rc != 0 || at == got, "%s: %zu elements, want %zu", name, got,
	       at);
	free(out);
	free(send);
	free(sc);
	free(rcv);
}

static void check_reducescatter(int t, int op, size_t rows, size_t block,
				double pre, double post)
{
	size_t count = rows * block, mine, start = 0, i, bad = 0;
	int n = hvd_size(), me = hvd_rank(), r, rc;
	char name[96];
	char *send = malloc(count * esize[t] + 1);
	char *recv;

	mine = hvd_reducescatter_count(count, block, me);
	for (r = 0; r < me; r++)
		start += hvd_reducescatter_count(count, block, r);
	recv = malloc(mine * esize[t] + 1);
	for (i = 0; i < count; i++)
		put(send, i, t, uvalue(me, i, op, t));
	snprintf(name, sizeof(name), "rs.%s.%d.%zu.%zu.%g", dname[t], op, rows,
		 block, pre);
	rc = hvd_reducescatter(name, send, recv, count, block,
			       (enum hvd_dtype)t, (enum hvd_op)op, pre, post);
	if (refused_op(t, op)) {
		EXPECT(rc == HVD_EINVAL, "%s: %s, not refused", name,
		       hvd_strerror(rc));
		rc = -1;
	} else {
		EXPECT(rc == 0, "%s: %s", name, hvd_error_message());
	}
	/* Horovod's split: rows / n each, the first rows % n one more. */
	EXPECT(mine == (rows / (size_t)n + ((size_t)me < rows % (size_t)n)) *
			       block,
	       "%s: %zu elements for rank %d", name, mine, me);
	for (i = 0; rc == 0 && i < mine; i++) {
		double want = expected(start + i, op, t), got = get(recv, i, t);

		if (op == HVD_SUM || op == HVD_AVERAGE)
			want *= pre * post;
		if (fabs(got - want) >
		    fmax(tolerance(t, op), pre != 1 ? 1e-2 : 0) *
			    fmax(1, fabs(want)))
			bad++;
	}
	EXPECT(bad == 0, "%s: %zu of %zu elements wrong", name, bad, mine);
	free(send);
	free(recv);
}

static void check_scaled(int t, size_t count, double pre, double post)
{
	char name[64];
	char *buf = malloc(count * esize[t] + 1);
	size_t i, bad = 0;
	int rc;

	for (i = 0; i < count; i++)
		put(buf, i, t, uvalue(hvd_rank(), i, HVD_SUM, t));
	snprintf(name, sizeof(name), "scaled.%s.%zu", dname[t], count);
	rc = hvd_allreduce_scaled(name, buf, buf, count, (enum hvd_dtype)t,
				  HVD_AVERAGE, pre, post);
	EXPECT(rc == 0, "%s: %s", name, hvd_error_message());
	for (i = 0; rc == 0 && i < count; i++) {
		double want = expected(i, HVD_AVERAGE, t) * pre * post;

		if (fabs(get(buf, i, t) - want) > 1e-2 * fmax(1, fabs(want)))
			bad++;
	}
	EXPECT(bad == 0, "%s: %zu of %zu elements wrong", name, bad, count);
	free(buf);
}

/* Work that no thread waits for still runs (the background thread runs
 * it when no waiting thread does): submitted at different times on each
 * rank, then only polled. */
static void check_polled(void)
{
	int n = hvd_size(), rc, i, bad = 0;
	long long deadline;
	float v[1000];
	hvd_handle *h = NULL;

	for (i = 0; i < 1000; i++)
		v[i] = (float)(hvd_rank() + i);
	usleep((useconds_t)(hvd_rank() * 30000));
	rc = hvd_allreduce_async("polled", v, v, 1000, HVD_FLOAT32, HVD_SUM,
				 &h);
	EXPECT(rc == 0, "polled: %s", hvd_error_message());
	if (rc != 0)
		return;
	deadline = ms_now() + 10000;
	while (hvd_poll(h) == 0 && ms_now() < deadline)
		usleep(1000);
	EXPECT(hvd_poll(h) == 1,
	       "an allreduce that no thread waits for is not done in 10 s");
	rc = hvd_wait(h);
	for (i = 0; rc == 0 && i < 1000; i++)
		bad += v[i] != (float)(n * i + n * (n - 1) / 2);
	EXPECT(rc == 0 && bad == 0, "polled: %d wrong, %s", bad,
	       hvd_strerror(rc));
}

/* Every rank ends with the same bits of a float sum, small (reduced by
 * every rank) or large (each part by one rank): the MIN and the MAX of
 * the results across the ranks are equal. */
static void check_same_bits(size_t count)
{
	float *v = malloc(count * sizeof(float));
	size_t i;
	int rc;

	for (i = 0; i < count; i++)
		v[i] = 0.1f * (float)(hvd_rank() + 1) * (float)i / 7.0f;
	rc = hvd_allreduce("bits", v, v, count, HVD_FLOAT32, HVD_SUM);
	EXPECT(rc == 0, "a sum of %zu floats: %s", count, hvd_strerror(rc));
	if (rc == 0)
		check_same_bits_of("a sum", v, count);
	free(v);
}

/* Adasum (HVD_ADASUM) of three float32 tensors at once (one fused batch,
 * each combining on its own norms) against the float64 tree, the same
 * bits on every rank, at any size (where it is not a power of two, the
 * ranks past the largest power of two fold in first). */
static void check_adasum(void)
{
	static const size_t m[3] = {5, 70001, 1000};
	float *x[3];
	hvd_handle *h[3];
	double *want;
	int j, rc[3];
	size_t i;

	for (j = 0; j < 3; j++) {
		x[j] = malloc(m[j] * sizeof(float));
		for (i = 0; i < m[j]; i++)
			x[j][i] = (float)ada_value(hvd_rank(), j, i);
	}
	for (j = 0; j < 3; j++) {
		char name[32];

		snprintf(name, sizeof(name), "adasum.%d", j);
		rc[j] = hvd_allreduce_async(name, x[j], x[j], m[j], HVD_FLOAT32,
					    HVD_ADASUM, &h[j]);
	}
	for (j = 0; j < 3; j++)
		if (rc[j] == 0)
			rc[j] = hvd_wait(h[j]);
	for (j = 0; j < 3; j++) {
		double top = 0, diff = 0;

		want = malloc(m[j] * sizeof(*want));
		ada_reference(j, m[j], 1, want);
		for (i = 0; i < m[j]; i++) {
			top = fmax(top, fabs(want[i]));
			diff = fmax(diff, fabs(x[j][i] - want[i]));
		}
		EXPECT(rc[j] == 0 && diff <= 1e-5 * top,
		       "Adasum of %zu floats: %s, off by %g (largest %g)", m[j],
		       hvd_strerror(rc[j]), diff, top);
		free(want);
		if (rc[j] == 0)
			check_same_bits_of("an Adasum", x[j], m[j]);
	}
	for (j = 0; j < 3; j++)
		free(x[j]);
}

static volatile sig_atomic_t alarms;

static void on_alarm(int sig)
{
	(void)sig;
	alarms++;
}

/* The thread that waits runs the engine: a signal handler that
 * interrupts it every 200 us (no SA_RESTART) changes no result. Under
 * AddressSanitizer every 1 ms: a signal costs it so much more that 3 or
 * 4 ranks on 2 cores under mpirun, whose waits spin, took 135 to 250 s
 * here at 200 us (4 to 5 s at 1 ms; the plain build 3 s at 200 us). */
#ifdef __SANITIZE_ADDRESS__
#define ALARM_US 1000
#else
#define ALARM_US 200
#endif
static void check_interrupted(void)
{
	struct sigaction sa = {.sa_handler = on_alarm}, old;
	struct itimerval it = {{0, ALARM_US}, {0, ALARM_US}},
			 off = {{0, 0}, {0, 0}};
	size_t count[2] = {1000, 200003}, c, i, bad = 0;
	int n = hvd_size(), k, rc = 0;
	float *v = malloc(200003 * sizeof(float));

	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, &old);
	setitimer(ITIMER_REAL, &it, NULL);
	for (k = 0; k < 400 && rc == 0; k++) {
		c = count[k % 2];
		for (i = 0; i < c; i++)
			v[i] = (float)(hvd_rank() + (int)(i % 1000));
		rc = hvd_allreduce("interrupted", v, v, c, HVD_FLOAT32,
				   HVD_SUM);
		for (i = 0; rc == 0 && i < c; i++)
			bad += v[i] !=
			       (float)(n * (int)(i % 1000) + n * (n - 1) / 2);
	}
	setitimer(ITIMER_REAL, &off, NULL);
	sigaction(SIGALRM, &old, NULL);
	EXPECT(rc == 0 && bad == 0 && alarms > 0,
	       "allreduces under a %d us timer signal: %s, %zu wrong, %d "
	       "signals",
	       ALARM_US, hvd_strerror(rc), bad, (int)alarms);
	free(v);
}

static void mode_more(void)
{
	static const int types[] = {HVD_UINT8,	 HVD_INT16,   HVD_INT32,
				    HVD_FLOAT16, HVD_FLOAT32, HVD_FLOAT64};
	size_t ti, rows;
	int t, op;
	float x = 1;

	for (ti = 0; ti < sizeof(types) / sizeof(types[0]); ti++) {
		check_alltoall(types[ti], 1);
		check_alltoall(types[ti], 3);
	}
	/* Blocks of up to 2.3 MiB: several rounds through shared memory (a
	 * round moves a rank's part of a slot, at most 2 MiB). */
	check_alltoall(HVD_FLOAT32, 300007);
	check_polled();
	check_same_bits(3001);
	check_same_bits(300007);
	check_adasum();
	check_interrupted();
	for (t = 0; t < NDTYPE; t++)
		for (op = 0; op < 5; op++) {
			/* fewer rows than ranks, a prime, a large one */
			check_reducescatter(t, op, 1, 1, 1, 1);
			check_reducescatter(t, op, 7, 3, 1, 1);
		}
	for (rows = 0; rows < 3; rows++)
		check_reducescatter(HVD_FLOAT32, HVD_SUM, rows, 2, 1, 1);
	check_reducescatter(HVD_FLOAT32, HVD_AVERAGE, 300007, 1, 1, 1);
	check_reducescatter(HVD_FLOAT32, HVD_AVERAGE, 1001, 5, 0.5, 4);
	check_reducescatter(HVD_BFLOAT16, HVD_SUM, 99, 2, 2, 0.25);
	for (t = HVD_FLOAT16; t <= HVD_FLOAT64; t++) {
		check_scaled(t, 1, 0.5, 3);
		check_scaled(t, 100003, 2, 0.125);
	}
	/* Integers scale in float64, truncated toward zero (Horovod's rule):
	 * each rank's value before the sum, the sum after. */
	{
		int32_t v[3] = {7 * (hvd_rank() + 1), -7 * (hvd_rank() + 1), 1};
		int32_t want[3] = {0, 0, 0};
		int r, rc;

		for (r = 0; r < hvd_size(); r++) {
			want[0] += (int32_t)(7 * (r + 1) * 0.5);
			want[1] += (int32_t)(-7 * (r + 1) * 0.5);
		}
		want[0] = (int32_t)(want[0] * 2.5);
		want[1] = (int32_t)(want[1] * 2.5);
		rc = hvd_allreduce_scaled("scaled.int32", v, v, 3, HVD_INT32,
					  HVD_SUM, 0.5, 2.5);
		EXPECT(rc == 0 && v[0] == want[0] && v[1] == want[1] &&
			       v[2] == 0,
		       "scaled int32: %d %d %d, not %d %d 0", v[0], v[1], v[2],
		       want[0], want[1]);
	}
	/* Bad arguments are refused on the spot. */
	EXPECT(hvd_reducescatter("bad", &x, &x, 3, 2, HVD_FLOAT32, HVD_SUM, 1,
				 1) == HVD_EINVAL,
	       "3 elements in rows of 2 accepted");
	{
		size_t sc[64] = {0}, rc[64], got;
		void *out;

		sc[0] = 3;
		EXPECT(hvd_alltoall("bad", &x, sc, 2, HVD_FLOAT32, &out, &got,
				    rc) == HVD_EINVAL,
		       "alltoall of 3 elements in rows of 2 accepted");
	}
}

#define GROUP_THREADS 3
#define GROUPS 6

/* Each thread submits groups of 2 allreduces, an allgather and a
 * reducescatter, and waits for them after hvd_group_end(). */
static void *group_thread(void *arg)
{
	long id = (long)arg;
	int n = hvd_size(), me = hvd_rank(), g, k, rc;

	for (g = 0; g < GROUPS; g++) {
		float a[300], b[5], rs[12], mine[2] = {(float)me, (float)me};
		float *gathered = NULL, rsout[12];
		size_t got = 0, i, start = 0, cnt;
		hvd_handle *h[4];
		char name[4][64];

		for (i = 0; i < 300; i++)
			a[i] = (float)(me + (int)i);
		for (i = 0; i < 5; i++)
			b[i] = (float)me;
		for (i = 0; i < 12; i++)
			rs[i] = (float)(i + (size_t)me);
		for (k = 0; k < 4; k++)
			snprintf(name[k], sizeof(name[k]), "grp.%ld.%d.%d", id,
				 g, k);
		rc = hvd_group_start();
		EXPECT(rc == 0, "group_start: %s", hvd_error_message());
		rc = hvd_allreduce_async(name[0], a, a, 300, HVD_FLOAT32,
					 HVD_SUM, &h[0]);
		rc |= hvd_allreduce_async(name[1], b, b, 5, HVD_FLOAT32,
					  HVD_AVERAGE, &h[1]);
		rc |= hvd_allgather_async(name[2], mine, 2, HVD_FLOAT32,
					  (void **)&gathered, &got, &h[2]);
		rc |= hvd_reducescatter_async(name[3], rs, rsout, 12, 1,
					      HVD_FLOAT32, HVD_SUM, 1, 1,
					      &h[3]);
		EXPECT(rc == 0, "group submit: %s", hvd_error_message());
		EXPECT(hvd_allreduce(name[0], a, a, 1, HVD_FLOAT32, HVD_SUM) ==
			       HVD_EINVAL,
		       "a synchronous call inside a group accepted");
		EXPECT(hvd_wait(h[0]) == HVD_EINVAL,
		       "a wait inside the group accepted");
		rc = hvd_group_end();
		EXPECT(rc == 0, "group_end: %s", hvd_error_message());
		for (k = 0; k < 4; k++) {
			rc = hvd_wait(h[k]);
			EXPECT(rc == 0, "%s: %s", name[k], hvd_error_message());
		}
		for (i = 0; i < 300; i++)
			if (a[i] != (float)(n * (n - 1) / 2 + n * (int)i))
				break;
		EXPECT(i == 300, "%s element %zu", name[0], i);
		EXPECT(b[0] == (float)(n - 1) / 2, "%s: %g", name[1], b[0]);
		EXPECT(got == (size_t)n * 2 && gathered[2 * (n - 1)] == n - 1,
		       "%s", name[2]);
		for (k = 0; k < me; k++)
			start += hvd_reducescatter_count(12, 1, k);
		cnt = hvd_reducescatter_count(12, 1, me);
		for (i = 0; i < cnt; i++)
			if (rsout[i] !=
			    (float)(n * (int)(start + i) + n * (n - 1) / 2))
				break;
		EXPECT(i == cnt, "%s element %zu", name[3], i);
		free(gathered);
	}
	return NULL;
}

static void mode_groups(void)
{
	pthread_t t[GROUP_THREADS];
	long i;

	/* Twice over: the second time through the response cache. */
	for (i = 0; i < GROUP_THREADS; i++)
		pthread_create(&t[i], NULL, group_thread, (void *)i);
	for (i = 0; i < GROUP_THREADS; i++)
		pthread_join(t[i], NULL);
	for (i = 0; i < GROUP_THREADS; i++)
		pthread_create(&t[i], NULL, group_thread, (void *)i);
	for (i = 0; i < GROUP_THREADS; i++)
		pthread_join(t[i], NULL);
	EXPECT(hvd_group_end() == HVD_EINVAL, "group_end without start");
}

/* Rank r trains r + 2 steps, then joins. In step s the ranks that still
 * have data are those with r + 2 > s: the average of their values. */
static void mode_join(void)
{
	int n = hvd_size(), me = hvd_rank(), s, r, last;

	for (s = 0; s < me + 2; s++) {
		double v[5], want, sum;
		float *all = NULL, mine = (float)me;
		size_t got = 0;
		int givers = join_givers(s, &sum), bc[3] = {0, 0, 0}, rc;
		char name[32];

		want = sum / givers;
		for (r = 0; r < 5; r++)
			v[r] = me + 1;
		snprintf(name, sizeof(name), "step.%d", s);
		rc = hvd_allreduce(name, v, v, 5, HVD_FLOAT64, HVD_AVERAGE);
		EXPECT(rc == 0 && fabs(v[4] - want) < 1e-12,
		       "%s: %g, want %g (%s)", name, v[4], want,
		       hvd_error_message());
		/* The joined ranks give nothing to an allgather. */
		snprintf(name, sizeof(name), "gather.%d", s);
		rc = hvd_allgather(name, &mine, 1, HVD_FLOAT32, (void **)&all,
				   &got);
		EXPECT(rc == 0 && got == (size_t)givers, "%s: %zu of %d (%s)",
		       name, got, givers, hvd_error_message());
		free(all);
		/* The last rank to join still broadcasts from its root. */
		if (me == n - 1)
			bc[0] = bc[1] = bc[2] = 7 + s;
		snprintf(name, sizeof(name), "bcast.%d", s);
		rc = hvd_broadcast(name, bc, 3, HVD_INT32, n - 1);
		EXPECT(rc == 0 && bc[2] == 7 + s, "%s: %s", name,
		       hvd_error_message());
		/* The same names every step, several in flight: a
		 * training loop's gradients, served by the response cache
		 * while ranks join. */
		{
			double g[6][9];
			hvd_handle *h[6];
			int k, i;

			for (k = 0; k < 6; k++) {
				for (i = 0; i < 9; i++)
					g[k][i] = me + 1;
				snprintf(name, sizeof(name), "grad.%d", k);
				rc = hvd_allreduce_async(
					name, g[k], g[k], (size_t)k + 4,
					HVD_FLOAT64, HVD_AVERAGE, &h[k]);
				EXPECT(rc == 0, "%s: %s", name,
				       hvd_error_message());
			}
			for (k = 0; k < 6; k++) {
				rc = hvd_wait(h[k]);
				EXPECT(rc == 0 &&
					       fabs(g[k][k + 3] - want) < 1e-12,
				       "step %d grad.%d: %g, want %g (%s)", s,
				       k, g[k][k + 3], want,
				       hvd_error_message());
			}
		}
	}
	if (me == 0 && n > 1) {
		/* Rank 0 has joined when the others reach this: a broadcast
		 * from it fails on every rank that calls it. */
	}
	last = hvd_join();
	EXPECT(last == n - 1, "join returned %d, want %d (%s)", last, n - 1,
	       last < 0 ? hvd_error_message() : "");
	/* After everyone joined, collectives are whole again. */
	{
		double x = me;
		int rc = hvd_allreduce("after.join", &x, &x, 1, HVD_FLOAT64,
				       HVD_AVERAGE);

		EXPECT(rc == 0 && x == (double)(n - 1) / 2, "after join: %g",
		       x);
	}
	/* A broadcast from a joined root fails on every rank. */
	if (n > 1) {
		int y = 1, rc;

		/* Ranks 1 to n-1 join in any order after rank 0: the last
		 * is one of them. */
		if (me == 0) {
			rc = hvd_join();
			EXPECT(rc >= 1 && rc <= n - 1, "second join gave %d",
			       rc);
		} else {
			rc = hvd_broadcast("from.joined", &y, 1, HVD_INT32, 0);
			EXPECT(rc == HVD_EINVAL &&
				       strstr(hvd_error_message(),
					      "its root, rank 0, has joined") !=
					       NULL,
			       "broadcast from a joined root: %s (%s)",
			       hvd_strerror(rc), hvd_error_message());
			rc = hvd_join();
			EXPECT(rc >= 1 && rc <= n - 1, "second join gave %d",
			       rc);
		}
	}
}

static void mode_mismatch2(void)
{
	int r = hvd_rank(), n = hvd_size(), rc;
	float x[64] = {0}, out[64];
	size_t sc[64] = {0}, rcv[64], got;
	void *res = NULL;
	hvd_handle *h[2];

	rc = hvd_reducescatter("rs.count", x, out, r == 0 ? 8 : 10, 1,
			       HVD_FLOAT32, HVD_SUM, 1, 1);
	EXPECT(rc == HVD_EMISMATCH, "rs.count: %s", hvd_strerror(rc));
	rc = hvd_allreduce_scaled("factors", x, x, 4, HVD_FLOAT32, HVD_SUM,
				  r == 1 ? 2 : 1, 1);
	EXPECT(rc == HVD_EMISMATCH, "factors: %s", hvd_strerror(rc));
	sc[0] = 2;
	rc = hvd_alltoall("a2a.rows", x, sc, r == 0 ? 1 : 2, HVD_FLOAT32, &res,
			  &got, rcv);
	EXPECT(rc == HVD_EMISMATCH, "a2a.rows: %s", hvd_strerror(rc));
	free(res);
	/* Rank 0 groups {g.a, g.b}, the others {g.a, g.c}. */
	hvd_group_start();
	hvd_allreduce_async("g.a", x, x, 4, HVD_FLOAT32, HVD_SUM, &h[0]);
	hvd_allreduce_async(r == 0 ? "g.b" : "g.c", x, x, 4, HVD_FLOAT32,
			    HVD_SUM, &h[1]);
	hvd_group_end();
	rc = hvd_wait(h[0]);
	EXPECT(rc == HVD_EMISMATCH, "g.a: %s", hvd_strerror(rc));
	EXPECT(strstr(hvd_error_message(), "group") != NULL, "g.a says: %s",
	       hvd_error_message());
	rc = hvd_wait(h[1]);
	EXPECT(rc == HVD_EMISMATCH, "g.b/g.c: %s", hvd_strerror(rc));
	/* The job goes on afterwards. */
	x[0] = 1;
	rc = hvd_allreduce("after2", x, x, 1, HVD_FLOAT32, HVD_SUM);
	EXPECT(rc == 0 && x[0] == (float)n, "after: %s", hvd_strerror(rc));
}

static void mode_killa2a(void)
{
	int n = hvd_size(), i, d, rc = 0;
	size_t per = 1 << 20, *sc = calloc((size_t)n, sizeof(*sc));
	size_t *rcv = calloc((size_t)n, sizeof(*rcv)), got;
	float *buf = calloc(per * (size_t)n, sizeof(float));
	long long t_kill = 0;

	signal(SIGTERM, SIG_IGN);
	for (d = 0; d < n; d++)
		sc[d] = per;
	for (i = 0; i < 1000 && rc == 0; i++) {
		char name[32];
		void *out = NULL;

		snprintf(name, sizeof(name), "a2a.%d", i);
		if (hvd_rank() == 1 && i == 3)
			raise(SIGKILL);
		if (i == 3)
			t_kill = ms_now();
		rc = hvd_alltoall(name, buf, sc, 1, HVD_FLOAT32, &out, &got,
				  rcv);
		free(out);
	}
	printf("rank %d: error after %lld ms: %s\n", hvd_rank(),
	       ms_now() - t_kill, hvd_strerror(rc));
	fflush(stdout);
	exit(3);
}

/* Entries of /proc/self/<dir>, or VmRSS in KiB for dir NULL. */
static long proc_count(const char *dir)
{
	char path[64], line[256];
	struct dirent *e;
	long n = 0;
	FILE *f;
	DIR *d;

	if (dir == NULL) {
		f = fopen("/proc/self/status", "r");
		while (f != NULL && fgets(line, sizeof(line), f) != NULL)
			if (strncmp(line, "VmRSS:", 6) == 0)
				n = strtol(line + 6, NULL, 10);
		if (f != NULL)
			fclose(f);
		return n;
	}
	snprintf(path, sizeof(path), "/proc/self/%s", dir);
	d = opendir(path);
	while (d != NULL && (e = readdir(d)) != NULL)
		n += e->d_name[0] != '.';
	if (d != NULL)
		closedir(d);
	return n;
}

/* gpuresets: after each hvd_init also an allreduce on the GPU, so that
 * the GPU engine is set up (stream, events, NCCL communicator) and torn
 * down each time. */
static int reset_gpu_allreduce(int i)
{
#if HVD_NCCL
	float x = 1, *d = NULL;
	int rc;

	if (cudaMalloc((void **)&d, sizeof(x)) != cudaSuccess)
		return HVD_ENOMEM;
	cudaMemcpy(d, &x, sizeof(x), cudaMemcpyHostToDevice);
	rc = hvd_allreduce_gpu("resets.g", d, d, 1, HVD_FLOAT32, HVD_SUM);
	cudaMemcpy(&x, d, sizeof(x), cudaMemcpyDeviceToHost);
	cudaFree(d);
	EXPECT(rc == 0 && x == (float)hvd_size(), "GPU allreduce %d: %s (%g)",
	       i, hvd_strerror(rc), x);
	return rc;
#else
	(void)i;
	return HVD_ENOTSUP;
#endif
}

static void mode_resets(int times, long kib, int gpu)
{
	long fds = 0, threads = 0, rss = 0;
	int i, rc, gen = hvd_elastic_generation();
	int rank = hvd_rank(), size = hvd_size();

	if (gpu)
		use_gpu_or_skip();
	for (i = 1; i <= times; i++) {
		float x = 1;

		hvd_shutdown();
		rc = hvd_init();
		if (rc != HVD_OK) {
			EXPECT(0, "hvd_init %d: %s", i, hvd_strerror(rc));
			return;
		}
		if (gen == 0)
			EXPECT(hvd_rank() == rank && hvd_size() == size &&
				       hvd_elastic_generation() == 0,
			       "hvd_init %d: rank %d of %d, generation %d", i,
			       hvd_rank(), hvd_size(),
			       hvd_elastic_generation());
		rc = hvd_allreduce("resets.x", &x, &x, 1, HVD_FLOAT32, HVD_SUM);
		EXPECT(rc == 0 && x == (float)hvd_size(), "allreduce %d: %s", i,
		       hvd_strerror(rc));
		if (gpu && reset_gpu_allreduce(i) != 0)
			return;
		if (i == 10) {
			fds = proc_count("fd");
			threads = proc_count("task");
			rss = proc_count(NULL);
			/* No rank shuts down before every rank has counted: a
			 * peer's shutdown ends this rank's engine (its thread
			 * and a descriptor) at once. */
			rc = hvd_barrier();
			EXPECT(rc == 0, "barrier %d: %s", i, hvd_strerror(rc));
		}
	}
	EXPECT(gen == 0 || hvd_elastic_generation() == gen + times,
	       "generation %d after %d resets from %d",
	       hvd_elastic_generation(), times, gen);
	if (times >= 10) {
		long f = proc_count("fd"), t = proc_count("task"),
		     m = proc_count(NULL);

		rc = hvd_barrier(); /* as at 10: counted before any shutdown */
		EXPECT(rc == 0, "barrier %d: %s", times, hvd_strerror(rc));

		EXPECT(f == fds,
		       "descriptors: %ld after 10 resets, %ld after %d", fds, f,
		       times);
		EXPECT(t == threads,
		       "threads: %ld after 10 resets, %ld after %d", threads, t,
		       times);
		EXPECT(kib == 0 || m - rss <= kib,
		       "memory: %ld KiB after 10 resets, %ld after %d", rss, m,
		       times);
		printf("rank %d: %d resets: %ld descriptors, %ld threads, RSS %ld KiB (%+ld)\n",
		       hvd_rank(), times, f, t, m, m - rss);
	}
}

/* A step's tensor k on the GPU (gpu: dev[k]): copied there on the default
 * stream, still being written as it is submitted, as a gradient of a
 * backward pass is; then the result copied back. */
static int step_submit(int gpu, float **dev, int k, float *host, size_t n,
		       const char *name, hvd_handle **h)
{
#if HVD_NCCL
	if (gpu) {
		if (dev[k] == NULL &&
		    cudaMalloc((void **)&dev[k], n * sizeof(float)) !=
			    cudaSuccess)
			return HVD_ENOMEM;
		cudaMemcpyAsync(dev[k], host, n * sizeof(float),
				cudaMemcpyHostToDevice, cudaStreamLegacy);
		return hvd_allreduce_gpu_async(name, dev[k], dev[k], n,
					       HVD_FLOAT32, HVD_SUM, h);
	}
#endif
	(void)gpu, (void)dev, (void)k;
	return hvd_allreduce_async(name, host, host, n, HVD_FLOAT32, HVD_SUM,
				   h);
}

static void step_result(int gpu, float **dev, int k, float *host, size_t n)
{
#if HVD_NCCL
	if (gpu)
		cudaMemcpy(host, dev[k], n * sizeof(float),
			   cudaMemcpyDeviceToHost);
#endif
	(void)gpu, (void)dev, (void)k, (void)host, (void)n;
}

/* The allgather of step s (mode_steps): rank r's r + 1 rows of 4, each
 * 100 r + s + its place in the rank's block. */
static void check_step_gather(int s, hvd_handle *h, void *const *result,
			      const size_t *count)
{
	size_t want = (size_t)hvd_size() * (hvd_size() + 1) * 2, at = 0,
	       bad = 0;
	int r, i, rc = hvd_wait(h); /* fills *result and *count */
	const float *all = *result;

	EXPECT(rc == 0, "step %d: the allgather: %s", s, hvd_error_message());
	EXPECT(*count == want, "step %d: the allgather gave %zu, not %zu", s,
	       *count, want);
	for (r = 0; rc == 0 && *count == want && r < hvd_size(); r++)
		for (i = 0; i < (r + 1) * 4; i++, at++)
			bad += all[at] != (float)(100 * r + s + i);
	EXPECT(bad == 0, "step %d: %zu gathered values wrong", s, bad);
	free(*result);
}

static void mode_steps(int steps, int gpu)
{
	enum { K = 12 };
	static float buf[K][1 << 18];
	float *dev[K] = {NULL};
	int size = hvd_size(), rank = hvd_rank(), s, k;
	size_t i;

	if (gpu)
		use_gpu_or_skip();
	for (s = 0; s < steps && failures == 0; s++) {
		hvd_handle *h[K], *gh = NULL;
		float mine[64];
		void *all = NULL;
		size_t got = 0;

		for (k = 0; k < K; k++) {
			size_t n = (size_t)256 << (k % 11);
			char name[32];

			for (i = 0; i < n; i++)
				buf[k][i] =
					(float)(rank + s + k + (int)(i % 7));
			snprintf(name, sizeof(name), "step.%d", k);
			EXPECT(step_submit(gpu, dev, k, buf[k], n, name,
					   &h[k]) == 0,
			       "step %d: submit %d", s, k);
		}
		/* On the CPU, an allgather too: rank r's r + 1 rows. */
		for (i = 0; !gpu && i < (size_t)(rank + 1) * 4; i++)
			mine[i] = (float)(100 * rank + s + (int)i);
		if (!gpu)
			EXPECT(hvd_allgather_async("step.gather", mine,
						   (size_t)(rank + 1) * 4,
						   HVD_FLOAT32, &all, &got,
						   &gh) == 0,
			       "step %d: submit the allgather", s);
		for (k = 0; k < K; k++) {
			size_t n = (size_t)256 << (k % 11);

			EXPECT(hvd_wait(h[k]) == 0, "step %d: wait %d: %s", s,
			       k, hvd_error_message());
			step_result(gpu, dev, k, buf[k], n);
			for (i = 0; i < n; i += 97) {
				float want =
					(float)(size * (s + k + (int)(i % 7)) +
						size * (size - 1) / 2);

				if (buf[k][i] != want) {
					EXPECT(0,
					       "step %d tensor %d [%zu]: %g, not %g",
					       s, k, i, buf[k][i], want);
					break;
				}
			}
		}
		if (gh != NULL)
			check_step_gather(s, gh, &all, &got);
	}
#if HVD_NCCL
	for (k = 0; k < K; k++)
		cudaFree(dev[k]);
#endif
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "all";
	int rc = hvd_init(), rank = hvd_rank();

	if (rc != 0) {
		fprintf(stderr, "hvd_init: %s\n", hvd_strerror(rc));
		return 2;
	}
	if (strcmp(mode, "all") == 0)
		mode_all();
	else if (strcmp(mode, "threads") == 0)
		mode_threads();
	else if (strcmp(mode, "fusion") == 0)
		mode_fusion();
	else if (strcmp(mode, "mismatch") == 0)
		mode_mismatch();
	else if (strcmp(mode, "kill") == 0)
		mode_kill();
	else if (strcmp(mode, "stall") == 0)
		mode_stall();
	else if (strcmp(mode, "drop") == 0)
		mode_drop(argc > 2 ? atoi(argv[2]) : 4096);
	else if (strcmp(mode, "quiet") == 0)
		mode_quiet(argc > 2 ? atoi(argv[2]) : 4);
	else if (strcmp(mode, "gpu") == 0)
		mode_gpu();
	else if (strcmp(mode, "nogpu") == 0)
		mode_nogpu();
	else if (strcmp(mode, "gpuadasum") == 0)
		mode_gpu_adasum();
	else if (strcmp(mode, "more") == 0)
		mode_more();
	else if (strcmp(mode, "groups") == 0)
		mode_groups();
	else if (strcmp(mode, "join") == 0)
		mode_join();
	else if (strcmp(mode, "gpujoin") == 0)
		mode_gpu_join();
	else if (strcmp(mode, "mismatch2") == 0)
		mode_mismatch2();
	else if (strcmp(mode, "killa2a") == 0)
		mode_killa2a();
	else if (strcmp(mode, "killgpu") == 0)
		mode_killgpu(argc > 2 && strcmp(argv[2], "adasum") == 0
				     ? HVD_ADASUM
				     : HVD_SUM);
	else if (strcmp(mode, "idle") == 0)
		mode_idle();
	else if (strcmp(mode, "steps") == 0)
		mode_steps(argc > 2 ? atoi(argv[2]) : 300, 0);
	else if (strcmp(mode, "gpusteps") == 0)
		mode_steps(argc > 2 ? atoi(argv[2]) : 300, 1);
	else if (strcmp(mode, "resets") == 0)
		mode_resets(argc > 2 ? atoi(argv[2]) : 100,
			    argc > 3 ? atol(argv[3]) : 0, 0);
	else if (strcmp(mode, "gpuresets") == 0)
		mode_resets(argc > 2 ? atoi(argv[2]) : 100,
			    argc > 3 ? atol(argv[3]) : 0, 1);
	else {
		fprintf(stderr, "unknown mode '%s'\n", mode);
		return 2;
	}
	hvd_shutdown();
	if (failures == 0)
		printf("rank %d: ok\n", rank);
	return failures ? 1 : 0;
}
