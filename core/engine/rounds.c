/* engine/rounds.c: the rounds of the engine's owner (runtime.c) with
 * process sets (sets.h): after the job's cycle, each set's cycles, in id
 * order, repeated while the set's ranks vote for them; how long the owner
 * waits between its turns, and on which bell; and where each new request
 * waits: the job's engine, its set's, or (a GPU allreduce whose data is
 * not computed yet) the job's held list (gpu/engine.c). */
#include <stdio.h>

#include "engine/engine.h"
#include "engine/sets.h"

/* The round's sets repeat their cycles at most this long after its job
 * cycle, whatever their votes: the job's agreement (a peer's shutdown,
 * the stall check, a rank that joined) comes at least this often while
 * sets are busy. Each costs a set's ranks a wait for every other rank of
 * the job, woken from its sleep: on a busy host, hundreds of
 * microseconds, which a run of large collectives paid once every
 * collective at 10 ms. Work of this rank in another engine ends the
 * round at once (set_vote). */
#define ROUND_US 100000

/* The id of the first set after id that this rank belongs to; 0: none,
 * the job's cycle comes next. */
int hvd__round_next(const struct hvd__engine *job, int id)
{
	const struct hvd__set *set;

	for (set = job->sets->list; set != NULL; set = set->next)
		if (set->id > id && set->e != NULL)
			return set->id;
	return 0;
}

/* The bell of the round's set's engine (NULL: none): its peers' next
 * agreement of the set's. */
static struct hvd__bell *round_bell(const struct hvd__engine *job)
{
	struct hvd__engine *e = hvd__sets_engine(job->sets, job->round_at);

	return e != NULL ? e->bell : NULL;
}

/* The waits between cycles do not grow (sets.h's HVD__IDLE_CYCLES) while
 * a collective of this rank waits for its peers: a peer that comes late
 * (a straggler's step, a hiccup of its data loader) is met within the
 * cycle time, where grown waits kept it up to HVD__IDLE_WAIT_MS. The
 * waiting rank's cycles still leave the CPU alone: each waits (without
 * spinning, as an idle one's) in the agreement until the late peer's
 * background thread, idle, comes to it. Between those cycles it sleeps
 * on a bell (bell.c): the late peer's next agreement wakes it at once,
 * where it would otherwise wait for the rest of the cycle time (a small
 * allreduce whose peer came a moment after an agreement: 1.1 ms where
 * 0.1 ms is its own time).
 *
 * Over MPI there is no bell, and the agreement's waits are MPI's, which
 * spin: this rank waits in its agreements, spinning, for the late peer's
 * next cycle, for at most this long after its last request came. Then it
 * tells every rank to keep to the cycle time (HVD__SETS_WAIT in the job's
 * agreement, hvd__round_told): the ranks' cycles fall in step, each
 * agreement is met at once, and the late peer is met within the cycle
 * time however late it comes, where the idle peer's cycles, grown to
 * HVD__IDLE_WAIT_MS apart, made it wait for this rank's next one (ranks
 * in a barrier for a rank 50 ms late: 4 ms). */
#define LATE_PEER_US 20000

int hvd__round_told(const struct hvd__engine *e)
{
	if (e->sets_busy == HVD__SETS_IDLE && hvd__g.mpi &&
	    e->pending_local != NULL &&
	    hvd__now_us() - e->came_us >= LATE_PEER_US)
		return HVD__SETS_WAIT;
	return e->sets_busy;
}

double hvd__round_wait(const struct hvd__engine *e, struct hvd__bell **bell)
{
	double ms = e->k.cycle_ms;
	int k;

	*bell = NULL;
	/* Within a round, the next set's cycle at once; the same set's
	 * again after one that ran nothing, within the cycle time (new work
	 * wakes the thread), or a set peer's next agreement (the set's
	 * bell). */
	if (e->round_at != 0) {
		if (e->round_idle)
			*bell = round_bell(e);
		return e->round_idle ? ms : 0;
	}
	/* A process set's ranks wait for this rank's next agreement of the
	 * job's at the end of every round of theirs: while a set runs
	 * collectives, it is ready for it at once; while one waits for its
	 * ranks, within the cycle time, or a peer's next agreement. */
	if (e->peers_busy == HVD__SETS_RAN)
		return 0;
	if (e->peers_busy == HVD__SETS_WAIT || e->pending_local != NULL) {
		/* The late peer's agreement ends the wait (bell.c). */
		*bell = e->bell;
		return ms;
	}
	for (k = HVD__IDLE_CYCLES; k < e->idle_cycles && ms < HVD__IDLE_WAIT_MS;
	     k++)
		ms *= 2;
	return ms > HVD__IDLE_WAIT_MS && e->k.cycle_ms < HVD__IDLE_WAIT_MS
		       ? HVD__IDLE_WAIT_MS
		       : ms;
}

/* Whether a request of this rank waits in an engine other than e. */
static bool pending_elsewhere(const struct hvd__engine *job,
			      const struct hvd__engine *e)
{
	const struct hvd__set *set;

	if (job->pending_local != NULL || job->held != NULL)
		return true;
	for (set = job->sets->list; set != NULL; set = set->next)
		if (set->e != NULL && set->e != e &&
		    set->e->pending_local != NULL)
			return true;
	return false;
}

/* This rank's vote on another cycle of set e after this one (engine.h):
 * a set that ran something within the cycle time, or has work here,
 * keeps its ranks to itself, so that a run of its collectives pays its
 * own ranks' agreement and not the job's; work waiting in another engine
 * of this rank, the round's time and a shutdown move the round on. */
static int set_vote(const struct hvd__engine *job, const struct hvd__engine *e,
		    bool shutdown_local)
{
	long long now = hvd__now_us();

	if (shutdown_local || now - job->round_us >= ROUND_US ||
	    pending_elsewhere(job, e))
		return HVD__SET_STOP;
	if (e->pending_local != NULL ||
	    now - e->ran_us < (long long)(job->k.cycle_ms * 1000))
		return HVD__SET_AGAIN;
	return HVD__SET_DONE;
}

/* One cycle of the round's set (job->round_at), and where the round goes
 * next: the same set again if its ranks voted for it, else the next set
 * this rank belongs to, else the job's cycle. Every rank of a set meets
 * the others in the same order: sets in id order, each as many times as
 * its ranks agreed. Work in a set marks the job busy (no idle waits). */
int hvd__round_step(struct hvd__engine *job, bool shutdown_local)
{
	struct hvd__engine *e = hvd__sets_engine(job->sets, job->round_at);
	struct hvd__resp *v;
	size_t n;
	int rc;

	if (e == NULL) { /* sets change only in the job's cycle */
		job->round_at = hvd__round_next(job, job->round_at);
		return HVD_OK;
	}
	e->sets_busy = set_vote(job, e, shutdown_local);
	rc = hvd__negotiate(e, false, &v, &n);
	if (rc != HVD_OK)
		return rc;
	e->decided_us = hvd__now_us();
	rc = hvd__execute(e, v, n);
	hvd__resps_free(v, n);
	if (n > 0) {
		job->idle_cycles = 0;
		job->sets_busy = HVD__SETS_RAN;
		e->ran_us = hvd__now_us();
	} else if (e->pending_local != NULL &&
		   job->sets_busy == HVD__SETS_IDLE) {
		job->sets_busy = HVD__SETS_WAIT;
	}
	job->round_idle = n == 0 && e->peers_busy == HVD__SET_AGAIN;
	if (e->peers_busy != HVD__SET_AGAIN)
		job->round_at = hvd__round_next(job, job->round_at);
	return rc;
}

/* Whether some request of this rank waits in an engine. */
bool hvd__pending_any(const struct hvd__engine *job)
{
	const struct hvd__set *set;

	if (job->pending_local != NULL || hvd__gpu_busy(job))
		return true;
	for (set = job->sets->list; set != NULL; set = set->next)
		if (set->e != NULL && set->e->pending_local != NULL)
			return true;
	return false;
}

/* Each request to its engine's list: the job's, or its process set's
 * (one removed since it was queued fails). The job's list is walked to
 * its end once a turn, not once a request. */
void hvd__route(struct hvd__engine *job, struct hvd__req *in)
{
	struct hvd__req *r, *next, **tail, **job_tail = &job->pending_local;
	struct hvd__req **held_tail = &job->held;
	struct hvd__engine *e;
	char why[96];

	while (*job_tail != NULL)
		job_tail = &(*job_tail)->next;
	while (*held_tail != NULL)
		held_tail = &(*held_tail)->next;
	for (r = in; r != NULL; r = next) {
		next = r->next;
		r->next = NULL;
		if (r->set == 0 && hvd__gpu_holds(r)) {
			*held_tail = r;
			held_tail = &r->next;
			continue;
		}
		if (r->set == 0) {
			*job_tail = r;
			job_tail = &r->next;
			continue;
		}
		e = hvd__sets_engine(job->sets, r->set);
		if (e == NULL) {
			snprintf(why, sizeof(why), "process set %d was removed",
				 r->set);
			hvd__req_complete(r, HVD_ENOSET, why);
			continue;
		}
		for (tail = &e->pending_local; *tail != NULL;
		     tail = &(*tail)->next)
			;
		*tail = r;
	}
}
