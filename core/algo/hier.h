/* hier.h: which ranks share a host, and how libhvd's CPU allreduce uses
 * that (issue 14). At start every rank tells every other its place
 * (local rank and size, host) and whether it wants shared memory
 * (HVD_SHM); all reach the same decision:
 *
 *  - every host runs the same number L >= 2 of ranks: the ranks of each
 *    host share a segment (shm.h), and with H >= 2 hosts the ranks of
 *    local rank l on every host form a group (group.h) that allreduces
 *    slice l across hosts over TCP: hierarchical allreduce (and
 *    broadcast, allgather and reducescatter, below);
 *  - one rank per host, hosts with different numbers of ranks, or a rank
 *    with HVD_SHM=0: no segment, every collective runs over TCP. */
#ifndef HVD_HIER_H
#define HVD_HIER_H

#include "engine/engine.h"

/* Set e->shm and e->cross as decided above (left NULL and empty where
 * not). Over TCP only, after the mesh has joined. */
int hvd__hier_start(struct hvd__engine *e);
void hvd__hier_stop(struct hvd__engine *e);

/* With a segment (e->shm), across hosts. Broadcast: the root's host
 * shares the buffer through its segment, local rank l of every host
 * carries slice l of it across hosts to the ranks of local rank l (a
 * chain, ring.h), and the other hosts' ranks gather the slices through
 * their segments: every connection of the root's host carries 1/L. */
int hvd__hier_broadcast(struct hvd__engine *e, void *buf, size_t len, int root);
/* Allgather (rank r's len[r] bytes at their offset in out, this rank's in
 * place): the ranks of each local rank gather their blocks across hosts,
 * then the host's ranks gather those through the segment. */
int hvd__hier_allgatherv(struct hvd__engine *e, void *out, const size_t *len);

#endif
