/* tcp.h: libhvd's own TCP transport. One connection per peer, made once:
 * rank i connects to every rank below it, nearest first, and accepts
 * every rank above it, also while it connects; each connection opens with
 * the MESH message of proto/rendezvous.h (the rank and the job's token),
 * so a stray connection is refused. TCP_NODELAY, socket buffers grown by
 * the kernel's autotuning, send and receive at once, and a lost peer host
 * found within seconds by a transfer that waits on it (link.h). */
#ifndef HVD_TCP_H
#define HVD_TCP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/transport.h"

#define HVD__TOKEN_LEN 32

struct hvd__tcp;

extern const struct hvd__transport_ops hvd__tcp_ops;

struct sockaddr_in;

/* Parse "IPv4:PORT" into sa. */
int hvd__parse_addr(const char *addr, struct sockaddr_in *sa);

/* Listen on bind_addr (an IPv4 address; NULL: any) on a free port; write
 * "ADDR:PORT" for the peers to addr_out. */
int hvd__tcp_new(struct hvd__tcp **out, const char *bind_addr, char *addr_out,
		 size_t addr_len);
/* Connect to every peer. addrs[r] is rank r's "ADDR:PORT". */
int hvd__tcp_connect(struct hvd__tcp *t, int rank, int size, char *const *addrs,
		     const uint8_t token[HVD__TOKEN_LEN], int timeout_ms);
/* When fd turns readable, hvd__tcp_connect asks called_off(arg), which
 * reads what came: true, and the connect gives up with HVD_ERESET (an
 * elastic worker's connection to hvdrun: a reset notice, or hvdrun
 * gone); false (a notice that changes nothing now), and it goes on.
 * -1: never. */
void hvd__tcp_set_cancel(struct hvd__tcp *t, int fd,
			 bool (*called_off)(void *arg), void *arg);
/* An operation that waits longer than this for a peer fails. */
void hvd__tcp_set_timeout(struct hvd__tcp *t, int timeout_ms);
/* Shut every connection down: the peers see it at once, and fail too. */
void hvd__tcp_abort(struct hvd__tcp *t);
void hvd__tcp_free(struct hvd__tcp *t);

#endif
