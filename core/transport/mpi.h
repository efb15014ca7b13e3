/* mpi.h: libhvd over Open MPI. When the job was started by mpirun (Open
 * MPI's rank environment) or HOROVOD_CONTROLLER=mpi / HOROVOD_CPU_OPERATIONS
 * =mpi say so, MPI is the controller and the data plane: ranks from
 * MPI_COMM_WORLD, local ranks from its shared-memory split, cross ranks
 * from the split by local rank; the negotiation and the ring run over MPI
 * point-to-point on a communicator of libhvd's own, and allreduces of
 * MPI's native types go to MPI_Allreduce (HOROVOD_MPI_ALLREDUCE=0: the
 * ring instead). The background thread makes every MPI call after
 * MPI_Init, so MPI must give MPI_THREAD_SERIALIZED or more. A program
 * that initialised MPI itself keeps it: libhvd uses it and does not
 * finalise it. */
#ifndef HVD_MPI_H
#define HVD_MPI_H

#include <stdbool.h>

#include "util/internal.h"
#include "transport/transport.h"

extern const struct hvd__transport_ops hvd__mpi_ops;

/* Whether this process should run on MPI (see above): HVD_OK and *want,
 * or HVD_EINVAL for a HOROVOD_CONTROLLER that is none of libhvd's. */
int hvd__mpi_wanted(bool *want);
/* Initialise (or adopt) MPI and fill the ranks of st. */
int hvd__mpi_init(struct hvd__state *st, void **transport);
/* Free libhvd's communicators. MPI that libhvd initialised is finalised
 * only when the process exits (hvd__mpi_exit), so that hvd_init() can
 * follow hvd_shutdown(). */
void hvd__mpi_finalize(void *transport);
/* At the process's exit, after libhvd stopped: finalise MPI if libhvd
 * initialised it (then true). */
bool hvd__mpi_exit(void);

#endif
