/* internal.h: what libhvd's files share and nothing outside libhvd sees:
 * the one state struct, the environment helper and the log module. */
#ifndef HVD_INTERNAL_H
#define HVD_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "proto/worker_env.h"
#include "hvd.h"

enum hvd__log_level {
	HVD__LOG_TRACE,
	HVD__LOG_DEBUG,
	HVD__LOG_INFO,
	HVD__LOG_WARNING,
	HVD__LOG_ERROR,
	HVD__LOG_FATAL,
};

/* The library's one mutable global: the job as hvd_init() found it. */
struct hvd__state {
	bool initialized;
	bool mpi; /* the collectives run over MPI */
	int rank, size;
	int local_rank, local_size;
	int cross_rank, cross_size;
	/* Every host runs the same number of ranks: a fact of the job, the
	 * same on every rank (hvd_is_homogeneous). */
	bool homogeneous;
	int generation; /* an elastic job's (transport/bootstrap.h), else 0 */
	/* What keys this world's mesh token and shared-memory name
	 * (proto/rendezvous.h): the elastic generation, or the static
	 * job's round of hvd_init(). */
	uint32_t key_gen;
	/* The process's exit stops libhvd, then finalises MPI that libhvd
	 * initialised (kept across hvd_shutdown). */
	bool exit_hook;
};

extern struct hvd__state hvd__g;
/* What hvd__g holds before hvd_init() and after hvd_shutdown(). */
extern const struct hvd__state hvd__fresh_state;

/* A process forked from one that had run hvd_init() (a data loader's
 * worker, a subprocess) shares its memory, so hvd__g says initialised,
 * but has none of its threads or connections: queries still answer, but
 * collectives, hvd_init() and hvd_shutdown() must not touch what is the
 * parent's. -1: not such a fork; else the rank the parent was. */
extern int hvd__fork_of;
/* Mark this process as such a fork, if libhvd was initialised (the
 * child's pthread_atfork handler). */
void hvd__mark_fork(void);
/* HVD_ENOTSUP, with why in hvd_error_message(), for a call that a fork
 * cannot make. */
int hvd__fork_refuse(void);

/* Read a variable of the worker environment (proto/worker_env.h) through
 * its contract: unset or empty, its default; set but not a value the
 * contract allows, HVD_EINVAL, logged with its name and what it allows.
 * (util/env.c) */
int hvd__env(enum wenv_id v, double *out);
int hvd__env_long(enum wenv_id v, long *out);
/* A variable's text, NULL where unset or empty: rank 0's once the ranks
 * agreed on it (engine/knobs.c's job-wide settings), else this
 * process's own. */
const char *hvd__env_text(enum wenv_id v);
/* From now on v reads as text (NULL: unset), on this rank; until
 * hvd__env_agree_clear() (a runtime's start and stop), which also has the
 * peer timeout read again. */
int hvd__env_agree(enum wenv_id v, const char *text);
void hvd__env_agree_clear(void);
/* HVD_TRANSPORT_TIMEOUT_MS (else horovodrun's HOROVOD_GLOO_TIMEOUT_SECONDS):
 * a peer silent this long has failed; read once a runtime. */
int hvd__transport_timeout_ms(void);
/* How long every rank has to join the job (HVD_START_TIMEOUT), in ms;
 * its default where it is not valid (join_mesh has said so). */
int hvd__start_timeout_ms(void);

/* An elastic world (a generation) is over: hvdrun announced a reset, or
 * its rendezvous is gone (engine/elastic.c's watcher says so, and aborts
 * the transport). The waits on a host's shared-memory segment, which no
 * transport abort reaches (its opening, a peer's round, the bell), give
 * up on it; the start's errors for it are not logged: the next world is
 * joined at once. Cleared as a world is joined (util/state.c). */
void hvd__world_begin(void);
void hvd__world_end(void);
bool hvd__world_over(void);

/* Room for a connection to every other rank of a job of size: the soft
 * limit on open files raised as far as the mesh and what follows it need
 * (util/fds.c); HVD_ESYS, logged, where the hard limit has no room. */
int hvd__fd_room(int rank, int size);

/* The size a working buffer of have bytes grows to so as to hold want
 * (util/grow.c): doubling from HVD__GROW_FIRST, so that a run of growing
 * batches costs a few allocations, but capped at limit (the fusion
 * threshold): beyond it only exactly what one collective needs. have when
 * it holds want already. */
#define HVD__GROW_FIRST ((size_t)1 << 20)
size_t hvd__grow_size(size_t have, size_t want, size_t limit);

/* Set the calling thread's hvd_error_message() (util/error.c). */
void hvd__set_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* The monotonic clock, in microseconds and in milliseconds. */
long long hvd__now_us(void);
long long hvd__now_ms(void);

/* Whether a message of this level is logged (HOROVOD_LOG_LEVEL). */
bool hvd__log_on(enum hvd__log_level level);
void hvd__log(enum hvd__log_level level, const char *func, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define hvd__warn(...) hvd__log(HVD__LOG_WARNING, __func__, __VA_ARGS__)
#define hvd__error(...) hvd__log(HVD__LOG_ERROR, __func__, __VA_ARGS__)
#define hvd__debug(...) hvd__log(HVD__LOG_DEBUG, __func__, __VA_ARGS__)

#endif
