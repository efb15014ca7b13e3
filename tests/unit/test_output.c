/* test_output.c: output multiplexing: whole prefixed lines, partial lines
 * joined, a last line without newline, over-long lines cut, raw bytes
 * copied to the per-rank file. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include "job/env.h"
#include "launch/output.h"
#include "tap.h"

static char captured[1 << 18];

/* Run fn with a stream whose sink is a temporary file; return what the
 * sink received. */
static const char *capture(void (*fn)(struct hl_outstream *), int rank,
			   int which, bool ts)
{
	char path[] = "/tmp/hvdrun-out-XXXXXX";
	int fd = mkstemp(path);
	struct hl_outstream os;
	ssize_t n;

	unlink(path);
	hl_out_init(&os, rank, which, fd, ts);
	fn(&os);
	hl_out_close(&os);
	lseek(fd, 0, SEEK_SET);
	n = read(fd, captured, sizeof(captured) - 1);
	captured[n > 0 ? n : 0] = '\0';
	close(fd);
	return captured;
}

static void feed_str(struct hl_outstream *os, const char *s)
{
	hl_out_feed(os, s, strlen(s));
}

static void lines(struct hl_outstream *os)
{
	feed_str(os, "one\ntwo\n");
	feed_str(os, "thr");
	feed_str(os, "ee\nfo");
	feed_str(os, "ur");
}

static void test_lines(void)
{
	CHECK_STR(capture(lines, 3, 1, false),
		  "[3]<stdout>:one\n[3]<stdout>:two\n[3]<stdout>:three\n"
		  "[3]<stdout>:four\n");
	CHECK_STR(capture(lines, 0, 2, false),
		  "[0]<stderr>:one\n[0]<stderr>:two\n[0]<stderr>:three\n"
		  "[0]<stderr>:four\n");
}

static void binary(struct hl_outstream *os)
{
	hl_out_feed(os, "a\0b\xff\n\n", 6);
}

static void test_binary_and_empty(void)
{
	const char *out = capture(binary, 1, 1, false);

	CHECK(memcmp(out, "[1]<stdout>:a", 13) == 0);
	CHECK(out[13] == '\0' && out[14] == 'b' &&
	      (unsigned char)out[15] == 0xff);
	CHECK_STR(out + 16, "\n[1]<stdout>:\n");
}

static void long_line(struct hl_outstream *os)
{
	char *big = malloc(HL_OUT_LINE_MAX + 10);

	memset(big, 'x', HL_OUT_LINE_MAX + 10);
	hl_out_feed(os, big, HL_OUT_LINE_MAX + 10);
	free(big);
}

static void test_long_line_cut(void)
{
	const char *out = capture(long_line, 0, 1, false);
	const char *second = strstr(out + 1, "[0]<stdout>:");

	CHECK(second != NULL);
	CHECK(second - out == 12 + HL_OUT_LINE_MAX + 1);
	CHECK_STR(second, "[0]<stdout>:xxxxxxxxxx\n");
}

static void one(struct hl_outstream *os)
{
	feed_str(os, "stamped\n");
}

static void test_timestamp(void)
{
	const char *out = capture(one, 2, 1, true);

	/* 2026-11-21T11:42:07.123Z[2]<stdout>:stamped */
	CHECK(strlen(out) == 24 + 20);
	CHECK(out[4] == '-' && out[10] == 'T' && out[19] == '.' &&
	      out[23] == 'Z');
	CHECK_STR(out + 24, "[2]<stdout>:stamped\n");
}

static void test_tee(void)
{
	char path[] = "/tmp/hvdrun-tee-XXXXXX",
	     sink[] = "/tmp/hvdrun-snk-XXXXXX";
	struct hl_outstream os;
	char buf[64];
	ssize_t n;
	int tee = mkstemp(path), s = mkstemp(sink);

	unlink(path);
	unlink(sink);
	hl_out_init(&os, 0, 1, s, false);
	os.tee_fd = tee;
	feed_str(&os, "raw\npart");
	hl_out_close(&os);
	lseek(tee, 0, SEEK_SET);
	n = read(tee, buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = '\0';
	CHECK_STR(buf, "raw\npart"); /* the file gets the bytes as written */
	close(tee);
	close(s);
}

static void test_rank_env(void)
{
	struct hl_hostlist hl;
	struct hl_plan p;
	struct hl_envspec es = {0};
	struct hl_place place;
	struct hl_strvec env;
	char *base[] = {"PATH=/bin", "RANK=stale", "KEEP=1", NULL};
	size_t i;
	int seen = 0;

	hl_hostlist_init(&hl);
	CHECK(hl_hosts_parse_list("n1:2,n2:2", &hl, NULL) == HL_OK);
	CHECK(hl_plan_init(&p, &hl, 4, NULL, NULL) == HL_OK);
	hl_strvec_init(&es.set);
	hl_strvec_init(&es.forward);
	CHECK(hl_strvec_push(&es.set, "KEEP=2") == HL_OK);
	es.master_port = 29500;
	CHECK(hl_master_addr(&es, "n1", NULL) == HL_OK);
	hl_place_of(&place, &p, &hl, 3);
	CHECK(hl_env_build(base, &es, &place, &env) == HL_OK);
	for (i = 0; i < env.n; i++) {
		static const char *const want[] = {"PATH=/bin",
						   "RANK=3",
						   "KEEP=2",
						   "HOROVOD_RANK=3",
						   "HOROVOD_SIZE=4",
						   "HOROVOD_LOCAL_RANK=1",
						   "HOROVOD_LOCAL_SIZE=2",
						   "HOROVOD_CROSS_RANK=1",
						   "HOROVOD_CROSS_SIZE=2",
						   "HOROVOD_HOSTNAME=n2",
						   "WORLD_SIZE=4",
						   "LOCAL_RANK=1",
						   "LOCAL_WORLD_SIZE=2",
						   "MASTER_ADDR=n1",
						   "MASTER_PORT=29500",
						   "GROUP_RANK=1",
						   "GROUP_WORLD_SIZE=2",
						   "ROLE_RANK=3",
						   "ROLE_WORLD_SIZE=4",
						   "PYTHONUNBUFFERED=1"};
		size_t j;

		for (j = 0; j < sizeof(want) / sizeof(want[0]); j++)
			if (strcmp(env.v[i], want[j]) == 0)
				seen++;
	}
	CHECK(seen == 20);
	CHECK(env.n == 20);
	hl_strvec_close(&env);
	/* Python's buffering as the launcher's environment or -x has it. */
	base[2] = "PYTHONUNBUFFERED=";
	CHECK(hl_env_build(base, &es, &place, &env) == HL_OK);
	CHECK(strcmp(hl_strvec_value(&env, "PYTHONUNBUFFERED"), "") == 0);
	hl_strvec_close(&env);
	base[2] = "KEEP=1";
	CHECK(hl_strvec_push(&es.set, "PYTHONUNBUFFERED=0") == HL_OK);
	CHECK(hl_env_build(base, &es, &place, &env) == HL_OK);
	CHECK(strcmp(hl_strvec_value(&env, "PYTHONUNBUFFERED"), "0") == 0);
	hl_strvec_close(&env);
	hl_envspec_close(&es);
	hl_plan_close(&p);
	hl_hostlist_close(&hl);
}

/* What of hvdrun's environment a worker on another host gets: all but
 * its host's and session's variables and a Slurm task's, unless -x
 * forwards one by name. */
static void test_exported_env(void)
{
	char *base[] = {"PATH=/bin:/extra",
			"PYTHONPATH=/code",
			"HOSTNAME=launcher",
			"PWD=/here",
			"OLDPWD=/there",
			"SSH_CONNECTION=1 2 3 4",
			"SSH_AUTH_SOCK=/tmp/agent",
			"XDG_RUNTIME_DIR=/run/user/0",
			"XDG_SESSION_ID=3",
			"XDG_CONFIG_HOME=/cfg",
			"BASH_FUNC_f%%=() { :; }",
			"SLURM_PROCID=2",
			"SLURM_JOB_ID=7",
			"DISPLAY=:0",
			"CUDA_VISIBLE_DEVICES=4,5",
			"SLURMD_NODENAME=n1",
			"no_equals_sign",
			NULL};
	static const char *const want[] = {
		"PATH=/bin:/extra", "PYTHONPATH=/code", "XDG_CONFIG_HOME=/cfg",
		"SLURM_JOB_ID=7", "DISPLAY=:0"};
	struct hl_envspec es;
	struct hl_strvec out;
	size_t i, j, seen = 0;

	hl_strvec_init(&es.set);
	hl_strvec_init(&es.forward);
	CHECK(hl_strvec_push(&es.forward, "DISPLAY") == HL_OK);
	CHECK(hl_env_exported(base, &es, &out) == HL_OK);
	for (i = 0; i < out.n; i++)
		for (j = 0; j < sizeof(want) / sizeof(want[0]); j++)
			seen += strcmp(out.v[i], want[j]) == 0;
	CHECK(seen == 5);
	CHECK(out.n == 5);
	hl_strvec_close(&out);
	/* On a node under srun: all of its own but a Slurm task's. */
	CHECK(hl_env_node_base(base, &out) == HL_OK);
	CHECK(out.n == 15);
	for (i = 0; i < out.n; i++)
		CHECK(strcmp(out.v[i], "SLURM_PROCID=2") != 0);
	hl_strvec_close(&out);
	hl_strvec_close(&es.set);
	hl_strvec_close(&es.forward);
}

int main(void)
{
	RUN(test_lines);
	RUN(test_binary_and_empty);
	RUN(test_long_line_cut);
	RUN(test_timestamp);
	RUN(test_tee);
	RUN(test_rank_env);
	RUN(test_exported_env);
	return tap_done();
}
