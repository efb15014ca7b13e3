/* test_shm.c: the shared segment of one host's ranks (core/transport/shm.h), with
 * real processes: 1 to 4 ranks meet, pass barriers, and allreduce pieces
 * larger than a slot (several chunks, both slot sets) and smaller than
 * the rank count; a peer that dies fails the others at once; a rank
 * asleep on its bell wakes when a peer arrives at the next round, or its
 * own work rings it; an opening that waits for the host's other ranks
 * gives up as an elastic world ends (a reset while the runtime starts),
 * and so does the start of a host's ranks (algo/hier.h) around it.
 * Also the data path's copy (hvd__copy, util/reduce.c), at every alignment. */
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "algo/hier.h"
#include "proto/rendezvous.h"
#include "proto/worker_env.h"
#include "util/internal.h"
#include "util/reduce.h"
#include "transport/shm.h"
#include "transport/tcp.h"
#include "tap.h"

#define SLOT 4096
#define BIG_SLOT (256 << 10)

/* Rank r's element i, and the sum over n ranks. */
static float elem(int r, size_t i)
{
	return (float)(r + 1) * (float)(i % 97);
}

/* A reduce-scatter over several slot-fulls: each rank keeps its own
 * window of the sum (not cut at a slot's edge), the rest of its buffer
 * untouched. */
static int reduce_keep(struct hvd__shm *s, int lrank, int lsize)
{
	size_t n = 5 * SLOT / sizeof(float) + 7, i;
	size_t lo = n * (size_t)lrank / (size_t)lsize;
	size_t hi = n * (size_t)(lrank + 1) / (size_t)lsize;
	float *x = malloc(n * sizeof(float));
	int rc = 0;

	for (i = 0; i < n; i++)
		x[i] = elem(lrank, i);
	if (hvd__shm_reduce_keep(s, NULL, x, n * sizeof(float),
				 lo * sizeof(float), hi * sizeof(float),
				 HVD_FLOAT32, HVD_SUM, 5000) != HVD_OK)
		rc = 20;
	for (i = 0; rc == 0 && i < n; i++)
		if (x[i] != (i >= lo && i < hi
				     ? (float)(lsize * (lsize + 1) / 2) *
					       (float)(i % 97)
				     : elem(lrank, i)))
			rc = 21;
	free(x);
	return rc;
}

/* Bytes rank `from` sends rank `to` in the alltoall: some none, some
 * several slot-fulls; none to itself (that block is the caller's). */
static size_t a2a_len(int from, int to)
{
	return (size_t)((from + 2 * to) % 3) * 3000;
}

static int alltoall(struct hvd__shm *s, int lrank, int lsize)
{
	size_t sb[4], so[4], rb[4], ro[4], st = 0, rt = 0, i;
	unsigned char *send, *out;
	int p, rc = 0;

	for (p = 0; p < lsize; p++) {
		sb[p] = a2a_len(lrank, p);
		so[p] = st;
		st += sb[p];
		rb[p] = a2a_len(p, lrank);
		ro[p] = rt;
		rt += rb[p];
	}
	send = malloc(st + 1);
	out = malloc(rt + 1);
	for (p = 0; p < lsize; p++)
		for (i = 0; i < sb[p]; i++)
			send[so[p] + i] = (unsigned char)(i + 10 * lrank + p);
	if (hvd__shm_alltoallv(s, send, sb, so, out, rb, ro, 5000) != HVD_OK)
		rc = 22;
	for (p = 0; rc == 0 && p < lsize; p++)
		for (i = 0; i < rb[p]; i++)
			if (out[ro[p] + i] !=
			    (unsigned char)(i + 10 * p + lrank))
				rc = 23;
	free(send);
	free(out);
	return rc;
}

/* Broadcasts from every root, of 0 bytes to several slot sets; then
 * allgathers of blocks that differ per rank (one empty, one several
 * slots long), every block's bytes telling whose they are. */
static int bcast_gather(struct hvd__shm *s, int lrank, int lsize)
{
	static const size_t sizes[] = {0, 1, 4096, 3 * 4096 * 4 + 5};
	size_t z, i, len[4], total, at;
	unsigned char *b;
	int root, p, rc;

	for (z = 0; z < sizeof(sizes) / sizeof(*sizes); z++)
		for (root = 0; root < lsize; root++) {
			b = malloc(sizes[z] + 1);
			for (i = 0; i < sizes[z]; i++)
				b[i] = (unsigned char)(lrank == root
							       ? (i * 7 + root)
							       : 0xee);
			if (hvd__shm_broadcast(s, b, sizes[z], root, 5000) !=
			    HVD_OK)
				return 16;
			for (i = 0; i < sizes[z]; i++)
				if (b[i] != (unsigned char)(i * 7 + root))
					return 17;
			free(b);
		}
	for (p = 0, total = 0; p < lsize; p++) {
		len[p] = p == 1 ? 0 : (size_t)(p + 1) * 5000 + 3;
		total += len[p];
	}
	b = malloc(total + 1);
	for (p = 0, at = 0; p < lsize; at += len[p], p++)
		for (i = 0; i < len[p]; i++)
			b[at + i] =
				(unsigned char)(p == lrank ? i + 31 * p : 0xee);
	if (hvd__shm_allgatherv(s, b, len, 5000) != HVD_OK)
		return 18;
	for (p = 0, at = 0; p < lsize; at += len[p], p++)
		for (i = 0; i < len[p]; i++)
			if (b[at + i] != (unsigned char)(i + 31 * p))
				return 19;
	free(b);
	rc = reduce_keep(s, lrank, lsize);
	return rc != 0 ? rc : alltoall(s, lrank, lsize);
}

/* Rank r's element i of the average: sums that round. */
static float inexact(int r, size_t i)
{
	return 0.1f * (float)(r + 1) + 1e-3f * (float)(i % 1013);
}

/* The float average of several slot-fulls of a segment with larger slots
 * (each rank's slice reduced in blocks, in three pieces): every element
 * has the bits of the reduction in the slice owner's order (its own value,
 * then the others' by rank, then scaled by 1/size), on every rank. */
static int average_bits(int lrank, int lsize, const char *name)
{
	size_t n = 3 * BIG_SLOT / sizeof(float) + 11, i, ne;
	size_t chunk = BIG_SLOT / sizeof(float), c, off;
	float *x = malloc(n * sizeof(float)), want;
	struct iovec v[3];
	struct hvd__shm *s;
	char big[80];
	int rc = 0, p, r;

	snprintf(big, sizeof(big), "%s-big", name);
	if (x == NULL ||
	    hvd__shm_open(&s, lrank, lsize, big, BIG_SLOT, 5000) != HVD_OK) {
		free(x);
		return 30;
	}
	for (i = 0; i < n; i++)
		x[i] = inexact(lrank, i);
	v[0] = (struct iovec){x, n / 3 * sizeof(float)};
	v[1] = (struct iovec){x + n / 3, (n / 2 - n / 3) * sizeof(float)};
	v[2] = (struct iovec){x + n / 2, (n - n / 2) * sizeof(float)};
	if (hvd__shm_allreduce_v(s, NULL, v, 3, HVD_FLOAT32, HVD_AVERAGE,
				 5000) != HVD_OK)
		rc = 31;
	for (off = 0; rc == 0 && off < n; off += chunk) {
		ne = n - off < chunk ? n - off : chunk;
		for (c = 0; rc == 0 && c < ne; c++) {
			/* The rank whose slice of the chunk c is in. */
			for (r = 0; c >= ne * (size_t)(r + 1) / (size_t)lsize;)
				r++;
			want = inexact(r, off + c);
			for (p = 0; p < lsize; p++)
				if (p != r)
					want += inexact(p, off + c);
			want /= (float)lsize; /* hvd__divide's */
			if (memcmp(&x[off + c], &want, sizeof(want)) != 0)
				rc = 32;
		}
	}
	hvd__shm_close(s);
	free(x);
	return rc;
}

static int rank_main(int lrank, int lsize, const char *name)
{
	static const size_t sizes[] = {1, 3, 1000, 1024, 5000, 70001};
	struct hvd__shm *s;
	size_t z, i;
	int b, rc = hvd__shm_open(&s, lrank, lsize, name, SLOT, 5000);

	if (rc != HVD_OK)
		return 10;
	for (b = 0; b < 200; b++)
		if (hvd__shm_barrier(s, 5000) != HVD_OK)
			return 11;
	for (z = 0; z < sizeof(sizes) / sizeof(*sizes); z++) {
		size_t n = sizes[z], cut1 = n / 3, cut2 = n / 2;
		float *x = malloc(n * sizeof(float));
		struct iovec v[3];
		float want;

		for (i = 0; i < n; i++)
			x[i] = elem(lrank, i);
		/* Three pieces, as a fused batch lies. */
		v[0] = (struct iovec){x, cut1 * sizeof(float)};
		v[1] = (struct iovec){x + cut1, (cut2 - cut1) * sizeof(float)};
		v[2] = (struct iovec){x + cut2, (n - cut2) * sizeof(float)};
		if (hvd__shm_allreduce_v(s, NULL, v, 3, HVD_FLOAT32, HVD_SUM,
					 5000) != HVD_OK)
			return 12;
		for (i = 0; i < n; i++) {
			want = (float)(lsize * (lsize + 1) / 2) *
			       (float)(i % 97);
			if (x[i] != want)
				return 13;
		}
		free(x);
	}
	{
		/* An average of int32: summed, then divided once,
		 * truncating. */
		int32_t y[5];
		struct iovec one = {y, sizeof(y)};

		for (i = 0; i < 5; i++)
			y[i] = (int32_t)(lrank * 10 + (int)i);
		if (hvd__shm_allreduce_v(s, NULL, &one, 1, HVD_INT32,
					 HVD_AVERAGE, 5000) != HVD_OK)
			return 14;
		for (i = 0; i < 5; i++)
			if (y[i] != (int32_t)((10 * lsize * (lsize - 1) / 2 +
					       lsize * (int)i) /
					      lsize))
				return 15;
	}
	rc = bcast_gather(s, lrank, lsize);
	hvd__shm_close(s);
	return rc != 0 ? rc : average_bits(lrank, lsize, name);
}

static void run_ranks(int lsize)
{
	char name[64];
	pid_t pid[4];
	int r, status;

	snprintf(name, sizeof(name), "hvd-test-shm-%d-%d", (int)getpid(),
		 lsize);
	for (r = 0; r < lsize; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			_exit(rank_main(r, lsize, name));
	}
	for (r = 0; r < lsize; r++) {
		CHECK(waitpid(pid[r], &status, 0) == pid[r]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			printf("#   %d ranks: rank %d status %d\n", lsize, r,
			       status);
	}
}

static void test_one_to_four_ranks(void)
{
	int n;

	for (n = 1; n <= 4; n++)
		run_ranks(n);
}

/* Rank 1 dies after opening (abort false), or lives on but marks the
 * segment broken, as a rank does whose allreduce failed across hosts;
 * ranks 0 and 2 wait in a barrier with a 20 s deadline and must fail with
 * HVD_ECONN within a second. */
/* Another thread of the rank: the elastic watcher, hearing a reset. */
static void *ender(void *arg)
{
	(void)arg;
	usleep(200000);
	hvd__world_end();
	return NULL;
}

/* How rank 1 of 3 fails the others' barrier. */
enum fail { DIES, ABORTS, WORLD_ENDS };

static void peer_fails(enum fail how)
{
	char name[64];
	pid_t pid[3];
	int r, status;

	snprintf(name, sizeof(name), "hvd-test-shm-dead-%d", (int)getpid());
	for (r = 0; r < 3; r++) {
		pid[r] = fork();
		if (pid[r] == 0) {
			struct hvd__shm *s;
			long long t0;
			int rc = hvd__shm_open(&s, r, 3, name, SLOT, 5000);

			if (rc != HVD_OK)
				_exit(10);
			if (r == 1 && how == ABORTS)
				hvd__shm_abort(s);
			if (r == 1 && how != DIES) {
				sleep(2); /* alive, silent */
				_exit(0);
			}
			if (r == 1)
				raise(SIGKILL);
			if (how == WORLD_ENDS) {
				pthread_t t;

				pthread_create(&t, NULL, ender, NULL);
				pthread_detach(t);
			}
			t0 = hvd__now_ms();
			rc = hvd__shm_barrier(s, 20000);
			_exit(rc == HVD_ECONN && hvd__now_ms() - t0 < 1000
				      ? 0
				      : 20);
		}
	}
	for (r = 0; r < 3; r++) {
		CHECK(waitpid(pid[r], &status, 0) == pid[r]);
		if (r == 1 && how == DIES)
			CHECK(WIFSIGNALED(status));
		else
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

static void test_dead_peer(void)
{
	peer_fails(DIES);
}

static void test_broken_segment(void)
{
	peer_fails(ABORTS);
}

/* Ranks that disagree on the slot size do not share a segment. */
static void test_mismatch(void)
{
	char name[64];
	struct hvd__shm *s;
	pid_t pid;
	int status;

	snprintf(name, sizeof(name), "hvd-test-shm-mm-%d", (int)getpid());
	pid = fork();
	if (pid == 0) {
		int rc = hvd__shm_open(&s, 0, 2, name, SLOT, 3000);

		_exit(rc == HVD_OK ? 0 : 1);
	}
	CHECK(hvd__shm_open(&s, 1, 2, name, 2 * SLOT, 3000) == HVD_EMISMATCH);
	CHECK(waitpid(pid, &status, 0) == pid);
	/* Rank 0 gave its segment away and then waited for a peer that
	 * never came: its barrier times out. */
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

/* The opening of a segment whose other ranks never come, as local rank
 * lrank of 2, its deadline 20 s away: the world's end stops it at once,
 * with HVD_ECONN. */
static void world_ends_opening(int lrank)
{
	char name[64];
	struct hvd__shm *s = NULL;
	long long t0 = hvd__now_ms();
	pthread_t t;
	int rc;

	snprintf(name, sizeof(name), "hvd-test-shm-end-%d-%d", (int)getpid(),
		 lrank);
	CHECK(pthread_create(&t, NULL, ender, NULL) == 0);
	rc = hvd__shm_open(&s, lrank, 2, name, SLOT, 20000);
	pthread_join(t, NULL);
	CHECK(rc == HVD_ECONN && s == NULL);
	CHECK(hvd__now_ms() - t0 < 10000);
	/* The next world's openings wait as before: to the deadline. */
	hvd__world_begin();
	t0 = hvd__now_ms();
	CHECK(hvd__shm_open(&s, lrank, 2, name, SLOT, 300) == HVD_ETIMEDOUT);
	CHECK(hvd__now_ms() - t0 >= 300);
}

/* Local rank 0, waiting for its peer to take the segment; local rank 1,
 * waiting for rank 0 to hand it out; ranks in a round that a live peer
 * never comes to (the elastic watcher aborts no segment). */
static void test_world_ends(void)
{
	world_ends_opening(0);
	world_ends_opening(1);
	peer_fails(WORLD_ENDS);
}

/* Rank r of 2 on one host, over TCP, in a process of its own: the start
 * of the host's ranks (hvd__hier_start) while the world ends. Each rank
 * has a secret of its own, so their segments' names differ and neither
 * opening meets the other: the world's end stops both, HVD_ECONN with no
 * segment (the start told of the segment's size even so, and crashed on
 * the segment it had not got: SIGSEGV). */
static void hier_rank(int r, struct hvd__tcp *t, char *const *addrs)
{
	static const uint8_t token[HVD__TOKEN_LEN] =
		"a token for the hier test.....";
	char secret[2 * RDV_SECRET_LEN + 1];
	struct hvd__comm c = {.rank = r, .size = 2, .ops = &hvd__tcp_ops};
	struct hvd__hier hi;
	pthread_t th;
	int rc;

	memset(secret, r == 0 ? 'a' : 'b', 2 * RDV_SECRET_LEN);
	secret[2 * RDV_SECRET_LEN] = '\0';
	setenv(wenv_vars[WENV_SECRET].name, secret, 1);
	hvd__g.local_rank = r;
	hvd__g.local_size = 2;
	hvd__g.cross_rank = 0;
	hvd__g.cross_size = 1;
	if (hvd__tcp_connect(t, r, 2, addrs, token, 10000) != HVD_OK)
		_exit(10);
	c.t = t;
	pthread_create(&th, NULL, ender, NULL);
	rc = hvd__hier_start(&hi, &c, true);
	pthread_join(th, NULL);
	if (rc != HVD_ECONN || hi.shm != NULL)
		_exit(20);
	hvd__hier_stop(&hi);
	_exit(0);
}

static void test_world_ends_hier(void)
{
	char addr[2][64], *addrs[2] = {addr[0], addr[1]};
	struct hvd__tcp *t[2] = {NULL, NULL};
	pid_t pid[2];
	int r, status;

	for (r = 0; r < 2; r++)
		CHECK(hvd__tcp_new(&t[r], "127.0.0.1", addr[r],
				   sizeof(addr[r])) == HVD_OK);
	if (t[0] == NULL || t[1] == NULL)
		return;
	for (r = 0; r < 2; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			hier_rank(r, t[r], addrs);
	}
	for (r = 0; r < 2; r++) {
		CHECK(waitpid(pid[r], &status, 0) == pid[r]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		hvd__tcp_free(t[r]);
	}
}

static atomic_bool flag;

static bool never(void)
{
	return false;
}

static bool flagged(void)
{
	return atomic_load(&flag);
}

/* Another thread of the rank makes work, then rings. */
static void *ringer(void *arg)
{
	usleep(200000);
	atomic_store(&flag, true);
	hvd__shm_bell_ring(arg);
	return NULL;
}

/* The sleep on the futex, or (a socket: sock >= 0) in poll(). */
static void bsleep(struct hvd__shm *s, double ms, bool (*woken)(void), int sock)
{
	struct pollfd pf = {sock, POLLIN, 0};

	hvd__shm_bell_sleep(s, ms, woken, &pf, sock >= 0 ? 1 : 0);
}

/* One rank of test_bells; 0 when all went as it should. */
static int bell_rank(int r, const char *name, bool polls)
{
	struct hvd__shm *s;
	long long t0, took;
	pthread_t t;
	int sock = -1, k;

	if (hvd__shm_open(&s, r, 3, name, SLOT, 5000) != HVD_OK)
		return 10;
	if (polls && (sock = hvd__shm_bell_socket(s)) < 0)
		return 19;
	if (r == 0) {
		/* Late: the others sleep until it arrives at the round. */
		usleep(300000);
		return hvd__shm_barrier(s, 5000) == HVD_OK ? 0 : 11;
	}
	if (hvd__shm_bell_called(s))
		return 12;
	t0 = hvd__now_ms();
	bsleep(s, 5000, never, sock);
	took = hvd__now_ms() - t0;
	if (took < 250 || took > 2500 || !hvd__shm_bell_called(s))
		return 13;
	if (hvd__shm_barrier(s, 5000) != HVD_OK || hvd__shm_bell_called(s))
		return 14;
	/* No peer ahead, no ring: the sleep lasts its time. A peer's ring
	 * for the round before may still come (it saw this rank asleep and
	 * behind, then lost the CPU before it rang): one early end, not a
	 * spin. */
	t0 = hvd__now_ms();
	for (k = 0; (took = hvd__now_ms() - t0) < 100 && k < 3; k++)
		bsleep(s, (double)(100 - took), never, sock);
	if (k > 2 || took > 2500)
		return 15;
	/* Work already there: no sleep at all. */
	atomic_store(&flag, true);
	t0 = hvd__now_ms();
	bsleep(s, 5000, flagged, sock);
	if (hvd__now_ms() - t0 > 2500)
		return 16;
	/* Work that comes during the sleep rings it. */
	atomic_store(&flag, false);
	if (pthread_create(&t, NULL, ringer, s) != 0)
		return 17;
	t0 = hvd__now_ms();
	bsleep(s, 5000, flagged, sock);
	took = hvd__now_ms() - t0;
	pthread_join(t, NULL);
	if (took > 2500 || !atomic_load(&flag))
		return 18;
	hvd__shm_close(s);
	return 0;
}

static void bells(bool polls)
{
	char name[64];
	pid_t pid[3];
	int r, status;

	snprintf(name, sizeof(name), "hvd-test-shm-bell-%d-%d", (int)getpid(),
		 polls);
	for (r = 0; r < 3; r++) {
		pid[r] = fork();
		if (pid[r] == 0)
			_exit(bell_rank(r, name, polls));
	}
	for (r = 0; r < 3; r++) {
		CHECK(waitpid(pid[r], &status, 0) == pid[r]);
		CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
		if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
			printf("#   bells (%s): rank %d status %d\n",
			       polls ? "poll" : "futex", r, status);
	}
}

/* The futex's bells (one host), and the sockets' (a job of several
 * hosts: the sleep polls the connections across too). */
static void test_bells(void)
{
	bells(false);
	bells(true);
}

/* hvd__copy: the bytes of memcpy, and none beside them, for sizes
 * around its small copies, its 64-byte blocks and a slot, from and to
 * every alignment within a cache line that matters (source and
 * destination alike). */
static void test_copy_any_alignment(void)
{
	static const size_t sizes[] = {0,    1,	    63,		  64,	65,
				       1023, 1024,  1025,	  4095, 4096,
				       4097, 65549, BIG_SLOT + 77};
	static const size_t offs[] = {0, 1, 7, 16, 31, 32, 48, 63};
	size_t max = BIG_SLOT + 77 + 128, i, a, b, k, bad = 0;
	unsigned char *src = malloc(max), *dst = malloc(max);

	CHECK(src != NULL && dst != NULL);
	if (src == NULL || dst == NULL)
		goto out;
	for (i = 0; i < max; i++)
		src[i] = (unsigned char)(i * 131 + 7);
	for (k = 0; k < sizeof(sizes) / sizeof(sizes[0]); k++)
		for (a = 0; a < sizeof(offs) / sizeof(offs[0]); a++)
			for (b = 0; b < sizeof(offs) / sizeof(offs[0]); b++) {
				size_t n = sizes[k], d = offs[a], so = offs[b];

				memset(dst, 0xa5, max);
				hvd__copy(dst + d, src + so, n);
				if (memcmp(dst + d, src + so, n) != 0)
					bad++;
				for (i = 0; i < d; i++)
					bad += dst[i] != 0xa5;
				for (i = d + n; i < d + n + 64; i++)
					bad += dst[i] != 0xa5;
			}
	CHECK(bad == 0);
out:
	free(src);
	free(dst);
}

int main(void)
{
	RUN(test_one_to_four_ranks);
	RUN(test_dead_peer);
	RUN(test_broken_segment);
	RUN(test_mismatch);
	RUN(test_bells);
	RUN(test_world_ends);
	RUN(test_world_ends_hier);
	RUN(test_copy_any_alignment);
	return tap_done();
}
