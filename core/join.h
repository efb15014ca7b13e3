/* join.h: a worker joins its job: it registers with hvdrun's rendezvous
 * (proto/rendezvous.h), learns where its peers listen, and connects the
 * TCP mesh. */
#ifndef HVD_JOIN_H
#define HVD_JOIN_H

#include <stdbool.h>

#include "transport.h"

/* The comm of rank of size over libhvd's TCP transport (tcp.h). mesh:
 * join the job, with HVD_RENDEZVOUS, HVD_SECRET and HVD_START_TIMEOUT
 * from the environment, and connect to every peer; else a job of one,
 * with no connection. */
int hvd__join(int rank, int size, bool mesh, struct hvd__comm *comm);

#endif
