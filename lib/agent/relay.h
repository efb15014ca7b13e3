/* agent/relay.h: a worker that reads hvdrun's standard input (a 'W'
 * record, records.h). Its standard input is a pipe the agent fills from
 * hvdrun's 'I' records, and the agent answers how much the pipe took
 * ('c') and when it takes no more ('n'). The agents' loops (agent.c,
 * node.c) read hvdrun's records as they come, signals among them: input
 * the pipe has not taken waits here, never more than HL_INPUT_WINDOW,
 * since hvdrun sends no more ahead of the answers. The SSH agent's
 * worker's stdout is a pipe too, which the agent passes on as 'o'
 * records, its answers between them; the node agent answers in lines
 * of its own. */
#ifndef HL_RELAY_H
#define HL_RELAY_H

#include <poll.h>
#include <stdbool.h>

#include "agent/records.h"

/* An answer: 'c' and the bytes taken, or 'n'. */
typedef void (*hl_relay_answer)(int rank, char type, uint32_t taken);

struct hl_relay {
	int in[2];  /* the worker's standard input: its end, ours; -1 closed */
	int out[2]; /* its stdout (the SSH agent's): ours, its end */
	struct hl_buf pending; /* input the pipe has not taken yet */
	bool end;	       /* 'F' came: ours closes once pending is in */
	int rank;
	hl_relay_answer answer; /* NULL: records on stdout */
};

/* answer NULL: the SSH agent's ('c' and 'n' records on stdout). */
void hl_relay_init(struct hl_relay *r, int rank, hl_relay_answer answer);
/* Its pipes, before the worker starts, the stdout's where out: HL_OK, or
 * HL_ESYS. */
int hl_relay_open(struct hl_relay *r, bool out);
/* The worker has started: its ends close here. */
void hl_relay_started(struct hl_relay *r);
/* The relay's descriptors into pf (room for 2): how many. */
int hl_relay_fds(const struct hl_relay *r, struct pollfd *pf);
void hl_relay_polled(struct hl_relay *r, const struct pollfd *pf, int n);
/* One of hvdrun's 'I' and 'F' records. */
void hl_relay_input(struct hl_relay *r, char type, const char *data,
		    size_t len);
/* The worker has exited: pass on what its stdout pipe still holds. */
void hl_relay_flush(struct hl_relay *r);
void hl_relay_close(struct hl_relay *r);

#endif
