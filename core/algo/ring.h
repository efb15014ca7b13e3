/* ring.h: bandwidth-optimal collectives over any transport (transport.h).
 *
 * Allreduce is a ring reduce-scatter followed by a ring allgather. The
 * buffer is cut into `size` chunks. In step s of the reduce-scatter, each
 * rank sends chunk (rank - s) to its right neighbour and receives chunk
 * (rank - s - 1) from its left one, reducing it into its own copy as the
 * bytes arrive (the transport reports progress, so reducing overlaps the
 * transfer of the rest). After size-1 steps, rank r holds the complete
 * chunk (r + 1); the allgather passes the complete chunks around the ring
 * in size-1 more steps. Each rank sends and receives 2(N-1)/N of the
 * buffer, the lower bound. Small allreduces (64 KiB or less), where those
 * 2(N-1) steps are all latency, run by recursive doubling instead:
 * log2(N) exchanges of the whole buffer.
 *
 * Broadcast is a pipelined chain from the root: the buffer is cut into
 * segments, and in each step every rank forwards the segment it received
 * in the step before while receiving the next one, so the chain streams.
 *
 * Reduce-scatter is the allreduce's first half alone, over chunks cut at
 * whole rows: rank r ends with chunk r, the reduction of every rank's.
 *
 * Allgather (each rank's block may have a different size) passes the
 * blocks around the ring: N-1 steps, each rank sends and receives every
 * block but its own once. */
#ifndef HVD_RING_H
#define HVD_RING_H

#include <stddef.h>

#include "hvd.h"
#include "transport/transport.h"

/* Microseconds spent in each phase of allreduces, added up. */
struct hvd__ring_times {
	long long reduce_scatter_us;
	long long allgather_us;
};

/* buf (count elements) becomes op of every rank's buf, in place. times,
 * if not NULL, accumulates how long each phase took. */
int hvd__ring_allreduce_timed(const struct hvd__comm *c, void *buf,
			      size_t count, enum hvd_dtype t, enum hvd_op op,
			      struct hvd__ring_times *times);
int hvd__ring_allreduce(const struct hvd__comm *c, void *buf, size_t count,
			enum hvd_dtype t, enum hvd_op op);
/* The same over nv pieces laid end to end (each a whole number of
 * elements), reduced where they lie: a fused batch without a fusion
 * buffer. More than one piece needs the transport's sendrecv_v. */
int hvd__ring_allreduce_v(const struct hvd__comm *c, const struct iovec *v,
			  int nv, enum hvd_dtype t, enum hvd_op op,
			  struct hvd__ring_times *times);
/* The ranks from which rank `rank` of `size` receives in an allreduce
 * (the ring's left neighbour; recursive doubling's partners), each once,
 * into out (room for HVD__RING_SOURCES_MAX); returns how many. A rank
 * that waits for the next allreduce can only be reached by these ranks'
 * first bytes (engine/bell.c watches their connections). */
#define HVD__RING_SOURCES_MAX 34
int hvd__ring_sources(int rank, int size, int *out);
/* Chunk i of count elements in rows of block, split over n ranks the way
 * Horovod splits a first dimension: rows/n rows each, the first rows % n
 * ranks one more. */
void hvd__ring_chunk(size_t count, size_t block, int n, int i, size_t *start,
		     size_t *len);
/* buf (count elements, rows of block) reduced with op, in place: this
 * rank's chunk of buf (hvd__ring_chunk) gets the result; the rest of buf
 * is left in no particular state. AVERAGE sums: the caller divides. */
int hvd__ring_reducescatter(const struct hvd__comm *c, void *buf, size_t count,
			    size_t block, enum hvd_dtype t, enum hvd_op op);
/* root's buf (len bytes) is copied to every rank's buf. */
int hvd__ring_broadcast(const struct hvd__comm *c, void *buf, size_t len,
			int root);
/* out gets every rank's block in rank order: rank r's len[r] bytes at
 * offset sum(len[0..r-1]). This rank's block must already be in place. */
int hvd__ring_allgatherv(const struct hvd__comm *c, void *out,
			 const size_t *len);

#endif
