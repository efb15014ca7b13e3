/* hier.h: which ranks share a host, and how libhvd's CPU allreduce uses
 * that (issue 14). At start every rank tells every other its place
 * (local rank and size, host) and whether it wants shared memory
 * (HVD_SHM); all reach the same decision:
 *
 *  - every host runs the same number L >= 2 of ranks: the ranks of each
 *    host share a segment (shm.h), and with H >= 2 hosts the ranks of
 *    local rank l on every host form a group (group.h) that allreduces
 *    slice l across hosts over TCP: hierarchical allreduce;
 *  - one rank per host, hosts with different numbers of ranks, or a rank
 *    with HVD_SHM=0: no segment, every collective runs over TCP. */
#ifndef HVD_HIER_H
#define HVD_HIER_H

#include "engine.h"

/* Set e->shm and e->cross as decided above (left NULL and empty where
 * not). Over TCP only, after the mesh has joined. */
int hvd__hier_start(struct hvd__engine *e);
void hvd__hier_stop(struct hvd__engine *e);

#endif
