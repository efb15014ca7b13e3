/* seeds.c: writes the binary seed inputs of tests/fuzz/corpus with the
 * project's own encoders (what hvdrun, its agents and libhvd send), so
 * that each target starts from valid messages: `seeds DIR`. The text
 * seeds (host lists, hostfiles, configs, Slurm lists) are written by
 * hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine/engine.h"
#include "check/probe_msg.h"
#include "agent/records.h"
#include "proto/rendezvous.h"
#include "proto/wire.h"

static const char *dir;

static void put(const char *target, const char *name, const void *p, size_t n)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s/%s", dir, target, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

/* One byte that picks a decoder, then the message. */
static void put_picked(const char *target, const char *name, uint8_t pick,
		       const struct hl_buf *b)
{
	char *p = malloc(b->len + 1);

	p[0] = (char)pick;
	memcpy(p + 1, b->p, b->len);
	put(target, name, p, b->len + 1);
	free(p);
}

static void records(void)
{
	struct hl_buf b;
	static const char line[] = "e 3 hello\\x0a\\\\world\\x1e";
	static const char argv[] = "./train\0--epochs\0"
				   "3";

	hl_buf_init(&b);
	hl_rec_put_version(&b);
	hl_rec_put(&b, 'E', "PATH=/usr/bin", 13);
	hl_rec_put(&b, 'D', "/tmp", 4);
	hl_rec_put(&b, 'A', argv, sizeof(argv));
	hl_rec_put_signal(&b, 15);
	hl_rec_put(&b, 'G', NULL, 0);
	put("records", "job", b.p, b.len);
	hl_buf_close(&b);
	put("records", "line", line, sizeof(line) - 1);
	put("records", "port", "40123 10.0.0.2\n", 15);
}

/* The srun launcher's records to the node agents, and their lines back
 * through srun, one cut into pieces as slurmstepd cuts a task's tail. */
static void agent(void)
{
	static const char lines[] = "0: h node1 4096 2\x1e\n"
				    "1: h node2\x1e\n"
				    "0: p 40123 10.0.0.1\x1e\n"
				    "1: o 2 step 1 loss 0.25\x1e\n"
				    "0: e 0 warn\\x0a\x1e\n"
				    "1: o 3 first half\n"
				    "1:  and the rest\x1e\n"
				    "srun: error: node2: task 1: Exited\n"
				    "0: c 0 16384\x1e\n"
				    "0: n 0\x1e\n"
				    "0: x 0 0\x1e\n"
				    "1: x 2 256\x1e\n";
	struct hl_buf b;

	hl_buf_init(&b);
	hl_rec_put(&b, 'C', "HVD_SIZE=4", 10);
	hl_node_req_put(&b, 'T', 0, 0);
	hl_rec_put(&b, 'P', "eth0,ib0", 8);
	hl_node_req_put(&b, 'R', 0, 0);
	hl_rec_put(&b, 'E', "HVD_RANK=0", 10);
	hl_rec_put(&b, 'D', "/home/u", 7);
	hl_rec_put(&b, 'A', "./train", 7);
	hl_rec_put(&b, 'W', NULL, 0);
	hl_rec_put(&b, 'G', NULL, 0);
	hl_rec_put(&b, 'Z', NULL, 0);
	hl_node_input_put(&b, 0, "3\n", 2);
	hl_node_input_put(&b, 0, NULL, 0);
	hl_node_req_put(&b, 'K', 0, 15);
	put("agent", "records", b.p, b.len);
	hl_buf_close(&b);
	put("agent", "lines", lines, sizeof(lines) - 1);
}

/* Command lines, their arguments separated by NUL bytes after the byte
 * that picks `hvdrun check` (odd) or a job (even). */
static void options(void)
{
	static const char job[] =
		"\0-np\0"
		"4\0-H\0a:2,b:2\0-x\0NCCL_DEBUG=INFO\0-x\0PATH\0"
		"--fusion-threshold-mb\0"
		"64\0--timeline-filename\0t.json\0"
		"--verbose\0python\0train.py\0--lr\0"
		"0.1";
	static const char ssh[] =
		"\0--hostfile\0hosts\0-p\0"
		"2222\0-i\0key\0"
		"--ssh-host-key-checking=no\0--network-interface\0eth0\0"
		"--network-interface=ib0\0--launcher\0ssh\0--bind-to\0none\0"
		"--log-level\0debug\0./train";
	static const char check[] = "\1-H\0a,b\0--json\0"
				    "--network-check-timeout\0"
				    "5";

	put("options", "job", job, sizeof(job) - 1);
	put("options", "ssh", ssh, sizeof(ssh) - 1);
	put("options", "check", check, sizeof(check) - 1);
}

static void probe(void)
{
	struct hl_pm_iface i = {"eth0", "10.1.2.3", false};
	struct hl_pm_target t = {7, "10.1.2.4", 40000,
				 "0123456789abcdef0123456789abcdef"};
	struct hl_pm_result r = {7, false, 12.5, "connection refused"};
	struct hl_pm_link l = {"eth0", 100000, 0, 1, 2, 3};
	struct hl_pm_transfer x = {
		3,   "10.1.2.4", 40001, "0123456789abcdef0123456789abcdef",
		200, 64 << 20,	 2000};
	struct hl_pm_rate rate = {3, true, 1 << 30, 200000, 38.5, ""};
	struct hl_buf b;

	hl_buf_init(&b);
	hl_pm_put_port(&b, 40000);
	put_picked("probe", "port", 0, &b);
	b.len = 0;
	hl_pm_put_text(&b, 'K', t.token);
	put_picked("probe", "token", 1, &b);
	b.len = 0;
	hl_pm_put_iface(&b, &i);
	put_picked("probe", "iface", 2, &b);
	b.len = 0;
	hl_pm_put_target(&b, &t);
	put_picked("probe", "target", 3, &b);
	b.len = 0;
	hl_pm_put_result(&b, &r);
	put_picked("probe", "result", 4, &b);
	b.len = 0;
	hl_pm_put_go(&b, 500);
	put_picked("probe", "go", 4, &b);
	b.len = 0;
	hl_pm_put_link(&b, &l);
	put_picked("probe", "link", 6, &b);
	b.len = 0;
	hl_pm_put_transfer(&b, &x);
	put_picked("probe", "transfer", 7, &b);
	b.len = 0;
	hl_pm_put_rate(&b, &rate);
	put_picked("probe", "rate", 7, &b);
	hl_buf_close(&b);
	put("probe", "gpu",
	    "\5"
	    "0\tNVIDIA H100 80GB HBM3\t85520809984",
	    35);
}

static void rendezvous(void)
{
	static const uint8_t secret[RDV_SECRET_LEN] = {1, 2, 3};
	uint8_t nonce[RDV_NONCE_LEN] = {4, 5, 6}, hello[RDV_HELLO_LEN];
	uint8_t *reg = malloc(rdv_register_max()), *peers;
	char *addrs[2] = {"10.0.0.1:40000", "10.0.0.2:40001"};
	struct rdv_register r = {1, 2, {9}, "10.0.0.2:40001", {0}};
	size_t n;

	rdv_hello_encode(nonce, hello);
	put("rendezvous", "hello", hello, sizeof(hello));
	n = rdv_register_encode(&r, secret, nonce, reg);
	put("rendezvous", "register", reg, n);
	peers = rdv_peers_encode(addrs, 2, 1, secret, nonce, &n);
	put("rendezvous", "peers", peers, n);
	free(peers);
	{
		struct rdv_world w = {3, 1, 2, 0, 1, 1, 2};
		uint8_t notice[RDV_NOTICE_LEN];

		peers = rdv_world_encode(&w, addrs, secret, nonce, &n);
		put("rendezvous", "world", peers, n);
		free(peers);
		rdv_notice_encode(RDV_NOTICE_RESET, 4, secret, nonce, notice);
		put("rendezvous", "notice", notice, sizeof(notice));
	}
	free(reg);
}

/* A message with the decoder's pick (0: responses, 1: requests). */
static void put_msg(const char *name, uint8_t pick, const struct wire_w *w)
{
	struct hl_buf b = {(char *)w->p, w->len, w->cap, 0};

	put_picked("control", name, pick, &b);
}

static void control(void)
{
	struct hvd__meta m = {.type = HVD__REQ_ALLREDUCE,
			      .dtype = HVD_FLOAT32,
			      .op = HVD_AVERAGE,
			      .count = 1000,
			      .prescale = 1,
			      .postscale = 1};
	struct hvd__resp v[2] = {{"grad.conv1", m, 0, NULL, false},
				 {"grad.fc", m, -1, "mismatch", false}};
	struct hvd__req q[2] = {{.name = "grad.conv1", .m = m},
				{.name = "bcast.w", .m = m}};
	struct wire_w w;

	hvd__ctl_encode_responses(&w, v, 2);
	put_msg("responses", 0, &w);
	wire_w_free(&w);
	q[0].next = &q[1];
	q[1].m.type = HVD__REQ_BROADCAST;
	q[1].m.root = 1;
	hvd__ctl_encode_requests(&w, q);
	put_msg("requests", 1, &w);
	wire_w_free(&w);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seeds DIR\n");
		return 2;
	}
	dir = argv[1];
	records();
	agent();
	options();
	probe();
	rendezvous();
	control();
	return 0;
}
