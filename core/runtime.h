/* runtime.h: the engine behind the collectives (engine.h names its
 * parts): its start and stop, called by hvd_init() and hvd_shutdown(). */
#ifndef HVD_RUNTIME_H
#define HVD_RUNTIME_H

#include <stdbool.h>

#include "join.h"

/* Start the background thread. mpi: the comm over MPI (mpi.h), which the
 * engine owns from here on, also on failure (hvd__runtime_stop closes it
 * through its ops); else joined: connect to the peers through hvdrun's
 * rendezvous (join.h; else a job of one, without connections). */
int hvd__runtime_start(int rank, int size, bool joined,
		       const struct hvd__comm *mpi);
void hvd__runtime_stop(void);
/* Close the timeline and, if path is not NULL, start one there (rank 0
 * writes it; mark: HOROVOD_TIMELINE_MARK_CYCLES). Returns once the
 * background thread has done it. */
int hvd__runtime_timeline(const char *path, bool mark);

#endif
