/* link.h: the health of the TCP transport's connections. A peer's host
 * or link lost shows as silence: nothing acknowledged while data or
 * keepalive probes wait. A slow or stopped peer's kernel still answers,
 * so that fails only after the transport's timeout (30 s). Probes go
 * seldom on a quiet connection (the mesh has one to every peer) and
 * once a second on one a transfer waits for (hvd__link_watch). Not
 * TCP_USER_TIMEOUT: it also ends a connection whose receiver's window
 * stays shut that long. */
#ifndef HVD_LINK_H
#define HVD_LINK_H

#include <stdbool.h>

/* Silence this long, with probes unanswered or data sent again, is a
 * lost link (hvd__link_lost). */
#define HVD__LINK_LOST_MS 2000

/* TCP_NODELAY, keepalive at the quiet pace, and non-blocking. Socket
 * buffers are left to the kernel's autotuning, which grows them to
 * tcp_rmem/tcp_wmem's maximum (6 MiB and 4 MiB by default): a fixed
 * SO_RCVBUF turns autotuning off, and measured up to three times slower
 * here. */
void hvd__link_tune(int fd);
/* Probes once a second (the first after a second of quiet) while a
 * transfer waits on fd; on false, at the quiet pace again. fd < 0: no
 * connection, nothing done. */
void hvd__link_watch(int fd, bool on);
/* Whether fd's peer host or link is lost (HVD__LINK_LOST_MS): nothing
 * acknowledged that long, with two probes unanswered (keepalive or
 * zero-window) or data sent again. fd < 0: false. */
bool hvd__link_lost(int fd);
/* Why a connection failed (err: its errno, or 0 to ask the socket):
 * HVD_ETIMEDOUT where its peer's host or link went silent, else
 * HVD_ECONN (closed). */
int hvd__link_failed(int fd, int err);

#endif
