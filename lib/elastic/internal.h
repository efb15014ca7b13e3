/* elastic/internal.h: what the files of an elastic job's policy share:
 * its state in the supervisor (sup.el) and the steps each file offers
 * the others. members.c < shrink.c, grow.c < supervise.c (the hooks). */
#ifndef HL_ELASTIC_INTERNAL_H
#define HL_ELASTIC_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "launch/sup.h"

/* How the next generation comes: at once (a reset), or at the running
 * workers' next commit because hosts were added or removed. */
enum gen_how { GEN_RESET, GEN_ADDED, GEN_REMOVED };

struct host_state {
	long long back;
	bool listed;
	bool kept;
	int cut_told; /* free slots told left empty for want of files */
};

/* An elastic job's state in the supervisor (struct sup's el). */
struct hl_elastic {
	int resets; /* generations after the first */
	struct host_state *hs;
	/* When the workers ended with their host get SIGKILL (0: none due),
	 * and whether they have (the deadline then gives up on them). */
	long long removal_deadline;
	bool removal_killed;
	int finished_by; /* the first worker whose work was done */
	/* Below --min-np, waiting for hosts (--elastic-timeout): until
	 * when, and the failure that brought it there (0: not waiting). */
	long long below_until;
	int below_code;
	char below_why[512];
	struct hl_worker **again; /* room for the workers regrow starts */
	char *disc_error;  /* the discovery script's last failure, told */
	long long disc_at; /* when its last good list came */
	bool disc_closed;  /* the script no longer runs: the job is ending */
	/* A worker ended, or the discovery script's list came: regrow
	 * looks at the hosts again (else only when a cool-down ends). */
	bool pool_changed;
};

/* ---- members.c ---- */

/* Whether w will be a member of the next generation: neither exited nor
 * out with its host. */
bool hl_el_member(const struct sup *s, const struct hl_worker *w);
/* the places of the n workers w about to start (members
 * already): their rank variables, as the next generation will have them. */
int hl_el_place_starting(struct sup *s, struct hl_worker *const *w, int n);
int hl_el_plan_generation(struct sup *s, int *n, enum gen_how how);
/* hvdrun ends worker o (its host left, or it can no longer
 * join); its end is no failure, and SIGKILL follows after the grace
 * period (removals_due). */
void hl_el_remove_worker(struct sup *s, struct hl_worker *o);
void hl_el_clear_fresh(struct sup *s);
/* host leaves the job, its workers ended, for its cool-down
 * (returned, in seconds) or for good (-1). */
int hl_el_host_leaves(struct sup *s, size_t host);
/* when a failed host may return (its 'back'): after a cool-down drawn
 * from --blacklist-cooldown-range (*wait_s seconds), or never
 * (LLONG_MAX; *wait_s -1). */
long long hl_el_cooldown_end(const struct sup *s, int *wait_s);
/* whether one more generation (hosts added or removed; every
 * generation after the first counts, as horovodrun counts them) would
 * pass --reset-limit: then the job stops, with status 1, saying why
 * (host: the host whose change it was, what: what happened to it). */
bool hl_el_past_reset_limit(struct sup *s, const char *what, size_t host);
/* when the first host waiting for the end of its cool-down
 * may return; LLONG_MAX when none waits. */
long long hl_el_next_return(const struct sup *s);

/* ---- shrink.c ---- */

/* below --min-np for --elastic-timeout: the job ends with the
 * code of the failure that brought it there. */
void hl_el_below_due(struct sup *s);
/* worker w failed (how). Its host leaves the job (the host's
 * other workers are ended) and the rest reset without it; a worker
 * started again that fails before its generation formed only takes its
 * host out of the growth. Returns false when the job cannot go on: the
 * reset limit is reached, or fewer than --min-np workers would remain. */
bool hl_el_shrink(struct sup *s, struct hl_worker *w, char *how, size_t howlen);
/* workers ended with their host that outlive the grace period
 * get SIGKILL; remote ones still not heard of 2 s later are given up
 * (their host is unreachable: nothing more will come from it). */
void hl_el_removals_due(struct sup *s);
/* the job is finishing (a worker's work is done). Workers
 * started again that have yet to join will never: they end quietly.
 * Once they have joined they are members. */
void hl_el_end_fresh(struct sup *s);
/* worker w, of a host the discovery script dropped, ended before
 * the others re-joined without it: the generation that waited for it
 * never forms, so the others reset without it now (and its host's other
 * workers end). */
void hl_el_left_early(struct sup *s, struct hl_worker *w);

/* ---- grow.c ---- */

/* hosts with room start workers. Normally the running ones
 * take them in at their next commit; below --min-np (waiting for hosts)
 * they start only once enough can, and the waiting workers and they form
 * the next generation at once. */
void hl_el_regrow(struct sup *s);
/* a run of the discovery script has ended: its list is the
 * pool now, or its failure is told (once while it stays the same) and
 * the last good list kept. */
void hl_el_discovered(struct sup *s);

#endif
