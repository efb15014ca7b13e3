/* hvd_sets.c: libhvd's process sets checked from inside a job started by
 * hvdrun (or mpirun), at 3 or more ranks. `hvd_sets MODE`:
 *   dynamic  (HOROVOD_DYNAMIC_PROCESS_SETS=1) sets of 1 rank, 2 ranks,
 *            the even and the odd ranks, added and queried; in each,
 *            allreduce, grouped allreduce, allgather of uneven counts,
 *            broadcast from a rank of the job, alltoall, reducescatter,
 *            barrier and join, checked; the even and odd sets running
 *            different collectives at the same time; a rank in two sets
 *            with collectives pending in both; a set removed and added
 *            again; and the errors: a rank outside the set, an unknown
 *            or removed set, a root outside it, a duplicate set, ranks
 *            that disagree about a set's members
 *   static   hvd_init_process_sets with two sets and one of every rank;
 *            adding and removing after it is refused without
 *            HOROVOD_DYNAMIC_PROCESS_SETS
 *   stall    (dynamic) in the set of ranks 1 and 2, only rank 1 submits:
 *            the set's stall check names rank 2 and fails the tensor
 *   burst    (dynamic, 4 ranks or more) the set of ranks 0 and 1 runs
 *            BURST synchronous allreduces back to back, each checked,
 *            while rank 2 waits in a set with rank 0 that rank 0 enters
 *            after its burst and rank 3 in a job allreduce submitted at
 *            once (a set's run of collectives needs no agreement of the
 *            job's each time: rank 0's timeline, with
 *            HOROVOD_TIMELINE_MARK_CYCLES, counts the job's cycles)
 *   churn    (dynamic) the set of ranks 0 and 1 added, rank 0's
 *            allreduce in it pending (rank 1 never joins), and removed,
 *            CHURN times: the allreduce fails with the removed set's
 *            error
 *   gpu      (dynamic) GPU collectives over NCCL in the sets of the even
 *            and of the odd ranks at the same time, then in the job, then
 *            in the even set removed and added again (a communicator of
 *            its own made again): allreduce (sum, average, two fused),
 *            broadcast from the set's last rank, allgather of uneven
 *            counts, Adasum (refused in a set of several ranks, saying
 *            what to do); exits 77 after "skip: REASON" where there is
 *            no GPU
 * Prints "rank R: ok" and exits 0, or names what went wrong and exits 1. */
#include <hvd.h>
#if HVD_NCCL
#include <cuda_runtime_api.h>
#endif
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int failures;

#define EXPECT(cond, ...)                                                      \
	do {                                                                   \
		if (!(cond)) {                                                 \
			printf("rank %d: FAIL: ", hvd_rank());                 \
			printf(__VA_ARGS__);                                   \
			printf(" (%s)\n", hvd_error_message());                \
			failures++;                                            \
		}                                                              \
	} while (0)

static int rank_, size_;

/* Whether the job's rank r is among the n ranks. */
static int member(const int *ranks, int n, int r)
{
	int i;

	for (i = 0; i < n; i++)
		if (ranks[i] == r)
			return 1;
	return 0;
}

/* The collectives of one set, of n ranks (ascending), checked. */
static void collectives(int id, const int *ranks, int n, const char *tag)
{
	int me = hvd_process_set_rank(id), i, j, rc;
	char name[64];
	double x[3], y[3];
	void *got = NULL;
	size_t gotn = 0;

	EXPECT(me >= 0 && ranks[me] == rank_, "%s: rank in set %d is %d", tag,
	       id, me);
	EXPECT(hvd_process_set_size(id) == n, "%s: size %d, not %d", tag,
	       hvd_process_set_size(id), n);
	/* allreduce: the sum of (rank + 1) over the set's ranks. */
	for (i = 0; i < 3; i++)
		x[i] = rank_ + 1 + i;
	snprintf(name, sizeof(name), "%s.allreduce", tag);
	hvd_next_process_set(id);
	rc = hvd_allreduce(name, x, y, 3, HVD_FLOAT64, HVD_SUM);
	for (i = 0; rc == 0 && i < 3; i++) {
		double want = 0;

		for (j = 0; j < n; j++)
			want += ranks[j] + 1 + i;
		EXPECT(y[i] == want, "%s: allreduce[%d] %g, not %g", tag, i,
		       y[i], want);
	}
	EXPECT(rc == 0, "%s: allreduce: %s", tag, hvd_strerror(rc));
	/* average over the set */
	snprintf(name, sizeof(name), "%s.average", tag);
	hvd_next_process_set(id);
	rc = hvd_allreduce(name, x, y, 1, HVD_FLOAT64, HVD_AVERAGE);
	if (rc == 0) {
		double want = 0;

		for (j = 0; j < n; j++)
			want += ranks[j] + 1;
		EXPECT(y[0] == want / n, "%s: average %g, not %g", tag, y[0],
		       want / n);
	}
	EXPECT(rc == 0, "%s: average: %s", tag, hvd_strerror(rc));
	/* grouped allreduce */
	{
		hvd_handle *h[2];
		int32_t a = rank_, b = 2 * rank_, ra = -1, rb = -1, wa = 0;

		for (j = 0; j < n; j++)
			wa += ranks[j];
		rc = hvd_group_start();
		snprintf(name, sizeof(name), "%s.group.a", tag);
		hvd_next_process_set(id);
		rc = rc ? rc
			: hvd_allreduce_async(name, &a, &ra, 1, HVD_INT32,
					      HVD_SUM, &h[0]);
		snprintf(name, sizeof(name), "%s.group.b", tag);
		hvd_next_process_set(id);
		rc = rc ? rc
			: hvd_allreduce_async(name, &b, &rb, 1, HVD_INT32,
					      HVD_SUM, &h[1]);
		rc = rc ? rc : hvd_group_end();
		rc = rc ? rc : hvd_wait(h[0]);
		rc = rc ? rc : hvd_wait(h[1]);
		EXPECT(rc == 0 && ra == wa && rb == 2 * wa,
		       "%s: grouped allreduce %d %d, not %d %d (%s)", tag, ra,
		       rb, wa, 2 * wa, hvd_strerror(rc));
	}
	/* allgather of uneven counts: rank r gives r + 1 values of r. */
	{
		int32_t mine[8];
		size_t at = 0;

		for (i = 0; i <= rank_ && i < 8; i++)
			mine[i] = rank_;
		snprintf(name, sizeof(name), "%s.allgather", tag);
		hvd_next_process_set(id);
		rc = hvd_allgather(name, mine, (size_t)rank_ + 1, HVD_INT32,
				   &got, &gotn);
		EXPECT(rc == 0, "%s: allgather: %s", tag, hvd_strerror(rc));
		for (j = 0; rc == 0 && j < n; j++)
			for (i = 0; i <= ranks[j]; i++, at++)
				EXPECT(at < gotn &&
					       ((int32_t *)got)[at] == ranks[j],
				       "%s: allgather[%zu] wrong", tag, at);
		EXPECT(rc != 0 || at == gotn, "%s: allgather of %zu, not %zu",
		       tag, gotn, at);
		free(got);
	}
	/* broadcast from the set's last rank, named as a rank of the job */
	{
		int64_t v = rank_ == ranks[n - 1] ? 1000 + rank_ : -1;

		snprintf(name, sizeof(name), "%s.broadcast", tag);
		hvd_next_process_set(id);
		rc = hvd_broadcast(name, &v, 1, HVD_INT64, ranks[n - 1]);
		EXPECT(rc == 0 && v == 1000 + ranks[n - 1],
		       "%s: broadcast %lld (%s)", tag, (long long)v,
		       hvd_strerror(rc));
	}
	/* alltoall: one value for each rank of the set: 100 * from + to */
	{
		size_t sc[64], rcnt[64];
		int32_t send[64];

		for (j = 0; j < n; j++) {
			sc[j] = 1;
			send[j] = 100 * rank_ + ranks[j];
		}
		snprintf(name, sizeof(name), "%s.alltoall", tag);
		hvd_next_process_set(id);
		rc = hvd_alltoall(name, send, sc, 1, HVD_INT32, &got, &gotn,
				  rcnt);
		EXPECT(rc == 0 && gotn == (size_t)n, "%s: alltoall: %s, %zu",
		       tag, hvd_strerror(rc), gotn);
		for (j = 0; rc == 0 && j < n; j++)
			EXPECT(((int32_t *)got)[j] == 100 * ranks[j] + rank_,
			       "%s: alltoall[%d] %d", tag, j,
			       ((int32_t *)got)[j]);
		free(got);
	}
	/* reducescatter of 2n values: each rank of the set gets 2 */
	{
		float send[128], recv[2] = {0, 0};
		size_t cnt;

		for (i = 0; i < 2 * n; i++)
			send[i] = (float)(rank_ + i);
		hvd_next_process_set(id);
		cnt = hvd_reducescatter_count((size_t)(2 * n), 1, me);
		EXPECT(cnt == 2, "%s: reducescatter count %zu", tag, cnt);
		snprintf(name, sizeof(name), "%s.reducescatter", tag);
		hvd_next_process_set(id);
		rc = hvd_reducescatter(name, send, recv, (size_t)(2 * n), 1,
				       HVD_FLOAT32, HVD_SUM, 1.0, 1.0);
		for (i = 0; rc == 0 && i < 2; i++) {
			float want = 0;

			for (j = 0; j < n; j++)
				want += (float)(ranks[j] + 2 * me + i);
			EXPECT(recv[i] == want,
			       "%s: reducescatter[%d] %g, not %g", tag, i,
			       recv[i], want);
		}
		EXPECT(rc == 0, "%s: reducescatter: %s", tag, hvd_strerror(rc));
	}
	hvd_next_process_set(id);
	rc = hvd_barrier();
	EXPECT(rc == 0, "%s: barrier: %s", tag, hvd_strerror(rc));
}

/* A set added on every rank: its id, checked alike on every rank. */
static int add(const int *ranks, int n, const char *tag)
{
	int id = hvd_add_process_set(ranks, n), inc;

	EXPECT(id > 0, "%s: add: %s", tag, hvd_strerror(id));
	inc = hvd_process_set_included(id);
	EXPECT(inc == member(ranks, n, rank_), "%s: included %d", tag, inc);
	if (!member(ranks, n, rank_))
		EXPECT(hvd_process_set_rank(id) == HVD_ENOTINSET,
		       "%s: rank outside the set is %d", tag,
		       hvd_process_set_rank(id));
	return id;
}

/* The even and the odd ranks at once: evens allreduce, odds allgather,
 * 40 of each, all submitted before any is waited for. */
static void disjoint(int even, int odd)
{
	hvd_handle *h[40];
	double v[40], out[40];
	void *g[40];
	size_t gn[40];
	int i, rc = 0;

	for (i = 0; i < 40; i++) {
		char name[32];

		v[i] = rank_ + i;
		snprintf(name, sizeof(name), "disjoint.%d", i);
		hvd_next_process_set(rank_ % 2 == 0 ? even : odd);
		if (rank_ % 2 == 0)
			rc = hvd_allreduce_async(name, &v[i], &out[i], 1,
						 HVD_FLOAT64, HVD_SUM, &h[i]);
		else
			rc = hvd_allgather_async(name, &v[i], 1, HVD_FLOAT64,
						 &g[i], &gn[i], &h[i]);
		EXPECT(rc == 0, "disjoint %d: %s", i, hvd_strerror(rc));
	}
	for (i = 0; i < 40; i++) {
		int j, k = 0;
		double want = 0;

		rc = hvd_wait(h[i]);
		EXPECT(rc == 0, "disjoint wait %d: %s", i, hvd_strerror(rc));
		if (rc != 0)
			continue;
		for (j = rank_ % 2; j < size_; j += 2, k++)
			want += j + i;
		if (rank_ % 2 == 0) {
			EXPECT(out[i] == want, "disjoint allreduce %d: %g", i,
			       out[i]);
		} else {
			EXPECT(gn[i] == (size_t)k, "disjoint allgather %d: %zu",
			       i, gn[i]);
			for (j = 1, k = 0; j < size_; j += 2, k++)
				EXPECT(((double *)g[i])[k] == j + i,
				       "disjoint allgather %d[%d]", i, k);
			free(g[i]);
		}
	}
}

/* Rank 0 and 1 are in both pair (0, 1) and the even or odd set: each
 * submits in both before it waits, in opposite orders on the two ranks:
 * both sets make progress. */
static void overlapping(int pair, int even, int odd)
{
	hvd_handle *h[2];
	int32_t a = rank_ + 1, b = rank_ + 1, ra = 0, rb = 0, wb = 0, j;
	int mine = rank_ % 2 == 0 ? even : odd, rc, first = rank_ % 2;

	for (j = rank_ % 2; j < size_; j += 2)
		wb += j + 1;
	if (rank_ > 1) { /* only in its even or odd set */
		hvd_next_process_set(mine);
		rc = hvd_allreduce("overlap.b", &b, &rb, 1, HVD_INT32, HVD_SUM);
		EXPECT(rc == 0 && rb == wb, "overlap b: %d (%s)", rb,
		       hvd_strerror(rc));
		return;
	}
	hvd_next_process_set(first ? mine : pair);
	rc = first ? hvd_allreduce_async("overlap.b", &b, &rb, 1, HVD_INT32,
					 HVD_SUM, &h[1])
		   : hvd_allreduce_async("overlap.a", &a, &ra, 1, HVD_INT32,
					 HVD_SUM, &h[0]);
	EXPECT(rc == 0, "overlap first: %s", hvd_strerror(rc));
	hvd_next_process_set(first ? pair : mine);
	rc = first ? hvd_allreduce_async("overlap.a", &a, &ra, 1, HVD_INT32,
					 HVD_SUM, &h[0])
		   : hvd_allreduce_async("overlap.b", &b, &rb, 1, HVD_INT32,
					 HVD_SUM, &h[1]);
	EXPECT(rc == 0, "overlap second: %s", hvd_strerror(rc));
	rc = hvd_wait(h[0]);
	EXPECT(rc == 0 && ra == 3, "overlap a: %d (%s)", ra, hvd_strerror(rc));
	rc = hvd_wait(h[1]);
	EXPECT(rc == 0 && rb == wb, "overlap b: %d, not %d (%s)", rb, wb,
	       hvd_strerror(rc));
}

/* The errors of process sets. */
static void errors(int one, int last)
{
	double x = 1, y;
	int rc, all[64], i, bad[2] = {0, 0};

	/* a collective in a set this rank is not in */
	if (rank_ != last) {
		hvd_next_process_set(one);
		rc = hvd_allreduce("err.outside", &x, &y, 1, HVD_FLOAT64,
				   HVD_SUM);
		EXPECT(rc == HVD_ENOTINSET, "outside: %s", hvd_strerror(rc));
		EXPECT(strstr(hvd_error_message(), "is not in process set") !=
			       NULL,
		       "outside: message '%s'", hvd_error_message());
	}
	/* an unknown set; the next call runs in the job again */
	hvd_next_process_set(999);
	rc = hvd_allreduce("err.unknown", &x, &y, 1, HVD_FLOAT64, HVD_SUM);
	EXPECT(rc == HVD_ENOSET, "unknown: %s", hvd_strerror(rc));
	EXPECT(hvd_process_set_size(999) == HVD_ENOSET, "unknown size");
	rc = hvd_allreduce("err.after", &x, &y, 1, HVD_FLOAT64, HVD_SUM);
	EXPECT(rc == 0 && y == size_, "after an error: %s, %g",
	       hvd_strerror(rc), y);
	/* a broadcast root outside the set */
	if (rank_ == last) {
		hvd_next_process_set(one);
		rc = hvd_broadcast("err.root", &x, 1, HVD_FLOAT64, 0);
		EXPECT(rc == HVD_EINVAL, "root outside: %s", hvd_strerror(rc));
	}
	/* bad ranks: refused here, before any rank waits */
	bad[1] = size_;
	EXPECT(hvd_add_process_set(bad, 2) == HVD_EINVAL, "rank %d", size_);
	bad[1] = 0;
	EXPECT(hvd_add_process_set(bad, 2) == HVD_EINVAL, "rank twice");
	/* a duplicate, and the job's own ranks: refused on every rank */
	rc = hvd_add_process_set(&last, 1);
	EXPECT(rc == HVD_EINVAL, "duplicate: %s", hvd_strerror(rc));
	for (i = 0; i < size_; i++)
		all[i] = size_ - 1 - i;
	rc = hvd_add_process_set(all, size_);
	EXPECT(rc == HVD_EINVAL, "the job's ranks: %s", hvd_strerror(rc));
	/* ranks that disagree: rank 0 says (0, 1), the others (0, 2) */
	bad[0] = 0;
	bad[1] = rank_ == 0 ? 1 : 2;
	rc = hvd_add_process_set(bad, 2);
	EXPECT(rc == HVD_EMISMATCH, "disagreement: %s", hvd_strerror(rc));
	EXPECT(rc != HVD_EMISMATCH ||
		       strstr(hvd_error_message(), "process set") != NULL,
	       "disagreement: message '%s'", hvd_error_message());
	EXPECT(hvd_remove_process_set(0) == HVD_EINVAL, "removing set 0");
	EXPECT(hvd_remove_process_set(999) == HVD_ENOSET, "removing 999");
}

/* Join within the set of ranks 1 and 2 (its ranks 0 and 1): rank 1
 * joins at once, rank 2 averages alone, then joins; join returns the
 * last, as a rank of the job. */
static void join(void)
{
	int two[2] = {1, 2}, id = add(two, 2, "join"), rc;
	double x = 10, y = 0;

	if (rank_ == 2) {
		hvd_next_process_set(id);
		rc = hvd_allreduce("join.avg", &x, &y, 1, HVD_FLOAT64,
				   HVD_AVERAGE);
		EXPECT(rc == 0 && y == 10, "join average %g (%s)", y,
		       hvd_strerror(rc));
	}
	if (rank_ == 1 || rank_ == 2) {
		hvd_next_process_set(id);
		rc = hvd_join();
		EXPECT(rc == 2, "join returned %d, not rank 2", rc);
	}
	EXPECT(hvd_remove_process_set(id) == 0, "remove the join set");
}

static void mode_dynamic(void)
{
	int one[1] = {size_ - 1}, pair[2] = {1, 0}, evens[32], odds[32];
	int ne = 0, no = 0, i, s1, s2, se, so, ids[8], n, rc;

	for (i = 0; i < size_ && i < 64; i++) {
		if (i % 2 == 0)
			evens[ne++] = i;
		else
			odds[no++] = i;
	}
	s1 = add(one, 1, "one");
	s2 = add(pair, 2, "pair");
	se = add(evens, ne, "evens");
	so = add(odds, no, "odds");
	n = hvd_number_of_process_sets();
	EXPECT(n == 5, "%d process sets, not 5", n);
	rc = hvd_process_set_ids(ids, 8);
	EXPECT(rc == 5 && ids[0] == 0 && ids[1] == s1 && ids[4] == so,
	       "ids %d: %d %d .. %d", rc, ids[0], ids[1], ids[4]);
	{
		int r[4] = {-1, -1, -1, -1};

		rc = hvd_process_set_ranks(s2, r, 4);
		EXPECT(rc == 2 && r[0] == 0 && r[1] == 1,
		       "pair's ranks %d: %d %d", rc, r[0], r[1]);
	}
	pair[0] = 0;
	pair[1] = 1;
	if (rank_ == size_ - 1)
		collectives(s1, one, 1, "one");
	if (rank_ < 2)
		collectives(s2, pair, 2, "pair");
	if (rank_ % 2 == 0)
		collectives(se, evens, ne, "evens");
	else
		collectives(so, odds, no, "odds");
	{
		int all[64];

		for (i = 0; i < size_; i++)
			all[i] = i;
		collectives(HVD_GLOBAL_PROCESS_SET, all, size_, "job");
	}
	disjoint(se, so);
	overlapping(s2, se, so);
	join();
	errors(s1, size_ - 1);
	/* removed: its collectives fail; added again: a new id, working */
	rc = hvd_remove_process_set(se);
	EXPECT(rc == 0, "remove evens: %s", hvd_strerror(rc));
	EXPECT(hvd_process_set_size(se) == HVD_ENOSET, "removed set's size");
	if (rank_ % 2 == 0) {
		double x = 1, y;

		hvd_next_process_set(se);
		rc = hvd_allreduce("removed", &x, &y, 1, HVD_FLOAT64, HVD_SUM);
		EXPECT(rc == HVD_ENOSET, "in a removed set: %s",
		       hvd_strerror(rc));
	}
	rc = add(evens, ne, "evens again");
	EXPECT(rc > so, "evens again: id %d, not above %d", rc, so);
	if (rank_ % 2 == 0 && rc > 0)
		collectives(rc, evens, ne, "evens2");
	EXPECT(hvd_remove_process_set(rc) == 0, "remove evens again");
	EXPECT(hvd_remove_process_set(so) == 0, "remove odds");
	EXPECT(hvd_remove_process_set(s2) == 0, "remove pair");
	EXPECT(hvd_remove_process_set(s1) == 0, "remove one");
	EXPECT(hvd_number_of_process_sets() == 1, "%d sets left",
	       hvd_number_of_process_sets());
}

/* Set (1, 2): only rank 1 submits; the stall check of the set names
 * rank 2, a rank of the job, and fails the tensor. */
static void mode_stall(void)
{
	int two[2] = {1, 2}, id = add(two, 2, "stall"), rc;
	float x = 1;

	if (rank_ == 1) {
		hvd_next_process_set(id);
		rc = hvd_allreduce("lonely", &x, &x, 1, HVD_FLOAT32, HVD_SUM);
		EXPECT(rc == HVD_ESTALL, "lonely: %s", hvd_strerror(rc));
		printf("rank 1: %s\n", hvd_error_message());
	} else {
		sleep(4);
	}
	rc = hvd_barrier();
	EXPECT(rc == 0, "barrier after the stall: %s", hvd_strerror(rc));
}

#define CHURN 40

/* Set (0, 1), CHURN times: rank 0 submits an allreduce in it that rank 1
 * never joins, and its engine waits between the set's cycles (on the
 * set's bell) while every rank removes the set; the allreduce fails with
 * the removed set's error, and the set's bell goes with it (under
 * AddressSanitizer: freed only once no wait holds it). */
static void mode_churn(void)
{
	int pair[2] = {0, 1}, i, id, rc;
	float x = 1;
	hvd_handle *h = NULL;

	for (i = 0; i < CHURN && failures == 0; i++) {
		id = add(pair, 2, "churn");
		if (rank_ == 0) {
			hvd_next_process_set(id);
			rc = hvd_allreduce_async("churn", &x, &x, 1,
						 HVD_FLOAT32, HVD_SUM, &h);
			EXPECT(rc == 0, "churn %d: submit: %s", i,
			       hvd_strerror(rc));
		}
		usleep(3000);
		rc = hvd_remove_process_set(id);
		EXPECT(rc == 0, "churn %d: remove: %s", i, hvd_strerror(rc));
		if (rank_ == 0 && h != NULL) {
			rc = hvd_wait(h);
			EXPECT(rc == HVD_ENOSET &&
				       strstr(hvd_error_message(),
					      "was removed") != NULL,
			       "churn %d: the pending allreduce: %s (%s)", i,
			       hvd_strerror(rc), hvd_error_message());
			h = NULL;
		}
	}
	rc = hvd_barrier();
	EXPECT(rc == 0, "barrier after the churn: %s", hvd_strerror(rc));
}

#define BURST 400

static void mode_burst(void)
{
	int pair[2] = {0, 1}, two[2] = {0, 2}, p, q, i, rc;
	int32_t x, y, got = 0;

	if (size_ < 4) {
		EXPECT(0, "burst needs 4 ranks or more, not %d", size_);
		return;
	}
	p = add(pair, 2, "burst pair");
	q = add(two, 2, "burst 0 and 2");
	if (rank_ < 2) {
		for (i = 0; i < BURST; i++) {
			char name[32];

			snprintf(name, sizeof(name), "burst.%d", i % 8);
			x = rank_ + i;
			hvd_next_process_set(p);
			rc = hvd_allreduce(name, &x, &y, 1, HVD_INT32, HVD_SUM);
			EXPECT(rc == 0 && y == 1 + 2 * i,
			       "burst %d: %d, not %d (%s)", i, y, 1 + 2 * i,
			       hvd_strerror(rc));
			if (rc != 0)
				break;
		}
	}
	if (rank_ == 0 || rank_ == 2) {
		x = rank_;
		hvd_next_process_set(q);
		rc = hvd_allreduce("burst.02", &x, &y, 1, HVD_INT32, HVD_SUM);
		EXPECT(rc == 0 && y == 2, "burst 0 and 2: %d (%s)", y,
		       hvd_strerror(rc));
	}
	x = 1;
	rc = hvd_allreduce("burst.job", &x, &got, 1, HVD_INT32, HVD_SUM);
	EXPECT(rc == 0 && got == size_, "burst job: %d (%s)", got,
	       hvd_strerror(rc));
	EXPECT(hvd_remove_process_set(q) == 0, "remove burst 0 and 2");
	EXPECT(hvd_remove_process_set(p) == 0, "remove burst pair");
}

static void mode_static(void)
{
	int ranks[64], counts[3], i, n = 0, id, ids[4];

	/* set 1: the ranks 0 and 1; every rank (the job's own set); set 2:
	 * the last rank */
	ranks[n++] = 1;
	ranks[n++] = 0;
	counts[0] = 2;
	for (i = 0; i < size_; i++)
		ranks[n++] = i;
	counts[1] = size_;
	ranks[n++] = size_ - 1;
	counts[2] = 1;
	hvd_shutdown();
	id = hvd_init_process_sets(ranks, counts, 3);
	EXPECT(id == 0, "hvd_init_process_sets: %s", hvd_strerror(id));
	EXPECT(hvd_number_of_process_sets() == 3, "%d sets, not 3",
	       hvd_number_of_process_sets());
	EXPECT(hvd_process_set_ids(ids, 4) == 3 && ids[1] == 1 && ids[2] == 2,
	       "ids %d %d", ids[1], ids[2]);
	if (rank_ < 2) {
		ranks[0] = 0;
		ranks[1] = 1;
		collectives(1, ranks, 2, "static");
	}
	id = hvd_add_process_set(ranks, 1);
	EXPECT(id == HVD_EINVAL, "add without dynamic sets: %s",
	       hvd_strerror(id));
	EXPECT(strstr(hvd_error_message(), "HOROVOD_DYNAMIC_PROCESS_SETS") !=
		       NULL,
	       "message '%s'", hvd_error_message());
	EXPECT(hvd_remove_process_set(1) == HVD_EINVAL, "remove without");
	/* every rank is done before any shuts the job down */
	EXPECT(hvd_barrier() == 0, "barrier");
}

#if HVD_NCCL
/* n floats of value v in GPU memory. */
static float *gpu_fill(size_t n, float v)
{
	float *h = malloc(n * sizeof(float)), *d = NULL;
	size_t i;

	for (i = 0; i < n; i++)
		h[i] = v;
	cudaMalloc((void **)&d, n * sizeof(float));
	cudaMemcpy(d, h, n * sizeof(float), cudaMemcpyHostToDevice);
	free(h);
	return d;
}

/* How many of the n floats at d differ from want(i). */
static size_t gpu_wrong(const float *d, size_t n, float (*want)(size_t, void *),
			void *arg)
{
	float *h = malloc(n * sizeof(float));
	size_t i, bad = 0;

	cudaMemcpy(h, d, n * sizeof(float), cudaMemcpyDeviceToHost);
	for (i = 0; i < n; i++)
		bad += h[i] != want(i, arg);
	free(h);
	return bad;
}

static float same(size_t i, void *arg)
{
	(void)i;
	return *(float *)arg;
}

struct gathered {
	const int *ranks;
	int n;
};

/* Element i of the allgather: rank k of the set gave k + 1 elements of
 * (its job rank + 1). */
static float gathered_at(size_t i, void *arg)
{
	const struct gathered *g = arg;
	size_t at = 0;
	int k;

	for (k = 0; k < g->n; at += (size_t)k + 1, k++)
		if (i < at + (size_t)k + 1)
			return (float)(g->ranks[k] + 1);
	return -1;
}

static void gpu_collectives(int id, const int *ranks, int n, const char *tag)
{
	size_t c = 1000, got = 0, total = 0;
	int me = hvd_process_set_rank(id), j, rc;
	float sum = 0, twice, avg, root = (float)(ranks[n - 1] + 1);
	float *a = gpu_fill(c, (float)(rank_ + 1));
	float *b = gpu_fill(c, (float)(2 * (rank_ + 1)));
	struct gathered g = {ranks, n};
	hvd_handle *h[2] = {NULL, NULL};
	void *out = NULL;
	char name[64];

	for (j = 0; j < n; j++) {
		sum += (float)(ranks[j] + 1);
		total += (size_t)j + 1;
	}
	twice = 2 * sum;
	avg = sum / (float)n;
	/* two at once, fused into one batch of the set's */
	snprintf(name, sizeof(name), "%s.gpu.a", tag);
	hvd_next_process_set(id);
	rc = hvd_allreduce_gpu_async(name, a, a, c, HVD_FLOAT32, HVD_SUM,
				     &h[0]);
	snprintf(name, sizeof(name), "%s.gpu.b", tag);
	hvd_next_process_set(id);
	rc = rc ? rc
		: hvd_allreduce_gpu_async(name, b, b, c, HVD_FLOAT32, HVD_SUM,
					  &h[1]);
	rc = rc ? rc : hvd_wait(h[0]);
	rc = rc ? rc : hvd_wait(h[1]);
	EXPECT(rc == 0 && gpu_wrong(a, c, same, &sum) == 0 &&
		       gpu_wrong(b, c, same, &twice) == 0,
	       "%s: GPU allreduce: %s", tag, hvd_strerror(rc));
	/* the average, out of place */
	snprintf(name, sizeof(name), "%s.gpu.avg", tag);
	cudaMemcpy(a, b, c * sizeof(float), cudaMemcpyDeviceToDevice);
	cudaFree(b);
	b = gpu_fill(c, (float)(rank_ + 1));
	hvd_next_process_set(id);
	rc = hvd_allreduce_gpu(name, b, a, c, HVD_FLOAT32, HVD_AVERAGE);
	EXPECT(rc == 0 && gpu_wrong(a, c, same, &avg) == 0,
	       "%s: GPU average: %s", tag, hvd_strerror(rc));
	/* broadcast from the set's last rank (a rank of the job) */
	snprintf(name, sizeof(name), "%s.gpu.bcast", tag);
	hvd_next_process_set(id);
	rc = hvd_broadcast_gpu(name, b, c, HVD_FLOAT32, ranks[n - 1]);
	EXPECT(rc == 0 && gpu_wrong(b, c, same, &root) == 0,
	       "%s: GPU broadcast: %s", tag, hvd_strerror(rc));
	/* allgather: me + 1 elements from each */
	cudaFree(b);
	b = gpu_fill((size_t)me + 1, (float)(rank_ + 1));
	snprintf(name, sizeof(name), "%s.gpu.gather", tag);
	hvd_next_process_set(id);
	rc = hvd_allgather_gpu(name, b, (size_t)me + 1, HVD_FLOAT32, &out,
			       &got);
	EXPECT(rc == 0 && got == total &&
		       gpu_wrong(out, got, gathered_at, &g) == 0,
	       "%s: GPU allgather: %s, %zu elements, not %zu", tag,
	       hvd_strerror(rc), got, total);
	cudaFree(out);
	/* Adasum of GPU tensors: the job's only, as Horovod's (a set of one
	 * rank keeps its own), on hosts of one size, the refusal saying what
	 * to do */
	snprintf(name, sizeof(name), "%s.gpu.adasum", tag);
	hvd_next_process_set(id);
	rc = hvd_allreduce_gpu(name, a, a, c, HVD_FLOAT32, HVD_ADASUM);
	if (id != 0 && n > 1)
		EXPECT(rc == HVD_ENOTSUP && strstr(hvd_error_message(),
						   "global process set only"),
		       "%s: GPU Adasum in a set: %s", tag, hvd_strerror(rc));
	else if (id == 0 && !hvd_is_homogeneous())
		EXPECT(rc == HVD_ENOTSUP && strstr(hvd_error_message(),
						   "same number of ranks"),
		       "%s: GPU Adasum on hosts of different sizes: %s", tag,
		       hvd_strerror(rc));
	else
		EXPECT(rc == 0, "%s: GPU Adasum: %s", tag, hvd_strerror(rc));
	cudaFree(a);
	cudaFree(b);
}

static void mode_gpu(void)
{
	int even[64], odd[64], all[64], ne = 0, no = 0, r, ide, ido;
	int dev = hvd_gpu_device();

	if (dev < 0) {
		printf("skip: %s\n", hvd_error_message());
		hvd_shutdown();
		exit(77);
	}
	cudaSetDevice(dev);
	for (r = 0; r < size_ && r < 64; r++) {
		all[r] = r;
		if (r % 2 == 0)
			even[ne++] = r;
		else
			odd[no++] = r;
	}
	ide = hvd_add_process_set(even, ne);
	ido = hvd_add_process_set(odd, no);
	EXPECT(ide > 0 && ido > 0, "add: %d, %d", ide, ido);
	if (rank_ % 2 == 0)
		gpu_collectives(ide, even, ne, "even");
	else
		gpu_collectives(ido, odd, no, "odd");
	gpu_collectives(0, all, size_, "job");
	EXPECT(hvd_remove_process_set(ide) == 0, "remove the even set");
	ide = hvd_add_process_set(even, ne);
	EXPECT(ide > 0, "add the even set again: %d", ide);
	if (rank_ % 2 == 0)
		gpu_collectives(ide, even, ne, "even.again");
	EXPECT(hvd_barrier() == 0, "barrier");
}
#else
static void mode_gpu(void)
{
	printf("skip: this test was built without CUDA and NCCL\n");
	hvd_shutdown();
	exit(77);
}
#endif

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "dynamic";
	int rc = hvd_init();

	if (rc != 0) {
		fprintf(stderr, "hvd_init: %s\n", hvd_strerror(rc));
		return 2;
	}
	rank_ = hvd_rank();
	size_ = hvd_size();
	if (size_ < 3) {
		fprintf(stderr, "hvd_sets: needs 3 or more ranks\n");
		return 2;
	}
	if (strcmp(mode, "dynamic") == 0)
		mode_dynamic();
	else if (strcmp(mode, "static") == 0)
		mode_static();
	else if (strcmp(mode, "stall") == 0)
		mode_stall();
	else if (strcmp(mode, "burst") == 0)
		mode_burst();
	else if (strcmp(mode, "churn") == 0)
		mode_churn();
	else if (strcmp(mode, "gpu") == 0)
		mode_gpu();
	else {
		fprintf(stderr, "unknown mode '%s'\n", mode);
		return 2;
	}
	hvd_shutdown();
	if (failures == 0)
		printf("rank %d: ok\n", rank_);
	return failures ? 1 : 0;
}
