/* netcheck.h: `hvdrun check`, the preflight of a cluster. Every host is
 * reached like a job's (SSH with the job's options; this machine
 * directly) and runs the probe (probe.h), which describes its interfaces
 * and GPUs and listens. Then every ordered pair of hosts tests a TCP
 * connection to every candidate address of the other, all at once, each
 * with a timeout. An interface of a host is selected when every other
 * host reached it; names may differ between hosts. Loopback addresses are
 * candidates only when every host is this machine (the same boot and
 * network namespace as hvdrun). */
#ifndef HL_NETCHECK_H
#define HL_NETCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "config/hosts.h"
#include "check/netplan.h"
#include "ssh/opts.h"

/* Called from the calling thread as hosts progress. */
typedef void (*hl_nc_progress_fn)(void *arg, const char *phase, size_t done,
				  size_t total);

/* Check the hosts of the list that use[] marks (use NULL: all). Returns
 * an error only when the check itself could not run; unusable hosts are
 * in the result (nusable < n). */
int hl_netcheck_run(struct hl_netcheck *nc, const struct hl_hostlist *hosts,
		    const bool *use, const struct hl_ssh_opts *so,
		    int timeout_ms, hl_nc_progress_fn progress, void *arg,
		    char **cause);
#endif
