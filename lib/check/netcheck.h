/* netcheck.h: `hvdrun check`, the preflight of a cluster. Every host is
 * reached like a job's (SSH with the job's options; this machine
 * directly) and runs the probe (probe.h), which describes its interfaces
 * and GPUs and listens. Then every ordered pair of hosts tests a TCP
 * connection to every candidate address of the other, all at once, each
 * with a timeout. An interface of a host is selected when every other
 * host reached it; names may differ between hosts. Loopback addresses are
 * candidates only when every host is this machine (the same boot and
 * network namespace as hvdrun). With opts->bandwidth, the usable hosts
 * then measure every link between them in rounds (linkplan.h), each
 * probe sending to another's sink (linkrate.h), and read their links'
 * counters again; every wait of a round is bounded. */
#ifndef HL_NETCHECK_H
#define HL_NETCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "config/hosts.h"
#include "check/netplan.h"
#include "ssh/opts.h"

/* Called from the calling thread as the check progresses: done of total
 * units ("hosts", "rounds") of a phase. */
typedef void (*hl_nc_progress_fn)(void *arg, const char *phase,
				  const char *unit, size_t done, size_t total);

struct hl_nc_opts {
	int timeout_ms; /* each connection test; each wait of a transfer */
	/* Then measure every link (linkplan.h), each transfer at most
	 * bw_ms milliseconds or bw_bytes bytes. */
	bool bandwidth;
	int bw_ms;
	long long bw_bytes;
};

/* Check the hosts of the list that use[] marks (use NULL: all). Returns
 * an error only when the check itself could not run; unusable hosts are
 * in the result (nusable < n). */
int hl_netcheck_run(struct hl_netcheck *nc, const struct hl_hostlist *hosts,
		    const bool *use, const struct hl_ssh_opts *so,
		    const struct hl_nc_opts *opts, hl_nc_progress_fn progress,
		    void *arg, char **cause);
#endif
