/* engine/engine.c: the engine's own state (struct hvd__engine) made and
 * freed: the join vectors, the response cache, what the coordinator
 * knows and the fusion buffer. The transport, the hosts' segment, the
 * GPU and the timeline are the caller's (runtime.c, or a test that runs
 * several engines as threads of one process). */
#include <stdlib.h>

#include "engine/engine.h"

int hvd__engine_open(struct hvd__engine *e, int size)
{
	e->buf.limit = (size_t)e->k.fusion_threshold;
	e->joined = calloc((size_t)size, 1);
	e->coord_joined = calloc((size_t)size, 1);
	if (e->joined == NULL || e->coord_joined == NULL ||
	    hvd__cache_new(e) != HVD_OK)
		return HVD_ENOMEM; /* hvd__engine_close frees the rest */
	return HVD_OK;
}

void hvd__engine_close(struct hvd__engine *e)
{
	hvd__cache_free(e);
	hvd__negotiate_free(e);
	free(e->joined);
	free(e->coord_joined);
	e->joined = e->coord_joined = NULL;
	hvd__buffers_free(&e->buf);
}
