/* plan.c: turns a host list and -np into one rank record per worker,
 * following Horovod's rank, local rank and cross rank assignment. */
#include "plan.h"

#include <stdio.h>
#include <stdlib.h>

int hl_plan_init(struct hl_plan *plan, const struct hl_hostlist *hosts, long np,
		 char **cause)
{
	long total = hl_hosts_total_slots(hosts);
	int *used = NULL;
	size_t h;
	int r, rc = HL_OK;

	plan->ranks = NULL;
	plan->size = 0;
	plan->nhosts_used = 0;
	if (np < 1)
		return hl_fail(cause, HL_EINVAL, "-np must be at least 1");
	if (np > total)
		return hl_fail(
			cause, HL_EINVAL,
			"-np %ld is more than the %ld slots of the host list",
			np, total);
	plan->ranks = calloc((size_t)np, sizeof(*plan->ranks));
	used = calloc(hosts->n, sizeof(*used));
	if (plan->ranks == NULL || used == NULL) {
		rc = hl_fail(cause, HL_ENOMEM, "out of memory");
		goto out_free_used;
	}
	/* Fill hosts in order; count the workers each host gets. */
	r = 0;
	for (h = 0; h < hosts->n && r < np; h++) {
		int s;

		for (s = 0; s < hosts->v[h].slots && r < np; s++, r++) {
			plan->ranks[r].rank = r;
			plan->ranks[r].host = h;
			plan->ranks[r].local_rank = s;
		}
		used[h] = s;
		plan->nhosts_used++;
	}
	plan->size = (int)np;
	for (r = 0; r < plan->size; r++) {
		struct hl_rank *rk = &plan->ranks[r];
		int cross_rank = 0, cross_size = 0;

		rk->local_size = used[rk->host];
		/* Hosts that have a worker with this local rank, in order. */
		for (h = 0; h < hosts->n; h++) {
			if (used[h] <= rk->local_rank)
				continue;
			if (h < rk->host)
				cross_rank++;
			cross_size++;
		}
		rk->cross_rank = cross_rank;
		rk->cross_size = cross_size;
	}
out_free_used:
	free(used);
	if (rc != HL_OK)
		hl_plan_close(plan);
	return rc;
}

void hl_plan_close(struct hl_plan *plan)
{
	free(plan->ranks);
	plan->ranks = NULL;
	plan->size = 0;
}
