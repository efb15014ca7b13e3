/* engine/engine.h: the parts of libhvd's engine and what they share. A
 * collective travels through them in this order (paths under core/):
 *
 *   api/collectives.c   the public calls: arguments checked, a request
 *                       queued
 *   engine/queue.c      requests and handles, between user threads and
 *                       the background thread (the only lock)
 *   engine/runtime.c    the background thread: one cycle after another
 *   algo/hier.c         at start: which ranks share a host (a shared
 *                       segment, transport/shm.h) and which own the same
 *                       slice across hosts (a group, algo/group.h)
 *   engine/negotiate.c  each cycle, which requests every rank has
 *                       submitted (the cache's bit vector, else the
 *                       coordinator on rank 0), and whether they agree
 *   engine/meta.c       what the ranks agree on for a tensor
 *   engine/cache.c      the response cache behind the bit vector
 *   engine/control.c    the coordinator's messages: one encoder, one
 *                       decoder
 *   engine/fusion.c     the agreed responses in order, consecutive
 *                       allreduces batched up to the fusion threshold
 *   algo/buffers.c      the fusion buffer and the collectives' scratch
 *   ops/                how each collective runs (allreduce, broadcast,
 *                       allgather, alltoall, reducescatter, barrier,
 *                       join), on the CPU (algo/ring.h) or the GPU
 *                       (gpu/gpu.h, started by gpu/engine.c)
 *   engine/knobs.c      the HOROVOD_* settings, read once at start
 */
#ifndef HVD_ENGINE_H
#define HVD_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "algo/buffers.h"
#include "algo/hier.h"
#include "gpu/gpu.h"
#include "transport/shm.h"
#include "util/internal.h"
#include "util/timeline.h"
#include "transport/transport.h"

/* The longest tensor name, in bytes. */
#define HVD__NAME_MAX 4096
/* The longest name a burst's head is learnt by (flights.c); a longer
 * one's bursts are not. */
#define HVD__HEAD_MAX 256

enum hvd__req_type {
	HVD__REQ_ALLREDUCE,
	HVD__REQ_BROADCAST,
	HVD__REQ_ALLGATHER,
	HVD__REQ_BARRIER,
	HVD__REQ_ALLTOALL,
	HVD__REQ_REDUCESCATTER,
	HVD__REQ_JOIN,
	/* A process set added (op HVD__SET_ADD: count ranks, block a hash
	 * of them) or removed (op HVD__SET_REMOVE: root its id): sets.h. */
	HVD__REQ_PROCESS_SET,
};

/* "allreduce", ...: indexed by enum hvd__req_type. */
extern const char *const hvd__req_names[];

/* The most dimensions a tensor's shape keeps (hvd_next_shape): the
 * dimensions past the last are folded into it. */
#define HVD__SHAPE_MAX 8

/* What every rank must agree on for one tensor. */
struct hvd__meta {
	uint8_t type, dtype, op;
	uint8_t gpu; /* 1: the buffers are in GPU memory (NCCL) */
	int32_t root;
	uint64_t count;
	uint64_t block;		    /* alltoall, reducescatter: row length */
	double prescale, postscale; /* allreduce, reducescatter */
	uint64_t group;		    /* grouped: a hash of the members' names */
	uint32_t group_n;	    /* grouped: how many members (else 0) */
	/* The tensor's shape, when the caller gave one (hvd_next_shape;
	 * ndim 0: none). An allgather's or alltoall's first dimension may
	 * differ between ranks: it is -1 here. */
	uint32_t ndim;
	int64_t dims[HVD__SHAPE_MAX];
};

struct hvd_handle {
	int status;
	_Atomic bool done; /* read unlocked by a waiting thread */
	bool driver;	   /* its submission counted a driver (queue.c) */
	char *msg;	   /* why it failed, for the waiting thread */
	/* A GPU allreduce launched but not yet done: the event recorded
	 * after it (hvd_wait_stream); detached: its waiter left, and its
	 * completion frees it. Under the queue's lock. */
	_Atomic bool launched;
	void *event;
	bool detached;
};

/* One collective submitted by this rank. */
struct hvd__req {
	char *name;
	struct hvd__meta m;
	uint64_t local_count; /* allgather, alltoall: this rank's count (m.count
				 is 0: counts may differ between ranks) */
	const void *sendbuf;
	void *recvbuf;
	void **gather_out;
	size_t *gather_count;
	uint64_t *sendcounts; /* alltoall: a copy of the caller's */
	size_t *recvcounts;   /* alltoall: the caller's array */
	void *scratch;	      /* a joined rank's stand-in buffer */
	void *gathered;	      /* a stand-in's allgather result */
	size_t gathered_count;
	struct hvd_handle *h; /* NULL: a joined rank's stand-in */
	void *ready;	      /* GPU: the event the collective waits for */
	long long enqueued_us;
	long long decided_us; /* when a cycle took it to run (timeline) */
	int set;       /* the process set it runs in (sets.h), 0: the job */
	bool reported; /* sent to the coordinator */
	long long computed_us; /* GPU, held: when its data was seen computed */
	int cache;	       /* cache entry this request matches, -1 none */
	struct hvd__req *next;
	struct hvd__req *inflight_next;
};

/* One response, the same on every rank. */
struct hvd__resp {
	char *name;
	struct hvd__meta m;
	int32_t cache;	    /* entry to record it in, -1 none; for an
			       error, its HVD_E* code */
	char *error;	    /* NULL: run it */
	bool done;	    /* reduced already, in the cycle's agreement */
	long long first_us; /* rank 0, timeline: when the coordinator had
			       the first rank's request (0: not through it) */
};

/* The settings of knobs.c. */
struct hvd__knobs {
	long fusion_threshold; /* HOROVOD_FUSION_THRESHOLD, bytes */
	double cycle_ms;       /* HOROVOD_CYCLE_TIME */
	long cache_cap;	       /* HOROVOD_CACHE_CAPACITY */
	long stall_warn_s, stall_shutdown_s;
	bool stall_check;
	bool mark_cycles;
	size_t segment;	     /* bytes reduced at a time (cache-sized) */
	bool segment_given;  /* HVD_SEGMENT_BYTES; else 512 KiB a rank */
	int spin_us;	     /* HVD_SPIN_US */
	bool shm;	     /* HVD_SHM */
	bool hier_allgather; /* HOROVOD_HIERARCHICAL_ALLGATHER */
	bool hier_allreduce; /* HOROVOD_HIERARCHICAL_ALLREDUCE: the GPU
				allreduce within hosts, then across, where
				the GPU engine split its communicator (the
				autotuner may turn it either way) */
	bool shm_allreduce;  /* the CPU allreduce and reducescatter go through
				the hosts' segment when there is one (the
				autotuner may turn it off) */
	bool cache_off;	     /* the autotuner turned the response cache off:
				emptied at the next cycle, no entries given */
	bool transport_allreduce; /* HOROVOD_MPI_ALLREDUCE: the transport's own
				     allreduce where it has one (MPI's) */
	bool batch_copies;	  /* HOROVOD_BATCH_D2D_MEMCOPIES: the GPU fusion
			      buffer's copies in one call a batch */
};

struct hvd__cache_entry {
	char *name; /* NULL: free */
	struct hvd__meta m;
};

struct hvd__pending;

/* A group the coordinator failed this round: every member it knows at
 * the round's end fails (a rank's members all come in one message). */
struct hvd__failed_group {
	uint64_t group;
	char *error;
	int code;
};

/* The background thread's state: nothing here is touched by another
 * thread (the queue's shared state lives in queue.c, behind its lock). */
struct hvd__engine {
	struct hvd__knobs k;
	struct hvd__comm comm;
	struct hvd__gpu *gpu;  /* NCCL, from the first GPU collective on */
	struct hvd__hier hier; /* what the comm's ranks share on their
				  hosts (algo/hier.h) */
	/* GPU Adasum where the hosts share no segment (ops/allreduce.c):
	 * the ranks a host (0: not asked yet; -1: hosts differ), and this
	 * local rank's group across the hosts (hvd__hier_cross). */
	int ada_lsize;
	struct hvd__comm ada_cross;
	char gpu_why[512];		/* why the last GPU collective failed */
	struct hvd__req *pending_local; /* submitted here, not yet run */
	/* The job's engine (gpu/engine.c): GPU allreduces whose data the GPU
	 * has not computed yet, unannounced; batches launched, not yet run. */
	struct hvd__req *held;
	struct hvd__flight *flights;
	struct hvd__gpu_flight *launched; /* ops/allreduce.c to fusion.c */
	struct hvd__cache_entry *cache;	  /* k.cache_cap entries */
	long cache_used; /* 1 + the highest entry ever given (every rank's) */
	struct hvd__pending *coord;	  /* rank 0: names some ranks sent */
	struct hvd__failed_group *failed; /* rank 0, this round */
	size_t nfailed;
	struct hvd__timeline *tl;
	struct hvd__buffers buf; /* the fusion buffer and scratch */
	long long decided_us;	 /* when this cycle's responses were known */
	int idle_cycles;	 /* cycles in a row that ran nothing */
	long long came_us;	 /* when this rank's last request came */
	/* The engine's bell (bell.c), and the one the background thread's
	 * wait until the next cycle sleeps on (NULL: none): a peer's next
	 * agreement ends it while this rank waits for a late one (rounds.c's
	 * hvd__round_wait); set by the engine's owner, cleared under the
	 * queue's lock by the removal of its set (hvd__queue_bell_gone). */
	struct hvd__bell *bell;
	struct hvd__bell *_Atomic wait_bell;
	bool burst; /* those requests came in a burst (hvd__gpu_burst) */
	/* A step's first GPU allreduce often comes alone, the rest of the
	 * step behind it (hvd__gpu_burst): the name of the last one that
	 * came alone, and when; the head, one that a burst followed within
	 * the cycle time, which starts a burst when it comes alone again;
	 * head_alone: it did, and nothing has come since. */
	char lone[HVD__HEAD_MAX], head[HVD__HEAD_MAX];
	long long lone_us;
	bool head_alone;
	/* The job's engine: how busy this rank was in its process sets' engines
	 * last turn (told in the agreement; over MPI, HVD__SETS_WAIT also
	 * while its own collective waits long: rounds.c's hvd__round_told),
	 * and the busiest rank (learnt from it): HVD__SETS_RAN, no rank waits
	 * between cycles (the job's agreement paces every set's);
	 * HVD__SETS_WAIT, no rank waits more than the cycle time. A process
	 * set's engine: the same byte of the agreement carries this rank's
	 * vote on another cycle of the set before the round moves on
	 * (HVD__SET_*), and the highest vote. */
	int sets_busy, peers_busy;
	/* The job's engine: the round (runtime.c) is the job's cycle, then
	 * each process set's in the order of their ids, each repeated while
	 * its ranks vote for it. round_at: the id of the set whose cycle
	 * comes next, 0 the job's; round_us: when the round's job cycle
	 * ended; round_idle: the next is the same set's again, after one
	 * that ran nothing. A set's engine: ran_us, when it last ran
	 * something. */
	int round_at;
	bool round_idle;
	long long round_us, ran_us;
	int spin_now; /* the spin the transports have now */
	long long last_stall_us;
	/* Join: the ranks that have joined, as every rank agreed (responses
	 * in order); the coordinator's own view runs ahead of it. */
	uint8_t *joined, *coord_joined;
	int njoined, coord_njoined;
	/* The job's engine: its process sets (sets.h), and its autotuner
	 * (autotune.h); NULL in a set's. */
	struct hvd__sets *sets;
	struct hvd__autotune *tune;
	/* A process set's engine: its id, and the job's rank of each of its
	 * comm's ranks (NULL, set 0: the comm is the job). */
	int set;
	const int *members;
};

/* How busy a rank is in its process sets (struct hvd__engine). */
enum { HVD__SETS_IDLE, HVD__SETS_WAIT, HVD__SETS_RAN };
/* A rank's vote in a process set's agreement (struct hvd__engine): the
 * highest decides. DONE: nothing here; AGAIN: work pending, or ran a
 * moment ago; STOP: the round must move on (work waits elsewhere, the
 * round's time is up, or shutdown). The set's cycle runs again when the
 * highest is AGAIN. */
enum { HVD__SET_DONE, HVD__SET_AGAIN, HVD__SET_STOP };

/* The job's rank of e's comm's rank r, for messages and results. */
static inline int hvd__job_rank(const struct hvd__engine *e, int r)
{
	return e->members != NULL && r >= 0 && r < e->comm.size ? e->members[r]
								: r;
}

/* Horovod's timeline name of the operation: "ALLREDUCE", "ADASUM" (an
 * allreduce by Adasum), "BROADCAST", ... (meta.c). */
const char *hvd__meta_activity(const struct hvd__meta *m);

/* Rank 0's timeline: r's operation, from when its cycle took it until
 * now, the span its parts lie in, with its dtype and shape (or count) as
 * its args (before r completes; fusion.c and flights.c; meta.c). */
void hvd__timeline_op(const struct hvd__engine *e, const struct hvd__req *r);

/* ---- engine.c ---- */

/* The engine's own state for a comm of size ranks (e's settings, e->k,
 * read already): the join vectors and the response cache. HVD_ENOMEM:
 * hvd__engine_close frees what was made. */
int hvd__engine_open(struct hvd__engine *e, int size);
/* Free the engine's own state (not the comm, segment, GPU, timeline). */
void hvd__engine_close(struct hvd__engine *e);

/* ---- queue.c (any thread, unless it says) ---- */

/* A new request, not yet queued (NULL: out of memory). It owns `ready`
 * (a GPU request's event), also when it fails. */
struct hvd__req *hvd__req_new(const char *name, const struct hvd__meta *m,
			      void *ready);
/* Queue r for the background thread, or, inside a group (hvd_group_start),
 * hold it until hvd_group_end(); *out is its handle. r is freed when it
 * is refused. */
int hvd__enqueue(struct hvd__req *r, hvd_handle **out);
/* Queue the list of requests (linked by next) at once, or none of them:
 * a name in flight on this rank, or twice in the list, is refused. */
int hvd__queue_submit(struct hvd__req *list);
/* Whether this thread is inside hvd_group_start()/hvd_group_end()
 * (grouped.c). hold: r joins the open group, if there is one; holds:
 * h is the handle of a request the open group holds; end: close the
 * group, *list its requests (also on failure: the caller completes
 * them), each marked with the group's identity. */
bool hvd__in_group(void);
bool hvd__group_hold(struct hvd__req *r);
bool hvd__group_holds(const hvd_handle *h);
int hvd__group_end(struct hvd__req **list);
/* Ready the queue for a new start. */
void hvd__queue_reset(void);
/* How a waiting thread runs the engine's cycles itself until h completes
 * (runtime.c's hvd__runtime_drive, which says what it returns), handed
 * to the queue while a thread may do so; NULL: none may. */
typedef int (*hvd__drive_fn)(const hvd_handle *h);
void hvd__queue_set_driver(hvd__drive_fn fn);
/* A bell that ends the wait of the engine's owner between its cycles
 * besides new work (bell.c): called: a peer started the next agreement;
 * sleep: up to ms, unless woken() or called, or until a ring; ring: wake
 * its sleeper (as every waker of the owner does, queue.c). */
struct hvd__bell;
struct hvd__bell_ops {
	bool (*called)(struct hvd__bell *b);
	void (*sleep)(struct hvd__bell *b, double ms, bool (*woken)(void));
	void (*ring)(struct hvd__bell *b);
};
struct hvd__bell {
	const struct hvd__bell_ops *ops;
	/* bell.c's: the segment, the peers' connections then the eventfd
	 * or the segment's bell socket (n connections), the eventfd (-1:
	 * none), and how many sleep on it. */
	struct hvd__shm *shm;
	struct pollfd *fds;
	int n;
	int efd;
	_Atomic int sleepers;
};
/* An engine's bell (bell.c): the futexes of its segment shm (NULL:
 * none), and the connections through which its agreement over net (the
 * comm that carries it across hosts, hvd__bell_net; NULL: none) can
 * reach this rank first, where net's transport can watch them; NULL
 * where there is neither (MPI, one rank, no memory). */
struct hvd__bell *hvd__bell_open(const struct hvd__comm *net,
				 struct hvd__shm *shm);
/* The comm over which e's agreement (negotiate.c) crosses hosts: e's own
 * without a segment, the group of this local rank across hosts with one
 * on several hosts, NULL on one host. */
const struct hvd__comm *hvd__bell_net(const struct hvd__engine *e);
/* Free b (NULL: nothing), which no thread sleeps on. */
void hvd__bell_close(struct hvd__bell *b);
/* The next submission of this thread is waited for at once (a
 * synchronous collective): its thread will drive the engine (hvd_wait),
 * so the background thread leaves it alone. false: forget it. */
void hvd__queue_sync_next(bool on);
/* A synchronous collective starts: refused inside a group (it would wait
 * for itself, HVD_EINVAL); else its submission is marked as waited for at
 * once (hvd__queue_sync_next). */
int hvd__sync_start(void);
/* A synchronous collective's end: wait for h if the submission (rc)
 * succeeded; returns its status. */
int hvd__sync_finish(int rc, hvd_handle *h);
/* Wait up to cycle_ms for new requests, spinning first while spinning
 * pays (wait.h). The background thread (bg) waits also while a user
 * thread drives the engine (hvd_wait), unless hvd_shutdown() asked to
 * stop. paced: the wait ends at the background thread's next cycle, due
 * within the cycle time; a CPU request does not cut it short then
 * (queue.c's submit says why). The bell in *slot (slot or *slot NULL,
 * or cycle_ms 0: none): the wait ends also when a peer starts the next
 * agreement (bell.c), and the queue's wakers ring it meanwhile. */
void hvd__queue_wait(double cycle_ms, bool bg, bool paced,
		     struct hvd__bell *_Atomic *slot);
/* bell is about to go (its process set is removed; the engine's owner):
 * clear *slot if it holds bell, and return once no wait holds it. */
void hvd__queue_bell_gone(struct hvd__bell *_Atomic *slot,
			  struct hvd__bell *bell);
/* Whether the background thread has new work (or a shutdown) to take. */
bool hvd__queue_work(void);
/* Sleep up to ms, or until a thread that drove the engine is done. */
void hvd__queue_nap(double ms);
/* Sleep up to ms while *driving stays true (a user thread drives the
 * engine); true when the drive ended (hvd__queue_driven_end woke the
 * sleeper, or *driving was false). */
bool hvd__queue_nap_driven(double ms, const _Atomic bool *driving);
/* A drive ended, with *driving cleared: wake a hvd__queue_nap_driven. */
void hvd__queue_driven_end(void);
/* Take the new requests; *shutdown says whether hvd_shutdown() asked to
 * stop. A user thread that drives the engine passes gpu: *gpu is then
 * whether a GPU request was ever queued since the start, and if so it
 * takes nothing (the GPU's work is the background thread's). */
struct hvd__req *hvd__queue_take(bool *shutdown, bool *gpu);
/* Ask the background thread to stop. */
void hvd__queue_shutdown(void);
/* Refuse every later request with status; return the requests queued
 * but not yet taken, for the caller to complete. */
struct hvd__req *hvd__queue_break(int status);
/* The status that stopped the engine, or 0. */
int hvd__queue_broken(void);
/* Complete r (and free it) with exactly this message (may be NULL). */
void hvd__req_finish(struct hvd__req *r, int status, const char *msg);
/* Complete r with status; a failure's message names the collective and
 * the tensor, and why (NULL: hvd_strerror(status)). */
void hvd__req_complete(struct hvd__req *r, int status, const char *why);
/* A GPU request's batch is launched: event follows it on the GPU. */
void hvd__req_launched(struct hvd__req *r, void *event);

/* ---- knobs.c ---- */

/* Read every HOROVOD_* and HVD_* setting of the engine; a bad value is
 * HVD_EINVAL, logged with its name. */
int hvd__knobs_read(struct hvd__knobs *k, int size);
/* The settings every rank must share take rank 0's values on every rank
 * (util/env.c), a rank whose own differ saying so: a collective call over
 * c, before the settings are read. */
int hvd__knobs_agree(const struct hvd__comm *c);
/* The segment's default for a comm of size ranks (a process set's is its
 * own size's). */
size_t hvd__knobs_segment(int size);

/* ---- cache.c (background thread) ---- */

int hvd__cache_new(struct hvd__engine *e);
void hvd__cache_free(struct hvd__engine *e);
/* The entry holding name with meta m (NULL: any meta), or -1. */
int hvd__cache_find(const struct hvd__engine *e, const char *name,
		    const struct hvd__meta *m);
/* Rank 0: give each new response an entry (the one of its name, if any,
 * else a free one), never two in one cycle the same. */
void hvd__cache_assign(const struct hvd__engine *e, struct hvd__resp *v,
		       size_t n);
/* Record the responses' entries, the same on every rank. */
void hvd__cache_record(struct hvd__engine *e, const struct hvd__resp *v,
		       size_t n);
/* The cache turned off (k.cache_off) at a cycle's start, on every rank at
 * the same cycle: its entries freed, and the pending requests that had one
 * go to the coordinator again. */
void hvd__cache_settle_off(struct hvd__engine *e);

/* ---- control.c (background thread) ---- */

/* This rank's requests not yet sent to the coordinator (marked sent). */
int hvd__ctl_send_requests(struct hvd__engine *e, int to);
/* Rank 0: a rank's requests, each passed to submit(). */
typedef void (*hvd__ctl_submit)(void *arg, const char *name,
				const struct hvd__meta *m, int rank);
int hvd__ctl_recv_requests(struct hvd__engine *e, int from,
			   hvd__ctl_submit submit, void *arg);
/* This rank's own requests, to submit() without a transfer (rank 0). */
int hvd__ctl_local_requests(struct hvd__engine *e, hvd__ctl_submit submit,
			    void *arg);
int hvd__ctl_send_responses(struct hvd__engine *e, int to,
			    const struct hvd__resp *v, size_t n);
int hvd__ctl_recv_responses(struct hvd__engine *e, int from,
			    struct hvd__resp **v, size_t *n);
/* The messages, into a writer each starts (b->bad: no memory): the
 * requests of pending not yet reported (marked reported now), and the
 * responses. */
struct wire_w;
void hvd__ctl_encode_requests(struct wire_w *b, struct hvd__req *pending);
void hvd__ctl_encode_responses(struct wire_w *b, const struct hvd__resp *v,
			       size_t n);
/* The decoders alone, of a message's len bytes (without its length):
 * HVD_EPROTO unless buf holds exactly one well-formed message. */
int hvd__ctl_decode_requests(const void *buf, size_t len, int rank,
			     hvd__ctl_submit submit, void *arg);
int hvd__ctl_decode_responses(const void *buf, size_t len, struct hvd__resp **v,
			      size_t *n);
void hvd__resps_free(struct hvd__resp *v, size_t n);

/* ---- negotiate.c (background thread) ---- */

/* One cycle's agreement: the cached tensors ready on every rank, then
 * the coordinator's new responses (recorded in the cache), in the order
 * every rank runs them. HVD_ESHUTDOWN: some rank is shutting down. */
int hvd__negotiate(struct hvd__engine *e, bool shutdown_local,
		   struct hvd__resp **v, size_t *n);
/* Forget what the coordinator knows. */
void hvd__negotiate_free(struct hvd__engine *e);

/* ---- meta.c (any thread) ---- */

/* "allreduce of 10 float32 op sum", for messages. */
void hvd__meta_describe(const struct hvd__meta *m, char *buf, size_t len);
bool hvd__meta_equal(const struct hvd__meta *a, const struct hvd__meta *b);
/* count elements of dtype, in bytes. */
size_t hvd__meta_bytes(const struct hvd__meta *m);

/* ---- fusion.c (background thread) ---- */

/* Run the responses in order, fusing allreduces. Returns the error that
 * stops the engine, if any; every request touched is completed. */
int hvd__execute(struct hvd__engine *e, struct hvd__resp *v, size_t n);
/* ---- ops/ (background thread): one collective each ---- */

int hvd__op_allreduce(struct hvd__engine *e, struct hvd__req **batch, size_t n);
int hvd__op_broadcast(struct hvd__engine *e, struct hvd__req *r);
int hvd__op_allgather(struct hvd__engine *e, struct hvd__req *r);
int hvd__op_barrier(struct hvd__engine *e, struct hvd__req *r);
int hvd__op_alltoall(struct hvd__engine *e, struct hvd__req *r);
int hvd__op_reducescatter(struct hvd__engine *e, struct hvd__req *r);
/* A rank joined (the response's root): returns the request of this
 * rank's hvd_join() once every rank has joined (its status: the last
 * rank), else NULL. */
struct hvd__req *hvd__op_join(struct hvd__engine *e, const struct hvd__resp *x);

/* ---- gpu/engine.c (background thread) ---- */

/* NCCL, set up at the first GPU collective (every rank gets there
 * together: every rank runs the same responses in the same order). */
int hvd__gpu_engine(struct hvd__engine *e);

/* ---- flights.c (background thread) ---- */

/* Whether r waits in e->held until its data is computed. */
bool hvd__gpu_holds(const struct hvd__req *r);
/* Whether e holds requests or has batches in flight. */
bool hvd__gpu_busy(const struct hvd__engine *e);
/* Whether the requests in, just taken at now, came in a burst: several
 * at once, or while others of this rank's were held, negotiated or in
 * flight, or a GPU allreduce alone that a burst followed last time it
 * came alone (the head: learnt here, forgotten when it stays alone). */
bool hvd__gpu_burst(struct hvd__engine *e, const struct hvd__req *in,
		    long long now);
/* Whether the held requests the GPU has computed (bytes of them; all:
 * every held one) wait at now for more of a burst to join their batch. */
bool hvd__gpu_gathers(const struct hvd__engine *e, size_t bytes, bool all,
		      long long now);
/* The held requests whose data the GPU has computed, to pending_local,
 * when a batch of them is due (flights.c says when); true if some went. */
bool hvd__gpu_release_held(struct hvd__engine *e);
/* What hvd__op_allreduce returns for a GPU batch launched, its flight
 * in e->launched. */
#define HVD__LAUNCHED 1
/* Take batch (n requests) into a flight of e->launched, telling each
 * request it was launched; HVD__LAUNCHED (they complete when it ends),
 * or HVD_OK when they can complete at once (out of memory: the stream
 * was waited for), or an error. */
int hvd__gpu_launched(struct hvd__engine *e, struct hvd__req **batch, size_t n);
/* Complete the flights that have ended, in order; drain: wait for them
 * all. Returns an error that stops the engine (every flight failed). */
int hvd__gpu_progress(struct hvd__engine *e, bool drain);
/* The background thread's wait between cycles, up to ms: while batches
 * are in flight, until the first ends, else while held data is being
 * computed, until the first is; or until new work comes. */
void hvd__gpu_wait(struct hvd__engine *e, double ms);
/* Every flight's requests complete with status. */
void hvd__gpu_flights_fail(struct hvd__engine *e, int status);

#endif
