/* linkplan.h: the pure steps of `hvdrun check --bandwidth` (netcheck.h
 * runs them, on the data of netplan.h): which transfers to make and in
 * which round, the results (linkplan.c), and the findings (findings.c).
 *
 * Rounds: the m usable hosts in order; in round s (1..m-1) of interface
 * k, host i sends to host (i + s) mod m, on the k-th interface that host
 * selected. So every host sends to one host and receives from one in a
 * round, and no link carries two transfers at once: m - 1 rounds an
 * interface, whatever the number of hosts. The rounds run twice: first
 * the round trips alone (while no data moves), then the data. Then the
 * links that read slow are measured again, in the rounds they had (the
 * retry rounds: only those rounds that have such a link), and each keeps
 * the better reading: one transfer's stall (a retransmission timeout is
 * as long as a transfer) is no slow link; a slow link reads slow twice. */
#ifndef HL_LINKPLAN_H
#define HL_LINKPLAN_H

#include "check/netplan.h"

/* Every ordered pair of usable hosts, on each interface the destination
 * selected, at the first of its addresses there that the source reached
 * (hl_nc_select first). nc->bw_ms and bw_bytes bound each. HL_ENOMEM. */
int hl_nc_plan_links(struct hl_netcheck *nc);
/* What a transfer measures: a link's round trips, its data, or its data
 * again (a retry). */
enum hl_nc_take { HL_NC_TRIPS, HL_NC_DATA, HL_NC_RETRY };

/* Take one 'Y' result into its link. A failure of any fails the link; a
 * retry's reading replaces the first where it is faster. */
void hl_nc_take_rate(struct hl_netcheck *nc, enum hl_nc_take what,
		     const char *data, size_t len);
/* Each link's Gb/s, the median of the links into the same interface
 * name (median_gbps, 0 where there is none), and whether it is slow:
 * under half that median. HL_ENOMEM. */
int hl_nc_mark_slow(struct hl_netcheck *nc);
/* After the data's rounds: mark the links that read slow by the rule of
 * hl_nc_judge to be retried, each in the retry round of its round, and
 * count the retry rounds (nc->nretries). HL_ENOMEM. */
int hl_nc_plan_retries(struct hl_netcheck *nc);
/* Fail a link that was not measured, with why (copied). */
void hl_nc_link_fail(struct hl_nc_link *l, const char *why);
/* At the end of the check: each link's Gb/s, the slow ones (under half
 * the median of the links into the same interface name), and the
 * findings (slow and failed links, a negotiated speed under the upper
 * median of the same interface on the other hosts, error and drop
 * counters that grew; a GPU whose PCIe link is narrower than its
 * maximum, two GPUs of a host without peer access). HL_ENOMEM. */
int hl_nc_judge(struct hl_netcheck *nc);
/* The interface a link goes into. */
const char *hl_nc_link_ifname(const struct hl_netcheck *nc,
			      const struct hl_nc_link *l);
/* The median Gb/s and round trip (µs) of the links measured into
 * interfaces named ifname; false when there are none. */
bool hl_nc_link_medians(const struct hl_netcheck *nc, const char *ifname,
			double *gbps, double *rtt_us);
/* The interface names links go into, each once, in the order of the
 * links (the caller closes v). HL_ENOMEM. */
int hl_nc_link_ifnames(const struct hl_netcheck *nc, struct hl_strvec *v);
/* Add a finding of host (a link's: link, else SIZE_MAX) with text
 * (taken; NULL: out of memory). HL_ENOMEM. */
int hl_nc_add_finding(struct hl_netcheck *nc, enum hl_nc_finding_kind kind,
		      size_t host, size_t link, const char *ifname, char *text);
/* How many findings of kind k. */
size_t hl_nc_count(const struct hl_netcheck *nc, enum hl_nc_finding_kind k);
/* hvdrun check's exit status: 1 when a host is not usable, a link
 * failed or (--nccl) a host's NCCL did not join, or (fail_on_slow) a link
 * is slow; else 0. */
int hl_nc_status(const struct hl_netcheck *nc, bool fail_on_slow);

#endif
