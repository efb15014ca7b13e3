/* rdv/server.h: hvdrun's end of the rendezvous (proto/rendezvous.h): a
 * server thread that admits workers proving they know the job's secret,
 * and once every rank has registered, tells each where the others listen.
 * It serves for the whole job: every hvd_shutdown() and hvd_init() of the
 * ranks is one more round of the same (Horovod's re-initialisation).
 * Reports (report_fd) are NUL-terminated texts.
 * A job whose program never uses libhvd never registers, and that is
 * fine; once one rank has registered for a round, the others must within
 * the start timeout, or the failure (naming the ranks) is written to
 * report_fd. */
#ifndef HL_RDV_SERVER_H
#define HL_RDV_SERVER_H

#include <stdbool.h>

#include "job/env.h"
#include "job/plan.h"

struct hl_rdv;

/* An elastic job's generations (elastic/generations.c's
 * hl_elastic_generations): what the rendezvous thread hands them, under
 * its lock. */
struct hl_rdv_generations {
	/* Worker id's host stopped answering (keepalive). */
	void (*host_lost)(struct hl_rdv *r, uint32_t id);
	/* Worker id waits for a generation that will not form, or was left
	 * out. */
	void (*idle)(struct hl_rdv *r, uint32_t id);
	/* Connection i's id registered again: the earlier connections go. */
	void (*supersede)(struct hl_rdv *r, size_t i);
	/* Each turn of the loop: seat the workers that wait, send the world
	 * once it is whole. */
	void (*progress)(struct hl_rdv *r);
	/* Forget the growth announced (at the stop). */
	void (*forget_growth)(struct hl_rdv *r);
};

/* gens: the job runs in generations that the supervisor sets (below),
 * size is only a hint; NULL: a static job of size ranks. */
int hl_rdv_start(struct hl_rdv **out, int size, int timeout_s, int report_fd,
		 const struct hl_rdv_generations *gens, char **cause);
/* An elastic job's next generation: n workers, by id in rank order, each
 * at its place (local and cross rank and size). The workers of the
 * running generation are told to reset (their connections end); a worker
 * that registers for it joins if it is a member, else its hvd_init()
 * fails. Once every member has joined, each is sent its world. Once one
 * has, the others must join within the start timeout, or the failure is
 * written to report_fd. Returns the generation's number, or HL_ENOMEM. */
int hl_rdv_generation(struct hl_rdv *r, const int *ids,
		      const struct hl_rank *places, int n);
/* Elastic, at the running workers' next commit: ids (in rank order, at
 * places) form the next generation once every running worker has come
 * back (hvd_shutdown and hvd_init at its next commit). The running
 * workers are told why and go on until then: hosts were added (the ids
 * include new workers, which wait for it), or, removed, hosts leave (the
 * ids are the workers that stay; the others are left out when they come
 * back). A reset (hl_rdv_generation) before then replaces it. Returns
 * the announced generation's number, or HL_ENOMEM. */
int hl_rdv_at_commit(struct hl_rdv *r, const int *ids,
		     const struct hl_rank *places, int n, bool removed);
/* Elastic: the supervisor starts worker id for the generation it
 * announces next (hl_rdv_at_commit or hl_rdv_generation). Should the
 * worker register first, it waits for it instead of being left out. */
void hl_rdv_expect(struct hl_rdv *r, int id);
/* Elastic: hosts leave the job (a failure, or the discovery script
 * dropped them): the running generation's workers are told (a hosts
 * notice, Horovod's "removed" update), before the generation without
 * them replaces theirs. */
void hl_rdv_hosts_removed(struct hl_rdv *r);
/* Elastic: the ids (at most cap) of workers whose host stopped
 * answering: their connection's keepalive probes went unanswered (a
 * link down, a host off), which no exit of theirs may ever report. Each
 * loss also writes an empty report (a lone NUL) to report_fd. */
size_t hl_rdv_take_lost(struct hl_rdv *r, int *ids, size_t cap);
/* Elastic: the job is finishing (a worker's work is done): no later
 * generation will form. Workers that wait for one, now or when they
 * register later, and workers a new generation left out, are told to
 * the supervisor, each with an empty report, and hl_rdv_take_idle()
 * gives their ids (at most cap). */
void hl_rdv_finish(struct hl_rdv *r);
size_t hl_rdv_take_idle(struct hl_rdv *r, int *ids, size_t cap);
/* Whether announced growth still waits for the running workers. */
bool hl_rdv_growing(struct hl_rdv *r);
/* Whether worker id is a member of the running generation, and that
 * generation has formed: it has joined. */
bool hl_rdv_joined(struct hl_rdv *r, int id);
/* Add HVD_RENDEZVOUS, HVD_SECRET and HVD_START_TIMEOUT for the workers. */
int hl_rdv_export(const struct hl_rdv *r, struct hl_envspec *es);
void hl_rdv_stop(struct hl_rdv *r);

#endif
