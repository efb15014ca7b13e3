/* test_wire.c: the wire helper (proto/wire.h) and the decoders built on
 * it, each called alone on a buffer: libhvd's control messages
 * (core/engine/control.c), the rendezvous' and the mesh's hellos
 * (proto/rendezvous.c), the agent
 * records and the srun launcher's lines (lib/agent/records.c), the remote
 * spawners' notes to the supervisor (lib/spawn/notes.c) and the probe's
 * messages (lib/check/probe_msg.c). Every cut of a good message is refused,
 * never read past; a bad value is refused, never used. */
#include <limits.h>
#include <string.h>
#include <unistd.h>

#include "proto/rendezvous.h"
#include "proto/wire.h"
#include "engine/engine.h"
#include "check/probe_msg.h"
#include "agent/records.h"
#include "spawn/spawn.h"
#include "tap.h"
#include "util/util.h"

static void test_big_endian_round_trip(void)
{
	static const uint8_t want[] = {
		0xab, 0x01, 0x02, 0x01, 0x02, 0x03, 0x04, 0x01, 0x02, 0x03,
		0x04, 0x05, 0x06, 0x07, 0x08, 0xff, 0xff, 0xff, 0xfe, 0x00,
		0x00, 0x00, 0x02, 'h',	'i',  0xff, 0xff, 0xff, 0xff};
	struct wire_w w;
	struct wire_r r;
	char *s;

	wire_w_init(&w, 1024);
	wire_put_u8(&w, 0xab);
	wire_put_u16(&w, 0x0102);
	wire_put_u32(&w, 0x01020304);
	wire_put_u64(&w, 0x0102030405060708ull);
	wire_put_i32(&w, -2);
	wire_put_str(&w, "hi");
	wire_put_str(&w, NULL);
	CHECK(!w.bad && w.len == sizeof(want));
	CHECK(w.len == sizeof(want) && memcmp(w.p, want, sizeof(want)) == 0);
	wire_put_f64(&w, -1.5e300);

	wire_r_init(&r, w.p, w.len);
	CHECK(wire_get_u8(&r) == 0xab);
	CHECK(wire_get_u16(&r) == 0x0102);
	CHECK(wire_get_u32(&r) == 0x01020304);
	CHECK(wire_get_u64(&r) == 0x0102030405060708ull);
	CHECK(wire_get_i32(&r) == -2);
	s = wire_get_str(&r, 16);
	CHECK_STR(s, "hi");
	free(s);
	CHECK(wire_get_str(&r, 16) == NULL && !r.bad);
	CHECK(wire_get_f64(&r) == -1.5e300);
	CHECK(wire_r_done(&r));
	wire_w_free(&w);
}

static void test_writer_errors_are_sticky(void)
{
	uint8_t buf[6];
	struct wire_w w;

	wire_w_fixed(&w, buf, sizeof(buf));
	wire_put_u32(&w, 1);
	CHECK(!w.bad && w.len == 4);
	wire_put_u32(&w, 2); /* does not fit */
	CHECK(w.bad && w.len == 4);
	wire_put_u8(&w, 3); /* would fit, but the writer is bad */
	CHECK(w.bad && w.len == 4);
	wire_w_free(&w); /* frees nothing of the caller's */

	wire_w_init(&w, 10); /* a growing writer stops at its cap */
	wire_put_u64(&w, 1);
	wire_put_u16(&w, 2);
	CHECK(!w.bad && w.len == 10);
	wire_put_u8(&w, 3);
	CHECK(w.bad && w.len == 10);
	wire_w_free(&w);

	wire_w_init(&w, 100);
	wire_put_u32(&w, 0);
	wire_patch_u32(&w, 0, 7);
	CHECK(!w.bad && w.p[3] == 7);
	wire_patch_u32(&w, 1, 7); /* past the end */
	CHECK(w.bad);
	wire_w_free(&w);
}

static void test_reader_errors_are_sticky(void)
{
	static const uint8_t two[] = {0, 0, 0, 2, 'a', 0};
	static const uint8_t big[] = {0, 0, 0, 9, 'a', 'b'};
	static const uint8_t many[] = {0x7f, 0xff, 0xff, 0xff, 1, 2, 3, 4};
	struct wire_r r;

	wire_r_init(&r, two, 3);
	CHECK(wire_get_u32(&r) == 0 && r.bad);
	CHECK(wire_get_u8(&r) == 0 && r.bad && wire_left(&r) == 0);
	CHECK(!wire_r_done(&r));

	wire_r_init(&r, two, sizeof(two)); /* a NUL inside a string */
	CHECK(wire_get_str(&r, 16) == NULL && r.bad);
	wire_r_init(&r, big, sizeof(big)); /* longer than the buffer */
	CHECK(wire_get_str(&r, 16) == NULL && r.bad);
	wire_r_init(&r, big, sizeof(big)); /* longer than its cap */
	CHECK(wire_get_str(&r, 4) == NULL && r.bad);
	wire_r_init(&r, many, sizeof(many)); /* more items than bytes */
	CHECK(wire_get_count(&r, 1) == 0 && r.bad);
	wire_r_init(&r, many, sizeof(many));
	CHECK(wire_get_u32(&r) == 0x7fffffff && !wire_r_done(&r));
}

static struct hvd__resp resp(const char *name, uint8_t type, const char *err)
{
	struct hvd__resp x = {0};

	x.name = strdup(name);
	x.m.type = type;
	x.m.dtype = HVD_FLOAT32;
	x.m.op = HVD_AVERAGE;
	x.m.root = -1;
	x.m.count = 1ull << 40;
	x.m.block = 3;
	x.m.prescale = 0.5;
	x.m.postscale = 0.25;
	x.m.group = 0x1234567890abcdefull;
	x.m.group_n = 2;
	x.m.ndim = 3; /* [-1, 4, 5]: an allgather's first dimension */
	x.m.dims[0] = -1;
	x.m.dims[1] = 4;
	x.m.dims[2] = 5;
	x.cache = 7;
	x.error = err ? strdup(err) : NULL;
	return x;
}

static void test_control_responses(void)
{
	struct hvd__resp v[2] = {resp("grad.0", HVD__REQ_ALLREDUCE, NULL),
				 resp("w", HVD__REQ_ALLTOALL, "ranks 0 and 1")};
	struct hvd__resp *got;
	struct wire_w w;
	size_t n, cut, refused = 0;

	hvd__ctl_encode_responses(&w, v, 2);
	CHECK(!w.bad);
	CHECK(hvd__ctl_decode_responses(w.p, w.len, &got, &n) == HVD_OK);
	CHECK(n == 2);
	if (n == 2) {
		CHECK_STR(got[0].name, "grad.0");
		CHECK(got[0].error == NULL);
		CHECK(hvd__meta_equal(&got[0].m, &v[0].m));
		CHECK(got[0].m.ndim == 3 && got[0].m.dims[0] == -1 &&
		      got[0].m.dims[2] == 5);
		CHECK(got[0].m.prescale == 0.5 && got[0].m.postscale == 0.25);
		CHECK(got[0].cache == 7);
		CHECK_STR(got[1].error, "ranks 0 and 1");
		CHECK(got[1].m.type == HVD__REQ_ALLTOALL);
	}
	hvd__resps_free(got, n);
	/* Every cut, and one byte more, is refused; asan holds the reads. */
	for (cut = 0; cut < w.len; cut++)
		if (hvd__ctl_decode_responses(w.p, cut, &got, &n) ==
			    HVD_EPROTO &&
		    got == NULL && n == 0)
			refused++;
	CHECK(refused == w.len);
	{
		uint8_t *more = malloc(w.len + 1);

		memcpy(more, w.p, w.len);
		more[w.len] = 0;
		CHECK(hvd__ctl_decode_responses(more, w.len + 1, &got, &n) ==
		      HVD_EPROTO);
		free(more);
	}
	/* A type no engine has is refused, not looked up. */
	w.p[4 + 4 + strlen("grad.0")] = 0x7f;
	CHECK(hvd__ctl_decode_responses(w.p, w.len, &got, &n) == HVD_EPROTO);
	wire_w_free(&w);
	free(v[0].name);
	free(v[1].name);
	free(v[1].error);
}

struct seen {
	int n, rank;
	char name[64];
	struct hvd__meta m;
};

static void on_request(void *arg, const char *name, const struct hvd__meta *m,
		       int rank)
{
	struct seen *s = arg;

	s->n++;
	s->rank = rank;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->m = *m;
}

static void test_control_requests(void)
{
	/* u32 1, str "t", meta with a shape of 2: the requests message by
	 * hand. */
	uint8_t msg[4 + 4 + 1 + 4 + 4 + 8 * 5 + 4 + 1 + 2 * 8];
	struct wire_w w;
	struct seen s = {0};

	wire_w_fixed(&w, msg, sizeof(msg));
	wire_put_u32(&w, 1);
	wire_put_str(&w, "t");
	wire_put_u8(&w, HVD__REQ_BROADCAST);
	wire_put_u8(&w, HVD_INT16);
	wire_put_u8(&w, HVD_SUM);
	wire_put_u8(&w, 0);
	wire_put_i32(&w, 3);
	wire_put_u64(&w, 10);
	wire_put_u64(&w, 1);
	wire_put_f64(&w, 1.0);
	wire_put_f64(&w, 1.0);
	wire_put_u64(&w, 0);
	wire_put_u32(&w, 0);
	wire_put_u8(&w, 2);
	wire_put_u64(&w, 2);
	wire_put_u64(&w, 5);
	CHECK(!w.bad && w.len == sizeof(msg));
	CHECK(hvd__ctl_decode_requests(msg, sizeof(msg), 2, on_request, &s) ==
	      HVD_OK);
	CHECK(s.n == 1 && s.rank == 2 && strcmp(s.name, "t") == 0);
	CHECK(s.m.type == HVD__REQ_BROADCAST && s.m.root == 3 &&
	      s.m.count == 10 && s.m.dtype == HVD_INT16);
	CHECK(s.m.ndim == 2 && s.m.dims[0] == 2 && s.m.dims[1] == 5);
	/* More dimensions than a meta keeps: refused. */
	msg[sizeof(msg) - 17] = HVD__SHAPE_MAX + 1;
	s.n = 0;
	CHECK(hvd__ctl_decode_requests(msg, sizeof(msg), 2, on_request, &s) ==
	      HVD_EPROTO);
	CHECK(s.n == 0);
	msg[sizeof(msg) - 17] = 2;
	s.n = 0;
	CHECK(hvd__ctl_decode_requests(msg, sizeof(msg) - 1, 2, on_request,
				       &s) == HVD_EPROTO);
	CHECK(s.n == 0);
	msg[4 + 4 + 1 + 2] = HVD_ADASUM + 1; /* an op no engine has */
	CHECK(hvd__ctl_decode_requests(msg, sizeof(msg), 2, on_request, &s) ==
	      HVD_EPROTO);
	CHECK(s.n == 0);
}

static void test_mesh_hello(void)
{
	uint8_t secret[RDV_SECRET_LEN] = {1}, token[RDV_MAC_LEN];
	uint8_t other[RDV_MAC_LEN], hello[RDV_MESH_HELLO_LEN];

	rdv_mesh_token(secret, token);
	secret[0] = 2;
	rdv_mesh_token(secret, other);
	rdv_mesh_hello_encode(5, token, hello);
	CHECK(hello[3] == 5);
	CHECK(rdv_mesh_hello_decode(hello, token) == 5);
	CHECK(rdv_mesh_hello_decode(hello, other) == RDV_EBAD);
	hello[0] = 0x80; /* a rank no job has */
	CHECK(rdv_mesh_hello_decode(hello, token) == RDV_EBAD);
}

/* hvdrun's HELLO: its nonce read back; an hvdrun of another protocol's is
 * told by its version, with no nonce read; anything else is refused. */
static void test_rendezvous_hello(void)
{
	uint8_t nonce[RDV_NONCE_LEN] = {7, 8}, got[RDV_NONCE_LEN] = {0};
	uint8_t hello[RDV_HELLO_LEN];

	rdv_hello_encode(nonce, hello);
	CHECK(rdv_hello_decode(hello, got) == RDV_VERSION);
	CHECK(memcmp(got, nonce, sizeof(nonce)) == 0);
	memset(got, 0, sizeof(got));
	hello[4] = RDV_VERSION + 1;
	CHECK(rdv_hello_decode(hello, got) == RDV_VERSION + 1);
	CHECK(got[0] == 0);
	hello[4] = 0;
	CHECK(rdv_hello_decode(hello, got) == 0);
	hello[4] = RDV_VERSION;
	hello[0] = 'X';
	CHECK(rdv_hello_decode(hello, got) == RDV_EBAD);
	CHECK(got[0] == 0);
}

/* An elastic worker's WORLD and NOTICEs: each read back whole, in
 * pieces, after one another; a changed byte or another nonce refused;
 * each generation its own key, and generation 0 the secret's. */
static void test_elastic_messages(void)
{
	uint8_t secret[RDV_SECRET_LEN] = {7}, nonce[RDV_NONCE_LEN] = {8};
	uint8_t other[RDV_NONCE_LEN] = {9}, k1[RDV_SECRET_LEN],
		k2[RDV_SECRET_LEN], k0[RDV_SECRET_LEN];
	char *addrs[3] = {"10.0.0.1:1", "10.0.0.2:2", "10.0.0.3:3"}, *got;
	struct rdv_world w = {5, 2, 3, 0, 1, 2, 3}, r;
	uint8_t buf[512], notice[RDV_NOTICE_LEN];
	size_t n, k;
	uint8_t *msg = rdv_world_encode(&w, addrs, secret, nonce, &n);
	char type, what;

	CHECK(msg != NULL && n + RDV_NOTICE_LEN <= sizeof(buf));
	if (msg == NULL)
		return;
	memcpy(buf, msg, n);
	rdv_notice_encode(RDV_NOTICE_RESET, 6, secret, nonce, notice);
	memcpy(buf + n, notice, sizeof(notice));
	for (k = 0; k < n; k++)
		CHECK(rdv_elastic_decode(buf, k, secret, nonce, &type, &what,
					 &r, &got) == 0);
	CHECK(rdv_elastic_decode(buf, n + 3, secret, nonce, &type, &what, &r,
				 &got) == (long)n);
	CHECK(type == 'W' && r.gen == 5 && r.rank == 2 && r.size == 3 &&
	      r.local_size == 1 && r.cross_rank == 2 && r.cross_size == 3);
	CHECK(got != NULL &&
	      strcmp(got + 2 * (RDV_ADDR_MAX + 1), "10.0.0.3:3") == 0);
	free(got);
	CHECK(rdv_elastic_decode(buf + n, RDV_NOTICE_LEN, secret, nonce, &type,
				 &what, &r, &got) == RDV_NOTICE_LEN);
	CHECK(type == 'N' && what == RDV_NOTICE_RESET && r.gen == 6);
	CHECK(rdv_elastic_decode(buf + n, RDV_NOTICE_LEN, secret, other, &type,
				 &what, &r, &got) == RDV_EBAD);
	buf[5] ^= 1; /* the rank */
	CHECK(rdv_elastic_decode(buf, n, secret, nonce, &type, &what, &r,
				 &got) == RDV_EBAD);
	free(msg);
	w.rank = 3; /* not below the size */
	msg = rdv_world_encode(&w, addrs, secret, nonce, &n);
	CHECK(msg != NULL && rdv_elastic_decode(msg, n, secret, nonce, &type,
						&what, &r, &got) == RDV_EBAD);
	free(msg);
	rdv_generation_key(secret, 0, k0);
	rdv_generation_key(secret, 1, k1);
	rdv_generation_key(secret, 2, k2);
	CHECK(memcmp(k0, secret, sizeof(k0)) == 0);
	CHECK(memcmp(k1, k2, sizeof(k1)) != 0 &&
	      memcmp(k1, secret, sizeof(k1)) != 0);
}

static void test_agent_records(void)
{
	struct hl_buf b;
	const char *data;
	size_t len, used;
	char type;

	hl_buf_init(&b);
	CHECK(hl_rec_put(&b, 'E', "A=1", 3) == HL_OK);
	CHECK(hl_rec_put_signal(&b, 15) == HL_OK);
	CHECK(b.len == 5 + 3 + 5 + 4);
	CHECK(b.len > 4 && (uint8_t)b.p[0] == 'E' && b.p[4] == 3);
	CHECK(hl_rec_next(&b, &used, &type, &data, &len) == 1);
	CHECK(type == 'E' && len == 3 && memcmp(data, "A=1", 3) == 0);
	hl_buf_consume(&b, used);
	CHECK(hl_rec_next(&b, &used, &type, &data, &len) == 1);
	CHECK(type == 'S' && hl_rec_signal_of(data, len) == 15);
	CHECK(hl_rec_signal_of(data, len - 1) == HL_EPROTO);
	b.len--; /* a record not complete yet */
	CHECK(hl_rec_next(&b, &used, &type, &data, &len) == 0);
	hl_buf_close(&b);
	/* A length over the limit is refused before anything is read. */
	CHECK(hl_buf_append(&b, "X\x7f\xff\xff\xff", 5) == HL_OK);
	CHECK(hl_rec_next(&b, &used, &type, &data, &len) == HL_EINVAL);
	hl_buf_close(&b);
	/* The agent's answer of input taken ('c'): a u32, big-endian. */
	uint32_t v = 0;
	CHECK(hl_rec_put_u32(&b, 'c', 65536u + 7) == HL_OK);
	CHECK(b.len == 9 && b.p[0] == 'c' && b.p[4] == 4 && b.p[6] == 1 &&
	      b.p[8] == 7);
	CHECK(hl_rec_next(&b, &used, &type, &data, &len) == 1);
	CHECK(hl_rec_u32_of(data, len, &v) == HL_OK && v == 65543);
	CHECK(hl_rec_u32_of(data, len - 1, &v) == HL_EPROTO);
	CHECK(hl_rec_u32_of("\0\0\0\1\0", 5, &v) == HL_EPROTO);
	hl_buf_close(&b);
	/* hvdrun's 'V': its agent protocol and version read back; cut to
	 * the room given; a control byte shown as '?'; too short refused. */
	char ver[8];
	CHECK(hl_rec_put_version(&b) == HL_OK);
	CHECK(hl_rec_next(&b, &used, &type, &data, &len) == 1);
	CHECK(type == 'V' &&
	      hl_rec_version_of(data, len, &v, ver, sizeof(ver)) == HL_OK);
	CHECK(v == HL_AGENT_PROTO && strcmp(ver, HVD_VERSION) == 0);
	CHECK(hl_rec_version_of(data, 3, &v, ver, sizeof(ver)) == HL_EPROTO);
	CHECK(v == 0);
	CHECK(hl_rec_version_of("\0\0\0\11"
				"1.2\n345678",
				14, &v, ver, sizeof(ver)) == HL_OK);
	CHECK(v == 9 && strcmp(ver, "1.2?345") == 0);
	CHECK(hl_rec_version_of("\0\0\0\3", 4, &v, ver, sizeof(ver)) == HL_OK);
	CHECK(v == 3 && ver[0] == '\0');
	hl_buf_close(&b);
}

/* The srun agent's escaped lines: every byte value survives, no output
 * byte is a newline, the cap is kept, and broken escapes are refused. */
static void test_agent_lines(void)
{
	char data[512], out[HL_LINE_MAX], copy[HL_LINE_MAX + 1];
	size_t i, n, took, total = 0, got = 0;
	char back[512];

	for (i = 0; i < sizeof(data); i++)
		data[i] = (char)(i * 7 + 3);
	while (total < sizeof(data)) {
		took = hl_line_escape(data + total, sizeof(data) - total, out,
				      100, &n);
		CHECK(took > 0 && n <= 100 && memchr(out, '\n', n) == NULL);
		memcpy(copy, out, n);
		CHECK(hl_line_unescape(copy, n) == (int)took);
		memcpy(back + got, copy, took);
		got += took;
		total += took;
	}
	CHECK(got == sizeof(data) && memcmp(back, data, got) == 0);
	/* An escape is never cut: 3 bytes of room take no \xHH. */
	CHECK(hl_line_escape("\n", 1, out, 3, &n) == 0 && n == 0);
	CHECK(hl_line_escape("\\a", 2, out, 3, &n) == 2 && n == 3);
	CHECK(memcmp(out, "\\\\a", 3) == 0);
	memcpy(copy, "ab\\x4", 6);
	CHECK(hl_line_unescape(copy, 6) == HL_EPROTO);
	memcpy(copy, "\\q", 2);
	CHECK(hl_line_unescape(copy, 2) == HL_EPROTO);
	memcpy(copy, "\\x41\\\\", 6);
	CHECK(hl_line_unescape(copy, 6) == 2 && memcmp(copy, "A\\", 2) == 0);
}

/* What the node agents read: 'T', 'R', 'K', 'I' and 'F' of the right
 * size only, 'K' with a signal; text records as they are. */
static void test_node_requests(void)
{
	struct hl_node_req q;
	struct hl_buf b;
	const char *d;
	size_t used, len;
	char type;

	hl_buf_init(&b);
	CHECK(hl_node_req_put(&b, 'K', 7, 15) == HL_OK);
	CHECK(hl_rec_next(&b, &used, &type, &d, &len) == 1);
	CHECK(hl_node_req_decode(type, d, len, &q) == HL_OK);
	CHECK(q.type == 'K' && q.num == 7 && q.sig == 15);
	CHECK(hl_node_req_decode('K', d, len - 1, &q) == HL_EPROTO);
	CHECK(hl_node_req_decode('R', d, len, &q) == HL_EPROTO);
	CHECK(hl_node_req_decode('R', d, 4, &q) == HL_OK && q.num == 7);
	CHECK(hl_node_req_decode('K', "\0\0\0\1\0\0\0\0", 8, &q) == HL_EPROTO);
	CHECK(hl_node_req_decode('E', "A=1", 3, &q) == HL_OK && q.len == 3 &&
	      q.text[0] == 'A');
	hl_buf_close(&b);
	/* A rank's input: 'I' (its rank, then the bytes), and 'F', its end. */
	CHECK(hl_node_input_put(&b, 3, "ab\n", 3) == HL_OK);
	CHECK(hl_node_input_put(&b, 3, NULL, 0) == HL_OK);
	CHECK(hl_rec_next(&b, &used, &type, &d, &len) == 1 && type == 'I');
	CHECK(len == 7 && hl_node_req_decode(type, d, len, &q) == HL_OK);
	CHECK(q.num == 3 && q.len == 3 && memcmp(q.text, "ab\n", 3) == 0);
	CHECK(hl_node_req_decode('I', d, 3, &q) == HL_EPROTO);
	hl_buf_consume(&b, used);
	CHECK(hl_rec_next(&b, &used, &type, &d, &len) == 1 && type == 'F');
	CHECK(hl_node_req_decode(type, d, len, &q) == HL_OK && q.num == 3);
	CHECK(hl_node_req_decode('F', d, 2, &q) == HL_EPROTO);
	hl_buf_close(&b);
}

/* hl_agent_line_parse of text, in a buffer of its own (the parser cuts
 * the line where it reads it). */
static int line_parse(const char *text, struct hl_agent_line *m)
{
	static char buf[128];
	size_t n = strlen(text);

	memcpy(buf, text, n + 1);
	return hl_agent_line_parse(buf, n, m);
}

/* What hvdrun reads back through srun: labels within the line only (a
 * blank line and a label past the tasks are srun's own words), pieces
 * joined per task, and each kind of line parsed. */
static void test_srun_lines(void)
{
	struct hl_buf parts[2] = {{NULL, 0, 0, 0}, {NULL, 0, 0, 0}};
	struct hl_agent_line m;
	char buf[128], *out;
	size_t n;
	long task;

	memcpy(buf, "   \n\n 1", 8);
	CHECK(hl_srun_line(buf, 3, parts, 2, &task, &out, &n) == 0);
	memcpy(buf, "2: h x\x1e", 7);
	CHECK(hl_srun_line(buf, 7, parts, 2, &task, &out, &n) == 0);
	memcpy(buf, "1: o 3 ab", 9);
	CHECK(hl_srun_line(buf, 9, parts, 2, &task, &out, &n) == 0);
	memcpy(buf, "0: x 5 0\x1e", 9);
	CHECK(hl_srun_line(buf, 9, parts, 2, &task, &out, &n) == 1);
	CHECK(task == 0 && n == 5 && memcmp(out, "x 5 0", 5) == 0);
	CHECK(hl_agent_line_parse(out, n, &m) == HL_OK);
	CHECK(m.kind == 'x' && m.num == 5 && m.status == 0);
	memcpy(buf, "1: c\\x0a\x1e", 9);
	CHECK(hl_srun_line(buf, 9, parts, 2, &task, &out, &n) == 1);
	CHECK(task == 1 && hl_agent_line_parse(out, n, &m) == HL_OK);
	CHECK(m.kind == 'o' && m.num == 3 && m.len == 4);
	CHECK(memcmp(m.text, "abc\n", 4) == 0);
	CHECK(line_parse("p 40000 -", &m) == HL_OK);
	CHECK(m.num == 40000 && m.text == NULL);
	CHECK(line_parse("h node7", &m) == HL_OK);
	CHECK_STR(m.text, "node7");
	CHECK(m.num == 0 && m.len == 5 && m.status == 1);
	CHECK(line_parse("h node7 4096", &m) == HL_OK);
	CHECK_STR(m.text, "node7");
	CHECK(m.num == 4096 && m.len == 5 && m.status == 1);
	/* The protocol: said since 2; an older agent's hello is 1. */
	CHECK(line_parse("h node7 4096 2", &m) == HL_OK);
	CHECK_STR(m.text, "node7");
	CHECK(m.num == 4096 && m.status == 2);
	CHECK_STR(m.version, "");
	/* Then its hvdrun's version (an older agent says none). */
	CHECK(line_parse("h node7 4096 3 0.2.0", &m) == HL_OK);
	CHECK_STR(m.text, "node7");
	CHECK(m.num == 4096 && m.status == 3);
	CHECK_STR(m.version, "0.2.0");
	CHECK(line_parse("h node7", &m) == HL_OK);
	CHECK_STR(m.version, "");
	CHECK(line_parse("e 1 \\q", &m) == HL_EPROTO);
	CHECK(line_parse("o x y", &m) == HL_EPROTO);
	/* The answers of a rank's input: taken, and no more. */
	CHECK(line_parse("c 2 4096", &m) == HL_OK);
	CHECK(m.kind == 'c' && m.num == 2 && m.len == 4096);
	CHECK(line_parse("c 2 0", &m) == HL_EPROTO);
	CHECK(line_parse("c 2 9x", &m) == HL_EPROTO);
	CHECK(line_parse("n 12", &m) == HL_OK);
	CHECK(m.kind == 'n' && m.num == 12);
	CHECK(line_parse("n 1 2", &m) == HL_EPROTO);
	hl_buf_close(&parts[0]);
	hl_buf_close(&parts[1]);
}

/* The payload of the only record in b. */
static bool only(struct hl_buf *b, char want, const char **data, size_t *len)
{
	size_t used;
	char type;

	return hl_rec_next(b, &used, &type, data, len) == 1 && type == want &&
	       used == b->len;
}

static void test_probe_messages(void)
{
	static const char tok[] = "0123456789abcdef0123456789abcdef";
	struct hl_pm_iface i = {"eth0", "10.1.2.3", false}, gi;
	struct hl_pm_target t = {7, "fd00::1", 4000, ""}, gt;
	struct hl_pm_result r = {7, false, 1500, "connection refused"}, gr;
	struct hl_pm_gpu g;
	struct hl_buf b;
	const char *d;
	size_t n;
	int ms, port;

	snprintf(t.token, sizeof(t.token), "%s", tok);
	hl_buf_init(&b);
	CHECK(hl_pm_put_iface(&b, &i) == HL_OK && only(&b, 'I', &d, &n));
	CHECK(n == strlen("eth0\t10.1.2.3\t-") &&
	      memcmp(d, "eth0\t10.1.2.3\t-", n) == 0);
	CHECK(hl_pm_iface(d, n, &gi) == HL_OK);
	CHECK_STR(gi.ifname, "eth0");
	CHECK_STR(gi.addr, "10.1.2.3");
	CHECK(!gi.loopback);
	CHECK(hl_pm_iface(d, n - 2, &gi) == HL_EPROTO); /* a field short */
	CHECK(hl_pm_iface("eth0\tnot-an-ip\tL", 17, &gi) == HL_EPROTO);
	hl_buf_close(&b);

	CHECK(hl_pm_put_target(&b, &t) == HL_OK && only(&b, 'T', &d, &n));
	CHECK(hl_pm_target(d, n, &gt) == HL_OK);
	CHECK(gt.id == 7 && gt.port == 4000 &&
	      strcmp(gt.addr, "fd00::1") == 0 && strcmp(gt.token, tok) == 0);
	CHECK(hl_pm_target(d, n - 1, &gt) == HL_EPROTO); /* token short */
	hl_buf_close(&b);
	t.port = 0; /* encoded, refused when read */
	CHECK(hl_pm_put_target(&b, &t) == HL_OK && only(&b, 'T', &d, &n));
	CHECK(hl_pm_target(d, n, &gt) == HL_EPROTO);
	hl_buf_close(&b);

	CHECK(hl_pm_put_result(&b, &r) == HL_OK && only(&b, 'C', &d, &n));
	CHECK(hl_pm_result(d, n, &gr) == HL_OK);
	CHECK(gr.id == 7 && !gr.ok && gr.us == 1500);
	CHECK_STR(gr.error, "connection refused");
	CHECK(hl_pm_result("7\t2\t1\t", 7, &gr) == HL_EPROTO);
	hl_buf_close(&b);

	CHECK(hl_pm_put_go(&b, 2500) == HL_OK && only(&b, 'G', &d, &n));
	CHECK(hl_pm_go(d, n, &ms) == HL_OK && ms == 2500);
	CHECK(hl_pm_go("0", 1, &ms) == HL_EPROTO);
	CHECK(hl_pm_go("600001", 6, &ms) == HL_EPROTO);
	hl_buf_close(&b);
	CHECK(hl_pm_put_port(&b, 22) == HL_OK && only(&b, 'P', &d, &n));
	CHECK(hl_pm_port(d, n, &port) == HL_OK && port == 22);
	CHECK(hl_pm_port("65536", 5, &port) == HL_EPROTO);
	CHECK(hl_pm_token(tok, 32, t.token) == HL_OK);
	CHECK(hl_pm_token("0123456789ABCDEF0123456789abcdef", 32, t.token) ==
	      HL_EPROTO);
	hl_buf_close(&b);

	/* A field with a tab would shift every later one: refused. */
	snprintf(i.ifname, sizeof(i.ifname), "a\tb");
	CHECK(hl_pm_put_iface(&b, &i) == HL_EINVAL && b.len == 0);

	CHECK(hl_pm_gpu("1\tNVIDIA H100 80GB HBM3\t85520809984", &g) == HL_OK);
	CHECK(g.index == 1 && g.mem_bytes == 85520809984ull);
	CHECK_STR(g.name, "NVIDIA H100 80GB HBM3");
	CHECK(hl_pm_gpu("1\tx", &g) == HL_EPROTO);
	CHECK(hl_pm_gpu("1\tx\t12MiB", &g) == HL_EPROTO);
	hl_buf_close(&b);
}

/* The bandwidth stage's messages: each round trip, every cut refused. */
static void test_probe_link_messages(void)
{
	struct hl_pm_link l = {"eth0", 100000, 1, 2, 3, 4}, gl;
	struct hl_pm_transfer x = {9,	"10.0.0.2", 4001, "",
				   200, 64LL << 20, 2000},
			      gx;
	struct hl_pm_rate r = {9, true, 12345678901LL, 200123, 38.5, ""}, gr;
	struct hl_buf b;
	const char *d;
	size_t n, k;
	int port;

	snprintf(x.token, sizeof(x.token), "0123456789abcdef0123456789abcdef");
	hl_buf_init(&b);
	CHECK(hl_pm_put_link(&b, &l) == HL_OK && only(&b, 'L', &d, &n));
	CHECK(hl_pm_link(d, n, &gl) == HL_OK);
	CHECK_STR(gl.ifname, "eth0");
	CHECK(gl.speed_mbps == 100000 && gl.rx_errors == 1 &&
	      gl.tx_errors == 2 && gl.rx_dropped == 3 && gl.tx_dropped == 4);
	for (k = 0; k < n; k++) /* the last field is one digit */
		CHECK(hl_pm_link(d, k, &gl) == HL_EPROTO);
	d = "eth0\t-1\t0\t0\t0\t0";
	CHECK(hl_pm_link(d, strlen(d), &gl) == HL_OK && gl.speed_mbps == -1);
	d = "eth0\t-2\t0\t0\t0\t0";
	CHECK(hl_pm_link(d, strlen(d), &gl) == HL_EPROTO);
	d = "eth0\t1\t-1\t0\t0\t0";
	CHECK(hl_pm_link(d, strlen(d), &gl) == HL_EPROTO);
	d = "\t1\t0\t0\t0\t0";
	CHECK(hl_pm_link(d, strlen(d), &gl) == HL_EPROTO);
	hl_buf_close(&b);

	CHECK(hl_pm_put_transfer(&b, &x) == HL_OK && only(&b, 'X', &d, &n));
	CHECK(hl_pm_transfer(d, n, &gx) == HL_OK);
	CHECK(gx.id == 9 && gx.port == 4001 && gx.max_ms == 200 &&
	      gx.max_bytes == 64LL << 20 && gx.timeout_ms == 2000);
	CHECK_STR(gx.addr, "10.0.0.2");
	CHECK_STR(gx.token, x.token);
	CHECK(hl_pm_transfer(d, n - 1, &gx) == HL_OK && gx.timeout_ms == 200);
	CHECK(hl_pm_transfer(d, n - 5, &gx) == HL_EPROTO);
	hl_buf_close(&b);
	x.max_bytes = 0; /* the round trips only */
	CHECK(hl_pm_put_transfer(&b, &x) == HL_OK && only(&b, 'X', &d, &n));
	CHECK(hl_pm_transfer(d, n, &gx) == HL_OK && gx.max_bytes == 0);
	hl_buf_close(&b);
	x.max_ms = 0; /* encoded, refused when read */
	CHECK(hl_pm_put_transfer(&b, &x) == HL_OK && only(&b, 'X', &d, &n));
	CHECK(hl_pm_transfer(d, n, &gx) == HL_EPROTO);
	hl_buf_close(&b);

	CHECK(hl_pm_put_rate(&b, &r) == HL_OK && only(&b, 'Y', &d, &n));
	CHECK(hl_pm_rate(d, n, &gr) == HL_OK);
	CHECK(gr.id == 9 && gr.ok && gr.bytes == 12345678901LL &&
	      gr.us == 200123 && gr.rtt_us == 38.5);
	CHECK_STR(gr.error, "");
	hl_buf_close(&b);
	r.ok = false;
	snprintf(r.error, sizeof(r.error), "stopped answering\tafter 1 MiB");
	CHECK(hl_pm_put_rate(&b, &r) == HL_OK && only(&b, 'Y', &d, &n));
	CHECK(hl_pm_rate(d, n, &gr) == HL_OK && !gr.ok);
	CHECK_STR(gr.error, "stopped answering");
	d = "9\t1\tx\t1\t1\t";
	CHECK(hl_pm_rate(d, strlen(d), &gr) == HL_EPROTO);
	hl_buf_close(&b);

	CHECK(hl_pm_put_sink_port(&b, 4001) == HL_OK && only(&b, 'Q', &d, &n));
	CHECK(hl_pm_port(d, n, &port) == HL_OK && port == 4001);
	hl_buf_close(&b);
}

static void test_probe_gpu_facts(void)
{
	struct hl_gpuinfo gi = {0};
	struct hl_gpu one = {"A\tB", 1024, 0, 0, 0, 0, -1};
	struct hl_strvec facts;
	struct hl_pm_gpu g;
	struct hl_buf b;
	const char *d;
	size_t n, used;
	char type;

	gi.driver = "550.1";
	gi.ngpus = 1;
	gi.gpus = &one;
	gi.cuda_devices = -1;
	gi.nccl = 22707;
	hl_strvec_init(&gi.notes);
	hl_strvec_init(&facts);
	hl_buf_init(&b);
	CHECK(hl_pm_put_gpuinfo(&b, &gi) == HL_OK);
	while (hl_rec_next(&b, &used, &type, &d, &n) == 1) {
		CHECK(type == 'U');
		hl_strvec_push_owned(&facts, hl_strndup(d, n));
		hl_buf_consume(&b, used);
	}
	/* driver, gpu, its pcie, nccl */
	CHECK(facts.n == 4);
	CHECK_STR(hl_pm_gpu_fact(&facts, "driver"), "550.1");
	CHECK_STR(hl_pm_gpu_fact(&facts, "nccl"), "22707");
	CHECK(hl_pm_gpu_fact(&facts, "cuda_devices") == NULL);
	/* A device name with a tab keeps what comes before it. */
	CHECK(hl_pm_gpu(hl_pm_gpu_fact(&facts, "gpu"), &g) == HL_OK);
	CHECK(g.index == 0 && g.mem_bytes == 1024);
	CHECK_STR(g.name, "A");
	hl_strvec_close(&facts);
	hl_buf_close(&b);
}

/* A host of two GPUs: each one's PCIe link and NVLinks, and the pair. */
static void test_probe_gpu_topology(void)
{
	struct hl_gpu two[2] = {{"G0", 1, 5, 5, 16, 16, 18},
				{"G1", 1, 4, 5, 8, 16, -1}};
	struct hl_gpu_pair pair = {0, 1, 50, 0, 1}, gq;
	struct hl_gpuinfo gi = {0};
	struct hl_strvec facts;
	struct hl_pm_pcie p;
	struct hl_buf b;
	const char *d;
	size_t n, used;
	char type;

	gi.ngpus = 2;
	gi.gpus = two;
	gi.pairs = &pair;
	gi.npairs = 1;
	gi.cuda_devices = 2;
	hl_strvec_init(&gi.notes);
	hl_strvec_init(&facts);
	hl_buf_init(&b);
	CHECK(hl_pm_put_gpuinfo(&b, &gi) == HL_OK);
	while (hl_rec_next(&b, &used, &type, &d, &n) == 1) {
		hl_strvec_push_owned(&facts, hl_strndup(d, n));
		hl_buf_consume(&b, used);
	}
	/* gpu, gpu, pcie, pcie, pair, cuda_devices */
	CHECK(facts.n == 6);
	CHECK(hl_pm_gpu_pcie(facts.v[2] + 5, &p) == HL_OK);
	CHECK(p.index == 0 && p.gen == 5 && p.width == 16 && p.nvlinks == 18);
	CHECK(hl_pm_gpu_pcie(facts.v[3] + 5, &p) == HL_OK);
	CHECK(p.index == 1 && p.gen == 4 && p.width == 8 && p.width_max == 16 &&
	      p.nvlinks == -1);
	CHECK(hl_pm_gpu_pair(hl_pm_gpu_fact(&facts, "pair"), &gq) == HL_OK);
	CHECK(gq.a == 0 && gq.b == 1 && gq.level == 50 && gq.nvlink == 0 &&
	      gq.peer == 1);
	CHECK_STR(hl_gpu_level_text(gq.level),
		  "SYS: across the CPUs' interconnect");
	CHECK(hl_gpu_level_text(7) == NULL);
	/* A pair the wrong way round, a field short, a number too big. */
	CHECK(hl_pm_gpu_pair("1\t0\t10\t1\t1", &gq) == HL_EPROTO);
	CHECK(hl_pm_gpu_pair("0\t1\t10\t1", &gq) == HL_EPROTO);
	CHECK(hl_pm_gpu_pcie("0\t5\t5\t16\t16\t99999999", &p) == HL_EPROTO);
	hl_strvec_close(&facts);
	hl_buf_close(&b);
}

/* Notes through a real pipe: output of any size arrives whole and in
 * order, in pieces that each fit one atomic write, then the exit. */
static void test_notes(void)
{
	static char big[10000], got[10000];
	struct hl_note note;
	char buf[32768];
	size_t len = 0, at = 0, ngot = 0, i;
	int fd[2], used, exits = 0, pieces = 0;
	ssize_t n;

	for (i = 0; i < sizeof(big); i++)
		big[i] = (char)(i * 7);
	CHECK(pipe(fd) == 0);
	hl_note_output(fd[1], 5, 1, big, sizeof(big));
	hl_note_write(fd[1], 5, 256, 'x');
	hl_note_write(fd[1], 6, 0, 'l');
	hl_note_write(fd[1], 7, 255 << 8, 's');
	close(fd[1]);
	while ((n = read(fd[0], buf + len, sizeof(buf) - len)) > 0)
		len += (size_t)n;
	close(fd[0]);
	while ((used = hl_note_next(buf + at, len - at, &note)) > 0) {
		at += (size_t)used;
		CHECK((size_t)used <= PIPE_BUF);
		if (note.kind == 'e') {
			CHECK(note.rank == 5 && exits == 0);
			memcpy(got + ngot, note.data, note.len);
			ngot += note.len;
			pieces++;
		} else if (note.kind == 'x') {
			CHECK(note.rank == 5 && note.status == 256);
			exits++;
		} else if (note.kind == 'l') {
			CHECK(note.rank == 6 && exits == 1);
			exits++;
		} else {
			CHECK(note.kind == 's' && note.rank == 7 &&
			      note.status == 255 << 8 && exits == 2);
			exits++;
		}
	}
	CHECK(used == 0 && at == len && exits == 3 && pieces == 3);
	CHECK(ngot == sizeof(big) && memcmp(got, big, sizeof(big)) == 0);
	/* Every cut of the first note waits for the rest. */
	used = hl_note_next(buf, len, &note);
	for (i = 0; used > 0 && i < (size_t)used; i++)
		if (hl_note_next(buf, i, &note) != 0)
			break;
	CHECK(used == PIPE_BUF && i == (size_t)used);
	/* A kind no spawner writes, and a length over PIPE_BUF. */
	memcpy(buf, "\0\0\0\1z\0\0\0\0", 9);
	CHECK(hl_note_next(buf, 9, &note) == HL_EPROTO);
	memcpy(buf, "\0\0\0\1o\0\1\0\0", 9);
	CHECK(hl_note_next(buf, 9, &note) == HL_EPROTO);
}

int main(void)
{
	RUN(test_big_endian_round_trip);
	RUN(test_probe_link_messages);
	RUN(test_probe_gpu_topology);
	RUN(test_writer_errors_are_sticky);
	RUN(test_reader_errors_are_sticky);
	RUN(test_control_responses);
	RUN(test_control_requests);
	RUN(test_rendezvous_hello);
	RUN(test_mesh_hello);
	RUN(test_elastic_messages);
	RUN(test_agent_records);
	RUN(test_agent_lines);
	RUN(test_node_requests);
	RUN(test_srun_lines);
	RUN(test_notes);
	RUN(test_probe_messages);
	RUN(test_probe_gpu_facts);
	return tap_done();
}
