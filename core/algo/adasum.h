/* adasum.h: Adasum, adaptive summation (Maleki et al., "Scaling
 * Distributed Training with Adaptive Summation", MLSys 2021), as
 * Horovod's op=Adasum combines gradients on the CPU.
 *
 * Two gradients a and b combine as
 *   adasum(a, b) = (1 - a.b / 2|a|^2) a + (1 - a.b / 2|b|^2) b
 * (a zero vector's coefficient is 1): orthogonal ones add up, parallel
 * ones average, and in between the shared part counts once. Each tensor
 * of a fused batch combines on its own dot product and norms.
 *
 * Over a power-of-two number of ranks, by vector halving and distance
 * doubling: at level k (k = 0, 1, ...) rank r pairs with r ^ 2^k, keeps
 * half of the range it holds and sends the other half, so that the
 * 2^(k+1) ranks of r's block (the ranks that differ from r in bits 0..k
 * only) hold one slice each of the two vectors they combine: the result
 * of the block's lower half (a) and of its upper half (b). Each rank adds
 * up the dot product and both norms of every tensor over its slice (the
 * half it receives as it arrives, while the rest is on its way), the
 * block sums them by recursive doubling (every rank gets the same bits:
 * IEEE addition commutes), and each rank combines its slice. After
 * log2(N) levels each rank holds 1/N of the result; the halves then come
 * back in reverse order. Each rank sends and receives 2(N-1)/N of the
 * buffer, as the ring does, plus log2(N)(log2(N)+1)/2 small exchanges of
 * three doubles a tensor. Every partner is a recursive-doubling partner
 * of the ring's (hvd__ring_sources).
 *
 * Over N ranks that are not a power of two, P being the largest power of
 * two below N, the N - P ranks past P fold in first: rank P + q and rank
 * q combine their buffers as a level of two ranks would (each keeps a
 * half, their sums over the pair), and q takes P + q's half, so that it
 * holds the pair's combination; the P ranks then halve as above, and
 * rank P + q gets the result whole from q (the same bits). The tree's
 * first level pairs q with P + q, and the extra exchange sends each of
 * them the buffer once more. Horovod refuses such sizes.
 *
 * On one host, through the ranks' shared segment (shm.h), the same tree
 * runs on slices: rank r gets slice r (1/N of the elements) of every
 * other rank's buffer through the slots (an alltoall) and keeps its own
 * in place. Each rank then runs every level on its slice: the dot
 * products and norms of each block's tensors over the slice (the first
 * level's taken round by round as the slices arrive), summed over
 * the ranks through the slots in rank order (the same bits on every
 * rank: each rank's sum takes the same terms in the same order), and the
 * block's two halves combined, into this rank's own buffer for the
 * blocks it is in. The result's slices are then gathered through the
 * slots. Each rank copies (N-1)/N of its buffer into its slot and N-1
 * slices out of the others', once in the alltoall and once in the
 * gathering; between them, only the sums (three doubles a tensor a
 * block) cross, once a level. Where L is not a power of two, the first
 * level is the fold: slice by slice, buffer P + q combines into buffer q
 * (this rank's own row standing for it where it is rank P + q).
 *
 * Across H hosts of L ranks each, host h's ranks being h * L to
 * h * L + L - 1, the tree's first log2(L) levels pair ranks of one host:
 * each host runs them through its segment as above, which leaves local
 * rank l with slice l of its host's combination. The remaining levels
 * combine hosts: local rank l of every host runs the halving over its
 * group across hosts on slice l, each level's sums taken first over the
 * host's ranks (through the segment: together they hold the host's whole
 * range) and then over the block's hosts; the host's segment then
 * gathers the slices. Between hosts this sends what the halving over
 * all ranks does (its levels between hosts are these); within a host the
 * segment takes the place of the transport. Hosts that are not a power
 * of two fold in as ranks do; the tree is then each host's, then the
 * hosts', which differs from the tree over the job's ranks where hosts
 * run a number of ranks that is not a power of two. */
#ifndef HVD_ADASUM_H
#define HVD_ADASUM_H

#include <stdbool.h>
#include <stddef.h>

#include "hvd.h"
#include "algo/ring.h"
#include "transport/shm.h"

/* Whether the tree through segments, each of H hosts' L ranks first
 * (hvd__adasum_shm), is the tree over their L * H ranks (hvd__adasum):
 * on one host, with one rank a host, or L * H a power of two. */
bool hvd__adasum_hosts_first(int L, int H);
/* buf holds n tensors of counts[i] elements of dtype t (float16,
 * bfloat16, float32 or float64), end to end; it becomes the Adasum of
 * every rank's buf, the same bits on every rank. scratch holds half of
 * buf's elements, rounded up. times, if not NULL, accumulates the halving (reduce_scatter_us) and
 * the gathering back (allgather_us). */
int hvd__adasum(const struct hvd__comm *c, void *buf, void *scratch,
		const size_t *counts, size_t n, enum hvd_dtype t,
		struct hvd__ring_times *times);
/* The same through the host's segment s, whose local ranks are the
 * ranks of one host in rank order, within timeout_ms at each wait: with
 * cross NULL (or of one rank), the job is this host's ranks; else cross
 * is this rank's group across the job's hosts, host h's ranks being the job's
 * h * L ... h * L + L - 1 (the tree's first levels pair ranks of one
 * host). scratch holds hvd__adasum_shm_scratch(s, total) elements,
 * total the elements of all n tensors. */
size_t hvd__adasum_shm_scratch(const struct hvd__shm *s, size_t total);
int hvd__adasum_shm(struct hvd__shm *s, const struct hvd__comm *cross,
		    void *buf, void *scratch, const size_t *counts, size_t n,
		    enum hvd_dtype t, int timeout_ms,
		    struct hvd__ring_times *times);
/* How the ranks of one host add up Adasum's partial sums (count doubles
 * in v), every rank getting the same bits: through the host's segment
 * shm within timeout_ms, or, shm NULL, by sum(arg, v, count). */
struct hvd__adasum_host {
	struct hvd__shm *shm;
	int timeout_ms;
	int (*sum)(void *arg, double *v, size_t count);
	void *arg;
};
/* The part across hosts alone, each host's combination already taken
 * (GPU Adasum's average, by NCCL: gpu.h), in a slice: this rank holds
 * elements [lo, lo + count) of it, of the n tensors end to end, in slice;
 * its host's ranks call it together (their sums by host), their slices
 * disjoint and covering the tensors; cross is its group across the hosts
 * (in the same order for every local rank).
 * slice becomes that part of the hosts' Adasum; scratch holds
 * (count + 1) / 2 elements. times as hvd__adasum's. */
int hvd__adasum_hosts(const struct hvd__adasum_host *host,
		      const struct hvd__comm *cross, void *slice, void *scratch,
		      size_t lo, size_t count, const size_t *counts, size_t n,
		      enum hvd_dtype t, struct hvd__ring_times *times);

#endif
