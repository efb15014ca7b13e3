/* engine/sets.h: process sets (Horovod 0.23's): collectives over some of
 * the job's ranks.
 *
 * Each set this rank belongs to has an engine of its own (struct
 * hvd__engine: its negotiation, response cache, join, stall check, fusion
 * buffer and bell) over a group of the job's comm (algo/group.h), and,
 * where the job's ranks share memory and the set has the same number of
 * ranks on each of its hosts, a segment of its own (algo/hier.h). The
 * engine's owner runs rounds (runtime.c): a cycle of the job's engine,
 * then the cycles of each of its sets' engines in the order of their ids,
 * each set as many as its ranks agree on (each rank votes in the set's
 * agreement: work pending, or ran a moment ago, for more; work waiting in
 * another engine of the rank, or the round's time up, for none). Every
 * rank of a set meets the others in the same order; a run of a set's
 * collectives pays its own ranks' agreement, not the whole job's, each
 * time; sets without a rank in common run at the same time; and a rank in
 * two sets makes progress in both.
 *
 * Sets are added and removed by a collective of every rank of the job
 * (HVD__REQ_PROCESS_SET), negotiated by the job's engine like any other:
 * its meta carries the set's size and a hash of its ranks, so ranks that
 * disagree about a set fail on every rank (HVD_EMISMATCH), and every rank
 * changes its table at the same point of the same cycle. */
#ifndef HVD_SETS_H
#define HVD_SETS_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "engine/engine.h"

/* One process set. Its id is the same on every rank; the job is set 0,
 * which has no entry. */
struct hvd__set {
	int id;
	int n;
	int *ranks;	       /* the job's ranks, ascending */
	int me;		       /* this rank's place in ranks, or -1 */
	struct hvd__engine *e; /* me >= 0: the set's engine */
	struct hvd__set *next; /* by id */
};

/* The table. The engine's owner changes it, under lock; other threads
 * read it under lock (the queries below). */
struct hvd__sets {
	pthread_mutex_t lock;
	struct hvd__set *list;
	int next_id;
	int count;    /* entries, the job's set not counted */
	bool dynamic; /* HOROVOD_DYNAMIC_PROCESS_SETS: added after hvd_init */
	_Atomic int changes; /* changes submitted here: the next one's name */
};

/* What a process set request asks (its meta's op). */
enum hvd__set_change { HVD__SET_ADD, HVD__SET_REMOVE };

/* Ready an empty table (no engine runs yet; s->lock is the caller's to
 * initialise, once). */
void hvd__sets_init(struct hvd__sets *s, bool dynamic);
/* Free every set, and its engine; the requests still pending in them
 * complete with status. The engine's owner, or after it has ended. */
void hvd__sets_free(struct hvd__sets *s, int status);

/* Complete the requests pending in every set's engine with status; returns
 * how many (the engine's owner, when the engine stops). */
int hvd__sets_fail(struct hvd__sets *s, int status);
/* The engine of set id, NULL when this rank has no such set (the engine's
 * owner). */
struct hvd__engine *hvd__sets_engine(struct hvd__sets *s, int id);

/* Run an agreed HVD__REQ_PROCESS_SET of the job's engine job (whose sets
 * are job->sets): add the set of r's ranks (r->sendbuf, m.count of them,
 * ascending), its id then in *(int *)r->recvbuf, or remove set m.root.
 * Returns r's status: HVD_EINVAL for a set that exists already, HVD_ENOSET
 * for one that does not; the table is the same on every rank, and so is
 * the answer. */
int hvd__sets_apply(struct hvd__engine *job, struct hvd__req *r);

/* Any thread: set id's size and this rank's place in it (-1: not in it);
 * HVD_ENOSET when there is no set id. id 0 is the job. */
int hvd__sets_query(struct hvd__sets *s, int id, int *me, int *n);
/* Any thread: the place of the job's rank in set id, -1 if not in it;
 * HVD_ENOSET when there is no set id. */
int hvd__sets_place(struct hvd__sets *s, int id, int rank);
/* Any thread: set id's ranks (at most cap into ranks); returns how many
 * it has, or HVD_ENOSET. */
int hvd__sets_ranks(struct hvd__sets *s, int id, int *ranks, int cap);
/* Any thread: the ids, the job's first (at most cap); returns how many
 * there are. */
int hvd__sets_ids(struct hvd__sets *s, int *ids, int cap);

/* A hash of a set's ranks (never 0), for the meta its ranks compare. */
uint64_t hvd__sets_hash(const int *ranks, int n);

/* ---- rounds.c (the engine's owner) ---- */

/* The id of the first set after id that this rank belongs to; 0: none,
 * the job's cycle comes next. */
int hvd__round_next(const struct hvd__engine *job, int id);
/* One cycle of the round's set (job->round_at), and where the round goes
 * next (job->round_at). */
int hvd__round_step(struct hvd__engine *job, bool shutdown_local);
/* After this many cycles in a row that ran nothing, waits on peers sleep
 * at once instead of yielding first, and the time between cycles doubles
 * each cycle up to HVD__IDLE_WAIT_MS: an idle job (between epochs; a late
 * rank that the others wait for, over MPI only at first: rounds.c's
 * hvd__round_told) leaves the CPU alone. New work
 * wakes the background thread at once whatever the wait; only a rank
 * with no work of its own that others need in a cycle may answer up to
 * HVD__IDLE_WAIT_MS late, once (rounds.c's hvd__round_wait). */
#define HVD__IDLE_CYCLES 2
#define HVD__IDLE_WAIT_MS 20.0
/* How long the engine's owner waits before its next turn (ms), and the
 * bell (bell.c; NULL: none) whose ring ends the wait sooner: a peer's
 * next agreement, the job's or the round's set's. */
double hvd__round_wait(const struct hvd__engine *e, struct hvd__bell **bell);
/* How busy this rank tells the others it is in the job's agreement
 * (struct hvd__engine's sets_busy, before the job's cycle): how busy its
 * sets were, or over MPI HVD__SETS_WAIT while its own collective waits
 * long for a late peer (rounds.c). */
int hvd__round_told(const struct hvd__engine *e);
/* Whether some request of this rank waits in an engine (or GPU work in
 * the job's: held, or in flight). */
bool hvd__pending_any(const struct hvd__engine *job);
/* Each new request to where it waits (rounds.c says where). */
void hvd__route(struct hvd__engine *job, struct hvd__req *in);

#endif
