/* shm_seg.h: the layout of the host's shared segment (shm.h), for
 * shm.c (the segment: open, barriers, bells) and shm_ops.c (the
 * collectives over its slots). Nothing outside core/transport reads it. */
#ifndef HVD_SHM_SEG_H
#define HVD_SHM_SEG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "transport/shm.h"

/* The first cache line: set once a rank has failed, so that no local
 * peer waits for it. */
struct head {
	_Atomic uint32_t broken;
	char pad[64 - sizeof(uint32_t)];
};

/* One cache line per rank: what its peers wait on. */
struct line {
	_Atomic uint32_t arrive;   /* rounds this rank has reached */
	_Atomic uint32_t sleepers; /* peers asleep on arrive */
	int32_t pid;
	char pad[64 - 3 * sizeof(uint32_t)];
};

/* One cache line per rank: its bell (shm.h), apart from the lines that
 * the exchanges spin on. */
struct bell {
	_Atomic uint32_t rung;	   /* rings so far */
	_Atomic uint32_t sleepers; /* this rank's threads asleep on it */
	_Atomic uint32_t polls;	   /* they sleep in poll() on its socket */
	char pad[64 - 3 * sizeof(uint32_t)];
};

struct hvd__shm {
	int lrank, lsize;
	size_t slot;
	unsigned char *base;
	size_t len;
	struct head *head;
	struct line *lines;
	struct bell *bells;
	unsigned char *slots;
	int *pidfd;
	const unsigned char **view; /* lsize slots: the last exchange's */
	uint32_t seq;
	unsigned set;	/* the slot set of the next chunk */
	char name[112]; /* the segment's abstract socket name */
	int bell_fd;	/* this rank's bell socket (hvd__shm_bell_socket) */
};

static inline unsigned char *slot_of(const struct hvd__shm *s, unsigned set,
				     int r)
{
	return s->slots +
	       ((size_t)set * (size_t)s->lsize + (size_t)r) * s->slot;
}

#endif
