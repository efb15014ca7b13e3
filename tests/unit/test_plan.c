/* test_plan.c: Horovod's rank, local rank and cross rank assignment. */
#include <stdlib.h>

#include "job/plan.h"
#include "tap.h"

static void plan_of(const char *list, long np, struct hl_hostlist *hl,
		    struct hl_plan *p)
{
	hl_hostlist_init(hl);
	CHECK(hl_hosts_parse_list(list, hl, NULL) == HL_OK);
	CHECK(hl_plan_init(p, hl, np, NULL, NULL) == HL_OK);
}

#define EXPECT(p, r, h, lr, ls, cr, cs)                                        \
	do {                                                                   \
		const struct hl_rank *x_ = &(p).ranks[r];                      \
		CHECK(x_->rank == (r) && x_->host == (h));                     \
		CHECK(x_->local_rank == (lr) && x_->local_size == (ls));       \
		CHECK(x_->cross_rank == (cr) && x_->cross_size == (cs));       \
	} while (0)

static void test_even(void)
{
	struct hl_hostlist hl;
	struct hl_plan p;

	plan_of("a:4,b:4", 8, &hl, &p);
	CHECK(p.size == 8 && p.nhosts_used == 2);
	EXPECT(p, 0, 0, 0, 4, 0, 2);
	EXPECT(p, 3, 0, 3, 4, 0, 2);
	EXPECT(p, 4, 1, 0, 4, 1, 2);
	EXPECT(p, 7, 1, 3, 4, 1, 2);
	hl_plan_close(&p);
	hl_hostlist_close(&hl);
}

static void test_uneven(void)
{
	struct hl_hostlist hl;
	struct hl_plan p;

	/* a has 2 workers, b 1, c 3: local rank 1 exists on a and c only. */
	plan_of("a:2,b:1,c:3", 6, &hl, &p);
	EXPECT(p, 0, 0, 0, 2, 0, 3);
	EXPECT(p, 1, 0, 1, 2, 0, 2);
	EXPECT(p, 2, 1, 0, 1, 1, 3);
	EXPECT(p, 3, 2, 0, 3, 2, 3);
	EXPECT(p, 4, 2, 1, 3, 1, 2);
	EXPECT(p, 5, 2, 2, 3, 0, 1);
	hl_plan_close(&p);
	hl_hostlist_close(&hl);
}

static void test_np_below_slots(void)
{
	struct hl_hostlist hl;
	struct hl_plan p;

	/* -np 5 over a:4,b:4,c:4 fills a, puts one on b, none on c. */
	plan_of("a:4,b:4,c:4", 5, &hl, &p);
	CHECK(p.size == 5 && p.nhosts_used == 2);
	EXPECT(p, 0, 0, 0, 4, 0, 2);
	EXPECT(p, 1, 0, 1, 4, 0, 1);
	EXPECT(p, 4, 1, 0, 1, 1, 2);
	hl_plan_close(&p);
	hl_hostlist_close(&hl);
}

/* torchrun's GROUP_RANK: the host's index among the hosts with a worker,
 * also where a host between them has none (an elastic job's plan). */
static void test_host_rank(void)
{
	struct hl_hostlist hl;
	struct hl_plan p;
	const int count[4] = {2, 0, 3, 0};

	plan_of("a:2,b:1,c:3", 6, &hl, &p);
	CHECK(p.ranks[1].host_rank == 0 && p.ranks[2].host_rank == 1);
	CHECK(p.ranks[3].host_rank == 2 && p.ranks[5].host_rank == 2);
	hl_plan_close(&p);
	hl_hostlist_close(&hl);
	CHECK(hl_plan_counts(&p, count, 4, NULL) == HL_OK);
	CHECK(p.size == 5 && p.nhosts_used == 2);
	CHECK(p.ranks[0].host_rank == 0 && p.ranks[1].host_rank == 0);
	CHECK(p.ranks[2].host == 2 && p.ranks[2].host_rank == 1);
	CHECK(p.ranks[4].host == 2 && p.ranks[4].host_rank == 1);
	hl_plan_close(&p);
}

static void test_np_errors(void)
{
	struct hl_hostlist hl;
	struct hl_plan p;
	char *cause = NULL;

	hl_hostlist_init(&hl);
	CHECK(hl_hosts_parse_list("a:2,b:2", &hl, NULL) == HL_OK);
	CHECK(hl_plan_init(&p, &hl, 5, NULL, &cause) == HL_EINVAL);
	CHECK_HAS(cause, "-np 5 is more than the 4 slots");
	CHECK(hl_plan_init(&p, &hl, 0, NULL, &cause) == HL_EINVAL);
	CHECK_HAS(cause, "at least 1");
	hl_hostlist_close(&hl);
	free(cause);
}

int main(void)
{
	RUN(test_even);
	RUN(test_uneven);
	RUN(test_np_below_slots);
	RUN(test_host_rank);
	RUN(test_np_errors);
	return tap_done();
}
