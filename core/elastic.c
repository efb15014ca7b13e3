/* elastic.c: an elastic job's worker (elastic.h). Between hvd_init() and
 * hvd_shutdown() it holds its connection to hvdrun's rendezvous, and a
 * thread that does nothing but wait on it: hvdrun's notice of a reset
 * must reach a rank that sits in a collective waiting for a peer that
 * will never answer (its host is gone, not closed), so it cannot wait
 * for the engine's next turn. */
#include "elastic.h"

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

#include "../proto/wire.h"
#include "internal.h"

static struct {
	struct hvd__rdv_link link;
	pthread_t thread;
	bool watching;
	int stop[2];
	void (*abort)(void);
	uint32_t last_gen; /* the generation this process last belonged to */
} W = {.link = {.fd = -1}, .stop = {-1, -1}};

static _Atomic bool reset_seen;
/* The generation the latest hosts notice announced, 0: none this world. */
static _Atomic uint32_t hosts_gen;

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
	atomic_store(&reset_seen, false);
	atomic_store(&hosts_gen, 0);
	return hvd__join_elastic(st, id, W.last_gen, comm, &W.link);
}

/* Take the hosts-added notices at the front of buf[0..*len) (the
 * program re-joins at its next commit: hvd_elastic_hosts_updated);
 * false once anything else is there: a
 * reset notice, or bytes that are not hvdrun's, which end the generation
 * too. The mac is not checked: the connection proved itself at
 * registration, whatever comes ends the generation the same way, and the
 * program's exit may tear OpenSSL down while this thread runs. */
static bool only_hosts_notices(uint8_t *buf, size_t *len)
{
	while (*len > 0) {
		if (buf[0] != 'N' || (*len > 1 && buf[1] != RDV_NOTICE_HOSTS))
			return false;
		if (*len < RDV_NOTICE_LEN)
			break;
		atomic_store(&hosts_gen, wire_de32(buf + 2));
		hvd__debug("hvdrun added hosts (generation %u next)",
			   wire_de32(buf + 2));
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
	if (W.link.nrest <= sizeof(buf)) {
		memcpy(buf, W.link.rest, W.link.nrest);
		len = W.link.nrest;
	}
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
	/* A reset, or hvdrun is gone: this generation is over. */
	atomic_store(&reset_seen, true);
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

bool hvd__elastic_reset_seen(void)
{
	return atomic_load(&reset_seen);
}

HVD_EXPORT int hvd_elastic_hosts_updated(void)
{
	return hvd__g.initialized ? (int)atomic_load(&hosts_gen) : -1;
}
