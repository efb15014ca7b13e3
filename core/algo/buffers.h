/* buffers.h: the engine's working memory (Horovod's fusion buffer
 * manager): the fusion buffer, the scratch a collective borrows from it,
 * and the results that callers own. One per engine (engine.h); the
 * executor (engine/fusion.c), the collectives (ops/) and the
 * hierarchical allgather (hier.h) use it. */
#ifndef HVD_BUFFERS_H
#define HVD_BUFFERS_H

#include <stdbool.h>
#include <stddef.h>

struct hvd__buffers {
	char *fusion; /* the fusion buffer, when the transport needs one */
	size_t cap;
	size_t limit; /* the fusion threshold: growth is capped here */
};

/* The fusion buffer, at least bytes long. */
int hvd__fusion_reserve(struct hvd__buffers *b, size_t bytes);
/* A working buffer of bytes for one collective: up to the fusion
 * threshold, the fusion buffer (kept, so its pages fault in once, not on
 * every call: a fresh 1 MiB costs more in faults than its transfer);
 * above it, one of its own that the caller frees (*own). NULL: out of
 * memory. */
char *hvd__scratch(struct hvd__buffers *b, size_t bytes, bool *own);
/* A result buffer the caller will own and free() (allgather, alltoall). */
void *hvd__result_alloc(size_t bytes);
/* Free the fusion buffer. */
void hvd__buffers_free(struct hvd__buffers *b);

#endif
