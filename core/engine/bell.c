/* bell.c: the bell that wakes an engine's owner between its cycles
 * when a peer starts the next agreement (engine.h's struct hvd__bell):
 * while this rank's own collective waits for a late peer, the peer's
 * agreement cannot end without this rank, and the rest of the cycle time
 * would be the peer's wait.
 *
 * Where the ranks share a host's segment, its bells (shm.h): a futex
 * each, which a local peer rings as it arrives at the round. Over
 * libhvd's TCP transport alone, the connections through which the next
 * agreement can reach this rank: a peer's agreement sends its first
 * bytes, which make a connection readable; the rank's own wakers (new
 * work, a shutdown) write an eventfd that the same poll() watches. With
 * both (hosts of several ranks each), the connections of this local
 * rank's group across hosts and the segment's bell socket in one poll():
 * a late peer on another host sends its bytes across, one on this host
 * rings. The job's engine has one, and so has each process set's: over
 * the set's segment and its own ranks' connections (algo/group.h). */
#include <errno.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "algo/ring.h"
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

/* Into b->fds, the connections of net's ranks that can start this rank's
 * next agreement (algo/ring.h's sources): an allreduce over net, the
 * comm that carries the agreement across hosts, reaches this rank first
 * through them, whatever rank comes late. A rank of a thousand polls a
 * dozen connections, not a thousand (each poll() of them all would cost
 * more than the agreement: about 90 us for 1,024 sockets on one of
 * these machines, and the spin before the sleep calls it again and
 * again). */
static int watch_sources(struct hvd__bell *b, const struct hvd__comm *net)
{
	struct pollfd *all = calloc((size_t)net->size, sizeof(*all));
	int src[HVD__RING_SOURCES_MAX], k, n, i;

	if (all == NULL)
		return 0;
	n = net->ops->watch(net->t, all, net->size);
	k = hvd__ring_sources(net->rank, net->size, src);
	for (i = 0; i < k; i++)
		if (src[i] < n && all[src[i]].fd >= 0)
			b->fds[b->n++] = all[src[i]];
	free(all);
	return b->n;
}

struct hvd__bell *hvd__bell_open(const struct hvd__comm *net,
				 struct hvd__shm *shm)
{
	struct hvd__bell *b = calloc(1, sizeof(*b));
	int fd;

	if (b == NULL)
		return NULL;
	b->shm = shm;
	b->efd = -1;
	b->ops = &shm_bell;
	/* The connections, then the rank's own fd. */
	if (net == NULL || net->size < 2 || net->ops->watch == NULL ||
	    (b->fds = calloc(HVD__RING_SOURCES_MAX + 1, sizeof(*b->fds))) ==
		    NULL)
		goto segment;
	if (watch_sources(b, net) == 0) /* a group over MPI, or no peers */
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

const struct hvd__comm *hvd__bell_net(const struct hvd__engine *e)
{
	if (e->hier.shm == NULL)
		return &e->comm;
	return e->hier.nhosts > 1 ? &e->hier.cross : NULL;
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
