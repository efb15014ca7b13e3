/* elastic.h: the worker's side of an elastic job (hvdrun --min-np,
 * --max-np). hvdrun gives the worker an id (HVD_WORKER_ID) instead of a
 * fixed rank; each hvd_init() joins the next generation of the job
 * through the rendezvous (transport/bootstrap.h), which tells the worker its rank and
 * size, and keeps the connection open: when hvdrun announces a reset on
 * it, the engine is aborted, and every pending and later operation fails
 * with HVD_ERESET (runtime.c) until hvd_shutdown(). */
#ifndef HVD_ELASTIC_H
#define HVD_ELASTIC_H

#include <stdbool.h>
#include <stdint.h>

#include "transport/bootstrap.h"

/* Whether this worker belongs to an elastic job; *id its id. */
bool hvd__elastic_wanted(uint32_t *id);
/* Join the first generation after this process's last: st's ranks and
 * generation, comm's mesh. */
int hvd__elastic_join(struct hvd__state *st, uint32_t id,
		      struct hvd__comm *comm);
/* Watch the connection to hvdrun: on a reset notice, or when hvdrun is
 * gone, the world is over (hvd__world_end, util/internal.h) and
 * abort_engine is called once, from the watching thread. From the join
 * on: a reset may come while the runtime's start exchanges. */
int hvd__elastic_watch(void (*abort_engine)(void));
/* Stop watching and close the connection (hvd_shutdown, a failed
 * hvd_init); the generation is remembered for the next join. */
void hvd__elastic_leave(void);
/* What a failure of the connections (HVD_ECONN, HVD_ETIMEDOUT,
 * HVD_EPROTO) is in an elastic job: HVD_ERESET, the generation is over;
 * any other status, and every status of a job that is not elastic, as
 * it is. */
int hvd__elastic_status(int status);

#endif
