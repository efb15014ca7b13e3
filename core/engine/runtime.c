/* runtime.c: libhvd's background thread, Horovod's model. User threads
 * queue named requests (api/collectives.c, queue.c); the engine's owner holds the
 * transport and, every cycle (HOROVOD_CYCLE_TIME, woken early by new
 * work), takes the queue, agrees with every rank on what is ready
 * (negotiate.c) and runs it in that order (fusion.c, ops/).
 *
 * The owner is the background thread, except while a user thread waits
 * for a collective (hvd_wait, every synchronous call): that thread then
 * runs the cycles itself until its collective completes, as a leader
 * does in a leader/follower pool, and the background thread stays
 * asleep. A small collective so costs no hand-off to another thread and
 * back, each a wake-up or, with more threads than cores, a scheduling
 * turn. Asynchronous work that no thread waits for (gradients of a
 * backward pass) stays with the background thread. A GPU job, whose
 * device is the background thread's, and one over MPI (initialised for
 * one thread at a time, always the same) keep the background thread as
 * the only owner.
 *
 * A transport error aborts the mesh (so every rank fails within a
 * moment, not only the dead one's neighbours) and fails every pending
 * and later operation. */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>

#include "engine/autotune.h"
#include "engine/elastic.h"
#include "engine/engine.h"
#include "algo/hier.h"
#include "engine/runtime.h"
#include "engine/sets.h"
#include "util/wait.h"

/* The background thread's state (engine.h); start and stop touch it
 * only while the thread is not running. */
static struct hvd__engine E;
/* Its process sets, each with an engine of its own (sets.h). */
static struct hvd__sets S = {.lock = PTHREAD_MUTEX_INITIALIZER};
/* Its autotuner (autotune.h). */
static struct hvd__autotune A;
static pthread_t thread;
static bool running;
/* Held by the engine's owner: every field of E but the constants set at
 * start is touched only by it. */
static pthread_mutex_t own = PTHREAD_MUTEX_INITIALIZER;
static _Atomic bool ended;    /* the engine stopped: no owner runs a cycle */
static _Atomic bool drivable; /* set before the start, cleared after */
/* A driver left a process set's cycle owed (hvd__runtime_drive's 2):
 * the background thread looks every this many ms (0: not owed). */
static _Atomic double owed_ms;
/* A user thread drives (holds own); how many drives began. */
static _Atomic bool driving;
static _Atomic unsigned long drives;

/* A timeline start or stop that a user thread asks for
 * (hvd_start_timeline, hvd_stop_timeline): the background thread, which
 * alone writes the timeline, applies it between two cycles. */
static struct {
	pthread_mutex_t lock; /* protects every field */
	pthread_cond_t done;  /* the asking thread waits here */
	bool alive;	      /* the background thread is running */
	bool started;	      /* ... and has readied its waits */
	bool pending;
	char *path; /* NULL: stop */
	bool mark;
	int rc;
	int err; /* rc HVD_ESYS: errno */
} T = {.lock = PTHREAD_MUTEX_INITIALIZER, .done = PTHREAD_COND_INITIALIZER};

/* Idle: no wait spins (wait.h); else the knob bounds every spin. */
static void spin_for(struct hvd__engine *e)
{
	int spin = e->idle_cycles >= HVD__IDLE_CYCLES ? 0 : e->k.spin_us;

	if (spin == e->spin_now)
		return;
	e->spin_now = spin;
	hvd__wait_cap(spin);
}

/* Which of the tuner's choices a collective runs through (autotune.h). */
static unsigned tune_uses(const struct hvd__meta *m)
{
	if (m->gpu)
		return 0;
	if (m->type == HVD__REQ_ALLREDUCE || m->type == HVD__REQ_REDUCESCATTER)
		return HVD__TUNE_USES_SHM;
	return m->type == HVD__REQ_ALLGATHER ? HVD__TUNE_USES_GATHER : 0;
}

/* One cycle. Returns a transport error, or HVD_ESHUTDOWN when the job is
 * shutting down, or HVD_OK. */
static int cycle(struct hvd__engine *e, bool shutdown_local)
{
	struct hvd__resp *v;
	size_t n;
	int rc;

	if (e->k.mark_cycles && e->tl != NULL)
		hvd__timeline_mark(e->tl, "CYCLE_START", hvd__now_us());
	spin_for(e);
	e->sets_busy = hvd__round_told(e);
	rc = hvd__negotiate(e, shutdown_local, &v, &n);
	if (rc != HVD_OK)
		return rc;
	e->idle_cycles =
		n > 0 || e->peers_busy != HVD__SETS_IDLE || hvd__gpu_busy(e)
			? 0
			: e->idle_cycles + 1;
	spin_for(e); /* what runs now waits on its peers by spinning */
	e->decided_us = hvd__now_us();
	rc = hvd__execute(e, v, n);
	for (size_t i = 0; rc == HVD_OK && A.on && i < n; i++)
		if (v[i].error == NULL)
			hvd__autotune_record(&A, v[i].name,
					     hvd__meta_bytes(&v[i].m),
					     tune_uses(&v[i].m));
	hvd__resps_free(v, n);
	return rc;
}

/* Close the timeline, then open path (not NULL) on rank 0. HVD_ESYS:
 * errno says why it could not. */
static int timeline_switch(struct hvd__engine *e, char *path, bool mark)
{
	int rc = HVD_OK, err = 0;

	hvd__timeline_close(e->tl);
	e->tl = NULL;
	if (path != NULL && e->comm.rank == 0) {
		e->tl = hvd__timeline_open(path, 0);
		e->k.mark_cycles = mark;
		if (e->tl == NULL) {
			rc = HVD_ESYS;
			err = errno;
		}
	}
	free(path);
	for (struct hvd__set *set = e->sets->list; set != NULL; set = set->next)
		if (set->e != NULL)
			set->e->tl = e->tl;
	errno = err;
	return rc;
}

static void timeline_apply(struct hvd__engine *e)
{
	char *path;
	bool mark;
	int rc, err;

	pthread_mutex_lock(&T.lock);
	if (!T.pending) {
		pthread_mutex_unlock(&T.lock);
		return;
	}
	path = T.path;
	mark = T.mark;
	T.path = NULL;
	pthread_mutex_unlock(&T.lock);
	rc = timeline_switch(e, path, mark);
	err = errno;
	pthread_mutex_lock(&T.lock);
	T.pending = false;
	T.rc = rc;
	T.err = err;
	pthread_cond_broadcast(&T.done);
	pthread_mutex_unlock(&T.lock);
}

int hvd__runtime_timeline(const char *path, bool mark)
{
	char *copy = NULL;
	int rc, err;

	if (path != NULL && (copy = strdup(path)) == NULL)
		return HVD_ENOMEM;
	pthread_mutex_lock(&T.lock);
	while (T.pending)
		pthread_cond_wait(&T.done, &T.lock);
	if (!T.alive) {
		/* No background thread (it ended on a failure): no cycle
		 * runs that could write the timeline meanwhile. */
		pthread_mutex_unlock(&T.lock);
		return timeline_switch(&E, copy, mark);
	}
	T.pending = true;
	T.path = copy;
	T.mark = mark;
	while (T.pending)
		pthread_cond_wait(&T.done, &T.lock);
	rc = T.rc;
	err = T.err;
	pthread_mutex_unlock(&T.lock);
	errno = err;
	return rc;
}

/* Fail every request that is waiting, and every later one, with status.
 * Returns how many were waiting. */
static int fail_all(struct hvd__engine *e, int status)
{
	struct hvd__req *lists[3] = {hvd__queue_break(status), e->pending_local,
				     e->held};
	struct hvd__req *r, *next;
	int i, n = hvd__sets_fail(e->sets, status) + (e->flights != NULL);

	e->pending_local = e->held = NULL;
	hvd__gpu_flights_fail(e, status);
	for (i = 0; i < 3; i++)
		for (r = lists[i]; r != NULL; r = next, n++) {
			next = r->next;
			hvd__req_complete(r, status,
					  r->m.gpu && e->gpu_why[0] != '\0'
						  ? e->gpu_why
						  : NULL);
		}
	return n;
}

/* The batches every rank launched end on the GPU without the peers'
 * engines: they run to their end before the engine ends (a peer that
 * shut down may have closed its connections meanwhile: that is no
 * failure for a while). */
static void drain(struct hvd__engine *e)
{
	hvd__gpu_grace(e->gpu, 5000000);
	hvd__gpu_progress(e, true);
}

/* The end of a turn that rc ended: a shutdown, a lost peer or a failure
 * ends the engine. */
static void turn_end(struct hvd__engine *e, int rc, bool shutdown_local)
{
	if (rc == HVD_ESHUTDOWN && !shutdown_local && hvd__g.generation > 0) {
		/* Elastic: a peer left (hvd_shutdown, as a program's exit
		 * after an exception does): the survivors go on without it,
		 * as after any other loss. */
		atomic_store(&ended, true);
		drain(e);
		if (fail_all(e, HVD_ERESET) > 0)
			hvd__warn(
				"generation %d ended (a peer shut down): every pending and later operation fails with HVD_ERESET",
				hvd__g.generation);
	} else if (rc == HVD_ESHUTDOWN) {
		atomic_store(&ended, true);
		drain(e);
		fail_all(e, HVD_ESHUTDOWN);
	} else if (rc != HVD_OK) {
		atomic_store(&ended, true);
		if (hvd__g.generation > 0) {
			/* Elastic: the survivors go on in a new generation. */
			hvd__warn(
				"generation %d ended (%s): every pending and later operation fails with HVD_ERESET",
				hvd__g.generation,
				hvd__world_over() ? "hvdrun reset the job"
						  : hvd_strerror(rc));
			rc = HVD_ERESET;
		} else {
			hvd__error(
				"the job's connections failed (%s): every pending and later operation fails",
				hvd_strerror(rc));
		}
		if (e->comm.ops->abort != NULL)
			e->comm.ops->abort(e->comm.t);
		hvd__shm_abort(e->hier.shm);
		hvd__gpu_abort_comms(e->gpu);
		fail_all(e, hvd__elastic_status(rc));
		hvd__gpu_free(e->gpu, true);
		e->gpu = NULL;
	}
}

/* One turn of the engine, by its owner: take the new requests, complete
 * the GPU's batches that ended, and run the round's next cycle (the
 * job's, or a set's). Sets `ended` when the job shuts down or its
 * connections fail.
 * A user thread (driver) turns only while no GPU request was queued:
 * returns false, having done nothing, once one was. */
static bool turn(struct hvd__engine *e, bool driver)
{
	struct hvd__req *in;
	bool shutdown_local, gpu = false;
	int rc;

	in = hvd__queue_take(&shutdown_local, driver ? &gpu : NULL);
	if (gpu)
		return false;
	timeline_apply(e);
	if (in != NULL) { /* new work: no longer idle */
		e->idle_cycles = 0;
		e->came_us = hvd__now_us();
		e->burst = hvd__gpu_burst(e, in, e->came_us);
	}
	hvd__route(e, in);
	/* Shutting down, this rank's batches end before its last agreement,
	 * while every peer's connections are still up. */
	rc = hvd__gpu_progress(e, shutdown_local);
	hvd__gpu_release_held(e);
	if (rc == HVD_OK && e->round_at != 0) {
		rc = hvd__round_step(e, shutdown_local);
	} else if (rc == HVD_OK) {
		rc = cycle(e, shutdown_local);
		/* A new round: its sets' cycles, told in the next. */
		e->round_us = hvd__now_us();
		e->round_idle = false;
		e->sets_busy = HVD__SETS_IDLE;
		e->round_at = hvd__round_next(e, 0);
	}
	turn_end(e, rc, shutdown_local);
	return true;
}

/* Between cycles, while the GPU holds requests or runs batches: complete
 * the batches that ended; true when held requests are due to be
 * announced (the caller runs the cycle at once). */
static bool gpu_look(struct hvd__engine *e)
{
	int rc = hvd__gpu_progress(e, false);
	bool released = hvd__gpu_release_held(e);

	turn_end(e, rc, false);
	return released;
}

int hvd__runtime_drive(const hvd_handle *h)
{
	bool first = true;
	int left = 0;

	if (!atomic_load(&drivable) || pthread_mutex_trylock(&own) != 0)
		return -1;
	atomic_fetch_add(&drives, 1);
	atomic_store(&driving, true);
	while (!atomic_load(&ended) && !atomic_load(&h->done)) {
		/* Its own request is queued: the first cycle runs at once. */
		if (!first) {
			struct hvd__bell *b;
			double ms = hvd__round_wait(&E, &b);
			struct hvd__bell *_Atomic bell = b;

			hvd__queue_wait(ms, false, false, &bell);
		}
		first = false;
		if (!turn(&E, true))
			break;
	}
	/* Work of this rank, or a set's cycle that its ranks wait for. */
	if (!atomic_load(&ended))
		left = hvd__pending_any(&E) ? 1 : E.round_at != 0 ? 2 : 0;
	atomic_store(&owed_ms, left != 2	    ? 0
			       : E.k.cycle_ms > 0.1 ? E.k.cycle_ms
						    : 0.1);
	atomic_store(&driving, false);
	pthread_mutex_unlock(&own);
	if (left == 2)
		hvd__queue_driven_end();
	return left;
}

/* The background thread while a user thread drives. A set's cycle that
 * the last drive left owed is looked for every cycle time, as drives of
 * short collectives come and go; a drive still on at the next look (a
 * large collective, which runs its set's cycles itself) is slept
 * through, woken at its end: looks every cycle time during it would take
 * the core from the collective's copies and sums, each time, over
 * hundreds of looks a second (a process set's ranks allreducing 16 MiB
 * over TCP: 4 to 11% slower). */
static void driven_nap(void)
{
	static unsigned long seen; /* the drive at the last look */
	unsigned long d = atomic_load(&drives);
	double ms = atomic_load(&owed_ms);

	if (ms <= 0) {
		hvd__queue_nap(HVD__IDLE_WAIT_MS);
	} else if (d != seen) {
		seen = d;
		hvd__queue_nap(ms);
	} else if (hvd__queue_nap_driven(HVD__IDLE_WAIT_MS, &driving) &&
		   (ms = atomic_load(&owed_ms)) > 0) {
		hvd__queue_nap(ms);
	}
}

/* Whether a waiting thread may run the cycles (hvd__runtime_drive): the
 * queue, which the waiting threads wait in, is told through a pointer,
 * so that it needs nothing of this file. */
static void set_drivable(bool on)
{
	atomic_store(&drivable, on);
	hvd__queue_set_driver(on ? hvd__runtime_drive : NULL);
}

/* While the GPU holds requests or runs batches, the background thread
 * looks at them this often between cycles. */
#define GPU_LOOK_MS 0.05
/* A timed wait that ends this close to the next cycle ends at it. */
#define DUE_SLACK_US 100

/* Whether a local peer started the next agreement while this rank waits
 * for a late one. */
static bool peer_called(const struct hvd__engine *e)
{
	struct hvd__bell *b = atomic_load(&e->wait_bell);

	return b != NULL && b->ops->called(b);
}

/* The background thread's wait until its next cycle, and its bell. */
static double next_wait(struct hvd__engine *e)
{
	struct hvd__bell *b;
	double ms = hvd__round_wait(e, &b);

	atomic_store(&e->wait_bell, b);
	return ms;
}

static void *background(void *arg)
{
	struct hvd__engine *e = arg;
	double wait = next_wait(e);
	long long due = 0; /* the next cycle, while looking at the GPU */

	/* What its waits read is open before hvd_init() returns: what the
	 * process holds does not depend on whether it has waited yet. */
	hvd__wait_thread();
	/* Its short timed waits (a look at the GPU every 50 us) end on time:
	 * the kernel's default slack of 50 us would double them. */
	prctl(PR_SET_TIMERSLACK, 1000UL);
	pthread_mutex_lock(&T.lock);
	T.started = true;
	pthread_cond_broadcast(&T.done);
	pthread_mutex_unlock(&T.lock);
	for (;;) {
		long long now;

		hvd__gpu_wait(e, wait);
		if (pthread_mutex_trylock(&own) != 0) {
			/* A user thread drives: it wakes this one when it
			 * leaves work behind, and leaves a set's cycle owed
			 * to this one's look (driven_nap). The nap alone
			 * paces the looks. */
			driven_nap();
			wait = 0;
			continue;
		}
		atomic_store(&owed_ms, 0);
		now = hvd__now_us();
		if (!atomic_load(&ended) && now + DUE_SLACK_US < due &&
		    !hvd__queue_work() && !peer_called(e)) {
			/* A batch due (a flight ended): its cycle now. */
			if (gpu_look(e))
				due = now;
		} else if (!atomic_load(&ended)) {
			turn(e, false);
			now = hvd__now_us();
			due = now + (long long)(next_wait(e) * 1000);
		}
		/* New work wakes the thread whatever the wait. */
		wait = due > now ? (double)(due - now) / 1000 : 0;
		if (hvd__gpu_busy(e) && wait > GPU_LOOK_MS)
			wait = GPU_LOOK_MS;
		pthread_mutex_unlock(&own);
		if (atomic_load(&ended))
			break;
	}
	pthread_mutex_lock(&T.lock);
	T.alive = false;
	pthread_mutex_unlock(&T.lock);
	timeline_apply(e); /* a request that came as the loop ended */
	return NULL;
}

/* HOROVOD_THREAD_AFFINITY (horovodrun --thread-affinity): the background
 * thread's core. One core: local rank r's thread on CORE + r; a list,
 * CORE,CORE,...: one per local rank. */
static int pin_background(pthread_t t)
{
	const char *v = getenv(wenv_vars[WENV_THREAD_AFFINITY].name);
	long cores[256], core;
	int n = 0, rc;
	cpu_set_t set;
	char *end;

	if (v == NULL || *v == '\0')
		return HVD_OK;
	for (const char *p = v; n < 256; p = end + 1) {
		errno = 0;
		cores[n] = strtol(p, &end, 10);
		if (end == p || errno != 0 || cores[n] < 0 ||
		    (*end != ',' && *end != '\0'))
			goto bad;
		n++;
		if (*end == '\0')
			break;
	}
	if (n > 1 && n < hvd__g.local_size) {
		hvd__error(
			"HOROVOD_THREAD_AFFINITY='%s' names %d cores for %d local ranks",
			v, n, hvd__g.local_size);
		return HVD_EINVAL;
	}
	core = n == 1 ? cores[0] + hvd__g.local_rank : cores[hvd__g.local_rank];
	if (core >= CPU_SETSIZE)
		goto bad;
	CPU_ZERO(&set);
	CPU_SET((size_t)core, &set);
	rc = pthread_setaffinity_np(t, sizeof(set), &set);
	if (rc != 0) {
		hvd__error("HOROVOD_THREAD_AFFINITY: core %ld: %s", core,
			   strerror(rc));
		return HVD_EINVAL;
	}
	hvd__debug("background thread on core %ld", core);
	return HVD_OK;
bad:
	hvd__error(
		"HOROVOD_THREAD_AFFINITY='%s' is not a core or a list of cores, CORE,CORE,...",
		v);
	return HVD_EINVAL;
}

/* Called by the elastic watcher (elastic.h), from its own thread, from
 * the join on, once the world is over (hvd__world_over): every blocked
 * and later transfer fails at once, and the engine's owner ends the
 * generation. The waits on the hosts' segments (the job's and its sets',
 * their opening too) give up on the world's end themselves
 * (transport/shm.c), so that none is reached here while the start may
 * still be writing it. */
static void abort_engine(void)
{
	if (E.comm.ops->abort != NULL)
		E.comm.ops->abort(E.comm.t);
}

int hvd__runtime_start(int rank, int size, bool joined,
		       const struct hvd__comm *mpi)
{
	const char *tl = getenv(wenv_vars[WENV_TIMELINE].name);
	sigset_t all, old;
	uint32_t id;
	bool elastic;
	long dynamic;
	int rc;

	memset(&E, 0, sizeof(E));
	atomic_store(&owed_ms, 0);
	E.sets = &S;
	hvd__env_agree_clear(); /* this process's own settings, to start */
	hvd__sets_init(&S, false);
	atomic_store(&ended, false);
	set_drivable(false);
	hvd__queue_reset();
	if (mpi != NULL)
		joined = false;
	/* An elastic worker learns its rank and size as it joins. */
	elastic = joined && hvd__elastic_wanted(&id);
	if (elastic) {
		rc = hvd__elastic_join(&hvd__g, id, &E.comm);
		/* A reset may come while the start exchanges below wait on a
		 * peer that is gone: heard from here on. */
		if (rc == HVD_OK)
			rc = hvd__elastic_watch(abort_engine);
		if (rc != HVD_OK)
			return rc; /* hvd__runtime_stop releases the comm */
		rank = hvd__g.rank;
		size = hvd__g.size;
	}
	rc = hvd__knobs_read(&E.k, size);
	if (rc != HVD_OK)
		return rc;
	if (!joined && size > 1 && mpi == NULL) {
		hvd__error(
			"rank %d of %d, but no rendezvous (HVD_RENDEZVOUS): start the job with hvdrun",
			rank, size);
		return HVD_EINVAL;
	}
	if (mpi != NULL)
		E.comm = *mpi;
	else if (!elastic && (rc = hvd__join(&hvd__g, joined && size > 1,
					     &E.comm)) != HVD_OK)
		return rc;
	E.spin_now = E.k.spin_us;
	hvd__wait_cap(E.spin_now);
	/* The first exchange (hier_start's) waits as long as the start does:
	 * a rank whose connection found a peer's accept queue full comes a
	 * second or more after the others. Then a silent peer is a dead one
	 * after the transport timeout. */
	if (E.comm.ops->tune != NULL)
		E.comm.ops->tune(E.comm.t, hvd__start_timeout_ms());
	/* Rank 0's values of the settings the ranks must share, read again
	 * (the first read, this rank's own, failed a bad value before the
	 * join). */
	if (size > 1 && ((rc = hvd__knobs_agree(&E.comm)) != HVD_OK ||
			 (rc = hvd__knobs_read(&E.k, size)) != HVD_OK))
		return rc;
	rc = hvd__env_long(WENV_DYNAMIC_PROCESS_SETS, &dynamic);
	if (rc != HVD_OK)
		return rc;
	S.dynamic = dynamic != 0;
	if (mpi == NULL && joined && size > 1 &&
	    (rc = hvd__hier_start(&E.hier, &E.comm, E.k.shm)) != HVD_OK)
		return rc; /* hvd__runtime_stop releases the comm */
	if (mpi == NULL)   /* MPI's transport found it */
		hvd__g.homogeneous = size == 1 || E.hier.even;
	if (E.comm.ops->tune != NULL)
		E.comm.ops->tune(E.comm.t, hvd__transport_timeout_ms());
	if (hvd__engine_open(&E, size) != HVD_OK)
		return HVD_ENOMEM; /* hvd__runtime_stop releases the comm */
	E.bell = hvd__bell_open(hvd__bell_net(&E), E.hier.shm);
	rc = hvd__autotune_open(&A, &E.k, rank, E.hier.shm != NULL,
				E.hier.nhosts > 1);
	if (rc != HVD_OK)
		return rc;
	E.tune = &A;
	E.tl = (tl != NULL && *tl != '\0' && rank == 0)
		       ? hvd__timeline_open(tl, rank)
		       : NULL;
	/* The background thread takes no signal of the program's. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	T.alive = true;
	T.started = false;
	set_drivable(mpi == NULL);
	rc = pthread_create(&thread, NULL, background, &E);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		T.alive = false;
		hvd__runtime_stop();
		return HVD_ESYS;
	}
	running = true;
	hvd__wait_thread(); /* this one's too */
	pthread_mutex_lock(&T.lock);
	while (!T.started)
		pthread_cond_wait(&T.done, &T.lock);
	pthread_mutex_unlock(&T.lock);
	rc = pin_background(thread);
	if (rc != HVD_OK)
		return rc; /* hvd__runtime_stop ends the thread */
	return HVD_OK;
}

void hvd__runtime_stop(void)
{
	int broken;

	hvd__elastic_leave(); /* no abort from its thread from here on */
	if (running) {
		hvd__queue_shutdown();
		pthread_join(thread, NULL);
		running = false;
	}
	hvd__wait_report();
	set_drivable(false);
	/* No thread is in a drive (asleep on a bell) once the segments
	 * go. */
	pthread_mutex_lock(&own);
	pthread_mutex_unlock(&own);
	hvd__bell_close(E.bell);
	E.bell = NULL;
	atomic_store(&E.wait_bell, NULL);
	broken = hvd__queue_broken();
	hvd__gpu_free(E.gpu, broken != 0 && broken != HVD_ESHUTDOWN);
	E.gpu = NULL;
	hvd__sets_free(&S, broken != 0 ? broken : HVD_ESHUTDOWN);
	hvd__env_agree_clear();
	hvd__hier_stop(&E.hier);
	if (E.ada_cross.ops != NULL)
		E.ada_cross.ops->close(E.ada_cross.t);
	E.ada_cross.ops = NULL;
	if (E.comm.ops != NULL)
		E.comm.ops->close(E.comm.t);
	E.comm.t = NULL;
	hvd__engine_close(&E);
	hvd__autotune_close(&A);
	E.tune = NULL;
	hvd__timeline_close(E.tl);
	E.tl = NULL;
}

struct hvd__sets *hvd__runtime_sets(void)
{
	return &S;
}
