/* elastic.c: an elastic job's worker (elastic.h). Between hvd_init() and
 * hvd_shutdown() it holds its connection to hvdrun's rendezvous, and a
 * thread that does nothing but wait on it: hvdrun's notice of a reset
 * must reach a rank that sits in a collective waiting for a peer that
 * will never answer (its host is gone, not closed), so it cannot wait
 * for the engine's next turn. */
#include "engine/elastic.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "proto/wire.h"
#include "util/internal.h"

static struct {
	struct hvd__rdv_link link;
	pthread_t thread;
	bool watching;
	int stop[2];
	void (*abort)(void);
	uint32_t last_gen; /* the generation this process last belonged to */
} W = {.link = {.fd = -1}, .stop = {-1, -1}};

/* The generation the latest hosts notice announced, 0: none this
 * world. */
static _Atomic uint32_t hosts_gen;
/* Host updates not yet taken (hvd_elastic_host_updates): HVD_HOSTS_*
 * bits, and the generation the latest announced; kept across worlds
 * until taken. */
static _Atomic int updates;
static _Atomic uint32_t updates_gen;

bool hvd__elastic_wanted(uint32_t *id)
{
	long v;

	if (getenv(wenv_vars[WENV_WORKER_ID].name) == NULL ||
	    hvd__env_long(WENV_WORKER_ID, &v) != HVD_OK)
		return false;
	*id = (uint32_t)v;
	return true;
}

int hvd__elastic_join(struct hvd__state *st, uint32_t id,
		      struct hvd__comm *comm)
{
	hvd__world_begin();
	atomic_store(&hosts_gen, 0);
	return hvd__join_elastic(st, id, W.last_gen, comm, &W.link);
}

/* Take the hosts notices at the front of buf[0..*len): hosts added or
 * removed (the program re-joins at its next commit:
 * hvd_elastic_hosts_updated, unless a reset comes first); both are host
 * updates for the program (hvd_elastic_host_updates). False once anything else is there: a
 * reset notice, or bytes that are not hvdrun's, which end the generation
 * too. The mac is not checked: the connection proved itself at
 * registration, whatever comes ends the generation the same way, and the
 * program's exit may tear OpenSSL down while this thread runs. */
static bool only_hosts_notices(uint8_t *buf, size_t *len)
{
	while (*len > 0) {
		bool added;
		uint32_t gen;

		if (buf[0] != 'N' || (*len > 1 && buf[1] != RDV_NOTICE_HOSTS &&
				      buf[1] != RDV_NOTICE_REMOVED))
			return false;
		if (*len < RDV_NOTICE_LEN)
			break;
		added = buf[1] == RDV_NOTICE_HOSTS;
		gen = wire_de32(buf + 2);
		atomic_store(&hosts_gen, gen);
		atomic_store(&updates_gen, gen);
		atomic_fetch_or(&updates,
				added ? HVD_HOSTS_ADDED : HVD_HOSTS_REMOVED);
		hvd__debug("hvdrun %s hosts (generation %u next)",
			   added ? "added" : "removed", gen);
		memmove(buf, buf + RDV_NOTICE_LEN, *len - RDV_NOTICE_LEN);
		*len -= RDV_NOTICE_LEN;
	}
	return true;
}

static void *watch(void *arg)
{
	uint8_t buf[4 * RDV_NOTICE_LEN];
	size_t len = 0;

	(void)arg;
	/* What came while the mesh formed: notices, maybe a partial one. */
	len = W.link.nrest;
	if (len > 0 && !only_hosts_notices(W.link.rest, &len))
		goto over;
	if (len > sizeof(buf))
		goto over;
	memcpy(buf, W.link.rest, len);
	for (;;) {
		struct pollfd pf[2] = {{W.stop[0], POLLIN, 0},
				       {W.link.fd, POLLIN, 0}};
		ssize_t n;

		if (!only_hosts_notices(buf, &len))
			break;
		if (poll(pf, 2, -1) < 0 && errno != EINTR)
			break;
		if (pf[0].revents)
			return NULL; /* hvd_shutdown */
		if (!pf[1].revents)
			continue;
		n = recv(W.link.fd, buf + len, sizeof(buf) - len, 0);
		if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) {
			hvd__debug("hvdrun's rendezvous closed");
			break;
		}
		if (n > 0)
			len += (size_t)n;
	}
over:
	/* A reset, or hvdrun is gone: this generation is over. */
	hvd__world_end();
	W.abort();
	return NULL;
}

int hvd__elastic_watch(void (*abort_engine)(void))
{
	sigset_t all, old;
	int rc;

	W.abort = abort_engine;
	if (pipe2(W.stop, O_CLOEXEC) != 0)
		return HVD_ESYS;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = pthread_create(&W.thread, NULL, watch, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return HVD_ESYS;
	W.watching = true;
	return HVD_OK;
}

void hvd__elastic_leave(void)
{
	int i;

	if (W.watching) {
		(void)!write(W.stop[1], "x", 1);
		pthread_join(W.thread, NULL);
		W.watching = false;
	}
	for (i = 0; i < 2; i++) {
		if (W.stop[i] >= 0)
			close(W.stop[i]);
		W.stop[i] = -1;
	}
	if (W.link.fd >= 0)
		close(W.link.fd);
	W.link.fd = -1;
	free(W.link.rest);
	W.link.rest = NULL;
	W.link.nrest = 0;
	if (hvd__g.generation > 0)
		W.last_gen = (uint32_t)hvd__g.generation;
}

int hvd__elastic_status(int status)
{
	if (hvd__g.generation > 0 &&
	    (status == HVD_ECONN || status == HVD_ETIMEDOUT ||
	     status == HVD_EPROTO))
		return HVD_ERESET;
	return status;
}

HVD_EXPORT int hvd_elastic_hosts_updated(void)
{
	return hvd__g.initialized ? (int)atomic_load(&hosts_gen) : -1;
}

HVD_EXPORT int hvd_elastic_host_updates(int *generation)
{
	/* The generation first: an update that comes between the two
	 * loads is taken with the next call, never lost. */
	int gen = (int)atomic_load(&updates_gen);
	int bits = atomic_exchange(&updates, 0);

	if (generation != NULL)
		*generation = bits != 0 ? gen : 0;
	return bits;
}
