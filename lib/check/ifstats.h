/* ifstats.h: each network interface's link as the kernel reports it
 * (/sys/class/net/IFNAME/speed and statistics/), for the network check's
 * probe (probe.h): read when it describes its host and again after
 * --bandwidth's transfers. */
#ifndef HL_IFSTATS_H
#define HL_IFSTATS_H

#include "agent/records.h"

/* One 'L' record (probe_msg.h) for each interface that is up and
 * running: its negotiated speed (-1 where the kernel knows none, as for
 * virtual links) and its error and drop counters. */
void hl_ifstats_put(struct hl_buf *b);

#endif
