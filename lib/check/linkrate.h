/* linkrate.h: how fast one link between two hosts is, for `hvdrun check
 * --bandwidth`: the sink that each probe (probe.h) runs beside its
 * listener, and the transfer one probe makes to another host's sink.
 *
 * The dialogue on a connection: the source sends the sink's token and a
 * newline (a sink closes at once a connection that brings any other);
 * then single 'p' bytes, each echoed by the sink (the round trips); then
 * a 'd' and data, which the sink reads and drops until the source resets
 * the connection. A transfer is either the round trips (max_bytes 0:
 * HL_LR_PINGS of them, on a link that carries nothing else of the check)
 * or data (after one round trip, which shows the sink is the host meant). The source times the data by what the sink's kernel
 * acknowledged (the bytes sent less those still queued, SIOCOUTQ), so
 * it never waits for its own queue to drain, and resets the connection
 * when its time is up, so that nothing of one transfer flows into the
 * next. */
#ifndef HL_LINKRATE_H
#define HL_LINKRATE_H

#include <stdbool.h>
#include <sys/socket.h>

#include "check/probe_msg.h"

#define HL_LR_PINGS 10 /* round trips a transfer times */

struct hl_lr_sink;

/* A listener on every address and a port of the kernel's choice: one
 * dual-stack socket where the kernel has IPv6 (*family AF_INET6), else
 * IPv4. The socket, or HL_ESYS. */
int hl_lr_listen(int *family);
/* The port a socket is bound to, or HL_ESYS. */
int hl_lr_port(int fd);
/* addr (IPv4 or IPv6 text) and port as a socket address; false when addr
 * is neither. */
bool hl_lr_sockaddr(const char *addr, int port, struct sockaddr_storage *sa,
		    socklen_t *len);

/* Listen (hl_lr_listen) and answer sources that bring token, each on a
 * thread of its own, at most 16 at once, each read bounded by 5 s.
 * HL_ESYS, HL_ENOMEM. */
int hl_lr_sink_start(struct hl_lr_sink **out, const char *token, int *port);
void hl_lr_sink_stop(struct hl_lr_sink *s);

/* One transfer (t), its result in r (r->ok false with r->error when the
 * sink could not be reached, was not the host t names, or stopped
 * taking data for t->timeout_ms). Returns within about t->timeout_ms * 3
 * + t->max_ms. */
void hl_lr_measure(const struct hl_pm_transfer *t, struct hl_pm_rate *r);

#endif
