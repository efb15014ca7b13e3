/* test_netplan.c: the network check's pure steps (lib/check/netplan.h), fed the
 * probe's own records, without SSH or sockets: candidates, pairs,
 * selection, reachability, a host no other host reaches, and one whose
 * hvdrun speaks another agent protocol. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check/linkplan.h"
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

/* A host whose probe's hvdrun speaks another agent protocol is not
 * usable, whatever it reaches: no rank can start there. One that says
 * this one's, or says none (a probe older than 'V'), is. */
static void test_other_hvdrun(void)
{
	struct hl_netcheck nc;
	struct hl_buf b;
	size_t p;

	three(&nc);
	hl_buf_init(&b);
	CHECK(hl_rec_put_version(&b) == HL_OK);
	describe(&nc.h[0], &b);
	CHECK(hl_rec_put(&b, 'V',
			 "\0\0\0\x09"
			 "9.9.9",
			 9) == HL_OK);
	describe(&nc.h[1], &b);
	hl_buf_close(&b);
	CHECK(nc.h[0].agent_proto == HL_AGENT_PROTO);
	CHECK_STR(nc.h[0].version, HVD_VERSION);
	CHECK(nc.h[1].agent_proto == 9);
	CHECK_STR(nc.h[1].version, "9.9.9");
	CHECK(nc.h[2].agent_proto == 0 && nc.h[2].version == NULL);
	CHECK(hl_nc_plan(&nc, "m-a") == HL_OK);
	for (p = 0; p < nc.npairs; p++)
		nc.pairs[p].done = nc.pairs[p].ok = true;
	hl_nc_select(&nc);
	CHECK(nc.h[0].usable && nc.h[2].usable);
	CHECK(!nc.h[1].usable);
	CHECK_HAS(
		nc.h[1].error,
		"host 'b': its hvdrun (9.9.9, agent protocol 9) cannot start ranks for this one (" HVD_VERSION
		", agent protocol ");
	CHECK_HAS(nc.h[1].error, "install the same hvdrun on every host");
	CHECK(nc.h[0].error == NULL && nc.h[2].error == NULL);
	/* Selected again (after --bandwidth): the same verdict. */
	hl_nc_select(&nc);
	CHECK(!nc.h[1].usable && nc.h[0].usable);
	hl_netcheck_close(&nc);
}

/* Three hosts that reach each other on both their interfaces. */
static void all_reached(struct hl_netcheck *nc)
{
	size_t p;

	three(nc);
	CHECK(hl_nc_plan(nc, "m-a") == HL_OK);
	for (p = 0; p < nc->npairs; p++) {
		nc->pairs[p].done = nc->pairs[p].ok = true;
	}
	hl_nc_select(nc);
}

/* Feed one 'Y' for link id, as a probe answers. */
static void rate(struct hl_netcheck *nc, enum hl_nc_take what, long id, bool ok,
		 long long bytes, double us)
{
	struct hl_pm_rate r = {.id = id,
			       .ok = ok,
			       .bytes = bytes,
			       .us = us,
			       .rtt_us = what == HL_NC_TRIPS ? 40 : 0};
	const char *data;
	size_t len, used;
	char type;
	struct hl_buf b;

	if (!ok)
		strcpy(r.error, "stopped answering after 1.0 MiB");
	hl_buf_init(&b);
	CHECK(hl_pm_put_rate(&b, &r) == HL_OK);
	CHECK(hl_rec_next(&b, &used, &type, &data, &len) == 1);
	hl_nc_take_rate(nc, what, data, len);
	hl_buf_close(&b);
}

static void stats(struct hl_nc_host *h, int when, const char *ifname,
		  long long speed, unsigned long long rx_errors)
{
	struct hl_pm_link l = {.speed_mbps = speed, .rx_errors = rx_errors};
	const char *data;
	size_t len, used;
	char type;
	struct hl_buf b;

	strcpy(l.ifname, ifname);
	hl_buf_init(&b);
	CHECK(hl_pm_put_link(&b, &l) == HL_OK);
	CHECK(hl_rec_next(&b, &used, &type, &data, &len) == 1);
	if (when == 0)
		hl_nc_take_description(h, type, data, len);
	else
		hl_nc_take_stats(h, when, data, len);
	hl_buf_close(&b);
}

static void test_link_rounds(void)
{
	struct hl_netcheck nc;
	size_t i, j, r;

	all_reached(&nc);
	CHECK(hl_nc_plan_links(&nc) == HL_OK);
	/* Every ordered pair on each of the destination's two selected
	 * interfaces; 2 rounds an interface. */
	CHECK(nc.nlinks == 3 * 2 * 2);
	CHECK(nc.nrounds == 4);
	for (i = 0; i < nc.nlinks; i++) {
		const struct hl_nc_link *l = &nc.links[i];

		CHECK(l->from != l->to && l->round < nc.nrounds);
		CHECK(!nc.h[l->to].addrs[l->addr].loopback);
		for (j = i + 1; j < nc.nlinks; j++) {
			const struct hl_nc_link *m = &nc.links[j];

			/* Once each; in a round, one send and one receive a
			 * host. */
			CHECK(!(l->from == m->from && l->to == m->to &&
				!strcmp(hl_nc_link_ifname(&nc, l),
					hl_nc_link_ifname(&nc, m))));
			if (l->round == m->round)
				CHECK(l->from != m->from && l->to != m->to);
		}
	}
	for (r = 0, j = 0; r < nc.nrounds; r++, j = 0) {
		for (i = 0; i < nc.nlinks; i++)
			j += nc.links[i].round == r;
		CHECK(j == 3);
	}
	hl_netcheck_close(&nc);
}

/* Links that read slow are measured again, in retry rounds numbered in
 * the order of their rounds, and keep the better reading. */
static void test_link_retries(void)
{
	struct hl_netcheck nc;
	size_t ib[8], n = 0, i, j, rounds = 0, o = SIZE_MAX;
	const char *text = NULL, *otext = NULL;

	all_reached(&nc);
	CHECK(hl_nc_plan_links(&nc) == HL_OK);
	for (i = 0; i < nc.nlinks; i++)
		if (strcmp(hl_nc_link_ifname(&nc, &nc.links[i]), "ib0") == 0)
			ib[n++] = i;
		else if (o == SIZE_MAX)
			o = i;
	/* ib0: 6 links, 3 of them slow (0.8 Gb/s against 8); and one link
	 * on another interface, whose retry will not come. */
	CHECK(n == 6 && o != SIZE_MAX);
	for (i = 0; i < nc.nlinks; i++) {
		rate(&nc, HL_NC_TRIPS, (long)i, true, 0, 0);
		rate(&nc, HL_NC_DATA, (long)i, true,
		     i == ib[0] || i == ib[1] || i == ib[2] || i == o
			     ? 100000000
			     : 1000000000,
		     1e6);
	}
	/* A retry before its plan is not taken. */
	rate(&nc, HL_NC_RETRY, (long)ib[0], true, 1000000000, 1e6);
	CHECK(!nc.links[ib[0]].retried && nc.links[ib[0]].bytes == 100000000);
	CHECK(hl_nc_plan_retries(&nc) == HL_OK);
	for (i = 0; i < nc.nlinks; i++) {
		const struct hl_nc_link *l = &nc.links[i];

		CHECK(l->retried ==
		      (i == ib[0] || i == ib[1] || i == ib[2] || i == o));
		if (!l->retried)
			continue;
		CHECK(l->first_gbps == 0.8 && l->retry < nc.nretries);
		for (j = 0; j < nc.nlinks; j++)
			if (nc.links[j].retried)
				CHECK((l->round < nc.links[j].round) ==
				      (l->retry < nc.links[j].retry));
	}
	/* One retry round for each round that has a slow link. */
	for (i = 0; i < nc.nrounds; i++)
		for (j = 0; j < nc.nlinks; j++)
			if (nc.links[j].retried && nc.links[j].round == i) {
				rounds++;
				break;
			}
	CHECK(nc.nretries == rounds && rounds >= 1);
	/* A stall: 8 Gb/s again. Slow twice: the better (0.9) is kept. The
	 * third stops answering: it fails. */
	rate(&nc, HL_NC_RETRY, (long)ib[0], true, 1000000000, 1e6);
	rate(&nc, HL_NC_RETRY, (long)ib[1], true, 112500000, 1e6);
	rate(&nc, HL_NC_RETRY, (long)ib[2], false, 0, 0);
	/* A link not retried takes no retry. */
	rate(&nc, HL_NC_RETRY, (long)ib[3], true, 1, 1e6);
	CHECK(nc.links[ib[3]].bytes == 1000000000);
	CHECK(hl_nc_judge(&nc) == HL_OK);
	CHECK(!nc.links[ib[0]].slow && nc.links[ib[0]].gbps == 8);
	CHECK(nc.links[ib[1]].slow && nc.links[ib[1]].gbps == 0.9 &&
	      nc.links[ib[1]].first_gbps == 0.8);
	CHECK(!nc.links[ib[2]].ok);
	CHECK_STR(nc.links[ib[2]].error,
		  "measured again: stopped answering after 1.0 MiB");
	/* Its retry did not come: slow on its one reading, which the finding
	 * does not call the better of two. */
	CHECK(nc.links[o].slow && !nc.links[o].twice && nc.links[ib[1]].twice);
	CHECK(hl_nc_count(&nc, HL_NCF_SLOW_LINK) == 2);
	CHECK(hl_nc_count(&nc, HL_NCF_FAILED_LINK) == 1);
	for (i = 0; i < nc.nfindings; i++)
		if (nc.findings[i].kind == HL_NCF_SLOW_LINK &&
		    nc.findings[i].link == ib[1])
			text = nc.findings[i].text;
		else if (nc.findings[i].kind == HL_NCF_SLOW_LINK)
			otext = nc.findings[i].text;
	CHECK(text != NULL &&
	      strstr(text, ": 0.90 Gb/s (the better of two transfers), under "
			   "half the median of ib0 (8.00 Gb/s)") != NULL);
	CHECK(otext != NULL &&
	      strstr(otext, ": 0.80 Gb/s, under half") != NULL);
	/* A retry slower than the reading kept changes nothing. */
	rate(&nc, HL_NC_RETRY, (long)ib[1], true, 50000000, 1e6);
	CHECK(nc.links[ib[1]].bytes == 112500000);
	hl_netcheck_close(&nc);
}

static void test_link_judge(void)
{
	struct hl_netcheck nc;
	struct hl_strvec names;
	double g, rtt;
	size_t i, slow = SIZE_MAX, failed = SIZE_MAX;

	all_reached(&nc);
	stats(&nc.h[0], 0, "ib0", 200000, 0);
	stats(&nc.h[1], 0, "ib0", 100000, 5);
	stats(&nc.h[2], 0, "ib0", 200000, 0);
	stats(&nc.h[1], 1, "ib0", 100000, 9);
	stats(&nc.h[2], 1, "ib0", 200000, 0);
	CHECK(hl_nc_plan_links(&nc) == HL_OK);
	for (i = 0; i < nc.nlinks; i++) {
		const struct hl_nc_link *l = &nc.links[i];

		if (strcmp(hl_nc_link_ifname(&nc, l), "ib0") != 0)
			continue;
		if (l->from == 0 && l->to == 2)
			slow = i;
		if (l->from == 2 && l->to == 1)
			failed = i;
	}
	CHECK(slow != SIZE_MAX && failed != SIZE_MAX);
	for (i = 0; i < nc.nlinks; i++) {
		rate(&nc, HL_NC_TRIPS, (long)i, true, 0, 0);
		/* 1 GB a second: 8 Gb/s; the slow one a tenth of it. */
		rate(&nc, HL_NC_DATA, (long)i, i != failed,
		     i == slow ? 100000000 : 1000000000, 1e6);
	}
	CHECK(hl_nc_judge(&nc) == HL_OK);
	CHECK(nc.links[slow].slow && nc.links[slow].gbps == 0.8);
	CHECK(!nc.links[failed].ok && !nc.links[failed].slow);
	CHECK_STR(nc.links[failed].error, "stopped answering after 1.0 MiB");
	CHECK(nc.links[0].rtt_us == 40);
	CHECK(hl_nc_link_medians(&nc, "ib0", &g, &rtt) && g == 8 && rtt == 40);
	CHECK(!hl_nc_link_medians(&nc, "wlan0", &g, &rtt));
	hl_strvec_init(&names);
	CHECK(hl_nc_link_ifnames(&nc, &names) == HL_OK && names.n == 3);
	hl_strvec_close(&names);
	CHECK(hl_nc_count(&nc, HL_NCF_SLOW_LINK) == 1);
	CHECK(hl_nc_count(&nc, HL_NCF_FAILED_LINK) == 1);
	/* b's ib0 at half the others' speed, and 4 more errors. */
	CHECK(hl_nc_count(&nc, HL_NCF_LOW_SPEED) == 1);
	CHECK(hl_nc_count(&nc, HL_NCF_ERRORS) == 1);
	CHECK(hl_nc_count(&nc, HL_NCF_DROPS) == 0);
	for (i = 0; i < nc.nfindings; i++) {
		const struct hl_nc_finding *f = &nc.findings[i];

		if (f->kind == HL_NCF_SLOW_LINK)
			CHECK_STR(f->text,
				  "a -> c on ib0: 0.80 Gb/s, under half "
				  "the median of ib0 (8.00 Gb/s)");
		if (f->kind == HL_NCF_LOW_SPEED)
			CHECK_STR(f->text, "b ib0: negotiated 100000 Mb/s, the "
					   "other hosts' ib0 200000 Mb/s");
		if (f->kind == HL_NCF_ERRORS)
			CHECK_STR(f->text, "b ib0: 4 receive and 0 transmit "
					   "errors during the check");
	}
	hl_netcheck_close(&nc);
}

static void test_gpu_findings(void)
{
	static const char pcie[] = "pcie\t1\t4\t5\t8\t16\t-1",
			  full[] = "pcie\t0\t5\t5\t16\t16\t-1",
			  pair[] = "pair\t0\t1\t20\t0\t0";
	struct hl_netcheck nc;
	size_t i;

	all_reached(&nc);
	hl_nc_take_description(&nc.h[1], 'U', full, strlen(full));
	hl_nc_take_description(&nc.h[1], 'U', pcie, strlen(pcie));
	hl_nc_take_description(&nc.h[1], 'U', pair, strlen(pair));
	CHECK(hl_nc_judge(&nc) == HL_OK);
	CHECK(hl_nc_count(&nc, HL_NCF_PCIE) == 1);
	CHECK(hl_nc_count(&nc, HL_NCF_NO_PEER) == 1);
	for (i = 0; i < nc.nfindings; i++) {
		CHECK(nc.findings[i].host == 1);
		if (nc.findings[i].kind == HL_NCF_PCIE)
			CHECK_STR(nc.findings[i].text,
				  "b GPU 1: PCIe x8, where it takes x16");
		else
			CHECK_STR(nc.findings[i].text,
				  "b GPUs 0 and 1: no peer access (their "
				  "traffic goes through host memory)");
	}
	/* Findings alone fail nothing. */
	nc.nusable = nc.n;
	CHECK(hl_nc_status(&nc, true) == 0);
	hl_netcheck_close(&nc);
}

/* More slots than GPUs: CUDA's device count, else the driver's GPUs. */
static void test_gpu_slots(void)
{
	static const char two[] = "cuda_devices\t2",
			  gpu0[] = "gpu\t0\tA100\t40960",
			  gpu1[] = "gpu\t1\tA100\t40960";
	static const struct hl_host big[3] = {{.name = "a", .slots = 2},
					      {.name = "b", .slots = 4},
					      {.name = "c", .slots = 3}};
	struct hl_netcheck nc;
	size_t i;

	all_reached(&nc);
	for (i = 0; i < 3; i++)
		nc.h[i].host = &big[i];
	hl_nc_take_description(&nc.h[0], 'U', two, strlen(two));
	hl_nc_take_description(&nc.h[1], 'U', two, strlen(two));
	hl_nc_take_description(&nc.h[2], 'U', gpu0, strlen(gpu0));
	hl_nc_take_description(&nc.h[2], 'U', gpu1, strlen(gpu1));
	CHECK(hl_nc_judge(&nc) == HL_OK);
	CHECK(hl_nc_count(&nc, HL_NCF_GPU_SLOTS) == 2);
	CHECK(nc.nfindings == 2 && nc.findings[0].host == 1 &&
	      nc.findings[1].host == 2);
	CHECK_STR(nc.findings[0].text,
		  "b: 4 slots but 2 GPUs: local ranks 2 and 3 of a GPU job "
		  "have no GPU of their own (NCCL takes one rank a GPU); "
		  "give it at most 2 slots for GPU jobs");
	CHECK_STR(nc.findings[1].text,
		  "c: 3 slots but 2 GPUs: local rank 2 of a GPU job has no "
		  "GPU of its own (NCCL takes one rank a GPU); give it at "
		  "most 2 slots for GPU jobs");
	/* A GPU finding fails nothing. */
	nc.nusable = nc.n;
	CHECK(hl_nc_status(&nc, true) == 0);
	/* No GPU, or as many slots as GPUs: nothing. */
	hl_netcheck_close(&nc);
	all_reached(&nc);
	for (i = 0; i < 3; i++)
		nc.h[i].host = &big[i];
	hl_nc_take_description(&nc.h[0], 'U', two, strlen(two));
	CHECK(hl_nc_judge(&nc) == HL_OK);
	CHECK(hl_nc_count(&nc, HL_NCF_GPU_SLOTS) == 0);
	hl_netcheck_close(&nc);
}

int main(void)
{
	RUN(test_gpu_findings);
	RUN(test_gpu_slots);
	RUN(test_link_rounds);
	RUN(test_link_judge);
	RUN(test_link_retries);
	RUN(test_description);
	RUN(test_plan_pairs);
	RUN(test_plan_loopback);
	RUN(test_select);
	RUN(test_unreached_host);
	RUN(test_other_hvdrun);
	return tap_done();
}
