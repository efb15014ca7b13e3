/* test_wait.c: libhvd's waits (core/util/wait.h): how long a site spins is
 * learned from how long its waits take; HVD_SPIN_US bounds it and 0
 * turns spinning off; a site whose waits mostly outlast its spin stops
 * spinning; a thread that must share its CPU with a busy one, or a host
 * with more runnable tasks than CPUs, stops every wait's spinning. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "util/internal.h"
#include "tap.h"
#include "util/wait.h"

/* Sleep ms milliseconds. */
static void nap_ms(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* One wait at site whose event comes `after_ms` after it began (0: at
 * the first check), blocking (sleeping) once the spin gives up. */
static void one_wait(enum hvd__wait_site site, int after_ms)
{
	struct hvd__wait w;
	long long due;

	hvd__wait_begin(&w, site);
	due = w.start + (long long)after_ms * 1000;
	while (hvd__now_us() < due && hvd__wait_spin(&w))
		;
	while (hvd__now_us() < due)
		nap_ms(1);
	hvd__wait_end(&w);
}

static void test_cap_zero_never_spins(void)
{
	struct hvd__wait w;

	hvd__wait_cap(0);
	hvd__wait_begin(&w, HVD__WAIT_NET);
	CHECK(!hvd__wait_spin(&w));
	CHECK(!hvd__wait_spin(&w)); /* and stays so */
	hvd__wait_end(&w);
	CHECK(hvd__wait_budget(HVD__WAIT_NET) == 0);
	CHECK(hvd__wait_budget(HVD__WAIT_GPU) == 0);
}

static void test_bounds(void)
{
	hvd__wait_cap(300);
	/* Nothing learned yet: the bound; the GPU stream's is ten times. */
	CHECK(hvd__wait_budget(HVD__WAIT_SHM) == 300);
	CHECK(hvd__wait_budget(HVD__WAIT_GPU) == 3000);
	/* An event at the first check keeps the spin as it was. */
	one_wait(HVD__WAIT_SHM, 0);
	CHECK(hvd__wait_budget(HVD__WAIT_SHM) == 300);
	/* A lower bound lowers what was learned at once. */
	hvd__wait_cap(100);
	CHECK(hvd__wait_budget(HVD__WAIT_SHM) == 100);
}

/* Bounds of tens of milliseconds here, so that a loaded machine's
 * delays stay well inside the rules' margins. */
static void test_learns_from_how_long_waits_take(void)
{
	int b;

	hvd__wait_cap(20000);
	CHECK(hvd__wait_budget(HVD__WAIT_MPI) == 20000);
	/* Events long after the spin gave up: each halves the spin. */
	one_wait(HVD__WAIT_MPI, 60);
	CHECK(hvd__wait_budget(HVD__WAIT_MPI) == 10000);
	one_wait(HVD__WAIT_MPI, 60);
	CHECK(hvd__wait_budget(HVD__WAIT_MPI) == 5000);
	/* An event within the bound, though after the spin: spin about
	 * twice as long as it took. */
	one_wait(HVD__WAIT_MPI, 6);
	b = hvd__wait_budget(HVD__WAIT_MPI);
	CHECK(b >= 12000 && b <= 20000);
	if (b < 12000 || b > 20000)
		printf("#   spin after a 6 ms wait: %d us\n", b);
}

/* A site whose waits mostly outlast its spin stops spinning, though
 * the occasional short wait keeps a spin learned (a background thread
 * waiting for the next gradient of a backward pass: most come long after,
 * a few at once); it spins again once most waits are short. */
static void test_spins_only_while_it_pays(void)
{
	int i;

	hvd__wait_cap(10000);
	CHECK(hvd__wait_pays(HVD__WAIT_CYCLE));
	for (i = 0; i < 8; i++) {
		one_wait(HVD__WAIT_CYCLE, 25);
		one_wait(HVD__WAIT_CYCLE, 25);
		one_wait(HVD__WAIT_CYCLE, 25);
		one_wait(HVD__WAIT_CYCLE, 2);
	}
	CHECK(hvd__wait_budget(HVD__WAIT_CYCLE) > 0);
	CHECK(!hvd__wait_pays(HVD__WAIT_CYCLE));
	/* Short waits again: their events within what it would spin. */
	for (i = 0; i < 40 && !hvd__wait_pays(HVD__WAIT_CYCLE); i++)
		one_wait(HVD__WAIT_CYCLE, 1);
	CHECK(hvd__wait_pays(HVD__WAIT_CYCLE));
	if (!hvd__wait_pays(HVD__WAIT_CYCLE))
		printf("#   still not spinning after %d short waits\n", i);
}

static atomic_bool stop;

static void *busy(void *arg)
{
	long long end = hvd__now_us() + 3000000;

	(void)arg;
	while (!atomic_load(&stop) && hvd__now_us() < end)
		;
	return NULL;
}

/* More runnable tasks than the host has CPUs (a busy thread a CPU, and
 * this one): the first spin stops for contention, long before its
 * bound. */
static void test_crowded_host_stops_spinning(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN), i;
	pthread_t *t = calloc((size_t)(n > 0 ? n : 1), sizeof(*t));
	struct hvd__wait w;
	long long took;

	CHECK(t != NULL && n > 0);
	if (t == NULL || n <= 0)
		return;
	CHECK(!hvd__wait_contended());
	hvd__wait_cap(900000);
	atomic_store(&stop, false);
	for (i = 0; i < n; i++)
		CHECK(pthread_create(&t[i], NULL, busy, NULL) == 0);
	nap_ms(50); /* all of them running */
	CHECK(hvd__wait_pays(HVD__WAIT_CALLER));
	hvd__wait_begin(&w, HVD__WAIT_CALLER);
	while (hvd__wait_spin(&w))
		;
	/* At once: the calm after contention is a millisecond. */
	CHECK(hvd__wait_contended());
	took = hvd__now_us() - w.start;
	hvd__wait_end(&w);
	CHECK(took < 300000);
	if (took >= 300000)
		printf("#   the spin ran %lld us\n", took);
	atomic_store(&stop, true);
	for (i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	free(t);
}

/* A thread that shares its CPU with a busy one is denied it part of the
 * time: no wait spins then, whichever its site. */
static void test_contention_stops_spinning(void)
{
	cpu_set_t one;
	pthread_t t;
	struct hvd__wait w;
	long long end;
	int cpu = sched_getcpu();
	bool asked, spun = true;

	CHECK(cpu >= 0);
	CPU_ZERO(&one);
	CPU_SET(cpu < 0 ? 0 : cpu, &one);
	CHECK(pthread_setaffinity_np(pthread_self(), sizeof(one), &one) == 0);
	hvd__wait_cap(200);
	atomic_store(&stop, false);
	CHECK(pthread_create(&t, NULL, busy, NULL) == 0);
	pthread_setaffinity_np(t, sizeof(one), &one);
	end = hvd__now_us() + 2500000;
	/* Waits whose spins run out, their event just after, until one
	 * finds contention; then a wait at any site blocks at once. (Still
	 * contended after its first check, it was when it began, or that
	 * check found contention: either way it did not spin. The calm is
	 * 1 ms at first, which a preemption of this thread can outlast:
	 * then again.) */
	do {
		while (!hvd__wait_contended() && hvd__now_us() < end) {
			hvd__wait_begin(&w, HVD__WAIT_SHM);
			while (hvd__wait_spin(&w))
				;
			hvd__wait_end(&w);
		}
		hvd__wait_begin(&w, HVD__WAIT_CALLER);
		spun = hvd__wait_spin(&w);
		asked = hvd__wait_contended();
		hvd__wait_end(&w);
	} while (!asked && hvd__now_us() < end);
	CHECK(asked);
	CHECK(!spun);
	atomic_store(&stop, true);
	pthread_join(t, NULL);
}

int main(void)
{
	RUN(test_cap_zero_never_spins);
	RUN(test_bounds);
	RUN(test_learns_from_how_long_waits_take);
	RUN(test_spins_only_while_it_pays);
	RUN(test_crowded_host_stops_spinning);
	RUN(test_contention_stops_spinning);
	return tap_done();
}
