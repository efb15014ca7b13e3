/* hvd_bench.c: libhvd's allreduce timed, for tests/bench/allreduce.
 *   hvd_bench sizes   float32 sum, 4 KiB to 64 MiB: "bytes seconds" lines
 *   hvd_bench resnet  the 161 gradient tensors of ResNet-50 submitted at
 *                     once, then waited for: "step seconds" per step
 *   hvd_bench alltoall, hvd_bench reducescatter, hvd_bench allgather,
 *   hvd_bench broadcast, hvd_bench adasum
 *                     float32, 64 KiB to 64 MiB per rank (alltoall: an
 *                     equal share to every rank; reducescatter: sum;
 *                     allgather: 64 KiB to 64 MiB in all, an equal share
 *                     from every rank; broadcast: from rank 0; adasum:
 *                     an allreduce with op HVD_ADASUM)
 *   hvd_bench set2 [B]
 *                     (HOROVOD_DYNAMIC_PROCESS_SETS=1) the allreduce of
 *                     sizes within the process set of ranks 0 and B
 *                     (default 1), while the job's other ranks wait
 *   hvd_bench late    a 4 KiB allreduce that the last rank joins 1 to
 *                     50 ms after the others: "late_ms seconds", rank 0's
 *                     time beyond the last rank's lateness (a straggler)
 *   hvd_bench late-async
 *                     the same, the others submitting asynchronously and
 *                     busy until after the last comes: the last rank's
 *                     own time (what it waits for their engines)
 *   hvd_bench set2-late [B], hvd_bench set2-late-async [B]
 *                     (HOROVOD_DYNAMIC_PROCESS_SETS=1) late, late-async
 *                     within the process set of ranks 0 and B (default
 *                     1), B late
 *   hvd_bench dtypes  16 MiB of each dtype, sum and average: "dtype op
 *                     seconds" lines (the reduction kernels' speed)
 *   hvd_bench sets-at-once, hvd_bench sets-in-turn
 *                     (dynamic sets, 4 ranks) the sets of ranks 0, 1 and
 *                     of ranks 2, 3 allreduce sizes at the same time, or
 *                     one set after the other: "bytes seconds" of both
 * Each figure is the median of the repetitions; rank 0 prints. */
#include <hvd.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "resnet50.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

enum kind { ALLREDUCE, ALLTOALL, REDUCESCATTER, ALLGATHER, BROADCAST, ADASUM };

/* The process set the collectives run in (0: the job). */
static int bench_set;

static int in_set(void)
{
	hvd_next_process_set(bench_set);
	return 0;
}

/* One collective of bytes per rank. */
static int one(enum kind k, float *buf, float *out, size_t bytes)
{
	size_t n = (size_t)hvd_process_set_size(bench_set), c = bytes / 4;
	size_t sc[64], rc[64], got, i;
	void *res = NULL;
	int r = in_set();

	if (k == ALLREDUCE)
		return hvd_allreduce("bench", buf, buf, c, HVD_FLOAT32,
				     HVD_SUM);
	if (k == ADASUM)
		return hvd_allreduce("bench.ada", buf, buf, c, HVD_FLOAT32,
				     HVD_ADASUM);
	if (k == REDUCESCATTER)
		return hvd_reducescatter("bench.rs", buf, out, c, 1,
					 HVD_FLOAT32, HVD_SUM, 1, 1);
	if (k == BROADCAST)
		return hvd_broadcast("bench.bc", buf, c, HVD_FLOAT32, 0);
	if (k == ALLGATHER) {
		r = hvd_allgather("bench.ag", buf, c / n, HVD_FLOAT32, &res,
				  &got);
		free(res);
		return r;
	}
	for (i = 0; i < n && i < 64; i++)
		sc[i] = c / n;
	r = hvd_alltoall("bench.a2a", buf, sc, 1, HVD_FLOAT32, &res, &got, rc);
	free(res);
	return r;
}

/* Each size's median time within the set (its slowest rank's), or, with
 * turns, the sum of both sets' times running one after the other. */
static int run_sizes_in(enum kind k, int other, bool turns)
{
	size_t bytes, first = k == ALLREDUCE ? 4096 : 65536;
	float *buf = calloc((64u << 20) / 4, 4);
	float *out = calloc((64u << 20) / 4, 4);

	for (bytes = first; bytes <= (64u << 20); bytes *= 4) {
		double t[21];
		int reps = bytes >= (16u << 20) ? 7 : 21, i;

		/* In turns: the set of rank 0 first, while the other waits. */
		if (turns && hvd_rank() >= 2)
			hvd_barrier();
		for (i = bytes == first ? -BENCH_WARM_FIRST : -2; i < reps;
		     i++) {
			double t0;

			in_set();
			hvd_barrier();
			t0 = now();
			if (one(k, buf, out, bytes) != 0)
				return 1;
			if (i >= 0)
				t[i] = now() - t0;
		}
		if (turns && hvd_rank() < 2)
			hvd_barrier();
		/* The slowest rank of the set decides; with other sets, the
		 * slowest set (at once) or both in turn. */
		{
			double m = bench_median(t, reps), z = 0;

			in_set();
			hvd_allreduce("bench.t", &m, &m, 1, HVD_FLOAT64,
				      HVD_MAX);
			if (other) {
				double mine =
					hvd_process_set_rank(bench_set) == 0
						? m
						: 0;

				hvd_allreduce("bench.sets", &mine, &z, 1,
					      HVD_FLOAT64,
					      turns ? HVD_SUM : HVD_MAX);
				m = z;
			}
			if (hvd_rank() == 0)
				printf("%zu %.9f\n", bytes, m);
		}
	}
	free(buf);
	free(out);
	return 0;
}

static int run_sizes(enum kind k)
{
	return run_sizes_in(k, 0, false);
}

static int run_late(bool async);

/* set2: the set of ranks two[0] and two[1] runs sizes (or late, 1; late
 * async, 2), the other ranks wait. */
static int run_set2(const int two[2], int late)
{
	int id = hvd_add_process_set(two, 2), rc = 0;

	if (id < 0) {
		fprintf(stderr,
			"hvd_bench: %s (HOROVOD_DYNAMIC_PROCESS_SETS=1)\n",
			hvd_error_message());
		return 1;
	}
	if (hvd_rank() == two[0] || hvd_rank() == two[1]) {
		bench_set = id;
		rc = late ? run_late(late == 2) : run_sizes(ALLREDUCE);
		bench_set = 0;
	}
	hvd_barrier();
	return rc;
}

/* Two sets of two ranks, at once or in turn. */
static int run_two_sets(bool turns)
{
	int a[2] = {0, 1}, b[2] = {2, 3}, ia, ib, rc;

	if (hvd_size() != 4) {
		fprintf(stderr, "hvd_bench: two sets need 4 ranks\n");
		return 1;
	}
	ia = hvd_add_process_set(a, 2);
	ib = hvd_add_process_set(b, 2);
	if (ia < 0 || ib < 0) {
		fprintf(stderr,
			"hvd_bench: %s (HOROVOD_DYNAMIC_PROCESS_SETS=1)\n",
			hvd_error_message());
		return 1;
	}
	bench_set = hvd_rank() < 2 ? ia : ib;
	rc = run_sizes_in(ALLREDUCE, 1, turns);
	bench_set = 0;
	return rc;
}

static int run_resnet(void)
{
	size_t sizes[RESNET50_TENSORS], total = 0, off;
	size_t n = resnet50_sizes(sizes), k;
	float *grads;
	hvd_handle *h[RESNET50_TENSORS];
	double t[11];
	int i;

	for (k = 0; k < n; k++)
		total += sizes[k];
	grads = calloc(total, sizeof(float));
	for (i = -2; i < 11; i++) {
		double t0;

		hvd_barrier();
		t0 = now();
		for (k = 0, off = 0; k < n; k++) {
			char name[32];

			snprintf(name, sizeof(name), "resnet.%zu", k);
			hvd_allreduce_async(name, grads + off, grads + off,
					    sizes[k], HVD_FLOAT32, HVD_AVERAGE,
					    &h[k]);
			off += sizes[k];
		}
		for (k = 0; k < n; k++)
			if (hvd_wait(h[k]) != 0)
				return 1;
		if (i >= 0)
			t[i] = now() - t0;
	}
	{
		double m = bench_median(t, 11);

		hvd_allreduce("bench.t", &m, &m, 1, HVD_FLOAT64, HVD_MAX);
		if (hvd_rank() == 0)
			printf("resnet50 %zu %zu %.9f\n", n, total, m);
	}
	free(grads);
	return 0;
}

/* 16 MiB allreduced as each dtype, by sum and by average (the division's
 * own kernel), in the job's set. */
static int run_dtypes(void)
{
	static const struct {
		enum hvd_dtype t;
		const char *name;
		size_t size;
	} types[] = {{HVD_UINT8, "uint8", 1},	    {HVD_INT8, "int8", 1},
		     {HVD_INT16, "int16", 2},	    {HVD_INT32, "int32", 4},
		     {HVD_INT64, "int64", 8},	    {HVD_FLOAT16, "float16", 2},
		     {HVD_BFLOAT16, "bfloat16", 2}, {HVD_FLOAT32, "float32", 4},
		     {HVD_FLOAT64, "float64", 8}};
	static const enum hvd_op ops[] = {HVD_SUM, HVD_AVERAGE};
	size_t bytes = 16u << 20, k, o;
	void *buf = calloc(bytes, 1);

	for (k = 0; buf != NULL && k < sizeof(types) / sizeof(types[0]); k++)
		for (o = 0; o < 2; o++) {
			char name[64];
			double t[7], m;
			int i;

			snprintf(name, sizeof(name), "bench.%s.%d",
				 types[k].name, (int)o);
			for (i = -2; i < 7; i++) {
				double t0;

				hvd_barrier();
				t0 = now();
				if (hvd_allreduce(name, buf, buf,
						  bytes / types[k].size,
						  types[k].t, ops[o]) != 0)
					return 1;
				if (i >= 0)
					t[i] = now() - t0;
			}
			m = bench_median(t, 7);
			hvd_allreduce("bench.t", &m, &m, 1, HVD_FLOAT64,
				      HVD_MAX);
			if (hvd_rank() == 0)
				printf("%s %s %.9f\n", types[k].name,
				       o ? "average" : "sum", m);
		}
	free(buf);
	return buf == NULL;
}

static void sleep_ms(double ms)
{
	struct timespec ts = {(time_t)(ms / 1e3),
			      (long)((ms - 1e3 * (time_t)(ms / 1e3)) * 1e6)};

	nanosleep(&ts, NULL);
}

/* late: the last rank comes late_ms after the others to each allreduce;
 * what rank 0 waits beyond that. async: the others submit at once and
 * are busy (asleep) until 3 ms after the last rank comes, then wait; the
 * figure is the last rank's own allreduce, what it waits for them. */
static int run_late(bool async)
{
	int last = hvd_process_set_size(bench_set) - 1;
	bool me_late = hvd_process_set_rank(bench_set) == last;
	static const int late_ms[] = {1, 2, 5, 10, 20, 50};
	float buf[1024] = {0};
	size_t j;

	for (j = 0; j < sizeof(late_ms) / sizeof(late_ms[0]); j++) {
		double t[9], late = late_ms[j] / 1e3, m;
		int i;

		for (i = -1; i < 9; i++) { /* one to warm up */
			hvd_handle *h = NULL;
			double t0;

			in_set();
			hvd_barrier();
			t0 = now();
			if (me_late) {
				sleep_ms(late_ms[j]);
				t0 = async ? now() : t0 + late;
			}
			in_set();
			if (async && !me_late) {
				if (hvd_allreduce_async("bench.late", buf, buf,
							1024, HVD_FLOAT32,
							HVD_SUM, &h) != 0)
					return 1;
				sleep_ms(late_ms[j] + 3);
				if (hvd_wait(h) != 0)
					return 1;
			} else if (hvd_allreduce("bench.late", buf, buf, 1024,
						 HVD_FLOAT32, HVD_SUM) != 0) {
				return 1;
			}
			if (i >= 0)
				t[i] = now() - t0 - (me_late ? 0 : late);
		}
		m = bench_median(t, 9);
		if (async) { /* the last rank's */
			m = me_late ? m : 0;
			in_set();
			hvd_allreduce("bench.t", &m, &m, 1, HVD_FLOAT64,
				      HVD_MAX);
		}
		if (hvd_rank() == 0)
			printf("%d %.9f\n", late_ms[j], m);
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rc;

	if (hvd_init() != 0)
		return 1;
	if (argc > 1 && strcmp(argv[1], "resnet") == 0)
		rc = run_resnet();
	else if (argc > 1 && strcmp(argv[1], "alltoall") == 0)
		rc = run_sizes(ALLTOALL);
	else if (argc > 1 && strcmp(argv[1], "reducescatter") == 0)
		rc = run_sizes(REDUCESCATTER);
	else if (argc > 1 && strcmp(argv[1], "allgather") == 0)
		rc = run_sizes(ALLGATHER);
	else if (argc > 1 && strcmp(argv[1], "broadcast") == 0)
		rc = run_sizes(BROADCAST);
	else if (argc > 1 && strcmp(argv[1], "adasum") == 0)
		rc = run_sizes(ADASUM);
	else if (argc > 1 && strcmp(argv[1], "dtypes") == 0)
		rc = run_dtypes();
	else if (argc > 1 && strcmp(argv[1], "late") == 0)
		rc = run_late(false);
	else if (argc > 1 && strcmp(argv[1], "late-async") == 0)
		rc = run_late(true);
	else if (argc > 1 && (strcmp(argv[1], "set2") == 0 ||
			      strcmp(argv[1], "set2-late") == 0 ||
			      strcmp(argv[1], "set2-late-async") == 0)) {
		int two[2] = {0, argc > 2 ? atoi(argv[2]) : 1};

		if (two[1] <= 0 || two[1] >= hvd_size()) {
			fprintf(stderr, "hvd_bench: set2 B: B from 1 to %d\n",
				hvd_size() - 1);
			rc = 1;
		} else
			rc = run_set2(two, argv[1][4] == '\0'	? 0
					   : argv[1][9] == '\0' ? 1
								: 2);
	} else if (argc > 1 && strcmp(argv[1], "sets-at-once") == 0)
		rc = run_two_sets(false);
	else if (argc > 1 && strcmp(argv[1], "sets-in-turn") == 0)
		rc = run_two_sets(true);
	else
		rc = run_sizes(ALLREDUCE);
	hvd_shutdown();
	return rc;
}
