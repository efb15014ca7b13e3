/* wait.c: see wait.h. */
#include "util/wait.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "util/internal.h"

#define PROBE_US 16	  /* a spin checks for preemption this often */
#define CALM_MIN_US 1000  /* no spinning this long after contention */
#define CALM_MAX_US 8000  /* ... doubling up to this while it recurs */
#define GPU_CAP_FACTOR 10 /* the GPU stream's spin bound, in caps */
/* Contended: the thread waited for a CPU this long, and this share of
 * the time, since its last spin began. A task that runs for a moment
 * (a timer, a thread that wakes to check on something) is not contention;
 * a busy process beside the job, or a rank of a host with more ranks than
 * cores, is. */
#define DELAY_MIN_US 100
#define DELAY_SHARE 8 /* one eighth */
/* ... judged over at most this long: what happened longer ago (a job's
 * start, all of its processes starting at once) is not contention now. */
#define JUDGE_MAX_US 50000

static _Atomic int cap = -1; /* -1: not set, HVD_SPIN_US's default */
static _Atomic int budget[HVD__WAIT_SITES];
static _Atomic bool learned[HVD__WAIT_SITES]; /* budget set by a wait */
/* How often a site's recent waits outlasted its spin (each wait weighs
 * 1/MISS_WEIGHT; MISS_ONE: every one): a site spins while fewer than
 * half did. */
#define MISS_ONE 1024
#define MISS_WEIGHT 16
static _Atomic int missed[HVD__WAIT_SITES];
/* What each site's waits did (hvd__wait_report), since the last report;
 * counted only where the report is logged (-1: not known yet). */
enum { N_WAITS, N_SPUN, N_CAUGHT, N_DENIED, N_CROWDED, N_COUNTS };
static _Atomic long counts[HVD__WAIT_SITES][N_COUNTS];
static _Atomic int counting = -1;
static _Atomic long long calm_until; /* no spinning before */
static _Atomic int calm_us = CALM_MIN_US;

/* This thread's time waiting for a CPU: its schedstat (run_delay), read
 * from an fd of its own (-1: not open yet; -2: none, and then its
 * involuntary context switches stand in: any preemption counts). */
static __thread int stat_fd = -1;
/* When this thread's last spin was first probed (us), and its delay then
 * (-1: no spin since it last blocked at once, or since a fork). */
static __thread long long seen_at;
static __thread long long seen = -1;
/* The host's runnable tasks (/proc/loadavg's fourth field: running, of
 * all), one descriptor for the process; -2: none. The kernel counts them
 * as it is read: more than the host's CPUs, and a task waits for the CPU
 * that a spin takes. */
static int load_fd = -1;
static long ncpus;
static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static pthread_key_t fd_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static void close_fd(void *p)
{
	close((int)(long)p - 1);
}

/* In a forked child the fd reads the parent's thread. */
static void forked(void)
{
	if (stat_fd >= 0)
		close(stat_fd);
	pthread_setspecific(fd_key, NULL);
	stat_fd = -1;
	seen = -1;
}

static void make_key(void)
{
	pthread_key_create(&fd_key, close_fd);
	pthread_atfork(NULL, NULL, forked);
}

static void load_open(void)
{
	ncpus = sysconf(_SC_NPROCESSORS_ONLN);
	load_fd = ncpus > 0 ? open("/proc/loadavg", O_RDONLY | O_CLOEXEC) : -1;
	if (load_fd < 0)
		load_fd = -2;
}

void hvd__wait_thread(void)
{
	pthread_once(&load_once, load_open);
	if (stat_fd != -1)
		return;
	pthread_once(&key_once, make_key);
	stat_fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	if (stat_fd < 0)
		stat_fd = -2;
	else
		pthread_setspecific(fd_key, (void *)(long)(stat_fd + 1));
}

/* This thread's time waiting for a CPU so far (us), or when the kernel
 * does not say (no schedstat), its count of preemptions. */
static long long delay_now(void)
{
	char buf[96], *end;
	unsigned long long wait;
	struct rusage ru;
	ssize_t n;

	hvd__wait_thread();
	if (stat_fd >= 0) {
		n = pread(stat_fd, buf, sizeof(buf) - 1, 0);
		if (n > 0) {
			/* "time on the CPU" "time waiting for one" "slices" */
			buf[n] = '\0';
			(void)strtoull(buf, &end, 10);
			wait = strtoull(end, &end, 10);
			if (end != buf && (*end == ' ' || *end == '\n'))
				return (long long)(wait / 1000);
		}
		close(stat_fd);
		pthread_setspecific(fd_key, NULL);
		stat_fd = -2;
	}
	return getrusage(RUSAGE_THREAD, &ru) == 0 ? ru.ru_nivcsw : 0;
}

/* Whether more tasks of the host are runnable than it has CPUs (this
 * thread, spinning, among them): one of them waits for a CPU that the
 * spin could give it. False when the kernel does not say. */
static bool crowded(void)
{
	char buf[128], *p;
	ssize_t n;

	pthread_once(&load_once, load_open);
	if (load_fd < 0)
		return false;
	n = pread(load_fd, buf, sizeof(buf) - 1, 0);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* "0.50 0.40 0.30 3/250 12345": 3 runnable now */
	p = strchr(buf, '/');
	if (p == NULL)
		return false;
	while (p > buf && p[-1] != ' ')
		p--;
	return strtol(p, NULL, 10) > ncpus;
}

/* What a probe found: this thread denied the CPU, or more runnable
 * tasks than CPUs. */
enum { PROBE_DENIED = 1, PROBE_CROWDED = 2 };

/* Whether a thread that waited `delay` for a CPU over `span` was denied
 * it: someone else wants this CPU. */
static bool denied(long long delay, long long span)
{
	if (stat_fd == -2)
		return delay > 0; /* preemptions, not time */
	return delay >= DELAY_MIN_US && delay * DELAY_SHARE >= span;
}

static int cap_now(void)
{
	int c = atomic_load_explicit(&cap, memory_order_relaxed);

	return c >= 0 ? c : (int)wenv_vars[WENV_SPIN_US].def;
}

static int site_cap(enum hvd__wait_site site)
{
	int c = cap_now();

	return site == HVD__WAIT_GPU ? c * GPU_CAP_FACTOR : c;
}

/* Someone else wanted this thread's CPU: no wait spins for a while. When
 * it comes again soon after the last calm ended (within its length), the
 * next calm lasts twice as long; later, it starts again from the least. */
static void contended(long long now)
{
	long long until =
		atomic_load_explicit(&calm_until, memory_order_relaxed);
	int c = atomic_load_explicit(&calm_us, memory_order_relaxed);

	if (now - until > c)
		c = CALM_MIN_US;
	else if (c < CALM_MAX_US)
		c = c * 2 < CALM_MAX_US ? c * 2 : CALM_MAX_US;
	atomic_store_explicit(&calm_us, c, memory_order_relaxed);
	atomic_store_explicit(&calm_until, now + c, memory_order_relaxed);
}

int hvd__wait_budget(enum hvd__wait_site site)
{
	int c = site_cap(site);
	int b = atomic_load_explicit(&learned[site], memory_order_relaxed)
			? atomic_load_explicit(&budget[site],
					       memory_order_relaxed)
			: c;

	return b < c ? b : c;
}

/* Whether a site with this budget spins (hvd__wait_pays). */
static bool pays(enum hvd__wait_site site, int budget_us)
{
	return budget_us > 0 &&
	       atomic_load_explicit(&missed[site], memory_order_relaxed) <
		       MISS_ONE / 2;
}

bool hvd__wait_pays(enum hvd__wait_site site)
{
	return pays(site, hvd__wait_budget(site));
}

bool hvd__wait_contended(void)
{
	return hvd__now_us() <
	       atomic_load_explicit(&calm_until, memory_order_relaxed);
}

void hvd__wait_cap(int cap_us)
{
	atomic_store_explicit(&cap, cap_us < 0 ? 0 : cap_us,
			      memory_order_relaxed);
}

static void count(enum hvd__wait_site site, int what)
{
	int on = atomic_load_explicit(&counting, memory_order_relaxed);

	if (on < 0) {
		on = hvd__log_on(HVD__LOG_DEBUG);
		atomic_store_explicit(&counting, on, memory_order_relaxed);
	}
	if (on)
		atomic_fetch_add_explicit(&counts[site][what], 1,
					  memory_order_relaxed);
}

static void no_spin(struct hvd__wait *w)
{
	w->blocked = true;
	w->spin_end = 0;
}

void hvd__wait_begin(struct hvd__wait *w, enum hvd__wait_site site)
{
	w->site = site;
	w->start = hvd__now_us();
	w->budget = hvd__wait_budget(site);
	w->blocked = !pays(site, w->budget) ||
		     w->start < atomic_load_explicit(&calm_until,
						     memory_order_relaxed);
	w->spin_end = w->blocked ? 0 : w->start + w->budget;
	w->next_probe = w->start + PROBE_US;
	w->delay = -1; /* read at the first probe: most spins end sooner */
	w->crowded = false;
	if (w->blocked)
		seen = -1; /* the next spin judges from its own first probe */
	else
		count(site, N_SPUN);
}

/* A spin's first probe: denied the CPU since its thread's last probe
 * (while it spun, or while it worked between waits), it would be again
 * while it spins; or a task waits for a CPU now. (Other tasks' waits
 * count only while it spins: while it works, it takes what its own work
 * needs.) */
static int first_probe(struct hvd__wait *w, long long now)
{
	bool busy;

	w->delay = delay_now();
	busy = seen >= 0 && now - seen_at <= JUDGE_MAX_US &&
	       denied(w->delay - seen, now - seen_at);
	seen = w->delay;
	seen_at = now;
	return busy ? PROBE_DENIED : crowded() ? PROBE_CROWDED : 0;
}

/* A later probe: while it spun, it waited for a CPU for as long as a
 * probe's interval, or a task of the host waits for one now: for the CPU
 * the spin takes. */
static int later_probe(const struct hvd__wait *w)
{
	return delay_now() - w->delay >= PROBE_US ? PROBE_DENIED
	       : crowded()			  ? PROBE_CROWDED
						  : 0;
}

bool hvd__wait_spin(struct hvd__wait *w)
{
	long long now;

	if (w->blocked)
		return false;
	now = hvd__now_us();
	if (now >= w->next_probe || now >= w->spin_end) {
		int why = w->delay < 0 ? first_probe(w, now) : later_probe(w);

		/* A crowd counts when the next probe sees it too: a task
		 * that runs for a moment (a peer's background thread that
		 * looks at its queue, the launcher reading output) wants
		 * none of the CPU this spin holds, and each contention stops
		 * every spin of the process for a millisecond or more. */
		if (why == PROBE_CROWDED && !w->crowded && now < w->spin_end) {
			w->crowded = true;
			why = 0;
		} else if (why == 0) {
			w->crowded = false;
		}
		if (why != 0) {
			count(w->site,
			      why == PROBE_DENIED ? N_DENIED : N_CROWDED);
			contended(now);
			no_spin(w);
			return false;
		}
		w->next_probe = now + PROBE_US;
	}
	if (now >= w->spin_end) {
		no_spin(w);
		return false;
	}
	cpu_relax();
	return true;
}

void hvd__wait_end(struct hvd__wait *w)
{
	long long waited = hvd__now_us() - w->start;
	int c = site_cap(w->site);
	long long b = hvd__wait_budget(w->site), nb;
	int m;

	count(w->site, N_WAITS);
	if (!w->blocked)
		count(w->site, N_CAUGHT);
	if (!w->blocked || waited <= c)
		/* Caught spinning, or a longer spin would have caught it:
		 * spin about twice as long as this wait took. */
		nb = b > 2 * waited ? b : 2 * waited;
	else
		/* It came long after the spin: spinning was waste. */
		nb = b / 2;
	if (nb > c)
		nb = c;
	/* Whether a spin of what the site spun (or would have) caught it,
	 * be it spun or not: the rate recovers while the site does not. */
	m = atomic_load_explicit(&missed[w->site], memory_order_relaxed);
	m += ((waited > (w->budget > PROBE_US ? w->budget : PROBE_US) ? MISS_ONE
								      : 0) -
	      m) /
	     MISS_WEIGHT;
	atomic_store_explicit(&missed[w->site], m, memory_order_relaxed);
	atomic_store_explicit(&budget[w->site], (int)nb, memory_order_relaxed);
	atomic_store_explicit(&learned[w->site], true, memory_order_relaxed);
}

void hvd__wait_report(void)
{
	static const char *const names[HVD__WAIT_SITES] = {
		[HVD__WAIT_CYCLE] = "background thread, between cycles",
		[HVD__WAIT_CALLER] = "hvd_wait",
		[HVD__WAIT_SHM] = "shared memory",
		[HVD__WAIT_NET] = "sockets",
		[HVD__WAIT_MPI] = "MPI",
		[HVD__WAIT_GPU] = "GPU stream",
	};
	long n[N_COUNTS];
	int s, k;

	for (s = 0; s < HVD__WAIT_SITES; s++) {
		for (k = 0; k < N_COUNTS; k++)
			n[k] = atomic_exchange_explicit(&counts[s][k], 0,
							memory_order_relaxed);
		if (n[N_WAITS] == 0)
			continue;
		hvd__debug(
			"waits at %s: %ld, %ld spun, %ld caught spinning, "
			"%ld stopped for contention (denied the CPU %ld, "
			"more runnable tasks than CPUs %ld); spin %d us%s",
			names[s], n[N_WAITS], n[N_SPUN], n[N_CAUGHT],
			n[N_DENIED] + n[N_CROWDED], n[N_DENIED], n[N_CROWDED],
			hvd__wait_budget(s),
			atomic_load_explicit(&missed[s], memory_order_relaxed) <
					MISS_ONE / 2
				? ""
				: " (off: most waits outlast it)");
	}
}
