/* knobs.c: the engine's settings, read once when the engine starts, and
 * the one reader of the worker environment: every variable through its
 * contract in proto/worker_env.h (Horovod's names, units and defaults,
 * and libhvd's own HVD_*). */
#include <stdlib.h>

#include "engine.h"

int hvd__env(enum wenv_id v, double *out)
{
	const char *text = getenv(wenv_vars[v].name);
	char want[160];

	if (text == NULL || *text == '\0') {
		*out = wenv_vars[v].def;
		return HVD_OK;
	}
	if (wenv_parse(v, text, out))
		return HVD_OK;
	wenv_describe(v, want, sizeof(want));
	hvd__error("%s='%s' is not %s", wenv_vars[v].name, text, want);
	return HVD_EINVAL;
}

int hvd__env_long(enum wenv_id v, long *out)
{
	double d;
	int rc = hvd__env(v, &d);

	if (rc == HVD_OK)
		*out = (long)d;
	return rc;
}

int hvd__knobs_read(struct hvd__knobs *k, int size)
{
	long fusion, cache, warn, shut, disable, mark, seg, spin, shm, gather;
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
	/* Each ring chunk of a segment about 512 KiB: in cache, yet large
	 * enough that a step is not all latency. */
	if (rc == HVD_OK && seg < 0)
		seg = (512L << 10) * (size > 1 ? size : 2);
	/* A wait on a peer retries this long, yielding, before it sleeps: a
	 * sleeping CPU is slow to wake. */
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_SPIN_US, &spin);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_SHM, &shm);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_HIERARCHICAL_ALLGATHER, &gather);
	if (rc != HVD_OK)
		return rc;
	k->fusion_threshold = fusion;
	k->cache_cap = cache;
	k->stall_warn_s = warn;
	k->stall_shutdown_s = shut;
	k->stall_check = !disable;
	k->mark_cycles = mark != 0;
	k->segment = (size_t)seg;
	k->spin_us = (int)spin;
	k->shm = shm != 0;
	k->hier_allgather = gather != 0;
	return HVD_OK;
}

int hvd__transport_timeout_ms(void)
{
	long ms;

	/* Every cycle moves bytes between all ranks, even when idle: two
	 * seconds of silence mean a peer or its link is gone. */
	if (hvd__env_long(WENV_TRANSPORT_TIMEOUT_MS, &ms) != HVD_OK)
		ms = (long)wenv_vars[WENV_TRANSPORT_TIMEOUT_MS].def;
	return (int)ms;
}
