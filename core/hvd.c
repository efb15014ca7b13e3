/* hvd.c: libhvd's life cycle and rank queries. hvd_init() reads the rank
 * environment that hvdrun sets (DESIGN.md); without it the process is the
 * only rank of a job of one. */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "internal.h"
#include "mpi.h"
#include "runtime.h"

/* Before hvd_init() and after hvd_shutdown(). */
#define FRESH_STATE                                                            \
	{                                                                      \
		.rank = -1, .size = -1, .local_rank = -1, .local_size = -1,    \
		.cross_rank = -1, .cross_size = -1,                            \
	}

static const struct hvd__state fresh_state = FRESH_STATE;
struct hvd__state hvd__g = FRESH_STATE;

long long hvd__now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

long long hvd__now_ms(void)
{
	return hvd__now_us() / 1000;
}

int hvd__env_int(const char *name, long def, long min, long max, long *out)
{
	const char *v = getenv(name);
	char *end;
	long x;

	if (v == NULL || *v == '\0') {
		*out = def;
		return HVD_OK;
	}
	errno = 0;
	x = strtol(v, &end, 10);
	if (errno != 0 || *end != '\0' || x < min || x > max) {
		hvd__error("%s='%s' is not an integer from %ld to %ld", name, v,
			   min, max);
		return HVD_EINVAL;
	}
	*out = x;
	return HVD_OK;
}

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
	rc = hvd__env_int("HOROVOD_SIZE", -1, 1, 1 << 24, &size);
	if (rc == HVD_OK && size < 0) {
		hvd__error("HOROVOD_RANK is set but HOROVOD_SIZE is not");
		rc = HVD_EINVAL;
	}
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_RANK", 0, 0, size - 1, &rank);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_LOCAL_SIZE", size, 1, size, &lsize);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_LOCAL_RANK", rank, 0, lsize - 1,
				  &lrank);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_CROSS_SIZE", 1, 1, size, &csize);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_CROSS_RANK", 0, 0, csize - 1,
				  &crank);
	if (rc != HVD_OK)
		return rc;
	st->rank = (int)rank;
	st->size = (int)size;
	st->local_rank = (int)lrank;
	st->local_size = (int)lsize;
	st->cross_rank = (int)crank;
	st->cross_size = (int)csize;
	return HVD_OK;
}

HVD_EXPORT int hvd_init(void)
{
	struct hvd__state st = hvd__g;
	void *mpi = NULL;
	int rc;

	if (hvd__g.initialized)
		return HVD_EALREADY;
	/* Under mpirun (or asked to): MPI; under hvdrun: a rendezvous to
	 * join; else a job of one. */
	rc = hvd__mpi_wanted() ? hvd__mpi_init(&st, &mpi) : read_ranks(&st);
	if (rc != HVD_OK)
		return rc;
	st.initialized = true;
	st.mpi = mpi != NULL;
	hvd__g = st;
	rc = hvd__runtime_start(st.rank, st.size,
				getenv("HVD_RENDEZVOUS") != NULL, mpi);
	if (rc != HVD_OK) {
		hvd__runtime_stop();
		hvd__g = fresh_state;
		return rc;
	}
	hvd__debug("rank %d of %d (local %d of %d, cross %d of %d)", st.rank,
		   st.size, st.local_rank, st.local_size, st.cross_rank,
		   st.cross_size);
	return HVD_OK;
}

HVD_EXPORT void hvd_shutdown(void)
{
	if (hvd__g.initialized)
		hvd__runtime_stop();
	hvd__g = fresh_state;
}

int hvd__transport_timeout_ms(void)
{
	long ms;

	/* Every cycle moves bytes between all ranks, even when idle: two
	 * seconds of silence mean a peer or its link is gone. */
	if (hvd__env_int("HVD_TRANSPORT_TIMEOUT_MS", 2000, 100, 86400000,
			 &ms) != HVD_OK)
		ms = 2000;
	return (int)ms;
}

HVD_EXPORT int hvd_initialized(void)
{
	return hvd__g.initialized;
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

HVD_EXPORT const char *hvd_strerror(int err)
{
	static const char *const names[] = {
		[0] = "success",
		[-HVD_EINVAL] = "invalid argument or environment value",
		[-HVD_ENOMEM] = "out of memory",
		[-HVD_ENOTINIT] = "libhvd is not initialised (call hvd_init)",
		[-HVD_EALREADY] = "libhvd is already initialised",
		[-HVD_ESYS] = "system call failed",
		[-HVD_ECONN] = "a peer closed its connection or died",
		[-HVD_ETIMEDOUT] = "a peer did not answer in time",
		[-HVD_EPROTO] = "a peer sent something unexpected",
		[-HVD_EMISMATCH] = "ranks disagree on a tensor",
		[-HVD_ESHUTDOWN] = "libhvd was shut down",
		[-HVD_ESTALL] = "some ranks never submitted the tensor",
		[-HVD_ENOTSUP] = "not available here",
	};

	if (err > 0 || -err >= (int)(sizeof(names) / sizeof(names[0])) ||
	    names[-err] == NULL)
		return "unknown error";
	return names[-err];
}

HVD_EXPORT const char *hvd_version(void)
{
	return HVD_VERSION;
}
