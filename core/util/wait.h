/* wait.h: how every wait in libhvd waits. A wait spins (checks in a
 * tight loop, never yielding the CPU) while spinning pays, then blocks
 * (futex, poll, condition variable, sleep). Whether spinning pays is
 * learned from the waits themselves:
 *
 *  - how long each site's waits took: a site whose waits end within its
 *    spin keeps spinning for about twice what they took; one whose waits
 *    outlast the spin halves it (the event comes long after, and the
 *    spin only took a CPU that someone else could use);
 *  - whether another task wants the CPU: this thread's time runnable but
 *    not running (the kernel's schedstat run_delay) since its last spin,
 *    while it spun or worked, of 100 us or more and an eighth of the time
 *    or more (over at most 50 ms); or, while it spins, 16 us of it, or
 *    more tasks of the host runnable than it has CPUs at two probes in a
 *    row, 16 us apart (/proc/loadavg's count of running tasks, which the
 *    kernel counts as it is read: a DataLoader worker, or the rank's own
 *    computing thread, that waits while the spin holds a core; a task
 *    that only ran for a moment is gone by the second). Be it a busy
 *    process beside the job, a rank of a host with more ranks than
 *    cores, or the thread whose
 *    work the background thread's spin interrupts, it would have the CPU
 *    while this thread spun. Then no wait of the process spins for 1 ms,
 *    a while that doubles (up to 8 ms) while contention keeps coming
 *    back. (No longer: a spin that ends before its first probe still
 *    pays while the peer that it waits for runs, as two ranks'
 *    background threads that hand a collective's chunks to each other
 *    do between the busy processes' slices. With 10 ms to 1 s, the
 *    ResNet-50 step at np 2 beside two busy processes took 1.5 times as
 *    long; with 1 ms to 1 s, it did in one run of five, the calm grown
 *    long. A spin stopped every 8 ms by contention takes at most 32 us
 *    of it.) (Without schedstat, any involuntary context switch counts;
 *    without /proc/loadavg, only the thread's own wait.) The kernel's
 *    CPU pressure (/proc/pressure/cpu) is no help at this scale: its
 *    total moves in steps of milliseconds.
 *
 * A spin's first check for contention comes 16 us into it (most waits of
 * a quiet job end sooner, with no system call).
 * A spin never yields: sched_yield() moves a task behind every other
 * runnable one for a whole time slice (EEVDF), which cost more than a
 * hundred times the quiet step with two busy processes beside the job.
 * HVD_SPIN_US bounds every spin (0: never spin); the GPU stream's wait
 * may spin ten times as long (a collective on the GPU takes longer).
 * Thread-safe: the state is process-wide and read and written with
 * relaxed atomics (a lost update costs one wait's tuning). */
#ifndef HVD_WAIT_H
#define HVD_WAIT_H

#include <stdbool.h>

enum hvd__wait_site {
	HVD__WAIT_CYCLE,  /* the engine's owner, for work between cycles */
	HVD__WAIT_CALLER, /* hvd_wait, for work the background thread does */
	HVD__WAIT_SHM,	  /* a local peer, at a shared-memory barrier */
	HVD__WAIT_NET,	  /* a peer's bytes, or room for ours, on a socket */
	HVD__WAIT_MPI,	  /* an MPI request */
	HVD__WAIT_GPU,	  /* the GPU stream */
	HVD__WAIT_SITES
};

struct hvd__wait {
	enum hvd__wait_site site;
	long long start;      /* us */
	long long spin_end;   /* spin until then; 0 once blocking */
	long long next_probe; /* next check for preemption */
	long long delay;      /* this thread's wait for a CPU, so far */
	int budget;	      /* us this wait may spin */
	bool blocked;	      /* the spin ended without the event */
	bool crowded;	      /* the last probe saw more tasks than CPUs */
};

/* Ready this thread's waits: open what they read (a descriptor per
 * thread, closed when the thread ends, and one for the process, the
 * host's count of runnable tasks, kept). A wait does it too when its
 * thread has not; a thread that libhvd starts does it first, so that
 * what the process holds does not depend on whether it has waited. */
void hvd__wait_thread(void);

/* Start a wait at site: decide how long it may spin. */
void hvd__wait_begin(struct hvd__wait *w, enum hvd__wait_site site);

/* After a check that found no event: true while the wait should check
 * again at once (spinning; it paused the CPU briefly), false once it
 * should block. Once false, false for the rest of the wait. */
bool hvd__wait_spin(struct hvd__wait *w);

/* The event came: learn from how long it took. */
void hvd__wait_end(struct hvd__wait *w);

/* HVD_SPIN_US, the bound of every spin (0 never spins); the engine sets
 * 0 while the job is idle and the knob again when work comes. */
void hvd__wait_cap(int cap_us);

/* What the waits have learned (for the log and the tests): a site's spin
 * now in us, and whether spinning is off for contention. */
int hvd__wait_budget(enum hvd__wait_site site);
/* Whether the site's waits spin now: a budget, and fewer than half of
 * its recent waits outlasted it. */
bool hvd__wait_pays(enum hvd__wait_site site);
bool hvd__wait_contended(void);

/* Log (debug: HOROVOD_LOG_LEVEL=debug) what each site's waits did since
 * the last report: how many, how many spun, caught their event spinning,
 * or stopped for contention; and the spin each has learned. */
void hvd__wait_report(void);

#endif
