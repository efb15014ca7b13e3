/* cache.c: the response cache (HOROVOD_CACHE_CAPACITY entries). A tensor
 * the coordinator has answered once gets an entry, the same on every
 * rank; from then on a bit per entry in each cycle's agreement says
 * whether it is ready everywhere, and the coordinator is not asked. */
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"

int hvd__cache_new(struct hvd__engine *e)
{
	e->cache = calloc((size_t)e->k.cache_cap + 1, sizeof(*e->cache));
	return e->cache != NULL ? HVD_OK : HVD_ENOMEM;
}

void hvd__cache_free(struct hvd__engine *e)
{
	long i;

	for (i = 0; e->cache != NULL && i < e->k.cache_cap; i++)
		free(e->cache[i].name);
	free(e->cache);
	e->cache = NULL;
	e->cache_used = 0;
}

int hvd__cache_find(const struct hvd__engine *e, const char *name,
		    const struct hvd__meta *m)
{
	long i;

	for (i = 0; i < e->k.cache_cap; i++)
		if (e->cache[i].name != NULL &&
		    strcmp(e->cache[i].name, name) == 0 &&
		    (m == NULL || hvd__meta_equal(&e->cache[i].m, m)))
			return (int)i;
	return -1;
}

void hvd__cache_assign(const struct hvd__engine *e, struct hvd__resp *v,
		       size_t n)
{
	size_t i, j;
	long k, next = 0; /* the free entries given this cycle are below */

	for (i = 0; i < n; i++) {
		struct hvd__resp *x = &v[i];

		if (x->error != NULL || e->k.cache_cap == 0 || e->k.cache_off ||
		    x->m.type == HVD__REQ_JOIN ||
		    x->m.type == HVD__REQ_PROCESS_SET)
			continue;
		x->cache = hvd__cache_find(e, x->name, NULL);
		for (k = next; x->cache < 0 && k < e->k.cache_cap; k++)
			if (e->cache[k].name == NULL) {
				x->cache = (int32_t)k;
				next = k + 1;
			}
		for (j = 0; j < i; j++)
			if (v[j].cache == x->cache)
				x->cache = -1;
	}
}

void hvd__cache_record(struct hvd__engine *e, const struct hvd__resp *v,
		       size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		const struct hvd__resp *x = &v[i];

		if (x->error != NULL || x->cache < 0 ||
		    x->cache >= e->k.cache_cap || x->m.type == HVD__REQ_JOIN ||
		    x->m.type == HVD__REQ_PROCESS_SET)
			continue;
		if (x->cache >= e->cache_used)
			e->cache_used = x->cache + 1;
		free(e->cache[x->cache].name);
		e->cache[x->cache].name = strdup(x->name);
		e->cache[x->cache].m = x->m;
	}
}

void hvd__cache_settle_off(struct hvd__engine *e)
{
	struct hvd__req *r;
	long i;

	if (!e->k.cache_off || e->cache_used == 0)
		return;
	for (i = 0; i < e->cache_used; i++) {
		free(e->cache[i].name);
		e->cache[i].name = NULL;
	}
	e->cache_used = 0;
	for (r = e->pending_local; r != NULL; r = r->next)
		r->cache = -1;
}
