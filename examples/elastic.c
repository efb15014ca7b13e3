/* elastic.c: an elastic training loop over libhvd's C API, the loop that
 * hvd.elastic.run runs in Python. Every few steps the state is committed
 * (copied aside); when a worker is lost, the collective in flight fails
 * with HVD_ERESET on every survivor, each restores the last commit, calls
 * hvd_shutdown() and hvd_init() to join the next generation, and takes
 * rank 0's state. Training goes on, at the new size, from the commit.
 * When hvdrun starts workers on a host that is back (rank 0 sees it at a
 * commit), every rank re-joins there, with them.
 *
 *   hvdrun -np 4 -H a:2,b:2 --min-np 2 ./elastic [STEPS [COMMIT [MS]]]
 *
 * Each step averages a gradient that depends only on the step, so the
 * final weights are the same whatever the size and however many resets:
 * the last line says so ("weights 1234.500000"). With ELASTIC_ADASUM set,
 * the gradients combine by Adasum instead (HVD_ADASUM: the same gradient
 * on every rank combines to itself, so the weights are the same too, at
 * any size: 3 ranks as well as 4). With ELASTIC_TRACE set,
 * each event of a reset is a line "trace EVENT WORKER_ID UNIX_NS": start,
 * lost (HVD_ERESET), grow (hosts updated), joined (hvd_init returned),
 * synced (rank 0's state taken), step (the first step after it);
 * tests/bench/elastic times resets with them. */
#include <hvd.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NW 1024

struct state {
	double step;
	double w[NW];
};

static int tracing;

static void trace(const char *event)
{
	struct timespec t;
	const char *id = getenv("HVD_WORKER_ID");

	if (!tracing)
		return;
	clock_gettime(CLOCK_REALTIME, &t);
	printf("trace %s %s %lld\n", event, id ? id : "-",
	       (long long)t.tv_sec * 1000000000LL + t.tv_nsec);
	fflush(stdout);
}

static void fail(const char *what, int rc)
{
	fprintf(stderr, "elastic: %s: %s\n", what, hvd_strerror(rc));
	exit(1);
}

/* Every rank takes rank 0's state; HVD_ERESET if the world resets
 * meanwhile. */
static int sync_state(struct state *s)
{
	return hvd_broadcast("elastic.state", s, sizeof(*s) / sizeof(double),
			     HVD_FLOAT64, 0);
}

/* At a commit: whether hvdrun started workers on new hosts, as rank 0
 * saw it (every rank then re-joins at the same step, with them). */
static int hosts_updated(int *grown)
{
	int32_t gen = hvd_elastic_hosts_updated();
	int rc = hvd_broadcast("elastic.hosts", &gen, 1, HVD_INT32, 0);

	*grown = rc == HVD_OK && gen > 0;
	return rc;
}

/* Join the next generation and take its state, as often as it takes: a
 * generation may end (HVD_ERESET) while it forms, or before the state is
 * synced. */
static void reset(struct state *s, const struct state *committed, int *resets)
{
	int rc;

	do {
		*s = *committed;
		hvd_shutdown();
		rc = hvd_init();
		if (rc == HVD_OK) {
			trace("joined");
			rc = sync_state(s);
		} else if (rc != HVD_ERESET)
			fail("hvd_init", rc);
		++*resets;
	} while (rc == HVD_ERESET);
	if (rc != HVD_OK)
		fail("broadcast", rc);
	trace("synced");
}

int main(int argc, char **argv)
{
	int steps = argc > 1 ? atoi(argv[1]) : 100;
	int every = argc > 2 ? atoi(argv[2]) : 5;
	int ms = argc > 3 ? atoi(argv[3]) : 10;
	struct timespec nap = {ms / 1000, (ms % 1000) * 1000000L};
	static struct state s, committed;
	static double grad[NW];
	double sum = 0;
	int resets = 0, rc, i, traced = 0;
	enum hvd_op op = getenv("ELASTIC_ADASUM") ? HVD_ADASUM : HVD_AVERAGE;

	tracing = getenv("ELASTIC_TRACE") != NULL;
	trace("start");
	rc = hvd_init();
	if (rc == HVD_OK) {
		trace("joined");
		rc = sync_state(&s);
	}
	if (rc == HVD_ERESET)
		reset(&s, &committed, &resets);
	else if (rc != HVD_OK)
		fail("hvd_init", rc);
	else
		trace("synced");
	committed = s;
	while (s.step < steps) {
		for (i = 0; i < NW; i++)
			grad[i] = (s.step + 1) * 0.5 + i % 3;
		rc = hvd_allreduce("elastic.grad", grad, grad, NW, HVD_FLOAT64,
				   op);
		if (rc == HVD_ERESET) {
			trace("lost");
			reset(&s, &committed, &resets);
			traced = 0;
			continue;
		}
		if (rc != HVD_OK)
			fail("allreduce", rc);
		for (i = 0; i < NW; i++)
			s.w[i] += grad[i] / NW;
		s.step++;
		if (!traced) {
			trace("step");
			traced = 1;
		}
		if ((int)s.step % every == 0) {
			int grown;

			committed = s;
			rc = hosts_updated(&grown);
			if (rc == HVD_ERESET || (rc == HVD_OK && grown)) {
				trace(rc == HVD_OK ? "grow" : "lost");
				reset(&s, &committed, &resets);
				traced = 0;
			} else if (rc != HVD_OK)
				fail("broadcast", rc);
		}
		nanosleep(&nap, NULL);
	}
	for (i = 0; i < NW; i++)
		sum += s.w[i];
	printf("rank %d of %d: %d steps, generation %d, %d resets, weights %.6f\n",
	       hvd_rank(), hvd_size(), (int)s.step, hvd_elastic_generation(),
	       resets, sum);
	hvd_shutdown();
	return 0;
}
