/* plan.h: the rank plan. Horovod's assignment: hosts are filled in the
 * order given; a worker's local rank is its slot index on its host; its
 * cross rank is the position of its host among the hosts that have a worker
 * with that local rank. */
#ifndef HL_PLAN_H
#define HL_PLAN_H

#include <stddef.h>

#include "config/hosts.h"

struct hl_rank {
	int rank;
	size_t host; /* index into the host list */
	int local_rank;
	int local_size;
	int cross_rank;
	int cross_size;
	int host_rank; /* the host's index among the hosts with a worker */
};

struct hl_plan {
	struct hl_rank *ranks;
	int size;
	size_t nhosts_used; /* hosts with at least one worker */
};

/* Plan np workers over hosts. np must be 1..total slots; errors name it
 * as said ("-n 3", "np = 3 (job.ini:2)"; NULL: "-np N"). */
int hl_plan_init(struct hl_plan *plan, const struct hl_hostlist *hosts, long np,
		 const char *said, char **cause);
/* Plan count[h] workers on host h, for each of nhosts hosts in order (an
 * elastic job's next generation: its surviving workers, host by host). */
int hl_plan_counts(struct hl_plan *plan, const int *count, size_t nhosts,
		   char **cause);
void hl_plan_close(struct hl_plan *plan);

#endif
