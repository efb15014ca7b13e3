/* knobs.c: the engine's settings, Horovod's names, units and defaults
 * (and libhvd's own HVD_*), read once when the engine starts. */
#include <stdlib.h>

#include "engine.h"

/* HOROVOD_CYCLE_TIME is a number of milliseconds, not always whole. */
static int read_cycle_ms(double *out)
{
	const char *cycle = getenv("HOROVOD_CYCLE_TIME");
	char *end;
	double v;

	*out = 1.0;
	if (cycle == NULL || *cycle == '\0')
		return HVD_OK;
	v = strtod(cycle, &end);
	if (*end != '\0' || v < 0 || v > 10000) {
		hvd__error(
			"HOROVOD_CYCLE_TIME='%s' is not a number of milliseconds from 0 to 10000",
			cycle);
		return HVD_EINVAL;
	}
	*out = v;
	return HVD_OK;
}

int hvd__knobs_read(struct hvd__knobs *k, int size)
{
	long fusion, cache, warn, shut, disable, mark, seg, spin;
	int rc;

	rc = hvd__env_int("HOROVOD_FUSION_THRESHOLD", 128L << 20, 0, 1L << 40,
			  &fusion);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_CACHE_CAPACITY", 1024, 0, 1 << 20,
				  &cache);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_STALL_CHECK_TIME_SECONDS", 60, 1,
				  1L << 30, &warn);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_STALL_SHUTDOWN_TIME_SECONDS", 0, 0,
				  1L << 30, &shut);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_STALL_CHECK_DISABLE", 0, 0, 1,
				  &disable);
	if (rc == HVD_OK)
		rc = hvd__env_int("HOROVOD_TIMELINE_MARK_CYCLES", 0, 0, 1,
				  &mark);
	if (rc == HVD_OK)
		rc = read_cycle_ms(&k->cycle_ms);
	/* Each ring chunk of a segment about 512 KiB: in cache, yet large
	 * enough that a step is not all latency. */
	if (rc == HVD_OK)
		rc = hvd__env_int("HVD_SEGMENT_BYTES",
				  (512L << 10) * (size > 1 ? size : 2), 4096,
				  1L << 30, &seg);
	/* A wait on a peer retries this long, yielding, before it sleeps: a
	 * sleeping CPU is slow to wake. */
	if (rc == HVD_OK)
		rc = hvd__env_int("HVD_SPIN_US", 200, 0, 1000000, &spin);
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
	return HVD_OK;
}
