/* api/lifecycle.c: libhvd's life cycle and rank queries. hvd_init() reads the rank
 * environment that hvdrun sets (DESIGN.md); without it the process is the
 * only rank of a job of one. */
#include <errno.h>
#include <pthread.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "proto/rendezvous.h"

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

/* A rank of a static job under hvdrun, or a worker of an elastic one, is
 * one process: the first hvd_init() of the worker's process binds an
 * abstract socket named by the job (a MAC of its secret, as its shared
 * memory's name) and the rank (elastic: the worker's id), held until
 * the process exits, across hvd_shutdown() and hvd_init() again (not by
 * its forks: fork_child). Another process with the worker's environment
 * (a subprocess of the worker, which inherits it) is refused at once: it
 * would otherwise register as the rank starting a new round, which no
 * other rank joins, and hvdrun would stop the job at its start timeout;
 * in an elastic job it would take the worker's place at the rendezvous,
 * a reset for every worker, and wait there. -1: not claimed. */
static int claim_fd = -1;

static void fork_child(void)
{
	hvd__mark_fork();
	if (claim_fd >= 0) { /* the parent's: a fork outliving it holds none */
		close(claim_fd);
		claim_fd = -1;
	}
}

/* Refuse this process as worker `what` (a rank, or an elastic worker's
 * id), whose variable names it. */
static int claimed_elsewhere(const char *what, long n, int var)
{
	hvd__set_error(
		"%s %ld of this job runs in another process of this host: "
		"this one has its environment (%s, %s), as a subprocess of a "
		"worker does, and cannot join the job as that %s too; to run "
		"it as a job of its own, unset %s and %s in it",
		what, n, wenv_vars[var].name, wenv_vars[WENV_RENDEZVOUS].name,
		what, wenv_vars[var].name, wenv_vars[WENV_RENDEZVOUS].name);
	hvd__error("%s", hvd_error_message());
	return HVD_EALREADY;
}

static int claim_rank(int rank)
{
	uint8_t secret[RDV_SECRET_LEN];
	char base[RDV_SHM_NAME_LEN];
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	uint32_t id;
	bool elastic;
	int fd, n;

	if (claim_fd >= 0 || getenv(wenv_vars[WENV_RENDEZVOUS].name) == NULL ||
	    !rdv_secret_from_hex(getenv(wenv_vars[WENV_SECRET].name), secret))
		return HVD_OK; /* the bootstrap names a bad secret */
	elastic = hvd__elastic_wanted(&id);
	rdv_shm_name(secret, base);
	if (elastic)
		n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
			     "hvd-worker-%s-%u", base + 8, id);
	else
		n = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
			     "hvd-rank-%s-%d", base + 8, rank);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return HVD_OK; /* cannot tell: the rendezvous decides */
	if (bind(fd, (struct sockaddr *)&a,
		 (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
			     (size_t)n)) == 0) {
		claim_fd = fd;
		return HVD_OK;
	}
	n = errno;
	close(fd);
	if (n != EADDRINUSE)
		return HVD_OK;
	return elastic ? claimed_elsewhere("worker", (long)id, WENV_WORKER_ID)
		       : claimed_elsewhere("rank", rank, WENV_RANK);
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
	if (rc == HVD_OK && !want)
		rc = claim_rank(st.rank);
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
	long long t0 = hvd__now_ms();
	bool world;
	int rc;

	if (hvd__fork_of >= 0)
		return hvd__fork_refuse();
	if (hvd__g.initialized)
		return HVD_EALREADY;
	if (!fork_hook && pthread_atfork(NULL, NULL, fork_child) == 0)
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
		hvd__debug(
			"rank %d of %d (local %d of %d, cross %d of %d): joined in %lld ms",
			hvd__g.rank, hvd__g.size, hvd__g.local_rank,
			hvd__g.local_size, hvd__g.cross_rank, hvd__g.cross_size,
			hvd__now_ms() - t0);
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
