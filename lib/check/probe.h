/* probe.h: the remote side of `hvdrun check` (netcheck.h): `hvdrun
 * --probe`, run on each host over SSH (or as a child for this machine).
 * It describes the host (interfaces, addresses, GPUs), listens on every
 * address, and on hvdrun's go connects to the other hosts' addresses in
 * parallel, each with a timeout; a connection counts only when the
 * listener there answers with the token hvdrun expects, so an address
 * that exists on several hosts (a docker bridge) is never mistaken for a
 * route. The dialogue is in records.h. */
#ifndef HL_PROBE_H
#define HL_PROBE_H

#include <stddef.h>

/* Run the probe on stdin/stdout until hvdrun closes stdin. An error
 * (HL_ESYS, with *cause) when it could not start. */
int hl_probe_run(char **cause);
/* This machine and network namespace, as the probe reports it ('M'). */
void hl_machine_id(char *buf, size_t len);

#endif
