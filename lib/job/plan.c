/* plan.c: turns a host list and -np into one rank record per worker,
 * following Horovod's rank, local rank and cross rank assignment. */
#include "job/plan.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int hl_plan_counts(struct hl_plan *plan, const int *count, size_t nhosts,
		   char **cause)
{
	size_t h;
	int r = 0, np = 0;

	plan->ranks = NULL;
	plan->size = 0;
	plan->nhosts_used = 0;
	for (h = 0; h < nhosts; h++)
		np += count[h];
	plan->ranks = calloc((size_t)(np > 0 ? np : 1), sizeof(*plan->ranks));
	if (plan->ranks == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	/* Fill hosts in order. */
	for (h = 0; h < nhosts; h++) {
		int s;

		for (s = 0; s < count[h]; s++, r++) {
			plan->ranks[r].rank = r;
			plan->ranks[r].host = h;
			plan->ranks[r].local_rank = s;
			plan->ranks[r].host_rank = (int)plan->nhosts_used;
		}
		plan->nhosts_used += count[h] > 0;
	}
	plan->size = np;
	for (r = 0; r < plan->size; r++) {
		struct hl_rank *rk = &plan->ranks[r];
		int cross_rank = 0, cross_size = 0;

		rk->local_size = count[rk->host];
		/* Hosts that have a worker with this local rank, in order. */
		for (h = 0; h < nhosts; h++) {
			if (count[h] <= rk->local_rank)
				continue;
			if (h < rk->host)
				cross_rank++;
			cross_size++;
		}
		rk->cross_rank = cross_rank;
		rk->cross_size = cross_size;
	}
	return HL_OK;
}

int hl_plan_init(struct hl_plan *plan, const struct hl_hostlist *hosts, long np,
		 const char *said, char **cause)
{
	long total = hl_hosts_total_slots(hosts), left = np;
	char dflt[32];
	int *count;
	size_t h;
	int rc;

	plan->ranks = NULL;
	plan->size = 0;
	plan->nhosts_used = 0;
	if (np < 1)
		return hl_fail(cause, HL_EINVAL, "-np must be at least 1");
	if (np > total) {
		const struct hl_host *bare = NULL;
		char hint[320] = "";

		/* mpirun's habit: -H a,b for a host's every core. */
		for (h = 0; h < hosts->n && bare == NULL; h++)
			if (hosts->v[h].bare)
				bare = &hosts->v[h];
		if (bare != NULL && hosts->n == 1) {
			bool v6 = strchr(bare->name, ':') != NULL;

			snprintf(hint, sizeof(hint),
				 ": a host given without ':N' has one slot "
				 "(%s%s%s:%ld for %ld)",
				 v6 ? "[" : "", bare->name, v6 ? "]" : "", np,
				 np);
		} else if (bare != NULL) {
			snprintf(hint, sizeof(hint),
				 " (a host given without ':N' has one slot)");
		}
		snprintf(dflt, sizeof(dflt), "-np %ld", np);
		return hl_fail(
			cause, HL_EINVAL,
			"%s is more than the %ld slot%s of the host list%s",
			said != NULL ? said : dflt, total,
			total == 1 ? "" : "s", hint);
	}
	count = calloc(hosts->n, sizeof(*count));
	if (count == NULL)
		return hl_fail(cause, HL_ENOMEM, "out of memory");
	for (h = 0; h < hosts->n; h++) {
		count[h] = (int)(left < hosts->v[h].slots ? left
							  : hosts->v[h].slots);
		left -= count[h];
	}
	rc = hl_plan_counts(plan, count, hosts->n, cause);
	free(count);
	return rc;
}

void hl_plan_close(struct hl_plan *plan)
{
	free(plan->ranks);
	plan->ranks = NULL;
	plan->size = 0;
}
