/* transport.h: how ranks move bytes. A transport is a struct of
 * operations (NCCL's and gloo's shape); the ring algorithms (ring.h) use
 * nothing else, so they run unchanged over TCP, MPI or a test double. */
#ifndef HVD_TRANSPORT_H
#define HVD_TRANSPORT_H

#include <poll.h>
#include <stddef.h>
#include <sys/uio.h>

#include "hvd.h"

/* Called as received bytes arrive: `done` bytes of the receive buffer are
 * complete. Lets the caller reduce what has arrived while the rest of the
 * message is still in flight. */
typedef void (*hvd__recv_progress)(void *arg, size_t done);

struct hvd__transport_ops {
	const char *name;
	/* Send slen bytes to rank `to` and receive rlen bytes from rank
	 * `from`, both at once (full duplex). Either length may be 0. */
	int (*sendrecv)(void *t, int to, const void *sbuf, size_t slen,
			int from, void *rbuf, size_t rlen,
			hvd__recv_progress progress, void *arg);
	/* Optional: sendrecv with each side a list of pieces (gather on
	 * send, scatter on receive), so that tensors are reduced where they
	 * lie, without a copy into a fusion buffer. */
	int (*sendrecv_v)(void *t, int to, const struct iovec *sv, int sn,
			  int from, const struct iovec *rv, int rn,
			  hvd__recv_progress progress, void *arg);
	/* Optional: a whole allreduce of buf in place, the transport's own
	 * way (MPI_Allreduce). HVD_ENOTSUP: not for this dtype or op, and
	 * the ring runs instead. */
	int (*allreduce)(void *t, void *buf, size_t count, enum hvd_dtype dtype,
			 enum hvd_op op);
	/* Optional: HVD_ECONN if a peer has closed its connection, else
	 * HVD_OK, without waiting. Lets a wait on work outside the transport
	 * (a GPU stream) notice a dead peer. */
	int (*check)(void *t);
	/* Optional: the descriptor (POLLIN) on which each rank's bytes
	 * arrive, into fds[rank] for the first max ranks (-1, which poll()
	 * passes over: this rank's, or none); returns how many entries. A
	 * thread that waits between transfers polls them to wake when a
	 * peer starts one. */
	int (*watch)(void *t, struct pollfd *fds, int max);
	/* The lifecycle. Each takes t NULL (a job of one rank: nothing to
	 * do). tune (optional): the longest one transfer may take. abort (optional): make
	 * every blocked and later transfer fail at once, after a failure.
	 * close: release t; the comm no longer uses it. */
	void (*tune)(void *t, int timeout_ms);
	void (*abort)(void *t);
	void (*close)(void *t);
};

/* A group of ranks and the transport between them. */
struct hvd__comm {
	int rank;
	int size;
	const struct hvd__transport_ops *ops;
	void *t;
};

#endif
