/* opts.h: the job's options as data. One table describes every setting:
 * its config-file section and key, its command-line option, its type and
 * range, its default, and the worker environment variable it becomes. The
 * command line and the config file both go through hl_opts_set(); every
 * value starts unset and the first source to set it wins (the command line
 * is read first), and defaults are filled last. */
#ifndef HL_OPTS_H
#define HL_OPTS_H

#include <stdbool.h>

#include "util/util.h"

enum hl_key {
	HL_K_NP,
	HL_K_HOSTS,
	HL_K_HOSTFILE,
	HL_K_OUTPUT_FILENAME,
	HL_K_WDIR,
	HL_K_PREFIX_TIMESTAMP,
	HL_K_STDIN,
	HL_K_VERBOSE,
	HL_K_START_TIMEOUT,
	HL_K_TIMEOUT,
	HL_K_LAUNCHER,
	HL_K_BIND_TO,
	HL_K_REPORT_BINDINGS,
	HL_K_MIN_NP,
	HL_K_RESET_LIMIT,
	HL_K_MAX_NP,
	HL_K_COOLDOWN,
	HL_K_DISCOVERY,
	HL_K_SLOTS_PER_HOST,
	HL_K_ELASTIC_TIMEOUT,
	HL_K_FUSION_THRESHOLD_MB,
	HL_K_CYCLE_TIME_MS,
	HL_K_CACHE_CAPACITY,
	HL_K_HIERARCHICAL_ALLREDUCE,
	HL_K_HIERARCHICAL_ALLGATHER,
	HL_K_SHARED_MEMORY,
	HL_K_THREAD_AFFINITY,
	HL_K_NUM_NCCL_STREAMS,
	HL_K_GLOO_TIMEOUT,
	HL_K_AUTOTUNE,
	HL_K_AUTOTUNE_LOG,
	HL_K_AUTOTUNE_WARMUP,
	HL_K_AUTOTUNE_STEPS,
	HL_K_AUTOTUNE_MAX,
	HL_K_AUTOTUNE_NOISE,
	HL_K_TIMELINE_FILENAME,
	HL_K_TIMELINE_MARK_CYCLES,
	HL_K_STALL_CHECK,
	HL_K_STALL_WARNING_S,
	HL_K_STALL_SHUTDOWN_S,
	HL_K_LOG_LEVEL,
	HL_K_LOG_TIMESTAMP,
	HL_K_SSH_PORT,
	HL_K_SSH_USER,
	HL_K_SSH_IDENTITY,
	HL_K_SSH_HOST_KEY_CHECKING,
	HL_K_SSH_CONNECT_TIMEOUT,
	HL_K_SSH_CONFIG,
	HL_K_SSH_FORCE,
	HL_K_SSH_CONCURRENCY,
	HL_K_SSH_CHANNELS,
	HL_K_NETWORK_CHECK,
	HL_K_NETWORK_TIMEOUT,
	HL_K_NETWORK_INTERFACES,
	HL_K_CHECK_BANDWIDTH, /* hvdrun check only */
	HL_K_BANDWIDTH_TIME,
	HL_K_BANDWIDTH_SIZE,
	HL_K_FAIL_ON_SLOW,
	HL_K_CHECK_NCCL,
	HL_K_NCCL_TIMEOUT,
	HL_K_TCP,
	HL_K_MPI,
	HL_K_MPI_ARGS,
	HL_K_BINDING_ARGS,
	HL_K_MPI_THREADS_DISABLE, /* horovodrun's; refused with --mpi */
	HL_K_COUNT
};

enum hl_type {
	HL_T_INT,
	HL_T_DOUBLE,
	HL_T_BOOL,
	HL_T_STRING,
	HL_T_PATH,   /* a string; in a config file, relative to the file */
	HL_T_ENUM,   /* one of choices */
	HL_T_HOSTS,  /* a -H host list */
	HL_T_USER,   /* a user name */
	HL_T_IFACES, /* network interface names, NAME[,NAME...]; on the
			command line the option may be repeated */
	HL_T_RANGE,  /* two integers "MIN MAX", MIN <= MAX (i: MIN, d: MAX);
			on the command line, two words */
	HL_T_RANK,   /* a rank, 0 or more, or "none" (i: -1) */
};

/* How a value becomes a worker environment variable. */
enum hl_export {
	HL_X_NONE,
	HL_X_VALUE,    /* the value as written (numbers normalised) */
	HL_X_MIB,      /* an integer of MiB, exported in bytes */
	HL_X_MS,       /* seconds, exported in whole milliseconds */
	HL_X_BOOL,     /* "1" or "0" */
	HL_X_BOOL_NOT, /* "1" when false: a DISABLE variable */
};

struct hl_keyinfo {
	const char *section;
	const char *name;
	const char *longopt; /* NULL: config file only */
	const char *flag;    /* non-NULL: the option takes no argument and
				  sets this value */
	enum hl_type type;
	/* Range, choices and default of a key without a worker variable (a
	 * key with one has them from the contract: hl_key_range() and the
	 * others below). */
	double min, max;
	const char *const *choices; /* HL_T_ENUM, NULL-terminated */
	const char *def;	    /* default, NULL: none */
	const char *envvar;	    /* the worker variable it sets or feeds */
	enum hl_export export;
	const char *help;
	const char *arg; /* the value's name in --help; NULL: from the type */
};

/* The sections of a config file, in the order --help and hvdrun.ini(5)
 * show them, with the title --help gives each. [env] holds -x's
 * variables, not keys. */
struct hl_section {
	const char *name;
	const char *title;
};

extern const struct hl_section hl_sections[];

struct hl_value {
	bool set;
	long i;
	double d;
	bool b;
	char *s;
	/* How it was given, for messages: "-n 3" as typed, "np = 3
	 * (job.ini:2)" from a file (hl_opt_said); in_file: so. */
	char *said;
	bool in_file;
};

/* A -x or [env] entry: NAME=VALUE, or NAME alone to forward the launcher's. */
struct hl_envitem {
	char *name;
	char *value; /* NULL: forward */
};

struct hl_opts {
	struct hl_value v[HL_K_COUNT];
	struct hl_envitem *env;
	size_t nenv;
};

extern const struct hl_keyinfo hl_keys[HL_K_COUNT];

void hl_opts_init(struct hl_opts *o);
void hl_opts_close(struct hl_opts *o);

/* Set key from text. where: "" on the command line, "FILE:LINE: " in a
 * file. base_dir: a config file's folder for HL_T_PATH, or NULL. A key that
 * is already set keeps its value (the text is still checked). */
int hl_opts_set(struct hl_opts *o, enum hl_key k, const char *text,
		const char *where, const char *base_dir, char **cause);
/* Add a "NAME" or "NAME=VALUE" entry; a name already present is kept. */
int hl_opts_add_env(struct hl_opts *o, const char *spec, const char *where,
		    char **cause);
int hl_opts_add_env_pair(struct hl_opts *o, const char *name, const char *value,
			 const char *where, char **cause);
/* Fill the defaults of every unset key. */
int hl_opts_finish(struct hl_opts *o, char **cause);
/* Look up a key by config section and name; -1 if unknown. */
int hl_opts_find(const char *section, const char *name);
bool hl_opts_section_known(const char *section);
/* "a, b, c or d": every section name, for messages. */
const char *hl_opts_section_list(void);
/* A key's value as --help names it: its arg, else from its type ("N",
 * "FILE", the choices "a|b|c"); "" for a flag. */
const char *hl_key_arg(enum hl_key k, char *buf, size_t len);
/* Whether hvdrun sets name itself for each worker (HOROVOD_RANK, ...). */
bool hl_env_reserved(const char *name);
/* Append the tuning variables of every set key ("NAME=VALUE"). */
int hl_opts_export(const struct hl_opts *o, struct hl_strvec *env);
/* A key's range (HL_T_INT, HL_T_DOUBLE), choices (HL_T_ENUM) and default
 * text (NULL: none; buf holds it if need be), in the key's own unit: for a
 * key that becomes a worker variable, the contract's (proto/worker_env.h),
 * so that every value hvdrun accepts, libhvd accepts. */
void hl_key_range(enum hl_key k, double *min, double *max);
const char *const *hl_key_choices(enum hl_key k);
const char *hl_key_default(enum hl_key k, char *buf, size_t len);
/* Key k as the user gave it, value and all: "-n 3", "--min-np 2" (as
 * typed: hl_opts_said_as), "np = 3 (job.ini:2)" from a file,
 * "controller: mpi (job.yaml:1)" from horovodrun's; else "--long VALUE"
 * (static buffers: two calls a message at most). */
const char *hl_opt_said(const struct hl_opts *o, enum hl_key k);
/* Key k set to text at where ("FILE:LINE: ") of a config file, as
 * hl_opt_said names it: "np = 3 (job.ini:2)", "enabled = true in [mpi]
 * (job.ini:4)" for a name other sections have too (malloc'd; NULL: out
 * of memory). */
char *hl_said_in_file(enum hl_key k, const char *text, const char *where);
/* Key k, set on the command line, was typed as spelling ("-n"), with
 * value (NULL for a flag that takes none). */
int hl_opts_said_as(struct hl_opts *o, enum hl_key k, const char *spelling,
		    const char *value);
/* The display name of a key: "--long" or "[section] name". */
const char *hl_opts_display(enum hl_key k, bool cli, char *buf, size_t len);

#endif
