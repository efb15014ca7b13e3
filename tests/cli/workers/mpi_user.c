/* mpi_user.c: a program that initialises MPI itself, at the thread level
 * given as argv[1] ("single" or "serialized"), then uses libhvd, then
 * uses MPI again after hvd_shutdown (libhvd must not have finalised it). */
#include <hvd.h>
#include <mpi.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	int want = argc > 1 && strcmp(argv[1], "single") == 0
			   ? MPI_THREAD_SINGLE
			   : MPI_THREAD_SERIALIZED;
	int got, rc, rank, sum = 0, one = 1;
	float x = 1.0f;

	MPI_Init_thread(&argc, &argv, want, &got);
	rc = hvd_init();
	if (rc != 0) {
		printf("hvd_init: %s\n", hvd_strerror(rc));
		MPI_Finalize();
		return 3;
	}
	rc = hvd_allreduce("x", &x, &x, 1, HVD_FLOAT32, HVD_SUM);
	printf("rank %d of %d: allreduce %s, %g\n", hvd_rank(), hvd_size(),
	       hvd_strerror(rc), x);
	hvd_shutdown();
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
	printf("rank %d: MPI still works after hvd_shutdown: %d\n", rank, sum);
	MPI_Finalize();
	return rc == 0 ? 0 : 4;
}
