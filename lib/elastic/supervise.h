/* elastic/supervise.h: an elastic job's policy in the supervisor
 * (--min-np, --max-np, --reset-limit, --elastic-timeout, cool-downs, the
 * discovery script), as hooks of its loop (launch.h), and its
 * generations at the rendezvous (rdv/server.h): cmd/run.c gives them to an
 * elastic job's launch and rendezvous. */
#ifndef HL_ELASTIC_SUPERVISE_H
#define HL_ELASTIC_SUPERVISE_H

#include "launch/launch.h"
#include "rdv/server.h"

extern const struct hl_sup_hooks hl_elastic_hooks;
extern const struct hl_rdv_generations hl_elastic_generations;

#endif
