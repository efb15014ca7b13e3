/* test_bind.c: --bind-to's shares on the topologies of real hosts:
 * hardware threads numbered apart (a core's two threads are CPU c and
 * CPU c + cores, as most x86 hosts number them) or side by side, one or
 * two packages, NUMA nodes within packages. */
#include <stdio.h>
#include <string.h>

#include "job/bind.h"
#include "proto/worker_env.h"
#include "tap.h"

/* A host of `packages` packages of `per` cores of `threads` threads,
 * `nodes` NUMA nodes a package: apart (CPU = thread * cores + core) or
 * side by side (CPU = core * threads + thread). */
static int host(int packages, int per, int threads, int nodes, bool apart,
		struct hl_cpu *c)
{
	int cores = packages * per, n = cores * threads, k, t, cpu;

	for (k = 0; k < cores; k++)
		for (t = 0; t < threads; t++) {
			cpu = apart ? t * cores + k : k * threads + t;
			c[cpu].cpu = cpu;
			c[cpu].pkg = k / per;
			c[cpu].core = apart ? k : k * threads;
			c[cpu].node = k / (per / nodes);
		}
	return n;
}

/* The CPUs of *set as a list: "0-3,48-51". */
static const char *list(const cpu_set_t *set)
{
	static char out[512];
	size_t at = 0;
	int i, lo = -1;

	out[0] = '\0';
	for (i = 0; i <= CPU_SETSIZE; i++) {
		bool in = i < CPU_SETSIZE && CPU_ISSET(i, set);

		if (in && lo < 0)
			lo = i;
		if (!in && lo >= 0) {
			at += (size_t)snprintf(out + at, sizeof(out) - at,
					       lo == i - 1 ? "%s%d" : "%s%d-%d",
					       at ? "," : "", lo, i - 1);
			lo = -1;
		}
	}
	return out;
}

static const char *share(const struct hl_cpu *c, int n, long lr, long ls,
			 enum hl_bind_mode m)
{
	cpu_set_t mine;

	if (!hl_bind_share(c, n, lr, ls, m, &mine))
		return "none";
	return list(&mine);
}

/* Two packages of 24 cores, threads numbered apart (CPU c and c + 48 are
 * one core): each rank's cores whole, within its package. */
static void test_threads_apart(void)
{
	struct hl_cpu c[96];
	int n = host(2, 24, 2, 1, true, c);

	CHECK(n == 96);
	CHECK_STR(share(c, n, 0, 2, HL_BIND_CORE), "0-23,48-71");
	CHECK_STR(share(c, n, 1, 2, HL_BIND_CORE), "24-47,72-95");
	CHECK_STR(share(c, n, 0, 8, HL_BIND_CORE), "0-5,48-53");
	CHECK_STR(share(c, n, 7, 8, HL_BIND_CORE), "42-47,90-95");
	CHECK_STR(share(c, n, 3, 48, HL_BIND_CORE), "3,51");
	/* More ranks than cores: a share of the threads, a core's side by
	 * side. */
	CHECK_STR(share(c, n, 0, 96, HL_BIND_CORE), "0");
	CHECK_STR(share(c, n, 1, 96, HL_BIND_CORE), "48");
	CHECK_STR(share(c, n, 1, 64, HL_BIND_CORE), "48");
	/* More ranks than CPUs. */
	CHECK_STR(share(c, n, 0, 97, HL_BIND_CORE), "none");
	CHECK_STR(share(c, n, 96, 97, HL_BIND_OVERLOAD), "0");
	CHECK_STR(share(c, n, 1, 2, HL_BIND_OVERLOAD), "24-47,72-95");
	CHECK_STR(share(c, n, 1, 2, HL_BIND_NONE), "none");
}

/* Threads side by side, and one package: whole cores still. */
static void test_threads_side_by_side(void)
{
	struct hl_cpu c[16];
	int n = host(1, 8, 2, 1, false, c);

	CHECK_STR(share(c, n, 0, 2, HL_BIND_CORE), "0-7");
	CHECK_STR(share(c, n, 1, 3, HL_BIND_CORE), "4-7");
	CHECK_STR(share(c, n, 2, 3, HL_BIND_CORE), "8-11");
}

/* socket and numa: one package or node each, consecutive local ranks
 * together (8 GPUs' ranks: 0-3 on the first package, 4-7 on the
 * second). */
static void test_socket_numa(void)
{
	struct hl_cpu c[96];
	int n = host(2, 24, 2, 2, true, c);

	CHECK_STR(share(c, n, 0, 8, HL_BIND_SOCKET), "0-23,48-71");
	CHECK_STR(share(c, n, 3, 8, HL_BIND_SOCKET), "0-23,48-71");
	CHECK_STR(share(c, n, 4, 8, HL_BIND_SOCKET), "24-47,72-95");
	CHECK_STR(share(c, n, 1, 3, HL_BIND_SOCKET), "0-23,48-71");
	CHECK_STR(share(c, n, 2, 3, HL_BIND_SOCKET), "24-47,72-95");
	CHECK_STR(share(c, n, 0, 1, HL_BIND_SOCKET), "0-23,48-71");
	CHECK_STR(share(c, n, 0, 8, HL_BIND_NUMA), "0-11,48-59");
	CHECK_STR(share(c, n, 2, 8, HL_BIND_NUMA), "12-23,60-71");
	CHECK_STR(share(c, n, 7, 8, HL_BIND_NUMA), "36-47,84-95");
	/* More ranks than CPUs: each its unit, shared. */
	CHECK_STR(share(c, n, 199, 200, HL_BIND_SOCKET), "24-47,72-95");
}

/* The check's counts of a host's packages, cores and NUMA nodes. */
static void test_count(void)
{
	struct hl_cpu c[96];
	int n = host(2, 24, 2, 2, true, c);
	long p, k, nodes;

	hl_topology_count(c, n, &p, &k, &nodes);
	CHECK(p == 2 && k == 48 && nodes == 4);
	hl_topology_count(c, 1, &p, &k, &nodes);
	CHECK(p == 1 && k == 1 && nodes == 1);
	n = host(1, 8, 2, 1, false, c);
	hl_topology_count(c, n, &p, &k, &nodes);
	CHECK(p == 1 && k == 8 && nodes == 1);
}

/* No topology (each CPU a core of package 0): contiguous shares of the
 * CPUs allowed, the leftover unused. */
static void test_no_topology(void)
{
	static const int cpus[] = {2, 3, 5, 7, 8};
	struct hl_cpu c[5];
	int i;

	for (i = 0; i < 5; i++)
		c[i] = (struct hl_cpu){cpus[i], 0, cpus[i], 0};
	CHECK_STR(share(c, 5, 0, 2, HL_BIND_CORE), "2-3");
	CHECK_STR(share(c, 5, 1, 2, HL_BIND_CORE), "5,7");
	CHECK_STR(share(c, 5, 0, 1, HL_BIND_CORE), "2-3,5,7-8");
	CHECK_STR(share(c, 5, 1, 0, HL_BIND_CORE), "none");
	CHECK_STR(share(c, 5, 1, 2, HL_BIND_SOCKET), "2-3,5,7-8");
}

/* A mode is its HVD_BIND_TO choice's index (bind.h). */
static void test_mode_names(void)
{
	const char *const *c = wenv_vars[WENV_BIND_TO].choices;

	CHECK_STR(c[HL_BIND_CORE], "core");
	CHECK_STR(c[HL_BIND_NONE], "none");
	CHECK_STR(c[HL_BIND_OVERLOAD], "core:overload-allowed");
	CHECK_STR(c[HL_BIND_SOCKET], "socket");
	CHECK_STR(c[HL_BIND_NUMA], "numa");
	CHECK_STR(c[HL_BIND_GPU], "gpu");
	CHECK(c[HL_BIND_GPU + 1] == NULL);
}

int main(void)
{
	RUN(test_threads_apart);
	RUN(test_threads_side_by_side);
	RUN(test_socket_numa);
	RUN(test_count);
	RUN(test_mode_names);
	RUN(test_no_topology);
	return tap_done();
}
