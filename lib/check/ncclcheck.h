/* ncclcheck.h: `hvdrun check --nccl`, after the hosts' checks: one rank a
 * GPU on every usable host that has GPUs and NCCL runs hvd-ncclcheck (a
 * libhvd program) as one job, with NCCL_DEBUG=INFO. Its ranks say which
 * stage they reached and the result of a small allreduce and of a timed
 * 64 MiB allreduce; NCCL's own lines say which transport it chose
 * between every pair of ranks, which network and why it failed. The job
 * is bounded in time: a rank that has not finished by then is reported
 * with the stage it was in.
 *
 * The pure steps are here (which hosts run how many ranks, the lines of
 * the job's output, the findings); hl_ncc_run runs the job's launcher in
 * a child process whose output comes back through a pipe. */
#ifndef HL_NCCLCHECK_H
#define HL_NCCLCHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "check/netplan.h"
#include "util/util.h"

/* A line of the job's output longer than this is taken in pieces. */
#define HL_NCC_LINE_MAX 16384

/* A worker's stages, in order; a rank reports each as it starts it. */
enum hl_ncc_stage {
	HL_NCC_NONE,	/* nothing heard from it */
	HL_NCC_INIT,	/* hvd_init: the job's connections */
	HL_NCC_GPU,	/* its GPU: the CUDA context, the buffers */
	HL_NCC_NCCL,	/* the first allreduce: NCCL's start */
	HL_NCC_MEASURE, /* the timed allreduces */
	HL_NCC_DONE,
};

struct hl_ncc_rank {
	size_t host; /* index in the check's hosts */
	int stage;   /* enum hl_ncc_stage */
	bool small_ok;
	char *fail;   /* what the worker said went wrong, or NULL */
	char *warn;   /* NCCL's first WARN line, or NULL */
	char *device; /* "GPU 0 (bus 0000:3b:00.0)", as the worker said */
};

struct hl_ncc_host {
	int nranks; /* ranks it runs: its GPUs; 0: none */
	int first_rank;
	bool joined;		  /* every rank finished with a right result */
	char *reason;		  /* why it ran none or did not join, or NULL */
	struct hl_strvec within;  /* transports between its own ranks */
	struct hl_strvec between; /* from its ranks to other hosts' */
	struct hl_strvec network; /* NCCL's network and its devices */
};

struct hl_ncclcheck {
	char *not_run; /* why no job ran (no host can), or NULL */
	size_t nhosts; /* the check's hosts, in its order */
	struct hl_ncc_host *h;
	int nranks;
	struct hl_ncc_rank *r;
	int timeout_ms;
	bool ran;	 /* a job was started */
	bool timed_out;	 /* the job was ended at the bound */
	int status;	 /* the job's exit status; -1: ended by a signal */
	double seconds;	 /* the job's, from start to end */
	long long bytes; /* of the timed allreduce */
	int iters;
	double algbw_gbs, busbw_gbs; /* rank 0's, GB/s; < 0: none */
	struct hl_strvec launcher;   /* hvdrun's own lines about the job */
};

/* Which hosts run how many ranks: every usable host of nc with NCCL and
 * CUDA devices, one rank each (in the check's host order, so ranks are
 * numbered host by host); the others get a reason. not_run is set when
 * no host can run one. HL_ENOMEM. */
int hl_ncc_plan(struct hl_ncclcheck *k, const struct hl_netcheck *nc,
		int timeout_ms);
/* Take one line of the job's output: a worker's ("[R]<stdout>:text" or
 * <stderr>) or the launcher's own. */
void hl_ncc_take_line(struct hl_ncclcheck *k, const char *line);
/* After the job: which hosts joined, each host's transports summed up,
 * and a finding (HL_NCF_NCCL) for every host that should have joined and
 * did not, with the reason. HL_ENOMEM. */
int hl_ncc_judge(struct hl_ncclcheck *k, struct hl_netcheck *nc);
/* A stage's name in the worker's lines ("nccl"), and what it means for
 * people ("NCCL's start ..."). */
const char *hl_ncc_stage_name(int stage);
const char *hl_ncc_stage_text(int stage);
void hl_ncc_close(struct hl_ncclcheck *k);

/* Run launch(arg) in a child process (its exit status the child's),
 * stdout and stderr into a pipe whose every line goes to
 * hl_ncc_take_line; at k->timeout_ms the child gets SIGTERM (an hvdrun
 * job ends its workers), and SIGKILL grace_ms later. Sets k->status,
 * timed_out and seconds. HL_ESYS when it could not start. */
int hl_ncc_run(struct hl_ncclcheck *k, int (*launch)(void *), void *arg,
	       int grace_ms, char **cause);

#endif
