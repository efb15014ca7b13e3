/* agent/relay.h: the SSH agent's worker that reads hvdrun's standard
 * input (a 'W' record, records.h). Its standard input is a pipe the agent
 * fills from hvdrun's 'I' records; its stdout a pipe the agent passes on
 * as 'o' records, its answers ('c', 'n') between them. The agent's loop
 * (agent.c) reads hvdrun's records as they come, signals among them:
 * input the pipe has not taken waits here, never more than
 * HL_INPUT_WINDOW, since hvdrun sends no more ahead of the answers. */
#ifndef HL_RELAY_H
#define HL_RELAY_H

#include <poll.h>
#include <stdbool.h>

#include "agent/records.h"

struct hl_relay {
	int in[2];  /* the worker's standard input: its end, ours; -1 closed */
	int out[2]; /* its stdout: ours, its end */
	struct hl_buf pending; /* input the pipe has not taken yet */
	bool end;	       /* 'F' came: ours closes once pending is in */
};

void hl_relay_init(struct hl_relay *r);
/* Its pipes, before the worker starts: HL_OK, or HL_ESYS. */
int hl_relay_open(struct hl_relay *r);
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
