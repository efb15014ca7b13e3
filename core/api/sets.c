/* api/sets.c: process sets, the public calls (hvd.h). Adding and removing
 * a set is a synchronous collective of the job's ranks that the engine
 * negotiates and runs (engine/sets.h); the queries read the table. */
#include <stdio.h>
#include <stdlib.h>

#include "engine/engine.h"
#include "engine/runtime.h"
#include "engine/sets.h"

/* hvd_init_process_sets is adding the job's sets: no
 * HOROVOD_DYNAMIC_PROCESS_SETS needed. */
static _Atomic bool opening;

static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

/* Submit a change of the job's sets and wait for it: add (ranks, n) or
 * remove id. Returns the new set's id, 0, or an error. */
static int change(enum hvd__set_change op, const int *ranks, int n, int id)
{
	struct hvd__sets *s = hvd__runtime_sets();
	struct hvd__meta m = {
		.type = HVD__REQ_PROCESS_SET,
		.dtype = HVD_INT32,
		.op = (uint8_t)op,
		.root = id,
		.count = (uint64_t)n,
		.block = op == HVD__SET_ADD ? hvd__sets_hash(ranks, n) : 0,
		.prescale = 1,
		.postscale = 1,
	};
	char name[64];
	struct hvd__req *r;
	hvd_handle *h = NULL;
	int made = 0, rc;

	if (!atomic_load(&opening) && !s->dynamic) {
		hvd__set_error("process sets are %s after hvd_init only with "
			       "HOROVOD_DYNAMIC_PROCESS_SETS=1",
			       op == HVD__SET_ADD ? "added" : "removed");
		return HVD_EINVAL;
	}
	/* Every rank makes the same changes in the same order: the n-th
	 * has the same name on each. */
	snprintf(name, sizeof(name), "hvd.process_set.%d",
		 atomic_fetch_add(&s->changes, 1));
	rc = hvd__sync_start();
	if (rc != HVD_OK)
		return rc;
	r = hvd__req_new(name, &m, NULL);
	if (r == NULL) {
		hvd__queue_sync_next(false);
		return HVD_ENOMEM;
	}
	r->sendbuf = ranks;
	r->recvbuf = &made;
	rc = hvd__enqueue(r, &h);
	rc = hvd__sync_finish(rc, h);
	return rc == HVD_OK && op == HVD__SET_ADD ? made : rc;
}

HVD_EXPORT int hvd_add_process_set(const int *ranks, int n)
{
	int *sorted, i, rc;

	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	if (n < 1 || ranks == NULL) {
		hvd__set_error("a process set needs at least one rank");
		return HVD_EINVAL;
	}
	sorted = malloc((size_t)n * sizeof(int));
	if (sorted == NULL)
		return HVD_ENOMEM;
	for (i = 0; i < n; i++)
		sorted[i] = ranks[i];
	qsort(sorted, (size_t)n, sizeof(int), cmp_int);
	for (i = 0; i < n; i++)
		if (sorted[i] < 0 || sorted[i] >= hvd__g.size ||
		    (i > 0 && sorted[i] == sorted[i - 1])) {
			hvd__set_error(
				"a process set of rank %d%s: the job's ranks are "
				"0 to %d, each once",
				sorted[i],
				i > 0 && sorted[i] == sorted[i - 1] ? " twice"
								    : "",
				hvd__g.size - 1);
			free(sorted);
			return HVD_EINVAL;
		}
	rc = change(HVD__SET_ADD, sorted, n, 0);
	free(sorted);
	return rc;
}

HVD_EXPORT int hvd_remove_process_set(int id)
{
	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	if (id == HVD_GLOBAL_PROCESS_SET) {
		hvd__set_error("the job's process set (0) cannot be removed");
		return HVD_EINVAL;
	}
	return change(HVD__SET_REMOVE, NULL, 0, id);
}

/* Whether a set names a rank beyond the job (an elastic job that shrank
 * since the set was made). */
static bool beyond(const int *ranks, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (ranks[i] >= hvd__g.size)
			return true;
	return false;
}

HVD_EXPORT int hvd_init_process_sets(const int *ranks, const int *counts, int n)
{
	int i, at = 0, rc = hvd_init();

	if (rc != HVD_OK)
		return rc;
	if (n > 0 && (ranks == NULL || counts == NULL)) {
		hvd_shutdown();
		return HVD_EINVAL;
	}
	atomic_store(&opening, true);
	for (i = 0; i < n && rc >= 0; i++) {
		bool job = counts[i] == hvd__g.size;
		int k;

		/* A set of every rank is the job's own. */
		for (k = 0; job && k < counts[i]; k++) {
			int r = ranks[at + k], j;

			for (j = 0; j < k && ranks[at + j] != r; j++)
				;
			job = r >= 0 && r < hvd__g.size && j == k;
		}
		if (!job && hvd__g.generation > 0 &&
		    beyond(ranks + at, counts[i]))
			hvd__warn(
				"process set %d of %d ranks is left out: this "
				"generation has %d ranks",
				i + 1, counts[i], hvd__g.size);
		else if (!job)
			rc = hvd_add_process_set(ranks + at, counts[i]);
		at += counts[i] > 0 ? counts[i] : 0;
	}
	atomic_store(&opening, false);
	if (rc < 0) {
		hvd_shutdown();
		return rc;
	}
	return HVD_OK;
}

HVD_EXPORT int hvd_process_set_rank(int id)
{
	int me, n, rc;

	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	rc = hvd__sets_query(hvd__runtime_sets(), id, &me, &n);
	if (rc != HVD_OK)
		return rc;
	return me >= 0 ? me : HVD_ENOTINSET;
}

HVD_EXPORT int hvd_process_set_size(int id)
{
	int me, n, rc;

	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	rc = hvd__sets_query(hvd__runtime_sets(), id, &me, &n);
	return rc != HVD_OK ? rc : n;
}

HVD_EXPORT int hvd_process_set_included(int id)
{
	int me, n, rc;

	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	rc = hvd__sets_query(hvd__runtime_sets(), id, &me, &n);
	return rc != HVD_OK ? rc : me >= 0;
}

HVD_EXPORT int hvd_process_set_ranks(int id, int *ranks, int cap)
{
	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	if (ranks == NULL)
		cap = 0;
	return hvd__sets_ranks(hvd__runtime_sets(), id, ranks, cap);
}

HVD_EXPORT int hvd_number_of_process_sets(void)
{
	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	return hvd__sets_ids(hvd__runtime_sets(), NULL, 0);
}

HVD_EXPORT int hvd_process_set_ids(int *ids, int cap)
{
	if (!hvd__g.initialized)
		return HVD_ENOTINIT;
	if (ids == NULL)
		cap = 0;
	return hvd__sets_ids(hvd__runtime_sets(), ids, cap);
}
