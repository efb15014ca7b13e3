/* test_netplan.c: the network check's pure steps (lib/check/netplan.h), fed the
 * probe's own records, without SSH or sockets: candidates, pairs,
 * selection, reachability, and a host no other host reaches. */
#include <stdlib.h>
#include <string.h>

#include "check/netplan.h"
#include "check/probe_msg.h"
#include "agent/records.h"
#include "tap.h"

/* Feed every record of b to host h, as netcheck.c does. */
static void describe(struct hl_nc_host *h, struct hl_buf *b)
{
	const char *data;
	size_t len, used;
	char type;

	while (hl_rec_next(b, &used, &type, &data, &len) == 1) {
		hl_nc_take_description(h, type, data, len);
		hl_buf_consume(b, used);
	}
}

/* A probed host on machine `machine` with the interfaces "if=addr,...". */
static void probed(struct hl_nc_host *h, const struct hl_host *host,
		   const char *machine, const char *const *ifaces)
{
	struct hl_buf b;
	size_t i;

	hl_nc_host_init(h, host, true);
	hl_buf_init(&b);
	CHECK(hl_pm_put_text(&b, 'N', host->name) == HL_OK);
	CHECK(hl_pm_put_text(&b, 'M', machine) == HL_OK);
	CHECK(hl_pm_put_text(&b, 'K', "0123456789abcdef0123456789abcdef") ==
	      HL_OK);
	CHECK(hl_pm_put_port(&b, 4000) == HL_OK);
	for (i = 0; ifaces[i] != NULL; i += 2) {
		struct hl_pm_iface f = {.loopback = !strcmp(ifaces[i], "lo")};

		strcpy(f.ifname, ifaces[i]);
		strcpy(f.addr, ifaces[i + 1]);
		CHECK(hl_pm_put_iface(&b, &f) == HL_OK);
	}
	describe(h, &b);
	hl_buf_close(&b);
	h->probed = true;
}

/* The result of the test from host `from` to address `addr` of host to. */
static void result(struct hl_netcheck *nc, size_t from, size_t to,
		   const char *addr, bool ok)
{
	struct hl_buf b;
	size_t p;

	hl_buf_init(&b);
	for (p = 0; p < nc->npairs; p++) {
		const struct hl_nc_pair *q = &nc->pairs[p];
		struct hl_pm_result r = {.id = (long)p, .ok = ok, .us = 250};
		const char *data;
		size_t len, used;
		char type;

		if (q->from != from || q->to != to ||
		    strcmp(nc->h[to].addrs[q->addr].addr, addr) != 0)
			continue;
		if (!ok)
			strcpy(r.error, "connection refused");
		CHECK(hl_pm_put_result(&b, &r) == HL_OK);
		CHECK(hl_rec_next(&b, &used, &type, &data, &len) == 1);
		hl_nc_take_result(nc, data, len);
		hl_buf_consume(&b, used);
	}
	hl_buf_close(&b);
}

static const struct hl_host hosts[3] = {{.name = "a", .slots = 1},
					{.name = "b", .slots = 1},
					{.name = "c", .slots = 1}};
static const char *const if_a[] = {"lo",  "127.0.0.1", "eth0", "10.0.0.1",
				   "ib0", "10.1.0.1",  NULL};
static const char *const if_b[] = {"lo",  "127.0.0.1", "eth0", "10.0.0.2",
				   "ib0", "10.1.0.2",  NULL};
static const char *const if_c[] = {"lo",  "127.0.0.1", "enp1", "10.0.0.3",
				   "ib0", "10.1.0.3",  NULL};

static void three(struct hl_netcheck *nc)
{
	memset(nc, 0, sizeof(*nc));
	nc->h = calloc(3, sizeof(*nc->h));
	nc->n = 3;
	probed(&nc->h[0], &hosts[0], "m-a", if_a);
	probed(&nc->h[1], &hosts[1], "m-b", if_b);
	probed(&nc->h[2], &hosts[2], "m-c", if_c);
}

static void test_description(void)
{
	struct hl_netcheck nc;

	three(&nc);
	CHECK_STR(nc.h[1].hostname, "b");
	CHECK_STR(nc.h[1].machine, "m-b");
	CHECK(nc.h[1].port == 4000);
	CHECK(strlen(nc.h[1].token) == 32);
	CHECK(nc.h[1].naddrs == 3);
	CHECK_STR(nc.h[2].addrs[1].ifname, "enp1");
	CHECK(nc.h[2].addrs[0].loopback && !nc.h[2].addrs[1].loopback);
	/* An unknown or malformed record changes nothing. */
	hl_nc_take_description(&nc.h[0], 'P', "x", 1);
	hl_nc_take_description(&nc.h[0], 'Z', "x", 1);
	CHECK(nc.h[0].port == 0 && nc.h[0].naddrs == 3);
	hl_netcheck_close(&nc);
}

static void test_plan_pairs(void)
{
	struct hl_netcheck nc;
	size_t p;

	three(&nc);
	/* Three machines: loopback is no candidate; every host tests the
	 * two other hosts' two addresses. */
	CHECK(hl_nc_plan(&nc, "m-a") == HL_OK);
	CHECK(!nc.loopback);
	CHECK(nc.npairs == 3 * 2 * 2);
	for (p = 0; p < nc.npairs; p++) {
		CHECK(nc.pairs[p].from != nc.pairs[p].to);
		CHECK(!nc.h[nc.pairs[p].to].addrs[nc.pairs[p].addr].loopback);
	}
	CHECK(nc.h[2].ifaces.n == 2);
	CHECK_STR(nc.h[2].ifaces.v[0], "enp1");
	CHECK(!hl_nc_tested(&nc, 0, 0) && hl_nc_tested(&nc, 0, 2));
	hl_netcheck_close(&nc);
}

static void test_plan_loopback(void)
{
	struct hl_netcheck nc;

	three(&nc);
	free(nc.h[1].machine);
	free(nc.h[2].machine);
	nc.h[1].machine = strdup("m-a");
	nc.h[2].machine = strdup("m-a");
	/* Every host is this machine: loopback is a candidate too. */
	CHECK(hl_nc_plan(&nc, "m-a") == HL_OK);
	CHECK(nc.loopback);
	CHECK(nc.npairs == 3 * 2 * 3);
	CHECK_STR(nc.h[0].ifaces.v[0], "lo");
	hl_netcheck_close(&nc);
}

static void test_select(void)
{
	static const char *const addr[3][2] = {{"10.0.0.1", "10.1.0.1"},
					       {"10.0.0.2", "10.1.0.2"},
					       {"10.0.0.3", "10.1.0.3"}};
	struct hl_netcheck nc;
	size_t i, j;

	three(&nc);
	CHECK(hl_nc_plan(&nc, "m-a") == HL_OK);
	/* ib0 routes everywhere; eth0 of a and b only between them; c's
	 * enp1 from nobody. */
	for (i = 0; i < 3; i++)
		for (j = 0; j < 3; j++)
			if (i != j) {
				result(&nc, i, j, addr[j][1], true);
				result(&nc, i, j, addr[j][0], i != 2 && j != 2);
			}
	hl_nc_select(&nc);
	CHECK(hl_nc_reached(&nc, 0, 1, "eth0"));
	CHECK(!hl_nc_reached(&nc, 2, 0, "eth0"));
	CHECK(hl_nc_reached(&nc, 2, 0, "ib0"));
	for (i = 0; i < 3; i++) {
		CHECK(nc.h[i].usable);
		CHECK(nc.h[i].selected.n == 1);
		CHECK_STR(nc.h[i].selected.v[0], "ib0");
		/* The selected interface is listed first. */
		CHECK_STR(nc.h[i].ifaces.v[0], "ib0");
	}
	CHECK(nc.pairs[0].done && nc.pairs[0].ms == 0.25);
	hl_netcheck_close(&nc);
}

static void test_unreached_host(void)
{
	struct hl_netcheck nc;
	size_t i, j;

	three(&nc);
	CHECK(hl_nc_plan(&nc, "m-a") == HL_OK);
	/* Nobody reaches c; a and b reach each other on eth0. */
	for (i = 0; i < 3; i++)
		for (j = 0; j < 2; j++)
			if (i != j)
				result(&nc, i, j,
				       j == 0 ? "10.0.0.1" : "10.0.0.2", true);
	hl_nc_select(&nc);
	CHECK(nc.h[0].usable && nc.h[1].usable);
	CHECK(!nc.h[2].usable);
	CHECK_HAS(nc.h[2].error, "host 'c': no interface is reached");
	hl_netcheck_close(&nc);
}

int main(void)
{
	RUN(test_description);
	RUN(test_plan_pairs);
	RUN(test_plan_loopback);
	RUN(test_select);
	RUN(test_unreached_host);
	return tap_done();
}
