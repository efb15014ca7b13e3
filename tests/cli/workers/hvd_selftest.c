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
 *   gpu       the checks of `all` (and fusion, and a CPU/GPU
 *             disagreement) on buffers in GPU memory, over NCCL; exits
 *             77 after one line "skip: REASON" where there is no GPU
 *   nogpu     the GPU collectives refuse with HVD_ENOTSUP and say why;
 *             the CPU ones go on
 * Prints "rank R: ok" and exits 0, or names what went wrong and exits 1. */
#include <hvd.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#if HVD_NCCL
#include <cuda_runtime.h>
#endif

static int failures;

#define EXPECT(cond, ...)                                         \
	do {                                                      \
		if (!(cond)) {                                    \
			printf("rank %d: FAIL: ", hvd_rank());    \
			printf(__VA_ARGS__);                      \
			printf("\n");                             \
			failures++;                               \
		}                                                 \
	} while (0)

static const size_t esize[] = {1, 1, 4, 8, 2, 2, 4, 8};
static const char *const dname[] = {"uint8",	"int8",	    "int32",
				     "int64",	"float16",  "bfloat16",
				     "float32", "float64"};

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
		b = ((uint32_t)(h & 0x8000) << 16) | ((uint32_t)(e + 112) << 23) |
		    ((uint32_t)(h & 0x3ff) << 13);
	memcpy(&f, &b, 4);
	return f;
}

static void put(void *buf, size_t i, int t, double v)
{
	float f = (float)v;
	uint32_t b;

	switch (t) {
	case HVD_UINT8: ((uint8_t *)buf)[i] = (uint8_t)v; break;
	case HVD_INT8: ((int8_t *)buf)[i] = (int8_t)v; break;
	case HVD_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
	case HVD_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
	case HVD_FLOAT16: ((uint16_t *)buf)[i] = to_half(f); break;
	case HVD_BFLOAT16:
		memcpy(&b, &f, 4);
		((uint16_t *)buf)[i] = (uint16_t)(b >> 16);
		break;
	case HVD_FLOAT32: ((float *)buf)[i] = f; break;
	case HVD_FLOAT64: ((double *)buf)[i] = v; break;
	}
}

static double get(const void *buf, size_t i, int t)
{
	uint32_t b;
	float f;

	switch (t) {
	case HVD_UINT8: return ((const uint8_t *)buf)[i];
	case HVD_INT8: return ((const int8_t *)buf)[i];
	case HVD_INT32: return ((const int32_t *)buf)[i];
	case HVD_INT64: return (double)((const int64_t *)buf)[i];
	case HVD_FLOAT16: return from_half(((const uint16_t *)buf)[i]);
	case HVD_BFLOAT16:
		b = (uint32_t)((const uint16_t *)buf)[i] << 16;
		memcpy(&f, &b, 4);
		return f;
	case HVD_FLOAT32: return ((const float *)buf)[i];
	default: return ((const double *)buf)[i];
	}
}

static double expected(size_t i, int op, int t)
{
	int n = hvd_size(), r;
	double acc = uvalue(0, i, op, t);

	for (r = 1; r < n; r++) {
		double v = uvalue(r, i, op, t);

		if (op == HVD_SUM || op == HVD_AVERAGE)
			acc += v;
		else if (op == HVD_PRODUCT)
			acc *= v;
		else if (op == HVD_MIN)
			acc = v < acc ? v : acc;
		else
			acc = v > acc ? v : acc;
	}
	if (op == HVD_AVERAGE)
		acc = t <= HVD_INT64 ? trunc(acc / n) : acc / n;
	return acc;
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
	size_t i, bad = 0;
	int rc;

	for (i = 0; i < count; i++)
		put(send, i, t, uvalue(hvd_rank(), i, op, t));
	snprintf(name, sizeof(name), "ar.%s.%d.%zu.%d%s", dname[t], op, count,
		 inplace, gpu ? ".gpu" : "");
	rc = gpu ? gpu_allreduce(name, send, recv, count, t, op, inplace)
		 : hvd_allreduce(name, send, recv, count, (enum hvd_dtype)t,
				 (enum hvd_op)op);
	EXPECT(rc == 0, "%s: %s", name, hvd_strerror(rc));
	for (i = 0; rc == 0 && i < count; i++) {
		double want = expected(i, op, t), got = get(recv, i, t);
		double tol = (t <= HVD_INT64 || op != HVD_AVERAGE) ? 0
			     : t == HVD_BFLOAT16			? 1e-2
			     : t == HVD_FLOAT16			? 2e-3
								: 1e-6;

		if (fabs(got - want) > tol * fmax(1, fabs(want)))
			bad++;
	}
	EXPECT(bad == 0, "%s: %zu of %zu elements wrong", name, bad, count);
	free(send);
	if (!inplace)
		free(recv);
}

static void check_allreduce(int t, int op, size_t count, int inplace)
{
	check_allreduce_on(t, op, count, inplace, 0);
}

static void mode_all(void)
{
	static const size_t counts[] = {0, 1, 7, 10007};
	size_t ci, i, got_n = 0;
	int t, op, root, r;
	unsigned char *buf;
	int32_t *mine, *all = NULL;

	for (t = 0; t < 8; t++)
		for (op = 0; op < 5; op++)
			for (ci = 0; ci < 4; ci++)
				check_allreduce(t, op, counts[ci], ci % 2);
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
			buf[i] = hvd_rank() == root ? (unsigned char)(i * 7 + root)
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
	/* A name in flight cannot be submitted twice. */
	{
		hvd_handle *a, *b;
		float x[1000] = {0};

		EXPECT(hvd_allreduce_async("dup", x, x, 1000, HVD_FLOAT32,
					   HVD_SUM, &a) == 0,
		       "first dup");
		EXPECT(hvd_allreduce_async("dup", x, x, 1000, HVD_FLOAT32,
					   HVD_SUM, &b) == HVD_EINVAL,
		       "a second 'dup' in flight was accepted");
		EXPECT(hvd_wait(a) == 0, "dup wait");
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
	EXPECT(strstr(hvd_error_message(), "'count'") != NULL,
	       "message: %s", hvd_error_message());
	rc = hvd_allreduce("dtype", r == 0 ? (void *)x : (void *)d,
			   r == 0 ? (void *)x : (void *)d, 4,
			   r == 0 ? HVD_FLOAT32 : HVD_FLOAT64, HVD_SUM);
	EXPECT(rc == HVD_EMISMATCH, "dtype: %s", hvd_strerror(rc));
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

/* Allreduce until an error; report how long after the last success it
 * came. A file in $PIDDIR says the loop runs. */
static void mode_drop(void)
{
	float buf[4096] = {0};
	long long last = ms_now();
	char path[512];
	int i, rc = 0;
	FILE *f;

	signal(SIGTERM, SIG_IGN);
	snprintf(path, sizeof(path), "%s/looping%d",
		 getenv("PIDDIR") ? getenv("PIDDIR") : "/tmp", hvd_rank());
	for (i = 0; i < 300000 && rc == 0; i++) {
		char name[32];

		snprintf(name, sizeof(name), "drop.%d", i % 8);
		rc = hvd_allreduce(name, buf, buf, 4096, HVD_FLOAT32, HVD_SUM);
		if (rc == 0)
			last = ms_now();
		if (i == 100 && (f = fopen(path, "w")) != NULL)
			fclose(f);
	}
	printf("rank %d: error %lld ms after the last success: %s\n",
	       hvd_rank(), ms_now() - last, hvd_strerror(rc));
	fflush(stdout);
	exit(3);
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

	for (t = 0; t < 8; t++)
		for (op = 0; op < 5; op++)
			for (ci = 0; ci < 4; ci++)
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
			host[i] = me == root ? (unsigned char)(i * 7 + root) : 0;
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

static void mode_gpu(void)
{
	int dev = hvd_gpu_device(), r;
	float x[4] = {0}, *dx;

	if (dev < 0) {
		printf("skip: %s\n", hvd_error_message());
		hvd_shutdown();
		exit(77);
	}
	cudaSetDevice(dev);
	mode_gpu_collectives();
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
#else
static void mode_gpu(void)
{
	printf("skip: this self-test was built without CUDA and NCCL\n");
	hvd_shutdown();
	exit(77);
}
#endif

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
		mode_drop();
	else if (strcmp(mode, "gpu") == 0)
		mode_gpu();
	else if (strcmp(mode, "nogpu") == 0)
		mode_nogpu();
	else {
		fprintf(stderr, "unknown mode '%s'\n", mode);
		return 2;
	}
	hvd_shutdown();
	if (failures == 0)
		printf("rank %d: ok\n", rank);
	return failures ? 1 : 0;
}
