/* bell.c: the bell that wakes an engine's owner between its cycles
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
 * across, one on this host rings. The job's engine has one, and so has
 * each process set's: over the set's segment and its ranks' connections
 * (algo/group.h watches those only). */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "engine/engine.h"

static bool shm_called(struct hvd__bell *b)
{
	return hvd__shm_bell_called(b->shm);
}

static void shm_sleep(struct hvd__bell *b, double ms, bool (*woken)(void))
{
	hvd__shm_bell_sleep(b->shm, ms, woken, NULL, 0);
}

static void shm_ring(struct hvd__bell *b)
{
	hvd__shm_bell_ring(b->shm);
}

static const struct hvd__bell_ops shm_bell = {shm_called, shm_sleep, shm_ring};

/* A peer's bytes wait on a connection (or one closed: the next agreement
 * fails at once, as it should). */
static bool net_called(struct hvd__bell *b)
{
	return poll(b->fds, (nfds_t)b->n, 0) > 0;
}

static void net_sleep(struct hvd__bell *b, double ms, bool (*woken)(void))
{
	long long ns = (long long)(ms * 1e6);
	struct timespec ts = {ns / 1000000000, ns % 1000000000};
	uint64_t v;

	if (ns <= 0)
		return;
	/* As shm.h's bells: a waker checks sleepers after it made work;
	 * this checks for work after it counted itself in, and a ring
	 * before that (drained here) came with work that woken() sees. */
	atomic_fetch_add(&b->sleepers, 1);
	while (read(b->efd, &v, sizeof(v)) < 0 && errno == EINTR)
		;
	if (!woken())
		ppoll(b->fds, (nfds_t)b->n + 1, &ts, NULL);
	atomic_fetch_sub(&b->sleepers, 1);
}

static void net_ring(struct hvd__bell *b)
{
	uint64_t one = 1;

	if (atomic_load(&b->sleepers) > 0 &&
	    write(b->efd, &one, sizeof(one)) < 0) {
		/* The counter is full (2^64 - 2): the sleeper is awake. */
	}
}

static const struct hvd__bell_ops net_bell = {net_called, net_sleep, net_ring};

static bool both_called(struct hvd__bell *b)
{
	return shm_called(b) || net_called(b);
}

static void both_sleep(struct hvd__bell *b, double ms, bool (*woken)(void))
{
	hvd__shm_bell_sleep(b->shm, ms, woken, b->fds, b->n + 1);
}

static const struct hvd__bell_ops both_bell = {both_called, both_sleep,
					       shm_ring};

struct hvd__bell *hvd__bell_open(const struct hvd__comm *c,
				 struct hvd__shm *shm, bool hosts)
{
	struct hvd__bell *b = calloc(1, sizeof(*b));
	int fd;

	if (b == NULL)
		return NULL;
	b->shm = shm;
	b->efd = -1;
	b->ops = &shm_bell;
	if (shm != NULL && !hosts)
		return b;
	/* Over the connections: one entry a rank (this one's fd is -1,
	 * which poll() passes over), then the rank's own fd. */
	if (c->size < 2 || c->ops->watch == NULL ||
	    (b->fds = calloc((size_t)c->size + 1, sizeof(*b->fds))) == NULL)
		goto segment;
	b->n = c->ops->watch(c->t, b->fds, c->size);
	if (b->n == 0) /* a group over a parent that cannot watch (MPI) */
		goto segment;
	fd = shm != NULL ? hvd__shm_bell_socket(shm)
			 : (b->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	if (fd < 0) /* the waits keep the cycle time (across hosts) */
		goto segment;
	b->fds[b->n] = (struct pollfd){fd, POLLIN, 0};
	b->ops = shm != NULL ? &both_bell : &net_bell;
	return b;
segment:
	if (b->efd >= 0)
		close(b->efd);
	free(b->fds);
	b->fds = NULL;
	b->n = 0;
	b->efd = -1;
	if (shm != NULL)
		return b;
	free(b);
	return NULL;
}

void hvd__bell_close(struct hvd__bell *b)
{
	if (b == NULL)
		return;
	if (b->efd >= 0)
		close(b->efd);
	free(b->fds);
	free(b);
}
