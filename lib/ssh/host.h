/* ssh/host.h: the SSH spawner's own (ssh/spawn.c drives the group; each
 * host's thread is in ssh/host.c). One session per host (or per
 * `channels_per_session` ranks of a host), one thread that owns it. */
#ifndef HL_SSH_HOST_H
#define HL_SSH_HOST_H

#include <arpa/inet.h>
#include <libssh/callbacks.h>
#include <libssh/libssh.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdbool.h>

#include "agent/records.h"
#include "launch/launch.h"
#include "spawn/sessions.h"
#include "spawn/spawn.h"

struct rank_ch {
	struct hl_worker *w;
	ssh_channel ch;
	struct ssh_channel_callbacks_struct cb;
	bool got_exit;
	int status; /* wait(2)-style */
	bool done;
	/* The worker was started again in a later session (or given up):
	 * nothing more of this one reaches the supervisor. */
	atomic_bool superseded;
	/* A late session's: the environment, built when it was added. */
	struct hl_strvec env;
	/* The rank that reads hvdrun's standard input (ssh/input.c): its
	 * agent was sent 'W', and its channel's stdout carries records. */
	bool relay;
	int in_fd;	  /* hvdrun's standard input, or a pipe from it; -1 */
	size_t in_credit; /* what may be sent ahead of the agent's 'c' */
	bool in_polled;	  /* in_fd is in the pump's event */
	bool in_ready;	  /* and was found readable */
	bool in_quit;	  /* the agent said 'n': send no more */
	struct hl_buf in_out; /* the stdout records, not yet whole */
};

struct ssh_host {
	struct ssh_group *g;
	size_t index;	     /* in the host list */
	struct hl_host host; /* a copy: the list may grow meanwhile */
	ssh_session s;
	pthread_t thread;
	bool thread_started;
	atomic_bool finished; /* its thread has returned */
	struct rank_ch *ranks;
	size_t nranks;
	int ctl[2]; /* control pipe: {rank, signal} from the supervisor */
	bool connected;
	bool started;
	bool failed;
	char *error;
	bool want_port; /* rank 0 is here: find MASTER_PORT */
	bool late;	/* elastic: started again, after the job's start */
	int port;
	char addr[INET_ADDRSTRLEN]; /* MASTER_ADDR, "" for the host's name */
};

struct ssh_group {
	const struct hl_launch *l;
	struct hl_worker *w;
	int notify_fd;
	struct hl_sessions ss; /* its sessions (struct ssh_host) */
	sem_t slots;	       /* bounds connections in progress */
	pthread_mutex_t lock;  /* protects the phase counters and go/abort */
	pthread_cond_t cond;
	size_t nconnected, nstarted, nfailed;
	bool go, abort;
};

/* The thread of host h (arg): connect, wait for the go, start its ranks,
 * pump their channels until every one has ended. */
void *hl_ssh_host_main(void *arg);
/* Have host h's thread send signal sig to rank's worker. */
void hl_ssh_host_signal(struct ssh_host *h, int rank, int sig);

/* ssh/input.c: hvdrun's standard input to the rank that reads it, on
 * another host (records.h's 'W', 'I', 'F', and the agent's answers).
 * Rank r reads fd (-1: none); r's job records get its 'W'; what its
 * channel's stdout brings goes to the supervisor (whole 'o' records, the
 * answers taken here); before each poll of the pump, the event watches
 * fd while the agent may take more; after it, what fd had is sent; and
 * the end closes fd (never hvdrun's descriptor 0). */
void hl_ssh_input_init(struct rank_ch *r, int fd);
int hl_ssh_input_records(const struct rank_ch *r, struct hl_buf *b);
void hl_ssh_output(const struct ssh_host *h, struct rank_ch *r,
		   const char *data, size_t n);
void hl_ssh_input_poll(struct ssh_host *h, ssh_event ev);
void hl_ssh_input_send(struct ssh_host *h, ssh_event ev);
void hl_ssh_input_end(struct rank_ch *r, ssh_event ev);

#endif
