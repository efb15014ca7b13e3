/* netlinks.h: the bandwidth stage of the network check (--bandwidth,
 * linkplan.h): the calling thread runs the rounds, each host's thread
 * its transfer of each round. */
#ifndef HL_NETLINKS_H
#define HL_NETLINKS_H

#include "check/netcheck.h"
#include "check/nchost.h"

/* Before the stage: the hosts that failed or did not finish their tests
 * are out, and the others select their interfaces. */
void hl_nch_select_early(struct nc_group *g);
/* The calling thread: every round, each bounded, and the slow links'
 * retries. HL_ENOMEM (the stage then ends). */
int hl_nch_measure_links(struct nc_group *g, hl_nc_progress_fn progress,
			 void *arg);
/* A host's thread: its transfer of each round, then its counters. */
void hl_nch_links(struct nc_thread *t);

#endif
