/* elastic/supervise.h: an elastic job's policy in the supervisor
 * (--min-np, --max-np, --reset-limit, --elastic-timeout, cool-downs, the
 * discovery script), as hooks of its loop (launch.h): cmd/run.c gives
 * them to an elastic job's launch. */
#ifndef HL_ELASTIC_SUPERVISE_H
#define HL_ELASTIC_SUPERVISE_H

#include "launch/launch.h"

extern const struct hl_sup_hooks hl_elastic_hooks;

#endif
