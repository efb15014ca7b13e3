/* hvd.h: libhvd, the data-parallel core linked into every worker. The only
 * public header. Every action returns 0 or a negative HVD_E* code;
 * hvd_strerror() names it. */
#ifndef HVD_H
#define HVD_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define HVD_EXPORT __attribute__((visibility("default")))
#else
#define HVD_EXPORT
#endif

#define HVD_VERSION_MAJOR 0
#define HVD_VERSION_MINOR 1
#define HVD_VERSION_PATCH 0

enum hvd_error {
	HVD_OK = 0,
	HVD_EINVAL = -1,     /* a bad argument or environment value */
	HVD_ENOMEM = -2,     /* out of memory */
	HVD_ENOTINIT = -3,   /* hvd_init() has not succeeded */
	HVD_EALREADY = -4,   /* hvd_init() was already called */
	HVD_ESYS = -5,	     /* a system call failed */
	HVD_ECONN = -6,	     /* a peer closed its connection or died */
	HVD_ETIMEDOUT = -7,  /* a peer did not answer in time */
	HVD_EPROTO = -8,     /* a peer sent something unexpected */
	HVD_EMISMATCH = -9,  /* ranks disagree on a tensor */
	HVD_ESHUTDOWN = -10, /* libhvd was shut down */
	HVD_ESTALL = -11,    /* some ranks never submitted the tensor */
	HVD_ENOTSUP = -12,   /* not available here (no GPU, no such engine) */
	HVD_ERESET = -13,    /* elastic: a worker was lost, the world resets */
	HVD_ENOSET = -14,    /* no such process set (unknown or removed) */
	HVD_ENOTINSET = -15, /* this rank is not in the process set */
};

/* Element types and reduction operations of the collectives. float16 and
 * bfloat16 are reduced in float32. HVD_BOOL is a byte, 0 for false and
 * anything else for true: sum and max reduce it as a logical or, min and
 * product as a logical and (bytes of 0 and 1 stay 0 and 1); average,
 * Adasum and scaling factors have no meaning for it (HVD_EINVAL). Ranks
 * that submit one tensor as bool and as uint8 disagree (HVD_EMISMATCH).
 * The values are part of the ABI: new types are added at the end. */
enum hvd_dtype {
	HVD_UINT8,
	HVD_INT8,
	HVD_INT32,
	HVD_INT64,
	HVD_FLOAT16,
	HVD_BFLOAT16,
	HVD_FLOAT32,
	HVD_FLOAT64,
	HVD_INT16,
	HVD_BOOL
};

/* HVD_ADASUM: Adasum (adaptive summation), Horovod's op=Adasum, for
 * allreduces of float16, bfloat16, float32 and float64 buffers (other
 * dtypes: HVD_ENOTSUP), in host memory in a job or process set of any
 * number of ranks. Ranks combine pairwise, tensor by tensor, as
 *   a + b - (a.b / 2) (a / |a|^2 + b / |b|^2)
 * (a zero vector adds as itself): orthogonal gradients add up, equal
 * ones average. Of GPU buffers, as Horovod's NCCL build: each host's ranks
 * average and the hosts combine. hvd(3) says more. */
enum hvd_op { HVD_SUM, HVD_AVERAGE, HVD_MIN, HVD_MAX, HVD_PRODUCT, HVD_ADASUM };

/* Read the rank environment set by hvdrun and start libhvd. Without it,
 * the process runs as the only rank of a job of size 1. hvd_shutdown()
 * then hvd_init() again rejoins the same job, with the same ranks (an
 * elastic job: the next generation), any number of times. */
HVD_EXPORT int hvd_init(void);
HVD_EXPORT void hvd_shutdown(void);
HVD_EXPORT int hvd_initialized(void);

/* Elastic jobs (hvdrun --min-np, --max-np): the world changes between
 * generations. When a worker is lost (it died, its host vanished, or it
 * left: hvd_shutdown() or its exit while others wait in collectives),
 * every pending and later operation fails with HVD_ERESET within a
 * moment; hvd_shutdown() then hvd_init() joins the next generation, in
 * which the surviving workers keep their order (new ranks, sizes,
 * connections). A generation interrupted while its connections form is
 * followed by the next inside hvd_init(), which fails with HVD_ERESET
 * only when hvdrun left this worker out. The generation (1, 2, ...) of
 * this world, 0 when the job is not elastic, -1 before hvd_init(). */
HVD_EXPORT int hvd_elastic_generation(void);
/* Elastic: hvdrun changed the hosts (it started workers on new hosts, or
 * the discovery script dropped some), and the generation that follows
 * waits for this world's workers: the number of that generation (the
 * program re-joins, hvd_shutdown() then hvd_init(), at a point where
 * every rank agrees, such as its next commit), 0 when none is announced,
 * -1 before hvd_init(). */
HVD_EXPORT int hvd_elastic_hosts_updated(void);
/* Elastic: the host updates hvdrun announced since the last call, as
 * Horovod's HostUpdateResult bits (HVD_HOSTS_REMOVED, HVD_HOSTS_ADDED;
 * 0: none), and in *generation (may be NULL) the generation the latest
 * one leads to. Updates wait to be taken across hvd_shutdown() and
 * hvd_init(); hvd.elastic's State puts them in its _host_messages. */
#define HVD_HOSTS_REMOVED 1
#define HVD_HOSTS_ADDED 2
HVD_EXPORT int hvd_elastic_host_updates(int *generation);

/* Ranks; -1 before hvd_init(). */
HVD_EXPORT int hvd_rank(void);
HVD_EXPORT int hvd_size(void);
HVD_EXPORT int hvd_local_rank(void);
HVD_EXPORT int hvd_local_size(void);
HVD_EXPORT int hvd_cross_rank(void);
HVD_EXPORT int hvd_cross_size(void);
/* 1 when every host runs the same number of ranks, else 0, alike on every
 * rank (a rank's own local size times its cross size may match the size
 * where the hosts differ); -1 before hvd_init(). */
HVD_EXPORT int hvd_is_homogeneous(void);

/* Collectives. Every rank calls each one with the same name (a tensor's
 * name is unique while it is in flight on a rank), the same dtype, count
 * (allreduce, broadcast), op and root. An *_async call returns at once;
 * hvd_wait() waits, frees the handle and returns the operation's status.
 * sendbuf == recvbuf is in place. A disagreement between ranks fails the
 * operation on every rank (HVD_EMISMATCH), a peer that dies fails every
 * pending and later one (HVD_ECONN); hvd_error_message() says more. */
typedef struct hvd_handle hvd_handle;

HVD_EXPORT int hvd_allreduce_async(const char *name, const void *sendbuf,
				   void *recvbuf, size_t count,
				   enum hvd_dtype dtype, enum hvd_op op,
				   hvd_handle **out);
HVD_EXPORT int hvd_broadcast_async(const char *name, void *buf, size_t count,
				   enum hvd_dtype dtype, int root,
				   hvd_handle **out);
/* Each rank gives count elements (counts may differ); every rank gets all
 * of them in rank order in *recvbuf (malloc'ed: free() it) and their
 * number in *recvcount. */
HVD_EXPORT int hvd_allgather_async(const char *name, const void *sendbuf,
				   size_t count, enum hvd_dtype dtype,
				   void **recvbuf, size_t *recvcount,
				   hvd_handle **out);
HVD_EXPORT int hvd_wait(hvd_handle *h);
/* 1 if the operation is done (hvd_wait() then returns at once), else 0. */
HVD_EXPORT int hvd_poll(hvd_handle *h);

HVD_EXPORT int hvd_allreduce(const char *name, const void *sendbuf,
			     void *recvbuf, size_t count, enum hvd_dtype dtype,
			     enum hvd_op op);
HVD_EXPORT int hvd_broadcast(const char *name, void *buf, size_t count,
			     enum hvd_dtype dtype, int root);
HVD_EXPORT int hvd_allgather(const char *name, const void *sendbuf,
			     size_t count, enum hvd_dtype dtype, void **recvbuf,
			     size_t *recvcount);
/* Returns when every rank has called it. */
HVD_EXPORT int hvd_barrier(void);

/* Allreduce with scaling factors, Horovod's: every element is multiplied
 * by prescale before the reduction and the result by postscale after
 * (AVERAGE divides as well), in the tensor's type (float16 and bfloat16
 * through float32; integers in float64, truncated back toward zero and
 * saturated to the type's range, as Horovod does). On the GPU as well:
 * integers are scaled in host memory, their tensors copied there and
 * back around NCCL's sum (the rare case; floats scale in NCCL).
 * Ranks must agree on both factors; only allreduces with the same factors
 * are fused together. hvd_allreduce_async() is this with 1 and 1. */
HVD_EXPORT int hvd_allreduce_scaled_async(const char *name, const void *sendbuf,
					  void *recvbuf, size_t count,
					  enum hvd_dtype dtype, enum hvd_op op,
					  double prescale, double postscale,
					  hvd_handle **out);
HVD_EXPORT int hvd_allreduce_scaled(const char *name, const void *sendbuf,
				    void *recvbuf, size_t count,
				    enum hvd_dtype dtype, enum hvd_op op,
				    double prescale, double postscale);

/* Alltoall: sendbuf holds sendcounts[0] elements for rank 0, then
 * sendcounts[1] for rank 1, and so on (sendcounts has hvd_size()
 * entries; counts may differ and may be 0). Every rank receives what
 * every rank sent it, in rank order, in *recvbuf (malloc'ed: free() it;
 * for the GPU form, cudaMalloc'ed), their total in *recvcount, and in
 * recvcounts (hvd_size() entries, the caller's) how many came from each
 * rank: Horovod's received splits. block: elements per row of the first
 * dimension (1 for a flat buffer); every count is whole rows, and ranks
 * must agree on block. */
HVD_EXPORT int hvd_alltoall_async(const char *name, const void *sendbuf,
				  const size_t *sendcounts, size_t block,
				  enum hvd_dtype dtype, void **recvbuf,
				  size_t *recvcount, size_t *recvcounts,
				  hvd_handle **out);
HVD_EXPORT int hvd_alltoall(const char *name, const void *sendbuf,
			    const size_t *sendcounts, size_t block,
			    enum hvd_dtype dtype, void **recvbuf,
			    size_t *recvcount, size_t *recvcounts);

/* Reducescatter: every rank's count elements (count / block rows) are
 * reduced with op, scaled as hvd_allreduce_scaled() does, and each rank
 * receives its part of the result in recvbuf, split the way Horovod
 * splits a first dimension: rows / size rows each, the first rows % size
 * ranks one more; hvd_reducescatter_count() says how many elements that
 * is. Ranks must agree on count, block, dtype, op and factors. */
HVD_EXPORT size_t hvd_reducescatter_count(size_t count, size_t block, int rank);
HVD_EXPORT int hvd_reducescatter_async(const char *name, const void *sendbuf,
				       void *recvbuf, size_t count,
				       size_t block, enum hvd_dtype dtype,
				       enum hvd_op op, double prescale,
				       double postscale, hvd_handle **out);
HVD_EXPORT int hvd_reducescatter(const char *name, const void *sendbuf,
				 void *recvbuf, size_t count, size_t block,
				 enum hvd_dtype dtype, enum hvd_op op,
				 double prescale, double postscale);

/* Grouped operations: the collectives this thread submits (the *_async
 * calls) between hvd_group_start() and hvd_group_end() form one group.
 * None of them starts until all of them are ready on every rank, and
 * they run together, fused where they can be. Every rank must submit a
 * group of the same names (their order may differ); a group that ranks
 * disagree on fails, every member, on every rank. Wait for the handles
 * after hvd_group_end() (a synchronous call inside a group is
 * HVD_EINVAL). If hvd_group_end() fails, every member's handle completes
 * with its error. */
HVD_EXPORT int hvd_group_start(void);
HVD_EXPORT int hvd_group_end(void);

/* The shape of the tensor that this thread's next collective (an *_async
 * call, or its synchronous form) submits, ndim sizes. Ranks then agree on
 * shapes, not only on element counts: an allreduce, broadcast or
 * reducescatter of [4, 6] on one rank and [6, 4] on another fails on
 * every rank with HVD_EMISMATCH, and so does an allgather or alltoall
 * whose dimensions past the first differ. The shape must hold the call's
 * elements (and rows), or that call fails with HVD_EINVAL. It applies
 * to one call only; without it, ranks compare counts. Shapes of more
 * than 8 dimensions are compared in their first 7 and the product of
 * the rest. Returns 0, or HVD_EINVAL for a negative ndim or size. */
HVD_EXPORT int hvd_next_shape(int ndim, const int64_t *dims);

/* Process sets (Horovod's): collectives over some of the job's ranks.
 * A set has an id, the same on every rank; the job itself is set 0
 * (HVD_GLOBAL_PROCESS_SET). Each set negotiates, caches, fuses, joins
 * and checks for stalls on its own, and sets without a rank in common
 * run their collectives at the same time; a rank in several sets makes
 * progress in all of them.
 *
 * Adding or removing a set is a collective of every rank of the job,
 * made in the same order on every rank: ranks that give different
 * members fail with HVD_EMISMATCH, all of them. Ranks are the job's
 * (hvd_rank()), in any order; the set keeps them ascending. */
#define HVD_GLOBAL_PROCESS_SET 0

/* hvd_init(), then the n sets of the job: set i has counts[i] ranks,
 * the next counts[i] of ranks (ids 1, 2, ... in order; a set of every
 * rank is set 0 and takes no id; in an elastic job, a set with a rank
 * beyond this generation's size is left out, with a warning). Returns 0
 * or an error, after which libhvd is not initialised. */
HVD_EXPORT int hvd_init_process_sets(const int *ranks, const int *counts,
				     int n);
/* Add a set of n ranks; returns its id (> 0), or HVD_EINVAL (a rank
 * outside the job, twice, or a set of these ranks exists already, also
 * the job's own), HVD_EMISMATCH. After hvd_init, only with
 * HOROVOD_DYNAMIC_PROCESS_SETS=1 (else HVD_EINVAL). */
HVD_EXPORT int hvd_add_process_set(const int *ranks, int n);
/* Remove set id: its collectives still pending fail with HVD_ENOSET.
 * Returns 0, HVD_ENOSET (no such set), HVD_EINVAL (set 0, or without
 * HOROVOD_DYNAMIC_PROCESS_SETS=1). */
HVD_EXPORT int hvd_remove_process_set(int id);
/* This rank's rank within set id (0 .. size-1), its size, whether this
 * rank is in it (1 or 0); HVD_ENOSET for no such set, HVD_ENOTINSET
 * (rank only) when this rank is not in it, HVD_ENOTINIT. */
HVD_EXPORT int hvd_process_set_rank(int id);
HVD_EXPORT int hvd_process_set_size(int id);
HVD_EXPORT int hvd_process_set_included(int id);
/* Set id's ranks, at most cap of them into ranks; returns how many it
 * has, or HVD_ENOSET. */
HVD_EXPORT int hvd_process_set_ranks(int id, int *ranks, int cap);
/* How many sets there are, the job's counted; hvd_process_set_ids gives
 * their ids (the job's first), at most cap, and returns how many. */
HVD_EXPORT int hvd_number_of_process_sets(void);
HVD_EXPORT int hvd_process_set_ids(int *ids, int cap);
/* The process set of this thread's next collective (as hvd_next_shape:
 * one call). Its ranks are then the set's: a broadcast's root is still a
 * rank of the job (in the set), an alltoall's sendcounts and recvcounts
 * have one entry per rank of the set, hvd_reducescatter_count counts
 * that set's ranks, and an allgather gathers the set's ranks in their
 * order; a GPU collective goes over an NCCL communicator of the set's
 * ranks. The call fails with HVD_ENOSET for no such set, HVD_ENOTINSET
 * when this rank is not in it. A group (hvd_group_start) is of one set. */
HVD_EXPORT int hvd_next_process_set(int id);

/* Join: this rank has run out of data. Until every rank has joined, the
 * other ranks' collectives complete without it: it takes part in an
 * allreduce with zeros (an average divides by the number of ranks that
 * have not joined), in an allgather with nothing, in a broadcast and a
 * barrier as usual, on the GPU as on the CPU (its zeros in the memory of
 * the GPU hvd_gpu_device() names); a broadcast from a joined root, an
 * alltoall or a reducescatter while ranks have joined, and GPU Adasum
 * across hosts, fail on every rank.
 * Returns the rank that joined last (>= 0), or an error. */
HVD_EXPORT int hvd_join(void);

/* GPU collectives, over NCCL: the same semantics, names and negotiation
 * as above, for buffers in the memory of this rank's GPU: the CUDA
 * device hvd_gpu_device() returns (the local rank's GPU, or device 0
 * when CUDA_VISIBLE_DEVICES leaves one). A collective starts after the
 * work queued before the call on any blocking stream of that GPU (it
 * waits for an event on the legacy default stream); when its handle
 * completes, its results are in GPU memory for any stream. The
 * allgather result is cudaMalloc'ed memory of that GPU: cudaFree() it.
 * Without a GPU, or in a libhvd built without NCCL, they return
 * HVD_ENOTSUP and hvd_error_message() says why. A tensor's name must
 * not be used on the CPU by one rank and on the GPU by another
 * (HVD_EMISMATCH). */
HVD_EXPORT int hvd_gpu_device(void);
HVD_EXPORT int hvd_allreduce_gpu_async(const char *name, const void *sendbuf,
				       void *recvbuf, size_t count,
				       enum hvd_dtype dtype, enum hvd_op op,
				       hvd_handle **out);
HVD_EXPORT int hvd_broadcast_gpu_async(const char *name, void *buf,
				       size_t count, enum hvd_dtype dtype,
				       int root, hvd_handle **out);
HVD_EXPORT int hvd_allgather_gpu_async(const char *name, const void *sendbuf,
				       size_t count, enum hvd_dtype dtype,
				       void **recvbuf, size_t *recvcount,
				       hvd_handle **out);
HVD_EXPORT int hvd_allreduce_gpu(const char *name, const void *sendbuf,
				 void *recvbuf, size_t count,
				 enum hvd_dtype dtype, enum hvd_op op);
HVD_EXPORT int hvd_broadcast_gpu(const char *name, void *buf, size_t count,
				 enum hvd_dtype dtype, int root);
HVD_EXPORT int hvd_allgather_gpu(const char *name, const void *sendbuf,
				 size_t count, enum hvd_dtype dtype,
				 void **recvbuf, size_t *recvcount);
/* hvd_wait() without the host's wait, where the result is only used on
 * the GPU: once a GPU allreduce is launched on libhvd's stream (its batch
 * waits for nothing but the GPU), stream (a cudaStream_t; NULL: the
 * legacy default stream) is made to wait for it on the GPU
 * (cudaStreamWaitEvent), the handle is freed, and HVD_OK returns at
 * once; work queued on stream after the call sees the result. An error
 * that NCCL reports later fails the job's next collectives instead. For
 * any other operation, or one already done, it is hvd_wait(). Horovod's
 * synchronize() of a GPU tensor does the same. Once launched, the
 * tensor's name is free for the next collective (a training step's next
 * gradient of that name runs after it on the GPU). */
HVD_EXPORT int hvd_wait_stream(hvd_handle *h, void *stream);
/* The newer collectives on the GPU: alltoall through grouped
 * ncclSend/ncclRecv, reducescatter through ncclReduceScatter (uneven
 * splits: one ncclReduce per rank, grouped). NCCL cannot reduce int16;
 * scaling factors need op SUM, AVERAGE or ADASUM (HVD_ENOTSUP otherwise)
 * and scale integers in host memory, as the allreduce's. */
HVD_EXPORT int hvd_allreduce_scaled_gpu_async(
	const char *name, const void *sendbuf, void *recvbuf, size_t count,
	enum hvd_dtype dtype, enum hvd_op op, double prescale, double postscale,
	hvd_handle **out);
HVD_EXPORT int hvd_alltoall_gpu_async(const char *name, const void *sendbuf,
				      const size_t *sendcounts, size_t block,
				      enum hvd_dtype dtype, void **recvbuf,
				      size_t *recvcount, size_t *recvcounts,
				      hvd_handle **out);
HVD_EXPORT int hvd_reducescatter_gpu_async(const char *name,
					   const void *sendbuf, void *recvbuf,
					   size_t count, size_t block,
					   enum hvd_dtype dtype, enum hvd_op op,
					   double prescale, double postscale,
					   hvd_handle **out);

/* What this libhvd was built with: hvd_mpi_built() 1 (the MPI engine,
 * always); hvd_nccl_built() the version code of the NCCL it was built
 * against (NCCL_VERSION_CODE, 22809 for 2.28.9, as Horovod's), 0 without
 * the GPU engine. hvd_mpi_enabled(): this job's collectives run over MPI
 * (mpirun started it), -1 before hvd_init(). */
HVD_EXPORT int hvd_mpi_built(void);
HVD_EXPORT int hvd_nccl_built(void);
HVD_EXPORT int hvd_mpi_enabled(void);

/* Start a timeline in path (closing the one running, such as
 * HOROVOD_TIMELINE's), or stop it; mark_cycles as
 * HOROVOD_TIMELINE_MARK_CYCLES. Rank 0 writes it; on other ranks both
 * succeed and do nothing. They return once the file is open, or closed
 * and complete. */
HVD_EXPORT int hvd_start_timeline(const char *path, int mark_cycles);
HVD_EXPORT int hvd_stop_timeline(void);

HVD_EXPORT const char *hvd_strerror(int err);
/* The calling thread's last failure, in words ("" if none). */
HVD_EXPORT const char *hvd_error_message(void);
HVD_EXPORT const char *hvd_version(void);

#ifdef __cplusplus
}
#endif

#endif
