/* util/state.c: the library's one mutable global (internal.h): the job as
 * hvd_init() found it, defined here, below every file that reads it;
 * whether this process is a fork of one that ran hvd_init(); and whether
 * an elastic world is over. */
#include "util/internal.h"

#include <stdatomic.h>

/* Before hvd_init() and after hvd_shutdown(). */
#define FRESH_STATE                                                            \
	{                                                                      \
		.rank = -1, .size = -1, .local_rank = -1, .local_size = -1,    \
		.cross_rank = -1, .cross_size = -1,                            \
	}

const struct hvd__state hvd__fresh_state = FRESH_STATE;
struct hvd__state hvd__g = FRESH_STATE;
int hvd__fork_of = -1;

void hvd__mark_fork(void)
{
	if (hvd__g.initialized && hvd__fork_of < 0)
		hvd__fork_of = hvd__g.rank;
}

int hvd__fork_refuse(void)
{
	hvd__set_error("this process is a fork of rank %d's, which ran "
		       "hvd_init(): a fork has none of libhvd's threads or "
		       "connections; run collectives in the rank's own "
		       "process",
		       hvd__fork_of);
	return HVD_ENOTSUP;
}

static _Atomic bool world_over;

void hvd__world_begin(void)
{
	atomic_store(&world_over, false);
}

void hvd__world_end(void)
{
	atomic_store(&world_over, true);
}

bool hvd__world_over(void)
{
	return atomic_load(&world_over);
}
