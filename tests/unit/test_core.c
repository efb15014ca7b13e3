/* test_core.c: libhvd's start-up from the rank environment, its error
 * texts, the working buffers' growth rule and the autotuner's search. */
#include <stdlib.h>

#include "hvd.h"
#include "tap.h"
#include "engine/autotune.h"
#include "engine/engine.h"
#include "util/internal.h"

static void clear_env(void)
{
	static const char *const names[] = {
		"HOROVOD_RANK",	      "HOROVOD_SIZE",
		"HOROVOD_LOCAL_RANK", "HOROVOD_LOCAL_SIZE",
		"HOROVOD_CROSS_RANK", "HOROVOD_CROSS_SIZE"};
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		unsetenv(names[i]);
}

static void test_single_rank(void)
{
	clear_env();
	CHECK(hvd_rank() == -1 && hvd_is_homogeneous() == -1);
	CHECK(hvd_init() == HVD_OK);
	CHECK(hvd_init() == HVD_EALREADY);
	CHECK(hvd_rank() == 0 && hvd_size() == 1);
	CHECK(hvd_local_rank() == 0 && hvd_local_size() == 1);
	CHECK(hvd_cross_rank() == 0 && hvd_cross_size() == 1);
	CHECK(hvd_is_homogeneous() == 1);
	hvd_shutdown();
	CHECK(!hvd_initialized() && hvd_size() == -1);
	CHECK(hvd_is_homogeneous() == -1);
}

/* hvd_wait_stream() of an operation that no GPU stream can wait for (a
 * CPU collective) is hvd_wait(): it waits, frees, and says the status. */
static void test_wait_stream_on_the_cpu(void)
{
	double in[3] = {1, 2, 3}, out[3] = {0, 0, 0};
	hvd_handle *h = NULL;

	clear_env();
	CHECK(hvd_wait_stream(NULL, NULL) == HVD_EINVAL);
	CHECK(hvd_init() == HVD_OK);
	CHECK(hvd_allreduce_async("ws", in, out, 3, HVD_FLOAT64, HVD_SUM, &h) ==
	      HVD_OK);
	CHECK(hvd_wait_stream(h, NULL) == HVD_OK);
	CHECK(out[0] == 1 && out[1] == 2 && out[2] == 3);
	/* The name is free again at once. */
	CHECK(hvd_allreduce_async("ws", in, out, 3, HVD_FLOAT64, HVD_MAX, &h) ==
	      HVD_OK);
	CHECK(hvd_wait_stream(h, NULL) == HVD_OK);
	hvd_shutdown();
}

static void test_from_env(void)
{
	clear_env();
	setenv("HOROVOD_RANK", "5", 1);
	setenv("HOROVOD_SIZE", "8", 1);
	setenv("HOROVOD_LOCAL_RANK", "1", 1);
	setenv("HOROVOD_LOCAL_SIZE", "4", 1);
	setenv("HOROVOD_CROSS_RANK", "1", 1);
	setenv("HOROVOD_CROSS_SIZE", "2", 1);
	/* A rank of a larger job needs hvdrun's rendezvous to find its
	 * peers (the rank values themselves are checked under hvdrun, in
	 * tests/cli/libhvd.bats). */
	CHECK(hvd_init() == HVD_EINVAL);
	CHECK(!hvd_initialized() && hvd_rank() == -1);
	setenv("HOROVOD_SIZE", "1", 1);
	setenv("HOROVOD_RANK", "0", 1);
	setenv("HOROVOD_LOCAL_SIZE", "1", 1);
	setenv("HOROVOD_LOCAL_RANK", "0", 1);
	setenv("HOROVOD_CROSS_SIZE", "1", 1);
	setenv("HOROVOD_CROSS_RANK", "0", 1);
	CHECK(hvd_init() == HVD_OK);
	CHECK(hvd_rank() == 0 && hvd_size() == 1);
	hvd_shutdown();
}

static void test_bad_env(void)
{
	clear_env();
	setenv("HOROVOD_RANK", "8", 1);
	setenv("HOROVOD_SIZE", "8", 1);
	CHECK(hvd_init() == HVD_EINVAL);
	CHECK(!hvd_initialized() && hvd_rank() == -1);
	setenv("HOROVOD_RANK", "x", 1);
	CHECK(hvd_init() == HVD_EINVAL);
	unsetenv("HOROVOD_SIZE");
	setenv("HOROVOD_RANK", "0", 1);
	CHECK(hvd_init() == HVD_EINVAL);
	clear_env();
}

/* hvd_next_shape: a shape for one call, which must hold its elements. */
static void test_next_shape(void)
{
	const int64_t good[2] = {2, 3}, bad[2] = {2, -3};
	const int64_t many[10] = {1, 2, 1, 1, 1, 1, 1, 2, 2, 1};
	float x[8] = {1, 2, 3, 4, 5, 6, 7, 8};
	void *out = NULL;
	size_t n = 0;

	clear_env();
	CHECK(hvd_init() == HVD_OK);
	CHECK(hvd_next_shape(2, good) == HVD_OK);
	CHECK(hvd_allreduce("shape.ok", x, x, 6, HVD_FLOAT32, HVD_SUM) ==
	      HVD_OK);
	CHECK(hvd_next_shape(2, good) == HVD_OK);
	CHECK(hvd_allreduce("shape.bad", x, x, 5, HVD_FLOAT32, HVD_SUM) ==
	      HVD_EINVAL);
	/* The shape was for one call: the next has none. */
	CHECK(hvd_allreduce("shape.none", x, x, 5, HVD_FLOAT32, HVD_SUM) ==
	      HVD_OK);
	CHECK(hvd_next_shape(2, bad) == HVD_EINVAL);
	CHECK(hvd_next_shape(-1, good) == HVD_EINVAL);
	CHECK(hvd_next_shape(2, NULL) == HVD_EINVAL);
	/* Past 8 dimensions, the rest fold into the last kept. */
	CHECK(hvd_next_shape(10, many) == HVD_OK);
	CHECK(hvd_allgather("shape.many", x, 8, HVD_FLOAT32, &out, &n) ==
	      HVD_OK);
	CHECK(n == 8);
	free(out);
	hvd_shutdown();
}

static void test_strerror(void)
{
	CHECK_STR(hvd_strerror(HVD_OK), "success");
	CHECK_STR(hvd_strerror(HVD_EINVAL),
		  "invalid argument or environment value");
	CHECK_STR(hvd_strerror(-999), "unknown error");
	CHECK_STR(hvd_strerror(7), "unknown error");
	CHECK_STR(hvd_version(), HVD_VERSION);
}

/* The working buffers' one growth rule: doubling from 1 MiB, capped at
 * the limit but for exactly what one collective needs. */
static void test_grow_size(void)
{
	const size_t mib = (size_t)1 << 20, limit = 64 * mib;

	CHECK(hvd__grow_size(0, 100, limit) == mib);
	CHECK(hvd__grow_size(mib, mib, limit) == mib);
	CHECK(hvd__grow_size(mib, mib + 1, limit) == 2 * mib);
	CHECK(hvd__grow_size(2 * mib, 5 * mib, limit) == 8 * mib);
	CHECK(hvd__grow_size(32 * mib, 40 * mib, limit) == limit);
	CHECK(hvd__grow_size(32 * mib, 65 * mib, limit) == 65 * mib);
	CHECK(hvd__grow_size(limit, 100 * mib, limit) == 100 * mib);
	CHECK(hvd__grow_size(100 * mib, 70 * mib, limit) == 100 * mib);
	/* A limit of 0 (no fusion): exactly what is asked. */
	CHECK(hvd__grow_size(0, 4096, 0) == 4096);
	CHECK(hvd__grow_size((size_t)-1 / 2 + 2, (size_t)-1, limit) ==
	      (size_t)-1);
}

/* The autotuner's Bayesian optimisation, on a smooth score with one peak
 * at (0.3, 0.7): from Horovod's four first points, twenty steps of
 * greatest expected improvement come close to the peak, and each step
 * stays in [0, 1]^2. */
static double peak(const double x[2])
{
	double d0 = x[0] - 0.3, d1 = x[1] - 0.7;

	return 5000 - 4000 * (d0 * d0 + d1 * d1);
}

static void test_bayes_finds_the_peak(void)
{
	double x[32][2] = {{1, 0},
			   {4 / 64.0, 0.04},
			   {0.5, 0.49},
			   {0.25, 0.24},
			   {0.125, 0.09}};
	double y[32], best = 0;
	uint64_t rng = 0x9e3779b97f4a7c15ull;
	int n = 5, i;

	for (i = 0; i < n; i++)
		y[i] = peak(x[i]);
	for (; n < 25; n++) {
		hvd__bayes_next((const double(*)[2])x, y, n, 0.1, &rng, 2000,
				x[n]);
		CHECK(x[n][0] >= 0 && x[n][0] <= 1 && x[n][1] >= 0 &&
		      x[n][1] <= 1);
		y[n] = peak(x[n]);
	}
	for (i = 0; i < n; i++)
		best = y[i] > best ? y[i] : best;
	CHECK(best > 5000 - 4000 * 0.02); /* within about 0.14 of it */
	CHECK(best > y[0] && best > y[2]);
}

/* The autotuner's search, driven as the engine drives it on rank 0 (one
 * tensor a step, each new setting agreed before the next is timed): two
 * settings of fusion and cycle, then shared memory off and the other
 * allgather, each only where the job has a shared segment (shm, across
 * hosts) and its tensor (uses) runs through it, then the response cache
 * off, then the GPU's hierarchical allreduce the other way, only where
 * the GPU engine runs split by host and the job left it to the tuner; the
 * best kept last. Returns how many settings were scored; hier[i]: the
 * i-th one's GPU choice. */
static int tune_uses_run(bool split, bool given, bool shm, unsigned uses,
			 uint8_t *hier)
{
	struct hvd__knobs k = {0};
	struct hvd__autotune a;
	uint8_t tail[HVD__SETTING_BYTES];
	uint8_t serial = 0;
	int n = 0, step;

	setenv("HOROVOD_AUTOTUNE", "1", 1);
	setenv("HOROVOD_AUTOTUNE_WARMUP_SAMPLES", "0", 1);
	setenv("HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", "1", 1);
	setenv("HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", "2", 1);
	if (given)
		setenv("HOROVOD_HIERARCHICAL_ALLREDUCE", "1", 1);
	else
		unsetenv("HOROVOD_HIERARCHICAL_ALLREDUCE");
	k.fusion_threshold = 128L << 20;
	k.cycle_ms = 1;
	k.cache_cap = 1024;
	k.hier_allreduce = given;
	CHECK(hvd__autotune_open(&a, &k, 0, shm, true) == HVD_OK);
	a.gpu_split = split;
	hier[n++] = a.now.gpu_hier;
	for (step = 0; step < 1000 && a.now.tuning; step++) {
		hvd__autotune_record(&a, "grad", 1 << 20, uses);
		hvd__autotune_put(&a, tail);
		if (hvd__autotune_take(&a, tail) && a.now.serial != serial &&
		    a.now.tuning && n < 16) {
			serial = a.now.serial;
			hier[n++] = a.now.gpu_hier;
		}
	}
	CHECK(!a.now.tuning);
	hvd__autotune_close(&a);
	unsetenv("HOROVOD_AUTOTUNE");
	unsetenv("HOROVOD_HIERARCHICAL_ALLREDUCE");
	return n;
}

static int tune_run(bool split, bool given, uint8_t *hier)
{
	return tune_uses_run(split, given, false, 0, hier);
}

/* With a shared segment across hosts: shared memory and the allgather
 * are tried only for a job whose collectives run through them. */
static void test_autotune_tries_what_is_used(void)
{
	uint8_t hier[16];

	/* GPU collectives only: the job's setting, one more, the cache. */
	CHECK(tune_uses_run(false, false, true, 0, hier) == 3);
	CHECK(tune_uses_run(false, false, true, HVD__TUNE_USES_SHM, hier) == 4);
	CHECK(tune_uses_run(false, false, true,
			    HVD__TUNE_USES_SHM | HVD__TUNE_USES_GATHER,
			    hier) == 5);
	/* No segment: nothing more to try, whatever the tensors. */
	CHECK(tune_uses_run(false, false, false,
			    HVD__TUNE_USES_SHM | HVD__TUNE_USES_GATHER,
			    hier) == 3);
}

static void test_autotune_gpu_hierarchical(void)
{
	uint8_t hier[16];
	int n, i;

	/* Split, left to the tuner: the job's setting, one more of fusion
	 * and cycle, the cache off, then the hierarchical allreduce on. */
	n = tune_run(true, false, hier);
	CHECK(n == 4);
	for (i = 0; i < n - 1; i++)
		CHECK(hier[i] == 0);
	CHECK(hier[n - 1] == 1);
	/* Not split (one host, a process without a GPU engine): not tried. */
	n = tune_run(false, false, hier);
	CHECK(n == 3);
	for (i = 0; i < n; i++)
		CHECK(hier[i] == 0);
	/* The job asked for it: kept in every setting. */
	n = tune_run(true, true, hier);
	CHECK(n == 3);
	for (i = 0; i < n; i++)
		CHECK(hier[i] == 1);
}

int main(void)
{
	setenv("HOROVOD_LOG_LEVEL", "fatal", 1); /* quiet the expected errors */
	RUN(test_single_rank);
	RUN(test_wait_stream_on_the_cpu);
	RUN(test_from_env);
	RUN(test_bad_env);
	RUN(test_next_shape);
	RUN(test_strerror);
	RUN(test_grow_size);
	RUN(test_bayes_finds_the_peak);
	RUN(test_autotune_gpu_hierarchical);
	RUN(test_autotune_tries_what_is_used);
	return tap_done();
}
