/* mpi_bench.c: Open MPI's MPI_Allreduce timed the same way as hvd_bench.c.
 *   mpi_bench sizes    float32 sum, 4 KiB to 64 MiB
 *   mpi_bench resnet   ResNet-50's 161 tensors: one MPI_Allreduce per
 *                      tensor ("per-tensor"), and one of their total
 *                      ("total")
 *   mpi_bench late     a 4 KiB MPI_Allreduce that the last rank joins 1
 *                      to 50 ms after the others, as hvd_bench late
 *   mpi_bench alltoall, mpi_bench reducescatter, mpi_bench allgather,
 *   mpi_bench broadcast
 *                      MPI_Alltoallv, MPI_Reduce_scatter, MPI_Allgather and
 *                      MPI_Bcast (from rank 0), float32, 64 KiB to 64 MiB
 *                      per rank (allgather: in all), split as hvd_bench
 *                      splits
 *   mpi_bench dtypes   16 MiB of each integer and float type MPI has
 *                      (no 16-bit floats), by MPI_SUM, as hvd_bench
 *                      dtypes: "dtype sum seconds" */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "resnet50.h"

static void report(const char *label, size_t a, double m, int rank)
{
	MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	if (rank == 0)
		printf("%s%zu %.9f\n", label, a, m);
}

int main(int argc, char **argv)
{
	int rank, i;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	if (argc > 1 && strcmp(argv[1], "late") == 0) {
		static const int late_ms[] = {1, 2, 5, 10, 20, 50};
		float buf[1024] = {0};
		size_t j;
		int size;

		MPI_Comm_size(MPI_COMM_WORLD, &size);
		for (j = 0; j < sizeof(late_ms) / sizeof(late_ms[0]); j++) {
			double t[9], late = late_ms[j] / 1e3;

			for (i = -1; i < 9; i++) {
				double t0;

				MPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
				if (rank == size - 1) {
					struct timespec ts = {
						0, late_ms[j] * 1000000L};

					nanosleep(&ts, NULL);
				}
				MPI_Allreduce(MPI_IN_PLACE, buf, 1024,
					      MPI_FLOAT, MPI_SUM,
					      MPI_COMM_WORLD);
				if (i >= 0)
					t[i] = MPI_Wtime() - t0 - late;
			}
			if (rank == 0)
				printf("%d %.9f\n", late_ms[j],
				       bench_median(t, 9));
		}
	} else if (argc > 1 && strcmp(argv[1], "resnet") == 0) {
		size_t sizes[RESNET50_TENSORS], total = 0, n, k, off;
		double tp[11], tt[11];
		float *g;

		n = resnet50_sizes(sizes);
		for (k = 0; k < n; k++)
			total += sizes[k];
		g = calloc(total, sizeof(float));
		for (i = -2; i < 11; i++) {
			double t0;

			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			for (k = 0, off = 0; k < n; k++) {
				MPI_Allreduce(MPI_IN_PLACE, g + off,
					      (int)sizes[k], MPI_FLOAT, MPI_SUM,
					      MPI_COMM_WORLD);
				off += sizes[k];
			}
			if (i >= 0)
				tp[i] = MPI_Wtime() - t0;
			MPI_Barrier(MPI_COMM_WORLD);
			t0 = MPI_Wtime();
			MPI_Allreduce(MPI_IN_PLACE, g, (int)total, MPI_FLOAT,
				      MPI_SUM, MPI_COMM_WORLD);
			if (i >= 0)
				tt[i] = MPI_Wtime() - t0;
		}
		report("per-tensor ", n, bench_median(tp, 11), rank);
		report("total ", total, bench_median(tt, 11), rank);
		free(g);
	} else if (argc > 1 && (strcmp(argv[1], "alltoall") == 0 ||
				strcmp(argv[1], "reducescatter") == 0 ||
				strcmp(argv[1], "allgather") == 0 ||
				strcmp(argv[1], "broadcast") == 0)) {
		int a2a = strcmp(argv[1], "alltoall") == 0, size, r;
		int ag = strcmp(argv[1], "allgather") == 0;
		int bc = strcmp(argv[1], "broadcast") == 0;
		float *buf = calloc((64u << 20) / 4, 4);
		float *out = calloc((64u << 20) / 4, 4);
		int *cnt, *disp;
		size_t bytes;

		MPI_Comm_size(MPI_COMM_WORLD, &size);
		cnt = calloc((size_t)size, sizeof(*cnt));
		disp = calloc((size_t)size, sizeof(*disp));
		for (bytes = 65536; bytes <= (64u << 20); bytes *= 4) {
			double t[21];
			int reps = bytes >= (16u << 20) ? 7 : 21;
			int c = (int)(bytes / 4);

			/* Horovod's split: the first c % size one more. */
			for (r = 0; r < size; r++) {
				cnt[r] = a2a ? c / size
					     : c / size + (r < c % size);
				disp[r] = r ? disp[r - 1] + cnt[r - 1] : 0;
			}
			for (i = bytes == 65536 ? -BENCH_WARM_FIRST : -2;
			     i < reps; i++) {
				double t0;

				MPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
				if (a2a)
					MPI_Alltoallv(buf, cnt, disp, MPI_FLOAT,
						      out, cnt, disp, MPI_FLOAT,
						      MPI_COMM_WORLD);
				else if (ag)
					MPI_Allgather(buf, c / size, MPI_FLOAT,
						      out, c / size, MPI_FLOAT,
						      MPI_COMM_WORLD);
				else if (bc)
					MPI_Bcast(buf, c, MPI_FLOAT, 0,
						  MPI_COMM_WORLD);
				else
					MPI_Reduce_scatter(buf, out, cnt,
							   MPI_FLOAT, MPI_SUM,
							   MPI_COMM_WORLD);
				if (i >= 0)
					t[i] = MPI_Wtime() - t0;
			}
			report("", bytes, bench_median(t, reps), rank);
		}
		free(cnt);
		free(disp);
		free(buf);
		free(out);
	} else if (argc > 1 && strcmp(argv[1], "dtypes") == 0) {
		static const struct {
			MPI_Datatype t;
			const char *name;
			int size;
		} types[] = {
			{MPI_UINT8_T, "uint8", 1}, {MPI_INT8_T, "int8", 1},
			{MPI_INT16_T, "int16", 2}, {MPI_INT32_T, "int32", 4},
			{MPI_INT64_T, "int64", 8}, {MPI_FLOAT, "float32", 4},
			{MPI_DOUBLE, "float64", 8}};
		int bytes = 16 << 20;
		void *buf = calloc((size_t)bytes, 1);
		size_t k;

		for (k = 0; buf != NULL && k < sizeof(types) / sizeof(types[0]);
		     k++) {
			double t[7], m;

			for (i = -2; i < 7; i++) {
				double t0;

				MPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
				MPI_Allreduce(MPI_IN_PLACE, buf,
					      bytes / types[k].size, types[k].t,
					      MPI_SUM, MPI_COMM_WORLD);
				if (i >= 0)
					t[i] = MPI_Wtime() - t0;
			}
			m = bench_median(t, 7);
			MPI_Allreduce(MPI_IN_PLACE, &m, 1, MPI_DOUBLE, MPI_MAX,
				      MPI_COMM_WORLD);
			if (rank == 0)
				printf("%s sum %.9f\n", types[k].name, m);
		}
		free(buf);
	} else {
		size_t bytes;
		float *buf = calloc((64u << 20) / 4, 4);

		for (bytes = 4096; bytes <= (64u << 20); bytes *= 4) {
			double t[21];
			int reps = bytes >= (16u << 20) ? 7 : 21;

			for (i = bytes == 4096 ? -BENCH_WARM_FIRST : -2;
			     i < reps; i++) {
				double t0;

				MPI_Barrier(MPI_COMM_WORLD);
				t0 = MPI_Wtime();
				MPI_Allreduce(MPI_IN_PLACE, buf,
					      (int)(bytes / 4), MPI_FLOAT,
					      MPI_SUM, MPI_COMM_WORLD);
				if (i >= 0)
					t[i] = MPI_Wtime() - t0;
			}
			report("", bytes, bench_median(t, reps), rank);
		}
		free(buf);
	}
	MPI_Finalize();
	return 0;
}
