/* worker_env.h: the one definition of the worker's environment, the
 * contract between hvdrun (which sets it) and libhvd (which reads it):
 * every variable's name, type, range, default and meaning. hvdrun's option
 * table takes its ranges and defaults from here (lib/config/opts.c), libhvd reads
 * every setting through wenv_parse() (core/engine/knobs.c), and the unit tests
 * hold man/hvd.3 and man/hvdrun.ini.5 to it, so that a value hvdrun
 * accepts is one libhvd accepts. Pure data and parsing: no I/O. */
#ifndef HVD_PROTO_WORKER_ENV_H
#define HVD_PROTO_WORKER_ENV_H

#include <stdbool.h>
#include <stddef.h>

enum wenv_id {
	/* Set by hvdrun for each worker: -x and [env] may not set them. */
	WENV_RANK,
	WENV_SIZE,
	WENV_LOCAL_RANK,
	WENV_LOCAL_SIZE,
	WENV_CROSS_RANK,
	WENV_CROSS_SIZE,
	WENV_HOSTNAME,
	WENV_TORCH_RANK,
	WENV_TORCH_WORLD_SIZE,
	WENV_TORCH_LOCAL_RANK,
	WENV_TORCH_LOCAL_WORLD_SIZE,
	WENV_TORCH_MASTER_ADDR,
	WENV_TORCH_MASTER_PORT,
	WENV_TORCH_GROUP_RANK,
	WENV_TORCH_GROUP_WORLD_SIZE,
	WENV_TORCH_ROLE_RANK,
	WENV_TORCH_ROLE_WORLD_SIZE,
	WENV_RENDEZVOUS,
	WENV_SECRET,
	WENV_START_TIMEOUT,
	WENV_NETWORK_INTERFACES,
	WENV_WORKER_ID,
	/* Settings: from hvdrun's options, or the user's environment. */
	WENV_FUSION_THRESHOLD,
	WENV_CYCLE_TIME,
	WENV_CACHE_CAPACITY,
	WENV_HIERARCHICAL_ALLREDUCE,
	WENV_TIMELINE,
	WENV_TIMELINE_MARK_CYCLES,
	WENV_STALL_CHECK_DISABLE,
	WENV_STALL_CHECK_TIME,
	WENV_STALL_SHUTDOWN_TIME,
	WENV_LOG_LEVEL,
	WENV_LOG_HIDE_TIME,
	WENV_BIND_TO,
	WENV_REPORT_BINDINGS,
	WENV_HIERARCHICAL_ALLGATHER,
	WENV_THREAD_AFFINITY,
	WENV_NUM_NCCL_STREAMS,
	/* libhvd's own settings, no hvdrun option. */
	WENV_CONTROLLER,
	WENV_CPU_OPERATIONS,
	WENV_MPI_ALLREDUCE,
	WENV_SEGMENT_BYTES,
	WENV_SPIN_US,
	WENV_TRANSPORT_TIMEOUT_MS,
	WENV_GLOO_TIMEOUT_SECONDS,
	WENV_SHM,
	WENV_DYNAMIC_PROCESS_SETS,
	WENV_AUTOTUNE,
	WENV_AUTOTUNE_LOG,
	WENV_AUTOTUNE_WARMUP_SAMPLES,
	WENV_AUTOTUNE_STEPS_PER_SAMPLE,
	WENV_AUTOTUNE_BAYES_OPT_MAX_SAMPLES,
	WENV_AUTOTUNE_GAUSSIAN_PROCESS_NOISE,
	WENV_BATCH_D2D_MEMCOPIES,
	WENV_COUNT
};

enum wenv_type {
	WENV_T_INT,    /* a whole number from min to max */
	WENV_T_NUMBER, /* a decimal number from min to max */
	WENV_T_CHOICE, /* one of choices, any case; the value is its index */
	WENV_T_TEXT,   /* any non-empty text */
};

struct wenv_var {
	const char *name;
	enum wenv_type type;
	bool per_worker; /* hvdrun sets it for each worker */
	double min, max; /* WENV_T_INT, WENV_T_NUMBER */
	/* The value when unset or empty (a choice's index). WENV_DYNAMIC:
	 * the reader derives it (meaning says how). */
	double def;
	const char *const *choices; /* WENV_T_CHOICE, NULL-terminated */
	const char *meaning;
};

#define WENV_DYNAMIC (-1.0)

extern const struct wenv_var wenv_vars[WENV_COUNT];

/* The variable called name, or -1. */
int wenv_find(const char *name);
/* Parse text as v's value: true and *out (a number, or a choice's
 * index), or false when text is not a valid value of v. */
bool wenv_parse(enum wenv_id v, const char *text, double *out);
/* What v accepts, for an error message: "an integer from 0 to 1048576". */
void wenv_describe(enum wenv_id v, char *buf, size_t len);

#endif
