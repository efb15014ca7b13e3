/* test_engine.c: the real engine (negotiation, the coordinator and its
 * messages, the response cache, fusion, the collectives over the ring)
 * for three ranks as threads of this process, over the TCP transport on
 * 127.0.0.1, as gloo's and NCCL's tests run: results against what each
 * rank submitted, the cache's fast path on a second round, and the
 * errors every rank gets when the ranks disagree. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "algo/group.h"
#include "engine/engine.h"
#include "engine/sets.h"
#include "tap.h"
#include "transport/tcp.h"

#define N 3

static const uint8_t token[HVD__TOKEN_LEN] = "a token for the engine tests..";

struct world {
	char addr[N][64];
	char *addrs[N];
	pthread_barrier_t ready;
	void (*body)(struct hvd__engine *e, int *failures);
};

struct thr {
	struct world *w;
	int rank;
	int failures;
};

/* Queue a request on e as the public call would (api/collectives.c). */
static hvd_handle *submit(struct hvd__engine *e, const char *name,
			  const struct hvd__meta *m, const void *send,
			  void *recv, uint64_t local_count, void **gather_out,
			  size_t *gather_count)
{
	struct hvd__req *r = hvd__req_new(name, m, NULL), **tail;

	if (r == NULL)
		return NULL;
	r->sendbuf = send;
	r->recvbuf = recv;
	r->local_count = local_count;
	r->gather_out = gather_out;
	r->gather_count = gather_count;
	r->enqueued_us = hvd__now_us();
	for (tail = &e->pending_local; *tail != NULL; tail = &(*tail)->next)
		;
	*tail = r;
	return r->h;
}

/* Run the engine's cycles until every handle of hs is done (bounded). */
static int run_until_done(struct hvd__engine *e, hvd_handle **hs, int n)
{
	int cycles, i, rc = HVD_OK;

	for (cycles = 0; cycles < 1000 && rc == HVD_OK; cycles++) {
		struct hvd__resp *v;
		size_t nv;
		bool all = true;

		for (i = 0; i < n; i++)
			all = all && hs[i] != NULL && atomic_load(&hs[i]->done);
		if (all)
			return HVD_OK;
		rc = hvd__negotiate(e, false, &v, &nv);
		if (rc == HVD_OK) {
			rc = hvd__execute(e, v, nv);
			hvd__resps_free(v, nv);
		}
	}
	return rc != HVD_OK ? rc : HVD_ETIMEDOUT;
}

static void handles_free(hvd_handle **hs, int n)
{
	int i;

	for (i = 0; i < n; i++)
		if (hs[i] != NULL) {
			free(hs[i]->msg);
			free(hs[i]);
		}
}

static struct hvd__meta meta(enum hvd__req_type type, enum hvd_dtype dtype,
			     enum hvd_op op, int root, uint64_t count)
{
	struct hvd__meta m = {0};

	m.type = (uint8_t)type;
	m.dtype = (uint8_t)dtype;
	m.op = (uint8_t)op;
	m.root = root;
	m.count = count;
	m.prescale = m.postscale = 1;
	return m;
}

/* Fused allreduces (sum and average), a broadcast and an allgather of
 * uneven counts, four times: the second round goes by the response cache;
 * the third with the cache turned off (as the autotuner does, on every
 * rank before the same cycle), which empties it; the fourth with it on
 * again, which fills it again. */
static void body_results(struct hvd__engine *e, int *failures)
{
	int rank = e->comm.rank, round, i;

	for (round = 0; round < 4; round++) {
		float a[5], b[300], c[7], want_b = 0;
		int32_t bc[4], g[rank + 1];
		void *gathered = NULL;
		size_t gcount = 0;
		struct hvd__meta ma = meta(HVD__REQ_ALLREDUCE, HVD_FLOAT32,
					   HVD_SUM, 0, 5),
				 mb = meta(HVD__REQ_ALLREDUCE, HVD_FLOAT32,
					   HVD_AVERAGE, 0, 300),
				 mc = meta(HVD__REQ_ALLREDUCE, HVD_FLOAT32,
					   HVD_MAX, 0, 7),
				 md = meta(HVD__REQ_BROADCAST, HVD_INT32, 0, 1,
					   4),
				 mg = meta(HVD__REQ_ALLGATHER, HVD_INT32, 0, 0,
					   0);
		hvd_handle *hs[5];
		int32_t *got;
		bool ok = true;

		for (i = 0; i < 5; i++)
			a[i] = (float)(rank + 1) * (float)(i + 1);
		for (i = 0; i < 300; i++)
			b[i] = (float)(rank * 10 + i % 3);
		for (i = 0; i < 7; i++)
			c[i] = (float)((rank + i) % N);
		for (i = 0; i < 4; i++)
			bc[i] = rank == 1 ? 100 + i : -1;
		for (i = 0; i <= rank; i++)
			g[i] = rank * 10 + i;
		e->k.cache_off = round == 2;
		hs[0] = submit(e, "a", &ma, a, a, 5, NULL, NULL);
		hs[1] = submit(e, "b", &mb, b, b, 300, NULL, NULL);
		hs[2] = submit(e, "c", &mc, c, c, 7, NULL, NULL);
		hs[3] = submit(e, "d", &md, bc, bc, 4, NULL, NULL);
		hs[4] = submit(e, "g", &mg, g, NULL, (uint64_t)rank + 1,
			       &gathered, &gcount);
		if (run_until_done(e, hs, 5) != HVD_OK) {
			(*failures)++;
			handles_free(hs, 5);
			free(gathered);
			continue;
		}
		for (i = 0; i < 5; i++)
			ok = ok && hs[i]->status == HVD_OK;
		/* sum of (r+1)(i+1) over r = 6 (i+1) */
		for (i = 0; i < 5; i++)
			ok = ok && a[i] == 6.0F * (float)(i + 1);
		/* average over r of r*10 + i%3 = 10 + i%3 */
		for (i = 0; i < 300; i++) {
			want_b = 10.0F + (float)(i % 3);
			ok = ok && b[i] == want_b;
		}
		for (i = 0; i < 7; i++)
			ok = ok && c[i] == (float)(N - 1);
		for (i = 0; i < 4; i++)
			ok = ok && bc[i] == 100 + i;
		/* 1 + 2 + 3 blocks, rank by rank */
		got = gathered;
		ok = ok && gcount == 6 && got != NULL;
		ok = ok && got[0] == 0 && got[1] == 10 && got[2] == 11 &&
		     got[3] == 20 && got[4] == 21 && got[5] == 22;
		/* The second round was answered from the cache; the third
		 * emptied it; the fourth gave the entries again. */
		if (round == 1 || round == 3)
			ok = ok && e->cache_used >= 4;
		if (round == 2)
			ok = ok && e->cache_used == 0;
		if (!ok)
			(*failures)++;
		handles_free(hs, 5);
		free(gathered);
	}
}

/* Rank 2 allreduces "x" with 5 elements where the others have 4: every
 * rank's "x" fails with HVD_EMISMATCH, saying both; "y", submitted
 * alike, still runs. */
static void body_mismatch(struct hvd__engine *e, int *failures)
{
	int rank = e->comm.rank;
	float x[5] = {1, 1, 1, 1, 1}, y[2] = {1, 2};
	struct hvd__meta mx = meta(HVD__REQ_ALLREDUCE, HVD_FLOAT32, HVD_SUM, 0,
				   rank == 2 ? 5 : 4),
			 my = meta(HVD__REQ_ALLREDUCE, HVD_FLOAT32, HVD_SUM, 0,
				   2);
	hvd_handle *hs[2];

	hs[0] = submit(e, "x", &mx, x, x, mx.count, NULL, NULL);
	hs[1] = submit(e, "y", &my, y, y, 2, NULL, NULL);
	if (run_until_done(e, hs, 2) != HVD_OK ||
	    hs[0]->status != HVD_EMISMATCH || hs[0]->msg == NULL ||
	    strstr(hs[0]->msg, "allreduce of 4 float32") == NULL ||
	    strstr(hs[0]->msg, "allreduce of 5 float32") == NULL ||
	    hs[1]->status != HVD_OK || y[0] != 3 || y[1] != 6)
		(*failures)++;
	handles_free(hs, 2);
}

static void *rank_main(void *p)
{
	struct thr *th = p;
	struct world *w = th->w;
	struct hvd__tcp *t = NULL;
	struct hvd__engine e;

	memset(&e, 0, sizeof(e));
	if (hvd__tcp_new(&t, "127.0.0.1", w->addr[th->rank],
			 sizeof(w->addr[0])) != HVD_OK)
		th->failures++;
	pthread_barrier_wait(&w->ready);
	if (t == NULL)
		return NULL;
	if (hvd__tcp_connect(t, th->rank, N, w->addrs, token, 10000) !=
	    HVD_OK) {
		th->failures++;
		hvd__tcp_free(t);
		return NULL;
	}
	hvd__tcp_set_timeout(t, 5000);
	e.comm = (struct hvd__comm){th->rank, N, &hvd__tcp_ops, t};
	if (hvd__knobs_read(&e.k, N) != HVD_OK ||
	    hvd__engine_open(&e, N) != HVD_OK)
		th->failures++;
	else
		w->body(&e, &th->failures);
	hvd__engine_close(&e);
	hvd__tcp_free(t);
	return NULL;
}

static int run_world(void (*body)(struct hvd__engine *, int *))
{
	struct world w;
	struct thr th[N];
	pthread_t tid[N];
	int r, failures = 0;

	memset(&w, 0, sizeof(w));
	w.body = body;
	for (r = 0; r < N; r++)
		w.addrs[r] = w.addr[r];
	pthread_barrier_init(&w.ready, NULL, N);
	for (r = 0; r < N; r++) {
		th[r] = (struct thr){&w, r, 0};
		pthread_create(&tid[r], NULL, rank_main, &th[r]);
	}
	for (r = 0; r < N; r++) {
		pthread_join(tid[r], NULL);
		failures += th[r].failures;
	}
	pthread_barrier_destroy(&w.ready);
	return failures;
}

static void test_results_and_cache(void)
{
	CHECK(run_world(body_results) == 0);
}

static void test_mismatch(void)
{
	CHECK(run_world(body_mismatch) == 0);
}

/* flights.c's rule for GPU tensors submitted in a burst: which takes are
 * bursts, and how long their computed tensors wait for the rest. */
static void test_gpu_burst(void)
{
	struct hvd__engine e = {0};
	struct hvd__req a = {0}, b = {0};
	long long t = 1000000, fl; /* a flight: only its presence is read */

	/* One request, nothing of this rank's under way: it goes alone. */
	CHECK(!hvd__gpu_burst(&e, &a, t));
	/* Two at once, or one while another is held, negotiated or in
	 * flight: a burst. */
	a.next = &b;
	CHECK(hvd__gpu_burst(&e, &a, t));
	a.next = NULL;
	e.held = &b;
	CHECK(hvd__gpu_burst(&e, &a, t));
	e.held = NULL;
	e.pending_local = &b;
	CHECK(hvd__gpu_burst(&e, &a, t));
	e.pending_local = NULL;
	e.flights = (struct hvd__flight *)&fl;
	CHECK(hvd__gpu_burst(&e, &a, t));
	e.flights = NULL;

	/* Gathering: fusion threshold 1 MiB, cycle time 1 ms; the first held
	 * one computed 200 us before t. */
	e.k.fusion_threshold = 1 << 20;
	e.k.cycle_ms = 1;
	e.held = &a;
	a.computed_us = t - 200;
	e.came_us = t - 20;
	e.burst = false;
	CHECK(!hvd__gpu_gathers(&e, 4096, true, t)); /* alone: at once */
	e.burst = true;
	/* Still submitting: it waits, computed or not. */
	CHECK(hvd__gpu_gathers(&e, 4096, true, t));
	CHECK(hvd__gpu_gathers(&e, 4096, false, t));
	/* The burst paused: it goes once all that came is computed. */
	e.came_us = t - 100;
	CHECK(!hvd__gpu_gathers(&e, 4096, true, t));
	CHECK(hvd__gpu_gathers(&e, 4096, false, t));
	/* A full batch, or a cycle time since the first was computed: it
	 * goes, paused or not. */
	e.came_us = t - 20;
	CHECK(!hvd__gpu_gathers(&e, 1 << 20, false, t));
	a.computed_us = t - 1000;
	CHECK(!hvd__gpu_gathers(&e, 4096, false, t));
	a.computed_us = t - 999;
	CHECK(hvd__gpu_gathers(&e, 4096, false, t));
	/* No cycle time: never held for a burst. */
	e.k.cycle_ms = 0;
	CHECK(!hvd__gpu_gathers(&e, 4096, false, t));
}

/* A step's first GPU allreduce taken alone, the rest of the step behind
 * it: learnt as the head of the rank's bursts, and gathered with them the
 * next time; forgotten when it stays alone. */
static void test_gpu_burst_head(void)
{
	struct hvd__engine e = {0};
	struct hvd__req h = {0}, x = {0}, c = {0};
	long long t = 1000000, fl, now;
	char longname[HVD__HEAD_MAX + 8];
	int ev; /* a ready event: only its presence is read */

	e.k.cycle_ms = 1;
	e.k.fusion_threshold = 1 << 20;
	h.m.gpu = true;
	h.ready = &ev;
	h.m.type = HVD__REQ_ALLREDUCE;
	x = h;
	h.name = "grad.0";
	x.name = "grad.1";
	c.name = "loss"; /* a CPU allreduce */
	/* Alone, nothing under way: at once. The rest of the step 400 us
	 * later, while it flies: a burst, and grad.0 its head. */
	CHECK(!hvd__gpu_burst(&e, &h, t));
	e.flights = (struct hvd__flight *)&fl;
	CHECK(hvd__gpu_burst(&e, &x, t + 400));
	e.flights = NULL;
	CHECK_STR(e.head, "grad.0");
	/* The next step: the head alone is a burst; until more comes, it is
	 * alone. Another name alone, or a CPU allreduce, is not. */
	CHECK(hvd__gpu_burst(&e, &h, t + 10000) && e.head_alone);
	e.held = &h;
	CHECK(hvd__gpu_burst(&e, &x, t + 10020) && !e.head_alone);
	e.held = NULL;
	CHECK(!hvd__gpu_burst(&e, &c, t + 20000));
	x.name = "metric";
	CHECK(!hvd__gpu_burst(&e, &x, t + 30000));
	/* A burst over a cycle time after a lone one: that one is no head. */
	e.pending_local = &c;
	CHECK(hvd__gpu_burst(&e, &c, t + 31001));
	e.pending_local = NULL;
	CHECK_STR(e.head, "grad.0");
	/* A name too long to learn: no head. */
	memset(longname, 'n', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	x.name = longname;
	CHECK(!hvd__gpu_burst(&e, &x, t + 40000));
	e.held = &h;
	CHECK(hvd__gpu_burst(&e, &h, t + 40010));
	e.held = NULL;
	CHECK_STR(e.head, "grad.0");
	/* The head alone, and nothing after it: it goes after the burst's
	 * pause, and is forgotten. */
	CHECK(hvd__gpu_burst(&e, &h, t + 50000) && e.head_alone);
	e.burst = true;
	now = hvd__now_us();
	h.computed_us = now - 200;
	e.came_us = now - 200;
	e.held = &h;
	CHECK(hvd__gpu_release_held(&e));
	CHECK(e.held == NULL && e.pending_local == &h);
	CHECK(e.head[0] == '\0' && !e.head_alone);
	/* Alone again: at once. */
	e.pending_local = NULL;
	CHECK(!hvd__gpu_burst(&e, &h, t + 60000));
}

/* A bell as the host's segment gives one (shm.h), in this process:
 * called once `calls` is set; its sleep looks every millisecond. */
static atomic_bool calls;
static atomic_int rings;

static bool fake_called(struct hvd__bell *b)
{
	(void)b;
	return atomic_load(&calls);
}

static atomic_bool in_sleep;

static void fake_sleep(struct hvd__bell *b, double ms, bool (*woken)(void))
{
	long long end = hvd__now_us() + (long long)(ms * 1000);
	int seen = atomic_load(&rings);

	atomic_store(&in_sleep, true);
	while (hvd__now_us() < end && !woken() && !fake_called(b) &&
	       atomic_load(&rings) == seen)
		usleep(1000);
	usleep(1000); /* a sleeper's last look at its bell */
	atomic_store(&in_sleep, false);
}

static void fake_ring(struct hvd__bell *b)
{
	(void)b;
	atomic_fetch_add(&rings, 1);
}

static void *call_later(void *arg)
{
	(void)arg;
	usleep(200000);
	atomic_store(&calls, true);
	return NULL;
}

static void *shut_later(void *arg)
{
	(void)arg;
	usleep(200000);
	hvd__queue_shutdown();
	return NULL;
}

/* The fake bell, and the slot a wait takes it from. */
static const struct hvd__bell_ops fake_ops = {fake_called, fake_sleep,
					      fake_ring};
static struct hvd__bell fake = {.ops = &fake_ops};
static struct hvd__bell *_Atomic slot;

/* Its removal (a process set's), on another thread while the wait sleeps
 * on it. */
static atomic_bool let_go;

static void *gone_later(void *arg)
{
	(void)arg;
	usleep(200000);
	hvd__queue_bell_gone(&slot, &fake);
	atomic_store(&let_go, !atomic_load(&in_sleep));
	return NULL;
}

/* How long hvd__queue_wait(ms, bell) took, in ms, with fn (not NULL)
 * run on another thread meanwhile. */
static long long timed_wait(double ms, struct hvd__bell *bell,
			    void *(*fn)(void *))
{
	long long t0 = hvd__now_us();
	pthread_t t;
	bool started;

	atomic_store(&slot, bell);
	started = fn != NULL && pthread_create(&t, NULL, fn, NULL) == 0;
	hvd__queue_wait(ms, true, false, &slot);
	if (started)
		pthread_join(t, NULL);
	return (hvd__now_us() - t0) / 1000;
}

/* The waits between cycles for a late peer (rounds.c): a rank whose own
 * collective waits keeps to the cycle time; over MPI, which has no bell,
 * after LATE_PEER_US (20 ms) it tells the others (HVD__SETS_WAIT) to keep
 * to it too, where an idle rank's waits grow to HVD__IDLE_WAIT_MS. */
static void test_late_peer(void)
{
	struct hvd__engine e = {0};
	struct hvd__req r = {0};
	struct hvd__bell *bell;
	bool mpi = hvd__g.mpi;

	e.k.cycle_ms = 1;
	e.idle_cycles = 10;
	/* Idle: the waits grow, and nothing is told. */
	CHECK(hvd__round_wait(&e, &bell) == HVD__IDLE_WAIT_MS);
	CHECK(hvd__round_told(&e) == HVD__SETS_IDLE);
	/* Its own collective waits: the cycle time, on any transport. */
	e.pending_local = &r;
	e.came_us = hvd__now_us() - 30000;
	hvd__g.mpi = false;
	CHECK(hvd__round_wait(&e, &bell) == 1);
	CHECK(hvd__round_told(&e) == HVD__SETS_IDLE); /* the bell wakes it */
	hvd__g.mpi = true;
	CHECK(hvd__round_wait(&e, &bell) == 1);
	CHECK(hvd__round_told(&e) == HVD__SETS_WAIT);
	/* Not yet 20 ms: it meets the late peer spinning in MPI. */
	e.came_us = hvd__now_us() - 5000;
	CHECK(hvd__round_told(&e) == HVD__SETS_IDLE);
	/* How busy its sets were is told as before. */
	e.came_us = hvd__now_us() - 30000;
	e.sets_busy = HVD__SETS_RAN;
	CHECK(hvd__round_told(&e) == HVD__SETS_RAN);
	/* The idle peer, told: the cycle time, not grown. */
	e.sets_busy = HVD__SETS_IDLE;
	e.pending_local = NULL;
	e.peers_busy = HVD__SETS_WAIT;
	CHECK(hvd__round_wait(&e, &bell) == 1);
	CHECK(hvd__round_told(&e) == HVD__SETS_IDLE);
	hvd__g.mpi = mpi;
}

/* The engine owner's wait for a late peer ends when a peer starts the
 * next agreement, or a waker of the queue rings the bell it sleeps on; a
 * wait on no bell lasts its time. A bell that goes (its set removed) is
 * let go at once, and no later wait takes it. */
static void test_queue_bell(void)
{
	long long took;

	hvd__queue_reset();
	atomic_store(&calls, true);
	took = timed_wait(100, NULL, NULL);
	CHECK(took >= 90);
	took = timed_wait(5000, &fake, NULL);
	CHECK(took < 2000);
	atomic_store(&calls, false);
	took = timed_wait(5000, &fake, call_later);
	CHECK(took >= 150 && took < 2500);
	atomic_store(&calls, false);
	atomic_store(&rings, 0);
	took = timed_wait(5000, &fake, shut_later);
	CHECK(took >= 150 && took < 2500);
	CHECK(atomic_load(&rings) > 0);
	hvd__queue_reset();
	atomic_store(&calls, false);
	atomic_store(&rings, 0);
	took = timed_wait(5000, &fake, gone_later);
	CHECK(took >= 150 && took < 2500);
	CHECK(atomic_load(&slot) == NULL);
	CHECK(atomic_load(&rings) > 0);
	CHECK(atomic_load(&let_go));
	/* Gone with no wait on it: at once. */
	atomic_store(&slot, &fake);
	hvd__queue_bell_gone(&slot, &fake);
	CHECK(atomic_load(&slot) == NULL);
	hvd__queue_reset();
}

/* bell.c's bell over a transport's connections: socket pairs stand for
 * the connections to peers 1 to fake_n - 1 of rank 0. */
#define FAKE_MAX 12
static int pair[FAKE_MAX][2];
static int fake_n = 3;

static int fake_watch(void *t, struct pollfd *fds, int max)
{
	int r;

	(void)t;
	for (r = 0; r < fake_n && r < max; r++)
		fds[r] = (struct pollfd){r == 0 ? -1 : pair[r][0], POLLIN, 0};
	return r;
}

static void *peer_sends(void *arg)
{
	(void)arg;
	usleep(200000);
	if (write(pair[1][1], "x", 1) != 1)
		return NULL;
	return NULL;
}

static struct hvd__bell *net;

static void *rings_later(void *arg)
{
	(void)arg;
	usleep(200000);
	atomic_store(&calls, true); /* the work, then the ring */
	net->ops->ring(net);
	return NULL;
}

static bool called_now(void)
{
	return atomic_load(&calls);
}

/* How long net's sleep of ms took, in ms, with fn run meanwhile. */
static long long timed_sleep(double ms, void *(*fn)(void *))
{
	long long t0 = hvd__now_us();
	pthread_t t;
	bool started = fn != NULL && pthread_create(&t, NULL, fn, NULL) == 0;

	net->ops->sleep(net, ms, called_now);
	if (started)
		pthread_join(t, NULL);
	return (hvd__now_us() - t0) / 1000;
}

/* Over the network, a peer's first bytes of its next agreement, or this
 * rank's own work (a ring), end the sleep; nothing: it lasts its time.
 * A process set's bell (over a group: algo/group.h) wakes for its own
 * ranks' bytes only. */
static void test_net_bell(void)
{
	static const struct hvd__transport_ops ops = {.name = "pairs",
						      .watch = fake_watch};
	struct hvd__comm c = {0, 3, &ops, NULL}, g;
	static const struct hvd__transport_ops blind = {.name = "blind"};
	struct hvd__comm one = {0, 1, &ops, NULL}, other = {0, 2, &blind, NULL};
	const int members[2] = {0, 2};
	char x;

	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pair[1]) == 0);
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pair[2]) == 0);
	net = hvd__bell_open(&c, NULL);
	CHECK(net != NULL);
	if (net == NULL)
		return;
	atomic_store(&calls, false);
	CHECK(!net->ops->called(net));
	CHECK(timed_sleep(100, NULL) >= 90);
	CHECK(timed_sleep(5000, peer_sends) < 2500);
	CHECK(net->ops->called(net));
	CHECK(read(pair[1][0], &x, 1) == 1);
	CHECK(!net->ops->called(net));
	CHECK(timed_sleep(5000, rings_later) < 2500);
	/* Work there already: no sleep; one rang meanwhile is drained. */
	CHECK(timed_sleep(5000, NULL) < 2500);
	atomic_store(&calls, false);
	CHECK(timed_sleep(100, NULL) >= 90);
	hvd__bell_close(net);
	/* The set of ranks 0 and 2: rank 1's bytes do not end its sleep. */
	CHECK(hvd__group_new(&c, members, 2, 0, &g) == HVD_OK);
	net = hvd__bell_open(&g, NULL);
	CHECK(net != NULL);
	if (net != NULL) {
		CHECK(timed_sleep(300, peer_sends) >= 290);
		CHECK(!net->ops->called(net));
		CHECK(read(pair[1][0], &x, 1) == 1);
		CHECK(write(pair[2][1], "y", 1) == 1);
		CHECK(net->ops->called(net));
		CHECK(timed_sleep(5000, NULL) < 2500);
		hvd__bell_close(net);
	}
	g.ops->close(g.t);
	/* One rank, or a transport that cannot be watched (MPI), or a
	 * group over one: none. */
	CHECK(hvd__bell_open(&one, NULL) == NULL);
	CHECK(hvd__bell_open(&other, NULL) == NULL);
	CHECK(hvd__bell_open(NULL, NULL) == NULL);
	CHECK(hvd__group_new(&other, members, 2, 0, &g) == HVD_OK);
	CHECK(hvd__bell_open(&g, NULL) == NULL);
	g.ops->close(g.t);
	for (int r = 1; r < 3; r++) {
		close(pair[r][0]);
		close(pair[r][1]);
	}
}

/* A rank of many watches only the connections through which its next
 * agreement can reach it first (algo/ring.h's sources): rank 0 of 12,
 * ranks 11 (the ring's left), 8, 1, 2 and 4 (recursive doubling's). A
 * late peer elsewhere reaches it through them; bytes from the others
 * neither end its sleep nor count. */
static void test_net_bell_sources(void)
{
	static const struct hvd__transport_ops ops = {.name = "pairs",
						      .watch = fake_watch};
	struct hvd__comm c = {0, FAKE_MAX, &ops, NULL};
	char x;
	int r, ok = 1;

	for (r = 1; r < FAKE_MAX && ok; r++)
		ok = socketpair(AF_UNIX, SOCK_STREAM, 0, pair[r]) == 0;
	CHECK(ok);
	if (!ok)
		return;
	fake_n = FAKE_MAX;
	net = hvd__bell_open(&c, NULL);
	CHECK(net != NULL && net->n == 5);
	for (r = 1; net != NULL && r < FAKE_MAX; r++) {
		bool source = r == 11 || r == 8 || r == 1 || r == 2 || r == 4;

		CHECK(write(pair[r][1], "z", 1) == 1);
		CHECK(net->ops->called(net) == source);
		CHECK(read(pair[r][0], &x, 1) == 1);
	}
	atomic_store(&calls, false);
	if (net != NULL) {
		CHECK(timed_sleep(300, peer_sends) < 250); /* rank 1 */
		CHECK(read(pair[1][0], &x, 1) == 1);
	}
	hvd__bell_close(net);
	fake_n = 3;
	for (r = 1; r < FAKE_MAX; r++) {
		close(pair[r][0]);
		close(pair[r][1]);
	}
}

int main(void)
{
	RUN(test_results_and_cache);
	RUN(test_mismatch);
	RUN(test_gpu_burst);
	RUN(test_gpu_burst_head);
	RUN(test_late_peer);
	RUN(test_queue_bell);
	RUN(test_net_bell);
	RUN(test_net_bell_sources);
	return tap_done();
}
