/* gpu/engine.c: the engine's GPU side, started at the first GPU
 * collective (every rank gets there together: every rank runs the same
 * responses in the same order), for every collective of ops/. */
#include "engine/autotune.h"
#include "engine/engine.h"

int hvd__gpu_engine(struct hvd__engine *e)
{
	enum hvd__gpu_hier hier = HVD__HIER_NO;
	int rc;

	e->gpu_why[0] = '\0';
	if (e->gpu != NULL)
		return HVD_OK;
	/* The job's choice (the tuner changes it only once the engine runs
	 * split); else split by host for the tuner, only while it tunes. */
	if (e->k.hier_allreduce)
		hier = HVD__HIER_ASKED;
	else if (e->tune != NULL && e->tune->tune_gpu_hier &&
		 e->tune->now.tuning)
		hier = HVD__HIER_TUNER;
	rc = hvd__gpu_start(&e->gpu, &e->comm, (size_t)e->k.fusion_threshold,
			    hier, e->k.batch_copies, e->gpu_why,
			    sizeof(e->gpu_why));
	if (rc != HVD_OK)
		hvd__error("%s", e->gpu_why);
	else if (e->tune != NULL)
		e->tune->gpu_split = hvd__gpu_split(e->gpu);
	return rc;
}
