/* gpu.h: libhvd's GPU engine. Collectives of buffers in GPU memory run
 * over NCCL, behind the same negotiation and fusion as the CPU ones:
 *
 * - The user's thread checks the buffer (memory of this rank's GPU) and
 *   records a CUDA event on the GPU's default stream, so the collective
 *   starts after the work queued before the call.
 * - The background thread sets NCCL up at the first GPU collective:
 *   every rank picks its GPU, the ranks agree that all of them could,
 *   rank 0's ncclUniqueId goes to every rank over the control plane
 *   (TCP or MPI), and ncclCommInitRank makes the communicator.
 * - Fused allreduces are copied into a fusion buffer on the GPU, reduced
 *   and copied out, all on libhvd's own CUDA stream. A single tensor is
 *   reduced from its send buffer straight into its receive buffer.
 * - HOROVOD_HIERARCHICAL_ALLREDUCE=1: reduce-scatter among the ranks of
 *   a host, allreduce among the ranks of the same local rank across
 *   hosts, allgather within the host (communicators split from the
 *   world's), when every host runs the same number of ranks. Under
 *   HOROVOD_AUTOTUNE without it, the communicators are split too (hosts
 *   of several ranks) while the autotuner tunes, each allreduce takes
 *   the way its setting in force says, and they end if it keeps the
 *   flat one.
 * - Adasum of GPU tensors on hosts of several ranks: each host's
 *   average by an NCCL reduce-scatter on the host's communicator (split
 *   by host for it, if the hierarchical allreduce has not), each rank's
 *   part combined across hosts in host memory by the engine, gathered
 *   back by NCCL (hvd__gpu_adasum_hosts).
 * - An allreduce is launched and not waited for: its flight (events
 *   around its parts) is polled to its end by the engine
 *   (engine/flights.c, which also holds a tensor back until the GPU has
 *   computed it: hvd__gpu_ready), and a caller may make its own stream
 *   wait for it (hvd__gpu_stream_wait). The other collectives wait for
 *   the stream by polling. Every wait gives up when NCCL reports an
 *   error or the control plane sees a peer die: the communicators are
 *   aborted, never left hanging.
 * - A process set's engine has a communicator of its own, made the same
 *   way over the set's agreement (flat: never hierarchical).
 *
 * The NCCL engine (internal.h, fail.c, device.c, setup.c, fusion.c,
 * collectives.c), built when CUDA and NCCL are found (HVD_NCCL=1); otherwise
 * gpu/none.c, whose every entry says the GPU path was left out. */
#ifndef HVD_GPU_H
#define HVD_GPU_H

#include <stdbool.h>
#include <stddef.h>

#include "util/internal.h"
#include "transport/transport.h"

struct hvd__gpu;

/* GPU time spent in each part of a collective, in microseconds (timed:
 * whether its flight was timed; else all 0). */
struct hvd__gpu_times {
	long long copy_in_us, reduce_us, copy_out_us;
	size_t fused_bytes; /* bytes copied into the fusion buffer */
	bool timed;
};

/* One tensor of a GPU allreduce batch. */
struct hvd__gpu_tensor {
	const void *send;
	void *recv;
	size_t count;
	void *ready; /* the event recorded when it was submitted, or NULL */
};

/* A launched allreduce batch: its events, polled to its end. */
struct hvd__gpu_flight;

/* User threads. The CUDA device this rank uses (local rank, or 0 when
 * CUDA_VISIBLE_DEVICES leaves one), or HVD_ENOTSUP with the reason in
 * why. */
int hvd__gpu_device(char *why, size_t len);
/* Check that buf (bytes long) is memory of this rank's GPU and record
 * the event the collective waits for (*ready; NULL for 0 bytes). */
int hvd__gpu_prepare(const void *buf, size_t bytes, void **ready, char *why,
		     size_t len);
/* Drop an event that prepare made, when the request is refused. */
void hvd__gpu_release(void *ready);
/* Whether the work queued before ready's submission has run on the GPU
 * (true as well when the event failed: the collective reports it). */
bool hvd__gpu_ready(void *ready);
/* stream (a cudaStream_t; NULL: the legacy default stream) waits on the
 * GPU for event (a flight's, hvd__gpu_flight_event). */
int hvd__gpu_stream_wait(void *stream, void *event, char *why, size_t len);

/* Whether the communicators of hosts and across them are made. */
enum hvd__gpu_hier {
	HVD__HIER_NO,
	HVD__HIER_ASKED, /* HOROVOD_HIERARCHICAL_ALLREDUCE=1 */
	HVD__HIER_TUNER	 /* the autotuner may try the hierarchical allreduce */
};

/* The background thread. Set up NCCL with every rank of ctrl (a
 * collective call: every rank makes it at the same point); the GPU
 * fusion buffer grows past fusion_limit only for one collective's need
 * (util/grow.c); batch_copies: its copies of a batch in one
 * cudaMemcpyBatchAsync where the runtime has it, else one a tensor. */
int hvd__gpu_start(struct hvd__gpu **out, const struct hvd__comm *ctrl,
		   size_t fusion_limit, enum hvd__gpu_hier hier,
		   bool batch_copies, char *why, size_t len);
/* Whether g's communicator is split by host: the hierarchical allreduce
 * can run. */
bool hvd__gpu_split(const struct hvd__gpu *g);
/* End the communicators of hosts and across them, once what runs on the
 * stream has run (a collective call: every rank makes it at the same
 * point). g may be NULL. */
int hvd__gpu_unsplit(struct hvd__gpu *g, char *why, size_t len);
/* Launch the allreduce of a batch on the stream, without waiting for
 * it: *out is its flight. scale: prescale times postscale (1: none); SUM
 * and AVERAGE only. hier: within hosts, then across, where g is split
 * and the op allows it (else flat). timed: its parts are timed (for the
 * timeline); else only its end is marked, by an untimed event. */
int hvd__gpu_allreduce(struct hvd__gpu *g, struct hvd__gpu_tensor *t, size_t n,
		       enum hvd_dtype dtype, enum hvd_op op, double scale,
		       bool hier, bool timed, struct hvd__gpu_flight **out,
		       char *why, size_t len);
/* Horovod's GPU Adasum, the part within hosts (the ranks numbered host
 * by host, every host with the same number L of them): the n tensors
 * fused on the GPU, times scale, averaged over the host's ranks by an
 * NCCL reduce-scatter on the host's communicator (split from the world's
 * here if the hierarchical allreduce has not), which leaves local rank l
 * with elements [l * P, l * P + P) of the fused average, P the total
 * rounded up to a multiple of L, divided by L. Its count elements within
 * the total are copied into host memory, where across(arg, slice, lo,
 * count) combines them with the other hosts', and back (every rank calls
 * across, count 0 too). Then the host's parts are gathered
 * by NCCL and copied out to the tensors' receive buffers, all waited
 * for. A collective call: every rank makes it at the same point. */
typedef int (*hvd__gpu_slice_fn)(void *arg, void *slice, size_t lo,
				 size_t count);
int hvd__gpu_adasum_hosts(struct hvd__gpu *g, struct hvd__gpu_tensor *t,
			  size_t n, enum hvd_dtype dtype, double scale,
			  hvd__gpu_slice_fn across, void *arg, char *why,
			  size_t len);
/* 1 once the flight has run (*times then says how long each part took,
 * if it was timed), 0 while it runs, or an error (NCCL's, or a peer that
 * died: the communicators are aborted). Flights end in the order
 * launched. */
int hvd__gpu_flight_poll(struct hvd__gpu *g, struct hvd__gpu_flight *f,
			 struct hvd__gpu_times *times, char *why, size_t len);
/* The next us, a flight's poll does not hold a peer's closed
 * connection for a failure (peers that shut down). g may be NULL. */
void hvd__gpu_grace(struct hvd__gpu *g, long long us);
/* The event recorded after the flight's last copy. */
void *hvd__gpu_flight_event(const struct hvd__gpu_flight *f);
/* Done with it (ended, or given up): its events go back to g. */
void hvd__gpu_flight_free(struct hvd__gpu *g, struct hvd__gpu_flight *f);
/* counts[r] elements of the result go to rank r, into recv. */
int hvd__gpu_reducescatter(struct hvd__gpu *g, const void *send, void *recv,
			   const size_t *counts, enum hvd_dtype dtype,
			   enum hvd_op op, double scale, void *ready, char *why,
			   size_t len);
/* sbytes[r] bytes of send (in rank order) to rank r, rbytes[r] from rank
 * r into *out, a cudaMalloc'ed buffer of this rank's GPU. */
int hvd__gpu_alltoall(struct hvd__gpu *g, const void *send,
		      const size_t *sbytes, const size_t *rbytes, void *ready,
		      void **out, char *why, size_t len);
int hvd__gpu_broadcast(struct hvd__gpu *g, void *buf, size_t bytes, int root,
		       void *ready, char *why, size_t len);
/* Every rank's block (bytes[r] from rank r) in rank order into *out, a
 * cudaMalloc'ed buffer of this rank's GPU. */
int hvd__gpu_allgather(struct hvd__gpu *g, const void *send,
		       const size_t *bytes, void *ready, void **out, char *why,
		       size_t len);
/* bytes from src to dst, one of them this rank's GPU memory and the
 * other host memory (to_host: src is the GPU's), queued on the stream
 * after ready (NULL: at once): hvd__gpu_wait_stream waits for it. */
int hvd__gpu_copy(struct hvd__gpu *g, void *dst, const void *src, size_t bytes,
		  bool to_host, void *ready, char *why, size_t len);
/* v (count doubles) summed over the ranks of this rank's host by NCCL,
 * on the host's communicator (hvd__gpu_adasum_hosts'), the same bits on
 * each: a collective call of the host's ranks, waited for. */
int hvd__gpu_host_sum(struct hvd__gpu *g, double *v, size_t count, char *why,
		      size_t len);
/* *out: pinned host memory of at least bytes, g's own (until the next
 * call), for copies to and from the GPU. */
int hvd__gpu_host_buffer(struct hvd__gpu *g, size_t bytes, void **out,
			 char *why, size_t len);
/* *out: bytes (at least 1) of g's GPU memory, g's own until the next
 * call; zero: zeroed on the stream after what was queued there. A
 * joined rank's stand-ins give these zeros to the others' collectives
 * and receive into them (engine/fusion.c); a reducescatter of integers
 * with scaling factors takes its scaled input from there. */
int hvd__gpu_scratch(struct hvd__gpu *g, size_t bytes, bool zero, void **out,
		     char *why, size_t len);
/* Free a result buffer the engine allocated on the GPU (an allgather's
 * or alltoall's), one that no caller was handed. NULL: nothing. */
void hvd__gpu_free_result(void *p);
/* Wait for everything queued on the stream: spin while spinning pays
 * (wait.h: a sleep costs more than most collectives take, unless the
 * CPU is wanted), then poll; an asynchronous NCCL error or a dead peer
 * aborts the communicators. */
int hvd__gpu_wait_stream(struct hvd__gpu *g, char *why, size_t len);
/* Abort the communicators (an error ended the engine): what runs on the
 * stream stops. g may be NULL. */
void hvd__gpu_abort_comms(struct hvd__gpu *g);
/* Free it all; broken: abort the communicators instead of closing them
 * with the peers. */
void hvd__gpu_free(struct hvd__gpu *g, bool broken);

#endif
