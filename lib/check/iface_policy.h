/* iface_policy.h: which network interfaces each host's workers use.
 * --network-interface names them for every host; --network-check runs the
 * check (netcheck.h) on the hosts of the plan and takes, on each, the
 * interfaces every other host reached; with neither there is no
 * constraint (libhvd uses the interface it reaches hvdrun from). A check
 * that finds a host unusable fails the job before anything starts. */
#ifndef HL_IFACE_POLICY_H
#define HL_IFACE_POLICY_H

#include <stdbool.h>

#include "config/hosts.h"
#include "config/opts.h"
#include "job/plan.h"
#include "ssh/opts.h"

struct hl_iface_choice {
	/* Per host of the list: "NAME[,NAME...]", or NULL (no constraint).
	 * NULL itself when there is no constraint anywhere. */
	char **host;
	size_t nhosts;
	/* One value for mpirun's btl_tcp_if_include: the names when every
	 * host uses the same, else each selected IPv4 address as a /32
	 * block, which Open MPI matches against each host's own. */
	char *mpi;
	bool checked;	      /* the network check ran */
	double check_seconds; /* how long it took */
};

int hl_iface_choose(struct hl_iface_choice *c, const struct hl_opts *o,
		    const struct hl_hostlist *hosts, const struct hl_plan *plan,
		    const struct hl_ssh_opts *so, char **cause);
void hl_iface_choice_close(struct hl_iface_choice *c);

#endif
