/* test_relay.c: a remote rank's standard input on both ends, each called
 * alone: the agents' relay (lib/agent/relay.c), which puts hvdrun's 'I'
 * records into the rank's pipe as far as the pipe takes them and answers
 * what it took, and hvdrun's reading of the SSH agent's stdout records
 * (lib/ssh/input.c), with its fallback for an older agent that sends the
 * rank's output as it is; and under srun, a node whose agent is older
 * (lib/slurm/input.c). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "agent/relay.h"
#include "job/plan.h"
#include "slurm/srun.h"
#include "spawn/spawn.h"
#include "ssh/host.h"
#include "tap.h"

static size_t taken_sum;
static int nquits, last_rank;

static void collect(int rank, char type, uint32_t taken)
{
	last_rank = rank;
	if (type == 'c')
		taken_sum += taken;
	else if (type == 'n')
		nquits++;
}

/* Read what the worker's end holds now (non-blocking). */
static size_t drain(int fd, char *out, size_t cap)
{
	size_t got = 0;
	ssize_t n;

	while (got < cap && (n = read(fd, out + got, cap - got)) > 0)
		got += (size_t)n;
	return got;
}

/* 200 KiB, more than a pipe holds: the pipe takes what it can, the rest
 * waits, every byte arrives once and in order, the answers add up to it,
 * and the end reaches the reader only after the last byte. */
static void test_relay_fills_the_pipe(void)
{
	static char in[200 << 10], out[sizeof(in)];
	struct hl_relay r;
	struct pollfd pf[2];
	size_t i, got = 0;
	int n, rounds = 0;

	for (i = 0; i < sizeof(in); i++)
		in[i] = (char)(i * 13 + 1);
	taken_sum = 0;
	nquits = 0;
	hl_relay_init(&r, 7, collect);
	CHECK(hl_relay_open(&r, false) == HL_OK);
	CHECK(r.out[0] == -1 && r.out[1] == -1);
	fcntl(r.in[0], F_SETFL, O_NONBLOCK);
	hl_relay_input(&r, 'I', in, sizeof(in) / 2);
	hl_relay_input(&r, 'I', in + sizeof(in) / 2, sizeof(in) / 2);
	hl_relay_input(&r, 'F', NULL, 0);
	CHECK(taken_sum > 0 && taken_sum < sizeof(in) && last_rank == 7);
	CHECK(r.in[1] >= 0); /* still holds what the pipe did not take */
	while (got < sizeof(in) && rounds++ < 1000) {
		got += drain(r.in[0], out + got, sizeof(out) - got);
		n = hl_relay_fds(&r, pf);
		if (n > 0 && poll(pf, (nfds_t)n, 1000) > 0)
			hl_relay_polled(&r, pf, n);
	}
	CHECK(got == sizeof(in) && memcmp(in, out, got) == 0);
	CHECK(taken_sum == sizeof(in) && nquits == 0);
	CHECK(r.in[1] == -1); /* the end: closed once all was in */
	CHECK(read(r.in[0], out, 1) == 0);
	hl_relay_close(&r);
}

/* A worker that closed its input: 'n' once, nothing more taken, later
 * input dropped. */
static void test_relay_reader_gone(void)
{
	struct hl_relay r;

	taken_sum = 0;
	nquits = 0;
	hl_relay_init(&r, 2, collect);
	CHECK(hl_relay_open(&r, false) == HL_OK);
	close(r.in[0]);
	r.in[0] = -1;
	hl_relay_input(&r, 'I', "abc", 3);
	CHECK(nquits == 1 && taken_sum == 0 && r.in[1] == -1);
	hl_relay_input(&r, 'I', "def", 3);
	hl_relay_input(&r, 'F', NULL, 0);
	CHECK(nquits == 1 && taken_sum == 0 && r.pending.len == 0);
	hl_relay_close(&r);
}

/* Every note on fd: the stdout bytes into out, the stderr ones into err. */
static void read_notes(int fd, char *out, size_t *nout, char *err, size_t *nerr)
{
	static char buf[65536];
	struct hl_note note;
	size_t len = 0, at = 0;
	int used;

	len = drain(fd, buf, sizeof(buf));
	*nout = *nerr = 0;
	while ((used = hl_note_next(buf + at, len - at, &note)) > 0) {
		at += (size_t)used;
		if (note.kind == 'o') {
			memcpy(out + *nout, note.data, note.len);
			*nout += note.len;
		} else if (note.kind == 'e') {
			memcpy(err + *nerr, note.data, note.len);
			*nerr += note.len;
		}
	}
	CHECK(at == len);
}

struct fake {
	int fd[2];
	struct ssh_group g;
	struct ssh_host h;
	struct hl_worker w;
	struct rank_ch r;
	int in[2];
};

static void fake_open(struct fake *f)
{
	memset(f, 0, sizeof(*f));
	CHECK(pipe(f->fd) == 0 && pipe(f->in) == 0);
	fcntl(f->fd[0], F_SETFL, O_NONBLOCK);
	f->g.notify_fd = f->fd[1];
	f->h.g = &f->g;
	f->h.host.name = "node1";
	f->w.rank = 3;
	f->r.w = &f->w;
	hl_ssh_input_init(&f->r, f->in[0]);
}

static void fake_close(struct fake *f)
{
	hl_ssh_input_end(&f->r, NULL);
	hl_buf_close(&f->r.in_out);
	close(f->fd[0]);
	close(f->fd[1]);
	close(f->in[1]);
}

/* The agent's records, a record cut anywhere across reads: the output
 * passed on whole, the answers taken. */
static void test_agent_records_read(void)
{
	char out[256], err[256];
	size_t nout, nerr, i;
	struct hl_buf b;
	struct fake f;

	fake_open(&f);
	hl_buf_init(&b);
	CHECK(hl_rec_put(&b, 'o', "hello ", 6) == HL_OK);
	CHECK(hl_rec_put_u32(&b, 'c', 4096) == HL_OK);
	CHECK(hl_rec_put(&b, 'o', "world\n", 6) == HL_OK);
	CHECK(hl_rec_put(&b, 'n', NULL, 0) == HL_OK);
	CHECK(f.r.relay && f.r.in_credit == HL_INPUT_WINDOW);
	for (i = 0; i < b.len; i += 3)
		hl_ssh_output(&f.h, &f.r, b.p + i,
			      b.len - i < 3 ? b.len - i : 3);
	read_notes(f.fd[0], out, &nout, err, &nerr);
	CHECK(nout == 12 && memcmp(out, "hello world\n", 12) == 0);
	CHECK(nerr == 0 && f.r.relay);
	CHECK(f.r.in_credit == HL_INPUT_WINDOW + 4096 && f.r.in_quit);
	hl_buf_close(&b);
	fake_close(&f);
}

/* An older agent: the rank's output as it is, passed on as it is, the
 * rank reading no input, and its stderr saying why, once. */
static void test_older_agent(void)
{
	char out[256], err[256];
	size_t nout, nerr;
	struct fake f;

	fake_open(&f);
	hl_ssh_output(&f.h, &f.r, "st", 2); /* not yet a record's head */
	hl_ssh_output(&f.h, &f.r, "ep 1 loss 0.5\n", 14);
	hl_ssh_output(&f.h, &f.r, "step 2\n", 7);
	read_notes(f.fd[0], out, &nout, err, &nerr);
	CHECK(nout == 23 && memcmp(out, "step 1 loss 0.5\nstep 2\n", 23) == 0);
	err[nerr] = '\0';
	CHECK_HAS(err, "the hvdrun on node1 is older than this one: rank 3 "
		       "reads no standard input");
	CHECK(!f.r.relay && f.r.in_quit);
	fake_close(&f);
}

/* Under srun, the input rank's node's agent said no protocol in its
 * hello (an older hvdrun there): the rank reads nothing, its stderr says
 * so, and hvdrun's descriptor is let go; a current agent keeps it. */
static void test_older_node_agent(void)
{
	struct hl_host hv[2] = {{.name = "ns1"}, {.name = "ns2"}};
	struct hl_hostlist hosts = {.v = hv, .n = 2};
	struct hl_rank ranks[2];
	struct hl_plan plan = {.ranks = ranks, .size = 2};
	struct hl_launch l = {.hosts = &hosts, .plan = &plan};
	struct srun s = {.l = &l};
	int proto[2] = {HL_AGENT_PROTO, 1}, fd[2], in[2];
	struct step st = {.s = &s, .proto = proto};
	char out[256], err[256];
	size_t nout, nerr;

	memset(ranks, 0, sizeof(ranks));
	ranks[0].host = 0;
	ranks[1].host = 1;
	CHECK(pipe(fd) == 0 && pipe(in) == 0);
	fcntl(fd[0], F_SETFL, O_NONBLOCK);
	s.notify_fd = fd[1];
	st.in_rank = 0;
	st.in_src = in[0];
	hl_srun_input_check(&st);
	CHECK(st.in_rank == 0 && st.in_src == in[0]);
	st.in_rank = 1;
	hl_srun_input_check(&st);
	CHECK(st.in_rank == -1 && st.in_src == -1);
	CHECK(fcntl(in[0], F_GETFD) < 0); /* closed */
	read_notes(fd[0], out, &nout, err, &nerr);
	err[nerr] = '\0';
	CHECK(nout == 0);
	CHECK_HAS(err, "hvdrun: the hvdrun on ns2 is older than this one: "
		       "rank 1 reads no standard input");
	close(fd[0]);
	close(fd[1]);
	close(in[1]);
}

int main(void)
{
	signal(SIGPIPE, SIG_IGN);
	RUN(test_relay_fills_the_pipe);
	RUN(test_relay_reader_gone);
	RUN(test_agent_records_read);
	RUN(test_older_agent);
	RUN(test_older_node_agent);
	return tap_done();
}
