/* buffers.c: see buffers.h. */
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include "algo/buffers.h"
#include "util/internal.h"

/* Results at least this large get transparent huge pages. */
#define HUGE_RESULT (4u << 20)

int hvd__fusion_reserve(struct hvd__buffers *b, size_t bytes)
{
	size_t cap = hvd__grow_size(b->cap, bytes, b->limit);
	char *f;

	if (cap == b->cap)
		return HVD_OK;
	f = realloc(b->fusion, cap);
	if (f == NULL)
		return HVD_ENOMEM;
	b->fusion = f;
	b->cap = cap;
	return HVD_OK;
}

char *hvd__scratch(struct hvd__buffers *b, size_t bytes, bool *own)
{
	*own = bytes > b->limit;
	if (*own)
		return hvd__result_alloc(bytes);
	return hvd__fusion_reserve(b, bytes + 1) == HVD_OK ? b->fusion : NULL;
}

void hvd__buffers_free(struct hvd__buffers *b)
{
	free(b->fusion);
	b->fusion = NULL;
	b->cap = 0;
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
