/* rdv_server.h: hvdrun's end of the rendezvous (proto/rendezvous.h): a
 * server thread that admits workers proving they know the job's secret,
 * and once every rank has registered, tells each where the others listen.
 * A job whose program never uses libhvd never registers, and that is
 * fine; once one rank has registered, the others must within the start
 * timeout, or the failure (naming the ranks) is written to report_fd. */
#ifndef HL_RDV_SERVER_H
#define HL_RDV_SERVER_H

#include "env.h"

struct hl_rdv;

int hl_rdv_start(struct hl_rdv **out, int size, int timeout_s, int report_fd,
		 char **cause);
/* Add HVD_RENDEZVOUS, HVD_SECRET and HVD_START_TIMEOUT for the workers. */
int hl_rdv_export(const struct hl_rdv *r, struct hl_envspec *es);
void hl_rdv_stop(struct hl_rdv *r);

#endif
