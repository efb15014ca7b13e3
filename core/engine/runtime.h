/* runtime.h: the engine behind the collectives (engine.h names its
 * parts): its start and stop, called by hvd_init() and hvd_shutdown(). */
#ifndef HVD_RUNTIME_H
#define HVD_RUNTIME_H

#include <hvd.h>
#include <stdbool.h>

#include "transport/bootstrap.h"

/* Start the background thread. mpi: the comm over MPI (mpi.h), which the
 * engine owns from here on, also on failure (hvd__runtime_stop closes it
 * through its ops); else joined: connect to the peers through hvdrun's
 * rendezvous (transport/bootstrap.h; else a job of one, without connections). */
int hvd__runtime_start(int rank, int size, bool joined,
		       const struct hvd__comm *mpi);
void hvd__runtime_stop(void);
/* Run the engine's cycles in this thread until h completes, if no other
 * thread runs them (a waiting thread takes the background thread's
 * place: no hand-off to it and back, which costs more than a small
 * collective). Returns -1 if it did not run them, else 1 if work is left
 * for the background thread, 2 if only a process set's next cycle is
 * (its ranks voted for it; nothing of this rank's waits in it: the
 * caller's next collective most likely comes before the background
 * thread's next look, every cycle time), 0 if nothing is. */
int hvd__runtime_drive(const hvd_handle *h);
/* Close the timeline and, if path is not NULL, start one there (rank 0
 * writes it; mark: HOROVOD_TIMELINE_MARK_CYCLES). Returns once the
 * background thread has done it; HVD_ESYS: rank 0 could not create the
 * file, errno says why. */
int hvd__runtime_timeline(const char *path, bool mark);
/* The process sets of the running engine (sets.h: its queries take any
 * thread). */
struct hvd__sets *hvd__runtime_sets(void);

#endif
