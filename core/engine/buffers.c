/* engine/buffers.c: the engine's working memory: the fusion buffer, the
 * scratch a collective borrows from it, and the results that callers own
 * (Horovod's fusion buffer manager). Below the executor (fusion.c) and
 * the collectives (ops/), which both use it. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "engine/engine.h"

/* Results at least this large get transparent huge pages. */
#define HUGE_RESULT (4u << 20)

int hvd__fusion_reserve(struct hvd__engine *e, size_t bytes)
{
	size_t cap = hvd__grow_size(e->fusion_cap, bytes,
				    (size_t)e->k.fusion_threshold);
	char *f;

	if (cap == e->fusion_cap)
		return HVD_OK;
	f = realloc(e->fusion, cap);
	if (f == NULL)
		return HVD_ENOMEM;
	e->fusion = f;
	e->fusion_cap = cap;
	return HVD_OK;
}

char *hvd__scratch(struct hvd__engine *e, size_t bytes, bool *own)
{
	*own = bytes > (size_t)e->k.fusion_threshold;
	if (*own)
		return hvd__result_alloc(bytes);
	return hvd__fusion_reserve(e, bytes + 1) == HVD_OK ? e->fusion : NULL;
}

void *hvd__result_alloc(size_t bytes)
{
	/* One byte more: malloc(0) may return NULL. */
	char *p = malloc(bytes + 1);
	uintptr_t a, z;

	if (p == NULL || bytes < HUGE_RESULT)
		return p;
	/* A large result is written once, in full: fault it in 2 MiB pages
	 * where the kernel offers them (each 4 KiB fault costs more than
	 * its bytes take to arrive), on the whole pages inside it. */
	a = ((uintptr_t)p + 4095) & ~(uintptr_t)4095;
	z = ((uintptr_t)p + bytes) & ~(uintptr_t)4095;
	if (z > a)
		madvise((void *)a, z - a, MADV_HUGEPAGE);
	return p;
}
