/* engine/knobs.c: the engine's settings, read once when the engine
 * starts, each through the worker environment's contract (util/env.c). */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "algo/ring.h"
#include "proto/wire.h"

/* The settings every rank must share, for the ranks to meet: the batches
 * they fuse, the response cache's bits, the ring's segments, the
 * hierarchical allgather, MPI_Allreduce or the ring, process sets added
 * later, and the autotuner's run. */
static const enum wenv_id job_wide[] = {
	WENV_FUSION_THRESHOLD,
	WENV_CACHE_CAPACITY,
	WENV_SEGMENT_BYTES,
	WENV_HIERARCHICAL_ALLGATHER,
	WENV_HIERARCHICAL_ALLREDUCE,
	WENV_MPI_ALLREDUCE,
	WENV_DYNAMIC_PROCESS_SETS,
	WENV_AUTOTUNE,
	WENV_AUTOTUNE_WARMUP_SAMPLES,
	WENV_AUTOTUNE_STEPS_PER_SAMPLE,
	WENV_AUTOTUNE_BAYES_OPT_MAX_SAMPLES,
	WENV_AUTOTUNE_GAUSSIAN_PROCESS_NOISE,
};
#define NJOB_WIDE (sizeof(job_wide) / sizeof(job_wide[0]))
/* The longest value of one that is taken from rank 0. */
#define JOB_WIDE_MAX 256

static bool same_text(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/* This rank's value of v against rank 0's (NULL: unset): a difference is
 * said, and rank 0's taken. */
static int agree_setting(const struct hvd__comm *c, enum wenv_id v,
			 const char *theirs)
{
	const char *name = wenv_vars[v].name, *mine = hvd__env_text(v);

	if (same_text(mine, theirs))
		return HVD_OK;
	hvd__warn(
		"%s is %s%s%s on this rank (%d) but %s%s%s on rank 0: every rank runs on rank 0's",
		name, mine ? "'" : "", mine ? mine : "unset", mine ? "'" : "",
		c->rank, theirs ? "'" : "", theirs ? theirs : "unset",
		theirs ? "'" : "");
	return hvd__env_agree(v, theirs);
}

int hvd__knobs_agree(const struct hvd__comm *c)
{
	/* Rank 0's values, behind a byte saying whether it could share
	 * them: one broadcast of a fixed size. */
	uint8_t buf[1 + NJOB_WIDE * (4 + JOB_WIDE_MAX)];
	struct wire_w w;
	struct wire_r r;
	size_t i;
	int rc;

	if (c->size < 2)
		return HVD_OK;
	memset(buf, 0, sizeof(buf));
	wire_w_fixed(&w, buf, sizeof(buf));
	wire_put_u8(&w, 1);
	for (i = 0; c->rank == 0 && i < NJOB_WIDE; i++) {
		const char *mine = hvd__env_text(job_wide[i]);

		if (mine != NULL && strlen(mine) > JOB_WIDE_MAX) {
			hvd__error("%s is over %d bytes",
				   wenv_vars[job_wide[i]].name, JOB_WIDE_MAX);
			buf[0] = 0;
			break;
		}
		wire_put_str(&w, mine);
	}
	rc = hvd__ring_broadcast(c, buf, sizeof(buf), 0);
	wire_r_init(&r, buf, sizeof(buf));
	if (rc == HVD_OK && wire_get_u8(&r) != 1) {
		if (c->rank != 0)
			hvd__error(
				"rank 0 could not share its settings (its log says which)");
		rc = HVD_EINVAL;
	}
	for (i = 0; rc == HVD_OK && i < NJOB_WIDE; i++) {
		char *theirs = wire_get_str(&r, JOB_WIDE_MAX);

		rc = r.bad ? HVD_EINVAL : agree_setting(c, job_wide[i], theirs);
		free(theirs);
	}
	return rc;
}

int hvd__knobs_read(struct hvd__knobs *k, int size)
{
	long fusion, cache, warn, shut, disable, mark, seg, spin, shm, gather,
		hier, mpi;
	bool given;
	int rc;

	rc = hvd__env_long(WENV_FUSION_THRESHOLD, &fusion);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_CACHE_CAPACITY, &cache);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_STALL_CHECK_TIME, &warn);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_STALL_SHUTDOWN_TIME, &shut);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_STALL_CHECK_DISABLE, &disable);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_TIMELINE_MARK_CYCLES, &mark);
	if (rc == HVD_OK)
		rc = hvd__env(WENV_CYCLE_TIME, &k->cycle_ms);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_SEGMENT_BYTES, &seg);
	/* The most a wait spins before it blocks (util/wait.h). */
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_SPIN_US, &spin);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_SHM, &shm);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_HIERARCHICAL_ALLGATHER, &gather);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_HIERARCHICAL_ALLREDUCE, &hier);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_MPI_ALLREDUCE, &mpi);
	if (rc != HVD_OK)
		return rc;
	/* Each ring chunk of a segment about 512 KiB: in cache, yet large
	 * enough that a step is not all latency. */
	given = seg >= 0;
	if (!given)
		seg = (long)hvd__knobs_segment(size);
	k->fusion_threshold = fusion;
	k->cache_cap = cache;
	k->stall_warn_s = warn;
	k->stall_shutdown_s = shut;
	k->stall_check = !disable;
	k->mark_cycles = mark != 0;
	k->segment_given = given;
	k->segment = (size_t)seg;
	k->spin_us = (int)spin;
	k->shm = shm != 0;
	k->hier_allgather = gather != 0;
	k->hier_allreduce = hier != 0;
	k->transport_allreduce = mpi != 0;
	k->shm_allreduce = true;
	k->cache_off = false;
	return HVD_OK;
}

size_t hvd__knobs_segment(int size)
{
	return (size_t)(512L << 10) * (size_t)(size > 1 ? size : 2);
}
