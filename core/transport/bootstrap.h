/* transport/bootstrap.h: a worker joins its job: it registers with hvdrun's rendezvous
 * (proto/rendezvous.h), learns where its peers listen, and connects the
 * TCP mesh. */
#ifndef HVD_JOIN_H
#define HVD_JOIN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/rendezvous.h"
#include "util/internal.h"
#include "transport/transport.h"

/* The comm of st's rank of its size over libhvd's TCP transport (tcp.h).
 * mesh: join the job's next round, with HVD_RENDEZVOUS, HVD_SECRET and
 * HVD_START_TIMEOUT from the environment, and connect to every peer
 * (st->key_gen: the round); else a job of one, with no connection. */
int hvd__join(struct hvd__state *st, bool mesh, struct hvd__comm *comm);

/* An elastic worker's open connection to hvdrun's rendezvous, on which
 * hvdrun's notices come (proto/rendezvous.h): what checks them, and
 * bytes already read past the WORLD (malloc'ed). */
struct hvd__rdv_link {
	int fd;
	uint8_t secret[RDV_SECRET_LEN];
	uint8_t nonce[RDV_NONCE_LEN];
	uint8_t *rest;
	size_t nrest;
};

/* An elastic job's worker id joins the first generation after last_gen
 * that has it: *st gets its ranks and generation, comm its mesh, link the
 * connection to hvdrun, left open. */
int hvd__join_elastic(struct hvd__state *st, uint32_t id, uint32_t last_gen,
		      struct hvd__comm *comm, struct hvd__rdv_link *link);

#endif
