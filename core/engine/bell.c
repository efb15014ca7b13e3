/* bell.c: the bell that wakes the job engine's owner between its cycles
 * when a peer starts the next agreement (engine.h's struct hvd__bell):
 * while this rank's own collective waits for a late peer, the peer's
 * agreement cannot end without this rank, and the rest of the cycle time
 * would be the peer's wait.
 *
 * Where the ranks share a host's segment, its bells (shm.h): a futex
 * each, which a local peer rings as it arrives at the round. Over
 * libhvd's TCP transport alone, the peers' connections: a peer's
 * agreement sends this rank its first bytes (the agreement's exchange),
 * which make a connection readable; the rank's own wakers (new work, a
 * shutdown) write an eventfd that the same poll() watches. With both
 * (hosts of several ranks each), the connections and the segment's bell
 * socket in one poll(): a late peer on another host sends its bytes
 * across, one on this host rings. One job engine a process: the state is
 * this file's. */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"

static struct {
	struct hvd__shm *shm;
	struct pollfd *fds; /* the peers' connections, then the eventfd or
			       the segment's bell socket */
	int n;		    /* connections */
	int efd;	    /* the eventfd, or -1 */
	_Atomic int sleepers;
} B = {.efd = -1};

static bool shm_called(void)
{
	return hvd__shm_bell_called(B.shm);
}

static void shm_sleep(double ms, bool (*woken)(void))
{
	hvd__shm_bell_sleep(B.shm, ms, woken, NULL, 0);
}

static void shm_ring(void)
{
	hvd__shm_bell_ring(B.shm);
}

static const struct hvd__bell shm_bell = {shm_called, shm_sleep, shm_ring};

/* A peer's bytes wait on a connection (or one closed: the next agreement
 * fails at once, as it should). */
static bool net_called(void)
{
	return poll(B.fds, (nfds_t)B.n, 0) > 0;
}

static void net_sleep(double ms, bool (*woken)(void))
{
	long long ns = (long long)(ms * 1e6);
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	uint64_t v;

	if (ns <= 0)
		return;
	/* As shm.h's bells: a waker checks sleepers after it made work;
	 * this checks for work after it counted itself in, and a ring
	 * before that (drained here) came with work that woken() sees. */
	atomic_fetch_add(&B.sleepers, 1);
	while (read(B.efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	if (!woken())
		ppoll(B.fds, (nfds_t)B.n + 1, &ts, NULL);
	atomic_fetch_sub(&B.sleepers, 1);
}

static void net_ring(void)
{
	uint64_t one = 1;

	if (atomic_load(&B.sleepers) > 0 &&
	    write(B.efd, &one, sizeof(one)) < 0) {
		/* The counter is full (2^64 - 2): the sleeper is awake. */
	}
}

static const struct hvd__bell net_bell = {net_called, net_sleep, net_ring};

static bool both_called(void)
{
	return shm_called() || net_called();
}

static void both_sleep(double ms, bool (*woken)(void))
{
	hvd__shm_bell_sleep(B.shm, ms, woken, B.fds, B.n + 1);
}

static const struct hvd__bell both_bell = {both_called, both_sleep, shm_ring};

const struct hvd__bell *hvd__bell_open(const struct hvd__comm *c,
				       struct hvd__shm *shm, bool hosts)
{
	int n, fd;

	hvd__bell_close();
	B.shm = shm;
	if (shm != NULL && !hosts)
		return &shm_bell;
	if (c->size < 2 || c->ops->watch == NULL ||
	    (B.fds = calloc((size_t)c->size, sizeof(*B.fds))) == NULL)
		return shm != NULL ? &shm_bell : NULL;
	fd = shm != NULL ? hvd__shm_bell_socket(shm)
			 : (B.efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (fd < 0) {
		/* The waits keep the cycle time (across hosts). */
		hvd__bell_close();
		B.shm = shm;
		return shm != NULL ? &shm_bell : NULL;
	}
	n = c->ops->watch(c->t, B.fds, c->size - 1);
	B.fds[n] = (struct pollfd){fd, POLLIN, 0};
	B.n = n;
	return shm != NULL ? &both_bell : &net_bell;
}

void hvd__bell_close(void)
{
	if (B.efd >= 0)
		close(B.efd);
	free(B.fds);
	B.fds = NULL;
	B.n = 0;
	B.efd = -1;
	B.shm = NULL;
	atomic_store(&B.sleepers, 0);
}
