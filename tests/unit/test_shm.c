/* test_shm.c: the shared segment of one host's ranks (core/shm.h), with
 * real processes: 1 to 4 ranks meet, pass barriers, and allreduce pieces
 * larger than a slot (several chunks, both slot sets) and smaller than
 * the rank count; a peer that dies fails the others at once. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "shm.h"
#include "tap.h"

#define SLOT 4096

/* Rank r's element i, and the sum over n ranks. */
static float elem(int r, size_t i)
{
	return (float)(r + 1) * (float)(i % 97);
}

static int rank_main(int lrank, int lsize, const char *name)
{
	static const size_t sizes[] = {1, 3, 1000, 1024, 5000, 70001};
	struct hvd__shm *s;
	size_t z, i;
	int b, rc = hvd__shm_open(&s, lrank, lsize, name, SLOT, 200, 5000);

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
	hvd__shm_close(s);
	return 0;
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
static void peer_fails(bool abort)
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
			int rc = hvd__shm_open(&s, r, 3, name, SLOT, 200, 5000);

			if (rc != HVD_OK)
				_exit(10);
			if (r == 1 && abort) {
				hvd__shm_abort(s);
				sleep(2);
				_exit(0);
			}
			if (r == 1)
				raise(SIGKILL);
			t0 = hvd__now_ms();
			rc = hvd__shm_barrier(s, 20000);
			_exit(rc == HVD_ECONN && hvd__now_ms() - t0 < 1000
				      ? 0
				      : 20);
		}
	}
	for (r = 0; r < 3; r++) {
		CHECK(waitpid(pid[r], &status, 0) == pid[r]);
		if (r == 1 && !abort)
			CHECK(WIFSIGNALED(status));
		else
			CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	}
}

static void test_dead_peer(void)
{
	peer_fails(false);
}

static void test_broken_segment(void)
{
	peer_fails(true);
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
		int rc = hvd__shm_open(&s, 0, 2, name, SLOT, 200, 3000);

		_exit(rc == HVD_OK ? 0 : 1);
	}
	CHECK(hvd__shm_open(&s, 1, 2, name, 2 * SLOT, 200, 3000) ==
	      HVD_EMISMATCH);
	CHECK(waitpid(pid, &status, 0) == pid);
	/* Rank 0 gave its segment away and then waited for a peer that
	 * never came: its barrier times out. */
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 1);
}

int main(void)
{
	RUN(test_one_to_four_ranks);
	RUN(test_dead_peer);
	RUN(test_broken_segment);
	RUN(test_mismatch);
	return tap_done();
}
