/* queue.c: requests and handles, the one place where user threads and
 * the background thread meet. User threads queue named requests and wait
 * on handles; the engine's owner (the background thread, or a thread
 * that waits: runtime.c) takes the queue each cycle and completes
 * handles. */
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "engine/elastic.h"
#include "engine/engine.h"
#include "util/wait.h"

/* lock protects every field, and every handle's done, status and msg. */
static struct {
	pthread_mutex_t lock;
	pthread_cond_t wake; /* the engine's owner, or would-be, waits here */
	pthread_cond_t done; /* hvd_wait waits here */
	pthread_cond_t gone; /* hvd__queue_bell_gone waits here */
	_Atomic bool work;   /* incoming or stop: read unlocked */
	_Atomic bool stop;   /* hvd_shutdown() asked to stop (set locked) */
	_Atomic int drivers; /* threads in hvd_wait, or about to be */
	_Atomic bool gpu;    /* some GPU request was queued */
	bool bg_paced;	     /* the background thread sleeps until its next
			  cycle, due within the cycle time (locked) */
	_Atomic bool bg_driven; /* ... until a user thread's drive ends (set
				   locked: hvd__queue_nap_driven) */
	struct hvd__req *incoming;
	struct hvd__req **incoming_tail;
	int broken;		   /* 0, or the error that stopped the engine */
	struct hvd__req *inflight; /* every request not yet completed, by
				      its inflight_next link */
	/* The bells the background thread [1] and a driving thread [0]
	 * wait on now (set locked, by hvd__queue_wait): every waker rings
	 * them, and hvd__queue_bell_gone waits for them to let go. */
	struct hvd__bell *asleep[2];
} Q = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.wake = PTHREAD_COND_INITIALIZER,
	.done = PTHREAD_COND_INITIALIZER,
	.gone = PTHREAD_COND_INITIALIZER,
	.incoming_tail = &Q.incoming,
};

/* A thread that waits may run the cycles itself through this (set by
 * hvd__queue_set_driver; NULL: it may not). */
static _Atomic(hvd__drive_fn) drive_fn;

void hvd__queue_set_driver(hvd__drive_fn fn)
{
	atomic_store(&drive_fn, fn);
}

/* Wake the engine's owner, or would-be (Q.lock held): all, or one, of
 * the threads on Q.wake, and those asleep on a bell. */
static void wake(bool all)
{
	if (all)
		pthread_cond_broadcast(&Q.wake);
	else
		pthread_cond_signal(&Q.wake);
	if (Q.asleep[0] != NULL)
		Q.asleep[0]->ops->ring(Q.asleep[0]);
	if (Q.asleep[1] != NULL && Q.asleep[1] != Q.asleep[0])
		Q.asleep[1]->ops->ring(Q.asleep[1]);
}

/* The next submission of this thread is waited for at once. */
static __thread bool sync_next;

/* Take every queued request; Q.lock held. */
static struct hvd__req *take_incoming(void)
{
	struct hvd__req *in = Q.incoming;

	Q.incoming = NULL;
	Q.incoming_tail = &Q.incoming;
	atomic_store(&Q.work, atomic_load(&Q.stop));
	return in;
}

void hvd__queue_reset(void)
{
	pthread_mutex_lock(&Q.lock);
	take_incoming();
	atomic_store(&Q.stop, false);
	atomic_store(&Q.work, false);
	atomic_store(&Q.drivers, 0);
	atomic_store(&Q.gpu, false);
	Q.broken = 0;
	Q.inflight = NULL;
	pthread_mutex_unlock(&Q.lock);
}

struct hvd__req *hvd__req_new(const char *name, const struct hvd__meta *m,
			      void *ready)
{
	struct hvd__req *r = calloc(1, sizeof(*r));

	if (r == NULL || (r->h = calloc(1, sizeof(*r->h))) == NULL ||
	    (r->name = strdup(name)) == NULL) {
		if (r != NULL)
			free(r->h);
		free(r);
		hvd__gpu_release(ready);
		return NULL;
	}
	r->m = *m;
	r->ready = ready;
	r->cache = -1;
	return r;
}

/* Free a request that was never queued. */
static void req_drop(struct hvd__req *r)
{
	hvd__gpu_release(r->ready);
	free(r->sendcounts);
	free(r->name);
	free(r->h);
	free(r);
}

void hvd__queue_sync_next(bool on)
{
	sync_next = on;
}

int hvd__queue_submit(struct hvd__req *list)
{
	struct hvd__req *r, *p;
	long long now = hvd__now_us();
	bool driver = sync_next;
	int rc = HVD_OK;

	sync_next = false;
	pthread_mutex_lock(&Q.lock);
	if (Q.broken != 0)
		rc = Q.broken;
	else if (atomic_load(&Q.stop))
		rc = HVD_ESHUTDOWN;
	for (r = list; r != NULL && rc == HVD_OK; r = r->next) {
		for (p = Q.inflight; p != NULL && rc == HVD_OK;
		     p = p->inflight_next)
			if (strcmp(p->name, r->name) == 0)
				rc = HVD_EINVAL;
		for (p = list; p != r && rc == HVD_OK; p = p->next)
			if (strcmp(p->name, r->name) == 0)
				rc = HVD_EINVAL;
		if (rc == HVD_EINVAL)
			hvd__set_error(
				"tensor '%.200s' is already in flight on this rank",
				r->name);
	}
	for (r = list; r != NULL && rc == HVD_OK; r = r->next) {
		r->enqueued_us = now;
		r->inflight_next = Q.inflight;
		Q.inflight = r;
	}
	if (rc == HVD_OK) {
		*Q.incoming_tail = list;
		for (r = list; r->next != NULL; r = r->next)
			;
		Q.incoming_tail = &r->next;
		for (r = list; r != NULL; r = r->next)
			if (r->m.gpu)
				atomic_store(&Q.gpu, true);
		/* A synchronous collective's thread runs the cycle itself
		 * (hvd_wait): the background thread is not woken for it. */
		if (driver && list->next == NULL && list->h != NULL &&
		    !atomic_load(&Q.gpu) && atomic_load(&drive_fn) != NULL) {
			list->h->driver = true;
			atomic_fetch_add(&Q.drivers, 1);
		}
		atomic_store(&Q.work, true);
		/* The background thread, or a thread that drives and waits
		 * for new work between its cycles: both, if both wait. Not a
		 * background thread that sleeps until its next cycle, due
		 * within the cycle time, while no thread drives: a CPU
		 * request waits for that cycle, as Horovod's do. Woken, it
		 * would run a cycle for each request that autograd's hooks
		 * submit during backward, each wake-up taking the core from
		 * the thread that submits (the rank's threads share its
		 * cores): a rank that others' processes crowd gets its core
		 * back a time slice later. A thread that waits for its
		 * request runs the cycle itself (hvd_wait), or, where none
		 * may (MPI), wakes it then (drive); GPU requests, which no
		 * thread drives, wake it. */
		if ((list->h == NULL || !list->h->driver) &&
		    !(Q.bg_paced && atomic_load(&Q.drivers) == 0 &&
		      !atomic_load(&Q.gpu)))
			wake(true);
	}
	pthread_mutex_unlock(&Q.lock);
	return rc;
}

int hvd__enqueue(struct hvd__req *r, hvd_handle **out)
{
	hvd_handle *h;
	int rc;

	*out = NULL;
	if (!hvd__g.initialized || hvd__fork_of >= 0) {
		req_drop(r);
		return hvd__g.initialized ? hvd__fork_refuse() : HVD_ENOTINIT;
	}
	if (hvd__group_hold(r)) {
		*out = r->h;
		return HVD_OK;
	}
	/* Once queued, r belongs to the background thread, which may finish
	 * and free it at once: the handle is taken first. */
	h = r->h;
	rc = hvd__queue_submit(r);
	if (rc != HVD_OK) {
		req_drop(r);
		return rc;
	}
	*out = h;
	return HVD_OK;
}

HVD_EXPORT int hvd_group_end(void)
{
	struct hvd__req *r, *next, *list;
	int rc = hvd__group_end(&list);

	if (rc == HVD_OK && list != NULL)
		rc = hvd__queue_submit(list);
	if (rc == HVD_OK)
		return HVD_OK;
	/* The handles are the caller's: they complete with the error. */
	for (r = list; r != NULL; r = next) {
		next = r->next;
		r->next = NULL;
		hvd__req_complete(r, rc, NULL);
	}
	return rc;
}

/* Whether the caller has something to take now (bg: see
 * hvd__queue_wait). */
static bool has_work(bool bg)
{
	return atomic_load(&Q.stop) ||
	       (atomic_load(&Q.work) && (!bg || atomic_load(&Q.drivers) == 0));
}

/* Sleep on c up to ms; Q.lock held. */
static void sleep_on(pthread_cond_t *c, double ms)
{
	long long ns = (long long)(ms * 1e6);
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_nsec += ns % 1000000000;
	ts.tv_sec += ns / 1000000000 + ts.tv_nsec / 1000000000;
	ts.tv_nsec %= 1000000000;
	pthread_cond_timedwait(c, &Q.lock, &ts);
}

/* Sleep on Q.wake up to ms; Q.lock held. */
static void sleep_wake(double ms)
{
	sleep_on(&Q.wake, ms);
}

/* Whether a peer started the next agreement (bell: the wait is for it). */
static bool called(struct hvd__bell *bell)
{
	return bell != NULL && bell->ops->called(bell);
}

/* What ends a sleep on the bell besides a ring (bg: see has_work). */
static bool work_bg(void)
{
	return has_work(true);
}

static bool work_any(void)
{
	return has_work(false);
}

/* hvd__queue_wait's spin and sleep, on bell (NULL: none). */
static void wait_on(double cycle_ms, bool bg, bool paced,
		    struct hvd__bell *bell)
{
	struct hvd__wait w;
	bool got;

	/* Work that comes while spinning pays is taken without the wake-up
	 * of a sleeping thread, which costs more than a small allreduce. The
	 * background thread stops checking once a user thread drives: it
	 * would only take the CPU from it. */
	if (has_work(bg) || called(bell))
		return;
	hvd__wait_begin(&w, HVD__WAIT_CYCLE);
	while (!(got = has_work(bg) || called(bell)) &&
	       !(bg && atomic_load(&Q.drivers) > 0) && hvd__wait_spin(&w))
		;
	if (!got) {
		pthread_mutex_lock(&Q.lock);
		if (!has_work(bg) && cycle_ms > 0) {
			Q.bg_paced = bg && paced;
			if (bell != NULL) {
				/* Every waker rings the bell after it made
				 * work: the sleep sees one or the other. */
				pthread_mutex_unlock(&Q.lock);
				bell->ops->sleep(bell, cycle_ms,
						 bg ? work_bg : work_any);
				pthread_mutex_lock(&Q.lock);
			} else {
				sleep_wake(cycle_ms);
			}
			Q.bg_paced = false;
		}
		pthread_mutex_unlock(&Q.lock);
	}
	hvd__wait_end(&w);
}

void hvd__queue_wait(double cycle_ms, bool bg, bool paced,
		     struct hvd__bell *_Atomic *slot)
{
	struct hvd__bell *bell = NULL;

	/* The bell is taken under the lock from where hvd__queue_bell_gone
	 * clears it, and held (Q.asleep) until the wait ends. A wait of 0
	 * (the next cycle is due: the background thread's look after a
	 * drive, once a drive) sleeps on none and takes none. */
	if (cycle_ms > 0 && slot != NULL && atomic_load(slot) != NULL) {
		pthread_mutex_lock(&Q.lock);
		bell = atomic_load(slot);
		Q.asleep[bg] = bell;
		pthread_mutex_unlock(&Q.lock);
	}
	wait_on(cycle_ms, bg, paced, bell);
	if (bell != NULL) {
		pthread_mutex_lock(&Q.lock);
		Q.asleep[bg] = NULL;
		pthread_cond_broadcast(&Q.gone);
		pthread_mutex_unlock(&Q.lock);
	}
}

void hvd__queue_bell_gone(struct hvd__bell *_Atomic *slot,
			  struct hvd__bell *bell)
{
	pthread_mutex_lock(&Q.lock);
	if (atomic_load(slot) == bell)
		atomic_store(slot, NULL);
	/* A ring ends its sleep; one that came before the sleeper counted
	 * itself in, the next ring or the sleep's own end (the cycle time). */
	while (bell != NULL && (Q.asleep[0] == bell || Q.asleep[1] == bell)) {
		bell->ops->ring(bell);
		sleep_on(&Q.gone, 1);
	}
	pthread_mutex_unlock(&Q.lock);
}

bool hvd__queue_work(void)
{
	return has_work(true);
}

void hvd__queue_nap(double ms)
{
	pthread_mutex_lock(&Q.lock);
	sleep_wake(ms);
	pthread_mutex_unlock(&Q.lock);
}

bool hvd__queue_nap_driven(double ms, const _Atomic bool *driving)
{
	bool over;

	pthread_mutex_lock(&Q.lock);
	atomic_store(&Q.bg_driven, true);
	if (atomic_load(driving))
		sleep_wake(ms);
	over = !atomic_exchange(&Q.bg_driven, false) || !atomic_load(driving);
	pthread_mutex_unlock(&Q.lock);
	return over;
}

/* Called after *driving was cleared: a sleeper that set bg_driven before
 * reading *driving is asleep (it holds the lock until it sleeps) or sees
 * the drive over; one that sets it after, sees it over. So the lock is
 * taken only when a sleeper is there, not at the end of every drive. */
void hvd__queue_driven_end(void)
{
	if (!atomic_load(&Q.bg_driven))
		return;
	pthread_mutex_lock(&Q.lock);
	if (atomic_exchange(&Q.bg_driven, false))
		pthread_cond_broadcast(&Q.wake);
	pthread_mutex_unlock(&Q.lock);
}

struct hvd__req *hvd__queue_take(bool *shutdown, bool *gpu)
{
	struct hvd__req *in = NULL;

	pthread_mutex_lock(&Q.lock);
	/* Checked under the lock that a GPU request's submission takes:
	 * no GPU request reaches a user thread. */
	if (gpu != NULL)
		*gpu = atomic_load(&Q.gpu);
	if (gpu == NULL || !*gpu)
		in = take_incoming();
	*shutdown = atomic_load(&Q.stop);
	pthread_mutex_unlock(&Q.lock);
	return in;
}

void hvd__queue_shutdown(void)
{
	pthread_mutex_lock(&Q.lock);
	atomic_store(&Q.stop, true);
	atomic_store(&Q.work, true);
	wake(true);
	pthread_mutex_unlock(&Q.lock);
}

struct hvd__req *hvd__queue_break(int status)
{
	struct hvd__req *r;

	pthread_mutex_lock(&Q.lock);
	Q.broken = status;
	r = take_incoming();
	pthread_mutex_unlock(&Q.lock);
	return r;
}

int hvd__queue_broken(void)
{
	int b;

	pthread_mutex_lock(&Q.lock);
	b = Q.broken;
	pthread_mutex_unlock(&Q.lock);
	return b;
}

/* r out of the list of requests in flight, under Q.lock: its name may
 * be used again. */
static void unlink_inflight(struct hvd__req *r)
{
	struct hvd__req **pp;

	for (pp = &Q.inflight; *pp != NULL; pp = &(*pp)->inflight_next)
		if (*pp == r) {
			*pp = r->inflight_next;
			break;
		}
}

void hvd__req_finish(struct hvd__req *r, int status, const char *msg)
{
	char *copy = msg ? strdup(msg) : NULL;

	pthread_mutex_lock(&Q.lock);
	unlink_inflight(r);
	if (r->h != NULL && r->h->detached) {
		free(r->h); /* its waiter went on (hvd_wait_stream) */
	} else if (r->h != NULL) {
		r->h->status = status;
		r->h->msg = copy;
		r->h->done = true;
		copy = NULL;
	}
	pthread_cond_broadcast(&Q.done);
	pthread_mutex_unlock(&Q.lock);
	free(copy);
	hvd__gpu_release(r->ready);
	free(r->sendcounts);
	free(r->scratch);
	if (r->h == NULL && r->m.gpu) /* a joined rank's stand-in */
		hvd__gpu_free_result(r->gathered);
	else if (r->h == NULL)
		free(r->gathered);
	free(r->name);
	free(r);
}

void hvd__req_launched(struct hvd__req *r, void *event)
{
	if (r->h == NULL || event == NULL)
		return;
	pthread_mutex_lock(&Q.lock);
	/* Launched, its name is free: the next step's tensor of that name
	 * (a caller that waited on its stream) runs after it on the GPU. */
	unlink_inflight(r);
	r->h->event = event;
	atomic_store(&r->h->launched, true);
	pthread_cond_broadcast(&Q.done);
	pthread_mutex_unlock(&Q.lock);
}

void hvd__req_complete(struct hvd__req *r, int status, const char *why)
{
	char msg[768];

	if (status == HVD_OK) {
		hvd__req_finish(r, status, NULL);
		return;
	}
	if (status > 0) { /* hvd_join's result: a rank */
		hvd__req_finish(r, status, NULL);
		return;
	}
	snprintf(msg, sizeof(msg), "%s '%.200s' failed: %s",
		 hvd__req_names[r->m.type], r->name,
		 why != NULL ? why : hvd_strerror(status));
	/* Elastic: a lost peer ends the generation (the message keeps what
	 * happened). */
	hvd__req_finish(r, hvd__elastic_status(status), msg);
}

/* Wake the background thread for the work a driver leaves (or could
 * not take: the engine was busy). */
static void wake_background(void)
{
	pthread_mutex_lock(&Q.lock);
	wake(false);
	pthread_mutex_unlock(&Q.lock);
}

/* Run the engine until h completes, if it is not done and no other
 * thread runs the engine (else the caller sleeps until the owner
 * completes h: checking for it meanwhile would take the CPU from the
 * owner where threads outnumber cores). */
static void drive(hvd_handle *h)
{
	hvd__drive_fn fn = atomic_load(&drive_fn);
	bool can = !atomic_load(&h->done) && fn != NULL && !atomic_load(&Q.gpu);
	int left = 0;

	if (!h->driver && !can) {
		/* No thread may run the cycles (the MPI engine): a request that
		 * came while the background thread slept until its next cycle
		 * left it asleep (submit), and its peers' agreement waits for
		 * that cycle, up to the cycle time a collective (4 KiB over MPI:
		 * 1.1 ms, 10 to 15 us woken). This thread now only waits: wake
		 * the background thread. */
		if (fn == NULL && !atomic_load(&h->done))
			wake_background();
		return;
	}
	if (!h->driver)
		atomic_fetch_add(&Q.drivers, 1);
	h->driver = false;
	if (can)
		left = fn(h);
	atomic_fetch_sub(&Q.drivers, 1);
	/* Work this thread leaves, or could not take (the engine was busy),
	 * or that came meanwhile: the background thread left it alone while
	 * a thread drove. A set's cycle owed (2) waits for its next look
	 * (runtime.c's driven_nap). */
	if (left == 1 || left == -1 || atomic_load(&Q.work))
		wake_background();
}

int hvd__sync_start(void)
{
	if (!hvd__in_group()) {
		hvd__queue_sync_next(true);
		return HVD_OK;
	}
	hvd__set_error("a synchronous collective inside a group: use the "
		       "_async form and wait after hvd_group_end()");
	return HVD_EINVAL;
}

int hvd__sync_finish(int rc, hvd_handle *h)
{
	hvd__queue_sync_next(false);
	return rc != HVD_OK ? rc : hvd_wait(h);
}

/* Whether h is done, or (on_stream) launched on the GPU. */
static bool ready_for(hvd_handle *h, bool on_stream)
{
	return atomic_load(&h->done) ||
	       (on_stream && atomic_load(&h->launched));
}

/* A completed handle's status, its message the calling thread's; the
 * handle is freed. */
static int take_done(hvd_handle *h, int status)
{
	if (h->msg != NULL)
		hvd__set_error("%s", h->msg);
	free(h->msg);
	free(h);
	return status;
}

/* hvd_wait, or with stream (on_stream) hvd_wait_stream. */
static int wait_handle(hvd_handle *h, bool on_stream, void *stream)
{
	char why[256];
	struct hvd__wait w;
	bool waited;
	int status;

	if (h == NULL)
		return HVD_EINVAL;
	/* A fork's copy of a handle of its parent's: one in flight nothing
	 * here completes, and driving would run the parent's engine; one
	 * done is taken without the queue's lock, which a parent's thread
	 * may have held at the fork. */
	if (hvd__fork_of >= 0)
		return atomic_load(&h->done) ? take_done(h, h->status)
					     : hvd__fork_refuse();
	if (hvd__group_holds(h)) {
		hvd__set_error("hvd_wait on a member of a group not "
			       "yet ended (hvd_group_end)");
		return HVD_EINVAL;
	}
	drive(h);
	/* The background thread completes it: spin while spinning pays,
	 * then sleep until it does. */
	waited = !ready_for(h, on_stream);
	if (waited) {
		hvd__wait_begin(&w, HVD__WAIT_CALLER);
		while (!ready_for(h, on_stream) && hvd__wait_spin(&w))
			;
	}
	pthread_mutex_lock(&Q.lock);
	while (!ready_for(h, on_stream))
		pthread_cond_wait(&Q.done, &Q.lock);
	if (h->done) {
		status = h->status;
	} else {
		/* Launched, not done: the event is live until the completion,
		 * which waits for this lock. The stream waits for it, and the
		 * completion frees the handle. */
		status = hvd__gpu_stream_wait(stream, h->event, why,
					      sizeof(why));
		h->detached = true;
		h = NULL;
	}
	pthread_mutex_unlock(&Q.lock);
	if (waited)
		hvd__wait_end(&w);
	if (h == NULL) {
		if (status != HVD_OK)
			hvd__set_error("hvd_wait_stream: %s", why);
		return status;
	}
	return take_done(h, status);
}

HVD_EXPORT int hvd_wait(hvd_handle *h)
{
	return wait_handle(h, false, NULL);
}

HVD_EXPORT int hvd_wait_stream(hvd_handle *h, void *stream)
{
	return wait_handle(h, true, stream);
}

HVD_EXPORT int hvd_poll(hvd_handle *h)
{
	int done;

	if (h == NULL)
		return HVD_EINVAL;
	if (hvd__fork_of >= 0) /* no lock: wait_handle's reason */
		return atomic_load(&h->done);
	pthread_mutex_lock(&Q.lock);
	done = h->done;
	pthread_mutex_unlock(&Q.lock);
	return done;
}
