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

#include <stdbool.h>

#include "algo/buffers.h"
#include "transport/shm.h"
#include "transport/transport.h"

/* What one comm's ranks share on their hosts. */
struct hvd__hier {
	struct hvd__shm *shm;	   /* this host's ranks' segment, or NULL */
	struct hvd__comm cross;	   /* with shm: this local rank's group across
				   hosts (group.h); ops NULL: one host */
	struct hvd__across across; /* the segment's way across hosts: the
				      ring over cross */
	/* The segment's ranks are the comm's, local rank = rank: every
	 * collective may run through it. */
	bool job;
	/* With shm: host h's ranks are comm's h * lsize ... h * lsize +
	 * lsize - 1 (Adasum's tree pairs a host's ranks first). */
	bool in_order;
	/* With shm: host h's local rank l is rank host_at[h * lsize + l]. */
	int *host_at;
	int lsize, nhosts;
	int lrank, host; /* this rank's local rank and host */
	bool one_a_host; /* every host runs one of comm's ranks (the job's
			    only: hvd__hier_start) */
	bool even;	 /* every host runs as many of comm's ranks (the job's
		      only: hvd__hier_start) */
};

/* Set h as decided above for the ranks of comm (want: this rank would
 * share memory, HVD_SHM): h->shm and h->cross are left NULL and empty
 * where not. Over TCP only, after the mesh has joined. h must stay where
 * it is until hvd__hier_stop (hi->across points into it). */
int hvd__hier_start(struct hvd__hier *hi, const struct hvd__comm *comm,
		    bool want);
void hvd__hier_stop(struct hvd__hier *h);
/* Without a segment: where comm's ranks run L of them on each of H hosts
 * (local and cross ranks tiling them), *cross becomes this local rank's
 * group across the hosts (with L > 1 and H > 1), host h's member being
 * the rank of cross rank h; else *L is 0. A collective call over comm. */
int hvd__hier_cross(const struct hvd__comm *comm, struct hvd__comm *cross,
		    int *L, int *H);
/* The same for comm, a process set of the job (set: its id) whose rank i
 * is the job's ranks[i], decided from the job's own (job->shm set)
 * without a message: every host with ranks of the set has the same number
 * of them, at least 2, and each host's share a segment of their own;
 * else hi is left empty (the set runs over TCP). The set's ranks on a
 * host call it together (they open the segment together). */
int hvd__hier_subset(struct hvd__hier *hi, const struct hvd__hier *job,
		     const struct hvd__comm *comm, const int *ranks, int set);

/* With a segment (h->shm), across hosts. Broadcast: the root's host
 * shares the buffer through its segment, local rank l of every host
 * carries slice l of it across hosts to the ranks of local rank l (a
 * chain, ring.h), and the other hosts' ranks gather the slices through
 * their segments: every connection of the root's host carries 1/L. */
int hvd__hier_broadcast(struct hvd__hier *hi, void *buf, size_t len, int root);
/* Allgather (rank r's len[r] bytes at their offset in out, this rank,
 * comm's rank `rank`, in place; scratch from b): the ranks of each local
 * rank gather their blocks across hosts, then the host's ranks gather
 * those through the segment. */
int hvd__hier_allgatherv(struct hvd__hier *hi, struct hvd__buffers *b, int rank,
			 int size, void *out, const size_t *len);

#endif
