/* gpu/internal.h: what the files of the NCCL engine share (gpu.h says
 * what the engine does): its state, and the failure and wait helpers of
 * fail.c. Built only with CUDA and NCCL. */
#ifndef HVD_GPU_INTERNAL_H
#define HVD_GPU_INTERNAL_H

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdbool.h>
#include <stddef.h>

#include "gpu/gpu.h"

/* The CUDA events that time a collective: start, after the copies in,
 * after the reduction, after the copies out (the one waited for). A
 * flight that nobody times (no timeline) has EV_DONE alone, made without
 * timing (cudaEventDisableTiming): CUDA's cheapest event to record, to
 * query and for a stream to wait on. */
enum { EV_START, EV_IN, EV_REDUCED, EV_DONE, EV_N };

struct hvd__gpu {
	int dev;
	const struct hvd__comm *ctrl;
	cudaStream_t stream;
	ncclComm_t world;
	ncclComm_t local, cross; /* hierarchical allreduce only */
	int local_rank, local_size;
	bool aborted;
	char *fusion;
	size_t fusion_cap;
	char *stage; /* pinned host memory (fusion.c) */
	size_t stage_cap;
	char *dots; /* Adasum's sums, summed by a host's ranks */
	size_t dots_cap;
	char *scratch; /* hvd__gpu_scratch's */
	size_t scratch_cap;
	size_t fusion_limit; /* HOROVOD_FUSION_THRESHOLD (util/grow.c) */
	cudaEvent_t done;    /* the other collectives' wait (untimed) */
	/* Flights ended, for the next: [0] untimed, [1] timed. */
	struct hvd__gpu_flight *spare[2];
	long long checked_us; /* a flight's last look at the peers */
	bool batch_copies;    /* cudaMemcpyBatchAsync works here */
	bool one_rank_bug;    /* a scaled op on one rank needs whole blocks */
	void **dsts;
	const void **srcs;
	size_t *sizes, copies_cap;
};

/* A launched allreduce: its events, from the start to the last copy
 * (untimed: EV_DONE alone, the others NULL). */
struct hvd__gpu_flight {
	cudaEvent_t ev[EV_N];
	bool timed;
	size_t fused_bytes;	      /* 0: reduced in place, no copies */
	struct hvd__gpu_flight *next; /* in g->spare[timed] */
};

/* ---- fusion.c ---- */

/* g->fusion holds at least bytes (on the GPU), grown once what runs on
 * the stream has run. */
int hvd__gpu_fusion_reserve(struct hvd__gpu *g, size_t bytes, char *why,
			    size_t len);
/* Copies on the stream between the n tensors and g->fusion, where they
 * lie end to end: in, from their send buffers; else out, to their
 * receive buffers. */
int hvd__gpu_fuse(struct hvd__gpu *g, const struct hvd__gpu_tensor *t, size_t n,
		  size_t es, bool in, char *why, size_t len);
/* g->stage, pinned host memory, holds at least bytes. */
int hvd__gpu_stage_reserve(struct hvd__gpu *g, size_t bytes, char *why,
			   size_t len);
/* g->dots, GPU memory, holds at least bytes. */
int hvd__gpu_dots_reserve(struct hvd__gpu *g, size_t bytes, char *why,
			  size_t len);

/* ---- setup.c ---- */

/* The communicator of this rank's host, with this rank's place in it and
 * its size: on one host the world's; else the world split by host, as
 * the hierarchical allreduce has it, split here if not yet (a collective
 * call: every rank makes it at the same point). HVD_ENOTSUP in a process
 * set, or where hosts run different numbers of ranks. */
int hvd__gpu_host_comm(struct hvd__gpu *g, ncclComm_t *c, int *rank, int *size,
		       char *why, size_t len);

/* ---- fail.c ---- */

/* Free f and the events it has. */
void hvd__gpu_flight_destroy(struct hvd__gpu_flight *f);

int hvd__gpu_cuda_fail(cudaError_t e, const char *what, char *why, size_t len);
/* The communicators are non-blocking: a call may return ncclInProgress,
 * and then the communicator is polled until it is done, while the
 * control plane is watched for a peer that died. */
int hvd__gpu_settle(struct hvd__gpu *g, ncclComm_t c, ncclResult_t r,
		    const char *what, char *why, size_t len);
/* A communicator just made (init or split): poll it until it is ready.
 * A non-blocking split may hand its child over only when the parent's
 * part is done (NCCL 2.28 does): then the parent is polled first. */
int hvd__gpu_settle_new(struct hvd__gpu *g, ncclComm_t parent, ncclComm_t *cp,
			ncclResult_t r, const char *what, char *why,
			size_t len);
/* While event ev runs: an asynchronous NCCL error, or (every 10 ms) a
 * peer that died, aborts the communicators; 1 once ev has run, 0 while
 * it runs, else the error. */
int hvd__gpu_poll_event(struct hvd__gpu *g, cudaEvent_t ev, long long *checked,
			char *why, size_t len);
long long hvd__gpu_elapsed_us(cudaEvent_t a, cudaEvent_t b);
/* After a failure, before a buffer the stream may still use is freed:
 * the communicators aborted, so that what is queued there ends at once,
 * and the stream waited for (cudaFree is not taken to wait for it). */
void hvd__gpu_drain_broken(struct hvd__gpu *g);

#endif
