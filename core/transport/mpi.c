/* mpi.c: see mpi.h. */
#include "transport/mpi.h"

#include <limits.h>
#include <mpi.h> /* NOLINT(readability-duplicate-include): Open MPI's */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/reduce.h"

struct hvd__mpi {
	MPI_Comm comm; /* libhvd's own duplicate of MPI_COMM_WORLD */
};

/* MPI cannot be initialised twice in a process, and hvd_shutdown() then
 * hvd_init() must work any number of times (Horovod's contract): MPI that
 * libhvd initialised stays up until the process exits (hvd__mpi_exit). */
static bool initialised_here;

bool hvd__mpi_exit(void)
{
	int finalized = 0;

	if (!initialised_here)
		return false;
	MPI_Finalized(&finalized);
	if (!finalized)
		MPI_Finalize();
	return true;
}

int hvd__mpi_wanted(bool *want)
{
	double ctl, ops;
	int rc = hvd__env(WENV_CONTROLLER, &ctl);

	if (rc == HVD_OK)
		rc = hvd__env(WENV_CPU_OPERATIONS, &ops);
	if (rc != HVD_OK)
		return rc;
	/* Choices: mpi, tcp, gloo. hvdrun's own jobs say HOROVOD_RANK and
	 * where its rendezvous is; mpirun's (hvdrun --mpi's too) OMPI_*. A
	 * worker of hvdrun's own asked for MPI (a shell's export) would be
	 * a job of one: it joins hvdrun's, as horovodrun's workers run on
	 * Gloo whatever the environment says. */
	if ((ctl == 0 || ops == 0) && getenv("HOROVOD_RANK") != NULL &&
	    getenv(wenv_vars[WENV_RENDEZVOUS].name) != NULL) {
		hvd__warn(
			"%s=mpi, but hvdrun started this worker without --mpi: it runs on hvdrun's own engine (hvdrun --mpi runs the job over MPI)",
			wenv_vars[ctl == 0 ? WENV_CONTROLLER
					   : WENV_CPU_OPERATIONS]
				.name);
		*want = false;
	} else if (ctl == 0 || ops == 0)
		*want = true;
	else if (ctl > 0)
		*want = false;
	else
		*want = getenv("HOROVOD_RANK") == NULL &&
			getenv("OMPI_COMM_WORLD_RANK") != NULL;
	return HVD_OK;
}

static const char *level_name(int level)
{
	switch (level) {
	case MPI_THREAD_SINGLE:
		return "MPI_THREAD_SINGLE";
	case MPI_THREAD_FUNNELED:
		return "MPI_THREAD_FUNNELED";
	case MPI_THREAD_SERIALIZED:
		return "MPI_THREAD_SERIALIZED";
	default:
		return "MPI_THREAD_MULTIPLE";
	}
}

int hvd__mpi_init(struct hvd__state *st, void **transport)
{
	struct hvd__mpi *m = calloc(1, sizeof(*m));
	MPI_Comm local = MPI_COMM_NULL, cross = MPI_COMM_NULL;
	int inited = 0, level = 0, sizes[2];

	*transport = NULL;
	if (m == NULL)
		return HVD_ENOMEM;
	MPI_Initialized(&inited);
	if (inited) {
		MPI_Query_thread(&level);
	} else {
		if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED,
				    &level) != MPI_SUCCESS) {
			hvd__error("MPI_Init_thread failed");
			free(m);
			return HVD_ESYS;
		}
		initialised_here = true;
	}
	if (level < MPI_THREAD_SERIALIZED) {
		hvd__error(
			"MPI gives %s; libhvd's background thread needs MPI_THREAD_SERIALIZED or more%s",
			level_name(level),
			inited ? " (initialise MPI with MPI_Init_thread)" : "");
		hvd__mpi_finalize(m);
		return HVD_EINVAL;
	}
	MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
	/* Errors come back as codes: a failed peer fails the operations. */
	MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
	MPI_Comm_rank(m->comm, &st->rank);
	MPI_Comm_size(m->comm, &st->size);
	MPI_Comm_split_type(m->comm, MPI_COMM_TYPE_SHARED, st->rank,
			    MPI_INFO_NULL, &local);
	MPI_Comm_rank(local, &st->local_rank);
	MPI_Comm_size(local, &st->local_size);
	MPI_Comm_split(m->comm, st->local_rank, st->rank, &cross);
	MPI_Comm_rank(cross, &st->cross_rank);
	MPI_Comm_size(cross, &st->cross_size);
	/* The hosts' sizes: the most and the least (as the most negated). */
	sizes[0] = st->local_size;
	sizes[1] = -st->local_size;
	MPI_Allreduce(MPI_IN_PLACE, sizes, 2, MPI_INT, MPI_MAX, m->comm);
	st->homogeneous = sizes[0] == -sizes[1];
	MPI_Comm_free(&local);
	MPI_Comm_free(&cross);
	*transport = m;
	return HVD_OK;
}

void hvd__mpi_finalize(void *transport)
{
	struct hvd__mpi *m = transport;
	int finalized = 0;

	if (m == NULL)
		return;
	MPI_Finalized(&finalized);
	if (!finalized && m->comm != MPI_COMM_NULL && m->comm != 0)
		MPI_Comm_free(&m->comm);
	free(m);
}

/* MPI counts are ints: move bytes in pieces of at most 1 GiB. */
#define PIECE (1 << 30)

static int mpi_sendrecv(void *t, int to, const void *sbuf, size_t slen,
			int from, void *rbuf, size_t rlen,
			hvd__recv_progress progress, void *arg)
{
	struct hvd__mpi *m = t;
	const char *s = sbuf;
	char *r = rbuf;
	size_t so = 0, ro = 0;

	while (so < slen || ro < rlen) {
		size_t sl = slen - so, rl = rlen - ro;
		int sn = sl < PIECE ? (int)sl : PIECE,
		    rn = rl < PIECE ? (int)rl : PIECE;
		int rc;

		if (sn > 0 && rn > 0)
			rc = MPI_Sendrecv(s + so, sn, MPI_BYTE, to, 0, r + ro,
					  rn, MPI_BYTE, from, 0, m->comm,
					  MPI_STATUS_IGNORE);
		else if (sn > 0)
			rc = MPI_Send(s + so, sn, MPI_BYTE, to, 0, m->comm);
		else
			rc = MPI_Recv(r + ro, rn, MPI_BYTE, from, 0, m->comm,
				      MPI_STATUS_IGNORE);
		if (rc != MPI_SUCCESS)
			return HVD_ECONN;
		so += (size_t)sn;
		ro += (size_t)rn;
		if (rn > 0 && progress != NULL)
			progress(arg, ro);
	}
	return HVD_OK;
}

static MPI_Datatype mpi_type(enum hvd_dtype t)
{
	switch (t) {
	case HVD_UINT8:
	case HVD_BOOL: /* reduced as bytes (hvd__op_as) */
		return MPI_UINT8_T;
	case HVD_INT8:
		return MPI_INT8_T;
	case HVD_INT16:
		return MPI_INT16_T;
	case HVD_INT32:
		return MPI_INT32_T;
	case HVD_INT64:
		return MPI_INT64_T;
	case HVD_FLOAT32:
		return MPI_FLOAT;
	case HVD_FLOAT64:
		return MPI_DOUBLE;
	default:
		return MPI_DATATYPE_NULL; /* float16, bfloat16: the ring */
	}
}

static MPI_Op mpi_op(enum hvd_op op)
{
	switch (op) {
	case HVD_SUM:
	case HVD_AVERAGE:
		return MPI_SUM;
	case HVD_MIN:
		return MPI_MIN;
	case HVD_MAX:
		return MPI_MAX;
	case HVD_PRODUCT:
		return MPI_PROD;
	case HVD_ADASUM: /* no MPI op: algo/adasum.c runs it */
		break;
	}
	return MPI_OP_NULL;
}

static int mpi_allreduce(void *t, void *buf, size_t count, enum hvd_dtype dt,
			 enum hvd_op op)
{
	struct hvd__mpi *m = t;
	MPI_Datatype type = mpi_type(dt);
	size_t es = hvd__dtype_size(dt), off, per = PIECE / es;
	int size;

	if (type == MPI_DATATYPE_NULL || op == HVD_ADASUM)
		return HVD_ENOTSUP;
	for (off = 0; off < count; off += per) {
		int n = (int)(count - off < per ? count - off : per);

		if (MPI_Allreduce(MPI_IN_PLACE, (char *)buf + off * es, n, type,
				  mpi_op(hvd__op_as(dt, op)),
				  m->comm) != MPI_SUCCESS)
			return HVD_ECONN;
	}
	if (op == HVD_AVERAGE) {
		MPI_Comm_size(m->comm, &size);
		hvd__divide(buf, count, dt, size);
	}
	return HVD_OK;
}

/* No abort: MPI has none short of MPI_Abort, which would end the job
 * before every rank has said why. */
const struct hvd__transport_ops hvd__mpi_ops = {
	.name = "mpi",
	.sendrecv = mpi_sendrecv,
	.allreduce = mpi_allreduce,
	.close = hvd__mpi_finalize,
};
