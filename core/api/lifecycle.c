/* api/lifecycle.c: libhvd's life cycle and rank queries. hvd_init() reads the rank
 * environment that hvdrun sets (DESIGN.md); without it the process is the
 * only rank of a job of one. */
#include <pthread.h>
#include <stdlib.h>

#include "util/internal.h"
#include "engine/elastic.h"
#include "transport/mpi.h"
#include "engine/runtime.h"

/* Read and check the rank variables; all or nothing. */
static int read_ranks(struct hvd__state *st)
{
	long rank, size, lrank, lsize, crank, csize;
	int rc;

	if (getenv("HOROVOD_RANK") == NULL) {
		st->rank = st->local_rank = st->cross_rank = 0;
		st->size = st->local_size = st->cross_size = 1;
		return HVD_OK;
	}
	if (getenv("HOROVOD_SIZE") == NULL) {
		hvd__error("HOROVOD_RANK is set but HOROVOD_SIZE is not");
		return HVD_EINVAL;
	}
	rc = hvd__env_long(WENV_SIZE, &size);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_RANK, &rank);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_LOCAL_SIZE, &lsize);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_LOCAL_RANK, &lrank);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_CROSS_SIZE, &csize);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_CROSS_RANK, &crank);
	if (rc != HVD_OK)
		return rc;
	if (lsize < 0)
		lsize = size;
	if (lrank < 0)
		lrank = rank;
	if (rank >= size || lsize > size || lrank >= lsize || csize > size ||
	    crank >= csize) {
		hvd__error(
			"the rank variables disagree: rank %ld of %ld, local %ld of %ld, cross %ld of %ld",
			rank, size, lrank, lsize, crank, csize);
		return HVD_EINVAL;
	}
	st->rank = (int)rank;
	st->size = (int)size;
	st->local_rank = (int)lrank;
	st->local_size = (int)lsize;
	st->cross_rank = (int)crank;
	st->cross_size = (int)csize;
	return HVD_OK;
}

/* MPI that libhvd initialised is finalised when the process exits, after
 * libhvd has stopped (a program that never called hvd_shutdown() too):
 * an engine still running would call MPI after MPI_Finalize. */
static void at_exit(void)
{
	if (hvd__fork_of >= 0) /* MPI is the parent's */
		return;
	hvd_shutdown();
	(void)hvd__mpi_exit();
}

/* One attempt of hvd_init(). *world: an elastic generation's world came
 * (this worker was a member of it) whether or not its mesh formed. */
static int init_once(bool *world)
{
	struct hvd__state st = hvd__g;
	struct hvd__comm mpi_comm;
	void *mpi = NULL;
	bool want;
	int rc;

	*world = false;
	/* Under mpirun (or asked to): MPI; under hvdrun: a rendezvous to
	 * join; else a job of one. */
	rc = hvd__mpi_wanted(&want);
	if (rc == HVD_OK)
		rc = want ? hvd__mpi_init(&st, &mpi) : read_ranks(&st);
	if (rc != HVD_OK)
		return rc;
	if (mpi != NULL && !st.exit_hook) {
		atexit(at_exit); /* once a process */
		st.exit_hook = true;
	}
	st.initialized = true;
	st.mpi = mpi != NULL;
	hvd__g = st;
	mpi_comm.rank = st.rank;
	mpi_comm.size = st.size;
	mpi_comm.ops = &hvd__mpi_ops;
	mpi_comm.t = mpi;
	rc = hvd__runtime_start(st.rank, st.size,
				getenv("HVD_RENDEZVOUS") != NULL,
				mpi != NULL ? &mpi_comm : NULL);
	if (rc != HVD_OK) {
		/* Elastic: a generation whose connections did not form (a
		 * worker lost on the way) is a reset: hvd_init() again joins
		 * the next. */
		*world = hvd__g.generation > 0;
		rc = hvd__elastic_status(rc);
		hvd__runtime_stop();
		hvd__g = hvd__fresh_state;
		hvd__g.exit_hook = st.exit_hook;
	}
	return rc;
}

HVD_EXPORT int hvd_init(void)
{
	static bool fork_hook; /* once a process */
	bool world;
	int rc;

	if (hvd__fork_of >= 0)
		return hvd__fork_refuse();
	if (hvd__g.initialized)
		return HVD_EALREADY;
	if (!fork_hook && pthread_atfork(NULL, NULL, hvd__mark_fork) == 0)
		fork_hook = true;
	/* Elastic: a generation that a reset (or hosts hvdrun added)
	 * interrupts while its mesh forms is followed by the next one, which
	 * this worker joins at once. Only a worker that hvdrun leaves out
	 * fails (HVD_ERESET), so that a program's first hvd_init(), outside
	 * any retry loop of its own, joins whichever generation forms. */
	do
		rc = init_once(&world);
	while (rc == HVD_ERESET && world);
	if (rc == HVD_OK)
		hvd__debug("rank %d of %d (local %d of %d, cross %d of %d)",
			   hvd__g.rank, hvd__g.size, hvd__g.local_rank,
			   hvd__g.local_size, hvd__g.cross_rank,
			   hvd__g.cross_size);
	return rc;
}

HVD_EXPORT void hvd_shutdown(void)
{
	bool hook = hvd__g.exit_hook;

	/* A fork's (its exit, an atexit handler): the runtime is the
	 * parent's, and goes on there. */
	if (hvd__g.initialized && hvd__fork_of < 0)
		hvd__runtime_stop();
	hvd__g = hvd__fresh_state;
	hvd__g.exit_hook = hook; /* a process's, not a world's */
}

HVD_EXPORT int hvd_initialized(void)
{
	return hvd__g.initialized;
}

HVD_EXPORT int hvd_elastic_generation(void)
{
	return hvd__g.initialized ? hvd__g.generation : -1;
}

HVD_EXPORT int hvd_mpi_built(void)
{
	return 1;
}

HVD_EXPORT int hvd_mpi_enabled(void)
{
	return hvd__g.initialized ? hvd__g.mpi : -1;
}

HVD_EXPORT int hvd_rank(void)
{
	return hvd__g.rank;
}

HVD_EXPORT int hvd_size(void)
{
	return hvd__g.size;
}

HVD_EXPORT int hvd_local_rank(void)
{
	return hvd__g.local_rank;
}

HVD_EXPORT int hvd_local_size(void)
{
	return hvd__g.local_size;
}

HVD_EXPORT int hvd_cross_rank(void)
{
	return hvd__g.cross_rank;
}

HVD_EXPORT int hvd_cross_size(void)
{
	return hvd__g.cross_size;
}

HVD_EXPORT int hvd_is_homogeneous(void)
{
	return hvd__g.initialized ? hvd__g.homogeneous : -1;
}

HVD_EXPORT const char *hvd_version(void)
{
	return HVD_VERSION;
}
