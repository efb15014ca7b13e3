/* shm.h: the ranks of one host share memory.
 *
 * Local rank 0 creates the segment as a memfd (nothing is ever named in
 * /dev/shm, so nothing is left behind by a crash or a SIGKILL) and hands
 * it to its local peers over an abstract unix socket whose name the job's
 * secret derives (abstract names vanish with their process). Every rank
 * maps it. The segment holds a header, one cache line per rank with its
 * arrival counter and pid, one per rank with its bell, then two sets of
 * one slot per rank.
 *
 * A rank waits for its peers on their counters: a spin while spinning
 * pays (wait.h), then a futex sleep in short steps, checking between steps that the
 * peer is alive (its pidfd) and that the deadline has not passed, so an
 * idle rank burns no core and a dead peer fails the others with
 * HVD_ECONN at once.
 *
 * An allreduce reduces its data one chunk of at most `slot` bytes per
 * rank at a time: every rank copies its chunk into its slot; after a
 * barrier each rank reduces its 1/L of the chunk across all L slots into
 * its own slot; after another, every rank copies the L reduced slices
 * out. The two slot sets alternate, so a chunk's copy-in never overwrites
 * what a slower rank is still copying out of the previous one.
 *
 * Across hosts (hierarchical): between the two barriers, each rank
 * allreduces its reduced slice over TCP with the ranks that own the same
 * slice on the other hosts (a group, group.h), so every rank's connection
 * carries 1/L of the data and each host sends its data across once.
 *
 * The engine marks the segment broken when a rank's cycle fails
 * (hvd__shm_abort), which wakes every sleeper: its local peers fail with
 * HVD_ECONN at once instead of waiting on it. */
#ifndef HVD_SHM_H
#define HVD_SHM_H

#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "hvd.h"

struct hvd__shm;

/* How a slice this rank owns is reduced with the ranks of the same local
 * rank on the other hosts (hier.h hands the ring over its group): hosts
 * ranks take part; hosts 1 (or a NULL across): this host is the job. */
struct hvd__across {
	int hosts;
	int (*allreduce)(void *arg, void *buf, size_t count, enum hvd_dtype t,
			 enum hvd_op op);
	void *arg;
};

/* Open (local rank 0: create) the segment of the lsize local ranks, each
 * slot `slot` bytes, at the abstract socket name `name` (at most 100
 * bytes, no NUL), within timeout_ms. */
int hvd__shm_open(struct hvd__shm **out, int lrank, int lsize, const char *name,
		  size_t slot, int timeout_ms);
/* Wait for every local rank to arrive; HVD_ECONN when a peer died,
 * HVD_ETIMEDOUT when one did not arrive within timeout_ms. */
int hvd__shm_barrier(struct hvd__shm *s, int timeout_ms);
/* Allreduce the pieces (laid end to end, every rank the same total
 * length, a multiple of dtype's size) in place, across the host and,
 * with across, with the ranks of the same local rank on the other
 * hosts. */
int hvd__shm_allreduce_v(struct hvd__shm *s, const struct hvd__across *across,
			 const struct iovec *v, int k, enum hvd_dtype t,
			 enum hvd_op op, int timeout_ms);
/* One exchange on one host: the pieces (at most a slot, laid end to
 * end) into this rank's slot, then *slots the array of every local
 * rank's slot (lsize entries, s's own), readable until the exchange after
 * next. */
int hvd__shm_exchange(struct hvd__shm *s, const struct iovec *v, int k,
		      const unsigned char *const **slots, int timeout_ms);
/* count elements at byte off of every slot of an exchange, reduced in
 * local rank order into dst (an average divided by the local ranks). */
void hvd__shm_reduce_slots(const struct hvd__shm *s,
			   const unsigned char *const *slots, size_t off,
			   void *dst, size_t count, enum hvd_dtype t,
			   enum hvd_op op);
/* The bytes of one slot; this rank's local rank; the local ranks. */
size_t hvd__shm_slot_bytes(const struct hvd__shm *s);
int hvd__shm_rank(const struct hvd__shm *s);
int hvd__shm_size(const struct hvd__shm *s);
/* A reduce-scatter: buf (len bytes) reduced as hvd__shm_allreduce_v
 * reduces, but only bytes [keep_lo, keep_hi) of the result are copied
 * into this rank's buf; the rest is left as it was. */
int hvd__shm_reduce_keep(struct hvd__shm *s, const struct hvd__across *across,
			 void *buf, size_t len, size_t keep_lo, size_t keep_hi,
			 enum hvd_dtype t, enum hvd_op op, int timeout_ms);
/* root's buf (len bytes) is copied to every local rank's buf: the root
 * fills one slot set at a time, and the others copy it out after one
 * barrier. */
int hvd__shm_broadcast(struct hvd__shm *s, void *buf, size_t len, int root,
		       int timeout_ms);
/* out gets every local rank's block in rank order: rank r's len[r]
 * bytes at offset sum(len[0..r-1]); this rank's block must be in place.
 * One slot-full of every block per barrier. */
int hvd__shm_allgatherv(struct hvd__shm *s, void *out, const size_t *len,
			int timeout_ms);
/* Rank p gets sb[p] bytes at send + soff[p] from this rank, into its
 * out + roff[this rank]; this rank gets rb[q] bytes from each other rank
 * q into out + roff[q] (byte counts and offsets). Its block to itself is
 * the caller's to copy. Each slot holds one part per destination; one
 * part of every block per barrier. */
int hvd__shm_alltoallv(struct hvd__shm *s, const void *send, const size_t *sb,
		       const size_t *soff, void *out, const size_t *rb,
		       const size_t *roff, int timeout_ms);
/* The same, calling got(arg, off, len) after each round: bytes
 * [off, off + len) of every block this rank receives have arrived (each
 * block's up to its own length), while they are in cache. */
int hvd__shm_alltoallv_got(struct hvd__shm *s, const void *send,
			   const size_t *sb, const size_t *soff, void *out,
			   const size_t *rb, const size_t *roff, int timeout_ms,
			   void (*got)(void *arg, size_t off, size_t len),
			   void *arg);
/* Each local rank's bell: a rank's engine that waits between its cycles
 * for a late peer sleeps on its own bell. A local peer that arrives at a
 * round beyond this rank's (its next agreement, which cannot end without
 * this rank) rings it, as work of this rank's own does. called: a peer
 * has arrived at a round beyond this rank's; sleep: up to ms, unless
 * woken() or called, or until a ring, on a futex (nfds 0) or in poll()
 * on fds, which then hold the bell's socket (hvd__shm_bell_socket) and
 * whatever else ends the sleep (a connection to a peer on another
 * host); ring: this rank's bell. socket: bind this rank's bell socket
 * (an abstract datagram socket, closed with the segment), from then on
 * rung by a datagram; -1 if it cannot be. */
bool hvd__shm_bell_called(const struct hvd__shm *s);
void hvd__shm_bell_sleep(struct hvd__shm *s, double ms, bool (*woken)(void),
			 struct pollfd *fds, int nfds);
void hvd__shm_bell_ring(struct hvd__shm *s);
int hvd__shm_bell_socket(struct hvd__shm *s);
/* Mark the segment broken: every wait of every local rank fails with
 * HVD_ECONN from now on. s may be NULL. */
void hvd__shm_abort(struct hvd__shm *s);
/* The bytes the segment takes. */
size_t hvd__shm_bytes(const struct hvd__shm *s);
void hvd__shm_close(struct hvd__shm *s);

#endif
