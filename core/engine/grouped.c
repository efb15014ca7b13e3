/* grouped.c: the groups of hvd_group_start() and hvd_group_end(),
 * Horovod's grouped collectives: the requests a thread submits between
 * them are held here; at the end they get the group's identity, so that
 * every rank's engine runs them together, and queue.c queues them at
 * once. Below queue.c: it calls nothing of it. */
#include <stdint.h>
#include <stdlib.h>

#include "engine/engine.h"

/* The requests of this thread's open group, in submission order. */
static __thread struct {
	bool open;
	struct hvd__req *head, **tail;
	uint32_t n;
} group;

bool hvd__in_group(void)
{
	return group.open;
}

bool hvd__group_hold(struct hvd__req *r)
{
	if (!group.open)
		return false;
	*group.tail = r;
	group.tail = &r->next;
	group.n++;
	return true;
}

bool hvd__group_holds(const hvd_handle *h)
{
	const struct hvd__req *r;

	for (r = group.head; group.open && r != NULL; r = r->next)
		if (r->h == h)
			return true;
	return false;
}

HVD_EXPORT int hvd_group_start(void)
{
	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	if (group.open) {
		hvd__set_error("hvd_group_start: a group is already open on "
			       "this thread");
		return HVD_EINVAL;
	}
	group.open = true;
	group.head = NULL;
	group.tail = &group.head;
	group.n = 0;
	return HVD_OK;
}

/* FNV-1a of s, 64 bits. */
static uint64_t name_hash(const char *s)
{
	uint64_t h = 14695981039346656037ull;

	for (; *s != '\0'; s++)
		h = (h ^ (uint8_t)*s) * 1099511628211ull;
	return h;
}

int hvd__group_end(struct hvd__req **list)
{
	struct hvd__req *r;
	uint64_t hash = 0;

	*list = NULL;
	if (!group.open) {
		hvd__set_error("hvd_group_end without hvd_group_start");
		return HVD_EINVAL;
	}
	group.open = false;
	*list = group.head;
	for (r = *list; r != NULL; r = r->next)
		if (r->set != (*list)->set) {
			hvd__set_error("hvd_group_end: a group's collectives "
				       "run in one process set (%d and %d)",
				       (*list)->set, r->set);
			return HVD_EINVAL;
		}
	/* The group's identity, the same on every rank that groups the same
	 * names, in any order; never 0. */
	for (r = *list; r != NULL; r = r->next)
		hash += name_hash(r->name) * 0x9e3779b97f4a7c15ull;
	hash = hash * 31 + group.n;
	hash |= 1;
	for (r = *list; r != NULL; r = r->next) {
		r->m.group = hash;
		r->m.group_n = group.n;
	}
	return HVD_OK;
}
