/* engine/knobs.c: the engine's settings, read once when the engine
 * starts, each through the worker environment's contract (util/env.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "algo/ring.h"
#include "proto/wire.h"

/* The settings every rank must share, for the ranks to meet: the batches
 * they fuse, the response cache's bits, the ring's segments, the
 * hierarchical allgather, MPI_Allreduce or the ring, process sets added
 * later, and the autotuner's run. */
static const enum wenv_id job_wide[] = {
	WENV_FUSION_THRESHOLD,
	WENV_CACHE_CAPACITY,
	WENV_SEGMENT_BYTES,
	WENV_HIERARCHICAL_ALLGATHER,
	WENV_HIERARCHICAL_ALLREDUCE,
	WENV_MPI_ALLREDUCE,
	WENV_DYNAMIC_PROCESS_SETS,
	WENV_AUTOTUNE,
	WENV_AUTOTUNE_WARMUP_SAMPLES,
	WENV_AUTOTUNE_STEPS_PER_SAMPLE,
	WENV_AUTOTUNE_BAYES_OPT_MAX_SAMPLES,
	WENV_AUTOTUNE_GAUSSIAN_PROCESS_NOISE,
};
#define NJOB_WIDE (sizeof(job_wide) / sizeof(job_wide[0]))
_Static_assert(NJOB_WIDE <= 16, "a rank's differences are 16 bits");
/* The longest value of one that is taken from rank 0. */
#define JOB_WIDE_MAX 256

static bool same_text(const char *a, const char *b)
{
	return a == NULL ? b == NULL : b != NULL && strcmp(a, b) == 0;
}

/* "1-3, 7": the ranks whose bit in masks[0..n-1] is set, as ranges, cut
 * with "..." where len ends. */
static void rank_ranges(const uint16_t *masks, int n, uint16_t bit, char *buf,
			size_t len)
{
	size_t off = 0;
	int r = 0, end;

	buf[0] = '\0';
	while (r < n) {
		if (!(masks[r] & bit)) {
			r++;
			continue;
		}
		for (end = r; end + 1 < n && (masks[end + 1] & bit); end++)
			;
		if (off + 28 >= len) {
			snprintf(buf + off, len - off, ", ...");
			return;
		}
		off += (size_t)snprintf(buf + off, len - off,
					end > r ? "%s%d-%d" : "%s%d",
					off ? ", " : "", r, end);
		r = end + 1;
	}
}

static const char *quoted(const char *v, char *buf, size_t len)
{
	if (v == NULL)
		return "unset";
	snprintf(buf, len, "'%s'", v);
	return buf;
}

/* The settings in which ranks differ from rank 0, said once for the job,
 * as mpirun gathers its ranks' like messages: the first rank that differs
 * in one says its own value and rank 0's, and rank 0 names every rank
 * that differs; the others are silent. mine: this rank's bit for each
 * setting; theirs: rank 0's values. */
static int say_differences(const struct hvd__comm *c, uint16_t mine,
			   char *const *theirs)
{
	uint16_t *masks;
	size_t *len, i;
	int32_t any = mine != 0;
	int rc, r, n;

	/* Most jobs: nothing differs anywhere, one small allreduce. */
	rc = hvd__ring_allreduce(c, &any, 1, HVD_INT32, HVD_SUM);
	if (rc != HVD_OK || any == 0)
		return rc;
	masks = calloc((size_t)c->size, sizeof(*masks));
	len = calloc((size_t)c->size, sizeof(*len));
	if (masks == NULL || len == NULL) {
		free(masks);
		free(len);
		return HVD_ENOMEM;
	}
	for (r = 0; r < c->size; r++)
		len[r] = sizeof(*masks);
	masks[c->rank] = mine;
	rc = hvd__ring_allgatherv(c, masks, len);
	for (i = 0; rc == HVD_OK && i < NJOB_WIDE; i++) {
		const char *name = wenv_vars[job_wide[i]].name;
		uint16_t bit = (uint16_t)(1u << i);
		char v0[JOB_WIDE_MAX + 3], v1[JOB_WIDE_MAX + 3], ranks[200];
		int first = -1;

		for (r = 0, n = 0; r < c->size; r++)
			if (masks[r] & bit) {
				n++;
				first = first < 0 ? r : first;
			}
		if (n == 0)
			continue;
		if (c->rank == first)
			hvd__log(HVD__LOG_WARNING, "agree_setting",
				 "%s is %s on this rank (%d) but %s on rank 0: "
				 "every rank runs on rank 0's",
				 name,
				 quoted(hvd__env_text(job_wide[i]), v1,
					sizeof(v1)),
				 c->rank, quoted(theirs[i], v0, sizeof(v0)));
		if (c->rank == 0) {
			rank_ranges(masks, c->size, bit, ranks, sizeof(ranks));
			hvd__log(HVD__LOG_WARNING, "agree_setting",
				 "%s differs from rank 0's (%s) on %d of %d "
				 "ranks: %s (rank %d says its own); every rank "
				 "runs on rank 0's",
				 name, quoted(theirs[i], v0, sizeof(v0)), n,
				 c->size, ranks, first);
		}
	}
	free(masks);
	free(len);
	return rc;
}

int hvd__knobs_agree(const struct hvd__comm *c)
{
	/* Rank 0's values, behind a byte saying whether it could share
	 * them: one broadcast of a fixed size. */
	uint8_t buf[1 + NJOB_WIDE * (4 + JOB_WIDE_MAX)];
	char *theirs[NJOB_WIDE] = {NULL};
	uint16_t mine = 0;
	struct wire_w w;
	struct wire_r r;
	size_t i;
	int rc;

	if (c->size < 2)
		return HVD_OK;
	memset(buf, 0, sizeof(buf));
	wire_w_fixed(&w, buf, sizeof(buf));
	wire_put_u8(&w, 1);
	for (i = 0; c->rank == 0 && i < NJOB_WIDE; i++) {
		const char *v = hvd__env_text(job_wide[i]);

		if (v != NULL && strlen(v) > JOB_WIDE_MAX) {
			hvd__error("%s is over %d bytes",
				   wenv_vars[job_wide[i]].name, JOB_WIDE_MAX);
			buf[0] = 0;
			break;
		}
		wire_put_str(&w, v);
	}
	rc = hvd__ring_broadcast(c, buf, sizeof(buf), 0);
	wire_r_init(&r, buf, sizeof(buf));
	if (rc == HVD_OK && wire_get_u8(&r) != 1) {
		if (c->rank != 0)
			hvd__error(
				"rank 0 could not share its settings (its log says which)");
		rc = HVD_EINVAL;
	}
	for (i = 0; rc == HVD_OK && i < NJOB_WIDE; i++) {
		theirs[i] = wire_get_str(&r, JOB_WIDE_MAX);
		if (r.bad)
			rc = HVD_EINVAL;
		else if (!same_text(hvd__env_text(job_wide[i]), theirs[i]))
			mine |= (uint16_t)(1u << i);
	}
	if (rc == HVD_OK)
		rc = say_differences(c, mine, theirs);
	/* Rank 0's value taken, once each rank's own has been said. */
	for (i = 0; rc == HVD_OK && i < NJOB_WIDE; i++)
		if (mine & (1u << i))
			rc = hvd__env_agree(job_wide[i], theirs[i]);
	for (i = 0; i < NJOB_WIDE; i++)
		free(theirs[i]);
	return rc;
}

int hvd__knobs_read(struct hvd__knobs *k, int size)
{
	long fusion, cache, warn, shut, disable, mark, seg, spin, shm, gather,
		hier, mpi, batch;
	bool given;
	int rc;

	rc = hvd__env_long(WENV_FUSION_THRESHOLD, &fusion);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_CACHE_CAPACITY, &cache);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_STALL_CHECK_TIME, &warn);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_STALL_SHUTDOWN_TIME, &shut);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_STALL_CHECK_DISABLE, &disable);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_TIMELINE_MARK_CYCLES, &mark);
	if (rc == HVD_OK)
		rc = hvd__env(WENV_CYCLE_TIME, &k->cycle_ms);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_SEGMENT_BYTES, &seg);
	/* The most a wait spins before it blocks (util/wait.h). */
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_SPIN_US, &spin);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_SHM, &shm);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_HIERARCHICAL_ALLGATHER, &gather);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_HIERARCHICAL_ALLREDUCE, &hier);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_MPI_ALLREDUCE, &mpi);
	if (rc == HVD_OK)
		rc = hvd__env_long(WENV_BATCH_D2D_MEMCOPIES, &batch);
	if (rc != HVD_OK)
		return rc;
	/* Each ring chunk of a segment about 512 KiB: in cache, yet large
	 * enough that a step is not all latency. */
	given = seg >= 0;
	if (!given)
		seg = (long)hvd__knobs_segment(size);
	k->fusion_threshold = fusion;
	k->cache_cap = cache;
	k->stall_warn_s = warn;
	k->stall_shutdown_s = shut;
	k->stall_check = !disable;
	k->mark_cycles = mark != 0;
	k->segment_given = given;
	k->segment = (size_t)seg;
	k->spin_us = (int)spin;
	k->shm = shm != 0;
	k->hier_allgather = gather != 0;
	k->hier_allreduce = hier != 0;
	k->transport_allreduce = mpi != 0;
	k->batch_copies = batch != 0;
	k->shm_allreduce = true;
	k->cache_off = false;
	return HVD_OK;
}

size_t hvd__knobs_segment(int size)
{
	return (size_t)(512L << 10) * (size_t)(size > 1 ? size : 2);
}
