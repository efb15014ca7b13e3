/* worker_env.c: the worker environment's table and its one parser. */
#include "proto/worker_env.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static const char *const log_levels[] = {"trace", "debug", "info", "warning",
					 "error", "fatal", NULL};
static const char *const bind_policies[] = {
	"core", "none", "core:overload-allowed", "socket", "numa", "gpu", NULL};
static const char *const engines[] = {"mpi", "tcp", "gloo", NULL};

#define MAX_RANKS (1 << 24)
#define WEEK (7 * 86400)

/* Keep man/hvd.3 (ENVIRONMENT), man/hvdrun.1 and man/hvdrun.ini.5 in
 * step; tests/unit/test_worker_env.c checks them against this table. */
const struct wenv_var wenv_vars[WENV_COUNT] = {
	[WENV_RANK] = {"HOROVOD_RANK", WENV_T_INT, true, 0, MAX_RANKS - 1, 0,
		       NULL, "this worker's rank"},
	[WENV_SIZE] = {"HOROVOD_SIZE", WENV_T_INT, true, 1, MAX_RANKS, 1, NULL,
		       "the number of ranks"},
	[WENV_LOCAL_RANK] = {"HOROVOD_LOCAL_RANK", WENV_T_INT, true, 0,
			     MAX_RANKS - 1, WENV_DYNAMIC, NULL,
			     "rank among the workers of its host (default: "
			     "the rank)"},
	[WENV_LOCAL_SIZE] = {"HOROVOD_LOCAL_SIZE", WENV_T_INT, true, 1,
			     MAX_RANKS, WENV_DYNAMIC, NULL,
			     "workers on this host (default: the size)"},
	[WENV_CROSS_RANK] = {"HOROVOD_CROSS_RANK", WENV_T_INT, true, 0,
			     MAX_RANKS - 1, 0, NULL,
			     "the host's index among the hosts"},
	[WENV_CROSS_SIZE] = {"HOROVOD_CROSS_SIZE", WENV_T_INT, true, 1,
			     MAX_RANKS, 1, NULL, "the number of hosts"},
	[WENV_HOSTNAME] = {"HOROVOD_HOSTNAME", WENV_T_TEXT, true, 0, 0, 0, NULL,
			   "the host as the host list names it"},
	[WENV_TORCH_RANK] = {"RANK", WENV_T_TEXT, true, 0, 0, 0, NULL,
			     "torchrun's name for the rank"},
	[WENV_TORCH_WORLD_SIZE] = {"WORLD_SIZE", WENV_T_TEXT, true, 0, 0, 0,
				   NULL, "torchrun's name for the size"},
	[WENV_TORCH_LOCAL_RANK] = {"LOCAL_RANK", WENV_T_TEXT, true, 0, 0, 0,
				   NULL, "torchrun's name for the local rank"},
	[WENV_TORCH_LOCAL_WORLD_SIZE] = {"LOCAL_WORLD_SIZE", WENV_T_TEXT, true,
					 0, 0, 0, NULL,
					 "torchrun's name for the local size"},
	[WENV_TORCH_MASTER_ADDR] = {"MASTER_ADDR", WENV_T_TEXT, true, 0, 0, 0,
				    NULL,
				    "rank 0's address or host, for torch"},
	[WENV_TORCH_MASTER_PORT] = {"MASTER_PORT", WENV_T_TEXT, true, 0, 0, 0,
				    NULL, "a free port there, for torch"},
	[WENV_TORCH_GROUP_RANK] = {"GROUP_RANK", WENV_T_TEXT, true, 0, 0, 0,
				   NULL,
				   "torchrun's name for the host's index among "
				   "the job's hosts"},
	[WENV_TORCH_GROUP_WORLD_SIZE] = {"GROUP_WORLD_SIZE", WENV_T_TEXT, true,
					 0, 0, 0, NULL,
					 "torchrun's name for the job's hosts"},
	[WENV_TORCH_ROLE_RANK] = {"ROLE_RANK", WENV_T_TEXT, true, 0, 0, 0, NULL,
				  "torchrun's other name for the rank"},
	[WENV_TORCH_ROLE_WORLD_SIZE] = {"ROLE_WORLD_SIZE", WENV_T_TEXT, true, 0,
					0, 0, NULL,
					"torchrun's other name for the size"},
	[WENV_RENDEZVOUS] = {"HVD_RENDEZVOUS", WENV_T_TEXT, true, 0, 0, 0, NULL,
			     "where hvdrun's rendezvous listens, IP:PORT,..."},
	[WENV_SECRET] = {"HVD_SECRET", WENV_T_TEXT, true, 0, 0, 0, NULL,
			 "the job's secret, in hex"},
	[WENV_START_TIMEOUT] = {"HVD_START_TIMEOUT", WENV_T_INT, true, 1, 86400,
				30, NULL, "seconds to wait for every rank"},
	[WENV_NETWORK_INTERFACES] = {"HVD_NETWORK_INTERFACES", WENV_T_TEXT,
				     true, 0, 0, 0, NULL,
				     "the interfaces to use, NAME,..."},
	[WENV_WORKER_ID] = {"HVD_WORKER_ID", WENV_T_INT, true, 0, INT32_MAX, 0,
			    NULL,
			    "an elastic job's worker: its id (hvdrun "
			    "--min-np, --max-np)"},
	[WENV_FUSION_THRESHOLD] = {"HOROVOD_FUSION_THRESHOLD", WENV_T_INT,
				   false, 0, 1LL << 40, 128 << 20, NULL,
				   "bytes fused into one operation"},
	[WENV_CYCLE_TIME] = {"HOROVOD_CYCLE_TIME", WENV_T_NUMBER, false, 0,
			     10000, 1, NULL, "milliseconds between cycles"},
	[WENV_CACHE_CAPACITY] = {"HOROVOD_CACHE_CAPACITY", WENV_T_INT, false, 0,
				 1 << 20, 1024, NULL, "response cache entries"},
	[WENV_HIERARCHICAL_ALLREDUCE] = {"HOROVOD_HIERARCHICAL_ALLREDUCE",
					 WENV_T_INT, false, 0, 1, 0, NULL,
					 "1: GPU allreduce within hosts, "
					 "then across"},
	[WENV_TIMELINE] = {"HOROVOD_TIMELINE", WENV_T_TEXT, false, 0, 0, 0,
			   NULL, "rank 0 writes a timeline there"},
	[WENV_TIMELINE_MARK_CYCLES] = {"HOROVOD_TIMELINE_MARK_CYCLES",
				       WENV_T_INT, false, 0, 1, 0, NULL,
				       "1: mark cycles in the timeline"},
	[WENV_STALL_CHECK_DISABLE] = {"HOROVOD_STALL_CHECK_DISABLE", WENV_T_INT,
				      false, 0, 1, 0, NULL,
				      "1: no stall check"},
	[WENV_STALL_CHECK_TIME] = {"HOROVOD_STALL_CHECK_TIME_SECONDS",
				   WENV_T_INT, false, 1, WEEK, 60, NULL,
				   "seconds before a stall is reported"},
	[WENV_STALL_SHUTDOWN_TIME] =
		{"HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", WENV_T_INT, false, 0,
		 WEEK, 0, NULL, "seconds before a stall fails (0: never)"},
	[WENV_LOG_LEVEL] = {"HOROVOD_LOG_LEVEL", WENV_T_CHOICE, false, 0, 0, 3,
			    log_levels, "libhvd's log level"},
	[WENV_LOG_HIDE_TIME] = {"HOROVOD_LOG_HIDE_TIME", WENV_T_INT, false, 0,
				1, 1, NULL,
				"0: libhvd's log lines start with the time"},
	[WENV_BIND_TO] = {"HVD_BIND_TO", WENV_T_CHOICE, false, 0, 0, 0,
			  bind_policies,
			  "core: a share of the cores for each local rank; "
			  "core:overload-allowed: also on a host with "
			  "more ranks than CPUs, one CPU each in turn; "
			  "socket, numa: a package or NUMA node each, "
			  "consecutive local ranks together; gpu: the "
			  "CPUs near the local rank's GPU"},
	[WENV_REPORT_BINDINGS] = {"HVD_REPORT_BINDINGS", WENV_T_INT, false, 0,
				  1, 0, NULL,
				  "1: each worker says on its standard error "
				  "which CPUs it may run on"},
	[WENV_HIERARCHICAL_ALLGATHER] = {"HOROVOD_HIERARCHICAL_ALLGATHER",
					 WENV_T_INT, false, 0, 1, 1, NULL,
					 "0: the CPU allgather across hosts is "
					 "one flat ring, not each host's "
					 "memory then across"},
	[WENV_THREAD_AFFINITY] = {"HOROVOD_THREAD_AFFINITY", WENV_T_TEXT, false,
				  0, 0, 0, NULL,
				  "the background thread's core: CORE (local "
				  "rank r on CORE+r) or one per local rank, "
				  "CORE,CORE,..."},
	[WENV_NUM_NCCL_STREAMS] = {"HOROVOD_NUM_NCCL_STREAMS", WENV_T_INT,
				   false, 1, 64, 1, NULL,
				   "NCCL streams per GPU: libhvd runs one"},
	[WENV_CONTROLLER] = {"HOROVOD_CONTROLLER", WENV_T_CHOICE, false, 0, 0,
			     WENV_DYNAMIC, engines,
			     "mpi, or tcp (gloo); default: mpi under mpirun"},
	[WENV_CPU_OPERATIONS] = {"HOROVOD_CPU_OPERATIONS", WENV_T_CHOICE, false,
				 0, 0, WENV_DYNAMIC, engines,
				 "as HOROVOD_CONTROLLER"},
	[WENV_MPI_ALLREDUCE] =
		{"HOROVOD_MPI_ALLREDUCE", WENV_T_INT, false, 0, 1, 1, NULL,
		 "0: over MPI, libhvd's ring, not MPI_Allreduce"},
	[WENV_SEGMENT_BYTES] = {"HVD_SEGMENT_BYTES", WENV_T_INT, false, 4096,
				1 << 30, WENV_DYNAMIC, NULL,
				"bytes reduced at a time (default: 512 KiB "
				"times the ranks)"},
	[WENV_SPIN_US] = {"HVD_SPIN_US", WENV_T_INT, false, 0, 1000000, 200,
			  NULL,
			  "most microseconds a wait spins before it sleeps"},
	[WENV_TRANSPORT_TIMEOUT_MS] =
		{"HVD_TRANSPORT_TIMEOUT_MS", WENV_T_INT, false, 100, 86400000,
		 30000, NULL, "milliseconds of silence that fail a peer"},
	[WENV_GLOO_TIMEOUT_SECONDS] =
		{"HOROVOD_GLOO_TIMEOUT_SECONDS", WENV_T_INT, false, 1, 86400,
		 30, NULL,
		 "horovodrun's: seconds of silence that fail a peer (where "
		 "HVD_TRANSPORT_TIMEOUT_MS is unset)"},
	[WENV_SHM] = {"HVD_SHM", WENV_T_INT, false, 0, 1, 1, NULL,
		      "0: the ranks of one host talk over TCP, not shared "
		      "memory"},
	[WENV_DYNAMIC_PROCESS_SETS] = {"HOROVOD_DYNAMIC_PROCESS_SETS",
				       WENV_T_INT, false, 0, 1, 0, NULL,
				       "1: process sets may be added and "
				       "removed after hvd_init"},
	[WENV_AUTOTUNE] = {"HOROVOD_AUTOTUNE", WENV_T_INT, false, 0, 1, 0, NULL,
			   "1: libhvd tunes the fusion threshold, the cycle "
			   "time and the shared-memory and hierarchical "
			   "choices while the job runs"},
	[WENV_AUTOTUNE_LOG] = {"HOROVOD_AUTOTUNE_LOG", WENV_T_TEXT, false, 0, 0,
			       0, NULL,
			       "rank 0 writes each autotuned setting and its "
			       "score there, as CSV"},
	[WENV_AUTOTUNE_WARMUP_SAMPLES] = {"HOROVOD_AUTOTUNE_WARMUP_SAMPLES",
					  WENV_T_INT, false, 0, 1000, 3, NULL,
					  "samples the autotuner does not "
					  "score, first"},
	[WENV_AUTOTUNE_STEPS_PER_SAMPLE] =
		{"HOROVOD_AUTOTUNE_STEPS_PER_SAMPLE", WENV_T_INT, false, 1,
		 100000, 10, NULL,
		 "steps the autotuner times for "
		 "one sample"},
	[WENV_AUTOTUNE_BAYES_OPT_MAX_SAMPLES] =
		{"HOROVOD_AUTOTUNE_BAYES_OPT_MAX_SAMPLES", WENV_T_INT, false, 1,
		 60, 20, NULL,
		 "fusion threshold and cycle time settings the autotuner "
		 "scores at most"},
	[WENV_AUTOTUNE_GAUSSIAN_PROCESS_NOISE] =
		{"HOROVOD_AUTOTUNE_GAUSSIAN_PROCESS_NOISE", WENV_T_NUMBER,
		 false, 0, 1, 0.8, NULL,
		 "the noise the autotuner's Gaussian process allows in its "
		 "scores (scaled)"},
	[WENV_BATCH_D2D_MEMCOPIES] = {"HOROVOD_BATCH_D2D_MEMCOPIES", WENV_T_INT,
				      false, 0, 1, 1, NULL,
				      "0: the GPU fusion buffer's copies one "
				      "tensor at a time, not one batched "
				      "call"},
};

int wenv_find(const char *name)
{
	int i;

	for (i = 0; i < WENV_COUNT; i++)
		if (strcmp(name, wenv_vars[i].name) == 0)
			return i;
	return -1;
}

bool wenv_parse(enum wenv_id v, const char *text, double *out)
{
	const struct wenv_var *w = &wenv_vars[v];
	char *end;
	double x;
	size_t i;

	if (text == NULL || text[0] == '\0')
		return false;
	/* strtoll and strtod would skip it; a number is all digits. */
	if (w->type != WENV_T_TEXT && isspace((unsigned char)text[0]))
		return false;
	switch (w->type) {
	case WENV_T_INT: {
		long long n;

		errno = 0;
		n = strtoll(text, &end, 10);
		if (errno != 0 || *end != '\0' || end == text ||
		    (double)n < w->min || (double)n > w->max)
			return false;
		*out = (double)n;
		return true;
	}
	case WENV_T_NUMBER:
		errno = 0;
		x = strtod(text, &end);
		if (errno != 0 || *end != '\0' || end == text || isnan(x) ||
		    x < w->min || x > w->max)
			return false;
		*out = x;
		return true;
	case WENV_T_CHOICE:
		for (i = 0; w->choices[i] != NULL; i++)
			if (strcasecmp(text, w->choices[i]) == 0) {
				*out = (double)i;
				return true;
			}
		return false;
	case WENV_T_TEXT:
		*out = 0;
		return true;
	}
	return false;
}

void wenv_describe(enum wenv_id v, char *buf, size_t len)
{
	const struct wenv_var *w = &wenv_vars[v];
	size_t i, off;

	switch (w->type) {
	case WENV_T_INT:
		snprintf(buf, len, "an integer from %.0f to %.0f", w->min,
			 w->max);
		break;
	case WENV_T_NUMBER:
		snprintf(buf, len, "a number from %g to %g", w->min, w->max);
		break;
	case WENV_T_CHOICE:
		off = (size_t)snprintf(buf, len, "one of");
		for (i = 0; w->choices[i] != NULL && off < len; i++)
			off += (size_t)snprintf(buf + off, len - off, "%s %s",
						i ? "," : "", w->choices[i]);
		break;
	case WENV_T_TEXT:
		snprintf(buf, len, "a non-empty value");
		break;
	}
}
