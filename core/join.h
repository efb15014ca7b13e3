/* join.h: a worker joins its job: it registers with hvdrun's rendezvous
 * (proto/rendezvous.h), learns where its peers listen, and connects the
 * TCP mesh. */
#ifndef HVD_JOIN_H
#define HVD_JOIN_H

#include "tcp.h"

/* Join as rank of size, with HVD_RENDEZVOUS, HVD_SECRET and
 * HVD_START_TIMEOUT from the environment. On success *t is connected to
 * every peer. */
int hvd__join(int rank, int size, struct hvd__tcp **t);

#endif
