/* engine/stall.c: the stall check (Horovod's stall inspector). A tensor
 * that some ranks submitted and others not is named, with the missing
 * ranks, after HOROVOD_STALL_CHECK_TIME_SECONDS, and fails after
 * HOROVOD_STALL_SHUTDOWN_TIME_SECONDS if that is set. */
#include <stdio.h>

#include "engine/coord.h"

bool hvd__stall_uncache(const struct hvd__engine *e, const struct hvd__req *r,
			long long now)
{
	return r->cache >= 0 && !r->reported &&
	       (now - r->enqueued_us) / 1000000 >= e->k.stall_warn_s;
}

bool hvd__stall_round_due(struct hvd__engine *e, long long now)
{
	if (e->comm.rank != 0 || e->coord == NULL || !e->k.stall_check ||
	    now - e->last_stall_us < 1000000)
		return false;
	e->last_stall_us = now;
	return true;
}

/* "1, 3" : the ranks that have neither submitted p nor joined. */
static void missing_ranks(const struct hvd__engine *e,
			  const struct hvd__pending *p, char *buf, size_t len)
{
	size_t off = 0;
	int r;

	buf[0] = '\0';
	for (r = 0; r < e->comm.size && off + 12 < len; r++)
		if (!p->submitted[r] && !e->coord_joined[r])
			off += (size_t)snprintf(buf + off, len - off, "%s%d",
						off ? ", " : "",
						hvd__job_rank(e, r));
	if (e->set != 0 && off + 24 < len)
		snprintf(buf + off, len - off, " (of process set %d)", e->set);
}

struct hvd__pending *hvd__stall_due(const struct hvd__engine *e, long long now,
				    char *msg, size_t len)
{
	struct hvd__pending *p;
	char missing[256];

	for (p = e->coord; p != NULL; p = p->next) {
		long long waited_s = (now - p->first_us) / 1000000;
		bool warn = !p->warned && waited_s >= e->k.stall_warn_s,
		     fail = e->k.stall_shutdown_s > 0 &&
			    waited_s >= e->k.stall_shutdown_s;

		if (p->ready || (!warn && !fail))
			continue; /* held for its group, or not stalled */
		missing_ranks(e, p, missing, sizeof(missing));
		if (warn) {
			hvd__warn(
				"stall: tensor '%s' was submitted by %d of %d ranks %lld s ago; missing: ranks %s",
				p->name, p->nsubmitted, e->comm.size, waited_s,
				missing);
			p->warned = true;
		}
		if (!fail)
			continue;
		snprintf(msg, len,
			 "stalled: tensor '%s' was never submitted by ranks %s",
			 p->name, missing);
		return p;
	}
	return NULL;
}
