/* netplan.h: the network check's data and its pure steps (netcheck.h
 * runs them): what each probe described, which connections to test, the
 * results, which interfaces each host selects, and the reachability the
 * report shows. No I/O: every function here is tested on its own. */
#ifndef HL_NETPLAN_H
#define HL_NETPLAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "check/probe_msg.h"
#include "config/hosts.h"
#include "util/util.h"

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

/* An interface's link as a probe read it (probe_msg.h's 'L'). */
struct hl_nc_ifstat {
	char *ifname;
	long long speed_mbps; /* -1: unknown */
	unsigned long long rx_errors, tx_errors, rx_dropped, tx_dropped;
};

/* One transfer of --bandwidth (linkplan.h): from host `from` to address
 * `addr` of host `to`, in round `round`; a link that read slow is
 * measured again (retried) in retry round `retry`, and once that second
 * reading came (twice), the better of the two is kept (first_gbps: the
 * first). */
struct hl_nc_link {
	size_t from, to, addr, round, retry;
	bool done, ok, slow, retried, twice;
	long long bytes;
	double seconds, gbps, rtt_us, first_gbps;
	double median_gbps; /* of the links into its interface name */
	char *error;
};

enum hl_nc_finding_kind {
	HL_NCF_SLOW_LINK,   /* a link under half its interface's median */
	HL_NCF_FAILED_LINK, /* a transfer that failed */
	HL_NCF_LOW_SPEED,   /* a negotiated speed under the others' */
	HL_NCF_ERRORS,	    /* error counters grew during the check */
	HL_NCF_DROPS,	    /* drop counters grew during the check */
	HL_NCF_PCIE,	    /* a GPU's PCIe link narrower than it can be */
	HL_NCF_NO_PEER,	    /* two GPUs of a host without peer access */
	HL_NCF_GPU_SLOTS,   /* a host with more slots than GPUs */
	HL_NCF_NCCL,	    /* --nccl: a host whose NCCL did not join */
	HL_NCF_FOLDER,	    /* a host without the folder workers start in */
	HL_NCF_CPU_SLOTS,   /* a host with more slots than CPUs */
};

struct hl_nc_finding {
	enum hl_nc_finding_kind kind;
	size_t host;  /* whose (a link's: its source) */
	size_t link;  /* index in links, or SIZE_MAX */
	char *ifname; /* the interface (a link's: its destination's) */
	char *text;   /* one line for people */
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
	uint32_t agent_proto; /* its hvdrun's ('V'); 0: not said */
	char *version;	      /* its hvdrun's version, or NULL */
	char token[33];
	int port;
	struct hl_nc_addr *addrs;
	size_t naddrs;
	struct hl_strvec gpu;	   /* the probe's GPU facts, "key\tvalue..." */
	struct hl_pm_cpus cpus;	   /* its CPUs ('H'); cpus 0: not said */
	struct hl_strvec ifaces;   /* candidate interfaces, in order */
	struct hl_strvec selected; /* those every other host reached */
	bool usable;
	int sink_port; /* the probe's bandwidth sink; 0: none */
	/* The folder a job's workers start in (--wdir's, or hvdrun's own),
	 * as the probe found it there ('W'): NULL, not said (an older
	 * hvdrun); "", a folder it can enter; else why not. */
	char *folder;
	/* Its links when described, and after --bandwidth's transfers. */
	struct hl_nc_ifstat *stats[2];
	size_t nstats[2];
};

struct hl_netcheck {
	struct hl_nc_host *h;
	size_t n;
	char *folder; /* where a job's workers start (hl_nc_host's folder) */
	struct hl_nc_pair *pairs;
	size_t npairs;
	bool loopback; /* every host is this machine */
	int timeout_ms;
	double seconds;
	size_t nusable;
	/* --bandwidth (linkplan.h): each transfer's limits, the transfers in
	 * rounds, and what the check found. */
	bool bandwidth;
	int bw_ms;
	long long bw_bytes;
	struct hl_nc_link *links;
	size_t nlinks, nrounds, nretries;
	struct hl_nc_finding *findings;
	size_t nfindings;
};

/* A host of the check, for host (which must outlive it). */
void hl_nc_host_init(struct hl_nc_host *h, const struct hl_host *host,
		     bool remote);
/* Take one record of a probe's description ('N', 'M', 'V', 'K', 'P',
 * 'Q', 'I', 'L', 'U'; probe_msg.h) into h; others are ignored. */
void hl_nc_take_description(struct hl_nc_host *h, char type, const char *data,
			    size_t len);
/* Take one 'L' record into h's stats: when (0) described, (1) after the
 * transfers. */
void hl_nc_take_stats(struct hl_nc_host *h, int when, const char *data,
		      size_t len);
/* Take one 'C' result into its pair. */
void hl_nc_take_result(struct hl_netcheck *nc, const char *data, size_t len);
/* After the descriptions: mark the candidate addresses (loopback ones only
 * when every probed host is own_machine, this hvdrun's machine id), list
 * each host's candidate interfaces, and make one pair for every probed
 * host and candidate address of every other probed host. HL_ENOMEM. */
int hl_nc_plan(struct hl_netcheck *nc, const char *own_machine);
/* After the results: select on each probed host the interfaces every
 * other probed host reached (and order them first), and say which hosts
 * are usable and why not (a host whose hvdrun speaks another agent
 * protocol than this one's is not: no rank can start there). */
void hl_nc_select(struct hl_netcheck *nc);
/* Whether host i reached an address of interface ifname on host j. */
bool hl_nc_reached(const struct hl_netcheck *nc, size_t i, size_t j,
		   const char *ifname);
/* Whether any connection from host i to host j was tested. */
bool hl_nc_tested(const struct hl_netcheck *nc, size_t i, size_t j);
/* The interface that pair p's address belongs to. */
const char *hl_nc_pair_ifname(const struct hl_netcheck *nc,
			      const struct hl_nc_pair *p);
void hl_netcheck_close(struct hl_netcheck *nc);

#endif
