/* test_ncclcheck.c: `hvdrun check --nccl`'s steps (lib/check/ncclcheck.h)
 * without a GPU: which hosts run ranks, NCCL's own lines as NCCL 2.x
 * writes them (transports within and between hosts, IB, RoCE and
 * sockets, a WARN), the worker's lines, the judgement and its findings;
 * and the job's runner with launch functions that print, fail, hang and
 * ignore SIGTERM. */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check/linkplan.h"
#include "check/ncclcheck.h"
#include "tap.h"

static const struct hl_host hosts[3] = {{.name = "a", .slots = 2},
					{.name = "b", .slots = 2},
					{.name = "c", .slots = 2}};

/* Hosts a and b with 2 GPUs and NCCL, c with none (CUDA's error). */
static void three(struct hl_netcheck *nc)
{
	size_t i;

	memset(nc, 0, sizeof(*nc));
	nc->h = calloc(3, sizeof(*nc->h));
	nc->n = nc->nusable = 3;
	for (i = 0; i < 3; i++) {
		hl_nc_host_init(&nc->h[i], &hosts[i], true);
		nc->h[i].probed = nc->h[i].usable = true;
	}
	for (i = 0; i < 2; i++) {
		hl_strvec_push(&nc->h[i].gpu, "cuda_devices\t2");
		hl_strvec_push(&nc->h[i].gpu, "nccl\t22809");
	}
	hl_strvec_push(&nc->h[2].gpu, "cuda_devices\t-1");
	hl_strvec_push(&nc->h[2].gpu,
		       "cuda_error\tno CUDA-capable device is detected");
}

static void feed(struct hl_ncclcheck *k, const char *const *lines)
{
	for (; *lines != NULL; lines++)
		hl_ncc_take_line(k, *lines);
}

/* Every rank of 4 through to the end, rank 0 with its result. */
static const char *const finished[] = {
	"[0]<stdout>:hvd-ncclcheck: stage init",
	"[0]<stdout>:hvd-ncclcheck: stage gpu",
	"[0]<stdout>:hvd-ncclcheck: device GPU 0 (bus 0000:3b:00.0)",
	"[0]<stdout>:hvd-ncclcheck: stage nccl",
	"[0]<stdout>:hvd-ncclcheck: small ok",
	"[0]<stdout>:hvd-ncclcheck: stage measure",
	"[0]<stdout>:hvd-ncclcheck: result bytes=67108864 iters=5 "
	"algbw=20.500 busbw=30.750",
	"[0]<stdout>:hvd-ncclcheck: stage done",
	"[1]<stdout>:hvd-ncclcheck: stage nccl",
	"[1]<stdout>:hvd-ncclcheck: small ok",
	"[1]<stdout>:hvd-ncclcheck: stage done",
	"[2]<stdout>:hvd-ncclcheck: stage nccl",
	"[2]<stdout>:hvd-ncclcheck: small ok",
	"[2]<stdout>:hvd-ncclcheck: stage done",
	"[3]<stdout>:hvd-ncclcheck: stage nccl",
	"[3]<stdout>:hvd-ncclcheck: small ok",
	"[3]<stdout>:hvd-ncclcheck: stage done",
	NULL};

static const char *const transports[] = {
	"[0]<stdout>:a:1234:1250 [0] NCCL INFO NET/IB : Using "
	"[0]mlx5_0:1/RoCE [1]mlx5_1:1/IB [RO]; OOB eth0:10.0.0.1<0>",
	"[0]<stdout>:a:1234:1250 [0] NCCL INFO Using network IB",
	"[0]<stdout>:a:1234:1250 [0] NCCL INFO Channel 00/0 : 0[0] -> 1[1] "
	"via P2P/IPC/read",
	"[1]<stdout>:a:1235:1251 [1] NCCL INFO Channel 00/0 : 1[1] -> 2[0] "
	"[send] via NET/IB/0/GDRDMA",
	"[2]<stdout>:b:77:80 [0] NCCL INFO Channel 00/0 : 1[1] -> 2[0] "
	"[receive] via NET/IB/0/GDRDMA",
	"[2]<stdout>:b:77:80 [0] NCCL INFO Channel 01/0 : 2[0] -> 3[1] via "
	"SHM/direct/direct",
	"[3]<stdout>:[2026-05-05 06:16:47] b:78:81 [1] NCCL INFO Channel "
	"00/0 : 3[1] -> 0[0] [send] via NET/Socket/0",
	"[3]<stdout>:b:78:81 [1] NCCL INFO NET/Socket : Using "
	"[0]eth0:10.0.0.2<0>",
	/* Not a channel of this job's ranks, malformed devices, and noise:
	 * nothing taken. */
	"[0]<stdout>:a:1234:1250 [0] NCCL INFO NET/IB : Using [0 [x] [2] "
	"[3mlx5_9 [",
	"[3]<stdout>:b:78:81 [1] NCCL INFO Channel 00/0 : 9[1] -> 0[0] via "
	"P2P/CUMEM",
	"[9]<stdout>:hvd-ncclcheck: stage done",
	"[3]<stdout>:b:78:81 [1] NCCL INFO comm 0x1 rank 3 nRanks 4 nNodes 2",
	NULL};

static bool has(const struct hl_strvec *v, const char *s)
{
	size_t i;

	for (i = 0; i < v->n; i++)
		if (strcmp(v->v[i], s) == 0)
			return true;
	return false;
}

static void test_plan(void)
{
	struct hl_netcheck nc;
	struct hl_ncclcheck k;

	three(&nc);
	nc.h[1].usable = false;
	CHECK(hl_ncc_plan(&k, &nc, 5000) == HL_OK);
	CHECK(k.not_run == NULL && k.nranks == 2);
	CHECK(k.h[0].nranks == 2 && k.h[0].first_rank == 0);
	CHECK(k.h[0].reason == NULL);
	CHECK_STR(k.h[1].reason, "not usable (see above)");
	CHECK_STR(k.h[2].reason,
		  "no GPU: CUDA: no CUDA-capable device is detected");
	CHECK(k.r[0].host == 0 && k.r[1].host == 0);
	hl_ncc_close(&k);
	/* No NCCL on a: nobody can run. */
	hl_strvec_close(&nc.h[0].gpu);
	hl_strvec_push(&nc.h[0].gpu, "cuda_devices\t2");
	CHECK(hl_ncc_plan(&k, &nc, 5000) == HL_OK);
	CHECK(k.nranks == 0);
	CHECK_HAS(k.h[0].reason, "no NCCL library");
	CHECK_STR(k.not_run, "no usable host has a GPU with NCCL");
	CHECK(hl_ncc_judge(&k, &nc) == HL_OK);
	/* a and c are usable: a finding each, b is reported already. */
	CHECK(hl_nc_count(&nc, HL_NCF_NCCL) == 2);
	CHECK(hl_nc_status(&nc, false) == 1);
	hl_ncc_close(&k);
	hl_netcheck_close(&nc);
}

static void test_transports(void)
{
	struct hl_netcheck nc;
	struct hl_ncclcheck k;

	three(&nc);
	CHECK(hl_ncc_plan(&k, &nc, 5000) == HL_OK);
	CHECK(k.nranks == 4 && k.r[2].host == 1 && k.r[3].host == 1);
	feed(&k, transports);
	feed(&k, finished);
	CHECK(hl_ncc_judge(&k, &nc) == HL_OK);
	CHECK(k.h[0].joined && k.h[1].joined && !k.h[2].joined);
	CHECK(k.h[0].within.n == 1 && has(&k.h[0].within, "P2P/IPC"));
	CHECK(k.h[0].between.n == 1 &&
	      has(&k.h[0].between, "NET/IB (GPUDirect RDMA)"));
	CHECK(has(&k.h[0].network, "mlx5_0:1 (RoCE)"));
	CHECK(has(&k.h[0].network, "mlx5_1:1 (IB)"));
	CHECK(has(&k.h[0].network, "network IB"));
	CHECK(k.h[0].network.n == 3);
	CHECK(k.h[1].within.n == 1 && has(&k.h[1].within, "SHM"));
	CHECK(k.h[1].between.n == 2 && has(&k.h[1].between, "NET/Socket"));
	CHECK(has(&k.h[1].network, "eth0:10.0.0.2"));
	CHECK(k.bytes == 67108864 && k.iters == 5);
	CHECK(k.busbw_gbs > 30.7 && k.busbw_gbs < 30.8);
	CHECK_STR(k.r[0].device, "GPU 0 (bus 0000:3b:00.0)");
	/* Only c, which has no GPU, is a finding. */
	CHECK(hl_nc_count(&nc, HL_NCF_NCCL) == 1);
	CHECK_HAS(nc.findings[0].text, "c: no GPU");
	hl_ncc_close(&k);
	hl_netcheck_close(&nc);
}

/* b's rank 2 fails in NCCL's start with NCCL's reason; a's ranks are
 * stopped with the job: b is the finding, a is not. */
static void test_failure(void)
{
	static const char *const lines[] = {
		"[0]<stdout>:hvd-ncclcheck: stage nccl",
		"[1]<stdout>:hvd-ncclcheck: stage nccl",
		"[2]<stdout>:hvd-ncclcheck: stage nccl",
		"[2]<stdout>:b:77:80 [0] transport/net_ib.cc:1700 NCCL WARN "
		"NET/IB : Got completion from peer 10.0.0.1<55921> with "
		"status=12",
		"[2]<stdout>:b:77:80 [0] NCCL WARN a second warning",
		"[2]<stdout>:hvd-ncclcheck: fail the first allreduce: "
		"connection lost: ncclCommInitRank: remote process exited",
		"[3]<stderr>:hvd: some line of its own",
		"hvdrun: rank 2 on b exited with status 1; stopping the job",
		NULL};
	struct hl_netcheck nc;
	struct hl_ncclcheck k;

	three(&nc);
	nc.n = 2;
	CHECK(hl_ncc_plan(&k, &nc, 5000) == HL_OK);
	feed(&k, lines);
	CHECK(k.launcher.n == 1);
	CHECK(hl_ncc_judge(&k, &nc) == HL_OK);
	CHECK(!k.h[0].joined && !k.h[1].joined);
	CHECK_STR(k.h[0].reason, "stopped with the job");
	CHECK_HAS(k.h[1].reason, "rank 2: the first allreduce: connection "
				 "lost");
	CHECK_HAS(k.h[1].reason, "; NCCL: NET/IB : Got completion from peer");
	CHECK(hl_nc_count(&nc, HL_NCF_NCCL) == 1);
	CHECK(nc.findings[0].host == 1);
	CHECK(hl_nc_status(&nc, false) == 1);
	hl_ncc_close(&k);
	/* The same ranks, none with a reason of its own: the launcher's
	 * line about the rank says why. */
	CHECK(hl_ncc_plan(&k, &nc, 5000) == HL_OK);
	hl_ncc_take_line(&k, "[2]<stdout>:hvd-ncclcheck: stage gpu");
	hl_ncc_take_line(&k, "hvdrun: rank 2 on b was killed by signal 9 "
			     "(Killed); stopping the job");
	CHECK(hl_ncc_judge(&k, &nc) == HL_OK);
	CHECK_HAS(k.h[1].reason, "rank 2 ended in its GPU's start");
	CHECK_HAS(k.h[1].reason, "killed by signal 9");
	hl_ncc_close(&k);
	nc.n = 3;
	hl_netcheck_close(&nc);
}

/* Hosts that could run ranks, but no job ran (the worker is missing):
 * each is named with why. */
static void test_not_run(void)
{
	struct hl_netcheck nc;
	struct hl_ncclcheck k;

	three(&nc);
	CHECK(hl_ncc_plan(&k, &nc, 5000) == HL_OK);
	k.not_run = strdup("/x/hvd-ncclcheck: No such file or directory");
	CHECK(hl_ncc_judge(&k, &nc) == HL_OK);
	CHECK_STR(k.h[0].reason, "/x/hvd-ncclcheck: No such file or directory");
	CHECK_STR(k.h[1].reason, "/x/hvd-ncclcheck: No such file or directory");
	CHECK(hl_nc_count(&nc, HL_NCF_NCCL) == 3);
	CHECK_STR(nc.findings[0].text,
		  "a: /x/hvd-ncclcheck: No such file or directory");
	hl_ncc_close(&k);
	hl_netcheck_close(&nc);
}

/* Launch functions for the runner, each in its child. */
static int prints(void *arg)
{
	static char big[HL_NCC_LINE_MAX * 2];

	(void)arg;
	printf("[0]<stdout>:hvd-ncclcheck: stage nccl\n");
	memset(big, 'x', sizeof(big) - 1);
	printf("[0]<stdout>:%s\n", big);
	printf("[0]<stdout>:hvd-ncclcheck: small ok\n");
	fflush(stdout);
	fprintf(stderr, "hvdrun: rank 0 on a exited with status 3\n");
	printf("[0]<stdout>:hvd-ncclcheck: stage done");
	return 3;
}

/* How a launch that hangs behaves: whether it ignores SIGTERM, and a
 * descriptor to write its pid to (-1: none). */
struct hang {
	bool ignore_term;
	int pid_fd;
};

static int hangs(void *arg)
{
	const struct hang *h = arg;
	pid_t me = getpid();

	if (h->ignore_term)
		signal(SIGTERM, SIG_IGN);
	if (h->pid_fd >= 0 && write(h->pid_fd, &me, sizeof(me)) != sizeof(me))
		return 1;
	printf("[0]<stdout>:hvd-ncclcheck: stage init\n");
	printf("[0]<stdout>:hvd-ncclcheck: stage gpu\n");
	printf("[0]<stdout>:hvd-ncclcheck: stage nccl\n");
	fflush(stdout);
	for (;;)
		pause();
	return 0;
}

static void test_run(void)
{
	struct hl_netcheck nc;
	struct hl_ncclcheck k;
	char *cause = NULL;

	three(&nc);
	nc.n = 1;
	CHECK(hl_ncc_plan(&k, &nc, 10000) == HL_OK);
	CHECK(hl_ncc_run(&k, prints, NULL, 500, &cause) == HL_OK);
	CHECK(k.ran && !k.timed_out && k.status == 3);
	/* Of the long line its start only; the last line, without its
	 * newline, whole. */
	CHECK(k.r[0].stage == HL_NCC_DONE && k.r[0].small_ok);
	CHECK(k.launcher.n == 1);
	CHECK_STR(k.launcher.v[0], "hvdrun: rank 0 on a exited with status 3");
	hl_ncc_close(&k);
	nc.n = 3;
	hl_netcheck_close(&nc);
}

/* The check killed while its job runs: the job's launcher is told
 * (SIGTERM as its parent dies) and goes. */
static void test_run_orphaned(void)
{
	int p[2];
	pid_t checker, job = 0;
	char stat[64], line[256];
	int i, ws;

	CHECK(pipe(p) == 0);
	checker = fork();
	if (checker == 0) {
		struct hl_netcheck nc;
		struct hl_ncclcheck k;
		char *cause = NULL;
		struct hang h = {false, p[1]};

		close(p[0]);
		three(&nc);
		if (hl_ncc_plan(&k, &nc, 60000) == HL_OK)
			hl_ncc_run(&k, hangs, &h, 300, &cause);
		_exit(0);
	}
	close(p[1]);
	CHECK(read(p[0], &job, sizeof(job)) == sizeof(job));
	close(p[0]);
	kill(checker, SIGKILL);
	waitpid(checker, &ws, 0);
	/* Gone, or a zombie waiting for init. */
	snprintf(stat, sizeof(stat), "/proc/%d/stat", (int)job);
	for (i = 0; i < 300; i++) {
		FILE *f = fopen(stat, "r");
		bool gone = f == NULL || fgets(line, sizeof(line), f) == NULL ||
			    strstr(line, ") Z ") != NULL;

		if (f != NULL)
			fclose(f);
		if (gone)
			break;
		usleep(10000);
	}
	CHECK(job > 0 && i < 300);
}

static void test_run_bounded(void)
{
	int ignore;

	for (ignore = 0; ignore < 2; ignore++) {
		struct hl_netcheck nc;
		struct hl_ncclcheck k;
		char *cause = NULL;
		struct hang h = {ignore == 1, -1};

		three(&nc);
		nc.n = 1;
		CHECK(hl_ncc_plan(&k, &nc, 300) == HL_OK);
		CHECK(hl_ncc_run(&k, hangs, &h, 300, &cause) == HL_OK);
		CHECK(k.timed_out && k.status == -1);
		/* Ignoring SIGTERM costs the grace, not more. */
		CHECK(k.seconds >= 0.3 && k.seconds < 3.0);
		CHECK(k.r[0].stage == HL_NCC_NCCL);
		CHECK(hl_ncc_judge(&k, &nc) == HL_OK);
		CHECK_HAS(k.h[0].reason, "rank 0 had not finished after");
		CHECK_HAS(k.h[0].reason, "in NCCL's start");
		CHECK(hl_nc_count(&nc, HL_NCF_NCCL) == 1);
		hl_ncc_close(&k);
		nc.n = 3;
		hl_netcheck_close(&nc);
	}
}

int main(void)
{
	RUN(test_plan);
	RUN(test_transports);
	RUN(test_failure);
	RUN(test_not_run);
	RUN(test_run);
	RUN(test_run_bounded);
	RUN(test_run_orphaned);
	return tap_done();
}
