/* rdv/internal.h: the rendezvous server's state, shared by its files:
 * server.c (the thread, the static protocol, start and stop), conns.c
 * (the connections) and elastic/generations.c (an elastic job's
 * generations, which the server calls through struct
 * hl_rdv_generations). Nothing else includes it. */
#ifndef HL_RDV_INTERNAL_H
#define HL_RDV_INTERNAL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "proto/rendezvous.h"
#include "rdv/server.h"
#include "util/util.h"

#define REGISTER_WINDOW_MS 10000 /* a connection must register by then */
/* Connections not yet registered held at once beyond the job's ranks:
 * past that, a new one takes the place of the oldest. Any machine can
 * reach this port; connections that never register cost hvdrun at most
 * this many descriptors and buffers, and a worker's REGISTER, which
 * follows its connect at once, gets in. */
#define PENDING_SPARE 256
#define ACCEPTS_PER_WAKE 64
/* Elastic: a worker's connection idle this long gets TCP keepalive
 * probes; nothing back for LOST_MS with one unanswered and its host is
 * lost (its link down, the host off): about 2 s from the silence. */
#define LOST_IDLE_S 1
#define LOST_MS 2000

struct conn {
	int fd;
	bool registered;
	int slot;      /* its place in by_rank, -1: none */
	bool in_world; /* elastic: it was sent the running generation */
	long long deadline;
	uint8_t nonce[RDV_NONCE_LEN]; /* ours, sent in HELLO */
	struct rdv_register reg;
	uint8_t buf[512];
	size_t len;
};

struct hl_rdv {
	int size;
	int timeout_s;
	int report_fd;
	int listen_fd;
	int port;
	int stop[2]; /* wakes the thread to stop */
	uint8_t secret[RDV_SECRET_LEN];
	pthread_t thread;
	bool started;
	struct conn *conns;
	size_t nconns, cap;
	int *by_rank; /* conn index per rank, -1 */
	int nregistered;
	uint32_t round;	    /* static: the round of hvd_init() being formed */
	long long deadline; /* 0 until the first rank registers */
	/* Elastic: the generation being formed or running (0: none yet),
	 * its members (worker ids, in rank order) and their places; the
	 * supervisor sets them (hl_rdv_generation), under lock. */
	bool elastic;
	const struct hl_rdv_generations *gens; /* elastic: not NULL */
	pthread_mutex_t lock;
	uint32_t gen;
	bool formed;	/* WORLD was sent to every member */
	bool finishing; /* hl_rdv_finish: no later generation forms */
	int *ids;
	struct rdv_world *places;
	/* Growth announced (hl_rdv_at_commit): the generation that the running
	 * one's workers form with the new ones once all have come back. */
	int *grow_ids;
	struct hl_rank *grow_places;
	int grow_n;
	/* Workers the supervisor starts for a generation it has yet to
	 * announce (hl_rdv_expect): one that registers first waits. */
	int *expect;
	size_t nexpect, capexpect;
	/* Workers whose host stopped answering, for the supervisor
	 * (hl_rdv_take_lost). */
	int *lost;
	size_t nlost, caplost;
	/* Workers that wait for a generation that will not form (the job is
	 * finishing: hl_rdv_finish), or that a generation left out, for
	 * the supervisor (hl_rdv_take_idle). */
	int *idle;
	size_t nidle, capidle;
};

/* ---- conns.c (the rendezvous thread, under lock) ---- */

/* Write a NUL-terminated report to the supervisor. */
void hl_rdv__report(struct hl_rdv *r, const char *msg);
void hl_rdv__drop(struct hl_rdv *r, size_t i);
/* Close up the places of dropped connections. */
void hl_rdv__compact(struct hl_rdv *r);
/* Take one connection in: HL_OK, or HL_EAGAIN when none is waiting. */
int hl_rdv__accept_one(struct hl_rdv *r);
/* Connection i holds rank (static) or member (elastic) slot. */
void hl_rdv__take_slot(struct hl_rdv *r, size_t i, int slot);
/* Add id to a growing list of ids; false when out of memory. */
bool hl_rdv__push(int **v, size_t *n, size_t *cap, uint32_t id);
/* Add id to a list of ids for the supervisor, and tell it. */
void hl_rdv__tell(struct hl_rdv *r, int **v, size_t *n, size_t *cap,
		  uint32_t id);
/* Every rank has registered: PEERS (static) or WORLD (elastic) to each. */
void hl_rdv__send_peers(struct hl_rdv *r);

#endif
