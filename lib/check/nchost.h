/* nchost.h: what the network check's stages share (netcheck.c runs the
 * description and the connection tests, netlinks.c the bandwidth stage):
 * one thread per host, which owns its channel to the probe, and the
 * group that moves every host from one stage to the next together. Every
 * wait is bounded. */
#ifndef HL_NCHOST_H
#define HL_NCHOST_H

#include <libssh/libssh.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "check/netplan.h"
#include "ssh/opts.h"
#include "agent/records.h"
#include "ssh/rchan.h"
#include "util/util.h"

enum { ST_DESCRIBE, ST_TEST, ST_LINKS, ST_END };
enum { PH_STARTING, PH_DESCRIBED, PH_TESTED, PH_FAILED };

struct nc_group;

struct nc_thread {
	struct nc_group *g;
	struct hl_nc_host *h;
	pthread_t th;
	bool started;
	int phase;
	ssh_session s;	   /* remote hosts */
	struct hl_rchan c; /* to the probe */
	bool open;
	struct hl_buf in;
	struct hl_buf out; /* the targets and the go */
	size_t ntargets;
	size_t rounds_done; /* of the bandwidth stage */
	bool links_done;
};

struct nc_group {
	struct hl_netcheck *nc;
	const struct hl_ssh_opts *so;
	struct nc_thread *t;
	size_t n;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	int stage;
	size_t round;		  /* the bandwidth stage's, now */
	long long round_deadline; /* ms */
};

/* Move t to phase, keeping error (owned) as its host's first error. */
void hl_nch_phase(struct nc_thread *t, int phase, char *error);
/* Wait for the group's stage to reach at least `stage`; the stage. */
int hl_nch_wait_stage(struct nc_thread *t, int stage);
/* Set the group's stage and wake every thread. */
void hl_nch_stage(struct nc_group *g, int stage);
/* The probe's next record (1), or 0 at the deadline (ms), HL_EPROTO at
 * the end of its output or a malformed record; hl_buf_consume(&t->in,
 * *used) takes it. */
int hl_nch_next(struct nc_thread *t, long long deadline, size_t *used,
		char *type, const char **data, size_t *len);
/* Why the probe gave up (r: what hl_nch_next returned), one line. */
char *hl_nch_failure(struct nc_thread *t, int r);
/* Send req and read until a record of type `until`, handing each record
 * of type `each` to take under the group's lock. False: the probe went
 * away or missed the deadline (the host has failed). */
bool hl_nch_exchange(struct nc_thread *t, const struct hl_buf *req,
		     long long deadline, char each, char until,
		     void (*take)(struct nc_thread *, const char *, size_t));

#endif
