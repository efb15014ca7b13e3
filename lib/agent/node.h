/* agent/node.h: what the node agent's files share (`hvdrun
 * --node-agent`, hl_node_agent_run in agent.h): the node's state, and its
 * answers to hvdrun and the handling of hvdrun's records
 * (node_records.c), which the loop (node.c) calls. */
#ifndef HL_NODE_H
#define HL_NODE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "util/family.h"
#include "util/proc.h"
#include "launch/output.h"
#include "util/util.h"
#include "agent/relay.h"

struct nrank {
	int rank;
	char *cwd;
	struct hl_strvec env, argv;
	pid_t pid; /* leader of its process group; 0 before it starts */
	int fd[2]; /* its stdout and stderr, -1 at end of file */
	bool reaped, reported;
	int status;
	long long ended_ms; /* when it was reaped: its group gets a grace */
	bool input;	    /* 'W': it reads hvdrun's standard input */
	struct hl_relay in; /* then its pipe (relay.h) */
};

struct node {
	long task; /* this agent's task in the step */
	struct hl_strvec common;
	struct nrank *r;
	size_t n, cap;
	long cur_task;	      /* the task the records now address */
	struct nrank *job;    /* the job being read, NULL if none */
	bool all_sent;	      /* 'Z' seen */
	bool stopping;	      /* stdin ended or the step was signalled */
	struct hl_family fam; /* the workers' groups and what they leave */
};

/* line[0..len) as one line on stdout, in one write(2), ended by
 * HL_LINE_END and '\n' (line has room for both). */

/* ---- node_records.c ---- */

void hl_node_sayf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* A rank's input answer (relay.h) as a 'c' or 'n' line. */
void hl_node_say_answer(int rank, char type, uint32_t taken);
/* Data of rank's stream k as 'o'/'e' lines. */
void hl_node_say_data(int rank, int k, const char *data, size_t n);
/* Act on one record. HL_EPROTO for a malformed one. */
int hl_node_on_record(struct node *nd, char type, const char *data, size_t len);

#endif
