/* group.h: a comm over some of a parent comm's ranks (MPI_Comm_create's
 * idea, without a new connection): the group's rank i is the parent's
 * rank members[i], and every transfer goes over the parent's transport.
 * The ranks that own one slice on each host form such a group for the
 * allreduce across hosts (shm.h), and a process set's ranks one for its
 * engine; a group's watch (transport.h) gives its ranks' connections
 * only, so that a set's bell (engine/bell.c) wakes for its own peers. */
#ifndef HVD_GROUP_H
#define HVD_GROUP_H

#include "transport/transport.h"

/* out becomes the group of the n parent ranks in members (distinct, in
 * the group's rank order), this rank being members[me]. The parent must
 * outlive the group; out->ops->close(out->t) releases it. */
int hvd__group_new(const struct hvd__comm *parent, const int *members, int n,
		   int me, struct hvd__comm *out);

#endif
