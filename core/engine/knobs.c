/* engine/knobs.c: the engine's settings, read once when the engine
 * starts, each through the worker environment's contract (util/env.c). */
#include "engine/engine.h"

int hvd__knobs_read(struct hvd__knobs *k, int size)
{
	long fusion, cache, warn, shut, disable, mark, seg, spin, shm, gather,
		hier;
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
	k->shm_allreduce = true;
	k->cache_off = false;
	return HVD_OK;
}

size_t hvd__knobs_segment(int size)
{
	return (size_t)(512L << 10) * (size_t)(size > 1 ? size : 2);
}
