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

#include "hosts.h"
#include "launch.h"
#include "util.h"

struct hl_nc_addr {
	char *ifname;
	char *addr;
	bool loopback;
	bool candidate;
};

/* One connection test: from host `from` to address `addr` of host `to`. */
struct hl_nc_pair {
	size_t from, to, addr;
	bool done, ok;
	double ms;
	char *error;
};

struct hl_nc_host {
	const struct hl_host *host;
	bool remote;	/* reached over SSH */
	bool ssh_ok;	/* connected and authenticated (remote only) */
	double ssh_ms;	/* how long that took */
	bool probed;	/* the probe described the host */
	char *error;	/* why the host is unusable, one line, or NULL */
	char *hostname; /* as the host names itself */
	char *machine;
	char token[33];
	int port;
	struct hl_nc_addr *addrs;
	size_t naddrs;
	struct hl_strvec gpu;	   /* the probe's GPU facts, "key\tvalue..." */
	struct hl_strvec ifaces;   /* candidate interfaces, in order */
	struct hl_strvec selected; /* those every other host reached */
	bool usable;
};

struct hl_netcheck {
	struct hl_nc_host *h;
	size_t n;
	struct hl_nc_pair *pairs;
	size_t npairs;
	bool loopback; /* every host is this machine */
	int timeout_ms;
	double seconds;
	size_t nusable;
};

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
void hl_netcheck_close(struct hl_netcheck *nc);

/* The interfaces of host h that pair p's address belongs to. */
const char *hl_nc_pair_ifname(const struct hl_netcheck *nc,
			      const struct hl_nc_pair *p);
/* The value of GPU fact key of host h ("driver", "nccl", ...), or NULL. */
const char *hl_nc_gpu_fact(const struct hl_nc_host *h, const char *key);

#endif
