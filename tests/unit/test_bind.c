/* test_bind.c: --bind-to core's shares on the topologies of real hosts:
 * hardware threads numbered apart (a core's two threads are CPU c and
 * CPU c + cores, as most x86 hosts number them) or side by side, one or
 * two packages. */
#include <stdio.h>
#include <string.h>

#include "job/bind.h"
#include "tap.h"

/* A host of `packages` packages of `per` cores of `threads` threads:
 * apart (CPU = thread * cores + core) or side by side (CPU = core *
 * threads + thread). */
static int host(int packages, int per, int threads, bool apart, int *cpus,
		int *pkg, int *core)
{
	int cores = packages * per, n = cores * threads, c, t, cpu;

	for (c = 0; c < cores; c++)
		for (t = 0; t < threads; t++) {
			cpu = apart ? t * cores + c : c * threads + t;
			cpus[cpu] = cpu;
			pkg[cpu] = c / per;
			core[cpu] = apart ? c : c * threads;
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

static const char *share(int n, const int *cpus, const int *pkg,
			 const int *core, long lr, long ls, bool overload)
{
	cpu_set_t mine;

	if (!hl_bind_share(n, cpus, pkg, core, lr, ls, overload, &mine))
		return "none";
	return list(&mine);
}

/* Two packages of 24 cores, threads numbered apart (CPU c and c + 48 are
 * one core): each rank's cores whole, within its package. */
static void test_threads_apart(void)
{
	int cpus[96], pkg[96], core[96];
	int n = host(2, 24, 2, true, cpus, pkg, core);

	CHECK(n == 96);
	CHECK_STR(share(n, cpus, pkg, core, 0, 2, false), "0-23,48-71");
	CHECK_STR(share(n, cpus, pkg, core, 1, 2, false), "24-47,72-95");
	CHECK_STR(share(n, cpus, pkg, core, 0, 8, false), "0-5,48-53");
	CHECK_STR(share(n, cpus, pkg, core, 7, 8, false), "42-47,90-95");
	CHECK_STR(share(n, cpus, pkg, core, 3, 48, false), "3,51");
	/* More ranks than cores: a share of the threads, a core's side by
	 * side. */
	CHECK_STR(share(n, cpus, pkg, core, 0, 96, false), "0");
	CHECK_STR(share(n, cpus, pkg, core, 1, 96, false), "48");
	CHECK_STR(share(n, cpus, pkg, core, 1, 64, false), "48");
	/* More ranks than CPUs. */
	CHECK_STR(share(n, cpus, pkg, core, 0, 97, false), "none");
	CHECK_STR(share(n, cpus, pkg, core, 96, 97, true), "0");
}

/* Threads side by side, and one package: whole cores still. */
static void test_threads_side_by_side(void)
{
	int cpus[16], pkg[16], core[16];
	int n = host(1, 8, 2, false, cpus, pkg, core);

	CHECK_STR(share(n, cpus, pkg, core, 0, 2, false), "0-7");
	CHECK_STR(share(n, cpus, pkg, core, 1, 3, false), "4-7");
	CHECK_STR(share(n, cpus, pkg, core, 2, 3, false), "8-11");
}

/* No topology (each CPU a core of package 0): contiguous shares of the
 * CPUs allowed, the leftover unused. */
static void test_no_topology(void)
{
	int cpus[] = {2, 3, 5, 7, 8}, pkg[5] = {0}, core[5];
	int i;

	for (i = 0; i < 5; i++)
		core[i] = cpus[i];
	CHECK_STR(share(5, cpus, pkg, core, 0, 2, false), "2-3");
	CHECK_STR(share(5, cpus, pkg, core, 1, 2, false), "5,7");
	CHECK_STR(share(5, cpus, pkg, core, 0, 1, false), "2-3,5,7-8");
	CHECK_STR(share(5, cpus, pkg, core, 1, 0, false), "none");
}

int main(void)
{
	RUN(test_threads_apart);
	RUN(test_threads_side_by_side);
	RUN(test_no_topology);
	return tap_done();
}
