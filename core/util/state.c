/* util/state.c: the library's one mutable global (internal.h): the job as
 * hvd_init() found it, defined here, below every file that reads it. */
#include "util/internal.h"

/* Before hvd_init() and after hvd_shutdown(). */
#define FRESH_STATE                                                            \
	{                                                                      \
		.rank = -1, .size = -1, .local_rank = -1, .local_size = -1,    \
		.cross_rank = -1, .cross_size = -1,                            \
	}

const struct hvd__state hvd__fresh_state = FRESH_STATE;
struct hvd__state hvd__g = FRESH_STATE;
