/* spawn/sessions.h: the bookkeeping every remote spawner keeps of what
 * it opened (the SSH spawner: a session a host, or a host's share of
 * channels; the srun spawner: a step a start): its sessions in the order
 * opened, the one that started each worker last, and the ended ones
 * freed, so that a long elastic job's restarts keep nothing of them. A
 * session is the spawner's own type, seen here as void *. */
#ifndef HL_SESSIONS_H
#define HL_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>

struct hl_sessions {
	void **v; /* the sessions, in the order they were opened */
	size_t n, cap;
	void **at; /* by worker id: the session that started it last */
	size_t nw;
};

/* Room for nw workers' sessions; HL_OK or HL_ENOMEM. */
int hl_sessions_init(struct hl_sessions *ss, size_t nw);
/* Add session s, or HL_ENOMEM (s stays the caller's). */
int hl_sessions_add(struct hl_sessions *ss, void *s);
/* Worker id's session from now on. */
void hl_sessions_started(struct hl_sessions *ss, int id, void *s);
/* Free each session that ended(s) says has ended (free_fn), first
 * forgotten as any worker's; the others keep their order. */
void hl_sessions_sweep(struct hl_sessions *ss, bool (*ended)(void *s),
		       void (*free_fn)(void *s));
/* Free every session (free_fn, in order) and the lists. */
void hl_sessions_close(struct hl_sessions *ss, void (*free_fn)(void *s));

#endif
